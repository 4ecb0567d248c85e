//! Rules on key/value pairs as such: key grammar and length, duplicate
//! keys, strings (UTF-8, length), bools, and arrays (nesting, length),
//! down to every element of nested arrays.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::fmt::Write;

use crate::limits;
use crate::parse::{Array, GgufFile, KeyValue, Str, Value};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

/// `kv[3] general.name`.
pub(crate) fn kv_path(kv: &KeyValue<'_>) -> String {
    format!("kv[{}] {}", kv.index, kv.key.display())
}

fn element_path(kv: &KeyValue<'_>, indices: &[u64]) -> String {
    let mut p = kv_path(kv);
    for i in indices {
        let _ = write!(p, "[{i}]");
    }
    p
}

/// Checks every pair as such: the key's grammar, duplicates, and each
/// value (strings, bools, arrays), recursively.
pub(crate) fn check_pairs(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    let duplicates = match file.key_index() {
        Some(index) => super::later_duplicates_packed(&index.candidates(), |i| file.kvs.key(i).unwrap_or_default()),
        None => {
            let keys: Vec<&[u8]> = (0..file.kvs.len()).map(|i| file.kvs.key(i).unwrap_or_default()).collect();
            super::later_duplicates(&keys, |k| k)
        }
    };
    let mut duplicates = duplicates.iter().peekable();
    // Keys and types first: a pair is decoded only when its key is not
    // well formed, repeats an earlier one, or its value has rules.
    for (i, key, value_type) in file.kvs.keys_and_types() {
        let key_ok = key.len() <= limits::MAX_KEY_LEN && key_well_formed(key);
        let duplicate = duplicates.next_if_eq(&&i).is_some();
        let value_rules = matches!(value_type, Some(ValueType::Bool | ValueType::String | ValueType::Array));
        if key_ok && !duplicate && !value_rules {
            continue;
        }
        let Some(kv) = file.kvs.get(i) else { continue };
        check_key(&kv, sink);
        if duplicate {
            sink.emit(
                RuleId::KeyDuplicate,
                kv.key.offset,
                || kv_path(&kv),
                || format!("key `{}` appears more than once; readers disagree on which value wins", kv.key.display()),
            );
        }
        check_value(&kv, &kv.value, kv.value_offset(), &mut Vec::new(), sink);
    }
}

/// Whether a key is well formed: non-empty segments of `[a-z0-9_]`
/// between dots, in one pass over its bytes (the common case of
/// [`check_key`], which then has only the length to check).
fn key_well_formed(key: &[u8]) -> bool {
    // Without a branch a byte: each byte's class from a table; a byte of
    // no class, or a dot after a dot (or first, or last), is a fault.
    const WORD: u8 = 1;
    const DOT: u8 = 2;
    const BAD: u8 = 4;
    // Evaluated by the compiler: an index out of range would not build.
    #[allow(clippy::indexing_slicing, clippy::cast_possible_truncation, clippy::arithmetic_side_effects)]
    const CLASS: [u8; 256] = {
        let mut t = [BAD; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' {
                t[b] = WORD;
            } else if c == b'.' {
                t[b] = DOT;
            }
            b += 1;
        }
        t
    };
    let (mut faults, mut prev) = (0u8, DOT);
    for b in key {
        let c = CLASS.get(usize::from(*b)).copied().unwrap_or(BAD);
        faults |= (c & BAD) | (c & prev & DOT);
        prev = c;
    }
    faults == 0 && prev == WORD
}

