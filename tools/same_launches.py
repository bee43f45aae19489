#!/usr/bin/env python3
"""Prove that a backend change moved nothing: for every program file in OLD
and NEW (two directories of fp8cc PTX, the same names), each launch of NEW
runs the PTX its launch ran in OLD (kernel bodies compared with their own
names and label numbers blanked), every other plan line is the same, and
NEW has no kernel OLD lacked. For changes that rename or share kernels,
where byte-identical PTX is too strict.

usage: tools/same_launches.py OLD NEW"""
import re, sys, os
def parse(path):
    t = open(path).read()
    plan = [l for l in t.split("// end-plan")[0].splitlines()]
    bodies = {}
    for m in re.finditer(r"^\.visible \.entry (\S+?)\((.*?)^\}", t, re.S | re.M):
        name = m.group(1)
        body = re.sub(r"\$L__BB\d+_", "$L__BB_", m.group(0).replace(name, "K"))
        bodies[name] = body
    return plan, bodies
bad = 0
for f in sorted(os.listdir(sys.argv[1])):
    a, b = os.path.join(sys.argv[1], f), os.path.join(sys.argv[2], f)
    pa, ba = parse(a); pb, bb = parse(b)
    if len(pa) != len(pb):
        print("plan length differs", f); bad += 1; continue
    for la, lb in zip(pa, pb):
        if la.startswith("// launch "):
            ka, kb = la.split()[2], lb.split()[2]
            if la.replace(ka, "", 1) != lb.replace(kb, "", 1) or ba[ka] != bb[kb]:
                print("launch differs", f, ka, kb); bad += 1
        elif la != lb:
            print("plan line differs", f, la, lb); bad += 1
    extra = set(bb) - set(ba)
    if extra: print("new kernels", f, extra); bad += 1
print("programs", len(os.listdir(sys.argv[1])), "problems", bad)
sys.exit(1 if bad else 0)
