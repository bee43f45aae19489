#!/usr/bin/env python3
"""Benchmark fp8cc's memory-bound kernels against PyTorch eager and
torch.compile of the same functions, and against the copy bandwidth, all
measured in one run.

usage: bench_kernels.py FP8RUN OUT.md LABEL=PTXDIR [LABEL=PTXDIR ...]
       (ONLY=REGEX in the environment: the cases whose names match)

For each case of bench/kernel_ir.py (tensor-wise, row-wise,
both-layouts and delayed-scaling e4m3 quantize, softmax, RMSNorm, LayerNorm, the tanh and erf
GELUs) each PTXDIR holds
kernel_CASE.ptx (compiled by tests/gpu/prepare.sh; two directories compare
two compilers in the same run). fp8run runs each program once on inputs
drawn here (each of its outputs is compared with eager's: the largest
relative Frobenius error)
and times its runs (graph replay); torch's function is timed on the same
tensors, eager and under torch.compile. Two times each: a run's own (the
median of runs each between two CUDA events) and a run's share of runs
back to back (100 runs and one synchronize by the host's clock, the best
of 5: fp8run --wall's wall_us), which is what a kernel costs in a step
where the next work is queued behind it — the events around each run add
the GPU's start of each launch to its time (0.9–1.5 µs a graph replay,
2026-12-04). And a third: a run's own on an emptied L2 (fp8run --cold:
each run after a 256 MiB memset, event-timed; torch: each run right after
zeroing 1 GiB, whose GPU time hides torch's host time before the run),
what a kernel costs when the work before it did not leave its inputs in
L2 — at 4096² the runs back to back find much of their input there. The copy bandwidth is a device copy of 1 GiB (read + write).
Each time is given as achieved TB/s on the floor bytes (kernel_ir.nbytes:
every input element read once, every output element written once), as %
of the copy bandwidth, and as the ratio eager/fp8cc and compile/fp8cc
(above 1: fp8cc is faster)."""
import os
import re
import sys
import tempfile

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from bench_gemm import back_to_back, l2_flush, rel_error, run_fp8run, time_torch  # noqa: E402
from kernel_ir import CASES, nbytes  # noqa: E402


def operands(name):
    form, r, c = CASES[name]
    ops = {"x": torch.randn(r, c, device="cuda").to(torch.bfloat16)}
    if form in ("rmsnorm", "layernorm"):
        ops["w"] = (1 + 0.1 * torch.randn(c, device="cuda")).to(torch.bfloat16)
    if form == "layernorm":
        ops["b"] = (0.1 * torch.randn(c, device="cuda")).to(torch.bfloat16)
    if form == "quant_delayed":   # a scale from an earlier step's amax: a little off this x's
        ops["s"] = (448.0 / (1.1 * ops["x"].float().abs().amax())).reshape(())
    return ops


def quantize(x, dim=None):
    """e4m3 of x scaled by 448 / amax(|x|) (per row along dim), and 1/scale:
    the programs' quantize. Its scale is a true division, as in the program
    (and in a Thunder trace's div); torch's `448.0 / t` is
    t.reciprocal() * 448, rounded twice, which would differ in a quarter of
    the scales"""
    am = x.float().abs().amax(**({"dim": dim, "keepdim": True} if dim is not None else {})).clamp(min=1e-12)
    scale = torch.full_like(am, 448.0) / am
    q = (x.float() * scale).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q, scale.reciprocal() if dim is None else scale.reciprocal().squeeze(dim)


def quant(x):
    return quantize(x)


def quant_delayed(x, s):
    """delayed scaling: the cast takes the scale s, and the amax of |x| is
    an output only"""
    return (x.float() * s).clamp(-448, 448).to(torch.float8_e4m3fn), x.float().abs().amax()


def quant_row(x):
    return quantize(x, 1)


def quant_tt(x):
    q, inv = quantize(x)
    return q, q.t().contiguous(), inv


def softmax(x):
    return F.softmax(x, dim=-1)


def rmsnorm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)


def layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def gelu_erf(x):
    return F.gelu(x)


FUNCS = {"quant": quant, "quant_row": quant_row, "quant_tt": quant_tt, "quant_delayed": quant_delayed,
         "softmax": softmax, "rmsnorm": rmsnorm, "layernorm": layernorm, "gelu_tanh": gelu_tanh, "gelu_erf": gelu_erf}
# the program's outputs by name, in the order torch's function returns them
OUTPUTS = {"quant": ("q", "inv"), "quant_row": ("q", "inv"), "quant_tt": ("q", "qt", "inv"),
           "quant_delayed": ("q", "am")}


def copy_bandwidth():
    """TB/s of a 1 GiB device-to-device copy (read + write)"""
    a = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")
    b = torch.empty_like(a)
    us = time_torch(lambda: b.copy_(a), {})
    return 2 * a.numel() * 2 / us / 1e6


