#!/usr/bin/env python3
"""Write the seed fp8 linear trace (examples/seed_fp8_linear_*.trace) at another
shape: input (M,K), weight (N,K), output (M,N).

usage: linear_trace.py SEED.trace M K N > OUT.trace

The seed is 16x32x64; every shape in it is one of (16, 32), (64, 32),
(32, 64), (16, 64) or the view [-1, 32], so a substitution of those patterns
gives the same program at any shape. Standard library only."""
import re
import sys


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, m, k, n = sys.argv[1], *map(int, sys.argv[2:])
    text = open(path).read()
    table = {"16, 32": f"{m}, {k}", "64, 32": f"{n}, {k}", "32, 64": f"{k}, {n}",
             "16, 64": f"{m}, {n}", "[-1, 32]": f"[-1, {k}]"}
    pattern = re.compile("|".join(re.escape(p) for p in table))
    sys.stdout.write(pattern.sub(lambda mo: table[mo.group(0)], text))


if __name__ == "__main__":
    main()