fn check_key(kv: &KeyValue<'_>, sink: &mut Sink<'_>) {
    let key = kv.key.bytes;
    let at = kv.key.offset;
    if key.len() <= limits::MAX_KEY_LEN && key_well_formed(key) {
        return;
    }
    if key.is_empty() {
        sink.emit(RuleId::KeyEmpty, at, || kv_path(kv), || "the key is empty".into());
        return;
    }
    if key.len() > limits::MAX_KEY_LEN {
        sink.emit(
            RuleId::KeyTooLong,
            at,
            || kv_path(kv),
            || format!("key is {} bytes; at most {} allowed", key.len(), limits::MAX_KEY_LEN),
        );
    }
    if let Some(p) = key.iter().position(|b| b.is_ascii_control()) {
        let off = kv.key.content_offset().saturating_add(u64::try_from(p).unwrap_or(0));
        let b = key.get(p).copied().unwrap_or(0);
        sink.emit_span(
            RuleId::KeyControl,
            off,
            Some(1),
            || kv_path(kv),
            || {
                let cut = crate::parse::quote_bytes(key.get(..p).unwrap_or_default());
                format!(
                    "key `{}` has byte 0x{b:02x} at position {p}; a C-string reader {}",
                    kv.key.display(),
                    if b == 0 { format!("sees the key `{cut}`") } else { "prints it raw".to_string() }
                )
            },
        );
    }
    if !key.is_ascii() {
        let bad = key.iter().position(|b| !b.is_ascii()).unwrap_or(0);
        let off = kv.key.content_offset().saturating_add(u64::try_from(bad).unwrap_or(0));
        sink.emit(
            RuleId::KeyAscii,
            off,
            || kv_path(kv),
            || format!("key `{}` has a non-ASCII byte at position {bad}", kv.key.display()),
        );
        return;
    }
    let segment_ok =
        |seg: &[u8]| !seg.is_empty() && seg.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_');
    if let Some(bad) = key.split(|b| *b == b'.').find(|seg| !segment_ok(seg)) {
        sink.emit(
            RuleId::KeyNaming,
            at,
            || kv_path(kv),
            || {
                if bad.is_empty() {
                    format!("key `{}` has an empty segment (leading, trailing or doubled `.`)", kv.key.display())
                } else {
                    format!("key segment `{}` is not lower_snake_case ([a-z0-9_]+)", crate::parse::quote_bytes(bad))
                }
            },
        );
    }
}

fn check_string(kv: &KeyValue<'_>, s: Str<'_>, indices: &[u64], sink: &mut Sink<'_>) {
    if u64::try_from(s.bytes.len()).unwrap_or(u64::MAX) > limits::MAX_STRING_LEN {
        sink.emit(
            RuleId::StringTooLong,
            s.offset,
            || element_path(kv, indices),
            || format!("string of {} bytes is longer than ggml's limit of 2^30", s.bytes.len()),
        );
    }
    if let Err(e) = std::str::from_utf8(s.bytes) {
        let off = s.content_offset().saturating_add(u64::try_from(e.valid_up_to()).unwrap_or(0));
        sink.emit(
            RuleId::StringUtf8,
            off,
            || element_path(kv, indices),
            || format!("string is not valid UTF-8 (invalid byte at position {}): \"{}\"", e.valid_up_to(), s.display()),
        );
    }
}

fn check_value(kv: &KeyValue<'_>, value: &Value<'_>, offset: u64, indices: &mut Vec<u64>, sink: &mut Sink<'_>) {
    match value {
        Value::Bool(b) if *b > 1 => {
            sink.emit(
                RuleId::BoolValue,
                offset,
                || element_path(kv, indices),
                || format!("bool byte is {b}; only 0 and 1 are valid"),
            );
        }
        Value::String(s) => check_string(kv, *s, indices, sink),
        Value::Array(a) => check_array(kv, a, indices, sink),
        _ => {}
    }
}

fn check_array(kv: &KeyValue<'_>, a: &Array<'_>, indices: &mut Vec<u64>, sink: &mut Sink<'_>) {
    if a.len > limits::MAX_ARRAY_LEN {
        sink.emit(
            RuleId::ArrayTooLong,
            a.offset,
            || element_path(kv, indices),
            || format!("array of {} elements is longer than ggml's limit of 2^30", a.len),
        );
    }
    match a.elem_type {
        ValueType::String => {
            let check_len = sink.enabled(RuleId::StringTooLong);
            let check_utf8 = sink.enabled(RuleId::StringUtf8);
            // Checked as they streamed past (their bytes may not be here).
            if !(check_len || check_utf8) || a.checked {
                return;
            }
            // No length field with a byte of 0x80 or above (as the parser
            // saw them) and none over the cap: the strings are valid exactly
            // when all their bytes, separators included, are.
            if a.plain_lengths && simdutf8::basic::from_utf8(a.data).is_ok() {
                return;
            }
            if strings_fast_ok(a) {
                return;
            }
            for (i, s) in a.strings() {
                // Fast path: the common all-valid case does one UTF-8 scan.
                let bad_len = check_len && u64::try_from(s.bytes.len()).unwrap_or(u64::MAX) > limits::MAX_STRING_LEN;
                let bad_utf8 = check_utf8 && std::str::from_utf8(s.bytes).is_err();
                if bad_len || bad_utf8 {
                    indices.push(i);
                    check_string(kv, s, indices, sink);
                    indices.pop();
                }
            }
        }
        ValueType::Bool => {
            for (i, b) in (0u64..).zip(a.data.iter()) {
                if *b > 1 {
                    let off = a.data_offset().saturating_add(i);
                    indices.push(i);
                    sink.emit(
                        RuleId::BoolValue,
                        off,
                        || element_path(kv, indices),
                        || format!("bool byte is {b}; only 0 and 1 are valid"),
                    );
                    indices.pop();
                }
            }
        }
        ValueType::Array => {
            sink.emit(
                RuleId::ArrayNested,
                a.offset,
                || element_path(kv, indices),
                || "array of arrays: the spec allows nesting, ggml rejects it".into(),
            );
            for el in a.iter() {
                indices.push(el.index);
                check_value(kv, &el.value, el.offset, indices, sink);
                indices.pop();
            }
        }
        _ => {}
    }
}

