//! How far the metadata of a GGUF v2/v3 file reaches, found by a walk that
//! builds nothing and resumes where the bytes at hand ran out.
//!
//! It sizes the reads of the metadata: after each read [`Extent::advance`]
//! walks only the new bytes and says where the metadata ends, or how much
//! more to read (exact past a fixed-size array, which it steps over
//! without its bytes; extrapolated inside a string array). So the metadata
//! is read to its end in a few reads and parsed once, where doubling reads
//! re-parsed the prefix after each one and read past the end.
//!
//! The walk only sizes: it judges nothing, and wherever the parser would
//! stop (a count or length the file cannot hold, a cap of
//! [`limits::MetadataLimits`], an unknown type) or where it does not
//! follow the file (arrays of arrays), it answers [`Reach::Unknown`] and
//! the caller reads as before, by doubling while the parser asks.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::primitives::{ByteOrder, StringSpan, u64_of};
use crate::limits;
use crate::types::ValueType;

/// What the walk knows after the bytes at hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The metadata (the last tensor info) ends at this offset.
    End(u64),
    /// A prefix of at least this length is needed to go on (more than the
    /// bytes at hand).
    Need(u64),
    /// The walk cannot say: the parser decides from the bytes at hand.
    Unknown,
}

/// String arrays shorter than this are not recorded as [`StringSpan`]s
/// (walking them again costs less than looking them up).
const MIN_SPAN_STRINGS: u64 = 256;

/// Where the walk stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    /// The two counts of the header.
    Counts,
    /// Key/value pair `index` starts at `at`.
    Kv { index: u64, at: u64 },
    /// Inside the string array of a pair: `left` strings, the next at `at`
    /// (the array's elements started at `start`, `len` strings in all, the
    /// lengths walked OR-ed in `or`).
    Strings { index: u64, at: u64, left: u64, start: u64, len: u64, or: u64 },
    /// Tensor info `index` starts at `at` (the first at `start`).
    Tensor { index: u64, at: u64, start: u64 },
    /// Walked to the end, at this offset.
    End(u64),
    /// Given up.
    Unknown,
}

/// A resumable walk of the metadata's extent (see the module).
#[derive(Clone, Debug)]
pub struct Extent {
    order: ByteOrder,
    file_len: u64,
    limits: limits::MetadataLimits,
    kv_count: u64,
    tensor_count: u64,
    /// Index and offset of the first pair after the last array: pairs
    /// from there on are small, and the rest is extrapolated from them.
    run: (u64, u64),
    item: Item,
    /// The vocabulary (`tokenizer.ggml.tokens`): its pair's index and its
    /// length, once its header was walked; and how many fixed-size arrays
    /// of that length (scores, token types) were stepped over since.
    vocab: Option<(u64, u64)>,
    vocab_arrays: u64,
    /// The large string arrays walked to their end, in file order.
    spans: Vec<StringSpan>,
    /// A lean walk ([`Extent::lean`]): large string arrays are left to the
    /// caller to stream ([`Extent::pending_strings`]), and the large
    /// fixed-size arrays stepped over are noted as not needed.
    lean: bool,
    /// The fixed-size arrays of at least [`limits::LEAN_UNREAD_MIN_BYTES`]
    /// (not of bools) a lean walk stepped over: their elements' start and
    /// end, in file order.
    unread: Vec<(u64, u64)>,
    /// The offset of the string where the string array being walked is
    /// split in two, once reached ([`StringSpan::mid`]).
    mid_at: Option<u64>,
}

/// One step: the item after it, or how long a prefix it needs.
enum Step {
    Next(Item),
    Need(u64),
}

impl Extent {
    /// A walk of a GGUF v2/v3 file of `file_len` bytes in `order`.
    pub fn new(order: ByteOrder, file_len: u64, limits: &limits::MetadataLimits) -> Extent {
        Extent {
            order,
            file_len,
            limits: *limits,
            kv_count: 0,
            tensor_count: 0,
            run: (0, limits::HEADER_SIZE),
            item: Item::Counts,
            vocab: None,
            vocab_arrays: 0,
            spans: Vec::new(),
            lean: false,
            unread: Vec::new(),
            mid_at: None,
        }
    }

    /// A lean walk, for a reader that keeps only what the container's
    /// checks read (`--container-only`): the same walk, except that it
    /// leaves each string array of at least 256 strings to the reader,
    /// which walks it as it streams past ([`Extent::pending_strings`],
    /// [`Extent::streamed`]), and notes the large fixed-size arrays other
    /// than bools ([`Extent::unread`]), whose elements nothing reads there.
    pub fn lean(order: ByteOrder, file_len: u64, limits: &limits::MetadataLimits) -> Extent {
        Extent { lean: true, ..Extent::new(order, file_len, limits) }
    }

