//! Small helpers for writing cases: a valid base file and byte patching.

use gguf_validate_core::types::{GgmlType, ValueType};
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};

pub use gguf_validate_core::write::{GgufModel as Model, OwnedValue as V};

/// A valid little-endian v3 file: `general.architecture = "plain"` (an architecture llama.cpp does not know, so model rules report "not checked") and one
/// F32 tensor `t` of 8 elements. 160 bytes: header 24, key/value 45,
/// tensor info 33, padding to 128, data 32.
pub fn base() -> GgufModel {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    m.tensor(f32_tensor("t", &[8]));
    m
}

/// A model with only `general.architecture` (no tensors).
pub fn base_no_tensors() -> GgufModel {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    m
}

/// An F32 tensor with data 0.0, 1.0, 2.0, ...
pub fn f32_tensor(name: &str, dims: &[u64]) -> OwnedTensor {
    let n: u64 = dims.iter().product();
    let data = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    OwnedTensor { name: name.as_bytes().to_vec(), dims: dims.to_vec(), type_id: GgmlType::F32.id(), offset: 0, data }
}

/// A tensor of any live type with zeroed data (shape must be whole blocks).
pub fn zero_tensor(name: &str, dims: &[u64], ty: GgmlType) -> OwnedTensor {
    OwnedTensor::zeroed(name, dims, ty).unwrap_or_else(|| OwnedTensor {
        name: name.as_bytes().to_vec(),
        dims: dims.to_vec(),
        type_id: ty.id(),
        offset: 0,
        data: Vec::new(),
    })
}

/// A tensor info with no data (for shapes that cannot be laid out).
pub fn info_only(name: &str, dims: &[u64], type_id: u32, offset: u64) -> OwnedTensor {
    OwnedTensor { name: name.as_bytes().to_vec(), dims: dims.to_vec(), type_id, offset, data: Vec::new() }
}

/// Canonical layout, then bytes.
pub fn bytes(mut m: GgufModel) -> Vec<u8> {
    if m.canonical().is_none() {
        return m.to_bytes();
    }
    m.to_bytes()
}

/// Bytes without re-laying out the offsets set by the case.
pub fn raw(m: &GgufModel) -> Vec<u8> {
    m.to_bytes()
}

/// An array value of one element type.
pub fn array(t: ValueType, items: Vec<OwnedValue>) -> OwnedValue {
    OwnedValue::Array(t, items)
}

/// Overwrites bytes at `at` (little-endian u32/u64 helpers below).
pub fn patch(mut b: Vec<u8>, at: usize, with: &[u8]) -> Vec<u8> {
    if let Some(dst) = b.get_mut(at..at + with.len()) {
        dst.copy_from_slice(with);
    }
    b
}

/// Offset of the first occurrence of `needle`.
pub fn find(b: &[u8], needle: &[u8]) -> usize {
    b.windows(needle.len()).position(|w| w == needle).unwrap_or(0)
}

/// Dimensions of [`tiny_llama`]: embedding 16, 4 heads of 4 (2 key/value
/// heads), feed-forward 32, 2 layers, 8 tokens.
pub const TINY_EMBD: u64 = 16;
/// Feed-forward length of [`tiny_llama`].
pub const TINY_FF: u64 = 32;
/// Layers of [`tiny_llama`].
pub const TINY_LAYERS: u64 = 2;

/// The tokens of [`tiny_llama`]'s vocabulary before its byte tokens.
pub const TINY_TOKENS: [&str; 8] = ["<unk>", "<s>", "</s>", "\u{2581}a", "\u{2581}b", "\u{2581}c", "d", "e"];

/// The tiny vocabulary's size: [`TINY_TOKENS`] then the 256 byte tokens.
pub const TINY_VOCAB: u64 = TINY_TOKENS.len() as u64 + 256;

/// The 256 byte tokens `<0x00>`..`<0xFF>` a SentencePiece vocabulary
/// holds so that llama.cpp can spell any text (tokenizer-byte-fallback).
pub fn byte_tokens() -> impl Iterator<Item = String> {
    (0..=255u8).map(|b| format!("<0x{b:02X}>"))
}

