"""What can go wrong, named once: the reader's ``Problem`` and the exceptions.

In: nothing (this module imports no other of the package). Out: ``Problem``, the
record of something in a file that could not be read as intended (readers collect
them and go on), and the exceptions that stop an answer. Each exception subclasses
the nearest builtin, so code that catches the builtin still catches it, and carries
the HTTP status the plugin's routes answer it with (``http_status``); the routes map
them in one place (``plugin.routes``), and any other exception is a bug: a 500 with
its traceback logged.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["did_you_mean", "Problem", "PublicError", "DaskError", "BadParameter", "UnknownOpType", "NoSuchRun",
           "UnloadableRun", "StillLoading", "NoSuchFile", "LogdirError", "UnreadableLogdir",
           "ReportOutputError", "CannotRecord"]


@dataclass(frozen=True)
class Problem:
    """Something in a file that could not be read as intended."""

    path: str
    offset: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}: byte {self.offset}: {self.message}"


def did_you_mean(asked: str, names: Iterable[str]) -> str:
    """The hint an error about a name that does not exist ends with: the names that match
    it but for case or as a substring (``matmul``, ``Transpose`` for ``Conj``), then those
    a typo away (``Transposee``), at most five; "" if none."""
    known = sorted(names)
    near = [t for t in known if t.lower() == asked.lower() or asked.lower() in t.lower()]
    near += [t for t in difflib.get_close_matches(asked, known, n=3) if t not in near]
    return f"; did you mean {', '.join(near[:5])}?" if near else ""


class PublicError(Exception):
    """An error whose message is meant for the user (a route answers it with
    ``http_status`` and the message; the CLI prints the message on one line)."""

    http_status = 500


class BadParameter(PublicError, ValueError):
    """A request or command-line parameter out of range or of the wrong form."""

    http_status = 400


class UnknownOpType(PublicError, LookupError):
    """The run has no op type of that name."""

    http_status = 404


class NoSuchRun(PublicError, LookupError):
    """The logdir has no run of that name."""

    http_status = 404


class UnloadableRun(PublicError, LookupError):
    """The run exists but could not be read (its error says why)."""

    http_status = 404


class StillLoading(PublicError, LookupError):
    """The run exists and is being read: ask again shortly (HTTP 503)."""

    http_status = 503


class NoSuchFile(PublicError, LookupError):
    """The tab has no static file of that name."""

    http_status = 404


class LogdirError(PublicError, FileNotFoundError):
    """The logdir is missing or holds nothing we can read."""

    http_status = 404


class UnreadableLogdir(PublicError, OSError):
    """The logdir exists but cannot be listed (or nothing in it could be): saying
    "nothing found" would send the user looking for files that are there. ``shown``
    is the logdir as display text (``read.discover.display``)."""

    http_status = 404

    def __init__(self, logdir: str, reason: str, shown: str = "") -> None:
        super().__init__(f"{shown or logdir}: {reason}")
        self.filename = logdir
        self.strerror = reason

    def __str__(self) -> str:
        return str(self.args[0])


class ReportOutputError(PublicError, OSError):
    """The report's output file cannot be written."""

    http_status = 500


class DaskError(PublicError, RuntimeError):
    """``--dask ADDRESS``: dask.distributed is missing or the scheduler cannot be reached."""

    http_status = 500


class CannotRecord(PublicError, OSError):
    """``tb-opmode record``: the command cannot be found, or the run cannot be written."""

    http_status = 500
