#!/usr/bin/env python3
"""Write the kernel benchmark's programs as fp8cc IR text (docs/ir.md):
the memory-bound work of an fp8 training step, no GEMMs.

usage: kernel_ir.py            the case names, one a line
       kernel_ir.py CASE > OUT.ir

CASES is the table bench/bench_kernels.py times: each case a form and a
shape (rows, cols) of a bf16 input x. Forms:
  quant      tensor-wise e4m3 quantize (torchao's: amax of |x| in f32,
             scale 448/amax, clamp, cast) -> q, 1/scale
  quant_row  the same per row (amax over dim 1, a scale per row)
  quant_tt   tensor-wise, both layouts: q and its transpose as its own
             row-major tensor (what a backward's GEMMs read)
  quant_delayed  delayed scaling (Transformer Engine's recipe): the cast
             takes a scale s it is given, and the amax of |x| is only an
             output (the history the next steps' scales come from) -> q, amax
  softmax    over the last dim, in f32, bf16 out
  rmsnorm    x * rsqrt(mean(x^2) + 1e-6) * w, in f32, bf16 out
  layernorm  (x - mean) * rsqrt(var + 1e-5) * w + b, in f32, bf16 out
  gelu_tanh  F.gelu(x, approximate='tanh') in f32, bf16 out (an MLP's
             activation where the GEMM cannot take it)
  gelu_erf   F.gelu(x), x/2 (1 + erf(x/sqrt 2)), the same
bytes(CASE) is the floor each is measured against: every input element
read once, every output element written once. Standard library only."""
import sys

SHAPES = {"4096": (4096, 4096), "8192": (8192, 8192), "14336x4096": (14336, 4096)}
CASES = {}
for _s, (_r, _c) in SHAPES.items():
    for _f in ("quant", "quant_row", "quant_tt", "quant_delayed"):
        CASES[f"{_f}_{_s}"] = (_f, _r, _c)
for _f in ("softmax", "rmsnorm", "layernorm"):
    CASES[f"{_f}_8192x4096"] = (_f, 8192, 4096)
for _f in ("gelu_tanh", "gelu_erf"):
    CASES[f"{_f}_8192x11008"] = (_f, 8192, 11008)


def ty(dt, *dims):
    return f"{dt}[{','.join(map(str, dims))}]"


def quantize(r, c, rowwise):
    """lines from %xf (f32[r,c]) to %q (e4m3) and %inv (1/scale)"""
    am = ty("f32", r) if rowwise else ty("f32")
    red = "[1]" if rowwise else "[0,1]"
    lines = [f"  %ax = abs %xf : {ty('f32', r, c)}",
             f"  %am = amax %ax {red} : {am}",
             "  %lo = full 1e-12 : f32[]",
             f"  %cl = maximum %am, %lo : {am}",
             "  %k = full 448 : f32[]",
             f"  %sc = div %k, %cl : {am}"]
    s = "%sc"
    if rowwise:
        lines.append(f"  %sb = broadcast_in_dim %sc [0] : {ty('f32', r, c)}")
        s = "%sb"
    lines += [f"  %y = mul %xf, {s} : {ty('f32', r, c)}",
              "  %n = full -448 : f32[]",
              f"  %y1 = maximum %y, %n : {ty('f32', r, c)}",
              f"  %y2 = minimum %y1, %k : {ty('f32', r, c)}",
              f"  %q = convert_element_type %y2 : {ty('f8e4m3fn', r, c)}",
              f"  %inv = reciprocal %sc : {am}"]
    return lines


def row_broadcast(name, src, r, c):
    return f"  %{name} = broadcast_in_dim %{src} [0] : {ty('f32', r, c)}"