    /// Whether a vocabulary was walked whose fixed-size arrays (scores,
    /// token types) may still come: a lean reader then reads a chunk at a
    /// time, not as far as the walk projects, so as not to read them.
    pub fn vocabulary_arrays_ahead(&self) -> bool {
        self.vocab.is_some() && self.vocab_arrays < VOCAB_ARRAYS
    }

    /// The fixed-size arrays a lean walk stepped over that the container's
    /// checks do not read: each one's elements' start and end, in file order.
    pub fn unread(&self) -> &[(u64, u64)] {
        &self.unread
    }

    /// In a lean walk, the string array of at least 256 strings the walk
    /// stands in: where its first string's length field is and how many
    /// strings it has. The reader walks it ([`Extent::streamed`]).
    pub fn pending_strings(&self) -> Option<(u64, u64)> {
        match self.item {
            Item::Strings { start, len, .. } if self.lean && len >= MIN_SPAN_STRINGS => Some((start, len)),
            _ => None,
        }
    }

    /// The reader walked the pending string array ([`Extent::pending_strings`])
    /// to `end`, every string valid UTF-8 within the file and the caps, the
    /// OR of their lengths `lengths_or`: it becomes a checked span and the
    /// walk goes on after it.
    pub fn streamed(&mut self, end: u64, lengths_or: u64) {
        if let Item::Strings { index, start, len, .. } = self.item
            && self.pending_strings().is_some()
        {
            self.spans.push(StringSpan { start, end, len, lengths_or, checked: true, mid: None });
            self.item = self.after_array(index, end);
        }
    }

    /// The string arrays of at least 256 strings walked to their end, in
    /// file order, for the parser to step over under the same caps.
    pub fn spans(&self) -> &[StringSpan] {
        &self.spans
    }

    /// Where the metadata is projected to end, for a reader that pays a
    /// round trip per read (a remote file): the current item's end as
    /// [`Extent::advance`] extrapolates it, then the pairs still to come at
    /// the size of the small pairs walked so far (48 bytes before any), the
    /// arrays a vocabulary brings that were not walked yet (scores and token
    /// types, 4 bytes a token each), and the tensor infos (80 bytes each
    /// before any was walked), plus a quarter of all that. A projection is
    /// a guess that only sizes a read: the walk still decides
    /// where the metadata ends, so a short guess costs one more read and a
    /// long one some bytes of the data section. At least `need`, and past
    /// the file or the metadata cap only when `need` is.
    pub fn projection(&self, need: u64) -> u64 {
        let limit = self.file_len.min(self.limits.bytes);
        let pair =
            |walked: u64, bytes: u64| bytes.checked_div(walked).unwrap_or(PROJECTED_PAIR_BYTES).max(MIN_KV_BYTES);
        let small = |index: u64, at: u64| {
            let (first, from) = self.run;
            pair(index.saturating_sub(first), at.saturating_sub(from))
        };
        let tensors = |walked: u64, bytes: u64| {
            let per = bytes.checked_div(walked).unwrap_or(PROJECTED_TENSOR_INFO_BYTES);
            self.tensor_count.saturating_sub(walked).saturating_mul(per)
        };
        let (at, end) = match self.item {
            Item::Counts | Item::Unknown => return need,
            Item::End(end) => return end,
            Item::Kv { index, at } => {
                let left = self.kv_count.saturating_sub(index);
                (at, at.saturating_add(left.saturating_mul(small(index, at))).saturating_add(tensors(0, 0)))
            }
            Item::Strings { index, at, left, start, len, .. } => {
                let here = extrapolate(at, start, len.saturating_sub(left), left, need);
                let pairs = self.kv_count.saturating_sub(index.saturating_add(1));
                (at, here.saturating_add(pairs.saturating_mul(small(index, start))).saturating_add(tensors(0, 0)))
            }
            Item::Tensor { index, at, start } => (at, at.saturating_add(tensors(index, at.saturating_sub(start)))),
        };
        let vocab = match self.vocab {
            Some((_, n)) => VOCAB_ARRAYS.saturating_sub(self.vocab_arrays).saturating_mul(n).saturating_mul(4),
            None => 0,
        };
        // What is still to come, plus a margin: the first entries of a
        // vocabulary are often shorter than the rest (special and byte tokens).
        let rest = end.saturating_add(vocab).saturating_sub(at);
        let margin = rest.checked_div(PROJECTION_MARGIN_DIVISOR).unwrap_or(0);
        at.saturating_add(rest).saturating_add(margin).min(limit).max(need)
    }

