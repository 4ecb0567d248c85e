#!/usr/bin/env python3
"""Writer under test for `gguf-validate fuzz-writer`: ggml's own GGUF writer
(`gguf_init_empty`, `gguf_set_*`, `gguf_add_tensor`, `gguf_write_to_file`)
called through ctypes on libggml-base.so.

    python3 conformance/writers/ggml_writer.py MODEL OUT     # MODEL: fuzz-writer's JSON
    python3 conformance/writers/ggml_writer.py --version

Install: `pip install llama-cpp-python==0.3.36` (its wheel carries
libggml-base.so; the build from source takes a while), or set
$GGML_BASE_LIB to a libggml-base.so. Claims: ggml_writer.toml.

Keys are set in order with the typed setters (`gguf_set_val_u8` ...,
`gguf_set_arr_data` for arrays of numbers and bools, `gguf_set_arr_str`);
floats cross into C as ctypes floats built from their bits, so no Python
float conversion touches them. Each tensor is a `ggml_new_tensor` of its
type and ne (ggml order) in a ggml context, its bytes copied into the
tensor's data, then `gguf_add_tensor`. ggml aborts (SIGABRT) on what it
refuses; the harness reports that as a failed run.
"""
import base64
import ctypes
import json
import struct
import sys
from pathlib import Path

# The library lookup ($GGML_BASE_LIB, else llama_cpp's lib/) is the readers' adapters' one.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "adapters"))
from ggml_common import library_path  # noqa: E402


GGUF_TYPE = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7,
             "string": 8, "array": 9, "u64": 10, "i64": 11, "f64": 12}
CTYPE = {"u8": ctypes.c_uint8, "i8": ctypes.c_int8, "u16": ctypes.c_uint16, "i16": ctypes.c_int16,
         "u32": ctypes.c_uint32, "i32": ctypes.c_int32, "u64": ctypes.c_uint64, "i64": ctypes.c_int64,
         "f32": ctypes.c_float, "f64": ctypes.c_double, "bool": ctypes.c_bool}


class InitParams(ctypes.Structure):
    # struct ggml_init_params { size_t mem_size; void * mem_buffer; bool no_alloc; };  (ggml.h)
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


def load():
    lib = ctypes.CDLL(library_path())
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    lib.gguf_init_empty.restype = vp
    lib.gguf_free.argtypes = [vp]
    for t, c in CTYPE.items():
        name = "gguf_set_val_" + t
        getattr(lib, name).argtypes = [vp, cp, c]
        getattr(lib, name).restype = None
    lib.gguf_set_val_str.argtypes = [vp, cp, cp]
    lib.gguf_set_arr_data.argtypes = [vp, cp, ctypes.c_int, vp, ctypes.c_size_t]
    lib.gguf_set_arr_str.argtypes = [vp, cp, ctypes.POINTER(cp), ctypes.c_size_t]
    lib.gguf_add_tensor.argtypes = [vp, vp]
    lib.gguf_write_to_file.argtypes = [vp, cp, ctypes.c_bool]
    lib.gguf_write_to_file.restype = ctypes.c_bool
    lib.ggml_init.argtypes = [InitParams]
    lib.ggml_init.restype = vp
    lib.ggml_free.argtypes = [vp]
    lib.ggml_new_tensor.argtypes = [vp, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
    lib.ggml_new_tensor.restype = vp
    lib.ggml_set_name.argtypes = [vp, cp]
    lib.ggml_set_name.restype = vp
    lib.ggml_get_data.argtypes = [vp]
    lib.ggml_get_data.restype = vp
    lib.ggml_nbytes.argtypes = [vp]
    lib.ggml_nbytes.restype = ctypes.c_size_t
    lib.ggml_tensor_overhead.restype = ctypes.c_size_t
    lib.ggml_version.restype = cp
    lib.ggml_commit.restype = cp
    return lib


def c_scalar(ty, v):
    """A ctypes value with exactly the asked bits."""
    if ty == "f32":
        return ctypes.c_float.from_buffer_copy(struct.pack("<I", int(v, 16)))
    if ty == "f64":
        return ctypes.c_double.from_buffer_copy(struct.pack("<Q", int(v, 16)))
    if ty in ("u64", "i64"):
        return CTYPE[ty](int(v))
    return CTYPE[ty](v)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        lib = load()
        commit = lib.ggml_commit().decode().removesuffix("-dirty")  # git's mark of a tree built in place
        print(f"ggml {lib.ggml_version().decode()} (llama.cpp {commit}, libggml-base from llama-cpp-python)")
        return 0
    if len(sys.argv) != 3:
        sys.exit("usage: ggml_writer.py MODEL OUT | --version")
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != "gguf-writer-model" or doc.get("format_version") != 1:
        sys.exit("not a gguf-writer-model v1 description")
    lib = load()
    g = lib.gguf_init_empty()
    keep = []  # buffers that must outlive the calls
    for kv in doc["kvs"]:
        key, ty, v = kv["key"].encode(), kv["type"], kv["value"]
        if ty == "string":
            lib.gguf_set_val_str(g, key, v.encode())
        elif ty == "array":
            elem = kv["element_type"]
            if elem == "array":
                raise SystemExit("ggml's writer has no setter for nested arrays")
            if elem == "string":
                arr = (ctypes.c_char_p * len(v))(*[s.encode() for s in v])
                keep.append(arr)
                lib.gguf_set_arr_str(g, key, arr, len(v))
            else:
                arr = (CTYPE[elem] * len(v))(*[c_scalar(elem, x).value for x in v]) if elem not in ("f32", "f64") else None
                if arr is None:
                    fmt, width = ("<I", 4) if elem == "f32" else ("<Q", 8)
                    raw = b"".join(struct.pack(fmt, int(x, 16)) for x in v)
                    arr = ctypes.create_string_buffer(raw, max(len(raw), 1))
                keep.append(arr)
                lib.gguf_set_arr_data(g, key, GGUF_TYPE[elem], ctypes.cast(arr, ctypes.c_void_p), len(v))
        else:
            getattr(lib, "gguf_set_val_" + ty)(g, key, c_scalar(ty, v))
    tensors = doc["tensors"]
    total = sum(t["nbytes"] for t in tensors)
    ctx = lib.ggml_init(InitParams(total + (len(tensors) + 1) * (lib.ggml_tensor_overhead() + 64) + 1024, None, False))
    for t in tensors:
        dims = t["dims"]
        ne = (ctypes.c_int64 * 4)(*(dims + [1] * (4 - len(dims))))
        tensor = lib.ggml_new_tensor(ctx, t["type_id"], len(dims), ne)
        lib.ggml_set_name(tensor, t["name"].encode())
        data = base64.b64decode(t["data"])
        if lib.ggml_nbytes(tensor) != len(data):
            raise SystemExit(f"ggml sizes {t['name']} at {lib.ggml_nbytes(tensor)} bytes, the description at {len(data)}")
        if data:
            ctypes.memmove(lib.ggml_get_data(tensor), data, len(data))
        lib.gguf_add_tensor(g, tensor)
    ok = lib.gguf_write_to_file(g, sys.argv[2].encode(), False)
    lib.gguf_free(g)
    lib.ggml_free(ctx)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