/// A vocabulary llama.cpp accepts: SPM (`llama`) tokens with scores and
/// types (unknown, control, control, normal, then the byte tokens).
pub fn tiny_vocab(m: &mut GgufModel) {
    m.kv("tokenizer.ggml.model", OwnedValue::str("llama"));
    let tokens = TINY_TOKENS.iter().map(|t| t.to_string()).chain(byte_tokens());
    m.kv("tokenizer.ggml.tokens", OwnedValue::Array(ValueType::String, tokens.map(|t| OwnedValue::str(&t)).collect()));
    m.kv(
        "tokenizer.ggml.scores",
        OwnedValue::Array(ValueType::F32, (0..TINY_VOCAB).map(|i| OwnedValue::F32(-(i as f32))).collect()),
    );
    let types = [2, 3, 3, 1, 1, 1, 1, 1].into_iter().chain([6; 256]);
    m.kv("tokenizer.ggml.token_type", OwnedValue::Array(ValueType::I32, types.map(OwnedValue::I32).collect()));
    m.kv("tokenizer.ggml.bos_token_id", OwnedValue::U32(1));
    m.kv("tokenizer.ggml.eos_token_id", OwnedValue::U32(2));
}

/// The tiny models' sizes (`ARCH.` keys: context 64, [`TINY_EMBD`],
/// [`TINY_LAYERS`], [`TINY_FF`]), then `rest`, in that order.
fn with_tiny_sizes(rest: &[(&'static str, OwnedValue)]) -> Vec<(&'static str, OwnedValue)> {
    let sizes = [
        ("context_length", OwnedValue::U32(64)),
        ("embedding_length", OwnedValue::U32(TINY_EMBD as u32)),
        ("block_count", OwnedValue::U32(TINY_LAYERS as u32)),
        ("feed_forward_length", OwnedValue::U32(TINY_FF as u32)),
    ];
    sizes.into_iter().chain(rest.iter().cloned()).collect()
}

/// A model of architecture `arch` with these `ARCH.KEY` pairs, in order
/// (after `general.architecture`).
fn arch_model(arch: &str, kvs: &[(&str, OwnedValue)]) -> GgufModel {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str(arch));
    for (k, v) in kvs {
        m.kv(&format!("{arch}.{k}"), v.clone());
    }
    m
}

/// The hyper-parameters of [`tiny_llama`] without any tensor: a
/// vocabulary-only file of architecture `llama` (hyper-parameter rules
/// apply, tensor rules do not).
pub fn tiny_llama_hparams() -> GgufModel {
    let mut m = arch_model(
        "llama",
        &with_tiny_sizes(&[
            ("attention.head_count", OwnedValue::U32(4)),
            ("attention.head_count_kv", OwnedValue::U32(2)),
            ("attention.layer_norm_rms_epsilon", OwnedValue::F32(1e-5)),
        ]),
    );
    tiny_vocab(&mut m);
    m
}

/// A complete two-layer llama model llama.cpp loads (the same shape as
/// `corpus/models/llama__complete.gguf`, which libllama loads): every
/// tensor its loader requires, F32, with the shapes it computes.
pub fn tiny_llama() -> GgufModel {
    let mut m = tiny_llama_hparams();
    let (e, f, v) = (TINY_EMBD, TINY_FF, TINY_VOCAB);
    let kv = 8; // 2 key/value heads of 4
    m.tensor(f32_tensor("token_embd.weight", &[e, v]));
    m.tensor(f32_tensor("output_norm.weight", &[e]));
    for l in 0..TINY_LAYERS {
        let t = |n: &str| format!("blk.{l}.{n}.weight");
        m.tensor(f32_tensor(&t("attn_norm"), &[e]));
        m.tensor(f32_tensor(&t("attn_q"), &[e, e]));
        m.tensor(f32_tensor(&t("attn_k"), &[e, kv]));
        m.tensor(f32_tensor(&t("attn_v"), &[e, kv]));
        m.tensor(f32_tensor(&t("attn_output"), &[e, e]));
        m.tensor(f32_tensor(&t("ffn_norm"), &[e]));
        m.tensor(f32_tensor(&t("ffn_gate"), &[e, f]));
        m.tensor(f32_tensor(&t("ffn_up"), &[e, f]));
        m.tensor(f32_tensor(&t("ffn_down"), &[f, e]));
    }
    m
}

/// A complete two-layer dots1 model (llama.cpp's `llama_model_dots1`): the
/// tiny llama's vocabulary and sizes, 4 key/value heads (its loader sizes
/// K and V by `head_count`), a dense first layer and an expert layer of 4
/// experts (2 used, expert feed-forward 8) with one shared expert. The
/// gating function, read optionally and never defaulted, is `gating`.
pub fn tiny_dots1(gating: Option<u32>) -> GgufModel {
    let (e, f, v, x, ff_exp) = (TINY_EMBD, TINY_FF, TINY_VOCAB, 4u64, 8u64);
    let mut m = arch_model(
        "dots1",
        &with_tiny_sizes(&[
            ("attention.head_count", OwnedValue::U32(4)),
            ("attention.head_count_kv", OwnedValue::U32(4)),
            ("attention.layer_norm_rms_epsilon", OwnedValue::F32(1e-5)),
            ("leading_dense_block_count", OwnedValue::U32(1)),
            ("expert_count", OwnedValue::U32(x as u32)),
            ("expert_used_count", OwnedValue::U32(2)),
            ("expert_feed_forward_length", OwnedValue::U32(ff_exp as u32)),
            ("expert_shared_count", OwnedValue::U32(1)),
        ]),
    );
    if let Some(g) = gating {
        m.kv("dots1.expert_gating_func", OwnedValue::U32(g));
    }
    tiny_vocab(&mut m);
    m.tensor(f32_tensor("token_embd.weight", &[e, v]));
    m.tensor(f32_tensor("output_norm.weight", &[e]));
    m.tensor(f32_tensor("output.weight", &[e, v]));
    for l in 0..TINY_LAYERS {
        let t = |n: &str| format!("blk.{l}.{n}.weight");
        m.tensor(f32_tensor(&t("attn_norm"), &[e]));
        m.tensor(f32_tensor(&t("attn_q"), &[e, e]));
        m.tensor(f32_tensor(&t("attn_k"), &[e, e]));
        m.tensor(f32_tensor(&t("attn_v"), &[e, e]));
        m.tensor(f32_tensor(&t("attn_output"), &[e, e]));
        m.tensor(f32_tensor(&t("attn_q_norm"), &[e / 4]));
        m.tensor(f32_tensor(&t("attn_k_norm"), &[e / 4]));
        m.tensor(f32_tensor(&t("ffn_norm"), &[e]));
        if l == 0 {
            m.tensor(f32_tensor(&t("ffn_gate"), &[e, f]));
            m.tensor(f32_tensor(&t("ffn_up"), &[e, f]));
            m.tensor(f32_tensor(&t("ffn_down"), &[f, e]));
        } else {
            m.tensor(f32_tensor(&t("ffn_gate_inp"), &[e, x]));
            m.tensor(f32_tensor(&t("ffn_gate_exps"), &[e, ff_exp, x]));
            m.tensor(f32_tensor(&t("ffn_up_exps"), &[e, ff_exp, x]));
            m.tensor(f32_tensor(&t("ffn_down_exps"), &[ff_exp, e, x]));
            m.tensor(f32_tensor(&t("ffn_gate_shexp"), &[e, ff_exp]));
            m.tensor(f32_tensor(&t("ffn_up_shexp"), &[e, ff_exp]));
            m.tensor(f32_tensor(&t("ffn_down_shexp"), &[ff_exp, e]));
        }
    }
    m
}

/// A complete one-layer chameleon model with no tokenizer
/// (`tokenizer.ggml.model` `none`, `chameleon.vocab_size` = `n_vocab`):
/// n_embd 32, 4 heads of 8, n_ff 32; `token_embd` is Q4_0 (zeros) so a
/// vocabulary of thousands stays small, and stands in for the absent
/// `output`.
pub fn tiny_chameleon(n_vocab: u64) -> GgufModel {
    let e = 32u64;
    let mut m = arch_model(
        "chameleon",
        &[
            ("context_length", OwnedValue::U32(64)),
            ("embedding_length", OwnedValue::U32(e as u32)),
            ("block_count", OwnedValue::U32(1)),
            ("feed_forward_length", OwnedValue::U32(e as u32)),
            ("attention.head_count", OwnedValue::U32(4)),
            ("attention.head_count_kv", OwnedValue::U32(4)),
            ("attention.layer_norm_rms_epsilon", OwnedValue::F32(1e-5)),
            ("vocab_size", OwnedValue::U32(u32::try_from(n_vocab).unwrap_or(u32::MAX))),
        ],
    );
    m.kv("general.quantization_version", OwnedValue::U32(2));
    m.kv("tokenizer.ggml.model", OwnedValue::str("none"));
    m.tensor(zero_tensor("token_embd.weight", &[e, n_vocab], GgmlType::Q4_0));
    m.tensor(f32_tensor("output_norm.weight", &[e]));
    let t = |n: &str| format!("blk.0.{n}.weight");
    m.tensor(f32_tensor(&t("attn_norm"), &[e]));
    m.tensor(f32_tensor(&t("attn_q_norm"), &[8, 4]));
    m.tensor(f32_tensor(&t("attn_k_norm"), &[8, 4]));
    for n in ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"] {
        m.tensor(f32_tensor(&t(n), &[e, e]));
    }
    m.tensor(f32_tensor(&t("ffn_norm"), &[e]));
    m
}

