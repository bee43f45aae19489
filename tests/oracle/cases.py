"""cases.py - what the PyTorch oracle covers: one case per op of ir/ops.def that
PyTorch computes elementwise or as a reduction (plus scaled_mm), each with
variants per dtype.

Pure Python 3 standard library: gen_golden.py (torch, on a GPU) and
make_ir.py (no torch) both import it, so a golden file and the IR function
that recomputes it always agree on tensor names, dtypes and shapes.

A case is one file pair: golden/<case>.safetensors and ir/<case>.ir.
  inputs   tensors named "<variant>.a", "<variant>.b", "<variant>.c" (or
           "<dtype>.a" when several outputs share one input, as for convert)
  outputs  tensors named "<variant>.out" (convert: "<from>_to_<to>")
The IR function's parameters are the inputs and its return values the
outputs, under the same names, so `fp8cc case.ir --interpret --inputs
golden.safetensors` reads the golden inputs and writes outputs that
compare.py matches by name.

Input values are listed here as Python numbers (floats, ints, fp8 codes);
gen_golden.py turns them into tensors of the dtype (rounding floats on the
way, which is fine: the golden file stores the exact bits it used).
"""

import math
import random
import struct

FLOATS = ["f32", "bf16", "f16", "f64"]
INTS = ["u8", "i8", "i16", "i32", "i64"]
FP8 = ["f8e4m3fn", "f8e5m2"]
ALL = ["b8"] + INTS + FLOATS + FP8

# IR dtype -> torch dtype attribute name, safetensors dtype, bytes
TORCH = {
    "b8": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
    "i64": "int64", "f16": "float16", "bf16": "bfloat16", "f32": "float32",
    "f64": "float64", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
}
ST = {
    "b8": "BOOL", "u8": "U8", "i8": "I8", "i16": "I16", "i32": "I32", "i64": "I64",
    "f16": "F16", "bf16": "BF16", "f32": "F32", "f64": "F64",
    "f8e4m3fn": "F8_E4M3", "f8e5m2": "F8_E5M2",
}
INT_RANGE = {
    "u8": (0, 255), "i8": (-128, 127), "i16": (-32768, 32767),
    "i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1),
}

# tolerances (compare.py): "exact" bit for bit (NaN == NaN); "ulp:N" within
# N units in the last place of the output dtype; "rel:R,abs:A" |got - want|
# <= A + R*|want|. Infinities and NaN must always match.
TRANSCENDENTAL = {"exp", "exp2", "log", "log1p", "log2", "rsqrt", "tanh", "erf",
                  "sin", "cos", "pow", "acos", "acosh", "asin", "asinh", "atan", "atanh",
                  "cosh", "sinh", "tan", "erfc", "erfinv", "expm1", "log10", "lgamma", "atan2"}
# libdevice's float versions of these are looser than 2 ulp (CUDA's math
# guide: 3 to 4 ulp; lgamma 6 outside its poles, absolute near its zeros)
LOOSE = {"acosh": "ulp:4", "asin": "ulp:4", "asinh": "ulp:4", "atanh": "ulp:4", "sinh": "ulp:4",
         "tan": "ulp:4", "erfc": "ulp:5", "atan2": "ulp:4", "lgamma": "rel:2e-6,abs:1e-6"}


def transcendental_tol(dt, op=None):
    """libm (interpreter, correctly rounded in double) vs CUDA's (<= 2 ulp
    in float, more for some; narrow floats compute in float, then round once)."""
    if dt in ("f32", "f64"):
        return LOOSE.get(op, "ulp:2")
    return "ulp:1" if op != "lgamma" else LOOSE[op]


# sums and products: the interpreter accumulates in double, CUDA in float
SUM_TOL = {"f32": "rel:1e-5,abs:1e-5", "f64": "rel:1e-12,abs:1e-12",
           "bf16": "ulp:1", "f16": "ulp:1"}
PROD_TOL = {"f32": "rel:4e-6,abs:1e-38", "f64": "rel:1e-14,abs:1e-300",
            "bf16": "ulp:1", "f16": "ulp:1"}
# GEMMs: the interpreter accumulates in float; Hopper's FP8 tensor cores
# with about 14 bits (more so with fast_accum), in cuBLASLt's order
GEMM_TOL = "gemm:2e-3"


