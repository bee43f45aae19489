#!/usr/bin/env bash
# Install what fp8cc needs to build and test on Debian 12, idempotently:
# LLVM 22 (C API, NVPTX, lit, FileCheck), criterion, jansson, Graphviz (the
# --emit=dot test renders with dot), pkg-config (the install test), cmake, a C compiler,
# clang-format 22 (the style check of the test command).
# `tools/setup.sh fuzz` adds clang 22 and its sanitizer and libFuzzer
# runtimes, for the fuzz harnesses (tools/fuzz.sh).
# The CUDA 13 toolkit is expected at /usr/local/cuda (CUDA_ROOT to change it).
set -euo pipefail
pkgs=(llvm-22-dev llvm-22-tools libcriterion-dev libjansson-dev graphviz pkg-config cmake make gcc python3
	clang-format-22)
[ "${1:-}" != fuzz ] || pkgs+=(clang-22 libclang-rt-22-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cuda=${CUDA_ROOT:-/usr/local/cuda}
for f in include/cuda.h include/cublasLt.h bin/ptxas nvvm/libdevice/libdevice.10.bc; do
	[ -e "$cuda/$f" ] || { echo "setup: missing $cuda/$f (the CUDA 13 toolkit)" >&2; exit 1; }
done
