#!/usr/bin/env python3
"""The kernel benchmark's programs (bench/kernel_ir.py: quantizes, row
reductions, GELUs at 4096x4096 to 14336x4096) against PyTorch eager, once
each: at these sizes the persistent grid takes several steps a thread, so
the loops that only large tensors reach (the steps after those kept in
shared memory across a grid barrier, the grid cut to what is resident) run
here, where the corpus's small programs never get there.

usage: torch_kernels.py FP8RUN PTXDIR      (PTXDIR holds kernel_CASE.ptx)

Every output of a quantize (q, its transpose, the scales, delayed
scaling's amax) has eager's bits
(amax is exact in any order; bench_kernels.quantize divides for the scale,
as the program does). Softmax, RMSNorm and LayerNorm sum in another
order than torch does, and the GELUs call libdevice's tanh and erf where
torch calls CUDA's: those are held to a relative Frobenius error of 4e-3,
half a bf16 ulp (their output is bf16). Then the layer and backward
benchmarks' programs at their large shapes (PTXDIR/linear_MxKxN.ptx,
backward_MxKxN.ptx: one kernel quantizing two or three tensors of 33 to
117 MB, more than L2 holds, before their GEMMs): the layer's fp8 input and
its scale have torch's bits (tests/gpu/torch_layer.py), its output and the
backward's two gradients are within the GEMM tolerance of torch's (1e-2;
the same cuBLASLt on the same operands gives 0). Exits 1 on a mismatch."""
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from bench_backward import backward  # noqa: E402
from bench_gemm import rel_error  # noqa: E402
from bench_kernels import FUNCS, OUTPUTS, operands  # noqa: E402
from check import frobenius, same_bits  # noqa: E402
from kernel_ir import CASES  # noqa: E402
from torch_layer import layer  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    fp8run, ptxdir = sys.argv[1:]
    fails = 0
    for name, (form, _, _) in CASES.items():
        torch.manual_seed(0)
        ops = operands(name)
        want = FUNCS[form](**ops)
        want = dict(zip(OUTPUTS.get(form, ("y",)), want if isinstance(want, tuple) else (want,)))
        got = run_program(fp8run, os.path.join(ptxdir, f"kernel_{name}.ptx"), ops)
        if got is None:
            fails += 1
            continue
        for out, w in want.items():
            g = got[out].reshape(w.shape)
            if form.startswith("quant"):
                diff = (g.view(torch.uint8) != w.view(torch.uint8)).sum().item() if g.element_size() == 1 else \
                    (g.contiguous().view(torch.int32) != w.contiguous().view(torch.int32)).sum().item()
                ok, what = diff == 0, f"{diff} of {w.numel()} elements differ from eager's bits"
            else:
                e = rel_error(g.float(), w.float())
                ok, what = e <= 4e-3, f"relative error {e:.1e} against eager"
            print(f"{'ok  ' if ok else 'FAILED'} {name} {out}: {what}")
            fails += not ok
        del ops, want, got
        torch.cuda.empty_cache()
    fails += large_steps(fp8run, ptxdir)
    print(f"{fails} failure(s)")
    sys.exit(fails > 0)


def run_program(fp8run, ptx, ops):
    """fp8run on ops (name -> tensor); its outputs, or None (said)"""
    with tempfile.TemporaryDirectory() as tmp:
        inputs, outputs = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
        save_file({k: v.cpu() for k, v in ops.items()}, inputs)
        res = subprocess.run([fp8run, ptx, "--inputs", inputs, "-o", outputs], capture_output=True, text=True)
        if res.returncode:
            print(f"FAILED {os.path.basename(ptx)}: fp8run: {res.stderr.strip()}")
            return None
        return load_file(outputs, device="cuda")


def large_steps(fp8run, ptxdir):
    """the layer and the backward step at the benchmarks' large shapes
    against torch: the number of failures"""
    fails = 0
    for m, k, n in ((4096, 4096, 4096), (8192, 4096, 14336)):
        torch.manual_seed(0)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        got = run_program(fp8run, os.path.join(ptxdir, f"linear_{m}x{k}x{n}.ptx"), {"input": x, "weight": w})
        if got is None:
            fails += 1
            continue
        out, x8, sx = layer(x, w)
        ok = same_bits("t197", got["t197"], x8) and same_bits("scale", got["scale"].reshape(()), sx)
        ok = frobenius("t122 vs torch._scaled_mm", got["t122"], out) and ok
        print(f"{'ok  ' if ok else 'FAILED'} layer {m}x{k}x{n}: the fp8 input and its scale have torch's bits, "
              "the output is within 1e-2 of torch's")
        fails += not ok
    for m, k, n in ((4096, 4096, 4096), (8192, 4096, 4096)):
        torch.manual_seed(0)
        go = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        got = run_program(fp8run, os.path.join(ptxdir, f"backward_{m}x{k}x{n}.ptx"),
                          {"grad_output": go, "input": x, "weight": w})
        if got is None:
            fails += 1
            continue
        gi, gw = backward(go, x, w)
        ok = frobenius("grad_input", got["grad_input"], gi) and frobenius("grad_weight", got["grad_weight"], gw)
        print(f"{'ok  ' if ok else 'FAILED'} backward {m}x{k}x{n}: both gradients within 1e-2 of torch's")
        fails += not ok
    return fails


if __name__ == "__main__":
    main()