class Input:
    """a tensor the golden file holds and the IR function takes"""

    def __init__(self, name, dtype, shape, values, kind):
        self.name = name        # safetensors name = IR parameter name
        self.dtype = dtype      # IR dtype name
        self.shape = shape      # list of ints
        self.values = values    # flat list: floats, ints, bools or fp8 codes
        self.kind = kind        # "float", "int", "bool" or "codes"


class Output:
    """one instruction of the IR function, and the torch call it mirrors"""

    def __init__(self, name, op, args, dtype, shape, tol="exact", attrs=None,
                 flags=(), torch=None):
        self.name = name        # safetensors name = IR value name
        self.op = op            # IR op name (ops.def)
        self.args = args        # input names
        self.dtype = dtype
        self.shape = shape
        self.tol = tol
        self.attrs = attrs      # list of ints or None
        self.flags = list(flags)
        self.torch = torch or op  # key into gen_golden.TORCH_OPS


class Case:
    def __init__(self, name):
        self.name = name
        self.inputs = []
        self.outputs = []

    def add_input(self, inp):
        if all(i.name != inp.name for i in self.inputs):
            self.inputs.append(inp)
        return inp.name


# ---- special values ----

def f32_round(x):
    """x rounded to float32 (RNE), as a Python float; overflow -> inf"""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def f32_next(x, up):
    """the float32 next to finite float32 x, towards +inf when up"""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    if x == 0:
        u = 1 if up else 0x80000001
    elif (x > 0) == up:
        u += 1
    else:
        u -= 1
    return struct.unpack("<f", struct.pack("<I", u))[0]


def fp8_values(ebits, mbits, fn):
    """the positive finite values of an fp8 format, increasing"""
    bias = (1 << (ebits - 1)) - 1
    out = []
    for code in range(1 << (ebits + mbits)):
        e, m = code >> mbits, code & ((1 << mbits) - 1)
        if fn and e == (1 << ebits) - 1 and m == (1 << mbits) - 1:
            continue                          # e4m3fn NaN
        if not fn and e == (1 << ebits) - 1:
            continue                          # e5m2 inf / NaN
        if e == 0:
            out.append(math.ldexp(m, 1 - bias - mbits))
        else:
            out.append(math.ldexp((1 << mbits) + m, e - bias - mbits))
    return out


def fp8_boundaries():
    """float32 inputs at every fp8 rounding boundary: each e4m3fn and e5m2
    value, each midpoint between neighbours (and past the largest), and
    the float32 on either side of each midpoint, both signs"""
    vals = set()
    for ebits, mbits, fn, top in ((4, 3, True, 480.0), (5, 2, False, 65536.0)):
        v = fp8_values(ebits, mbits, fn) + [top]
        for lo, hi in zip(v, v[1:]):
            mid = f32_round((lo + hi) / 2)
            for x in (lo, mid, f32_next(mid, False), f32_next(mid, True)):
                vals.add(x)
                vals.add(-x)
    return sorted(vals)


NAN = math.nan
INF = math.inf

COMMON = [
    NAN, -NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
    3.0, -3.0, 0.1, -0.1, 1 / 3, 2.0**-8, 1 + 2.0**-8, 1 + 3 * 2.0**-8,
    448.0, -448.0, 464.0, -464.0, 465.0, 480.0, 57344.0, 61440.0, -61440.0,
    65504.0, 65520.0, 1e-12, 1e-30, 1e30, -1e30, 100.0, -100.0, 7.0, 0.75,
]
MATH = [0.25, math.pi, -math.pi, 10.0, -10.0, 20.0, -20.0, 88.0, 89.0, -87.0,
        -103.0, -150.0, 1e-5, 1e5, 1e10, 2.0**24 + 1, 8388607.5, 4503599627370495.5]
EXTREMES = {
    "f32": [2.0**-149, 2.0**-126 - 2.0**-149, 2.0**-126, 3.4028234663852886e38],
    "f64": [5e-324, 2.0**-1022, 1.7976931348623157e308, 1e300, 1e-300],
    "bf16": [2.0**-133, 2.0**-126, 3.3895313892515355e38],
    "f16": [2.0**-24, 2.0**-14, 65504.0, 2.0**-25],
}


