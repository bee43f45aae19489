#!/usr/bin/env python3
"""The kernel benchmark's programs (bench/kernel_ir.py: quantizes, row
reductions, GELUs at 4096x4096 to 14336x4096) against PyTorch eager, once
each: at these sizes the persistent grid takes several steps a thread, so
the loops that only large tensors reach (the steps after those kept in
shared memory across a grid barrier, the grid cut to what is resident) run
here, where the corpus's small programs never get there.

usage: torch_kernels.py FP8RUN PTXDIR      (PTXDIR holds kernel_CASE.ptx)

Every output of a quantize (q, its transpose, the scales) has eager's bits
(amax is exact in any order; bench_kernels.quantize divides for the scale,
as the program does). Softmax, RMSNorm and LayerNorm sum in another
order than torch does, and the GELUs call libdevice's tanh and erf where
torch calls CUDA's: those are held to a relative Frobenius error of 4e-3,
half a bf16 ulp (their output is bf16). Exits 1 on a mismatch."""
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from bench_gemm import rel_error  # noqa: E402
from bench_kernels import FUNCS, operands  # noqa: E402
from kernel_ir import CASES  # noqa: E402

# each form's outputs, in the order its function returns them
OUTPUTS = {"quant": ("q", "inv"), "quant_row": ("q", "inv"), "quant_tt": ("q", "qt", "inv")}


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
        with tempfile.TemporaryDirectory() as tmp:
            inputs, outputs = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            save_file({k: v.cpu() for k, v in ops.items()}, inputs)
            res = subprocess.run([fp8run, os.path.join(ptxdir, f"kernel_{name}.ptx"), "--inputs", inputs,
                                  "-o", outputs], capture_output=True, text=True)
            if res.returncode:
                print(f"FAILED {name}: fp8run: {res.stderr.strip()}")
                fails += 1
                continue
            got = load_file(outputs, device="cuda")
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
    print(f"{fails} failure(s)")
    sys.exit(fails > 0)


if __name__ == "__main__":
    main()
