#!/usr/bin/env python3
"""Write a --signature file: a safetensors file that holds only its header
(the dtype and shape of each tensor; its data is not needed, so the file
ends after the header, which fp8cc --signature reads alone).

usage: signature.py OUT.safetensors NAME=DTYPE[d0,d1,...] ...
e.g.   signature.py 20.sig.safetensors t0=F32[64,64] t1=F32[64,64]

With --data, zero-filled data follows, so that readers of whole files take
it too. Standard library only."""
import json
import re
import struct
import sys

SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2,
        "F32": 4, "F64": 8, "F8_E4M3": 1, "F8_E5M2": 1}


def main():
    args = sys.argv[1:]
    data = "--data" in args
    args = [a for a in args if a != "--data"]
    if len(args) < 2:
        sys.exit(__doc__)
    out, specs = args[0], args[1:]
    header, off = {}, 0
    for spec in specs:
        m = re.fullmatch(r"([^=]+)=([A-Z0-9_]+)\[([0-9, ]*)\]", spec)
        if not m or m.group(2) not in SIZE:
            sys.exit(f"bad tensor spec {spec!r}")
        shape = [int(d) for d in m.group(3).replace(" ", "").split(",") if d]
        n = SIZE[m.group(2)]
        for d in shape:
            n *= d
        header[m.group(1)] = {"dtype": m.group(2), "shape": shape, "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + (b"\0" * off if data else b""))


if __name__ == "__main__":
    main()
