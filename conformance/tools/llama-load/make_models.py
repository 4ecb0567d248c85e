#!/usr/bin/env python3
"""Writes tiny, complete GGUF models for a handful of llama.cpp architectures,
plus mutated variants that each break (or probe) one loader rule.

    python3 make_models.py OUTDIR            # writes OUTDIR/<arch>__<variant>.gguf
    python3 make_models.py OUTDIR --list     # prints name and description, writes nothing

Every file is described by a `Model` (keys and tensors in writing order); the
complete model of an architecture is built by `base_<arch>()` from what
llama.cpp's `load_hparams` / `load_arch_tensors` require for it, and a variant
is a function that edits a copy of it. `variants()` returns the whole list
with a one-line description each; run.py turns that into the manifest.

Written with gguf-py (GGUFWriter, gguf==0.19.0). Dimensions are tiny on
purpose: n_embd 16, 4 heads, 2 KV heads (GQA), head_dim 4, 2 layers, n_ff 32,
a 295-token vocabulary (40 pieces and the 256 byte tokens); matrices (2-D and up) are F16, norms and biases F32,
values deterministic.
"""
from __future__ import annotations

import copy
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from gguf import GGUFValueType as T
from gguf import GGUFWriter

# ---------------------------------------------------------------- dimensions
N_EMBD = 16
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = N_EMBD // N_HEAD          # 4
N_LAYER = 2
N_FF = 32
N_CTX = 256
RMS_EPS = 1e-6
N_EXPERT = 4
N_EXPERT_USED = 2
N_FF_EXP = 16                        # == N_FF // N_EXPERT_USED on purpose (see qwen3moe probes)
KL = 2 * HEAD_DIM                    # a key_length different from n_embd / n_head

FTYPE_MOSTLY_F16 = 1
FTYPE_MOSTLY_Q4_0 = 2


@dataclass
class KV:
    type: T
    value: Any
    sub: T | None = None              # element type of an array


@dataclass
class Model:
    arch: str
    kvs: dict[str, KV] = field(default_factory=dict)
    tensors: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict)  # name -> (ggml ne, dtype)

    # -- keys
    def set(self, key: str, type_: T, value: Any, sub: T | None = None) -> None:
        self.kvs[key] = KV(type_, value, sub)

    def a(self, suffix: str) -> str:
        """An architecture-prefixed key name."""
        return f"{self.arch}.{suffix}"

    def drop_key(self, key: str) -> None:
        del self.kvs[key]

    # -- tensors (ne in ggml order: ne[0] is the row length)
    def t(self, name: str, *ne: int, dtype: Any = None) -> None:
        if dtype is None:
            dtype = np.float16 if len(ne) >= 2 else np.float32
        self.tensors[name] = (tuple(ne), dtype)

    def drop_tensor(self, name: str) -> None:
        del self.tensors[name]

    def reshape(self, name: str, *ne: int) -> None:
        _, dtype = self.tensors[name]
        self.tensors[name] = (tuple(ne), dtype)


def tensor_data(name: str, ne: tuple[int, ...], dtype: Any) -> np.ndarray:
    n = int(np.prod(ne)) if ne else 1
    if "norm" in name:
        arr = np.ones(n, dtype=np.float32)
    else:
        seed = sum(name.encode()) % 13
        arr = (((np.arange(n) + seed) % 17) - 8).astype(np.float32) / 64.0
    return arr.astype(dtype).reshape(tuple(reversed(ne)) if ne else (1,))


class Writer(GGUFWriter):
    """GGUFWriter that can also write an empty array (gguf-py refuses them)."""

    def _pack_val(self, val: Any, vtype: T, add_vtype: bool, sub_type: T | None = None) -> bytes:
        if vtype == T.ARRAY and len(val) == 0 and sub_type is not None:
            return (self._pack("I", vtype) if add_vtype else b"") + self._pack("I", sub_type) + self._pack("Q", 0)
        return super()._pack_val(val, vtype, add_vtype, sub_type)


def write(model: Model, path: pathlib.Path) -> None:
    w = Writer(str(path), model.arch)
    # GGUFWriter adds general.architecture itself; the model's own key list decides.
    w.kv_data[0].clear()
    for key, kv in model.kvs.items():
        w.add_key_value(key, kv.value, kv.type, sub_type=kv.sub)
    for name, (ne, dtype) in model.tensors.items():
        w.add_tensor(name, tensor_data(name, ne, dtype))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------- vocabularies
SPM_WORDS = ["\u2581the", "\u2581a", "\u2581of", "\u2581and", "\u2581to", "\u2581in", "\u2581is", "\u2581it",
             "\u2581", "e", "t", "a", "o", "i", "n", "s", "h", "r", "d", "l", "u", "c", "m", "w",
             "f", "g", "y", "p", "b", "v", "k", "\u2581that", "\u2581for", "\u2581on", "\u2581was", "\u2581with"]
LAST_WORD = 3 + len(SPM_WORDS)       # 39: the last piece
# The byte tokens but <0x0A> (index 3), after the pieces: a SentencePiece
# vocabulary llama.cpp can spell any text with (tokenizer-byte-fallback).
SPM_BYTES = [f"<0x{b:02X}>" for b in range(256) if b != 0x0A]
N_VOCAB = 4 + len(SPM_WORDS) + len(SPM_BYTES)         # 295


def add_spm_vocab(m: Model, phi: bool = False) -> None:
    """tokenizer.ggml.model "llama" (SentencePiece): <unk>, <s>, </s>, <0x0A>, 36 pieces, the other 255 byte tokens.

    With phi, the last piece is <|endoftext|> (CONTROL): llama-vocab.cpp looks up
    </s>, <unk>, <s> and <|endoftext|> by text (unordered_map::at) whenever
    general.name contains "phi3" or "phi-3", and refuses the vocabulary if one is missing.
    """
    tokens = ["<unk>", "<s>", "</s>", "<0x0A>"] + SPM_WORDS + SPM_BYTES
    types = [2, 3, 3, 6] + [1] * len(SPM_WORDS) + [6] * len(SPM_BYTES)   # UNKNOWN, CONTROL, CONTROL, BYTE, NORMAL..., BYTE...
    if phi:
        tokens[LAST_WORD], types[LAST_WORD] = "<|endoftext|>", 3
    assert len(tokens) == N_VOCAB
    scores = [0.0, 0.0, 0.0, 0.0] + [-float(i + 1) for i in range(len(SPM_WORDS))] + [0.0] * len(SPM_BYTES)
    m.set("tokenizer.ggml.model", T.STRING, "llama")
    m.set("tokenizer.ggml.tokens", T.ARRAY, tokens, T.STRING)
    m.set("tokenizer.ggml.scores", T.ARRAY, scores, T.FLOAT32)
    m.set("tokenizer.ggml.token_type", T.ARRAY, types, T.INT32)
    m.set("tokenizer.ggml.bos_token_id", T.UINT32, 1)
    m.set("tokenizer.ggml.eos_token_id", T.UINT32, 2)
    m.set("tokenizer.ggml.unknown_token_id", T.UINT32, 0)


BPE_CHARS = list("abcdefghijklmnopqrstuvwxyz") + ["\u0120", "\u010a"]   # Ġ (space), Ċ (newline)
BPE_MERGES = ["\u0120 t", "t h", "\u0120t h", "h e", "i n", "e r", "a n", "o n", "r e"]


def add_bpe_vocab(m: Model, pre: str = "qwen2") -> None:
    """tokenizer.ggml.model "gpt2" (byte-level BPE) with merges and a pre-tokenizer."""
    merged = [a + b for a, b in (x.split(" ") for x in BPE_MERGES)]
    tokens = BPE_CHARS + merged + ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens = tokens[:N_VOCAB] + [f"x{i}" for i in range(N_VOCAB - len(tokens))]
    assert len(tokens) == N_VOCAB and len(set(tokens)) == N_VOCAB
    types = [3 if t.startswith("<|") else 1 for t in tokens]
    m.set("tokenizer.ggml.model", T.STRING, "gpt2")
    m.set("tokenizer.ggml.pre", T.STRING, pre)
    m.set("tokenizer.ggml.tokens", T.ARRAY, tokens, T.STRING)
    m.set("tokenizer.ggml.token_type", T.ARRAY, types, T.INT32)
    m.set("tokenizer.ggml.merges", T.ARRAY, BPE_MERGES, T.STRING)
    eot = tokens.index("<|endoftext|>")
    m.set("tokenizer.ggml.bos_token_id", T.UINT32, eot)
    m.set("tokenizer.ggml.eos_token_id", T.UINT32, eot)
    m.set("tokenizer.ggml.padding_token_id", T.UINT32, eot)


