#!/usr/bin/env python3
"""Write torchao's fp8 linear layer with an FSDP weight as fp8cc IR text:
each rank holds (N/R, K) rows of the bf16 weight, all-gathers them, and
quantizes the input and the gathered weight tensor-wise (amax, 448/amax in
f64, the clamped cast to e4m3) before torch._scaled_mm (the recipe of
examples/seed_fp8_linear_after.trace, in tests/lit/Inputs/seed.ir). fp8cc's
shards pass turns the gather of bf16 into a gather of fp8 (docs/design.md,
"Collectives"); compiled without it (--passes=canonicalize,transposes,
canonicalize,ranges,layouts,fuse) the same program gathers bf16.

usage: gather_ir.py M K N RANKS > layer.ir
Outputs: t122 (M,N) bf16, t197 the input's fp8, scale its scale, t223 the
gathered fp8 weight (N,K), weight_scale. Standard library only."""
import os
import sys

SEED = os.path.join(os.path.dirname(__file__), "..", "tests", "lit", "Inputs", "seed.ir")


def layer(m, k, n, ranks):
    if n % ranks:
        sys.exit(f"gather_ir.py: N={n} is not a multiple of RANKS={ranks}")
    text = open(SEED).read()
    # the seed layer is 16x32x64: (M,K) input, (N,K) weight, its (K,N) transposes, (M,N) output
    for old, new in (("[16,32]", "[@M,@K]"), ("[64,32]", "[@N,@K]"), ("[32,64]", "[@K,@N]"),
                     ("bf16[16,64]", "bf16[@M,@N]")):
        text = text.replace(old, new)
    text = text.replace("@M", str(m)).replace("@K", str(k)).replace("@N", str(n))
    head = f"func @computation(%input: bf16[{m},{k}], %weight: bf16[{n},{k}]) {{\n"
    assert text.startswith(head)
    text = (f"func @computation(%input: bf16[{m},{k}], %shard: bf16[{n // ranks},{k}]) {{\n"
            f"  %gw = all_gather %shard [{ranks}] : bf16[{n},{k}]\n"
            f"  %weight = wait %gw : bf16[{n},{k}]\n") + text[len(head):]
    return text.replace("  return %t249 as t122, %t197, %scale\n",
                        "  return %t249 as t122, %t197, %scale, %t223, %weight_scale\n")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.stdout.write(layer(*map(int, sys.argv[1:])))
