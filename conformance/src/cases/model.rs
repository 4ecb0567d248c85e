//! The model layer: what llama.cpp's loader and tokenizer assume of a
//! sound container (hyper-parameters, vocabulary, split shards, keys a
//! C-string reader sees differently). Each rule has a breaking case and a
//! case at its boundary.

use gguf_validate_core::rules::Profile;
use gguf_validate_core::types::ValueType as T;

use crate::build::*;
use crate::{A, Case, R, case};

/// The tiny llama's hyper-parameters and vocabulary without tensors (a
/// vocabulary-only file: hyper-parameter rules apply, tensor rules do not),
/// with these pairs set.
fn with(kvs: &[(&str, V)]) -> Vec<u8> {
    let mut m = tiny_llama_hparams();
    for (k, v) in kvs {
        set_kv(&mut m, k, v.clone());
    }
    bytes(m)
}

/// The complete tiny llama, changed by `f`.
fn tiny(f: impl Fn(&mut Model)) -> Vec<u8> {
    let mut m = tiny_llama();
    f(&mut m);
    bytes(m)
}

/// A tensor's dims in the tiny llama.
fn reshape(m: &mut Model, name: &str, dims: &[u64]) {
    if let Some(t) = m.tensors.iter_mut().find(|t| t.name == name.as_bytes()) {
        *t = f32_tensor(name, dims);
    }
}

/// A gpt2 (BPE) vocabulary on the base file: tokens, bos and eos ids (the
/// `<|endoftext|>` token: the gpt2 default, 11, is outside these 4 tokens),
/// and the given pre and merges.
fn bpe(pre: Option<&str>, merges: bool) -> Vec<u8> {
    let mut m = base();
    m.kv("tokenizer.ggml.model", V::str("gpt2"));
    if let Some(p) = pre {
        m.kv("tokenizer.ggml.pre", V::str(p));
    }
    let tokens: [&str; 4] = ["a", "b", "ab", "<|endoftext|>"];
    m.kv("tokenizer.ggml.tokens", array(T::String, tokens.iter().map(|t| V::str(t)).collect()));
    m.kv("tokenizer.ggml.token_type", array(T::I32, vec![V::I32(1), V::I32(1), V::I32(1), V::I32(3)]));
    m.kv("tokenizer.ggml.bos_token_id", V::U32(3));
    m.kv("tokenizer.ggml.eos_token_id", V::U32(3));
    if merges {
        m.kv("tokenizer.ggml.merges", array(T::String, vec![V::str("a b")]));
    }
    bytes(m)
}

fn u32s(values: &[u32]) -> V {
    array(T::U32, values.iter().map(|v| V::U32(*v)).collect())
}

/// A SentencePiece vocabulary of `tokens` with token types `types`
/// (scores 0), then every byte token `<0xHH>` it lacks (type BYTE), as a
/// vocabulary llama.cpp can spell any text with has them.
fn vocab(tokens: &[&[u8]], types: &[i32]) -> Vec<u8> {
    let missing: Vec<Vec<u8>> =
        byte_tokens().map(String::into_bytes).filter(|b| !tokens.contains(&b.as_slice())).collect();
    let all: Vec<&[u8]> = tokens.iter().copied().chain(missing.iter().map(Vec::as_slice)).collect();
    let all_types: Vec<i32> = types.iter().copied().chain(missing.iter().map(|_| 6)).collect();
    vocab_exactly(&all, &all_types)
}

/// A SentencePiece vocabulary of exactly `tokens` with token types `types`
/// (scores 0).
fn vocab_exactly(tokens: &[&[u8]], types: &[i32]) -> Vec<u8> {
    let mut m = base();
    m.kv("tokenizer.ggml.model", V::str("llama"));
    m.kv("tokenizer.ggml.tokens", array(T::String, tokens.iter().map(|t| V::String(t.to_vec())).collect()));
    m.kv("tokenizer.ggml.scores", array(T::F32, tokens.iter().map(|_| V::F32(0.0)).collect()));
    m.kv("tokenizer.ggml.token_type", array(T::I32, types.iter().map(|t| V::I32(*t)).collect()));
    bytes(m)
}

