//! The fetched ranges a source keeps (up to
//! [`limits::REMOTE_CACHE_BYTES`]), so no byte is fetched twice.

use std::collections::BTreeMap;

use gguf_validate_core::limits;

/// Fetched ranges, disjoint, kept up to a byte budget.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    chunks: BTreeMap<u64, Vec<u8>>,
    bytes: u64,
    /// Keeps nothing more ([`Cache::released`]).
    off: bool,
}

impl Cache {
    /// An empty cache that keeps nothing: a source's after
    /// [`HttpSource::release_cache`](crate::HttpSource::release_cache).
    pub(crate) fn released() -> Cache {
        Cache { off: true, ..Cache::default() }
    }

    /// Whether it keeps what is inserted (not [released](Cache::released)).
    pub(crate) fn keeps(&self) -> bool {
        !self.off
    }

    /// Copies what is cached from `at` on into `out`; the bytes copied.
    pub(crate) fn copy(&self, at: u64, out: &mut [u8]) -> usize {
        let Some((start, chunk)) = self.chunks.range(..=at).next_back() else { return 0 };
        let Ok(skip) = usize::try_from(at.saturating_sub(*start)) else { return 0 };
        let Some(have) = chunk.get(skip..) else { return 0 };
        let n = have.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), have.get(..n)) {
            dst.copy_from_slice(src);
        }
        n
    }

    /// Where the next cached chunk after `at` starts.
    pub(crate) fn next_start(&self, at: u64) -> Option<u64> {
        self.chunks.range(at.saturating_add(1)..).next().map(|(s, _)| *s)
    }

    /// Keeps `bytes` fetched at `at`, unless they overlap a kept chunk or
    /// the budget is spent.
    pub(crate) fn insert(&mut self, at: u64, bytes: &[u8]) {
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        let end = at.saturating_add(len);
        if self.off || bytes.is_empty() || self.bytes.saturating_add(len) > limits::REMOTE_CACHE_BYTES {
            return;
        }
        let before = self.chunks.range(..end).next_back();
        if before.is_some_and(|(s, c)| s.saturating_add(u64::try_from(c.len()).unwrap_or(u64::MAX)) > at) {
            return;
        }
        self.bytes = self.bytes.saturating_add(len);
        self.chunks.insert(at, bytes.to_vec());
    }
}
