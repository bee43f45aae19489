#!/usr/bin/env python3
"""Check the corpus program `indices` against PyTorch on the same inputs.

usage: torch_indices.py INPUTS.safetensors OUTPUTS.safetensors

tests/gpu/corpus/indices.trace uses the prims fp8cc composes from other ops
(argmax, argmin, topk, sort, index_copy with the copy_ that makes it in
place, unfold, setitem, lerp, scatter, index_add); the corpus compares fp8run's outputs with the
interpreter's, and this does each again with torch on the GPU and compares
fp8run's outputs bit for bit: torch.argmax / torch.argmin (the first index
of a tie, the first NaN), Tensor.unfold, setitem, torch.lerp (fp8cc's
fma for nvcc's contraction), torch.sort (stable: a
defined order), torch.topk's values (its order of equal values is
unspecified, so its indices are not compared: fp8cc's must be distinct and
give fp8cc's values), and the caches updated in place (cache_updated and c8_updated).
PyTorch leaves which of two equal positions wins in index_copy_
unspecified, so the caches are checked against the rows copied one by one
in order (the last wins, as fp8cc documents), and against torch's
index_copy_ itself when the positions are distinct. The index_add's sums
(torch's atomics add in any order) are compared within 1e-5 of the sum of
their terms' magnitudes, the bound of any order (below). Exit
1 on any mismatch."""
import sys

import torch
from safetensors.torch import load_file

from check import same_bits


def main(inputs, outputs):
    i = {k: v.cuda() for k, v in load_file(inputs).items()}
    got = {k: v.cuda() for k, v in load_file(outputs).items()}
    pos = torch.remainder(i["rp"], 256)
    want = {
        "tok": torch.argmax(i["logits"], 1),
        "col": torch.argmin(i["x"], 0),
        "kr": torch.argmin(i["k"], -1),
        "whole": torch.argmax(i["x"]),
        "win": i["x"].unfold(0, 8, 4),
    }
    want["sv"], want["si"] = torch.sort(i["router"], dim=1, descending=True, stable=True)
    want["xs"], want["xb"] = i["x"].clone(), i["logits"].clone()
    want["xs"][8::3, -1] = 0.25
    want["xb"][..., 0:100] = i["lrow"]
    want["lx"] = torch.lerp(i["la"], i["lb"], i["lw"])
    want["ly"] = torch.lerp(i["x"], i["x2"], 0.7)
    want["hot"] = torch.zeros(4, 4096, dtype=torch.bfloat16, device="cuda").scatter(1, want["tok"][:, None], 1.0)
    # index_add: torch adds with atomics, in any order. Where a sum's finite
    # terms' magnitudes add up to less than f32's largest, no order
    # overflows: with an inf or a NaN among its terms every order gives the
    # same (NaN, or that inf), the same bits; without, any two orders differ
    # by at most the terms' count times f32's epsilon times that magnitude,
    # within 1e-5 of it. Above, the order decides whether it overflows (the
    # special draw's huge values): not compared, counted.
    rows = torch.remainder(i["rp"], 64)
    ia = i["acc"].index_add(0, rows, i["vals"])

    def magnitude(x):   # |x| where finite, 0 elsewhere, in f64
        return torch.where(torch.isfinite(x), x.double().abs(), 0.0)
    mag = magnitude(i["acc"]).index_add(0, rows, magnitude(i["vals"]))
    g = got["ia"]
    # (per sum: no term non-finite)
    finite = (~torch.isfinite(i["acc"])).int().index_add(0, rows, (~torch.isfinite(i["vals"])).int()) == 0
    huge = mag >= torch.finfo(torch.float32).max
    same = (ia == g) | (ia.isnan() & g.isnan())
    # torch's float atomics (PTX atom/red.add.f32) also flush subnormal
    # inputs and results to zero: each of a sum's additions may lose less
    # than f32's smallest normal, which fp8cc (IEEE, as torch on the CPU)
    # keeps (2026-12-05, H200: -0.0 + -1.4e-45 gave -0.0 there)
    count = torch.ones_like(mag).index_add(0, rows, torch.ones_like(i["vals"], dtype=torch.float64))
    tiny = count * torch.finfo(torch.float32).tiny
    close = torch.where(finite & ~huge, (g.double() - ia.double()).abs() <= 1e-5 * mag + tiny, same) | huge
    good = g.shape == ia.shape and bool(close.all())
    print(f"{'ok  ' if good else 'FAILED'} ia (index_add: non-finite terms give the same bits, finite ones within "
          f"1e-5 of their magnitudes' sum and the subnormals torch's atomics flush; {int(huge.sum())} sums "
          "that may overflow in some order not compared)")
    if not good and g.shape == ia.shape:
        rows_of = rows.tolist()
        for r, c in (~close).nonzero().tolist()[:4]:
            terms = [i["acc"][r, c].item()] + [i["vals"][k, c].item() for k, p in enumerate(rows_of) if p == r]
            print(f"  ia[{r}, {c}]: fp8cc {g[r, c].item()!r}, torch {ia[r, c].item()!r}, terms {terms}")
    ok = good
    cache, c8 = i["cache"].clone(), i["c8"].clone()
    for j, p in enumerate(pos.tolist()):   # in order: the last of equal positions wins
        cache[:, :, p] = i["kv"][:, :, j]
        c8[:, p] = i["kv8"][:, j]
    want["cache_updated"], want["c8_updated"] = cache, c8
    if len(set(pos.tolist())) == pos.numel():
        ok &= same_bits("index_copy_ (torch) against the rows one by one", i["cache"].clone().index_copy_(2, pos, i["kv"]),
                        cache)
        ok &= same_bits("index_copy_ (torch, e4m3) against the rows one by one",
                        i["c8"].clone().index_copy_(1, pos, i["kv8"]), c8)
    else:
        print("  (duplicate positions: torch's index_copy_ leaves the winner unspecified; rows one by one only)")
    for v, ix, largest in (("tv", "ti", True), ("bv", "bi", False)):
        w = torch.topk(i["router"], 2, 1, largest)[0]
        g, gi = got[v], got[ix]
        good = g.shape == w.shape and bool(((g == w) | (g.isnan() & w.isnan())).all())
        good = good and same_bits(ix + " gives " + v, i["router"].gather(1, gi), g)
        good = good and bool((gi[:, 0] != gi[:, 1]).all())
        print(f"{'ok  ' if good else 'FAILED'} {v}, {ix} (topk, largest={largest})")
        ok &= good
    for name, w in want.items():
        if name not in got:
            print(f"FAILED {name}: not in {outputs}")
            ok = False
            continue
        good = got[name].shape == w.shape and same_bits(name, got[name], w)
        print(f"{'ok  ' if good else 'FAILED'} {name} {tuple(w.shape)}")
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
