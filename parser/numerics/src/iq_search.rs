//! The lattice quantizers of ggml: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
//! IQ1_S and IQ1_M, as `quantize_<type>` in `ggml-quants.c` computes them
//! (`quantize_row_iq2_xxs_impl`, `_iq2_xs_impl`, `_iq2_s_impl`,
//! `_iq3_xxs_impl`, `_iq3_s_impl`, `_iq1_s_impl`, `_iq1_m_impl`).
//!
//! The IQ2/IQ3 types search a scale per sub-block: for a handful of trial
//! scales every group of 8 (IQ2) or 4 (IQ3) magnitudes is rounded to a
//! lattice point, replaced by its best neighbour in the code book when it is
//! not in it (`lattice.rs`), and the trial with the best weighted fit wins;
//! the sub-block scales are then quantized against the block's largest one.
//! IQ1_S / IQ1_M split each sub-block exhaustively into three levels
//! (sorted values, prefix sums), then move groups off the code book to
//! their best neighbour. Float operations follow ggml's order one for one
//! (no contraction: ggml-base is built for baseline x86-64, which has no FMA).
//!
//! IQ1_S / IQ1_M sort (value, index) pairs with `qsort` and a comparator
//! on the value alone. glibc's `qsort` (2.36, the reference build's) is a
//! stable top-down merge sort for arrays this small; [`msort`] is that
//! algorithm, so ties (and NaNs, which compare equal to everything) land
//! where glibc puts them.
//!
//! Where ggml aborts instead of writing a block — `GGML_ASSERT(scale >= 0)`
//! on a NaN scale, "point not on grid", or a neighbour search where every
//! distance is NaN or ≥ `FLT_MAX` (reachable only with NaN or infinite
//! values or weights, or values whose squares overflow f32) — the result
//! here is defined instead: the computation goes on as ggml's would without
//! the assertion, a group off the code book takes code-book point 0, and a
//! failed neighbour search takes the first neighbour.

use super::common::{f32_to_f16, nearest_int, put16};
use super::imatrix::{qp_search, sum_sq};
use super::lattice::{self, Lattice};

const GROUP_MAX_EPS: f32 = 1e-15;
const GROUP_MAX_EPS_IQ3_XXS: f32 = 1e-8;
const GROUP_MAX_EPS_IQ2_S: f32 = 1e-8;
const GROUP_MAX_EPS_IQ1_M: f32 = 1e-7;
const GROUP_MAX_EPS_IQ1_S: f32 = 1e-12;
const IQ1_DELTA: f32 = 0.125;
/// IQ1 levels −1, 0, 1 shifted by +δ and by −δ.
const X_P: [f32; 3] = [-1.0 + IQ1_DELTA, IQ1_DELTA, 1.0 + IQ1_DELTA];
const X_M: [f32; 3] = [-1.0 - IQ1_DELTA, -IQ1_DELTA, 1.0 - IQ1_DELTA];

