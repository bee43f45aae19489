#!/usr/bin/env python3
"""make_ir.py - write, for every oracle case of cases.py, the fp8cc IR
function that recomputes its golden outputs from its golden inputs.

    python3 tests/oracle/make_ir.py -o DIR [--golden DIR] [--only add,exp]

Pure standard library. DIR/<case>.ir takes the
golden inputs as parameters and returns the outputs, all under the names
the golden file uses, e.g.

    func @add(%f32.a: f32[576], %f32.b: f32[576], ...) {
      %f32.out = add %f32.a, %f32.b : f32[576]
      ...
      return %f32.out, ...
    }

so that

    fp8cc DIR/add.ir --interpret --inputs golden/add.safetensors -o out.safetensors
    python3 tests/oracle/compare.py golden/add.safetensors out.safetensors

checks the interpreter against PyTorch. With --golden, only the outputs a
golden file holds are kept (gen_golden.py leaves out what torch could not
compute), and cases without a golden file are skipped.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import cases  # noqa: E402
import compare  # noqa: E402


def type_str(dt, shape):
    return "%s[%s]" % (dt, ",".join(str(d) for d in shape))


def ir_text(case, keep=None):
    """the IR function of case; keep: the output names to keep, or None"""
    outs = [o for o in case.outputs if keep is None or o.name in keep]
    used = {a for o in outs for a in o.args}
    params = [i for i in case.inputs if i.name in used]
    lines = ["; %s: written by tests/oracle/make_ir.py from cases.py" % case.name,
             "func @%s(%s) {" % (case.name, ", ".join(
                 "%%%s: %s" % (i.name, type_str(i.dtype, i.shape)) for i in params))]
    for o in outs:
        s = "  %%%s = %s %s" % (o.name, o.op, ", ".join("%" + a for a in o.args))
        if o.attrs is not None:
            s += " [%s]" % ",".join(str(d) for d in o.attrs)
        for f in o.flags:
            s += " " + f
        lines.append(s + " : " + type_str(o.dtype, o.shape))
    lines.append("  return" + ("" if not outs else " " + ", ".join("%" + o.name for o in outs)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def golden_outputs(path):
    """the output names a golden file holds, or None if there is no file"""
    if not os.path.exists(path):
        return None
    tensors, meta = compare.read(path)
    names = [n for n in meta.get("outputs", "").split(",") if n]
    return set(names) if names else set(tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, help="directory for the .ir files")
    ap.add_argument("--golden", help="directory of golden files: keep only what they hold")
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    os.makedirs(args.out, exist_ok=True)
    n = 0
    for case in cases.all_cases():
        if only and case.name not in only:
            continue
        keep = None
        if args.golden:
            try:
                keep = golden_outputs(os.path.join(args.golden, case.name + ".safetensors"))
            except compare.Error as e:
                sys.exit("make_ir.py: %s" % e)
            if keep is None:
                continue
        with open(os.path.join(args.out, case.name + ".ir"), "w") as f:
            f.write(ir_text(case, keep))
        n += 1
    print("make_ir.py: %d IR files in %s" % (n, args.out))


if __name__ == "__main__":
    main()
