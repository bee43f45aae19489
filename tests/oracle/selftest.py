#!/usr/bin/env python3
"""selftest.py - check the oracle's machinery without torch or a GPU.

    python3 tests/oracle/selftest.py path/to/fp8cc

Writes stand-in golden files for the ops whose results Python's own IEEE
double arithmetic gives exactly (add, sub, mul, div, comparisons, abs, neg,
where, and conversions among f64, f32, the integers and bool; f32 results
are double results rounded once, which is exact for + - * /), in f32, f64,
the integers and bool. Then runs the real pipeline on them - make_ir.py
--golden, fp8cc --interpret, compare.py - and expects every output to
match; then corrupts one element and expects compare.py to catch it; and
checks compare.py's tolerances. Exit status 0 when all of that holds.
This is a test of gen_golden.py's file layout, make_ir.py and compare.py
(and of the interpreter on these ops), not a replacement for the goldens.
"""

import math
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import cases  # noqa: E402
import compare  # noqa: E402

DTS = ["f32", "f64", "u8", "i8", "i16", "i32", "i64", "b8"]
PACK = {"f32": "f", "f64": "d", "u8": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "b8": "B"}


def wrap(v, dt):
    if dt == "b8":
        return 1 if v else 0
    lo, hi = cases.INT_RANGE[dt]
    return (v - lo) % (hi - lo + 1) + lo


def rnd(x, dt):
    """x as a value of dtype dt"""
    if dt == "f32":
        return cases.f32_round(x)
    if dt == "f64":
        return float(x)
    return wrap(int(x), dt)


def raw(dt, vals):
    return struct.pack("<%d%s" % (len(vals), PACK[dt]), *vals)


def ieee_div(a, b):
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def int_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
}
COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
           "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def result(out, args, inputs):
    """the values of out, or None if Python cannot give them exactly"""
    xs = [[rnd(v, inputs[a].dtype) for v in inputs[a].values] for a in args]
    dt = out.dtype
    if out.op in BINARY:
        return [rnd(BINARY[out.op](a, b), dt) for a, b in zip(*xs)]
    if out.op == "div":
        f = ieee_div if dt in ("f32", "f64") else int_div
        return [rnd(f(a, b), dt) for a, b in zip(*xs)]
    if out.op in COMPARE:
        return [1 if COMPARE[out.op](a, b) else 0 for a, b in zip(*xs)]
    if out.op == "abs":
        return [rnd(abs(a), dt) for a in xs[0]]
    if out.op == "neg":
        return [rnd(-a, dt) for a in xs[0]]
    if out.op == "where":
        return [a if c else b for c, a, b in zip(*xs)]
    if out.op == "convert_element_type":
        src = inputs[args[0]].dtype
        if dt == "b8":
            return [1 if v != 0 else 0 for v in xs[0]]
        if src in ("f32", "f64") and dt in ("f32", "f64"):
            return [rnd(v, dt) for v in xs[0]]
        if src not in ("f32", "f64") and (dt not in ("f32", "f64") or src in ("b8", "u8", "i8", "i16", "i32")):
            return [rnd(v, dt) if dt in ("f32", "f64") else wrap(v, dt) for v in xs[0]]
    return None


def fake_golden(case, path):
    inputs = {i.name: i for i in case.inputs}
    tensors, meta, outs = {}, {"case": case.name}, []
    for out in case.outputs:
        if out.dtype not in DTS or any(inputs[a].dtype not in DTS for a in out.args):
            continue
        vals = result(out, out.args, inputs)
        if vals is None:
            continue
        for a in out.args:
            i = inputs[a]
            tensors[a] = (cases.ST[i.dtype], i.shape, raw(i.dtype, [rnd(v, i.dtype) for v in i.values]))
        tensors[out.name] = (cases.ST[out.dtype], out.shape, raw(out.dtype, vals))
        meta["tol." + out.name] = "exact"
        meta["args." + out.name] = ",".join(out.args)
        outs.append(out.name)
    meta["outputs"] = ",".join(outs)
    compare.write(path, tensors, meta)
    return outs


