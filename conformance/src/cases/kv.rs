//! Keys and values: key grammar, strings, bools, arrays, value types.

use gguf_validate_core::types::ValueType as T;

use crate::build::*;
use crate::{A, Case, R, case};

fn with_kv(key: &str, value: V) -> Vec<u8> {
    let mut m = base();
    m.kv(key, value);
    bytes(m)
}

fn with_raw_key(key: &[u8], value: V) -> Vec<u8> {
    let mut m = base();
    m.kvs.push((key.to_vec(), value));
    bytes(m)
}

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "key_empty",
        [R, R, R],
        &["key-empty"],
        "A key of length 0.",
        "gguf.cpp [K2]; test-gguf KV_EMPTY_KEY; llama.cpp#24884",
        || with_kv("", V::U32(1)),
    ));
    v.push(case(
        "key_one_char",
        [A, A, A],
        &[],
        "A one-character key `a` (the smallest valid key).",
        "gguf.md gguf_metadata_kv_t",
        || with_kv("a", V::U32(1)),
    ));
    v.push(case(
        "key_non_ascii",
        [R, R, A],
        &["key-ascii"],
        "Key `modèle.nom` with a non-ASCII (UTF-8) byte.",
        "gguf.md: keys are ASCII",
        || with_kv("modèle.nom", V::U32(1)),
    ));
    v.push(case(
        "key_invalid_utf8",
        [R, R, A],
        &["key-ascii"],
        "Key bytes `general.\\xff` (not UTF-8).",
        "gguf.md: keys are ASCII",
        || with_raw_key(b"general.\xff", V::U32(1)),
    ));
    v.push(case("key_uppercase", [A, R, A], &["key-naming"], "Key `custom.FooBar` (upper case): the spec asks for lower_snake_case; real chat-template names use it, so strict only warns.", "gguf.md gguf_metadata_kv_t", || {
        with_kv("custom.FooBar", V::U32(1))
    }));
    v.push(case(
        "key_dash",
        [A, R, A],
        &["key-naming"],
        "Key `custom-x.context_length`: a dash, as in the `gpt-oss.*` keys llama.cpp writes.",
        "gguf.md gguf_metadata_kv_t; gguf-py MODEL_ARCH_NAMES",
        || with_kv("custom-x.context_length", V::U32(1)),
    ));
    v.push(case(
        "key_empty_segment",
        [A, R, A],
        &["key-naming"],
        "Key `custom..x` with an empty segment.",
        "gguf.md gguf_metadata_kv_t",
        || with_kv("custom..x", V::U32(1)),
    ));
    v.push(case(
        "key_snake_digits",
        [A, A, A],
        &[],
        "Key `custom.seg_1.x2`: digits and underscores are lower_snake_case.",
        "gguf.md gguf_metadata_kv_t",
        || with_kv("custom.seg_1.x2", V::U32(1)),
    ));
    v.push(case(
        "key_65535",
        [A, A, A],
        &[],
        "A key of exactly 65,535 bytes, the spec's maximum.",
        "gguf.md gguf_metadata_kv_t",
        || with_kv(&"a".repeat(65_535), V::U8(0)),
    ));
    v.push(case(
        "key_65536",
        [R, R, A],
        &["key-too-long"],
        "A key of 65,536 bytes, one over the spec's maximum (ggml has no such limit).",
        "gguf.md gguf_metadata_kv_t",
        || with_kv(&"a".repeat(65_536), V::U8(0)),
    ));
    v.push(case(
        "key_duplicate",
        [R, R, R],
        &["key-duplicate"],
        "`custom.x` twice with different values.",
        "gguf.cpp [K3]; test-gguf KV_DUPLICATE_KEY; modelaudit#1315",
        || {
            let mut m = base();
            m.kv("custom.x", V::U32(1));
            m.kv("custom.x", V::U32(2));
            bytes(m)
        },
    ));
    v.push(case(
        "key_duplicate_equal",
        [R, R, R],
        &["key-duplicate"],
        "`custom.x` twice with the same value: ggml still refuses the file (`fix` removes the copy, a safe fix).",
        "gguf.cpp [K3]",
        || {
            let mut m = base();
            m.kv("custom.x", V::U32(1));
            m.kv("custom.x", V::U32(1));
            bytes(m)
        },
    ));
    v.push(case(
        "key_length_max",
        [R, R, R],
        &["string-length-exceeds-file"],
        "A key length of 2^64-1.",
        "TALOS-2024-1913; test-gguf KV_BAD_KEY_SIZE",
        || {
            let b = with_kv("custom.x", V::U32(1));
            let at = find(&b, b"custom.x") - 8;
            patch(b, at, &u64::MAX.to_le_bytes())
        },
    ));
    v.push(case(
        "string_length_past_eof",
        [R, R, R],
        &["string-length-exceeds-file"],
        "A string value whose length is one more than the bytes left in the file.",
        "gguf.cpp [K1]",
        || {
            let b = bytes(base());
            let at = find(&b, b"plain") - 8;
            let len = (b.len() - at - 8 + 1) as u64;
            patch(b, at, &len.to_le_bytes())
        },
    ));
    v.push(case(
        "value_type_13",
        [R, R, R],
        &["value-type-unknown"],
        "A value type id of 13.",
        "gguf.md gguf_metadata_value_type; test-gguf KV_BAD_TYPE",
        || {
            let b = with_kv("custom.x", V::U32(1));
            let at = find(&b, b"custom.x") + 8;
            patch(b, at, &13u32.to_le_bytes())
        },
    ));
    v.push(case(
        "array_type_13",
        [R, R, R],
        &["array-type-unknown"],
        "An array whose element type id is 13.",
        "gguf.md gguf_metadata_value_type; test-gguf KV_BAD_TYPE",
        || {
            let b = with_kv("custom.x", array(T::U8, vec![V::U8(1)]));
            let at = find(&b, b"custom.x") + 8 + 4;
            patch(b, at, &13u32.to_le_bytes())
        },
    ));
    v.push(case(
        "array_length_max",
        [R, R, R],
        &["array-length-exceeds-file"],
        "An array of u64 claiming 2^64-1 elements in a small file.",
        "TALOS-2024-1912; llama.cpp#27188",
        || {
            let b = with_kv("custom.x", array(T::U64, vec![V::U64(1)]));
            let at = find(&b, b"custom.x") + 8 + 4 + 4;
            patch(b, at, &u64::MAX.to_le_bytes())
        },
    ));
    v.push(case(
        "array_strings_count_past_eof",
        [R, R, R],
        &["array-length-exceeds-file"],
        "A string array claiming 2^61 elements: each needs at least 8 bytes.",
        "gguf.cpp [K5]",
        || {
            let b = with_kv("custom.x", array(T::String, vec![V::str("a")]));
            let at = find(&b, b"custom.x") + 8 + 4 + 4;
            patch(b, at, &(1u64 << 61).to_le_bytes())
        },
    ));
    v.push(case("array_empty", [A, A, A], &[], "An empty u32 array.", "gguf.md gguf_metadata_value_t", || {
        with_kv("custom.x", array(T::U32, vec![]))
    }));
    v.push(case(
        "array_nested",
        [R, A, R],
        &["array-nested"],
        "An array of two arrays of u8: the spec allows nesting, ggml rejects it.",
        "gguf.md \"Arrays can be nested\"; gguf.cpp [K4]",
        || with_kv("custom.x", array(T::Array, vec![array(T::U8, vec![V::U8(1)]), array(T::U8, vec![])])),
    ));
    v.push(case(
        "array_nested_depth_16",
        [R, A, R],
        &["array-nested"],
        "Arrays nested 16 deep, our decoding limit.",
        "limits::MAX_ARRAY_DEPTH",
        || with_kv("custom.x", nested(16)),
    ));
    v.push(case("array_nested_depth_17", [R, R, R], &["array-nesting-too-deep"], "Arrays nested 17 deep, one past our decoding limit (the spec sets none, so our spec profile is stricter than the spec here; gguf-py recurses without bound).", "limits::MAX_ARRAY_DEPTH; gguf-py RecursionError advisory", || {
        with_kv("custom.x", nested(17))
    }));
    v.push(case(
        "string_invalid_utf8",
        [R, R, A],
        &["string-utf8"],
        "A string value with the bytes `ab\\xff`.",
        "gguf.md gguf_string_t: UTF-8",
        || with_kv("custom.x", V::String(b"ab\xff".to_vec())),
    ));
    v.push(case(
        "string_array_invalid_utf8",
        [R, R, A],
        &["string-utf8"],
        "A string array whose second element is `\\xc3` (a truncated UTF-8 sequence).",
        "gguf.md gguf_string_t: UTF-8; node-llama-cpp#418",
        || with_kv("custom.x", array(T::String, vec![V::str("ok"), V::String(vec![0xc3]), V::str("é")])),
    ));
    v.push(case(
        "string_utf8_multibyte",
        [A, A, A],
        &[],
        "String values with 2-, 3- and 4-byte UTF-8 sequences and an empty string.",
        "gguf.md gguf_string_t",
        || with_kv("custom.x", array(T::String, vec![V::str("é"), V::str("▁the"), V::str("😀"), V::str("")])),
    ));
    v.push(case(
        "string_with_nul",
        [A, A, A],
        &[],
        "A string value containing a NUL byte (valid UTF-8; strings are length-prefixed).",
        "gguf.md gguf_string_t",
        || with_kv("custom.x", V::String(b"a\0b".to_vec())),
    ));
    v.push(case(
        "bool_2",
        [R, R, A],
        &["bool-value"],
        "A bool value byte of 2 (ggml reads it as true).",
        "gguf.md BOOL: anything else is invalid; gguf.cpp [K7]",
        || with_kv("custom.x", V::Bool(2)),
    ));
    v.push(case("bool_1", [A, A, A], &[], "Bool values 0 and 1.", "gguf.md BOOL", || {
        let mut m = base();
        m.kv("custom.f", V::Bool(0));
        m.kv("custom.t", V::Bool(1));
        bytes(m)
    }));
    v.push(case(
        "bool_array_255",
        [R, R, A],
        &["bool-value"],
        "A bool array whose third element is 0xff.",
        "gguf.md BOOL",
        || with_kv("custom.x", array(T::Bool, vec![V::Bool(0), V::Bool(1), V::Bool(255)])),
    ));
    v.push(case(
        "value_types_all",
        [A, A, A],
        &[],
        "One scalar of every value type and an array of every non-array element type.",
        "gguf.md gguf_metadata_value_type",
        || {
            let mut m = base();
            let scalars = [
                ("u8", V::U8(200)),
                ("i8", V::I8(-100)),
                ("u16", V::U16(60000)),
                ("i16", V::I16(-30000)),
                ("u32", V::U32(4_000_000_000)),
                ("i32", V::I32(-2_000_000_000)),
                ("f32", V::F32(1.5)),
                ("bool", V::Bool(1)),
                ("string", V::str("text")),
                ("u64", V::U64(u64::MAX)),
                ("i64", V::I64(i64::MIN)),
                ("f64", V::F64(-0.25)),
            ];
            for (name, val) in scalars.iter().cloned() {
                m.kv(&format!("custom.scalar.{name}"), val.clone());
                m.kv(&format!("custom.array.{name}"), array(val.value_type(), vec![val.clone(), val]));
            }
            bytes(m)
        },
    ));
    v.push(case(
        "float_special",
        [A, A, A],
        &[],
        "f32 and f64 values NaN, +inf, -inf, -0.0 and a subnormal: all are valid floats in metadata.",
        "gguf.md FLOAT32/FLOAT64",
        || {
            with_kv(
                "custom.x",
                array(
                    T::F32,
                    vec![
                        V::F32(f32::NAN),
                        V::F32(f32::INFINITY),
                        V::F32(f32::NEG_INFINITY),
                        V::F32(-0.0),
                        V::F32(1e-40),
                    ],
                ),
            )
        },
    ));
}

/// An array value nested `depth` deep (depth 1 = a plain array of u8).
fn nested(depth: u32) -> V {
    let mut v = array(T::U8, vec![V::U8(7)]);
    for _ in 1..depth {
        v = array(T::Array, vec![v]);
    }
    v
}
