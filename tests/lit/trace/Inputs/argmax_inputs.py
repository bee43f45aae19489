#!/usr/bin/env python3
"""argmax_inputs.py OUT — the inputs of argmax-argmin.trace: ties, NaNs,
signed zeros and infinities where argmax and argmin must pick PyTorch's
index (the first of a tie, the first NaN)."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "oracle"))
import compare  # noqa: E402

nan, inf = float("nan"), float("inf")
x = [1, 3, 3, -1, 2,
     0.0, nan, 5, nan, -inf,
     -0.0, 0.0, -2, -2, -inf]
y = [0.5 * i - 3 for i in range(24)]
y[9] = y[17] = 9
z = [5, -3, 2, -3, 8, -3, 0]


def bf16(v):
    return struct.pack("<f", v)[2:]


compare.write(sys.argv[1], {
    "x": ("F32", [3, 5], struct.pack("<15f", *x)),
    "y": ("BF16", [4, 6], b"".join(bf16(v) for v in y)),
    "z": ("I32", [7], struct.pack("<7i", *z)),
})
