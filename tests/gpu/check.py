#!/usr/bin/env python3
"""Compare what fp8run wrote with the reference interpreter's outputs, on the GPU.

usage: check.py EXPECTED.safetensors GOT.safetensors [--frob NAME,...] [--rtol R] [--atol A]
                [--frob-all] [--gemm-special]
       check.py --batch FILE     (one check a line: LABEL<tab>EXPECTED<tab>GOT[<tab>OPTIONS];
                                  prints "ok   LABEL" or "FAILED LABEL" and the mismatches,
                                  exit 1 if any failed: one start of torch for the corpus)

Every output of EXPECTED must be in GOT with the same dtype and shape. By
default the bits must be equal (any NaN matches any NaN); outputs named by
--frob (fp8 GEMM results) must be within 1e-2 relative Frobenius error; with
--rtol, float outputs may differ by R relative (transcendental functions and
sums, whose last bits depend on the math library and the order). Prints the
first mismatches with index, expected and got. Exit 1 on any mismatch.
--frob-all compares every float output as a matmul result (below): for
programs whose outputs all follow GEMMs, as the real traces' do. --atol
adds an absolute tolerance to --rtol (lgamma near its zeros).
--gemm-special, for the special-value draws: a matmul result's non-finite
elements may be any of NaN, inf, -inf where EXPECTED has one of them —
which one is decided by the order in which a sum that overflows adds its
terms (measured on the H200, 2026-12-01: 1 to 13 elements per output of
the corpus), and cuBLASLt's order is not the interpreter's.

Matmul results go by name: a float output whose name starts with `mm` (after
its FUNCTION/ in a program of several functions) is a matmul result, or is
computed from one, and is compared as docs/ir.md says: NaN, inf and -inf
where EXPECTED has them, and over the elements finite in both a relative
Frobenius error of at most LIMITS[dtype] (bf16 and f16 1e-2, f32 1e-5, f64
1e-9: the interpreter accumulates in f32, f64 for f64, in order; cuBLASLt
in another order). The corpus names its GEMM outputs so (tests/gpu/corpus/matmul_*)."""
import sys

import torch
from safetensors.torch import load_file

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# f64: cuBLASLt's f64 GELU epilogue is good to about 2e-10 (measured on the
# H200, 2026-12-01), not to f64's last bits
LIMITS = {torch.bfloat16: 1e-2, torch.float16: 1e-2, torch.float32: 1e-5, torch.float64: 1e-9}


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


def gemm(name, got, want, special=False):
    """a matmul result: the non-finite elements where want has them, and the
    relative Frobenius error over the finite ones within LIMITS[dtype]; with
    `special`, any non-finite value matches any other (NaN, inf or -inf)"""
    tol = LIMITS[want.dtype]
    g, w = got.double().reshape(-1), want.double().reshape(-1)

    def kind(t):   # 0 finite, 1 NaN, 2 inf, 3 -inf
        k = t.isnan() * 1 + (t == float("inf")) * 2 + (t == float("-inf")) * 3
        return k.clamp(max=1) if special else k

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


def close(name, got, want, rtol, atol=1e-30):
    g, w = got.double(), want.double()
    both_nan = g.isnan() & w.isnan()
    bad = ~both_nan & ~((g - w).abs() <= rtol * w.abs() + atol) & ~(g == w)
    if not bad.any():
        return True
    print(f"  {name}: {int(bad.sum())} of {bad.numel()} outside rtol {rtol} atol {atol:g}")
    for i in bad.nonzero()[:5].tolist():
        t = tuple(i)
        print(f"    {list(t)}: expected {w[t].item()!r} got {g[t].item()!r}")
    return False


def check(args):
    """One comparison; args as on the command line. True when it passes."""
    frob, rtol, atol, frob_all, special = set(), None, 1e-30, False, False
    if "--frob-all" in args:
        args.remove("--frob-all")
        frob_all = True
    if "--gemm-special" in args:
        args.remove("--gemm-special")
        special = True
    while len(args) > 2:
        opt, val = args[-2], args[-1]
        if opt == "--frob":
            frob = set(val.split(","))
        elif opt == "--rtol":
            rtol = float(val)
        elif opt == "--atol":
            atol = float(val)
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
        elif is_gemm(name, w) or (frob_all and w.dtype in FLOATS):
            ok &= gemm(name, g, w, special)
        elif rtol is not None and w.dtype in FLOATS:
            ok &= close(name, g, w, rtol, atol)
        else:
            ok &= same_bits(name, g, w)
    return ok


def batch(path):
    failed = 0
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3:
                continue
            label, args = fields[0], fields[1:3] + (fields[3].split() if len(fields) > 3 else [])
            ok = check(args)
            print(("ok   " if ok else "FAILED ") + label, flush=True)
            failed += not ok
    print(f"{failed} comparison(s) failed")
    return failed == 0


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--batch":
        sys.exit(0 if batch(args[1]) else 1)
    sys.exit(0 if check(args) else 1)


if __name__ == "__main__":
    main()
