#!/usr/bin/env bash
# Fetches the llama.cpp source of every release in releases.txt from the npm
# registry, by package name (`npm pack node-llama-cpp@V`: its
# llama/gitRelease.bundle is the release's whole tree), into
#   $LLAMA_RELEASES_CACHE/src/TAG/   (default ~/.cache/gguf-validate-reference/llama-releases)
# keeping only what the fact generators read (src/, include/, ggml/include/,
# ggml/src/ggml.c, tools/mtmd/, examples/llava/). Checks that each package
# names the release the table says. Already fetched releases are kept.
#
#     bash conformance/tools/llama-releases/fetch.sh [TAG...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${LLAMA_RELEASES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gguf-validate-reference/llama-releases}"
mkdir -p "$cache/src"
want=("$@")
while read -r version tag; do
    case "$version" in ''|'#'*) continue ;; esac
    if [ "${#want[@]}" -gt 0 ] && [[ ! " ${want[*]} " == *" $tag "* ]]; then
        continue
    fi
    out="$cache/src/$tag"
    [ -f "$out/.complete" ] && continue
    work="$(mktemp -d)"
    (cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
    tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
    got="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tag"])' "$work/package/llama/llama.cpp.info.json")"
    if [ "$got" != "$tag" ]; then
        echo "node-llama-cpp@$version carries $got, not $tag (releases.txt)" >&2
        exit 1
    fi
    git clone -q "$work/package/llama/gitRelease.bundle" "$work/tree" 2>/dev/null
    rm -rf "$out" && mkdir -p "$out/ggml/src"
    for d in src include ggml/include tools/mtmd examples/llava; do
        if [ -d "$work/tree/$d" ]; then
            mkdir -p "$out/$(dirname "$d")" && cp -r "$work/tree/$d" "$out/$d"
        fi
    done
    [ -f "$work/tree/ggml/src/ggml.c" ] && cp "$work/tree/ggml/src/ggml.c" "$out/ggml/src/ggml.c"
    echo "$version $tag" > "$out/.complete"
    rm -rf "$work"
    echo "fetched $tag (node-llama-cpp@$version)"
done < "$here/releases.txt"
