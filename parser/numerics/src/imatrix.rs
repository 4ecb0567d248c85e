//! Quantizers with an importance matrix: the paths ggml's
//! `quantize_<type>(src, dst, nrows, n_per_row, quant_weights)` takes when
//! `quant_weights` is not NULL (what `ggml_quantize_chunk` calls).
//!
//! Each function quantizes one row of `n_per_row` values with its `n_per_row`
//! weights (one per column). The weight of element j is derived from the
//! importance weight `qw[j]` and the row's (Q4_0..Q5_1) or super-block's
//! (k-quants, IQ4) mean square, then a weighted least-squares search picks
//! the scales; the k-quants then quantize their sub-block scales with a
//! second weighted search (`make_qp_quants` / `make_qx_quants`).

use super::common::{f32_to_f16, half_at, nearest_int, put16};
use super::iquants::{iq4_nl_block, iq4_xs_block};
use super::kquants::{
    AsymSearch, GROUP_MAX_EPS, asym_search, pack_q4_k, pack_q5_k, pack2, q3_k_finish, q6_k_block, q45_finish,
    qx_search, sub,
};

/// `make_qkx3_quants(..., -0.9, 0.05, 36, false)` as the weighted paths call it.
const fn qkx3(nmax: i32) -> AsymSearch {
    AsymSearch { nmax, rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false }
}

/// Iterates over the whole blocks of one row with their weights, appending
/// one output block per input block.
fn row_blocks<const BS: usize, const TS: usize>(
    row: &[f32],
    qw: &[f32],
    dst: &mut Vec<u8>,
    mut f: impl FnMut(&[f32; BS], &[f32; BS], &mut [u8; TS]),
) {
    dst.reserve(row.len() / BS * TS);
    for (x, w) in row.chunks_exact(BS).zip(qw.chunks_exact(BS)) {
        if let (Ok(x), Ok(w)) = (<&[f32; BS]>::try_from(x), <&[f32; BS]>::try_from(w)) {
            let mut out = [0u8; TS];
            f(x, w, &mut out);
            dst.extend_from_slice(&out);
        }
    }
}

pub(crate) fn sum_sq(x: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for v in x {
        s += v * v;
    }
    s
}

/// `qw · sqrt(σ² + x²)` element by element.
fn weights<const N: usize>(x: &[f32; N], qw: &[f32; N], sigma2: f32) -> [f32; N] {
    let mut w = [0.0f32; N];
    for j in 0..N {
        w[j] = qw[j] * (sigma2 + x[j] * x[j]).sqrt();
    }
    w
}

fn total<const N: usize>(w: &[f32; N]) -> f32 {
    let mut s = 0.0f32;
    for v in w {
        s += v;
    }
    s
}

