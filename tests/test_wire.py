"""tb_opmode.read.wire: numpy decoding of many protobuf messages at once, checked
against protobuf's own encoder and parser (upb) on generated messages, and on
damaged ones: a bad message is flagged, its neighbours still read."""
from __future__ import annotations

import random

import numpy as np
import pytest
from google.protobuf.internal.encoder import _VarintBytes

from tb_opmode.read import wire
from tb_opmode.read.schema import XSpace, message_fields, walk_fields

XEvent = type(XSpace().planes.add().lines.add().events.add())


def _events(rng: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        ev = XEvent()
        ev.metadata_id = rng.choice([0, 1, 127, 128, 300, -1, rng.getrandbits(40)])
        ev.offset_ps = rng.choice([0, 1, rng.getrandbits(20), rng.getrandbits(50), -5, (1 << 63) - 1])
        ev.duration_ps = rng.choice([0, rng.getrandbits(30), -(1 << 63)])
        for _ in range(rng.randrange(4)):
            st = ev.stats.add()
            st.metadata_id = rng.randrange(1, 200)
            which = rng.randrange(4)
            if which == 0:
                st.int64_value = rng.getrandbits(63) - (1 << 62)
            elif which == 1:
                st.double_value = rng.random()
            elif which == 2:
                st.str_value = "é" * rng.randrange(5)
            else:
                st.ref_value = rng.getrandbits(64)
        out.append(ev.SerializeToString())
    return out


def _layout(messages: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lens = np.array([len(m) for m in messages], dtype=np.int64)
    ends = np.cumsum(lens)
    return wire.padded(b"".join(messages)), ends - lens, ends


def test_varints_match_protobufs_encoder() -> None:
    rng = random.Random(1)
    values = [0, 1, 127, 128, 16383, 16384, (1 << 56) - 1, 1 << 56, (1 << 63), (1 << 64) - 1]
    values += [rng.getrandbits(rng.randint(1, 64)) for _ in range(5000)]
    encoded = [_VarintBytes(v) for v in values]
    pos = np.cumsum([0] + [len(e) for e in encoded[:-1]])
    got, sizes = wire.varints(wire.padded(b"".join(encoded)), pos)
    assert got.tolist() == values
    assert sizes.tolist() == [len(e) for e in encoded]
    # 11 continuation bytes: no varint; size 0 says so.
    assert wire.varints(wire.padded(b"\xff" * 11), np.array([0]))[1].tolist() == [0]


@pytest.mark.parametrize("chunk", [3, 1 << 18])
def test_scan_matches_upb(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(wire, "_CHUNK", chunk)
    messages = _events(random.Random(2), 400)
    buf, starts, ends = _layout(messages)
    for prefix in [(), (1,), (1, 2, 3)]:
        f = wire.scan(buf, starts, ends, prefix=prefix)
        assert not f.bad.any()
        parsed = [XEvent.FromString(m) for m in messages]
        for number, name in [(1, "metadata_id"), (2, "offset_ps"), (3, "duration_ps")]:
            values, _, present = f.scalar(number)
            assert values.view(np.int64).tolist() == [getattr(p, name) for p in parsed]
            assert present.tolist() == [getattr(p, name) != 0 for p in parsed]
        msg, s, e = f.ranges(4)
        want = [(i, st.SerializeToString()) for i, p in enumerate(parsed) for st in p.stats]
        assert [(int(i), buf[a:b].tobytes()) for i, a, b in zip(msg, s, e)] == want
        inner = wire.scan(buf, s, e, prefix=(1,))
        dbl = inner.scalar(2, wire.FIXED64)[0].view(np.float64)
        strings = inner.scalar(5, wire.LEN)
        stats = [st for p in parsed for st in p.stats]
        assert dbl.tolist() == [st.double_value for st in stats]
        assert [buf[a:a + n].tobytes().decode() for n, a in zip(strings[0].tolist(), strings[1].tolist())] \
            == [st.str_value for st in stats]
        assert inner.scalar(7)[0].tolist() == [st.ref_value for st in stats]


@pytest.mark.parametrize("damage", [
    b"\x0a\x7f",          # a length past the end of the message
    b"\x08" + b"\xff" * 11,  # a varint of 12 bytes
    b"\x0b\x00",          # wire type 3 (start group)
    b"\x00\x01",          # field number 0
    b"\x0f\x00",          # wire type 7
])
def test_a_bad_message_is_flagged_and_its_neighbours_read(damage: bytes) -> None:
    messages = _events(random.Random(3), 20)
    good = [XEvent.FromString(m).metadata_id for m in messages]
    messages[7] = messages[7] + damage
    buf, starts, ends = _layout(messages)
    f = wire.scan(buf, starts, ends, prefix=(1, 2, 3))
    assert f.bad.tolist() == [i == 7 for i in range(20)]
    values, _, _ = f.scalar(1)
    ok = [i for i in range(20) if i != 7]
    assert [int(values.view(np.int64)[i]) for i in ok] == [good[i] for i in ok]


def test_walk_stops_at_damage() -> None:
    body = b"\x08\x05" + b"\x12\x03abc" + b"\x12\x7f"
    fields = list(walk_fields(body, 0, len(body)))
    assert [(n, wt, v) for n, wt, v, _, _ in fields] == [(1, 0, 5), (2, 2, 3)]
    assert fields[1][3:] == (2, 7)
    assert message_fields(body, 0, len(body)) is None
    assert message_fields(body, 0, 7) == fields
