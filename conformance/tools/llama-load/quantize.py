#!/usr/bin/env python3
"""Quantizes one GGUF model with libllama's own quantizer (llama_model_quantize) through ctypes.

    python3 quantize.py IN OUT TYPE [--quiet]

TYPE is a llama_ftype name without its LLAMA_FTYPE_MOSTLY_ prefix (below).
The parameters are llama_model_quantize_default_params() with only ftype
set (and nthread 2): whatever the quantizer chooses for tensors too small or
too narrow for TYPE (its fallbacks) is what it writes, as llama-quantize
would with no options.

Exit status: 0 written, 1 the quantizer refused (llama_model_quantize
returned non-zero, or threw: `error: ...` with its last error line), 2 usage
error or libllama not found. An abort kills the process with a signal.
"""
from __future__ import annotations

import ctypes
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from load import Log, open_libllama  # noqa: E402

# enum llama_ftype of the pinned include/llama.h
FTYPES = {
    "Q8_0": 7,
    "Q2_K": 10,
    "Q4_K_M": 15,
    "Q5_K_S": 16,
    "Q6_K": 18,
    "IQ4_XS": 30,
    "TQ2_0": 37,
    "MXFP4_MOE": 38,
}


class QuantizeParams(ctypes.Structure):
    """struct llama_model_quantize_params of the pinned include/llama.h (passed by pointer)."""
    _fields_ = [
        ("nthread", ctypes.c_int32),
        ("ftype", ctypes.c_int),
        ("output_tensor_type", ctypes.c_int),
        ("token_embedding_type", ctypes.c_int),
        ("allow_requantize", ctypes.c_bool),
        ("quantize_output_tensor", ctypes.c_bool),
        ("only_copy", ctypes.c_bool),
        ("pure", ctypes.c_bool),
        ("keep_split", ctypes.c_bool),
        ("dry_run", ctypes.c_bool),
        ("imatrix", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("tt_overrides", ctypes.c_void_p),
        ("prune_layers", ctypes.c_void_p),
        ("max_buf_size", ctypes.c_size_t),
    ]


assert ctypes.sizeof(QuantizeParams) == 64, "llama_model_quantize_params layout differs from the pinned llama.h"


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    if len(args) != 3 or args[2] not in FTYPES or flags - {"--quiet"}:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, kind = args
    try:
        lib = open_libllama()
    except OSError as e:
        print(f"cannot open libllama: {e}", file=sys.stderr)
        return 2
    lib.llama_model_quantize_default_params.argtypes = []
    lib.llama_model_quantize_default_params.restype = QuantizeParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    log = Log(echo="--quiet" not in flags)
    lib.llama_log_set(log.callback, None)
    lib.llama_backend_init()
    params = lib.llama_model_quantize_default_params()
    params.ftype = FTYPES[kind]
    params.nthread = 2
    rc = lib.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    lib.llama_backend_free()
    if rc != 0:
        print(f"error: {log.errors[-1] if log.errors else f'llama_model_quantize returned {rc}'}")
        return 1
    print(f"quantized: {kind} -> {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
