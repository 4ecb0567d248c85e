//! The SSE2 kernels of `simd` give the same bits as the scalar kernels
//! they stand in for (a sibling of both, so neither depends on the other).
#![allow(clippy::unwrap_used)]

use crate::common::*;
use crate::simd::*;
use crate::{block32, kquants};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Scale bit patterns that stress the exactness argument: zeros,
/// subnormals, the edges of the exact range, infinities, quiet and
/// signalling NaNs with payloads, the extremes.
const F32_SPECIAL: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x8000_0001,
    0x007f_ffff,
    0x0080_0000,
    0x0c7f_ffff, // just below 2^-102
    0x0c80_0000, // 2^-102
    0x8c80_0001,
    0x0d00_0000,
    0x3380_0000, // 2^-24
    0x3f80_0000,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0xffc0_0001,
    0x7f80_0001, // signalling NaN
    0xff91_2345,
    0x7fff_ffff,
];

const F16_SPECIAL: &[u16] = &[
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe55,
    0x7fff,
];

/// Random blocks of `TS` bytes; `scale` patches the scale fields of
/// block `i` (special values for the first blocks, random bits and
/// ordinary values after).
fn blocks<const TS: usize>(
    n: usize,
    seed: u64,
    qs: std::ops::Range<usize>,
    mut scale: impl FnMut(usize, &mut Rng, &mut [u8; TS]),
) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n * TS);
    for i in 0..n {
        let mut b = [0u8; TS];
        for x in b.iter_mut() {
            *x = rng.next() as u8;
        }
        // Extreme quants in some blocks: all -128, all 127, all 0.
        match i % 7 {
            1 => b[qs.clone()].fill(0x80),
            2 => b[qs.clone()].fill(0x7f),
            3 => b[qs.clone()].fill(0x00),
            4 => b[qs.clone()].fill(0xff),
            _ => {}
        }
        scale(i, &mut rng, &mut b);
        out.extend_from_slice(&b);
    }
    out
}

fn f16_field(i: usize, rng: &mut Rng) -> u16 {
    match i {
        _ if i < F16_SPECIAL.len() * 4 => F16_SPECIAL[i / 4],
        _ if i % 2 == 0 => rng.next() as u16,
        _ => half::f16::from_f32(0.001 + (rng.next() % 1000) as f32 * 1e-4).to_bits(),
    }
}

fn f32_field(i: usize, rng: &mut Rng) -> u32 {
    match i {
        _ if i < F32_SPECIAL.len() * 4 => F32_SPECIAL[i / 4],
        _ if i % 3 == 0 => rng.next() as u32,
        // Around the 2^-102 edge of the exact range, both signs.
        _ if i % 3 == 1 => (0x0c00_0000 + (rng.next() % 0x0100_0000) as u32) | ((rng.next() as u32) << 31),
        _ => (0.001 + (rng.next() % 1000) as f32 * 1e-4).to_bits(),
    }
}

fn assert_same(ty: &str, scalar: impl Fn(&[u8], &mut [f32]), simd: impl Fn(&[u8], &mut [f32]), src: &[u8], n: usize) {
    let mut a = vec![0.0f32; n];
    let mut b = vec![1.0f32; n];
    scalar(src, &mut a);
    simd(src, &mut b);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            x.to_bits(),
            y.to_bits(),
            "{ty}: element {i} differs: scalar {x:e} ({:#010x}) vs SSE2 {y:e}",
            x.to_bits()
        );
    }
}

#[test]
fn q8_0_matches_scalar() {
    let n = 4000;
    let src = blocks::<34>(n, 1, 2..34, |i, rng, b| b[0..2].copy_from_slice(&f16_field(i, rng).to_le_bytes()));
    assert_same("q8_0", block32::dequant_q8_0_scalar, dequant_q8_0, &src, n * 32);
}

#[test]
fn q8_k_matches_scalar() {
    let n = 3000;
    let src = blocks::<292>(n, 2, 4..260, |i, rng, b| b[0..4].copy_from_slice(&f32_field(i, rng).to_le_bytes()));
    assert_same("q8_K", kquants::dequant_q8_k_scalar, dequant_q8_k, &src, n * 256);
}

#[test]
fn q4_k_matches_scalar() {
    let n = 3000;
    let src = blocks::<144>(n, 3, 16..144, |i, rng, b| {
        // d and dmin from the special lists independently; scales random
        // (block bytes), or all 63 for the largest products.
        b[0..2].copy_from_slice(&f16_field(i, rng).to_le_bytes());
        b[2..4].copy_from_slice(&f16_field(i / 3 + 7 * (i % 3), rng).to_le_bytes());
        if i % 5 == 0 {
            b[4..16].fill(0xff);
        }
    });
    assert_same(
        "q4_K",
        kquants::dequant_q4_k_scalar,
        |s: &[u8], d: &mut [f32]| dequant_q4_k(s, d, kquants::k4_scales),
        &src,
        n * 256,
    );
}

#[test]
fn prescale_is_exact_exactly_when_claimed() {
    for &bits in F32_SPECIAL {
        let d = f32::from_bits(bits);
        if let Some(ds) = prescale(d) {
            if d.is_nan() {
                assert!(ds.is_nan());
            } else {
                assert_eq!((ds * 16_777_216.0).to_bits(), d.to_bits(), "{bits:#010x}");
            }
        }
    }
    assert!(prescale(f32::from_bits(0x0c7f_ffff)).is_none());
    assert!(prescale(f32::from_bits(0x0000_0001)).is_none());
    for bits in 0..=u16::MAX {
        let d = f16_to_f32(bits);
        assert!(prescale(d).is_some(), "f16 {bits:#06x}");
    }
}

#[test]
fn iq1_group_matches_scalar() {
    let mut rng = Rng(4);
    let mut scales: Vec<f32> = F32_SPECIAL.iter().map(|&b| f32::from_bits(b)).collect();
    scales.extend(F16_SPECIAL.iter().map(|&h| f16_to_f32(h) * 15.0));
    scales.extend((0..64).map(|_| f32::from_bits(rng.next() as u32)));
    for dl in scales {
        for delta in [0.125f32, -0.125] {
            let vals = crate::iquants::iq1_values(dl, delta);
            for idx in 0..2048 {
                let (mut a, mut b) = ([0f32; 256], [1f32; 256]);
                crate::iquants::put_iq1_scalar(&mut a, 8, &vals, idx);
                iq1_group(crate::tables::iq1_grid::IQ1S_GRID[idx], dl, delta, &mut b, 8);
                for j in 8..16 {
                    assert_eq!(a[j].to_bits(), b[j].to_bits(), "dl {dl:e} delta {delta} idx {idx} lane {j}");
                }
            }
        }
    }
}