def randn(seed, n):
    """n seeded normals, each times a power of two in [2^-20, 2^20]"""
    r = random.Random(seed)
    return [r.gauss(0.0, 1.0) * 2.0 ** r.randint(-20, 20) for _ in range(n)]


def float_specials(dt, seed=1):
    ext = EXTREMES[dt]
    return COMMON + MATH + ext + [-x for x in ext] + randn(seed, 24)


def float_pair_specials(dt):
    ext = EXTREMES[dt]
    return [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.0, 1 / 3,
            ext[0], -ext[0], ext[-1] if dt != "f64" else ext[2], 448.0, 1e-12,
            1e30, -7.0, 0.1, 1 + 2.0**-8, 2.0**-8, 100.0, -0.75]


def int_specials(dt, seed=2):
    lo, hi = INT_RANGE[dt]
    cand = [0, 1, -1, 2, -2, 3, 7, -7, 100, -100, lo, hi, lo + 1, hi - 1, 127,
            -128, 255, 300, -300, 32767, -32768, 65535, 2**31 - 1, -2**31,
            2**24 + 1, 2**53 + 1, 2**63 - 1]
    r = random.Random(seed)
    cand += [r.randint(lo, hi) for _ in range(16)]
    out = []
    for v in cand:
        if lo <= v <= hi and v not in out:
            out.append(v)
    return out


def int_pair_specials(dt):
    lo, hi = INT_RANGE[dt]
    out = []
    for v in [0, 1, -1, 2, -2, 3, -7, 100, lo, hi, lo + 1, hi - 1]:
        if lo <= v <= hi and v not in out:
            out.append(v)
    return out


def values_input(name, dt, vals):
    kind = "bool" if dt == "b8" else "int" if dt in INTS else "float"
    if dt == "b8":
        vals = [bool(v) for v in vals]
    return Input(name, dt, [len(vals)], vals, kind)


def specials_input(name, dt, seed=1, convert=False):
    """1-d special values of dtype dt"""
    if dt in FP8:
        return Input(name, dt, [256], list(range(256)), "codes")
    if dt == "b8":
        return values_input(name, dt, [False, True])
    if dt in INTS:
        return values_input(name, dt, int_specials(dt, seed))
    vals = float_specials(dt, seed)
    if convert:
        vals = vals + fp8_boundaries()
    return values_input(name, dt, vals)


def pair_inputs(prefix, dt, nonzero_b=False):
    """a, b: every pair of a small special set (cartesian product)"""
    if dt == "b8":
        s = [False, True]
    elif dt in INTS:
        s = int_pair_specials(dt)
    else:
        s = float_pair_specials(dt)
    a = [x for x in s for _ in s]
    b = [y for _ in s for y in s]
    if nonzero_b:
        keep = [i for i, y in enumerate(b) if y != 0]
        a, b = [a[i] for i in keep], [b[i] for i in keep]
    return values_input(prefix + ".a", dt, a), values_input(prefix + ".b", dt, b)


def matrix_input(name, dt, rows_cols=None, finite=False, seed=3, moderate=False):
    """[R, C]: seeded normals, row i holding special i at column i % C.
    finite: no inf, NaN or |x| >= 1e4; moderate: no finite |x| > 1e10 (a
    product's intermediate overflow would depend on the order)"""
    if dt in INTS:
        sp = int_specials(dt, seed)
    else:
        sp = float_specials(dt, seed)
        if finite:
            sp = [x for x in sp if math.isfinite(x) and abs(x) < 1e4]
        if moderate:
            sp = [x for x in sp if not math.isfinite(x) or abs(x) <= 1e10]
    cols = 8
    rows = rows_cols[0] if rows_cols else len(sp)
    r = random.Random(seed)
    vals = []
    for i in range(rows):
        if dt in INTS:
            lo, hi = INT_RANGE[dt]
            row = [r.randint(max(lo, -5), min(hi, 5)) for _ in range(cols)]
        else:
            row = [r.gauss(0.0, 1.0) for _ in range(cols)]
        row[i % cols] = sp[i % len(sp)]
        vals += row
    kind = "int" if dt in INTS else "float"
    return Input(name, dt, [rows, cols], vals, kind)


# ---- the cases ----

