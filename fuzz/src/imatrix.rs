//! Any bytes through [`gguf_validate_core::imatrix::Imatrix::read`], the reader of
//! llama.cpp importance-matrix files (GGUF and legacy `.dat`).
//!
//! - no panic, and the same answer twice;
//! - work bounded by the input: an accepted file holds no more weights than
//!   it has 4-byte values, every weight is finite (llama-quantize refuses
//!   the others), every entry has at least one expert slice;
//! - [`Imatrix::lookup`] never panics and gives `Weights` only of exactly
//!   `n_per_row · n_expert` values.
#![forbid(unsafe_code)]

use gguf_validate_core::imatrix::{Imatrix, Lookup};
use gguf_validate_core::io::MemSource;

/// The property.
pub fn run(data: &[u8]) {
    let src = MemSource(data.to_vec());
    let first = Imatrix::read(&src);
    let again = Imatrix::read(&src);
    match (&first, &again) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "not deterministic"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "not deterministic"),
        _ => panic!("not deterministic: {first:?} then {again:?}"),
    }
    let Ok(m) = first else { return };
    let total: usize = m.entries.values().map(|e| e.weights.len()).sum();
    assert!(total <= data.len() / 4, "{total} weights from {} bytes", data.len());
    for (name, e) in &m.entries {
        assert!(e.n_mat >= 1, "{name}: no slice");
        assert!(e.weights.iter().all(|w| w.is_finite()), "{name}: non-finite weight accepted");
        let n = u64::try_from(e.weights.len()).unwrap_or(u64::MAX);
        for (per_row, experts) in [(n, 1), (n / e.n_mat.max(1), e.n_mat), (1, 0), (u64::MAX, u64::MAX)] {
            if let Lookup::Weights(w) = m.lookup(name, per_row, experts) {
                assert_eq!(u64::try_from(w.len()).ok(), Some(per_row.saturating_mul(experts.max(1))));
            }
        }
    }
}

/// Legacy and GGUF imatrix files to start the smoke test from.
pub fn seeds() -> Vec<Vec<u8>> {
    use gguf_validate_core::types::{GgmlType, ValueType};
    use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
    let mut legacy = 2i32.to_le_bytes().to_vec();
    for (name, ncall, values) in [("blk.0.attn_q.weight", 3i32, vec![1.5f32; 8]), ("x", 0, vec![2.0; 4])] {
        legacy.extend_from_slice(&i32::try_from(name.len()).unwrap_or(0).to_le_bytes());
        legacy.extend_from_slice(name.as_bytes());
        legacy.extend_from_slice(&ncall.to_le_bytes());
        legacy.extend_from_slice(&i32::try_from(values.len()).unwrap_or(0).to_le_bytes());
        values.iter().for_each(|v| legacy.extend_from_slice(&v.to_le_bytes()));
    }
    legacy.extend_from_slice(&10i32.to_le_bytes());
    legacy.extend_from_slice(&4i32.to_le_bytes());
    legacy.extend_from_slice(b"wiki");
    let mut m = GgufModel::new();
    m.kv("imatrix.datasets", OwnedValue::Array(ValueType::String, vec![OwnedValue::str("d")]));
    m.kv("imatrix.chunk_count", OwnedValue::U32(3));
    m.kv("imatrix.chunk_size", OwnedValue::U32(512));
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let t = |name: &str, dims: &[u64], data: Vec<u8>| OwnedTensor {
        name: name.as_bytes().to_vec(),
        dims: dims.to_vec(),
        type_id: GgmlType::F32.id(),
        offset: 0,
        data,
    };
    m.tensor(t("e.in_sum2", &[4, 2], f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])));
    m.tensor(t("e.counts", &[1, 2], f32s(&[2.0, 0.0])));
    let gguf = m.canonical().map(|m| m.to_bytes()).unwrap_or_default();
    vec![legacy, gguf]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_read() {
        for s in seeds() {
            let m = Imatrix::read(&MemSource(s)).unwrap();
            assert_eq!(m.entries.len(), 2 - usize::from(m.format == gguf_validate_core::imatrix::ImatrixFormat::Gguf));
        }
    }

    /// Seeds, each with random bytes flipped, cut or appended; and noise.
    #[test]
    fn smoke() {
        let mut rng = crate::SplitMix64::new(crate::smoke_seed());
        let seeds = seeds();
        for i in 0..600u32 {
            let mut b = seeds.get(usize::try_from(i % 3).unwrap_or(0)).cloned().unwrap_or_else(|| rng.bytes_below(512));
            if !b.is_empty() {
                for _ in 0..rng.below(4) {
                    let at = usize::try_from(rng.below(b.len() as u64)).unwrap_or(0);
                    b[at] ^= u8::try_from(rng.below(255) + 1).unwrap_or(1);
                }
                if rng.below(4) == 0 {
                    b.truncate(usize::try_from(rng.below(b.len() as u64)).unwrap_or(0));
                }
            }
            run(&b);
        }
    }
}
