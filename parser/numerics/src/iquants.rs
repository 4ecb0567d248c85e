//! "i-quants": lattice code-book types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
//! IQ3_XXS, IQ3_S) and the non-linear 4-bit types IQ4_NL and IQ4_XS.
//!
//! Layouts (byte ranges in one 256-element block unless noted):
//! - IQ2_XXS (66): d 0..2, then 8 × 8 bytes: 4 grid indices (u8, `IQ2XXS_GRID`)
//!   and a u32 whose bits 7l..7l+7 index `KSIGNS_IQ2XS` for group l and whose
//!   top 4 bits s give the scale d·(0.5+s)/4.
//! - IQ2_XS (74): d, qs u16[32] (9-bit grid index, 7-bit sign index), scales 66..74
//!   (two 4-bit scales per 32 elements, one per 16).
//! - IQ2_S (82): d, qs 2..34 (grid low bits), signs 34..66 (explicit), qh 66..74
//!   (2 high grid bits per group), scales 74..82.
//! - IQ3_XXS (98): d, grid indices 2..66 (`IQ3XXS_GRID`, 4 values each), then
//!   8 u32 of 4 × 7-bit sign indices + 4-bit scale: d·(0.5+s)/2.
//! - IQ3_S (110): d, qs 2..66, qh 66..74 (9th grid bit), signs 74..106,
//!   scales 106..110: d·(1+2s).
//! - IQ1_S (50): d, qs 2..34 (grid low 8 bits), qh u16[8] 34..50 (3 grid bits
//!   per group, 3-bit scale at bit 12, delta sign at bit 15): d·(2s+1)·(g ± 1/8).
//! - IQ1_M (56): qs 0..32, qh 32..48 (3 grid bits + delta sign per group of 8),
//!   scales 48..56 as 4 u16: 3-bit sub-scales, and the fp16 super-scale in the
//!   top nibbles of the four u16.
//! - IQ4_NL (18 bytes, 32 elements): d, qs[16]: y = d·KVALUES_IQ4NL[nibble].
//! - IQ4_XS (136): d, scales_h u16 2..4, scales_l 4..8, qs 8..136:
//!   6-bit scale ls per 32 elements; y = d·(ls−32)·KVALUES_IQ4NL[nibble].

use super::common::{f16_to_f32, f32_to_f16, for_blocks, half_at, le16, le32, nearest_int, put16, quant_blocks};
use super::tables::iq1_grid::IQ1S_GRID;
use super::tables::iq2_grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
use super::tables::iq3_grids::{IQ3S_GRID, IQ3XXS_GRID};
use super::tables::signs::KSIGNS_IQ2XS;
use super::tables::values::KVALUES_IQ4NL;

const IQ1_DELTA: f32 = 0.125;

/// `v` negated when `neg`. ggml writes this as a product with ±1, which the
/// reference build compiles to a sign flip: a NaN's sign flips too.
#[inline(always)]
fn signed(v: f32, neg: bool) -> f32 {
    if neg { -v } else { v }
}

#[inline(always)]
fn grid8(table: &[u64], idx: usize) -> [u8; 8] {
    table.get(idx).copied().unwrap_or(0).to_le_bytes()
}

#[inline(always)]
fn grid4(table: &[u32], idx: usize) -> [u8; 4] {
    table.get(idx).copied().unwrap_or(0).to_le_bytes()
}

#[inline(always)]
fn ksigns(i: u32) -> u8 {
    KSIGNS_IQ2XS[(i & 127) as usize]
}

#[inline(always)]
fn put8(y: &mut [f32; 256], at: usize, db: f32, g: [u8; 8], signs: u8) {
    for j in 0..8 {
        y[at + j] = signed(db * f32::from(g[j]), signs & (1 << j) != 0);
    }
}

