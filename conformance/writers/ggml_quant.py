#!/usr/bin/env python3
"""Quantizer under test for `gguf-validate fuzz-quantizer`: ggml's
`ggml_quantize_chunk` (no importance matrix) through ctypes on
libggml-base.so.

    python3 conformance/writers/ggml_quant.py TYPE_ID INPUT OUTPUT ROW_LEN
    python3 conformance/writers/ggml_quant.py --version

INPUT holds little-endian f32 rows of ROW_LEN values; the blocks are
written to OUTPUT. Install: `pip install llama-cpp-python==0.3.36`, or set
$GGML_BASE_LIB.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ggml_writer import library_path  # noqa: E402


def main():
    lib = ctypes.CDLL(library_path())
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        lib.ggml_version.restype = ctypes.c_char_p
        lib.ggml_commit.restype = ctypes.c_char_p
        commit = lib.ggml_commit().decode().removesuffix("-dirty")  # git's mark of a tree built in place
        print(f"ggml {lib.ggml_version().decode()} (llama.cpp {commit}, from llama-cpp-python) ggml_quantize_chunk")
        return 0
    if len(sys.argv) != 5:
        sys.exit("usage: ggml_quant.py TYPE_ID INPUT OUTPUT ROW_LEN | --version")
    ty, n_per_row = int(sys.argv[1]), int(sys.argv[4])
    with open(sys.argv[2], "rb") as f:
        raw = f.read()
    n = len(raw) // 4
    nrows = n // n_per_row
    src = (ctypes.c_float * n).from_buffer_copy(raw)
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.ggml_row_size.restype = ctypes.c_size_t
    size = lib.ggml_row_size(ty, n_per_row) * nrows
    dst = ctypes.create_string_buffer(max(size, 1))
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    written = lib.ggml_quantize_chunk(ty, src, dst, 0, nrows, n_per_row, None)
    with open(sys.argv[3], "wb") as f:
        f.write(dst.raw[:written])
    return 0


if __name__ == "__main__":
    sys.exit(main())
