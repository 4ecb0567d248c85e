//! Every handcrafted file class of llama.cpp's `tests/test-gguf.cpp`
//! (`enum handcrafted_file_type`, llama.cpp commit 03f94f19),
//! rebuilt here from its description, one case per class.
//!
//! Like the original, each file is a header, then (from the KV classes on)
//! random key/value pairs `my_key_<i>` of every value type, then (from the
//! TENSORS classes on) tensor infos `my_tensor_<i>` of random live types and
//! shapes with offsets at the running padded size, then (DATA classes) the
//! data blob, bytes `i % 256`. Random strings are random bytes with every
//! byte OR-ed with 0x01 (so not UTF-8) and random bools are random bytes.
//! The randomness is our own fixed-seed generator, so the bytes differ from
//! upstream's mt19937 runs, but every class keeps its fields and arithmetic.
//! Sizes are scaled down (24 keys, 6 tensors, small shapes) to keep the
//! corpus small.
//!
//! test-gguf reads the header, KV and TENSORS classes with `ctx = NULL`
//! (metadata only) and only the DATA classes with a ggml context (full
//! load). Our `ggml` profile models the full load, so the TENSORS `_SUCCESS`
//! files, which carry tensor infos but no data, are rejected by it.

use gguf_validate_core::seeded::SplitMix64;
use gguf_validate_core::types::{ValueType, type_info};

use crate::{A, Case, R, Verdict, case};

const HAS_KV: u32 = 1000;
const HAS_TENSORS: u32 = 2000;
const HAS_DATA: u32 = 3000;

// The classes, numbered as upstream.
const HEADER_BAD_MAGIC: u32 = 10;
const HEADER_BAD_VERSION_0: u32 = 15;
const HEADER_BAD_VERSION_1: u32 = 20;
const HEADER_BAD_VERSION_FUTURE: u32 = 30;
const HEADER_BAD_N_TENSORS: u32 = 40;
const HEADER_BAD_N_KV: u32 = 50;
const HEADER_EMPTY: u32 = 800;
const KV_BAD_KEY_SIZE: u32 = 10 + HAS_KV;
const KV_EMPTY_KEY: u32 = 15 + HAS_KV;
const KV_BAD_TYPE: u32 = 20 + HAS_KV;
const KV_DUPLICATE_KEY: u32 = 40 + HAS_KV;
const KV_BAD_ALIGN: u32 = 50 + HAS_KV;
const KV_WRONG_TYPE_ALIGN: u32 = 55 + HAS_KV;
const KV_SUCCESS: u32 = 800 + HAS_KV;
const TENSORS_BAD_NAME_SIZE: u32 = 10 + HAS_TENSORS;
const TENSORS_BAD_N_DIMS: u32 = 20 + HAS_TENSORS;
const TENSORS_BAD_SHAPE: u32 = 30 + HAS_TENSORS;
const TENSORS_ZERO_DIM: u32 = 35 + HAS_TENSORS;
const TENSORS_NE_TOO_BIG: u32 = 40 + HAS_TENSORS;
const TENSORS_NBYTES_TOO_BIG: u32 = 45 + HAS_TENSORS;
const TENSORS_BAD_TYPE: u32 = 50 + HAS_TENSORS;
const TENSORS_BAD_OFFSET: u32 = 60 + HAS_TENSORS;
const TENSORS_DUPLICATE_NAME: u32 = 70 + HAS_TENSORS;
const TENSORS_BAD_ALIGN: u32 = 75 + HAS_TENSORS;
const TENSORS_INCONSISTENT_ALIGN: u32 = 80 + HAS_TENSORS;
const TENSORS_SUCCESS: u32 = 800 + HAS_TENSORS;
const TENSORS_CUSTOM_ALIGN: u32 = 810 + HAS_TENSORS;
const DATA_NOT_ENOUGH_DATA: u32 = 10 + HAS_DATA;
const DATA_BAD_ALIGN: u32 = 15 + HAS_DATA;
const DATA_INCONSISTENT_ALIGN: u32 = 20 + HAS_DATA;
const DATA_MEM_SIZE_OVERFLOW: u32 = 30 + HAS_DATA;
const DATA_SUCCESS: u32 = 800 + HAS_DATA;
const DATA_CUSTOM_ALIGN: u32 = 810 + HAS_DATA;