/// C's `MAX(a, b)`: `a > b ? a : b` (a NaN `b` wins, a NaN `a` loses).
#[inline(always)]
fn cmax(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

#[inline(always)]
fn arr<T: Copy + Default, const N: usize>(s: &[T], off: usize) -> [T; N] {
    let mut a = [T::default(); N];
    if let Some(src) = s.get(off..off + N) {
        a.copy_from_slice(src);
    }
    a
}

#[inline(always)]
fn put<T: Copy, const N: usize>(d: &mut [T], off: usize, v: &[T; N]) {
    if let Some(dst) = d.get_mut(off..off + N) {
        dst.copy_from_slice(v);
    }
}

/// Iterates over the 256-element blocks of `src` with their weights (when
/// given), appending one output block per input block.
fn blocks<const TS: usize>(
    src: &[f32],
    qw: Option<&[f32]>,
    dst: &mut Vec<u8>,
    mut f: impl FnMut(&[f32; 256], Option<&[f32; 256]>, &mut [u8; TS]),
) {
    dst.reserve(src.len() / 256 * TS);
    for (b, x) in src.chunks_exact(256).enumerate() {
        if let Ok(x) = <&[f32; 256]>::try_from(x) {
            let w = qw.and_then(|q| q.get(256 * b..256 * b + 256)).and_then(|q| <&[f32; 256]>::try_from(q).ok());
            let mut out = [0u8; TS];
            f(x, w, &mut out);
            dst.extend_from_slice(&out);
        }
    }
}

/// `qw · sqrt(σ² + x²)` with an importance matrix, `plain(x)` without.
#[inline(always)]
fn weights<const N: usize>(xb: &[f32; N], qw: Option<[f32; N]>, sigma2: f32, plain: impl Fn(f32) -> f32) -> [f32; N] {
    let mut w = [0f32; N];
    match qw {
        Some(q) => {
            for i in 0..N {
                w[i] = q[i] * (sigma2 + xb[i] * xb[i]).sqrt();
            }
        }
        None => {
            for i in 0..N {
                w[i] = plain(xb[i]);
            }
        }
    }
    w
}

/// Magnitudes of 8 values with an even number of sign flips: when the
/// count of negatives is odd, the element of least `w·x²` keeps its sign
/// (its magnitude is stored negated). Returns the 7 stored sign bits.
#[inline(always)]
fn even_signs(xb: &[f32], w: &[f32], xval: &mut [f32]) -> u8 {
    let (mut nflip, mut s) = (0u32, 0u8);
    for i in 0..8 {
        if xb[i] >= 0.0 {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            nflip += 1;
            s |= 1 << i;
        }
    }
    if nflip % 2 == 1 {
        let mut imin = 0;
        let mut min = w[0] * xb[0] * xb[0];
        for i in 1..8 {
            let ax = w[i] * xb[i] * xb[i];
            if ax < min {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= 1 << imin;
    }
    s & 127
}

/// Magnitudes and the 8 sign bits (IQ2_S, IQ3_S store them all).
#[inline(always)]
fn plain_signs(xb: &[f32], xval: &mut [f32]) -> u8 {
    let mut s = 0u8;
    for i in 0..8 {
        if xb[i] >= 0.0 {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            s |= 1 << i;
        }
    }
    s
}

#[inline(always)]
fn max_of(v: &[f32]) -> f32 {
    let mut m = v.first().copied().unwrap_or(0.0);
    for &x in v.iter().skip(1) {
        m = cmax(m, x);
    }
    m
}

/// Levels `clamp(nearest(½(id·x − 1)), 0, kmax−1)` of one group.
#[inline(always)]
fn group_levels<const D: usize>(id: f32, xv: &[f32; D], kmax: i32) -> [i8; D] {
    xv.map(|x| nearest_int(0.5 * (id * x - 1.0)).clamp(0, kmax - 1) as i8)
}

/// Σ w·x·q and Σ w·q² with q = 2l+1.
#[inline(always)]
fn lsums<const N: usize>(w: &[f32; N], xval: &[f32; N], l: &[i8; N]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for i in 0..N {
        let q = (2 * i32::from(l[i]) + 1) as f32;
        sumqx += w[i] * xval[i] * q;
        sumq2 += w[i] * q * q;
    }
    (sumqx, sumq2)
}

/// The neighbour of index `u` with the least distance Σₖ term(k, lₖ),
/// summed over k in order (what ggml's neighbour searches compute, one
/// term per coordinate and level). The terms are tabulated once per call
/// (at most 8 levels × D coordinates) instead of once per neighbour: the
/// same float operations on the same operands, so the same sums. The first
/// neighbour when none has a distance below `FLT_MAX` (where ggml aborts).
#[inline(always)]
fn nearest<const D: usize>(lat: &Lattice<D>, u: usize, term: impl Fn(usize, usize) -> f32) -> usize {
    let nb = lat.neighbours(u);
    let bits = lat.bits() as usize;
    let mask = (1usize << bits) - 1;
    let mut best = f32::MAX;
    let mut found = None;
    let mut consider = |e: u32, d2: f32| {
        if d2 < best {
            best = d2;
            found = Some(e);
        }
    };
    if nb.len() <= 2 {
        // Short list: fewer terms directly than in the table.
        for &e in nb {
            let g = (e >> 16) as usize;
            let mut d2 = 0f32;
            for k in 0..D {
                d2 += term(k, (g >> (bits * k)) & mask);
            }
            consider(e, d2);
        }
    } else {
        // Constant bounds, so that the table is computed lane-wise.
        let t = if bits == 3 { table::<D, 8>(&term) } else { table::<D, 4>(&term) };
        for &e in nb {
            let g = (e >> 16) as usize;
            let mut d2 = 0f32;
            for k in 0..D {
                d2 += t[k][(g >> (bits * k)) & mask & 7];
            }
            consider(e, d2);
        }
    }
    found.or_else(|| nb.first().copied()).map_or(0, |e| (e & 0xffff) as usize)
}

/// `term(k, l)` for every coordinate k and the first `L` levels l.
#[inline(always)]
fn table<const D: usize, const L: usize>(term: &impl Fn(usize, usize) -> f32) -> [[f32; 8]; D] {
    let mut t = [[0f32; 8]; D];
    for k in 0..D {
        for l in 0..L.min(8) {
            t[k][l] = term(k, l);
        }
    }
    t
}

/// `iq2_find_best_neighbour` / `iq3_find_best_neighbour`: the neighbour of
/// index `u` nearest to `xval / scale` under weights `w` (Σ w·(scale·q − x)²
/// with q = 2l+1); its levels go to `l`.
#[inline]
fn best_neighbour<const D: usize>(
    lat: &Lattice<D>,
    u: usize,
    xval: &[f32; D],
    w: &[f32; D],
    scale: f32,
    l: &mut [i8; D],
) -> usize {
    let gi = nearest(lat, u, |k, lv| {
        let diff = scale * (2 * lv + 1) as f32 - xval[k];
        w[k] * diff * diff
    });
    *l = lat.levels(gi);
    gi
}

/// Rounds one group at reciprocal scale `id`; off the code book, takes the
/// best neighbour for `scale`. Returns (levels, code-book entry, was on it).
#[inline(always)]
fn round_group<const D: usize>(
    lat: &Lattice<D>,
    id: f32,
    scale: f32,
    xv: &[f32; D],
    waux: &[f32; D],
    kmax: i32,
) -> ([i8; D], usize, bool) {
    let mut lg = group_levels(id, xv, kmax);
    let u = lat.index(&lg);
    match lat.entry(u) {
        Some(gi) => (lg, gi, true),
        None => {
            let gi = best_neighbour(lat, u, xv, waux, scale, &mut lg);
            (lg, gi, false)
        }
    }
}

/// The code-book entry of a group's final levels (0 where ggml aborts).
#[inline(always)]
fn final_entry<const D: usize>(lat: &Lattice<D>, l: &[i8; D]) -> usize {
    lat.entry(lat.index(l)).unwrap_or(0)
}

/// The sub-block scale code `clamp(nearest(½(id·s − 1)), 0, max)`.
#[inline(always)]
fn scale_code(id: f32, s: f32, max: i32) -> i32 {
    nearest_int(0.5 * (id * s - 1.0)).clamp(0, max)
}

// ------------------------------------------------------------------ IQ2_XXS

/// One IQ2_XXS block (66 bytes): `quantize_row_iq2_xxs_impl`.
fn iq2_xxs_block(x: &[f32; 256], qw: &[f32; 256], out: &mut [u8; 66]) {
    let lat = lattice::iq2xxs();
    let sigma2 = sum_sq(x) / 256.0;
    let mut q2 = [0u32; 16];
    let mut scales = [0f32; 8];
    let mut max_scale = 0f32;
    for ib in 0..8 {
        let xb: [f32; 32] = arr(x, 32 * ib);
        let weight = weights(&xb, Some(arr(qw, 32 * ib)), sigma2, |_| 0.0);
        let waux = weight.map(f32::sqrt);
        let mut xval = [0f32; 32];
        let mut signs = [0u8; 4];
        for k in 0..4 {
            let r = 8 * k..8 * k + 8;
            signs[k] = even_signs(&xb[r.clone()], &weight[r.clone()], &mut xval[r]);
        }
        if max_of(&xval) < GROUP_MAX_EPS {
            scales[ib] = 0.0;
            continue;
        }
        let mut lq = [0u8; 32];
        let mut scale = qp_search(4, &xval, &weight, &mut lq);
        // ggml keeps these levels only when no trial scale wins and the
        // scale is not positive (NaN); they then fail its grid check.
        let mut l = lq.map(|v| v as i8);
        let eff_max = scale * 3.0;
        if eff_max <= 0.0 {
            scales[ib] = 0.0;
            continue;
        }
        let mut best = 0f32;
        for is in -6..=6 {
            let id = (5.0 + is as f32 * 0.1) / eff_max;
            let this_scale = 1.0 / id;
            let mut laux = [0i8; 32];
            for k in 0..4 {
                let (lg, _, _) = round_group(lat, id, this_scale, &arr(&xval, 8 * k), &arr(&waux, 8 * k), 3);
                put(&mut laux, 8 * k, &lg);
            }
            let (sumqx, sumq2) = lsums(&weight, &xval, &laux);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                l = laux;
            }
        }
        if scale > 0.0 {
            let id = 1.0 / scale;
            for k in 0..4 {
                let (_, gi, _) = round_group(lat, id, scale, &arr(&xval, 8 * k), &arr(&waux, 8 * k), 3);
                put(&mut l, 8 * k, &lat.levels(gi));
            }
            let (sumqx, sumq2) = lsums(&weight, &xval, &l);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s & 127);
        }
        for k in 0..4 {
            let gi = final_entry(lat, &arr(&l, 8 * k));
            q2[2 * ib] |= (gi as u32) << (8 * k);
            q2[2 * ib + 1] |= u32::from(signs[k]) << (7 * k);
        }
        scales[ib] = scale;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale == 0.0 {
        return;
    }
    let d = max_scale / 31.0;
    put16(out, 0, f32_to_f16(d));
    let id = 1.0 / d;
    for ib in 0..8 {
        q2[2 * ib + 1] |= (scale_code(id, scales[ib], 15) as u32) << 28;
    }
    for (i, v) in q2.iter().enumerate() {
        put(out, 2 + 4 * i, &v.to_le_bytes());
    }
}

/// IQ2_XXS with an importance matrix (ggml has no other path).
pub(crate) fn iq2_xxs(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    blocks::<66>(row, Some(qw), dst, |x, w, out| {
        if let Some(w) = w {
            iq2_xxs_block(x, w, out);
        }
    });
}

// ------------------------------------------------------- IQ2_XS and IQ2_S

/// The scale search shared by IQ2_XS and IQ2_S over one 16-element
/// sub-block: 19 trial scales, then the groups off the code book rounded
/// again at the best scale. Returns (scale, levels).
fn iq2_16(lat: &Lattice<8>, xval: &[f32; 16], weight: &[f32; 16], waux: &[f32; 16], max: f32) -> (f32, [i8; 16]) {
    let mut l = [0i8; 16];
    let mut best = 0f32;
    let mut scale = max / 5.0;
    let mut on_grid = [true; 2];
    for is in -9..=9 {
        let id = (5.0 + is as f32 * 0.1) / max;
        let this_scale = 1.0 / id;
        let mut laux = [0i8; 16];
        let mut on_aux = [true; 2];
        for k in 0..2 {
            let (lg, _, on) = round_group(lat, id, this_scale, &arr(xval, 8 * k), &arr(waux, 8 * k), 3);
            put(&mut laux, 8 * k, &lg);
            on_aux[k] = on;
        }
        let (sumqx, sumq2) = lsums(weight, xval, &laux);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            l = laux;
            on_grid = on_aux;
        }
    }
    if on_grid.contains(&false) && scale > 0.0 {
        let id = 1.0 / scale;
        for k in 0..2 {
            if on_grid[k] {
                continue;
            }
            let (lg, _, _) = round_group(lat, id, scale, &arr(xval, 8 * k), &arr(waux, 8 * k), 3);
            put(&mut l, 8 * k, &lg);
        }
        let (sumqx, sumq2) = lsums(weight, xval, &l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    (scale, l)
}

/// One IQ2_XS block (74 bytes): `quantize_row_iq2_xs_impl`.
fn iq2_xs_block(x: &[f32; 256], qw: &[f32; 256], out: &mut [u8; 74]) {
    let lat = lattice::iq2xs();
    let sigma2 = sum_sq(x) / 256.0;
    let mut q2 = [0u16; 32];
    let mut scales = [0f32; 16];
    let mut max_scale = 0f32;
    for ib in 0..16 {
        let xb: [f32; 16] = arr(x, 16 * ib);
        let weight = weights(&xb, Some(arr(qw, 16 * ib)), sigma2, |_| 0.0);
        let waux = weight.map(f32::sqrt);
        let mut xval = [0f32; 16];
        let mut signs = [0u8; 2];
        for k in 0..2 {
            let r = 8 * k..8 * k + 8;
            signs[k] = even_signs(&xb[r.clone()], &weight[r.clone()], &mut xval[r]);
        }
        let max = max_of(&xval);
        if max < GROUP_MAX_EPS {
            scales[ib] = 0.0;
            continue;
        }
        let (mut scale, l) = iq2_16(lat, &xval, &weight, &waux, max);
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s & 127);
        }
        for k in 0..2 {
            let gi = final_entry(lat, &arr(&l, 8 * k));
            q2[2 * ib + k] = gi as u16 | (u16::from(signs[k]) << 9);
        }
        scales[ib] = scale;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale == 0.0 {
        return;
    }
    let d = max_scale / 31.0;
    put16(out, 0, f32_to_f16(d));
    let id = 1.0 / d;
    for ib in 0..16 {
        let l = scale_code(id, scales[ib], 15) as u8;
        out[66 + ib / 2] |= if ib % 2 == 0 { l } else { l << 4 };
    }
    for (i, v) in q2.iter().enumerate() {
        put(out, 2 + 2 * i, &v.to_le_bytes());
    }
}

/// IQ2_XS with an importance matrix (ggml has no other path).
pub(crate) fn iq2_xs(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    blocks::<74>(row, Some(qw), dst, |x, w, out| {
        if let Some(w) = w {
            iq2_xs_block(x, w, out);
        }
    });
}

/// One IQ2_S block (82 bytes): `quantize_row_iq2_s_impl`.
fn iq2_s_block(x: &[f32; 256], qw: Option<&[f32; 256]>, out: &mut [u8; 82]) {
    let lat = lattice::iq2s();
    let sigma2 = 2.0 * sum_sq(x) / 256.0;
    let mut scales = [0f32; 16];
    let mut max_scale = 0f32;
    for ib in 0..16 {
        let xb: [f32; 16] = arr(x, 16 * ib);
        let weight = weights(&xb, qw.map(|q| arr(q, 16 * ib)), sigma2, |v| 0.25 * sigma2 + v * v);
        let waux = weight.map(f32::sqrt);
        let mut xval = [0f32; 16];
        let mut signs = [0u8; 2];
        for k in 0..2 {
            signs[k] = plain_signs(&xb[8 * k..8 * k + 8], &mut xval[8 * k..8 * k + 8]);
        }
        let max = max_of(&xval);
        if max < GROUP_MAX_EPS_IQ2_S {
            scales[ib] = 0.0;
            continue;
        }
        let (mut scale, l) = iq2_16(lat, &xval, &weight, &waux, max);
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s);
        }
        for k in 0..2 {
            let gi = final_entry(lat, &arr(&l, 8 * k));
            let i8 = 2 * ib + k;
            out[2 + i8] = gi as u8;
            out[66 + i8 / 4] |= ((gi >> 8) << (2 * (i8 % 4))) as u8;
            out[34 + i8] = signs[k];
        }
        scales[ib] = scale;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale == 0.0 {
        return;
    }
    let d = max_scale / 31.0;
    put16(out, 0, f32_to_f16(d * 0.9875));
    let id = 1.0 / d;
    for ib in 0..16 {
        let l = scale_code(id, scales[ib], 15) as u8;
        if ib % 2 == 0 {
            out[74 + ib / 2] = l;
        } else {
            out[74 + ib / 2] |= l << 4;
        }
    }
}

/// IQ2_S, with or without an importance matrix.
pub(crate) fn iq2_s(src: &[f32], qw: Option<&[f32]>, dst: &mut Vec<u8>) {
    blocks::<82>(src, qw, dst, iq2_s_block);
}

// ------------------------------------------------------- IQ3_XXS and IQ3_S

/// One IQ3_XXS block (98 bytes): `quantize_row_iq3_xxs_impl(256, ...)`.
fn iq3_xxs_block(x: &[f32; 256], qw: Option<&[f32; 256]>, out: &mut [u8; 98]) {
    let lat = lattice::iq3xxs();
    let sigma2 = 2.0 * sum_sq(x) / 256.0;
    let mut q3 = [0u8; 64];
    let mut sas = [0u32; 8];
    let mut scales = [0f32; 8];
    let mut max_scale = 0f32;
    for ib in 0..8 {
        let xb: [f32; 32] = arr(x, 32 * ib);
        let weight = weights(&xb, qw.map(|q| arr(q, 32 * ib)), sigma2, |v| v * v);
        let waux = weight.map(f32::sqrt);
        let mut xval = [0f32; 32];
        let mut signs = [0u8; 4];
        for k in 0..4 {
            let r = 8 * k..8 * k + 8;
            signs[k] = even_signs(&xb[r.clone()], &weight[r.clone()], &mut xval[r]);
        }
        let max = max_of(&xval);
        let mut l = [0i8; 32];
        if max < GROUP_MAX_EPS_IQ3_XXS {
            scales[ib] = 0.0;
            continue;
        }
        let mut best = 0f32;
        let mut scale = max / 15.0;
        let mut on_grid = [true; 8];
        for is in -15..=15 {
            let id = (15.0 + is as f32 * 0.2) / max;
            let this_scale = 1.0 / id;
            let mut laux = [0i8; 32];
            let mut on_aux = [true; 8];
            for k in 0..8 {
                let (lg, _, on) = round_group(lat, id, this_scale, &arr(&xval, 4 * k), &arr(&waux, 4 * k), 8);
                put(&mut laux, 4 * k, &lg);
                on_aux[k] = on;
            }
            let (sumqx, sumq2) = lsums(&weight, &xval, &laux);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                l = laux;
                on_grid = on_aux;
            }
        }
        if on_grid.contains(&false) && scale > 0.0 {
            let id = 1.0 / scale;
            for k in 0..8 {
                if on_grid[k] {
                    continue;
                }
                let (_, gi, _) = round_group(lat, id, scale, &arr(&xval, 4 * k), &arr(&waux, 4 * k), 8);
                put(&mut l, 4 * k, &lat.levels(gi));
            }
            let (sumqx, sumq2) = lsums(&weight, &xval, &l);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s & 127);
        }
        for k in 0..8 {
            q3[8 * ib + k] = final_entry(lat, &arr(&l, 4 * k)) as u8;
        }
        sas[ib] = u32::from(signs[0])
            | (u32::from(signs[1]) << 7)
            | (u32::from(signs[2]) << 14)
            | (u32::from(signs[3]) << 21);
        scales[ib] = scale;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale == 0.0 {
        return;
    }
    let d = max_scale / 31.0;
    put16(out, 0, f32_to_f16(d * 1.0125));
    let id = 1.0 / d;
    for ib in 0..8 {
        sas[ib] |= (scale_code(id, scales[ib], 15) as u32) << 28;
    }
    put(out, 2, &q3);
    for (i, v) in sas.iter().enumerate() {
        put(out, 66 + 4 * i, &v.to_le_bytes());
    }
}

