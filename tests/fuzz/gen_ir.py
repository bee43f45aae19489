#!/usr/bin/env python3
"""Write a random, valid fp8cc IR program: random shapes and a random DAG of
elementwise ops (fma too), conversions (fp8 included), reductions, broadcasts,
transposes, reshapes, slices, cat and scaled_mm, some values returned.

usage: gen_ir.py SEED [--gpu] > prog.ir

tests/fuzz/run.sh compiles such programs at -O0 and -O2 and checks that the
interpreter gives the same bits, that PTX comes out and that ptxas takes it.
--gpu writes the programs that tests/gpu/run.sh runs on the GPU against the
interpreter bit for bit: flip, pad, isfinite, signbit and nextafter too,
and only what fp8cc promises exact (no exp and tanh,
which are libdevice's against the host's libm; no sum of f64, whose last
bits are the order's; no scaled_mm, cuBLASLt's order), and larger dims
(up to 1000 and 4099, at most 2^17 elements a tensor), so that kernels take
several blocks, phases cross the grid barrier and tiles are partial.
Standard library only."""
import random
import sys

FLOATS = ["f32", "bf16", "f16", "f64"]
UNARY = ["abs", "neg", "reciprocal", "sqrt", "floor", "ceil", "round", "trunc", "sign", "exp", "tanh"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]


class Prog:
    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.vals = []          # (name, dtype, shape)
        self.n = 0
        self.gpu = False

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
    if p.gpu and r.random() < 0.15:
        gpu_step(p, name, dt, shape)
    elif kind < 0.25:
        p.new(f"{r.choice(unary)} %{name}", dt, shape)
    elif kind < 0.45:
        w = p.pick(lambda u: u[1] == dt and (u[2] == shape or u[2] == ()))
        if w is None or (w[2] == () and shape == ()):
            w = (p.new(f"full {r.choice([0.5, -448, 1e-12, 3, 2.5])}", dt, ()), dt, ())
        args = [name, w[0]] if r.random() < 0.5 else [w[0], name]
        if r.random() < 0.3:
            c = p.new(f"{r.choice(COMPARE)} %{args[0]}, %{args[1]}", "b8", shape)
            p.new(f"where %{c}, %{args[0]}, %{args[1]}", dt, shape)
        elif dt in ("f32", "f64") and r.random() < 0.15:
            p.new(f"fma %{args[0]}, %{args[1]}, %{name}", dt, shape)
        else:
            p.new(f"{r.choice(BINARY)} %{args[0]}, %{args[1]}", dt, shape)
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
        if w:
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


def gpu_step(p, name, dt, shape):
    """the exact ops only --gpu programs hold: index arithmetic (flip, pad),
    the predicates, nextafter"""
    r = p.rng
    kind = r.random()
    if kind < 0.3 and shape:
        dims = sorted(r.sample(range(len(shape)), r.randint(1, len(shape))))
        p.new(f"flip %{name} [{','.join(map(str, dims))}]", dt, shape)
    elif kind < 0.6 and shape:
        z = p.new(f"full {r.choice([0, -1.5, 448])}", dt, ())
        lo = [r.randint(-1 if d > 1 else 0, 2) for d in shape]
        hi = [r.randint(-1 if d > 2 else 0, 2) for d in shape]
        it = [r.randint(0, 1) for _ in shape]
        out = [d + (d - 1) * i + l + h for d, l, h, i in zip(shape, lo, hi, it)]
        p.new(f"pad %{name}, %{z} [{','.join(map(str, lo + hi + it))}]", dt, out)
    elif kind < 0.8:
        # a NaN's sign is not defined (docs/design.md, "Numbers"): signbit
        # of a computed value sees it with its NaNs made 0
        z = p.new("full 0", dt, ())
        x = name
        pred = r.choice(['isfinite', 'signbit'])
        if pred == 'signbit' and not name.startswith("p"):
            nan = p.new(f"ne %{name}, %{name}", "b8", shape)
            x = p.new(f"where %{nan}, %{z}, %{name}", dt, shape)
        c = p.new(f"{pred} %{x}", "b8", shape)
        p.new(f"where %{c}, %{name}, %{z}", dt, shape)
    else:
        w = p.pick(lambda u: u[1] == dt and u[2] == shape)
        p.new(f"nextafter %{name}, %{w[0]}", dt, shape)


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
    for i in range(rng.randint(1, 3)):
        rank = rng.randint(0, 3)
        shape = [rng.choice(dims) for _ in range(rank)]
        while p.gpu and numel(shape) > 1 << 17:
            shape = [rng.choice(dims) for _ in range(rank)]
        dt = rng.choice(FLOATS)
        params.append(f"%p{i}: {dt}[{','.join(map(str, shape))}]")
        p.vals.append((f"p{i}", dt, tuple(shape)))
    for _ in range(rng.randint(3, 25)):
        step(p)
    made = [v for v in p.vals if not v[0].startswith("p")]
    if not made:
        made = [(p.new(f"abs %{p.vals[0][0]}", p.vals[0][1], p.vals[0][2]),)]
    outs = rng.sample(made, min(len(made), rng.randint(1, 4)))
    print(f"func @fuzz{seed}({', '.join(params)}) {{")
    print("\n".join(p.lines))
    print(f"  return {', '.join('%' + v[0] for v in outs)}")
    print("}")


if __name__ == "__main__":
    main()
