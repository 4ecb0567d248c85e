#!/usr/bin/env bash
# Builds the gguflib adapter against antirez/gguf-tools (C, MIT), which is
# fetched here and never committed: GGUF_TOOLS_SRC=DIR uses an existing
# checkout, else the pinned commit is cloned into conformance/adapters/gguflib/src/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="${GGUF_TOOLS_SRC:-$here/src}"
if [ ! -f "$src/gguflib.c" ]; then
  git clone --quiet https://github.com/antirez/gguf-tools "$src"
  git -C "$src" checkout --quiet "${GGUF_TOOLS_COMMIT:-8fa6eb6}"
fi
mkdir -p "$here/build"
# -ffile-prefix-map: an assertion names gguf-tools/gguflib.c, not the checkout on this machine
${CC:-cc} -O2 -g -w -ffile-prefix-map="$src"=gguf-tools -I"$src" "$here/adapter.c" "$src/gguflib.c" "$src/sds.c" "$src/fp16.c" -lm -o "$here/build/gguflib-adapter"
"$here/build/gguflib-adapter" --version