pub(crate) fn dequant_iq2_xxs(src: &[u8], dst: &mut [f32]) {
    for_blocks::<66, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for ib in 0..8 {
            let o = 2 + 8 * ib;
            let aux1 = le32(b, o + 4);
            let db = d * (0.5 + (aux1 >> 28) as f32) * 0.25;
            for l in 0..4 {
                let g = grid8(&IQ2XXS_GRID, usize::from(b[o + l]));
                put8(y, 32 * ib + 8 * l, db, g, ksigns(aux1 >> (7 * l)));
            }
        }
    });
}

pub(crate) fn dequant_iq2_xs(src: &[u8], dst: &mut [f32]) {
    for_blocks::<74, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for ib in 0..8 {
            let sc = b[66 + ib];
            let db = [d * (0.5 + f32::from(sc & 0x0f)) * 0.25, d * (0.5 + f32::from(sc >> 4)) * 0.25];
            for l in 0..4 {
                let q = le16(b, 2 + 2 * (4 * ib + l));
                let g = grid8(&IQ2XS_GRID, usize::from(q & 511));
                put8(y, 32 * ib + 8 * l, db[l / 2], g, ksigns(u32::from(q >> 9)));
            }
        }
    });
}

pub(crate) fn dequant_iq2_s(src: &[u8], dst: &mut [f32]) {
    for_blocks::<82, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for ib in 0..8 {
            let sc = b[74 + ib];
            let db = [d * (0.5 + f32::from(sc & 0x0f)) * 0.25, d * (0.5 + f32::from(sc >> 4)) * 0.25];
            let qh = u32::from(b[66 + ib]);
            for l in 0..4 {
                let idx = u32::from(b[2 + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300);
                let g = grid8(&IQ2S_GRID, idx as usize);
                put8(y, 32 * ib + 8 * l, db[l / 2], g, b[34 + 4 * ib + l]);
            }
        }
    });
}

pub(crate) fn dequant_iq3_xxs(src: &[u8], dst: &mut [f32]) {
    for_blocks::<98, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for ib in 0..8 {
            let aux = le32(b, 66 + 4 * ib);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for l in 0..4 {
                let signs = ksigns(aux >> (7 * l));
                let g1 = grid4(&IQ3XXS_GRID, usize::from(b[2 + 8 * ib + 2 * l]));
                let g2 = grid4(&IQ3XXS_GRID, usize::from(b[2 + 8 * ib + 2 * l + 1]));
                let at = 32 * ib + 8 * l;
                for j in 0..4 {
                    y[at + j] = signed(db * f32::from(g1[j]), signs & (1 << j) != 0);
                    y[at + j + 4] = signed(db * f32::from(g2[j]), signs & (1 << (j + 4)) != 0);
                }
            }
        }
    });
}

pub(crate) fn dequant_iq3_s(src: &[u8], dst: &mut [f32]) {
    for_blocks::<110, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for ib in 0..8 {
            let sc = b[106 + ib / 2];
            let s = if ib % 2 == 0 { sc & 0x0f } else { sc >> 4 };
            let db = d * (1 + 2 * i32::from(s)) as f32;
            let qh = u32::from(b[66 + ib]);
            for l in 0..4 {
                let q1 = u32::from(b[2 + 8 * ib + 2 * l]) | ((qh << (8 - 2 * l)) & 256);
                let q2 = u32::from(b[2 + 8 * ib + 2 * l + 1]) | ((qh << (7 - 2 * l)) & 256);
                let g1 = grid4(&IQ3S_GRID, q1 as usize);
                let g2 = grid4(&IQ3S_GRID, q2 as usize);
                let signs = b[74 + 4 * ib + l];
                let at = 32 * ib + 8 * l;
                for j in 0..4 {
                    y[at + j] = signed(db * f32::from(g1[j]), signs & (1 << j) != 0);
                    y[at + j + 4] = signed(db * f32::from(g2[j]), signs & (1 << (j + 4)) != 0);
                }
            }
        }
    });
}

