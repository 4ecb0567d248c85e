//! Rules on the vocabulary that llama.cpp's tokenizer assumes: token types
//! from its enum, and byte tokens spelled `<0xHH>`.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{Array, ByteOrder, GgufFile, KeyValue};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

use super::kv::kv_path;

/// Runs the `tokenizer-*` rules.
pub(crate) fn check(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    let types = file.get("tokenizer.ggml.token_type").and_then(|kv| Some((kv, *kv.value.as_array()?)));
    let types = types.filter(|(_, a)| a.elem_type == ValueType::I32);
    if let Some((kv, a)) = types {
        check_token_types(kv, &a, sink);
    }
    if let Some(kv) = file.get("tokenizer.ggml.tokens")
        && let Some(tokens) = kv.value.as_array()
    {
        check_byte_tokens(kv, tokens, types.map(|(_, a)| a), sink);
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
