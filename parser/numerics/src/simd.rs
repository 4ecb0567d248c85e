//! SSE2 kernels (baseline x86-64, no run-time detection) for the three
//! types where LLVM's auto-vectorised scalar loops lost to gcc's build of
//! ggml: Q8_0, Q8_K and Q4_K. LLVM widens bytes with 4-byte loads and more
//! shuffles than needed; these use one 16-byte load per 16 values.
//!
//! Every kernel is bit-identical to the scalar one it replaces (those stay
//! in `block32.rs` / `kquants.rs` as the reference for other targets and for
//! the equivalence tests at the bottom of this file):
//!
//! - Q8_0 / Q8_K compute `d·q` with one IEEE multiply per value, like the
//!   scalar `d * q as f32`. The bytes are widened by unpacking them into the
//!   top byte of each 32-bit lane (`q·2^24`, no shift back needed), and the
//!   scale is pre-multiplied by 2^-24. Both factors are exact whenever
//!   `d·2^-24` is exact (d zero, infinite, NaN, or |d| ≥ 2^-102, which every
//!   f16 scale satisfies), so the real product, and hence its single
//!   rounding, is the same as `d·q`. A Q8_K block with a tinier f32 scale
//!   shifts the lanes back to `q` and multiplies by `d` itself.
//! - Q4_K computes `dl·q − ml` as one multiply and one subtract, the same
//!   two roundings as the scalar code (no FMA on baseline x86-64).
//! - IQ1_S / IQ1_M compute `dl·(g + δ)` for the code-book trits g (−1, 0, 1)
//!   as one add and one multiply per lane, the scalar code's two roundings.

use super::common::{f16_to_f32, for_blocks};
use safe_arch::{
    add_m128, bitand_m128i, convert_to_m128_from_i32_m128i, load_unaligned_m128i, m128, m128i, mul_m128, set_i64_m128i,
    set_splat_i32_m128i, set_splat_m128, shr_imm_i32_m128i, shr_imm_u32_m128i, store_unaligned_m128, sub_m128,
    unpack_high_i8_m128i, unpack_high_i16_m128i, unpack_low_i8_m128i, unpack_low_i16_m128i, zeroed_m128i,
};

/// 2^-24: undoes the 24-bit left shift of the widened bytes.
const INV_2_24: f32 = 1.0 / 16_777_216.0;

/// Smallest |d| for which `d · 2^-24` is still a normal f32 (hence exact).
const MIN_EXACT: f32 = f32::MIN_POSITIVE * 16_777_216.0;

/// 16 bytes at `off` of a block (constant offsets after inlining).
#[inline(always)]
fn load16<const N: usize>(b: &[u8; N], off: usize) -> m128i {
    let mut a = [0u8; 16];
    if let Some(s) = b.get(off..off + 16) {
        a.copy_from_slice(s);
    }
    load_unaligned_m128i(&a)
}

/// Stores four lanes at `y[o..o + 4]`.
#[inline(always)]
fn store4<const N: usize>(y: &mut [f32; N], o: usize, v: m128) {
    if let Some(Ok(d)) = y.get_mut(o..o + 4).map(<&mut [f32; 4]>::try_from) {
        store_unaligned_m128(d, v);
    }
}

/// 16 signed bytes as four i32 vectors holding `q·2^24` (each byte in the
/// top byte of its lane, zeros below), in order.
#[inline(always)]
fn widen_i8_shl24(v: m128i) -> [m128i; 4] {
    let z = zeroed_m128i();
    let lo = unpack_low_i8_m128i(z, v);
    let hi = unpack_high_i8_m128i(z, v);
    [
        unpack_low_i16_m128i(z, lo),
        unpack_high_i16_m128i(z, lo),
        unpack_low_i16_m128i(z, hi),
        unpack_high_i16_m128i(z, hi),
    ]
}

/// 16 unsigned bytes as four i32 vectors of the byte values, in order.
#[inline(always)]
fn widen_u8(v: m128i) -> [m128i; 4] {
    let z = zeroed_m128i();
    let lo = unpack_low_i8_m128i(v, z);
    let hi = unpack_high_i8_m128i(v, z);
    [
        unpack_low_i16_m128i(lo, z),
        unpack_high_i16_m128i(lo, z),
        unpack_low_i16_m128i(hi, z),
        unpack_high_i16_m128i(hi, z),
    ]
}

/// `y[o..o + 16] = q · s` for the 16 signed bytes `v`, where `s` holds
/// `d · 2^-24` (exact: see [`prescale`]), so each lane is `d · q` rounded once.
#[inline(always)]
fn i8x16_times_prescaled<const N: usize>(v: m128i, s: m128, y: &mut [f32; N], o: usize) {
    for (k, &x) in widen_i8_shl24(v).iter().enumerate() {
        store4(y, o + 4 * k, mul_m128(convert_to_m128_from_i32_m128i(x), s));
    }
}

