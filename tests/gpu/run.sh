#!/usr/bin/env bash
# The GPU suite, on the GPU machine, over what tests/gpu/prepare.sh made:
# build libfp8rt, fp8run and the runtime tests (no LLVM there), run them,
# run every corpus program through fp8run and compare with the reference
# interpreter, check the layer and the matmul programs against PyTorch, and
# (with --bench) time the layer against PyTorch eager and torch.compile and
# the GEMMs against torch's ops. Logs go to $OUT (default /tmp/gpu).
#
# usage: tests/gpu/run.sh [DIR] [--bench | --bench-only]
#        (ONLY=REGEX runs the corpus programs whose names match; SKIP_CTEST=1
#        skips the runtime tests, SKIP_CORPUS=1 the corpus, SKIP_FUZZ=1 the
#        random programs, SKIP_LARGE=1 the large tensors, SKIP_APPS=1 the
#        applications — the whole suite takes
#        more than one 600 s device call: SKIP_LARGE=1 SKIP_APPS=1, then
#        SKIP_CTEST=1 SKIP_CORPUS=1; ORACLE=1 also makes the op goldens)
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.carry/gpu}
bench=${2:-}
out=${OUT:-/tmp/gpu}
mkdir -p "$out"
log=$out/gpu.log
exec > >(tee -a "$log") 2>&1
fails=0
step() { echo; echo "== $* ($(date -u +%T))"; }
bad() { echo "FAILED: $*"; fails=$((fails + 1)); }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "commit $(cat "$dir/commit")  date $(date -u +%F)"

tests/gpu/twins.sh "$dir" || bad "the -O0 programs' files (tests/gpu/twins.sh)"

