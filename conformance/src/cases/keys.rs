//! Well-known keys: alignment, architecture, quantization version,
//! standard key types, tokenizer arrays.

use gguf_validate_core::types::{GgmlType, ValueType as T};

use crate::build::*;
use crate::{A, Case, R, case};

/// The base file with `general.alignment` set (offsets re-laid out).
fn aligned(value: V) -> Vec<u8> {
    let mut m = base();
    m.kv("general.alignment", value);
    m.tensor(f32_tensor("u", &[4]));
    bytes(m)
}

/// A SentencePiece vocabulary of `n_tokens` tokens, the 256 byte tokens
/// (tokenizer-byte-fallback) then text tokens, with `n_scores` scores.
fn tokenizer(n_tokens: usize, n_scores: usize, bos: u32) -> Vec<u8> {
    let mut m = base();
    let texts = crate::build::byte_tokens().chain((0..).map(|i| format!("tok{i}")));
    let tokens = texts.take(n_tokens).map(|t| V::str(&t)).collect();
    let types = (0..n_tokens).map(|i| V::I32(if i < 256 { 6 } else { 1 }));
    m.kv("tokenizer.ggml.model", V::str("llama"));
    m.kv("tokenizer.ggml.tokens", array(T::String, tokens));
    m.kv("tokenizer.ggml.scores", array(T::F32, (0..n_scores).map(|i| V::F32(i as f32)).collect()));
    m.kv("tokenizer.ggml.token_type", array(T::I32, types.collect()));
    m.kv("tokenizer.ggml.bos_token_id", V::U32(bos));
    bytes(m)
}

