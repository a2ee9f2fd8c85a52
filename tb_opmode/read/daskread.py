"""Reading a logdir's sources on a Dask cluster (the optional extra ``tb_opmode[dask]``).

In: the units of work (``partials.Unit``) and a scheduler's address. Out: their merged
``partials.Partial``. A module of its own because it imports ``dask.distributed`` at
its top: only ``tb-opmode summary --dask ADDRESS`` imports it, so nothing else needs
the extra installed or pays for importing it.

Workers read the files by their paths: on a cluster, every worker must see the logdir
at the same path (a shared file system), and have tb_opmode installed.
"""
from __future__ import annotations

from distributed import Client
from distributed import as_completed as dask_completed

from .partials import Partial, Unit, merge, read_pickled, unpickled

__all__ = ["read_dask"]


def read_dask(units: list[Unit], address: str) -> Partial:
    """The units on the Dask cluster at ``address`` (a scheduler, ``tcp://host:port``),
    merged here as they finish, in whatever order. (Merging on the cluster in a tree
    gives the same, ``merge`` being associative, but a union does not shrink: each
    level would only move every result once more.) Raises OSError when the scheduler
    cannot be reached."""
    ordered = sorted(units, key=lambda u: -u.size())
    merged = Partial()
    # A scheduler that is not there fails fast, not after distributed's default timeout.
    # distributed ships no type hints: its calls are untyped to mypy.
    with Client(address, set_as_default=False, timeout=10) as client:  # type: ignore[no-untyped-call]
        futures = client.map(read_pickled, ordered, pure=False)
        # as_completed asks for the current client; this one is current only in here.
        with client.as_current():
            for done in dask_completed(futures):  # type: ignore[no-untyped-call]
                merged = merge(merged, unpickled(done.result()))
    return merged