UNARY_FLOAT = ["abs", "neg", "reciprocal", "exp", "exp2", "log", "log1p", "log2",
               "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "sign", "floor",
               "ceil", "round", "trunc", "isfinite", "acos", "acosh", "asin", "asinh",
               "atan", "atanh", "cosh", "sinh", "tan", "erfc", "erfinv", "expm1", "log10",
               "lgamma", "signbit"]
UNARY_INT = ["abs", "neg", "sign", "isfinite", "bitwise_not", "signbit"]
SHIFTS = ["bitwise_left_shift", "bitwise_right_shift"]
BINARY_NUM = ["add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
REDUCE = ["amax", "amin", "sum", "prod"]


def unary_case(op):
    c = Case(op)
    dts = list(FLOATS)
    if op in UNARY_INT:
        dts += INTS
    if op == "bitwise_not":
        dts = ["b8"] + INTS
    if op == "logical_not":
        dts = ["b8"]
    for dt in dts:
        a = c.add_input(specials_input(dt + ".a", dt))
        rt = "b8" if op in ("isfinite", "signbit") else dt
        tol = transcendental_tol(dt, op) if op in TRANSCENDENTAL else "exact"
        c.outputs.append(Output(dt + ".out", op, [a], rt, [len(c.inputs[-1].values)], tol))
    return c


def binary_case(op):
    c = Case(op)
    if op in BITWISE:
        dts = ["b8"] + INTS
    elif op in SHIFTS:
        dts = list(INTS)
    elif op in ("pow", "atan2", "nextafter"):
        dts = list(FLOATS) if op != "nextafter" else ["f32", "f64"]
    elif op in COMPARE:
        dts = FLOATS + INTS + ["b8"]
    else:
        dts = FLOATS + INTS
    for dt in dts:
        nonzero = dt in INTS and op in ("div", "fmod", "remainder")
        ia, ib = pair_inputs(dt, dt, nonzero_b=nonzero)
        a, b = c.add_input(ia), c.add_input(ib)
        rt = "b8" if op in COMPARE else dt
        tol = transcendental_tol(dt, op) if op in TRANSCENDENTAL else "exact"
        c.outputs.append(Output(dt + ".out", op, [a, b], rt, ia.shape, tol))
    return c


def where_case():
    c = Case("where")
    for dt in ALL:
        x = specials_input(dt + ".a", dt)
        n = x.shape[0]
        y = Input(dt + ".b", dt, x.shape, list(reversed(x.values)), x.kind)
        r = random.Random(4)
        cond = values_input(dt + ".c", "b8", [r.random() < 0.5 for _ in range(n)])
        args = [c.add_input(cond), c.add_input(x), c.add_input(y)]
        c.outputs.append(Output(dt + ".out", "where", args, dt, [n]))
    return c


def convert_case():
    c = Case("convert_element_type")
    for src in ALL:
        x = specials_input(src + ".a", src, convert=src in FLOATS)
        a = c.add_input(x)
        for dst in ALL:
            if dst != src:
                c.outputs.append(Output("%s_to_%s" % (src, dst), "convert_element_type",
                                        [a], dst, x.shape, torch="to"))
    return c


def reduce_case(op):
    c = Case(op)
    for dt in FLOATS + INTS:
        exact = op in ("amax", "amin") or dt in INTS
        tol = "exact" if exact else SUM_TOL[dt]
        if op == "prod" and not exact:
            tol = PROD_TOL[dt]
        m = matrix_input(dt + ".a", dt, moderate=op == "prod")
        a = c.add_input(m)
        rows, cols = m.shape
        c.outputs.append(Output(dt + ".rows", op, [a], dt, [rows], tol, attrs=[1]))
        c.outputs.append(Output(dt + ".cols", op, [a], dt, [cols], tol, attrs=[0]))
        f = matrix_input(dt + ".f", dt, rows_cols=(16, 8), finite=True, seed=5)
        b = c.add_input(f)
        c.outputs.append(Output(dt + ".all", op, [b], dt, [], tol, attrs=[0, 1]))
    return c


def scaled_mm_case():
    """16x32 @ 32x64 with tensor-wise scales, as the seed's fp8 linear"""
    c = Case("scaled_mm")
    M, K, N = 16, 32, 64
    r = random.Random(6)

    def codes(limit, n):
        """n random codes of the limit smallest magnitudes, random signs"""
        return [r.randrange(limit) | (0x80 if r.random() < 0.5 else 0) for _ in range(n)]
    a = Input("a", "f8e4m3fn", [M, K], codes(100, M * K), "codes")      # |a| <= 44
    b4 = Input("b", "f8e4m3fn", [K, N], codes(100, K * N), "codes")
    b5 = Input("b5", "f8e5m2", [K, N], codes(80, K * N), "codes")        # |b| <= 28
    sa = Input("sa", "f32", [], [0.0123], "float")
    sb = Input("sb", "f32", [], [3.5], "float")
    bias = Input("bias", "bf16", [N], randn(7, N), "float")
    for inp in (a, b4, b5, sa, sb, bias):
        c.add_input(inp)
    tol_bf16 = tol_f32 = GEMM_TOL
    c.outputs.append(Output("bf16.out", "scaled_mm", ["a", "b", "sa", "sb"], "bf16", [M, N], tol_bf16))
    c.outputs.append(Output("bias.out", "scaled_mm", ["a", "b", "sa", "sb", "bias"], "bf16", [M, N], tol_bf16))
    c.outputs.append(Output("fast.out", "scaled_mm", ["a", "b", "sa", "sb"], "bf16", [M, N], tol_bf16,
                            flags=["fast_accum"]))
    c.outputs.append(Output("f32.out", "scaled_mm", ["a", "b", "sa", "sb"], "f32", [M, N], tol_f32))
    c.outputs.append(Output("e5m2.out", "scaled_mm", ["a", "b5", "sa", "sb"], "bf16", [M, N], tol_bf16))
    return c


def shift_case(op):
    """shift amounts from -1 past the width, every value of a small set"""
    c = Case(op)
    for dt in INTS:
        w = {"u8": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64}[dt]
        lo, hi = INT_RANGE[dt]
        vals = [v for v in [0, 1, -1, 5, -5, 100, lo, hi, 0x55] if lo <= v <= hi]
        amts = [v for v in [-1, 0, 1, 3, w - 1, w, w + 1, 2 * w] if lo <= v <= hi]
        a = values_input(dt + ".a", dt, [x for x in vals for _ in amts])
        b = values_input(dt + ".b", dt, [y for _ in vals for y in amts])
        c.add_input(a)
        c.add_input(b)
        c.outputs.append(Output(dt + ".out", op, [a.name, b.name], dt, a.shape))
    return c


def gather_cases():
    """take, gather, flip, pad, iota and bitcast: index and byte moves, exact"""
    out = []
    for name in ("take", "gather", "flip", "pad", "bitcast"):
        c = Case(name)
        for dt in ("f32", "bf16", "i64", "f8e4m3fn"):
            x = Input(dt + ".x", dt, [6, 5], list(range(30)) if dt in INTS or dt in FP8
                      else [v * 0.5 - 3 for v in range(30)], "codes" if dt in FP8 else
                      "int" if dt in INTS else "float")
            c.add_input(x)
            if name == "take":
                i = c.add_input(values_input(dt + ".i", "i64", [4, 0, 0, 2]))
                j = c.add_input(values_input(dt + ".j", "i32", [1, 4, 3]))
                c.outputs.append(Output(dt + ".rows", "take", [x.name, i], dt, [4, 5], attrs=[0]))
                c.outputs.append(Output(dt + ".cols", "take", [x.name, j], dt, [6, 3], attrs=[1]))
            elif name == "gather":
                r = random.Random(9)
                i = c.add_input(Input(dt + ".i", "i64", [6, 3], [r.randrange(5) for _ in range(18)], "int"))
                j = c.add_input(Input(dt + ".j", "i32", [2, 5], [r.randrange(6) for _ in range(10)], "int"))
                c.outputs.append(Output(dt + ".d1", "gather", [x.name, i], dt, [6, 3], attrs=[1]))
                c.outputs.append(Output(dt + ".d0", "gather", [x.name, j], dt, [2, 5], attrs=[0]))
            elif name == "flip":
                c.outputs.append(Output(dt + ".both", "flip", [x.name], dt, [6, 5], attrs=[0, 1]))
                c.outputs.append(Output(dt + ".cols", "flip", [x.name], dt, [6, 5], attrs=[1]))
            elif name == "pad":
                v = c.add_input(Input(dt + ".v", dt, [], [7 if dt in INTS or dt in FP8 else -0.75],
                                      "codes" if dt in FP8 else "int" if dt in INTS else "float"))
                # lo 1, hi 2, interior 1 on dim 0; cut 1 low and pad 2 high on dim 1
                c.outputs.append(Output(dt + ".out", "pad", [x.name, v], dt, [14, 6], attrs=[1, -1, 2, 2, 1, 0]))
            elif name == "bitcast" and dt != "i64":
                to = {"f32": "i32", "bf16": "i16", "f8e4m3fn": "f8e5m2"}[dt]
                c.outputs.append(Output(dt + ".out", "bitcast", [x.name], to, [6, 5]))
        out.append(c)
    c = Case("iota")
    for dt, start, step in (("i64", -3, 7), ("i32", 5, -2), ("i8", 0, 3)):
        c.outputs.append(Output(dt + ".out", "iota", [], dt, [12], attrs=[start, step]))
    out.append(c)
    return out


def matmul_case():
    """matmul in bf16, f16, f32 (no TF32) and f64: 2-d, transposed operands,
    batched, bias and epilogues; compared by relative Frobenius error"""
    c = Case("matmul")
    M, K, N, B = 24, 40, 16, 3
    for dt, tol in (("bf16", "frob:1e-2"), ("f16", "frob:1e-2"), ("f32", "frob:1e-5"), ("f64", "frob:1e-12")):
        a = c.add_input(Input(dt + ".a", dt, [M, K], randn(10, M * K), "float"))
        at = c.add_input(Input(dt + ".at", dt, [K, M], randn(11, M * K), "float"))
        b = c.add_input(Input(dt + ".b", dt, [K, N], randn(12, K * N), "float"))
        w = c.add_input(Input(dt + ".w", dt, [N, K], randn(13, N * K), "float"))
        ab = c.add_input(Input(dt + ".ab", dt, [B, M, K], randn(14, B * M * K), "float"))
        bb = c.add_input(Input(dt + ".bb", dt, [B, K, N], randn(15, B * K * N), "float"))
        bias = c.add_input(Input(dt + ".bias", dt, [N], randn(16, N), "float"))
        c.outputs.append(Output(dt + ".nn", "matmul", [a, b], dt, [M, N], tol))
        c.outputs.append(Output(dt + ".nt", "matmul", [a, w], dt, [M, N], tol, flags=["trans_b"]))
        c.outputs.append(Output(dt + ".tn", "matmul", [at, b], dt, [M, N], tol, flags=["trans_a"]))
        c.outputs.append(Output(dt + ".tt", "matmul", [at, w], dt, [M, N], tol, flags=["trans_a", "trans_b"]))
        c.outputs.append(Output(dt + ".batched", "matmul", [ab, bb], dt, [B, M, N], tol))
        c.outputs.append(Output(dt + ".bcast", "matmul", [ab, w], dt, [B, M, N], tol, flags=["trans_b"]))
        c.outputs.append(Output(dt + ".biased", "matmul", [a, w, bias], dt, [M, N], tol, flags=["trans_b"]))
        if dt != "f64":
            c.outputs.append(Output(dt + ".relu", "matmul", [a, w, bias], dt, [M, N], tol, attrs=[1],
                                    flags=["trans_b"]))
            c.outputs.append(Output(dt + ".gelu", "matmul", [a, w, bias], dt, [M, N], tol, attrs=[2],
                                    flags=["trans_b"]))
    return c


def all_cases():
    cases = [unary_case(op) for op in UNARY_FLOAT + ["bitwise_not", "logical_not"]]
    cases += [binary_case(op) for op in BINARY_NUM + ["pow", "atan2", "nextafter"] + BITWISE + COMPARE]
    cases += [shift_case(op) for op in SHIFTS]
    cases += [where_case(), convert_case()]
    cases += [reduce_case(op) for op in REDUCE]
    cases.append(scaled_mm_case())
    cases += gather_cases()
    cases.append(matmul_case())
    return cases


if __name__ == "__main__":
    for case in all_cases():
        n = sum(len(i.values) for i in case.inputs)
        print("%-22s %3d outputs %6d input elements" % (case.name, len(case.outputs), n))
