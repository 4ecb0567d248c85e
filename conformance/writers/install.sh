#!/usr/bin/env bash
# Sets up the writers and quantizers under test (run from anywhere):
#   - a Python venv at conformance/writers/.venv with pinned gguf-py and
#     llama-cpp-python (its wheel carries libggml-base.so; it builds from
#     source, which takes a while on 2 cores). GGUF_WRITERS_VENV=PATH links
#     an existing venv with these pins instead.
#   - npm ci of @huggingface/gguf (pinned in hf-gguf/package.json)
#   - cargo build of the candle-core writer (its own workspace and target dir)
#   - a release build of gguf-validate
# None of this is needed by `cargo test`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

GGUF_PY_VERSION=0.19.0
NUMPY_VERSION=2.4.6
LLAMA_CPP_PYTHON_VERSION=0.3.36

if [ -n "${GGUF_WRITERS_VENV:-}" ]; then
  ln -sfn "$GGUF_WRITERS_VENV" "$here/.venv"
elif [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
fi
"$here/.venv/bin/python" -m pip install --quiet \
  "gguf==$GGUF_PY_VERSION" "numpy==$NUMPY_VERSION" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"

(cd "$here/hf-gguf" && npm ci --no-audit --no-fund)

(cd "$here/candle" && cargo build --release --locked --target-dir target)

(cd "$root" && cargo build --release -p gguf-validate)

echo "writers ready:"
"$here/.venv/bin/python" "$here/gguf_py.py" --version
"$here/.venv/bin/python" "$here/ggml_writer.py" --version
node "$here/hf-gguf/writer.mjs" --version
"$here/candle/target/release/gguf-candle-writer" --version
