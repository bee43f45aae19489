#!/usr/bin/env python3
"""Write the GEMM benchmark's programs as fp8cc IR text (docs/ir.md).

usage: gemm_ir.py            the case names, one a line
       gemm_ir.py CASE > OUT.ir

CASES is the table bench/bench_gemm.py times: each case a form, a dtype and
its sizes. Forms: mm (a (M,K) · b (K,N)), linear (x (M,K) · w (N,K)ᵀ, with
an optional bias and epilogue; epilogue 3, gelu_aux, also returns the
pre-activation as `pre`), bmm (a (B,M,K) · b (B,K,N)), bmm_nt
(q (B,M,K) · k (B,N,K)ᵀ), scaled_mm (fp8 a (M,K) · w (N,K)ᵀ, a bf16 result, with
tensor-wise, row-wise or 128-block scales), mlp (Llama's: silu(x wgᵀ) · (x wuᵀ), then wdᵀ,
silu in f32 as torch computes it) and mlp_fp8 (the same with each linear an
fp8 one as torchao's Float8Linear makes it: the activation and the weight
quantized to e4m3 with tensor-wise dynamic scales, amax → 448/amax → a
clamped cast, then torch._scaled_mm to bf16). Standard library only."""
import sys

# name: (form, dtype, sizes, options)
CASES = {
    "mm_bf16_4096": ("mm", "bf16", dict(m=4096, k=4096, n=4096), {}),
    "linear_bf16_8192x4096x11008": ("linear", "bf16", dict(m=8192, k=4096, n=11008), {}),
    "linear_gelu_bf16_8192x4096x11008": ("linear", "bf16", dict(m=8192, k=4096, n=11008),
                                         dict(bias=True, epilogue=2)),
    "linear_gelu_aux_bf16_8192x4096x11008": ("linear", "bf16", dict(m=8192, k=4096, n=11008),
                                             dict(bias=True, epilogue=3)),
    "attn_qk_bf16_32x2048x128": ("bmm_nt", "bf16", dict(b=32, m=2048, k=128, n=2048), {}),
    "attn_pv_bf16_32x2048x2048": ("bmm", "bf16", dict(b=32, m=2048, k=2048, n=128), {}),
    "mm_f32_2048": ("mm", "f32", dict(m=2048, k=2048, n=2048), {}),
    "mm_f16_4096": ("mm", "f16", dict(m=4096, k=4096, n=4096), {}),
    "scaled_mm_4096": ("scaled_mm", "f8e4m3fn", dict(m=4096, k=4096, n=4096), {}),
    "scaled_mm_fast_4096": ("scaled_mm", "f8e4m3fn", dict(m=4096, k=4096, n=4096), dict(fast_accum=True)),
    "scaled_mm_fast_8192x4096x14336": ("scaled_mm", "f8e4m3fn", dict(m=8192, k=4096, n=14336),
                                       dict(fast_accum=True)),
    "scaled_mm_row_fast_8192x4096x14336": ("scaled_mm", "f8e4m3fn", dict(m=8192, k=4096, n=14336),
                                           dict(fast_accum=True, scales="row")),
    "scaled_mm_block_8192x4096x14336": ("scaled_mm", "f8e4m3fn", dict(m=8192, k=4096, n=14336),
                                        dict(scales="block")),
    "mlp_bf16_4096x4096x11008": ("mlp", "bf16", dict(t=4096, h=4096, i=11008), {}),
    "mlp_fp8_4096x4096x11008": ("mlp_fp8", "bf16", dict(t=4096, h=4096, i=11008), {}),
}


def ty(dt, *dims):
    return f"{dt}[{','.join(map(str, dims))}]"