/// The byte tokens of every byte but those `leave_out` keeps out, and the
/// one-byte text tokens `single` (a vocabulary for tokenizer-byte-fallback).
fn byte_fallback_vocab(leave_out: impl Fn(u8) -> bool, single: &[u8], lower: bool) -> Vec<u8> {
    let mut tokens: Vec<Vec<u8>> = vec![b"<unk>".to_vec()];
    let mut types = vec![2];
    for b in (0..=255u8).filter(|b| !leave_out(*b)) {
        tokens.push(if lower { format!("<0x{b:02x}>") } else { format!("<0x{b:02X}>") }.into_bytes());
        types.push(6);
    }
    for b in single {
        tokens.push(vec![*b]);
        types.push(1);
    }
    let refs: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
    vocab_exactly(&refs, &types)
}

pub fn cases(v: &mut Vec<Case>) {
    table_cases(v);
    v.push(case(
        "model_architecture_unknown",
        [A, A, A],
        &["model-architecture-unknown"],
        "general.architecture `encodec` (encodec.cpp's) with block_count 100000: not a llama.cpp architecture and no diffusion model, so its hyper-parameters are not judged (an info; every `llama` case is the boundary; a diffusion architecture such as `sdxl` is judged for stable-diffusion.cpp, the diffusion cases).",
        "llama.cpp src/llama-arch.cpp LLM_ARCH_NAMES",
        || {
            let mut m = base_no_tensors();
            m.kvs.clear();
            m.kv("general.architecture", V::str("encodec"));
            m.kv("encodec.block_count", V::U32(100_000));
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
        "tokenizer_byte_fallback_missing",
        [R, A, A],
        &["tokenizer-byte-fallback"],
        "A SentencePiece vocabulary with every byte token but `<0x0A>`, and no token `\\n`: llama.cpp spells a newline it has no token for as a byte token, finds none and throws; the process aborts on the first prompt with a newline.",
        "llama.cpp src/llama-vocab.cpp llama_vocab::byte_to_token (token_to_id.at)",
        || byte_fallback_vocab(|b| b == b'\n', &[], false),
    ));
    v.push(case(
        "tokenizer_byte_fallback_lower_case",
        [R, A, A],
        &["tokenizer-byte-fallback"],
        "A SentencePiece vocabulary whose 256 byte tokens are spelled with lower-case hex digits (`<0x0a>`): llama.cpp looks up `<0x0A>` and finds none of them.",
        "llama.cpp src/llama-vocab.cpp llama_vocab::byte_to_token (hex digits 0123456789ABCDEF)",
        || byte_fallback_vocab(|_| false, &[], true),
    ));
    v.push(case(
        "tokenizer_byte_fallback_bytes_text_never_spells",
        [A, A, A],
        &[],
        "A SentencePiece vocabulary without the byte tokens of the space (written U+2581 before tokenizing) and of the bytes UTF-8 never uses (0xC0, 0xC1, 0xF5..0xFF), and with `a` and `\\n` as one-byte text tokens instead of `<0x61>` and `<0x0A>` (boundary of tokenizer-byte-fallback: llama.cpp falls back to the one-byte token).",
        "llama.cpp src/llama-vocab.cpp llama_vocab::byte_to_token, llama_escape_whitespace",
        || byte_fallback_vocab(|b| matches!(b, b' ' | b'a' | b'\n' | 0xC0 | 0xC1 | 0xF5..=0xFF), b"a\n", false),
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

/// Hyper-parameters against tensors (the generated per-architecture
/// table), tokenizer refusals, and what the report says it left out.
pub fn table_cases(v: &mut Vec<Case>) {
    const LOADER: &str = "llama.cpp src/models/llama.cpp load_arch_tensors; src/llama-model-loader.cpp";
    v.push(case(
        "model_tiny_llama_complete",
        [A, A, A],
        &[],
        "A complete two-layer llama (tied embeddings: no output.weight) with every tensor llama.cpp's loader requires in the shape it computes; libllama loads the same shape (corpus/models/llama__complete.gguf). Boundary of every model-tensor rule.",
        LOADER,
        || tiny(|_| {}),
    ));
    v.push(case(
        "model_tiny_llama_optional_tensors",
        [A, A, A],
        &[],
        "The tiny llama with the optional tensors llama.cpp creates when present: output.weight, blk.0.attn_output.bias, rope_freqs.weight [n_rot/2], blk.1.attn_q.scale [1], and an attn_norm written [16, 1] (trailing 1s compare equal).",
        LOADER,
        || {
            tiny(|m| {
                m.tensor(f32_tensor("output.weight", &[TINY_EMBD, TINY_VOCAB]));
                m.tensor(f32_tensor("blk.0.attn_output.bias", &[TINY_EMBD]));
                m.tensor(f32_tensor("rope_freqs.weight", &[2]));
                m.tensor(f32_tensor("blk.1.attn_q.scale", &[1]));
                reshape(m, "blk.0.attn_norm.weight", &[TINY_EMBD, 1]);
            })
        },
    ));
    v.push(case(
        "model_key_missing_rms_eps",
        [R, A, A],
        &["model-key-missing"],
        "The tiny llama without llama.attention.layer_norm_rms_epsilon, which llama.cpp reads as required for llama.",
        "llama.cpp src/models/llama.cpp load_arch_hparams (get_key required)",
        || tiny(|m| drop_kv(m, "llama.attention.layer_norm_rms_epsilon")),
    ));
    v.push(case(
        "model_key_missing_context_length",
        [R, A, A],
        &["model-key-missing"],
        "The tiny llama without llama.context_length, required for every architecture.",
        "llama.cpp src/llama-model.cpp llama_model_base::load_hparams",
        || tiny(|m| drop_kv(m, "llama.context_length")),
    ));
    v.push(case(
        "model_tensor_beyond_block_count",
        [R, A, A],
        &["model-tensor-unexpected"],
        "The tiny llama (block_count 2) with an extra blk.2.attn_norm.weight: llama.cpp creates no tensor for layer 2 and refuses the file (wrong number of tensors).",
        "llama.cpp src/llama-model-loader.cpp done_getting_tensors",
        || tiny(|m| {
            m.tensor(f32_tensor("blk.2.attn_norm.weight", &[TINY_EMBD]));
        }),
    ));
    v.push(case(
        "model_tensor_unknown_name",
        [R, A, A],
        &["model-tensor-unexpected"],
        "The tiny llama with an extra tensor `extra.weight` that llama.cpp never creates for llama.",
        "llama.cpp src/llama-model-loader.cpp done_getting_tensors",
        || {
            tiny(|m| {
                m.tensor(f32_tensor("extra.weight", &[4]));
            })
        },
    ));
    v.push(case(
        "model_tensor_fused_and_separate",
        [R, A, A],
        &["model-tensor-unexpected"],
        "The tiny llama with blk.0.attn_qkv.weight beside its separate attn_q/k/v: llama.cpp takes the fused one, never creates the others and refuses the file.",
        "llama.cpp src/llama-model.cpp create_tensor_qkv",
        || tiny(|m| {
            m.tensor(f32_tensor("blk.0.attn_qkv.weight", &[TINY_EMBD, 32]));
        }),
    ));
    v.push(case(
        "model_tensor_missing_ffn_down",
        [R, A, A],
        &["model-tensor-missing"],
        "The tiny llama without blk.1.ffn_down.weight (required for a dense llama layer).",
        "llama.cpp src/llama-model-loader.cpp create_tensor (missing tensor)",
        || tiny(|m| drop_tensor(m, "blk.1.ffn_down.weight")),
    ));
    v.push(case(
        "model_tensor_missing_token_embd",
        [R, A, A],
        &["model-tensor-missing"],
        "The tiny llama without token_embd.weight.",
        "llama.cpp src/models/llama.cpp",
        || tiny(|m| drop_tensor(m, "token_embd.weight")),
    ));
    v.push(case(
        "model_tensor_shape_attn_q",
        [R, A, A],
        &["model-tensor-shape"],
        "The tiny llama with blk.0.attn_q.weight [16, 12]: llama.cpp computes [n_embd, head_dim x head_count] = [16, 16].",
        "llama.cpp src/llama-model-loader.cpp check_tensor_dims",
        || tiny(|m| reshape(m, "blk.0.attn_q.weight", &[TINY_EMBD, 12])),
    ));
    v.push(case(
        "model_tensor_shape_vocab",
        [R, A, A],
        &["model-tensor-shape"],
        "The tiny llama whose token_embd.weight has 9 rows for 8 tokens.",
        "llama.cpp src/llama-model-loader.cpp check_tensor_dims",
        || tiny(|m| reshape(m, "token_embd.weight", &[TINY_EMBD, 9])),
    ));
    v.push(case(
        "model_file_type_mismatch",
        [A, A, A],
        &["model-file-type"],
        "general.file_type 1 (MOSTLY_F16) on an all-F32 model, whose matrices could all be F16: llama.cpp ignores the key (a warning).",
        "include/llama.h enum llama_ftype",
        || {
            tiny(|m| {
                m.kv("general.file_type", V::U32(1));
            })
        },
    ));
    v.push(case(
        "model_file_type_quantizer_fallback",
        [A, A, A],
        &[],
        "general.file_type 15 (MOSTLY_Q4_K_M) on an all-F32 model whose matrices have rows of 16 and 32, too narrow for Q4_K's 256-element blocks: what llama.cpp's quantizer writes when it falls back for every tensor (boundary of model-file-type).",
        "llama.cpp src/llama-quant.cpp (fallback type when ne[0] is not a multiple of the block size)",
        || {
            tiny(|m| {
                m.kv("general.file_type", V::U32(15));
            })
        },
    ));
    v.push(case(
        "model_file_type_f32",
        [A, A, A],
        &[],
        "general.file_type 0 (ALL_F32) on an all-F32 model (boundary of model-file-type).",
        "include/llama.h enum llama_ftype",
        || {
            tiny(|m| {
                m.kv("general.file_type", V::U32(0));
            })
        },
    ));
    v.push(case(
        "model_head_groups_kv_3",
        [R, A, A],
        &["model-head-groups"],
        "The tiny llama with 4 attention heads and 3 key/value heads (attn_k and attn_v [16, 12], as the loader computes them): libllama loads it, then aborts (GGML_ASSERT(ggml_can_mul_mat(a, b))) building the attention graph when a context is created.",
        "llama.cpp src/llama-graph.cpp build_attn; ggml.c ggml_mul_mat",
        || {
            tiny(|m| {
                set_kv(m, "llama.attention.head_count_kv", V::U32(3));
                for l in 0..TINY_LAYERS {
                    reshape(m, &format!("blk.{l}.attn_k.weight"), &[TINY_EMBD, 12]);
                    reshape(m, &format!("blk.{l}.attn_v.weight"), &[TINY_EMBD, 12]);
                }
            })
        },
    ));
    v.push(case(
        "model_expert_gating_absent",
        [R, A, A],
        &["model-expert-gating"],
        "A tiny dots1 (a dense layer, then an expert layer) without `dots1.expert_gating_func`: its loader reads the key optionally and keeps NONE, so libllama loads the file and then aborts (GGML_ABORT in build_moe_ffn) as a context is created.",
        "llama.cpp src/models/dots1.cpp load_arch_hparams; src/llama-graph.cpp build_moe_ffn",
        || bytes(tiny_dots1(None)),
    ));
    v.push(case(
        "model_expert_gating_unknown",
        [R, A, A],
        &["model-expert-gating"],
        "The tiny dots1 with `dots1.expert_gating_func` 5, one past the last gating function build_moe_ffn handles (4, sqrt_softplus).",
        "llama.cpp src/llama-graph.cpp build_moe_ffn; src/llama-hparams.h enum llama_expert_gating_func_type",
        || bytes(tiny_dots1(Some(5))),
    ));
    v.push(case(
        "model_expert_gating_sigmoid",
        [A, A, A],
        &[],
        "The tiny dots1 with `dots1.expert_gating_func` 2 (sigmoid, as its converter writes): the boundary of model-expert-gating.",
        "llama.cpp src/llama-graph.cpp build_moe_ffn",
        || bytes(tiny_dots1(Some(2))),
    ));
    v.push(case(
        "model_vocab_logits_small",
        [R, A, A],
        &["model-vocab-logits"],
        "A tiny chameleon with a vocabulary of 8 tokens: its graph masks the logits of image tokens 4..8196 with ggml_set_1d, so libllama loads the file, then aborts (GGML_ASSERT(ggml_nelements(a) >= ggml_nelements(b))) as a context is created.",
        "llama.cpp src/models/chameleon.cpp; ggml.c ggml_set_impl",
        || bytes(tiny_chameleon(8)),
    ));
    v.push(case(
        "model_vocab_logits_8196",
        [A, A, A],
        &[],
        "The tiny chameleon with 8196 tokens, the end of the image-token range its graph masks: the boundary of model-vocab-logits.",
        "llama.cpp src/models/chameleon.cpp",
        || bytes(tiny_chameleon(8196)),
    ));
    v.push(case(
        "model_graph_input_all_swa",
        [R, R, A],
        &["architecture-charset", "key-naming", "model-graph-input"],
        "(llama.cpp's architecture name `gemma-embedding` breaks the spec's naming rules, errors under `spec` only.) A tiny gemma-embedding of 2 layers with the loader's pattern of 6 (5 sliding-window layers, then a full one): both layers use sliding-window attention, so the full-attention mask its no-cache attention builds has no user and no buffer; libllama loads the file, then aborts (GGML_ASSERT(buffer)) at the first evaluation (as the converter's 2-layer gemma-embedding does, corpus/models/converter).",
        "llama.cpp src/llama-graph.cpp build_attn_inp_no_cache; src/models/gemma-embedding.cpp load_swa_pattern(ml, 6)",
        || bytes(tiny_gemma_embedding(None)),
    ));
    v.push(case(
        "model_graph_input_swa_and_full",
        [A, R, A],
        &["architecture-charset", "key-naming"],
        "(llama.cpp's architecture name `gemma-embedding` breaks the spec's naming rules, errors under `spec` only.) The tiny gemma-embedding with `attention.sliding_window_pattern` [true, false]: one sliding-window and one full-attention layer, each mask used (boundary of model-graph-input; the converter's model with this pattern evaluates).",
        "llama.cpp src/llama-model.cpp load_swa_pattern",
        || bytes(tiny_gemma_embedding(Some(&[true, false]))),
    ));
    v.push(case(
        "model_head_groups_kv_1",
        [A, A, A],
        &[],
        "The tiny llama with 4 attention heads and 1 key/value head (multi-query attention; attn_k and attn_v [16, 4]): the boundary of model-head-groups.",
        "llama.cpp src/llama-graph.cpp build_attn",
        || {
            tiny(|m| {
                set_kv(m, "llama.attention.head_count_kv", V::U32(1));
                for l in 0..TINY_LAYERS {
                    reshape(m, &format!("blk.{l}.attn_k.weight"), &[TINY_EMBD, 4]);
                    reshape(m, &format!("blk.{l}.attn_v.weight"), &[TINY_EMBD, 4]);
                }
            })
        },
    ));
    v.push(case(
        "model_head_count_kv_3_vocab_only",
        [A, A, A],
        &[],
        "llama.attention.head_count 4 with head_count_kv 3 in a vocabulary-only file: llama.cpp loads it with vocab_only and builds no graph (boundary of model-head-groups).",
        "llama.cpp src/llama-graph.cpp build_attn; llama_model_params.vocab_only",
        || with(&[("llama.attention.head_count_kv", V::U32(3))]),
    ));
    v.push(case(
        "model_head_size_rounded",
        [A, A, A],
        &["model-head-count"],
        "llama.embedding_length 18 with 4 heads and no attention.key_length (hyper-parameters only): llama.cpp rounds the head size 18/4 down to 4 (a warning).",
        "llama.cpp src/llama-model.cpp n_embd_head = n_embd / n_head",
        || with(&[("llama.embedding_length", V::U32(18))]),
    ));
    v.push(case(
        "model_rope_scaling_unknown",
        [R, A, A],
        &["model-rope"],
        "llama.rope.scaling.type = `bogus`: llama.cpp aborts (GGML_ASSERT) on a scaling type it does not know.",
        "llama.cpp src/llama-model.cpp LLAMA_ROPE_SCALING_TYPES",
        || with(&[("llama.rope.scaling.type", V::str("bogus"))]),
    ));
    v.push(case(
        "model_rope_scaling_yarn",
        [A, A, A],
        &[],
        "llama.rope.scaling.type = `yarn` and llama.rope.dimension_count 4 (the head size) (boundary of model-rope).",
        "llama.cpp src/llama-model.cpp LLAMA_ROPE_SCALING_TYPES",
        || with(&[("llama.rope.scaling.type", V::str("yarn")), ("llama.rope.dimension_count", V::U32(4))]),
    ));
    v.push(case(
        "model_rope_dimension_half",
        [R, A, A],
        &["model-rope"],
        "llama.rope.dimension_count 2 with a head size of 4: llama.cpp refuses llama models unless they are equal (invalid n_rot).",
        "llama.cpp src/llama-model.cpp load_hparams",
        || with(&[("llama.rope.dimension_count", V::U32(2))]),
    ));
    v.push(case(
        "model_expert_used_missing",
        [R, A, A],
        &["model-expert-count"],
        "llama.expert_count 4 without expert_used_count: llama.cpp asserts at least one used expert.",
        "llama.cpp src/llama-model.cpp load_hparams",
        || with(&[("llama.expert_count", V::U32(4))]),
    ));
    v.push(case(
        "model_imatrix_without_architecture",
        [A, R, A],
        &[],
        "An importance matrix as llama-imatrix writes it: general.type = imatrix, imatrix.* keys, `NAME.in_sum2` / `NAME.counts` tensors and no general.architecture. Not a model: imatrix-architecture-missing, allowed by strict, an error under the spec profile.",
        "llama.cpp tools/imatrix/imatrix.cpp (save_imatrix)",
        || bytes(imatrix(None)),
    )
    .also_under(Profile::Spec, "imatrix-architecture-missing"));
    v.push(case(
        "model_imatrix_with_architecture",
        [A, A, A],
        &[],
        "The boundary of imatrix-architecture-missing: an importance matrix that names the architecture it was computed for is valid under every profile.",
        "llama.cpp tools/imatrix/imatrix.cpp (save_imatrix)",
        || bytes(imatrix(Some("llama"))),
    ));
    v.push(case(
        "model_vocab_only",
        [A, A, A],
        &["model-not-checked"],
        "A vocabulary-only llama file (hyper-parameters and tokenizer, no tensors), like llama.cpp's models/ggml-vocab-*.gguf: tensor rules do not apply, and the report says so.",
        "llama.cpp models/ggml-vocab-*.gguf; llama_model_params.vocab_only",
        || bytes(tiny_llama_hparams()),
    ));
    v.push(case(
        "metadata_key_type_tags",
        [A, A, A],
        &["metadata-key-type"],
        "general.tags as a string instead of array[string]: llama.cpp does not read it (a warning).",
        "gguf.md general.tags",
        || {
            let mut m = base();
            m.kv("general.tags", V::str("text-generation"));
            bytes(m)
        },
    ));
    v.push(case(
        "metadata_key_type_count_u64",
        [A, A, A],
        &["metadata-key-type"],
        "general.base_model.count as u64 instead of u32: llama.cpp does not read it (a warning; `fix` writes it as u32).",
        "gguf.md general.base_model.count",
        || {
            let mut m = base();
            m.kv("general.base_model.count", V::U64(1));
            bytes(m)
        },
    ));
    v.push(case(
        "metadata_key_type_tags_array",
        [A, A, A],
        &[],
        "general.tags as array[string] (boundary of metadata-key-type).",
        "gguf.md general.tags",
        || {
            let mut m = base();
            m.kv("general.tags", array(T::String, vec![V::str("text-generation")]));
            bytes(m)
        },
    ));
    v.push(case(
        "standard_key_scores_u8",
        [R, A, A],
        &["standard-key-type"],
        "tokenizer.ggml.scores as array[u8]: llama.cpp reads f32 or i32 only (an out-of-bounds read before PR #26690).",
        "llama.cpp src/llama-vocab.cpp load; PR #26690",
        || {
            tiny(|m| {
                set_kv(m, "tokenizer.ggml.scores", array(T::U8, (0..TINY_VOCAB).map(|i| V::U8(i as u8)).collect()))
            })
        },
    ));
    v.push(case(
        "standard_key_scores_i32",
        [A, A, A],
        &[],
        "tokenizer.ggml.scores as array[i32], which llama.cpp also reads (boundary of standard-key-type).",
        "llama.cpp src/llama-vocab.cpp load",
        || {
            tiny(|m| {
                set_kv(
                    m,
                    "tokenizer.ggml.scores",
                    array(T::I32, (0..TINY_VOCAB).map(|i| V::I32(-(i as i32))).collect()),
                )
            })
        },
    ));
    v.push(case(
        "standard_key_bos_i32",
        [R, A, A],
        &["standard-key-type"],
        "tokenizer.ggml.bos_token_id typed i32: llama.cpp reads special ids as u32 only.",
        "llama.cpp src/llama-vocab.cpp load (get_key uint32_t)",
        || tiny(|m| set_kv(m, "tokenizer.ggml.bos_token_id", V::I32(1))),
    ));
    v.push(case(
        "standard_key_block_count_f32",
        [R, A, A],
        &["standard-key-type"],
        "llama.block_count typed f32 on the tiny llama.",
        "llama.cpp src/llama-model-loader.cpp GKV::get_kv",
        || tiny(|m| set_kv(m, "llama.block_count", V::F32(2.0))),
    ));
    v.push(case(
        "tokenizer_model_unknown",
        [R, A, A],
        &["tokenizer-model-unknown"],
        "tokenizer.ggml.model = `sentencepiece`, a name llama.cpp does not know.",
        "llama.cpp src/llama-vocab.cpp load (unknown tokenizer)",
        || tiny(|m| set_kv(m, "tokenizer.ggml.model", V::str("sentencepiece"))),
    ));
    v.push(case(
        "tokenizer_bpe_complete",
        [A, A, A],
        &[],
        "A gpt2 (BPE) vocabulary with merges and the pre-tokenizer `qwen2` (boundary of the BPE rules).",
        "llama.cpp src/llama-vocab.cpp load",
        || bpe(Some("qwen2"), true),
    ));
    v.push(case(
        "tokenizer_bpe_no_pre",
        [A, A, A],
        &["tokenizer-pre-missing"],
        "A gpt2 vocabulary without tokenizer.ggml.pre: llama.cpp loads it with the `default` pre-tokenizer and warns that generation quality will be degraded (a warning under strict, naming `edit --pre-tokenizer`; its boundary is tokenizer_bpe_complete).",
        "llama.cpp src/llama-vocab.cpp load (missing pre-tokenizer type)",
        || bpe(None, true),
    ));
    v.push(case(
        "tokenizer_pre_unknown",
        [R, A, A],
        &["tokenizer-pre-unknown"],
        "A gpt2 vocabulary with tokenizer.ggml.pre = `bogus`.",
        "llama.cpp src/llama-vocab.cpp load (unknown pre-tokenizer type)",
        || bpe(Some("bogus"), true),
    ));
    v.push(case(
        "tokenizer_merges_missing",
        [R, A, A],
        &["tokenizer-merges-missing"],
        "A gpt2 vocabulary without tokenizer.ggml.merges.",
        "llama.cpp src/llama-vocab.cpp load (cannot find tokenizer merges)",
        || bpe(Some("qwen2"), false),
    ));
    v.push(case(
        "tokenizer_merges_exempt",
        [A, A, A],
        &[],
        "A gpt2 vocabulary without merges whose pre-tokenizer is `kimi-k2`, which llama.cpp exempts (boundary of tokenizer-merges-missing).",
        "llama.cpp src/llama-vocab.cpp load (is_kimi_k2)",
        || bpe(Some("kimi-k2"), false),
    ));
    v.push(case(
        "tokenizer_vocab_missing",
        [R, A, A],
        &["tokenizer-vocab-missing"],
        "The tiny llama without any tokenizer key: llama.cpp loads a vocabulary for every model and refuses it.",
        "llama.cpp src/llama-vocab.cpp load",
        || {
            tiny(|m| {
                m.kvs.retain(|(k, _)| !k.starts_with(b"tokenizer."));
            })
        },
    ));
    v.push(case(
        "tokenizer_none_with_vocab_size",
        [A, A, A],
        &[],
        "The tiny llama with tokenizer.ggml.model `none`, no tokens and llama.vocab_size 264 (boundary of tokenizer-vocab-missing: token_embd is sized by vocab_size).",
        "llama.cpp src/llama-vocab.cpp load (no_vocab)",
        || {
            tiny(|m| {
                m.kvs.retain(|(k, _)| !k.starts_with(b"tokenizer."));
                m.kv("tokenizer.ggml.model", V::str("none"));
                m.kv("llama.vocab_size", V::U32(TINY_VOCAB as u32));
            })
        },
    ));
    v.push(case(
        "tokenizer_name_quirk_phi3",
        [R, A, A],
        &["tokenizer-name-quirk"],
        "The tiny llama named `Phi-3 mini`: llama.cpp then looks up `<|endoftext|>` by name, which this vocabulary lacks, and refuses the file.",
        "llama.cpp src/llama-vocab.cpp load (_set_token_attr, token_to_id.at)",
        || tiny(|m| {
            m.kv("general.name", V::str("Phi-3 mini"));
        }),
    ));
    v.push(case(
        "tokenizer_name_quirk_satisfied",
        [A, A, A],
        &[],
        "A vocabulary with `</s>`, `<unk>`, `<s>` and `<|endoftext|>` under general.name `phi3` (boundary of tokenizer-name-quirk).",
        "llama.cpp src/llama-vocab.cpp load",
        || {
            let mut m = base();
            m.kv("general.name", V::str("phi3"));
            m.kv("tokenizer.ggml.model", V::str("llama"));
            let t = ["<unk>", "<s>", "</s>", "<|endoftext|>"].map(String::from).into_iter().chain(byte_tokens());
            m.kv("tokenizer.ggml.tokens", array(T::String, t.map(|t| V::str(&t)).collect()));
            bytes(m)
        },
    ));
    v.push(case(
        "tokenizer_duplicate_token",
        [R, A, A],
        &["tokenizer-duplicate-token"],
        "Two tokens with the same text `ab`: llama.cpp maps text to id and aborts (GGML_ASSERT) when the map is smaller than the vocabulary.",
        "llama.cpp src/llama-vocab.cpp load",
        || vocab(&[b"<unk>", b"ab", b"ab"], &[2, 1, 1]),
    ));
    v.push(case(
        "tokenizer_empty_token_renamed_collides",
        [R, A, A],
        &["tokenizer-duplicate-token"],
        "An empty token 1, which llama.cpp renames `[EMPTY_1]`, beside a token spelled `[EMPTY_1]`.",
        "llama.cpp src/llama-vocab.cpp load (empty token renamed)",
        || vocab(&[b"<unk>", b"", b"[EMPTY_1]"], &[2, 1, 1]),
    ));
    v.push(case(
        "tokenizer_tokens_differ_in_case",
        [A, A, A],
        &[],
        "Tokens `ab`, `Ab` and `AB`: distinct texts (boundary of tokenizer-duplicate-token).",
        "llama.cpp src/llama-vocab.cpp load",
        || vocab(&[b"<unk>", b"ab", b"Ab", b"AB"], &[2, 1, 1, 1]),
    ));
}

/// An importance matrix as llama-imatrix writes it (general.type = imatrix,
/// imatrix.* keys, `NAME.in_sum2` / `NAME.counts` tensors), with an
/// architecture when one is given.
fn imatrix(architecture: Option<&str>) -> Model {
    let mut m = Model::new();
    if let Some(a) = architecture {
        m.kv("general.architecture", V::str(a));
    }
    m.kv("general.type", V::str("imatrix"));
    m.kv("imatrix.datasets", array(T::String, vec![V::str("wiki.train.raw")]));
    m.kv("imatrix.chunk_count", V::U32(10));
    m.kv("imatrix.chunk_size", V::U32(512));
    m.tensor(f32_tensor("blk.0.attn_q.weight.in_sum2", &[16, 1]));
    m.tensor(f32_tensor("blk.0.attn_q.weight.counts", &[1, 1]));
    m
}
