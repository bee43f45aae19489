#!/usr/bin/env python3
"""index_copy_inputs.py OUT — the inputs of index-copy.trace: a cache of
0, 1, 2, ... (f32[2, 6, 3]) and new rows of 100, 101, ... (f32[2, 4, 3])
at positions 4, 1, 4 (a duplicate: the last wins) and 9 (out of range:
no row); and an e4m3 cache of 0x01.. with rows of 0x40.. at 0 and 2."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "oracle"))
import compare  # noqa: E402

compare.write(sys.argv[1], {
    "cache": ("F32", [2, 6, 3], struct.pack("<36f", *range(36))),
    "k": ("F32", [2, 4, 3], struct.pack("<24f", *range(100, 124))),
    "pos": ("I64", [4], struct.pack("<4q", 4, 1, 4, 9)),
    "q8": ("F8_E4M3", [3, 2], bytes(range(1, 7))),
    "n8": ("F8_E4M3", [2, 2], bytes(range(0x40, 0x44))),
    "p2": ("I32", [2], struct.pack("<2i", 0, 2)),
})
