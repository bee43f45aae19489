#!/usr/bin/env bash
# The real traces as fp8cc reads them today: one Markdown row per trace
# (the pairs of the set's pairs.txt also as one program each), with what fp8cc
# made of it or the ops its errors name. docs/corpus.md holds the table.
#
# usage: tests/real/table.sh [SET] [FP8CC]    (FP8CC: default build/fp8cc;
#   SET: thunder for tests/real/thunder, else the 19 of tests/real)
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=tests/real
if [ $# -gt 0 ] && [ -d "$dir/$1" ]; then
	dir=$dir/$1
	shift
fi
fp8cc=${1:-build/fp8cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# signature NAME: the --signature option for a trace of signatures.txt
signature() {
	local spec
	spec=$(grep "^$1 " $dir/signatures.txt | cut -d' ' -f2-) || return 0
	[ -n "$spec" ] || return 0
	python3 tests/real/signature.py "$tmp/$1.sig" $spec && echo "--signature $tmp/$1.sig"
}

row() {   # LABEL FILES...
	local label=$1 sig
	shift
	sig=$(signature "$(basename "$1")")
	if "$fp8cc" "$@" $sig -o "$tmp/p.ptx" 2> "$tmp/err"; then
		local k g x
		k=$(grep -c '^// launch' "$tmp/p.ptx")
		g=$(grep -c '^// gemm' "$tmp/p.ptx")
		x=$(grep '^// call' "$tmp/p.ptx" | awk '{print $3}' | sort -u | tr '\n' ' ' | sed 's/ $//')
		c=$(grep '^// collective' "$tmp/p.ptx" | awk '{print $3}' | sort | uniq -c | awk '{print $1 " " $2}' | paste -sd ',' | sed 's/,/, /g')
		echo "| $label | compiles${sig:+ (with its signature)}: $k kernel launch(es), $g GEMM(s)${x:+, extern calls of $x}${c:+, collectives: $c} | - |"
	else
		local what
		what=$(grep -o "error: .*" "$tmp/err" | sed -E "s/^error: //; s/ \(([0-9]+) uses.*/ (\1 uses)/; s/^unknown callee '([^']*)' has no subsymbols.*/\`\1\`: no subsymbols/; s/^'([^']*)' is a collective's result still in flight.*/\`\1\`: returned before its wait/; s/^'([^']*)' is a collective.*/\`\1\`: collective/; s/^'([^']*)' has no type.*/\`\1\`: no type/; s/^'([^']*)' has no subsymbols, and its results? ha(s|ve) no type comment.*/\`\1\`: an extern with untyped results/" | paste -sd ';' | sed 's/;/; /g')
		echo "| $label | errors | $what |"
	fi
}

echo "| trace | result | what is missing |"
echo "| --- | --- | --- |"
for t in $dir/*.trace; do
	row "$(basename "$t" .trace)" "$t"
done
grep -v '^#' $dir/pairs.txt | while read -r name fwd bwd; do
	row "${name/+/ + } (one program)" "$dir/$fwd" "$dir/$bwd"
done