    /// Walks on through `buf` (the file's first `buf.len()` bytes, the
    /// same bytes as before plus more).
    pub fn advance(&mut self, buf: &[u8]) -> Reach {
        loop {
            match self.item {
                Item::End(end) => return Reach::End(end),
                Item::Unknown => return Reach::Unknown,
                _ => {}
            }
            match self.step(buf) {
                Some(Step::Next(item)) => self.item = item,
                Some(Step::Need(n)) if n > u64_of(buf.len()) => return Reach::Need(n),
                // Asking for bytes at hand would never end.
                Some(Step::Need(_)) | None => self.item = Item::Unknown,
            }
        }
    }

    fn u64_at(&self, buf: &[u8], at: u64) -> Result<u64, u64> {
        let need = at.saturating_add(8);
        let bytes = usize::try_from(at).ok().and_then(|a| buf.get(a..)).and_then(|b| b.first_chunk::<8>());
        match (bytes, self.order) {
            (Some(b), ByteOrder::LittleEndian) => Ok(u64::from_le_bytes(*b)),
            (Some(b), ByteOrder::BigEndian) => Ok(u64::from_be_bytes(*b)),
            (None, _) => Err(need),
        }
    }

    fn u32_at(&self, buf: &[u8], at: u64) -> Result<u32, u64> {
        let need = at.saturating_add(4);
        let bytes = usize::try_from(at).ok().and_then(|a| buf.get(a..)).and_then(|b| b.first_chunk::<4>());
        match (bytes, self.order) {
            (Some(b), ByteOrder::LittleEndian) => Ok(u32::from_le_bytes(*b)),
            (Some(b), ByteOrder::BigEndian) => Ok(u32::from_be_bytes(*b)),
            (None, _) => Err(need),
        }
    }

    /// `n` bytes from `at` on, if the file and the caps hold them.
    fn span(&self, at: u64, n: u64) -> Option<u64> {
        let end = at.checked_add(n)?;
        (end <= self.file_len && end <= self.limits.bytes).then_some(end)
    }

    /// The end of a string whose length field is at `at`.
    fn string_end(&self, buf: &[u8], at: u64) -> Result<Option<u64>, u64> {
        let len = self.u64_at(buf, at)?;
        Ok((len <= self.limits.string_bytes).then(|| self.span(at.saturating_add(8), len)).flatten())
    }

    /// Where the pair at `at` ends when it holds a scalar value and its key
    /// and type are at hand, within the file and the caps (as the general
    /// step finds them); `None` for any other pair, which that step takes.
    #[inline]
    fn scalar_pair_end(&self, buf: &[u8], at: u64) -> Option<u64> {
        let key_end = self.string_end(buf, at).ok()??;
        let size = ValueType::from_id(self.u32_at(buf, key_end).ok()?)?.fixed_size()?;
        self.span(key_end.saturating_add(4), u64_of(size))
    }

    /// The item after pair `index`, or after the last pair.
    fn after_kv(&self, index: u64, at: u64) -> Item {
        match index.checked_add(1) {
            Some(next) if next < self.kv_count => Item::Kv { index: next, at },
            _ => self.tensors_from(at),
        }
    }

    /// [`Extent::after_kv`] for an array: a new run of small pairs.
    fn after_array(&mut self, index: u64, at: u64) -> Item {
        self.run = (index.saturating_add(1), at);
        self.after_kv(index, at)
    }

    fn tensors_from(&self, at: u64) -> Item {
        if self.tensor_count == 0 { Item::End(at) } else { Item::Tensor { index: 0, at, start: at } }
    }