/// A complete two-layer gemma-embedding model (an encoder: attention
/// without a KV cache, sliding-window layers set by a pattern of 6 unless
/// `pattern` gives `attention.sliding_window_pattern`): the tiny llama's
/// vocabulary and sizes, head size 4.
pub fn tiny_gemma_embedding(pattern: Option<&[bool]>) -> GgufModel {
    let (e, f, v, kv) = (TINY_EMBD, TINY_FF, TINY_VOCAB, 8u64);
    let mut m = arch_model(
        "gemma-embedding",
        &with_tiny_sizes(&[
            ("attention.head_count", OwnedValue::U32(4)),
            ("attention.head_count_kv", OwnedValue::U32(2)),
            ("attention.layer_norm_rms_epsilon", OwnedValue::F32(1e-6)),
            ("attention.sliding_window", OwnedValue::U32(32)),
        ]),
    );
    if let Some(p) = pattern {
        m.kv(
            "gemma-embedding.attention.sliding_window_pattern",
            OwnedValue::Array(ValueType::Bool, p.iter().map(|b| OwnedValue::Bool(u8::from(*b))).collect()),
        );
    }
    tiny_vocab(&mut m);
    m.tensor(f32_tensor("token_embd.weight", &[e, v]));
    m.tensor(f32_tensor("output_norm.weight", &[e]));
    for l in 0..TINY_LAYERS {
        let t = |n: &str| format!("blk.{l}.{n}.weight");
        for n in ["attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"] {
            m.tensor(f32_tensor(&t(n), &[e]));
        }
        m.tensor(f32_tensor(&t("attn_q_norm"), &[4]));
        m.tensor(f32_tensor(&t("attn_k_norm"), &[4]));
        m.tensor(f32_tensor(&t("attn_q"), &[e, e]));
        m.tensor(f32_tensor(&t("attn_k"), &[e, kv]));
        m.tensor(f32_tensor(&t("attn_v"), &[e, kv]));
        m.tensor(f32_tensor(&t("attn_output"), &[e, e]));
        m.tensor(f32_tensor(&t("ffn_gate"), &[e, f]));
        m.tensor(f32_tensor(&t("ffn_up"), &[e, f]));
        m.tensor(f32_tensor(&t("ffn_down"), &[f, e]));
    }
    m
}

/// Replaces the value of `key` (which must be present) in place.
pub fn set_kv(m: &mut GgufModel, key: &str, value: OwnedValue) {
    if let Some(slot) = m.kvs.iter_mut().find(|(k, _)| k == key.as_bytes()) {
        slot.1 = value;
    } else {
        m.kv(key, value);
    }
}

/// Removes `key`.
pub fn drop_kv(m: &mut GgufModel, key: &str) {
    m.kvs.retain(|(k, _)| k != key.as_bytes());
}

/// Removes the tensor `name`.
pub fn drop_tensor(m: &mut GgufModel, name: &str) {
    m.tensors.retain(|t| t.name != name.as_bytes());
}
