#!/usr/bin/env bash
# Does floating-point contraction (FMA) change ggml's quantizer output?
#
# Builds libggml-base twice from the llama.cpp that llama-cpp-python 0.3.36
# vendors, both with -march=native (FMA available on an x86-64 with FMA3):
# once with GCC's default -ffp-contract=fast, once with -ffp-contract=off.
# Regenerates the golden vectors (gen_golden.py, GGML_BASE_LIB=...) with each
# and compares every file with corpus/golden/ (made from pip's build, whose
# libggml-base is compiled for baseline x86-64 and has no FMA instruction).
#
#   LLAMA_CPP=.../vendor/llama.cpp bash conformance/tools/golden/fp_contract.sh [WORKDIR]   (default: a fresh mktemp -d;
#   pass the same WORKDIR again to reuse its builds)
#
# Needs cmake (pip install cmake), gcc, the venv of gen_golden.py. Not run in CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
work="${1:-$(mktemp -d)}"
: "${LLAMA_CPP:?set LLAMA_CPP to the llama.cpp source tree}"
mkdir -p "$work"

pip_lib=$(python3 -c 'import importlib.util, os; s = importlib.util.find_spec("llama_cpp"); print(os.path.join(s.submodule_search_locations[0], "lib", "libggml-base.so"))')
fma_count() { objdump -d "$1" | grep -c vfmadd || true; }
echo "pip build: $(fma_count "$pip_lib") FMA instructions in libggml-base.so"
for v in contract-fast contract-off; do
    flags="-march=native -ffp-contract=${v#contract-}"
    if [ ! -f "$work/$v/bin/libggml-base.so" ]; then
        cmake -S "$LLAMA_CPP" -B "$work/$v" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=ON \
            "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF >"$work/$v.cmake.log"
        cmake --build "$work/$v" --target ggml-base -j"$(nproc)" >"$work/$v.build.log"
    fi
    lib="$work/$v/bin/libggml-base.so"
    echo "$v ($flags): $(fma_count "$lib") FMA instructions in libggml-base.so"
    GGML_BASE_LIB="$lib" python3 "$repo/conformance/tools/golden/gen_golden.py" --out "$work/golden-$v" >"$work/$v.gen.log" 2>&1
    same=0 differ=0
    while IFS= read -r -d '' f; do
        rel=${f#"$work/golden-$v/"}
        if [ "$rel" = manifest.json ]; then continue; fi
        if cmp -s "$f" "$repo/corpus/golden/$rel"; then same=$((same + 1)); else differ=$((differ + 1)); echo "  differs: $rel"; fi
    done < <(find "$work/golden-$v" -type f -print0 | sort -z)
    echo "$v: $same golden files identical to pip's build, $differ differ"
done
