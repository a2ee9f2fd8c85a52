"""tb_opmode: which TensorFlow ops ran eagerly or in graphs, and which kernel (oneDNN or stock) ran them.

``tb_opmode.record`` (``with tb_opmode.record(logdir):``, see ``capture.api``) is loaded
when first asked for: importing the package (the plugin, a load worker, the readers)
does not load the recording's code, and the recording does not load the readers until
its block has ended.
"""
from typing import Any

__all__ = ["__version__", "record"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "record":
        from .capture.api import record
        return record
    raise AttributeError(f"module 'tb_opmode' has no attribute {name!r}")
