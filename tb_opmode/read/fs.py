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
  and kept in memory (``_SMALL_KEEP`` bytes at most, least recently used out)
  under their identity, so a log whose head discovery read is not fetched
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

All that is kept of object stores is in one ``RemoteState``, ``remote_state``
(``clear()`` starts afresh); ``stats()`` counts the requests and bytes of this
process's remote reads (for the benchmark and the tests).
"""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import stat as _stat
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from io import BufferedIOBase
from typing import Any, BinaryIO, cast

__all__ = ["RemoteError", "RemoteStat", "RemoteState", "remote_state", "Entry", "is_remote", "absolute",
           "real", "relpath", "scan", "forget", "list_entries", "listdir", "stat", "isdir", "open_read", "head",
           "size_of", "preader", "prefetch", "stats", "SMALL_BYTES"]

# Objects up to this size are fetched whole, in one request.
SMALL_BYTES = 4 << 20
# At most this many bytes of small objects are kept in memory.
_SMALL_KEEP = 256 << 20
# Read-ahead of a big object's reader: about what the readers read at a time, so that a
# window costs about one request.
_BLOCK = 8 << 20


class RemoteError(OSError):
    """A remote read failed; the message names the URL and the cause."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.filename = url
        self.strerror = reason

    def __str__(self) -> str:
        return str(self.args[0])


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

# Pieces of big objects kept (``RemoteState.pieces``), and how much of each.
_PIECES_KEEP = 4096
_PIECE_TAIL = 4096
_PIECE_HEAD = 1 << 16


class RemoteState:
    """All this process keeps of object stores, behind one lock (the readers run in
    threads): the fsspec filesystem of each scheme, what the last scans listed, the bytes
    of small objects and pieces of big ones, and the count of requests made. ``clear()``
    drops what is kept (the counts stay: they are of requests made, not kept)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.filesystems: dict[str, Any] = {}
        # Full URL -> fsspec info dict, from the last ``scan`` (or ``info``) that saw it.
        self.infos: dict[str, dict[str, Any]] = {}
        # Full URL of a directory -> the full URLs of its entries, from ``scan``.
        self.children: dict[str, list[str]] = {}
        # Roots scanned: a path under one is answered from ``infos``.
        self.scanned: set[str] = set()
        # (URL, identity) -> bytes of a small object, least recently used first.
        self.small: OrderedDict[tuple[str, Any], bytes] = OrderedDict()
        self.small_bytes = 0
        # (URL, identity) -> [(start, bytes)]: the head and the last bytes of what was
        # fetched of a big object, so that a log's head read by discovery and the tail
        # that ``tfdbg`` checks after reading are not fetched again.
        self.pieces: OrderedDict[tuple[str, Any], list[tuple[int, bytes]]] = OrderedDict()
        self.counts = {"requests": 0, "bytes": 0, "list_requests": 0}

    def clear(self) -> None:
        """Forget every filesystem, listing and object kept: the next read starts afresh."""
        with self.lock:
            self.filesystems.clear()
            self.forget_listings()
            self.small.clear()
            self.small_bytes = 0
            self.pieces.clear()

    def forget_listings(self) -> None:
        with self.lock:
            self.infos.clear()
            self.children.clear()
            self.scanned.clear()

    def count(self, kind: str, n: int = 1) -> None:
        with self.lock:
            self.counts[kind] += n

    def under_scan(self, url: str) -> bool:
        """Whether ``url`` is under a root scanned (the caller holds the lock)."""
        return any(url == r or url.startswith(r + "/") for r in self.scanned)

    def replace_scan(self, root: str, path: str, infos: dict[str, dict[str, Any]],
                     children: dict[str, set[str]]) -> None:
        """What a scan of ``root`` (fsspec path ``path``) listed, instead of the last one's."""
        with self.lock:
            for url in [u for u in self.infos if u == root or u.startswith(root + "/")]:
                del self.infos[url]
            for url in [u for u in self.children if u == root or u.startswith(root + "/")]:
                del self.children[url]
            self.infos.update(infos)
            self.children.update({d: sorted(c) for d, c in children.items()})
            self.infos.setdefault(root, {"name": path, "type": "directory", "size": 0})
            self.scanned.add(root)

    def keep_small(self, url: str, ident: Any, data: bytes) -> None:
        with self.lock:
            key = (url, ident)
            if key in self.small:
                return
            self.small[key] = data
            self.small_bytes += len(data)
            while self.small_bytes > _SMALL_KEEP and self.small:
                _key, old = self.small.popitem(last=False)
                self.small_bytes -= len(old)

    def kept_small(self, url: str, ident: Any) -> bytes | None:
        with self.lock:
            data = self.small.get((url, ident))
            if data is not None:
                self.small.move_to_end((url, ident))
            return data

    def pieces_of(self, key: tuple[str, Any]) -> list[tuple[int, bytes]]:
        with self.lock:
            return list(self.pieces.get(key, ()))

    def remember_piece(self, key: tuple[str, Any], start: int, data: bytes) -> None:
        """Keep the head of an object (a fetch from 0) and the tail of its last fetch."""
        tail = (start + max(0, len(data) - _PIECE_TAIL), data[-_PIECE_TAIL:])
        with self.lock:
            pieces = self.pieces.setdefault(key, [])
            heads = [(0, data[:_PIECE_HEAD])] if start == 0 else [p for p in pieces if p[0] == 0]
            pieces[:] = heads + [tail]
            self.pieces.move_to_end(key)
            while len(self.pieces) > _PIECES_KEEP:
                self.pieces.popitem(last=False)


