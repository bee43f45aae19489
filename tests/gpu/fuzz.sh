#!/usr/bin/env bash
# Random programs for the GPU: tests/fuzz/gen_ir.py --gpu writes programs of
# the ops fp8cc promises bit-exact; this compiles each to PTX at -O2 and -O0
# (ptxas checks both) and records the reference interpreter's outputs for a
# special-value draw (s1) and a normal one (s2). tests/gpu/run.sh runs every
# program found in DIR/fuzz through fp8run and compares the bits.
#
# usage: tests/gpu/fuzz.sh DIR FIRST_SEED COUNT   (FP8CC=path/to/fp8cc)
#
# prepare.sh adds a few to the GPU suite; a longer campaign carries its own
# DIR: tests/gpu/fuzz.sh .carry/fuzz 1000 150, then on the GPU
# `SKIP_CTEST=1 SKIP_CORPUS=1 SKIP_LARGE=1 SKIP_APPS=1 tests/gpu/run.sh .carry/fuzz`
# (the directory needs prepare.sh's debs/ for the build: copy them in).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1 first=$2 count=$3
fp8cc=${FP8CC:-build/fp8cc}
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
mkdir -p "$dir/fuzz"
for ((s = first; s < first + count; s++)); do
	f=$dir/fuzz/fuzz_$s
	python3 tests/fuzz/gen_ir.py $s --gpu > "$f.ir"
	"$fp8cc" "$f.ir" -o "$f.ptx"
	"$fp8cc" "$f.ir" -O0 -o "${f}_O0.ptx"
	"$ptxas" -arch=sm_90 "$f.ptx" -o /dev/null
	"$ptxas" -arch=sm_90 "${f}_O0.ptx" -o /dev/null
	# one expected file serves -O2 and -O0 (checked: the interpreter gives
	# the same bits for both); a draw on which the interpreter finds a sum's
	# bits order-dependent gets F.sN.order, its warning, and run.sh skips it
	# (docs/design.md, "Numbers")
	for d in "s1 $s --special" "s2 $((s + 1))"; do
		read -r n seed special <<< "$d"
		"$fp8cc" "$f.ir" --interpret --seed $seed $special --save-inputs "$f.$n.in.safetensors" \
			-o "$f.$n.expected.safetensors" 2> "$f.err"
		grep 'order-dependent' "$f.err" > "$f.$n.order" || rm "$f.$n.order"
		"$fp8cc" "$f.ir" -O0 --interpret --inputs "$f.$n.in.safetensors" -o "$f.O0" 2> "$f.err"
		cmp -s "$f.O0" "$f.$n.expected.safetensors" || { echo "fuzz.sh: seed $s: -O0 and -O2 interpret to other bits ($n)" >&2; exit 1; }
		rm "$f.err" "$f.O0"
	done
done
