#!/usr/bin/env python3
"""Check fp8cc's matrix products against PyTorch on the same inputs.

usage: torch_gemm.py PROGRAM.ir INPUTS.safetensors OUTPUTS.safetensors

PROGRAM is the program as fp8cc reads it, printed back by `fp8cc X --passes=
--emit=ir` (tests/gpu/prepare.sh writes it next to the PTX, for a trace too):
one function of matmuls and the few ops around them in the corpus (OPS). Each
instruction is done again with torch on the GPU, on the inputs prepare.sh drew:
a matmul x·wᵀ with a 2-d w as F.linear(x, w, bias), any other as torch.matmul
of its operands (transposed as trans_a and trans_b say) + bias, then relu or
F.gelu(approximate="tanh") for epilogue 1 or 2 (3 too: its matmul_aux is
the product before the GELU); a scaled_mm as
torch._scaled_mm with its scales (tensor-wise, row-wise or block-wise). Every output is compared with
what fp8run wrote, one line each: GEMM results (names starting with mm) as
check.py compares them (relative Frobenius error within the dtype's limit),
the others bit for bit. Exit 1 on any mismatch."""
import re
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from check import gemm, is_gemm, same_bits

DEVICE = "cuda"
DTYPES = {"b8": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
          "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
          "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}
TYPE = r"(\w+)\[([-\d,]*)\](?:\{[\d,]*\})?"
INSTR = re.compile(r"%([\w.]+) = (\w+)(.*) : " + TYPE + r"$")
FLAGS = ("fast_accum", "no_fixup", "trans_a", "trans_b")


class Instr:
    """one instruction of the IR text: result, op, operands, number, attrs, flags, type"""

    def __init__(self, line):
        m = INSTR.match(line)
        if not m:
            raise ValueError(f"not an instruction: {line}")
        self.res, self.op, rest, self.dtype, dims = m.groups()
        self.shape = [int(d) for d in dims.split(",") if d]
        self.args = re.findall(r"%([\w.]+)", rest)
        attrs = re.search(r"\[([-\d,]*)\]", rest)
        self.attrs = [int(a) for a in attrs.group(1).split(",") if a] if attrs else []
        self.flags = [w for w in rest.split() if w in FLAGS]
        words = re.sub(r"%[\w.]+,?|\[[-\d,]*\]", " ", rest).split()
        nums = [w for w in words if w not in FLAGS]
        self.number = float(nums[0]) if nums else None


def parse_ir(text):
    """the one function of text: params [(name, dtype, shape)], instrs, outputs [(value, name)]"""
    params, instrs, outs = [], [], []
    for line in text.splitlines():
        line = re.split(r"[;#]", line, maxsplit=1)[0].strip()
        if line.startswith("func"):
            for name, dt, dims in re.findall(r"%([\w.]+): " + TYPE, line):
                params.append((name, dt, [int(d) for d in dims.split(",") if d]))
        elif line.startswith("kernel") or line == "}":
            continue
        elif line.startswith("return"):
            seen = set()
            for out in filter(None, (o.strip() for o in line[len("return"):].split(","))):
                m = re.fullmatch(r"%([\w.]+)(?: as ([\w.]+))?( saved \d+)?", out)
                if m.group(3):
                    continue
                name, k = m.group(2) or m.group(1), 1
                while name in seen:   # a name already taken becomes NAME_1, NAME_2, ... (ir/func.c)
                    name, k = f"{m.group(2) or m.group(1)}_{k}", k + 1
                seen.add(name)
                outs.append((m.group(1), name))
        elif line.startswith("%"):
            instrs.append(Instr(line))
    return params, instrs, outs


def dtype(name):
    return getattr(torch, DTYPES[name])


def matmul(ins, a, b, bias=None):
    """matmul with its flags, bias and epilogue; two 2-d operands under a
    batched result give the same product in each batch"""
    ta, tb = "trans_a" in ins.flags, "trans_b" in ins.flags
    if tb and not ta and b.dim() == 2:
        r = F.linear(a, b, bias)
    else:
        r = torch.matmul(a.mT if ta else a, b.mT if tb else b)
        if bias is not None:
            r = r + bias
    epilogue = ins.attrs[0] if ins.attrs else 0
    ins.pre = r.expand(ins.shape)   # a gelu_aux's matmul_aux
    if epilogue == 1:
        r = torch.relu(r)
    elif epilogue in (2, 3):
        r = F.gelu(r, approximate="tanh")
    return r.expand(ins.shape)


def scaled_mm(ins, a, b, sa, sb, bias=None):
    """torch._scaled_mm as the trace would call it: b column-major (the
    transpose of a row-major weight), block-wise scales in the strides torch
    wants (scale_a (M, K/128) M-major, scale_b (K/128, N/128) K-major)"""
    block = sa.dim() == 2 and not (sa.shape[1] == 1 and sb.shape[0] == 1)
    if block:
        sa, sb = sa.t().contiguous().t(), sb.t().contiguous().t()
    b = b.t().contiguous().t()
    try:
        return torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=dtype(ins.dtype),
                                use_fast_accum="fast_accum" in ins.flags)
    except (RuntimeError, TypeError):
        if not block or not hasattr(F, "scaled_mm"):
            raise
    # a torch whose _scaled_mm does not infer block scales: its explicit form
    st = F.ScalingType
    r = F.scaled_mm(a, b, sa, st.BlockWise1x128, sb, st.BlockWise128x128, output_dtype=dtype(ins.dtype))
    return r + bias if bias is not None else r


