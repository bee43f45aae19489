#!/usr/bin/env python3
"""Profile fp8cc's memory-bound kernels with Nsight Compute, on the GPU
machine: where each kernel's time goes (DRAM and L2 bytes, L2 hit rate,
occupancy, what the warps wait on).

usage: profile_kernels.py FP8RUN PTXDIR OUTDIR [REGEX]

For each case of bench/kernel_ir.py whose name matches REGEX (default:
all), draws the inputs bench_kernels.py draws, runs PTXDIR/kernel_CASE.ptx
under `ncu` (step by step, no graph, so each launch is profiled; the
third run's kernels, after two warm ones) and appends the report to
OUTDIR/ncu_reports.txt (one file: the device tool brings back only a few
files), with the DRAM bytes, the L2 hit rate and the duration of each
kernel summed up in OUTDIR/ncu.md."""
import os
import re
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(__file__))
from bench_kernels import operands  # noqa: E402
from kernel_ir import CASES, nbytes  # noqa: E402

SECTIONS = ["SpeedOfLight", "MemoryWorkloadAnalysis", "LaunchStats", "Occupancy", "WarpStateStats",
            "SchedulerStats"]
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "lts__t_sector_hit_rate.pct", "sm__warps_active.avg.pct_of_peak_sustained_active"]


def profile(fp8run, ptx, inputs, outputs, report):
    """ncu over the program's kernels of its third run; the report's text"""
    nk = len(re.findall(r"^// launch ", open(ptx).read(), re.M))
    cmd = ["ncu", "--launch-skip", str(2 * nk), "--launch-count", str(nk)]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(METRICS), fp8run, ptx, "--inputs", inputs, "-o", outputs, "--no-graph",
            "--iters", "1", "--warmup", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    with open(report, "a") as f:
        f.write(f"==== {os.path.basename(ptx)}\n" + res.stdout + res.stderr)
    if res.returncode != 0:
        raise RuntimeError(f"ncu on {ptx} failed (see {report})")
    return res.stdout


def metric(text, name):
    """every value of metric NAME in an ncu details page, as floats in base units"""
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-3, "us": 1, "usecond": 1,
             "msecond": 1e3, "nsecond": 1e-3, "ms": 1e3, "%": 1}
    vals = []
    for m in re.finditer(rf"^\s*{re.escape(name)}\s+(\S+)\s+([\d.,]+)\s*$", text, re.M):
        vals.append(float(m.group(2).replace(",", "")) * scale.get(m.group(1), 1))
    return vals


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    fp8run, ptxdir, outdir = sys.argv[1:4]
    pat = re.compile(sys.argv[4] if len(sys.argv) > 4 else ".")
    os.makedirs(outdir, exist_ok=True)
    rows = ["| case | kernels | µs (ncu) | DRAM read MB | DRAM write MB | floor MB | L2 hit % |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in CASES:
        if not pat.search(name):
            continue
        torch.manual_seed(0)
        ops = operands(name)
        with tempfile.TemporaryDirectory() as tmp:
            inputs, outputs = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            save_file({k: v.cpu() for k, v in ops.items()}, inputs)
            text = profile(fp8run, os.path.join(ptxdir, f"kernel_{name}.ptx"), inputs, outputs,
                           os.path.join(outdir, "ncu_reports.txt"))
        us = metric(text, "gpu__time_duration.sum")
        rd, wr = metric(text, "dram__bytes_read.sum"), metric(text, "dram__bytes_write.sum")
        hit = metric(text, "lts__t_sector_hit_rate.pct")
        rows.append(f"| {name} | {len(us)} | {sum(us):.1f} | {sum(rd) / 1e6:.1f} | {sum(wr) / 1e6:.1f} | "
                    f"{nbytes(name) / 1e6:.1f} | {' '.join(f'{h:.0f}' for h in hit)} |")
        print(rows[-1], flush=True)
    with open(os.path.join(outdir, "ncu.md"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
