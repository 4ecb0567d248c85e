//! The lattices of the IQ quantizers: what ggml's `iq2xs_init_impl` and
//! `iq3xs_init_impl` build before the first IQ2/IQ1/IQ3 quantization.
//!
//! A lattice point has D coordinates (8 for IQ2_* and IQ1_*, 4 for IQ3_*),
//! each an odd integer 2l+1 with level l in 0..2^bits. Its index packs the
//! levels, `bits` bits per coordinate, coordinate 0 lowest. The code book of
//! a type (`tables::lattice`, generated from ggml's `kgrid_*` arrays) lists
//! the points a block may use; every other index has a neighbour list: the
//! code-book points at the `nwant` smallest squared distances from it,
//! ordered by (distance, code-book index) as ggml's `qsort` with its total
//! order leaves them. The quantizers look a point up and, when it is not in
//! the code book, search its neighbours for the best one.
//!
//! ggml builds every list at start-up (one sort of the whole code book per
//! index: 41,600 indices × 2,048 points for IQ1_S). Here the map from index
//! to code-book entry is built on first use of a type (a `OnceLock`), and
//! each neighbour list on first use of its index (a `OnceLock` per index):
//! a quantization visits a small part of the 43,692 (IQ2/IQ1) or 4,096 (IQ3)
//! indices, so most lists are never built. Stored, the lists of the six
//! lattices would be about 2.4 million u16 entries (IQ1_S's alone 1.35
//! million; some 15 MB as Rust source), which is why they are computed,
//! not generated: only the code books (4,608 u16) are a generated table.
//! The computation is one pass over the code book with no sort (see
//! `build_neighbours`), and a test checks it against a literal
//! transcription of ggml's sort.

use std::sync::OnceLock;

use super::tables::lattice::{KGRID_IQ1S, KGRID_IQ2S, KGRID_IQ2XS, KGRID_IQ2XXS, KGRID_IQ3S, KGRID_IQ3XXS};

/// One lattice with its code book, index map and neighbour lists.
#[derive(Debug)]
pub(crate) struct Lattice<const D: usize> {
    bits: u32,
    nwant: usize,
    /// Level (0..2^bits) of each coordinate of each code-book point.
    levels: Box<[[u8; D]]>,
    /// Index → code-book entry, or -1.
    map: Box<[i32]>,
    /// The code book's packed levels (the `kgrid` values).
    packed: Box<[u16]>,
    /// Index → neighbour list (built on first use; unused for code-book
    /// points): code-book entry j in the low 16 bits, its packed levels above.
    neighbours: Box<[OnceLock<Box<[u32]>>]>,
}

impl<const D: usize> Lattice<D> {
    fn new(kgrid: &[u16], bits: u32, nwant: usize, map_size: usize) -> Self {
        let mask = (1u16 << bits) - 1;
        let levels: Box<[[u8; D]]> = kgrid
            .iter()
            .map(|&g| {
                let mut l = [0u8; D];
                for (k, v) in l.iter_mut().enumerate() {
                    *v = ((g >> (bits as usize * k)) & mask) as u8;
                }
                l
            })
            .collect();
        let mut map = vec![-1i32; map_size].into_boxed_slice();
        for (j, &g) in kgrid.iter().enumerate() {
            if let Some(m) = map.get_mut(usize::from(g)) {
                *m = j as i32;
            }
        }
        let neighbours = (0..map_size).map(|_| OnceLock::new()).collect();
        Lattice { bits, nwant, levels, map, packed: kgrid.into(), neighbours }
    }

    /// Packs levels (each already in 0..2^bits) into an index.
    #[inline(always)]
    pub(crate) fn index(&self, l: &[i8; D]) -> usize {
        let mut u = 0usize;
        for (k, &v) in l.iter().enumerate() {
            u |= (v as u8 as usize) << (self.bits as usize * k);
        }
        u
    }