def broadcast(ins, a):
    view = [1] * len(ins.shape)
    for i, d in enumerate(ins.attrs):
        view[d] = a.shape[i]
    return a.reshape(view).expand(ins.shape)


OPS = {
    "matmul": matmul,
    "scaled_mm": scaled_mm,
    "transpose": lambda ins, a: a.permute(ins.attrs),
    "reshape": lambda ins, a: a.reshape(ins.shape),
    "broadcast_in_dim": broadcast,
    "convert_element_type": lambda ins, a: a.to(dtype(ins.dtype)),
    "full": lambda ins: torch.full(ins.shape, ins.number, dtype=dtype(ins.dtype), device=DEVICE),
    "neg": lambda ins, a: torch.neg(a),
    "exp": lambda ins, a: torch.exp(a),
    "tanh": lambda ins, a: torch.tanh(a),
    "reciprocal": lambda ins, a: torch.reciprocal(a),
    "abs": lambda ins, a: torch.abs(a),
    "amax": lambda ins, a: torch.amax(a, dim=ins.attrs),
    "maximum": lambda ins, a, b: torch.maximum(a, b),
    "minimum": lambda ins, a, b: torch.minimum(a, b),
    "add": lambda ins, a, b: torch.add(a, b),
    "sub": lambda ins, a, b: torch.sub(a, b),
    "mul": lambda ins, a, b: torch.mul(a, b),
    "div": lambda ins, a, b: torch.div(a, b),
}


def ieee_f32():
    """f32 GEMMs in f32, not TF32 (torch's default and fp8cc's), whichever setting this torch has"""
    if hasattr(torch.backends, "fp32_precision"):   # torch 2.9 on
        torch.backends.cuda.matmul.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False


def run(text, ins):
    """the program's outputs {name: tensor}, each op done by torch on ins"""
    params, instrs, outs = parse_ir(text)
    env = {}
    for name, dt, shape in params:
        t = ins[name]
        if t.dtype != dtype(dt) or list(t.shape) != shape:
            raise ValueError(f"input {name}: {t.dtype} {list(t.shape)} in the file, the program wants {dt}{shape}")
        env[name] = t
    defs = {i.res: i for i in instrs}
    for ins_ in instrs:
        if ins_.op == "matmul_aux":
            env[ins_.res] = defs[ins_.args[0]].pre
            continue
        if ins_.op not in OPS:
            raise ValueError(f"torch_gemm.py does not know op {ins_.op} (%{ins_.res})")
        r = OPS[ins_.op](ins_, *(env[a] for a in ins_.args))
        if r.dtype != dtype(ins_.dtype) or list(r.shape) != ins_.shape:
            raise ValueError(f"%{ins_.res} = {ins_.op}: torch gives {r.dtype} {list(r.shape)}, "
                             f"the program says {ins_.dtype}{ins_.shape}")
        env[ins_.res] = r
    return {name: env[v] for v, name in outs}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    ieee_f32()
    with open(sys.argv[1]) as f:
        text = f.read()
    want = run(text, load_file(sys.argv[2], device=DEVICE))
    got = load_file(sys.argv[3], device=DEVICE)
    ok = True
    for name, w in want.items():
        g = got.get(name)
        if g is None or g.dtype != w.dtype or g.shape != w.shape:
            print(f"  {name}: missing or of another type in {sys.argv[3]}")
            ok = False
        elif is_gemm(name, w):
            ok &= gemm(f"{name} vs torch", g, w)
        elif same_bits(f"{name} vs torch", g, w):
            print(f"  {name} vs torch: the same bits")
        else:
            ok = False
    print("torch check:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
