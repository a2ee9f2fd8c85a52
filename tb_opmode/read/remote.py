"""The object-store side of ``fs``: what is kept of remote objects, and how they are asked.

In: fsspec's answers (infos of objects, file objects, byte ranges) and its clients'
errors. Out: ``remote_state``, all that is kept of object stores (listings, small
objects, pieces of big ones, request counts); ``RemoteError`` and ``remote_call``, which
turn a client's failure into an ``OSError`` naming the URL and what to do; ``RemoteStat``
and the identity of an object from its info; the file objects ``fs.open_read`` returns
for a URL. Imports neither fsspec nor its clients: ``fs`` asks ``objstore`` for a
filesystem the first time a URL is read.
"""
from __future__ import annotations

import hashlib
import io
import os
import stat as _stat
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["RemoteError", "RemoteState", "remote_state", "remote_call", "RemoteStat", "stat_of",
           "identity_of", "SmallObjectFile", "RemoteFile", "RangeFetcher", "scheme_of"]


class RemoteError(OSError):
    """A remote read failed; the message names the URL and the cause."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.filename = url
        self.strerror = reason

    def __str__(self) -> str:
        return str(self.args[0])


# At most this many bytes of small objects are kept in memory.
_SMALL_KEEP = 256 << 20
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


def scheme_of(url: str) -> str:
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


def remote_call(url: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
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


def stat_of(info: dict[str, Any]) -> RemoteStat:
    is_dir = info.get("type") == "directory"
    mtime = _mtime(info)
    version = _version(info)
    ino = int.from_bytes(hashlib.sha1(version.encode()).digest()[:7], "little") if version else 0
    mode = (_stat.S_IFDIR | 0o555) if is_dir else (_stat.S_IFREG | 0o444)
    return RemoteStat(int(info.get("size") or 0), mtime, int(mtime * 1e9), ino, 0, mode)


def identity_of(info: dict[str, Any]) -> tuple[int, str]:
    """(size, ETag or generation or time): what tells one content of an object from another."""
    return int(info.get("size") or 0), _version(info) or str(_mtime(info))


class SmallObjectFile(io.BytesIO):
    """A small object's bytes, read like a file (``size`` as fsspec files have it)."""

    def __init__(self, data: bytes, url: str) -> None:
        super().__init__(data)
        self.size = len(data)
        self.name = url


class RemoteFile(io.RawIOBase):
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
        return bytes(remote_call(self.name, self._f.read, n))

    def readinto(self, b: Any) -> int:
        return int(remote_call(self.name, self._f.readinto, b))

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


class RangeFetcher:
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
        data = bytes(remote_call(self.url, self._fetch, begin, end))
        remote_state.count("requests")
        remote_state.count("bytes", len(data))
        remote_state.remember_piece(self.key, begin, data)
        return prefix + data if prefix else data


