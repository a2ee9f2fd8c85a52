"""One filesystem layer for every source: local paths by ``os``, URLs by fsspec.

In: a path (``/data/logs/x``) or a URL (``s3://bucket/logs/x``, ``gs://...``, any
scheme fsspec knows). Out: listings, stat results, file objects and byte ranges.

Local paths go straight to ``os`` and ``open``: a local logdir costs one string
check (``"://" in path``) more per call, nothing else, and fsspec is not even
imported.

Remote paths go through fsspec (``s3fs`` for ``s3://``, ``gcsfs`` for ``gs://``),
configured as fsspec configures itself: ``AWS_ENDPOINT_URL`` /
``AWS_ACCESS_KEY_ID`` ... as botocore reads them, or fsspec's own
``FSSPEC_S3_ENDPOINT_URL`` / ``FSSPEC_S3='{"endpoint_url": ...}'`` variables and
config files. How they are read:

- **Listing**: ``scan(root)`` lists the whole tree under a logdir in one
  recursive listing (S3: one ListObjectsV2 request per 1000 objects), and keeps
  every object's size, time and ETag; ``list_entries``, ``stat`` and ``isdir``
  under that root are then answered from it without a request. Each discovery
  scans again, so new and grown objects are seen at the next scan.
- **Identity**: an object's ``stat`` has ``st_ino`` = a number derived from its
  ETag (GCS: generation), ``st_dev`` = 0: the cache's key (size, mtime, ino,
  dev) then changes whenever the object is replaced. Objects are immutable: a
  longer object is a new one, read afresh (``tfdbg``'s resume-on-growth needs
  the same inode, which a new ETag is not).
- **Small objects** (up to ``SMALL_BYTES``) are fetched whole, in one request,
  and kept in memory (a bounded amount, least recently used out) under their
  identity, so a log whose head discovery read is not fetched
  again when it is parsed. ``prefetch(paths)`` fetches many at once, in
  parallel (fsspec's ``cat`` runs the requests concurrently).
- **Big objects** are read as the readers read local files, in windows
  (``seek`` + ``read``, ``pread``): each window is one ranged GET, with
  read-ahead of ``_BLOCK`` bytes, so a file is read once, front to back, never
  downloaded whole before reading starts.
- **Errors**: whatever the object store library raises (no credentials, an
  endpoint that does not answer, a missing bucket) becomes an ``OSError``
  whose message names the URL and what to do (``RemoteError``), so the readers'
  damage handling reports it like an unreadable file and the command line exits
  2 with one line.

All that is kept of object stores is in one ``remote.RemoteState``, ``remote_state``
(``clear()`` starts afresh); ``stats()`` counts the requests and bytes of this
process's remote reads (for the benchmark and the tests).
"""
from __future__ import annotations

import io
import os
import posixpath
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from io import BufferedIOBase
from typing import Any, BinaryIO, cast

from .remote import (
    RangeFetcher,
    RemoteError,
    RemoteFile,
    RemoteStat,
    RemoteState,
    SmallObjectFile,
    identity_of,
    remote_call,
    remote_state,
    scheme_of,
    stat_of,
)

__all__ = ["RemoteError", "RemoteStat", "RemoteState", "remote_state", "Entry", "is_remote", "absolute",
           "real", "relpath", "scan", "forget", "list_entries", "listdir", "stat", "isdir", "open_read", "head",
           "size_of", "preader", "prefetch", "stats", "SMALL_BYTES"]

