#!/usr/bin/env bash
# The installed tree, as an application sees it: install a build into a
# prefix and move it (the CMake package, the pkg-config file and the tools'
# RPATH must not name where it was installed), compile the seed with the
# installed fp8cc, build examples/c against the moved tree through
# find_package and through pkg-config, and check that it prints the plan's
# signature (no GPU needed). Then the same with a static libfp8rt, built
# here (runtime only).
#
# usage: tests/install/run.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(sed -n 's/^project(fp8cc VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
IFS=. read -r vmajor vminor vpatch <<< "$version"
# the plan versions the runtime reads, as runtime/plan.h says them
plans="$(sed -n 's/^#define RT_PLAN_VERSION_MIN \([0-9]*\).*/\1/p' runtime/plan.h)..$(sed -n 's/^#define RT_PLAN_VERSION_MAX \([0-9]*\).*/\1/p' runtime/plan.h)"
vnumber=$((vmajor * 10000 + vminor * 100 + vpatch))
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
tmp=$(mktemp -d /tmp/fp8-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: FAILED: $*" >&2; exit 1; }

# install PREFIX BUILD: install, move, check what is there
install() {
	cmake --install "$2" --prefix "$tmp/staged" >/dev/null
	mv "$tmp/staged" "$1"
	for f in include/fp8rt.h lib/cmake/fp8rt/fp8rtConfig.cmake \
		lib/cmake/fp8rt/fp8rtConfigVersion.cmake lib/pkgconfig/fp8rt.pc bin/fp8run; do
		[ -e "$1/$f" ] || fail "not installed: $f"
	done
	! grep -rq "$tmp/staged" "$1/lib/cmake" "$1/lib/pkgconfig" || fail "the package names $tmp/staged"
}

# consume NAME PREFIX [PKG_CONFIG]: build examples/c both ways, compare
# what it prints with the plan's own lines
consume() {
	local name=$1 prefix=$2 pc=${3:-pkg-config}
	cmake -S examples/c -B "$tmp/$name.cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
	cmake --build "$tmp/$name.cmake" >/dev/null
	mkdir -p "$tmp/$name.pc"
	PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -s -C examples/c PKG_CONFIG="$pc" O="$tmp/$name.pc" >/dev/null
	for bin in "$tmp/$name.cmake/signature" "$tmp/$name.pc/signature"; do
		"$bin" "$tmp/fused.ptx" > "$tmp/got"
		grep -q "^# libfp8rt $vnumber reads plan versions $plans\$" "$tmp/got" || fail "$bin: $(head -1 "$tmp/got")"
		grep -v '^#' "$tmp/got" | diff -u "$tmp/want" - || fail "$bin: not the plan's signature"
	done
	echo "ok   $name: examples/c through find_package and through pkg-config"
}

install "$tmp/shared" "$build"
prefix=$tmp/shared
[ -e "$prefix/lib/libfp8rt.so.0" ] || fail "no libfp8rt.so.0"
"$prefix/bin/fp8cc" --version | grep -qF "fp8cc $version " || fail "installed fp8cc --version (want $version)"
"$prefix/bin/fp8run" --version | grep -qF "fp8run $version " || fail "installed fp8run --version (want $version)"
"$prefix/bin/fp8cc" examples/seed_fp8_linear_after.trace -o "$tmp/fused.ptx"
"$prefix/bin/fp8cc" examples/seed_fp8_linear_after.trace --emit=plan | grep -E '^(target|input|output) ' > "$tmp/want"
consume shared "$prefix"
# the installed fp8run reads the same signature, without a GPU, as JSON
"$prefix/bin/fp8run" "$tmp/fused.ptx" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)["signature"]
print("target", s["target"])
for kind in ("input", "output"):
    for i, t in enumerate(s["functions"][0][kind + "s"]):
        print(kind, i, t["name"], "%s[%s]" % (t["dtype"], ",".join(map(str, t["shape"]))))
' | diff -u "$tmp/want" - || fail "fp8run --json: not the plan's signature"
echo "ok   shared: the installed fp8run --json gives the plan's signature"
# the installed Python package finds the installed libfp8rt by itself
pydir=$(find "$prefix/lib" -maxdepth 3 -type d -name fp8cc -path '*-packages/*' | head -1)
[ -n "$pydir" ] || fail "the Python package is not installed"
PYTHONPATH=$(dirname "$pydir") python3 -c '
import sys, fp8cc
p = fp8cc.read(sys.argv[1])
print("target", p.target)
for kind in ("inputs", "outputs"):
    for i, t in enumerate(getattr(p[0], kind)):
        print(kind[:-1], i, t.name, "%s[%s]" % (t.dtype, ",".join(map(str, t.shape))))
' "$tmp/fused.ptx" | diff -u "$tmp/want" - || fail "the installed Python package: not the plan's signature"
echo "ok   shared: the installed Python package reads the plan's signature"

cmake -S . -B "$tmp/build-static" -DBUILD_SHARED_LIBS=OFF -DFP8CC_COMPILER=OFF -DFP8CC_TESTS=OFF >/dev/null
cmake --build "$tmp/build-static" -j "$jobs" >/dev/null
install "$tmp/static" "$tmp/build-static"
[ -e "$tmp/static/lib/libfp8rt.a" ] && [ ! -e "$tmp/static/lib/libfp8rt.so" ] || fail "static: not libfp8rt.a alone"
consume static "$tmp/static" "pkg-config --static"
! ldd "$tmp/static.cmake/signature" | grep -q libfp8rt || fail "static: signature links libfp8rt.so"