step "build libfp8rt, fp8run, rt_tests"
# the .deb files prepare.sh carried (criterion, jansson), unpacked, not installed:
# no apt repository there; CMAKE_PREFIX_PATH and LD_LIBRARY_PATH find them
crit=/tmp/criterion
mkdir -p $crit
for d in "$dir"/debs/*.deb; do dpkg -x "$d" $crit; done
ls $crit/usr/include/jansson.h >/dev/null || bad "no jansson in $dir/debs (run prepare.sh again)"
export LD_LIBRARY_PATH=$crit/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build-gpu -DFP8CC_COMPILER=OFF -DCMAKE_PREFIX_PATH=$crit/usr \
	-DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1 || bad "cmake (see cmake.log)"
cmake --build build-gpu -j 16 >> "$out/cmake.log" 2>&1 || bad "build (see cmake.log)"
fp8run=build-gpu/runtime/fp8run
# NCCL for the programs with collectives: torch's, where FP8RT_NCCL does not say
if [ -z "${FP8RT_NCCL:-}" ]; then
	FP8RT_NCCL=
	for p in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
		for l in "$p"/nvidia/nccl*/lib/libnccl.so.2 "$p"/nvidia/*/lib/libnccl.so.2; do
			[ -f "$l" ] && [ -z "$FP8RT_NCCL" ] && FP8RT_NCCL=$l
		done
	done
	export FP8RT_NCCL
fi
echo "NCCL: ${FP8RT_NCCL:-none found (the collective programs will fail)}"

# the fp8 all-gather against bf16's and torch's over the GPUs here (two at
# most; one: local copies, said so)
gather_bench() {
	local n=$(($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') >= 2 ? 2 : 1))
	NCCL_NVLS_ENABLE=0 FP8RT_LIBRARY=$PWD/build-gpu/runtime/libfp8rt.so python3 -m torch.distributed.run \
		--nproc_per_node=$n --master_port=29534 bench/bench_gather.py "$dir/bench" "$out/bench.md" ||
		bad "fp8 all-gather benchmark"
}

if [ "$bench" = --bench-only ]; then
	python3 bench/bench_layer.py $fp8run "$dir/bench" "$out/bench.md" || bad "benchmark"
	python3 bench/bench_backward.py $fp8run "$dir/bench" "$out/bench.md" || bad "backward benchmark"
	python3 bench/bench_gemm.py $fp8run "$dir/bench" "$out/bench.md" || bad "GEMM benchmark"
	python3 bench/bench_kernels.py $fp8run "$out/bench.md" fp8cc="$dir/bench" || bad "kernel benchmark"
	python3 bench/bench_overlap.py "$out/bench.md" || bad "overlap benchmark"
	gather_bench
	exit $((fails > 0))
fi

step "runtime tests (ctest)"
# -V: every test's lines (not only a failing one's), so the skips are counted
[ "${SKIP_CTEST:-}" ] || (cd build-gpu && ctest -V) > "$out/ctest.log" 2>&1 || bad "ctest (see ctest.log)"
if [ -f "$out/ctest.log" ]; then
	grep -E "Synthesis|tests passed" "$out/ctest.log" | head -5
	echo "skipped GPU tests: $(grep -c '\[SKIP\]' "$out/ctest.log") (each named in ctest.log)"
else
	echo "SKIP the runtime tests (SKIP_CTEST)"
fi

step "corpus: fp8run against the reference interpreter"
checks=$out/checks.tsv
: > "$checks"
[ "${SKIP_CORPUS:-}" ] && echo "SKIP the corpus (SKIP_CORPUS)"
for ptx in "$dir"/ptx/*.ptx; do
	[ "${SKIP_CORPUS:-}" ] && break
	name=$(basename "$ptx" .ptx)
	[[ $name =~ ${ONLY:-.} ]] || continue   # ONLY=REGEX: a part of the corpus
	opts=()
	# matmul*: outputs named mm* are GEMM results, which check.py knows by name
	case $name in
	transcendental*) opts=(--rtol 2e-6 --atol 1e-6) ;;   # lgamma: libdevice's near its zeros
	rows_*) opts=(--rtol 2e-6) ;;   # exp and rsqrt: libdevice's last bit (the sums are exact)
	composites*) opts=(--rtol 1e-2) ;;   # sums in another order: a bf16 result may be one bit off (below)
	indices*) opts=(--frob ia) ;;   # ia: index_add's sums, perhaps in another order; the rest exact (below)
	seed_*|large) opts=(--frob t122) ;;
	backward*) opts=(--frob grad_input,grad_weight) ;;
	collectives_fp8*) opts=(--frob t122) ;;   # the fp8 all-gather (shards.c), one rank: the layer's GEMM
	collectives*) opts=(--frob y) ;;   # y: an f32 GEMM of the gathered tensor
	fp8_linear_step*) opts=(--frob forward/t122,backward/grad_input,backward/grad_weight) ;;
	real_12*|real_20|real_26|epilogues*) opts=(--frob-all) ;;   # GEMMs and what follows them
	real_*) opts=(--rtol 2e-6) ;;                    # sin, cos, exp: the math library's last bits
	esac
	# a program with collectives runs as the one rank of a communicator
	rk=()
	grep -q '^// collective' "$ptx" && rk=(--ranks 1)
	for in in "$dir/ptx/$name".s*.in.safetensors; do
		s=${in%.in.safetensors}
		s=${s##*.}
		sopts=() dopts=("${opts[@]}")
		# the tolerance for sums in another order holds only where the
		# interpreter found such sums on this draw (NAME.DRAW.order,
		# prepare.sh); elsewhere the bits must be equal
		case $name in
		composites* | indices*)
			[ -f "$dir/ptx/$name.$s.order" ] ||
				{ dopts=(); echo "     $name $s: no sum order-dependent on this draw, compared bit for bit"; } ;;
		esac
		case $name.$s in
		matmul*.s1|scaled_*.s1|mlp_*.s1) sopts=(--gemm-special) ;;   # overflowing sums: which non-finite value is order's
		real_12*.s1|real_20.s1|real_26.s1|epilogues*.s1) echo "skip $name $s: special values through GEMMs and the ops after them (check.py --gemm-special)"; continue ;;
		esac
		got=/tmp/$name.$s.got.safetensors
		if ! $fp8run "$ptx" "${rk[@]}" --inputs "$in" -o "$got" > /tmp/run.log 2>&1; then
			bad "$name $s: fp8run: $(tail -3 /tmp/run.log)"
			continue
		fi
		# compared after the loop, all in one process (torch starts once)
		printf '%s\t%s\t%s\t%s\n' "$name $s" "$dir/ptx/$name.$s.expected.safetensors" "$got" \
			"${dopts[*]} ${sopts[*]}" >> "$checks"
		case $name in
		seed_*|large)
			python3 tests/gpu/torch_layer.py "$in" "$got" --expected "$dir/ptx/$name.$s.expected.safetensors" \
				> /tmp/layer.log 2>&1 && echo "ok   $name $s against PyTorch" || { bad "$name $s against PyTorch"; cat /tmp/layer.log; }
			grep Frobenius /tmp/layer.log
			;;
		esac
		# the prims fp8cc composes (argmax, argmin, index_copy, unfold) done again by torch
		case $name in
		indices*)
			python3 tests/gpu/torch_indices.py "$in" "$got" > /tmp/indices.log 2>&1 &&
				echo "ok   $name $s against PyTorch" || { bad "$name $s against PyTorch"; cat /tmp/indices.log; }
			;;
		esac
		# matmul and scaled_mm programs done again by torch, on the normal draws only (torch rounds
		# after the product and after the bias, so near overflow its NaN and inf differ)
		case $name.$s in
		matmul*.s2|scaled_weights*.s2|scaled_block*.s2|scaled_rowwise*.s2|epilogues_fused.s2|epilogues_gelu_aux_fused.s2)
			python3 tests/gpu/torch_gemm.py "$dir/ptx/${name%_O0}.ir" "$in" "$got" > /tmp/gemm.log 2>&1 &&
				echo "ok   $name $s against PyTorch" || { bad "$name $s against PyTorch"; cat /tmp/gemm.log; }
			{ echo "== $name $s"; cat /tmp/gemm.log; } >> "$out/torch_gemm.log"
			;;
		esac
		# the same bits on a second run (graph replay) and without graphs
		$fp8run "$ptx" "${rk[@]}" --inputs "$in" -o /tmp/again.safetensors --iters 3 > /dev/null 2>&1 &&
			cmp -s "$got" /tmp/again.safetensors || bad "$name $s: a second run gave other bits"
		$fp8run "$ptx" "${rk[@]}" --inputs "$in" -o /tmp/nograph.safetensors --no-graph > /dev/null 2>&1 &&
			cmp -s "$got" /tmp/nograph.safetensors || bad "$name $s: without graphs, other bits"
		# outputs that may update their inputs in place, in their inputs' memory: the same bits
		if grep -q '^// output .* inplace=1$' "$ptx"; then
			$fp8run "$ptx" "${rk[@]}" --inputs "$in" -o /tmp/inplace.safetensors --in-place > /dev/null 2>&1 &&
				cmp -s "$got" /tmp/inplace.safetensors && echo "ok   $name $s in place" ||
				bad "$name $s: in place (fp8run --in-place), other bits"
		fi
	done
done

step "random programs (tests/gpu/fuzz.sh) against the reference interpreter"
# every output bit for bit: the programs hold only ops fp8cc promises exact
if [ "${SKIP_FUZZ:-}" ] || [ ! -d "$dir/fuzz" ]; then
	echo "SKIP the random programs (${SKIP_FUZZ:+SKIP_FUZZ}${SKIP_FUZZ:-no $dir/fuzz})"
else
	for ptx in "$dir"/fuzz/*.ptx; do
		name=$(basename "$ptx" .ptx)
		for s in s1 s2; do
			in=$dir/fuzz/${name%_O0}.$s
			if [ -f "$in.order" ]; then
				echo "skip $name $s: ${name%_O0}'s sums are order-dependent on this draw ($(sed 's/.*: \([0-9]* elements\?\) .*(\(the first[^)]*\)).*/\1, \2/' "$in.order"))"
				continue
			fi
			got=/tmp/$name.$s.got.safetensors
			if ! $fp8run "$ptx" --inputs "$in.in.safetensors" -o "$got" > /tmp/run.log 2>&1; then
				bad "$name $s: fp8run: $(tail -3 /tmp/run.log)"
				continue
			fi
			printf '%s\t%s\t%s\t\n' "$name $s" "$in.expected.safetensors" "$got" >> "$checks"
		done
	done
	echo "$(ls "$dir"/fuzz/*.ptx | wc -l) programs (-O2 and -O0), two draws each: compared below"
