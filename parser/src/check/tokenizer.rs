//! Rules on the vocabulary that llama.cpp's tokenizer assumes: a tokenizer
//! model and pre-tokenizer it knows, merges for BPE, token types from its
//! enum, byte tokens spelled `<0xHH>`, distinct token texts.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{Array, ByteOrder, GgufFile, KeyValue};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

use std::collections::HashMap;

use super::kv::kv_path;
use super::llama_arch_table::{BPE_PRE_TOKENIZERS, MERGES_EXEMPT_PRE, MERGES_REQUIRED, TOKENIZER_MODELS};

/// Runs the `tokenizer-*` rules. `needs_vocab`: the file is a model of an
/// architecture llama.cpp knows (with tensors), whose loader reads a
/// vocabulary.
pub(crate) fn check(file: &GgufFile<'_>, needs_vocab: bool, sink: &mut Sink<'_>) {
    check_model(file, needs_vocab, sink);
    let types = file.get("tokenizer.ggml.token_type").and_then(|kv| Some((kv, *kv.value.as_array()?)));
    let types = types.filter(|(_, a)| a.elem_type == ValueType::I32);
    if let Some((kv, a)) = types {
        check_token_types(kv, &a, sink);
    }
    if let Some(kv) = file.get("tokenizer.ggml.tokens")
        && let Some(tokens) = kv.value.as_array()
    {
        check_byte_tokens(kv, tokens, types.map(|(_, a)| a), sink);
        check_duplicates(kv, tokens, sink);
    }
}

fn check_model(file: &GgufFile<'_>, needs_vocab: bool, sink: &mut Sink<'_>) {
    let model_kv = file.get("tokenizer.ggml.model");
    let model = model_kv.and_then(|kv| kv.value.as_string());
    let Some(model_kv) = model_kv else {
        if needs_vocab {
            sink.emit(
                RuleId::TokenizerVocabMissing,
                super::keys::KV_SECTION,
                || "kv".into(),
                || {
                    "tokenizer.ggml.model is missing; llama.cpp reads a vocabulary for every model and refuses the file"
                        .into()
                },
            );
        }
        return;
    };
    // A value that is not a string is standard-key-type's.
    let Some(model) = model else { return };
    if needs_vocab && !matches!(model.bytes, b"none" | b"no_vocab") && file.get("tokenizer.ggml.tokens").is_none() {
        sink.emit(RuleId::TokenizerVocabMissing, model_kv.value_offset(), || kv_path(model_kv), || {
            format!("tokenizer.ggml.model is `{}` but tokenizer.ggml.tokens is missing; llama.cpp refuses the file (cannot find tokenizer vocab)", model.display())
        });
    }
    check_name_quirk(file, sink);
    if !TOKENIZER_MODELS.iter().any(|m| m.as_bytes() == model.bytes) {
        sink.emit(
            RuleId::TokenizerModelUnknown,
            model_kv.value_offset(),
            || kv_path(model_kv),
            || {
                format!(
                    "tokenizer.ggml.model `{}` is not one llama.cpp knows ({}); it refuses the file",
                    model.display(),
                    TOKENIZER_MODELS.join(", ")
                )
            },
        );
        return;
    }
    let is_bpe = MERGES_REQUIRED.iter().any(|m| m.as_bytes() == model.bytes);
    if !is_bpe {
        return;
    }
    let pre_kv = file.get("tokenizer.ggml.pre");
    let pre = pre_kv.and_then(|kv| kv.value.as_string());
    if let (Some(kv), Some(pre)) = (pre_kv, pre)
        && !pre.bytes.is_empty()
        && !BPE_PRE_TOKENIZERS.iter().any(|p| p.as_bytes() == pre.bytes)
    {
        sink.emit(RuleId::TokenizerPreUnknown, kv.value_offset(), || kv_path(kv), || {
            format!("tokenizer.ggml.pre `{}` is not a pre-tokenizer llama.cpp knows for BPE vocabularies; it refuses the file", pre.display())
        });
    }
    let exempt = pre.is_some_and(|p| MERGES_EXEMPT_PRE.iter().any(|e| e.as_bytes() == p.bytes));
    if file.get("tokenizer.ggml.merges").is_none() && !exempt {
        sink.emit(RuleId::TokenizerMergesMissing, model_kv.value_offset(), || kv_path(model_kv), || {
            format!("tokenizer.ggml.model `{}` is a BPE vocabulary but tokenizer.ggml.merges is missing; llama.cpp refuses the file", model.display())
        });
    }
}

/// Token texts must be distinct: llama.cpp maps text to id and aborts
/// (GGML_ASSERT) when the map has fewer entries than the vocabulary. An
/// empty text counts as `[EMPTY_i]`, as llama.cpp renames it.
fn check_duplicates(kv: &KeyValue<'_>, tokens: &Array<'_>, sink: &mut Sink<'_>) {
    if tokens.elem_type != ValueType::String {
        return;
    }
    let mut seen: HashMap<&[u8], u64> = HashMap::with_capacity(usize::try_from(tokens.len).unwrap_or(0).min(1 << 20));
    let mut renamed: Vec<(String, u64)> = Vec::new();
    for (i, s) in tokens.strings() {
        if s.bytes.is_empty() {
            renamed.push((format!("[EMPTY_{i}]"), i));
            continue;
        }
        if let Some(first) = seen.insert(s.bytes, i) {
            sink.emit(RuleId::TokenizerDuplicateToken, s.offset, || format!("{}[{i}]", kv_path(kv)), || {
                format!("token {i} `{}` repeats token {first}; llama.cpp aborts (GGML_ASSERT: every token text maps to one id)", s.display())
            });
        }
    }
    for (text, i) in &renamed {
        if let Some(first) = seen.get(text.as_bytes()) {
            sink.emit(RuleId::TokenizerDuplicateToken, kv.value_offset(), || format!("{}[{i}]", kv_path(kv)), || {
                format!("token {i} is empty, which llama.cpp renames `{text}`, the text of token {first}; llama.cpp aborts")
            });
        }
    }
}

