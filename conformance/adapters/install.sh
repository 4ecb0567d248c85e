#!/usr/bin/env bash
# Sets up everything the matrix adapters need (run from anywhere):
#   - a Python venv at conformance/adapters/.venv with pinned gguf-py and
#     llama-cpp-python (whose wheel carries libggml-base.so; it builds from
#     source, which takes a while on 2 cores). Set GGUF_ADAPTERS_VENV to an
#     existing venv that has these pins to reuse it instead (it is linked).
#   - npm install of @huggingface/gguf (version pinned in hf-gguf/package.json)
#   - cargo build of the candle-core adapter (its own workspace and target dir)
#   - a second venv at conformance/adapters/.venv-peers with the peers users
#     compare gguf-validate with, pinned: modelvet, modelaudit, c4nary,
#     glyphhound (and gguf-py, which modelaudit's GGUF scanner reads with).
#     GGUF_PEERS_VENV links an existing one instead.
#   - cargo build of the ggus adapter (crates.io ggus, own workspace)
#   - the gguflib adapter, built against antirez/gguf-tools at a pinned
#     commit (cloned into gguflib/src/, never committed; GGUF_TOOLS_SRC uses
#     an existing checkout)
#   - a release build of gguf-validate
# libllama (the `libllama` reader) comes with llama-cpp-python in .venv;
# LLAMA_LIB_DIR (and GGML_BASE_LIB for the ggml readers) point the adapters
# at another build of the same version.
# None of this is needed by `cargo test`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

GGUF_PY_VERSION=0.19.0
NUMPY_VERSION=2.4.6
LLAMA_CPP_PYTHON_VERSION=0.3.36
MODELVET_VERSION=0.1.1
MODELAUDIT_VERSION=0.2.54
C4NARY_VERSION=0.3.1
GLYPHHOUND_VERSION=0.1.0

if [ -n "${GGUF_ADAPTERS_VENV:-}" ]; then
  ln -sfn "$GGUF_ADAPTERS_VENV" "$here/.venv"
elif [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
fi
"$here/.venv/bin/python" -m pip install --quiet \
  "gguf==$GGUF_PY_VERSION" "numpy==$NUMPY_VERSION" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"

(cd "$here/hf-gguf" && npm install --no-audit --no-fund)

(cd "$here/candle" && cargo build --release --locked --target-dir target)

if [ -n "${GGUF_PEERS_VENV:-}" ]; then
  ln -sfn "$GGUF_PEERS_VENV" "$here/.venv-peers"
elif [ ! -x "$here/.venv-peers/bin/python" ]; then
  python3 -m venv "$here/.venv-peers"
fi
"$here/.venv-peers/bin/python" -m pip install --quiet \
  "modelvet==$MODELVET_VERSION" "modelaudit==$MODELAUDIT_VERSION" "c4nary==$C4NARY_VERSION" \
  "glyphhound==$GLYPHHOUND_VERSION" "gguf==$GGUF_PY_VERSION" "numpy==$NUMPY_VERSION"

(cd "$here/ggus" && cargo build --release --locked --target-dir target)

bash "$here/gguflib/build.sh"

(cd "$root" && cargo build --release -p gguf-validate)

echo "adapters ready:"
"$here/.venv/bin/python" "$here/ggml_full.py" --version
"$here/.venv/bin/python" "$here/gguf_py.py" --version
node "$here/hf-gguf/adapter.mjs" --version
"$here/candle/target/release/gguf-candle-adapter" --version
"$here/.venv/bin/python" "$here/llama_model.py" --version
"$here/.venv-peers/bin/python" "$here/modelvet_adapter.py" --version
"$here/.venv-peers/bin/python" "$here/modelaudit_gguf.py" --version
"$here/ggus/target/release/gguf-ggus-adapter" --version
"$here/gguflib/build/gguflib-adapter" --version
for s in c4nary glyphhound; do "$here/.venv-peers/bin/python" "$here/template_scanners.py" "$s" --version; done