remote_state = RemoteState()


def stats() -> dict[str, int]:
    """Requests made and bytes fetched by this process's remote reads so far:
    ``requests`` (GETs and HEADs: reads, stats), ``list_requests`` (listings), ``bytes``."""
    with remote_state.lock:
        return dict(remote_state.counts)


def _count(kind: str, n: int = 1) -> None:
    remote_state.count(kind, n)


def _scheme(url: str) -> str:
    return url.split("://", 1)[0]


# The exception classes of the object-store clients that are not OSErrors: a connection
# refused after retries, no credentials (botocore), a socket error of aiohttp, a timeout
# of fsspec's event loop, Google's auth errors. Looked up among the modules loaded when
# an error is being handled, not imported: a client never imported cannot have raised.
_CLIENT_ERRORS = (("botocore.exceptions", "BotoCoreError"), ("aiohttp", "ClientError"),
                  ("fsspec.exceptions", "FSTimeoutError"), ("google.auth.exceptions", "GoogleAuthError"))


def _errors() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module_name, name in _CLIENT_ERRORS:
        cls = getattr(sys.modules.get(module_name), name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def _explain(url: str, err: BaseException) -> RemoteError:
    """``err`` of a remote call on ``url`` as one sentence people can act on."""
    name = type(err).__name__
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") \
        or os.environ.get("FSSPEC_S3_ENDPOINT_URL") or ""
    if name == "NoCredentialsError":
        return RemoteError(url, "no credentials for the object store: set AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY (or a profile, AWS_PROFILE), or "
                                "FSSPEC_S3_ANON=true for a public bucket")
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError",
                "ServerDisconnectedError", "FSTimeoutError", "ReadTimeoutError",
                "ConnectionClosedError"):
        where = f" at {endpoint}" if endpoint else ""
        return RemoteError(url, f"cannot reach the object store{where} ({name}: {err}); "
                                "check the endpoint (AWS_ENDPOINT_URL) and the network")
    return RemoteError(url, f"{name}: {err}")


