"""A profile's op events as a list of tuples, kept as the decoder's columns until read.

In: the columns ``xevents`` decodes a window of events into (numpy arrays of times and
durations, a plane's column of node names with each event's index into it, Python lists),
or tuples. Out: ``OpEvents``, a read-only sequence of one tuple per event, in the order
the columns were added; the tuples are made the first time anything reads an event.

Why: a summary of a profile reads the decoder's sums per key (``Profile.graph_tally``),
not the events; only the timeline walks them. Made window by window while decoding, the
tuples were a large part of the reading threads' time and, holding the GIL, kept the
other thread waiting (bench/results has the figures). Kept as columns they cost nothing
until the timeline asks, and a pickle of them (``read.cache``) stores arrays, not a
million tuples.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Union, overload

__all__ = ["OpEvents"]

# A column: a list of values, an array (``tolist``), or (values, indices): values[indices].
Column = Any
_Chunk = tuple[Column, ...]


def _values(column: Column) -> list[Any]:
    if isinstance(column, tuple):
        values, indices = column
        return list(values[indices].tolist())
    if hasattr(column, "tolist"):
        return list(column.tolist())
    return list(column)


def _length(column: Column) -> int:
    return len(column[1]) if isinstance(column, tuple) else len(column)


def _shifted(chunk: _Chunk, by: int, field: int) -> _Chunk:
    """A chunk with ``by`` added to field ``field``: to the column (an array, as the
    decoder's times are, or a list), or to each of its tuples."""
    if len(chunk) == 1:
        return ([event[:field] + (event[field] + by,) + event[field + 1:] for event in chunk[0]],)
    column = chunk[field]
    moved = column + by if hasattr(column, "tolist") else [value + by for value in column]
    return chunk[:field] + (moved,) + chunk[field + 1:]


class OpEvents(Sequence[Any]):
    """One tuple per event, its fields given as columns (``add``) or as tuples."""

    def __init__(self, events: Iterable[tuple[Any, ...]] = ()) -> None:
        self._made: list[tuple[Any, ...]] = list(events)
        self._pending: list[_Chunk] = []
        self._count = len(self._made)

    def add(self, *columns: Column) -> None:
        """Events whose i-th field is ``columns[i]``'s value for them (equal lengths)."""
        n = _length(columns[0])
        if n:
            self._pending.append(columns)
            self._count += n

    def extend(self, events: Iterable[tuple[Any, ...]]) -> None:
        """More events: another ``OpEvents`` keeps its columns, else tuples."""
        if isinstance(events, OpEvents):
            if events._made:
                self._pending.append((events._made,))
            self._pending.extend(events._pending)
            self._count += len(events)
            return
        made = list(events)
        if made:
            self._pending.append((made,))
            self._count += len(made)

    def shifted(self, by: int, field: int) -> OpEvents:
        """The same events with ``by`` added to field ``field`` (a time) of each; columns
        stay columns."""
        out = OpEvents()
        chunks = ([(self._made,)] if self._made else []) + self._pending
        out._pending = [_shifted(chunk, by, field) for chunk in chunks]
        out._count = self._count
        return out

    def _all(self) -> list[tuple[Any, ...]]:
        for chunk in self._pending:
            if len(chunk) == 1:  # tuples already
                self._made.extend(chunk[0])
            else:
                self._made.extend(zip(*map(_values, chunk)))
        self._pending = []
        return self._made

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._all())

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, ...]]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[tuple[Any, ...], list[tuple[Any, ...]]]:
        return self._all()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OpEvents):
            return self._all() == other._all()
        if isinstance(other, list):
            return self._all() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return self._all() + list(other)

    def __radd__(self, other: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return list(other) + self._all()

    def __repr__(self) -> str:
        return f"OpEvents({self._count} events)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restored, (self._made, self._pending, self._count))


def _restored(made: list[tuple[Any, ...]], pending: list[_Chunk], count: int) -> OpEvents:
    out = OpEvents()
    out._made, out._pending, out._count = made, pending, count
    return out
