#!/usr/bin/env bash
# Throughput, ours vs ggml, on identical inputs, side by side in one run.
#   bench.sh            dequantize: parser/numerics/benches/dequant.rs writes its
#                       inputs and timings to a scratch directory, then ggml's
#                       to_float is timed on the same bytes;
#   bench.sh quant      quantize: parser/numerics/benches/quant.rs (every type
#                       ggml_quantize_chunk handles, without and with an
#                       importance matrix), then ggml_quantize_chunk on the same
#                       input, its bytes checked against ours.
# Each prints one table with the ratio ours/ggml (time) per type.
# Needs the reference venv (llama-cpp-python + numpy), given as VENV=path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="${VENV:?set VENV to a Python venv with llama-cpp-python==0.3.36 and numpy}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC1091
if [ "${1:-}" = quant ]; then
    (cd "$repo" && QUANT_BENCH_DUMP="$out" cargo bench -q -p gguf-numerics --bench quant >/dev/null)
    . "$venv/bin/activate"
    python "$here/bench_ggml.py" --quant "$out"
else
    (cd "$repo" && DEQUANT_BENCH_DUMP="$out" cargo bench -q -p gguf-numerics --bench dequant >/dev/null)
    . "$venv/bin/activate"
    python "$here/bench_ggml.py" "$out"
fi
