#!/usr/bin/env bash
# Prepare a GPU run (the GPU machine has no LLVM and no package registry):
# compile every GPU test program to PTX here, draw its inputs, and record the
# reference interpreter's outputs; fetch the packages the build needs there
# (criterion for the runtime tests, jansson for fp8run's safetensors reader). Everything lands in DIR (default .carry/gpu), which
# tests/gpu/run.sh reads on the GPU machine.
#
# usage: tests/gpu/prepare.sh [DIR]     (FP8CC=path/to/fp8cc to pick a build)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.carry/gpu}
fp8cc=${FP8CC:-build/fp8cc}
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
rm -rf "$out"
mkdir -p "$out/ptx" "$out/bench" "$out/debs"

# compile NAME PROGRAM [FLAGS...]: PTX (checked by ptxas), then inputs and
# expected outputs for seed 1 (special values) and seed 2 (normal draws)
compile() {
	local name=$1 prog=$2
	shift 2
	"$fp8cc" "$prog" "$@" -o "$out/ptx/$name.ptx"
	"$ptxas" -arch=sm_90 "$out/ptx/$name.ptx" -o /dev/null
	"$fp8cc" "$prog" "$@" --interpret --seed 1 --special \
		--save-inputs "$out/ptx/$name.s1.in.safetensors" -o "$out/ptx/$name.s1.expected.safetensors" \
		2> "$out/ptx/$name.err"
	order "$name" s1
	[ "${ONE_SEED:-}" ] && return
	"$fp8cc" "$prog" "$@" --interpret --seed 2 \
		--save-inputs "$out/ptx/$name.s2.in.safetensors" -o "$out/ptx/$name.s2.expected.safetensors" \
		2> "$out/ptx/$name.err"
	order "$name" s2
}

# order NAME DRAW: the interpreter's warnings, and NAME.DRAW.order where it
# found sums whose bits another order could change on that draw (run.sh
# compares the programs it allows a tolerance for sums exactly elsewhere)
order() {
	local err=$out/ptx/$1.err
	cat "$err" >&2
	grep 'order-dependent' "$err" > "$out/ptx/$1.$2.order" || rm "$out/ptx/$1.$2.order"
	rm "$err"
}