/// A byte-level BPE (`gpt2`) vocabulary of the first `n_tokens` of 12, with
/// no special-token ids: llama.cpp takes the `gpt2` defaults (bos and eos
/// 11).
fn bpe_without_ids(n_tokens: usize) -> Vec<u8> {
    let mut m = base();
    let texts = ["a", "b", "c", "d", "e", "f", "g", "\u{120}", "\u{10a}", "ab", "<|endoftext|>", "<|im_end|>"];
    let tokens = texts.iter().take(n_tokens).map(|t| V::str(t)).collect();
    m.kv("tokenizer.ggml.model", V::str("gpt2"));
    m.kv("tokenizer.ggml.pre", V::str("default"));
    m.kv("tokenizer.ggml.tokens", array(T::String, tokens));
    m.kv("tokenizer.ggml.merges", array(T::String, vec![V::str("a b")]));
    bytes(m)
}

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "alignment_8",
        [A, A, A],
        &[],
        "general.alignment = 8, the smallest alignment valid under every profile.",
        "gguf.md general.alignment",
        || aligned(V::U32(8)),
    ));
    v.push(case(
        "alignment_64",
        [A, A, A],
        &[],
        "general.alignment = 64 with two tensors laid out at 64-byte offsets.",
        "gguf.md general.alignment",
        || aligned(V::U32(64)),
    ));
    v.push(case(
        "alignment_1",
        [R, R, A],
        &["alignment-multiple-of-8"],
        "general.alignment = 1: ggml accepts it (test-gguf TENSORS_CUSTOM_ALIGN), the spec requires a multiple of 8.",
        "gguf.md general.alignment; test-gguf *_CUSTOM_ALIGN",
        || aligned(V::U32(1)),
    ));
    v.push(case(
        "alignment_24",
        [R, A, R],
        &["alignment-power-of-two"],
        "general.alignment = 24: a multiple of 8 (spec) but not a power of two (ggml).",
        "gguf.md general.alignment; gguf.cpp [A2]",
        || aligned(V::U32(24)),
    ));
    v.push(case(
        "alignment_13",
        [R, R, R],
        &["alignment-power-of-two", "alignment-multiple-of-8"],
        "general.alignment = 13.",
        "test-gguf KV_BAD_ALIGN / TENSORS_BAD_ALIGN",
        || aligned(V::U32(13)),
    ));
    v.push(case(
        "alignment_0",
        [R, R, R],
        &["alignment-zero"],
        "general.alignment = 0 (a division by zero in several readers).",
        "gguf.cpp [A2]; candle and ggus panic on it",
        || {
            let mut m = base();
            m.kv("general.alignment", V::U32(0));
            bytes(m)
        },
    ));
    v.push(case(
        "alignment_i32",
        [R, R, R],
        &["alignment-type"],
        "general.alignment typed i32 (ggml used to abort on it).",
        "gguf.cpp [A1]; test-gguf KV_WRONG_TYPE_ALIGN",
        || {
            let mut m = base();
            m.kv("general.alignment", V::I32(32));
            bytes(m)
        },
    ));
    v.push(case(
        "alignment_array",
        [R, R, R],
        &["alignment-type"],
        "general.alignment as an array of one u32.",
        "gguf.cpp [A1]",
        || {
            let mut m = base();
            m.kv("general.alignment", array(T::U32, vec![V::U32(32)]));
            bytes(m)
        },
    ));
    v.push(case(
        "alignment_1mib",
        [A, A, A],
        &[],
        "general.alignment = 2^20, the largest alignment without a warning (no tensors, so the file stays small).",
        "limits::MAX_SANE_ALIGNMENT",
        || {
            let mut m = base_no_tensors();
            m.kv("general.alignment", V::U32(1 << 20));
            m.pad_end = false;
            bytes(m)
        },
    ));
    v.push(case(
        "alignment_2mib",
        [A, A, A],
        &["alignment-large"],
        "general.alignment = 2^21: valid, but GGML_PAD overflows on 32-bit hosts; strict warns.",
        "llama.cpp#24997; ggml#1516",
        || {
            let mut m = base_no_tensors();
            m.kv("general.alignment", V::U32(1 << 21));
            m.pad_end = false;
            bytes(m)
        },
    ));
    v.push(case(
        "architecture_missing",
        [R, R, A],
        &["architecture-missing"],
        "No general.architecture key.",
        "gguf.md Required",
        || {
            let mut m = base();
            m.kvs.clear();
            m.kv("general.name", V::str("x"));
            bytes(m)
        },
    ));
    v.push(case(
        "architecture_u32",
        [R, R, A],
        &["architecture-type"],
        "general.architecture typed u32.",
        "gguf.md general.architecture",
        || {
            let mut m = base();
            m.kvs[0].1 = V::U32(1);
            bytes(m)
        },
    ));
    v.push(case(
        "architecture_dash",
        [A, R, A],
        &["architecture-charset"],
        "general.architecture = `command-r` (a real name outside the spec's [a-z0-9]+), in a vocabulary-less, tensor-less file (no model-layer rule applies).",
        "gguf.md general.architecture",
        || {
            let mut m = base_no_tensors();
            m.kvs[0].1 = V::str("command-r");
            bytes(m)
        },
    ));
    v.push(case(
        "quantized_without_version",
        [R, R, A],
        &["quantization-version-missing"],
        "A Q8_0 tensor and no general.quantization_version.",
        "gguf.md Required",
        || {
            let mut m = base_no_tensors();
            m.tensor(zero_tensor("q", &[32], GgmlType::Q8_0));
            bytes(m)
        },
    ));
    v.push(case(
        "quantized_with_version",
        [A, A, A],
        &[],
        "A Q8_0 tensor with general.quantization_version = 2.",
        "gguf.md Required",
        || {
            let mut m = base_no_tensors();
            m.kv("general.quantization_version", V::U32(2));
            m.tensor(zero_tensor("q", &[32], GgmlType::Q8_0));
            bytes(m)
        },
    ));
    v.push(case(
        "quantization_version_u64",
        [A, R, A],
        &["quantization-version-type"],
        "general.quantization_version typed u64.",
        "gguf.md general.quantization_version: uint32",
        || {
            let mut m = base();
            m.kv("general.quantization_version", V::U64(2));
            bytes(m)
        },
    ));
    v.push(case(
        "standard_key_u64",
        [R, A, A],
        &["standard-key-type"],
        "A complete tiny llama whose llama.context_length is typed u64: the spec says uint64, gguf-py writes u32 and llama.cpp's loader reads u32 only (\"key has wrong type\") and refuses the file.",
        "gguf.md [llm] keys; llama.cpp src/llama-model-loader.cpp GKV::get_kv",
        || {
            let mut m = tiny_llama();
            set_kv(&mut m, "llama.context_length", V::U64(2048));
            bytes(m)
        },
    ));
    v.push(case(
        "tokenizer_consistent",
        [A, A, A],
        &[],
        "A 261-token vocabulary (256 byte tokens, 5 text tokens) with scores, token types and bos id 1.",
        "gguf.md tokenizer.ggml.*",
        || tokenizer(261, 261, 1),
    ));
    v.push(case(
        "tokenizer_scores_short",
        [R, R, A],
        &["tokenizer-array-length"],
        "tokenizer.ggml.scores with 260 entries for 261 tokens (readers index it by token id).",
        "gguf.md tokenizer.ggml.scores; llama.cpp#26690",
        || tokenizer(261, 260, 1),
    ));
    v.push(case(
        "token_id_out_of_range",
        [R, A, A],
        &["token-id-range"],
        "tokenizer.ggml.bos_token_id = 261 with 261 tokens (the boundary, 260, is y_tokenizer_consistent's bos 1 and every id below 261).",
        "GHSA-g4cc-763q-h9h6",
        || tokenizer(261, 261, 261),
    ));
    v.push(case(
        "tokenizer_default_eos_outside",
        [A, A, A],
        &["tokenizer-special-default"],
        "A `gpt2` vocabulary of 11 tokens without bos and eos ids: llama.cpp's defaults (11) are outside it (releases before b10361 read past the vocabulary; the pinned tree disables them).",
        "llama.cpp src/llama-vocab.cpp load; llama.cpp#25508",
        || bpe_without_ids(11),
    ));
    v.push(case(
        "tokenizer_default_eos_inside",
        [A, A, A],
        &[],
        "A `gpt2` vocabulary of 12 tokens without bos and eos ids: the defaults (11) are inside it (the boundary of tokenizer_default_eos_outside).",
        "llama.cpp src/llama-vocab.cpp load",
        || bpe_without_ids(12),
    ));
}
