//! Ternary types TQ1_0 (1.6875 bpw) and TQ2_0 (2.0625 bpw), 256 elements.
//!
//! - TQ1_0 `qs[48] qh[4] d`: each byte holds 5 (qs) or 4 (qh) base-3 digits as
//!   a fixed-point fraction `byte ≈ 256·v/243`; digit n of byte q is
//!   `((q·3^n mod 256)·3) >> 8`. Element order: qs[0..32] give elements
//!   32n+m (n = digit 0..5, m = byte), qs[32..48] give 160+16n+m,
//!   qh[0..4] give 240+4n+j. y = d·(digit−1).
//! - TQ2_0 `qs[64] d`: 2 bits per element; byte 32c+m, bits 2l give element
//!   128c+32l+m; y = d·(q−1) (q = 3 decodes to 2d).

use super::block32::c_absmax;
use super::common::{f32_to_f16, for_blocks, half_at, lround, put16, quant_blocks};

const POW3: [u8; 5] = [1, 3, 9, 27, 81];

#[inline(always)]
fn trit(q: u8, n: usize) -> f32 {
    let p = q.wrapping_mul(POW3[n]);
    let t = (u16::from(p) * 3) >> 8;
    (i32::from(t) - 1) as f32
}

pub(crate) fn dequant_tq1_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<54, 256>(src, dst, |b, y| {
        let d = half_at(b, 52);
        for n in 0..5 {
            for m in 0..32 {
                y[32 * n + m] = trit(b[m], n) * d;
            }
        }
        for n in 0..5 {
            for m in 0..16 {
                y[160 + 16 * n + m] = trit(b[32 + m], n) * d;
            }
        }
        for n in 0..4 {
            for j in 0..4 {
                y[240 + 4 * n + j] = trit(b[48 + j], n) * d;
            }
        }
    });
}

pub(crate) fn dequant_tq2_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<66, 256>(src, dst, |b, y| {
        let d = half_at(b, 64);
        for c in 0..2 {
            for l in 0..4 {
                for m in 0..32 {
                    let q = (b[32 * c + m] >> (2 * l)) & 3;
                    y[128 * c + 32 * l + m] = (i32::from(q) - 1) as f32 * d;
                }
            }
        }
    });
}

/// Digit 0, 1 or 2 for -1, 0, +1 (C: `(int)(lroundf(v) + 1)`, wrapping).
#[inline(always)]
fn digit(v: f32) -> u8 {
    lround(v).wrapping_add(1) as i32 as u8
}

/// Packs base-3 digits (first one most significant) into a byte fraction.
#[inline(always)]
fn pack(digits: impl Iterator<Item = u8>, extra_shift: bool) -> u8 {
    let mut q = 0u8;
    for t in digits {
        q = q.wrapping_mul(3).wrapping_add(t);
    }
    if extra_shift {
        q = q.wrapping_mul(3);
    }
    (u32::from(q) * 256).div_ceil(243) as u8
}

pub(crate) fn quant_tq1_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<256, 54>(src, dst, |x, out| {
        let d = c_absmax(x);
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        put16(out, 52, f32_to_f16(d));
        for m in 0..32 {
            out[m] = pack((0..5).map(|n| digit(x[m + 32 * n] * id)), false);
        }
        for m in 0..16 {
            out[32 + m] = pack((0..5).map(|n| digit(x[160 + m + 16 * n] * id)), false);
        }
        for j in 0..4 {
            out[48 + j] = pack((0..4).map(|n| digit(x[240 + j + 4 * n] * id)), true);
        }
    });
}

pub(crate) fn quant_tq2_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<256, 66>(src, dst, |x, out| {
        let d = c_absmax(x);
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        put16(out, 64, f32_to_f16(d));
        for c in 0..2 {
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    let t = lround(x[128 * c + m + 32 * n] * id).wrapping_add(1) as i32;
                    q = q.wrapping_add(((t & 3) << (2 * n)) as u8);
                }
                out[32 * c + m] = q;
            }
        }
    });
}
