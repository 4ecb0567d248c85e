#!/usr/bin/env bash
# Runs the writer and quantizer campaigns published in conformance/WRITERS.md,
# one at a time, then regenerates WRITERS.md and WRITERS.json.
#
#   bash conformance/writers/install.sh                # once: adapters and their pins
#   bash conformance/writers/campaign.sh OUT_DIR        # campaigns into OUT_DIR/<writer>/
#   python3 conformance/writers/matrix.py OUT_DIR      # WRITERS.md + WRITERS.json (+ reproducers)
#
# Environment: GGUF_VALIDATE (binary; default target/release/gguf-validate),
# PYTHON (with gguf-py and llama-cpp-python; default the install.sh venv),
# CASES (default 10000), MINUTES (default 30: per campaign, whichever first),
# SEED (default 1), ONLY (space-separated campaign names to run).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: campaign.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
gv="${GGUF_VALIDATE:-$root/target/release/gguf-validate}"
py="${PYTHON:-$here/.venv/bin/python}"
candle="${CANDLE_WRITER:-$here/candle/target/release/gguf-candle-writer}"
cases="${CASES:-10000}"
secs=$(( ${MINUTES:-30} * 60 ))
seed="${SEED:-1}"
cd "$root"

want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

writer() {  # name caps command [cases]
    local name="$1" caps="$2" cmd="$3" n="${4:-$cases}"
    want "$name" || return 0
    rm -rf "${out:?}/$name" && mkdir -p "$out/$name"
    echo "== $name" >&2
    local rc=0
    "$gv" fuzz-writer --cmd "$cmd" --capabilities "$caps" --cases "$n" --time "$secs" --seed "$seed" \
        --findings "$out/$name" > "$out/$name/stdout.txt" 2> "$out/$name/stderr.txt" || rc=$?
    echo "$rc" > "$out/$name/exit"
    tail -n 3 "$out/$name/stdout.txt" >&2
    [ "$rc" -le 1 ] || { echo "$name: harness error (exit $rc)" >&2; cat "$out/$name/stderr.txt" >&2; }
}

quantizer() {  # name types command (types: comma-separated, or empty for every reference type)
    local name="$1" types="$2" cmd="$3"
    local type_args=()
    [ -z "$types" ] || type_args=(--types "$types")
    want "$name" || return 0
    rm -rf "${out:?}/$name" && mkdir -p "$out/$name"
    echo "== $name" >&2
    local rc=0
    "$gv" fuzz-quantizer --cmd "$cmd" "${type_args[@]}" --rows "$cases" --time "$secs" --seed "$seed" \
        --findings "$out/$name" > "$out/$name/stdout.txt" 2> "$out/$name/stderr.txt" || rc=$?
    echo "$rc" > "$out/$name/exit"
    cat "$out/$name/stdout.txt" >&2
}

# Versions, recorded beside the results.
{
    echo "gguf-validate: $("$gv" --version)"
    echo "gguf-py: $("$py" "$here/gguf_py.py" --version)"
    echo "ggml: $("$py" "$here/ggml_writer.py" --version)"
    echo "candle: $("$candle" --version)"
    echo "hf-gguf: $(node "$here/hf-gguf/writer.mjs" --version)"
} > "$out/versions.txt"

writer own "$here/own.toml" "$gv write-model {model} {out}"
writer candle "$here/candle.toml" "$candle {model} {out}"
writer hf-gguf "$here/hf_gguf.toml" "node $here/hf-gguf/writer.mjs {model} {out}"
writer ggml "$here/ggml_writer.toml" "$py $here/ggml_writer.py {model} {out}"
writer gguf-py "$here/gguf_py.toml" "$py $here/gguf_py.py {model} {out}"
# Claims checks: gguf-py asked for every live ggml type (its table stops at id 41).
writer gguf-py-all-types "$here/gguf_py-all-types.toml" "$py $here/gguf_py.py {model} {out}" 300

# Every testable type but IQ2_S, whose runs take seconds each in ggml (too slow for the budget).
quantizer ggml-quant "f32,f16,q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,iq3_xxs,iq4_nl,iq3_s,iq4_xs,iq1_m,bf16,tq1_0,tq2_0,mxfp4,nvfp4,q1_0,q2_0" "$py $here/ggml_quant.py {type_id} {input} {output} {row_len}"
quantizer gguf-py-quant "f16,bf16,q4_0,q4_1,q5_0,q5_1,q8_0,tq1_0,tq2_0,mxfp4,nvfp4" \
    "$py $here/gguf_py_quant.py {type} {input} {output} {row_len}"
