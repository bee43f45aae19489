#!/usr/bin/env bash
# Coverage-guided fuzzing of fp8cc's readers and pipeline (tests/fuzz).
#
#   tools/fuzz.sh build                 install clang 22 (tools/setup.sh fuzz) and
#                                       build the libFuzzer binaries in build-fuzz
#   tools/fuzz.sh HARNESS SECONDS       one campaign: HARNESS is trace, ir,
#                                       safetensors, plan or pipeline; new inputs go
#                                       to build-fuzz/corpus/HARNESS, a finding to
#                                       build-fuzz/findings/; a line with the
#                                       executions goes to build-fuzz/campaigns.log
#                                       (the commit at the start, + if changed)
#   tools/fuzz.sh ci [SECONDS]          build, then every harness for SECONDS (45)
#                                       in turn; fails on the first finding
#   tools/fuzz.sh merge HARNESS         add to tests/fuzz/corpus/HARNESS the inputs
#                                       of build-fuzz/corpus/HARNESS that reach new
#                                       code (libFuzzer -merge=1)
#
# Every campaign starts from the corpus in the tree (seeds and past findings,
# which ctest also replays: fuzz-HARNESS). A finding, once fixed, becomes a
# regression input: copy it to tests/fuzz/corpus/HARNESS/finding-WHAT.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-fuzz
harnesses=(trace ir safetensors plan pipeline)

build() {
	tools/setup.sh fuzz
	CC=clang-22 cmake -S . -B "$out" -DFP8CC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$out" -j "$(nproc 2>/dev/null || echo 2)" --target "${harnesses[@]/#/fuzz-}"
}

dict() {  # HARNESS: the dictionary file to use
	case $1 in
	pipeline)
		grep -hv '^#' tests/fuzz/trace.dict tests/fuzz/ir.dict > "$out/pipeline.dict"
		echo "$out/pipeline.dict" ;;
	*) echo "tests/fuzz/$1.dict" ;;
	esac
}

campaign() {  # HARNESS SECONDS
	local h=$1 secs=$2 log rc runs commit
	commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo +)
	[ -x "$out/tests/fuzz/fuzz-$h" ] || { echo "fuzz: no $out/tests/fuzz/fuzz-$h: run tools/fuzz.sh build" >&2; exit 2; }
	mkdir -p "$out/corpus/$h" "$out/findings"
	log=$out/fuzz-$h.log
	echo "== fuzz-$h for $secs s"
	set +e
	"$out/tests/fuzz/fuzz-$h" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=8192 \
		-print_final_stats=1 -dict="$(dict "$h")" -artifact_prefix="$out/findings/$h-" \
		"$out/corpus/$h" "tests/fuzz/corpus/$h" > "$log" 2>&1
	rc=$?
	set -e
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	took=$(( ${runs:-0} / (${rate:-0} > 0 ? ${rate:-1} : 1) ))
	echo "$(date -u +%F) $commit $h ${runs:-?} executions in ${took}s (of ${secs}s) rc=$rc" \
		>> "$out/campaigns.log"
	echo "fuzz-$h: ${runs:-?} executions in ${took} s"
	if [ $rc -ne 0 ]; then
		tail -40 "$log"
		echo "fuzz-$h: a finding (exit $rc), in $out/findings/ (whole log: $log);" \
			"once fixed, add it as tests/fuzz/corpus/$h/finding-WHAT" >&2
		return 1
	fi
}

case "${1:-}" in
build)
	build ;;
ci)
	build
	for h in "${harnesses[@]}"; do
		campaign "$h" "${2:-45}"
	done ;;
merge)
	[ -n "${2:-}" ] || { echo "usage: tools/fuzz.sh merge HARNESS" >&2; exit 2; }
	"$out/tests/fuzz/fuzz-$2" -merge=1 -max_len=8192 "tests/fuzz/corpus/$2" "$out/corpus/$2" ;;
trace|ir|safetensors|plan|pipeline)
	[ -n "${2:-}" ] || { echo "usage: tools/fuzz.sh HARNESS SECONDS" >&2; exit 2; }
	campaign "$1" "$2" ;;
*)
	echo "usage: tools/fuzz.sh build | ci [SECONDS] | merge HARNESS | HARNESS SECONDS" >&2
	echo "       HARNESS: ${harnesses[*]}" >&2
	exit 2 ;;
esac
