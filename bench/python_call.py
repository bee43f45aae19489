"""Where the seed layer's Python call spends the host's time (a benchmark,
not a test; tests/gpu/test_python.py holds the bound): fp8cc.torch's quick
path as installed, the same path written here in its earlier forms (V0:
the program's stream getter and openness tested each call, the pointers'
alignment tested in Python, the GIL released; V1 without the first; V2
without the first two), each part of a call alone, and the C call
(tests/gpu/host_loop.c's fp8rt_host_loop), all taking turns group by group
on one thread, the best of 9 rounds of 2048 calls. Every Python figure
includes a lambda's call ("lambda only").

usage: FP8RT_LIBRARY=build-gpu/runtime/libfp8rt.so python3 bench/python_call.py DIR FP8RUN
       (DIR: tests/gpu/prepare.sh's; FP8RUN beside a build of tests/, for the host loop)"""
import ctypes
import os
import sys
import time

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
import fp8cc  # noqa: E402
import fp8cc.torch as ft  # noqa: E402
from test_python import host_loop  # noqa: E402

d, fp8run = sys.argv[1], sys.argv[2]
print(torch.cuda.get_device_name(), "torch", torch.__version__)
prog = ft.load(f"{d}/ptx/seed_after.ptx")
inputs = load_file(f"{d}/ptx/seed_after.s2.in.safetensors", device="cuda")
f = prog[0]
args = [inputs[i.name] for i in f.inputs]
out = tuple(f(*args))
tensors = list(args) + list(out)
env = type(f).__call__.__globals__
for _ in range(2000):
    f(*args, out=out)
torch.cuda.synchronize()
guard = env["guard"]
raw = torch._C._cuda_getCurrentRawStream
run, slots = env["handle"], env["slots"]
prun = fp8cc._lib.fp8rt_prepared_run
pack = env["pack"]


def variant(prog_checks, align):
    ins = [f"i{k}" for k in range(len(f.inputs))]
    outs = [f"o{k}" for k in range(len(f.outputs))]
    every = ins + outs
    ptrs = [f"p{k}" for k in range(len(every))]
    head = "not in_place and state is None and stream is None"
    if prog_checks:
        head += " and prog.stream is getter and prog._prog is not None"
    lines = ["def __call__(self, *inputs, out=None, state=None, stream=None, in_place=False):",
             f"    if {head}:",
             "        try:",
             f"            {', '.join(ins)}, = inputs",
             f"            {', '.join(outs)}, = out",
             "        except (TypeError, ValueError):",
             "            pass",
             "        else:",
             f"            if guard({', '.join(every)}):",
             f"                {', '.join(ptrs)} = {', '.join(x + '.data_ptr()' for x in every)}",
             f"                if {'not (' + ' | '.join(ptrs) + ') & 15' if align else 'True'}:",
             f"                    pack(slots, 0, raw(0), {', '.join(ptrs)})",
             "                    st = run(handle)",
             "                    if st:",
             "                        raise RuntimeError(st)",
             "                    return out if type(out) is tuple else tuple(out)",
             "    raise RuntimeError('slow')"]
    e = dict(env)
    e.update(guard=guard, raw=raw, pack=pack, slots=slots, run=prun, handle=run, prog=prog,
             getter=prog.stream)
    exec("\n".join(lines), e)
    return type("V", (fp8cc.Function,), {"__call__": e["__call__"], "__slots__": ()})


class Dummy:
    def __call__(self, *inputs, out=None, state=None, stream=None, in_place=False):
        return out


v1 = fp8cc.Function.__new__(variant(False, True))
v2 = fp8cc.Function.__new__(variant(False, False))
v0 = fp8cc.Function.__new__(variant(True, True))
dummy = Dummy()
prun2 = ctypes.CDLL(os.environ["FP8RT_LIBRARY"]).fp8rt_prepared_run
prun3 = ctypes.PyDLL(os.environ["FP8RT_LIBRARY"]).fp8rt_prepared_run


def parts():
    return {
        "whole (installed)": lambda: f(*args, out=out),
        "V0 written here, prog checks": lambda: v0(*args, out=out),
        "V1 no prog checks": lambda: v1(*args, out=out),
        "V2 no prog checks, no align": lambda: v2(*args, out=out),
        "empty __call__": lambda: dummy(*args, out=out),
        "guard": lambda: guard(*tensors),
        "5 data_ptr": lambda: [t.data_ptr() for t in tensors],
        "pack": lambda: pack(slots, 0, 0, 1, 2, 3, 4, 5),
        "raw(0)": lambda: raw(0),
        "trivial ctypes (prepared_slots)": lambda: fp8cc._lib.fp8rt_prepared_slots(run),
        "bare prepared run": lambda: prun(run),
        "bare prepared run, no argtypes": lambda: prun2(run),
        "bare prepared run, PyDLL": lambda: prun3(run),
        "lambda only": lambda: None,
    }


loop = host_loop(fp8run)
_, stream, _ = fp8cc.Function._bind(f, args, out, None)
crun = ctypes.cast(fp8cc._lib.fp8rt_run_function, ctypes.c_void_p)
c_args = (crun, prog._prog, f.index, ctypes.addressof(f._tin), len(f.inputs), ctypes.addressof(f._tout),
          len(f.outputs), stream, 64)
# the pointers the quick path packs: the same as _bind's; each bare run
# below must succeed (its status is not read while timed)
pack(slots, 0, raw(0), *[t.data_ptr() for t in tensors])
for bare in (prun, prun2, prun3):
    if bare(run) != 0:
        sys.exit(f"the bare prepared run failed: {fp8cc._lib.fp8rt_last_error(prog.context._ctx).decode()}")
ps = parts()
best = {k: float("inf") for k in ps}
best["C loop"] = float("inf")
n, group = 2048, 64
for r in range(9):
    acc = {k: 0.0 for k in best}
    for g in range(n // group):
        keys = list(ps) + ["C loop"]
        if g % 2:
            keys.reverse()
        for k in keys:
            torch.cuda.synchronize()
            if k == "C loop":
                acc[k] += loop(*c_args)
                continue
            fn = ps[k]
            t0 = time.perf_counter()
            for _ in range(group):
                fn()
            acc[k] += (time.perf_counter() - t0) * 1e6
    for k in best:
        best[k] = min(best[k], acc[k] / n)
torch.cuda.synchronize()
for k, v in best.items():
    print(f"{k:40s} {v:6.2f} us")
c = best["C loop"]
print(f"whole - C {best['whole (installed)'] - c:+.2f}; V1 - C {best['V1 no prog checks'] - c:+.2f}; "
      f"V2 - C {best['V2 no prog checks, no align'] - c:+.2f}")
