"""Write one big XPlane profile with tf.profiler, for the XPlane read benchmark.

In: an output directory and a number of steps. Out:
OUTDIR/plugins/profile/<session>/<host>.xplane.pb, a host profile of a loop
that runs a small dense model's training step as a tf.function and a few ops
eagerly each step (so the file holds both eager and graph op events, as a
real profile of a mixed run does). About 2 kB of profile per step on TF 2.21 (31,000 steps: ~70 MB,
3.3 million events). ``--onednn off`` runs with TF_ENABLE_ONEDNN_OPTS=0 (no ``_Mkl`` kernel,
no banner: every op's oneDNN question is left to the rule table).

``--scale-from FILE --scale-to BYTES`` instead copies an existing profile, repeating its
host plane's lines until the file reaches BYTES (a profile larger than TF's profiler
could hold in this machine's memory, for the bench's 1 GB read; the events repeat,
so the counts are a multiple of the original's).
"""
from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--onednn", choices=("on", "off"), default="on")
    parser.add_argument("--scale-from", metavar="FILE", help="an .xplane.pb to repeat")
    parser.add_argument("--scale-to", type=int, default=1 << 30, metavar="BYTES")
    args = parser.parse_args(argv)
    if args.scale_from:
        return scale(args.scale_from, args.outdir, args.scale_to)
    if args.onednn == "off":
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    w1 = tf.Variable(tf.random.uniform((32, 64), seed=1))
    w2 = tf.Variable(tf.random.uniform((64, 8), seed=2))
    x = tf.random.uniform((16, 32), seed=3)
    y = tf.random.uniform((16, 8), seed=4)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1))
            loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.01 * g1)
        w2.assign_sub(0.01 * g2)
        return loss

    step(x, y)
    tf.profiler.experimental.start(args.outdir)
    for _ in range(args.steps):
        loss = step(x, y)
        z = tf.transpose(tf.matmul(x, w1))  # eager ops between steps
        _ = tf.reduce_sum(z) + loss
    tf.profiler.experimental.stop()
    return 0


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    """(field number, start of the tag, end) of each field of a message whose fields
    are all varints or length-delimited (as XSpace and XPlane are)."""
    from tb_opmode.read.schema import read_varint

    out, pos = [], start
    while pos < end:
        tag, p = read_varint(data, pos, end)
        value, p = read_varint(data, p, end)
        if p < 0:
            raise ValueError(f"not an XSpace field at byte {pos}")
        after = p + value if tag & 7 == 2 else p
        out.append((tag >> 3, pos, after))
        pos = after
    return out


def scale(src: str, outdir: str, target: int) -> int:
    """OUTDIR/plugins/profile/scaled/<host>.xplane.pb: ``src`` with the lines of its
    /host:CPU plane repeated until the file holds about ``target`` bytes."""
    from tb_opmode.read.schema import XPlane, read_varint

    data = open(src, "rb").read()
    session = os.path.join(outdir, "plugins", "profile", "scaled")
    os.makedirs(session, exist_ok=True)
    out_path = os.path.join(session, os.path.basename(src))
    with open(out_path, "wb") as out:
        for number, start, end in _fields(data, 0, len(data)):
            if number == 1:
                _, p = read_varint(data, start, end)
                length, body = read_varint(data, p, end)
                fields = _fields(data, body, end)
                head = b"".join(data[s:e] for n, s, e in fields if n != 3)
                plane = XPlane()
                plane.ParseFromString(head)
                if plane.name == "/host:CPU":
                    lines = b"".join(data[s:e] for n, s, e in fields if n == 3)
                    copies = max(1, (target - len(data)) // max(len(lines), 1) + 1)
                    out.write(b"\x0a" + _varint(len(head) + copies * len(lines)) + head)
                    for _ in range(copies):
                        out.write(lines)
                    continue
            out.write(data[start:end])
    print(f"{out_path}: {os.path.getsize(out_path):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