# every corpus program, IR text and trace, at -O2 and -O0; for the matmul and
# scaled_mm ones also the program as read (--passes= --emit=ir), which tests/gpu/torch_gemm.py
# does again with torch
for f in tests/gpu/corpus/*.ir tests/gpu/corpus/*.trace; do
	n=$(basename "${f%.*}")
	compile "$n" "$f"
	compile "${n}_O0" "$f" -O0
	case $n in
	matmul* | scaled_*) "$fp8cc" "$f" --passes= --emit=ir -o "$out/ptx/$n.ir" ;;
	esac
done
# the epilogue programs with their bias adds, ReLUs and GELUs as cuBLASLt
# epilogues (the corpus loop above compiled them as they are, bit-exact
# kernels), and the programs that --passes=epilogues makes (torch_gemm.py
# runs the ReLU MLP's with torch)
for f in tests/gpu/corpus/epilogues*; do
	n=$(basename "${f%.*}")_fused
	compile "$n" "$f" --fuse-epilogues
	"$fp8cc" "$f" --passes=epilogues --emit=ir -o "$out/ptx/$n.ir"
done
# the fp8 linear's training step: forward and backward, one program of two
# functions (its tensors are named FUNCTION/NAME in the safetensors files)
compile fp8_linear_step examples/fp8_linear_step_fwd.trace examples/fp8_linear_step_bwd.trace
compile fp8_linear_step_O0 examples/fp8_linear_step_fwd.trace examples/fp8_linear_step_bwd.trace -O0
# the real traces that compile (tests/real), with their signatures where
# the trace does not type its inputs (the carried files must stay under the
# device tool's 64 MiB)
# (trace 12, Llama's MLP at 2x2048 tokens, 4096 -> 11008, is too large to
# interpret: it runs with every dim divided by 32, as real_12_small)
sed 's/2048/64/g; s/11008/344/g; s/4096/128/g' tests/real/12_llama_mlp_inference.trace > "$out/real_12_small.trace"
compile real_12_small "$out/real_12_small.trace"
# (and trace 29, an MX quantization of a 4096x4096 tensor, 32 MB of inputs
# per draw, with 256x256)
sed 's/524288/2048/g; s/4096/256/g' tests/real/29_mx_quant_prologue_cut.trace > "$out/real_29_small.trace"
compile real_29_small "$out/real_29_small.trace"
for t in 01 02 04 06 07 20 26 27; do
	f=$(ls tests/real/${t}_*.trace)
	spec=$(grep "^$(basename "$f") " tests/real/signatures.txt | cut -d' ' -f2- || true)
	sig=()
	if [ -n "$spec" ]; then
		python3 tests/real/signature.py "$out/real_$t.sig" $spec
		sig=(--signature "$out/real_$t.sig")
	fi
	compile "real_$t" "$f" "${sig[@]}"
done
for t in before after; do
	compile "seed_$t" "examples/seed_fp8_linear_$t.trace"
	compile "seed_${t}_O0" "examples/seed_fp8_linear_$t.trace" -O0
done
# programs with externs, for the applications' step of run.sh: the C
# example's (examples/c/extern.c) and the real trace 10, apex cross entropy
# (test_python.py runs it and the next two with fp8cc.torch's externs)
mkdir -p "$out/extra"
"$fp8cc" examples/extern_gram.trace -o "$out/extra/gram.ptx" 2>/dev/null
"$fp8cc" tests/gpu/running_stats.ir -o "$out/extra/running_stats.ptx"
"$fp8cc" tests/real/10_apex_cross_entropy_fwdbwd.trace -o "$out/extra/real_10.ptx" 2>/dev/null
# the real traces 08 (apex xentropy, forward and backward) and 15 (unsloth's
# RoPE backward, with its signature): fp8cc.torch's externs
"$fp8cc" tests/real/08_apex_xentropy_fwd_bwd.trace -o "$out/extra/real_08.ptx" 2>/dev/null
"$fp8cc" tests/gpu/apex_torch_form.trace -o "$out/extra/apex_torch_form.ptx" 2>/dev/null
"$fp8cc" tests/gpu/torch_ops.trace -o "$out/extra/torch_ops.ptx" 2>/dev/null
"$fp8cc" tests/gpu/torch_promote.trace -o "$out/extra/torch_promote.ptx"
python3 tests/real/signature.py "$out/extra/real_15.sig" $(grep '^15_' tests/real/signatures.txt | cut -d' ' -f2-)
"$fp8cc" tests/real/15_unsloth_rope_backward.trace --signature "$out/extra/real_15.sig" \
	-o "$out/extra/real_15.ptx" 2>/dev/null
# Thunder's FSDP forward (real trace 22) and its forward and backward as one
# program (22 + 23): collectives over 2 ranks (test_collectives.py)
"$fp8cc" tests/real/22_fsdp_aug_fwd_allgather.trace -o "$out/extra/real_22.ptx" 2>/dev/null
"$fp8cc" tests/real/22_fsdp_aug_fwd_allgather.trace tests/real/23_fsdp_backward_reduce_scatter.trace \
	-o "$out/extra/pair_22_23.ptx" 2>/dev/null
# the fp8 all-gather (bench/gather_ir.py: the fp8 layer with its weight
# gathered) for 1 and 2 ranks, and the same without the shards pass, which
# gathers bf16: test_collectives.py compares the two and torch; the
# benchmark's shapes for bench_gather.py
noshards=--passes=canonicalize,transposes,canonicalize,ranges,layouts,fuse
for r in 1 2; do
	python3 bench/gather_ir.py 64 256 512 $r > "$out/extra/gather_r$r.ir"
	"$fp8cc" "$out/extra/gather_r$r.ir" -o "$out/extra/fp8_gather_r$r.ptx"
	"$fp8cc" "$out/extra/gather_r$r.ir" $noshards -o "$out/extra/bf16_gather_r$r.ptx"
	for s in 4096x4096x4096 8192x8192x8192; do
		IFS=x read -r m k n <<< "$s"
		python3 bench/gather_ir.py "$m" "$k" "$n" $r > "$out/bench/gather_${s}_r$r.ir"
		"$fp8cc" "$out/bench/gather_${s}_r$r.ir" -o "$out/bench/gather_${s}_fp8_r$r.ptx"
		"$fp8cc" "$out/bench/gather_${s}_r$r.ir" $noshards -o "$out/bench/gather_${s}_bf16_r$r.ptx"
	done
done
# the offloading MLP's forward and backward as one program, and the Llama-2
# forward with its signature (test_python.py)
"$fp8cc" tests/real/18_mlp_cpu_offload_aug_fwd.trace tests/real/19_mlp_cpu_offload_backward.trace \
	-o "$out/extra/pair_18_19.ptx" 2>/dev/null
python3 tests/real/signature.py "$out/extra/real_14.sig" $(grep '^14_' tests/real/signatures.txt | cut -d' ' -f2-)
"$fp8cc" tests/real/14_llama2_augmented_forward.trace --signature "$out/extra/real_14.sig" \
	-o "$out/extra/real_14.ptx" 2>/dev/null
x34=tests/real/thunder/x34_zero_to_thunder_c17o0_a5b5490_augmented_forward_fn.trace
python3 tests/real/signature.py "$out/extra/thunder_x34.sig" $(grep "^${x34##*/} " tests/real/thunder/signatures.txt | cut -d' ' -f2-)
"$fp8cc" $x34 --signature "$out/extra/thunder_x34.sig" -o "$out/extra/thunder_x34.ptx" 2>/dev/null
# (the seed layer at 1024x2048x2048, large enough for several tiles and
# grid steps a thread, small enough to carry: 18 MB of inputs and outputs)
python3 bench/linear_trace.py examples/seed_fp8_linear_after.trace 1024 2048 2048 > "$out/large.trace"
ONE_SEED=1 compile large "$out/large.trace"

