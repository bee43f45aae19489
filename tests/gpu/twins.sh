#!/usr/bin/env bash
# usage: tests/gpu/twins.sh DIR — make again the files prepare.sh carried
# once for an -O2 program and its -O0 twin (DIR/same.txt: "copy twin" lines;
# the same draws give the same inputs, and the interpreter the same outputs)
set -euo pipefail
dir=${1:-.carry/gpu}
[ -f "$dir/same.txt" ] || exit 0
while read -r copy twin; do
	[ -f "$dir/ptx/$copy" ] || cp "$dir/ptx/$twin" "$dir/ptx/$copy"
done < "$dir/same.txt"
