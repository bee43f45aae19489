#!/usr/bin/env python3
"""Write a Thunder trace of about N top-level prims statements: a deep stack
of fp8 linear layers, each the torchao recipe of the seed trace (amax,
scale, clamp and cast of the activation and of the layer's own weight, a
torch._scaled_mm, then a tanh-approximated GELU), about 60 statements a
layer. For measuring how compile time and memory grow with the size of a
program (docs/reliability.md).

usage: scale_trace.py N [D] > OUT.trace      (D: the layers' width, 64)
Standard library only."""
import sys


class Trace:
    def __init__(self, d):
        self.d = d
        self.n = 0
        self.lines = []

    def stmt(self, op, args, dtype, shape):
        """one statement; returns its name"""
        self.n += 1
        name = f"t{self.n}"
        dims = ", ".join(str(x) for x in shape)
        self.lines.append(f'  {name} = prims.{op}({", ".join(args)})  # {name}: "cuda:0 {dtype}[{dims}]"')
        return name


def quantize(t, x, shape):
    """x (bf16 or f32, shape) -> (fp8 x, inverse scale): the seed's recipe"""
    src = t.stmt("convert_element_type", [x, "dtypes.float32"], "f32", shape)
    a = t.stmt("abs", [src], "f32", shape)
    amax = t.stmt("amax", [a, "(0, 1)"], "f32", [])
    d = t.stmt("convert_element_type", [amax, "dtypes.float64"], "f64", [])
    nan = t.stmt("ne", [d, d], "b8", [])
    gt = t.stmt("gt", [d, "1e-12"], "b8", [])
    w = t.stmt("where", [gt, d, "1e-12"], "f64", [])
    c = t.stmt("where", [nan, d, w], "f64", [])
    r = t.stmt("div", ["448.0", c], "f64", [])
    scale = t.stmt("convert_element_type", [r, "dtypes.float32"], "f32", [])
    b = t.stmt("broadcast_in_dim", [scale, f"({shape[0]}, {shape[1]})", "()"], "f32", shape)
    m = t.stmt("mul", [src, b], "f32", shape)
    n1 = t.stmt("ne", [m, m], "b8", shape)
    g1 = t.stmt("gt", [m, "-448.0"], "b8", shape)
    w1 = t.stmt("where", [g1, m, "-448.0"], "f32", shape)
    c1 = t.stmt("where", [n1, m, w1], "f32", shape)
    n2 = t.stmt("ne", [c1, c1], "b8", shape)
    l2 = t.stmt("lt", [c1, "448.0"], "b8", shape)
    w2 = t.stmt("where", [l2, c1, "448.0"], "f32", shape)
    c2 = t.stmt("where", [n2, c1, w2], "f32", shape)
    q = t.stmt("convert_element_type", [c2, "dtypes.float8_e4m3fn"], "f8_e4m3fn", shape)
    inv = t.stmt("reciprocal", [scale], "f32", [])
    return q, inv


def layer(t, h, w):
    """h (f32 [D, D]) through one fp8 linear layer with weight w (bf16 [D, D])"""
    d = t.d
    hq, hs = quantize(t, h, [d, d])
    wq, ws = quantize(t, w, [d, d])
    wt = t.stmt("transpose", [wq, "(1, 0)"], "f8_e4m3fn", [d, d])
    t.n += 1
    y = f"t{t.n}"
    t.lines.append(f"  {y} = torch._scaled_mm({hq}, {wt}, scale_a={hs}, scale_b={ws}, out_dtype=torch.bfloat16)"
                   f'  # {y}: "cuda:0 bf16[{d}, {d}]"')
    f = t.stmt("convert_element_type", [y, "dtypes.float32"], "f32", [d, d])
    cube = t.stmt("mul", [f, f], "f32", [d, d])
    cube = t.stmt("mul", [cube, f], "f32", [d, d])
    inner = t.stmt("mul", [cube, "0.044715"], "f32", [d, d])
    inner = t.stmt("add", [f, inner], "f32", [d, d])
    inner = t.stmt("mul", [inner, "0.7978845608028654"], "f32", [d, d])
    th = t.stmt("tanh", [inner], "f32", [d, d])
    th = t.stmt("add", [th, "1.0"], "f32", [d, d])
    half = t.stmt("mul", [f, "0.5"], "f32", [d, d])
    return t.stmt("mul", [half, th], "f32", [d, d])


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    want = int(sys.argv[1])
    d = int(sys.argv[2]) if len(sys.argv) == 3 else 64
    t = Trace(d)
    h = "x"
    weights = []
    while t.n < want:
        weights.append(f"w{len(weights)}")
        h = layer(t, h, weights[-1])
    out = ["import torch", "import thunder.core.dtypes as dtypes", "", "@torch.no_grad()",
           f"def computation(x, {', '.join(weights)}):", f'  # x: "cuda:0 bf16[{d}, {d}]"']
    out += [f'  # {w}: "cuda:0 bf16[{d}, {d}]"' for w in weights]
    out += t.lines
    out.append(f"  return {h}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
