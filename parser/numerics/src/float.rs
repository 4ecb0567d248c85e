//! Plain element types: F32, F16, BF16, F64 and the integer types.
//!
//! ggml has `to_float` only for F16 and BF16 (and F32 is the identity);
//! F64 and I8..I64 have none. For those this module converts with Rust's
//! `as f32` (round to nearest even), which is what a reader of such a
//! tensor would do; it is documented as our convention, not ggml's.

use super::common::{bf16_to_f32, f32_to_bf16, f32_to_f16};
use half::{f16, slice::HalfFloatSliceExt};

pub(crate) fn dequant_f32(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(4).zip(dst.iter_mut()) {
        if let Ok(a) = <[u8; 4]>::try_from(s) {
            *d = f32::from_le_bytes(a);
        }
    }
}

pub(crate) fn dequant_f16(src: &[u8], dst: &mut [f32]) {
    // Convert in groups of 16 so that `half` can use its SIMD paths.
    const G: usize = 16;
    let mut s_groups = src.chunks_exact(2 * G);
    let mut d_groups = dst.chunks_exact_mut(G);
    for (s, d) in (&mut s_groups).zip(&mut d_groups) {
        let mut h = [f16::ZERO; G];
        for (hv, b) in h.iter_mut().zip(s.chunks_exact(2)) {
            if let Ok(a) = <[u8; 2]>::try_from(b) {
                *hv = f16::from_bits(u16::from_le_bytes(a));
            }
        }
        h.convert_to_f32_slice(d);
    }
    for (s, d) in s_groups.remainder().chunks_exact(2).zip(d_groups.into_remainder()) {
        if let Ok(a) = <[u8; 2]>::try_from(s) {
            *d = f16::from_bits(u16::from_le_bytes(a)).to_f32();
        }
    }
}

pub(crate) fn dequant_bf16(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        if let Ok(a) = <[u8; 2]>::try_from(s) {
            *d = bf16_to_f32(u16::from_le_bytes(a));
        }
    }
}

pub(crate) fn dequant_f64(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(8).zip(dst.iter_mut()) {
        if let Ok(a) = <[u8; 8]>::try_from(s) {
            *d = f64::from_le_bytes(a) as f32;
        }
    }
}

pub(crate) fn dequant_i8(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.iter().zip(dst.iter_mut()) {
        *d = f32::from(*s as i8);
    }
}

pub(crate) fn dequant_i16(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
        if let Ok(a) = <[u8; 2]>::try_from(s) {
            *d = f32::from(i16::from_le_bytes(a));
        }
    }
}

pub(crate) fn dequant_i32(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(4).zip(dst.iter_mut()) {
        if let Ok(a) = <[u8; 4]>::try_from(s) {
            *d = i32::from_le_bytes(a) as f32;
        }
    }
}

pub(crate) fn dequant_i64(src: &[u8], dst: &mut [f32]) {
    for (s, d) in src.chunks_exact(8).zip(dst.iter_mut()) {
        if let Ok(a) = <[u8; 8]>::try_from(s) {
            *d = i64::from_le_bytes(a) as f32;
        }
    }
}

/// Appends `N` bytes per value, `conv(value)`, written into place (one
/// resize instead of a capacity check per value).
#[inline(always)]
fn write_elements<const N: usize>(src: &[f32], dst: &mut Vec<u8>, conv: impl Fn(f32) -> [u8; N]) {
    let start = dst.len();
    dst.resize(start + src.len() * N, 0);
    if let Some(out) = dst.get_mut(start..) {
        for (o, x) in out.chunks_exact_mut(N).zip(src) {
            o.copy_from_slice(&conv(*x));
        }
    }
}

pub(crate) fn quant_f32(src: &[f32], dst: &mut Vec<u8>) {
    write_elements(src, dst, f32::to_le_bytes);
}

pub(crate) fn quant_f16(src: &[f32], dst: &mut Vec<u8>) {
    write_elements(src, dst, |x| f32_to_f16(x).to_le_bytes());
}

pub(crate) fn quant_bf16(src: &[f32], dst: &mut Vec<u8>) {
    write_elements(src, dst, |x| f32_to_bf16(x).to_le_bytes());
}