# ---------------------------------------------------------------- complete models
def common_header(arch: str) -> Model:
    m = Model(arch)
    m.set("general.architecture", T.STRING, arch)
    m.set("general.name", T.STRING, f"tiny-{arch}")
    m.set("general.file_type", T.UINT32, FTYPE_MOSTLY_F16)
    m.set(m.a("context_length"), T.UINT32, N_CTX)
    m.set(m.a("embedding_length"), T.UINT32, N_EMBD)
    m.set(m.a("block_count"), T.UINT32, N_LAYER)
    m.set(m.a("feed_forward_length"), T.UINT32, N_FF)
    m.set(m.a("attention.head_count"), T.UINT32, N_HEAD)
    m.set(m.a("attention.head_count_kv"), T.UINT32, N_HEAD_KV)
    m.set(m.a("attention.layer_norm_rms_epsilon"), T.FLOAT32, RMS_EPS)
    m.set(m.a("rope.freq_base"), T.FLOAT32, 10000.0)
    return m


def add_embeddings(m: Model, output: bool = True) -> None:
    m.t("token_embd.weight", N_EMBD, N_VOCAB)
    m.t("output_norm.weight", N_EMBD)
    if output:
        m.t("output.weight", N_EMBD, N_VOCAB)


def add_separate_qkv(m: Model, i: int, head_dim: int = HEAD_DIM, n_head: int = N_HEAD, n_head_kv: int = N_HEAD_KV,
                     q_out: int | None = None) -> None:
    q_out = head_dim * n_head if q_out is None else q_out
    m.t(f"blk.{i}.attn_q.weight", N_EMBD, q_out)
    m.t(f"blk.{i}.attn_k.weight", N_EMBD, head_dim * n_head_kv)
    m.t(f"blk.{i}.attn_v.weight", N_EMBD, head_dim * n_head_kv)
    m.t(f"blk.{i}.attn_output.weight", q_out, N_EMBD)


def add_dense_ffn(m: Model, i: int, n_ff: int = N_FF) -> None:
    m.t(f"blk.{i}.ffn_gate.weight", N_EMBD, n_ff)
    m.t(f"blk.{i}.ffn_down.weight", n_ff, N_EMBD)
    m.t(f"blk.{i}.ffn_up.weight", N_EMBD, n_ff)


def base_llama(tied: bool = False) -> Model:
    m = common_header("llama")
    m.set(m.a("rope.dimension_count"), T.UINT32, HEAD_DIM)
    m.set(m.a("vocab_size"), T.UINT32, N_VOCAB)
    add_spm_vocab(m)
    add_embeddings(m, output=not tied)
    for i in range(N_LAYER):
        m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
        add_separate_qkv(m, i)
        m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)
        add_dense_ffn(m, i)
    return m


def base_qwen2() -> Model:
    m = common_header("qwen2")
    add_bpe_vocab(m)
    add_embeddings(m)
    gqa = HEAD_DIM * N_HEAD_KV
    for i in range(N_LAYER):
        m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
        m.t(f"blk.{i}.attn_q.weight", N_EMBD, N_EMBD)
        m.t(f"blk.{i}.attn_k.weight", N_EMBD, gqa)
        m.t(f"blk.{i}.attn_v.weight", N_EMBD, gqa)
        m.t(f"blk.{i}.attn_q.bias", N_EMBD)
        m.t(f"blk.{i}.attn_k.bias", gqa)
        m.t(f"blk.{i}.attn_v.bias", gqa)
        m.t(f"blk.{i}.attn_output.weight", N_EMBD, N_EMBD)
        m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)
        add_dense_ffn(m, i)
    return m


def qwen3_layer_attn(m: Model, i: int, head_dim: int = HEAD_DIM) -> None:
    m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
    add_separate_qkv(m, i, head_dim=head_dim)
    m.t(f"blk.{i}.attn_k_norm.weight", head_dim)
    m.t(f"blk.{i}.attn_q_norm.weight", head_dim)
    m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)


def base_qwen3() -> Model:
    m = common_header("qwen3")
    add_bpe_vocab(m)
    add_embeddings(m)
    for i in range(N_LAYER):
        qwen3_layer_attn(m, i)
        add_dense_ffn(m, i)
    return m


def base_qwen3moe() -> Model:
    m = common_header("qwen3moe")
    m.set(m.a("expert_count"), T.UINT32, N_EXPERT)
    m.set(m.a("expert_used_count"), T.UINT32, N_EXPERT_USED)
    m.set(m.a("expert_feed_forward_length"), T.UINT32, N_FF_EXP)
    add_bpe_vocab(m)
    add_embeddings(m)
    for i in range(N_LAYER):
        qwen3_layer_attn(m, i)
        m.t(f"blk.{i}.ffn_gate_inp.weight", N_EMBD, N_EXPERT)
        m.t(f"blk.{i}.ffn_gate_exps.weight", N_EMBD, N_FF_EXP, N_EXPERT)
        m.t(f"blk.{i}.ffn_down_exps.weight", N_FF_EXP, N_EMBD, N_EXPERT)
        m.t(f"blk.{i}.ffn_up_exps.weight", N_EMBD, N_FF_EXP, N_EXPERT)
    return m


def base_gemma(arch: str = "gemma") -> Model:
    m = common_header(arch)
    m.set(m.a("attention.key_length"), T.UINT32, HEAD_DIM)
    m.set(m.a("attention.value_length"), T.UINT32, HEAD_DIM)
    if arch == "gemma2":
        m.set(m.a("attention.sliding_window"), T.UINT32, 64)
        m.set(m.a("attn_logit_softcapping"), T.FLOAT32, 50.0)
        m.set(m.a("final_logit_softcapping"), T.FLOAT32, 30.0)
    if arch == "gemma3":
        m.set(m.a("attention.sliding_window"), T.UINT32, 64)
        m.set(m.a("rope.freq_base_swa"), T.FLOAT32, 10000.0)
    add_spm_vocab(m)
    add_embeddings(m, output=False)          # gemma/gemma2: token_embd is the output; gemma3: optional output
    for i in range(N_LAYER):
        m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
        add_separate_qkv(m, i)
        if arch in ("gemma2", "gemma3"):
            m.t(f"blk.{i}.post_attention_norm.weight", N_EMBD)
        if arch == "gemma3":
            m.t(f"blk.{i}.attn_k_norm.weight", HEAD_DIM)
            m.t(f"blk.{i}.attn_q_norm.weight", HEAD_DIM)
        m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)
        add_dense_ffn(m, i)
        if arch in ("gemma2", "gemma3"):
            m.t(f"blk.{i}.post_ffw_norm.weight", N_EMBD)
    return m


def base_phi3() -> Model:
    m = common_header("phi3")
    m.set(m.a("rope.dimension_count"), T.UINT32, HEAD_DIM)
    add_spm_vocab(m, phi=True)
    add_embeddings(m)
    gqa = HEAD_DIM * N_HEAD_KV
    for i in range(N_LAYER):
        m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
        m.t(f"blk.{i}.attn_qkv.weight", N_EMBD, N_EMBD + 2 * gqa)
        m.t(f"blk.{i}.attn_output.weight", N_EMBD, N_EMBD)
        m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)
        m.t(f"blk.{i}.ffn_down.weight", N_FF, N_EMBD)
        m.t(f"blk.{i}.ffn_up.weight", N_EMBD, 2 * N_FF)
    return m


# DeepSeek-V2 (MLA attention, all layers dense: leading_dense_block_count = block_count).
DS_KEY = 2 * HEAD_DIM      # key_length: nope HEAD_DIM + rope HEAD_DIM
DS_ROPE = HEAD_DIM
DS_VALUE = HEAD_DIM
DS_KV_LORA = 8
DS_Q_LORA = 8


