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
On a refusal the loader's last error lines are printed on stderr.
`--version` prints the package version and llama.cpp's commit."""
import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("GGML_NO_BACKTRACE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "llama-load"))
import load  # noqa: E402
from ggml_common import build  # noqa: E402


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
        import ctypes

        load.open_libllama()  # fails here, not on the first file, when the library is missing
        base = ctypes.CDLL(str(load.lib_dir() / "libggml-base.so"))
        base.ggml_version.restype = ctypes.c_char_p
        base.ggml_commit.restype = ctypes.c_char_p
        print(f"libllama llama_model_load_from_file (ggml {base.ggml_version().decode()}, {build(base.ggml_commit().decode())})")
        return 0
    if len(sys.argv) != 2:
        print("usage: llama_model.py FILE | --version", file=sys.stderr)
        return 2
    path = sys.argv[1]
    vocab_only = declares_no_tensor(path)
    try:
        lib = load.open_libllama()
    except OSError as e:
        print(f"cannot open libllama: {e}", file=sys.stderr)
        return 2
    log = load.Log(echo=False)
    lib.llama_log_set(log.callback, None)
    lib.llama_backend_init()
    params = lib.llama_model_default_params()
    params.n_gpu_layers = 0
    params.load_mode = load.LLAMA_LOAD_MODE_MMAP
    params.vocab_only = vocab_only
    if vocab_only:
        print("libllama: vocab_only load (no tensor declared)", file=sys.stderr)
    sys.stderr.flush()
    model = lib.llama_model_load_from_file(path.encode(), params)
    if not model:
        # the loader's error lines, the cause first (gguf's, then llama_model_load's)
        for line in log.errors[-4:] or ["llama_model_load_from_file returned NULL"]:
            print(f"error: {line}", file=sys.stderr)
        lib.llama_backend_free()
        return 1
    print(f"loaded: {lib.llama_model_n_params(model)} parameters", file=sys.stderr)
    lib.llama_model_free(model)
    lib.llama_backend_free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
