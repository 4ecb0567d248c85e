#!/usr/bin/env python3
"""Derives adapters the converter never writes from a converted one, with gguf-py.

    python3 derive_lora_cases.py SRC.gguf DST.gguf MODE

`3d`: the first `*.attn_q.weight.lora_a` stacked twice into a 3-D tensor
[in, rank, 2] (llama_adapter_lora_init accepts it; ggml aborts in
ggml_mul_mat at the first decode). `invocation`: adds
`adapter.alora.invocation_tokens = [2^31]` (loads; the sequence never occurs
in a prompt). The results in corpus/models/lora/ were made from
lora-llama_r8.gguf and loaded with load_lora.py against llama.gguf; their
verdicts are in its manifest.json.

The expert modes change the first `*.ffn_up_exps.weight` pair of an expert
adapter (lora-qwen3moe_r8_experts.gguf, 4 experts: lora_a [64, r, 4],
lora_b [r, 32, 4]), loaded against qwen3moe.gguf:

`experts_b_2`: lora_b keeps experts 0 and 1 only ([r, 32, 2]); the loader
compares ne[0] and ne[1] and accepts it. `experts_2d`: both matrices are
expert 0's, 2-D ([64, r] / [r, 32]), as an adapter for a dense model would
have them. `experts_4d`: lora_a viewed as [64, r, 2, 2] (the same bytes).
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

MODES = ("3d", "invocation", "experts_b_2", "experts_2d", "experts_4d")


def expert_change(mode: str, name: str, data: np.ndarray, done: dict) -> np.ndarray:
    """numpy shapes are ggml's reversed: a 3-D lora_a [64, r, 4] is (4, r, 64)."""
    if not name.endswith(("ffn_up_exps.weight.lora_a", "ffn_up_exps.weight.lora_b")):
        return data
    pair = name.rsplit(".", 1)[0]
    if done.setdefault("pair", pair) != pair:   # only the first ffn_up_exps pair of the file
        return data
    is_b = name.endswith("lora_b")
    if mode == "experts_b_2" and is_b:
        return data[:2]
    if mode == "experts_2d":
        return data[0]
    if mode == "experts_4d" and not is_b:
        return data.reshape(2, 2, *data.shape[1:])
    return data


def main(src: str, dst: str, mode: str) -> int:
    r = GGUFReader(src)
    w = GGUFWriter(dst, r.fields["general.architecture"].contents())
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        t = f.types[0]
        if t == GGUFValueType.ARRAY:
            w.add_key_value(k, f.contents(), t, sub_type=f.types[-1])
        else:
            w.add_key_value(k, f.contents(), t)
    stacked = False
    done: dict = {}
    for t in r.tensors:
        data = np.array(t.data)
        if mode == "3d" and not stacked and t.name.endswith("attn_q.weight.lora_a"):
            data = np.stack([data, data])
            stacked = True
        elif mode.startswith("experts_"):
            data = np.ascontiguousarray(expert_change(mode, t.name, data, done))
        w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    if mode == "invocation":
        w.add_key_value("adapter.alora.invocation_tokens", [1 << 31], GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in MODES:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