def times_table(how, rows, variants, copy, i):
    """the lines of a table of each case's times `how` (i: their index in
    an entry of ours, 3 back to back, 4 cold L2; eager's and torch.compile's
    at 2 * i - 4 and 2 * i - 3 of theirs)"""
    head = f"| case, {how} | floor MB |" + "".join(
        f" {lb} µs | {lb} TB/s | {lb} % copy | eager/{lb} | compile/{lb} |" for lb, _ in variants) + \
        " eager µs | compile µs | compile TB/s |"
    lines = ["", head, "|" + " --- |" * (head.count("|") - 1)]
    for name, ours, *theirs in rows:
        mb, te, tc = nbytes(name) / 1e6, theirs[2 * i - 4], theirs[2 * i - 3]
        cells = "".join(f" {o[i]:.1f} | {mb / o[i]:.2f} | {100 * mb / o[i] / copy:.0f}% | {te / o[i]:.2f} | "
                        f"{tc / o[i]:.2f} |" if o[1] else " failed | | | | |" for o in ours)
        lines.append(f"| {name} | {mb:.0f} |{cells} {te:.1f} | {tc:.1f} | {mb / tc:.2f} |")
    return lines


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    fp8run, md = sys.argv[1], sys.argv[2]
    variants = [a.split("=", 1) for a in sys.argv[3:]]
    copy = copy_bandwidth()
    print(f"copy bandwidth {copy:.2f} TB/s", flush=True)
    compiled = {f: torch.compile(fn) for f, fn in FUNCS.items()}
    flush = l2_flush()
    rows, failed = [], False
    for name in (n for n in CASES if re.search(os.environ.get("ONLY", ""), n)):
        form = CASES[name][0]
        torch.manual_seed(0)
        ops = operands(name)
        eager = FUNCS[form](**ops)
        eager = eager if isinstance(eager, tuple) else (eager,)
        names = OUTPUTS.get(form, ("y",))
        ours = []
        with tempfile.TemporaryDirectory() as tmp:
            inputs, outputs = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            save_file({k: v.cpu() for k, v in ops.items()}, inputs)
            for label, d in variants:
                try:
                    us, wall, cold = run_fp8run(fp8run, os.path.join(d, f"kernel_{name}.ptx"), inputs, outputs,
                                                wall=True, cold=True)
                except RuntimeError as e:
                    print(f"{name} {label}: {e}", flush=True)
                    failed = True
                    ours.append((label, None, None, None, None))
                    continue
                got = load_file(outputs, device="cuda")
                # the largest of the outputs' errors (each flattened: a
                # per-row scale is [r] in torch and [r, 1] in the program)
                err = max(rel_error(got[n].float().reshape(-1), e.float().reshape(-1)) for n, e in zip(names, eager))
                ours.append((label, us, err, wall, cold))
        t_eager = time_torch(FUNCS[form], ops)
        t_comp = time_torch(compiled[form], ops)
        b_eager = back_to_back(lambda: FUNCS[form](**ops))
        b_comp = back_to_back(lambda: compiled[form](**ops))
        c_eager = time_torch(FUNCS[form], ops, flush)
        c_comp = time_torch(compiled[form], ops, flush)
        rows.append((name, ours, t_eager, t_comp, b_eager, b_comp, c_eager, c_comp))
        tb = nbytes(name) / 1e6
        ours_text = ", ".join(f"{lb} {us:.1f} us {tb / us:.2f} TB/s err {e:.1e} (back to back {w:.1f} us "
                              f"{tb / w:.2f} TB/s; cold L2 {c:.1f} us)" for lb, us, e, w, c in ours if us)
        print(f"{name}: {ours_text}; eager {t_eager:.1f} us {tb / t_eager:.2f} TB/s (back to back {b_eager:.1f}; "
              f"cold {c_eager:.1f}); compile {t_comp:.1f} us {tb / t_comp:.2f} TB/s (back to back {b_comp:.1f} us "
              f"{tb / b_comp:.2f} TB/s; cold {c_comp:.1f})", flush=True)
        del ops, eager
        torch.cuda.empty_cache()
    head = "| case | floor MB |" + "".join(f" {lb} µs | {lb} TB/s | {lb} % copy | eager/{lb} | compile/{lb} | {lb} error |"
                                          for lb, _ in variants) + " eager µs | eager TB/s | compile µs | compile TB/s |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name, ours, te, tc, *_ in rows:
        mb = nbytes(name) / 1e6
        cells = "".join(
            f" {us:.1f} | {mb / us:.2f} | {100 * mb / us / copy:.0f}% | {te / us:.2f} | {tc / us:.2f} | {e:.1e} |"
            if us else " failed | | | | | |" for _, us, e, _, _ in ours)
        lines.append(f"| {name} | {mb:.0f} |{cells} {te:.1f} | {mb / te:.2f} | {tc:.1f} | {mb / tc:.2f} |")
    # the same runs back to back (times index 3), and each run on an emptied L2 (4)
    lines += times_table("back to back", rows, variants, copy, 3)
    lines += times_table("cold L2", rows, variants, copy, 4)
    table = "\n".join(lines) + "\n"
    print(table)
    with open(md, "a") as f:
        f.write(f"\nmemory-bound kernels: device {torch.cuda.get_device_name()}, torch {torch.__version__}, "
                f"copy bandwidth {copy:.2f} TB/s (1 GiB, read + write)\n\n" + table)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
