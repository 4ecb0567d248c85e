#!/usr/bin/env bash
# Dequantize throughput, ours vs ggml, on identical input buffers.
# Runs the Rust benchmark (parser/benches/dequant.rs), which writes its
# inputs and timings to a scratch directory, then times ggml's to_float on
# the same bytes and prints one table with the ratio ours/ggml per type.
# Needs the reference venv (llama-cpp-python + numpy), given as VENV=path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="${VENV:?set VENV to a Python venv with llama-cpp-python==0.3.36 and numpy}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
(cd "$repo" && DEQUANT_BENCH_DUMP="$out" cargo bench -q -p gguf-numerics --bench dequant >/dev/null)
# shellcheck disable=SC1091
. "$venv/bin/activate"
python "$here/bench_ggml.py" "$out"
