#!/bin/sh
# Compiles every public header on its own, as C11 and as C++11, 14, 17 and
# 20, with g++ and clang++ (gcc and clang for C), with the strict warnings
# (-Wall -Wextra -Wpedantic -Werror, and -Wold-style-cast for C++); then
# static_inits.cpp, which uses every SB_*_INIT, in each C++ mode; and
# syncband.hpp as C++20, and below it, where it must stop with its own
# #error alone.  Usage: compile_headers.sh INCLUDE_DIR WORK_DIR
set -eu
inc=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
fail=0
count=0
strict="-Wall -Wextra -Wpedantic -Werror"

compile() { # LANG-FLAGS... -- file
	count=$((count + 1))
	if ! "$@" >"$work/out.txt" 2>&1; then
		echo "FAILED: $*" >&2
		cat "$work/out.txt" >&2
		fail=1
	fi
}

for cc in gcc clang; do
	command -v $cc >/dev/null || { echo "missing compiler: $cc" >&2; exit 1; }
done
for cxx in g++ clang++; do
	command -v $cxx >/dev/null || { echo "missing compiler: $cxx" >&2; exit 1; }
done

for h in "$inc"/syncband/*.h; do
	name=$(basename "$h")
	# uv.h, the libuv adapter, only where libuv is installed; as C11 with
	# the POSIX types that libuv's own header needs and -std=c11 hides.
	extra=""
	cextra=""
	if [ "$name" = uv.h ]; then
		if ! pkg-config --exists libuv 2>/dev/null; then
			echo "libuv not found (pkg-config): syncband/uv.h is not compiled"
			continue
		fi
		extra=$(pkg-config --cflags libuv)
		cextra="-D_POSIX_C_SOURCE=200809L"
	fi
	printf '#include <syncband/%s>\n' "$name" >"$work/$name.c"
	cp "$work/$name.c" "$work/$name.cpp"
	for cc in gcc clang; do
		compile $cc -std=c11 $strict $cextra $extra -fsyntax-only -I"$inc" "$work/$name.c"
	done
	for cxx in g++ clang++; do
		for std in 11 14 17 20; do
			compile $cxx -std=c++$std $strict -Wold-style-cast $extra -fsyntax-only \
				-I"$inc" "$work/$name.cpp"
		done
	done
done
for cxx in g++ clang++; do
	for std in 11 14 17 20; do
		compile $cxx -std=c++$std $strict -Wold-style-cast -fsyntax-only -I"$inc" \
			"$here/static_inits.cpp"
	done
	if [ -f "$inc/syncband/syncband.hpp" ]; then
		compile $cxx -std=c++20 $strict -Wold-style-cast -fsyntax-only -I"$inc" \
			-x c++ "$inc/syncband/syncband.hpp"
		# Below C++20 it stops with its own message alone, not libstdc++'s.
		for std in 11 14 17; do
			count=$((count + 1))
			if $cxx -std=c++$std -fsyntax-only -I"$inc" -x c++ \
				"$inc/syncband/syncband.hpp" >"$work/out.txt" 2>&1 ||
				! grep -q "syncband.hpp needs C++20" "$work/out.txt" ||
				grep -v "syncband.hpp needs C++20" "$work/out.txt" | grep -q "error:"; then
				echo "FAILED: syncband.hpp as C++$std with $cxx: not our #error alone" >&2
				cat "$work/out.txt" >&2
				fail=1
			fi
		done
	fi
done
[ "$fail" -eq 0 ] || exit 1
echo "$count header compilations: every header, C11 and C++11/14/17/20, gcc/g++ and clang/clang++: clean"
