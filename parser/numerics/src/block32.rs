//! The 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 and the
//! sign/2-bit types Q1_0 (128 elements) and Q2_0 (64 elements).
//!
//! Layouts (little-endian, no padding): `d` is an fp16 scale, `m` an fp16
//! offset, `qh` the packed fifth bits, `qs` the packed quants.
//! - Q4_0 `d qs[16]`: elem j = low nibble of qs[j], elem j+16 = high nibble; y = d·(q−8)
//! - Q4_1 `d m qs[16]`: y = d·q + m
//! - Q5_0 `d qh[4] qs[16]`: q = nibble | bit (j or j+16 of qh as u32) << 4; y = d·(q−16)
//! - Q5_1 `d m qh[4] qs[16]`: y = d·q + m
//! - Q8_0 `d qs[32]` (i8): y = d·q
//! - Q8_1 `d s qs[32]`: y = d·q (s = d·Σq is for dot products only)
//! - Q1_0 `d qs[16]`: bit j (LSB first) set → +d, clear → −d
//! - Q2_0 `d qs[16]`: 2 bits per element, LSB first; y = d·(q−1)

use super::common::{
    c_max, c_min, f32_to_f16, for_blocks, half_at, le32, put16, quant_blocks, round_i32, trunc_i32x32,
};

pub(crate) fn dequant_q4_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<18, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for j in 0..16 {
            let q = b[2 + j];
            y[j] = (i32::from(q & 0x0f) - 8) as f32 * d;
            y[j + 16] = (i32::from(q >> 4) - 8) as f32 * d;
        }
    });
}

pub(crate) fn dequant_q4_1(src: &[u8], dst: &mut [f32]) {
    for_blocks::<20, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        let m = half_at(b, 2);
        for j in 0..16 {
            let q = b[4 + j];
            y[j] = f32::from(q & 0x0f) * d + m;
            y[j + 16] = f32::from(q >> 4) * d + m;
        }
    });
}

pub(crate) fn dequant_q5_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<22, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        let qh = le32(b, 2);
        for j in 0..16 {
            let q = b[6 + j];
            let h0 = ((qh >> j) & 1) as u8;
            let h1 = ((qh >> (j + 16)) & 1) as u8;
            y[j] = (i32::from((q & 0x0f) | (h0 << 4)) - 16) as f32 * d;
            y[j + 16] = (i32::from((q >> 4) | (h1 << 4)) - 16) as f32 * d;
        }
    });
}

pub(crate) fn dequant_q5_1(src: &[u8], dst: &mut [f32]) {
    for_blocks::<24, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        let m = half_at(b, 2);
        let qh = le32(b, 4);
        for j in 0..16 {
            let q = b[8 + j];
            let h0 = ((qh >> j) & 1) as u8;
            let h1 = ((qh >> (j + 16)) & 1) as u8;
            y[j] = f32::from((q & 0x0f) | (h0 << 4)) * d + m;
            y[j + 16] = f32::from((q >> 4) | (h1 << 4)) * d + m;
        }
    });
}

/// Q8_0: the SSE2 kernel of `simd.rs` on x86-64, the scalar one elsewhere.
pub(crate) fn dequant_q8_0(src: &[u8], dst: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    super::simd::dequant_q8_0(src, dst);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    dequant_q8_0_scalar(src, dst);
}

/// Scalar Q8_0: the reference the SSE2 kernel is tested against.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
pub(crate) fn dequant_q8_0_scalar(src: &[u8], dst: &mut [f32]) {
    for_blocks::<34, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for j in 0..32 {
            y[j] = f32::from(b[2 + j] as i8) * d;
        }
    });
}

pub(crate) fn dequant_q8_1(src: &[u8], dst: &mut [f32]) {
    for_blocks::<36, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for j in 0..32 {
            y[j] = f32::from(b[4 + j] as i8) * d;
        }
    });
}

pub(crate) fn dequant_q1_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<18, 128>(src, dst, |b, y| {
        let d = half_at(b, 0);
        let nd = -d;
        for j in 0..128 {
            let bit = (b[2 + j / 8] >> (j % 8)) & 1;
            y[j] = if bit != 0 { d } else { nd };
        }
    });
}