    /// One item; `None` where the walk gives up.
    fn step(&mut self, buf: &[u8]) -> Option<Step> {
        let need = |n| Some(Step::Need(n));
        let next = match self.item {
            Item::Counts => {
                let (tensors, kvs) = match (self.u64_at(buf, 8), self.u64_at(buf, 16)) {
                    (Ok(t), Ok(k)) => (t, k),
                    (Err(n), _) | (_, Err(n)) => return need(n),
                };
                // The parser's checks on the counts: past them, it stops.
                let min = kvs
                    .checked_mul(limits::MIN_KV_SIZE)?
                    .checked_add(tensors.checked_mul(limits::MIN_TENSOR_INFO_SIZE)?)?;
                self.span(limits::HEADER_SIZE, min)?;
                if kvs > self.limits.kv_count || tensors > self.limits.tensor_count {
                    return None;
                }
                (self.kv_count, self.tensor_count) = (kvs, tensors);
                if kvs == 0 {
                    self.tensors_from(limits::HEADER_SIZE)
                } else {
                    Item::Kv { index: 0, at: limits::HEADER_SIZE }
                }
            }
            Item::Kv { mut index, mut at } => {
                // Runs of pairs of a scalar value, in a lean loop (a file of
                // a million keys spent a sixth of its time stepping through
                // them one item at a time); the first other pair goes on below.
                while let Some(end) = self.scalar_pair_end(buf, at) {
                    match index.checked_add(1) {
                        Some(next) if next < self.kv_count => (index, at) = (next, end),
                        _ => return Some(Step::Next(self.tensors_from(end))),
                    }
                }
                // Where the walk stands (a projection reads it if this pair
                // asks for more bytes).
                self.item = Item::Kv { index, at };
                let (from, left) = (self.run, self.kv_count.saturating_sub(index));
                let need = |n| Some(Step::Need(extrapolate(at, from.1, index.saturating_sub(from.0), left, n)));
                let key_end = match self.string_end(buf, at) {
                    Ok(e) => e?,
                    Err(n) => return need(n),
                };
                let ty = match self.u32_at(buf, key_end) {
                    Ok(t) => ValueType::from_id(t)?,
                    Err(n) => return need(n),
                };
                let value = key_end.saturating_add(4);
                match ty {
                    ValueType::String => match self.string_end(buf, value) {
                        Ok(end) => self.after_kv(index, end?),
                        Err(n) => return need(n),
                    },
                    ValueType::Array => {
                        let (elem, len) = match (self.u32_at(buf, value), self.u64_at(buf, value.saturating_add(4))) {
                            (Ok(e), Ok(l)) => (ValueType::from_id(e)?, l),
                            (Err(n), _) | (_, Err(n)) => return need(n),
                        };
                        let start = value.saturating_add(12);
                        let min = len.checked_mul(u64_of(elem.min_size()))?;
                        if len > self.limits.array_len {
                            return None;
                        }
                        let min_end = self.span(start, min)?;
                        let key = usize::try_from(at.saturating_add(8))
                            .ok()
                            .zip(usize::try_from(key_end).ok())
                            .and_then(|(a, b)| buf.get(a..b));
                        if elem == ValueType::String && key == Some(VOCAB_KEY.as_bytes()) {
                            self.vocab = Some((index, len));
                        } else if self.vocab.is_some_and(|(_, n)| n == len) && elem != ValueType::String {
                            self.vocab_arrays = self.vocab_arrays.saturating_add(1);
                        }
                        match elem {
                            ValueType::String => {
                                self.mid_at = None;
                                Item::Strings { index, at: start, left: len, start, len, or: 0 }
                            }
                            ValueType::Array => return None,
                            // Stepped over: its bytes are not needed here.
                            _ => {
                                if self.lean && elem != ValueType::Bool && min >= limits::LEAN_UNREAD_MIN_BYTES {
                                    self.unread.push((start, min_end));
                                }
                                self.after_array(index, min_end)
                            }
                        }
                    }
                    fixed => self.after_kv(index, self.span(value, u64_of(fixed.min_size()))?),
                }
            }
            // A lean walk leaves a large string array to its reader.
            Item::Strings { start, len, .. } if self.lean && len >= MIN_SPAN_STRINGS => {
                return need(start.saturating_add(8).max(u64_of(buf.len()).saturating_add(1)));
            }
            Item::Strings { index, mut at, mut left, start, len, mut or } => {
                // The hot loop: only the length fields are read, from a
                // slice that follows `at` (empty once past the buffer).
                let limit = self.file_len.min(self.limits.bytes);
                // First the strings whose bytes are at hand and inside the
                // limit, in a lean loop; the loop below takes over where
                // one is not (it asks for more, or gives up), as before.
                let mut window = usize::try_from(limit)
                    .ok()
                    .and_then(|l| usize::try_from(at).ok().and_then(|a| buf.get(a..l.min(buf.len()))))
                    .unwrap_or_default();
                // In two legs, the first to where a vocabulary is split, so
                // that offset is known ([`StringSpan::mid`]).
                let mid = vocabulary_split(len);
                loop {
                    let (done, before) = (len.saturating_sub(left), left);
                    let leg = match mid {
                        Some(m) if done < m => m.saturating_sub(done),
                        _ => left,
                    };
                    let (walked, strings, lengths) = match self.order {
                        ByteOrder::LittleEndian => lean_strings::<false>(window, leg, self.limits.string_bytes),
                        ByteOrder::BigEndian => lean_strings::<true>(window, leg, self.limits.string_bytes),
                    };
                    at = at.saturating_add(u64_of(walked));
                    left = left.saturating_sub(strings);
                    or |= lengths;
                    window = window.get(walked..).unwrap_or_default();
                    if mid == Some(len.saturating_sub(left)) {
                        self.mid_at.get_or_insert(at);
                    }
                    if strings < leg || leg == before {
                        break;
                    }
                }
                let mut rest = usize::try_from(at).ok().and_then(|a| buf.get(a..)).unwrap_or_default();
                while left > 0 {
                    let Some((len_bytes, tail)) = rest.split_first_chunk::<8>() else {
                        self.item = Item::Strings { index, at, left, start, len, or };
                        return need(extrapolate(at, start, len.saturating_sub(left), left, at.saturating_add(8)));
                    };
                    let n = match self.order {
                        ByteOrder::LittleEndian => u64::from_le_bytes(*len_bytes),
                        ByteOrder::BigEndian => u64::from_be_bytes(*len_bytes),
                    };
                    let end = at.checked_add(8)?.checked_add(n)?;
                    if n > self.limits.string_bytes || end > limit {
                        return None;
                    }
                    at = end;
                    or |= n;
                    left = left.saturating_sub(1);
                    rest = usize::try_from(n).ok().and_then(|n| tail.get(n..)).unwrap_or_default();
                    if mid == Some(len.saturating_sub(left)) {
                        self.mid_at.get_or_insert(at);
                    }
                }
                if len >= MIN_SPAN_STRINGS {
                    let mid = mid.zip(self.mid_at.take());
                    self.spans.push(StringSpan { start, end: at, len, lengths_or: or, checked: false, mid });
                }
                self.after_array(index, at)
            }
            Item::Tensor { index, at, start } => {
                let left = self.tensor_count.saturating_sub(index);
                let name_end = match self.string_end(buf, at) {
                    Ok(e) => e?,
                    Err(n) => return need(extrapolate(at, start, index, left, n)),
                };
                let n_dims = match self.u32_at(buf, name_end) {
                    Ok(n) => u64::from(n),
                    Err(n) => return need(extrapolate(at, start, index, left, n)),
                };
                // n_dims, the dims, the type and the offset.
                let end = self.span(name_end, n_dims.checked_mul(8)?.checked_add(16)?)?;
                match index.checked_add(1) {
                    Some(next) if next < self.tensor_count => Item::Tensor { index: next, at: end, start },
                    _ => Item::End(end),
                }
            }
            Item::End(_) | Item::Unknown => return None,
        };
        Some(Step::Next(next))
    }
}

