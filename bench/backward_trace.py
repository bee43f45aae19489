#!/usr/bin/env python3
"""Write the fp8 linear backward trace (examples/fp8_linear_backward.trace) at
another shape: grad_output (M,N), input (M,K), weight (N,K).

usage: backward_trace.py BACKWARD.trace M K N > OUT.trace

In the example M=64, N=128, K=96, and those numbers appear only in shapes,
so replacing them as whole words gives the same program at any shape.
Standard library only."""
import re
import sys


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, m, k, n = sys.argv[1], *map(int, sys.argv[2:])
    table = {"64": str(m), "128": str(n), "96": str(k)}
    text = open(path).read()
    sys.stdout.write(re.sub(r"\b(64|128|96)\b", lambda mo: table[mo.group(1)], text))


if __name__ == "__main__":
    main()