def program(name):
    """the IR text of case name"""
    form, r, c = CASES[name]
    f32 = ty("f32", r, c)
    params = f"%x: {ty('bf16', r, c)}"
    if form in ("rmsnorm", "layernorm"):
        params += f", %w: {ty('bf16', c)}"
    if form == "layernorm":
        params += f", %b: {ty('bf16', c)}"
    if form == "quant_delayed":
        params += ", %s: f32[]"
    out = [f"func @{name}({params}) {{", f"  %xf = convert_element_type %x : {f32}"]
    if form == "quant_delayed":
        out += [f"  %ax = abs %xf : {f32}", "  %am = amax %ax [0,1] : f32[]",
                f"  %sb = broadcast_in_dim %s [] : {f32}", f"  %y = mul %xf, %sb : {f32}",
                "  %k = full 448 : f32[]", "  %n = full -448 : f32[]", f"  %y1 = maximum %y, %n : {f32}",
                f"  %y2 = minimum %y1, %k : {f32}", f"  %q = convert_element_type %y2 : {ty('f8e4m3fn', r, c)}",
                "  return %q, %am"]
    elif form.startswith("quant"):
        out += quantize(r, c, form == "quant_row")
        if form == "quant_tt":
            out.append(f"  %qt = transpose %q [1,0] : {ty('f8e4m3fn', c, r)}")
            out.append("  return %q, %qt, %inv")
        else:
            out.append("  return %q, %inv")
    elif form == "gelu_tanh":
        out += ["  %half = full 0.5 : f32[]", "  %one = full 1 : f32[]", "  %kappa = full 0.044715 : f32[]",
                "  %beta = full 0.7978845608028654 : f32[]", f"  %x2 = mul %xf, %xf : {f32}",
                f"  %x3 = mul %x2, %xf : {f32}", f"  %t = mul %kappa, %x3 : {f32}", f"  %in = add %xf, %t : {f32}",
                f"  %u = mul %beta, %in : {f32}", f"  %th = tanh %u : {f32}", f"  %o = add %one, %th : {f32}",
                f"  %h = mul %xf, %half : {f32}", f"  %g = mul %h, %o : {f32}",
                f"  %y = convert_element_type %g : {ty('bf16', r, c)}", "  return %y"]
    elif form == "gelu_erf":
        out += ["  %half = full 0.5 : f32[]", "  %one = full 1 : f32[]", "  %r2 = full 0.7071067811865476 : f32[]",
                f"  %s = mul %xf, %r2 : {f32}", f"  %e = erf %s : {f32}", f"  %o = add %one, %e : {f32}",
                f"  %h = mul %xf, %half : {f32}", f"  %g = mul %h, %o : {f32}",
                f"  %y = convert_element_type %g : {ty('bf16', r, c)}", "  return %y"]
    elif form == "softmax":
        out += [f"  %m = amax %xf [1] : {ty('f32', r)}", row_broadcast("mb", "m", r, c),
                f"  %d = sub %xf, %mb : {f32}", f"  %e = exp %d : {f32}",
                f"  %s = sum %e [1] : {ty('f32', r)}", row_broadcast("sb", "s", r, c),
                f"  %p = div %e, %sb : {f32}", f"  %y = convert_element_type %p : {ty('bf16', r, c)}",
                "  return %y"]
    else:
        out += [f"  %inv_n = full {1.0 / c!r} : f32[]"]
        if form == "layernorm":
            out += [f"  %s1 = sum %xf [1] : {ty('f32', r)}", f"  %mu = mul %s1, %inv_n : {ty('f32', r)}",
                    row_broadcast("mub", "mu", r, c), f"  %xc = sub %xf, %mub : {f32}"]
            src, eps = "%xc", "1e-5"
        else:
            src, eps = "%xf", "1e-6"
        out += [f"  %sq = mul {src}, {src} : {f32}", f"  %s2 = sum %sq [1] : {ty('f32', r)}",
                f"  %ms = mul %s2, %inv_n : {ty('f32', r)}", f"  %eps = full {eps} : f32[]",
                f"  %ve = add %ms, %eps : {ty('f32', r)}", f"  %rs = rsqrt %ve : {ty('f32', r)}",
                row_broadcast("rsb", "rs", r, c), f"  %nx = mul {src}, %rsb : {f32}",
                f"  %wf = convert_element_type %w : {ty('f32', c)}",
                f"  %wb = broadcast_in_dim %wf [1] : {f32}", f"  %yw = mul %nx, %wb : {f32}"]
        last = "%yw"
        if form == "layernorm":
            out += [f"  %bf = convert_element_type %b : {ty('f32', c)}",
                    f"  %bb = broadcast_in_dim %bf [1] : {f32}", f"  %yb = add %yw, %bb : {f32}"]
            last = "%yb"
        out += [f"  %y = convert_element_type {last} : {ty('bf16', r, c)}", "  return %y"]
    return "\n".join(out) + "\n}\n"


def nbytes(name):
    """the floor: each input element read once, each output written once"""
    form, r, c = CASES[name]
    n = r * c
    if form == "quant":
        return 2 * n + n
    if form == "quant_delayed":
        return 2 * n + n + 4 + 4
    if form == "quant_row":
        return 2 * n + n + 4 * r
    if form == "quant_tt":
        return 2 * n + 2 * n
    if form in ("softmax", "gelu_tanh", "gelu_erf"):
        return 2 * n + 2 * n
    return 2 * n + 2 * n + 2 * c * (2 if form == "layernorm" else 1)


if __name__ == "__main__":
    if len(sys.argv) == 1:
        print("\n".join(CASES))
    elif len(sys.argv) == 2 and sys.argv[1] in CASES:
        sys.stdout.write(program(sys.argv[1]))
    else:
        sys.exit("usage: kernel_ir.py [CASE]")