/// `y[o..o + 16] = q · d` for the 16 signed bytes `v` (the lanes shifted back
/// to `q`; for scales that [`prescale`] rejects).
#[inline(always)]
fn i8x16_times<const N: usize>(v: m128i, d: m128, y: &mut [f32; N], o: usize) {
    for (k, &x) in widen_i8_shl24(v).iter().enumerate() {
        let q = shr_imm_i32_m128i::<24>(x);
        store4(y, o + 4 * k, mul_m128(convert_to_m128_from_i32_m128i(q), d));
    }
}

/// `d · 2^-24` if it is exact (see the module docs), else `None`.
#[inline(always)]
pub(crate) fn prescale(d: f32) -> Option<f32> {
    // A NaN's payload survives the multiply (quieted, as `d * q` quiets it).
    if d == 0.0 || d.is_nan() || d.abs() >= MIN_EXACT { Some(d * INV_2_24) } else { None }
}

pub(crate) fn dequant_q8_0(src: &[u8], dst: &mut [f32]) {
    for_blocks::<34, 32>(src, dst, |b, y| {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        // Every f16 value is 0, ±inf, NaN or ≥ 2^-24 in magnitude: always exact.
        let s = set_splat_m128(d * INV_2_24);
        i8x16_times_prescaled(load16(b, 2), s, y, 0);
        i8x16_times_prescaled(load16(b, 18), s, y, 16);
    });
}

pub(crate) fn dequant_q8_k(src: &[u8], dst: &mut [f32]) {
    for_blocks::<292, 256>(src, dst, |b, y| {
        let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        // Branch once per block, not per 16 values.
        match prescale(d) {
            Some(ds) => {
                let s = set_splat_m128(ds);
                for j in 0..16 {
                    i8x16_times_prescaled(load16(b, 4 + 16 * j), s, y, 16 * j);
                }
            }
            None => {
                let s = set_splat_m128(d);
                for j in 0..16 {
                    i8x16_times(load16(b, 4 + 16 * j), s, y, 16 * j);
                }
            }
        }
    });
}

/// `y[o..o + 16] = dl · q − ml` for the 16 values `q` (each < 256).
#[inline(always)]
fn u32x16_affine<const N: usize>(q: [m128i; 4], dl: f32, ml: f32, y: &mut [f32; N], o: usize) {
    let (d, m) = (set_splat_m128(dl), set_splat_m128(ml));
    for (k, &x) in q.iter().enumerate() {
        store4(y, o + 4 * k, sub_m128(mul_m128(d, convert_to_m128_from_i32_m128i(x)), m));
    }
}

/// `scales` unpacks a block's eight (d·scale, dmin·min) pairs: the caller
/// (`kquants`) passes its own, so this module depends on nothing above it.
#[inline(always)]
pub(crate) fn dequant_q4_k(src: &[u8], dst: &mut [f32], scales: impl Fn(&[u8; 144]) -> ([f32; 8], [f32; 8])) {
    for_blocks::<144, 256>(src, dst, |b, y| {
        let (dl, ml) = scales(b);
        let low = set_splat_i32_m128i(0x0f);
        for c in 0..4 {
            for h in 0..2 {
                // Widen the whole bytes once, then split the nibbles per lane.
                let w = widen_u8(load16(b, 16 + 32 * c + 16 * h));
                let o = 64 * c + 16 * h;
                u32x16_affine(w.map(|x| bitand_m128i(x, low)), dl[2 * c], ml[2 * c], y, o);
                u32x16_affine(w.map(shr_imm_u32_m128i::<4>), dl[2 * c + 1], ml[2 * c + 1], y, o + 32);
            }
        }
    });
}

/// `y[o..o + 8] = dl · (g + δ)` for the 8 signed bytes of a code-book entry
/// `grid` (little-endian): each byte sign-extended (top byte of its lane,
/// shifted back), converted, `+ δ`, `· dl`, as the scalar kernel does.
#[inline(always)]
pub(crate) fn iq1_group<const N: usize>(grid: u64, dl: f32, delta: f32, y: &mut [f32; N], o: usize) {
    let z = zeroed_m128i();
    let lo = unpack_low_i8_m128i(z, set_i64_m128i(0, grid as i64));
    let (d, e) = (set_splat_m128(dl), set_splat_m128(delta));
    for (k, w) in [unpack_low_i16_m128i(z, lo), unpack_high_i16_m128i(z, lo)].into_iter().enumerate() {
        let g = convert_to_m128_from_i32_m128i(shr_imm_i32_m128i::<24>(w));
        store4(y, o + 4 * k, mul_m128(d, add_m128(g, e)));
    }
}
