"""What a run is made of, and how its paths are shown.

In: the files discovery found for a run; paths, names and problems to show. Out:
``RunSources`` (a run's dump sets, profiles and text logs, and what was skipped or could
not be read); ``display``, ``relpath`` and ``problem_text``, which turn paths and names
into valid one-line text; and the small facts about files that the modules of discovery
(``discover``, ``jobs``, ``logattach``) share: whether a path is within a directory, a
dump directory's time window, an ``OSError`` as words.

File names need not be UTF-8: run names and the paths shown to people go through
``display`` (undecodable bytes as ``\\xNN``, control characters and bidirectional-text
controls escaped), so JSON and terminals get valid text that cannot move the cursor,
forge a line, or reorder what is shown around it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..errors import Problem
from . import fs
from .tfdbg import DUMP_FILE_RE

__all__ = ["RunSources", "dump_location", "display", "relpath", "problem_text", "within",
           "reason", "mtime", "dump_window", "CLOCK_SLACK_S"]

# Clocks of the dump, the profiler and the log all read the same host clock, but a
# profile's window and the dump's can be seconds apart at the edges.
CLOCK_SLACK_S = 120.0


@dataclass
class RunSources:
    name: str
    directory: str
    dump_sets: dict[str, dict[str, str]] = field(default_factory=dict)
    profiles: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    # (path, why) of files named like a source that are not regular files; not read
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # (path, message) of what discovery could not or would not look at: unreadable
    # directories and logs, symlinks out of the logdir, second paths to a directory
    warnings: list[tuple[str, str]] = field(default_factory=list)
    # A multi-worker job's run: (directory, why) of each worker whose dump is not there.
    missing_workers: list[tuple[str, str]] = field(default_factory=list)
    # A directory ``tb-opmode record`` made (its manifest): one run, whatever it holds, so
    # its profile and logs are its own even without a dump.
    recorded: bool = False


def dump_location(sources: RunSources, key: str) -> tuple[str, str]:
    """(directory, file prefix) of the dump set ``sources.dump_sets[key]``. A job's run
    holds its workers' dumps, from their own sub-directories, under keys
    ``<sub-directory>/<prefix>`` (two workers on one host write the same prefix)."""
    sub, _, prefix = key.rpartition("/")
    return (os.path.join(sources.directory, sub) if sub else sources.directory), prefix


# C0 and C1 controls and the Unicode line/paragraph separators break or forge lines;
# the bidirectional controls (LRM/RLM, ALM, LRE..RLO, LRI..PDI) reorder the text
# shown after them, so a name could display as something it is not.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029"
                      "\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")


def display(text: str) -> str:
    """``text`` (a path or a name taken from one) as valid, one-line text.

    File names are bytes; Python hands undecodable ones over as lone
    surrogates, which cannot be encoded as UTF-8 (a crash on a strict
    terminal, invalid JSON). Those bytes become ``\\xNN``, and control
    characters (a newline in a file name would forge a line of output)
    become ``\\xNN`` too, bidirectional controls ``\\uNNNN``. The result has
    none of those characters, so ``display(display(t)) == display(t)``: a name
    typed as shown and the raw name map to the same display name."""
    if not text.isascii():
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if _CONTROL.search(text):
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", text)
    return text


def relpath(path: str, logdir: str) -> str:
    """``path`` relative to ``logdir``, '/'-separated, as display text (see ``display``)."""
    rel = fs.relpath(path, logdir)
    return "." if rel == os.curdir else display(rel.replace(os.sep, "/"))


def problem_text(problem: Problem, logdir: str) -> str:
    """A problem as the run's warnings say it: its file relative to ``logdir`` (absolute
    paths outside it kept), the byte offset, and the message, all printable."""
    path = problem.path
    if (os.path.isabs(path) or fs.is_remote(path)) and path.startswith(logdir.rstrip(os.sep) + os.sep):
        path = relpath(path, logdir)
    return f"{display(path)}: byte {problem.offset}: {display(problem.message)}"


def within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or under it."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def reason(err: OSError) -> str:
    """An OSError as the few lower-case words people read in a warning ("permission denied")."""
    return (err.strerror or type(err).__name__).lower()


def mtime(path: str) -> float:
    """The modification time of ``path``; 0 if it cannot be stat'ed."""
    try:
        return fs.stat(path).st_mtime
    except OSError:
        return 0.0


def dump_window(sets: dict[str, dict[str, str]]) -> tuple[float, float, str]:
    """(start, end, host) of a dump directory: metadata's wall time to last write."""
    start, end, hosts = float("inf"), 0.0, set()
    for prefix, files in sets.items():
        m = DUMP_FILE_RE.match(prefix.rpartition("/")[2] + ".metadata")
        if m:
            hosts.add(m.group("host"))
            start = min(start, float(m.group("ts")))
        for path in files.values():
            end = max(end, mtime(path))
    host = hosts.pop() if len(hosts) == 1 else ""
    return (start if start != float("inf") else end), end, host