for s in 16x32x64 4096x4096x4096 8192x4096x14336; do
	IFS=x read -r m k n <<< "$s"
	python3 bench/linear_trace.py examples/seed_fp8_linear_after.trace "$m" "$k" "$n" > "$out/bench/linear_$s.trace"
	"$fp8cc" "$out/bench/linear_$s.trace" -o "$out/bench/linear_$s.ptx"
	"$ptxas" -arch=sm_90 "$out/bench/linear_$s.ptx" -o /dev/null
done

for s in 4096x4096x4096 8192x4096x4096; do
	IFS=x read -r m k n <<< "$s"
	python3 bench/backward_trace.py examples/fp8_linear_backward.trace "$m" "$k" "$n" > "$out/bench/backward_$s.trace"
	"$fp8cc" "$out/bench/backward_$s.trace" -o "$out/bench/backward_$s.ptx"
	"$ptxas" -arch=sm_90 "$out/bench/backward_$s.ptx" -o /dev/null
done
compile backward_trace examples/fp8_linear_backward.trace

# the GEMM benchmark's programs (bench/gemm_ir.py lists them)
for c in $(python3 bench/gemm_ir.py); do
	python3 bench/gemm_ir.py "$c" > "$out/bench/gemm_$c.ir"
	"$fp8cc" "$out/bench/gemm_$c.ir" -o "$out/bench/gemm_$c.ptx"
	"$ptxas" -arch=sm_90 "$out/bench/gemm_$c.ptx" -o /dev/null
done

# the kernel benchmark's programs (bench/kernel_ir.py lists them)
for c in $(python3 bench/kernel_ir.py); do
	python3 bench/kernel_ir.py "$c" > "$out/bench/kernel_$c.ir"
	"$fp8cc" "$out/bench/kernel_$c.ir" -o "$out/bench/kernel_$c.ptx"
	"$ptxas" -arch=sm_90 "$out/bench/kernel_$c.ptx" -o /dev/null
done

# random programs of exact ops (tests/gpu/fuzz.sh): FUZZ of them, seeds 1 on;
# two, since --gpu programs draw inputs of up to a few MB and the carry must
# stay under 64 MiB (a longer campaign carries a directory of its own:
# fuzz.sh says how)
FP8CC=$fp8cc tests/gpu/fuzz.sh "$out" 1 "${FUZZ:-2}"

(cd "$out/debs" && apt-get download libcriterion3 libcriterion-dev libnanomsg5 libgit2-1.5 \
	libboxfort-dev libmbedtls14 libmbedx509-1 libmbedcrypto7 libhttp-parser2.9 libssh2-1 \
	libjansson4 libjansson-dev >/dev/null 2>&1)
for p in libcriterion-dev libjansson-dev libjansson4; do
	ls "$out/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "prepare: could not download $p" >&2; exit 1; }
done
# an -O0 program draws the same inputs as its -O2 one and the interpreter
# gives the same outputs: such files are carried once (the device tool
# carries 64 MiB) and listed in same.txt, whose copies run.sh makes again
: > "$out/same.txt"
for f in "$out"/ptx/*_O0.*.safetensors; do
	b=$(basename "$f")
	twin=${b/_O0./.}
	if cmp -s "$f" "$out/ptx/$twin"; then
		rm "$f"
		echo "$b $twin" >> "$out/same.txt"
	fi
done
git rev-parse HEAD > "$out/commit" 2>/dev/null || echo unknown > "$out/commit"
du -sh "$out"
