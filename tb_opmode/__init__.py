"""tb_opmode: which TensorFlow ops ran eagerly or in graphs, and which kernel (oneDNN or stock) ran them."""
__all__ = ["__version__"]
__version__ = "0.1.0"
