#!/usr/bin/env bash
# The two commands of the README.
#
#   tools/dev.sh example   set up, build, and compile the bundled seed trace to
#                          build/fused.ptx: prints the optimized IR and the plan
#   tools/dev.sh test      set up, check the style (.clang-format), build (warnings are errors), run every suite
#                          with ctest, install the build and build examples/c
#                          against it, then the unit, text, runtime and fuzz-corpus
#                          tests again under AddressSanitizer, UndefinedBehaviorSanitizer
#                          (float-cast-overflow included) and LeakSanitizer, then
#                          each fuzz harness for 45 s (tools/fuzz.sh ci)
#   tools/dev.sh format    rewrite every C file of the tree in the style of .clang-format
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

build() {  # DIR [CMAKE ARGS...]
	local dir=$1
	shift
	cmake -S . -B "$dir" -DFP8CC_WERROR=ON "$@" >/dev/null
	cmake --build "$dir" -j "$jobs"
}

# The runtime tests again, for an honest count: criterion counts a skipped
# test as passing, so the skipped ones (the GPU cases, without a GPU) are
# listed and counted here, and taken out of the passed.
gpu_report() {  # BUILD_DIR
	local log=$1/rt_tests.log tested passing skipped why
	"$1/tests/rt_tests" --verbose > "$log" 2>&1 || { cat "$log"; echo "rt_tests failed" >&2; return 1; }
	skipped=$(grep -c '^\[SKIP\]' "$log" || true)
	tested=$(awk '/Synthesis:/ { for (i = 1; i <= NF; i++) if ($i == "Tested:") print $(i + 1) }' "$log")
	passing=$(awk '/Synthesis:/ { for (i = 1; i <= NF; i++) if ($i == "Passing:") print $(i + 1) }' "$log")
	why=$(awk '/^\[SKIP\].*no CUDA device: / { sub(/.*no CUDA device: /, ""); print; exit }' "$log")
	echo "== GPU tests (they skip, visibly, where there is no GPU):"
	grep '^\[SKIP\]' "$log" | sed 's/: no CUDA device: .*/: skipped, no CUDA device/' || true
	echo "== runtime tests: $tested run, $((passing - skipped)) passed, $skipped skipped${why:+ (no CUDA device: $why)}"
}

# the C files of the tree (the fuzz corpora are data)
c_files() {
	git ls-files '*.c' '*.h' | grep -v '^tests/fuzz/corpus/'
}

case "${1:-}" in
format)
	tools/setup.sh
	c_files | xargs clang-format-22 -i
	;;
example)
	tools/setup.sh
	build build
	trace=examples/seed_fp8_linear_after.trace
	echo "== $trace, optimized IR"
	build/fp8cc "$trace" --emit=ir
	echo "== the plan"
	build/fp8cc "$trace" --emit=plan
	build/fp8cc "$trace" -o build/fused.ptx
	echo "== wrote build/fused.ptx ($(wc -l < build/fused.ptx) lines); run it with build/runtime/fp8run"
	;;
test)
	tools/setup.sh
	echo "== style: every C file as .clang-format says (tools/dev.sh format rewrites them)"
	c_files | xargs clang-format-22 --dry-run --Werror
	build build
	(cd build && ctest --output-on-failure)
	echo "== the installed tree and an application built against it (examples/c):"
	tests/install/run.sh build
	gpu_report build
	build build-asan -DFP8CC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -R '^(unit|lit|safetensors|runtime.*|python-binding|fuzz-.*)$')
	echo "== fuzzing: each harness of tests/fuzz for 45 s (tools/fuzz.sh)"
	tools/fuzz.sh ci 45
	;;
*)
	echo "usage: tools/dev.sh example|test|format" >&2
	exit 2
	;;
esac
