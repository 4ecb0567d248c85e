//! Any type id and any block bytes through [`numerics::dequantize`].
//!
//! - no panic, for whole blocks, partial blocks and wrong output lengths
//!   (the last two must be errors);
//! - deterministic (bit-identical output twice; `dequantize_to_vec` agrees);
//! - a block whose scale fields are finite decodes to finite values,
//!   unless the scale is so large that `scale × largest code` overflows
//!   f32 (only possible for Q8_K's f32 `d`, MXFP4's E8M0 exponent and F64
//!   elements; see [`scales_ok`]);
//! - [`numerics::check_row_data`] accepts any bytes, and its findings lie
//!   inside the input.
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};
use gguf_validate_core::numerics::{self, NumericsError};
use gguf_validate_core::types::{GgmlType, TypeStatus, type_info};

/// The property.
pub fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let id = u32::from(u.arbitrary::<u8>()? % 48);
    let Some(ty) = GgmlType::from_id(id) else {
        // Not a live type: the type table must say why.
        assert!(
            type_info(id).is_none_or(|i| i.status == TypeStatus::Removed),
            "id {id} is live in the table but not a GgmlType"
        );
        return Ok(());
    };
    let ts = usize::try_from(ty.type_size()).unwrap_or(1);
    let blocks = u.int_in_range(0..=16usize)?;
    let want = blocks * ts + usize::from(u.ratio(1u8, 8)?);
    let src = u.bytes(want.min(u.len()))?;
    check(ty, src);
    Ok(())
}

/// Checks one type on one buffer (whole blocks or not).
pub fn check(ty: GgmlType, src: &[u8]) {
    let ts = usize::try_from(ty.type_size()).unwrap_or(1);
    let bs = usize::try_from(ty.block_size()).unwrap_or(1);
    // check_row_data takes any length.
    let mut findings = Vec::new();
    let summary = numerics::check_row_data(ty, src, &mut |f| findings.push(f));
    assert_eq!(summary.findings, u64::try_from(findings.len()).unwrap_or(0));
    for f in &findings {
        assert!(
            f.byte_offset <= u64::try_from(src.len()).unwrap_or(0),
            "{ty} finding at {} past {} bytes",
            f.byte_offset,
            src.len()
        );
    }

    let whole = src.len() / ts * ts;
    if whole != src.len() {
        let mut out = vec![0.0f32; src.len() / ts * bs];
        assert!(
            matches!(numerics::dequantize(ty, src, &mut out), Err(NumericsError::PartialBlock { .. })),
            "{ty}: a partial block must be refused"
        );
    }
    let src = src.get(..whole).unwrap_or_default();
    let n = whole / ts * bs;
    let mut out = vec![0.0f32; n];
    numerics::dequantize(ty, src, &mut out).unwrap_or_else(|e| panic!("{ty}: {e}"));
    if n > 0 {
        let mut short = vec![0.0f32; n - 1];
        assert!(
            matches!(numerics::dequantize(ty, src, &mut short), Err(NumericsError::OutputLength { .. })),
            "{ty}: a short output must be refused"
        );
    }
    let again = numerics::dequantize_to_vec(ty, src).unwrap_or_else(|e| panic!("{ty}: {e}"));
    assert!(out.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits()), "{ty}: two decodes differ");

    for (i, (block, values)) in src.chunks_exact(ts).zip(out.chunks_exact(bs)).enumerate() {
        if scales_ok(ty, block) {
            if let Some(j) = values.iter().position(|v| !v.is_finite()) {
                panic!(
                    "{ty} block {i}: finite scales but element {j} is {} (block {block:02x?})",
                    values.get(j).copied().unwrap_or(0.0)
                );
            }
        }
    }
}

/// Whether every scale of one block is finite and small enough that the
/// block's largest code times it stays inside f32.
pub fn scales_ok(ty: GgmlType, block: &[u8]) -> bool {
    let f32_at = |o: usize| block.get(o..o + 4).and_then(|b| <[u8; 4]>::try_from(b).ok()).map(f32::from_le_bytes);
    let f16_at = |o: usize| block.get(o..o + 2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32());
    match ty {
        // ggml's validator has no case for Q8_1; its scales are d and s.
        GgmlType::Q8_1 => [f16_at(0), f16_at(2)].iter().all(|x| x.is_some_and(f32::is_finite)),
        // d · q with q an i8.
        GgmlType::Q8_K => f32_at(0).is_some_and(|d| d.is_finite() && d.abs() <= f32::MAX / 128.0),
        // 2^(e-128) · 12 at most (largest FP4 code).
        GgmlType::MXFP4 => {
            block.first().is_some_and(|&e| e != 0xFF && 12.0 * 2f64.powi(i32::from(e) - 128) <= f64::from(f32::MAX))
        }
        GgmlType::F64 => block
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(f64::from_le_bytes)
            .is_some_and(|x| x.abs() <= f64::from(f32::MAX)),
        _ => numerics::check_row_data(ty, block, &mut |_| {}).findings == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        crate::test_n_times(500, run);
    }

    #[test]
    fn every_type_on_extreme_blocks() {
        for ty in GgmlType::ALL {
            let ts = ty.type_size() as usize;
            for fill in [0x00u8, 0xFF, 0x7F, 0x80, 0x55, 0xAA, 0x3C] {
                check(ty, &vec![fill; ts * 3]);
                check(ty, &vec![fill; ts * 2 + 1]);
            }
            check(ty, &[]);
        }
    }
}
