"""The directory ``tb-opmode record`` puts first on the job's ``PYTHONPATH``: it holds only
``sitecustomize``, so that nothing else of ours can shadow a module of the user's.

In: nothing. Out: nothing (the package exists so that the file ships with tb_opmode).
"""
__all__: list[str] = []