/// The three values `dl·(g + δ)` an IQ1 group decodes to (g = −1, 0, 1),
/// in slots 0..3 by `g + 1` (slot 3 unused). The same operations as per
/// element (`f32(g) + δ` is exact for these g), done once per group.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn iq1_values(dl: f32, delta: f32) -> [f32; 4] {
    [dl * (-1.0 + delta), dl * (0.0 + delta), dl * (1.0 + delta), 0.0]
}

/// One IQ1 group of 8: `dl·(g + δ)` (the SSE2 kernel on x86-64, the
/// three-value lookup elsewhere; `simd_equivalence` checks they agree).
#[inline(always)]
fn put_iq1(y: &mut [f32; 256], at: usize, dl: f32, delta: f32, idx: usize) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    super::simd::iq1_group(IQ1S_GRID.get(idx).copied().unwrap_or(0), dl, delta, y, at);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    put_iq1_scalar(y, at, &iq1_values(dl, delta), idx);
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn put_iq1_scalar(y: &mut [f32; 256], at: usize, vals: &[f32; 4], idx: usize) {
    let g = grid8(&IQ1S_GRID, idx);
    for j in 0..8 {
        y[at + j] = vals[usize::from(g[j].wrapping_add(1) & 3)];
    }
}

pub(crate) fn dequant_iq1_s(src: &[u8], dst: &mut [f32]) {
    for_blocks::<50, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for ib in 0..8 {
            let qh = le16(b, 34 + 2 * ib);
            let dl = d * (2 * i32::from((qh >> 12) & 7) + 1) as f32;
            let delta = if qh & 0x8000 != 0 { -IQ1_DELTA } else { IQ1_DELTA };
            for l in 0..4 {
                let idx = usize::from(b[2 + 4 * ib + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
                put_iq1(y, 32 * ib + 8 * l, dl, delta, idx);
            }
        }
    });
}

/// The fp16 super-scale bits of an IQ1_M block (top nibbles of its 4 scale words).
#[inline(always)]
pub(crate) fn iq1m_scale_bits<const N: usize>(b: &[u8; N], off: usize) -> u16 {
    let sc = [le16(b, off), le16(b, off + 2), le16(b, off + 4), le16(b, off + 6)];
    (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)
}

pub(crate) fn dequant_iq1_m(src: &[u8], dst: &mut [f32]) {
    for_blocks::<56, 256>(src, dst, |b, y| {
        let d = f16_to_f32(iq1m_scale_bits(b, 48));
        for ib in 0..8 {
            let sc = le16(b, 48 + 2 * (ib / 2));
            let sh = 6 * (ib % 2);
            let dl1 = d * (2 * i32::from((sc >> sh) & 7) + 1) as f32;
            let dl2 = d * (2 * i32::from((sc >> (sh + 3)) & 7) + 1) as f32;
            let (h0, h1) = (usize::from(b[32 + 2 * ib]), usize::from(b[33 + 2 * ib]));
            let q = |l: usize| usize::from(b[4 * ib + l]);
            let idx = [
                q(0) | ((h0 << 8) & 0x700),
                q(1) | ((h0 << 4) & 0x700),
                q(2) | ((h1 << 8) & 0x700),
                q(3) | ((h1 << 4) & 0x700),
            ];
            let dlt = |bit: bool| if bit { -IQ1_DELTA } else { IQ1_DELTA };
            let delta = [dlt(h0 & 0x08 != 0), dlt(h0 & 0x80 != 0), dlt(h1 & 0x08 != 0), dlt(h1 & 0x80 != 0)];
            for l in 0..4 {
                let dl = if l < 2 { dl1 } else { dl2 };
                put_iq1(y, 32 * ib + 8 * l, dl, delta[l], idx[l]);
            }
        }
    });
}

#[inline(always)]
pub(crate) fn kv4(n: u8) -> f32 {
    f32::from(KVALUES_IQ4NL[usize::from(n & 0x0f)])
}

