//! K-quants: 256-element super-blocks with packed 4- or 6-bit sub-block
//! scales (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and the f32-scaled Q8_K.
//!
//! Layouts (byte ranges inside one block):
//! - Q2_K (84): scales 0..16 (low nibble scale, high nibble min, one per 16
//!   elements), qs 16..80 (2 bits), d 80..82, dmin 82..84.
//!   y = d·(sc&15)·q − dmin·(sc>>4).
//! - Q3_K (110): hmask 0..32 (third bit), qs 32..96 (2 bits), scales 96..108
//!   (16 × 6 bits: low nibbles in bytes 0..8, top 2 bits in bytes 8..12), d 108..110.
//!   y = d·(s−32)·(q − (hbit ? 0 : 4)).
//! - Q4_K (144): d 0..2, dmin 2..4, scales 4..16 (8 × 6-bit scale and min),
//!   qs 16..144 (nibbles). y = d·sc·q − dmin·m.
//! - Q5_K (176): d, dmin, scales 4..16, qh 16..48, qs 48..176. As Q4_K with a
//!   fifth bit.
//! - Q6_K (210): ql 0..128, qh 128..192, scales 192..208 (i8), d 208..210.
//!   y = d·sc·(q−32).
//! - Q8_K (292): d (f32) 0..4, qs 4..260 (i8), bsums 260..292 (i16 sums of 16).
//!
//! In each 128-element half, 2-bit fields of byte l use shift 2j for the
//! j-th run of 32 elements (Q2_K, Q3_K, Q6_K's high bits).

use super::common::{f16_to_f32, f32_to_f16, for_blocks, half_at, nearest_int, put16, quant_blocks};

