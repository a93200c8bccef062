#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# tests/abi/check.sh LIB.so LIB.a MAP BASELINE [--update]
#
# The ABI check: a change to what a shared library exports must be a
# deliberate, reviewed diff.
#   1. The symbols the static archive defines with default visibility (the
#      SB_API ones) are exactly the ones the version script MAP lists, and the
#      ones the shared library exports.
#   2. The exported ABI (abidw: the symbols and every type they reach) matches
#      the committed BASELINE (abidiff).
# --update rewrites BASELINE from LIB.so (after a deliberate change; commit it
# with the change and the version script).  Exit 77 (skipped) without
# abigail-tools, which ./x installs.
set -eu

so=$1
archive=$2
map=$3
baseline=$4

if ! command -v abidw >/dev/null 2>&1 || ! command -v abidiff >/dev/null 2>&1; then
	echo "abidw/abidiff not found (Debian: abigail-tools); the ABI check is skipped"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Default-visibility definitions in the archive's objects: the SB_API ones.
readelf -sW "$archive" | awk '$5 == "GLOBAL" && $6 == "DEFAULT" && $7 != "UND" { print $8 }' |
	sort -u >"$tmp/declared"
sed -n 's/^[[:space:]]*\(sb_[A-Za-z0-9_]*\);.*/\1/p' "$map" | sort -u >"$tmp/listed"
nm -D --defined-only "$so" | awk '{ sub(/@.*/, "", $3); print $3 }' | grep -v '^SYNCBAND_' | sort -u >"$tmp/exported"

status=0
if ! cmp -s "$tmp/declared" "$tmp/listed"; then
	echo "SB_API symbols (<) and the version script $map (>) differ:"
	diff "$tmp/declared" "$tmp/listed" || true
	status=1
fi
if ! cmp -s "$tmp/listed" "$tmp/exported"; then
	echo "the version script (<) and what $(basename "$so") exports (>) differ:"
	diff "$tmp/listed" "$tmp/exported" || true
	status=1
fi

# File names without directories: the baseline does not depend on the checkout.
abidw --no-corpus-path --no-show-locs --no-comp-dir-path --short-locs "$so" >"$tmp/now.abi"
if [ "${5:-}" = --update ]; then
	cp "$tmp/now.abi" "$baseline"
	echo "wrote $baseline"
	exit $status
fi
if ! abidiff --no-show-locs "$baseline" "$tmp/now.abi"; then
	echo "the exported ABI of $(basename "$so") differs from $baseline (above)."
	status=1
fi
if [ $status -ne 0 ]; then
	echo "If the change is deliberate: update $map, then run"
	echo "  sh tests/abi/check.sh $so $archive $map $baseline --update"
	echo "and commit the new baseline with the change."
	exit 1
fi
echo "ABI of $(basename "$so") matches $baseline ($(wc -l <"$tmp/listed") symbols)"
