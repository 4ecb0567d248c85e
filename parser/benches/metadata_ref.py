#!/usr/bin/env python3
"""Reference timings for the metadata benchmark (benches/metadata.rs runs
this in the same session): ggml's gguf_init_from_file with no_alloc=true
(llama.cpp's metadata-only load) and gguf-py's GGUFReader.

Needs: pip install llama-cpp-python==0.3.36 gguf==0.19.0
Prints one JSON object: {"ggml_ms": [...], "gguf_py_s": [...], "ggml_version": ...}.
"""
import ctypes
import glob
import json
import os
import statistics
import sys
import time


def find_libggml():
    import llama_cpp

    base = os.path.dirname(llama_cpp.__file__)
    for pattern in ("lib/libggml-base.so", "lib/libggml-base.dylib"):
        hits = glob.glob(os.path.join(base, pattern))
        if hits:
            return hits[0]
    raise SystemExit("libggml-base not found in llama_cpp package")


class InitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


def main():
    path = sys.argv[1].encode()
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    py_runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    lib = ctypes.CDLL(find_libggml())
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, InitParams]
    lib.gguf_free.argtypes = [ctypes.c_void_p]
    ggml = []
    for _ in range(runs):
        t = time.perf_counter()
        ctx = lib.gguf_init_from_file(path, InitParams(True, None))
        ggml.append((time.perf_counter() - t) * 1e3)
        if not ctx:
            raise SystemExit("ggml rejected the file")
        lib.gguf_free(ctx)
    from gguf import GGUFReader

    py = []
    for _ in range(py_runs):
        t = time.perf_counter()
        r = GGUFReader(path.decode())
        _ = [f.contents() for f in r.fields.values()]
        py.append(time.perf_counter() - t)
    import llama_cpp, gguf

    print(json.dumps({
        "ggml_ms": ggml,
        "ggml_median_ms": statistics.median(ggml),
        "gguf_py_s": py,
        "gguf_py_median_s": statistics.median(py),
        "versions": {"llama_cpp_python": llama_cpp.__version__, "gguf": getattr(gguf, "__version__", "0.19.0")},
    }))


if __name__ == "__main__":
    main()
