#!/usr/bin/env python3
"""Writer under test for `gguf-validate fuzz-writer`: gguf-py's GGUFWriter.

    python3 conformance/writers/gguf_py.py MODEL OUT      # MODEL: fuzz-writer's JSON
    python3 conformance/writers/gguf_py.py --version

Install: `pip install gguf==0.19.0` (numpy comes with it), or run
conformance/writers/install.sh. Claims: gguf_py.toml.

Each key is passed with its exact GGUF type (`add_key_value` with the
value type and, for arrays, `sub_type`); floats are built from their bit
patterns; `general.alignment` goes through `add_custom_alignment`, and
`general.architecture` through the constructor (GGUFWriter always writes
it first). Tensors are passed as raw bytes with `raw_dtype`, their shape
in numpy order with the last dimension in bytes, as gguf-py expects for
quantized data. Exit 0 when gguf-py wrote the file; any exception is
printed and exits 1.
"""
import base64
import json
import struct
import sys


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        import importlib.metadata
        print(f"gguf-py {importlib.metadata.version('gguf')} (numpy {importlib.metadata.version('numpy')})")
        return 0
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_py.py MODEL OUT | --version")
    import numpy as np
    from gguf import GGUFWriter, GGUFValueType, GGMLQuantizationType, GGML_QUANT_SIZES
    from gguf.quants import quant_shape_to_byte_shape
    from gguf.constants import GGUFEndian

    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != "gguf-writer-model" or doc.get("format_version") != 1:
        sys.exit("not a gguf-writer-model v1 description")

    vt = {
        "u8": GGUFValueType.UINT8, "i8": GGUFValueType.INT8, "u16": GGUFValueType.UINT16,
        "i16": GGUFValueType.INT16, "u32": GGUFValueType.UINT32, "i32": GGUFValueType.INT32,
        "u64": GGUFValueType.UINT64, "i64": GGUFValueType.INT64, "f32": GGUFValueType.FLOAT32,
        "f64": GGUFValueType.FLOAT64, "bool": GGUFValueType.BOOL, "string": GGUFValueType.STRING,
        "array": GGUFValueType.ARRAY,
    }

    def scalar(ty, v):
        if ty == "f32":
            return struct.unpack("<f", struct.pack("<I", int(v, 16)))[0]
        if ty == "f64":
            return struct.unpack("<d", struct.pack("<Q", int(v, 16)))[0]
        if ty in ("u64", "i64"):
            return int(v)
        return v

    arch = next((kv["value"] for kv in doc["kvs"] if kv["key"] == "general.architecture"), "")
    order = GGUFEndian.BIG if doc.get("byte_order") == "big" else GGUFEndian.LITTLE
    w = GGUFWriter(sys.argv[2], arch, endianess=order)
    for kv in doc["kvs"]:
        key, ty, v = kv["key"], kv["type"], kv["value"]
        if key == "general.architecture":
            continue  # written by the constructor
        if key == "general.alignment":
            w.add_custom_alignment(v)
        elif ty == "array":
            elem = kv["element_type"]
            if elem == "array":
                raise SystemExit("gguf-py cannot type the elements of nested arrays")
            w.add_key_value(key, [scalar(elem, x) for x in v], GGUFValueType.ARRAY, sub_type=vt[elem])
        else:
            w.add_key_value(key, scalar(ty, v), vt[ty])
    for t in doc["tensors"]:
        qtype = GGMLQuantizationType(t["type_id"])
        data = np.frombuffer(base64.b64decode(t["data"]), dtype=np.uint8)
        # What a gguf-py user does with ggml-laid-out bytes: the byte shape
        # from gguf-py's own table (numpy order, last dimension in bytes).
        byte_shape = quant_shape_to_byte_shape(tuple(reversed(t["dims"])), qtype)
        expected = int(np.prod(byte_shape))
        if expected != data.size:
            block, type_size = GGML_QUANT_SIZES[qtype]
            blocks = max(1, int(np.prod(t["dims"])) // block)
            raise ValueError(f"gguf-py's GGML_QUANT_SIZES gives {qtype.name} blocks of {type_size} bytes, "
                             f"ggml's are {data.size // blocks}")
        w.add_tensor(t["name"], data.reshape(byte_shape), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
