#!/usr/bin/env python3
"""lerp_inputs.py OUT — the inputs of lerp.trace. Element 0 is where one
rounding and two differ: start -1, end 3 + 2^-10, weight 0.25 + 2^-14:
w*(end - start) - 1 is 2^-11 + 2^-24 exactly, which a separate product
(1 + 2^-11 + 2^-24, a tie) would round to 1 + 2^-11 first. Element 1 takes
the other branch (weight 0.75: end - (end - start)*0.25)."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "oracle"))
import compare  # noqa: E402



def bf16(*v):
    return b"".join(struct.pack("<f", x)[2:] for x in v)


compare.write(sys.argv[1], {
    "s": ("F32", [2], struct.pack("<2f", -1.0, 0.0)),
    "e": ("F32", [2], struct.pack("<2f", 3 + 2 ** -10, 10.0)),
    "w": ("F32", [2], struct.pack("<2f", 0.25 + 2 ** -14, 0.75)),
    "hs": ("BF16", [2], bf16(1.0, 1.0)),
    "he": ("BF16", [2], bf16(2.0, 2.0)),
})
