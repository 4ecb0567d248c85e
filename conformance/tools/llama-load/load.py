#!/usr/bin/env python3
"""Loads one GGUF file with libllama (llama.cpp) through ctypes.

    python3 load.py FILE [--vocab-only] [--quiet]

Exit status: 0 the model loaded (llama_model_load_from_file returned a model),
1 the loader refused it (returned NULL), 2 usage error or libllama not found.
An abort (GGML_ASSERT) or a segfault kills the process with a signal; run.py
runs this script in a subprocess and records that as a crash.

Every log line libllama emits goes to stderr as it arrives (so it survives a
crash); the last error line is also printed on stdout as `error: ...` when the
load is refused. The libraries are looked up in $LLAMA_LIB_DIR, else in the
installed llama_cpp package (llama-cpp-python) under llama_cpp/lib.

Load parameters: llama_model_default_params() with n_gpu_layers 0 and
load_mode LLAMA_LOAD_MODE_MMAP (mmap on), vocab_only as asked.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import sys

# enum llama_load_mode (include/llama.h)
LLAMA_LOAD_MODE_MMAP = 1
# enum ggml_log_level (ggml/include/ggml.h)
GGML_LOG_LEVEL_ERROR = 4
GGML_LOG_LEVEL_CONT = 5


class LlamaModelParams(ctypes.Structure):
    """struct llama_model_params of the pinned include/llama.h (field order matters: passed by value)."""
    _fields_ = [
        ("devices", ctypes.c_void_p),
        ("tensor_buft_overrides", ctypes.c_void_p),
        ("n_gpu_layers", ctypes.c_int32),
        ("split_mode", ctypes.c_int),
        ("load_mode", ctypes.c_int),
        ("lazy_mode", ctypes.c_int),
        ("main_gpu", ctypes.c_int32),
        ("tensor_split", ctypes.c_void_p),
        ("progress_callback", ctypes.c_void_p),
        ("progress_callback_user_data", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("vocab_only", ctypes.c_bool),
        ("check_tensors", ctypes.c_bool),
        ("use_extra_bufts", ctypes.c_bool),
        ("no_host", ctypes.c_bool),
        ("no_alloc", ctypes.c_bool),
        ("load_mtp", ctypes.c_bool),
    ]


LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def lib_dir() -> pathlib.Path:
    env = os.environ.get("LLAMA_LIB_DIR")
    if env:
        return pathlib.Path(env)
    import importlib.util
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("llama_cpp package not installed and LLAMA_LIB_DIR not set")
    return pathlib.Path(spec.origin).parent / "lib"


def open_libllama() -> ctypes.CDLL:
    d = lib_dir()
    # load ggml first, globally, so libllama resolves against the same copies
    for name in ("libggml-base.so", "libggml-cpu.so", "libggml.so"):
        p = d / name
        if p.exists():
            ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(d / "libllama.so"), mode=ctypes.RTLD_GLOBAL)
    lib.llama_backend_init.argtypes = []
    lib.llama_backend_init.restype = None
    lib.llama_backend_free.argtypes = []
    lib.llama_backend_free.restype = None
    lib.llama_model_default_params.argtypes = []
    lib.llama_model_default_params.restype = LlamaModelParams
    lib.llama_model_load_from_file.argtypes = [ctypes.c_char_p, LlamaModelParams]
    lib.llama_model_load_from_file.restype = ctypes.c_void_p
    lib.llama_model_free.argtypes = [ctypes.c_void_p]
    lib.llama_model_free.restype = None
    lib.llama_log_set.argtypes = [LOG_CALLBACK, ctypes.c_void_p]
    lib.llama_log_set.restype = None
    lib.llama_model_n_params.argtypes = [ctypes.c_void_p]
    lib.llama_model_n_params.restype = ctypes.c_uint64
    return lib


class Log:
    """Collects libllama's log output; echoes it raw to fd 2 as it comes."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self.errors: list[str] = []
        self.last_level = 0
        self.callback = LOG_CALLBACK(self._on_log)

    def _on_log(self, level: int, text: bytes | None, _ud: ctypes.c_void_p) -> None:
        s = (text or b"").decode("utf-8", "replace")
        if self.echo:
            os.write(2, s.encode())
        if level == GGML_LOG_LEVEL_CONT:
            level = self.last_level
        self.last_level = level
        if level == GGML_LOG_LEVEL_ERROR:
            for line in s.splitlines():
                if line.strip():
                    self.errors.append(line.strip())


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    if len(args) != 1 or flags - {"--vocab-only", "--quiet"}:
        print(__doc__, file=sys.stderr)
        return 2
    path = args[0]
    try:
        lib = open_libllama()
    except OSError as e:
        print(f"cannot open libllama: {e}", file=sys.stderr)
        return 2
    log = Log(echo="--quiet" not in flags)
    lib.llama_log_set(log.callback, None)
    lib.llama_backend_init()
    params = lib.llama_model_default_params()
    params.n_gpu_layers = 0
    params.load_mode = LLAMA_LOAD_MODE_MMAP
    params.vocab_only = "--vocab-only" in flags
    model = lib.llama_model_load_from_file(path.encode(), params)
    if not model:
        # the informative line is "llama_model_load: error loading model: ..."; else the last error
        why = next((e for e in reversed(log.errors) if "error loading model" in e), None)
        why = why or (log.errors[-1] if log.errors else "llama_model_load_from_file returned NULL")
        print(f"error: {why}")
        lib.llama_backend_free()
        return 1
    print(f"loaded: {lib.llama_model_n_params(model)} parameters")
    lib.llama_model_free(model)
    lib.llama_backend_free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
