#!/usr/bin/env python3
"""Evidence for `gguf-validate derive` on a real model and llama.cpp's own quantizer.

1. Makes an F32 base from a real GGUF model: every tensor dequantized to f32 by
   `gguf-validate dump --tensor NAME --dequant`, all metadata kept
   (`general.file_type` set to 0, ALL_F32), written with gguf-py's GGUFWriter.
2. Quantizes the base with `llama_model_quantize` from the libllama that
   llama-cpp-python builds (what `llama-quantize` runs), for each requested
   file type; with `--imatrix`, also with a synthetic importance matrix passed
   through `llama_model_quantize_params.imatrix` (a C array of name/data/size
   in llama.cpp of llama-cpp-python 0.3.36) and written to an imatrix GGUF
   file in `llama-imatrix`'s layout (`*.in_sum2`, `*.counts`,
   `imatrix.datasets/chunk_count/chunk_size`), the weights handed to libllama
   being exactly `in_sum2 / round(count)` as llama-quantize computes them.
3. Runs `gguf-validate derive --json BASE QUANT [--imatrix FILE]` and expects
   every tensor `identical`; then flips one byte in one block of a copy of
   the quant and expects exactly that tensor to `differ`.

Needs: gguf==0.19.0, llama-cpp-python==0.3.36 (built from source), numpy, a
release build of gguf-validate. Not run in CI (minutes, a 1 GB base); the
figures go into the closing note of issue 14.

    python3 conformance/tools/derive/real_derive.py \
        --model gemma-3-270m-q4_k_m.gguf --tool target/release/gguf-validate \
        --work "$WORKDIR" --ftypes Q4_K_M,Q8_0,IQ4_NL --imatrix Q4_K_M,IQ4_NL
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import gguf
from gguf import GGUFReader, GGUFWriter, GGUFValueType

# llama_ftype values (llama.h).
FTYPES = {
    "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9,
    "Q2_K": 10, "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15,
    "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18, "IQ2_XXS": 19, "IQ2_XS": 20, "Q2_K_S": 21,
    "IQ3_XS": 22, "IQ3_XXS": 23, "IQ1_S": 24, "IQ4_NL": 25, "IQ3_S": 26, "IQ3_M": 27,
    "IQ2_S": 28, "IQ2_M": 29, "IQ4_XS": 30, "IQ1_M": 31, "BF16": 32, "TQ1_0": 36, "TQ2_0": 37,
    "MXFP4_MOE": 38,
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make_base(model, base, tool):
    r = GGUFReader(model)
    arch = r.fields["general.architecture"].contents()
    w = GGUFWriter(base, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = f.types[0]
        if name == "general.file_type":
            w.add_key_value(name, 0, GGUFValueType.UINT32)
            continue
        if vtype == GGUFValueType.ARRAY:
            w.add_key_value(name, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(name, f.contents(), vtype)
    for t in r.tensors:
        out = subprocess.run(
            [tool, "dump", model, "--tensor", t.name, "--dequant", "--output", "-"],
            check=True, capture_output=True,
        ).stdout
        arr = np.frombuffer(out, dtype=np.float32).reshape(tuple(reversed([int(d) for d in t.shape])))
        w.add_tensor(t.name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return r


def synthetic_imatrix(base_reader, path, seed=7):
    """Sums and counts for every weight matrix; returns {name: weights}."""
    rng = np.random.default_rng(seed)
    w = GGUFWriter(path, "imatrix")
    w.add_string("general.type", "imatrix")
    w.add_array("imatrix.datasets", ["synthetic"])
    w.add_uint32("imatrix.chunk_count", 100)
    w.add_uint32("imatrix.chunk_size", 512)
    weights = {}
    for i, t in enumerate(base_reader.tensors):
        dims = [int(d) for d in t.shape]
        if len(dims) < 2 or not t.name.endswith(".weight"):
            continue
        ne0 = dims[0]
        n_mat = dims[2] if len(dims) > 2 else 1
        sums = (rng.gamma(1.5, 2.0, size=(n_mat, ne0)) * rng.uniform(0.5, 50.0)).astype(np.float32)
        counts = rng.integers(100, 5000, size=(n_mat, 1)).astype(np.float32)
        if i % 11 == 5:
            counts[0, 0] = 0.0  # a slice that saw no token: weight 1
        w.add_tensor(t.name + ".in_sum2", sums)
        w.add_tensor(t.name + ".counts", counts)
        norm = np.empty_like(sums)
        for j in range(n_mat):
            c = np.float32(np.round(counts[j, 0]))
            norm[j] = sums[j] / c if c > 0 else np.float32(1.0)
        weights[t.name] = np.ascontiguousarray(norm.reshape(-1), dtype=np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return weights


def quantize(base, out, ftype, weights=None):
    import llama_cpp.llama_cpp as L
    params = L.llama_model_quantize_default_params()
    params.ftype = FTYPES[ftype]
    params.nthread = os.cpu_count() or 1
    keep = []
    if weights is not None:
        arr = (L.llama_model_imatrix_data * (len(weights) + 1))()
        for i, (name, v) in enumerate(weights.items()):
            nb = name.encode()
            keep.append((nb, v))
            arr[i].name = ctypes.c_char_p(nb)
            arr[i].data = v.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            arr[i].size = v.size
        arr[len(weights)].name = None
        params.imatrix = ctypes.cast(arr, ctypes.POINTER(L.llama_model_imatrix_data))
        keep.append(arr)
    t0 = time.time()
    rc = L.llama_model_quantize(base.encode(), out.encode(), ctypes.byref(params))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize {ftype} failed: {rc}")
    return time.time() - t0


def derive(tool, base, quant, imatrix=None):
    cmd = [tool, "derive", "--json", base, quant] + (["--imatrix", imatrix] if imatrix else [])
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True)
    dt = time.time() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"derive failed ({p.returncode}): {p.stderr.decode()}")
    v = json.loads(p.stdout)
    by = {}
    for t in v["tensors"]:
        by.setdefault(t["status"], []).append(t)
    types = {}
    for t in v["tensors"]:
        types[t["type"]] = types.get(t["type"], 0) + 1
    return p.returncode, by, types, dt


def alter_one_block(quant, altered):
    shutil.copyfile(quant, altered)
    r = GGUFReader(quant)
    t = next(t for t in r.tensors if t.tensor_type not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16)
             and int(t.n_bytes) > 4096)
    at = int(t.data_offset) + 1000
    with open(altered, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x5A]))
    return t.name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ftypes", default="Q4_K_M,Q8_0,IQ4_NL")
    ap.add_argument("--imatrix", default="Q4_K_M", help="file types also quantized with a synthetic imatrix")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    base = os.path.join(a.work, "base-f32.gguf")
    if not os.path.exists(base):
        log("making the F32 base ...")
        make_base(a.model, base, a.tool)
    reader = GGUFReader(base)
    im_path = os.path.join(a.work, "imatrix.gguf")
    weights = synthetic_imatrix(reader, im_path) if a.imatrix else None
    runs = [(f, None) for f in a.ftypes.split(",") if f] + [(f, "imatrix") for f in a.imatrix.split(",") if f]
    results = []
    for ftype, im in runs:
        out = os.path.join(a.work, f"quant-{ftype}{'-imatrix' if im else ''}.gguf")
        log(f"llama_model_quantize {ftype}{' with imatrix' if im else ''} ...")
        qt = quantize(base, out, ftype, weights if im else None)
        rc, by, types, dt = derive(a.tool, base, out, im_path if im else None)
        altered = out.replace(".gguf", "-altered.gguf")
        name = alter_one_block(out, altered)
        rc2, by2, _, _ = derive(a.tool, base, altered, im_path if im else None)
        differs2 = [t["name"] for t in by2.get("differs", [])]
        # The matrix mattered: without it, derive must find differences.
        without = None
        if im:
            _, by3, _, _ = derive(a.tool, base, out)
            without = {k: len(v) for k, v in by3.items()}
        res = {
            "ftype": ftype, "imatrix": bool(im), "quantize_seconds": round(qt, 1),
            "derive_seconds": round(dt, 2), "exit": rc,
            "counts": {k: len(v) for k, v in by.items()}, "tensor_types": types,
            "not_identical": [(t["name"], t["status"], t.get("reason")) for k, v in by.items() if k != "identical" for t in v],
            "altered_tensor": name, "altered_exit": rc2, "altered_differs": differs2,
            "without_imatrix": without,
        }
        results.append(res)
        log(json.dumps(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    ok = all(r["exit"] == 0 and r["altered_exit"] == 1 and r["altered_differs"] == [r["altered_tensor"]]
             and (not r["imatrix"] or r["without_imatrix"].get("differs", 0) > 0) for r in results)
    print(json.dumps(results, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
