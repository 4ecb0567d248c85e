//! A small seeded generator, SplitMix64 (Steele, Lea and Flood, "Fast
//! splittable pseudorandom number generators", 2014), written once for the
//! workspace: the conformance corpus, the fuzz smoke tests, the writer and
//! quantizer campaigns and `smith`'s tensor data all draw from it, so a
//! seed gives the same files and cases on every machine and in every
//! release. Not for anything secret.
//!
//! The methods that return one value ([`SplitMix64::below`],
//! [`SplitMix64::below_u32`], [`SplitMix64::next_u32`],
//! [`SplitMix64::unit_f32`]) take exactly one 64-bit draw whatever their
//! argument (`below(0)` draws one and returns 0); [`SplitMix64::fill`] and
//! [`SplitMix64::bytes`] take one draw per 8 bytes, a last partial chunk
//! included.

/// The golden-ratio increment of SplitMix64's state.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Multiplier that separates the streams of [`SplitMix64::for_case`].
const CASE_MIX: u64 = 0xA076_1D64_78BD_642F;

/// A SplitMix64 generator: 64 bits of state, advanced by a constant and
/// mixed on each draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The generator whose first draw is SplitMix64's first output for `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The generator for case `case` of a run seeded `seed`: the state
    /// `seed ^ case · 0xA0761D6478BD642F`, advanced by one draw, so that any
    /// case can be replayed from `(seed, case)` alone.
    pub fn for_case(seed: u64, case: u64) -> SplitMix64 {
        let mut g = SplitMix64::new(seed ^ case.wrapping_mul(CASE_MIX));
        g.next_u64();
        g
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The low 32 bits of the next draw.
    pub fn next_u32(&mut self) -> u32 {
        u32::try_from(self.next_u64() & u64::from(u32::MAX)).unwrap_or(0)
    }

    /// A value in `0..n`: the next draw modulo `n` (0 when `n` is 0, one
    /// draw all the same).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64().checked_rem(n).unwrap_or(0)
    }

    /// A value in `0..n` from the low 32 bits: [`next_u32`](Self::next_u32)
    /// modulo `n` (0 when `n` is 0). Not `below(n)` narrowed: the remainder
    /// of the low half differs from that of the whole draw.
    pub fn below_u32(&mut self, n: u32) -> u32 {
        self.next_u32().checked_rem(n).unwrap_or(0)
    }

    /// A uniform f32 in `[0, 1)` with 23 random bits, from the top 24 bits
    /// of one draw.
    pub fn unit_f32(&mut self) -> f32 {
        let top = self.next_u64() >> 40;
        let mantissa = u32::try_from(top >> 1).unwrap_or(0);
        f32::from_bits(0x3F80_0000 | mantissa) - 1.0
    }

    /// Fills `out` with random bytes: each 8 bytes are one draw, little-endian
    /// (a last partial chunk takes the first bytes of a draw).
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let draw = self.next_u64().to_le_bytes();
            chunk.iter_mut().zip(draw).for_each(|(d, s)| *d = s);
        }
    }

    /// `n` random bytes, as [`fill`](Self::fill) writes them.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        self.fill(&mut out);
        out
    }

    /// A random buffer of a random length in `0..max_len`: the length is one
    /// [`below`](Self::below) draw, the bytes [`bytes`](Self::bytes).
    pub fn bytes_below(&mut self, max_len: u64) -> Vec<u8> {
        let len = usize::try_from(self.below(max_len)).unwrap_or(0);
        self.bytes(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_outputs_are_splitmix64s() {
        // The reference outputs for seed 0 (Vigna's splitmix64.c).
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn the_helpers_draw_as_documented() {
        let draws: Vec<u64> = {
            let mut g = SplitMix64::new(42);
            (0..4).map(|_| g.next_u64()).collect()
        };
        let mut g = SplitMix64::new(42);
        assert_eq!(g.below(0), 0);
        assert_eq!(g.below(1000), draws.get(1).map_or(0, |d| d % 1000));
        assert_eq!(g.next_u32(), draws.get(2).map_or(0, |d| (d & 0xFFFF_FFFF) as u32));
        assert_eq!(g.below_u32(7), draws.get(3).map_or(0, |d| (d & 0xFFFF_FFFF) as u32 % 7));
        let mut g = SplitMix64::new(42);
        let bytes = g.bytes(12);
        let want: Vec<u8> = draws.iter().take(2).flat_map(|d| d.to_le_bytes()).take(12).collect();
        assert_eq!(bytes, want);
        let mut g = SplitMix64::new(42);
        assert!((0..1000).map(|_| g.unit_f32()).all(|x| (0.0..1.0).contains(&x)));
        assert_eq!(SplitMix64::for_case(7, 3).bytes(40), SplitMix64::for_case(7, 3).bytes(40));
        assert_ne!(SplitMix64::for_case(7, 3).bytes(8), SplitMix64::for_case(7, 4).bytes(8));
        let mut g = SplitMix64::new(5);
        let len = SplitMix64::new(5).below(64);
        assert_eq!(g.bytes_below(64).len() as u64, len);
    }
}