/// ggml's `make_qp_quants`: non-negative levels 0..=nmax for the positive
/// values `x` (sub-block scales or mins) under weights `w`, with nine
/// candidate scales and up to five rounds of coordinate descent. Levels are
/// stored as bytes as ggml does (a negative level wraps).
pub(crate) fn qp_search<const N: usize>(nmax: i32, x: &[f32; N], w: &[f32; N], out: &mut [u8; N]) -> f32 {
    let mut max = 0.0f32;
    for &v in x {
        max = if max > v { max } else { v };
    }
    if max < GROUP_MAX_EPS {
        *out = [0; N];
        return 0.0;
    }
    let mut iscale = nmax as f32 / max;
    for i in 0..N {
        out[i] = nearest_int(iscale * x[i]) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0.0f32;
    for i in 0..N {
        let diff = x[i] - scale * f32::from(out[i]);
        best_mse += w[i] * diff * diff;
    }
    for is in (-4..=4).filter(|&i| i != 0) {
        let iscale_is = (0.1 * is as f32 + nmax as f32) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0.0f32;
        for i in 0..N {
            let l = nearest_int(iscale_is * x[i]).min(nmax);
            let diff = x[i] - scale_is * l as f32;
            mse += w[i] * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for i in 0..N {
        let l = nearest_int(iscale * x[i]).min(nmax);
        out[i] = l as u8;
        sumlx += w[i] * x[i] * l as f32;
        suml2 += w[i] * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut changed = 0;
        for i in 0..N {
            let cur = f32::from(out[i]);
            let mut slx = sumlx - w[i] * x[i] * cur;
            let mut sl2 = suml2 - w[i] * cur * cur;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != i32::from(out[i]) {
                    slx += w[i] * x[i] * new_l as f32;
                    sl2 += w[i] * new_l as f32 * new_l as f32;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        out[i] = new_l as u8;
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
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// Packs 32 levels (< 32) of a Q4_0/Q5_0/Q4_1/Q5_1 block: nibbles at `qs`,
/// fifth bits (when `qh` is given) as a little-endian u32.
fn pack32<const TS: usize>(levels: &[u8; 32], out: &mut [u8; TS], qs: usize, qh: Option<usize>) {
    let mut h = 0u32;
    for j in 0..16 {
        let (a, b) = (levels[j], levels[j + 16]);
        out[qs + j] = (a & 0x0f) | ((b & 0x0f) << 4);
        h |= u32::from((a & 0x10) >> 4) << j;
        h |= u32::from((b & 0x10) >> 4) << (j + 16);
    }
    if let Some(at) = qh {
        out[at..at + 4].copy_from_slice(&h.to_le_bytes());
    }
}

/// Q4_0 / Q5_0 (`quantize_row_q4_0_impl`, `_q5_0_impl`): symmetric weighted
/// search with `nmax` 8 / 16, σ² the row's mean square.
fn sym32<const TS: usize>(row: &[f32], qw: &[f32], dst: &mut Vec<u8>, nmax: i32, qh: Option<usize>) {
    let sigma2 = sum_sq(row) / row.len() as f32;
    row_blocks::<32, TS>(row, qw, dst, |x, q, out| {
        let w = weights(x, q, sigma2);
        let mut l = [0i32; 32];
        let d = qx_search(nmax, x, Some(&w), &mut l);
        put16(out, 0, f32_to_f16(d));
        pack32(&l.map(|v| v as u8), out, if qh.is_some() { 6 } else { 2 }, qh);
    });
}

/// Q4_1 / Q5_1 (`quantize_row_q4_1_impl`, `_q5_1_impl`): (scale, min)
/// weighted search with `nmax` 15 / 31.
fn asym32<const TS: usize>(row: &[f32], qw: &[f32], dst: &mut Vec<u8>, nmax: i32, qh: Option<usize>) {
    let sigma2 = sum_sq(row) / row.len() as f32;
    let p = qkx3(nmax);
    row_blocks::<32, TS>(row, qw, dst, |x, q, out| {
        let w = weights(x, q, sigma2);
        let mut l = [0u8; 32];
        let (d, the_min) = asym_search(&p, x, &w, &mut l);
        put16(out, 0, f32_to_f16(d));
        put16(out, 2, f32_to_f16(-the_min));
        pack32(&l, out, if qh.is_some() { 8 } else { 4 }, qh);
    });
}

pub(crate) fn q4_0(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    sym32::<18>(row, qw, dst, 8, None);
}

pub(crate) fn q5_0(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    sym32::<22>(row, qw, dst, 16, Some(2));
}

pub(crate) fn q4_1(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    asym32::<20>(row, qw, dst, 15, None);
}

pub(crate) fn q5_1(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    asym32::<24>(row, qw, dst, 31, Some(4));
}

/// `quantize_row_q2_K_impl`.
pub(crate) fn q2_k(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    const P: AsymSearch = qkx3(3);
    row_blocks::<256, 84>(row, qw, dst, |x, q, out| {
        let sigma2 = sum_sq(x) / 256.0;
        let mut levels = [0u8; 256];
        let (mut scales, mut mins, mut sw) = ([0.0f32; 16], [0.0f32; 16], [0.0f32; 16]);
        for j in 0..16 {
            let xs: [f32; 16] = sub(x, 16 * j);
            let w = weights(&xs, &sub(q, 16 * j), sigma2);
            sw[j] = total(&w);
            let mut l = [0u8; 16];
            (scales[j], mins[j]) = asym_search(&P, &xs, &w, &mut l);
            levels[16 * j..16 * j + 16].copy_from_slice(&l);
        }
        let (mut ls, mut lm) = ([0u8; 16], [0u8; 16]);
        let dm = qp_search(15, &scales, &sw, &mut ls);
        let mm = qp_search(15, &mins, &sw, &mut lm);
        put16(out, 80, f32_to_f16(dm));
        put16(out, 82, f32_to_f16(mm));
        let (dm, mm) = (half_at(out, 80), half_at(out, 82));
        for j in 0..16 {
            out[j] = ls[j] | (lm[j] << 4);
        }
        for j in 0..16 {
            let d = dm * f32::from(out[j] & 0x0f);
            if d == 0.0 {
                continue;
            }
            let m = mm * f32::from(out[j] >> 4);
            for i in 16 * j..16 * j + 16 {
                levels[i] = nearest_int((x[i] + m) / d).clamp(0, 3) as u8;
            }
        }
        pack2(&levels, out, 16);
    });
}

/// `quantize_row_q3_K_impl` with weights.
pub(crate) fn q3_k(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    row_blocks::<256, 110>(row, qw, dst, |x, q, out| {
        let sigma2 = 2.0 * sum_sq(x) / 256.0;
        let mut levels = [0i32; 256];
        let (mut scales, mut sw) = ([0.0f32; 16], [0.0f32; 16]);
        for j in 0..16 {
            let xs: [f32; 16] = sub(x, 16 * j);
            let w = weights(&xs, &sub(q, 16 * j), sigma2);
            sw[j] = total(&w);
            let mut l = [0i32; 16];
            scales[j] = qx_search(4, &xs, Some(&w), &mut l);
            levels[16 * j..16 * j + 16].copy_from_slice(&l);
        }
        let mut ls = [0i32; 16];
        let d_block = qx_search(32, &scales, Some(&sw), &mut ls);
        let mut sb = [0u8; 12];
        for j in 0..16 {
            let l = ls[j];
            if j < 8 {
                sb[j] = (l & 0x0f) as u8;
            } else {
                sb[j - 8] |= ((l & 0x0f) << 4) as u8;
            }
            sb[j % 4 + 8] |= ((l >> 4) << (2 * (j / 4))) as u8;
        }
        out[96..108].copy_from_slice(&sb);
        put16(out, 108, f32_to_f16(d_block));
        q3_k_finish(x, &sb, &mut levels, out);
    });
}

/// Q4_K / Q5_K (`quantize_row_q4_K_impl`, `_q5_K_impl`): weighted
/// (scale, min) search per 32 elements, then `make_qp_quants` for the 6-bit
/// sub-block scales and mins (Q5_K clamps them to 63, Q4_K does not).
fn q45<const TS: usize>(x: &[f32; 256], q: &[f32; 256], out: &mut [u8; TS], nmax: i32, clamp: bool) -> [u8; 256] {
    let p = qkx3(nmax);
    let sigma2 = 2.0 * sum_sq(x) / 256.0;
    let mut levels = [0u8; 256];
    let (mut scales, mut mins, mut sw) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
    for j in 0..8 {
        let xs: [f32; 32] = sub(x, 32 * j);
        let w = weights(&xs, &sub(q, 32 * j), sigma2);
        sw[j] = total(&w);
        let mut l = [0u8; 32];
        (scales[j], mins[j]) = asym_search(&p, &xs, &w, &mut l);
        levels[32 * j..32 * j + 32].copy_from_slice(&l);
    }
    let (mut ls, mut lm) = ([0u8; 8], [0u8; 8]);
    let d_block = qp_search(63, &scales, &sw, &mut ls);
    let m_block = qp_search(63, &mins, &sw, &mut lm);
    if clamp {
        ls = ls.map(|v| v.min(63));
        lm = lm.map(|v| v.min(63));
    }
    q45_finish(x, &ls, &lm, d_block, m_block, &mut levels, out, nmax);
    levels
}

pub(crate) fn q4_k(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    row_blocks::<256, 144>(row, qw, dst, |x, q, out| {
        let levels = q45(x, q, out, 15, false);
        pack_q4_k(&levels, out);
    });
}

pub(crate) fn q5_k(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    row_blocks::<256, 176>(row, qw, dst, |x, q, out| {
        let levels = q45(x, q, out, 31, true);
        pack_q5_k(&levels, out);
    });
}

/// `quantize_row_q6_K_impl`: the importance weights replace x² as they are.
pub(crate) fn q6_k(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    row_blocks::<256, 210>(row, qw, dst, |x, q, out| q6_k_block(x, Some(q), out));
}

pub(crate) fn iq4_nl(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    row_blocks::<32, 18>(row, qw, dst, |x, q, out| iq4_nl_block(x, Some(&q[..]), out));
}

pub(crate) fn iq4_xs(row: &[f32], qw: &[f32], dst: &mut Vec<u8>) {
    row_blocks::<256, 136>(row, qw, dst, |x, q, out| iq4_xs_block(x, Some(&q[..]), out));
}