def base_deepseek2(n_layer: int = N_LAYER, q_lora: bool = True) -> Model:
    """deepseek2 as llama.cpp's load_arch_hparams reads it: q_lora_rank (and
    attn_q_a / attn_q_b) unless the model is "lite" (block_count 26 or 27
    after the nextn layers, or 48 with a 128256-token vocabulary), which has
    no q_lora_rank and a plain attn_q."""
    m = common_header("deepseek2")
    m.set(m.a("block_count"), T.UINT32, n_layer)
    m.set(m.a("attention.key_length"), T.UINT32, DS_KEY)
    m.set(m.a("attention.value_length"), T.UINT32, DS_VALUE)
    m.set(m.a("rope.dimension_count"), T.UINT32, DS_ROPE)
    m.set(m.a("leading_dense_block_count"), T.UINT32, n_layer)
    if q_lora:
        m.set(m.a("attention.q_lora_rank"), T.UINT32, DS_Q_LORA)
    m.set(m.a("attention.kv_lora_rank"), T.UINT32, DS_KV_LORA)
    m.set(m.a("expert_feed_forward_length"), T.UINT32, N_FF_EXP)
    m.set(m.a("expert_shared_count"), T.UINT32, 1)
    add_spm_vocab(m)
    add_embeddings(m)
    for i in range(n_layer):
        deepseek2_layer(m, i, q_lora)
    return m


def deepseek2_layer(m: Model, i: int, q_lora: bool) -> None:
    m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
    if q_lora:
        m.t(f"blk.{i}.attn_q_a_norm.weight", DS_Q_LORA)
        m.t(f"blk.{i}.attn_q_a.weight", N_EMBD, DS_Q_LORA)
        m.t(f"blk.{i}.attn_q_b.weight", DS_Q_LORA, N_HEAD * DS_KEY)
    else:
        m.t(f"blk.{i}.attn_q.weight", N_EMBD, N_HEAD * DS_KEY)
    m.t(f"blk.{i}.attn_kv_a_norm.weight", DS_KV_LORA)
    m.t(f"blk.{i}.attn_kv_a_mqa.weight", N_EMBD, DS_KV_LORA + DS_ROPE)
    m.t(f"blk.{i}.attn_kv_b.weight", DS_KV_LORA, N_HEAD * (DS_KEY - DS_ROPE + DS_VALUE))
    m.t(f"blk.{i}.attn_output.weight", N_HEAD * DS_VALUE, N_EMBD)
    m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)
    add_dense_ffn(m, i)


def base_ernie(arch: str = "ernie4_5") -> Model:
    """ernie4_5 (dense); ernie4_5-moe reads expert_feed_forward_length and
    interleave_moe_layer_step (required for that architecture only) and,
    with leading_dense_block_count = block_count, has dense layers only."""
    m = common_header(arch)
    if arch == "ernie4_5-moe":
        m.set(m.a("expert_feed_forward_length"), T.UINT32, N_FF_EXP)
        m.set(m.a("interleave_moe_layer_step"), T.UINT32, 1)
        m.set(m.a("leading_dense_block_count"), T.UINT32, N_LAYER)
    add_spm_vocab(m)
    add_embeddings(m)
    for i in range(N_LAYER):
        m.t(f"blk.{i}.attn_norm.weight", N_EMBD)
        add_separate_qkv(m, i)
        m.t(f"blk.{i}.ffn_norm.weight", N_EMBD)
        add_dense_ffn(m, i)
    return m


# ---------------------------------------------------------------- hyperparameter probes
# Architectures whose keys are required under a condition, with one tensor
# (token_embd.weight; a file without tensors is vocabulary-only to strict,
# which then checks no required key): building a complete dflash / qwen4exp / wavtokenizer-dec takes many tensors
# of their own, and what these files probe is load_hparams. libllama either
# refuses in load_hparams ("error loading model hyperparameters: key not
# found in model: K") or gets past it and refuses for the first tensor
# ("check_tensor_dims: tensor '...' not found"); run.py records that line.
DFLASH_HC_KEYS: list[tuple[str, T, Any]] = [
    ("attention.q_lora_rank", T.UINT32, 8),
    ("attention.sliding_window", T.UINT32, 64),
    ("expert_feed_forward_length", T.UINT32, N_FF_EXP),
    ("expert_shared_count", T.UINT32, 1),
    ("expert_weights_scale", T.FLOAT32, 1.0),
    ("expert_weights_norm", T.BOOL, True),
    ("expert_gating_func", T.UINT32, 4),          # LLAMA_EXPERT_GATING_FUNC_TYPE_SQRT_SOFTPLUS
    ("swiglu_clamp_exp", T.FLOAT32, 7.0),
    ("attention.output_group_count", T.UINT32, 2),
    ("attention.output_lora_rank", T.UINT32, 8),
    ("hyper_connection.sinkhorn_iterations", T.UINT32, 3),
    ("hyper_connection.epsilon", T.FLOAT32, 1e-6),
]


def probe_dflash(hc: int | None = None, hc_keys: bool = False, swa: int | None = None, pattern: bool = False) -> Model:
    """dflash keys only: target_layers always; with hc, hyper_connection.count
    (the 12 DSV4 keys are required when it is above 0) and, with hc_keys,
    those keys plus compress_ratios all 0; with swa, attention.sliding_window
    (sliding_window_pattern is required when it is present and above 0) and,
    with pattern, the pattern array."""
    m = common_header("dflash")
    add_spm_vocab(m)
    m.set(m.a("target_layers"), T.ARRAY, list(range(N_LAYER)), T.INT32)
    if hc is not None:
        m.set(m.a("hyper_connection.count"), T.UINT32, hc)
    if hc_keys:
        for key, type_, value in DFLASH_HC_KEYS:
            m.set(m.a(key), type_, value)
        m.set(m.a("attention.compress_ratios"), T.ARRAY, [0] * N_LAYER, T.UINT32)
    if swa is not None:
        m.set(m.a("attention.sliding_window"), T.UINT32, swa)
    if pattern:
        m.set(m.a("attention.sliding_window_pattern"), T.ARRAY, [True, False], T.BOOL)
    m.t("token_embd.weight", N_EMBD, N_VOCAB)
    return m


QWEN4EXP_PLE_KEYS: list[tuple[str, T, Any, T | None]] = [
    ("ple.ngram_size", T.UINT32, 2, None),
    ("ple.heads_per_ngram", T.UINT32, 2, None),
    ("ple.conv_kernel", T.UINT32, 4, None),
    ("ple.eos_token_id", T.UINT32, 2, None),
    ("embedding_length_per_layer_input", T.UINT32, HEAD_DIM, None),
    ("ple.layer_multipliers", T.ARRAY, [1, 1], T.UINT64),      # ngram_size entries
    ("ple.head_offsets", T.ARRAY, [0, 8], T.UINT64),           # (ngram_size - 1) * heads_per_ngram entries
    ("ple.head_vocab_sizes", T.ARRAY, [8, 8], T.UINT64),
]


