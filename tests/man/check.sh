#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# tests/man/check.sh SRC CC WORK [BUILD MANDIR [uring]]
#
# The manual pages (man/man3, man/man7; the executor's in man/uring/man3):
#   1. every symbol of the version scripts, and every public function the
#      headers declare, has a page, real or a `.so` link, beside the pages of
#      its library (the executor's are installed with syncband_uring only);
#   2. every `.so` link names an existing real page, which names the symbol;
#   3. each real page's SYNOPSIS compiles against the headers it includes
#      (CC: each prototype redeclares the header's, so a mismatch is an error);
#   4. `mandoc -Tlint -Wwarning` is clean for every page;
#   5. with BUILD: `cmake --install` into a temporary prefix puts the pages
#      under MANDIR, with the executor's only when "uring" is given, and
#      `man -w sb_semaphore_acquire` finds the page through MANPATH.
# Exits 77 (skipped) when everything else passed but mandoc is missing
# (Debian: mandoc, which ./x installs).
set -eu

src=$1
cc=$2
work=$3
build=${4:-}
mandir=${5:-share/man}
uring=${6:-}

core=$src/man/man3
ring=$src/man/uring/man3
status=0
fail() {
	echo "FAIL: $*"
	status=1
}

rm -rf "$work"
mkdir -p "$work"

# 1. Names that need a page, each with the directory its page belongs in.
names() { # MAP HEADERS...: the map's symbols and the headers' public functions
	map=$1
	shift
	sed -n 's/^[[:space:]]*\(sb_[A-Za-z0-9_]*\);.*/\1/p' "$map"
	sed -n 's/^\(SB_API\|SB_INLINE\|static inline\) .*[ *]\(sb_[a-z0-9_]*\)(.*/\2/p' "$@" |
		grep -v '^sb__' || true
}
core_headers=""
for h in "$src"/include/syncband/*.h; do
	[ "$(basename "$h")" = executor.h ] || core_headers="$core_headers $h"
done
# shellcheck disable=SC2086
names "$src/src/syncband.map" $core_headers | sort -u >"$work/core.names"
names "$src/src/executor/syncband_uring.map" "$src/include/syncband/executor.h" |
	sort -u >"$work/uring.names"
check_names() { # LIST DIR
	while read -r name; do
		[ -f "$2/$name.3" ] || fail "$name has no page in ${2#"$src"/}"
	done <"$1"
}
check_names "$work/core.names" "$core"
check_names "$work/uring.names" "$ring"

# 2. Links, and the real pages.
: >"$work/real"
for page in "$core"/*.3 "$ring"/*.3 "$src"/man/man7/*.7; do
	first=$(head -n 1 "$page")
	case $first in
	.so\ *)
		target=${first#.so }
		name=$(basename "$page" .3)
		dir=$(dirname "$page")
		if [ "$(wc -l <"$page")" -ne 1 ]; then
			fail "${page#"$src"/}: a link page holds its .so line alone"
		elif [ ! -f "$dir/../$target" ]; then
			fail "${page#"$src"/}: $target does not exist"
		elif head -n 1 "$dir/../$target" | grep -q '^\.so '; then
			fail "${page#"$src"/}: $target is a link itself"
		elif ! grep -qw "$name" "$dir/../$target"; then
			fail "${page#"$src"/}: $target does not name $name"
		fi
		;;
	*)
		echo "$page" >>"$work/real"
		;;
	esac
done

# 3. Each real page's synopsis, redeclared after its headers.
while read -r page; do
	c=$work/$(basename "$page").c
	awk '
	/^\.Sh / { in_syn = ($2 == "SYNOPSIS"); next }
	!in_syn { next }
	/^\.Bd / { lit = 1; next }
	/^\.Ed/ { lit = 0; next }
	lit { next }
	/^\.In / { print "#include <" $2 ">"; next }
	/^\.Fd #define / {
		m = $3; sub(/\(.*/, "", m)
		printf "#ifndef %s\n#error %s is not defined\n#endif\n", m, m
		next
	}
	/^\.Ft / { ft = substr($0, 5); next }
	/^\.Fn / {
		rest = substr($0, 5); n = index(rest, " ")
		name = n ? substr(rest, 1, n - 1) : rest
		args = n ? substr(rest, n + 1) : ""
		out = ""
		while (args != "") {
			if (substr(args, 1, 1) == "\"") {
				args = substr(args, 2); e = index(args, "\"")
				a = substr(args, 1, e - 1); args = substr(args, e + 1)
			} else {
				e = index(args, " "); if (!e) e = length(args) + 1
				a = substr(args, 1, e - 1); args = substr(args, e)
			}
			sub(/^ +/, "", args)
			out = out (out == "" ? "" : ", ") a
		}
		printf "%s %s(%s);\n", ft, name, out
		next
	}
	/^\.Vt / { v = substr($0, 5); sub(/ ;$/, ";", v); print v; next }
	' "$page" >"$c"
	# The libuv adapter's page: libuv's header needs the POSIX types that
	# -std=c11 hides, and libuv itself (skipped where it is not installed).
	extra=""
	if grep -q '^\.In syncband/uv\.h' "$page"; then
		pkg-config --exists libuv 2>/dev/null || continue
		extra="-D_POSIX_C_SOURCE=200809L $(pkg-config --cflags libuv)"
	fi
	# shellcheck disable=SC2086
	if grep -q . "$c" &&
		! "$cc" -std=c11 $extra -Wall -Werror -fsyntax-only -I"$src/include" "$c" >"$c.log" 2>&1; then
		fail "${page#"$src"/}: its SYNOPSIS does not match the headers:"
		sed 's/^/    /' "$c.log"
	fi
done <"$work/real"

# 5. The install tree.
if [ -n "$build" ]; then
	prefix=$work/prefix
	cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
		{ cat "$work/install.log"; fail "cmake --install failed"; }
	man3=$prefix/$mandir/man3
	[ -f "$man3/sb_semaphore_acquire.3" ] || fail "sb_semaphore_acquire.3 is not installed"
	[ -f "$prefix/$mandir/man7/syncband.7" ] || fail "syncband.7 is not installed"
	if [ "$uring" = uring ]; then
		[ -f "$man3/sb_spawn.3" ] || fail "the executor's pages are not installed with it"
	elif [ -f "$man3/sb_spawn.3" ]; then
		fail "the executor's pages are installed without the executor"
	fi
	if command -v man >/dev/null 2>&1; then
		found=$(MANPATH=$prefix/$mandir man -w sb_semaphore_acquire 2>&1) ||
			fail "man -w sb_semaphore_acquire: $found"
		case $found in
		"$man3"/*) ;;
		*) fail "man -w sb_semaphore_acquire found '$found', not the installed page" ;;
		esac
	fi
fi

# 4. mandoc's lint, last: the one check that can be skipped.
if ! command -v mandoc >/dev/null 2>&1; then
	[ $status -eq 0 ] || exit 1
	echo "mandoc not found (Debian: mandoc); its lint is skipped"
	exit 77
fi
# shellcheck disable=SC2046
if ! mandoc -Tlint -Wwarning $(cat "$work/real") >"$work/lint.log" 2>&1; then
	sed 's/^/    /' "$work/lint.log"
	fail "mandoc -Tlint -Wwarning is not clean"
fi

[ $status -eq 0 ] || exit 1
set -- "$core"/*.3 "$ring"/*.3
echo "manual pages: $(wc -l <"$work/real") real, $# in man3; every symbol covered; lint clean"
