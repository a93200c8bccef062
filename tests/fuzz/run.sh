#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# Builds the model-based fuzzers (tests/fuzz/CMakeLists.txt) with clang into
# build/fuzz, under libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer,
# and runs each TARGET (default: all of them) for SECONDS (default 30) on a
# fresh copy of its seed corpus (the committed corpus is never grown).
# TARGET is one of: semaphore mutex condvar event auto_event barrier once
# rwlock latch channel broadcast watch (a "fuzz_" prefix is accepted).  Prints, per target,
# libFuzzer's number of executed inputs; exits non-zero if any target crashed
# or found a model mismatch (the failing input is saved under
# build/fuzz/artifacts/TARGET/).
#
# Environment: CC (default clang); SB_FUZZ_MAX_LEN (default 2048), the
# largest input libFuzzer may try; SB_FUZZ_ARGS, extra libFuzzer flags.
# Replay a failure readably:
#   SB_FUZZ_TRACE=1 build/fuzz/fuzz_TARGET build/fuzz/artifacts/TARGET/crash-...
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
src="$root/tests/fuzz"
build="$root/build/fuzz"
all="semaphore mutex condvar event auto_event barrier once rwlock latch channel broadcast watch"

seconds=30
if [ $# -gt 0 ]; then
	case $1 in
	'' | *[!0-9]*) ;;
	*) seconds=$1; shift ;;
	esac
fi
targets=""
for t in "$@"; do
	t=${t#fuzz_}
	case " $all " in
	*" $t "*) targets="$targets $t" ;;
	*) echo "run.sh: unknown fuzz target '$t' (known: $all)" >&2; exit 2 ;;
	esac
done
[ -n "$targets" ] || targets=$all

CC=${CC:-clang}
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "run.sh: $CC not found; the fuzzers need clang and libFuzzer" \
		"(Debian: clang libclang-rt-14-dev)" >&2
	exit 1
fi

gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
if [ ! -f "$build/CMakeCache.txt" ]; then
	# shellcheck disable=SC2086
	CC=$CC cmake -S "$src" -B "$build" $gen >/dev/null
fi
cmake --build "$build" >/dev/null || {
	echo "run.sh: building the fuzzers failed; rebuilding verbosely:" >&2
	cmake --build "$build" >&2
	exit 1
}

failed=""
summary=""
for t in $targets; do
	corpus="$build/corpus-run/$t"
	artifacts="$build/artifacts/$t"
	log="$build/fuzz_$t.log"
	rm -rf "$corpus"
	mkdir -p "$corpus" "$artifacts"
	if [ -d "$src/corpus/$t" ]; then
		cp "$src/corpus/$t"/* "$corpus"/ 2>/dev/null || true
	fi
	printf '==> fuzz_%s: %s s\n' "$t" "$seconds"
	rc=0
	# shellcheck disable=SC2086
	"$build/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 \
		-max_len="${SB_FUZZ_MAX_LEN:-2048}" -timeout=20 -rss_limit_mb=2048 \
		-artifact_prefix="$artifacts/" ${SB_FUZZ_ARGS:-} "$corpus" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	if [ "$rc" -ne 0 ]; then
		failed="$failed $t"
		# The model's report (step, call, expected vs actual, the call
		# sequence), or the sanitizer's; and where the input was saved.
		if grep -q '^\*\*\* syncband model mismatch' "$log"; then
			sed -n '/^\*\*\* syncband model mismatch/,/^==[0-9]*==/p' "$log" |
				grep -v '^==[0-9]*==' | head -n 60
		else
			grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" |
				head -n 5 || true
		fi
		sed -n 's/.*Test unit written to \(.*\)/    input: \1/p' "$log"
		echo "    replay: SB_FUZZ_TRACE=1 $build/fuzz_$t <input>;  full log: $log"
		summary="$summary
  fuzz_$t: FAILED (rc $rc) after ${execs:-?} executions"
	else
		summary="$summary
  fuzz_$t: ${execs:-?} executions in $seconds s, no mismatch"
	fi
	printf '    executions: %s\n' "${execs:-?}"
done

printf '==> fuzz summary:%s\n' "$summary"
if [ -n "$failed" ]; then
	echo "==> fuzz FAILED:$failed"
	exit 1
fi