/// One i32 in the file's byte order.
fn i32_of(b: [u8; 4], order: ByteOrder) -> i32 {
    match order {
        ByteOrder::LittleEndian => i32::from_le_bytes(b),
        ByteOrder::BigEndian => i32::from_be_bytes(b),
    }
}

/// The i32 elements of an array, decoded in place.
fn i32s<'a>(a: &Array<'a>) -> impl Iterator<Item = i32> + 'a {
    let order = a.order;
    a.data.chunks_exact(4).map(move |c| i32_of(c.try_into().unwrap_or([0; 4]), order))
}

fn check_token_types(kv: &KeyValue<'_>, a: &Array<'_>, sink: &mut Sink<'_>) {
    for (i, t) in (0u64..).zip(i32s(a)) {
        if !limits::LLAMA_TOKEN_TYPES.contains(&t) {
            let off = a.data_offset().saturating_add(i.saturating_mul(4));
            sink.emit_span(
                RuleId::TokenizerTokenType,
                off,
                Some(4),
                || format!("{}[{i}]", kv_path(kv)),
                || format!("token {i} has type {t}; llama.cpp's token types are 0..=6"),
            );
        }
    }
}

/// `<0xHH>` with two hex digits.
fn is_byte_token(text: &[u8]) -> bool {
    matches!(text, [b'<', b'0', b'x', h, l, b'>'] if h.is_ascii_hexdigit() && l.is_ascii_hexdigit())
}

/// Looks like a byte token (six bytes, `<0x` .. `>`) whatever is inside.
fn has_byte_token_shape(text: &[u8]) -> bool {
    matches!(text, [b'<', b'0', b'x', _, _, b'>'])
}

fn check_byte_tokens(kv: &KeyValue<'_>, tokens: &Array<'_>, types: Option<Array<'_>>, sink: &mut Sink<'_>) {
    if tokens.elem_type != ValueType::String {
        return;
    }
    // Both kinds of finding start with `<0x`: only those tokens look up
    // their type (random access into the i32 array).
    let type_of = |i: u64| -> Option<i32> {
        let a = types.as_ref()?;
        let at = usize::try_from(i.checked_mul(4)?).ok()?;
        let b: [u8; 4] = a.data.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(i32_of(b, a.order))
    };
    for (i, s) in tokens.strings() {
        let text = s.bytes;
        if !text.starts_with(b"<0x") || is_byte_token(text) {
            continue;
        }
        let is_byte_type = type_of(i) == Some(limits::LLAMA_TOKEN_TYPE_BYTE);
        if is_byte_type || has_byte_token_shape(text) {
            sink.emit(
                RuleId::TokenizerByteToken,
                s.offset,
                || format!("{}[{i}]", kv_path(kv)),
                || format!("token {i} `{}` is not a byte token `<0xHH>`", s.display()),
            );
        }
    }
}

/// llama.cpp gives tokens of a model whose `general.name` contains `phi3`
/// or `phi-3` (lowercased) special attributes, looking up `</s>`, `<unk>`,
/// `<s>` and `<|endoftext|>` with `std::map::at`: a vocabulary without one
/// of them makes it refuse the file. (Its jina/nomic branch comes first.)
fn check_name_quirk(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    const NEEDED: [&[u8]; 4] = [b"</s>", b"<unk>", b"<s>", b"<|endoftext|>"];
    let Some(name_kv) = file.get("general.name") else { return };
    let Some(name) = name_kv.value.as_string() else { return };
    let lower = name.bytes.to_ascii_lowercase();
    let has = |needle: &[u8]| lower.windows(needle.len()).any(|w| w == needle);
    if !(has(b"phi3") || has(b"phi-3")) {
        return;
    }
    let text =
        |key: &str| file.get(key).and_then(|kv| kv.value.as_string()).map(|s| s.bytes.to_vec()).unwrap_or_default();
    let pre = text("tokenizer.ggml.pre");
    let arch = text("general.architecture");
    let contains = |hay: &[u8], n: &[u8]| !n.is_empty() && hay.windows(n.len()).any(|w| w == n);
    let jina_branch = [&b"jina-v2-de"[..], b"jina-v2-es", b"jina-v2-code"].iter().any(|n| contains(&pre, n))
        || [&b"nomic-bert-moe"[..], b"jina-bert-v3"].iter().any(|n| contains(&arch, n));
    if jina_branch {
        return;
    }
    let Some(tokens) = file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()) else { return };
    let mut found = [false; 4];
    for (_, s) in tokens.strings() {
        if let Some(i) = NEEDED.iter().position(|n| *n == s.bytes)
            && let Some(f) = found.get_mut(i)
        {
            *f = true;
        }
    }
    let missing: Vec<String> =
        NEEDED.iter().zip(found).filter(|(_, f)| !f).map(|(n, _)| String::from_utf8_lossy(n).into_owned()).collect();
    if !missing.is_empty() {
        sink.emit(RuleId::TokenizerNameQuirk, name_kv.value_offset(), || kv_path(name_kv), || {
            format!(
                "general.name `{}` contains `phi3`/`phi-3`, so llama.cpp looks up {} in the vocabulary, which lacks {}: it refuses the file",
                name.display(),
                NEEDED.iter().map(|n| format!("`{}`", String::from_utf8_lossy(n))).collect::<Vec<_>>().join(", "),
                missing.join(", ")
            )
        });
    }
}