/// The 6-bit (scale, min) pair `j` of the 12-byte Q4_K/Q5_K scale field.
#[inline(always)]
pub(crate) fn scale_min(j: usize, s: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// The 16 six-bit Q3_K scales, minus 32.
#[inline(always)]
pub(crate) fn q3_scales(s: &[u8; 12]) -> [i32; 16] {
    let mut out = [0i32; 16];
    for (k, o) in out.iter_mut().enumerate() {
        let low = if k < 8 { s[k] & 0x0f } else { s[k - 8] >> 4 };
        let high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        *o = i32::from(low | (high << 4)) - 32;
    }
    out
}

#[inline(always)]
fn sub12<const N: usize>(b: &[u8; N], off: usize) -> [u8; 12] {
    let mut s = [0u8; 12];
    s.copy_from_slice(&b[off..off + 12]);
    s
}

pub(crate) fn dequant_q2_k(src: &[u8], dst: &mut [f32]) {
    for_blocks::<84, 256>(src, dst, |b, y| {
        let d = half_at(b, 80);
        let dmin = half_at(b, 82);
        for n in 0..2 {
            for j in 0..4 {
                let shift = 2 * j;
                for h in 0..2 {
                    let sc = b[8 * n + 2 * j + h];
                    let dl = d * f32::from(sc & 0x0f);
                    let ml = dmin * f32::from(sc >> 4);
                    let base = 128 * n + 32 * j + 16 * h;
                    for l in 0..16 {
                        let q = (b[16 + 32 * n + 16 * h + l] >> shift) & 3;
                        y[base + l] = dl * f32::from(q) - ml;
                    }
                }
            }
        }
    });
}

pub(crate) fn dequant_q3_k(src: &[u8], dst: &mut [f32]) {
    for_blocks::<110, 256>(src, dst, |b, y| {
        let d = half_at(b, 108);
        let sc = q3_scales(&sub12(b, 96));
        for n in 0..2 {
            for j in 0..4 {
                let shift = 2 * j;
                let mask = 1u8 << (4 * n + j);
                for h in 0..2 {
                    let dl = d * sc[8 * n + 2 * j + h] as f32;
                    let base = 128 * n + 32 * j + 16 * h;
                    for l in 0..16 {
                        let q = i32::from((b[32 + 32 * n + 16 * h + l] >> shift) & 3);
                        let hb = if b[16 * h + l] & mask != 0 { 0 } else { 4 };
                        y[base + l] = dl * (q - hb) as f32;
                    }
                }
            }
        }
    });
}

/// The eight (d·scale, dmin·min) pairs of a Q4_K/Q5_K block, unpacked once.
#[inline(always)]
pub(crate) fn k4_scales<const N: usize>(b: &[u8; N]) -> ([f32; 8], [f32; 8]) {
    let d = half_at(b, 0);
    let dmin = half_at(b, 2);
    let s = sub12(b, 4);
    let mut dl = [0f32; 8];
    let mut ml = [0f32; 8];
    for j in 0..8 {
        let (sc, m) = scale_min(j, &s);
        dl[j] = d * f32::from(sc);
        ml[j] = dmin * f32::from(m);
    }
    (dl, ml)
}

/// `N` consecutive bytes of a block as an array (constant offsets after
/// inlining, so the check folds away).
#[inline(always)]
fn arr<const N: usize, const M: usize>(b: &[u8; M], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// Q4_K: the SSE2 kernel of `simd.rs` on x86-64, the scalar one elsewhere.
pub(crate) fn dequant_q4_k(src: &[u8], dst: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    super::simd::dequant_q4_k(src, dst, k4_scales);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    dequant_q4_k_scalar(src, dst);
}

/// Scalar Q4_K: the reference the SSE2 kernel is tested against.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
pub(crate) fn dequant_q4_k_scalar(src: &[u8], dst: &mut [f32]) {
    for_blocks::<144, 256>(src, dst, |b, y| {
        let (dl, ml) = k4_scales(b);
        // 16 bytes at a time: one load feeds 16 low and 16 high nibbles.
        for c in 0..4 {
            let (d1, m1, d2, m2) = (dl[2 * c], ml[2 * c], dl[2 * c + 1], ml[2 * c + 1]);
            for h in 0..2 {
                let q: [u8; 16] = arr(b, 16 + 32 * c + 16 * h);
                let o = 64 * c + 16 * h;
                let mut lo = [0f32; 16];
                let mut hi = [0f32; 16];
                for l in 0..16 {
                    lo[l] = d1 * f32::from(q[l] & 0x0f) - m1;
                    hi[l] = d2 * f32::from(q[l] >> 4) - m2;
                }
                y[o..o + 16].copy_from_slice(&lo);
                y[o + 32..o + 48].copy_from_slice(&hi);
            }
        }
    });
}

pub(crate) fn dequant_q5_k(src: &[u8], dst: &mut [f32]) {
    for_blocks::<176, 256>(src, dst, |b, y| {
        let (dl, ml) = k4_scales(b);
        let qh: [u8; 32] = arr(b, 16);
        for c in 0..4 {
            let (d1, m1, d2, m2) = (dl[2 * c], ml[2 * c], dl[2 * c + 1], ml[2 * c + 1]);
            let (u1, u2) = (1u8 << (2 * c), 2u8 << (2 * c));
            let q: [u8; 32] = arr(b, 48 + 32 * c);
            // Build the 5-bit values with byte-wide operations first (16
            // lanes per SSE2 op), then convert: fewer mask ops than
            // assembling them in 32-bit lanes.
            let mut v1 = [0u8; 32];
            let mut v2 = [0u8; 32];
            for l in 0..32 {
                v1[l] = (q[l] & 0x0f) | if qh[l] & u1 != 0 { 16 } else { 0 };
                v2[l] = (q[l] >> 4) | if qh[l] & u2 != 0 { 16 } else { 0 };
            }
            let (lo, hi) = y[64 * c..64 * c + 64].split_at_mut(32);
            for l in 0..32 {
                lo[l] = d1 * f32::from(v1[l]) - m1;
            }
            for l in 0..32 {
                hi[l] = d2 * f32::from(v2[l]) - m2;
            }
        }
    });
}

pub(crate) fn dequant_q6_k(src: &[u8], dst: &mut [f32]) {
    for_blocks::<210, 256>(src, dst, |b, y| {
        let d = half_at(b, 208);
        for n in 0..2 {
            let ql = 64 * n;
            let qh = 128 + 32 * n;
            let sc = 192 + 8 * n;
            for l in 0..32 {
                let is = l / 16;
                let h = b[qh + l];
                let q1 = i32::from((b[ql + l] & 0x0f) | ((h & 3) << 4)) - 32;
                let q2 = i32::from((b[ql + l + 32] & 0x0f) | (((h >> 2) & 3) << 4)) - 32;
                let q3 = i32::from((b[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
                let q4 = i32::from((b[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
                let s = |k: usize| f32::from(b[sc + is + k] as i8);
                y[128 * n + l] = d * s(0) * q1 as f32;
                y[128 * n + l + 32] = d * s(2) * q2 as f32;
                y[128 * n + l + 64] = d * s(4) * q3 as f32;
                y[128 * n + l + 96] = d * s(6) * q4 as f32;
            }
        }
    });
}

/// Q8_K: the SSE2 kernel of `simd.rs` on x86-64, the scalar one elsewhere.
pub(crate) fn dequant_q8_k(src: &[u8], dst: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    super::simd::dequant_q8_k(src, dst);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    dequant_q8_k_scalar(src, dst);
}

/// Scalar Q8_K: the reference the SSE2 kernel is tested against.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
pub(crate) fn dequant_q8_k_scalar(src: &[u8], dst: &mut [f32]) {
    for_blocks::<292, 256>(src, dst, |b, y| {
        let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        for j in 0..256 {
            y[j] = d * f32::from(b[4 + j] as i8);
        }
    });
}

// ---------------------------------------------------------------- quantizers

pub(crate) const GROUP_MAX_EPS: f32 = 1e-15;

/// Signed value of largest magnitude and that magnitude (first wins ties).
#[inline]
fn signed_max(x: &[f32]) -> (f32, f32) {
    let (mut max, mut amax) = (0.0f32, 0.0f32);
    for &v in x {
        let a = v.abs();
        if a > amax {
            amax = a;
            max = v;
        }
    }
    (max, amax)
}

/// Symmetric scale search over 19 candidate scales (ggml's
/// `make_qx_quants` with `rmse_type` 1): weights `qw` when given, x²
/// otherwise. Writes levels `l + nmax` into `out`.
pub(crate) fn qx_search<const N: usize>(nmax: i32, x: &[f32; N], qw: Option<&[f32; N]>, out: &mut [i32; N]) -> f32 {
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        *out = [0; N];
        return 0.0;
    }
    let weight = |i: usize| qw.map_or(x[i] * x[i], |w| w[i]);
    let level = |is: f32, v: f32| nearest_int(is * v).clamp(-nmax, nmax - 1);
    let iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for i in 0..N {
        let v = x[i];
        let l = level(iscale, v);
        out[i] = l + nmax;
        let w = weight(i);
        sumlx += w * v * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    // The 18 trial scales' sums do not depend on which trial wins, so they
    // are accumulated side by side (each one over i in order, as ggml does:
    // the same sums, in lanes the compiler can vectorise), then the trials
    // are accepted in ggml's order.
    let mut isc = [0.0f32; 18];
    for (k, is) in (-9..=9).filter(|&i| i != 0).enumerate() {
        isc[k] = -(nmax as f32 + 0.1 * is as f32) / max;
    }
    let (mut slx, mut sl2) = ([0.0f32; 18], [0.0f32; 18]);
    for i in 0..N {
        let v = x[i];
        let w = weight(i);
        let wv = w * v;
        for k in 0..18 {
            let l = level(isc[k], v) as f32;
            slx[k] += wv * l;
            sl2[k] += w * l * l;
        }
    }
    for k in 0..18 {
        if sl2[k] > 0.0 && slx[k] * slx[k] > best * sl2[k] {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = nmax + level(isc[k], v);
            }
            scale = slx[k] / sl2[k];
            best = scale * slx[k];
        }
    }
    scale
}

/// Symmetric 3-bit search with coordinate-descent refinement (ggml's
/// `make_q3_quants` with `do_rmse`). Writes levels `l + 4` into `out`.
fn q3_search(x: &[f32; 16], out: &mut [i32; 16]) -> f32 {
    const NMAX: i32 = 4;
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        *out = [0; 16];
        return 0.0;
    }
    let iscale = -(NMAX as f32) / max;
    // Levels and products element by element, then the sums in order.
    let (mut tx, mut t2) = ([0.0f32; 16], [0.0f32; 16]);
    for i in 0..16 {
        let v = x[i];
        let l = nearest_int(iscale * v).clamp(-NMAX, NMAX - 1);
        out[i] = l;
        let (w, lf) = (v * v, l as f32);
        tx[i] = w * v * lf;
        t2[i] = w * lf * lf;
    }
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for i in 0..16 {
        sumlx += tx[i];
        suml2 += t2[i];
    }
    for _ in 0..5 {
        let mut changed = 0;
        for (o, &v) in out.iter_mut().zip(x) {
            let w = v * v;
            let cur = *o as f32;
            let mut slx = sumlx - w * v * cur;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * cur * cur;
                let new_l = nearest_int(v * sl2 / slx).clamp(-NMAX, NMAX - 1);
                if new_l != *o {
                    slx += w * v * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *o = new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed += 1;
                    }
                }
            }
        }
        if changed == 0 {
            break;
        }
    }
    for o in out.iter_mut() {
        *o += NMAX;
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// Parameters of the asymmetric (scale, min) search.
pub(crate) struct AsymSearch {
    pub(crate) nmax: i32,
    pub(crate) rmin: f32,
    pub(crate) rdelta: f32,
    pub(crate) nstep: i32,
    pub(crate) use_mad: bool,
}

/// Weighted least-squares search for a (scale, min) pair with levels
/// 0..=nmax (ggml's `make_qkx2_quants`). Returns (scale, −min).
pub(crate) fn asym_search<const N: usize>(p: &AsymSearch, x: &[f32; N], w: &[f32; N], out: &mut [u8; N]) -> (f32, f32) {
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = w[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..N {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        *out = [0; N];
        return (0.0, -min);
    }
    let nmax = p.nmax;
    let err = |diff: f32| if p.use_mad { diff.abs() } else { diff * diff };
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..N {
        let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        out[i] = l as u8;
        best_error += w[i] * err(scale * l as f32 + min - x[i]);
    }
    // Each trial: the levels and the per-element products first (element
    // by element, independent: vectorisable), then the sums in ggml's order.
    // `x − min` changes only when a trial wins.
    let mut xm = x.map(|v| v - min);
    for is in 0..=p.nstep {
        iscale = (p.rmin + p.rdelta * is as f32 + nmax as f32) / (max - min);
        let mut aux = [0u8; N];
        for i in 0..N {
            aux[i] = nearest_int(iscale * xm[i]).clamp(0, nmax) as u8;
        }
        let mut wl = [0.0f32; N];
        for i in 0..N {
            wl[i] = w[i] * f32::from(aux[i]);
        }
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..N {
            sum_l += wl[i];
            sum_l2 += wl[i] * f32::from(aux[i]);
            sum_xl += wl[i] * x[i];
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut terms = [0.0f32; N];
            for i in 0..N {
                terms[i] = w[i] * err(this_scale * f32::from(aux[i]) + this_min - x[i]);
            }
            let mut cur = 0.0f32;
            for t in terms {
                cur += t;
            }
            if cur < best_error {
                *out = aux;
                best_error = cur;
                scale = this_scale;
                min = this_min;
                xm = x.map(|v| v - min);
            }
        }
    }
    (scale, -min)
}

#[inline(always)]
pub(crate) fn sub<const N: usize>(x: &[f32; 256], start: usize) -> [f32; N] {
    let mut a = [0.0f32; N];
    a.copy_from_slice(&x[start..start + N]);
    a
}

/// Packs 2-bit levels: byte 32h+l holds elements 128h+l+32k at bits 2k.
pub(crate) fn pack2<const TS: usize>(levels: &[u8; 256], out: &mut [u8; TS], off: usize) {
    for h in 0..2 {
        for l in 0..32 {
            let e = 128 * h + l;
            let v = levels[e] | (levels[e + 32] << 2) | (levels[e + 64] << 4) | (levels[e + 96] << 6);
            if let Some(o) = out.get_mut(off + 32 * h + l) {
                *o = v;
            }
        }
    }
}

pub(crate) fn quant_q2_k(src: &[f32], dst: &mut Vec<u8>) {
    const P: AsymSearch = AsymSearch { nmax: 3, rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: true };
    quant_blocks::<256, 84>(src, dst, |x, out| {
        let mut levels = [0u8; 256];
        let mut scales = [0.0f32; 16];
        let mut mins = [0.0f32; 16];
        let (mut max_scale, mut max_min) = (0.0f32, 0.0f32);
        for j in 0..16 {
            let xs: [f32; 16] = sub(x, 16 * j);
            let w = xs.map(f32::abs);
            let mut l = [0u8; 16];
            let (s, m) = asym_search(&P, &xs, &w, &mut l);
            levels[16 * j..16 * j + 16].copy_from_slice(&l);
            scales[j] = s;
            mins[j] = m;
            if s > max_scale {
                max_scale = s;
            }
            if m > max_min {
                max_min = m;
            }
        }
        if max_scale > 0.0 {
            let iscale = 15.0 / max_scale;
            for j in 0..16 {
                out[j] = nearest_int(iscale * scales[j]) as u8;
            }
            put16(out, 80, f32_to_f16(max_scale / 15.0));
        } else {
            put16(out, 80, f32_to_f16(0.0));
        }
        if max_min > 0.0 {
            let iscale = 15.0 / max_min;
            for j in 0..16 {
                out[j] |= nearest_int(iscale * mins[j]).wrapping_shl(4) as u8;
            }
            put16(out, 82, f32_to_f16(max_min / 15.0));
        } else {
            put16(out, 82, f32_to_f16(0.0));
        }
        let dd = half_at(out, 80);
        let dm = half_at(out, 82);
        for j in 0..16 {
            let d = dd * f32::from(out[j] & 0x0f);
            if d == 0.0 {
                continue;
            }
            let m = dm * f32::from(out[j] >> 4);
            for i in 16 * j..16 * j + 16 {
                levels[i] = nearest_int((x[i] + m) / d).clamp(0, 3) as u8;
            }
        }
        pack2(&levels, out, 16);
    });
}

pub(crate) fn quant_q3_k(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<256, 110>(src, dst, |x, out| {
        let mut levels = [0i32; 256];
        let mut scales = [0.0f32; 16];
        let (mut max_scale, mut amax) = (0.0f32, 0.0f32);
        for j in 0..16 {
            let xs: [f32; 16] = sub(x, 16 * j);
            let mut l = [0i32; 16];
            scales[j] = q3_search(&xs, &mut l);
            levels[16 * j..16 * j + 16].copy_from_slice(&l);
            let a = scales[j].abs();
            if a > amax {
                amax = a;
                max_scale = scales[j];
            }
        }
        let mut sb = [0u8; 12];
        if max_scale != 0.0 {
            let iscale = -32.0 / max_scale;
            for j in 0..16 {
                let l = i32::from(nearest_int(iscale * scales[j]) as i8).clamp(-32, 31) + 32;
                if j < 8 {
                    sb[j] = (l & 0x0f) as u8;
                } else {
                    sb[j - 8] |= ((l & 0x0f) << 4) as u8;
                }
                sb[j % 4 + 8] |= ((l >> 4) << (2 * (j / 4))) as u8;
            }
            put16(out, 108, f32_to_f16(1.0 / iscale));
        } else {
            put16(out, 108, f32_to_f16(0.0));
        }
        out[96..108].copy_from_slice(&sb);
        q3_k_finish(x, &sb, &mut levels, out);
    });
}

/// Requantizes a Q3_K block against its stored scales `sb` (already in
/// `out[96..108]`, `d` at 108) and packs the levels (`l + 4`).
pub(crate) fn q3_k_finish(x: &[f32; 256], sb: &[u8; 12], levels: &mut [i32; 256], out: &mut [u8; 110]) {
    {
        let dd = half_at(out, 108);
        let sc = q3_scales(sb);
        for j in 0..16 {
            let d = dd * sc[j] as f32;
            if d == 0.0 {
                continue;
            }
            for i in 16 * j..16 * j + 16 {
                levels[i] = nearest_int(x[i] / d).clamp(-4, 3) + 4;
            }
        }
        let mut low = [0u8; 256];
        for (i, (lv, lo)) in levels.iter().zip(low.iter_mut()).enumerate() {
            let mut v = *lv;
            if v > 3 {
                out[i % 32] |= 1 << (i / 32);
                v -= 4;
            }
            *lo = v as u8;
        }
        pack2(&low, out, 32);
    }
}

/// Shared body of the Q4_K and Q5_K quantizers; returns the levels.
fn q45_k<const TS: usize>(x: &[f32; 256], p: &AsymSearch, out: &mut [u8; TS], lmax: i32) -> [u8; 256] {
    let mut levels = [0u8; 256];
    let mut scales = [0.0f32; 8];
    let mut mins = [0.0f32; 8];
    let (mut max_scale, mut max_min) = (0.0f32, 0.0f32);
    for j in 0..8 {
        let xs: [f32; 32] = sub(x, 32 * j);
        let mut sum_x2 = 0.0f32;
        for v in &xs {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        let w = xs.map(|v| av_x + v.abs());
        let mut l = [0u8; 32];
        let (s, m) = asym_search(p, &xs, &w, &mut l);
        levels[32 * j..32 * j + 32].copy_from_slice(&l);
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let ls = scales.map(|s| (nearest_int(inv_scale * s) as u8).min(63));
    let lm = mins.map(|m| (nearest_int(inv_min * m) as u8).min(63));
    q45_finish(x, &ls, &lm, max_scale / 63.0, max_min / 63.0, &mut levels, out, lmax);
    levels
}

/// Packs the 6-bit sub-block scales `ls` and mins `lm` with the super-block
/// `d` and `dmin`, then requantizes every sub-block against the stored
/// values (levels 0..=lmax). Sub-blocks whose stored scale is 0 keep `levels`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn q45_finish<const TS: usize>(
    x: &[f32; 256],
    ls: &[u8; 8],
    lm: &[u8; 8],
    d: f32,
    dmin: f32,
    levels: &mut [u8; 256],
    out: &mut [u8; TS],
    lmax: i32,
) {
    let mut sb = [0u8; 12];
    for j in 0..8 {
        let (ls, lm) = (ls[j], lm[j]);
        if j < 4 {
            sb[j] = ls;
            sb[j + 4] = lm;
        } else {
            sb[j + 4] = (ls & 0x0f) | ((lm & 0x0f) << 4);
            sb[j - 4] |= (ls >> 4) << 6;
            sb[j] |= (lm >> 4) << 6;
        }
    }
    let dbits = f32_to_f16(d);
    let mbits = f32_to_f16(dmin);
    put16(out, 0, dbits);
    put16(out, 2, mbits);
    out[4..16].copy_from_slice(&sb);
    let dd = f16_to_f32(dbits);
    let dm = f16_to_f32(mbits);
    for j in 0..8 {
        let (sc, m) = scale_min(j, &sb);
        let d = dd * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        let dmj = dm * f32::from(m);
        for i in 32 * j..32 * j + 32 {
            levels[i] = nearest_int((x[i] + dmj) / d).clamp(0, lmax) as u8;
        }
    }
}

pub(crate) fn quant_q4_k(src: &[f32], dst: &mut Vec<u8>) {
    const P: AsymSearch = AsymSearch { nmax: 15, rmin: -1.0, rdelta: 0.1, nstep: 20, use_mad: false };
    quant_blocks::<256, 144>(src, dst, |x, out| {
        let levels = q45_k(x, &P, out, 15);
        pack_q4_k(&levels, out);
    });
}

/// Q4_K nibbles: byte 32c+l holds elements 64c+l (low) and 64c+32+l (high).
pub(crate) fn pack_q4_k(levels: &[u8; 256], out: &mut [u8; 144]) {
    for c in 0..4 {
        for l in 0..32 {
            out[16 + 32 * c + l] = levels[64 * c + l] | (levels[64 * c + 32 + l] << 4);
        }
    }
}

pub(crate) fn quant_q5_k(src: &[f32], dst: &mut Vec<u8>) {
    const P: AsymSearch = AsymSearch { nmax: 31, rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: false };
    quant_blocks::<256, 176>(src, dst, |x, out| {
        let levels = q45_k(x, &P, out, 31);
        pack_q5_k(&levels, out);
    });
}

/// Q5_K: low nibbles as Q4_K at 48.., fifth bits in qh (16..48).
pub(crate) fn pack_q5_k(levels: &[u8; 256], out: &mut [u8; 176]) {
    {
        for c in 0..4 {
            let m1 = 1u8 << (2 * c);
            let m2 = 2u8 << (2 * c);
            for j in 0..32 {
                let mut l1 = levels[64 * c + j];
                if l1 > 15 {
                    l1 -= 16;
                    out[16 + j] |= m1;
                }
                let mut l2 = levels[64 * c + 32 + j];
                if l2 > 15 {
                    l2 -= 16;
                    out[16 + j] |= m2;
                }
                out[48 + 32 * c + j] = l1 | (l2 << 4);
            }
        }
    }
}

pub(crate) fn quant_q6_k(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<256, 210>(src, dst, |x, out| q6_k_block(x, None, out));
}

/// One Q6_K block; `qw` (256 importance weights) replaces the x² weights
/// of the sub-block search, as in ggml's `quantize_row_q6_K_impl`.
pub(crate) fn q6_k_block(x: &[f32; 256], qw: Option<&[f32; 256]>, out: &mut [u8; 210]) {
    {
        let mut levels = [0i32; 256];
        let mut scales = [0.0f32; 16];
        let (mut max_scale, mut max_abs) = (0.0f32, 0.0f32);
        for ib in 0..16 {
            let xs: [f32; 16] = sub(x, 16 * ib);
            let mut l = [0i32; 16];
            let w: Option<[f32; 16]> = qw.map(|q| sub(q, 16 * ib));
            let s = qx_search(32, &xs, w.as_ref(), &mut l);
            levels[16 * ib..16 * ib + 16].copy_from_slice(&l);
            scales[ib] = s;
            if s.abs() > max_abs {
                max_abs = s.abs();
                max_scale = s;
            }
        }
        if max_abs < GROUP_MAX_EPS {
            return; // all-zero block, d = +0
        }
        let iscale = -128.0 / max_scale;
        put16(out, 208, f32_to_f16(1.0 / iscale));
        for ib in 0..16 {
            out[192 + ib] = nearest_int(iscale * scales[ib]).min(127) as u8;
        }
        let dd = half_at(out, 208);
        for j in 0..16 {
            let d = dd * f32::from(out[192 + j] as i8);
            if d == 0.0 {
                continue;
            }
            for i in 16 * j..16 * j + 16 {
                levels[i] = nearest_int(x[i] / d).clamp(-32, 31) + 32;
            }
        }
        for h in 0..2 {
            for l in 0..32 {
                let e = 128 * h + l;
                let q = [levels[e], levels[e + 32], levels[e + 64], levels[e + 96]].map(|v| v as u8);
                out[64 * h + l] = (q[0] & 0x0f) | ((q[2] & 0x0f) << 4);
                out[64 * h + l + 32] = (q[1] & 0x0f) | ((q[3] & 0x0f) << 4);
                out[128 + 32 * h + l] = (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6);
            }
        }
    }
}

pub(crate) fn quant_q8_k(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<256, 292>(src, dst, |x, out| {
        let (max, amax) = signed_max(x);
        if amax == 0.0 {
            return; // d = 0, qs = 0 (ggml leaves bsums untouched; we write 0)
        }
        let iscale = -127.0 / max;
        for j in 0..256 {
            out[4 + j] = nearest_int(iscale * x[j]).min(127) as u8;
        }
        for g in 0..16 {
            let mut sum = 0i32;
            for k in 0..16 {
                sum += i32::from(out[4 + 16 * g + k] as i8);
            }
            out[260 + 2 * g..262 + 2 * g].copy_from_slice(&(sum as i16).to_le_bytes());
        }
        out[0..4].copy_from_slice(&(1.0 / iscale).to_le_bytes());
    });
}
