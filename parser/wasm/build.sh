#!/usr/bin/env bash
# Builds the npm package's WebAssembly module into npm/wasm/: the crate for
# wasm32-unknown-unknown (profile `wasm`), Debian's `wasm-opt -Os` when it is
# there, then `wasm-bindgen --target web` (an ES module the package's
# index.js loads in browsers, Node and bundlers), and the static page in
# target/wasm-page/ (page/ with the package beside it). `wasm-bindgen` must be
# the version the crate pins: `cargo install wasm-bindgen-cli --version V`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
want="$(sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' "$here/Cargo.toml")"
have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" || true
if [ "$have" != "$want" ]; then
  echo "wasm-bindgen $want is needed (found: ${have:-none}): cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi
cd "$root"
# SIMD128 (every browser since 2021, Node 16+): memchr and simdutf8 use it.
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128" \
    cargo build -p gguf-validate-wasm --target wasm32-unknown-unknown --profile wasm
built=target/wasm32-unknown-unknown/wasm
module="$built/gguf_validate_wasm.wasm"
if command -v wasm-opt >/dev/null; then
  # Before wasm-bindgen: Debian's binaryen (108) predates the externref
  # table wasm-bindgen adds, and breaks it when run after. The features are
  # the ones rustc's wasm32 target enables.
  wasm-opt -O3 --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
    --enable-mutable-globals --enable-multivalue --enable-reference-types --enable-simd \
    -o "$built/gguf_validate_wasm.opt.wasm" "$module"
  module="$built/gguf_validate_wasm.opt.wasm"
else
  echo "wasm-opt not found (Debian's binaryen): the module is not size-optimised" >&2
fi
out="$here/npm/wasm"
rm -rf "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name gguf_validate_wasm "$module"
ls -l "$out"
# The static page: one folder, the package beside it (target/wasm-page/).
page="$root/target/wasm-page"
rm -rf "$page"
mkdir -p "$page/gguf-validate/wasm"
cp "$here"/page/index.html "$here"/page/app.js "$here"/page/worker.js "$here"/page/style.css "$page/"
cp "$here"/npm/index.js "$here"/npm/package.json "$page/gguf-validate/"
cp "$out"/gguf_validate_wasm.js "$out"/gguf_validate_wasm_bg.wasm "$page/gguf-validate/wasm/"
echo "page: $page"