/// Walks up to `left` strings from the start of `window` while each one's
/// length is at most `max_len` and its bytes lie in `window`: the bytes
/// walked, the strings walked and the OR of their lengths. (Also how the
/// tokenizer's second thread steps over the first part of a vocabulary.)
pub(crate) fn lean_strings<const BIG: bool>(window: &[u8], left: u64, max_len: u64) -> (usize, u64, u64) {
    let (mut rest, mut done, mut or) = (window, 0u64, 0u64);
    while done < left {
        let Some((len_bytes, tail)) = rest.split_first_chunk::<8>() else { break };
        let n = if BIG { u64::from_be_bytes(*len_bytes) } else { u64::from_le_bytes(*len_bytes) };
        if n > max_len {
            break;
        }
        let Some(next) = usize::try_from(n).ok().and_then(|n| tail.get(n..)) else { break };
        or |= n;
        done = done.wrapping_add(1);
        rest = next;
    }
    (window.len().saturating_sub(rest.len()), done, or)
}

/// Where an array of `len` strings, at least
/// [`limits::VOCAB_SPLIT_MIN_TOKENS`], is split in two ([`StringSpan::mid`]):
/// at three fifths, the first part the larger (the tokenizer walks it on its
/// own thread at once; the second part's thread starts later).
pub(crate) fn vocabulary_split(len: u64) -> Option<u64> {
    (len >= limits::VOCAB_SPLIT_MIN_TOKENS)
        .then(|| (len / 5).saturating_mul(3) & !(limits::VOCAB_SPLIT_ALIGN.saturating_sub(1)))
}

/// The key of the vocabulary, whose length other arrays share.
const VOCAB_KEY: &str = "tokenizer.ggml.tokens";

/// Fixed-size arrays a vocabulary usually brings (scores, token types).
const VOCAB_ARRAYS: u64 = 2;