/// IQ3_XXS, with or without an importance matrix.
pub(crate) fn iq3_xxs(src: &[f32], qw: Option<&[f32]>, dst: &mut Vec<u8>) {
    blocks::<98>(src, qw, dst, iq3_xxs_block);
}

/// One IQ3_S block (110 bytes): `quantize_row_iq3_s_impl(32, ...)`.
///
/// ggml advances its `qs` and `signs` write positions only for sub-blocks
/// it does not skip (all-zero ones), so after a skipped sub-block the later
/// ones are written one slot early (and decode from the wrong place); the
/// `qh` bits and scales use the sub-block number. Reproduced as is.
fn iq3_s_block(x: &[f32; 256], qw: Option<&[f32; 256]>, out: &mut [u8; 110]) {
    let lat = lattice::iq3s();
    let sigma2 = 2.0 * sum_sq(x) / 256.0;
    let mut scales = [0f32; 8];
    let mut max_scale = 0f32;
    let (mut qs, mut sg) = (2usize, 74usize);
    for ib in 0..8 {
        let xb: [f32; 32] = arr(x, 32 * ib);
        let weight = weights(&xb, qw.map(|q| arr(q, 32 * ib)), sigma2, |v| v * v);
        let waux = weight.map(f32::sqrt);
        let mut xval = [0f32; 32];
        let mut signs = [0u8; 4];
        for k in 0..4 {
            signs[k] = plain_signs(&xb[8 * k..8 * k + 8], &mut xval[8 * k..8 * k + 8]);
        }
        let max = max_of(&xval);
        let mut l = [0i8; 32];
        if max == 0.0 {
            scales[ib] = 0.0;
            continue;
        }
        let mut best = 0f32;
        let mut scale = max / 15.0;
        let mut on_grid = [false; 8];
        for is in -9..=9 {
            let id = (15.0 + is as f32 * 0.2) / max;
            let this_scale = 1.0 / id;
            let mut laux = [0i8; 32];
            let mut on_aux = [true; 8];
            for k in 0..8 {
                let (lg, _, on) = round_group(lat, id, this_scale, &arr(&xval, 4 * k), &arr(&waux, 4 * k), 8);
                put(&mut laux, 4 * k, &lg);
                on_aux[k] = on;
            }
            let (sumqx, sumq2) = lsums(&weight, &xval, &laux);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                l = laux;
                on_grid = on_aux;
            }
        }
        if on_grid.contains(&false) && scale > 0.0 {
            // Every group is rounded again here, on the code book or not.
            let id = 1.0 / scale;
            for k in 0..8 {
                let (_, gi, _) = round_group(lat, id, scale, &arr(&xval, 4 * k), &arr(&waux, 4 * k), 8);
                put(&mut l, 4 * k, &lat.levels(gi));
            }
            let (sumqx, sumq2) = lsums(&weight, &xval, &l);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s);
        }
        for k in 0..8 {
            let gi = final_entry(lat, &arr(&l, 4 * k));
            out[qs + k] = gi as u8;
            out[66 + ib] |= ((gi >> 8) << k) as u8;
        }
        qs += 8;
        put(out, sg, &signs);
        sg += 4;
        scales[ib] = scale;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale == 0.0 {
        return;
    }
    let d = max_scale / 31.0;
    put16(out, 0, f32_to_f16(d * 1.033));
    let id = 1.0 / d;
    for ib in (0..8).step_by(2) {
        let l1 = scale_code(id, scales[ib], 15);
        let l2 = scale_code(id, scales[ib + 1], 15);
        out[106 + ib / 2] = (l1 | (l2 << 4)) as u8;
    }
}

