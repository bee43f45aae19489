#!/usr/bin/env python3
"""Write a random, valid fp8cc IR program: random shapes and a random DAG of
elementwise ops (fma too), conversions (fp8 included), reductions, broadcasts,
transposes, reshapes, slices, cat and scaled_mm, some values returned.

usage: gen_ir.py SEED [--gpu] > prog.ir

tests/fuzz/run.sh compiles such programs at -O0 and -O2 and checks that the
interpreter gives the same bits, that PTX comes out and that ptxas takes it.
--gpu writes the programs that tests/gpu/run.sh runs on the GPU against the
interpreter bit for bit: flip, pad, isfinite, signbit and nextafter too,
take and gather at indices the program computes (always in range),
i32/i64 arithmetic, bitcasts, and row-kernel shapes (a reduction of the
last dim broadcast back onto its rows: softmax, RMSNorm, LayerNorm-like),
and only what fp8cc promises exact (no exp and tanh,
which are libdevice's against the host's libm; no sum of f64, whose last
bits are the order's; no scaled_mm, cuBLASLt's order), and larger dims
(up to 1000 and 4099, at most 2^17 elements a tensor), so that kernels take
several blocks, phases cross the grid barrier and tiles are partial.
Standard library only."""
import random
import re
import sys

FLOATS = ["f32", "bf16", "f16", "f64"]
UNARY = ["abs", "neg", "reciprocal", "sqrt", "floor", "ceil", "round", "trunc", "sign", "exp", "tanh"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
INTS = ["i32", "i64"]
# integer ops that are defined for every operand (ints wrap, shifts past the
# width are c10's); div, fmod and remainder only by a divisor never 0
INT_UNARY = ["abs", "neg", "sign", "bitwise_not"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
              "bitwise_left_shift", "bitwise_right_shift"]
# bitcasts between dtypes of one width
BITCAST = {"f32": ["i32"], "f64": ["i64"], "f16": ["i16", "bf16"], "bf16": ["i16", "f16"]}

LIMIT = 1 << 17         # elements a tensor of a --gpu program holds at most


class Prog:
    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.vals = []          # (name, dtype, shape)
        self.n = 0
        self.gpu = False
        self.space = None       # a rows program's (..., C)

    def new(self, op, dtype, shape):
        name = f"v{self.n}"
        self.n += 1
        self.lines.append(f"  %{name} = {op} : {dtype}[{','.join(map(str, shape))}]")
        self.vals.append((name, dtype, tuple(shape)))
        return name

    def pick(self, pred=lambda v: True):
        cands = [v for v in self.vals if pred(v)]
        return self.rng.choice(cands) if cands else None


def step(p):
    r = p.rng
    unary = [u for u in UNARY if u not in ("exp", "tanh")] if p.gpu else UNARY
    kind = r.random()
    v = p.pick(lambda v: v[1] in FLOATS)
    if v is None:
        return
    name, dt, shape = v
    if p.gpu and r.random() < 0.3:
        gpu_step(p, name, dt, shape)
    elif kind < 0.25:
        p.new(f"{r.choice(unary)} %{name}", dt, shape)
    elif kind < 0.45:
        w = p.pick(lambda u: u[1] == dt and (u[2] == shape or u[2] == ()))
        if w is None or (w[2] == () and shape == ()):
            w = (p.new(f"full {r.choice([0.5, -448, 1e-12, 3, 2.5])}", dt, ()), dt, ())
        combine(p, name, w[0], dt, shape)
    elif kind < 0.6:
        to = r.choice(FLOATS + ["f8e4m3fn", "f8e5m2", "i32"])
        c = p.new(f"convert_element_type %{name}", to, shape)
        if to.startswith("f8"):
            p.new(f"convert_element_type %{c}", r.choice(FLOATS), shape)
    elif kind < 0.72 and shape:
        dims = sorted(r.sample(range(len(shape)), r.randint(1, len(shape))))
        rest = [d for i, d in enumerate(shape) if i not in dims]
        ops = ['amax', 'amin'] if p.gpu and dt == "f64" else ['amax', 'amin', 'sum']
        red = p.new(f"{r.choice(ops)} %{name} [{','.join(map(str, dims))}]", dt, rest)
        if rest and r.random() < 0.7:   # broadcast it back and use it: a later phase
            kept = [i for i in range(len(shape)) if i not in dims]
            b = p.new(f"broadcast_in_dim %{red} [{','.join(map(str, kept))}]", dt, shape)
            p.new(f"mul %{name}, %{b}", dt, shape)
        elif not rest and r.random() < 0.7:
            b = p.new(f"broadcast_in_dim %{red} []", dt, shape)
            p.new(f"div %{name}, %{b}", dt, shape)
    elif kind < 0.8 and len(shape) >= 2:
        perm = list(range(len(shape)))
        r.shuffle(perm)
        p.new(f"transpose %{name} [{','.join(map(str, perm))}]", dt, [shape[i] for i in perm])
    elif kind < 0.85 and shape:
        p.new(f"reshape %{name}", dt, [numel(shape)])
    elif kind < 0.9 and shape:
        lo = [r.randint(0, d - 1) for d in shape]
        hi = [r.randint(l + 1, d) for l, d in zip(lo, shape)]
        st = [r.randint(1, 3) for _ in shape]
        out = [(h - l - 1) // s + 1 for l, h, s in zip(lo, hi, st)]
        p.new(f"slice %{name} [{','.join(map(str, lo + hi + st))}]", dt, out)
    elif kind < 0.94 and shape:
        w = p.pick(lambda u: u[1] == dt and len(u[2]) == len(shape) and u[2][1:] == shape[1:])
        if w and not (p.gpu and numel(shape) + numel(w[2]) > LIMIT):
            p.new(f"cat %{name}, %{w[0]} [0]", dt, [shape[0] + w[2][0]] + list(shape[1:]))
    elif len(shape) == 2 and shape[1] % 16 == 0 and not p.gpu:   # cuBLASLt: K, N multiples of 16
        m, k = shape
        n = r.choice([16, 32])
        a = p.new(f"convert_element_type %{name}", "f8e4m3fn", [m, k])
        wv = p.new(f"full 0.5", "f32", [n, k])
        w8 = p.new(f"convert_element_type %{wv}", r.choice(["f8e4m3fn", "f8e5m2"]), [n, k])
        bt = p.new(f"transpose %{w8} [1,0]", p.vals[-1][1], [k, n])
        s = p.new("full 0.25", "f32", [])
        p.new(f"scaled_mm %{a}, %{bt}, %{s}, %{s}{' fast_accum' if r.random() < 0.5 else ''}",
              r.choice(["bf16", "f32"]), [m, n])


def combine(p, name, other, dt, shape):
    """name with other, in either order: a compare and its where, an fma
    (f32, f64) or a binary op"""
    r = p.rng
    args = [name, other] if r.random() < 0.5 else [other, name]
    if r.random() < 0.3:
        c = p.new(f"{r.choice(COMPARE)} %{args[0]}, %{args[1]}", "b8", shape)
        p.new(f"where %{c}, %{args[0]}, %{args[1]}", dt, shape)
    elif dt in ("f32", "f64") and r.random() < 0.15:
        p.new(f"fma %{args[0]}, %{args[1]}, %{name}", dt, shape)
    else:
        p.new(f"{r.choice(BINARY)} %{args[0]}, %{args[1]}", dt, shape)


def gpu_step(p, name, dt, shape):
    """the exact ops only --gpu programs hold: index arithmetic (flip, pad,
    take, gather), the predicates, nextafter, integers, bitcasts, rows"""
    r = p.rng
    kind = r.random()
    if kind < 0.12 and shape:
        dims = sorted(r.sample(range(len(shape)), r.randint(1, len(shape))))
        p.new(f"flip %{name} [{','.join(map(str, dims))}]", dt, shape)
    elif kind < 0.24 and shape:
        lo = [r.randint(-1 if d > 1 else 0, 2) for d in shape]
        hi = [r.randint(-1 if d > 2 else 0, 2) for d in shape]
        it = [r.randint(0, 1) for _ in shape]
        out = [d + (d - 1) * i + l + h for d, l, h, i in zip(shape, lo, hi, it)]
        if numel(out) <= LIMIT:
            z = p.new(f"full {r.choice([0, -1.5, 448])}", dt, ())
            p.new(f"pad %{name}, %{z} [{','.join(map(str, lo + hi + it))}]", dt, out)
    elif kind < 0.4:
        predicate(p, name, dt, shape)
    elif kind < 0.62 and shape:
        take_gather(p, name, dt, shape)
    elif kind < 0.8:
        int_step(p, name, dt, shape)
    elif kind < 0.88:
        bitcast_step(p, name, dt, shape)
    else:
        rows_step(p, name, dt, shape)


def predicate(p, name, dt, shape):
    """isfinite or signbit, selecting name or 0; or nextafter"""
    r = p.rng
    if r.random() < 0.35:
        w = p.pick(lambda u: u[1] == dt and u[2] == shape)
        p.new(f"nextafter %{name}, %{w[0]}", dt, shape)
        return
    # a NaN's sign is not defined (docs/design.md, "Numbers"): signbit
    # of a computed value sees it with its NaNs made 0
    x = name
    pred = r.choice(['isfinite', 'signbit'])
    if pred == 'signbit' and not name.startswith("p"):
        x = no_nans(p, name, dt, shape)
    c = p.new(f"{pred} %{x}", "b8", shape)
    z = p.new("full 0", dt, ())
    p.new(f"where %{c}, %{name}, %{z}", dt, shape)


def no_nans(p, name, dt, shape):
    """name with its NaNs made 0: what a NaN's sign and payload would show
    (signbit, bitcast, an fp8 NaN's sign) is not part of a result"""
    z = p.new("full 0", dt, ())
    nan = p.new(f"ne %{name}, %{name}", "b8", shape)
    return p.new(f"where %{nan}, %{z}, %{name}", dt, shape)


def to_int(p, name, dt, shape):
    """an i32 or i64 value of name's shape: name itself if it is one, else
    name converted (NaN gives 0 or INT64_MIN, out of range saturates)"""
    if dt in INTS:
        return name, dt
    it = p.rng.choice(INTS)
    return p.new(f"convert_element_type %{name}", it, shape), it


def index(p, name, dt, shape, n):
    """an integer value of name's shape whose every element is in [0, n)
    whatever the input draw: a float's remainder by n clamped (a tiny
    negative x gives remainder n in float, NaN converts to INT64_MIN), an
    integer's remainder by n (the divisor's sign: >= 0), its clamp, or its
    low bits for n a power of two. An index out of range is the input's
    error (docs/ir.md, "Indices"), never in a valid program."""
    r = p.rng
    how = r.random()
    if how < 0.25 and dt not in INTS:
        nf = p.new(f"full {n}", dt, ())
        name = p.new(f"remainder %{name}, %{nf}", dt, shape)
        how = 0.8       # clamped below
    i, it = to_int(p, name, dt, shape)
    if how < 0.55:
        ni = p.new(f"full {n}", it, ())
        return p.new(f"remainder %{i}, %{ni}", it, shape), it
    if how < 0.7 and n & (n - 1) == 0:
        m = p.new(f"full {n - 1}", it, ())
        return p.new(f"bitwise_and %{i}, %{m}", it, shape), it
    lo, hi = p.new("full 0", it, ()), p.new(f"full {n - 1}", it, ())
    i = p.new(f"maximum %{i}, %{lo}", it, shape)
    return p.new(f"minimum %{i}, %{hi}", it, shape), it


def iota(p, n):
    """an integer iota of n elements with a start and step of either sign"""
    it = p.rng.choice(INTS)
    return p.new(f"iota [{p.rng.randint(-50, 50)},{p.rng.choice([1, 1, 2, 3, -1, -7])}]", it, [n]), it


def take_gather(p, name, dt, shape):
    """take (a rank-0 or 1-d index) or gather (an index of name's rank) of
    name along a random dim, at indices computed from a float value of the
    program or an iota; sometimes of a value of another dtype (ints, b8,
    fp8: other element sizes to move)"""
    r = p.rng
    if r.random() < 0.3:
        v = p.pick(lambda u: u[1] not in FLOATS and u[2])
        if v:
            name, dt, shape = v
    d = r.randrange(len(shape))
    n = shape[d]
    if r.random() < 0.5:       # take: the index's length replaces dim d
        room = max(1, LIMIT // (numel(shape) // n))
        src = p.pick(lambda u: len(u[2]) <= 1 and numel(u[2]) <= room and u[1] in FLOATS + INTS)
        if src is None or r.random() < 0.3:
            k = r.randint(1, min(room, 300))
            src = (*iota(p, k), (k,))
        ix, it = index(p, *src, n)
        out = list(shape)
        out[d] = numel(src[2])
        p.new(f"take %{name}, %{ix} [{d}]", dt, out)
        return
    # gather: the index's dims other than d at most name's, any along d
    src = p.pick(lambda u: u[1] in FLOATS + INTS and len(u[2]) == len(shape)
                 and all(a <= b for i, (a, b) in enumerate(zip(u[2], shape)) if i != d))
    if src is None or r.random() < 0.25:      # an iota along d, broadcast
        k = r.randint(1, max(1, min(2 * n, LIMIT // (numel(shape) // n))))
        io, it = iota(p, k)
        io, it = index(p, io, it, [k], n)
        ishape = list(shape)
        ishape[d] = k
        ix = p.new(f"broadcast_in_dim %{io} [{d}]", it, ishape)
    else:
        ix, it = index(p, *src, n)
        ishape = src[2]
    p.new(f"gather %{name}, %{ix} [{d}]", dt, ishape)


def int_step(p, name, dt, shape):
    """a few i32 and i64 ops in a row on an integer value of the program, or
    on name converted: ops defined for every operand (ints wrap), division
    by a divisor never 0, comparisons and where, reductions, conversions"""
    r = p.rng
    iv = p.pick(lambda u: u[1] in INTS)
    if iv is None or r.random() < 0.4:
        iv = (*to_int(p, name, dt, shape), tuple(shape))
    x, it, shape = iv

    def other():        # an integer operand of x's dtype: same shape or rank 0
        w = p.pick(lambda u: u[1] == it and (u[2] == shape or u[2] == ()) and u[0] != x)
        if w is None or r.random() < 0.3:
            big = [(1 << 31) - 1, -(1 << 31)] if it == "i32" else [1 << 40, -(1 << 63)]
            return p.new(f"full {r.choice([0, 1, -1, 7, -300, 65535] + big)}", it, ())
        return w[0]

    for _ in range(r.randint(1, 3)):
        kind = r.random()
        if kind < 0.15:
            x = p.new(f"{r.choice(INT_UNARY)} %{x}", it, shape)
        elif kind < 0.45:
            a, b = (x, other()) if r.random() < 0.7 else (other(), x)
            x = p.new(f"{r.choice(INT_BINARY)} %{a}, %{b}", it, shape)
        elif kind < 0.6:
            # a divisor in [1, K] computed (remainder by K > 0 is in [0, K)),
            # or a constant other than 0 and -1 (INT_MIN / -1 overflows)
            if r.random() < 0.5 and shape:
                k = p.new(f"full {r.choice([7, 256, 100000])}", it, ())
                w = p.pick(lambda u: u[1] == it and u[2] == shape)
                dv = p.new(f"remainder %{w[0]}, %{k}", it, shape)
                one = p.new("full 1", it, ())
                dv = p.new(f"add %{dv}, %{one}", it, shape)
            else:
                dv = p.new(f"full {r.choice([3, -7, 2, 1000, -65536])}", it, ())
            x = p.new(f"{r.choice(['div', 'fmod', 'remainder'])} %{x}, %{dv}", it, shape)
        elif kind < 0.72:
            w = other()
            c = p.new(f"{r.choice(COMPARE)} %{x}, %{w}", "b8", shape)
            x = p.new(f"where %{c}, %{x}, %{w}", it, shape)
        elif kind < 0.8 and shape and (not p.space or shape == p.space):
            # integer sums wrap: the same bits in any order
            dims = sorted(r.sample(range(len(shape)), r.randint(1, len(shape))))
            if p.space:
                dims = [len(shape) - 1]
            shape = tuple(s for i, s in enumerate(shape) if i not in dims)
            x = p.new(f"{r.choice(['amax', 'amin', 'sum'])} %{x} [{','.join(map(str, dims))}]", it, shape)
        elif kind < 0.9:
            # back to floats (rounded through f32 for the narrow ones), so
            # the float ops use it
            p.new(f"convert_element_type %{x}", r.choice(FLOATS), shape)
            return
        else:
            # to another width: wraps (i16, i8 and u8 keep the low bits)
            to = r.choice([t for t in INTS + ["i16", "i8", "u8"] if t != it])
            x = p.new(f"convert_element_type %{x}", to, shape)
            if to not in INTS:      # and back to those the ops above take
                to = r.choice(INTS)
                x = p.new(f"convert_element_type %{x}", to, shape)
            it = to


def bitcast_step(p, name, dt, shape):
    """a float's bits as an integer (or the other 16-bit float), its NaNs
    made 0 first (a NaN's payload and sign are not part of a result), then
    perhaps some integer arithmetic and back: any bits make a float, NaNs
    included, which compare as any NaN; or an fp8's bits as u8 or i8"""
    r = p.rng
    x = no_nans(p, name, dt, shape)
    if r.random() < 0.25:
        # fp8 conversions keep the sign of a NaN, so NaNs made 0 before;
        # e4m3fn overflows to NaN with the value's sign: defined
        f8 = r.choice(["f8e4m3fn", "f8e5m2"])
        q = p.new(f"convert_element_type %{x}", f8, shape)
        to = r.choice(["u8", "i8"])
        b = p.new(f"bitcast %{q}", to, shape)
        if r.random() < 0.5:
            m = p.new(f"full {r.choice([0x80, 0x7f, 0x0f])}", to, ())
            b = p.new(f"bitwise_xor %{b}, %{m}", to, shape)
            p.new(f"bitcast %{b}", f8, shape)
        p.new(f"convert_element_type %{b}", r.choice(INTS), shape)
        return
    to = r.choice(BITCAST[dt])
    b = p.new(f"bitcast %{x}", to, shape)
    if to in FLOATS or r.random() < 0.4:
        return
    if r.random() < 0.5:
        m = p.new(f"full {r.choice([1, -1, 1 << 10, 0x7fff])}", to, ())
        b = p.new(f"{r.choice(['add', 'bitwise_xor', 'bitwise_and', 'sub'])} %{b}, %{m}", to, shape)
    p.new(f"bitcast %{b}", dt, shape)
    if to == "i16":     # to the integers the index and int ops use
        p.new(f"convert_element_type %{b}", r.choice(INTS), shape)


def rows_step(p, name, dt, shape):
    """the backend's row kernels (backend/rows.c): reductions of the last
    dim of a 2-d value (or one of higher rank, or reshaped to 2-d), per row
    values broadcast back onto their rows (through the keepdim shape (..., 1)
    sometimes) and combined with the value: softmax's x - max, RMSNorm's
    x * 1/sqrt(mean(x^2) + eps), LayerNorm's centering. No sum of f64
    (its last bits are the order's) and no exp or rsqrt (libdevice's).
    A rows program's reductions are of name, the rows' space."""
    r = p.rng
    v = (name, dt, shape) if p.space else p.pick(lambda u: u[1] in FLOATS and len(u[2]) >= 2)
    if v is None or (len(v[2]) > 2 and r.random() < 0.5 and not p.space):
        if v is None and not shape:
            return
        v = v or (name, dt, tuple(shape))
        x0, dt, shape = v
        shape = (numel(shape[:-1]), shape[-1]) if len(shape) > 1 else (1, shape[0])
        x = p.new(f"reshape %{x0}", dt, shape)
    else:
        x, dt, shape = v
    c = shape[-1]
    lead = list(range(len(shape) - 1))
    sums = ["amax", "amin"] if dt == "f64" else ["sum"]

    def back(red):     # the per-row value broadcast over its row
        if r.random() < 0.4:
            red = p.new(f"broadcast_in_dim %{red} [{','.join(map(str, lead))}]", dt, list(shape[:-1]) + [1])
            return p.new(f"broadcast_in_dim %{red} [{','.join(map(str, lead + [len(lead)]))}]", dt, shape)
        return p.new(f"broadcast_in_dim %{red} [{','.join(map(str, lead))}]", dt, shape)

    last = f"[{len(shape) - 1}]"
    kind = r.random()
    if kind < 0.35:     # softmax without its exp: (x - max) / sum(|x - max|)
        m = p.new(f"{r.choice(['amax', 'amin'])} %{x} {last}", dt, shape[:-1])
        d = p.new(f"sub %{x}, %{back(m)}", dt, shape)
        a = p.new(f"abs %{d}", dt, shape)
        s = p.new(f"{r.choice(sums)} %{a} {last}", dt, shape[:-1])
        p.new(f"div %{d}, %{back(s)}", dt, shape)
    elif kind < 0.7:    # RMSNorm, LayerNorm with its mean first
        if r.random() < 0.4 and dt != "f64":
            s = p.new(f"sum %{x} {last}", dt, shape[:-1])
            inv = p.new(f"full {1 / c!r}", dt, ())
            mean = p.new(f"mul %{s}, %{inv}", dt, shape[:-1])
            x = p.new(f"sub %{x}, %{back(mean)}", dt, shape)
        sq = p.new(f"mul %{x}, %{x}", dt, shape)
        s = p.new(f"{r.choice(sums)} %{sq} {last}", dt, shape[:-1])
        inv = p.new(f"full {1 / c!r}", dt, ())
        ms = p.new(f"mul %{s}, %{inv}", dt, shape[:-1])
        eps = p.new(f"full {r.choice([1e-6, 1e-5])}", dt, ())
        ms = p.new(f"add %{ms}, %{eps}", dt, shape[:-1])
        rs = p.new(f"sqrt %{ms}", dt, shape[:-1])
        rs = p.new(f"reciprocal %{rs}", dt, shape[:-1])
        y = p.new(f"mul %{x}, %{back(rs)}", dt, shape)
        w = p.pick(lambda u: u[1] == dt and u[2] == (c,))
        if w:           # a weight along the row
            wb = p.new(f"broadcast_in_dim %{w[0]} [{len(shape) - 1}]", dt, shape)
            p.new(f"mul %{y}, %{wb}", dt, shape)
    else:               # any reduction of the row, combined with the value
        ops = ["amax", "amin"] + (["sum"] if dt != "f64" else [])
        m = p.new(f"{r.choice(ops)} %{x} {last}", dt, shape[:-1])
        args = [x, back(m)] if r.random() < 0.5 else [back(m), x]
        p.new(f"{r.choice(BINARY)} %{args[0]}, %{args[1]}", dt, shape)


def rows_program(p):
    """the parameters and body of a program all of whose work a row kernel
    can run (backend/rows.c): one space (..., C) with C a multiple of 16
    bytes' elements, elementwise work over it and per row, reductions of
    its last dim broadcast back; a weight (C) along the rows and a per-row
    value may come in. Returns the parameters."""
    r = p.rng
    c = r.choice([16, 32, 48, 1000, 4096])
    lead = r.choice([[1], [3], [16], [129], [257], [1000], [3, 48], [2, 16, 5]])
    while numel(lead) * c > LIMIT:
        lead = lead[:-1] + [r.choice([1, 3, 16])]
    p.space = tuple(lead + [c])
    shapes = [p.space] * r.randint(1, 3) + [(c,)] * (r.random() < 0.5) + [p.space[:-1]] * (r.random() < 0.3)
    params = []
    for i, shape in enumerate(shapes):
        dt = r.choice(FLOATS)
        params.append(f"%p{i}: {dt}[{','.join(map(str, shape))}]")
        p.vals.append((f"p{i}", dt, shape))
    for _ in range(r.randint(3, 25)):
        rows_body(p)
    return params


def rowwise(p, shape):
    """a shape of the rows' space or per row (with or without keepdim's 1)"""
    return shape in (p.space, p.space[:-1], p.space[:-1] + (1,))


def rows_body(p):
    """one step of a rows program: a reduction of the space's last dim (or
    several: softmax, RMSNorm, LayerNorm), or elementwise work over the
    space or per row, with operands of its shape, rank 0, or broadcast
    (the weight along the rows, a per-row value over them)"""
    r = p.rng
    sp = p.space
    name, dt, shape = p.pick(lambda u: u[1] in FLOATS and u[2] == sp)
    kind = r.random()
    if kind < 0.3:
        rows_step(p, name, dt, shape)
        return
    if r.random() < 0.3:        # the elementwise work per row instead
        v = p.pick(lambda u: u[1] in FLOATS and u[2] != sp and rowwise(p, u[2]))
        if v:
            name, dt, shape = v
    if kind < 0.45:
        int_step(p, name, dt, shape)
    elif kind < 0.55:
        # of a parameter: the row kernels take a bitcast for no elementwise
        # op, so one of a reduction's result would make the kernel phases
        v = p.pick(lambda u: u[0].startswith("p") and u[1] in FLOATS and rowwise(p, u[2]))
        bitcast_step(p, *v)
    elif kind < 0.65:
        predicate(p, name, dt, shape)
    elif kind < 0.75:
        p.new(f"{r.choice([u for u in UNARY if u not in ('exp', 'tanh')])} %{name}", dt, shape)
    elif kind < 0.85:
        to = r.choice(FLOATS + ["f8e4m3fn", "f8e5m2"])
        c = p.new(f"convert_element_type %{name}", to, shape)
        if to.startswith("f8"):
            p.new(f"convert_element_type %{c}", r.choice(FLOATS), shape)
    else:
        w = p.pick(lambda u: u[1] == dt and (u[2] == shape or u[2] == ()) and u[0] != name)
        b = r.random()
        if shape == sp and b < 0.4:     # a weight or a per-row value, broadcast
            v = p.pick(lambda u: u[1] == dt and u[2] != sp and (rowwise(p, u[2]) or u[2] == sp[-1:]))
            if v:
                at = [len(sp) - 1] if v[2] == sp[-1:] else list(range(len(v[2])))
                w = (p.new(f"broadcast_in_dim %{v[0]} [{','.join(map(str, at))}]", dt, sp),)
        if w is None:
            w = (p.new(f"full {r.choice([0.5, -448, 1e-12, 3, 2.5])}", dt, ()),)
        combine(p, name, w[0], dt, shape)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    rng = random.Random(seed)
    p = Prog(rng)
    p.gpu = "--gpu" in sys.argv[2:]
    dims = [1, 3, 16, 32, 48] + ([129, 257, 1000, 4099] if p.gpu else [])
    params = []
    if p.gpu and rng.random() < 0.3:
        params = rows_program(p)
    else:
        for i in range(rng.randint(1, 3)):
            rank = rng.randint(0, 3)
            shape = [rng.choice(dims) for _ in range(rank)]
            while p.gpu and numel(shape) > LIMIT:
                shape = [rng.choice(dims) for _ in range(rank)]
            dt = rng.choice(FLOATS)
            params.append(f"%p{i}: {dt}[{','.join(map(str, shape))}]")
            p.vals.append((f"p{i}", dt, tuple(shape)))
        for _ in range(rng.randint(3, 25)):
            step(p)
    made = [v for v in p.vals if not v[0].startswith("p")]
    if not made:
        made = [(p.new(f"abs %{p.vals[0][0]}", p.vals[0][1], p.vals[0][2]),)]
    if p.gpu:
        # the values no instruction reads, so that dead-code elimination
        # leaves (nearly) every instruction for the GPU to run
        used = set(re.findall(r"%(\w+)", " ".join(l.split(" = ", 1)[1] for l in p.lines)))
        leaves = [v for v in made if v[0] not in used and (not p.space or rowwise(p, v[2]))]
        outs = sorted(rng.sample(leaves, min(len(leaves), 12)), key=made.index)
    else:
        outs = rng.sample(made, min(len(made), rng.randint(1, 4)))
    print(f"func @fuzz{seed}({', '.join(params)}) {{")
    print("\n".join(p.lines))
    print(f"  return {', '.join('%' + v[0] for v in outs)}")
    print("}")


if __name__ == "__main__":
    main()