/// test-gguf's `expect_context_not_null`: the classes ggml must load.
fn upstream_accepts(hft: u32) -> bool {
    if hft == TENSORS_ZERO_DIM {
        return true;
    }
    let group_success = match hft {
        h if h < HAS_KV => HEADER_EMPTY,
        h if h < HAS_TENSORS => KV_SUCCESS,
        h if h < HAS_DATA => TENSORS_SUCCESS,
        _ => DATA_SUCCESS,
    };
    hft >= group_success
}

fn declares_alignment(hft: u32) -> bool {
    matches!(
        hft,
        KV_BAD_ALIGN
            | KV_WRONG_TYPE_ALIGN
            | TENSORS_BAD_ALIGN
            | TENSORS_CUSTOM_ALIGN
            | DATA_BAD_ALIGN
            | DATA_CUSTOM_ALIGN
    )
}

/// (value type, array element type) for the random key/value pairs: every
/// scalar type and an array of every non-array type, shuffled.
fn kv_types(rng: &mut SplitMix64) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = ValueType::ALL
        .iter()
        .filter(|t| **t != ValueType::Array)
        .flat_map(|t| [(t.id(), u32::MAX), (ValueType::Array.id(), t.id())])
        .collect();
    for i in (1..v.len()).rev() {
        let j = rng.below_u32(i as u32 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// (ggml type id, shape) of the random tensors: live types only (block
/// size > 0), ne0 = 1..2 blocks, 1..4 dims of 1..3.
fn tensor_configs(rng: &mut SplitMix64) -> Vec<(u32, [i64; 4])> {
    let mut v = Vec::new();
    while v.len() < 6 {
        let ty = rng.below_u32(43);
        let Some(info) = type_info(ty).filter(|i| i.block_size > 0) else { continue };
        let mut shape = [1i64; 4];
        shape[0] = i64::from(1 + rng.below_u32(2)) * i64::from(info.block_size);
        let n_dims = 1 + rng.below_u32(4) as usize;
        for d in shape.iter_mut().take(n_dims).skip(1) {
            *d = i64::from(1 + rng.below_u32(3));
        }
        v.push((ty, shape));
    }
    v
}

fn type_size(t: u32) -> usize {
    ValueType::from_id(t).and_then(ValueType::fixed_size).unwrap_or(1)
}

fn pad(x: u64, a: u64) -> u64 {
    x.wrapping_add((a - x % a) % a)
}

/// ggml_row_size with wrapping arithmetic (the shapes of the overflow
/// classes wrap in upstream's C++ too; only later offsets depend on it).
fn row_size(ty: u32, ne: i64) -> u64 {
    let info = type_info(ty).unwrap_or(gguf_validate_core::types::GGML_TYPES[0]);
    (ne as u64 / u64::from(info.block_size.max(1))).wrapping_mul(u64::from(info.type_size))
}

struct Out(Vec<u8>);

impl Out {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn pad_to(&mut self, a: u64) {
        while self.0.len() as u64 % a != 0 {
            self.0.push(0);
        }
    }
}

/// Builds the file of one class (upstream `get_handcrafted_file`).
fn handcrafted(hft: u32) -> Vec<u8> {
    // The workspace's seeded generator, a fixed seed per file.
    let mut rng = SplitMix64::new(0x6767_7566);
    let mut alignment: u64 = 32;
    let mut f = Out(Vec::new());
    f.bytes(if hft == HEADER_BAD_MAGIC { b"FUGG" } else { b"GGUF" });
    f.u32(match hft {
        HEADER_BAD_VERSION_0 => 0,
        HEADER_BAD_VERSION_1 => 1,
        HEADER_BAD_VERSION_FUTURE => 4,
        _ => 3,
    });
    let mut tensors = if hft >= HAS_TENSORS { tensor_configs(&mut rng) } else { Vec::new() };
    if hft == DATA_MEM_SIZE_OVERFLOW {
        let big = 0x7FFF_FFFF_FFFF_FFC0;
        tensors = vec![(24, [big, 1, 1, 1]), (24, [big, 1, 1, 1])];
    }
    f.u64(if hft == HEADER_BAD_N_TENSORS { u64::MAX } else { tensors.len() as u64 });
    let kvs = if hft >= HAS_KV { kv_types(&mut rng) } else { Vec::new() };
    f.u64(match hft {
        HEADER_BAD_N_KV => u64::MAX,
        h if declares_alignment(h) => kvs.len() as u64 + 1,
        _ => kvs.len() as u64,
    });
    if hft < HAS_KV {
        f.pad_to(alignment);
        return f.0;
    }

    for (i, &(ty, ty_arr)) in kvs.iter().enumerate() {
        let (ty, ty_arr) = if hft == KV_BAD_TYPE { (13, 13) } else { (ty, ty_arr) };
        let key = if hft == KV_EMPTY_KEY {
            String::new()
        } else {
            format!("my_key_{}", if hft == KV_DUPLICATE_KEY { i / 2 } else { i })
        };
        f.u64(if hft == KV_BAD_KEY_SIZE { u64::MAX } else { key.len() as u64 });
        f.bytes(key.as_bytes());
        f.u32(ty);
        let is_string = ty == ValueType::String.id() || ty_arr == ValueType::String.id();
        let data: Vec<u8> =
            (0..16).flat_map(|_| (rng.next_u32() | if is_string { 0x0101_0101 } else { 0 }).to_le_bytes()).collect();
        if ty == ValueType::String.id() {
            let n = rng.below_u32(64) as usize;
            f.u64(n as u64);
            f.bytes(&data[..n]);
        } else if ty == ValueType::Array.id() {
            f.u32(ty_arr);
            if ty_arr == ValueType::String.id() {
                let n_str = rng.below_u32(17) as usize;
                f.u64(n_str as u64);
                for s in 0..n_str {
                    let n = rng.below_u32(5) as usize;
                    f.u64(n as u64);
                    f.bytes(&data[4 * s..4 * s + n]);
                }
            } else {
                let size = type_size(ty_arr);
                let n = rng.below_u32(64) as usize / size;
                f.u64(n as u64);
                f.bytes(&data[..n * size]);
            }
        } else {
            let n = if hft == KV_BAD_TYPE { 1 } else { type_size(ty) };
            f.bytes(&data[..n]);
        }
    }
    if declares_alignment(hft) {
        f.u64("general.alignment".len() as u64);
        f.bytes(b"general.alignment");
        f.u32(if hft == KV_WRONG_TYPE_ALIGN { ValueType::I32.id() } else { ValueType::U32.id() });
        alignment = if upstream_accepts(hft) { 1 } else { 13 };
        f.u32(alignment as u32);
    }
    if hft < HAS_TENSORS {
        f.pad_to(alignment);
        return f.0;
    }

    if matches!(hft, TENSORS_INCONSISTENT_ALIGN | DATA_INCONSISTENT_ALIGN) {
        alignment = 1;
    }
    let mut offset = 0u64;
    for (i, &(ty, shape)) in tensors.iter().enumerate() {
        let ty = if hft == TENSORS_NBYTES_TOO_BIG { 27 } else { ty };
        let mut name = if hft == TENSORS_DUPLICATE_NAME { "my_tensor".to_string() } else { format!("my_tensor_{i}") };
        if hft == TENSORS_BAD_NAME_SIZE {
            name.push_str("_with_a_very_long_name_which_is_longer_than_what_is_allowed_for_ggml_tensors");
        }
        f.u64(name.len() as u64);
        f.bytes(name.as_bytes());
        let mut n_dims: u32 = if matches!(hft, TENSORS_NE_TOO_BIG | TENSORS_NBYTES_TOO_BIG) { 2 } else { 1 };
        if let Some(last) = (1..4).rev().find(|&d| shape[d] != 1) {
            n_dims = last as u32 + 1;
        }
        if hft == TENSORS_ZERO_DIM {
            n_dims = 2;
        }
        f.u32(if hft == TENSORS_BAD_N_DIMS { 5 } else { n_dims });
        let dims: Vec<i64> = match hft {
            TENSORS_BAD_SHAPE => vec![-1; n_dims as usize],
            TENSORS_ZERO_DIM => vec![shape[0], 0],
            TENSORS_NE_TOO_BIG => vec![4 * i64::from(i32::MAX); n_dims as usize],
            TENSORS_NBYTES_TOO_BIG => {
                // Each dim about 1.01 * (SIZE_MAX / 8)^(1/n), so the element
                // count fits but the byte size does not.
                let big_ne = (u64::MAX / 8) as f64;
                let d = (1.01 * big_ne.powf(1.0 / f64::from(n_dims))) as i64 + 1;
                vec![d; n_dims as usize]
            }
            _ => shape[..n_dims as usize].to_vec(),
        };
        for d in &dims {
            f.u64(*d as u64);
        }
        f.u32(if hft == TENSORS_BAD_TYPE { 43 } else { ty });
        f.u64(if hft == TENSORS_BAD_OFFSET { u64::MAX } else { offset });
        let ne = if hft == TENSORS_ZERO_DIM {
            0
        } else {
            shape[..n_dims as usize].iter().fold(1i64, |a, d| a.wrapping_mul(*d))
        };
        offset = offset.wrapping_add(pad(row_size(ty, ne), alignment));
    }
    f.pad_to(alignment);

    if hft >= HAS_DATA {
        let n = match hft {
            DATA_NOT_ENOUGH_DATA => offset - 1,
            DATA_MEM_SIZE_OVERFLOW => 32,
            _ => offset,
        };
        f.0.extend((0..n).map(|i| (i % 256) as u8));
    }
    f.0
}

/// Findings every file with the random key/value pairs carries under
/// `strict`: no general.architecture, non-UTF-8 strings, bool bytes not 0/1.
const KV_NOISE: &[&str] = &["architecture-missing", "bool-value", "string-utf8"];

/// No keys / random keys / random keys and quantized tensors without
/// general.quantization_version.
#[derive(Clone, Copy)]
enum Noise {
    None,
    Kv,
    KvQuant,
}

/// (class, upstream name, description, verdicts, noise, specific strict rules).
type Class = (u32, &'static str, &'static str, [Verdict; 3], Noise, &'static [&'static str]);

pub fn cases(v: &mut Vec<Case>) {
    use Noise::*;
    // (class, upstream name, what the file holds, verdicts, noise, rules `strict` reports besides the noise)
    #[rustfmt::skip]
    let classes: &[Class] = &[
        (HEADER_BAD_MAGIC, "HEADER_BAD_MAGIC", "Magic `FUGG`, no keys or tensors, padded to 32 bytes.", [R, R, R], None, &["magic"]),
        (HEADER_BAD_VERSION_0, "HEADER_BAD_VERSION_0", "Version 0.", [R, R, R], None, &["version-unsupported"]),
        (HEADER_BAD_VERSION_1, "HEADER_BAD_VERSION_1", "Version 1.", [R, R, R], None, &["version-obsolete"]),
        (HEADER_BAD_VERSION_FUTURE, "HEADER_BAD_VERSION_FUTURE", "Version 4 (GGUF_VERSION + 1).", [R, R, R], None, &["version-unsupported"]),
        (HEADER_BAD_N_TENSORS, "HEADER_BAD_N_TENSORS", "tensor_count = 2^64-1 in a 32-byte file.", [R, R, R], None, &["count-exceeds-file"]),
        (HEADER_BAD_N_KV, "HEADER_BAD_N_KV", "kv_count = 2^64-1 in a 32-byte file.", [R, R, R], None, &["count-exceeds-file"]),
        (HEADER_EMPTY, "HEADER_EMPTY", "A valid header with no keys and no tensors, padded to 32 bytes: ggml loads it, the spec requires general.architecture.", [R, R, A], None, &["architecture-missing"]),
        (KV_BAD_KEY_SIZE, "KV_BAD_KEY_SIZE", "24 random key/value pairs; the first key's length is 2^64-1.", [R, R, R], None, &["string-length-exceeds-file"]),
        (KV_EMPTY_KEY, "KV_EMPTY_KEY", "24 random key/value pairs, every key empty (so also duplicates).", [R, R, R], Kv, &["key-empty", "key-duplicate"]),
        (KV_BAD_TYPE, "KV_BAD_TYPE", "24 key/value pairs of value type 13 (GGUF_TYPE_COUNT), one byte each.", [R, R, R], None, &["value-type-unknown"]),
        (KV_DUPLICATE_KEY, "KV_DUPLICATE_KEY", "24 random key/value pairs named my_key_{i/2}: every key appears twice.", [R, R, R], Kv, &["key-duplicate"]),
        (KV_BAD_ALIGN, "KV_BAD_ALIGN", "24 random key/value pairs and general.alignment = 13 (u32); padded to 13.", [R, R, R], Kv, &["alignment-power-of-two", "alignment-multiple-of-8"]),
        (KV_WRONG_TYPE_ALIGN, "KV_WRONG_TYPE_ALIGN", "24 random key/value pairs and general.alignment typed INT32 (13); ggml used to abort on it.", [R, R, R], Kv, &["alignment-type"]),
        (KV_SUCCESS, "KV_SUCCESS", "24 random key/value pairs of every value type, with random non-UTF-8 strings and random bool bytes: ggml loads it, the spec allows neither.", [R, R, A], Kv, &[]),
        (TENSORS_BAD_NAME_SIZE, "TENSORS_BAD_NAME_SIZE", "Random keys and 6 tensor infos whose names are 88 bytes long; no data.", [R, R, R], KvQuant, &["tensor-name-too-long", "tensor-data-out-of-bounds"]),
        (TENSORS_BAD_N_DIMS, "TENSORS_BAD_N_DIMS", "Random keys and tensor infos with n_dims = 5 (followed by the dims of the real n_dims, so a reader that goes on reads garbage).", [R, R, R], None, &["bool-value", "string-utf8", "tensor-n-dims", "string-length-exceeds-file"]),
        (TENSORS_BAD_SHAPE, "TENSORS_BAD_SHAPE", "Random keys and tensor infos whose every dim is -1 (2^64-1).", [R, R, R], KvQuant, &["tensor-dim-range", "tensor-row-block"]),
        (TENSORS_ZERO_DIM, "TENSORS_ZERO_DIM", "Random keys and 6 tensor infos of shape [ne0, 0], all at offset 0; no data needed. ggml used to crash on it with SIGFPE; test-gguf expects it to load.", [R, R, A], KvQuant, &["tensor-dim-zero"]),
        (TENSORS_NE_TOO_BIG, "TENSORS_NE_TOO_BIG", "Random keys and tensor infos with every dim 4 * INT32_MAX: the element count overflows int64.", [R, R, R], KvQuant, &["tensor-element-count-overflow", "tensor-row-block"]),
        (TENSORS_NBYTES_TOO_BIG, "TENSORS_NBYTES_TOO_BIG", "Random keys and I64 tensor infos with dims about 1.01 * (SIZE_MAX/8)^(1/n_dims): the element count fits, the byte size overflows.", [R, R, R], Kv, &["tensor-byte-size-overflow"]),
        (TENSORS_BAD_TYPE, "TENSORS_BAD_TYPE", "Random keys and tensor infos of type 43 (GGML_TYPE_COUNT).", [R, R, R], Kv, &["tensor-type-unknown"]),
        (TENSORS_BAD_OFFSET, "TENSORS_BAD_OFFSET", "Random keys and tensor infos whose offset is 2^64-1.", [R, R, R], KvQuant, &["tensor-offset-misaligned", "tensor-data-gap", "tensor-data-out-of-bounds"]),
        (TENSORS_DUPLICATE_NAME, "TENSORS_DUPLICATE_NAME", "Random keys and 6 tensor infos all named `my_tensor`; no data.", [R, R, R], KvQuant, &["tensor-name-duplicate", "tensor-data-out-of-bounds"]),
        (TENSORS_BAD_ALIGN, "TENSORS_BAD_ALIGN", "Random keys, general.alignment = 13 and tensor infos laid out with it; no data.", [R, R, R], KvQuant, &["alignment-power-of-two", "alignment-multiple-of-8", "tensor-data-out-of-bounds"]),
        (TENSORS_INCONSISTENT_ALIGN, "TENSORS_INCONSISTENT_ALIGN", "Random keys and tensor infos whose offsets and padding use 1 byte while the file declares no alignment (32): the file ends before the 32-byte-aligned data start.", [R, R, R], KvQuant, &["data-section-start"]),
        (TENSORS_SUCCESS, "TENSORS_SUCCESS", "Random keys and 6 valid tensor infos but no tensor data: test-gguf loads it with ctx = NULL (metadata only); a full load, and every profile of ours, reject the missing data.", [R, R, R], KvQuant, &["tensor-data-out-of-bounds"]),
        (TENSORS_CUSTOM_ALIGN, "TENSORS_CUSTOM_ALIGN", "As TENSORS_SUCCESS with general.alignment = 1: no tensor data, loaded by test-gguf metadata-only.", [R, R, R], KvQuant, &["alignment-multiple-of-8", "tensor-data-out-of-bounds"]),
        (DATA_NOT_ENOUGH_DATA, "DATA_NOT_ENOUGH_DATA", "Random keys, 6 tensors and their padded data blob one byte short (the byte lost is the last tensor's final padding).", [R, R, R], KvQuant, &["padding-final-missing", "padding-nonzero"]),
        (DATA_BAD_ALIGN, "DATA_BAD_ALIGN", "Random keys, general.alignment = 13, tensors and data laid out with it.", [R, R, R], KvQuant, &["alignment-power-of-two", "alignment-multiple-of-8", "padding-nonzero"]),
        (DATA_INCONSISTENT_ALIGN, "DATA_INCONSISTENT_ALIGN", "As TENSORS_INCONSISTENT_ALIGN, with the data blob.", [R, R, R], KvQuant, &["tensor-offset-misaligned", "tensor-data-out-of-bounds", "padding-nonzero"]),
        (DATA_MEM_SIZE_OVERFLOW, "DATA_MEM_SIZE_OVERFLOW", "Random keys and two I8 tensors of 0x7FFFFFFFFFFFFFC0 elements with 32 data bytes: the data size fits in 64 bits, the ggml context size (data + tensor overhead) does not.", [R, R, R], Kv, &["data-size-overflow", "tensor-data-out-of-bounds", "size-32-bit"]),
        (DATA_SUCCESS, "DATA_SUCCESS", "Random keys (non-UTF-8 strings, random bools), 6 tensors of random live types and their data blob, bytes i % 256 (padding included): ggml loads it.", [R, R, A], KvQuant, &["padding-nonzero"]),
        (DATA_CUSTOM_ALIGN, "DATA_CUSTOM_ALIGN", "As DATA_SUCCESS with general.alignment = 1 (a power of two, not a multiple of 8).", [R, R, A], KvQuant, &["alignment-multiple-of-8"]),
    ];
    for &(hft, name, description, verdicts, noise, specific) in classes {
        let expected = if upstream_accepts(hft) { "expects the context to load" } else { "expects no context" };
        let mut rules: Vec<&'static str> = match noise {
            None => Vec::new(),
            Kv => KV_NOISE.to_vec(),
            KvQuant => [KV_NOISE, &["quantization-version-missing"]].concat(),
        };
        rules.extend(specific.iter().filter(|r| !rules.contains(r)).collect::<Vec<_>>());
        v.push(case(
            &format!("test_gguf_{}", name.to_lowercase()),
            verdicts,
            &rules,
            description,
            &format!("llama.cpp tests/test-gguf.cpp HANDCRAFTED_{name} ({hft}; upstream {expected})"),
            move || handcrafted(hft),
        ));
    }
}