fi

if [ -s "$checks" ]; then
python3 tests/gpu/check.py --batch "$checks" > "$out/check.log" 2>&1
echo "$(grep -c '^ok ' "$out/check.log") comparisons with the interpreter passed"
if grep -q '^FAILED ' "$out/check.log"; then
	# each failure with the mismatches printed before its line
	awk '/^ok /{buf=""; next} /^FAILED /{print buf $0; buf=""; next} {buf=buf $0 "\n"}' "$out/check.log" | head -80
	fails=$((fails + $(grep -c '^FAILED ' "$out/check.log")))
fi
tail -1 "$out/check.log" | grep -q 'comparison(s) failed' || bad "check.py --batch (see check.log)"
fi

step "the benchmarks' kernels, layers and backward steps against PyTorch eager (large tensors)"
if [ "${SKIP_LARGE:-}" ]; then
	echo "SKIP the large tensors (SKIP_LARGE)"
else
	python3 tests/gpu/torch_kernels.py $fp8run "$dir/bench" > "$out/torch_kernels.log" 2>&1 ||
		{ grep -v '^ok' "$out/torch_kernels.log" | head -20; bad "torch_kernels.py (see torch_kernels.log)"; }
	tail -1 "$out/torch_kernels.log"
fi

step "applications: examples/c/extern, the Python binding with torch"
if [ "${SKIP_APPS:-}" ]; then
	echo "SKIP the applications (SKIP_APPS)"
