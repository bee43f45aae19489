#!/usr/bin/env python3
"""topk_inputs.py OUT — the inputs of topk.trace: NaNs, infinities, ties,
signed zeros, a row of NaNs but one number, and integers at their limits."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "oracle"))
import compare  # noqa: E402

nan, inf = float("nan"), float("inf")
x = [1, 5, 5, -inf, nan, 2,
     nan, nan, 0.0, -0.0, 3, 3,
     nan, nan, nan, nan, nan, 1]
z = [3, -7, 3, 2147483647, -2147483648,
     0, 0, 0, 0, 0]
compare.write(sys.argv[1], {
    "x": ("F32", [3, 6], struct.pack("<18f", *x)),
    "z": ("I32", [2, 5], struct.pack("<10i", *z)),
})
