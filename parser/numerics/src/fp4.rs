//! Micro-scaled FP4 formats: MXFP4 (32 elements, one E8M0 exponent) and
//! NVFP4 (64 elements, four UE4M3 scales of 16 elements each).
//!
//! The 4-bit codes are E2M1 values; ggml keeps them doubled as small
//! integers (`KVALUES_FP4` = {0, 1, 2, 3, 4, 6, 8, 12, and negatives}), so
//! both scale decoders return half the true scale.
//! - MXFP4 `e qs[16]`: y = kv[nibble] · 2^(e−128) (e = 0, 1 are subnormal f32;
//!   e = 0xFF is not treated as NaN: it decodes to 2^127)
//! - NVFP4 `d[4] qs[32]`: sub-block s uses bytes qs[8s..8s+8]: low nibbles are
//!   elements 16s..16s+8, high nibbles 16s+8..16s+16; y = kv[nibble] · ue4m3(d[s])/2

use super::common::{for_blocks, quant_blocks, trunc_i32};
use super::tables::values::KVALUES_FP4;

/// `2^(e-128)`, i.e. half the E8M0 value `2^(e-127)`, as ggml decodes it.
#[inline(always)]
pub(crate) fn e8m0_half(e: u8) -> f32 {
    if e < 2 { f32::from_bits(0x0020_0000 << e) } else { f32::from_bits(u32::from(e - 1) << 23) }
}

const fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7f {
        return 0.0;
    }
    let exp = ((x >> 3) & 0xf) as i32;
    let man = (x & 7) as u32;
    // subnormal: man·2^-9; normal: (8+man)/8·2^(exp-7); then halved.
    let (mant, e2) = if exp == 0 { (man, -10) } else { (8 + man, exp - 11) };
    let scale = f32::from_bits(((127 + e2) as u32) << 23);
    mant as f32 * scale
}

const fn build_ue4m3() -> [f32; 256] {
    let mut t = [0.0f32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = ue4m3_half(i as u8);
        i += 1;
    }
    t
}

/// Half of the UE4M3 value of every byte (bit 7 is ignored; 0x00 and 0x7F are 0).
pub(crate) static UE4M3_HALF: [f32; 256] = build_ue4m3();

#[inline(always)]
fn kv(n: u8) -> f32 {
    f32::from(KVALUES_FP4[usize::from(n & 0x0f)])
}

pub(crate) fn dequant_mxfp4(src: &[u8], dst: &mut [f32]) {
    for_blocks::<17, 32>(src, dst, |b, y| {
        let d = e8m0_half(b[0]);
        for j in 0..16 {
            let q = b[1 + j];
            y[j] = kv(q) * d;
            y[j + 16] = kv(q >> 4) * d;
        }
    });
}

pub(crate) fn dequant_nvfp4(src: &[u8], dst: &mut [f32]) {
    for_blocks::<36, 64>(src, dst, |b, y| {
        for s in 0..4 {
            let d = UE4M3_HALF[usize::from(b[s])];
            for j in 0..8 {
                let q = b[4 + 8 * s + j];
                y[16 * s + j] = kv(q) * d;
                y[16 * s + j + 8] = kv(q >> 4) * d;
            }
        }
    });
}

/// Index of the code whose value times `d` is nearest to `x` (first wins ties).
#[inline]
fn best_fp4(x: f32, d: f32) -> u8 {
    let mut best = 0u8;
    let mut best_err = (kv(0) * d - x).abs();
    for i in 1..16u8 {
        let err = (kv(i) * d - x).abs();
        if err < best_err {
            best = i;
            best_err = err;
        }
    }
    best
}

/// ggml's `ggml_fp32_to_ue4m3`: the UE4M3 code for a positive scale.
fn to_ue4m3(x: f32) -> u8 {
    // NaN, zero and negative scales all encode as 0.
    if x.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let mut exp = ((bits >> 23) & 0xff) as i32 - 127 + 7;
    let man = ((bits >> 20) & 7) as i32;
    if exp <= 0 {
        let m = trunc_i32(x * 512.0 + 0.5).min(7);
        return if m < 1 { 0 } else { m as u8 };
    }
    if exp >= 15 {
        return 0x7e;
    }
    let mut m = man + ((bits >> 19) & 1) as i32;
    if m > 7 {
        m = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7e;
        }
    }
    ((exp << 3) | m) as u8
}

pub(crate) fn quant_mxfp4(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 17>(src, dst, |x, out| {
        let mut amax = 0.0f32;
        for v in x {
            if amax < v.abs() {
                amax = v.abs();
            }
        }
        let e = if amax > 0.0 { trunc_i32(amax.log2().floor() - 2.0 + 127.0) as u8 } else { 0 };
        let d = e8m0_half(e);
        out[0] = e;
        for j in 0..16 {
            out[1 + j] = best_fp4(x[j], d) | (best_fp4(x[j + 16], d) << 4);
        }
    });
}

pub(crate) fn quant_nvfp4(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<64, 36>(src, dst, |x, out| {
        for (s, xb) in x.chunks_exact(16).enumerate() {
            let mut amax = 0.0f32;
            for v in xb {
                if amax < v.abs() {
                    amax = v.abs();
                }
            }
            let ue = to_ue4m3(amax / 6.0);
            out[s] = ue;
            let d = UE4M3_HALF[usize::from(ue)];
            for j in 0..8 {
                let lo = xb.get(j).map_or(0, |&v| best_fp4(v, d));
                let hi = xb.get(j + 8).map_or(0, |&v| best_fp4(v, d));
                out[4 + 8 * s + j] = lo | (hi << 4);
            }
        }
    });
}
