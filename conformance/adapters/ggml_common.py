"""Shared ctypes binding to ggml's GGUF reader (`gguf_init_from_file` in
libggml-base.so, as shipped inside the PyPI `llama-cpp-python` wheel).

Adapter contract (JSONTestSuite style): the file path is argv[1]; exit 0 =
accepted, 1 = rejected. Anything else (an abort from GGML_ASSERT, a
segfault) is reported by the runner as a crash.

The library is found via $GGML_BASE_LIB, else inside the installed
`llama_cpp` package (lib/libggml-base.so), without importing llama_cpp.
"""
import ctypes
import importlib.util
import os
import sys
from pathlib import Path

# ggml runs gdb for a backtrace before aborting unless this is set.
os.environ.setdefault("GGML_NO_BACKTRACE", "1")


class GgufInitParams(ctypes.Structure):
    # struct gguf_init_params { bool no_alloc; struct ggml_context ** ctx; };  (gguf.h)
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.POINTER(ctypes.c_void_p))]


def library_path():
    env = os.environ.get("GGML_BASE_LIB")
    if env:
        return env
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("ggml adapter: llama_cpp is not installed and $GGML_BASE_LIB is not set")
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "lib" / "libggml-base.so"
        if p.exists():
            return str(p)
    sys.exit("ggml adapter: libggml-base.so not found in the llama_cpp package")


def load():
    lib = ctypes.CDLL(library_path())
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, GgufInitParams]
    lib.gguf_free.argtypes = [ctypes.c_void_p]
    lib.gguf_free.restype = None
    lib.ggml_free.argtypes = [ctypes.c_void_p]
    lib.ggml_free.restype = None
    lib.ggml_version.restype = ctypes.c_char_p
    lib.ggml_commit.restype = ctypes.c_char_p
    return lib


def build(commit):
    """Where this ggml comes from, readably: the llama.cpp commit (without
    git's `-dirty`, which only says the vendored tree was built in place)
    and the llama-cpp-python release that vendors it."""
    commit = commit.removesuffix("-dirty")
    try:
        from importlib.metadata import version as package_version

        return f"llama.cpp {commit}, from llama-cpp-python {package_version('llama_cpp_python')}"
    except Exception:
        return f"llama.cpp {commit}"


def version():
    lib = load()
    return f"ggml {lib.ggml_version().decode()} ({build(lib.ggml_commit().decode())})"


def read(path, full):
    """True if ggml loads the file. `full`: no_alloc=false with a context
    (reads the whole data blob); else no_alloc=true, ctx=NULL (metadata
    only, what llama.cpp does before it maps tensors)."""
    lib = load()
    if full:
        ctx = ctypes.c_void_p()
        params = GgufInitParams(False, ctypes.pointer(ctx))
    else:
        ctx = None
        params = GgufInitParams(True, None)
    g = lib.gguf_init_from_file(os.fsencode(path), params)
    if not g:
        return False
    lib.gguf_free(g)
    if ctx is not None and ctx.value:
        lib.ggml_free(ctx)
    return True


def main(full):
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        print(version())
        return 0
    if len(sys.argv) != 2:
        sys.exit("usage: ggml_{meta,full}.py FILE | --version")
    return 0 if read(sys.argv[1], full) else 1
