#!/usr/bin/env python3
"""Can memory-bound work hide under an FP8 GEMM on this GPU? The question
behind overlapping a quantize with the GEMMs of a layer or a backward step
(docs/design.md, "Performance model"), answered with torch alone.

usage: bench_overlap.py [OUT.md]

For each shape of the layer and backward benchmarks: torch._scaled_mm
(e4m3, tensor-wise scales, bf16 out) alone; the memory traffic of one
operand's quantize alone (its amax, then two fp8 casts of it: two reads of
the bf16 tensor and two fp8 writes, what the backward's x costs); both on one
stream; both on two streams joined by events, so the GPU may run them at
once; and the same with cuBLASLt told to leave SMs free for the other
stream (torch's experimental SM carveout, where this torch has it). Each
time is the median over 50 replays of a CUDA graph of 10 runs, between
events: no host time in any figure. Two streams save something only if
the GPU runs the two together; the carveout shows what the GEMM loses
when SMs are set aside for that."""
import statistics
import sys

import torch

SHAPES = [(4096, 4096, 4096, (4096, 4096)), (8192, 4096, 4096, (8192, 4096)),
          (8192, 4096, 14336, (14336, 4096))]
CARVEOUTS = (16, 32, 66)


def graphed(fn, reps=50, inner=10):
    """fn's time in µs: the median over reps replays of a graph of inner runs"""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / inner)
    return statistics.median(times)


def case(m, k, n, shape, carve):
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
    amax = torch.empty((), device="cuda", dtype=torch.bfloat16)
    q1, q2 = (torch.empty(*shape, device="cuda", dtype=torch.float8_e4m3fn) for _ in range(2))
    side = torch.cuda.Stream()

    def gemm():
        torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    def memory():
        torch.amax(x, out=amax)
        q1.copy_(x)
        q2.copy_(x)

    def serial():
        gemm()
        memory()

    def two_streams():
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        gemm()
        with torch.cuda.stream(side):
            memory()
        main.wait_stream(side)

    row = {"gemm": graphed(gemm), "memory": graphed(memory), "serial": graphed(serial),
           "two streams": graphed(two_streams)}
    for c in CARVEOUTS if carve else ():
        carve(c)
        row[f"gemm, {c} SMs left"], row[f"two streams, {c} SMs left"] = graphed(gemm), graphed(two_streams)
        carve(0)
    return row


def main():
    carve = getattr(torch._C, "_set_sm_carveout_experimental", None)
    rows = []
    for m, k, n, shape in SHAPES:
        r = case(m, k, n, shape, carve)
        rows.append((f"{m}×{k}×{n}, {shape[0]}×{shape[1]}", r))
        print(f"{m}x{k}x{n}: " + ", ".join(f"{w} {t:.1f} us" for w, t in r.items()), flush=True)
    cols = list(rows[0][1])
    lines = ["| GEMM, quantized tensor | " + " | ".join(f"{c} µs" for c in cols) + " | saved by two streams µs |",
             "| --- " * (len(cols) + 2) + "|"]
    for name, r in rows:
        best = min(v for c, v in r.items() if c.startswith("two streams"))
        lines.append(f"| {name} | " + " | ".join(f"{r[c]:.1f}" for c in cols) + f" | {r['serial'] - best:.1f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a") as f:
            f.write(f"GEMM and memory-bound work at once: device {torch.cuda.get_device_name()}, torch "
                    f"{torch.__version__}, SM carveout {'available' if carve else 'not in this torch'}\n\n"
                    + table)


if __name__ == "__main__":
    main()