pub(crate) fn dequant_iq4_nl(src: &[u8], dst: &mut [f32]) {
    for_blocks::<18, 32>(src, dst, |b, y| {
        let d = half_at(b, 0);
        for j in 0..16 {
            let q = b[2 + j];
            y[j] = d * kv4(q);
            y[j + 16] = d * kv4(q >> 4);
        }
    });
}

pub(crate) fn dequant_iq4_xs(src: &[u8], dst: &mut [f32]) {
    for_blocks::<136, 256>(src, dst, |b, y| {
        let d = half_at(b, 0);
        let sh = le16(b, 2);
        for ib in 0..8 {
            let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0x0f;
            let hi = ((sh >> (2 * ib)) & 3) as u8;
            let dl = d * (i32::from(lo | (hi << 4)) - 32) as f32;
            for j in 0..16 {
                let q = b[8 + 16 * ib + j];
                y[32 * ib + j] = dl * kv4(q);
                y[32 * ib + j + 16] = dl * kv4(q >> 4);
            }
        }
    });
}

// ---------------------------------------------------------------- quantizers

const GROUP_MAX_EPS: f32 = 1e-15;

/// Index of the IQ4 level nearest to `x` (bisection; the upper one wins ties,
/// and a NaN picks 15), as ggml's `best_index_int8`.
#[inline]
pub(crate) fn best_iq4(x: f32) -> u8 {
    let v = |i: usize| f32::from(KVALUES_IQ4NL[i]);
    if x <= v(0) {
        return 0;
    }
    if x >= v(15) {
        return 15;
    }
    let (mut lo, mut hi) = (0usize, 15usize);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if x < v(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    if x - v(hi - 1) < v(hi) - x { (hi - 1) as u8 } else { hi as u8 }
}

/// Scale of one 32-element group: an initial fit at the largest magnitude,
/// then `ntry` perturbed reciprocal scales (levels are kept from the first fit).
/// Returns `None` for an all-(near-)zero group.
pub(crate) fn iq4_group(xb: &[f32; 32], w: &[f32; 32], ntry: i32, levels: &mut [u8; 32]) -> Option<f32> {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in xb {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        return None;
    }
    let v0 = f32::from(KVALUES_IQ4NL[0]);
    let d0 = if ntry > 0 { -max / v0 } else { max / v0 };
    let id = 1.0 / d0;
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for j in 0..32 {
        let x = xb[j];
        levels[j] = best_iq4(id * x);
        let q = kv4(levels[j]);
        sumqx += w[j] * q * x;
        sumq2 += w[j] * q * q;
    }
    let mut d = if sumq2 > 0.0 { sumqx / sumq2 } else { 0.0 };
    let mut best = d * sumqx;
    for itry in -ntry..=ntry {
        let id = (itry + i32::from(KVALUES_IQ4NL[0])) as f32 / max;
        let (mut sqx, mut sq2) = (0.0f32, 0.0f32);
        for j in 0..32 {
            let x = xb[j];
            let q = kv4(best_iq4(id * x));
            sqx += w[j] * q * x;
            sq2 += w[j] * q * q;
        }
        if sq2 > 0.0 && sqx * sqx > best * sq2 {
            d = sqx / sq2;
            best = d * sqx;
        }
    }
    Some(d)
}

pub(crate) fn quant_iq4_nl(src: &[f32], dst: &mut Vec<u8>) {
    // ggml keeps the level buffer across blocks: an all-zero block (d = 0)
    // repeats the previous block's nibbles (the first block's are undefined
    // in ggml; here they are 0). They do not change the decoded values.
    let mut levels = [0u8; 32];
    quant_blocks::<32, 18>(src, dst, |x, out| {
        let d = iq4_group(x, &x.map(|v| v * v), -1, &mut levels).unwrap_or(0.0);
        put16(out, 0, f32_to_f16(d));
        for j in 0..16 {
            out[2 + j] = levels[j] | (levels[j + 16] << 4);
        }
    });
}

pub(crate) fn quant_iq4_xs(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<256, 136>(src, dst, |x, out| iq4_xs_block(x, None, out));
}

/// Group weights of ggml's `quantize_row_iq4_nl_impl`: x² without an
/// importance matrix, `qw · sqrt(σ² + x²)` with one, where σ² is twice the
/// mean square of the `super_block` (32 for IQ4_NL, 256 for IQ4_XS).
fn iq4_weights(xb: &[f32; 32], qw: Option<&[f32]>, sigma2: f32) -> [f32; 32] {
    match qw {
        Some(q) => {
            let mut w = [0.0f32; 32];
            for j in 0..32 {
                w[j] = q.get(j).copied().unwrap_or(0.0) * (sigma2 + xb[j] * xb[j]).sqrt();
            }
            w
        }
        None => xb.map(|v| v * v),
    }
}

fn iq4_sigma2(x: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for v in x {
        s += v * v;
    }
    s * (2.0 / x.len() as f32)
}

/// One IQ4_XS super-block as `quantize_iq4_xs` (ntry 7) writes it, with
/// optional importance weights for its 256 elements.
pub(crate) fn iq4_xs_block(x: &[f32; 256], qw: Option<&[f32]>, out: &mut [u8; 136]) {
    let sigma2 = iq4_sigma2(x);
    let mut scales = [0.0f32; 8];
    let (mut max_scale, mut amax_scale) = (0.0f32, 0.0f32);
    let mut groups = [[0.0f32; 32]; 8];
    for (ib, g) in groups.iter_mut().enumerate() {
        g.copy_from_slice(&x[32 * ib..32 * ib + 32]);
        let w = iq4_weights(g, qw.and_then(|q| q.get(32 * ib..32 * ib + 32)), sigma2);
        let mut scratch = [0u8; 32];
        let d = iq4_group(g, &w, 7, &mut scratch).unwrap_or(0.0);
        scales[ib] = d;
        if d.abs() > amax_scale {
            amax_scale = d.abs();
            max_scale = d;
        }
    }
    let d = -max_scale / 32.0;
    put16(out, 0, f32_to_f16(d));
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sh = 0u16;
    for (ib, g) in groups.iter().enumerate() {
        let l = nearest_int(id * scales[ib]).clamp(-32, 31);
        let dl = d * l as f32;
        let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
        for j in 0..16 {
            let lo = best_iq4(idl * g[j]);
            let hi = best_iq4(idl * g[j + 16]);
            out[8 + 16 * ib + j] = lo | (hi << 4);
        }
        let l = (l + 32) as u8;
        out[4 + ib / 2] |= (l & 0x0f) << (4 * (ib % 2));
        sh |= u16::from(l >> 4) << (2 * ib);
    }
    put16(out, 2, sh);
}

/// One IQ4_NL block as `quantize_iq4_nl` writes it (ntry 7, then every
/// level re-chosen from the unrounded scale), with optional weights.
pub(crate) fn iq4_nl_block(x: &[f32; 32], qw: Option<&[f32]>, out: &mut [u8; 18]) {
    let w = iq4_weights(x, qw, iq4_sigma2(x));
    let mut levels = [0u8; 32];
    let d = iq4_group(x, &w, 7, &mut levels).unwrap_or(0.0);
    put16(out, 0, f32_to_f16(d));
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for j in 0..16 {
        out[2 + j] = best_iq4(id * x[j]) | (best_iq4(id * x[j + 16]) << 4);
    }
}

/// IQ4_NL as `ggml_quantize_chunk` without an importance matrix.
pub(crate) fn quant_iq4_nl_chunk(src: &[f32], dst: &mut Vec<u8>) {
    quant_blocks::<32, 18>(src, dst, |x, out| iq4_nl_block(x, None, out));
}
