#!/usr/bin/env bash
# Smoke test of the peer harness: builds it (offline, release, against the
# locked Debian crates) and runs every supported (scenario, impl) pair with
# tiny counts, checking that each prints its RESULT line; every unsupported
# pair must answer with its UNSUPPORTED line. Exits non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

cargo build --release --offline --locked --quiet
# Cargo resolves a relative CARGO_TARGET_DIR against the directory it runs in.
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in
    /*) ;;
    *) target_dir="$here/$target_dir" ;;
esac
peers="$target_dir/release/peers"

failures=0
pairs=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# Each run gets a generous per-pair timeout so a deadlock fails instead of hanging.
supported=0
while read -r scenario impl _rounds; do
    pairs=$((pairs + 1))
    supported=$((supported + 1))
    if ! out="$(timeout 60 "$peers" run "$scenario" "$impl" --rounds 10 --batches 1 </dev/null 2>&1)"; then
        fail "$scenario $impl exited non-zero:"$'\n'"$out"
        continue
    fi
    # Scenario names contain regex characters ("+", "."): match them literally.
    batch_ok=0 result_ok=0
    while IFS= read -r line; do
        case "$line" in
            "BATCH $scenario $impl "*) batch_ok=1 ;;
            "RESULT $scenario $impl "*)
                [[ "${line#"RESULT $scenario $impl "}" =~ ^[0-9]+\.[0-9]{3}\ allocs_per_round=[0-9]+(\.[0-9]{1,3})?$ ]] \
                    && result_ok=1 ;;
        esac
    done <<<"$out"
    ((batch_ok)) || fail "$scenario $impl: no BATCH line"
    ((result_ok)) || fail "$scenario $impl: no well-formed RESULT line:"$'\n'"$out"
done < <("$peers" list)

((supported > 0)) || fail "peers list printed no pairs"

while read -r _ scenario impl _; do
    pairs=$((pairs + 1))
    out="$(timeout 60 "$peers" run "$scenario" "$impl" --rounds 10 </dev/null 2>&1)" \
        || { fail "$scenario $impl (unsupported) exited non-zero"; continue; }
    [[ "$out" == "UNSUPPORTED $scenario $impl "* ]] || fail "$scenario $impl: no UNSUPPORTED line"
done < <("$peers" unsupported)

# A typo must fail loudly rather than be skipped.
if "$peers" run no/such-scenario tokio >/dev/null 2>&1; then
    fail "an unknown pair was accepted"
fi

if ((failures > 0)); then
    echo "peers smoke: $failures failure(s) in $pairs pairs" >&2
    exit 1
fi
echo "peers smoke: all $pairs pairs OK"