def _call(url: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a remote call for ``url``: errors of the client become
    ``RemoteError``s naming ``url``; an OSError (s3fs's translation of S3's own
    answers: no such key, access denied) keeps its class, with the URL in its text."""
    try:
        return fn(*args, **kwargs)
    except RemoteError:
        raise
    except OSError as err:
        raise _with_url(url, err) from err
    except _errors() as err:
        raise _explain(url, err) from err


def _with_url(url: str, err: OSError) -> OSError:
    """The store's own OSError, of the same kind, saying ``url``."""
    reason = err.strerror or str(err) or type(err).__name__
    if isinstance(err, FileNotFoundError):
        if "bucket" not in reason.lower():
            reason = "no such file or directory"
        return FileNotFoundError(err.errno or 2, reason, url)
    if isinstance(err, PermissionError):
        return PermissionError(err.errno or 13, f"permission denied ({reason})", url)
    return RemoteError(url, reason)


def _filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem for ``url``'s scheme, the path it takes)."""
    scheme = _scheme(url)
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
    _count("list_requests")
    # Files only: the directories are their keys' prefixes (s3fs's ``withdirs`` answer
    # depends on what its own cache saw before, and left out a directory on a rescan).
    found = _call(root, fs.find, path, detail=True)
    infos, children = _tree(fs, root, found)
    if not infos:
        info = _call(root, fs.info, path)  # FileNotFoundError if nothing is there
        if info.get("type") != "directory":
            infos[root] = info
    remote_state.replace_scan(root, path, infos, children)


def _tree(fs: Any, root: str, found: dict[str, dict[str, Any]]
          ) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    """(URL -> info of every object and directory under ``root``, directory URL -> its
    entries' URLs), from the objects a recursive listing of ``root`` found."""
    scheme = _scheme(root)
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
    _count("requests")
    info: dict[str, Any] = _call(url, fs.info, path)
    with remote_state.lock:
        remote_state.infos[url] = info
    return info


@dataclass(frozen=True)
class RemoteStat:
    """The fields of ``os.stat_result`` the readers use, for an object."""

    st_size: int
    st_mtime: float
    st_mtime_ns: int
    st_ino: int   # from the ETag / generation: another object, another number
    st_dev: int
    st_mode: int


def _version(info: dict[str, Any]) -> str:
    for key in ("ETag", "etag", "generation", "VersionId", "version_id", "md5Hash", "crc32c"):
        value = info.get(key)
        if value:
            return str(value)
    return ""


def _mtime(info: dict[str, Any]) -> float:
    for key in ("LastModified", "mtime", "updated", "last_modified", "modified"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return 0.0


def _remote_stat(info: dict[str, Any]) -> RemoteStat:
    is_dir = info.get("type") == "directory"
    mtime = _mtime(info)
    version = _version(info)
    ino = int.from_bytes(hashlib.sha1(version.encode()).digest()[:7], "little") if version else 0
    mode = (_stat.S_IFDIR | 0o555) if is_dir else (_stat.S_IFREG | 0o444)
    return RemoteStat(int(info.get("size") or 0), mtime, int(mtime * 1e9), ino, 0, mode)


def stat(path: str) -> os.stat_result | RemoteStat:
    """``os.stat`` (links followed); for a URL, the object's size, time and ETag as a
    ``RemoteStat``. Raises OSError (FileNotFoundError for what is not there)."""
    if not is_remote(path):
        return os.stat(path)
    return _remote_stat(_info(path))


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
    _count("list_requests")
    listed = _call(url, fs.ls, path, detail=True)
    scheme = _scheme(url)
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


def _identity(info: dict[str, Any]) -> tuple[int, str]:
    return int(info.get("size") or 0), _version(info) or str(_mtime(info))


class _Bytes(io.BytesIO):
    """A small object's bytes, read like a file (``size`` as fsspec files have it)."""

    def __init__(self, data: bytes, url: str) -> None:
        super().__init__(data)
        self.size = len(data)
        self.name = url


class _RemoteFile(io.RawIOBase):
    """An fsspec file whose client errors come out as ``RemoteError``s naming its URL."""

    def __init__(self, f: Any, url: str) -> None:
        super().__init__()
        self._f = f
        self.size = int(f.size)
        self.name = url

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._f.seek(offset, whence))

    def tell(self) -> int:
        return int(self._f.tell())

    def read(self, n: int = -1) -> bytes:
        return bytes(_call(self.name, self._f.read, n))

    def readinto(self, b: Any) -> int:
        return int(_call(self.name, self._f.readinto, b))

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


class _Fetcher:
    """Fetches byte ranges of one big object, counting requests and bytes, and serves
    a range again from the pieces kept of earlier fetches (``RemoteState.pieces``)."""

    def __init__(self, url: str, ident: Any, fetch: Callable[[int, int], bytes]) -> None:
        self.url, self.key, self._fetch = url, (url, ident), fetch

    def __call__(self, start: int, end: int) -> bytes:
        kept = remote_state.pieces_of(self.key)
        prefix = b""
        for pstart, data in kept:
            if pstart <= start < pstart + len(data):
                prefix = data[start - pstart:end - pstart]
                break
        if len(prefix) >= end - start:
            return prefix
        begin = start + len(prefix)
        data = bytes(_call(self.url, self._fetch, begin, end))
        _count("requests")
        _count("bytes", len(data))
        remote_state.remember_piece(self.key, begin, data)
        return prefix + data if prefix else data


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
    ident = _identity(info)
    size = ident[0]
    if size <= SMALL_BYTES:
        data = remote_state.kept_small(url, ident)
        if data is None:
            fs, key = _filesystem(url)
            _count("requests")
            data = _call(url, fs.cat_file, key)
            _count("bytes", len(data))
            remote_state.keep_small(url, ident, data)
        return _Bytes(data, url)
    fs, key = _filesystem(url)
    f = _call(url, fs.open, key, "rb", block_size=_BLOCK, cache_type="readahead", size=size)
    f.cache.fetcher = _Fetcher(url, ident, f.cache.fetcher)
    return _RemoteFile(f, url)  # type: ignore[return-value]


def head(path: str, n: int) -> bytes:
    """The first ``n`` bytes of ``path`` (fewer if it is shorter). A big remote object
    gives them in one ranged request, without the read-ahead of ``open_read``."""
    if not is_remote(path):
        with open(path, "rb") as f:
            return f.read(n)
    url = absolute(path)
    info = _info(url)
    ident = _identity(info)
    if ident[0] <= SMALL_BYTES or info.get("type") == "directory":
        with open_read(url) as f:
            return f.read(n)
    fs, key = _filesystem(url)
    return _Fetcher(url, ident, lambda start, end: fs.cat_file(key, start=start, end=end))(
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
            todo.setdefault(_scheme(url), []).append((url, ident))
    for items in todo.values():
        _fetch_small(items)


def _small_not_kept(url: str) -> tuple[int, str] | None:
    """The identity of the object ``url`` if it is small and not kept yet, else None
    (also when it cannot be stat'ed: its reader reports that when it opens it)."""
    try:
        info = _info(url)
    except OSError:
        return None
    ident = _identity(info)
    if info.get("type") == "directory" or ident[0] > SMALL_BYTES:
        return None
    return ident if remote_state.kept_small(url, ident) is None else None


def _fetch_small(items: list[tuple[str, Any]]) -> None:
    """Fetch the small objects (URL, identity) of one scheme in parallel, and keep them."""
    fs, _ = _filesystem(items[0][0])
    keys = {fs._strip_protocol(u): (u, i) for u, i in items}
    # on_error="return": a failing object comes back as its exception, which we drop
    # here on purpose (its reader opens it again and reports the error by name).
    _count("requests", len(keys))
    got = _call(items[0][0], fs.cat, list(keys), on_error="return")
    for key, value in got.items():
        if isinstance(value, bytes) and key in keys:
            _count("bytes", len(value))
            url, ident = keys[key]
            remote_state.keep_small(url, ident, value)
