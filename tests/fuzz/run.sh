#!/usr/bin/env bash
# Random programs through the whole compiler: for each seed, tests/fuzz/gen_ir.py
# writes a valid program; it must verify after every pass, give the same
# interpreter bits at -O0 and -O2 (normal draws and special values), compile
# to PTX that ptxas accepts, and never make the compiler fail otherwise.
#
# usage: tests/fuzz/run.sh FP8CC FIRST_SEED COUNT
set -uo pipefail
fp8cc=$1 first=$2 count=$3
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
gen=$(dirname "$0")/gen_ir.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for ((s = first; s < first + count; s++)); do
	python3 "$gen" $s > "$tmp/p.ir"
	fail() { echo "seed $s: $*"; bad=$((bad + 1)); cp "$tmp/p.ir" "$tmp/../fuzz-fail-$s.ir" 2>/dev/null; }
	for sp in "" --special; do
		"$fp8cc" "$tmp/p.ir" -O0 --interpret --seed $s $sp -o "$tmp/a" 2> "$tmp/err" || { fail "-O0 interpret: $(head -3 "$tmp/err")"; continue 2; }
		"$fp8cc" "$tmp/p.ir" -O2 --interpret --seed $s $sp -o "$tmp/b" 2> "$tmp/err" || { fail "-O2 interpret: $(head -3 "$tmp/err")"; continue 2; }
		cmp -s "$tmp/a" "$tmp/b" || { fail "-O0 and -O2 differ $sp"; continue 2; }
	done
	for o in -O0 -O2; do
		"$fp8cc" "$tmp/p.ir" $o -o "$tmp/p.ptx" 2> "$tmp/err" || { fail "$o PTX: $(head -3 "$tmp/err")"; continue 2; }
		"$ptxas" -arch=sm_90 "$tmp/p.ptx" -o /dev/null 2> "$tmp/err" || { fail "$o ptxas: $(head -3 "$tmp/err")"; continue 2; }
	done
done
echo "fuzz: $count programs from seed $first, $bad failed"
exit $((bad > 0))
