#!/usr/bin/env python3
"""Writes real-world-shaped GGUF files with gguf-py's GGUFWriter into
corpus/gguf-py/. These are the files that decide rule severities: every one
must be valid under gguf-validate's default (strict) profile.

Requires: pip install gguf==0.19.0 numpy  (the version is recorded in
corpus/gguf-py/README.md). Deterministic: fixed seeds, no timestamps.
"""
import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import gguf
from gguf import GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

OUT = Path(__file__).resolve().parents[2] / "corpus" / "gguf-py"
GGUF_VERSION = version("gguf")


def llama_like(path, endianess=gguf.GGUFEndian.LITTLE, n_vocab=320):
    rng = np.random.default_rng(1)
    w = GGUFWriter(str(path), "llama", endianess=endianess)
    w.add_name("tiny llama")
    w.add_type("model")
    w.add_size_label("1K")
    w.add_context_length(128)
    w.add_embedding_length(32)
    w.add_block_count(1)
    w.add_feed_forward_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(8)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    # The 256 byte tokens <0x00>..<0xFF> (type BYTE) as a SentencePiece
    # vocabulary has them: llama.cpp spells a character it has no token for
    # byte by byte, and aborts without them (tokenizer-byte-fallback).
    n_words = n_vocab - 3 - 256
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [f"▁tok{i}" for i in range(n_words)]
    w.add_token_list(tokens)
    w.add_token_scores([float(-i) for i in range(n_vocab)])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * n_words)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, 32), dtype=np.float32).astype(np.float16))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(32, dtype=np.float32))
    q = quantize(rng.standard_normal((32, 32), dtype=np.float32), Q.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", q, raw_dtype=Q.Q8_0)
    b = quantize(rng.standard_normal((64, 32), dtype=np.float32), Q.BF16)
    w.add_tensor("blk.0.ffn_up.weight", b, raw_dtype=Q.BF16)
    q4 = quantize(rng.standard_normal((32, 64), dtype=np.float32), Q.Q4_0)
    w.add_tensor("blk.0.ffn_down.weight", q4, raw_dtype=Q.Q4_0)
    # The rest of a complete one-layer llama (llama.cpp loads the file):
    # numpy shapes are ggml's dims reversed.
    w.add_tensor("blk.0.attn_k.weight", rng.standard_normal((16, 32), dtype=np.float32).astype(np.float16))
    w.add_tensor("blk.0.attn_v.weight", rng.standard_normal((16, 32), dtype=np.float32))
    w.add_tensor("blk.0.attn_output.weight", rng.standard_normal((32, 32), dtype=np.float32).astype(np.float16))
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(32, dtype=np.float32))
    w.add_tensor("blk.0.ffn_gate.weight", rng.standard_normal((64, 32), dtype=np.float32).astype(np.float16))
    w.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def all_value_types(path):
    w = GGUFWriter(str(path), "custom")
    w.add_uint8("custom.u8", 200)
    w.add_int8("custom.i8", -100)
    w.add_uint16("custom.u16", 60000)
    w.add_int16("custom.i16", -30000)
    w.add_uint32("custom.u32", 4_000_000_000)
    w.add_int32("custom.i32", -2_000_000_000)
    w.add_float32("custom.f32", 1.5)
    w.add_bool("custom.bool", True)
    w.add_string("custom.string", "héllo ▁ 😀")
    w.add_uint64("custom.u64", 2**64 - 1)
    w.add_int64("custom.i64", -(2**63))
    w.add_float64("custom.f64", -0.25)
    w.add_array("custom.arr_str", ["a", "bé", ""])
    w.add_array("custom.arr_int", [1, 2, 3])
    w.add_array("custom.arr_float", [1.0, 2.5])
    w.add_array("custom.arr_bool", [True, False])
    w.add_tensor("f32", np.arange(16, dtype=np.float32))
    w.add_tensor("f16", np.arange(16, dtype=np.float16))
    w.add_tensor("i8", np.arange(16, dtype=np.int8))
    w.add_tensor("i16", np.arange(16, dtype=np.int16))
    w.add_tensor("i32", np.arange(16, dtype=np.int32))
    w.add_tensor("i64", np.arange(16, dtype=np.int64))
    w.add_tensor("f64", np.arange(16, dtype=np.float64))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def metadata_only(path):
    w = GGUFWriter(str(path), "clip")
    w.add_string("general.description", "metadata only, no tensors")
    w.add_custom_alignment(64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def nested_array(path):
    # GGUFWriter turns a list of lists into an ARRAY of ARRAY values: the
    # spec allows nesting, ggml's reader rejects it.
    w = GGUFWriter(str(path), "plain")
    w.add_array("custom.nested", [[1, 2], [3]])
    w.add_tensor("t", np.arange(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


A, R = "accept", "reject"

# Expected verdicts under gguf-validate's profiles (strict, spec, ggml) and
# the rule ids `strict` reports: the conformance test holds gguf-validate to
# them, the differential script and the matrix score readers against them.
EXPECT = {
    "llama_tiny.gguf": ("A complete one-layer llama model (tokenizer arrays, chat template, F32/F16/BF16/Q8_0/Q4_0 tensors) as GGUFWriter writes it; llama.cpp loads it.", (A, A, A), [], None),
    "llama_tiny_be.gguf": ("The same model written with endianess=BIG (magic bytes still `GGUF`, every number big-endian): valid by the spec; ggml, and so llama.cpp, on a little-endian host rejects it, so strict does too.", (R, A, R), ["byte-order-big-endian"], None),
    "all_value_types.gguf": ("One key of every value type (typed add_* calls), arrays of strings, ints, floats and bools, and one tensor of each numpy dtype GGUFWriter maps (f32, f16, i8, i16, i32, i64, f64).", (A, A, A), ["model-architecture-unknown"], None),
    "metadata_only.gguf": ("No tensors, general.alignment = 64 and an mmproj-style architecture `clip`: GGUFWriter pads the key/value section to 64 bytes.", (A, A, A), [], None),
    "nested_array.gguf": ("A key whose value is a list of lists: GGUFWriter writes an ARRAY of ARRAY (of INT32), which the spec allows and ggml rejects.", (R, A, R), ["array-nested"], None),  # architecture `plain`: a container case
}


def write_manifest():
    entries = []
    for name in sorted(EXPECT):
        description, (strict, spec, ggml), rules, divergence = EXPECT[name]
        entry = {
            "file": name,
            "description": description,
            "citation": f"written by gguf-py GGUFWriter (PyPI gguf {GGUF_VERSION}); conformance/tools/gguf_py_samples.py",
            "verdict": {"ggml": ggml, "spec": spec, "strict": strict},
            "rules": rules,
        }
        if divergence:
            entry["ggml_divergence"] = divergence
        entry["size"] = (OUT / name).stat().st_size
        entries.append(entry)
    text = json.dumps({"corpus_version": 1, "cases": entries}, indent=2, ensure_ascii=False)
    (OUT / "manifest.json").write_text(text + "\n")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    llama_like(OUT / "llama_tiny.gguf")
    llama_like(OUT / "llama_tiny_be.gguf", endianess=gguf.GGUFEndian.BIG)
    all_value_types(OUT / "all_value_types.gguf")
    metadata_only(OUT / "metadata_only.gguf")
    nested_array(OUT / "nested_array.gguf")
    write_manifest()
    # The README's bundled sample is the complete little-endian model.
    sample = OUT.parent / "samples" / "tiny-llama.gguf"
    sample.parent.mkdir(parents=True, exist_ok=True)
    sample.write_bytes((OUT / "llama_tiny.gguf").read_bytes())
    (OUT / "README.md").write_text(
        "# Files written by gguf-py\n\n"
        f"Written by `conformance/tools/gguf_py_samples.py` with gguf-py (PyPI `gguf`) {GGUF_VERSION} "
        f"and numpy {np.__version__}. `manifest.json` gives each file's expected verdict under every "
        "`gguf-validate` profile and the rule ids `strict` reports; `conformance/tests/corpus.rs` holds "
        "gguf-validate to it and `gguf-conformance matrix` scores every reader against it.\n"
    )
    print("wrote", sorted(p.name for p in OUT.iterdir()))


if __name__ == "__main__":
    sys.exit(main())
