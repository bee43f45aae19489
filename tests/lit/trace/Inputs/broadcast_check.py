"""usage: broadcast_check.py INPUTS OUTPUTS — broadcast.trace run by the
interpreter over two ranks: how many elements of each rank's broadcast
results have the root's bits, and of d (the same sums) the other rank's."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "oracle"))
from compare import read  # noqa: E402

ins, _ = read(sys.argv[1])
outs, _ = read(sys.argv[2])
for got, want in (("rank0/bw", ins["rank1/w"]), ("rank1/bw", ins["rank1/w"]), ("rank0/c", ins["rank0/x"]),
                  ("rank1/c", ins["rank0/x"]), ("rank0/d", outs["rank1/d"])):
    g = outs[got]
    n = sum(a == b for a, b in zip(g.bits, want.bits)) if g.dtype == want.dtype else 0
    print(f"{got} is {want.name}: {n} of {len(want.bits)}")