/// IQ3_S, with or without an importance matrix.
pub(crate) fn iq3_s(src: &[f32], qw: Option<&[f32]>, dst: &mut Vec<u8>) {
    blocks::<110>(src, qw, dst, iq3_s_block);
}

// --------------------------------------------------------- IQ1_S and IQ1_M

/// glibc's `qsort` for small arrays (`msort_with_tmp`): top-down merge sort,
/// left half n/2, taking from the left run unless `left > right`.
fn msort(v: &mut [(f32, u8)], tmp: &mut [(f32, u8)]) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (a, b) = v.split_at_mut(n1);
        msort(a, tmp);
        msort(b, tmp);
    }
    let (mut i, mut j, mut o) = (0, n1, 0);
    while i < n1 && j < n {
        if v[i].0 > v[j].0 {
            tmp[o] = v[j];
            j += 1;
        } else {
            tmp[o] = v[i];
            i += 1;
        }
        o += 1;
    }
    while i < n1 {
        tmp[o] = v[i];
        i += 1;
        o += 1;
    }
    // What is left of the right run is already in place.
    v[..o].copy_from_slice(&tmp[..o]);
}

/// The values of a sub-block sorted as ggml's `qsort` leaves them, with
/// their positions.
fn sorted<const N: usize>(xb: &[f32; N]) -> [(f32, u8); N] {
    let mut pairs = [(0f32, 0u8); N];
    for j in 0..N {
        pairs[j] = (xb[j], j as u8);
    }
    let mut tmp = [(0f32, 0u8); N];
    msort(&mut pairs, &mut tmp);
    pairs
}

