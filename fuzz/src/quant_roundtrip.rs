//! Any f32 row through [`numerics::quantize`] then
//! [`numerics::dequantize`].
//!
//! - no panic for any type (types without a quantizer and partial blocks
//!   are errors); the types ggml quantizes only with an importance matrix
//!   (IQ2_XXS, IQ2_XS, IQ1_S) refuse to run without one and are checked
//!   through [`numerics::quantize_chunk`] with unit weights, which is what
//!   their error bound describes;
//! - with arbitrary importance weights (any bits) every type that reads
//!   them quantizes without panicking;
//! - the quantized size is whole blocks of the type;
//! - for every block whose values are finite and whose largest magnitude
//!   lies in `[min_amax, max_amax]`, each element is within
//!   `rel · amax + abs` of its input ([`numerics::error_bound`]).
//!
//! The bounds are enforced exactly. Blocks below
//! [`numerics::ErrorBound::min_amax`] are skipped (Q8_K's `-128/amax`
//! overflows and MXFP4's smallest scale flushes to zero there). Until
//! numerics commit d7f859a this property needed a provisional slack: the
//! fuzz findings F4-F7 (fuzz/README.md) are what that commit fixed.
//!
//! Rows are raw f32 bit patterns (NaN, infinities, subnormals), or small
//! integers times a power of two, or a constant with one spike: the
//! shapes where scale searches go wrong.
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};
use gguf_validate_core::numerics::{self, NumericsError};
use gguf_validate_core::types::GgmlType;

/// The property.
pub fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let ty = *u.choose(&GgmlType::ALL)?;
    let bs = usize::try_from(ty.block_size()).unwrap_or(1);
    let blocks = u.int_in_range(1..=4usize)?;
    let n = blocks * bs;
    let mut row = Vec::with_capacity(n);
    match u.int_in_range(0u8..=3)? {
        0 => {
            for _ in 0..n {
                row.push(f32::from_bits(u.arbitrary()?));
            }
        }
        1 | 2 => {
            let exp = u.int_in_range(-30i32..=12)?;
            let scale = 2f32.powi(exp);
            for _ in 0..n {
                row.push(f32::from(u.arbitrary::<i16>()?) * scale);
            }
        }
        _ => {
            let base = f32::from_bits(u.arbitrary()?);
            row.resize(n, if base.is_finite() { base } else { 0.0 });
            let at = u.choose_index(n)?;
            if let Some(x) = row.get_mut(at) {
                *x = f32::from(u.arbitrary::<i16>()?);
            }
        }
    }
    if let Err(why) = check(ty, &row) {
        panic!("{why}");
    }
    if numerics::uses_imatrix(ty) && u.arbitrary()? {
        let mut w = Vec::with_capacity(bs);
        for _ in 0..bs {
            w.push(f32::from_bits(u.arbitrary()?));
        }
        let mut q = Vec::new();
        if let Err(e) = numerics::quantize_chunk(ty, &row, bs, Some(&w), &mut q) {
            panic!("{ty}: quantize_chunk with weights failed: {e}");
        }
        numerics::dequantize_to_vec(ty, &q).unwrap_or_else(|e| panic!("{ty}: {e}"));
    }
    Ok(())
}

/// [`numerics::quantize`], or for the types that require an importance
/// matrix [`numerics::quantize_chunk`] with unit weights, after checking
/// that `quantize` refuses them.
fn quantize_default(ty: GgmlType, row: &[f32], q: &mut Vec<u8>) -> std::result::Result<(), NumericsError> {
    if !numerics::requires_imatrix(ty) {
        return numerics::quantize(ty, row, q);
    }
    let refused = numerics::quantize(ty, row, q);
    assert_eq!(refused, Err(NumericsError::ImatrixRequired { ty }), "{ty}: quantized without a matrix");
    let bs = usize::try_from(ty.block_size()).unwrap_or(1);
    numerics::quantize_chunk(ty, row, bs, Some(&vec![1.0; bs]), q)
}

