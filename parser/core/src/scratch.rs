//! Working memory for a large array of plain values ([`PagedVec`]: the
//! vocabulary's hashes and bitmap of [`crate::check`]'s tokenizer rules,
//! zeroed; the pairs' records and key index of [`crate::parse`], pushed):
//! in anonymous pages advised for transparent huge pages where it
//! is at least [`limits::HUGE_SCRATCH_MIN`] bytes and the system gives
//! them, on the heap otherwise. Fresh memory is zeroed by the kernel page
//! by page as it is first touched; on the machines measured a 4 KiB page
//! fault cost about 2.3 µs and a 2 MiB one about 320 µs, so 1.5 MiB of
//! scratch took 384 faults (0.9 ms) on the heap and one (0.3 ms) in a
//! huge page.
#![forbid(unsafe_code)]

use crate::limits;

/// Values of a plain type, pushed up to a capacity given in advance (a
/// bound the bytes at hand back, never a declared count): where that
/// capacity takes at least [`limits::HUGE_SCRATCH_MIN`] bytes, in anonymous
/// memory reserved for it and advised for huge pages ([`huge_page_map`]; a
/// page exists once written, so memory follows the values pushed), else
/// (or past the capacity, or where the system refuses) on the heap. A
/// million pairs' records and their key index took 8,000 page faults of
/// 4 KiB on the heap, a sixth of the time of validating them.
#[derive(Debug)]
pub(crate) struct PagedVec<T> {
    pages: Option<(memmap2::MmapMut, usize)>,
    heap: Vec<T>,
}

impl<T> Default for PagedVec<T> {
    fn default() -> Self {
        PagedVec { pages: None, heap: Vec::new() }
    }
}

impl<T: bytemuck::Pod> PagedVec<T> {
    /// Room for `capacity` values.
    pub(crate) fn with_capacity(capacity: usize) -> PagedVec<T> {
        let bytes = capacity.checked_mul(std::mem::size_of::<T>()).and_then(|b| u64::try_from(b).ok());
        match bytes.filter(|b| *b >= limits::HUGE_SCRATCH_MIN).and_then(huge_page_map) {
            Some(map) => PagedVec { pages: Some((map, 0)), heap: Vec::new() },
            None => PagedVec { pages: None, heap: Vec::with_capacity(capacity) },
        }
    }

    /// `len` zeroed values.
    pub(crate) fn zeroed(len: usize) -> PagedVec<T> {
        let mut v = PagedVec::with_capacity(len);
        match &mut v.pages {
            // Fresh pages read as zeros.
            Some((map, n)) if len.checked_mul(std::mem::size_of::<T>()).is_some_and(|b| b <= map.len()) => *n = len,
            _ => v.heap = vec![T::zeroed(); len],
        }
        v
    }

    /// Appends `value` (inlined: pushed a million times over).
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        if let Some((map, n)) = &mut self.pages {
            // The whole reservation seen as values (page-aligned, a whole
            // number of them): one check of the cast, one of the index.
            if let Some(slot) = bytemuck::try_cast_slice_mut::<u8, T>(map).ok().and_then(|slots| slots.get_mut(*n)) {
                *slot = value;
                *n = n.saturating_add(1);
                return;
            }
            self.move_to_heap();
        }
        self.heap.push(value);
    }

    /// The values, from the reserved pages (full) to the heap.
    #[cold]
    #[inline(never)]
    fn move_to_heap(&mut self) {
        self.heap = self.as_slice().to_vec();
        self.pages = None;
    }

    /// The values.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        match &self.pages {
            Some((map, n)) => {
                let bytes = map.get(..n.saturating_mul(std::mem::size_of::<T>())).unwrap_or_default();
                bytemuck::try_cast_slice(bytes).unwrap_or_default()
            }
            None => &self.heap,
        }
    }

    /// The values, to write.
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.pages {
            Some((map, n)) => {
                let bytes = map.get_mut(..n.saturating_mul(std::mem::size_of::<T>())).unwrap_or_default();
                bytemuck::try_cast_slice_mut(bytes).unwrap_or_default()
            }
            None => &mut self.heap,
        }
    }

    /// Whether the values are in reserved pages (not the heap).
    #[cfg(test)]
    pub(crate) fn is_paged(&self) -> bool {
        self.pages.is_some()
    }
}

impl<T: bytemuck::Pod> Clone for PagedVec<T> {
    /// A copy on the heap.
    fn clone(&self) -> Self {
        PagedVec { pages: None, heap: self.as_slice().to_vec() }
    }
}