def program(name):
    """the IR text of case name"""
    form, dt, s, opt = CASES[name]
    if form == "mm":
        m, k, n = s["m"], s["k"], s["n"]
        return (f"func @{name}(%a: {ty(dt, m, k)}, %b: {ty(dt, k, n)}) {{\n"
                f"  %mm = matmul %a, %b : {ty(dt, m, n)}\n  return %mm\n}}\n")
    if form == "linear":
        m, k, n = s["m"], s["k"], s["n"]
        bias = f", %bias: {ty(dt, n)}" if opt.get("bias") else ""
        epi = f" [{opt['epilogue']}]" if opt.get("epilogue") else ""
        aux = opt.get("epilogue") == 3
        return (f"func @{name}(%x: {ty(dt, m, k)}, %w: {ty(dt, n, k)}{bias}) {{\n"
                f"  %mm = matmul %x, %w{', %bias' if bias else ''}{epi} trans_b : {ty(dt, m, n)}\n"
                + (f"  %pre = matmul_aux %mm : {ty(dt, m, n)}\n" if aux else "")
                + f"  return %mm{', %pre' if aux else ''}\n}}\n")
    if form in ("bmm", "bmm_nt"):
        b, m, k, n = s["b"], s["m"], s["k"], s["n"]
        other, flag = (ty(dt, b, n, k), " trans_b") if form == "bmm_nt" else (ty(dt, b, k, n), "")
        return (f"func @{name}(%a: {ty(dt, b, m, k)}, %b: {other}) {{\n"
                f"  %mm = matmul %a, %b{flag} : {ty(dt, b, m, n)}\n  return %mm\n}}\n")
    if form == "scaled_mm":
        m, k, n = s["m"], s["k"], s["n"]
        fast = " fast_accum" if opt.get("fast_accum") else ""
        scales = opt.get("scales", "tensor")
        if scales == "tensor":
            params, views = "%scale_a: f32[], %scale_b: f32[]", ""
        elif scales == "row":
            params, views = f"%scale_a: {ty('f32', m, 1)}, %scale_b: {ty('f32', 1, n)}", ""
        else:  # block: the inputs as DeepSeek-V3 stores them, (K/128, M) and (N/128, K/128) row-major
            kb, nb = k // 128, n // 128
            params = f"%sa_t: {ty('f32', kb, m)}, %sb_t: {ty('f32', nb, kb)}"
            views = (f"  %scale_a = transpose %sa_t [1,0] : {ty('f32', m, kb)}\n"
                     f"  %scale_b = transpose %sb_t [1,0] : {ty('f32', kb, nb)}\n")
        return (f"func @{name}(%a: {ty(dt, m, k)}, %w: {ty(dt, n, k)}, {params}) {{\n"
                f"  %wt = transpose %w [1,0] : {ty(dt, k, n)}\n" + views +
                f"  %mm = scaled_mm %a, %wt, %scale_a, %scale_b{fast} : {ty('bf16', m, n)}\n"
                f"  return %mm\n}}\n")
    if form == "mlp":
        t, h, i = s["t"], s["h"], s["i"]
        f32 = ty("f32", t, i)
        return (f"func @{name}(%x: {ty(dt, t, h)}, %w_gate: {ty(dt, i, h)}, %w_up: {ty(dt, i, h)}, "
                f"%w_down: {ty(dt, h, i)}) {{\n"
                f"  %gate = matmul %x, %w_gate trans_b : {ty(dt, t, i)}\n"
                f"  %up = matmul %x, %w_up trans_b : {ty(dt, t, i)}\n"
                f"  %g = convert_element_type %gate : {f32}\n"
                f"  %ng = neg %g : {f32}\n"
                f"  %e = exp %ng : {f32}\n"
                f"  %one = full 1 : f32[]\n"
                f"  %den = add %e, %one : {f32}\n"
                f"  %sg = div %g, %den : {f32}\n"
                f"  %silu = convert_element_type %sg : {ty(dt, t, i)}\n"
                f"  %hid = mul %silu, %up : {ty(dt, t, i)}\n"
                f"  %mm = matmul %hid, %w_down trans_b : {ty(dt, t, h)}\n"
                f"  return %mm\n}}\n")
    if form == "mlp_fp8":
        return mlp_fp8(name, dt, s["t"], s["h"], s["i"])
    raise ValueError(form)


def quantize(v, dims):
    """IR lines: v (bf16) to e4m3 %v_q with tensor-wise dynamic scaling, and
    %v_inv = 1/scale (the scaled_mm's scale)"""
    f = ty("f32", *dims)
    return (f"  %{v}_f = convert_element_type %{v} : {f}\n"
            f"  %{v}_a = abs %{v}_f : {f}\n"
            f"  %{v}_m = amax %{v}_a [0,1] : f32[]\n"
            f"  %{v}_c = maximum %{v}_m, %tiny : f32[]\n"
            f"  %{v}_s = div %max, %{v}_c : f32[]\n"
            f"  %{v}_b = broadcast_in_dim %{v}_s [] : {f}\n"
            f"  %{v}_y = mul %{v}_f, %{v}_b : {f}\n"
            f"  %{v}_lo = maximum %{v}_y, %min : {f}\n"
            f"  %{v}_hi = minimum %{v}_lo, %max : {f}\n"
            f"  %{v}_q = convert_element_type %{v}_hi : {ty('f8e4m3fn', *dims)}\n"
            f"  %{v}_inv = reciprocal %{v}_s : f32[]\n")


def fp8_linear(out, x, w, m, k, n):
    """%out (bf16 (m,n)) = x · wᵀ from the quantized %x_q and %w_q"""
    return (f"  %{w}_t = transpose %{w}_q [1,0] : {ty('f8e4m3fn', k, n)}\n"
            f"  %{out} = scaled_mm %{x}_q, %{w}_t, %{x}_inv, %{w}_inv : {ty('bf16', m, n)}\n")


def mlp_fp8(name, dt, t, h, i):
    f32 = ty("f32", t, i)
    return (f"func @{name}(%x: {ty(dt, t, h)}, %w_gate: {ty(dt, i, h)}, %w_up: {ty(dt, i, h)}, "
            f"%w_down: {ty(dt, h, i)}) {{\n"
            f"  %tiny = full 1e-12 : f32[]\n  %max = full 448 : f32[]\n  %min = full -448 : f32[]\n"
            + quantize("x", (t, h)) + quantize("w_gate", (i, h)) + quantize("w_up", (i, h))
            + fp8_linear("gate", "x", "w_gate", t, h, i) + fp8_linear("up", "x", "w_up", t, h, i)
            + f"  %g = convert_element_type %gate : {f32}\n"
            f"  %ng = neg %g : {f32}\n"
            f"  %e = exp %ng : {f32}\n"
            f"  %one = full 1 : f32[]\n"
            f"  %den = add %e, %one : {f32}\n"
            f"  %sg = div %g, %den : {f32}\n"
            f"  %silu = convert_element_type %sg : {ty(dt, t, i)}\n"
            f"  %hid = mul %silu, %up : {ty(dt, t, i)}\n"
            + quantize("hid", (t, i)) + quantize("w_down", (h, i))
            + fp8_linear("mm", "hid", "w_down", t, i, h)
            + "  return %mm\n}\n")


def main():
    if len(sys.argv) == 1:
        print("\n".join(CASES))
    elif len(sys.argv) == 2 and sys.argv[1] in CASES:
        sys.stdout.write(program(sys.argv[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