/// True when every string of a string array is valid UTF-8 and within the
/// length limit, checked in as few `from_utf8` calls as possible: a run of
/// strings whose u64 length fields have no byte >= 0x80 is validated in one
/// call over the raw bytes, since ASCII separators cannot start, continue
/// or end a multi-byte sequence. Exact: any false is re-checked per string.
fn strings_fast_ok(a: &Array<'_>) -> bool {
    strings_valid(a.data, a.order)
}

/// [`strings_fast_ok`] over strings with their length fields, `data`, in
/// byte order `order` (also how a lean read checks the strings it streams,
/// [`crate::validate_source_report`]).
pub(crate) fn strings_valid(data: &[u8], order: crate::parse::ByteOrder) -> bool {
    let mut rest = data;
    let mut run_start = 0usize;
    let run_ok = |from: usize, to: usize| data.get(from..to).is_some_and(|run| simdutf8::basic::from_utf8(run).is_ok());
    while let Some((len_bytes, tail)) = rest.split_first_chunk::<8>() {
        let n = match order {
            crate::parse::ByteOrder::LittleEndian => u64::from_le_bytes(*len_bytes),
            crate::parse::ByteOrder::BigEndian => u64::from_be_bytes(*len_bytes),
        };
        if n > limits::MAX_STRING_LEN {
            return false;
        }
        let Ok(n) = usize::try_from(n) else { return false };
        if u64::from_ne_bytes(*len_bytes) & 0x8080_8080_8080_8080 != 0 {
            // This length field could pair with a neighbour's bytes: close
            // the run before it and check this string on its own.
            let pos = data.len().saturating_sub(rest.len());
            let Some(end) = pos.checked_add(8).and_then(|s| s.checked_add(n)) else { return false };
            if !run_ok(run_start, pos) || !run_ok(pos.saturating_add(8), end) {
                return false;
            }
            run_start = end;
        }
        rest = tail.get(n..).unwrap_or_default();
    }
    run_ok(run_start, data.len())
}

#[cfg(test)]
mod tests {
    use super::key_well_formed;

    #[test]
    fn well_formed_keys_are_dot_separated_non_empty_lower_snake_case_segments() {
        for ok in [&b"a"[..], b"general.name", b"llama.rope.freq_base", b"a_1.b2"] {
            assert!(key_well_formed(ok), "{ok:?}");
        }
        for bad in [&b""[..], b".", b"a.", b".a", b"a..b", b"A", b"a.B", b"a-b", b"a b", b"a\0", "é".as_bytes()] {
            assert!(!key_well_formed(bad), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// The table-driven test is the grammar: non-empty segments of
        /// `[a-z0-9_]` between dots, over keys of bytes near its edges.
        #[test]
        fn well_formed_is_the_grammar(key in proptest::collection::vec(
            proptest::sample::select(vec![b'a', b'z', b'0', b'9', b'_', b'.', b'.', b'A', b'-', 0, 0x80, b'`', b'{', b'/', b':']),
            0..12,
        )) {
            let grammar = key.split(|b| *b == b'.')
                .all(|seg| !seg.is_empty() && seg.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_'));
            proptest::prop_assert_eq!(key_well_formed(&key), grammar);
        }
    }
}
