#!/usr/bin/env bash
# Adds a llama.cpp release to the table, or regenerates it: one command.
#
#     bash conformance/tools/llama-releases/update.sh [NODE_LLAMA_CPP_VERSION]
#
# With a version (e.g. 3.23.0): reads the release it carries from the npm
# registry (`npm view`-free: the package's llama/llama.cpp.info.json), adds
# the line to releases.txt when it is new (the table is oldest first: a new
# release goes last), then fetches every release's source (fetch.sh) and
# writes parser/core/src/llama_cpp/table.rs (gen_release_facts.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ge 1 ]; then
    version="$1"
    work="$(mktemp -d)"
    (cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
    tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/llama.cpp.info.json
    tag="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tag"])' "$work/package/llama/llama.cpp.info.json")"
    rm -rf "$work"
    if ! grep -q " $tag\$" "$here/releases.txt"; then
        echo "$version $tag" >> "$here/releases.txt"
        echo "added $tag (node-llama-cpp@$version) to releases.txt"
    fi
fi
bash "$here/fetch.sh"
python3 "$here/gen_release_facts.py"
