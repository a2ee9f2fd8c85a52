"""The lines of a dump's source files, held compactly and made when first read.

In: a ``source_file`` record of a dump's ``.source_files`` file (its bytes, or where it
lies in a local file). Out: ``SourceLines``, a sequence of the file's lines (one string
and the line ends), that pickles as the record or its place until a line is asked for.
"""
from __future__ import annotations

import logging
import struct
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Any, overload

from google.protobuf.message import DecodeError

from .. import fs
from ..schema import DebugEvent
from ..tfrecord import masked_crc32c

__all__ = ["SourceLines"]

logger = logging.getLogger(__name__)


class SourceLines(Sequence[str]):
    """The lines of one source file, as a sequence of str, held as one string and where
    each line ends in it: one str per line took twice the file's size (a dump's
    ``.source_files`` of 8 MB grew the reader by 27 MB), and pickled slower.

    Read from a dump (``of_record``), it keeps the file's ``source_file`` record as it
    is, already checked to decode, and makes its string only when a line is first
    asked for: most runs' lines are never shown (only a call site's detail shows
    them), and making the strings of a dump's 200,000 lines was a tenth of reading
    it. Pickled (the cache), it stays a record until then."""

    __slots__ = ("_text", "_ends", "_record", "_where")

    def __init__(self, lines: Iterable[str] = ()) -> None:
        self._record: bytes | None = None
        self._where: tuple[str, int, int, str, str] | None = None
        self._set(lines)

    def _set(self, lines: Iterable[str]) -> None:
        lines = list(lines)
        text = "".join(lines)
        # 4 bytes a line where they fit (the cache pickles them): a file of 4 G characters
        self._ends = array("I" if len(text) < 1 << 32 else "q", accumulate(map(len, lines)))
        self._text = text

    @classmethod
    def of_record(cls, record: bytes) -> SourceLines:
        """The lines of the ``source_file`` DebugEvent serialized in ``record`` (which the
        caller has decoded once, so it decodes), made when first used."""
        lines = cls.__new__(cls)
        lines._record, lines._where = record, None
        return lines

    @classmethod
    def in_file(cls, path: str, offset: int, length: int, host: str, file_path: str) -> SourceLines:
        """The lines of the ``source_file`` record of ``length`` payload bytes at ``offset``
        of the local file ``path`` (decoded once when it was read: the source file
        ``file_path`` of ``host``), read from the file when first used. A file that no
        longer holds that record there (its length or CRCs do not verify, or it names
        another source file) gives no lines, with a warning. The record is told by its
        content, not by the file's inode: a pool or cluster worker that read it may see
        the same shared file under another device number."""
        lines = cls.__new__(cls)
        lines._record, lines._where = None, (path, offset, length, host, file_path)
        return lines

    def _made(self) -> None:
        record, where = self._record, self._where
        if where is not None:
            src = _source_record_at(*where)
            self._set(src.lines if src is not None else ())
            self._where = None
            return
        if record is not None:
            # Two threads may both get here: each makes the same lines, and the record
            # is dropped only once text and ends are both set.
            self._set(DebugEvent.FromString(record).source_file.lines)
            self._record = None

    @property
    def text(self) -> str:
        """The file's lines, joined."""
        self._made()
        return self._text

    @property
    def ends(self) -> array[int]:
        """Where each line ends in ``text``."""
        self._made()
        return self._ends

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        ends = self.ends
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(ends)))]
        if index < 0:
            index += len(ends)
        if not 0 <= index < len(ends):
            raise IndexError("source line index out of range")
        return self._text[ends[index - 1] if index else 0:ends[index]]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceLines):
            return self.text == other.text and self.ends == other.ends
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-free but compared like a list

    def __repr__(self) -> str:
        return f"SourceLines({len(self.ends)} lines)"

    def __reduce__(self) -> tuple[Any, ...]:
        record, where = self._record, self._where
        if where is not None:
            return (SourceLines.in_file, where)
        if record is not None:
            return (SourceLines.of_record, (record,))
        return (_source_lines, (self._text, self._ends))


def _source_lines(text: str, ends: array[int]) -> SourceLines:
    """Unpickle a ``SourceLines``."""
    lines = SourceLines.__new__(SourceLines)
    lines._record = lines._where = None
    lines._text, lines._ends = text, ends
    return lines


def _source_record_at(path: str, offset: int, length: int, host: str, file_path: str) -> Any:
    """The ``SourceFile`` of the record of ``length`` payload bytes at ``offset`` of ``path``
    if that record is still there (its length and CRCs verify, it decodes, and it is the
    source file ``file_path`` of ``host``); else None, logged: the file changed since it
    was read (and the next scan reads it again)."""
    why = ""
    try:
        with fs.open_read(path) as f:
            f.seek(offset)
            data = f.read(length + 16)
        if len(data) == length + 16 and struct.unpack_from("<Q", data)[0] == length \
                and masked_crc32c(data[:8]) == struct.unpack_from("<I", data, 8)[0] \
                and masked_crc32c(data[12:-4]) == struct.unpack_from("<I", data, length + 12)[0]:
            src = DebugEvent.FromString(data[12:-4]).source_file
            if (src.host_name, src.file_path) == (host, file_path):
                return src
            why = f"holds another source file at byte {offset}"
        else:
            why = f"holds no intact record of {length} bytes at byte {offset}"
    except (OSError, DecodeError) as err:
        why = f"cannot be read ({getattr(err, 'strerror', None) or err})"
    logger.warning("%s: %s (changed since it was read?); the lines of %s are not shown",
                   path, why, file_path)
    return None