/// A projection adds a `1/PROJECTION_MARGIN_DIVISOR` of what it projects
/// is still to come (remote reads: a short guess costs a round trip, a long
/// one bytes; a quarter keeps a remote read within 1.25x of the metadata
/// when the guess is right, and gemma-3's vocabulary in two reads).
const PROJECTION_MARGIN_DIVISOR: u64 = 4;

/// Bytes a small key/value pair is projected to take before any was walked
/// ([`Extent::projection`]).
const PROJECTED_PAIR_BYTES: u64 = 48;

/// The least a pair takes (an empty key of a one-byte value).
const MIN_KV_BYTES: u64 = limits::MIN_KV_SIZE;

/// Bytes a tensor info is projected to take before any was walked: a name
/// of about 30 bytes, 2 to 4 dimensions, the type and the offset.
const PROJECTED_TENSOR_INFO_BYTES: u64 = 80;

/// Where `left` more items of a run will end, extrapolated from the `done`
/// walked from `start` to `at`, plus a sixteenth; at least `need`.
fn extrapolate(at: u64, start: u64, done: u64, left: u64, need: u64) -> u64 {
    if done == 0 {
        return need;
    }
    let per = at.saturating_sub(start).checked_div(done).unwrap_or(0);
    let rest = left.saturating_mul(per.saturating_add(per.checked_div(16).unwrap_or(0)));
    at.saturating_add(rest).max(need)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::GgmlType;
    use crate::types::ValueType as T;
    use crate::write::{GgufModel, OwnedTensor, OwnedValue as V};

    fn model() -> Vec<u8> {
        let mut m = GgufModel::new();
        m.kv("general.architecture", V::str("plain"));
        let tokens = (1..=5000usize).map(|i| V::str(&"t".repeat(i.rem_euclid(13).saturating_add(1)))).collect();
        m.kv("tokenizer.ggml.tokens", V::Array(ValueType::String, tokens));
        m.kv("x.scores", V::Array(ValueType::F32, vec![V::F32(0.5); 5000]));
        m.kv("x.name", V::str("after the arrays"));
        for i in 0..40 {
            m.tensor(OwnedTensor::zeroed(&format!("w{i}"), &[4, 2], GgmlType::F32).unwrap());
        }
        m.to_bytes()
    }

    /// Walks prefixes of `bytes` from `first` bytes on as [`Reach::Need`]
    /// asks; the reach and the number of steps.
    fn walk(bytes: &[u8], first: usize, limits: &limits::MetadataLimits) -> (Reach, usize) {
        let mut e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, limits);
        let mut have = first;
        for steps in 0..1000 {
            match e.advance(&bytes[..have]) {
                Reach::Need(n) => {
                    let n = usize::try_from(n).unwrap();
                    assert!(n > have, "asks for more than it has");
                    have = n.min(bytes.len());
                }
                done => return (done, steps),
            }
        }
        panic!("never ends");
    }

    #[test]
    fn the_walk_ends_where_the_parser_does_from_any_first_read() {
        let bytes = model();
        let end = crate::parse::parse_bytes(&bytes).unwrap().file.infos_end;
        for first in [0, 24, 100, 1000, 30_000, 70_000, bytes.len()] {
            let (reach, steps) = walk(&bytes, first, &limits::MetadataLimits::DEFAULT);
            assert_eq!(reach, Reach::End(end), "first read {first}");
            assert!(steps <= 100, "{steps} steps from {first}");
        }
    }

    #[test]
    fn the_lean_loop_stops_where_the_careful_one_must_decide() {
        let strings = |big: bool, texts: &[&str]| -> Vec<u8> {
            let mut b = Vec::new();
            for t in texts {
                let n = t.len() as u64;
                b.extend_from_slice(&if big { n.to_be_bytes() } else { n.to_le_bytes() });
                b.extend_from_slice(t.as_bytes());
            }
            b
        };
        for big in [false, true] {
            let lean = if big { lean_strings::<true> } else { lean_strings::<false> };
            let b = strings(big, &["ab", "cdef", "", "ghijklmnop", "q"]);
            // All of them; then only as many as are left.
            assert_eq!(lean(&b, 5, 100), (b.len(), 5, 2 | 4 | 10 | 1));
            assert_eq!(lean(&b, 2, 100), (22, 2, 2 | 4));
            // A string over the length cap stops it before that string.
            assert_eq!(lean(&b, 5, 9), (30, 3, 2 | 4));
            // A string whose bytes are not all in the window, or a length
            // field cut short, stops it before that string.
            assert_eq!(lean(&b[..b.len() - 1], 5, 100), (b.len() - 9, 4, 2 | 4 | 10));
            assert_eq!(lean(&b[..20], 5, 100), (10, 1, 2));
            assert_eq!(lean(&[], 5, 100), (0, 0, 0));
        }
    }

    #[test]
    fn a_lean_walk_leaves_large_string_arrays_to_its_reader_and_notes_large_fixed_arrays() {
        let mut m = GgufModel::new();
        m.kv("general.architecture", V::str("x"));
        m.kv("tokenizer.ggml.tokens", V::Array(T::String, (0..300).map(|i| V::str(&format!("t{i}"))).collect()));
        m.kv("x.few", V::Array(T::String, (0..255).map(|_| V::str("a")).collect()));
        m.kv("x.f32", V::Array(T::F32, vec![V::F32(1.0); 16_384]));
        m.kv("x.small", V::Array(T::F32, vec![V::F32(1.0); 16_383]));
        m.kv("x.bools", V::Array(T::Bool, vec![V::Bool(1); 70_000]));
        let bytes = m.to_bytes();
        let parsed = crate::parse::parse_bytes(&bytes).unwrap();
        let tokens = *parsed.file.get("tokenizer.ggml.tokens").unwrap().value.as_array().unwrap();
        let f32s = *parsed.file.get("x.f32").unwrap().value.as_array().unwrap();
        let mut e = Extent::lean(ByteOrder::LittleEndian, bytes.len() as u64, &limits::MetadataLimits::DEFAULT);
        // It stops at the vocabulary, whose bytes are all at hand.
        assert!(matches!(e.advance(&bytes), Reach::Need(_)));
        assert_eq!(e.pending_strings(), Some((tokens.data_offset(), 300)));
        let end = tokens.data_offset() + tokens.data.len() as u64;
        e.streamed(end, 7);
        assert_eq!(e.pending_strings(), None);
        assert_eq!(e.advance(&bytes), Reach::End(parsed.file.infos_end));
        // Only the vocabulary is a checked span (255 strings are walked);
        // only the f32 array of 64 KiB is not needed (not the smaller one,
        // not the bools).
        assert_eq!(
            e.spans(),
            [StringSpan { start: tokens.data_offset(), end, len: 300, lengths_or: 7, checked: true, mid: None }]
        );
        assert_eq!(e.unread(), [(f32s.data_offset(), f32s.data_offset() + 65_536)]);
        // A walk that is not lean walks the vocabulary itself.
        let mut plain = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &limits::MetadataLimits::DEFAULT);
        assert_eq!(plain.advance(&bytes), Reach::End(parsed.file.infos_end));
        assert_eq!((plain.pending_strings(), plain.unread()), (None, &[][..]));
        assert!(plain.spans().iter().all(|s| !s.checked));
    }

    #[test]
    fn a_vocabulary_is_split_where_its_token_at_three_fifths_starts_however_the_bytes_come() {
        let mut m = GgufModel::new();
        m.kv("general.architecture", V::str("x"));
        let tokens = (0..70_001).map(|i| V::str(&"t".repeat(1 + i % 13))).collect();
        m.kv("tokenizer.ggml.tokens", V::Array(T::String, tokens));
        m.kv("x.few", V::Array(T::String, (0..300).map(|_| V::str("a")).collect()));
        let bytes = m.to_bytes();
        let parsed = crate::parse::parse_bytes(&bytes).unwrap();
        let tokens = *parsed.file.get("tokenizer.ggml.tokens").unwrap().value.as_array().unwrap();
        let split = (70_001 / 5 * 3) & !63;
        assert_eq!(split, 41_984);
        let want = Some((split, tokens.strings().nth(split as usize).unwrap().1.offset));
        // All the bytes at once, and in pieces that end anywhere.
        for piece in [bytes.len(), 100_000, 4_099, 777] {
            let mut e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &limits::MetadataLimits::DEFAULT);
            let mut have = 0;
            loop {
                have = (have + piece).min(bytes.len());
                if let Reach::End(_) = e.advance(&bytes[..have]) {
                    break;
                }
                assert!(have < bytes.len());
            }
            let spans = e.spans();
            assert_eq!(spans.len(), 2, "piece {piece}");
            assert_eq!(spans[0].mid, want, "piece {piece}");
            // Below 65,536 strings: no split.
            assert_eq!(spans[1].mid, None);
        }
    }

    #[test]
    fn large_string_arrays_walked_to_their_end_are_spans_the_parser_steps_over_alike() {
        let bytes = model();
        let mut e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &limits::MetadataLimits::DEFAULT);
        let mut have = 1000;
        while let Reach::Need(n) = e.advance(&bytes[..have]) {
            have = usize::try_from(n).unwrap().min(bytes.len());
        }
        let parsed = crate::parse::parse_bytes(&bytes).unwrap();
        let tokens = parsed.file.get("tokenizer.ggml.tokens").unwrap().value.as_array().copied().unwrap();
        let or = tokens.strings().fold(0, |or, (_, s)| or | s.bytes.len() as u64);
        let end = tokens.data_offset() + tokens.data.len() as u64;
        // The vocabulary only: the other arrays are fixed-size or short.
        assert_eq!(
            e.spans(),
            [StringSpan { start: tokens.data_offset(), end, len: 5000, lengths_or: or, checked: false, mid: None }]
        );
        let spanned = |buf: &[u8], spans: &[StringSpan]| {
            format!(
                "{:?}",
                crate::parse::parse_gguf_spanned(
                    buf,
                    bytes.len() as u64,
                    3,
                    ByteOrder::LittleEndian,
                    &limits::MetadataLimits::DEFAULT,
                    spans
                )
            )
        };
        let plain = |buf: &[u8]| spanned(buf, &[]);
        assert_eq!(spanned(&bytes, e.spans()), plain(&bytes));
        // A prefix that ends inside the array: walked, asking for more, as
        // without the span.
        let cut = usize::try_from(end).unwrap() - 3;
        assert_eq!(spanned(&bytes[..cut], e.spans()), plain(&bytes[..cut]));
        assert!(plain(&bytes[..cut]).starts_with("NeedMoreData"));
        // A span of another length, or elsewhere, is not used: a span at
        // the right place but of the wrong length would change the walk.
        let wrong = [StringSpan { len: 4999, ..e.spans()[0] }, StringSpan { start: 1, ..e.spans()[0] }];
        assert_eq!(spanned(&bytes, &wrong), plain(&bytes));
        // Under caps the walk gives up at: no span.
        let tight = limits::MetadataLimits { string_bytes: 12, ..limits::MetadataLimits::DEFAULT };
        let mut e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &tight);
        assert_eq!(e.advance(&bytes), Reach::Unknown);
        assert!(e.spans().is_empty());
    }

    #[test]
    fn a_projection_reaches_past_the_vocabulary_and_its_arrays_but_not_far() {
        let bytes = model();
        let end = crate::parse::parse_bytes(&bytes).unwrap().file.infos_end;
        // From inside the token strings: the rest of them, the scores
        // (not walked yet), the small pairs and the tensor infos.
        let mut e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &limits::MetadataLimits::DEFAULT);
        let Reach::Need(n) = e.advance(&bytes[..20_000]) else { panic!("more is needed") };
        let p = e.projection(n);
        assert!(p >= end && p <= end + end / 2, "projected {p} for an end at {end}");
        // Never past the cap or the file, never short of what is needed.
        let tight = limits::MetadataLimits { bytes: 60_000, ..limits::MetadataLimits::DEFAULT };
        let mut e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &tight);
        assert!(matches!(e.advance(&bytes[..20_000]), Reach::Need(_)));
        assert_eq!(e.projection(20_008), 60_000);
        assert_eq!(e.projection(70_000), 70_000);
        // Before the counts are known: only what is needed.
        let e = Extent::new(ByteOrder::LittleEndian, bytes.len() as u64, &limits::MetadataLimits::DEFAULT);
        assert_eq!(e.projection(24), 24);
    }

    #[test]
    fn it_leaves_to_the_parser_what_the_parser_stops_at() {
        let bytes = model();
        let mut tight = limits::MetadataLimits::DEFAULT;
        tight.array_len = 4999;
        assert_eq!(walk(&bytes, 1000, &tight).0, Reach::Unknown);
        tight = limits::MetadataLimits { string_bytes: 12, ..limits::MetadataLimits::DEFAULT };
        assert_eq!(walk(&bytes, 1000, &tight).0, Reach::Unknown);
        tight = limits::MetadataLimits { bytes: 2000, ..limits::MetadataLimits::DEFAULT };
        assert_eq!(walk(&bytes, 1000, &tight).0, Reach::Unknown);
        let mut m = GgufModel::new();
        let inner = V::Array(ValueType::U8, vec![V::U8(1)]);
        m.kv("x.nested", V::Array(ValueType::Array, vec![inner]));
        assert_eq!(walk(&m.to_bytes(), 24, &limits::MetadataLimits::DEFAULT).0, Reach::Unknown);
        // A count the file cannot hold.
        let mut cut = bytes.clone();
        cut[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(walk(&cut, 24, &limits::MetadataLimits::DEFAULT).0, Reach::Unknown);
    }
}
