#!/usr/bin/env python3
"""compare.py - compare two safetensors files element by element, bit-exact
(NaN equals NaN, -0 differs from +0) or within a tolerance; or dump one.

    python3 tests/oracle/compare.py EXPECTED.safetensors ACTUAL.safetensors
            [--tol exact|ulp:N|rel:R,abs:A] [--show N] [--quiet]
    python3 tests/oracle/compare.py --dump FILE [--limit N]

Pure standard library (struct + json). The tensors compared are the ones
EXPECTED's __metadata__ lists under "outputs" (gen_golden.py writes it), else
every tensor of ACTUAL; each must be in both files with one dtype and shape.
The tolerance of output X is --tol if given, else EXPECTED's metadata
"tol.X", else exact:

  exact       the same bits; any NaN matches any NaN
  ulp:N       at most N units in the last place of the dtype apart
              (+0 and -0 are 0 apart)
  rel:R,abs:A |got - want| <= A + R * |want|
  frob:R      the whole tensor: ||got - want|| <= R * ||want|| (Frobenius norms;
              NaN where want has NaN, inf where it has inf)
  gemm:R      for scaled_mm: |got - want| <= R * |sa*sb| * sum_k |a[i,k]*b[k,j]|
              + one ulp of the dtype at |want| (operands from "args.X")
Under every tolerance NaN must meet NaN and an infinity the same infinity;
integers and bools are always exact. Mismatches print as
"  [i,j] want ... got ..." with the operands (metadata "args.X") at that
index when they have the output's shape. Exit status: 0 all match, 1 some
differ, 2 a file or usage error.
"""

import json
import math
import struct
import sys

# dtype -> (bytes, struct code of the raw bits, kind)
DTYPES = {
    "BOOL": (1, "B", "int"), "U8": (1, "B", "int"), "I8": (1, "b", "int"),
    "I16": (2, "h", "int"), "I32": (4, "i", "int"), "I64": (8, "q", "int"),
    "F16": (2, "H", "float"), "BF16": (2, "H", "float"), "F32": (4, "I", "float"),
    "F64": (8, "Q", "float"), "F8_E4M3": (1, "B", "float"), "F8_E5M2": (1, "B", "float"),
}
# float formats: exponent and mantissa bits, fn (no inf, all-ones is NaN)
FORMATS = {
    "F16": (5, 10, False), "BF16": (8, 7, False), "F32": (8, 23, False),
    "F64": (11, 52, False), "F8_E4M3": (4, 3, True), "F8_E5M2": (5, 2, False),
}


class Error(Exception):
    pass


class Tensor:
    def __init__(self, name, dtype, shape, raw):
        self.name, self.dtype, self.shape = name, dtype, shape
        size, code, self.kind = DTYPES[dtype]
        n = 1
        for d in shape:
            n *= d
        if len(raw) != n * size:
            raise Error("%s: %d bytes for %s%s" % (name, len(raw), dtype, shape))
        self.bits = list(struct.unpack("<%d%s" % (n, code), raw)) if n else []

    def value(self, i):
        """element i as a Python number (floats exactly)"""
        b = self.bits[i]
        if self.kind == "int":
            return b
        return decode(self.dtype, b)


def read(path):
    """(tensors by name, metadata) of a safetensors file"""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Error("%s: %s" % (path, e.strerror))
    if len(data) < 8:
        raise Error("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise Error("%s: header of %d bytes runs past the end" % (path, n))
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Error("%s: bad header: %s" % (path, e))
    meta = header.pop("__metadata__", None) or {}
    buf = data[8 + n:]
    tensors = {}
    for name, h in header.items():
        if h.get("dtype") not in DTYPES:
            raise Error("%s: %s: unknown dtype %r" % (path, name, h.get("dtype")))
        lo, hi = h["data_offsets"]
        if not 0 <= lo <= hi <= len(buf):
            raise Error("%s: %s: data offsets out of range" % (path, name))
        tensors[name] = Tensor(name, h["dtype"], list(h["shape"]), buf[lo:hi])
    return tensors, meta


def write(path, tensors, meta=None):
    """write a safetensors file: tensors maps name -> (dtype, shape, raw
    little-endian bytes); meta: string -> string"""
    header, offset = {}, 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    if meta:
        header["__metadata__"] = dict(meta)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(t[2] for t in tensors.values()))


# ---- float formats ----

def fields(dtype, b):
    e, m, fn = FORMATS[dtype]
    sign = b >> (e + m) & 1
    exp = b >> m & ((1 << e) - 1)
    man = b & ((1 << m) - 1)
    return sign, exp, man, e, m, fn


