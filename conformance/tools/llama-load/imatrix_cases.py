#!/usr/bin/env python3
"""Importance matrices, each read by llama.cpp's own `llama-quantize --imatrix`.

    python3 imatrix_cases.py OUTDIR --bin DIR --model MODEL [--reuse] [--list]

DIR holds the pinned tree's tools (`llama-imatrix`, `llama-quantize`, built
from the `vendor/llama.cpp` of the llama-cpp-python 0.3.36 sdist). MODEL is a model of corpus/models (a MoE one:
its `*_exps` tensors have experts).

1. `llama-imatrix` computes a real importance matrix of MODEL on a short
   text (OUTDIR/imatrix__real.gguf; 2 chunks of 32 tokens, one thread),
   kept byte for byte: llama.cpp's own output.
2. The cases are that file rewritten with gguf-py's GGUFWriter (its keys
   and tensors read with GGUFReader), each with one change: a key dropped
   or of another type, a tensor dropped, added, of another type or shape.
3. Each file is given to `llama-quantize --imatrix FILE MODEL OUT Q8_0 1`
   in its own process (every 2-D and 3-D weight of MODEL is F16 with
   ne[0] a multiple of 32, so every one is quantized and its entry looked
   up; OUT is deleted after): exit 0 `yes`, another exit status `refused`
   (its error line), a signal `crash` (the signal and the last line).

With --reuse, an OUTDIR/imatrix__real.gguf already there is kept (not
computed again), so adding a case leaves the other files byte for byte.

Writes OUTDIR/imatrix__<case>.gguf and OUTDIR/manifest.json: {file, kind:
"imatrix", variant, with (MODEL relative to OUTDIR), loads: yes|refused|
crash, detail, entries (how many entries llama-quantize loaded), description}.
Needs gguf-py (the pinned one: PYTHONPATH=that tree's gguf-py) and
numpy. The output is deterministic for a given build (one thread).
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile

TEXT = (
    "The importance matrix records, for every weight matrix of a model, how strongly each of its "
    "input columns is driven by real text. A quantizer then spends its error where the model looks "
    "least. This paragraph is the calibration text: a few sentences are enough for a tiny model, "
    "whose context is short and whose vocabulary is small. Numbers like 1, 2, 3 and words like "
    "apple, river, engine, lantern and orbit give the tokenizer something to split. "
) * 6

EXPERTS = "blk.0.ffn_up_exps.weight"
DENSE = "blk.0.attn_q.weight"


def read(path: pathlib.Path):
    """The keys (name -> (GGUFValueType, value, sub type)) and tensors
    (name -> float32 array in ggml's order, ne[0] last) of an imatrix."""
    import gguf
    import numpy as np
    r = gguf.GGUFReader(str(path))
    keys = {}
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.alignment":
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            keys[f.name] = (t, [str(bytes(f.parts[i]), "utf-8") for i in f.data], f.types[-1])
        elif t == gguf.GGUFValueType.STRING:
            keys[f.name] = (t, str(bytes(f.parts[f.data[0]]), "utf-8"), None)
        else:
            keys[f.name] = (t, f.parts[f.data[0]][0].item(), None)
    tensors = {}
    for t in r.tensors:
        shape = [int(d) for d in reversed(t.shape.tolist())]
        tensors[t.name] = np.array(t.data, dtype=np.float32).reshape(shape)
    return keys, tensors


def write(path: pathlib.Path, keys: dict, tensors: dict) -> None:
    import gguf
    import numpy as np
    w = gguf.GGUFWriter(str(path), arch="", use_temp_file=False)
    # GGUFWriter always writes general.architecture; llama-imatrix does not:
    # drop it again so the cases differ from the real file by their change.
    w.kv_data[0].pop("general.architecture", None)
    for name, (t, value, sub) in keys.items():
        if t == gguf.GGUFValueType.ARRAY:
            w.add_array(name, value)
        elif t == gguf.GGUFValueType.STRING:
            w.add_string(name, value)
        else:
            w.add_key_value(name, value, t)
    for name, data in tensors.items():
        # F32, or F16 where a case wants it (the dtype says which).
        w.add_tensor(name, np.ascontiguousarray(data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def cases(keys: dict, tensors: dict):
    """(name, description, keys, tensors) of every case, from the real file."""
    import gguf
    import numpy as np
    T = gguf.GGUFValueType

    def k(**changes):
        out = dict(keys)
        for name, v in changes.items():
            name = name.replace("__", ".")
            if v is None:
                out.pop(name, None)
            else:
                out[name] = v
        return out

    def t(drop=(), **add):
        out = {n: v for n, v in tensors.items() if n not in drop}
        out.update({n.replace("__", "."): v for n, v in add.items()})
        return out

    sums, counts = tensors[f"{EXPERTS}.in_sum2"], tensors[f"{EXPERTS}.counts"]
    n_exp, ne0 = sums.shape[0], sums.shape[-1]
    return [
        ("metadata_missing", "imatrix.chunk_size removed", k(imatrix__chunk_size=None), t()),
        ("datasets_missing", "imatrix.datasets removed", k(imatrix__datasets=None), t()),
        ("chunk_count_i32", "imatrix.chunk_count as i32 (gguf_get_val_u32 asserts u32)",
         k(imatrix__chunk_count=(T.INT32, keys["imatrix.chunk_count"][1], None)), t()),
        ("chunk_size_string", "imatrix.chunk_size as the string \"32\"",
         k(imatrix__chunk_size=(T.STRING, "32", None)), t()),
        ("chunk_size_u64", "imatrix.chunk_size as u64",
         k(imatrix__chunk_size=(T.UINT64, keys["imatrix.chunk_size"][1], None)), t()),
        ("datasets_string", "imatrix.datasets as one string, not an array (ignored)",
         k(imatrix__datasets=(T.STRING, "calibration.txt", None)), t()),
        ("no_tensors", "the keys and no tensor", k(), {}),
        ("stray_tensor", "an extra tensor named neither .in_sum2 nor .counts (ignored)", k(),
         t(**{f"{DENSE}.values": np.ones(4, dtype=np.float32)})),
        ("only_stray_tensors", "no .in_sum2/.counts pair, one other tensor: llama-quantize runs without weights", k(),
         {f"{DENSE}.values": np.ones(4, dtype=np.float32)}),
        ("sums_without_counts", f"{DENSE}.counts removed", k(), t(drop=[f"{DENSE}.counts"])),
        ("counts_without_sums", f"{EXPERTS}.in_sum2 removed", k(), t(drop=[f"{EXPERTS}.in_sum2"])),
        ("sums_f16", f"{DENSE}.in_sum2 as F16", k(),
         t(**{f"{DENSE}.in_sum2": tensors[f"{DENSE}.in_sum2"].astype(np.float16)})),
        ("counts_empty", f"{DENSE}.counts of shape [1, 0]: the number of counts is 0", k(),
         t(**{f"{DENSE}.counts": np.zeros((0, 1), dtype=np.float32)})),
        ("sums_flat", f"{EXPERTS}.in_sum2 as one row of {n_exp * ne0} (the loader reads element counts)", k(),
         t(**{f"{EXPERTS}.in_sum2": sums.reshape(-1)})),
        ("counts_one", f"{EXPERTS}.counts as one count for all {n_exp} experts (as llama-imatrix writes equal counts)", k(),
         t(**{f"{EXPERTS}.counts": counts.reshape(-1)[:1].reshape(1, 1)})),
        ("counts_two", f"{EXPERTS}.counts as 2 counts for {n_exp} experts: slices that are not the experts'", k(),
         t(**{f"{EXPERTS}.counts": counts.reshape(-1)[:2].reshape(2, 1)})),
        ("sums_one_expert", f"{EXPERTS}: the sums and count of the first expert only ({ne0} of {n_exp * ne0})", k(),
         t(**{f"{EXPERTS}.in_sum2": sums[:1], f"{EXPERTS}.counts": counts[:1]})),
        ("sums_not_whole_slices", f"{EXPERTS}.in_sum2 with 2 values more than {n_exp} slices of {ne0}", k(),
         t(**{f"{EXPERTS}.in_sum2": np.concatenate([sums.reshape(-1), np.ones(2, dtype=np.float32)])})),
        ("dense_wrong_width", f"{DENSE}: sums for a width of {ne0 // 2}", k(),
         t(**{f"{DENSE}.in_sum2": tensors[f"{DENSE}.in_sum2"][..., : ne0 // 2]})),
        ("token_embd_wrong_size", "an entry for token_embd.weight of 8 sums: quantized without weights", k(),
         t(**{"token_embd.weight.in_sum2": np.ones((1, 8), dtype=np.float32),
              "token_embd.weight.counts": np.ones((1, 1), dtype=np.float32)})),
        ("sums_nan", f"{DENSE}.in_sum2 with its first value NaN (llama_model_quantize refuses non-finite weights)", k(),
         t(**{f"{DENSE}.in_sum2": np.where(np.arange(ne0) == 0, np.float32("nan"),
                                           tensors[f"{DENSE}.in_sum2"]).astype(np.float32)})),
        ("sums_inf", f"{EXPERTS}.in_sum2 with the last value of the last expert +inf", k(),
         t(**{f"{EXPERTS}.in_sum2": np.where(np.arange(n_exp * ne0).reshape(sums.shape) == n_exp * ne0 - 1,
                                             np.float32("inf"), sums).astype(np.float32)})),
        ("unknown_tensor", "an entry for blk.9.attn_q.weight, which the model lacks (never read)", k(),
         t(**{"blk.9.attn_q.weight.in_sum2": np.ones((1, ne0), dtype=np.float32),
              "blk.9.attn_q.weight.counts": np.ones((1, 1), dtype=np.float32)})),
    ]


def quantize(binary: pathlib.Path, imatrix: pathlib.Path, model: pathlib.Path) -> tuple[str, str, int | None]:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "out.gguf"
        try:
            p = subprocess.run([str(binary), "--imatrix", str(imatrix), str(model), str(out), "Q8_0", "1"],
                               capture_output=True, text=True, errors="replace", timeout=300,
                               env=dict(os.environ, GGML_NO_BACKTRACE="1"))
        except subprocess.TimeoutExpired:
            return "timeout", "no result after 300 s", None
    text = p.stdout + "\n" + p.stderr
    m = re.search(r"loaded (\d+) importance matrix entries", text)
    entries = int(m.group(1)) if m else None
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    errors = [x for x in lines if re.search(r"error|failed|mismatched|missing|must be|no data|GGML_ASSERT|different from|non-finite", x, re.I)]
    # Source paths as the tree names them, not where it was built.
    errors = [re.sub(r"/\S*/(?=ggml/src/|common/|tools/|src/llama)", "", x) for x in errors]
    if p.returncode == 0:
        return "yes", "", entries
    if p.returncode < 0:
        return "crash", f"{signal.Signals(-p.returncode).name}: {errors[-1] if errors else (lines[-1] if lines else '')}", entries
    return "refused", errors[0] if errors else f"exit {p.returncode}", entries


def main(argv: list[str]) -> int:
    args = argv[1:]
    opts = {}
    rest = []
    i = 0
    while i < len(args):
        if args[i] in ("--bin", "--model"):
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    reuse = "--reuse" in rest
    rest = [a for a in rest if a != "--reuse"]
    if "--list" in rest or len(rest) != 1 or set(opts) != {"--bin", "--model"}:
        print(__doc__, file=sys.stderr)
        return 2
    out, bindir, model = pathlib.Path(rest[0]), pathlib.Path(opts["--bin"]), pathlib.Path(opts["--model"]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    real = out / "imatrix__real.gguf"
    reuse = reuse and real.exists()
    for old in out.glob("imatrix__*.gguf"):
        if not (reuse and old == real):
            old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        if reuse:
            p = subprocess.CompletedProcess([], 0, "", "")
        else:
            text = pathlib.Path(tmp) / "calibration.txt"
            text.write_text(TEXT)
            # Run in the text's folder: the file records the dataset as given.
            p = subprocess.run([str(bindir.resolve() / "llama-imatrix"), "-m", str(model), "-f", text.name,
                                "-o", str(real.resolve()), "-c", "32", "--chunks", "2", "-t", "1", "-b", "32",
                                "--no-ppl", "--seed", "1"],
                               capture_output=True, text=True, errors="replace", timeout=600, cwd=tmp)
    if p.returncode != 0 or not real.exists():
        print(p.stdout[-2000:], p.stderr[-4000:], file=sys.stderr)
        return 1
    keys, tensors = read(real)
    rel = os.path.relpath(model, out.resolve())
    files = [("real", f"llama-imatrix's own output for {model.name} (2 chunks of 32 tokens), as it wrote it", real)]
    for name, desc, k, t in cases(keys, tensors):
        path = out / f"imatrix__{name}.gguf"
        write(path, k, t)
        files.append((name, desc, path))
    entries = []
    quantizer = bindir / "llama-quantize"
    for name, desc, path in files:
        verdict, detail, n = quantize(quantizer, path, model)
        detail = detail.replace(f"{path.parent}/", "").replace(str(model), model.name)
        entries.append({"file": path.name, "kind": "imatrix", "variant": name, "with": rel, "loads": verdict,
                        "detail": detail, "entries": n, "description": desc})
        print(f"{verdict:8} {str(n):>4} {path.name}  {detail}")
    (out / "manifest.json").write_text(json.dumps({
        "about": "importance matrices read by llama.cpp's llama-quantize --imatrix (Q8_0) against their model; "
                 "generated by conformance/tools/llama-load/imatrix_cases.py from llama-imatrix's own output",
        "models": entries}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
