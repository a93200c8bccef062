#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The full soak (./x soak): builds test_soak optimised but with assertions
# (RelWithDebInfo without -DNDEBUG) in build/soak, runs it with OPS primitive
# operations in total, and prints its summary line and the wall time.
#
#   tests/executor/soak.sh [OPS]          OPS defaults to 10000000 (10^7)
#
# Passed through to the test: SB_SOAK_SEED (the seed, printed; default
# 0x5eed), SB_SOAK_THREADS (executor threads, 4), SB_SOAK_EVENTFD=1 (the
# eventfd doorbell instead of MSG_RING), SB_SOAK_STALL (seconds without
# progress that count as a hang, 60).  SB_SOAK_BUILD overrides the build
# directory.  Exits with the test's status: 0 passed, 77 skipped (no
# io_uring here), anything else failed.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
ops=${1:-10000000}
case $ops in
'' | *[!0-9]*)
	echo "usage: $0 [OPS]   (OPS: a positive number of operations)" >&2
	exit 2
	;;
esac
dir=${SB_SOAK_BUILD:-$root/build/soak}

# CMAKE_C_FLAGS_RELWITHDEBINFO is set in full: the default carries -DNDEBUG,
# which would come after (and beat) an -UNDEBUG in CMAKE_C_FLAGS.
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" >/dev/null
cmake --build "$dir" --target test_soak

echo "==> soak: $ops operations (build: $dir)"
start=$(date +%s.%N)
rc=0
SB_SOAK_OPS=$ops "$dir/tests/executor/test_soak" || rc=$?
end=$(date +%s.%N)
wall=$(echo "$start $end" | awk '{ printf "%.1f", $2 - $1 }')
case $rc in
0) echo "==> soak passed: $ops operations in $wall s wall" ;;
77) echo "==> soak skipped (no io_uring on this machine) after $wall s" ;;
*) echo "==> soak FAILED (exit $rc) after $wall s wall" ;;
esac
exit $rc