def probe_qwen4exp(ple_layers: list[int] | None = None, ple_keys: bool = False) -> Model:
    """qwen4exp keys only (ssm, hyper_connection, indexer, rope sections);
    with ple_layers, ple.layers (the 8 other PLE keys are required when it is
    non-empty) and, with ple_keys, those keys."""
    m = common_header("qwen4exp")
    add_bpe_vocab(m)
    m.set(m.a("rope.dimension_sections"), T.ARRAY, [HEAD_DIM // 2, 0, 0, 0], T.INT32)
    for key, value in [("ssm.conv_kernel", 4), ("ssm.inner_size", N_EMBD), ("ssm.state_size", 4),
                       ("ssm.time_step_rank", 4), ("ssm.group_count", 2), ("hyper_connection.count", 2),
                       ("hyper_connection.low_rank", 4), ("attention.indexer.head_count", 2),
                       ("attention.indexer.key_length", 4), ("attention.indexer.top_k", 4)]:
        m.set(m.a(key), T.UINT32, value)
    if ple_layers is not None:
        m.set(m.a("ple.layers"), T.ARRAY, ple_layers, T.UINT32)
    if ple_keys:
        for key, type_, value, sub in QWEN4EXP_PLE_KEYS:
            m.set(m.a(key), type_, value, sub)
    m.t("token_embd.weight", N_EMBD, N_VOCAB)
    return m


WAVTOKENIZER_KEYS = ["features_length", "posnet.embedding_length", "posnet.block_count",
                     "convnext.embedding_length", "convnext.block_count"]


def probe_wavtokenizer_dec() -> Model:
    """wavtokenizer-dec keys only: the 5 keys the base load_hparams requires
    for this architecture, and its own norm keys."""
    m = common_header("wavtokenizer-dec")
    add_spm_vocab(m)
    for key in WAVTOKENIZER_KEYS:
        m.set(m.a(key), T.UINT32, N_LAYER if key.endswith("block_count") else N_EMBD)
    m.set(m.a("attention.layer_norm_epsilon"), T.FLOAT32, RMS_EPS)
    m.set(m.a("attention.group_norm_epsilon"), T.FLOAT32, RMS_EPS)
    m.set(m.a("attention.group_norm_groups"), T.UINT32, 2)
    m.t("token_embd.weight", N_EMBD, N_VOCAB)
    return m


BASES: dict[str, Callable[[], Model]] = {
    "llama": base_llama,
    "qwen2": base_qwen2,
    "qwen3": base_qwen3,
    "gemma": lambda: base_gemma("gemma"),
    "gemma2": lambda: base_gemma("gemma2"),
    "gemma3": lambda: base_gemma("gemma3"),
    "phi3": base_phi3,
    "qwen3moe": base_qwen3moe,
    "deepseek2": base_deepseek2,
}


# ---------------------------------------------------------------- variants
@dataclass
class Variant:
    arch: str          # the base it derives from (file name prefix)
    name: str
    description: str
    build: Callable[[], Model]
    vocab_only: bool = False   # also load with vocab_only=true

    @property
    def file(self) -> str:
        return f"{self.arch}__{self.name}.gguf"


def mutate(base: str, fn: Callable[[Model], None]) -> Callable[[], Model]:
    def build() -> Model:
        m = copy.deepcopy(BASES[base]())
        fn(m)
        return m
    return build


def variants() -> list[Variant]:
    out: list[Variant] = []

    def v(arch: str, name: str, desc: str, fn: Callable[[Model], None] | None = None,
          vocab_only: bool = False, base: str | None = None) -> None:
        base = base or arch
        out.append(Variant(arch, name, desc, mutate(base, fn or (lambda m: None)), vocab_only))

    # ---- complete models
    for arch in BASES:
        v(arch, "complete", f"complete tiny {arch} model (reference: must load)")
    out.append(Variant("llama", "tied_embeddings", "llama without output.weight (tied to token_embd)",
                       lambda: base_llama(tied=True)))

    # ---- shared probes: applied to llama, qwen3, gemma3, qwen3moe
    for arch in ("llama", "qwen3", "gemma3", "qwen3moe"):
        v(arch, "missing_tensor_ffn_down", "blk.1.ffn_down(_exps).weight removed",
          lambda m: m.drop_tensor("blk.1.ffn_down_exps.weight" if m.arch == "qwen3moe" else "blk.1.ffn_down.weight"))
        v(arch, "missing_tensor_output_norm", "output_norm.weight removed",
          lambda m: m.drop_tensor("output_norm.weight"))
        v(arch, "attn_q_wrong_out_dim", "blk.0.attn_q.weight has out dim n_head*head_dim+8",
          lambda m: m.reshape("blk.0.attn_q.weight", N_EMBD, N_HEAD * HEAD_DIM + 8))
        v(arch, "token_embd_vocab_mismatch", "token_embd.weight has n_vocab+1 rows, tokenizer has n_vocab tokens",
          lambda m: m.reshape("token_embd.weight", N_EMBD, N_VOCAB + 1))
        v(arch, "extra_block_tensors", "blk.2.* tensors present while block_count is 2",
          lambda m: [m.t(n.replace("blk.1.", "blk.2."), *ne, dtype=dt)
                     for n, (ne, dt) in list(m.tensors.items()) if n.startswith("blk.1.")])
        v(arch, "extra_unknown_tensor", "an extra tensor named foo.weight",
          lambda m: m.t("foo.weight", N_EMBD))
        v(arch, "block_count_3", "block_count 3 but only blk.0 and blk.1 present",
          lambda m: m.set(m.a("block_count"), T.UINT32, 3))
        v(arch, "block_count_1", "block_count 1 but blk.0 and blk.1 present",
          lambda m: m.set(m.a("block_count"), T.UINT32, 1))
        v(arch, "head_count_5_no_key_length", "head_count 5 (does not divide n_embd 16), no key_length; tensors unchanged",
          lambda m: (m.set(m.a("attention.head_count"), T.UINT32, 5), m.kvs.pop(m.a("attention.key_length"), None),
                     m.kvs.pop(m.a("attention.value_length"), None), m.kvs.pop(m.a("rope.dimension_count"), None)))
        v(arch, "head_count_kv_3", "head_count_kv 3 does not divide head_count 4; tensors unchanged",
          lambda m: m.set(m.a("attention.head_count_kv"), T.UINT32, 3))
        v(arch, "missing_key_rms_eps", "attention.layer_norm_rms_epsilon removed",
          lambda m: m.drop_key(m.a("attention.layer_norm_rms_epsilon")))
        v(arch, "missing_key_context_length", "context_length removed",
          lambda m: m.drop_key(m.a("context_length")))
        v(arch, "block_count_u64", "block_count stored as UINT64",
          lambda m: m.set(m.a("block_count"), T.UINT64, N_LAYER))
        v(arch, "file_type_inconsistent", "general.file_type 2 (MOSTLY_Q4_0) while tensors are F16/F32",
          lambda m: m.set("general.file_type", T.UINT32, FTYPE_MOSTLY_Q4_0))
        v(arch, "vocab_only", "general.architecture + tokenizer keys only, no hyper-parameters, no tensors",
          lambda m: (m.tensors.clear(), [m.kvs.pop(k) for k in list(m.kvs)
                                         if k.startswith(m.arch + ".")]), vocab_only=True)

    # ---- llama: hyper-parameter, type and tokenizer probes
    v("llama", "missing_key_embedding_length", "embedding_length removed",
      lambda m: m.drop_key("llama.embedding_length"))
    v("llama", "missing_key_block_count", "block_count removed",
      lambda m: m.drop_key("llama.block_count"))
    v("llama", "missing_key_head_count", "attention.head_count removed (head_count_kv kept)",
      lambda m: m.drop_key("llama.attention.head_count"))
    v("llama", "missing_key_head_count_kv", "attention.head_count_kv removed (defaults to head_count: k/v shapes then wrong)",
      lambda m: m.drop_key("llama.attention.head_count_kv"))
    v("llama", "missing_key_feed_forward_length", "feed_forward_length removed",
      lambda m: m.drop_key("llama.feed_forward_length"))
    v("llama", "missing_key_architecture", "general.architecture removed",
      lambda m: m.drop_key("general.architecture"))
    v("llama", "unknown_architecture", "general.architecture 'llamax' (keys still llama.*)",
      lambda m: m.set("general.architecture", T.STRING, "llamax"))
    v("llama", "block_count_0", "block_count 0 (and no blk tensors)",
      lambda m: (m.set("llama.block_count", T.UINT32, 0),
                 [m.drop_tensor(n) for n in list(m.tensors) if n.startswith("blk.")]))
    v("llama", "block_count_f32", "block_count stored as FLOAT32",
      lambda m: m.set("llama.block_count", T.FLOAT32, float(N_LAYER)))
    v("llama", "block_count_i32", "block_count stored as INT32",
      lambda m: m.set("llama.block_count", T.INT32, N_LAYER))
    v("llama", "context_length_i32", "context_length stored as INT32",
      lambda m: m.set("llama.context_length", T.INT32, N_CTX))
    v("llama", "rms_eps_f64", "attention.layer_norm_rms_epsilon stored as FLOAT64",
      lambda m: m.set("llama.attention.layer_norm_rms_epsilon", T.FLOAT64, RMS_EPS))
    v("llama", "head_count_array", "attention.head_count as a per-layer UINT32 array [4, 4]",
      lambda m: m.set("llama.attention.head_count", T.ARRAY, [N_HEAD] * N_LAYER, T.UINT32))
    v("llama", "head_count_array_wrong_len", "attention.head_count as a UINT32 array of 3 (block_count 2)",
      lambda m: m.set("llama.attention.head_count", T.ARRAY, [N_HEAD] * 3, T.UINT32))
    v("llama", "feed_forward_length_array", "feed_forward_length as a per-layer UINT32 array [n_ff, n_ff]",
      lambda m: m.set("llama.feed_forward_length", T.ARRAY, [N_FF] * N_LAYER, T.UINT32))
    v("llama", "feed_forward_length_array_i32", "feed_forward_length as a per-layer INT32 array",
      lambda m: m.set("llama.feed_forward_length", T.ARRAY, [N_FF] * N_LAYER, T.INT32))
    v("llama", "rope_dimension_count_half", "rope.dimension_count head_dim/2 != head_dim",
      lambda m: m.set("llama.rope.dimension_count", T.UINT32, HEAD_DIM // 2))
    v("llama", "ffn_up_n_ff_mismatch", "blk.0.ffn_up.weight out dim 3/4*n_ff while feed_forward_length n_ff",
      lambda m: m.reshape("blk.0.ffn_up.weight", N_EMBD, N_FF * 3 // 4))
    v("llama", "ffn_up_transposed", "blk.0.ffn_up.weight stored as {n_ff, n_embd}",
      lambda m: m.reshape("blk.0.ffn_up.weight", N_FF, N_EMBD))
    v("llama", "attn_norm_trailing_1", "blk.0.attn_norm.weight has shape {n_embd, 1} (2-D, trailing 1)",
      lambda m: m.reshape("blk.0.attn_norm.weight", N_EMBD, 1))
    v("llama", "attn_k_wrong_gqa", "blk.0.attn_k.weight out dim n_embd (ignores head_count_kv)",
      lambda m: m.reshape("blk.0.attn_k.weight", N_EMBD, N_EMBD))

    def head5_consistent(m: Model) -> None:
        m.set("llama.attention.head_count", T.UINT32, 5)
        m.set("llama.attention.head_count_kv", T.UINT32, 5)
        m.drop_key("llama.rope.dimension_count")
        hd = N_EMBD // 5  # 3, what llama.cpp computes
        for i in range(N_LAYER):
            add_separate_qkv(m, i, head_dim=hd, n_head=5, n_head_kv=5)
    v("llama", "head_count_5_consistent",
      "head_count 5 and head_count_kv 5 (n_embd 16 not divisible); q/k/v/o sized with head_dim = 16/5 = 3", head5_consistent)

    def kv3_consistent(m: Model) -> None:
        m.set("llama.attention.head_count_kv", T.UINT32, 3)
        for i in range(N_LAYER):
            add_separate_qkv(m, i, n_head_kv=3)
    v("llama", "head_count_kv_3_consistent",
      "head_count_kv 3 does not divide head_count 4; k/v sized 3*head_dim", kv3_consistent)
    v("llama", "key_length_x2_consistent", "attention.key_length/value_length 2*head_dim (!= n_embd/n_head), rope dims likewise, tensors sized to match",
      lambda m: (m.set("llama.attention.key_length", T.UINT32, KL), m.set("llama.attention.value_length", T.UINT32, KL),
                 m.set("llama.rope.dimension_count", T.UINT32, KL),
                 [add_separate_qkv(m, i, head_dim=KL) for i in range(N_LAYER)]))
    v("llama", "optional_biases", "optional attn_q/k/v/output and ffn biases present (llama allows them)",
      lambda m: [(m.t(f"blk.{i}.attn_q.bias", N_EMBD), m.t(f"blk.{i}.attn_k.bias", HEAD_DIM * N_HEAD_KV),
                  m.t(f"blk.{i}.attn_v.bias", HEAD_DIM * N_HEAD_KV), m.t(f"blk.{i}.attn_output.bias", N_EMBD),
                  m.t(f"blk.{i}.ffn_up.bias", N_FF), m.t(f"blk.{i}.ffn_down.bias", N_EMBD)) for i in range(N_LAYER)])
    v("llama", "rope_freqs", "optional rope_freqs.weight {head_dim/2} present (llama3-style)",
      lambda m: m.t("rope_freqs.weight", HEAD_DIM // 2))
    v("llama", "rope_freqs_wrong_shape", "rope_freqs.weight {head_dim} instead of {head_dim/2}",
      lambda m: m.t("rope_freqs.weight", HEAD_DIM))
    v("llama", "fused_qkv", "blk.N.attn_qkv.weight {n_embd, q+k+v} instead of separate attn_q/k/v",
      lambda m: [(m.drop_tensor(f"blk.{i}.attn_q.weight"), m.drop_tensor(f"blk.{i}.attn_k.weight"),
                  m.drop_tensor(f"blk.{i}.attn_v.weight"),
                  m.t(f"blk.{i}.attn_qkv.weight", N_EMBD, N_EMBD + 2 * HEAD_DIM * N_HEAD_KV)) for i in range(N_LAYER)])
    v("llama", "fused_and_separate_qkv", "both attn_qkv and attn_q/k/v present in every layer",
      lambda m: [m.t(f"blk.{i}.attn_qkv.weight", N_EMBD, N_EMBD + 2 * HEAD_DIM * N_HEAD_KV) for i in range(N_LAYER)])
    v("llama", "expert_count_no_experts", "expert_count 4 / expert_used_count 2 but dense ffn tensors",
      lambda m: (m.set("llama.expert_count", T.UINT32, 4), m.set("llama.expert_used_count", T.UINT32, 2)))
    v("llama", "output_wrong_vocab", "output.weight {n_embd, n_vocab-1}",
      lambda m: m.reshape("output.weight", N_EMBD, N_VOCAB - 1))
    v("llama", "token_embd_f32", "token_embd.weight stored F32 instead of F16",
      lambda m: m.t("token_embd.weight", N_EMBD, N_VOCAB, dtype=np.float32))
    v("llama", "file_type_i32", "general.file_type stored as INT32",
      lambda m: m.set("general.file_type", T.INT32, FTYPE_MOSTLY_F16))
    v("llama", "general_name_u32", "general.name stored as UINT32",
      lambda m: m.set("general.name", T.UINT32, 7))
    v("llama", "no_file_type", "general.file_type absent (llama.cpp guesses it)",
      lambda m: m.drop_key("general.file_type"))
    # tokenizer
    v("llama", "tokenizer_unknown_model", "tokenizer.ggml.model 'sentencepiece' (unknown)",
      lambda m: m.set("tokenizer.ggml.model", T.STRING, "sentencepiece"))
    v("llama", "tokenizer_missing_model", "tokenizer.ggml.model removed",
      lambda m: m.drop_key("tokenizer.ggml.model"))
    v("llama", "tokenizer_missing_tokens", "tokenizer.ggml.tokens removed",
      lambda m: m.drop_key("tokenizer.ggml.tokens"))
    v("llama", "tokenizer_scores_u8", "tokenizer.ggml.scores as an array of UINT8",
      lambda m: m.set("tokenizer.ggml.scores", T.ARRAY, [0] * N_VOCAB, T.UINT8))
    v("llama", "tokenizer_scores_i32", "tokenizer.ggml.scores as an array of INT32",
      lambda m: m.set("tokenizer.ggml.scores", T.ARRAY, [0] * N_VOCAB, T.INT32))
    v("llama", "tokenizer_scores_short", "tokenizer.ggml.scores one shorter than tokens",
      lambda m: m.set("tokenizer.ggml.scores", T.ARRAY, [0.0] * (N_VOCAB - 1), T.FLOAT32))
    v("llama", "tokenizer_scores_missing", "tokenizer.ggml.scores removed",
      lambda m: m.drop_key("tokenizer.ggml.scores"))
    v("llama", "tokenizer_token_type_u32", "tokenizer.ggml.token_type as an array of UINT32",
      lambda m: m.set("tokenizer.ggml.token_type", T.ARRAY, [1] * N_VOCAB, T.UINT32))
    v("llama", "tokenizer_token_type_short", "tokenizer.ggml.token_type one shorter than tokens",
      lambda m: m.set("tokenizer.ggml.token_type", T.ARRAY, [1] * (N_VOCAB - 1), T.INT32))
    v("llama", "tokenizer_token_type_99", "a token_type value 99 (outside 0..6)",
      lambda m: m.kvs["tokenizer.ggml.token_type"].value.__setitem__(10, 99))
    v("llama", "tokenizer_duplicate_token", "two tokens with the same text",
      lambda m: m.kvs["tokenizer.ggml.tokens"].value.__setitem__(10, m.kvs["tokenizer.ggml.tokens"].value[11]))
    v("llama", "tokenizer_empty_token", "a token with empty text",
      lambda m: m.kvs["tokenizer.ggml.tokens"].value.__setitem__(10, ""))
    v("llama", "tokenizer_bos_out_of_range", "tokenizer.ggml.bos_token_id = n_vocab",
      lambda m: m.set("tokenizer.ggml.bos_token_id", T.UINT32, N_VOCAB))
    v("llama", "tokenizer_bos_i32", "tokenizer.ggml.bos_token_id stored as INT32",
      lambda m: m.set("tokenizer.ggml.bos_token_id", T.INT32, 1))
    v("llama", "tokenizer_no_byte_tokens", "SPM vocabulary without <0x0A> (newline byte token) nor a token `\\n`: tokenizing a newline throws",
      lambda m: m.kvs["tokenizer.ggml.tokens"].value.__setitem__(3, "\u2581be"))
    v("llama", "tokenizer_gpt2", "llama with a gpt2 BPE vocabulary (pre 'default')",
      lambda m: ([m.kvs.pop(k) for k in list(m.kvs) if k.startswith("tokenizer.")], add_bpe_vocab(m, pre="default")))
    v("llama", "tokenizer_none", "tokenizer.ggml.model 'none', no token list; n_vocab from llama.vocab_size (295 dummy tokens)",
      lambda m: ([m.kvs.pop(k) for k in list(m.kvs) if k.startswith("tokenizer.")],
                 m.set("tokenizer.ggml.model", T.STRING, "none")))
    v("llama", "tokenizer_none_no_vocab_size", "tokenizer.ggml.model 'none', no token list, no llama.vocab_size (n_vocab 0)",
      lambda m: ([m.kvs.pop(k) for k in list(m.kvs) if k.startswith("tokenizer.")],
                 m.set("tokenizer.ggml.model", T.STRING, "none"), m.drop_key("llama.vocab_size")))
    v("llama", "vocab_size_mismatch", "llama.vocab_size 296 while the tokenizer has 295 tokens (tensors sized 295)",
      lambda m: m.set("llama.vocab_size", T.UINT32, N_VOCAB + 1))
    v("llama", "block_count_513", "block_count 513 > LLAMA_MAX_LAYERS (512)",
      lambda m: m.set("llama.block_count", T.UINT32, 513))
    v("llama", "weight_scales", "optional per-tensor blk.0.attn_q.scale {1} and blk.0.ffn_up.input_scale {1} (generic pass of load_tensors)",
      lambda m: (m.t("blk.0.attn_q.scale", 1), m.t("blk.0.ffn_up.input_scale", 1)))
    v("llama", "weight_scale_wrong_shape", "blk.0.attn_q.scale {2} instead of {1}",
      lambda m: m.t("blk.0.attn_q.scale", 2))
    v("llama", "rope_scaling_type_unknown", "rope.scaling.type 'dynamic' (not none/linear/yarn/longrope)",
      lambda m: m.set("llama.rope.scaling.type", T.STRING, "dynamic"))
    v("llama", "rope_scaling_type_yarn", "rope.scaling.type 'yarn' with rope.scaling.factor 4",
      lambda m: (m.set("llama.rope.scaling.type", T.STRING, "yarn"), m.set("llama.rope.scaling.factor", T.FLOAT32, 4.0)))
    v("llama", "vocab_only_with_hparams", "all keys of the complete model, no tensors",
      lambda m: m.tensors.clear(), vocab_only=True)

    # ---- general.tensor_extra (llama_prec_policy::load, the pinned tree only)
    extra = ["blk.0.attn_q.weight", "blk.1.ffn_up.weight"]
    v("llama", "tensor_extra_prec", "general.tensor_extra.name (2 tensors) with prec_a4 [false, true]",
      lambda m: (m.set("general.tensor_extra.name", T.ARRAY, extra, T.STRING),
                 m.set("general.tensor_extra.prec_a4", T.ARRAY, [False, True], T.BOOL)))
    v("llama", "tensor_extra_no_prec", "general.tensor_extra.name without general.tensor_extra.prec_a4",
      lambda m: m.set("general.tensor_extra.name", T.ARRAY, extra, T.STRING))
    v("llama", "tensor_extra_prec_short", "general.tensor_extra.prec_a4 with 1 value for 2 names",
      lambda m: (m.set("general.tensor_extra.name", T.ARRAY, extra, T.STRING),
                 m.set("general.tensor_extra.prec_a4", T.ARRAY, [False], T.BOOL)))
    v("llama", "tensor_extra_prec_u8", "general.tensor_extra.prec_a4 as an array of UINT8",
      lambda m: (m.set("general.tensor_extra.name", T.ARRAY, extra, T.STRING),
                 m.set("general.tensor_extra.prec_a4", T.ARRAY, [0, 1], T.UINT8)))
    v("llama", "tensor_extra_unknown_name", "general.tensor_extra.name naming a tensor the model does not have",
      lambda m: (m.set("general.tensor_extra.name", T.ARRAY, ["blk.0.attn_q.weight", "blk.9.attn_q.weight"], T.STRING),
                 m.set("general.tensor_extra.prec_a4", T.ARRAY, [False, False], T.BOOL)))

    # ---- substituted defaults: a gpt2 vocabulary's default bos and eos are
    # 11; without the keys, 11 tokens put them outside the vocabulary
    # (b10361 on disable them; older releases read past it), 12 do not.
    def small_bpe(n: int) -> Callable[[Model], None]:
        def fn(m: Model) -> None:
            tokens = ["a", "b", "c", "d", "e", "f", "g", "\u0120", "\u010a", "ab", "<|endoftext|>", "<|im_end|>"][:n]
            m.set("tokenizer.ggml.tokens", T.ARRAY, tokens, T.STRING)
            m.set("tokenizer.ggml.token_type", T.ARRAY, [3 if t.startswith("<|") else 1 for t in tokens], T.INT32)
            m.set("tokenizer.ggml.merges", T.ARRAY, ["a b"], T.STRING)
            for k in ("bos", "eos", "padding"):
                m.drop_key(f"tokenizer.ggml.{k}_token_id")
            m.reshape("token_embd.weight", N_EMBD, n)
            m.reshape("output.weight", N_EMBD, n)
        return fn
    v("qwen2", "vocab_11_default_eos", "gpt2 vocabulary of 11 tokens without bos/eos ids: the defaults (11) are outside it",
      small_bpe(11))
    v("qwen2", "vocab_12_default_eos", "gpt2 vocabulary of 12 tokens without bos/eos ids: the defaults (11) are inside it",
      small_bpe(12))

    # ---- qwen3 / BPE probes
    v("qwen3", "tokenizer_unknown_pre", "gpt2 BPE with tokenizer.ggml.pre 'qwen9' (unknown)",
      lambda m: m.set("tokenizer.ggml.pre", T.STRING, "qwen9"))
    v("qwen3", "tokenizer_missing_pre", "gpt2 BPE without tokenizer.ggml.pre",
      lambda m: m.drop_key("tokenizer.ggml.pre"))
    v("qwen3", "tokenizer_missing_merges", "gpt2 BPE without tokenizer.ggml.merges",
      lambda m: m.drop_key("tokenizer.ggml.merges"))
    v("qwen3", "tokenizer_merges_u32", "tokenizer.ggml.merges as an array of UINT32",
      lambda m: m.set("tokenizer.ggml.merges", T.ARRAY, [1, 2, 3], T.UINT32))
    v("qwen3", "tokenizer_merges_empty", "tokenizer.ggml.merges present but empty",
      lambda m: m.set("tokenizer.ggml.merges", T.ARRAY, [], T.STRING))
    v("qwen3", "tokenizer_merge_unknown_token", "a merge whose parts are not tokens ('zz qq')",
      lambda m: m.kvs["tokenizer.ggml.merges"].value.append("zz qq"))
    v("qwen3", "tokenizer_merge_no_space", "a merge without a space ('abc')",
      lambda m: m.kvs["tokenizer.ggml.merges"].value.append("abc"))
    v("qwen3", "missing_tensor_attn_k_norm", "blk.0.attn_k_norm.weight removed",
      lambda m: m.drop_tensor("blk.0.attn_k_norm.weight"))
    v("qwen3", "attn_q_norm_wrong_shape", "blk.0.attn_q_norm.weight {n_embd} instead of {head_dim}",
      lambda m: m.reshape("blk.0.attn_q_norm.weight", N_EMBD))
    v("qwen3", "key_length_x2_consistent", "attention.key_length/value_length 2*head_dim (!= n_embd/n_head) with tensors sized to it",
      lambda m: (m.set("qwen3.attention.key_length", T.UINT32, KL), m.set("qwen3.attention.value_length", T.UINT32, KL),
                 [qwen3_layer_attn(m, i, head_dim=KL) for i in range(N_LAYER)]))
    v("qwen3", "key_length_x2_stale", "attention.key_length 2*head_dim but tensors sized for head_dim",
      lambda m: m.set("qwen3.attention.key_length", T.UINT32, KL))
    v("qwen3", "tied_embeddings", "qwen3 without output.weight",
      lambda m: m.drop_tensor("output.weight"))

    # ---- gemma family
    v("gemma", "with_output_weight", "gemma with an output.weight (gemma always ties; not created)",
      lambda m: m.t("output.weight", N_EMBD, N_VOCAB))
    v("gemma2", "with_output_weight", "gemma2 with an output.weight",
      lambda m: m.t("output.weight", N_EMBD, N_VOCAB))
    v("gemma2", "missing_post_ffw_norm", "blk.1.post_ffw_norm.weight removed",
      lambda m: m.drop_tensor("blk.1.post_ffw_norm.weight"))
    v("gemma3", "with_output_weight", "gemma3 with an output.weight (optional for gemma3)",
      lambda m: m.t("output.weight", N_EMBD, N_VOCAB))
    v("gemma3", "missing_post_attention_norm", "blk.0.post_attention_norm.weight removed",
      lambda m: m.drop_tensor("blk.0.post_attention_norm.weight"))
    v("gemma3", "no_sliding_window", "attention.sliding_window removed (SWA off)",
      lambda m: m.drop_key("gemma3.attention.sliding_window"))
    v("gemma3", "sliding_window_pattern_array", "attention.sliding_window_pattern as a BOOL array per layer",
      lambda m: m.set("gemma3.attention.sliding_window_pattern", T.ARRAY, [True, False], T.BOOL))
    v("gemma3", "key_length_x2_consistent", "key_length/value_length 2*head_dim (q out 2*n_embd), tensors sized to it",
      lambda m: (m.set("gemma3.attention.key_length", T.UINT32, KL), m.set("gemma3.attention.value_length", T.UINT32, KL),
                 [(add_separate_qkv(m, i, head_dim=KL), m.t(f"blk.{i}.attn_k_norm.weight", KL),
                   m.t(f"blk.{i}.attn_q_norm.weight", KL)) for i in range(N_LAYER)]))
    v("gemma3", "attn_output_wrong_shape", "blk.1.attn_output.weight {n_embd, n_embd+8}",
      lambda m: m.reshape("blk.1.attn_output.weight", N_EMBD, N_EMBD + 8))

    # ---- phi3
    v("phi3", "separate_qkv", "phi3 with separate attn_q/k/v instead of attn_qkv",
      lambda m: [(m.drop_tensor(f"blk.{i}.attn_qkv.weight"), m.t(f"blk.{i}.attn_q.weight", N_EMBD, N_EMBD),
                  m.t(f"blk.{i}.attn_k.weight", N_EMBD, HEAD_DIM * N_HEAD_KV),
                  m.t(f"blk.{i}.attn_v.weight", N_EMBD, HEAD_DIM * N_HEAD_KV)) for i in range(N_LAYER)])
    v("phi3", "no_attention_weights", "phi3 with neither attn_qkv nor attn_q/k/v (all created NOT_REQUIRED)",
      lambda m: [m.drop_tensor(f"blk.{i}.attn_qkv.weight") for i in range(N_LAYER)])
    v("phi3", "ffn_up_not_doubled", "blk.0.ffn_up.weight {n_embd, n_ff} instead of {n_embd, 2*n_ff}",
      lambda m: m.reshape("blk.0.ffn_up.weight", N_EMBD, N_FF))
    v("phi3", "no_endoftext_token", "general.name 'tiny-phi3' and no <|endoftext|> token in the vocabulary",
      lambda m: (m.kvs["tokenizer.ggml.tokens"].value.__setitem__(LAST_WORD, "\u2581with"),
                 m.kvs["tokenizer.ggml.token_type"].value.__setitem__(LAST_WORD, 1)))
    v("phi3", "renamed_no_endoftext_token", "general.name 'tiny-model' and no <|endoftext|> token",
      lambda m: (m.set("general.name", T.STRING, "tiny-model"),
                 m.kvs["tokenizer.ggml.tokens"].value.__setitem__(LAST_WORD, "\u2581with"),
                 m.kvs["tokenizer.ggml.token_type"].value.__setitem__(LAST_WORD, 1)))
    v("llama", "general_name_phi3", "a llama model whose general.name contains 'phi3' (vocabulary has no <|endoftext|>)",
      lambda m: m.set("general.name", T.STRING, "my-phi3-finetune"))
    v("phi3", "rope_factors", "rope_factors_long/short.weight {head_dim/2} present",
      lambda m: (m.t("rope_factors_long.weight", HEAD_DIM // 2), m.t("rope_factors_short.weight", HEAD_DIM // 2)))

    # ---- qwen2
    v("qwen2", "no_qkv_bias", "qwen2 without attn_q/k/v.bias (optional)",
      lambda m: [m.drop_tensor(f"blk.{i}.attn_{x}.bias") for i in range(N_LAYER) for x in "qkv"])
    v("qwen2", "output_bias", "qwen2 with optional output.bias {n_vocab}",
      lambda m: m.t("output.bias", N_VOCAB))

    # ---- qwen3moe
    v("qwen3moe", "exps_scale", "optional blk.0.ffn_up_exps.scale {n_expert} (generic pass of load_tensors)",
      lambda m: m.t("blk.0.ffn_up_exps.scale", N_EXPERT))
    v("qwen3moe", "missing_expert_count", "expert_count removed (expert_used_count 2 kept)",
      lambda m: m.drop_key("qwen3moe.expert_count"))
    v("qwen3moe", "missing_expert_used_count", "expert_used_count removed",
      lambda m: m.drop_key("qwen3moe.expert_used_count"))
    v("qwen3moe", "expert_used_gt_count", "expert_used_count 5 > expert_count 4",
      lambda m: m.set("qwen3moe.expert_used_count", T.UINT32, 5))
    v("qwen3moe", "expert_used_count_0", "expert_used_count 0 with expert_count 4",
      lambda m: m.set("qwen3moe.expert_used_count", T.UINT32, 0))
    v("qwen3moe", "expert_count_8_stale", "expert_count 8 but *_exps and gate_inp sized for 4",
      lambda m: m.set("qwen3moe.expert_count", T.UINT32, 8))
    v("qwen3moe", "exps_wrong_expert_dim", "blk.0.ffn_up_exps.weight has 3 experts",
      lambda m: m.reshape("blk.0.ffn_up_exps.weight", N_EMBD, N_FF_EXP, 3))
    v("qwen3moe", "exps_wrong_ff_exp", "blk.0.ffn_gate_exps.weight n_ff_exp+8 != expert_feed_forward_length",
      lambda m: m.reshape("blk.0.ffn_gate_exps.weight", N_EMBD, N_FF_EXP + 8, N_EXPERT))
    v("qwen3moe", "missing_ffn_gate_inp", "blk.0.ffn_gate_inp.weight removed",
      lambda m: m.drop_tensor("blk.0.ffn_gate_inp.weight"))
    v("qwen3moe", "no_expert_ff_length", "expert_feed_forward_length removed (default n_ff/n_expert_used = n_ff_exp matches)",
      lambda m: m.drop_key("qwen3moe.expert_feed_forward_length"))
    v("qwen3moe", "no_expert_ff_length_mismatch",
      "expert_feed_forward_length removed and feed_forward_length 1.5*n_ff (default n_ff/n_expert_used != n_ff_exp)",
      lambda m: (m.drop_key("qwen3moe.expert_feed_forward_length"),
                 m.set("qwen3moe.feed_forward_length", T.UINT32, N_FF * 3 // 2)))
    def dense_instead(m: Model) -> None:
        for i in range(N_LAYER):
            for x in ("gate", "down", "up"):
                m.drop_tensor(f"blk.{i}.ffn_{x}_exps.weight")
            add_dense_ffn(m, i)
    v("qwen3moe", "dense_ffn_instead_of_experts", "dense ffn_gate/up/down instead of *_exps (keys unchanged)", dense_instead)
    v("qwen3moe", "fused_gate_up_exps", "ffn_gate_up_exps {n_embd, 2*n_ff_exp, n_expert} instead of gate/up (qwen3moe does not read it)",
      lambda m: [(m.drop_tensor(f"blk.{i}.ffn_gate_exps.weight"), m.drop_tensor(f"blk.{i}.ffn_up_exps.weight"),
                  m.t(f"blk.{i}.ffn_gate_up_exps.weight", N_EMBD, 2 * N_FF_EXP, N_EXPERT)) for i in range(N_LAYER)])

    # ---- keys required under a condition (load_arch_hparams decides from other values)
    v("deepseek2", "missing_q_lora_rank", "attention.q_lora_rank removed, block_count 2 (not lite): required",
      lambda m: m.drop_key("deepseek2.attention.q_lora_rank"))
    out.append(Variant("deepseek2", "lite_layout_2_layers",
                       "lite layout (no q_lora_rank, attn_q) with block_count 2: q_lora_rank still required",
                       lambda: base_deepseek2(2, q_lora=False)))
    out.append(Variant("deepseek2", "lite_26_layers", "lite layout with block_count 26: q_lora_rank not read",
                       lambda: base_deepseek2(26, q_lora=False)))
    out.append(Variant("deepseek2", "lite_27_layers", "lite layout with block_count 27: q_lora_rank not read",
                       lambda: base_deepseek2(27, q_lora=False)))
    out.append(Variant("deepseek2", "no_q_lora_28_layers", "lite layout with block_count 28: q_lora_rank required",
                       lambda: base_deepseek2(28, q_lora=False)))
    out.append(Variant("deepseek2", "q_lora_26_layers", "q_lora_rank and attn_q_a/attn_q_b with block_count 26 (lite: q_lora_rank not read)",
                       lambda: base_deepseek2(26, q_lora=True)))

    def with_nextn(n_block: int) -> Callable[[], Model]:
        def build() -> Model:
            m = base_deepseek2(n_block - 1, q_lora=False)
            m.set("deepseek2.block_count", T.UINT32, n_block)
            m.set("deepseek2.leading_dense_block_count", T.UINT32, n_block)
            m.set("deepseek2.nextn_predict_layers", T.UINT32, 1)
            return m
        return build
    out.append(Variant("deepseek2", "lite_27_blocks_1_nextn",
                       "lite layout, block_count 27 with nextn_predict_layers 1 (n_layer 26: lite), no MTP tensors",
                       with_nextn(27)))
    out.append(Variant("deepseek2", "no_q_lora_26_blocks_1_nextn",
                       "lite layout, block_count 26 with nextn_predict_layers 1 (n_layer 25: not lite), no MTP tensors",
                       with_nextn(26)))

    def vocab_48(vocab_size: int | None) -> Callable[[], Model]:
        def build() -> Model:
            m = base_deepseek2(48, q_lora=False)
            if vocab_size is not None:
                m.set("deepseek2.vocab_size", T.UINT32, vocab_size)
            return m
        return build
    out.append(Variant("deepseek2", "lite_48_layers_vocab_128256",
                       "lite layout, block_count 48 and deepseek2.vocab_size 128256 (tensors for the 295 tokens): lite",
                       vocab_48(128256)))
    out.append(Variant("deepseek2", "no_q_lora_48_layers",
                       "lite layout, block_count 48 and a 295-token vocabulary: q_lora_rank required",
                       vocab_48(None)))
    # The ernie models are no `complete` base: their names break GGUF's naming
    # convention (architecture-charset, key-naming), which a complete model must not.
    out.append(Variant("ernie4_5", "dense", "complete ernie4_5 without the MoE keys (not required for ernie4_5): loads",
                       lambda: base_ernie("ernie4_5")))
    def ernie_moe(fn: Callable[[Model], None]) -> Callable[[], Model]:
        def build() -> Model:
            m = base_ernie("ernie4_5-moe")
            fn(m)
            return m
        return build
    out.append(Variant("ernie4_5-moe", "dense_layers", "ernie4_5-moe with its MoE keys, every layer dense (reference: must load)",
                       ernie_moe(lambda m: None)))
    out.append(Variant("ernie4_5-moe", "missing_interleave_moe_layer_step",
                       "interleave_moe_layer_step removed (required for ernie4_5-moe)",
                       ernie_moe(lambda m: m.drop_key("ernie4_5-moe.interleave_moe_layer_step"))))
    out.append(Variant("ernie4_5-moe", "missing_expert_feed_forward_length",
                       "expert_feed_forward_length removed (required for ernie4_5-moe)",
                       ernie_moe(lambda m: m.drop_key("ernie4_5-moe.expert_feed_forward_length"))))
    # ---- keys required under a condition, hyperparameters only (token_embd.weight the one tensor)
    def without(build: Callable[[], Model], *keys: str) -> Callable[[], Model]:
        def b() -> Model:
            m = build()
            for key in keys:
                m.drop_key(m.a(key))
            return m
        return b
    dflash_hc = lambda: probe_dflash(hc=2, hc_keys=True)  # noqa: E731
    out.append(Variant("dflash", "hc_2_keys_embd_only",
                       "hyper_connection.count 2 with the 12 DSV4 keys (sliding_window 64 but no sliding_window_pattern: "
                       "not read with hyper connections), token_embd.weight only: past load_hparams", dflash_hc))
    for key, _, _ in DFLASH_HC_KEYS:
        out.append(Variant("dflash", f"hc_2_missing_{key.replace('.', '_')}",
                           f"hyper_connection.count 2, {key} removed (required): refused in load_hparams",
                           without(dflash_hc, key)))
    out.append(Variant("dflash", "hc_0_no_hc_keys_embd_only",
                       "hyper_connection.count 0 and none of the DSV4 keys, token_embd.weight only: past load_hparams",
                       lambda: probe_dflash(hc=0)))
    out.append(Variant("dflash", "no_hc_embd_only",
                       "no hyper_connection.count, no DSV4 keys, no sliding_window, token_embd.weight only: past load_hparams",
                       lambda: probe_dflash()))
    out.append(Variant("dflash", "swa_64_pattern_embd_only",
                       "sliding_window 64 with sliding_window_pattern, token_embd.weight only: past load_hparams",
                       lambda: probe_dflash(swa=64, pattern=True)))
    out.append(Variant("dflash", "swa_64_missing_pattern",
                       "sliding_window 64 without sliding_window_pattern (required): refused in load_hparams",
                       lambda: probe_dflash(swa=64)))
    out.append(Variant("dflash", "swa_0_no_pattern_embd_only",
                       "sliding_window 0 without sliding_window_pattern (not required), token_embd.weight only: past load_hparams",
                       lambda: probe_dflash(swa=0)))
    qwen4_ple = lambda: probe_qwen4exp([0], ple_keys=True)  # noqa: E731
    out.append(Variant("qwen4exp", "ple_keys_embd_only",
                       "ple.layers [0] with the 8 other PLE keys, token_embd.weight only: past load_hparams", qwen4_ple))
    for key, _, _, _ in QWEN4EXP_PLE_KEYS:
        out.append(Variant("qwen4exp", f"ple_missing_{key.replace('.', '_')}",
                           f"ple.layers [0], {key} removed (required): refused in load_hparams",
                           without(qwen4_ple, key)))
    out.append(Variant("qwen4exp", "ple_empty_no_ple_keys_embd_only",
                       "ple.layers empty and no other PLE key, token_embd.weight only: past load_hparams",
                       lambda: probe_qwen4exp([])))
    out.append(Variant("qwen4exp", "no_ple_embd_only",
                       "no PLE key at all, token_embd.weight only: past load_hparams", lambda: probe_qwen4exp()))
    out.append(Variant("wavtokenizer-dec", "keys_embd_only",
                       "the 5 wavtokenizer-dec keys, token_embd.weight only: past load_hparams", probe_wavtokenizer_dec))
    for key in WAVTOKENIZER_KEYS:
        out.append(Variant("wavtokenizer-dec", f"missing_{key.replace('.', '_')}",
                           f"{key} removed (required for wavtokenizer-dec): refused in load_hparams",
                           without(probe_wavtokenizer_dec, key)))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    outdir = pathlib.Path(argv[1])
    vs = variants()
    names = [x.file for x in vs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"duplicate variant names: {sorted(dup)}")
    if "--list" in argv[2:]:
        for x in vs:
            print(f"{x.file}\t{x.description}")
        return 0
    outdir.mkdir(parents=True, exist_ok=True)
    for x in vs:
        write(x.build(), outdir / x.file)
    print(f"wrote {len(vs)} files to {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