# Objects up to this size are fetched whole, in one request.
SMALL_BYTES = 4 << 20
# Read-ahead of a big object's reader: about what the readers read at a time, so that a
# window costs about one request.
_BLOCK = 8 << 20


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URL read through fsspec (``file://`` is local). A
    ``pathlib.Path`` (or bytes) is always local."""
    if not isinstance(path, str) or "://" not in path:
        return False
    scheme = path.split("://", 1)[0]
    return bool(scheme) and scheme.replace("+", "").replace(".", "").replace("-", "").isalnum() \
        and scheme != "file"


def _local(path: str) -> str:
    return path[len("file://"):] if isinstance(path, str) and path.startswith("file://") else path


def absolute(path: str) -> str:
    """``os.path.abspath`` for local paths; a URL without its trailing slash."""
    if is_remote(path):
        scheme, rest = path.split("://", 1)
        rest = posixpath.normpath("/" + rest).lstrip("/") if rest else rest
        return f"{scheme}://{rest}"
    return os.path.abspath(_local(path))


def real(path: str) -> str:
    """``os.path.realpath`` for local paths (links resolved); a URL as ``absolute`` gives
    it (object stores have no links)."""
    return absolute(path) if is_remote(path) else os.path.realpath(_local(path))


def relpath(path: str, start: str) -> str:
    """``os.path.relpath`` for local paths; for URLs, the key relative to ``start``'s."""
    if is_remote(path) or is_remote(start):
        a, b = absolute(path), absolute(start)
        if a == b:
            return os.curdir
        if a.startswith(b.rstrip("/") + "/"):
            return a[len(b.rstrip("/")) + 1:]
        return a
    return os.path.relpath(path, start)


# ---------------------------------------------------------------- remote filesystems


def stats() -> dict[str, int]:
    """Requests made and bytes fetched by this process's remote reads so far:
    ``requests`` (GETs and HEADs: reads, stats), ``list_requests`` (listings), ``bytes``."""
    with remote_state.lock:
        return dict(remote_state.counts)


def _filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem for ``url``'s scheme, the path it takes)."""
    scheme = scheme_of(url)
    with remote_state.lock:
        fs = remote_state.filesystems.get(scheme)
    if fs is None:
        # The optional extra is imported here, where a URL chose it (see objstore).
        try:
            from . import objstore
        except ImportError as err:
            raise RemoteError(url, "reading URLs needs fsspec: pip install 'tb_opmode[s3]' "
                                   "(or fsspec with s3fs / gcsfs)") from err
        try:
            fs = objstore.filesystem(scheme)
        except ImportError as err:
            raise RemoteError(url, f"no fsspec implementation of {scheme}:// is installed ({err}); "
                                   "for s3:// pip install 'tb_opmode[s3]'") from err
        except ValueError as err:  # fsspec: "Protocol not known"
            raise RemoteError(url, f"unknown URL scheme {scheme}:// ({err})") from err
        with remote_state.lock:
            fs = remote_state.filesystems.setdefault(scheme, fs)
    return fs, fs._strip_protocol(url)


def _url(scheme: str, path: str) -> str:
    return f"{scheme}://{path.rstrip('/')}"


def forget() -> None:
    """Drop what was learnt of remote objects (sizes, ETags, listings): the next
    ``stat`` asks the store again. Small objects kept in memory stay, under the
    identity they had (a changed object has another)."""
    remote_state.forget_listings()


def scan(root: str) -> None:
    """List everything under the remote directory ``root`` in one recursive listing and
    keep it for ``list_entries``, ``stat`` and ``isdir``. Replaces the last scan of
    ``root``. A no-op for local paths. Raises FileNotFoundError if ``root`` has nothing
    under it and is not an object, ``RemoteError`` if the store cannot be read."""
    if not is_remote(root):
        return
    root = absolute(root)
    fs, path = _filesystem(root)
    # The listing is the one source of truth for what exists: drop s3fs's own cache.
    fs.invalidate_cache(path)
    remote_state.count("list_requests")
    # Files only: the directories are their keys' prefixes (s3fs's ``withdirs`` answer
    # depends on what its own cache saw before, and left out a directory on a rescan).
    found = remote_call(root, fs.find, path, detail=True)
    infos, children = _tree(fs, root, found)
    if not infos:
        info = remote_call(root, fs.info, path)  # FileNotFoundError if nothing is there
        if info.get("type") != "directory":
            infos[root] = info
    remote_state.replace_scan(root, path, infos, children)


def _tree(fs: Any, root: str, found: dict[str, dict[str, Any]]
          ) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    """(URL -> info of every object and directory under ``root``, directory URL -> its
    entries' URLs), from the objects a recursive listing of ``root`` found."""
    scheme = scheme_of(root)
    infos: dict[str, dict[str, Any]] = {}
    children: dict[str, set[str]] = {}
    for name, info in found.items():
        url = _url(scheme, name)
        if url == root or info.get("type") == "directory":
            continue
        infos[url] = info
        _add_directories(fs, root, url, infos, children)
    return infos, children


def _add_directories(fs: Any, root: str, url: str, infos: dict[str, dict[str, Any]],
                     children: dict[str, set[str]]) -> None:
    """Record ``url`` as an entry of its directory, and each directory up to ``root`` as
    an entry of its own, until one already recorded."""
    child = url
    while child != root and child.startswith(root + "/"):
        parent = posixpath.dirname(child)
        known = parent in children
        children.setdefault(parent, set()).add(child)
        if parent != root and parent not in infos:
            infos[parent] = {"name": fs._strip_protocol(parent), "type": "directory", "size": 0}
        if known:
            break  # its ancestors are recorded already
        child = parent


def _info(url: str) -> dict[str, Any]:
    url = absolute(url)
    with remote_state.lock:
        found = remote_state.infos.get(url)
        if found is None and remote_state.under_scan(url) and url not in remote_state.children:
            raise FileNotFoundError(2, "no such file or directory", url)
    if found is not None:
        return found
    fs, path = _filesystem(url)
    remote_state.count("requests")
    info: dict[str, Any] = remote_call(url, fs.info, path)
    with remote_state.lock:
        remote_state.infos[url] = info
    return info


def stat(path: str) -> os.stat_result | RemoteStat:
    """``os.stat`` (links followed); for a URL, the object's size, time and ETag as a
    ``RemoteStat``. Raises OSError (FileNotFoundError for what is not there)."""
    if not is_remote(path):
        return os.stat(path)
    return stat_of(_info(path))


def isdir(path: str) -> bool:
    """``os.path.isdir``; for a URL, whether objects exist under it as a prefix. Errors
    other than not-found (no credentials, endpoint down) raise, so that they are said."""
    if not is_remote(path):
        return os.path.isdir(path)
    try:
        return _info(path).get("type") == "directory"
    except FileNotFoundError as err:
        if "bucket" in (err.strerror or "").lower():  # not a missing key: say which
            raise RemoteError(absolute(path), f"no such bucket ({err.strerror})") from err
        return False


@dataclass(frozen=True)
class Entry:
    """What ``os.DirEntry`` tells that discovery uses, for an object or prefix."""

    name: str
    path: str
    dir: bool

    def is_dir(self) -> bool:
        return self.dir

    def is_symlink(self) -> bool:
        return False  # object stores have no links


def list_entries(directory: str) -> list[Any]:
    """The entries of ``directory`` sorted by name: ``os.DirEntry``s for a local one
    (one ``scandir``), ``Entry``s for a remote one (from the last ``scan``
    covering it, else one listing). Raises OSError if it cannot be listed."""
    if not is_remote(directory):
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    url = absolute(directory)
    infos = _scanned_entries(url)
    if infos is None:
        infos = _listed_entries(url)
    entries = [Entry(posixpath.basename(u), u, i.get("type") == "directory") for u, i in infos]
    return sorted(entries, key=lambda e: e.name)


def _scanned_entries(url: str) -> list[tuple[str, dict[str, Any]]] | None:
    """(URL, info) of the entries of directory ``url`` from the scan covering it; None
    if no scan does. Raises FileNotFoundError if the scan found nothing there."""
    with remote_state.lock:
        if not remote_state.under_scan(url):
            return None
        known = remote_state.children.get(url)
        if known is None:
            if url not in remote_state.infos:
                raise FileNotFoundError(2, "no such file or directory", url)
            known = []
        return [(u, remote_state.infos[u]) for u in known]


def _listed_entries(url: str) -> list[tuple[str, dict[str, Any]]]:
    """(URL, info) of the entries of directory ``url``, in one listing request."""
    fs, path = _filesystem(url)
    remote_state.count("list_requests")
    listed = remote_call(url, fs.ls, path, detail=True)
    scheme = scheme_of(url)
    infos = [(_url(scheme, i["name"]), i) for i in listed]
    infos = [(u, i) for u, i in infos if u != url]
    with remote_state.lock:
        remote_state.infos.update(infos)
    return infos


def listdir(directory: str) -> list[str]:
    """``os.listdir``, for local or remote directories."""
    if not is_remote(directory):
        return os.listdir(directory)
    return [e.name for e in list_entries(directory)]


# ---------------------------------------------------------------- reading


def open_read(path: str) -> BinaryIO:
    """A binary file object of ``path`` to read (``seek``, ``read``, ``readinto``),
    to be closed (a context manager). Local: ``open(path, "rb")``. Remote: a small
    object's bytes (fetched whole once, kept), or a reader of ranged requests with
    read-ahead. Raises OSError."""
    if not is_remote(path):
        return open(path, "rb")
    url = absolute(path)
    info = _info(url)
    if info.get("type") == "directory":
        raise IsADirectoryError(21, "is a directory", url)
    ident = identity_of(info)
    size = ident[0]
    if size <= SMALL_BYTES:
        data = remote_state.kept_small(url, ident)
        if data is None:
            fs, key = _filesystem(url)
            remote_state.count("requests")
            data = remote_call(url, fs.cat_file, key)
            remote_state.count("bytes", len(data))
            remote_state.keep_small(url, ident, data)
        return SmallObjectFile(data, url)
    fs, key = _filesystem(url)
    f = remote_call(url, fs.open, key, "rb", block_size=_BLOCK, cache_type="readahead", size=size)
    f.cache.fetcher = RangeFetcher(url, ident, f.cache.fetcher)
    return RemoteFile(f, url)  # type: ignore[return-value]


def head(path: str, n: int) -> bytes:
    """The first ``n`` bytes of ``path`` (fewer if it is shorter). A big remote object
    gives them in one ranged request, without the read-ahead of ``open_read``."""
    if not is_remote(path):
        with open(path, "rb") as f:
            return f.read(n)
    url = absolute(path)
    info = _info(url)
    ident = identity_of(info)
    if ident[0] <= SMALL_BYTES or info.get("type") == "directory":
        with open_read(url) as f:
            return f.read(n)
    fs, key = _filesystem(url)
    return RangeFetcher(url, ident, lambda start, end: fs.cat_file(key, start=start, end=end))(
        0, min(n, ident[0]))


def size_of(f: BinaryIO | BufferedIOBase) -> int:
    """The size of the open file ``f`` (``fstat`` of a local one)."""
    try:
        fd = f.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        raw = getattr(f, "raw", f)
        return int(cast(Any, raw).size)  # a remote file object knows its size
    return os.fstat(fd).st_size


def preader(f: BinaryIO) -> Callable[[int, int], bytes]:
    """``pread(n, offset)`` for the open file ``f``: ``os.pread`` on a local file's
    descriptor (no seek, safe beside other readers of it), seek + read on a remote one."""
    try:
        fd = f.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        lock = threading.Lock()  # a seek and its read are one step: readers run in threads

        def pread(n: int, offset: int) -> bytes:
            with lock:
                f.seek(offset)
                return f.read(n)
        return pread

    def local_pread(n: int, offset: int) -> bytes:
        return os.pread(fd, n, offset)
    return local_pread


def prefetch(paths: Iterable[str]) -> None:
    """Fetch the small remote objects among ``paths`` not held yet, all at once, in
    parallel requests, and keep them for ``open_read``. Local paths and big objects
    are left to be read when they are opened. Errors are not raised here: the object
    is then opened as usual and its reader reports what fails."""
    todo: dict[str, list[tuple[str, Any]]] = {}
    for url in (absolute(p) for p in paths if is_remote(p)):
        ident = _small_not_kept(url)
        if ident is not None:
            todo.setdefault(scheme_of(url), []).append((url, ident))
    for items in todo.values():
        _fetch_small(items)


def _small_not_kept(url: str) -> tuple[int, str] | None:
    """The identity of the object ``url`` if it is small and not kept yet, else None
    (also when it cannot be stat'ed: its reader reports that when it opens it)."""
    try:
        info = _info(url)
    except OSError:
        return None
    ident = identity_of(info)
    if info.get("type") == "directory" or ident[0] > SMALL_BYTES:
        return None
    return ident if remote_state.kept_small(url, ident) is None else None


def _fetch_small(items: list[tuple[str, Any]]) -> None:
    """Fetch the small objects (URL, identity) of one scheme in parallel, and keep them."""
    fs, _ = _filesystem(items[0][0])
    keys = {fs._strip_protocol(u): (u, i) for u, i in items}
    # on_error="return": a failing object comes back as its exception, which we drop
    # here on purpose (its reader opens it again and reports the error by name).
    remote_state.count("requests", len(keys))
    got = remote_call(items[0][0], fs.cat, list(keys), on_error="return")
    for key, value in got.items():
        if isinstance(value, bytes) and key in keys:
            remote_state.count("bytes", len(value))
            url, ident = keys[key]
            remote_state.keep_small(url, ident, value)