/// `iq1_find_best_neighbour2`: the neighbour of index `u` nearest to the
/// group under `scale` with levels `xx` (Σ w·(scale·xx[l] − x)²); its
/// levels go to `l`.
fn iq1_neighbour(
    lat: &Lattice<8>,
    u: usize,
    xb: &[f32; 8],
    w: &[f32; 8],
    scale: f32,
    xx: &[f32; 3],
    l: &mut [i8; 8],
) -> usize {
    let gi = nearest(lat, u, |k, lv| {
        let diff = scale * xx[lv % 3] - xb[k];
        w[k] * diff * diff
    });
    *l = lat.levels(gi);
    gi
}

/// Level assignment of a split of the sorted values at `i1 ≤ i2`.
fn split_levels<const N: usize>(pairs: &[(f32, u8); N], i1: usize, i2: usize) -> [i8; N] {
    let mut l = [0i8; N];
    for (j, &(_, i)) in pairs.iter().enumerate() {
        l[usize::from(i) % N] = if j < i1 {
            0
        } else if j < i2 {
            1
        } else {
            2
        };
    }
    l
}

/// Σ w·q·x and Σ w·q² of one group of 8 on code-book point `gi` with levels `xx`.
#[inline(always)]
fn iq1_sums(lat: &Lattice<8>, gi: usize, xx: &[f32; 3], w: &[f32], xb: &[f32], mult: f32, s: &mut (f32, f32)) {
    let pl = lat.levels(gi);
    for j in 0..8 {
        let q = xx[pl[j] as usize % 3] * mult;
        s.0 += w[j] * q * xb[j];
        s.1 += w[j] * q * q;
    }
}

