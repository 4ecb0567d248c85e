//! Hostile sizes and ggml's 2^30 limits: every count is checked against the
//! bytes that remain before it sizes anything, and the two limits that need
//! over 1 GiB of input are exercised in memory here (the corpus cannot
//! hold such files).

use gguf_validate_core::types::ValueType;
use gguf_validate_core::write::{GgufModel, OwnedValue};
use gguf_validate_core::{Options, Profile, Validator};

fn rules(bytes: &[u8], profile: Profile) -> Vec<&'static str> {
    // Infos (the neutral architecture is one llama.cpp does not know) aside.
    // ggml's limits are above this tool's own caps (`metadata-limit`),
    // which an in-memory caller can lift.
    let opts = Options { limits: gguf_validate_core::limits::MetadataLimits::UNBOUNDED, ..Options::new(profile) };
    Validator::new(opts.clone())
        .validate_bytes(bytes)
        .report
        .diagnostics
        .iter()
        .filter(|d| d.severity != gguf_validate_core::rules::Level::Info)
        .map(|d| d.rule.id())
        .collect()
}

/// A 49-byte file whose only key holds a u64 array claiming 2^64-1 elements
/// is rejected from its header, without walking or allocating.
#[test]
fn huge_array_count_in_a_tiny_file() {
    let mut b = b"GGUF\x03\0\0\0".to_vec();
    b.extend_from_slice(&0u64.to_le_bytes()); // tensors
    b.extend_from_slice(&1u64.to_le_bytes()); // kvs
    b.extend_from_slice(&1u64.to_le_bytes()); // key length
    b.push(b'a');
    b.extend_from_slice(&9u32.to_le_bytes()); // array
    b.extend_from_slice(&10u32.to_le_bytes()); // of u64
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(b.len(), 49);
    let r = Validator::new(Options::new(Profile::Strict)).validate_bytes(&b).report;
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].rule, "array-length-exceeds-file");
    assert_eq!(r.diagnostics[0].offset, 41, "reported where the count starts");
    assert_eq!(r.diagnostics[0].path, "kv[0] a");
}

#[test]
fn counts_at_the_boundary() {
    // kv_count exactly as large as 13-byte pairs allow is decoded (and
    // fails later only for the bytes it really lacks); one more is not.
    let mut b = b"GGUF\x03\0\0\0".to_vec();
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&2u64.to_le_bytes());
    for key in [b'a', b'b'] {
        b.extend_from_slice(&1u64.to_le_bytes());
        b.push(key);
        b.extend_from_slice(&0u32.to_le_bytes()); // u8
        b.push(7);
    }
    assert_eq!(rules(&b, Profile::Strict), vec!["architecture-missing"]);
    let mut over = b.clone();
    over[16] = 3;
    assert_eq!(rules(&over, Profile::Strict), vec!["count-exceeds-file"]);
}

fn file_with(value: OwnedValue) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    m.kv("custom.big", value);
    m.pad_end = false;
    m.to_bytes()
}

#[test]
fn string_over_2_pow_30_bytes() {
    let limit = 1usize << 30;
    let at_limit = file_with(OwnedValue::String(vec![b'a'; limit]));
    assert!(rules(&at_limit, Profile::Strict).is_empty());
    drop(at_limit);
    let over = file_with(OwnedValue::String(vec![b'a'; limit + 1]));
    assert_eq!(rules(&over, Profile::Strict), vec!["string-length-limit"]);
    assert!(rules(&over, Profile::Spec).is_empty(), "the spec sets no limit");
    assert_eq!(rules(&over, Profile::Ggml), vec!["string-length-limit"]);
}

#[test]
fn array_over_2_pow_30_elements() {
    let limit = 1usize << 30;
    // Build the bytes directly: an OwnedValue per element would need 24 GiB.
    let mut b = file_with(OwnedValue::Array(ValueType::U8, Vec::new()));
    let len_at = b.len() - 8;
    let make = |n: usize, b: &mut Vec<u8>| {
        b.truncate(len_at);
        b.extend_from_slice(&(n as u64).to_le_bytes());
        b.resize(len_at + 8 + n, 1);
    };
    make(limit, &mut b);
    assert!(rules(&b, Profile::Strict).is_empty());
    make(limit + 1, &mut b);
    assert_eq!(rules(&b, Profile::Strict), vec!["array-length-limit"]);
    assert!(rules(&b, Profile::Spec).is_empty());
}
