#!/usr/bin/env python3
"""Compare what fp8run wrote with the reference interpreter's outputs, on the GPU.

usage: check.py EXPECTED.safetensors GOT.safetensors [--frob NAME,...] [--rtol R]

Every output of EXPECTED must be in GOT with the same dtype and shape. By
default the bits must be equal (any NaN matches any NaN); outputs named by
--frob (fp8 GEMM results) must be within 1e-2 relative Frobenius error; with
--rtol, float outputs may differ by R relative (transcendental functions and
sums, whose last bits depend on the math library and the order). Prints the
first mismatches with index, expected and got. Exit 1 on any mismatch.

Matmul results go by name: a float output whose name starts with `mm` (after
its FUNCTION/ in a program of several functions) is a matmul result, or is
computed from one, and is compared as docs/ir.md says: NaN, inf and -inf
where EXPECTED has them, and over the elements finite in both a relative
Frobenius error of at most LIMITS[dtype] (bf16 and f16 1e-2, f32 1e-5, f64
1e-12: the interpreter accumulates in f32, f64 for f64, in order; cuBLASLt
in another order). The corpus names its GEMM outputs so (tests/gpu/corpus/matmul_*)."""
import sys

import torch
from safetensors.torch import load_file

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
LIMITS = {torch.bfloat16: 1e-2, torch.float16: 1e-2, torch.float32: 1e-5, torch.float64: 1e-12}


def same_bits(name, got, want, quiet=False):
    """equal bits, NaN matching NaN (for fp8 too: 0x7F/0xFF in e4m3fn)"""
    g, w = got.contiguous().reshape(-1), want.contiguous().reshape(-1)
    if g.dtype in FLOATS or g.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        gn, wn = g.float().isnan(), w.float().isnan()
        gb, wb = g.view(torch.uint8).reshape(g.numel(), -1), w.view(torch.uint8).reshape(w.numel(), -1)
        bad = (gb != wb).any(-1) & ~(gn & wn)
    else:
        bad = g != w
    if not bad.any():
        return True
    print(f"  {name}: {int(bad.sum())} of {bad.numel()} differ")
    for i in bad.nonzero()[:5].flatten().tolist():
        at = list(torch.unravel_index(torch.tensor(i), want.shape)) if want.dim() else []
        print(f"    {[int(x) for x in at]}: expected {w[i].item()!r} got {g[i].item()!r}")
    return False


def frobenius(name, got, want, tol=1e-2):
    g, w = got.double().nan_to_num(), want.double().nan_to_num()
    den = torch.linalg.norm(w).item()
    err = torch.linalg.norm(g - w).item() / (den if den else 1.0)
    ok = err <= tol
    print(f"  {name}: relative Frobenius error {err:.3e} ({'ok' if ok else 'FAIL'}, limit {tol})")
    return ok


def is_gemm(name, t):
    """the naming rule above: a float output named mm..."""
    return name.rsplit("/", 1)[-1].startswith("mm") and t.dtype in LIMITS


def gemm(name, got, want):
    """a matmul result: the non-finite elements where want has them, and the
    relative Frobenius error over the finite ones within LIMITS[dtype]"""
    tol = LIMITS[want.dtype]
    g, w = got.double().reshape(-1), want.double().reshape(-1)

    def kind(t):   # 0 finite, 1 NaN, 2 inf, 3 -inf
        return t.isnan() * 1 + (t == float("inf")) * 2 + (t == float("-inf")) * 3

    bad = kind(g) != kind(w)
    fin = g.isfinite() & w.isfinite()
    den = torch.linalg.norm(w[fin]).item()
    err = torch.linalg.norm(g[fin] - w[fin]).item() / (den if den else 1.0)
    ok = err <= tol and not bad.any()
    nonfinite = f", {int((~w.isfinite()).sum())} non-finite" if not w.isfinite().all() else ""
    print(f"  {name}: relative Frobenius error {err:.3e} ({'ok' if ok else 'FAIL'}, limit {tol:g}{nonfinite})")
    if bad.any():
        print(f"  {name}: {int(bad.sum())} of {bad.numel()} differ in NaN or inf")
        for i in bad.nonzero()[:5].flatten().tolist():
            at = list(torch.unravel_index(torch.tensor(i), want.shape)) if want.dim() else []
            print(f"    {[int(x) for x in at]}: expected {w[i].item()!r} got {g[i].item()!r}")
    return ok


def close(name, got, want, rtol):
    g, w = got.double(), want.double()
    both_nan = g.isnan() & w.isnan()
    bad = ~both_nan & ~((g - w).abs() <= rtol * w.abs() + 1e-30) & ~(g == w)
    if not bad.any():
        return True
    print(f"  {name}: {int(bad.sum())} of {bad.numel()} outside rtol {rtol}")
    for i in bad.nonzero()[:5].tolist():
        t = tuple(i)
        print(f"    {list(t)}: expected {w[t].item()!r} got {g[t].item()!r}")
    return False


def main():
    args = sys.argv[1:]
    frob, rtol = set(), None
    while len(args) > 2:
        opt, val = args[-2], args[-1]
        if opt == "--frob":
            frob = set(val.split(","))
        elif opt == "--rtol":
            rtol = float(val)
        else:
            sys.exit(__doc__)
        args = args[:-2]
    if len(args) != 2:
        sys.exit(__doc__)
    want, got = load_file(args[0], device="cuda"), load_file(args[1], device="cuda")
    ok = True
    for name, w in want.items():
        g = got.get(name)
        if g is None or g.dtype != w.dtype or g.shape != w.shape:
            print(f"  {name}: missing or of another type in {args[1]}")
            ok = False
        elif name in frob:
            ok &= frobenius(name, g, w)
        elif is_gemm(name, w):
            ok &= gemm(name, g, w)
        elif rtol is not None and w.dtype in FLOATS:
            ok &= close(name, g, w, rtol)
        else:
            ok &= same_bits(name, g, w)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
