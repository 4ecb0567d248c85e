#!/usr/bin/env bash
# Builds the `gguf-validate` command line (the CLI crate, parser/cli, `dist`
# profile) for the wheel and puts it where maturin takes it from: the
# wheel's data directory `gguf_validate._native.data/scripts/` (maturin's
# default data directory for the module `gguf_validate._native`; pip and uv
# install its `scripts/` onto PATH). Run it before `maturin build`; without
# it the wheel has the Python package but no `gguf-validate` command
# (`python -m gguf_validate` then says so). The directory is ignored by git
# and left out of the sdist.
#
#   parser/python/cli-binary.sh [--zig-glibc 2.17] [RUST_TARGET]
#
# RUST_TARGET is the wheel's (default: the host's). --zig-glibc links with
# zig against that glibc, as `maturin build --zig --compatibility
# manylinux2014` links the extension (2.17 for manylinux2014): through
# maturin's own zig wrapper (`maturin zig cc`), so `maturin` must be on PATH
# and find zig (`python3 -m ziglang`, as for `maturin build --zig`).
set -euo pipefail
cd "$(dirname "$0")"

glibc=""
if [ "${1:-}" = "--zig-glibc" ]; then
    glibc=${2:?--zig-glibc needs a glibc version, e.g. 2.17}
    shift 2
fi
target=${1:-$(rustc -vV | sed -n 's/^host: //p')}
# The workspace's target directory (no .cargo/config sets another).
target_dir=${CARGO_TARGET_DIR:-$(cd ../.. && pwd)/target}

if [ -n "$glibc" ]; then
    case $target in
        *-unknown-linux-gnu) ;;
        *) echo "--zig-glibc is for *-unknown-linux-gnu targets, not $target" >&2; exit 2 ;;
    esac
    command -v maturin >/dev/null || { echo "--zig-glibc needs maturin on PATH" >&2; exit 2; }
    # The same flags as the wrappers maturin --zig (cargo-zigbuild) writes.
    wrappers="$target_dir/zig-wrappers"
    mkdir -p "$wrappers"
    for tool in cc c++; do
        name=$tool; [ "$tool" = c++ ] && name=cxx
        printf '#!/bin/sh\nexec %q zig %s -- -g -fno-sanitize=all -target %s "$@"\n' \
            "$(command -v maturin)" "$tool" "${target%%-*}-linux-gnu.$glibc" > "$wrappers/zig$name-$target.$glibc"
        chmod +x "$wrappers/zig$name-$target.$glibc"
    done
    env_target=$(echo "$target" | tr 'a-z-' 'A-Z_')
    export "CARGO_TARGET_${env_target}_LINKER=$wrappers/zigcc-$target.$glibc"
    # C code of dependencies (ring) compiled by zig for the same glibc.
    export "CC_${target//-/_}=$wrappers/zigcc-$target.$glibc"
    export "CXX_${target//-/_}=$wrappers/zigcxx-$target.$glibc"
fi

cargo build -p gguf-validate --bin gguf-validate --profile dist --locked --target "$target"

exe=gguf-validate
case $target in *-windows-*) exe=gguf-validate.exe ;; esac
mkdir -p gguf_validate._native.data/scripts
rm -f gguf_validate._native.data/scripts/gguf-validate gguf_validate._native.data/scripts/gguf-validate.exe
cp "$target_dir/$target/dist/$exe" gguf_validate._native.data/scripts/
ls -l "gguf_validate._native.data/scripts/$exe"
