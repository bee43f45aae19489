#!/usr/bin/env python3
"""gen_golden.py - golden results from PyTorch eager on CUDA, one safetensors
file per op of ir/ops.def, for the interpreter oracle (README.md).

    python3 tests/oracle/gen_golden.py [-o tests/oracle/golden] [--only add,exp]
                                       [--device cuda]

Needs a CUDA GPU, torch (2.11 was the reference) and safetensors. For every
case of cases.py it builds the special-value inputs (NaN, -NaN, +-inf, +-0,
subnormals of each dtype, 448, 464, 465, 480, 57344, 61440, 65504, 65520,
huge, tiny, every fp8 rounding boundary, seeded normals; every one of the 256
codes for fp8 inputs), runs the torch function that defines the op on the
device, and writes golden/<case>.safetensors with the inputs (<variant>.a,
.b, .c) and the outputs under the names the IR function of make_ir.py uses.

__metadata__ carries the torch and CUDA versions, the device, the list of
outputs, and per output its tolerance (tol.<name>) and operands
(args.<name>). An output torch cannot compute (an unsupported dtype on this
build) is left out and listed under "skipped"; make_ir.py --golden then
leaves it out of the IR too. The exit status is 1 if anything was skipped
on a CUDA device (unless --allow-skips), so nothing goes missing silently.
"""

import argparse
import os
import sys

import torch
from safetensors.torch import load_file, save_file

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402


def torch_dtype(dt):
    return getattr(torch, cases.TORCH[dt])


def to_tensor(inp, device):
    """an Input of cases.py as a tensor of its dtype and shape"""
    dt = torch_dtype(inp.dtype)
    if inp.kind == "codes":
        t = torch.tensor(inp.values, dtype=torch.uint8).view(dt)
    elif inp.kind == "bool":
        t = torch.tensor(inp.values, dtype=torch.bool)
    elif inp.kind == "int":
        t = torch.tensor(inp.values, dtype=torch.int64).to(dt)
    else:
        # float64 first (Python floats, NaN signs kept), then rounded once
        t = torch.tensor(inp.values, dtype=torch.float64).to(dt)
    return t.reshape(inp.shape).to(device)


def _div(a, b):
    # prims.div: true division for floats, truncation for integers
    if a.dtype.is_floating_point:
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


def _reduce(fn):
    def run(x, dims):
        dims = tuple(dims)
        if fn is torch.prod:
            if len(dims) == x.dim():
                return torch.prod(x, dtype=x.dtype)
            assert len(dims) == 1
            return torch.prod(x, dim=dims[0], dtype=x.dtype)
        if fn is torch.sum:
            return torch.sum(x, dim=dims, dtype=x.dtype)
        return fn(x, dim=dims)
    return run


def _scaled_mm(flags, out_dtype):
    def run(a, b, sa, sb, bias=None):
        # cuBLASLt wants b column-major: the (K,N) view of an (N,K) row-major tensor
        b_cm = b.t().contiguous().t()
        r = torch._scaled_mm(a, b_cm, scale_a=sa, scale_b=sb, bias=bias,
                             out_dtype=out_dtype, use_fast_accum="fast_accum" in flags)
        return r[0] if isinstance(r, tuple) else r
    return run


def _pad(x, v, attrs):
    """prims.pad: interior padding, then low and high (negative: cut); fp8
    through its byte codes"""
    fp8 = x.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    dt = x.dtype
    if fp8:
        x, v = x.view(torch.uint8), v.view(torch.uint8)
    r = x.dim()
    lo, hi, inner = attrs[:r], attrs[r:2 * r], attrs[2 * r:]
    for d in range(r):
        n = x.shape[d]
        if inner[d] > 0 and n > 1:
            shape = list(x.shape)
            shape[d] = n + (n - 1) * inner[d]
            z = v.expand(shape).clone()
            idx = [slice(None)] * r
            idx[d] = slice(0, None, inner[d] + 1)
            z[tuple(idx)] = x
            x = z
    cfg = []
    for d in reversed(range(r)):
        cfg += [lo[d], hi[d]]
    if x.dtype.is_floating_point:
        x = torch.nn.functional.pad(x, cfg, value=v.item())
    else:   # constant padding of integers: through a larger zeroed tensor
        x = torch.nn.functional.pad(x.double(), cfg, value=float(v.item())).to(x.dtype)
    return x.view(dt) if fp8 else x


def _matmul(attrs, flags):
    epi = attrs[0] if attrs else 0

    def run(a, b, bias=None):
        if "trans_a" in flags:
            a = a.transpose(-2, -1)
        if "trans_b" in flags:
            b = b.transpose(-2, -1)
        if bias is not None and a.dim() == 2:
            r = torch.addmm(bias, a, b)
        else:
            r = torch.matmul(a, b) if bias is None else torch.matmul(a, b) + bias
        if epi == 1:
            r = torch.relu(r)
        elif epi == 2:
            r = torch.nn.functional.gelu(r, approximate="tanh")
        return r
    return run


