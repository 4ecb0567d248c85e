//! Scalar conversions with ggml's exact semantics, shared by all kernels.

use half::bf16;

/// IEEE binary16 bits to f32 (exact; NaNs come back quiet with their payload).
///
/// Inline integer arithmetic rather than `half`'s `to_f32`, which on
/// generic x86-64 checks for F16C at run time and calls out of line: the
/// block kernels convert one or two scales per block, and that call cost
/// up to 15% of Q4_K / Q5_K throughput.
#[inline(always)]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let mag = u32::from(bits & 0x7fff);
    if mag >= 0x7c00 {
        // Infinity (mantissa 0) or NaN: exponent all ones, quiet bit set.
        let quiet = if mag > 0x7c00 { 0x0040_0000 } else { 0 };
        f32::from_bits(sign | 0x7f80_0000 | quiet | ((mag & 0x3ff) << 13))
    } else if mag >= 0x0400 {
        // Normal: rebias the exponent by 127 - 15 = 112.
        f32::from_bits(sign | ((mag << 13) + (112 << 23)))
    } else {
        // Subnormal or zero: mantissa × 2^-24 is exact.
        f32::from_bits(sign | (mag as f32 * (1.0 / 16_777_216.0)).to_bits())
    }
}

/// f32 to binary16 bits as ggml's scalar `GGML_FP32_TO_FP16` does it:
/// round to nearest even, overflow to infinity, and every NaN becomes the
/// canonical quiet NaN `0x7E00` with the input's sign.
///
/// Branch-free, by float arithmetic (the method of ggml's scalar
/// conversion): |x| is scaled so that one f32 addition of a power of two
/// chosen from x's exponent rounds the mantissa to fp16's 10 bits (or to
/// the subnormal grid) with the FPU's round-to-nearest-even, and the fp16
/// fields are read from the sum's bits. A test checks it against `half`
/// on 17 million inputs and every rounding boundary of every exponent.
#[inline(always)]
pub(crate) fn f32_to_f16(x: f32) -> u16 {
    const SCALE_TO_INF: f32 = f32::from_bits(0x7780_0000); // 2^112
    const SCALE_TO_ZERO: f32 = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (x.abs() * SCALE_TO_INF) * SCALE_TO_ZERO;
    let w = x.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let nonsign = ((bits >> 13) & 0x7C00) + (bits & 0x0FFF);
    ((sign >> 16) | if shl1_w > 0xFF00_0000 { 0x7E00 } else { nonsign }) as u16
}

/// f32 to bfloat16 bits: round to nearest even; NaNs keep their top bits
/// and get the quiet bit set (ggml's `ggml_compute_fp32_to_bf16`).
#[inline]
pub(crate) fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return ((bits >> 16) as u16) | 0x0040;
    }
    bf16::from_f32(x).to_bits()
}

/// bfloat16 bits to f32 (exact: the bits shifted into the high half).
#[inline(always)]
pub(crate) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// Little-endian u16 at a constant offset of a block.
#[inline(always)]
pub(crate) fn le16<const N: usize>(b: &[u8; N], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// Little-endian u32 at a constant offset of a block.
#[inline(always)]
pub(crate) fn le32<const N: usize>(b: &[u8; N], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// fp16 scale stored little-endian at `off`, as f32.
#[inline(always)]
pub(crate) fn half_at<const N: usize>(b: &[u8; N], off: usize) -> f32 {
    f16_to_f32(le16(b, off))
}

/// C's `a < b ? a : b`. On x86-64 one `minss` (whose definition this is:
/// the second operand when either is NaN or both are zero), where LLVM
/// otherwise emits a compare-and-blend chain for running minima.
#[inline(always)]
pub(crate) fn c_min(a: f32, b: f32) -> f32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use safe_arch::{get_f32_from_m128_s, min_m128_s, set_m128_s};
        get_f32_from_m128_s(min_m128_s(set_m128_s(a), set_m128_s(b)))
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        if a < b { a } else { b }
    }
}

/// C's `a > b ? a : b` (`maxss` on x86-64).
#[inline(always)]
pub(crate) fn c_max(a: f32, b: f32) -> f32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use safe_arch::{get_f32_from_m128_s, max_m128_s, set_m128_s};
        get_f32_from_m128_s(max_m128_s(set_m128_s(a), set_m128_s(b)))
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        if a > b { a } else { b }
    }
}

