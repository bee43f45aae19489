#!/usr/bin/env python3
"""check.py - the interpreter against every golden file: make_ir.py,
fp8cc --interpret, compare.py, one op at a time.

    python3 tests/oracle/check.py path/to/fp8cc [--golden DIR] [--only add,exp]
                                  [--show N] [-- fp8cc flags, e.g. --passes=]

Pure standard library. Prints one PASS/FAIL line per op (and the first
mismatches of a failing one), then a summary; exit status 0 if every op
matches, 1 if any differs or fp8cc fails, 2 if there are no golden files.
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fp8cc")
    ap.add_argument("--golden", default=os.path.join(HERE, "golden"))
    ap.add_argument("--only", default="")
    ap.add_argument("--show", default="4")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    goldens = sorted(g for g in glob.glob(os.path.join(args.golden, "*.safetensors"))
                     if not only or os.path.basename(g)[:-12] in only)
    if not goldens:
        print("check.py: no golden files in %s (make them with gen_golden.py on a GPU)" % args.golden)
        return 2
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        irdir = os.path.join(tmp, "ir")
        cmd = [sys.executable, os.path.join(HERE, "make_ir.py"), "-o", irdir, "--golden", args.golden]
        if only:
            cmd += ["--only", ",".join(sorted(only))]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        for g in goldens:
            op = os.path.basename(g)[:-len(".safetensors")]
            out = os.path.join(tmp, op + ".out.safetensors")
            r = subprocess.run([args.fp8cc, os.path.join(irdir, op + ".ir"), "--interpret",
                                "--inputs", g, "-o", out] + extra, capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL %s: fp8cc exited with %d\n%s" % (op, r.returncode, r.stderr.rstrip()))
                failed.append(op)
                continue
            r = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), g, out, "--quiet",
                                "--show", args.show], capture_output=True, text=True)
            sys.stdout.write(r.stdout)
            if r.returncode != 0:
                sys.stdout.write(r.stderr)
                failed.append(op)
    print("check.py: %d of %d ops match PyTorch%s" % (len(goldens) - len(failed), len(goldens),
                                                     "; differing: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
