"""The distinct keys of a fast part of a traces file, numbered and counted with numpy.

In: a ``_Window`` (``framing``) and the starts and ends of its records. Out: per key (the
bytes that tell a trace's graph, op and slot), the records counted, and the first record
of each; a cycle of keys a training loop repeats, followed window to window.
"""
from __future__ import annotations

from typing import Any

from .framing import _Window

__all__: list[str] = []


# Keys of more 8-byte words than this are keyed one by one (an op name of some 2 KB).
_MAX_KEY_WORDS = 255


class _KeyTable:
    """The distinct keys of one fast part, numbered by first appearance, and how many
    records of each its windows held; keyed with numpy (``count``).

    A key is hashed from its 8-byte words (the last word ends at the key's end, so it
    may overlap the one before; no byte outside the key is read), its length and its
    last word; the hash finds its number among the keys met. Every record's words are
    then compared with those of the key it was numbered as, so that two keys of one
    hash (or a new key that hashes like a known one) cannot be counted as one: the
    window is keyed one by one instead.

    A training loop traces the same ops in the same order at every step: once a
    window's keys repeat a cycle, the next window is framed and keyed as its
    continuation (``predict``, ``check``), each record's length field and words
    compared with what the cycle says, without scanning the window or hashing."""

    def __init__(self, win: _Window, cut: int) -> None:
        np = win.np
        self.np = np
        self.win = win
        self.cut = cut
        # The numbers the last windows repeated, and where in that cycle the next
        # record is (None: no cycle seen, or the window broke it).
        self.cycle: Any = None
        self.phase = 0
        self._predicted: Any = None
        # One odd multiplier per word (splitmix64 of its index: fixed, well mixed).
        z = np.arange(1, _MAX_KEY_WORDS + 3, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        self.mult: Any = (z ^ (z >> np.uint64(31))) | np.uint64(1)
        self.hashes: Any = np.zeros(0, dtype=np.uint64)     # sorted
        self.ids: Any = np.zeros(0, dtype=np.int64)         # the number of each sorted hash
        self.lengths: Any = np.zeros(0, dtype=np.int64)     # per number: the key's length,
        self.last: Any = np.zeros(0, dtype=np.uint64)       # its last word,
        self.words: Any = np.zeros((0, 0), dtype=np.uint64)  # its other words (0-padded)
        self.totals: Any = np.zeros(0, dtype=np.int64)      # records counted
        self.keys: list[bytes] = []
        self._pending: tuple[Any, ...] | None = None

    def predict(self, limit: int) -> tuple[Any, Any] | None:
        """(starts, ends) of the window's records that start at or before ``limit``, if
        they follow the cycle: the length field of each record where the cycle puts it
        says so. None without a cycle, or where the window leaves it."""
        np = self.np
        cycle = self.cycle
        self._predicted = None
        if cycle is None or limit < 0:
            return None
        sizes = self.lengths + (21 + self.cut)  # per number: the record's bytes
        turn = np.concatenate((cycle[self.phase:], cycle[:self.phase]))
        seq = np.tile(turn, limit // int(sizes[cycle].sum()) + 2)
        lengths = sizes[seq]
        ends = np.cumsum(lengths)
        starts = ends - lengths
        n = int(np.searchsorted(starts, limit, side="right"))
        starts, ends = starts[:n], ends[:n]
        if not n or not bool((self.win.u64[starts] == (lengths[:n] - 16).astype(np.uint64)).all()):
            self.cycle = None
            return None
        self._predicted = seq[:n]
        return starts, ends

    def check(self, starts: Any, ends: Any) -> bool:
        """Whether the records ``predict`` framed (the first ``len(starts)`` of them) hold
        the keys the cycle says, word for word; ``keep`` then counts them."""
        np = self.np
        win = self.win
        ids = self._predicted[:len(starts)]
        self._predicted = None
        self._pending = None
        ks = starts + 21
        kl = self.lengths[ids]
        if not bool((win.u64[ks + kl - 8] == self.last[ids]).all()):
            self.cycle = None
            return False
        nwords = (kl - 1) >> 3
        order = np.argsort(nwords.astype(np.uint8), kind="stable")
        lo = 0
        for w, m in enumerate(np.bincount(nwords).tolist()):
            idx = order[lo:lo + m]
            lo += m
            if w and m and not bool((self.words[ids[idx], :w] ==
                                     win.rows(8 * w)[ks[idx]].view(np.uint64)).all()):
                self.cycle = None
                return False
        self._pending = (None, ids, ids[:0], self.lengths, self.last, self.words, True)
        return True

    def count(self, starts: Any, ends: Any) -> bool:
        """Number the keys of the records at ``starts``..``ends`` of the window; False if
        they cannot be numbered exactly this way. ``keep`` then counts them."""
        np = self.np
        win = self.win
        cut = self.cut
        self._pending = None
        ks = starts + 21
        kl = ends - cut - ks
        if int(kl.min()) < 8:
            return False
        nwords = (kl - 1) >> 3  # whole words before the last one
        if int(nwords.max()) > _MAX_KEY_WORDS:
            return False
        last = win.u64[ks + kl - 8]
        mult = self.mult
        h = kl.astype(np.uint64) * mult[-1] + last * mult[-2]
        order = np.argsort(nwords.astype(np.uint8), kind="stable")
        sizes = np.bincount(nwords)
        classes: list[tuple[int, Any, Any]] = []
        lo = 0
        for w, m in enumerate(sizes.tolist()):
            if not m:
                continue
            idx = order[lo:lo + m]
            lo += m
            if not w:
                continue
            words = win.rows(8 * w)[ks[idx]].view(np.uint64)
            h[idx] += words @ mult[:w]
            classes.append((w, idx, words))
        known = self.hashes.size
        at = np.searchsorted(self.hashes, h)
        found = at < known
        found[found] = self.hashes[at[found]] == h[found]
        ids = np.empty(h.size, dtype=np.int64)
        ids[found] = self.ids[at[found]]
        miss = np.flatnonzero(~found)
        base = self.lengths.size
        firsts = miss[:0]
        if miss.size:
            o = np.argsort(h[miss], kind="stable")
            sorted_h = h[miss][o]
            head = np.ones(sorted_h.size, dtype=bool)
            head[1:] = sorted_h[1:] != sorted_h[:-1]
            group = np.cumsum(head) - 1
            firsts = miss[o[head]]           # each new hash's first record (a stable sort)
            rank = np.argsort(firsts)
            number = np.empty(rank.size, dtype=np.int64)
            number[rank] = np.arange(base, base + rank.size)
            ids[miss[o]] = number[group]
            firsts = firsts[rank]            # in file order: numbers base, base + 1, ...
        lengths = np.concatenate((self.lengths, kl[firsts]))
        lasts = np.concatenate((self.last, last[firsts]))
        if not (bool((lengths[ids] == kl).all()) and bool((lasts[ids] == last).all())):
            return False
        table = self.words  # copied only when keys are new: it holds every key's words
        if firsts.size:
            width = max(table.shape[1], int(nwords[firsts].max()))
            table = np.zeros((lengths.size, width), dtype=np.uint64)
            table[:base, :self.words.shape[1]] = self.words
        first = np.zeros(h.size, dtype=bool)
        first[firsts] = True
        for w, idx, words in classes:
            mine = ids[idx]
            new = first[idx]
            if new.any():
                table[mine[new], :w] = words[new]
            if not bool((table[mine, :w] == words).all()):
                return False
        self._pending = (h, ids, firsts, lengths, lasts, table, False)
        return True

    def keep(self, starts: Any, ends: Any, counts: dict[Any, int], samples: dict[bytes, bytes],
             more: bool) -> None:
        """Count the records ``count`` or ``check`` numbered (their CRCs verified); new
        keys go into ``counts`` (at 0, in file order: ``flush`` adds the totals) and
        ``samples``. ``more``: records keyed one by one follow them in the window."""
        np = self.np
        assert self._pending is not None
        h, ids, firsts, lengths, lasts, table, predicted = self._pending
        self._pending = None
        data = self.win.buf
        cut = self.cut
        if firsts.size:
            hashes = np.concatenate((self.hashes, h[firsts]))
            numbers = np.concatenate((self.ids, np.arange(self.lengths.size, lengths.size)))
            o = np.argsort(hashes, kind="stable")
            self.hashes, self.ids = hashes[o], numbers[o]
            self.lengths, self.last, self.words = lengths, lasts, table
            self.totals = np.concatenate((self.totals, np.zeros(firsts.size, dtype=np.int64)))
            for r in firsts.tolist():
                s, e = int(starts[r]), int(ends[r])
                key = bytes(data[s + 21:e - cut])
                self.keys.append(key)
                if key not in counts:
                    counts[key] = 0
                    samples[key] = bytes(data[s + 12:e - 4])
        self.totals += np.bincount(ids, minlength=self.totals.size)
        if more:
            self.cycle = None
        elif predicted:
            self.phase = (self.phase + ids.size) % self.cycle.size
        else:
            self._find_cycle(ids)

    def _find_cycle(self, ids: Any) -> None:
        """The cycle ``ids`` (a window's numbers, in file order) repeat at least twice,
        ending with the window, if any: the next window starts where it starts."""
        np = self.np
        self.cycle, self.phase = None, 0
        n = ids.size
        for p in np.flatnonzero(ids == ids[0])[1:5].tolist() if n > 1 else ():
            if 2 * p > n:
                break
            if bool((ids[p:] == ids[:-p]).all()):
                self.cycle = ids[n - p:].copy()
                return

    def flush(self, counts: dict[Any, int]) -> None:
        """Add the records counted to ``counts`` (once, when the part ends)."""
        for key, n in zip(self.keys, self.totals.tolist()):
            if n:
                counts[key] = counts.get(key, 0) + n
        self.totals = self.np.zeros(self.totals.size, dtype=self.np.int64)