/// Round to nearest (ties to even) by adding 1.5·2^23 and reading the
/// mantissa bits, which is how ggml's k-quant helpers round. Bit-exact for
/// every input, including the out-of-range ones where the result wraps.
#[inline(always)]
pub(crate) fn nearest_int(x: f32) -> i32 {
    let v = x + 12_582_912.0;
    (v.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// C's float-to-int truncation as x86-64 performs it (`cvttss2si`): NaN and
/// out-of-range values give `i32::MIN`. ggml's `(int8_t)` / `(uint8_t)`
/// casts take the low byte of this.
#[inline(always)]
pub(crate) fn trunc_i32(x: f32) -> i32 {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&x) { x as i32 } else { i32::MIN }
}

/// [`trunc_i32`] of 32 values (`cvttps2dq`, four at a time, on x86-64: the
/// same results, NaN and out of range giving `i32::MIN`).
#[inline(always)]
pub(crate) fn trunc_i32x32(f: &[f32; 32]) -> [i32; 32] {
    let mut t = [0i32; 32];
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use safe_arch::{m128, truncate_m128_to_m128i};
        for (o, c) in t.chunks_exact_mut(4).zip(f.chunks_exact(4)) {
            if let Ok(c) = <[f32; 4]>::try_from(c) {
                let r: [i32; 4] = truncate_m128_to_m128i(m128::from_array(c)).into();
                o.copy_from_slice(&r);
            }
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    for (o, &v) in t.iter_mut().zip(f) {
        *o = trunc_i32(v);
    }
    t
}

/// Round half away from zero for |x| < 2^23, without `roundf` (a libm call
/// on baseline x86-64): the truncation `t` and the fraction `x − t` are
/// exact there, and the fraction decides.
#[inline(always)]
fn round_small(x: f32) -> i32 {
    let t = x as i32;
    let d = x - t as f32;
    t + i32::from(d >= 0.5) - i32::from(d <= -0.5)
}

/// C's `(int)roundf(x)` on x86-64: at and above 2^23 every float is an
/// integer already, so it is the truncating cast ([`trunc_i32`]).
#[inline(always)]
pub(crate) fn round_i32(x: f32) -> i32 {
    if x.abs() < 8_388_608.0 { round_small(x) } else { trunc_i32(x) }
}

/// glibc's `lroundf` on x86-64: round half away from zero; NaN and values
/// beyond the i64 range give `i64::MIN`.
#[inline(always)]
pub(crate) fn lround(x: f32) -> i64 {
    if x.abs() < 8_388_608.0 {
        i64::from(round_small(x))
    } else if (-9.223_372e18..9.223_372e18).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// Writes an fp16 value little-endian into `out[off..off + 2]`.
#[inline(always)]
pub(crate) fn put16<const N: usize>(out: &mut [u8; N], off: usize, v: u16) {
    let b = v.to_le_bytes();
    out[off] = b[0];
    out[off + 1] = b[1];
}

/// Iterates over whole source blocks and whole destination blocks as
/// fixed-size arrays. The caller has checked both lengths.
#[inline(always)]
pub(crate) fn for_blocks<const TS: usize, const BS: usize>(
    src: &[u8],
    dst: &mut [f32],
    mut f: impl FnMut(&[u8; TS], &mut [f32; BS]),
) {
    for (s, d) in src.chunks_exact(TS).zip(dst.chunks_exact_mut(BS)) {
        if let (Ok(s), Ok(d)) = (<&[u8; TS]>::try_from(s), <&mut [f32; BS]>::try_from(d)) {
            f(s, d);
        }
    }
}

/// Quantizes whole input blocks into fresh output blocks appended to `dst`.
#[inline(always)]
pub(crate) fn quant_blocks<const BS: usize, const TS: usize>(
    src: &[f32],
    dst: &mut Vec<u8>,
    mut f: impl FnMut(&[f32; BS], &mut [u8; TS]),
) {
    dst.reserve(src.len() / BS * TS);
    for x in src.chunks_exact(BS) {
        if let Ok(x) = <&[f32; BS]>::try_from(x) {
            let mut out = [0u8; TS];
            f(x, &mut out);
            dst.extend_from_slice(&out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn nearest_int_rounds_ties_to_even() {
        assert_eq!(nearest_int(0.5), 0);
        assert_eq!(nearest_int(1.5), 2);
        assert_eq!(nearest_int(-2.5), -2);
        assert_eq!(nearest_int(-0.6), -1);
        assert_eq!(nearest_int(f32::NAN), 0);
    }

    #[test]
    fn c_min_max_are_the_c_conditionals() {
        let v = [0.0f32, -0.0, 1.0, -1.0, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-45, f32::MAX];
        for a in v {
            for b in v {
                let min = if a < b { a } else { b };
                let max = if a > b { a } else { b };
                assert_eq!(c_min(a, b).to_bits(), min.to_bits(), "min {a} {b}");
                assert_eq!(c_max(a, b).to_bits(), max.to_bits(), "max {a} {b}");
            }
        }
    }

    #[test]
    fn rounding_matches_roundf() {
        let specials = [0.5f32, -0.5, 1.5, -2.5, 0.499_999_97, -0.499_999_97, 8_388_607.5, -8_388_607.5, 8_388_608.0];
        let strided = (0..=u32::MAX).step_by(2039).map(f32::from_bits);
        for x in specials.into_iter().chain(strided) {
            assert_eq!(round_i32(x), trunc_i32(x.round()), "{x:e}");
            let want = if (-9.223_372e18..9.223_372e18).contains(&x) { x.round() as i64 } else { i64::MIN };
            assert_eq!(lround(x), want, "{x:e}");
        }
    }

    #[test]
    fn trunc_i32x32_matches_trunc_i32() {
        let mut f = [0f32; 32];
        for bits in (0..=u32::MAX).step_by(4099).collect::<Vec<_>>().chunks_exact(32) {
            for (v, &b) in f.iter_mut().zip(bits) {
                *v = f32::from_bits(b);
            }
            assert_eq!(trunc_i32x32(&f), f.map(trunc_i32));
        }
    }

    #[test]
    fn trunc_matches_cvttss2si() {
        assert_eq!(trunc_i32(-7.9), -7);
        assert_eq!(trunc_i32(f32::NAN), i32::MIN);
        assert_eq!(trunc_i32(3e9), i32::MIN);
        assert_eq!(trunc_i32(-2_147_483_648.0), i32::MIN);
        assert_eq!(lround(2.5), 3);
        assert_eq!(lround(-2.5), -3);
        assert_eq!(lround(f32::INFINITY), i64::MIN);
    }

    #[test]
    fn half_conversions() {
        assert_eq!(f32_to_f16(f32::NAN), 0x7E00);
        assert_eq!(f32_to_f16(-f32::NAN), 0xFE00);
        assert_eq!(f32_to_f16(65520.0), 0x7C00);
        assert_eq!(f32_to_f16(65519.0), 0x7BFF);
        assert_eq!(f32_to_bf16(f32::from_bits(0x7f80_0001)), 0x7fc0);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(bf16_to_f32(0x3f80).to_bits(), 0x3f80_0000);
    }

    #[test]
    fn f32_to_f16_matches_halfs_runtime_conversion() {
        // Every 251st bit pattern (17 million), every pattern near the
        // fp16 rounding boundaries of each exponent, and the extremes.
        let check = |bits: u32| {
            let x = f32::from_bits(bits);
            if !x.is_nan() {
                assert_eq!(f32_to_f16(x), f16::from_f32(x).to_bits(), "{bits:#010x}");
            }
        };
        for bits in (0..=u32::MAX).step_by(251) {
            check(bits);
        }
        for exp in 0u32..=255 {
            for sign in [0u32, 0x8000_0000] {
                for m in
                    [0u32, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x3000, 0x7f_e000, 0x7f_f000, 0x7f_ffff]
                {
                    check(sign | (exp << 23) | m);
                }
            }
        }
    }

    #[test]
    fn f16_to_f32_matches_half_for_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            assert_eq!(f16_to_f32(bits).to_bits(), f16::from_bits(bits).to_f32().to_bits(), "{bits:#06x}");
        }
    }
}
