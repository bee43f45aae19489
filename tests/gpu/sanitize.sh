#!/usr/bin/env bash
# compute-sanitizer over the GPU corpus, on the GPU machine, after
# tests/gpu/run.sh has built build-gpu there from what tests/gpu/prepare.sh
# made: memcheck (with the leak check), racecheck, synccheck and initcheck,
# each over every corpus program on its first input, run as fp8run runs it
# with graphs on (the capture, then one replay: --iters 1 --warmup 0).
# Then initcheck over torch._scaled_mm alone (tests/gpu/initcheck_scaled_mm.py),
# the evidence for what initcheck says about cuBLASLt's GEMM outputs.
#
# $OUT/sanitize (default /tmp/gpu/sanitize) gets summary.md, one row per tool
# and program (errors, the first distinct reports), and logs.tar.gz with every
# TOOL.PROGRAM.log (one archive: the device tool brings back only a few files). The exit status is 1 when any run reports an error or fails.
#
# usage: tests/gpu/sanitize.sh [DIR] [TOOL...]     (DIR: .carry/gpu; TOOL:
#        memcheck racecheck synccheck initcheck; SKIP=REGEX leaves programs out,
#        ONLY=REGEX keeps only the programs whose names match)
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.carry/gpu}
tests/gpu/twins.sh "$dir"
shift || true
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck synccheck initcheck)
out=${OUT:-/tmp/gpu}/sanitize
logs=$(mktemp -d)
fp8run=build-gpu/runtime/fp8run
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
mkdir -p "$out"
[ -x "$fp8run" ] || { echo "sanitize: no $fp8run: run tests/gpu/run.sh first" >&2; exit 2; }
[ -x "$cs" ] || { echo "sanitize: no compute-sanitizer at $cs (COMPUTE_SANITIZER=...)" >&2; exit 2; }
fails=0
summary=$out/summary.md

# the options of each tool
opts() {
	case $1 in
	memcheck) echo "--tool memcheck --leak-check full" ;;
	racecheck) echo "--tool racecheck --racecheck-report all" ;;
	synccheck) echo "--tool synccheck" ;;
	initcheck) echo "--tool initcheck" ;;
	*) echo "sanitize: unknown tool $1" >&2; exit 2 ;;
	esac
}

# row TOOL NAME LOG RC: one line of the summary from a log
row() {
	local tool=$1 name=$2 log=$3 rc=$4 errors first
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
	# racecheck sums up in its own words: "RACECHECK SUMMARY: N hazards
	# displayed (E errors, W warnings)"; every hazard counts
	[ -n "$errors" ] || errors=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) errors*, \([0-9]*\) warnings*).*/\1 + \2/p' "$log" | tail -1)
	[ -z "$errors" ] || errors=$((errors))
	first=$(grep -E '^========= [A-Z]' "$log" | grep -v 'ERROR SUMMARY\|COMPUTE-SANITIZER' |
		sed 's/^========= //; s/ at 0x[0-9a-f]*//; s/ of size [0-9]* bytes//; s/0x[0-9a-f]*/ADDR/g' |
		sort | uniq -c | sort -rn | head -3 | sed 's/^ *//' | tr '\n' ';' | sed 's/|/\\|/g')
	if [ -z "$errors" ]; then
		echo "| $tool | $name | did not finish (exit $rc) | $(tail -2 "$log" | tr '\n' ' ' | sed 's/|/\\|/g') |" >> "$summary"
		fails=$((fails + 1))
	elif [ "$errors" -ne 0 ] || [ "$rc" -ne 0 ]; then
		echo "| $tool | $name | $errors error(s), exit $rc | $first |" >> "$summary"
		fails=$((fails + 1))
	else
		echo "| $tool | $name | clean | |" >> "$summary"
	fi
	echo "$tool $name: ${errors:-?} error(s), exit $rc"
}

{
	echo "# compute-sanitizer over the GPU corpus"
	echo
	echo "commit $(cat "$dir/commit" 2>/dev/null || echo unknown), $(date -u +%F),"
	echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1),"
	echo "$("$cs" --version 2>/dev/null | grep -i version | head -1)"
	echo
	echo "| tool | program | result | most frequent reports (count, report) |"
	echo "| --- | --- | --- | --- |"
} > "$summary"

for tool in "${tools[@]}"; do
	for ptx in "$dir"/ptx/*.ptx; do
		name=$(basename "$ptx" .ptx)
		[ -n "${SKIP:-}" ] && [[ $name =~ $SKIP ]] && continue
		[[ $name =~ ${ONLY:-.} ]] || continue
		in=$(ls "$dir/ptx/$name".s*.in.safetensors 2>/dev/null | head -1)
		[ -n "$in" ] || continue
		log=$logs/$tool.$name.log
		# shellcheck disable=SC2046
		"$cs" $(opts "$tool") --error-exitcode 1 --print-limit 200 \
			"$fp8run" "$ptx" --inputs "$in" -o "$logs/got.safetensors" --iters 1 --warmup 0 > "$log" 2>&1
		row "$tool" "$name" "$log" $?
	done
done

# torch._scaled_mm alone, eagerly and inside a CUDA graph: what initcheck
# says of a cuBLASLt FP8 GEMM's output with no fp8cc code in the process
# (evidence, not a test of fp8cc: these rows do not change the exit status;
# docs/reliability.md says what they showed)
if python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then
	keep=$fails
	for mode in eager graph; do
		log=$logs/initcheck.torch_scaled_mm_$mode.log
		flag=()
		[ $mode = graph ] && flag=(--graph)
		"$cs" --tool initcheck --error-exitcode 1 --print-limit 200 python3 tests/gpu/initcheck_scaled_mm.py "${flag[@]}" > "$log" 2>&1
		row initcheck "torch._scaled_mm ($mode)" "$log" $?
	done
	fails=$keep
else
	echo "| initcheck | torch._scaled_mm | skipped: no torch with CUDA | |" >> "$summary"
fi

rm -f "$logs/got.safetensors"
tar -czf "$out/logs.tar.gz" -C "$logs" . && rm -rf "$logs"
echo
echo "summary: $summary (logs: $out/logs.tar.gz)"
cat "$summary"
exit $((fails > 0))