def check_tolerances():
    one = struct.unpack("<I", struct.pack("<f", 1.0))[0]
    t = compare.parse_tol
    checks = [
        (compare.same("F32", "float", one, one + 1, t("ulp:1")), True),
        (compare.same("F32", "float", one, one + 2, t("ulp:1")), False),
        (compare.same("F32", "float", one, one + 1, t("exact")), False),
        (compare.same("F32", "float", 0x7FC00000, 0xFFC00001, t("exact")), True),   # NaN == NaN
        (compare.same("F32", "float", 0x00000000, 0x80000000, t("exact")), False),  # +0 != -0
        (compare.same("F32", "float", 0x00000000, 0x80000000, t("ulp:1")), True),
        (compare.same("F32", "float", 0x7F7FFFFF, 0x7F800000, t("ulp:4")), False),  # inf is never near
        (compare.same("F32", "float", one, 0x7FC00000, t("rel:1,abs:1")), False),
        (compare.same("BF16", "float", 0x3F80, 0x3F81, t("rel:8e-3,abs:0")), True),
        (compare.same("F8_E4M3", "float", 0x7F, 0xFF, t("exact")), True),          # both NaN
        (compare.same("F8_E4M3", "float", 0x7E, 0x7F, t("ulp:1")), False),         # 448 vs NaN
        (compare.same("I32", "int", 5, 6, t("ulp:9")), False),
        (compare.same("F32", "float", one, one + 1000, t("gemm:1"), bound=1e-3), True),
        (compare.same("F32", "float", one, one + 100000, t("gemm:1"), bound=1e-3), False),
    ]
    bad = [i for i, (got, want) in enumerate(checks) if got != want]
    for i in bad:
        print("selftest: tolerance check %d gave %s" % (i, checks[i][0]))
    return not bad


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: selftest.py FP8CC")
    fp8cc = sys.argv[1]
    ok = check_tolerances()
    names = {"add", "sub", "mul", "div", "abs", "neg", "where", "convert_element_type",
             "eq", "ne", "lt", "le", "gt", "ge"}
    with tempfile.TemporaryDirectory() as tmp:
        gold, irdir = os.path.join(tmp, "golden"), os.path.join(tmp, "ir")
        os.makedirs(gold)
        total = 0
        for case in cases.all_cases():
            if case.name in names:
                total += len(fake_golden(case, os.path.join(gold, case.name + ".safetensors")))
        subprocess.run([sys.executable, os.path.join(HERE, "make_ir.py"), "-o", irdir,
                        "--golden", gold], check=True, stdout=subprocess.DEVNULL)
        for name in sorted(names):
            g = os.path.join(gold, name + ".safetensors")
            got = os.path.join(tmp, name + ".out.safetensors")
            r = subprocess.run([fp8cc, os.path.join(irdir, name + ".ir"), "--interpret",
                                "--inputs", g, "-o", got], capture_output=True, text=True)
            if r.returncode != 0:
                print("selftest: fp8cc failed on %s:\n%s" % (name, r.stderr))
                ok = False
                continue
            r = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), g, got, "--quiet"],
                               capture_output=True, text=True)
            print(r.stdout.rstrip())
            ok &= r.returncode == 0
        # corrupt one element: compare.py must say which and fail
        g = os.path.join(gold, "add.safetensors")
        tensors, meta = compare.read(g)
        t = tensors["f32.out"]
        vals = list(t.bits)
        k = next(i for i, v in enumerate(vals) if math.isfinite(t.value(i)) and t.value(i) != 0)
        vals[k] ^= 1
        compare.write(os.path.join(tmp, "bad.safetensors"),
                      {"f32.out": ("F32", t.shape, struct.pack("<%dI" % len(vals), *vals))})
        r = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), g,
                            os.path.join(tmp, "bad.safetensors")], capture_output=True, text=True)
        if r.returncode != 1 or "f32.out[%d]" % k not in r.stdout or "1 of 576 elements differ" not in r.stdout:
            print("selftest: compare.py missed a corrupted element:\n" + r.stdout + r.stderr)
            ok = False
    print("selftest: %s (%d outputs from %d cases)" % ("ok" if ok else "FAILED", total, len(names)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
