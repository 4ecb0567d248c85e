#!/usr/bin/env bash
# Brief writer campaigns for CI (after `cargo run --release`, with
# GGUF_VALIDATE_GGUF_PY from .ci/reference.sh):
#   - this project's writer: must have no findings;
#   - gguf-py's GGUFWriter: may only show kinds already published in
#     conformance/WRITERS.json (a new kind fails: a harness regression, or
#     a change in the pinned gguf-py that WRITERS.md must record).
set -euo pipefail
cd "$(dirname "$0")/../.."
gv="${GGUF_VALIDATE:-target/release/gguf-validate}"
[ -x "$gv" ] || cargo build --release --locked -q -p gguf-validate
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$gv" fuzz-writer --cmd "$gv write-model {model} {out}" --cases 3000 --time 60 --seed "$RANDOM"

rc=0
PYTHONPATH="${GGUF_VALIDATE_GGUF_PY:?run .ci/reference.sh fetch_reference first}" \
    "$gv" fuzz-writer --cmd "python3 conformance/writers/gguf_py.py {model} {out}" \
    --capabilities conformance/writers/gguf_py.toml --cases 150 --time 120 --json \
    --findings "$tmp/findings" > "$tmp/gguf-py.json" || rc=$?
[ "$rc" -le 1 ] || { echo "fuzz-writer gguf-py: harness error (exit $rc)" >&2; exit 1; }
python3 - "$tmp/gguf-py.json" conformance/WRITERS.json <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
published = next(w for w in json.load(open(sys.argv[2]))["writers"] if w["name"] == "gguf-py")
known = {(f["kind"]["class"], f["kind"]["ty"], f["kind"]["what"]) for f in published["findings"]}
seen = [(g["kind"]["class"], g["kind"]["ty"], g["kind"]["what"]) for g in got["findings"]]
new = [k for k in seen if k not in known]
print(f"gguf-py: {got['cases']} cases, {len(seen)} kinds, all published" if not new else f"gguf-py: new kinds {new}")
sys.exit(1 if new else 0)
PY
cat "$tmp/findings/summary.txt"