/// One IQ1_S block (50 bytes): `quantize_row_iq1_s_impl`.
fn iq1_s_block(x: &[f32; 256], qw: &[f32; 256], out: &mut [u8; 50]) {
    let lat = lattice::iq1s();
    let sigma2 = 2.0 * sum_sq(x) / 256.0;
    let mut scales = [0f32; 8];
    let mut shifts = [0i8; 8];
    let mut qh = [0u16; 8];
    let mut max_scale = 0f32;
    for ib in 0..8 {
        let xb: [f32; 32] = arr(x, 32 * ib);
        let weight = weights(&xb, Some(arr(qw, 32 * ib)), sigma2, |_| 0.0);
        let mut max = xb[0].abs();
        for &v in &xb[1..] {
            max = cmax(max, v.abs());
        }
        if max < GROUP_MAX_EPS_IQ1_S {
            scales[ib] = 0.0;
            shifts[ib] = 1;
            continue;
        }
        let pairs = sorted(&xb);
        let (mut sumx, mut sumw) = ([0f32; 33], [0f32; 33]);
        for j in 0..32 {
            let i = usize::from(pairs[j].1) % 32;
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        let mut best_score = -f32::MAX;
        let mut scale = max;
        let (mut besti1, mut besti2, mut best_shift) = (None, None, 0i8);
        for i1 in 0..=32 {
            for i2 in i1..=32 {
                for (xs, shift) in [(&X_P, 1i8), (&X_M, -1i8)] {
                    let sumqx =
                        (sumx[i1] - sumx[0]) * xs[0] + (sumx[i2] - sumx[i1]) * xs[1] + (sumx[32] - sumx[i2]) * xs[2];
                    let sumq2 = (sumw[i1] - sumw[0]) * xs[0] * xs[0]
                        + (sumw[i2] - sumw[i1]) * xs[1] * xs[1]
                        + (sumw[32] - sumw[i2]) * xs[2] * xs[2];
                    if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        (besti1, besti2, best_shift) = (Some(i1), Some(i2), shift);
                    }
                }
            }
        }
        let (Some(i1), Some(i2)) = (besti1, besti2) else {
            scales[ib] = 0.0;
            shifts[ib] = 1;
            continue;
        };
        let mut l = split_levels(&pairs, i1, i2);
        if scale < 0.0 {
            l = l.map(|v| 2 - v);
            scale = -scale;
            best_shift = -best_shift;
        }
        let xx = if best_shift == 1 { &X_P } else { &X_M };
        let mut index = [0usize; 4];
        let mut all_on_grid = true;
        for k in 0..4 {
            let mut lg: [i8; 8] = arr(&l, 8 * k);
            let u = lat.index(&lg);
            index[k] = match lat.entry(u) {
                Some(gi) => gi,
                None => {
                    all_on_grid = false;
                    iq1_neighbour(lat, u, &arr(&xb, 8 * k), &arr(&weight, 8 * k), scale, xx, &mut lg)
                }
            };
        }
        if !all_on_grid {
            let mut s = (0f32, 0f32);
            for k in 0..4 {
                iq1_sums(lat, index[k], xx, &weight[8 * k..], &xb[8 * k..], 1.0, &mut s);
            }
            if s.0 > 0.0 && s.1 > 0.0 {
                scale = s.0 / s.1;
            }
        }
        let mut h = 0u16;
        for k in 0..4 {
            out[2 + 4 * ib + k] = index[k] as u8;
            h |= ((index[k] >> 8) << (3 * k)) as u16;
        }
        qh[ib] = h;
        scales[ib] = scale;
        shifts[ib] = best_shift;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale != 0.0 {
        let d = max_scale / 15.0;
        put16(out, 0, f32_to_f16(d * 1.125));
        let id = 1.0 / d;
        for ib in 0..8 {
            let mut l = scale_code(id, scales[ib], 7) as u16;
            if shifts[ib] == -1 {
                l |= 8;
            }
            qh[ib] |= l << 12;
        }
    }
    for (ib, v) in qh.iter().enumerate() {
        put(out, 34 + 2 * ib, &v.to_le_bytes());
    }
}

/// IQ1_S with an importance matrix (ggml has no other path).
pub(crate) fn iq1_s(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    blocks::<50>(row, Some(qw), dst, |x, w, out| {
        if let Some(w) = w {
            iq1_s_block(x, w, out);
        }
    });
}

/// The level sets of IQ1_M's two groups for a sign choice `k` (0: +,+;
/// 1: +,−; 2: −,+; 3: −,−).
#[inline(always)]
fn iq1m_xx(k: i8, group: usize) -> &'static [f32; 3] {
    let plus = if group == 0 { k < 2 } else { k % 2 == 0 };
    if plus { &X_P } else { &X_M }
}