elif [ -f "$dir/extra/gram.ptx" ]; then
	cc -O2 examples/c/extern.c -Iruntime -Lbuild-gpu/runtime -Wl,-rpath,$PWD/build-gpu/runtime -lfp8rt -lm \
		-o /tmp/extern && /tmp/extern "$dir/extra/gram.ptx" || bad "examples/c/extern"
	FP8RT_LIBRARY=$PWD/build-gpu/runtime/libfp8rt.so python3 tests/gpu/test_python.py "$dir" $fp8run || bad "the Python binding"
	# Thunder's FSDP traces and the fp8 all-gather over two GPUs here as the
	# ranks (NVLink multicast off: the machines are shared); on one GPU, the
	# fp8 all-gather as one rank, the 2-rank traces skipped, said so
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	nproc=$((ngpu >= 2 ? 2 : 1))
	[ "$nproc" = 1 ] && echo "SKIP collectives over 2 GPUs: this machine has $ngpu (one rank instead)"
	NCCL_NVLS_ENABLE=0 FP8RT_LIBRARY=$PWD/build-gpu/runtime/libfp8rt.so python3 -m torch.distributed.run \
		--nproc_per_node=$nproc --master_port=29533 tests/gpu/test_collectives.py "$dir" || bad "collectives over $nproc GPU(s)"
else
	bad "no $dir/extra (run prepare.sh again)"
fi

if [ -f tests/oracle/gen_golden.py ] && [ "${ORACLE:-}" ]; then
	step "PyTorch oracle for every op"
	python3 tests/oracle/gen_golden.py "$out/golden" > "$out/oracle.log" 2>&1 || bad "gen_golden (see oracle.log)"
fi

if [ "$bench" = --bench ]; then
	step "benchmark: the fp8 linear layer"
	python3 bench/bench_layer.py $fp8run "$dir/bench" "$out/bench.md" || bad "benchmark"
	python3 bench/bench_backward.py $fp8run "$dir/bench" "$out/bench.md" || bad "backward benchmark"
	step "benchmark: GEMMs of every kind"
	python3 bench/bench_gemm.py $fp8run "$dir/bench" "$out/bench.md" || bad "GEMM benchmark"
	step "benchmark: memory-bound kernels"
	python3 bench/bench_kernels.py $fp8run "$out/bench.md" fp8cc="$dir/bench" || bad "kernel benchmark"
	step "benchmark: a GEMM and memory-bound work at once"
	python3 bench/bench_overlap.py "$out/bench.md" || bad "overlap benchmark"
	step "benchmark: the fp8 all-gather"
	gather_bench
fi

step "result"
echo "$fails failure(s)"
exit $((fails > 0))
