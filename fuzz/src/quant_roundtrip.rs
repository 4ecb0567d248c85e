//! Any f32 row through [`numerics::quantize`] then
//! [`numerics::dequantize`].
//!
//! - no panic for any type (types without a reference quantizer and
//!   partial blocks are errors);
//! - the quantized size is whole blocks of the type;
//! - for every block whose values are finite and whose largest magnitude
//!   is within [`numerics::ErrorBound::max_amax`], each element is within
//!   `rel · amax + abs` of its input ([`numerics::error_bound`]).
//!
//! **Provisional slack.** The bounds numerics marks as measured
//! (`derived: false`: Q2_K..Q6_K, IQ4_NL, IQ4_XS) miss the error of a
//! super-block scale `d` that falls into fp16's subnormal range (tiny
//! blocks), and Q2_K's and Q5_K's `rel` are exceeded (Q2_K: 0.76·amax against 0.6) (see `fuzz/README.md`,
//! findings). Until numerics revises them, `run` enforces those bounds with
//! `rel` × 2 plus one fp16 subnormal step (2^-24) times the type's largest
//! `sub-scale × code` ([`subnormal_term`]); derived bounds are enforced
//! exactly, except that blocks whose largest magnitude is below [`TINY`]
//! (2^-100) are skipped: there Q8_K's `-128/amax` overflows and MXFP4's
//! smallest E8M0 scale flushes values to 0, beyond the bounds' `abs`;
//! and BF16 blocks above `bf16::MAX`, which round to infinity although the
//! bound's `max_amax` is `f32::MAX`.
//! [`check`] itself always uses the exact bound.
//!
//! Rows are raw f32 bit patterns (NaN, infinities, subnormals), or small
//! integers times a power of two, or a constant with one spike: the
//! shapes where scale searches go wrong.
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};
use gguf_validate::numerics::{self, NumericsError};
use gguf_validate::types::GgmlType;

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
    if let Err(why) = check_with(ty, &row, true) {
        panic!("{why}");
    }
    Ok(())
}

/// Blocks below this magnitude are not held to the bounds by [`run`].
pub const TINY: f32 = 7.888_609e-31; // 2^-100

/// Largest `|sub-scale × code|` of a type whose block scale is an fp16
/// `d`: the factor by which an absolute error of `d` shows in the output.
pub fn subnormal_term(ty: GgmlType) -> f64 {
    let step = 2f64.powi(-24);
    step * match ty {
        GgmlType::Q2_K => 15.0 * 3.0 + 15.0,
        GgmlType::Q3_K => 32.0 * 4.0,
        GgmlType::Q4_K => 63.0 * 15.0 + 63.0,
        GgmlType::Q5_K => 63.0 * 31.0 + 63.0,
        GgmlType::Q6_K => 128.0 * 32.0,
        GgmlType::IQ4_NL => 127.0,
        GgmlType::IQ4_XS => 32.0 * 127.0,
        _ => 0.0,
    }
}

/// Checks one type on one row (a whole number of blocks) against the exact
/// error bound; `Err` describes the first element outside it. Other
/// failures panic.
pub fn check(ty: GgmlType, row: &[f32]) -> std::result::Result<(), String> {
    check_with(ty, row, false)
}

fn check_with(ty: GgmlType, row: &[f32], provisional: bool) -> std::result::Result<(), String> {
    let bs = usize::try_from(ty.block_size()).unwrap_or(1);
    let ts = usize::try_from(ty.type_size()).unwrap_or(1);
    let mut q = Vec::new();
    match numerics::quantize(ty, row, &mut q) {
        Err(NumericsError::Unsupported { .. }) => {
            assert!(!numerics::has_reference_quantizer(ty), "{ty}: refused although it has a quantizer");
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
            matches!(numerics::quantize(ty, partial, &mut tmp), Err(NumericsError::PartialInputBlock { .. })),
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
        // Near the bottom of f32 the scales themselves underflow or
        // overflow (Q8_K's -128/amax; MXFP4's smallest E8M0 scale), and the
        // `abs` terms do not cover it (findings, see README).
        if provisional && amax < TINY {
            continue;
        }
        // BF16's bound claims all of f32, but values above bf16::MAX
        // round to infinity (finding, see README).
        if provisional && ty == GgmlType::BF16 && amax > half::bf16::MAX.to_f32() {
            continue;
        }
        let mut tol = f64::from(bound.rel) * f64::from(amax) + f64::from(bound.abs);
        if provisional && !bound.derived {
            tol = 2.0 * f64::from(bound.rel) * f64::from(amax) + f64::from(bound.abs) + subnormal_term(ty);
        }
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

    /// The fuzz findings against `numerics::error_bound` (see README) stay
    /// covered by the provisional slack: tiny Q8_K and MXFP4 blocks, BF16
    /// at f32::MAX, fp16-subnormal super-block scales of the k-quants.
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
            if let Err(why) = check_with(ty, &row, true) {
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
    }
}