/// One IQ1_M block (56 bytes): `quantize_row_iq1_m_impl`.
fn iq1_m_block(x: &[f32; 256], qw: Option<&[f32; 256]>, out: &mut [u8; 56]) {
    const MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];
    let lat = lattice::iq1s();
    let sigma2 = 2.0 * sum_sq(x) / 256.0;
    let mut scales = [0f32; 16];
    let mut shifts = [0i8; 16];
    let mut max_scale = 0f32;
    let (p2, m2) = (X_P[2], X_M[2]);
    let cp1 = X_P[0] * X_P[0] - X_P[1] * X_P[1];
    let cp2 = X_P[1] * X_P[1] - X_P[2] * X_P[2];
    let cm1 = X_M[0] * X_M[0] - X_M[1] * X_M[1];
    let cm2 = X_M[1] * X_M[1] - X_M[2] * X_M[2];
    for ib in 0..16 {
        let xb: [f32; 16] = arr(x, 16 * ib);
        let weight = weights(&xb, qw.map(|q| arr(q, 16 * ib)), sigma2, |v| v * v);
        let mut max = xb[0].abs();
        for &v in &xb[1..] {
            max = cmax(max, v.abs());
        }
        if max < GROUP_MAX_EPS_IQ1_M {
            scales[ib] = 0.0;
            shifts[ib] = 0;
            continue;
        }
        let pairs = sorted(&xb);
        let (mut px, mut pw) = ([[0f32; 17]; 2], [[0f32; 17]; 2]);
        for j in 0..16 {
            let i = usize::from(pairs[j].1) % 16;
            let h = usize::from(i >= 8);
            px[h][j + 1] = px[h][j] + weight[i] * xb[i];
            px[1 - h][j + 1] = px[1 - h][j];
            pw[h][j + 1] = pw[h][j] + weight[i];
            pw[1 - h][j + 1] = pw[1 - h][j];
        }
        let txs = [px[0][16], px[1][16]];
        let tws = [pw[0][16], pw[1][16]];
        let mut best_score = -f32::MAX;
        let mut scale = max;
        let (mut besti1, mut besti2, mut best_k) = (None, None, -1i8);
        for i1 in 0..=16 {
            for i2 in i1..=16 {
                let (mut qx_p, mut qx_m, mut q2_p, mut q2_m) = ([0f32; 2], [0f32; 2], [0f32; 2], [0f32; 2]);
                for h in 0..2 {
                    let sx = px[h][i1] + px[h][i2];
                    qx_p[h] = txs[h] * p2 - sx;
                    qx_m[h] = txs[h] * m2 - sx;
                    q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                    q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
                }
                let sumqx = [qx_p[0] + qx_p[1], qx_p[0] + qx_m[1], qx_m[0] + qx_p[1], qx_m[0] + qx_m[1]];
                let sumq2 = [q2_p[0] + q2_p[1], q2_p[0] + q2_m[1], q2_m[0] + q2_p[1], q2_m[0] + q2_m[1]];
                for k in 0..4 {
                    if sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k] {
                        scale = sumqx[k] / sumq2[k];
                        best_score = scale * sumqx[k];
                        (besti1, besti2, best_k) = (Some(i1), Some(i2), k as i8);
                    }
                }
            }
        }
        let (Some(i1), Some(i2)) = (besti1, besti2) else {
            scales[ib] = 0.0;
            shifts[ib] = 0;
            continue;
        };
        let mut l = split_levels(&pairs, i1, i2);
        if scale < 0.0 {
            l = l.map(|v| 2 - v);
            scale = -scale;
            best_k = 3 - best_k;
        }
        let mut index = [0usize; 2];
        let mut all_on_grid = true;
        for k in 0..2 {
            let mut lg: [i8; 8] = arr(&l, 8 * k);
            let u = lat.index(&lg);
            index[k] = match lat.entry(u) {
                Some(gi) => gi,
                None => {
                    all_on_grid = false;
                    let xx = iq1m_xx(best_k, k);
                    iq1_neighbour(lat, u, &arr(&xb, 8 * k), &arr(&weight, 8 * k), scale, xx, &mut lg)
                }
            };
        }
        if !all_on_grid {
            let mut s = (0f32, 0f32);
            for k in 0..2 {
                iq1_sums(lat, index[k], iq1m_xx(best_k, k), &weight[8 * k..], &xb[8 * k..], 1.0, &mut s);
            }
            if s.0 > 0.0 && s.1 > 0.0 {
                scale = s.0 / s.1;
            }
        }
        out[2 * ib] = index[0] as u8;
        out[2 * ib + 1] = index[1] as u8;
        out[32 + ib] = ((index[0] >> 8) | ((index[1] >> 8) << 4)) as u8;
        scales[ib] = scale;
        shifts[ib] = best_k;
        max_scale = cmax(max_scale, scale);
    }
    if max_scale == 0.0 {
        return;
    }
    let mut sc = [0u16; 4];
    let mut d = max_scale / 15.0;
    let id = 1.0 / d;
    let mut s = (0f32, 0f32);
    for ib in 0..16 {
        let l = scale_code(id, scales[ib], 7);
        sc[ib / 4] |= (l as u16) << (3 * (ib % 4));
        out[32 + ib] |= MASKS[(shifts[ib] & 3) as usize];
        let xb: [f32; 16] = arr(x, 16 * ib);
        let weight = weights(&xb, qw.map(|q| arr(q, 16 * ib)), sigma2, |v| v * v);
        let qh = usize::from(out[32 + ib]);
        for k in 0..2 {
            let gi = usize::from(out[2 * ib + k]) + ((qh << (8 - 4 * k)) & 0x700);
            iq1_sums(lat, gi, iq1m_xx(shifts[ib], k), &weight[8 * k..], &xb[8 * k..], (2 * l + 1) as f32, &mut s);
        }
    }
    if s.1 > 0.0 {
        d = s.0 / s.1;
    }
    let h = f32_to_f16(d * 1.1125);
    sc[0] |= (h & 0x000f) << 12;
    sc[1] |= (h & 0x00f0) << 8;
    sc[2] |= (h & 0x0f00) << 4;
    sc[3] |= h & 0xf000;
    for (i, v) in sc.iter().enumerate() {
        put(out, 48 + 2 * i, &v.to_le_bytes());
    }
}

/// IQ1_M, with or without an importance matrix.
pub(crate) fn iq1_m(src: &[f32], qw: Option<&[f32]>, dst: &mut Vec<u8>) {
    blocks::<56>(src, qw, dst, iq1_m_block);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msort_is_stable_and_matches_a_stable_sort() {
        let v = [3.0f32, -1.0, 3.0, 0.0, -0.0, 2.5, -1.0, 7.0, 0.0, 1.0, 3.0];
        let mut pairs: Vec<(f32, u8)> = v.iter().enumerate().map(|(i, &x)| (x, i as u8)).collect();
        let mut want = pairs.clone();
        want.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        let mut tmp = pairs.clone();
        msort(&mut pairs, &mut tmp);
        assert_eq!(pairs, want);
    }
}
