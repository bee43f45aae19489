#!/usr/bin/env python3
"""scatter_inputs.py OUT — the inputs of scatter.trace: small index tensors
with duplicates (the last wins a scatter; scatter_add adds them all)."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "oracle"))
import compare  # noqa: E402


def i64(*v):
    return struct.pack("<%dq" % len(v), *v)


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


compare.write(sys.argv[1], {
    "oh": ("I64", [3, 1], i64(1, 4, 1)),
    "ix": ("I64", [2, 3], i64(0, 2, 0, 3, 3, 1)),
    "src": ("F32", [2, 3], f32(1, 2, 3, 4, 5, 6)),
    "i0": ("I64", [2, 2], i64(2, 0, 1, 2)),
    "s0": ("F32", [2, 2], f32(10, 20, 30, 40)),
    "ia": ("I32", [3], struct.pack("<3i", 1, 3, 1)),
    "va": ("BF16", [3, 2], b"".join(struct.pack("<f", v)[2:] for v in (1, 2, 3, 4, 5, 6))),
})