# IR op -> the torch function that defines it
TORCH_OPS = {
    "abs": torch.abs, "neg": torch.neg, "reciprocal": torch.reciprocal,
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log1p": torch.log1p,
    "log2": torch.log2, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "tanh": torch.tanh,
    "erf": torch.erf, "sin": torch.sin, "cos": torch.cos, "sign": torch.sign,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
    "isfinite": torch.isfinite, "bitwise_not": torch.bitwise_not,
    "logical_not": torch.logical_not,
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": _div, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "fmod": torch.fmod,
    "remainder": torch.remainder, "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge,
    "where": torch.where,
    "amax": _reduce(torch.amax), "amin": _reduce(torch.amin),
    "sum": _reduce(torch.sum), "prod": _reduce(torch.prod),
    "acos": torch.acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh,
    "atan": torch.atan, "atanh": torch.atanh, "cosh": torch.cosh, "sinh": torch.sinh,
    "tan": torch.tan, "erfc": torch.erfc, "erfinv": torch.erfinv, "expm1": torch.expm1,
    "log10": torch.log10, "lgamma": torch.lgamma, "signbit": torch.signbit,
    "atan2": torch.atan2, "nextafter": torch.nextafter,
    "bitwise_left_shift": torch.bitwise_left_shift, "bitwise_right_shift": torch.bitwise_right_shift,
    "flip": None, "take": None, "gather": None, "pad": None, "bitcast": None, "iota": None,
}


def compute(out, args):
    """the torch result for one Output of cases.py"""
    if out.torch == "to":
        return args[0].to(torch_dtype(out.dtype))
    if out.op == "scaled_mm":
        return _scaled_mm(out.flags, torch_dtype(out.dtype))(*args)
    if out.op in ("amax", "amin", "sum", "prod"):
        return TORCH_OPS[out.op](args[0], out.attrs)
    if out.op == "take":    # prims.take: index_select
        return torch.index_select(args[0], out.attrs[0], args[1])
    if out.op == "gather":
        return torch.gather(args[0], out.attrs[0], args[1].long())
    if out.op == "flip":
        return torch.flip(args[0], out.attrs)
    if out.op == "pad":
        return _pad(args[0], args[1], out.attrs)
    if out.op == "bitcast":
        return args[0].view(torch_dtype(out.dtype))
    if out.op == "iota":
        start, step = out.attrs
        n = out.shape[0]
        return torch.arange(start, start + n * step, step, dtype=torch_dtype(out.dtype), device="cuda")
    if out.op == "matmul":
        torch.backends.cuda.matmul.allow_tf32 = False
        return _matmul(out.attrs, out.flags)(*args)
    return TORCH_OPS[out.op](*args)


def check_result(out, r):
    """the result has the dtype and shape the IR function declares"""
    want = torch_dtype(out.dtype)
    if r.dtype != want:
        raise TypeError("torch gave %s, the IR says %s" % (r.dtype, want))
    if list(r.shape) != list(out.shape):
        raise ValueError("torch gave shape %s, the IR says %s" % (list(r.shape), out.shape))


def run_case(case, device, outdir):
    tensors = {i.name: to_tensor(i, device) for i in case.inputs}
    done, skipped, md = [], [], {}
    for out in case.outputs:
        try:
            r = compute(out, [tensors[a] for a in out.args])
            check_result(out, r)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception as e:  # an unsupported dtype on this build: say so
            skipped.append("%s: %s" % (out.name, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        tensors[out.name] = r
        done.append(out.name)
        md["tol." + out.name] = out.tol
        md["args." + out.name] = ",".join(out.args)
    md.update({
        "case": case.name,
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else device,
        "outputs": ",".join(done),
        "skipped": "; ".join(skipped),
    })
    cpu = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    path = os.path.join(outdir, case.name + ".safetensors")
    save_file(cpu, path, metadata=md)
    back = load_file(path)
    for k, v in cpu.items():   # the file holds exactly these bits
        if not torch.equal(back[k].reshape(-1).view(torch.uint8), v.reshape(-1).view(torch.uint8)):
            raise RuntimeError("%s: %s did not read back bit for bit" % (path, k))
    return path, done, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--device", default="cuda", help="cuda (the reference) or cpu (to try the script)")
    ap.add_argument("--allow-skips", action="store_true", help="exit 0 even if outputs were skipped")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("gen_golden.py: no CUDA device; the goldens must come from the GPU")
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    total_skipped = 0
    print("torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda,
          torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device))
    for case in cases.all_cases():
        if only and case.name not in only:
            continue
        path, done, skipped = run_case(case, args.device, args.out)
        total_skipped += len(skipped)
        print("%-24s %3d outputs -> %s" % (case.name, len(done), path))
        for s in skipped:
            print("    skipped %s" % s)
    if total_skipped:
        print("%d outputs skipped (listed above and in each file's metadata)" % total_skipped)
    return 1 if total_skipped and args.device.startswith("cuda") and not args.allow_skips else 0


if __name__ == "__main__":
    sys.exit(main())
