#!/usr/bin/env python3
"""Benchmark the fp8 linear layer: fp8cc (fp8run on the compiled PTX) against
PyTorch eager, torch.compile and torch.compile(mode="reduce-overhead") (the
layer replayed as a CUDA graph, like fp8cc's graph replay) of the same layer,
measured in one run.

usage: bench_layer.py FP8RUN PTXDIR [OUT.md]

PTXDIR holds linear_MxKxN.ptx for each shape below (compiled on the machine
with LLVM by tests/gpu/prepare.sh). Inputs are drawn here, on the GPU.
Times are medians of CUDA-event-timed runs after warm-up, and again a run's
share of runs back to back (bench_gemm.back_to_back; fp8run --wall), where
the host's time before each launch is hidden, and again each run on an
emptied L2 (fp8run --cold; torch's right after zeroing 1 GiB, whose GPU
time also hides torch's host time: its GPU time alone); the table gives each
time, the ratios eager/fp8cc, compile/fp8cc and reduce-overhead/fp8cc
(above 1: fp8cc is faster),
torch._scaled_mm alone on the same fp8 operands (the GEMM, which both use),
what fp8cc spends beyond it, and the memory floor of the quantization (read
each bf16 element once, write each fp8 element once, at 4.2 TB/s)."""
import os
import sys
import tempfile

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from torch_layer import layer  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import bench_gemm  # noqa: E402
from bench_gemm import back_to_back, l2_flush, run_fp8run  # noqa: E402

SHAPES = [(16, 32, 64), (4096, 4096, 4096), (8192, 4096, 14336)]


def fwd(x, w):
    return layer(x, w)


def cuda_graph_step(compiled):
    """a reduce-overhead compiled function, called as a new step each time
    (the outputs of the previous replay are not kept)"""
    def step(x, w):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(x, w)
    return step


def time_torch(fn, x, w, iters, flush=None):
    """the median of iters runs of fn(x, w) after 5, CUDA events around
    each; with flush, each run right after zeroing it (bench_gemm.time_torch)"""
    return bench_gemm.time_torch(lambda: fn(x, w), {}, flush, iters, warmup=5)


def time_gemm(x, w, iters, flush):
    """torch._scaled_mm alone on the layer's fp8 operands, the floor for the
    layer: (a run, back to back, cold L2)"""
    from torch_layer import quantize
    x8, sx = quantize(x)
    w8, sw = quantize(w)
    ia, ib = sx.reciprocal(), sw.reciprocal()
    wt = w8.t()

    def mm(a, b):
        return torch._scaled_mm(a, b, scale_a=ia, scale_b=ib, out_dtype=torch.bfloat16, use_fast_accum=True)
    return time_torch(mm, x8, wt, iters), back_to_back(lambda: mm(x8, wt), iters), time_torch(mm, x8, wt, iters, flush)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    fp8run, ptxdir = sys.argv[1], sys.argv[2]
    compiled = torch.compile(fwd)
    graphed = cuda_graph_step(torch.compile(fwd, mode="reduce-overhead"))
    rows, back, cold = [], [], []
    flush = l2_flush()
    for m, k, n in SHAPES:
        torch.manual_seed(0)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        iters = 200 if m * n * k < 1 << 30 else 50
        with tempfile.TemporaryDirectory() as tmp:
            inputs = os.path.join(tmp, "in.safetensors")
            save_file({"input": x.cpu(), "weight": w.cpu()}, inputs)
            ptx = os.path.join(ptxdir, f"linear_{m}x{k}x{n}.ptx")
            ours, ours_b, ours_c = run_fp8run(fp8run, ptx, inputs, iters=iters, warmup=None, wall=True, cold=True)
            ours_nograph = run_fp8run(fp8run, ptx, inputs, iters=iters, warmup=None, graph=False)
        eager = time_torch(fwd, x, w, iters)
        comp = time_torch(compiled, x, w, iters)
        graph = time_torch(graphed, x, w, iters)
        gemm, gemm_b, gemm_c = time_gemm(x, w, iters, flush)
        eager_c, comp_c = time_torch(fwd, x, w, iters, flush), time_torch(compiled, x, w, iters, flush)
        eager_b = back_to_back(lambda: fwd(x, w), iters)
        comp_b, graph_b = back_to_back(lambda: compiled(x, w), iters), back_to_back(lambda: graphed(x, w), iters)
        rows.append((m, k, n, ours, ours_nograph, eager, comp, graph, gemm))
        back.append((m, k, n, ours_b, eager_b, comp_b, graph_b, gemm_b))
        cold.append((m, k, n, ours_c, eager_c, comp_c, gemm_c))
        print(f"{m}x{k}x{n}: fp8cc {ours:.1f} us (no graph {ours_nograph:.1f}), eager {eager:.1f} us, "
              f"compile {comp:.1f} us, reduce-overhead {graph:.1f} us, the GEMM alone {gemm:.1f} us; back to back: "
              f"fp8cc {ours_b:.1f} us, eager {eager_b:.1f} us, compile {comp_b:.1f} us, reduce-overhead "
              f"{graph_b:.1f} us, the GEMM {gemm_b:.1f} us; cold L2: fp8cc {ours_c:.1f} us, eager {eager_c:.1f} us, "
              f"compile {comp_c:.1f} us, the GEMM {gemm_c:.1f} us", flush=True)
    lines = ["| M×K×N | fp8cc (graph) µs | fp8cc (no graph) µs | eager µs | torch.compile µs "
             "| torch.compile reduce-overhead µs | eager / fp8cc | compile / fp8cc | reduce-overhead / fp8cc "
             "| GEMM alone µs | fp8cc − GEMM µs | quantize floor µs |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, k, n, o, og, e, c, r, g in rows:
        floor = 3 * (m * k + n * k) / 4.2e12 * 1e6   # read bf16, write fp8, at 4.2 TB/s
        lines.append(f"| {m}×{k}×{n} | {o:.1f} | {og:.1f} | {e:.1f} | {c:.1f} | {r:.1f} | {e / o:.2f} "
                     f"| {c / o:.2f} | {r / o:.2f} | {g:.1f} | {o - g:.1f} | {floor:.1f} |")
    lines += ["", "| M×K×N, back to back | fp8cc µs | eager µs | torch.compile µs | reduce-overhead µs "
              "| eager / fp8cc | compile / fp8cc | reduce-overhead / fp8cc | GEMM alone µs | fp8cc / GEMM "
              "| fp8cc − GEMM µs |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, k, n, o, e, c, r, g in back:
        lines.append(f"| {m}×{k}×{n} | {o:.1f} | {e:.1f} | {c:.1f} | {r:.1f} | {e / o:.2f} | {c / o:.2f} "
                     f"| {r / o:.2f} | {g:.1f} | {o / g:.3f} | {o - g:.1f} |")
    lines += ["", "| M×K×N, cold L2 | fp8cc µs | eager µs | torch.compile µs | eager / fp8cc | compile / fp8cc "
              "| GEMM alone µs | fp8cc / GEMM | fp8cc − GEMM µs |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, k, n, o, e, c, g in cold:
        lines.append(f"| {m}×{k}×{n} | {o:.1f} | {e:.1f} | {c:.1f} | {e / o:.2f} | {c / o:.2f} "
                     f"| {g:.1f} | {o / g:.3f} | {o - g:.1f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            f.write(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}\n\n" + table)


if __name__ == "__main__":
    main()
