#!/usr/bin/env python3
"""llama.cpp's model loader (libllama of llama-cpp-python 0.3.36, through
ctypes): llama_model_load_from_file on FILE with n_gpu_layers 0 and mmap,
as conformance/tools/llama-load/load.py does (that module is reused).

A vocabulary file (a GGUF file that declares no tensor) is loaded with
vocab_only, as llama.cpp's tools load one; anything else is loaded in full
(a split set from its first shard: libllama finds the others by name).
Exit 0 loaded, 1 refused (the loader's error line on stderr); an abort
(GGML_ASSERT) or a segfault kills the process with a signal, which the
matrix runner records as a crash, with the abort message from stderr.
`--version` prints the package version and llama.cpp's commit."""
import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("GGML_NO_BACKTRACE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "llama-load"))
import load  # noqa: E402


def declares_no_tensor(path: str) -> bool:
    """True for a little- or big-endian GGUF v2/v3 header with tensor_count 0."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) < 16 or head[:4] != b"GGUF":
        return False
    for order in ("<", ">"):
        version, count = struct.unpack(order + "IQ", head[4:16])
        if version in (2, 3):
            return count == 0
    return False


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        from importlib.metadata import PackageNotFoundError, version

        try:
            pkg = f"llama-cpp-python {version('llama_cpp_python')}"
        except PackageNotFoundError:
            pkg = f"libllama from {load.lib_dir()}"
        load.open_libllama()  # fails here, not on the first file, when the library is missing
        print(f"{pkg} (libllama, llama_model_load_from_file)")
        return 0
    if len(sys.argv) != 2:
        print("usage: llama_model.py FILE | --version", file=sys.stderr)
        return 2
    args = ["load.py", sys.argv[1], "--quiet"]
    if declares_no_tensor(sys.argv[1]):
        args.append("--vocab-only")
        print("libllama: vocab_only load (no tensor declared)", file=sys.stderr)
    # load.main prints "error: <loader line>" on stdout; the runner keeps both streams.
    return load.main(args)


if __name__ == "__main__":
    sys.exit(main())
