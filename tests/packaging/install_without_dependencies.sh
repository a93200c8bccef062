#!/bin/sh
# The README's install line on a machine with only a compiler and cmake:
# pkg-config lookups are disabled, so cmocka, liburing and libuv are "not
# there".  The configure must say what it skips, and the build and install
# must give the core library, which a program then builds against.
# Then a parent project vendors syncband with add_subdirectory and its own
# -fsanitize=thread flags: it must build, and syncband's sources must see
# none of syncband's own -Werror.
# Usage: install_without_dependencies.sh SOURCE_DIR WORK_DIR
set -eu
src=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cc=${CC:-cc}

# 1. cmake -S . -B build && cmake --build build && cmake --install build:
# an optimised library only, and one line that says so.
cmake -S "$src" -B "$work/build" -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >"$work/configure.txt"
grep -q "syncband [0-9.]*: Release, .*io_uring executor off, tests off" "$work/configure.txt" || {
	echo "configure did not say it builds a Release library without tests or executor:" >&2
	cat "$work/configure.txt" >&2
	exit 1
}
cmake --build "$work/build" >"$work/build.txt" 2>&1 || { cat "$work/build.txt" >&2; exit 1; }
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
lib=$(find "$work/prefix" -name libsyncband.a | head -n 1)
[ -n "$lib" ] || { echo "no libsyncband.a installed" >&2; exit 1; }
[ -f "$work/prefix/include/syncband/loop.h" ] || { echo "no loop.h installed" >&2; exit 1; }
if find "$work/prefix" -name 'libsyncband_uring*' -o -name executor.h | grep -q .; then
	echo "syncband_uring or its header was installed without being built" >&2
	exit 1
fi
# Asking for the executor that was not built fails with the reason.
mkdir -p "$work/wants_uring"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(w LANGUAGES C)\nfind_package(syncband REQUIRED COMPONENTS uring)\n' \
	>"$work/wants_uring/CMakeLists.txt"
if cmake -S "$work/wants_uring" -B "$work/wants_uring/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
	>"$work/wants_uring.txt" 2>&1; then
	echo "find_package(syncband COMPONENTS uring) succeeded without the executor" >&2
	exit 1
fi
grep -q "SYNCBAND_BUILD_URING=ON" "$work/wants_uring.txt" || {
	echo "find_package(syncband COMPONENTS uring) failed without saying why:" >&2
	cat "$work/wants_uring.txt" >&2
	exit 1
}
$cc -std=c11 -Wall -Werror -I"$work/prefix/include" -o "$work/core_user" \
	"$src/tests/consumer/main.c" "$lib"
"$work/core_user"

# 2. Vendored, with the parent's sanitizer flags.
cmake -S "$here/vendor" -B "$work/vendor" -DSYNCBAND_SOURCE_DIR="$src" \
	-DCMAKE_C_FLAGS="-fsanitize=thread -O1" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
	-DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build "$work/vendor" >"$work/vendor.txt" 2>&1 || { cat "$work/vendor.txt" >&2; exit 1; }
if grep -q -- "-Werror" "$work/vendor/compile_commands.json"; then
	echo "a vendored syncband forces -Werror on the parent's build:" >&2
	grep -- "-Werror" "$work/vendor/compile_commands.json" | head -n 3 >&2
	exit 1
fi
grep -q "src/loop.c" "$work/vendor/compile_commands.json"
"$work/vendor/vendored_app"
echo "install without dependencies, and vendoring with the parent's flags: ok"