def isnan_bits(dtype, b):
    sign, exp, man, e, m, fn = fields(dtype, b)
    if fn:
        return exp == (1 << e) - 1 and man == (1 << m) - 1
    return exp == (1 << e) - 1 and man != 0


def isinf_bits(dtype, b):
    sign, exp, man, e, m, fn = fields(dtype, b)
    return not fn and exp == (1 << e) - 1 and man == 0


def decode(dtype, b):
    sign, exp, man, e, m, fn = fields(dtype, b)
    s = -1.0 if sign else 1.0
    if isnan_bits(dtype, b):
        return math.copysign(math.nan, s)
    if isinf_bits(dtype, b):
        return s * math.inf
    bias = (1 << (e - 1)) - 1
    if exp == 0:
        return s * math.ldexp(man, 1 - bias - m)
    return s * math.ldexp((1 << m) + man, exp - bias - m)


def ordered(dtype, b):
    """bits as a signed integer that orders like the values (+0 = -0 = 0)"""
    e, m, fn = FORMATS[dtype]
    mag = b & ((1 << (e + m)) - 1)
    return -mag if b >> (e + m) & 1 else mag


def fmt(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "-nan" if math.copysign(1, v) < 0 else "nan"
        if v == 0:
            return "-0" if math.copysign(1, v) < 0 else "0"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return "%.9g" % v if abs(v) >= 1e-4 and abs(v) < 1e9 else "%.9g (%s)" % (v, v.hex())
    return str(v)


# ---- tolerances ----

def parse_tol(s):
    """("exact",) | ("ulp", N) | ("rel", R, A) | ("gemm", R)"""
    try:
        if s == "exact":
            return ("exact",)
        if s.startswith("ulp:"):
            return ("ulp", int(s[4:]))
        if s.startswith("gemm:"):
            return ("gemm", float(s[5:]))
        if s.startswith("frob:"):
            return ("frob", float(s[5:]))
        if s.startswith("rel:"):
            parts = dict(p.split(":") for p in s.split(","))
            return ("rel", float(parts["rel"]), float(parts.get("abs", "0")))
    except (ValueError, KeyError):
        pass
    raise Error("bad tolerance %r (exact, ulp:N, rel:R,abs:A, frob:R or gemm:R)" % s)


def same(dtype, kind, want, got, tol, bound=0.0):
    """does element got match want (raw bits) under tol; bound: the gemm
    tolerance's allowance for this element"""
    if want == got or kind == "int":
        return want == got
    wn, gn = isnan_bits(dtype, want), isnan_bits(dtype, got)
    if wn or gn:
        return wn and gn
    if tol[0] == "exact":
        return False
    if isinf_bits(dtype, want) or isinf_bits(dtype, got):
        return False
    if tol[0] == "ulp":
        return abs(ordered(dtype, want) - ordered(dtype, got)) <= tol[1]
    w, g = decode(dtype, want), decode(dtype, got)
    if tol[0] == "gemm":
        return abs(g - w) <= bound
    return abs(g - w) <= tol[2] + tol[1] * abs(w)


def gemm_bounds(out, ops, r):
    """per element of out = scaled_mm(a, b, sa, sb[, bias]): r times
    |sa*sb| * sum_k |a[i,k]*b[k,j]| (the accumulation's error scale; Hopper's
    FP8 tensor cores accumulate with about 14 bits), plus one ulp of the
    output dtype at the result (one rounding apart)"""
    if len(ops) < 4 or len(out.shape) != 2 or ops[0].shape[1:] != ops[1].shape[:1]:
        raise Error("%s: gemm tolerance needs operands a (M,K), b (K,N), sa, sb" % out.name)
    a, b = ops[0], ops[1]
    (m, k), n = a.shape, b.shape[1]
    scale = abs(ops[2].value(0) * ops[3].value(0))
    av = [abs(a.value(i)) for i in range(m * k)]
    bv = [abs(b.value(i)) for i in range(k * n)]
    ulp = 2.0 ** -FORMATS[out.dtype][1]
    bounds = []
    for i in range(m):
        for j in range(n):
            s = sum(av[i * k + t] * bv[t * n + j] for t in range(k))
            bounds.append(r * scale * s + ulp * abs(out.value(i * n + j)))
    return bounds


def index_str(shape, i):
    idx = []
    for d in reversed(shape):
        idx.append(i % d if d else 0)
        i = i // d if d else 0
    return "[" + ",".join(str(x) for x in reversed(idx)) + "]"


def frobenius(name, want, got, r):
    """1 if the relative Frobenius error exceeds r (or a NaN or inf is not
    where want has one), else 0"""
    num = den = 0.0
    for i in range(len(want.bits)):
        w, g = want.value(i), got.value(i)
        if math.isnan(w) or math.isinf(w) or math.isnan(g) or math.isinf(g):
            if not (w == g or (math.isnan(w) and math.isnan(g))):
                print("  %s%s: want %s got %s" % (name, index_str(want.shape, i), fmt(w), fmt(g)))
                return 1
            continue
        num += (g - w) ** 2
        den += w * w
    err = math.sqrt(num) / (math.sqrt(den) or 1.0)
    if err > r:
        print("  %s: relative Frobenius error %.3g > %g" % (name, err, r))
        return 1
    return 0


def compare_tensor(name, want, got, tol, operands, show):
    """number of mismatches; prints the first show of them"""
    if want.dtype != got.dtype or want.shape != got.shape:
        print("  %s: expected %s%s, got %s%s" % (name, want.dtype, want.shape, got.dtype, got.shape))
        return max(1, len(want.bits))
    if tol[0] == "frob":
        return frobenius(name, want, got, tol[1])
    bounds = gemm_bounds(want, operands, tol[1]) if tol[0] == "gemm" else None
    if bounds is not None:
        operands = []
    bad = 0
    for i, (w, g) in enumerate(zip(want.bits, got.bits)):
        if same(want.dtype, want.kind, w, g, tol, bounds[i] if bounds else 0.0):
            continue
        bad += 1
        if bad <= show:
            ops = "".join(" %s=%s" % (o.name, fmt(o.value(i))) for o in operands)
            print("  %s%s:%s want %s got %s" % (name, index_str(want.shape, i), ops,
                                              fmt(want.value(i)), fmt(got.value(i))))
    return bad


def compare(expected, actual, tol_override=None, show=10, quiet=False):
    want, meta = read(expected)
    got, _ = read(actual)
    names = [n for n in meta.get("outputs", "").split(",") if n] or sorted(got)
    case = meta.get("case", expected)
    failed = 0
    for name in names:
        if name not in want:
            raise Error("%s: no tensor %r" % (expected, name))
        if name not in got:
            print("%s: %s: missing from %s" % (case, name, actual))
            failed += 1
            continue
        tol_s = tol_override or meta.get("tol." + name, "exact")
        tol = parse_tol(tol_s)
        args = [want[a] for a in meta.get("args." + name, "").split(",") if a in want]
        operands = args if tol[0] == "gemm" else [o for o in args if o.shape == want[name].shape]
        bad = compare_tensor(name, want[name], got[name], tol, operands, show)
        if bad:
            print("%s: %s: %d of %d elements differ (%s)" % (case, name, bad, len(want[name].bits), tol_s))
            failed += 1
        elif not quiet:
            print("%s: %s: %d elements match (%s)" % (case, name, len(want[name].bits), tol_s))
    print("%s %s: %d of %d outputs match" % ("PASS" if not failed else "FAIL", case,
                                              len(names) - failed, len(names)))
    return 1 if failed else 0


def dump(path, limit):
    tensors, meta = read(path)
    for k in sorted(meta):
        print("meta %s = %s" % (k, meta[k]))
    for name in sorted(tensors):
        t = tensors[name]
        n = len(t.bits)
        vals = [fmt(t.value(i)) for i in range(min(n, limit))]
        if t.dtype in FORMATS and t.dtype.startswith("F8"):
            vals = ["%s(0x%02x)" % (v, t.bits[i]) for i, v in enumerate(vals)]
        print("%s %s%s: %s%s" % (name, t.dtype, t.shape, " ".join(vals), " ..." if n > limit else ""))
    return 0


def main(argv):
    args, opts = [], {}
    it = iter(argv)
    for a in it:
        if a in ("--tol", "--show", "--limit"):
            opts[a] = next(it, None)
            if opts[a] is None:
                raise Error("%s needs a value" % a)
        elif a in ("--dump", "--quiet"):
            opts[a] = True
        elif a.startswith("-"):
            raise Error("unknown option %s\n%s" % (a, __doc__))
        else:
            args.append(a)
    if opts.get("--dump"):
        if len(args) != 1:
            raise Error("--dump takes one file")
        return dump(args[0], int(opts.get("--limit") or 64))
    if len(args) != 2:
        raise Error("usage: compare.py EXPECTED ACTUAL [--tol T] [--show N] [--quiet] | --dump FILE")
    if opts.get("--tol"):
        parse_tol(opts["--tol"])
    return compare(args[0], args[1], opts.get("--tol"), int(opts.get("--show") or 10),
                   bool(opts.get("--quiet")))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Error as e:
        print("compare.py: %s" % e, file=sys.stderr)
        sys.exit(2)
