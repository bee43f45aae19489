#!/usr/bin/env python3
"""Benchmark fp8cc's GEMMs of every kind against PyTorch's op on the same
operands, measured in one run.

usage: bench_gemm.py FP8RUN PTXDIR [OUT.md]    (ONLY=REGEX: the cases whose names match)

For each case of bench/gemm_ir.py (2-d bf16, f16 and f32 products, the
linear x·wᵀ with and without a bias and gelu, attention's batched q·kᵀ and
p·v, fp8 torch._scaled_mm, a Llama MLP; the GELU_AUX linear, against torch
eager and torch.compile of the same two results) PTXDIR holds gemm_CASE.ptx
(compiled on the machine with LLVM by tests/gpu/prepare.sh). Operands are
drawn here, on the GPU; fp8run runs the program on them once (its output
is compared with torch's: relative Frobenius error) and times --iters runs
(graph replay), then torch's op is timed on the same tensors: torch.matmul,
F.linear (+ F.gelu), torch._scaled_mm, the MLP in eager and under
torch.compile. Times are medians of CUDA-event-timed runs after warm-up, and
again a run's share of runs back to back (back_to_back; fp8run --wall),
where the host's time before each launch is hidden; the table gives each
time, torch/fp8cc (above 1: fp8cc is faster), TFLOP/s and fp8cc's
throughput as a percentage of torch's. f32 runs without TF32 on
both sides. With OUT.md the table is appended to it."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from gemm_ir import CASES  # noqa: E402
from torch_gemm import ieee_f32  # noqa: E402

ITERS, WARMUP = 100, 10
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f8e4m3fn": torch.float8_e4m3fn}


def operands(name):
    """the program's inputs for case name, by parameter name, on the GPU"""
    form, dt, s, opt = CASES[name]
    t = DTYPES[dt]

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda") * scale).to(t)

    if form == "mm":
        return {"a": randn(s["m"], s["k"]), "b": randn(s["k"], s["n"])}
    if form == "linear":
        ops = {"x": randn(s["m"], s["k"]), "w": randn(s["n"], s["k"], scale=s["k"] ** -0.5)}
        if opt.get("bias"):
            ops["bias"] = randn(s["n"])
        return ops
    if form == "bmm":
        return {"a": randn(s["b"], s["m"], s["k"]), "b": randn(s["b"], s["k"], s["n"])}
    if form == "bmm_nt":
        return {"a": randn(s["b"], s["m"], s["k"]), "b": randn(s["b"], s["n"], s["k"])}
    if form == "scaled_mm":
        m, k, n = s["m"], s["k"], s["n"]
        ops = {"a": randn(m, k), "w": randn(n, k)}

        def scales(*shape):
            return 0.01 + 0.1 * torch.rand(*shape, device="cuda")

        if opt.get("scales") == "row":
            return ops | {"scale_a": scales(m, 1), "scale_b": scales(1, n)}
        if opt.get("scales") == "block":
            return ops | {"sa_t": scales(k // 128, m), "sb_t": scales(n // 128, k // 128)}
        one = torch.ones((), device="cuda")
        return ops | {"scale_a": one * 0.5, "scale_b": one * 0.25}
    if form.startswith("mlp"):
        h, i = s["h"], s["i"]
        return {"x": randn(s["t"], h), "w_gate": randn(i, h, scale=h ** -0.5), "w_up": randn(i, h, scale=h ** -0.5),
                "w_down": randn(h, i, scale=i ** -0.5)}
    raise ValueError(form)


def mlp(x, w_gate, w_up, w_down):
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def to_fp8(t):
    """torchao's tensor-wise dynamic scaling: e4m3 and 1/scale"""
    scale = 448.0 / t.abs().amax().float().clamp(min=1e-12)
    return (t.float() * scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale.reciprocal()


def fp8_linear(x, w):
    xq, xs = to_fp8(x)
    wq, ws = to_fp8(w)
    return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)


def mlp_fp8(x, w_gate, w_up, w_down):
    return fp8_linear(F.silu(fp8_linear(x, w_gate)) * fp8_linear(x, w_up), w_down)


def block_scaled_mm(a, b, sa, sb):
    """torch's fp8 GEMM with 1x128 scales on a and 128x128 on b (sa (M, K/128)
    and sb (K/128, N/128), both with stride 1 along their first dim), in the
    form this torch has (tests/gpu/torch_gemm.py's rule)"""
    try:
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    except (RuntimeError, TypeError):
        if not hasattr(F, "scaled_mm"):
            raise
    st = F.ScalingType
    return F.scaled_mm(a, b, sa, st.BlockWise1x128, sb, st.BlockWise128x128, output_dtype=torch.bfloat16)


def gelu_kept(x, w, bias):
    """GELU_AUX's result in torch: the GELU, the pre-activation kept (returned)"""
    pre = F.linear(x, w, bias)
    return F.gelu(pre, approximate="tanh"), pre


def torch_ops(name):
    """[(label, fn(**operands))]: torch's way to the same result"""
    form, dt, s, opt = CASES[name]
    if form == "mm":
        return [("torch.matmul", lambda a, b: torch.matmul(a, b))]
    if form == "linear" and opt.get("epilogue") == 2:
        return [("F.gelu(F.linear)", lambda x, w, bias: F.gelu(F.linear(x, w, bias), approximate="tanh"))]
    if form == "linear" and opt.get("epilogue") == 3:   # the pre-activation kept (a training forward)
        return [("F.gelu(F.linear), F.linear kept", gelu_kept), ("torch.compile", torch.compile(gelu_kept))]
    if form == "linear":
        return [("F.linear", lambda x, w: F.linear(x, w))]
    if form == "bmm":
        return [("torch.matmul", lambda a, b: torch.matmul(a, b))]
    if form == "bmm_nt":
        return [("torch.matmul(q, kᵀ)", lambda a, b: torch.matmul(a, b.transpose(-1, -2)))]
    if form == "scaled_mm" and opt.get("scales") == "block":
        return [("torch._scaled_mm", lambda a, w, sa_t, sb_t: block_scaled_mm(a, w.t(), sa_t.t(), sb_t.t()))]
    if form == "scaled_mm":
        fast = bool(opt.get("fast_accum"))
        return [("torch._scaled_mm", lambda a, w, scale_a, scale_b: torch._scaled_mm(
            a, w.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast))]
    if form == "mlp":
        return [("eager", mlp), ("torch.compile", torch.compile(mlp))]
    if form == "mlp_fp8":
        return [("eager", mlp_fp8), ("torch.compile", torch.compile(mlp_fp8))]
    raise ValueError(form)


def flops(name):
    form, dt, s, opt = CASES[name]
    if form.startswith("mlp"):
        return 3 * 2 * s["t"] * s["h"] * s["i"]
    return 2 * s.get("b", 1) * s["m"] * s["k"] * s["n"]


def sizes(name):
    form, dt, s, opt = CASES[name]
    if form.startswith("mlp"):
        return f"{s['t']} tokens, {s['h']}→{s['i']}→{s['h']}"
    mkn = f"{s['m']}×{s['k']}×{s['n']}"
    return f"{s['b']} × {mkn}" if "b" in s else mkn


def l2_flush():
    """a buffer for time_torch's cold runs: 1 GiB, more than any GPU's L2"""
    return torch.empty(1 << 30, dtype=torch.uint8, device="cuda")


def time_torch(fn, ops, flush=None, iters=ITERS, warmup=WARMUP):
    """the median time of fn(**ops) in microseconds over iters runs after
    warmup, CUDA events around each run; with flush (l2_flush), each run
    right after zeroing it: L2 emptied, and the GPU's time zeroing it (about
    250 µs for 1 GiB) hides the host's time before the run, where fp8run
    --cold's runs count the start of their launch (torch's figure is the
    kinder)"""
    for _ in range(warmup):
        fn(**ops)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if flush is not None:
            flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(**ops)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000)
    return statistics.median(times)


def back_to_back(fn, n=ITERS):
    """fn()'s share of n runs back to back and one synchronize, by the host's
    clock, the best of 5 (as fp8run --wall's wall_us): what it costs in a step
    where the next work is queued behind it, without the start of each
    launch that events around one run count"""
    for _ in range(WARMUP):
        fn()
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def run_fp8run(fp8run, ptx, inputs, outputs=None, iters=ITERS, warmup=WARMUP, graph=True, wall=False, cold=False):
    """run the program (writing outputs, where given), then time iters runs
    (graph replay, or step by step without graph; warmup None: fp8run's
    own): the median in microseconds; with wall, also a run's share of runs
    back to back (fp8run --wall's wall_us): (median, wall); with cold, also
    the median of runs on an emptied L2 (fp8run --cold's cold_us), last"""
    cmd = [fp8run, ptx, "--inputs", inputs, "--iters", str(iters), "--json"]
    cmd += ["-o", outputs] if outputs else []
    cmd += ["--warmup", str(warmup)] if warmup is not None else []
    cmd += [] if graph else ["--no-graph"]
    cmd += ["--wall"] if wall else []
    cmd += ["--cold"] if cold else []
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"fp8run {ptx} failed: {res.stderr.strip()}")
    timing = json.loads(res.stdout)["timing"]
    if len(timing["runs_us"]) != iters:
        raise RuntimeError(f"fp8run timed {len(timing['runs_us'])} runs, not {iters}")
    got = (timing["median_us"],) + ((timing["wall_us"],) if wall else ()) + ((timing["cold_us"],) if cold else ())
    return got if len(got) > 1 else got[0]


