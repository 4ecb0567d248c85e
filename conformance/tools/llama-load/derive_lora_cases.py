#!/usr/bin/env python3
"""Derives adapters the converter never writes from a converted one, with gguf-py.

    python3 derive_lora_cases.py SRC.gguf DST.gguf {3d|invocation}

`3d`: the first `*.attn_q.weight.lora_a` stacked twice into a 3-D tensor
[in, rank, 2] (llama_adapter_lora_init accepts it; ggml aborts in
ggml_mul_mat at the first decode). `invocation`: adds
`adapter.alora.invocation_tokens = [2^31]` (loads; the sequence never occurs
in a prompt). The results in corpus/models/lora/ were made from
lora-llama_r8.gguf and loaded with load_lora.py against llama.gguf; their
verdicts are in its manifest.json.
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter


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
    for t in r.tensors:
        data = np.array(t.data)
        if mode == "3d" and not stacked and t.name.endswith("attn_q.weight.lora_a"):
            data = np.stack([data, data])
            stacked = True
        w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    if mode == "invocation":
        w.add_key_value("adapter.alora.invocation_tokens", [1 << 31], GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("3d", "invocation"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