pub(crate) fn dequant_q2_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<18, 64>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for j in 0..64 {
            let q = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
            y[j] = (i32::from(q) - 1) as f32 * d;
        }
    });
}

/// Signed value of largest magnitude (first one wins ties; NaNs are skipped):
/// ggml's `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`.
///
/// Two passes with the same result: the largest magnitude over four lanes
/// (`a > acc ? a : acc` per lane skips NaNs and, on non-negative values,
/// does not depend on the order), then the first element of that
/// magnitude, which is where the one-pass loop last raised `amax`. When the
/// largest magnitude is 0 the loop never raises it and returns +0.
#[inline]
fn signed_absmax(x: &[f32; 32]) -> f32 {
    let mut lanes = [0.0f32; 4];
    for c in x.chunks_exact(4) {
        for l in 0..4 {
            lanes[l] = c_max(c[l].abs(), lanes[l]);
        }
    }
    let amax = c_max(c_max(lanes[0], lanes[1]), c_max(lanes[2], lanes[3]));
    if amax == 0.0 {
        return 0.0;
    }
    x.iter().copied().find(|v| v.abs() == amax).unwrap_or(0.0)
}

/// Running `amax = amax > |v| ? amax : |v|`: a NaN element replaces the running value.
#[inline]
pub(crate) fn c_absmax(x: &[f32]) -> f32 {
    let mut amax = 0.0f32;
    for &v in x {
        let a = v.abs();
        amax = if amax > a { amax } else { a };
    }
    amax
}

/// ggml's running `if (v < min) min = v; if (v > max) max = v;` from
/// (FLT_MAX, −FLT_MAX). Over four lanes first: NaNs are skipped either
/// way, and the extremes do not depend on the order except for the sign
/// of a zero extreme (the first zero seen wins in order), so a zero
/// extreme is recomputed in order.
#[inline]
fn min_max(x: &[f32; 32]) -> (f32, f32) {
    let (mut mn, mut mx) = ([f32::MAX; 4], [-f32::MAX; 4]);
    for c in x.chunks_exact(4) {
        for l in 0..4 {
            mn[l] = c_min(c[l], mn[l]);
            mx[l] = c_max(c[l], mx[l]);
        }
    }
    let min = c_min(c_min(mn[0], mn[1]), c_min(mn[2], mn[3]));
    let max = c_max(c_max(mx[0], mx[1]), c_max(mx[2], mx[3]));
    if min != 0.0 && max != 0.0 {
        return (min, max);
    }
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in x {
        min = c_min(v, min);
        max = c_max(v, max);
    }
    (min, max)
}

#[inline(always)]
fn inv(d: f32) -> f32 {
    if d != 0.0 { 1.0 / d } else { 0.0 }
}

/// C's `MIN(max, (int8_t)f)` (as a byte) for 32 values at once.
#[inline(always)]
fn i8_min(f: &[f32; 32], max: i32) -> [u8; 32] {
    trunc_i32x32(f).map(|t| i32::from(t as i8).min(max) as u8)
}

pub(crate) fn quant_q4_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 18>(src, dst, |x, out| {
        let d = signed_absmax(x) / -8.0;
        let id = inv(d);
        put16(out, 0, f32_to_f16(d));
        let q = i8_min(&x.map(|v| v * id + 8.5), 15);
        for j in 0..16 {
            out[2 + j] = q[j] | (q[j + 16] << 4);
        }
    });
}

pub(crate) fn quant_q4_1(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 20>(src, dst, |x, out| {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = inv(d);
        put16(out, 0, f32_to_f16(d));
        put16(out, 2, f32_to_f16(min));
        let q = i8_min(&x.map(|v| (v - min) * id + 0.5), 15);
        for j in 0..16 {
            out[4 + j] = q[j] | (q[j + 16] << 4);
        }
    });
}

