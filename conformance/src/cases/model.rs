//! The model layer: what llama.cpp's loader and tokenizer assume of a
//! sound container (hyper-parameters, vocabulary, split shards, keys a
//! C-string reader sees differently). Each rule has a breaking case and a
//! case at its boundary.

use gguf_validate::types::ValueType as T;

use crate::build::*;
use crate::{A, Case, R, case};

/// The base file (architecture `llama`) with these extra pairs.
fn with(kvs: &[(&str, V)]) -> Vec<u8> {
    let mut m = base();
    for (k, v) in kvs {
        m.kv(k, v.clone());
    }
    bytes(m)
}

fn u32s(values: &[u32]) -> V {
    array(T::U32, values.iter().map(|v| V::U32(*v)).collect())
}

/// A vocabulary of `tokens` with token types `types` (scores 0).
fn vocab(tokens: &[&[u8]], types: &[i32]) -> Vec<u8> {
    let mut m = base();
    m.kv("tokenizer.ggml.model", V::str("llama"));
    m.kv("tokenizer.ggml.tokens", array(T::String, tokens.iter().map(|t| V::String(t.to_vec())).collect()));
    m.kv("tokenizer.ggml.scores", array(T::F32, tokens.iter().map(|_| V::F32(0.0)).collect()));
    m.kv("tokenizer.ggml.token_type", array(T::I32, types.iter().map(|t| V::I32(*t)).collect()));
    bytes(m)
}

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "model_architecture_unknown",
        [A, A, A],
        &["model-architecture-unknown"],
        "general.architecture `sdxl` with block_count 100000: not a llama.cpp architecture, so its hyper-parameters are not judged (an info; every `llama` case is the boundary).",
        "llama.cpp src/llama-arch.cpp LLM_ARCH_NAMES",
        || {
            let mut m = base_no_tensors();
            m.kvs.clear();
            m.kv("general.architecture", V::str("sdxl"));
            m.kv("sdxl.block_count", V::U32(100_000));
            m.tensor(f32_tensor("t", &[8]));
            bytes(m)
        },
    ));
    v.push(case(
        "model_block_count_512",
        [A, A, A],
        &[],
        "llama.block_count = 512, llama.cpp's LLAMA_MAX_LAYERS (boundary of model-block-count).",
        "llama.cpp src/llama-hparams.h LLAMA_MAX_LAYERS",
        || with(&[("llama.block_count", V::U32(512))]),
    ));
    v.push(case(
        "model_block_count_100000",
        [R, A, A],
        &["model-block-count"],
        "llama.block_count = 100000: llama.cpp sizes per-layer arrays for 512 layers (abort now; out-of-bounds write before #25821/#26051).",
        "llama.cpp src/llama-model.cpp load_hparams",
        || with(&[("llama.block_count", V::U32(100_000))]),
    ));
    v.push(case(
        "model_block_count_0",
        [R, A, A],
        &["model-block-count"],
        "llama.block_count = 0: llama.cpp asserts at least one layer.",
        "llama.cpp src/llama-model.cpp load_hparams",
        || with(&[("llama.block_count", V::U32(0))]),
    ));
    v.push(case(
        "model_layer_array_matches",
        [A, A, A],
        &[],
        "llama.attention.head_count as an array of 2 values for block_count 2 (boundary of model-layer-array).",
        "llama.cpp src/llama-model-loader.cpp get_key_or_arr",
        || with(&[("llama.block_count", V::U32(2)), ("llama.attention.head_count", u32s(&[4, 4]))]),
    ));
    v.push(case(
        "model_layer_array_length",
        [R, A, A],
        &["model-layer-array"],
        "llama.attention.head_count as an array of 3 values for block_count 2: llama.cpp refuses it.",
        "llama.cpp src/llama-model-loader.cpp get_key_or_arr",
        || with(&[("llama.block_count", V::U32(2)), ("llama.attention.head_count", u32s(&[4, 4, 4]))]),
    ));
    v.push(case(
        "model_expert_count_1024",
        [A, A, A],
        &[],
        "llama.expert_count = 1024 with 8 used (boundary of model-expert-count).",
        "llama.cpp src/llama-hparams.h LLAMA_MAX_EXPERTS",
        || with(&[("llama.expert_count", V::U32(1024)), ("llama.expert_used_count", V::U32(8))]),
    ));
    v.push(case(
        "model_expert_count_1025",
        [R, A, A],
        &["model-expert-count"],
        "llama.expert_count = 1025: llama.cpp asserts at most 1024 experts.",
        "llama.cpp src/llama-model.cpp load_hparams",
        || with(&[("llama.expert_count", V::U32(1025)), ("llama.expert_used_count", V::U32(8))]),
    ));
    v.push(case(
        "model_expert_used_above_count",
        [R, A, A],
        &["model-expert-count"],
        "llama.expert_used_count = 3 with expert_count 2: llama.cpp asserts used <= count.",
        "llama.cpp src/llama-model.cpp load_hparams",
        || with(&[("llama.expert_count", V::U32(2)), ("llama.expert_used_count", V::U32(3))]),
    ));
    v.push(case(
        "tokenizer_byte_tokens",
        [A, A, A],
        &[],
        "Byte tokens `<0x0A>` and `<0xfF>` of type BYTE, and a text token `<0x` (boundary of tokenizer-byte-token and tokenizer-token-type).",
        "llama.cpp src/llama-vocab.cpp byte tokens",
        || vocab(&[b"<unk>", b"<0x0A>", b"<0xfF>", b"<0x"], &[2, 6, 6, 1]),
    ));
    v.push(case(
        "tokenizer_byte_token_minus_one",
        [R, A, A],
        &["tokenizer-byte-token"],
        "A token spelled `<0x-1>` (typed NORMAL): the plamo2 tokenizer parsed it into a heap write with a chosen value.",
        "llama.cpp #26511; lmstudio-bug-tracker #2289",
        || vocab(&[b"<unk>", b"<0x-1>"], &[2, 1]),
    ));
    v.push(case(
        "tokenizer_byte_type_not_hex",
        [R, A, A],
        &["tokenizer-byte-token"],
        "A token of type BYTE spelled `<0x1G>`.",
        "llama.cpp src/llama-vocab.cpp byte tokens",
        || vocab(&[b"<unk>", b"<0x1G>"], &[2, 6]),
    ));
    v.push(case(
        "tokenizer_token_type_7",
        [R, A, A],
        &["tokenizer-token-type"],
        "A token type of 7, past llama.cpp's BYTE (6).",
        "llama.cpp include/llama.h enum llama_token_type",
        || vocab(&[b"<unk>", b"a"], &[2, 7]),
    ));
    v.push(case(
        "tokenizer_token_type_negative",
        [R, A, A],
        &["tokenizer-token-type"],
        "A token type of -1.",
        "llama.cpp include/llama.h enum llama_token_type",
        || vocab(&[b"<unk>", b"a"], &[2, -1]),
    ));
    v.push(case(
        "split_no_last",
        [A, A, A],
        &[],
        "split.no = 1 with split.count 2: the last shard (boundary of split-index).",
        "llama.cpp src/llama-model-loader.cpp; gguf-split",
        || with(&[("split.no", V::U16(1)), ("split.count", V::U16(2)), ("split.tensors.count", V::I32(1))]),
    ));
    v.push(case(
        "split_no_past_count",
        [R, A, A],
        &["split-index"],
        "split.no = 3 with split.count 2.",
        "llama.cpp src/llama-model-loader.cpp; gguf-split",
        || with(&[("split.no", V::U16(3)), ("split.count", V::U16(2)), ("split.tensors.count", V::I32(1))]),
    ));
    v.push(case(
        "key_nul_aliases_template",
        [R, R, A],
        &["key-control", "key-naming"],
        "A second template under `tokenizer.chat_template\\0alias`: a C-string reader sees `tokenizer.chat_template` twice.",
        "gguf.cpp gguf_find_key (strcmp); llama.cpp std::string keys",
        || {
            with(&[
                ("tokenizer.chat_template", V::str("{{ messages }}")),
                ("tokenizer.chat_template\0alias", V::str("{{ other }}")),
            ])
        },
    ));
    v.push(case(
        "key_escape_sequence",
        [R, R, A],
        &["key-control", "key-naming"],
        "A key holding ESC `[2K`, which rewrites the terminal line a tool prints it on.",
        "gguf.md gguf_metadata_kv_t",
        || with(&[("custom\x1b[2K.key", V::U32(1))]),
    ));
}
