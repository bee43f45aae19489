#!/usr/bin/env python3
"""Run an fp8cc program from Python on the tensors of a safetensors file,
with the standard library only (no torch, no numpy): fp8run's job, through
the binding. Inputs are matched to the program's by name; the outputs go to
another safetensors file.

    fp8cc examples/seed_fp8_linear_after.trace -o seed.ptx
    fp8cc examples/seed_fp8_linear_after.trace --interpret --save-inputs in.safetensors -o want.safetensors
    PYTHONPATH=python python3 examples/python/run.py seed.ptx in.safetensors out.safetensors

(The build tree's libfp8rt: FP8RT_LIBRARY=build/runtime/libfp8rt.so.)"""
import json
import struct
import sys

import fp8cc

# safetensors' dtype names, and the plan's
ST = {"BOOL": "b8", "U8": "u8", "I8": "i8", "I16": "i16", "I32": "i32", "I64": "i64", "F16": "f16",
      "BF16": "bf16", "F32": "f32", "F64": "f64", "F8_E4M3": "f8e4m3fn", "F8_E5M2": "f8e5m2"}
PLAN = {v: k for k, v in ST.items()}


def read_safetensors(path):
    """{name: (dtype, shape, bytes)}"""
    with open(path, "rb") as f:
        data = f.read()
    n, = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = (ST[t["dtype"]], tuple(t["shape"]), body[b:e])
    return out


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, bytes)}"""
    header, blobs, off = {}, [], 0
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": PLAN[dt], "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    ptx, inputs, output = sys.argv[1:]
    prog = fp8cc.load(ptx)
    f = prog[0]
    given = read_safetensors(inputs)
    args = []
    for info in f.inputs:
        if info.name not in given:
            sys.exit(f"run.py: {inputs} has no tensor '{info.name}' (the program takes {f.inputs})")
        dt, shape, raw = given[info.name]
        if (dt, shape) != (info.dtype, info.shape):
            sys.exit(f"run.py: '{info.name}' is {dt}{list(shape)} in {inputs}, the program takes {info!r}")
        args.append(prog.context.empty(dt, shape).copy_from(raw))
    outs = f(*args)
    write_safetensors(output, {o.name: (o.dtype, o.shape, a.to_bytes()) for o, a in zip(f.outputs, outs)})
    us = sorted(f.time(*args, out=outs, warmup=3, iters=20))
    print(f"{ptx}: {f!r}")
    print(f"wrote {len(outs)} output(s) to {output}; median run {us[len(us) // 2]:.1f} us (graph replay)")


if __name__ == "__main__":
    main()