    /// The code-book entry of index `u`, if it is a code-book point.
    #[inline(always)]
    pub(crate) fn entry(&self, u: usize) -> Option<usize> {
        match self.map.get(u) {
            Some(&m) if m >= 0 => Some(m as usize),
            _ => None,
        }
    }

    /// Bits per coordinate of a packed index.
    #[inline(always)]
    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// The neighbour list of index `u` (not a code-book point), built on
    /// first use: entry j | packed levels << 16, in ggml's order.
    #[inline]
    pub(crate) fn neighbours(&self, u: usize) -> &[u32] {
        match self.neighbours.get(u) {
            Some(cell) => cell.get_or_init(|| self.build_neighbours(u)),
            None => &[],
        }
    }

    /// Levels of code-book point `j`.
    #[inline(always)]
    pub(crate) fn levels(&self, j: usize) -> [i8; D] {
        self.levels.get(j).map_or([0; D], |l| l.map(|v| v as i8))
    }

    /// Squared distances from index `u`'s point to every code-book point.
    fn distances(&self, u: usize) -> Vec<u32> {
        let mask = (1usize << self.bits) - 1;
        let mut p = [0i32; D];
        for (k, v) in p.iter_mut().enumerate() {
            *v = 2 * ((u >> (self.bits as usize * k)) & mask) as i32 + 1;
        }
        self.levels
            .iter()
            .map(|l| {
                let mut d2 = 0i32;
                for k in 0..D {
                    let diff = 2 * i32::from(l[k]) + 1 - p[k];
                    d2 += diff * diff;
                }
                d2 as u32
            })
            .collect()
    }

    /// The code-book points at the `nwant` smallest distinct squared
    /// distances from `u`, ordered by (distance, index). The same list as
    /// sorting all (distance, index) pairs and cutting before the
    /// (nwant+1)-th distinct distance, as ggml does.
    fn build_neighbours(&self, u: usize) -> Box<[u32]> {
        let d2 = self.distances(u);
        // The nwant smallest distinct distances, ascending.
        let mut want: Vec<u32> = Vec::with_capacity(self.nwant + 1);
        for &d in &d2 {
            if want.contains(&d) {
                continue;
            }
            let at = want.iter().position(|&w| w > d).unwrap_or(want.len());
            if at < self.nwant {
                want.insert(at, d);
                want.truncate(self.nwant);
            }
        }
        let mut out = Vec::new();
        for w in want {
            out.extend(
                d2.iter()
                    .enumerate()
                    .filter(|&(_, &d)| d == w)
                    .map(|(j, _)| j as u32 | u32::from(self.packed.get(j).copied().unwrap_or(0)) << 16),
            );
        }
        out.into_boxed_slice()
    }
}

fn lattice8(cell: &'static OnceLock<Lattice<8>>, kgrid: &[u16], nwant: usize) -> &'static Lattice<8> {
    cell.get_or_init(|| Lattice::new(kgrid, 2, nwant, 43_692))
}

fn lattice4(cell: &'static OnceLock<Lattice<4>>, kgrid: &[u16], nwant: usize) -> &'static Lattice<4> {
    cell.get_or_init(|| Lattice::new(kgrid, 3, nwant, 4_096))
}

/// IQ2_XXS: 256 points, two distances of neighbours.
pub(crate) fn iq2xxs() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    lattice8(&L, &KGRID_IQ2XXS, 2)
}

/// IQ2_XS: 512 points, two distances.
pub(crate) fn iq2xs() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    lattice8(&L, &KGRID_IQ2XS, 2)
}

/// IQ2_S: 1024 points, one distance.
pub(crate) fn iq2s() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    lattice8(&L, &KGRID_IQ2S, 1)
}

/// IQ1_S and IQ1_M (one lattice, as in ggml): 2048 points, three distances.
pub(crate) fn iq1s() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    lattice8(&L, &KGRID_IQ1S, 3)
}

/// IQ3_XXS: 256 points of 4 coordinates, two distances.
pub(crate) fn iq3xxs() -> &'static Lattice<4> {
    static L: OnceLock<Lattice<4>> = OnceLock::new();
    lattice4(&L, &KGRID_IQ3XXS, 2)
}

