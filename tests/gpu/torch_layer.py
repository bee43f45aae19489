#!/usr/bin/env python3
"""Check fp8cc's fp8 linear layer against PyTorch on the same inputs.

usage: torch_layer.py INPUTS.safetensors OUTPUTS.safetensors [--expected INTERP.safetensors]

INPUTS holds `input` (M,K) and `weight` (N,K) in bf16; OUTPUTS is what fp8run
wrote: t122 (M,N) bf16, t197 (M,K) e4m3fn, scale f32[]. PyTorch computes the
torchao Float8Linear forward (tensor-wise dynamic scaling) with torch ops and
torch._scaled_mm on the GPU. The fp8 tensor and the scale must be equal bit
for bit; the layer output within 1e-2 relative (Frobenius) of PyTorch's, and
of the reference interpreter's when --expected is given. Exit 1 on mismatch."""
import sys

import torch
from safetensors.torch import load_file

from check import frobenius, same_bits

E4M3_MAX = 448.0


def quantize(t):
    """torchao's tensor-wise scaling: amax in f32, the scale in f64 then f32."""
    amax = t.float().abs().amax().to(torch.float64)
    scale = (E4M3_MAX / torch.clamp(amax, min=1e-12)).to(torch.float32)
    y = (t.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return y, scale


def layer(x, w):
    x8, sx = quantize(x)
    w8, sw = quantize(w)
    out = torch._scaled_mm(x8, w8.t(), scale_a=sx.reciprocal(), scale_b=sw.reciprocal(),
                           out_dtype=torch.bfloat16, use_fast_accum=True)
    return out, x8, sx


def main():
    args = sys.argv[1:]
    if len(args) not in (2, 4):
        sys.exit(__doc__)
    ins = load_file(args[0], device="cuda")
    got = load_file(args[1], device="cuda")
    out, x8, sx = layer(ins["input"], ins["weight"])
    ok = same_bits("t197 vs torch", got["t197"], x8)
    ok &= same_bits("scale vs torch", got["scale"].reshape(()), sx)
    ok &= frobenius("t122 vs torch._scaled_mm", got["t122"], out)
    if len(args) == 4:
        exp = load_file(args[3], device="cuda")
        ok &= same_bits("t197 vs interpreter", got["t197"], exp["t197"])
        ok &= same_bits("scale vs interpreter", got["scale"], exp["scale"])
        ok &= frobenius("t122 vs interpreter", got["t122"], exp["t122"])
    print("layer check:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