def rel_error(got, want):
    g, w = got.double(), want.double()
    return (torch.linalg.norm(g - w) / torch.linalg.norm(w).clamp(min=1e-300)).item()


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    fp8run, ptxdir = sys.argv[1], sys.argv[2]
    ieee_f32()
    rows, failed = [], False
    for name in (n for n in CASES if re.search(os.environ.get("ONLY", ""), n)):
        torch.manual_seed(0)
        ops = operands(name)
        with tempfile.TemporaryDirectory() as tmp:
            inputs, outputs = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            save_file({k: v.cpu() for k, v in ops.items()}, inputs)
            try:
                ours, ours_b = run_fp8run(fp8run, os.path.join(ptxdir, f"gemm_{name}.ptx"), inputs, outputs,
                                          wall=True)
            except RuntimeError as e:
                print(f"{name}: {e}", flush=True)
                failed = True
                continue
            got = load_file(outputs, device="cuda")["mm"]
        for label, fn in torch_ops(name):
            want = fn(**ops)
            err = rel_error(got, want[0] if isinstance(want, tuple) else want)
            theirs = time_torch(fn, ops)
            theirs_b = back_to_back(lambda: fn(**ops))
            rows.append((name, label, ours, theirs, err, ours_b, theirs_b))
            print(f"{name} ({sizes(name)}): fp8cc {ours:.1f} us, {label} {theirs:.1f} us, "
                  f"torch/fp8cc {theirs / ours:.2f}, relative error {err:.1e}; back to back fp8cc {ours_b:.1f} us, "
                  f"{label} {theirs_b:.1f} us, torch/fp8cc {theirs_b / ours_b:.2f}", flush=True)
        del ops, got
        torch.cuda.empty_cache()
    lines = ["| case | sizes | torch op | fp8cc µs | torch µs | torch / fp8cc | fp8cc TFLOP/s | torch TFLOP/s "
             "| fp8cc % of torch | relative error | back to back: fp8cc µs | torch µs | fp8cc % of torch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, label, o, t, err, ob, tb in rows:
        fo, ft = flops(name) / o / 1e6, flops(name) / t / 1e6
        lines.append(f"| {name} | {sizes(name)} | {label} | {o:.1f} | {t:.1f} | {t / o:.2f} | {fo:.0f} | {ft:.0f} "
                     f"| {100 * fo / ft:.0f}% | {err:.1e} | {ob:.1f} | {tb:.1f} | {100 * tb / ob:.0f}% |")
    table = "\n".join(lines) + "\n"
    print(table)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "a") as f:
            f.write(f"\nGEMMs: device {torch.cuda.get_device_name()}, torch {torch.__version__}, "
                    f"median of {ITERS} runs after {WARMUP}\n\n" + table)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