pub(crate) fn quant_q5_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 22>(src, dst, |x, out| {
        let d = signed_absmax(x) / -16.0;
        let id = inv(d);
        put16(out, 0, f32_to_f16(d));
        let q = i8_min(&x.map(|v| v * id + 16.5), 31);
        let mut qh = 0u32;
        for j in 0..16 {
            let (q0, q1) = (q[j], q[j + 16]);
            out[6 + j] = (q0 & 0x0f) | ((q1 & 0x0f) << 4);
            qh |= u32::from((q0 & 0x10) >> 4) << j;
            qh |= u32::from((q1 & 0x10) >> 4) << (j + 16);
        }
        out[2..6].copy_from_slice(&qh.to_le_bytes());
    });
}

pub(crate) fn quant_q5_1(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 24>(src, dst, |x, out| {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = inv(d);
        put16(out, 0, f32_to_f16(d));
        put16(out, 2, f32_to_f16(min));
        let t = trunc_i32x32(&x.map(|v| (v - min) * id + 0.5));
        let mut qh = 0u32;
        for j in 0..16 {
            let (q0, q1) = (t[j] as u8, t[j + 16] as u8);
            out[8 + j] = (q0 & 0x0f) | ((q1 & 0x0f) << 4);
            qh |= u32::from((q0 & 0x10) >> 4) << j;
            qh |= u32::from((q1 & 0x10) >> 4) << (j + 16);
        }
        out[4..8].copy_from_slice(&qh.to_le_bytes());
    });
}

pub(crate) fn quant_q8_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 34>(src, dst, |x, out| {
        let d = c_absmax(x) / 127.0;
        let id = inv(d);
        put16(out, 0, f32_to_f16(d));
        for j in 0..32 {
            out[2 + j] = round_i32(x[j] * id) as u8;
        }
    });
}

pub(crate) fn quant_q8_1(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 36>(src, dst, |x, out| {
        let d = c_absmax(x) / 127.0;
        let id = inv(d);
        put16(out, 0, f32_to_f16(d));
        let mut sum = 0i32;
        for j in 0..32 {
            let q = round_i32(x[j] * id) as i8;
            out[4 + j] = q as u8;
            sum += i32::from(q);
        }
        put16(out, 2, f32_to_f16(sum as f32 * d));
    });
}

pub(crate) fn quant_q1_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<128, 18>(src, dst, |x, out| {
        let mut sum_abs = 0.0f32;
        for v in x {
            sum_abs += v.abs();
        }
        put16(out, 0, f32_to_f16(sum_abs / 128.0));
        for (j, v) in x.iter().enumerate() {
            if *v >= 0.0 {
                out[2 + j / 8] |= 1 << (j % 8);
            }
        }
    });
}

pub(crate) fn quant_q2_0(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<64, 18>(src, dst, |x, out| {
        let mut amax = 0.0f32;
        for v in x {
            if v.abs() > amax {
                amax = v.abs();
            }
        }
        let id = if amax > 0.0 { 1.0 / amax } else { 0.0 };
        put16(out, 0, f32_to_f16(amax));
        for (j, v) in x.iter().enumerate() {
            let q = round_i32(v * id).wrapping_add(1).clamp(0, 3) as u8;
            out[2 + j / 4] |= q << (2 * (j % 4));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_of_specials() -> Vec<[f32; 32]> {
        let v = [0.0f32, -0.0, 1.0, -1.0, 2.0, -2.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-45, -3.5];
        let mut s = 0x1234_5678_9abc_def0u64;
        (0..20_000)
            .map(|_| {
                let mut b = [0f32; 32];
                for e in &mut b {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    *e = v[(s % v.len() as u64) as usize];
                }
                b
            })
            .collect()
    }

    #[test]
    fn two_pass_extremes_equal_the_one_pass_loops() {
        for b in blocks_of_specials() {
            let (mut amax, mut max) = (0.0f32, 0.0f32);
            let (mut mn, mut mx) = (f32::MAX, -f32::MAX);
            for &v in &b {
                if amax < v.abs() {
                    amax = v.abs();
                    max = v;
                }
                if v < mn {
                    mn = v;
                }
                if v > mx {
                    mx = v;
                }
            }
            assert_eq!(signed_absmax(&b).to_bits(), max.to_bits(), "{b:?}");
            let (a, c) = min_max(&b);
            assert_eq!((a.to_bits(), c.to_bits()), (mn.to_bits(), mx.to_bits()), "{b:?}");
        }
    }
}
