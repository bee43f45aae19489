"""The Python binding on the H200, with torch: fp8cc.torch runs the seed
layer and gives the bits fp8run gave on the same inputs; the call from
Python costs little more than libfp8rt's own timed runs of it (the C
call); the real trace 10 (apex cross entropy's forward and backward, two
externs) runs with fp8cc.torch's torch implementations and matches torch's
autograd of F.cross_entropy.

usage: python3 tests/gpu/test_python.py DIR FP8RUN     (DIR: prepare.sh's)
Prints one "ok" or "FAILED" line per check; exits 1 on any failure."""
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import fp8cc.torch as ft  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    print(("ok   " if ok else "FAILED ") + what)
    fails += not ok


def seed_layer(d, fp8run):
    ptx = f"{d}/ptx/seed_after.ptx"
    ins = f"{d}/ptx/seed_after.s2.in.safetensors"
    subprocess.run([fp8run, ptx, "--inputs", ins, "-o", "/tmp/py_seed.safetensors"], check=True,
                   stdout=subprocess.DEVNULL)
    want = load_file("/tmp/py_seed.safetensors")
    prog = ft.load(ptx)
    inputs = load_file(ins, device="cuda")
    f = prog[0]
    args = [inputs[i.name] for i in f.inputs]
    outs = f(*args)
    torch.cuda.synchronize()
    for o, info in zip(outs, f.outputs):
        same = torch.equal(o.cpu().reshape(-1).view(torch.uint8), want[info.name].reshape(-1).view(torch.uint8))
        check(same, f"seed layer through fp8cc.torch: {info.name} has fp8run's bits")
    # the cost of the Python call: its wall time per call, against
    # libfp8rt's event-timed runs of the same graph (the C call)
    out = tuple(torch.empty_like(o) for o in outs)
    for _ in range(50):
        f(*args, out=out)
    torch.cuda.synchronize()
    # the best of five rounds: a round's wall time also holds whatever else
    # the host did then (a cold machine's first round was 13 us slower)
    n = 2000
    py_us = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            f(*args, out=out)
        torch.cuda.synchronize()
        py_us = min(py_us, (time.perf_counter() - t0) / n * 1e6)
    c_us = sorted(f.time(*args, out=out, warmup=50, iters=n))[n // 2]
    print(f"     seed layer: {py_us:.2f} us per call from Python (outputs given), "
          f"{c_us:.2f} us per run timed by libfp8rt; {py_us - c_us:+.2f} us")
    # allocated outputs too
    t0 = time.perf_counter()
    for _ in range(n):
        f(*args)
    torch.cuda.synchronize()
    print(f"     seed layer: {(time.perf_counter() - t0) / n * 1e6:.2f} us per call with outputs from torch.empty")
    check(py_us - c_us <= 3.0, f"the Python call costs at most 3 us more than the C call ({py_us - c_us:+.2f} us)")


def cross_entropy(d):
    prog = ft.load(f"{d}/extra/real_10.ptx")
    f = prog[0]
    torch.manual_seed(0)
    logits = torch.randn(f.inputs[0].shape, device="cuda")
    labels = torch.randint(0, logits.shape[1], f.inputs[1].shape, device="cuda")
    grad, = f(logits, labels)
    x = logits.clone().requires_grad_()
    F.cross_entropy(x, labels).backward()
    err = ((grad - x.grad).norm() / x.grad.norm()).item()
    check(err <= 1e-5, f"real trace 10 with torch's externs: the gradient matches torch autograd "
          f"(relative Frobenius {err:.1e})")


def main():
    d, fp8run = sys.argv[1], sys.argv[2]
    seed_layer(d, fp8run)
    cross_entropy(d)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