/// The word (of 32 bits) and mask of a hash's bit in a bitmap of
/// `2^(32 - shift)` bits: the hash's top `32 - shift` bits (`shift` is at
/// most 26: the bitmap has at least 64 bits). The bitmaps of the
/// vocabulary's duplicate search and of the key index.
#[inline]
pub(crate) fn bitmap_slot(shift: u32, h: u32) -> (usize, u32) {
    let bit = h.wrapping_shr(shift);
    (usize::try_from(bit >> 5).unwrap_or(0), 1 << (bit & 31))
}

/// Anonymous memory of at least `bytes`, rounded up to
/// [`limits::HUGE_PAGE_BYTES`] (so the kernel can align it and back all of
/// it with huge pages), with no swap reserved and advised for transparent
/// huge pages: memmap2's safe `map_anon` and `advise`. A page exists once
/// it is touched. `None` off Linux (there is no advice to give there, and
/// Windows would charge the whole reservation to the commit limit) or
/// where the system refuses. Shared by the metadata buffer
/// ([`crate::io::MetadataBytes`]) and [`PagedVec`].
pub(crate) fn huge_page_map(bytes: u64) -> Option<memmap2::MmapMut> {
    let map = anonymous_map(bytes)?;
    // Only a hint: without it (THP off) the pages are 4 KiB ones.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Some(map)
}

/// [`huge_page_map`] without the advice: pages of the system's base size,
/// each one existing (zeroed by the kernel) only once it is written. A
/// range never written reads as zeros and costs no memory (a lean read's
/// unread arrays, [`crate::io::MetadataBytes::skip`]).
pub(crate) fn anonymous_map(bytes: u64) -> Option<memmap2::MmapMut> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let rounded = usize::try_from(bytes.checked_next_multiple_of(limits::HUGE_PAGE_BYTES)?).ok()?;
    memmap2::MmapOptions::new().len(rounded).no_reserve_swap().map_anon().ok()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn paged_vectors_hold_what_was_pushed_in_pages_on_the_heap_and_past_their_capacity() {
        let large = usize::try_from(limits::HUGE_SCRATCH_MIN).unwrap() / 16 + 10;
        for capacity in [0, 3, large] {
            let mut v: PagedVec<[u64; 2]> = PagedVec::with_capacity(capacity);
            assert_eq!(v.is_paged(), cfg!(target_os = "linux") && capacity == large, "{capacity}");
            // Past the capacity too (in pages: past the huge pages it was
            // rounded up to): the values move to the heap.
            let room = if v.is_paged() { usize::try_from(limits::HUGE_PAGE_BYTES).unwrap() / 16 } else { capacity };
            let n = room + 5;
            for i in 0..n as u64 {
                v.push([i, !i]);
            }
            assert_eq!(v.as_slice().len(), n);
            assert!(v.as_slice().iter().enumerate().all(|(i, x)| *x == [i as u64, !(i as u64)]));
            assert!(!v.is_paged());
            assert_eq!(v.clone().as_slice(), v.as_slice());
        }
        for len in [0, 7, large] {
            let mut z: PagedVec<u64> = PagedVec::zeroed(len);
            assert_eq!(z.as_slice().len(), len);
            assert!(z.as_slice().iter().all(|x| *x == 0));
            z.as_mut_slice().iter_mut().enumerate().for_each(|(i, x)| *x = i as u64 * 3);
            assert!(z.as_slice().iter().enumerate().all(|(i, x)| *x == i as u64 * 3));
        }
    }

    #[test]
    fn zeroed_words_read_and_write_alike_in_pages_and_on_the_heap() {
        let small = usize::try_from(limits::HUGE_SCRATCH_MIN / 4).unwrap() - 1;
        let large = small + 1000;
        for len in [0, 1, small, large] {
            let mut z: PagedVec<u32> = PagedVec::zeroed(len);
            assert_eq!(z.as_slice().len(), len);
            assert!(z.as_slice().iter().all(|w| *w == 0));
            for (i, w) in z.as_mut_slice().iter_mut().enumerate() {
                *w = u32::try_from(i).unwrap() ^ 0x5a5a_5a5a;
            }
            assert!(z.as_slice().iter().enumerate().all(|(i, w)| *w == u32::try_from(i).unwrap() ^ 0x5a5a_5a5a));
            assert_eq!(z.is_paged(), cfg!(target_os = "linux") && len == large, "{len}");
        }
    }
}
