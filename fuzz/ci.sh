#!/usr/bin/env bash
# Fuzz step of CI (called by .ci/run): build every cargo-fuzz target, run each
# for a short bounded time, fail on any crash, OOM or timeout.
#
#   FUZZ_SECONDS   seconds per target (default 30)
#   FUZZ_PARALLEL  targets run at once (default 2: one per core)
#
# Findings are left in fuzz/artifacts/<target>/ (crash-*, oom-*, timeout-*);
# copy them to corpus/regressions/ with an expectation file once fixed
# (see fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")"

secs="${FUZZ_SECONDS:-30}"
parallel="${FUZZ_PARALLEL:-2}"
# cargo-fuzz passes nightly-only flags (-Zsanitizer, sancov); the stable
# toolchain accepts them with RUSTC_BOOTSTRAP.
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# Own target dir: the instrumented build must not invalidate the workspace's.
target_dir="$PWD/target"
# No sanitizer: the code under test forbids `unsafe`; overflow checks and
# debug assertions stay on (cargo-fuzz's default).
cargo fuzz build -s none --target-dir "$target_dir"
bin="$target_dir/$(rustc -vV | sed -n 's/^host: //p')/release"
targets=$(cargo fuzz list)

# Seeds: every corpus file of the repository, plus generated files and
# single-fault mutants written by the smoke tests (cheap when `cargo test`
# already built them).
seeds="$PWD/corpus/_seeds"
mkdir -p "$seeds"
# Named after their path: split sets reuse shard names across directories.
find ../corpus -name '*.gguf' -print0 | while IFS= read -r -d '' f; do
    name="${f#../corpus/}"
    cp "$f" "$seeds/${name//\//_}"
done
GGUF_FUZZ_LOG="$seeds" cargo test -q --locked -p gguf-fuzz --lib smoke >/dev/null 2>&1 || true
rm -f "$seeds"/*.txt

run_one() {
    local t=$1
    mkdir -p "corpus/$t" "artifacts/$t"
    # Targets that read something other than model files (the config and
    # baseline readers) have their own seeds and kept findings instead.
    local own=("$seeds")
    if [ -d "seeds/$t" ]; then
        own=("seeds/$t")
        [ -d "regressions/$t" ] && own+=("regressions/$t")
    fi
    if "$bin/$t" "corpus/$t" "${own[@]}" -rss_limit_mb=2048 -timeout=10 -max_total_time="$secs" \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"artifacts/$t.log" 2>&1; then
        echo "ok    $t: $(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "artifacts/$t.log" | tail -1), $(grep -Eo 'Done [0-9]+ runs' "artifacts/$t.log" | tail -1)"
    else
        echo "FAIL  $t (log: fuzz/artifacts/$t.log)"
        grep -E -A12 'panicked|ERROR: libFuzzer|SUMMARY' "artifacts/$t.log" | head -40
        return 1
    fi
}

status=0
pids=()
for t in $targets; do
    run_one "$t" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$parallel" ]; then
        for p in "${pids[@]}"; do wait "$p" || status=1; done
        pids=()
    fi
done
for p in ${pids[@]+"${pids[@]}"}; do wait "$p" || status=1; done
exit "$status"
