#!/usr/bin/env bash
# Write tests/lit/real/*.test from what the current build makes of each real
# trace and of the two forward/backward pairs: for a trace that compiles,
# that ptxas takes it and its counts of launches and GEMMs; for one that
# does not, every error it reports (and no other). Run it after a change
# that changes a result, read the diff, commit it with the change.
#
# usage: tests/real/pin.sh [SET] [FP8CC]     (default build/fp8cc)
#   SET: thunder for the traces of tests/real/thunder (tests/lit/real/thunder);
#   without it the 19 of tests/real. Each set's pairs.txt names its pairs.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=tests/real
out=tests/lit/real
sub=
if [ $# -gt 0 ] && [ -d "$dir/$1" ]; then
	sub=/$1
	dir=$dir/$1
	out=$out/$1
	shift
fi
fp8cc=${1:-build/fp8cc}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# pin NAME TRACE...: one test file
pin() {
	local name=$1 spec sigrun="" sigopt="" files="" label
	shift
	for t in "$@"; do files="$files %real$sub/$t"; done
	label=$(printf '%s and ' "$@")
	label=${label% and }
	spec=$(grep "^$1 " $dir/signatures.txt | cut -d' ' -f2- || true)
	if [ -n "$spec" ]; then
		python3 tests/real/signature.py "$tmp/sig" $spec
		sigrun="# RUN: python3 %{root}/tests/real/signature.py %t.sig \$(grep \"^$1 \" %{root}/$dir/signatures.txt | cut -d\" \" -f2-)"
		sigopt=" --signature %t.sig"
	fi
	local args=()
	for t in "$@"; do args+=("$dir/$t"); done
	{
		echo "# The real trace(s) $label ($dir/SOURCES.md), as fp8cc reads them today (tests/real/pin.sh${sub:+ ${sub#/}} writes this file)."
		[ -n "$sigrun" ] && echo "$sigrun"
		if "$fp8cc" "${args[@]}" ${spec:+--signature "$tmp/sig"} -o "$tmp/p.ptx" 2> "$tmp/err"; then
			echo "# RUN: %fp8cc$files$sigopt -o %t.ptx 2>&1 | FileCheck --allow-empty --implicit-check-not=error: %s"
			echo "# RUN: %ptxas -arch=sm_90 %t.ptx -o /dev/null"
			echo '# RUN: (grep -c "^// launch" %t.ptx || true) | FileCheck --check-prefix=LAUNCHES %s'
			echo '# RUN: (grep -c "^// gemm" %t.ptx || true) | FileCheck --check-prefix=GEMMS %s'
			echo '# RUN: (grep -c "^// call" %t.ptx || true) | FileCheck --check-prefix=CALLS %s'
			local k g x c
			k=$(grep -c '^// launch' "$tmp/p.ptx" || true)
			g=$(grep -c '^// gemm' "$tmp/p.ptx" || true)
			x=$(grep -c '^// call' "$tmp/p.ptx" || true)
			c=$(grep -c '^// collective' "$tmp/p.ptx" || true)
			if [ "$c" != 0 ]; then echo '# RUN: grep -c "^// collective" %t.ptx | FileCheck --check-prefix=COLLECTIVES %s'; fi
			if [ "$c" != 0 ]; then
				echo "# It compiles: $k kernel launch(es), $g GEMM(s), $x extern call(s) and $c collective(s)."
			else
				echo "# It compiles: $k kernel launch(es), $g GEMM(s) and $x extern call(s)."
			fi
			echo "# LAUNCHES: {{^}}$k{{\$}}"
			echo "# GEMMS: {{^}}$g{{\$}}"
			echo "# CALLS: {{^}}$x{{\$}}"
			if [ "$c" != 0 ]; then echo "# COLLECTIVES: {{^}}$c{{\$}}"; fi
		else
			echo "# RUN: not %fp8cc$files$sigopt -o %t.ptx 2>&1 | FileCheck --implicit-check-not=error: %s"
			echo "# It is rejected with errors that name exactly what fp8cc lacks:"
			grep ': error: ' "$tmp/err" | sed "s|^$dir/||; s|^|# CHECK: |"
		fi
	} > "$out/$name.test"
}

for f in $dir/*.trace; do
	pin "$(basename "$f" .trace)" "$(basename "$f")"
done
grep -v '^#' $dir/pairs.txt | while read -r name fwd bwd; do
	pin "$name-pair" "$fwd" "$bwd"
done
echo "wrote $(ls $out/*.test | wc -l) tests in $out"
