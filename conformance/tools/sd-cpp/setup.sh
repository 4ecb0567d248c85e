#!/usr/bin/env bash
# Creates a venv with stable-diffusion.cpp's Python bindings, built from the
# sdist of stable-diffusion-cpp-python==0.4.7 (CPU only, no examples), and
# the pinned pure-Python packages that make_diffusion_models.py needs.
#
#     bash conformance/tools/sd-cpp/setup.sh VENV_DIR
#
# CMAKE_BUILD_PARALLEL_LEVEL (default 1) sets the build's parallel jobs.
# SD_CPP_SKIP_GENERATOR_DEPS=1 installs only the loader (enough for load.py).
# SD_CPP_SOURCE_DIR=DIR also extracts the sources the table generator reads.
# The build takes about 6 minutes with one job on this machine (see README.md).
set -euo pipefail

VENV="${1:?usage: setup.sh VENV_DIR}"
SD_VERSION="0.4.7"
SD_SDIST_SHA256="998d1957260dd5ae4e18a8acc0c14b0a8757aaa9f96515197b6d5bbf46df9282"

python3 -m venv "$VENV"
PIP=("$VENV/bin/pip" --disable-pip-version-check)
"${PIP[@]}" install -q pip==25.3

# The build backend and CMake, pinned, installed first so that the sdist is
# fetched and built without build isolation (nothing unpinned is pulled in).
"${PIP[@]}" install -q scikit-build-core==0.11.6 cmake==3.31.6 ninja==1.13.0 \
    pathspec==0.12.1 packaging==25.0 typing-extensions==4.15.0 pillow==12.0.0

# The sdist, by name, checked against its known hash.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${PIP[@]}" download -q --no-deps --no-binary :all: --no-build-isolation \
    -d "$work" "stable-diffusion-cpp-python==$SD_VERSION"
sdist="$work/stable_diffusion_cpp_python-$SD_VERSION.tar.gz"
echo "$SD_SDIST_SHA256  $sdist" | sha256sum -c --quiet
# SD_CPP_SOURCE_DIR=DIR keeps the vendored stable-diffusion.cpp sources the
# table generator reads (gen_diffusion_table.py --sd-src DIR).
if [ -n "${SD_CPP_SOURCE_DIR:-}" ]; then
    mkdir -p "$SD_CPP_SOURCE_DIR"
    tar xzf "$sdist" -C "$SD_CPP_SOURCE_DIR" --strip-components=3 \
        "stable_diffusion_cpp_python-$SD_VERSION/vendor/stable-diffusion.cpp/src" \
        "stable_diffusion_cpp_python-$SD_VERSION/vendor/stable-diffusion.cpp/ggml/include" \
        "stable_diffusion_cpp_python-$SD_VERSION/vendor/stable-diffusion.cpp/CMakeLists.txt"
fi

# CPU only (every GPU backend is off by default), no examples, no WebP/WebM
# (only the examples use them), native CPU features off so that the build
# is the same on any x86-64 machine.
export CMAKE_ARGS="${CMAKE_ARGS:-} -DSD_BUILD_EXAMPLES=OFF -DSD_WEBP=OFF -DSD_WEBM=OFF -DGGML_NATIVE=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-1}"
start=$(date +%s)
"${PIP[@]}" install -q --no-deps --no-build-isolation "$sdist"
echo "stable-diffusion-cpp-python $SD_VERSION built in $(( $(date +%s) - start )) s" \
    "(CMAKE_BUILD_PARALLEL_LEVEL=$CMAKE_BUILD_PARALLEL_LEVEL)"

if [ "${SD_CPP_SKIP_GENERATOR_DEPS:-0}" != "1" ]; then
    # The generator's packages, pinned (make_diffusion_models.py and
    # ComfyUI-GGUF's tools/convert.py). PyPI's torch is the CUDA build: it
    # pulls about 3 GB of nvidia-* wheels (5.5 GB installed, about 2 min
    # here); PyPI has no CPU-only torch. CI needs none of this: it only
    # runs load.py over the committed corpus.
    "${PIP[@]}" install -q numpy==2.4.6 gguf==0.19.0 safetensors==0.8.0 \
        tqdm==4.67.1 torch==2.15.0 diffusers==0.42.1
fi
