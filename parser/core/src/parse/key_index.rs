//! The pairs of a file by key ([`KeyIndex`]), for the duplicate-key rule
//! and for [`super::GgufFile::get`] on a file of many pairs.
//!
//! Each key is hashed once (per-process seeds) to 32 bits, kept in
//! position order (4 bytes a pair), and sets one bit of a bitmap of 8 to
//! 16 bits a pair (at most [`MAX_BITMAP_BITS_LOG2`]: 1 MiB), a second
//! bitmap beside it marking the bits set more than once: *hot* bits. Two
//! keys that are equal share their hash, so share a hot bit. Nothing is
//! sorted but the pairs of hot bits (about 12% of a million distinct keys,
//! few of a file of hundreds), and a lookup of a key whose bit is clear
//! ends there.
//!
//! The index it replaces sorted every pair's hash (a radix sort through a
//! second buffer of 8 bytes a pair): on a file of a million keys, the sort
//! and the zeroing of its two buffers' pages were half of `perf record`'s
//! samples.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::hash::BuildHasher;

use crate::scratch::{PagedVec, bitmap_slot};

/// log2 of the most bits of the bitmap (2^23 bits: 1 MiB, from a million
/// pairs up).
const MAX_BITMAP_BITS_LOG2: u32 = 23;
/// log2 of the fewest (two words).
const MIN_BITMAP_BITS_LOG2: u32 = 6;
/// Bits of the bitmap a pair, at least, below the largest bitmap: a
/// million distinct keys in 2^23 bits leave about 60,000 bits hot.
const BITMAP_BITS_PER_PAIR: usize = 8;
/// Hashes compared at a time by a lookup's scan (without an early exit
/// inside, so the compiler compares them as one vector).
const SCAN_CHUNK: usize = 64;

/// The pairs of a file by key, built on first use ([`KeyIndex::get_or_build`]),
/// once. `None` inside when a key could not be read again or the pairs
/// are more than a `u32` counts (the callers then compare keys with every
/// pair). Derived data: two files are equal whatever their indexes hold.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyIndex(std::sync::OnceLock<Option<KeyHashes>>);

impl PartialEq for KeyIndex {
    fn eq(&self, _: &KeyIndex) -> bool {
        true
    }
}

impl KeyIndex {
    /// The index of the keys of `pairs`, built by the first call.
    pub(crate) fn get_or_build(&self, pairs: &super::Pairs<'_>) -> Option<&KeyHashes> {
        self.0.get_or_init(|| KeyHashes::build(pairs.len(), pairs.keys())).as_ref()
    }
}

/// What [`KeyIndex`] holds: the hashes, their bitmap and its hot bits.
#[derive(Clone, Debug)]
pub(crate) struct KeyHashes {
    hasher: foldhash::fast::RandomState,
    /// Each pair's key hashed to 32 bits, in position order.
    hashes: PagedVec<u32>,
    /// Two bitmaps of one bit for each value of a hash's top bits
    /// (`hash >> shift`), word by word in one piece of zeroed memory (a
    /// huge page for the largest; a lookup reads one cache line): the
    /// first set by every key that hashes to it, the second (the *hot*
    /// bits) by every such key but the first.
    bitmaps: PagedVec<[u32; 2]>,
    /// 32 minus log2 of each bitmap's bits.
    shift: u32,
    /// How many keys found their bit set already (each made a bit hot, or
    /// hotter): the pairs of hot bits are at most twice as many.
    repeats: usize,
}

impl KeyHashes {
    /// Hashes `keys`, which must be the `pairs` pairs' keys in position
    /// order; `None` if one is missing or they are more than a `u32` counts.
    fn build<'k>(pairs: usize, keys: impl Iterator<Item = (usize, &'k [u8])>) -> Option<KeyHashes> {
        u32::try_from(pairs).ok()?;
        let wanted = pairs.checked_mul(BITMAP_BITS_PER_PAIR)?.checked_next_power_of_two()?;
        let bits_log2 = wanted.trailing_zeros().clamp(MIN_BITMAP_BITS_LOG2, MAX_BITMAP_BITS_LOG2);
        let shift = 32u32.checked_sub(bits_log2)?;
        let words = 1usize.checked_shl(bits_log2.checked_sub(5)?)?;
        let mut bitmaps = PagedVec::<[u32; 2]>::zeroed(words);
        let mut hashes = PagedVec::with_capacity(pairs);
        let hasher = foldhash::fast::RandomState::default();
        let both = bitmaps.as_mut_slice();
        let (mut next, mut repeats) = (0usize, 0usize);
        for (i, key) in keys {
            if i != next {
                return None;
            }
            next = next.checked_add(1)?;
            let h = hash32(&hasher, key);
            hashes.push(h);
            let (word, mask) = bitmap_slot(shift, h);
            let [seen, hot] = both.get_mut(word)?;
            // Without a branch: the bit turns hot when it was seen already.
            let again = *seen & mask;
            *hot |= again;
            repeats = repeats.saturating_add(usize::from(again != 0));
            *seen |= mask;
        }
        if next != pairs {
            return None;
        }
        Some(KeyHashes { hasher, hashes, bitmaps, shift, repeats })
    }

    /// Whether `which` (0: every key's bits, 1: the hot ones) has the bit of hash `h`.
    #[inline]
    fn has(&self, which: usize, h: u32) -> bool {
        let (word, mask) = bitmap_slot(self.shift, h);
        self.bitmaps.as_slice().get(word).and_then(|w| w.get(which)).is_some_and(|w| w & mask != 0)
    }

    /// The position of the first pair whose key is `key` (`key_at` gives
    /// the key of the pair at a position).
    pub(crate) fn first<'k>(&self, key: &[u8], key_at: impl Fn(usize) -> Option<&'k [u8]>) -> Option<usize> {
        let h = hash32(&self.hasher, key);
        if !self.has(0, h) {
            return None;
        }
        let hashes = self.hashes.as_slice();
        let mut base = 0usize;
        for chunk in hashes.chunks(SCAN_CHUNK) {
            if chunk.iter().fold(false, |any, x| any | (*x == h)) {
                let hit = chunk
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| **x == h)
                    .map(|(j, _)| base.saturating_add(j))
                    .find(|i| key_at(*i) == Some(key));
                if hit.is_some() {
                    return hit;
                }
            }
            base = base.saturating_add(chunk.len());
        }
        None
    }

    /// The pairs whose bit is hot, each as its hash above its position in
    /// one `u64`, sorted: every pair whose key another pair repeats is
    /// among them, with that other pair.
    pub(crate) fn candidates(&self) -> Vec<u64> {
        if self.repeats == 0 {
            return Vec::new();
        }
        let is_hot = |h: u32| self.has(1, h);
        let hashes = self.hashes.as_slice();
        // Room for them all at once.
        let mut out = Vec::with_capacity(self.repeats.saturating_mul(2).min(hashes.len()));
        for (i, h) in hashes.iter().enumerate() {
            if is_hot(*h) {
                // Positions fit in a u32: `build` refused more pairs.
                let Ok(i) = u32::try_from(i) else { break };
                out.push(u64::from(*h) << 32 | u64::from(i));
            }
        }
        out.sort_unstable();
        out
    }

    /// How many pairs are hashed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.hashes.as_slice().len()
    }
}

/// A key's seeded hash, its top 32 bits.
#[inline]
fn hash32(hasher: &foldhash::fast::RandomState, key: &[u8]) -> u32 {
    u32::try_from(hasher.hash_one(key) >> 32).unwrap_or(0)
}