/// Checks one type on one row (a whole number of blocks) against the exact
/// error bound; `Err` describes the first element outside it. Other
/// failures panic.
pub fn check(ty: GgmlType, row: &[f32]) -> std::result::Result<(), String> {
    let bs = usize::try_from(ty.block_size()).unwrap_or(1);
    let ts = usize::try_from(ty.type_size()).unwrap_or(1);
    let mut q = Vec::new();
    match quantize_default(ty, row, &mut q) {
        Err(NumericsError::Unsupported { .. }) => {
            assert!(
                !numerics::has_reference_quantizer(ty) && !numerics::has_chunk_quantizer(ty),
                "{ty}: refused although it has a quantizer"
            );
            return Ok(());
        }
        Err(e) => panic!("{ty}: quantize of {} values failed: {e}", row.len()),
        Ok(()) => {}
    }
    assert_eq!(q.len(), row.len() / bs * ts, "{ty}: wrong quantized size");
    if bs > 1 && !row.is_empty() {
        let mut tmp = Vec::new();
        let partial = row.get(..row.len() - 1).unwrap_or_default();
        assert!(
            matches!(quantize_default(ty, partial, &mut tmp), Err(NumericsError::PartialInputBlock { .. })),
            "{ty}: partial input accepted"
        );
    }
    let back = numerics::dequantize_to_vec(ty, &q).unwrap_or_else(|e| panic!("{ty}: {e}"));
    assert_eq!(back.len(), row.len());
    let Some(bound) = numerics::error_bound(ty) else { return Ok(()) };
    for (i, (x, y)) in row.chunks_exact(bs).zip(back.chunks_exact(bs)).enumerate() {
        if !x.iter().all(|v| v.is_finite()) {
            continue;
        }
        let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        if amax > bound.max_amax {
            continue;
        }
        if amax < bound.min_amax {
            continue;
        }
        let tol = f64::from(bound.rel) * f64::from(amax) + f64::from(bound.abs);
        for (j, (a, b)) in x.iter().zip(y).enumerate() {
            let err = (f64::from(*a) - f64::from(*b)).abs();
            if err > tol {
                return Err(format!(
                    "{ty} block {i} element {j}: {a:e} came back as {b:e} (error {err:e} > bound {tol:e}; amax {amax:e}, {bound:?})\nblock: {x:?}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        crate::test_n_times(400, run);
    }

    /// The lattice types on rows of each shape `run` draws: within their
    /// bounds (unit weights where a matrix is required), no panic with
    /// hostile weights.
    #[test]
    fn lattice_types() {
        use GgmlType as T;
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for ty in [T::IQ2_XXS, T::IQ2_XS, T::IQ2_S, T::IQ3_XXS, T::IQ3_S, T::IQ1_S, T::IQ1_M] {
            for shape in 0..4u64 {
                let row: Vec<f32> = (0..256)
                    .map(|i| match shape {
                        0 => f32::from_bits(next() as u32),
                        1 => f32::from((next() >> 48) as u16 as i16) * 2f32.powi(-12),
                        2 => {
                            if i == 77 {
                                1000.0
                            } else {
                                0.25
                            }
                        }
                        _ => ((next() >> 40) as f32 / 16_777_216.0 - 0.5) * 3.0,
                    })
                    .collect();
                if let Err(why) = check(ty, &row) {
                    panic!("{why}");
                }
                let w: Vec<f32> = (0..256).map(|_| f32::from_bits(next() as u32)).collect();
                let mut q = Vec::new();
                numerics::quantize_chunk(ty, &row, 256, Some(&w), &mut q).unwrap_or_else(|e| panic!("{ty}: {e}"));
                assert_eq!(q.len(), ty.type_size() as usize);
            }
        }
    }

    /// The fuzz findings against `numerics::error_bound` (F4-F7, see
    /// README) hold under the revised bounds: tiny Q8_K and MXFP4 blocks,
    /// BF16 at f32::MAX, fp16-subnormal super-block scales of the k-quants.
    #[test]
    fn known_bound_gaps() {
        let mut q8k = vec![1.578_418e-38f32; 256];
        q8k[0] = 0.0;
        let cases: Vec<(GgmlType, Vec<f32>)> = vec![
            (GgmlType::Q8_K, q8k),
            (GgmlType::MXFP4, vec![2.277_198_6e-38; 32]),
            (GgmlType::BF16, vec![-f32::MAX]),
            (GgmlType::Q6_K, (0..256).map(|i| (i as f32 - 128.0) * 3.0e-5).collect()),
            (GgmlType::IQ4_XS, (0..256).map(|i| ((i * 37 % 256) as f32 - 128.0) * 1.5e-5).collect()),
        ];
        for (ty, row) in cases {
            if let Err(why) = check(ty, &row) {
                panic!("{why}");
            }
        }
        // libFuzzer inputs: Q2_K constant block with a spike (error 0.70·amax
        // against rel 0.6), MXFP4 at the bottom of E8M0.
        let q2k: Vec<u8> = [&[0x2b, 0x96, 0x29, 0x09][..], &[0xc0; 81], &[0xb5, 0x93, 0xc3]].concat();
        crate::run_unstructured(&q2k, run);
        crate::run_unstructured(&[0xab, 0x08, 0x08, 0x08, 0xf7, 0xf7], run);
        // Q2_K: zeros in a mostly negative block come back as -0.76·amax.
        crate::run_unstructured(include_bytes!("../tests/data/q2_k_spike.bin"), run);
        // F13, IQ1_M: one value among zeros; the zeros come back at 10·amax.
        crate::run_unstructured(include_bytes!("../tests/data/iq1_m_spike.bin"), run);
    }
}