/// IQ3_S: 512 points of 4 coordinates, three distances.
pub(crate) fn iq3s() -> &'static Lattice<4> {
    static L: OnceLock<Lattice<4>> = OnceLock::new();
    lattice4(&L, &KGRID_IQ3S, 3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::iq1_grid::IQ1S_GRID;
    use crate::tables::iq2_grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
    use crate::tables::iq3_grids::{IQ3S_GRID, IQ3XXS_GRID};

    /// ggml's neighbour list, transcribed literally: sort every (d2, j) pair,
    /// then take entries until the (nwant+1)-th distinct distance.
    fn ggml_list<const D: usize>(lat: &Lattice<D>, u: usize) -> Vec<u16> {
        let mut pairs: Vec<(u32, usize)> = lat.distances(u).into_iter().enumerate().map(|(j, d)| (d, j)).collect();
        pairs.sort_unstable();
        let mut out = Vec::new();
        let (mut d2, mut nhave) = (pairs[0].0, 1);
        for &(d, j) in &pairs {
            if d > d2 {
                if nhave == lat.nwant {
                    break;
                }
                d2 = d;
                nhave += 1;
            }
            out.push(j as u16);
        }
        out
    }

    fn check_all<const D: usize>(lat: &Lattice<D>, stride: usize) -> usize {
        let mut n = 0;
        for u in (0..lat.map.len()).step_by(stride) {
            if lat.entry(u).is_none() {
                let got: Vec<u16> = lat.neighbours(u).iter().map(|&e| e as u16).collect();
                assert_eq!(got, ggml_list(lat, u), "index {u}");
                for &e in lat.neighbours(u) {
                    assert_eq!(lat.packed[(e & 0xffff) as usize], (e >> 16) as u16);
                }
                n += 1;
            }
        }
        n
    }

    #[test]
    fn neighbour_lists_equal_ggmls_sorted_cut() {
        // Every IQ3 index; every 7th IQ2/IQ1 index (the full sweep is the
        // same code and takes seconds per lattice).
        assert!(check_all(iq3xxs(), 1) > 3800);
        assert!(check_all(iq3s(), 1) > 3500);
        for lat in [iq2xxs(), iq2xs(), iq2s(), iq1s()] {
            assert!(check_all(lat, 7) > 5800);
        }
    }

    #[test]
    fn code_books_agree_with_the_dequantize_grids() {
        // The kgrid levels l map to the code-book magnitudes of ggml-common.h.
        fn check8(lat: &Lattice<8>, grid: &[u64], value: impl Fn(u8) -> u8) {
            assert_eq!(lat.levels.len(), grid.len());
            for (l, g) in lat.levels.iter().zip(grid) {
                assert_eq!(l.map(&value), g.to_le_bytes());
            }
        }
        fn check4(lat: &Lattice<4>, grid: &[u32], value: impl Fn(u8) -> u8) {
            assert_eq!(lat.levels.len(), grid.len());
            for (l, g) in lat.levels.iter().zip(grid) {
                assert_eq!(l.map(&value), g.to_le_bytes());
            }
        }
        let iq2 = |v: u8| [8u8, 25, 43][usize::from(v)];
        check8(iq2xxs(), &IQ2XXS_GRID, iq2);
        check8(iq2xs(), &IQ2XS_GRID, iq2);
        check8(iq2s(), &IQ2S_GRID, iq2);
        check8(iq1s(), &IQ1S_GRID, |v| (v as i8 - 1) as u8);
        // IQ3_XXS: 4, 12, ..., 52 and 62 (not 60) for level 7; IQ3_S: 2l+1.
        check4(iq3xxs(), &IQ3XXS_GRID, |v| if v == 7 { 62 } else { 8 * v + 4 });
        check4(iq3s(), &IQ3S_GRID, |v| 2 * v + 1);
    }
}
