#!/usr/bin/env python3
"""Benchmark the fp8 linear layer's backward step: fp8cc (fp8run on the
compiled PTX) against PyTorch eager and torch.compile of the same step, and
the two GEMMs alone, measured in one run.

usage: bench_backward.py FP8RUN PTXDIR [OUT.md]

The step (torchao Float8Linear, tensor-wise dynamic scaling): grad_output
(M,N) to e5m2, input (M,K) and weight (N,K) to e4m3fn, then
grad_input = grad_output · weight and grad_weight = grad_outputᵀ · input,
whose fp8 operands must be column-major or transposed: PyTorch makes those
copies with .t().contiguous(); fp8cc's one kernel writes them directly.
PTXDIR holds backward_MxKxN.ptx (tests/gpu/prepare.sh). Each time three
ways: the median of runs each between CUDA events, a run's share of runs
back to back (bench_gemm.back_to_back; fp8run --wall), where the host's
time before each launch (torch.compile's guards and wrappers) is hidden
behind the GPU's work, and the median of runs on an emptied L2 (fp8run
--cold; torch's each right after zeroing 1 GiB, which also hides its host
time: the GPU's time alone)."""
import os
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(__file__))
from bench_gemm import back_to_back, l2_flush, rel_error, run_fp8run  # noqa: E402
from bench_layer import time_torch  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 4096, 4096)]


def quantize(t, fmax, dtype):
    amax = t.float().abs().amax().to(torch.float64)
    scale = (fmax / torch.clamp(amax, min=1e-12)).to(torch.float32)
    return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale


def backward(go, x, w):
    g8, sg = quantize(go, 57344.0, torch.float8_e5m2)
    w8, sw = quantize(w, 448.0, torch.float8_e4m3fn)
    x8, sx = quantize(x, 448.0, torch.float8_e4m3fn)
    gi = torch._scaled_mm(g8, w8.t().contiguous().t(), scale_a=sg.reciprocal(), scale_b=sw.reciprocal(),
                          out_dtype=torch.bfloat16)
    gw = torch._scaled_mm(g8.t().contiguous(), x8.t().contiguous().t(), scale_a=sg.reciprocal(),
                          scale_b=sx.reciprocal(), out_dtype=torch.bfloat16)
    return gi, gw


def gemms_alone(go, x, w, iters, flush):
    g8, sg = quantize(go, 57344.0, torch.float8_e5m2)
    w8, sw = quantize(w, 448.0, torch.float8_e4m3fn)
    x8, sx = quantize(x, 448.0, torch.float8_e4m3fn)
    wt, gt, xt = w8.t().contiguous().t(), g8.t().contiguous(), x8.t().contiguous().t()
    a, b, c = sg.reciprocal(), sw.reciprocal(), sx.reciprocal()

    def run(p, q):
        torch._scaled_mm(g8, wt, scale_a=a, scale_b=b, out_dtype=torch.bfloat16)
        torch._scaled_mm(gt, xt, scale_a=a, scale_b=c, out_dtype=torch.bfloat16)
    return (time_torch(run, None, None, iters), back_to_back(lambda: run(None, None), iters),
            time_torch(run, None, None, iters, flush))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    fp8run, ptxdir = sys.argv[1], sys.argv[2]
    compiled = torch.compile(backward)
    rows = []
    flush = l2_flush()
    for m, k, n in SHAPES:
        torch.manual_seed(0)
        go = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        with tempfile.TemporaryDirectory() as tmp:
            inputs = os.path.join(tmp, "in.safetensors")
            save_file({"grad_output": go.cpu(), "input": x.cpu(), "weight": w.cpu()}, inputs)
            ptx, got = os.path.join(ptxdir, f"backward_{m}x{k}x{n}.ptx"), os.path.join(tmp, "out.safetensors")
            ours, ours_b, ours_c = run_fp8run(fp8run, ptx, inputs, got, iters=50, warmup=None, wall=True, cold=True)
            # the results against eager's (fp8 GEMMs: cuBLASLt's and torch's
            # sum in their own orders, so not bit for bit)
            got = load_file(got, device="cuda")
        gi, gw = backward(go, x, w)
        err = max(rel_error(got["grad_input"].float(), gi.float()), rel_error(got["grad_weight"].float(), gw.float()))
        eager = time_torch(lambda a, b: backward(go, x, w), None, None, 50)
        comp = time_torch(lambda a, b: compiled(go, x, w), None, None, 50)
        eager_b = back_to_back(lambda: backward(go, x, w), 50)
        comp_b = back_to_back(lambda: compiled(go, x, w), 50)
        eager_c = time_torch(lambda a, b: backward(go, x, w), None, None, 50, flush)
        comp_c = time_torch(lambda a, b: compiled(go, x, w), None, None, 50, flush)
        gemm, gemm_b, gemm_c = gemms_alone(go, x, w, 50, flush)
        rows.append((m, k, n, (ours, ours_b, ours_c), (eager, eager_b, eager_c), (comp, comp_b, comp_c),
                     (gemm, gemm_b, gemm_c), err))
        print(f"backward {m}x{k}x{n}: fp8cc {ours:.1f} us (error {err:.1e}), eager {eager:.1f} us, "
              f"compile {comp:.1f} us, the two GEMMs alone {gemm:.1f} us; back to back: fp8cc {ours_b:.1f} us, "
              f"eager {eager_b:.1f} us, compile {comp_b:.1f} us, GEMMs {gemm_b:.1f} us; cold L2: fp8cc {ours_c:.1f} us, "
              f"eager {eager_c:.1f} us, compile {comp_c:.1f} us, GEMMs {gemm_c:.1f} us", flush=True)
    lines = ["| M×K×N | timing | fp8cc µs | eager µs | torch.compile µs | eager / fp8cc | compile / fp8cc "
             "| GEMMs alone µs | fp8cc − GEMMs µs | quantize floor µs | error |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, k, n, o2, e2, c2, g2, r in rows:
        # read three bf16 tensors once; write go8, go8ᵀ, w8, x8 once (1 byte each)
        floor = (2 * (m * n + m * k + n * k) + 2 * m * n + m * k + n * k) / 4.2e12 * 1e6
        for i, how in enumerate(("a run", "back to back", "cold L2")):
            o, e, c, g = o2[i], e2[i], c2[i], g2[i]
            lines.append(f"| {m}×{k}×{n} | {how} | {o:.1f} | {e:.1f} | {c:.1f} | {e / o:.2f} | {c / o:.2f} "
                         f"| {g:.1f} | {o - g:.1f} | {floor:.1f} | {r:.1e} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "a") as f:
            f.write("\nbackward step\n\n" + table)


if __name__ == "__main__":
    main()
