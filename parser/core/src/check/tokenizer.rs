//! Rules on the vocabulary that llama.cpp's tokenizer assumes: a tokenizer
//! model and pre-tokenizer it knows, merges for BPE, token types from its
//! enum, byte tokens spelled `<0xHH>`, distinct token texts.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{Array, ByteOrder, GgufFile, KeyValue, Str};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::scratch::{PagedVec, bitmap_slot};
use crate::types::ValueType;

use super::kv::kv_path;
use super::llama_arch_table::{BPE_PRE_TOKENIZERS, MERGES_EXEMPT_PRE, MERGES_REQUIRED, TOKENIZER_MODELS};

/// Runs the `tokenizer-*` rules. `needs_vocab`: the file is a model of an
/// architecture llama.cpp knows (with tensors), whose loader reads a
/// vocabulary.
pub(crate) fn check(file: &GgufFile<'_>, needs_vocab: bool, sink: &mut Sink<'_>) {
    check_model(file, needs_vocab, sink);
    let types = file.get("tokenizer.ggml.token_type").and_then(|kv| Some((kv, *kv.value.as_array()?)));
    let types = types.filter(|(_, a)| a.elem_type == ValueType::I32);
    if let Some((kv, a)) = types {
        check_token_types(&kv, &a, sink);
    }
    if let Some(kv) = file.get("tokenizer.ggml.tokens")
        && let Some(tokens) = kv.value.as_array()
    {
        // Where the extent's walk found the token to split the walk at
        // (three fifths in): the position of its length field in the
        // array's bytes.
        let known_split = file.spans.0.iter().find(|s| s.start == tokens.data_offset() && s.len == tokens.len);
        let known_split = known_split
            .and_then(|s| s.mid)
            .and_then(|(i, offset)| Some((i, usize::try_from(offset.checked_sub(tokens.data_offset())?).ok()?)));
        check_tokens(&kv, tokens, types.map(|(_, a)| a), known_split, sink);
        let model = file.get("tokenizer.ggml.model").and_then(|m| m.value.as_string());
        if model.is_some_and(|m| m.bytes == b"llama") {
            check_byte_fallback(&kv, tokens, sink);
        }
    }
}

/// Whether text can hold byte `b` where a SentencePiece tokenizer in
/// llama.cpp may spell it alone: any byte of UTF-8 text but the space
/// (written as U+2581 before tokenizing) and the bytes UTF-8 never uses
/// (0xC0, 0xC1, 0xF5..=0xFF).
fn spm_may_spell(b: u8) -> bool {
    !matches!(b, b' ' | 0xC0 | 0xC1 | 0xF5..=0xFF)
}

/// A character whose UTF-8 form holds byte `b` (one of [`spm_may_spell`]).
fn char_with_byte(b: u8) -> Option<char> {
    let code = match b {
        0x00..=0x7F => u32::from(b),
        // U+0080..U+00BF: C2 then `b` as the continuation byte.
        0x80..=0xBF => u32::from(b),
        0xC2..=0xDF => u32::from(b & 0x1F) << 6,
        0xE0 => 0x0800,
        0xE1..=0xEF => u32::from(b & 0x0F) << 12,
        0xF0 => 0x1_0000,
        0xF1..=0xF4 => u32::from(b & 0x07) << 18,
        _ => return None,
    };
    char::from_u32(code)
}

/// How a character is shown in a message: printable as itself, else by
/// its code point.
fn shown_char(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("`{c}` (U+{:04X})", u32::from(c))
    }
}

/// `tokenizer-byte-fallback`: llama.cpp's SentencePiece tokenizer writes a
/// piece with no token as its bytes, each as `<0xHH>` or else the token
/// whose text is that byte (`std::map::at`, which throws through
/// `llama_tokenize`). The walk stops as soon as every byte is covered: a
/// real vocabulary has its 256 byte tokens near the start.
fn check_byte_fallback(kv: &KeyValue<'_>, tokens: &Array<'_>, sink: &mut Sink<'_>) {
    if tokens.elem_type != ValueType::String {
        return;
    }
    let mut covered = [false; 256];
    let mut missing = (0u8..=255).filter(|b| spm_may_spell(*b)).count();
    for (_, s) in tokens.strings() {
        let byte = match s.bytes {
            [b] => Some(*b),
            // llama.cpp looks up upper-case hex digits only.
            [b'<', b'0', b'x', h, l, b'>'] => upper_hex(*h).zip(upper_hex(*l)).map(|(h, l)| (h << 4) | l),
            _ => None,
        };
        if let Some(b) = byte
            && spm_may_spell(b)
            && let Some(seen) = covered.get_mut(usize::from(b))
            && !*seen
        {
            *seen = true;
            missing = missing.saturating_sub(1);
            if missing == 0 {
                return;
            }
        }
    }
    let absent: Vec<u8> =
        (0u8..=255).filter(|b| spm_may_spell(*b) && !covered.get(usize::from(*b)).copied().unwrap_or(true)).collect();
    let Some(first) = absent.iter().copied().find(|b| b.is_ascii_graphic()).or_else(|| absent.first().copied()) else {
        return;
    };
    let example = char_with_byte(first).map(shown_char).unwrap_or_default();
    let n = absent.len();
    let listed = byte_ranges(&absent);
    sink.emit(RuleId::TokenizerByteFallback, kv.value_offset(), || kv_path(kv), || {
        format!(
            "this SentencePiece vocabulary has no byte token (`<0xHH>`, or the byte as a one-byte token) for {n} byte{} of UTF-8 text ({listed}): llama.cpp spells a character it has no token for byte by byte and, on such a byte, throws an exception that aborts the process: a prompt holding {example} crashes it",
            if n == 1 { "" } else { "s" }
        )
    });
}

/// The value of an upper-case hex digit.
fn upper_hex(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => d.checked_sub(b'0'),
        b'A'..=b'F' => d.checked_sub(b'A' - 10),
        _ => None,
    }
}

/// Sorted bytes as hex ranges: `0x00-0x1F, 0x21, 0x80-0xBF`.
fn byte_ranges(bytes: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u8, u8)> = None;
    for &b in bytes {
        run = match run {
            Some((lo, hi)) if hi.checked_add(1) == Some(b) => Some((lo, b)),
            Some(r) => {
                out.push(range_text(r));
                Some((b, b))
            }
            None => Some((b, b)),
        };
    }
    out.extend(run.map(range_text));
    out.join(", ")
}

fn range_text((lo, hi): (u8, u8)) -> String {
    if lo == hi { format!("0x{lo:02X}") } else { format!("0x{lo:02X}-0x{hi:02X}") }
}

fn check_model(file: &GgufFile<'_>, needs_vocab: bool, sink: &mut Sink<'_>) {
    let model_kv = file.get("tokenizer.ggml.model");
    let model = model_kv.and_then(|kv| kv.value.as_string());
    let Some(model_kv) = model_kv else {
        if needs_vocab {
            sink.emit(
                RuleId::TokenizerVocabMissing,
                super::keys::KV_SECTION,
                || "kv".into(),
                || {
                    "tokenizer.ggml.model is missing; llama.cpp reads a vocabulary for every model and refuses the file"
                        .into()
                },
            );
        }
        return;
    };
    // A value that is not a string is standard-key-type's.
    let Some(model) = model else { return };
    if needs_vocab && !matches!(model.bytes, b"none" | b"no_vocab") && file.get("tokenizer.ggml.tokens").is_none() {
        sink.emit(RuleId::TokenizerVocabMissing, model_kv.value_offset(), || kv_path(&model_kv), || {
            format!("tokenizer.ggml.model is `{}` but tokenizer.ggml.tokens is missing; llama.cpp refuses the file (cannot find tokenizer vocab)", model.display())
        });
    }
    check_name_quirk(file, sink);
    if !TOKENIZER_MODELS.iter().any(|m| m.as_bytes() == model.bytes) {
        sink.emit(
            RuleId::TokenizerModelUnknown,
            model_kv.value_offset(),
            || kv_path(&model_kv),
            || {
                format!(
                    "tokenizer.ggml.model `{}` is not one llama.cpp knows ({}); it refuses the file",
                    model.display(),
                    TOKENIZER_MODELS.join(", ")
                )
            },
        );
        return;
    }
    let is_bpe = MERGES_REQUIRED.iter().any(|m| m.as_bytes() == model.bytes);
    if !is_bpe {
        return;
    }
    let pre_kv = file.get("tokenizer.ggml.pre");
    let pre = pre_kv.and_then(|kv| kv.value.as_string());
    if pre.is_none_or(|p| p.bytes.is_empty()) {
        let at = pre_kv.unwrap_or(model_kv);
        sink.emit(RuleId::TokenizerPreMissing, at.value_offset(), || kv_path(&at), || {
            format!(
                "the BPE vocabulary (`{}`) names no pre-tokenizer (tokenizer.ggml.pre {}): llama.cpp uses `default` (\"GENERATION QUALITY WILL BE DEGRADED\") and splits text as the model was not trained to; set the model's own with `gguf-validate edit FILE -o OUT --pre-tokenizer NAME`",
                model.display(),
                if pre_kv.is_some() { "is empty" } else { "is absent" }
            )
        });
    }
    if let (Some(kv), Some(pre)) = (pre_kv, pre)
        && !pre.bytes.is_empty()
        && !BPE_PRE_TOKENIZERS.iter().any(|p| p.as_bytes() == pre.bytes)
    {
        sink.emit(RuleId::TokenizerPreUnknown, kv.value_offset(), || kv_path(&kv), || {
            format!("tokenizer.ggml.pre `{}` is not a pre-tokenizer llama.cpp knows for BPE vocabularies; it refuses the file", pre.display())
        });
    }
    let exempt = pre.is_some_and(|p| MERGES_EXEMPT_PRE.iter().any(|e| e.as_bytes() == p.bytes));
    if file.get("tokenizer.ggml.merges").is_none() && !exempt {
        sink.emit(RuleId::TokenizerMergesMissing, model_kv.value_offset(), || kv_path(&model_kv), || {
            format!("tokenizer.ggml.model `{}` is a BPE vocabulary but tokenizer.ggml.merges is missing; llama.cpp refuses the file", model.display())
        });
    }
}

/// Token texts must be distinct: llama.cpp maps text to id and aborts
/// (GGML_ASSERT) when the map has fewer entries than the vocabulary. An
/// empty text counts as `[EMPTY_i]`, as llama.cpp renames it.
///
/// One walk over the token array hashes each text (per-process seeds) to
/// 32 bits, kept in token order (4 bytes a token); then each hash sets one
/// bit of a bitmap of 32 to 64 bits per token, and a token whose bit is
/// already set makes that bit *hot* (a duplicate, or a collision in the
/// bitmap: about 1.5% of a real vocabulary). No hot bit, no duplicate.
/// Otherwise the tokens whose hash is a hot token's are taken from the
/// hashes ([`Duplicates::found`]), and those with equal hashes
/// (counted in a map) are compared byte for byte, each text found from the
/// offset of every [`CHECKPOINT`]th token kept by the walk. The hashes and
/// the bitmap (at most 2^[`MAX_SEEN_BITS`] bits, 1 MiB) share one piece of
/// zeroed memory, a huge page for gemma-3's 262,144 tokens; nothing is
/// sorted but the few candidates. (Bitmaps of 8 and 16 bits a token left
/// four and two times the candidates, and were slower; sorting the
/// candidates instead of counting them in a map took more instructions
/// than the map's page faults cost.)
struct Duplicates {
    text: TextHash,
    /// 32 minus log2 of the bitmap's bits: a hash's bit is `h >> shift`.
    shift: u32,
    /// Room for the 32-bit hash of every token, in order (`hash_room`
    /// words, the first `count` of them walked), then the bitmap, in one
    /// piece of zeroed memory (huge pages for a large vocabulary).
    scratch: PagedVec<u32>,
    hash_room: usize,
    count: usize,
    /// Bits set more than once.
    hot: Vec<u32>,
    /// Where the string of every [`CHECKPOINT`]th token starts in the
    /// array's bytes.
    checkpoints: Vec<u64>,
}

/// The seeded hash of token texts (per-process seeds).
#[derive(Clone, Debug)]
struct TextHash {
    /// Seeds of the hash of texts of at most 16 bytes.
    seeds: [u64; 3],
    /// The hash of longer texts.
    hasher: foldhash::fast::RandomState,
}

/// What a walk over (part of) a vocabulary gives besides the hashes: the
/// tokens walked, the checkpoints and the odd `<0x` tokens (index,
/// position).
#[derive(Debug, Default)]
struct Walked {
    count: usize,
    checkpoints: Vec<u64>,
    odd: Vec<(u64, usize)>,
}

/// The position of the length field of string `n` of a string array's
/// bytes, stepping over the length fields before it (the extent's lean
/// walk, with no cap of its own: the parser checked the lengths); `None` if
/// the bytes end first.
fn skip_strings<const BIG: bool>(data: &[u8], n: u64) -> Option<usize> {
    let (walked, strings, _) = crate::parse::lean_strings::<BIG>(data, n, u64::MAX);
    (strings == n).then_some(walked)
}

/// log2 of the largest bitmap of [`Duplicates`].
const MAX_SEEN_BITS: u32 = 23;

/// The most bits of the filter of hot hashes of [`Duplicates::found`]
/// (32 KiB, a power of two).
const MAX_FILTER_BITS: usize = 1 << 18;

/// [`Duplicates`] keeps the offset of one token in this many (a power of two).
const CHECKPOINT: u64 = 64;

/// Texts of at most this many bytes are hashed as two words.
const SHORT: usize = 16;

/// For a text of `n` bytes (index), the masks that keep its bytes of the
/// two little-endian words read from where it starts.
// Evaluated by the compiler: an index or a shift out of range fails the build.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const MASKS: [[u64; 2]; SHORT + 1] = {
    /// The mask of the first `bytes` bytes of a little-endian word.
    const fn keep(bytes: usize) -> u64 {
        if bytes >= 8 { u64::MAX } else { (1u64 << (bytes * 8)) - 1 }
    }
    let mut masks = [[0u64; 2]; SHORT + 1];
    let mut n = 0;
    while n <= SHORT {
        masks[n] = [keep(n), keep(n.saturating_sub(8))];
        n += 1;
    }
    masks
};

/// The two little-endian words of 16 bytes.
#[inline]
fn words(bytes: &[u8; SHORT]) -> (u64, u64) {
    let (lo, hi) = bytes
        .split_first_chunk::<8>()
        .map_or(([0; 8], [0; 8]), |(lo, rest)| (*lo, rest.first_chunk::<8>().copied().unwrap_or([0; 8])));
    (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
}

/// The 32-bit hash of a short text of `n` bytes given as two words.
#[inline]
fn short_hash(seeds: &[u64; 3], lo: u64, hi: u64, n: usize) -> u32 {
    let [s0, s1, s2] = *seeds;
    let x = folded_multiply(lo ^ s0, hi ^ s1);
    let h = folded_multiply(x ^ u64::try_from(n).unwrap_or(0), s2);
    u32::try_from(h >> 32).unwrap_or(0)
}

/// The high and low halves of a full product, xored.
fn folded_multiply(x: u64, y: u64) -> u64 {
    let full = u128::from(x).wrapping_mul(u128::from(y));
    let low = u64::try_from(full & u128::from(u64::MAX)).unwrap_or(0);
    let high = u64::try_from(full >> 64).unwrap_or(0);
    low ^ high
}

impl TextHash {
    /// The 32-bit hash of a text. Up to 16 bytes: its bytes as two
    /// little-endian words padded with zeros, and its length, through two
    /// seeded folded multiplies; longer texts through foldhash.
    #[inline]
    fn hash(&self, bytes: &[u8]) -> u32 {
        if bytes.len() > SHORT {
            return self.long_hash(bytes);
        }
        let mut padded = [0u8; SHORT];
        if let Some(head) = padded.get_mut(..bytes.len()) {
            head.copy_from_slice(bytes);
        }
        let (lo, hi) = words(&padded);
        short_hash(&self.seeds, lo, hi, bytes.len())
    }

    /// The hash of a text longer than [`SHORT`] bytes.
    #[inline(never)]
    fn long_hash(&self, bytes: &[u8]) -> u32 {
        use std::hash::BuildHasher;
        u32::try_from(self.hasher.hash_one(bytes) >> 32).unwrap_or(0)
    }

    /// The walk of tokens `..mid` on this thread and of `mid..` on another,
    /// which starts at `from` (the position of token `mid`'s length field)
    /// or first steps over the length fields before token `mid`, each
    /// writing its part of `hashes`: the tokens walked, the checkpoints and
    /// the odd tokens. `None` where that thread cannot be had or the parts
    /// do not meet, and the caller walks the whole array itself.
    fn walk_split<const BIG: bool>(
        &self,
        data: &[u8],
        mid: u64,
        from: Option<usize>,
        hashes: &mut [u32],
    ) -> Option<Walked> {
        let (first_hashes, second_hashes) = hashes.split_at_mut_checked(usize::try_from(mid).ok()?)?;
        std::thread::scope(|scope| {
            let second = std::thread::Builder::new()
                .name("gguf-validate vocabulary".into())
                .spawn_scoped(scope, || {
                    let from = match from {
                        Some(from) => from,
                        None => skip_strings::<BIG>(data, mid)?,
                    };
                    let mut w = Walked::default();
                    (_, w.count) =
                        self.walk_part::<BIG>(data, from, mid, second_hashes, &mut w.checkpoints, &mut w.odd);
                    Some(w)
                })
                .ok()?;
            let mut w = Walked::default();
            let end;
            (end, w.count) = self.walk_part::<BIG>(data, 0, 0, first_hashes, &mut w.checkpoints, &mut w.odd);
            let second = second.join().ok().flatten()?;
            if w.count != first_hashes.len() || second.checkpoints.first().copied() != u64::try_from(end).ok() {
                return None;
            }
            w.count = w.count.saturating_add(second.count);
            w.checkpoints.extend_from_slice(&second.checkpoints);
            w.odd.extend_from_slice(&second.odd);
            Some(w)
        })
    }

    /// Walks as many tokens as `hashes` holds (fewer if the bytes end), the
    /// first of index `first` with its length field at `from` in `data`:
    /// their hashes into `hashes`, the checkpoints and odd tokens pushed.
    /// Gives the position after the last token and the tokens walked. The
    /// byte order is decided once; a short text is read as two masked
    /// words from the bytes that follow its length (the next length field
    /// is there), so texts of mixed lengths take no branch of their own.
    /// Kept out of line, so its few values stay in registers.
    #[inline(never)]
    fn walk_part<const BIG: bool>(
        &self,
        data: &[u8],
        from: usize,
        first: u64,
        hashes: &mut [u32],
        checkpoints: &mut Vec<u64>,
        odd: &mut Vec<(u64, usize)>,
    ) -> (usize, usize) {
        /// `<0x` in the low bytes of a little-endian word.
        const BYTE_TOKEN_START: u64 = 0x78_30_3c;
        let every = usize::try_from(CHECKPOINT).unwrap_or(usize::MAX);
        checkpoints.reserve(hashes.len().checked_div(every).unwrap_or(0).saturating_add(1));
        let mut rest = data.get(from..).unwrap_or_default();
        let mut i = first;
        let mut count = 0usize;
        for out in hashes.iter_mut() {
            let Some((len_bytes, tail)) = rest.split_first_chunk::<8>() else { break };
            let len = if BIG { u64::from_be_bytes(*len_bytes) } else { u64::from_le_bytes(*len_bytes) };
            let Some((text, next)) = usize::try_from(len).ok().and_then(|n| tail.split_at_checked(n)) else { break };
            let pos = data.len().saturating_sub(rest.len());
            if i & (CHECKPOINT - 1) == 0 {
                checkpoints.push(u64::try_from(pos).unwrap_or(u64::MAX));
            }
            let n = text.len();
            *out = match (tail.first_chunk::<SHORT>(), MASKS.get(n)) {
                (Some(window), Some([mask_lo, mask_hi])) if n > 0 => {
                    let (lo, hi) = words(window);
                    let lo = lo & mask_lo;
                    if lo & 0xff_ff_ff == BYTE_TOKEN_START && !is_byte_token(text) {
                        odd.push((i, pos));
                    }
                    short_hash(&self.seeds, lo, hi & mask_hi, n)
                }
                _ => {
                    if text.starts_with(b"<0x") && !is_byte_token(text) {
                        odd.push((i, pos));
                    }
                    if text.is_empty() { self.hash(&Duplicates::text(i, text)) } else { self.hash(text) }
                }
            };
            rest = next;
            i = i.wrapping_add(1);
            count = count.wrapping_add(1);
        }
        (data.len().saturating_sub(rest.len()), count)
    }
}

impl Duplicates {
    /// For a string array.
    fn new(tokens: &Array<'_>) -> Duplicates {
        use std::hash::BuildHasher;
        // Every token takes at least its 8-byte length in the array's
        // bytes, which are in memory: the bitmap is sized by bytes that
        // exist, and so are the hashes.
        let len = tokens.len.min(u64::try_from(tokens.data.len() / 8).unwrap_or(0));
        let bits = (len.saturating_mul(32).max(64).next_power_of_two().trailing_zeros()).min(MAX_SEEN_BITS);
        let words = 1usize << bits.saturating_sub(5);
        let hash_room = usize::try_from(len).unwrap_or(0);
        let hasher = foldhash::fast::RandomState::default();
        let seeds = [hasher.hash_one(1u64), hasher.hash_one(2u64), hasher.hash_one(3u64) | 1];
        Duplicates {
            text: TextHash { seeds, hasher },
            shift: 32u32.saturating_sub(bits),
            scratch: PagedVec::zeroed(hash_room.saturating_add(words)),
            hash_room,
            count: 0,
            hot: Vec::new(),
            checkpoints: Vec::new(),
        }
    }

    /// The hashes of the tokens walked.
    #[cfg(test)]
    fn hashes(&self) -> &[u32] {
        self.scratch.as_slice().get(..self.count).unwrap_or_default()
    }

    /// The text llama.cpp keys token `i` by (an empty one is renamed).
    fn text(i: u64, bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
        if bytes.is_empty() { format!("[EMPTY_{i}]").into_bytes().into() } else { bytes.into() }
    }

    /// Token `i`, text `bytes` at `pos` in the array's bytes (where its
    /// length field starts): its text hashed (an empty token as the name
    /// llama.cpp gives it), its bit set. One token at a time, plainly: what
    /// [`Duplicates::walk`] must equal.
    #[cfg(test)]
    fn push(&mut self, i: u64, pos: usize, bytes: &[u8]) {
        if i & (CHECKPOINT - 1) == 0 {
            self.checkpoints.push(u64::try_from(pos).unwrap_or(u64::MAX));
        }
        let h = if bytes.is_empty() { self.text.hash(&Self::text(i, bytes)) } else { self.text.hash(bytes) };
        let (word, mask) = bitmap_slot(self.shift, h);
        let (hashes, seen) = self.scratch.as_mut_slice().split_at_mut(self.hash_room);
        if let Some(slot) = hashes.get_mut(self.count) {
            *slot = h;
            self.count = self.count.saturating_add(1);
        }
        if let Some(w) = seen.get_mut(word) {
            if *w & mask != 0 {
                self.hot.push(h);
            }
            *w |= mask;
        }
    }

    /// One walk over the array's bytes (lengths already checked by the
    /// parser): every token's text hashed (an empty one as the name
    /// llama.cpp gives it), every [`CHECKPOINT`]th position kept, and the
    /// tokens that start with `<0x` but are not byte tokens noted in `odd`
    /// (index, position); then the hashes marked in the bitmap
    /// ([`Duplicates::mark`]). A vocabulary of at least `split_at` tokens
    /// is walked in two parts at once ([`Duplicates::walk_split`]), with
    /// the same result, at three fifths: where the extent's walk found that
    /// token (`known_split`: an index, a multiple of [`CHECKPOINT`], and the
    /// position of its length field), else after the second thread steps
    /// over the first part's length fields.
    fn walk<const BIG: bool>(
        &mut self,
        data: &[u8],
        len: u64,
        split_at: u64,
        known_split: Option<(u64, usize)>,
        odd: &mut Vec<(u64, usize)>,
    ) {
        // The room for hashes was sized by the bytes that exist.
        let Duplicates { text, scratch, hash_room, .. } = self;
        let most = u64::try_from(*hash_room).unwrap_or(0);
        let hashes = scratch.as_mut_slice().get_mut(..*hash_room).unwrap_or_default();
        let mut walked = None;
        if len >= split_at {
            // The second thread starts later and first steps over the
            // length fields before its part (about a quarter of the cost of
            // hashing them), so the first part is the larger; it ends at a
            // checkpoint, so the second part's checkpoints are the walk's.
            let known = known_split.filter(|(i, _)| i & (CHECKPOINT - 1) == 0 && *i > 0 && *i < most);
            walked = match known {
                Some((mid, from)) => text.walk_split::<BIG>(data, mid, Some(from), hashes),
                None => text.walk_split::<BIG>(data, (most / 5).saturating_mul(3) & !(CHECKPOINT - 1), None, hashes),
            };
        }
        let mut walked = walked.unwrap_or_else(|| {
            let mut w = Walked::default();
            (_, w.count) = text.walk_part::<BIG>(data, 0, 0, hashes, &mut w.checkpoints, &mut w.odd);
            w
        });
        odd.append(&mut walked.odd);
        (self.count, self.checkpoints) = (walked.count, walked.checkpoints);
        self.mark();
    }

    /// Sets the bits of the hashes walked, noting those already set as
    /// hot. Apart from the walk, so the bitmap's words are loaded many at a
    /// time (their addresses are in the hashes, not at the end of a
    /// token's hashing).
    fn mark(&mut self) {
        let shift = self.shift;
        let (hashes, seen) = self.scratch.as_mut_slice().split_at_mut_checked(self.hash_room).unwrap_or_default();
        for h in hashes.get(..self.count).unwrap_or_default() {
            let (word, mask) = bitmap_slot(shift, *h);
            if let Some(w) = seen.get_mut(word) {
                if *w & mask != 0 {
                    self.hot.push(*h);
                }
                *w |= mask;
            }
        }
    }

    /// The strings of the array from the one whose length field is at
    /// `pos` in its bytes on.
    fn strings_from<'a>(tokens: &Array<'a>, pos: u64) -> Option<impl Iterator<Item = Str<'a>> + 'a> {
        let offset = tokens.data_offset().checked_add(pos)?.checked_sub(12)?;
        let from = Array { offset, data: tokens.data.get(usize::try_from(pos).ok()?..)?, ..*tokens };
        Some(from.strings().map(|(_, s)| s))
    }

    /// The string whose length field is at `pos` in the array's bytes.
    fn string_at<'a>(tokens: &Array<'a>, pos: usize) -> Option<Str<'a>> {
        Self::strings_from(tokens, u64::try_from(pos).ok()?)?.next()
    }

    /// The string of token `i`, from the nearest checkpoint before it.
    #[cfg(test)]
    fn string<'a>(&self, tokens: &Array<'a>, i: u64) -> Option<Str<'a>> {
        Self::string_after(&self.checkpoints, tokens, i)
    }

    /// The string of token `i`, from the nearest of `checkpoints` before it.
    fn string_after<'a>(checkpoints: &[u64], tokens: &Array<'a>, i: u64) -> Option<Str<'a>> {
        let pos = *checkpoints.get(usize::try_from(i.checked_div(CHECKPOINT)?).ok()?)?;
        Self::strings_from(tokens, pos)?.nth(usize::try_from(i & (CHECKPOINT - 1)).ok()?)
    }

    fn report(self, kv: &KeyValue<'_>, tokens: &Array<'_>, sink: &mut Sink<'_>) {
        for (i, first, s) in self.found(tokens) {
            let shown = if s.bytes.is_empty() {
                format!("(empty, renamed `[EMPTY_{i}]`)")
            } else {
                format!("`{}`", s.display())
            };
            sink.emit(RuleId::TokenizerDuplicateToken, s.offset, || format!("{}[{i}]", kv_path(kv)), || {
                format!("token {i} {shown} repeats token {first}; llama.cpp aborts (GGML_ASSERT: every token text maps to one id)")
            });
        }
    }

    /// The tokens whose text an earlier token has, in order: each with
    /// the first token of that text and its string.
    fn found<'a>(mut self, tokens: &Array<'a>) -> Vec<(u64, u64, Str<'a>)> {
        if self.hot.is_empty() {
            return Vec::new();
        }
        // A text repeated has the hash of a hot token (the later copy set
        // a bit already set): the tokens of those hashes are the
        // candidates. The hot hashes sorted, each hash looked up first in a
        // filter of their low bits (64 bits a hot hash, at most 32 KiB: in
        // the first-level cache, where the bitmap's 1 MiB is not), then
        // among them by bisection.
        self.hot.sort_unstable();
        self.hot.dedup();
        let Duplicates { hot, scratch, checkpoints, hash_room, count, .. } = &mut self;
        let hot: &[u32] = hot;
        let (hashes, seen) = scratch.as_mut_slice().split_at_mut_checked(*hash_room).unwrap_or_default();
        let hashes = hashes.get(..*count).unwrap_or_default();
        // The bitmap is done with: its memory, paged in already, holds the
        // filter, a count for each hot hash, then the candidates as pairs
        // (the hash's place among the hot ones, token), so finding them
        // touches no fresh page (about
        // fifty of the heap's for gemma-3's vocabulary). What does not fit
        // goes to the heap.
        let seen_bits = seen.len().saturating_mul(32);
        let filter_bits = hot.len().saturating_mul(64).clamp(64, MAX_FILTER_BITS).next_power_of_two().min(seen_bits);
        let Some((filter, rest)) = seen.split_at_mut_checked(filter_bits / 32) else { return Vec::new() };
        filter.fill(0);
        let bit = |h: u32| {
            let b = usize::try_from(h).unwrap_or(0) & filter_bits.saturating_sub(1);
            (b / 32, 1u32 << (b % 32))
        };
        for h in hot {
            let (word, mask) = bit(*h);
            if let Some(w) = filter.get_mut(word) {
                *w |= mask;
            }
        }
        let mut counts_on_heap = Vec::new();
        let (counts, pairs) = match rest.split_at_mut_checked(hot.len()) {
            Some((counts, pairs)) => (counts, pairs),
            None => {
                counts_on_heap.resize(hot.len(), 0u32);
                (&mut counts_on_heap[..], &mut [][..])
            }
        };
        counts.fill(0);
        let whole_pairs = pairs.len() & !1;
        let pairs: &mut [[u32; 2]] =
            pairs.get_mut(..whole_pairs).and_then(|p| bytemuck::try_cast_slice_mut(p).ok()).unwrap_or_default();
        let mut in_pairs = 0usize;
        let mut on_heap: Vec<(usize, u64)> = Vec::new();
        for (i, h) in (0u64..).zip(hashes.iter()) {
            let (word, mask) = bit(*h);
            if filter.get(word).is_none_or(|w| w & mask == 0) {
                continue;
            }
            let Ok(run) = hot.binary_search(h) else { continue };
            if let Some(c) = counts.get_mut(run) {
                *c = c.saturating_add(1);
            }
            match (pairs.get_mut(in_pairs), u32::try_from(run), u32::try_from(i)) {
                (Some(pair), Ok(r), Ok(token)) if on_heap.is_empty() => {
                    *pair = [r, token];
                    in_pairs = in_pairs.saturating_add(1);
                }
                _ => on_heap.push((run, i)),
            }
        }
        // The candidates in token order, each with the place of its hash
        // among the hot ones as the id of its run; those alone in their run
        // are no duplicate.
        let paired = pairs.get(..in_pairs).unwrap_or_default();
        let candidates = paired.iter().map(|[r, t]| (usize::try_from(*r).unwrap_or(usize::MAX), u64::from(*t)));
        let repeated = |run: &usize| counts.get(*run).is_some_and(|c| *c > 1);
        // The candidates' texts, then equal texts within a run.
        let mut texts: Vec<(usize, u64, Str<'a>)> = candidates
            .chain(on_heap.iter().copied())
            .filter(|(run, _)| repeated(run))
            .filter_map(|(run, i)| Some((run, i, Self::string_after(checkpoints, tokens, i)?)))
            .collect();
        if texts.is_empty() {
            return Vec::new();
        }
        texts.sort_by_key(|(run, i, _)| (*run, *i));
        let mut found: Vec<(u64, u64, Str<'a>)> = Vec::new();
        for run in texts.chunk_by(|a, b| a.0 == b.0) {
            let mut firsts: Vec<(u64, std::borrow::Cow<'_, [u8]>)> = Vec::new();
            for (_, i, s) in run {
                let t = Self::text(*i, s.bytes);
                match firsts.iter().find(|(_, f)| *f == t) {
                    Some((first, _)) => found.push((*i, *first, *s)),
                    None => firsts.push((*i, t)),
                }
            }
        }
        found.sort_by_key(|(i, _, _)| *i);
        found
    }
}

/// One i32 in the file's byte order.
fn i32_of(b: [u8; 4], order: ByteOrder) -> i32 {
    match order {
        ByteOrder::LittleEndian => i32::from_le_bytes(b),
        ByteOrder::BigEndian => i32::from_be_bytes(b),
    }
}

/// The i32 elements of an array, decoded in place.
fn i32s<'a>(a: &Array<'a>) -> impl Iterator<Item = i32> + 'a {
    let order = a.order;
    a.data.chunks_exact(4).map(move |c| i32_of(c.try_into().unwrap_or([0; 4]), order))
}

/// Whether every type of the array is one of llama.cpp's: one pass with no
/// branch per element (the compiler vectorises it), the common case.
fn all_types_known(a: &Array<'_>) -> bool {
    let known = |b: &[u8], order| limits::LLAMA_TOKEN_TYPES.contains(&i32_of(b.try_into().unwrap_or([0xff; 4]), order));
    match a.order {
        ByteOrder::LittleEndian => a.data.chunks_exact(4).fold(true, |ok, b| ok & known(b, ByteOrder::LittleEndian)),
        ByteOrder::BigEndian => a.data.chunks_exact(4).fold(true, |ok, b| ok & known(b, ByteOrder::BigEndian)),
    }
}

fn check_token_types(kv: &KeyValue<'_>, a: &Array<'_>, sink: &mut Sink<'_>) {
    if all_types_known(a) {
        return;
    }
    for (i, t) in (0u64..).zip(i32s(a)) {
        if !limits::LLAMA_TOKEN_TYPES.contains(&t) {
            let off = a.data_offset().saturating_add(i.saturating_mul(4));
            sink.emit_span(
                RuleId::TokenizerTokenType,
                off,
                Some(4),
                || format!("{}[{i}]", kv_path(kv)),
                || format!("token {i} has type {t}; llama.cpp's token types are 0..=6"),
            );
        }
    }
}

/// `<0xHH>` with two hex digits.
fn is_byte_token(text: &[u8]) -> bool {
    matches!(text, [b'<', b'0', b'x', h, l, b'>'] if h.is_ascii_hexdigit() && l.is_ascii_hexdigit())
}

/// Looks like a byte token (six bytes, `<0x` .. `>`) whatever is inside.
fn has_byte_token_shape(text: &[u8]) -> bool {
    matches!(text, [b'<', b'0', b'x', _, _, b'>'])
}

/// `known_split`: a token (index) whose length field's position in the array's
/// bytes is known, where the walk may split ([`Duplicates::walk`]).
fn check_tokens(
    kv: &KeyValue<'_>,
    tokens: &Array<'_>,
    types: Option<Array<'_>>,
    known_split: Option<(u64, usize)>,
    sink: &mut Sink<'_>,
) {
    if tokens.elem_type != ValueType::String {
        return;
    }
    // Both kinds of byte-token finding start with `<0x`: only those tokens
    // look up their type (random access into the i32 array).
    let type_of = |i: u64| -> Option<i32> {
        let a = types.as_ref()?;
        let at = usize::try_from(i.checked_mul(4)?).ok()?;
        let b: [u8; 4] = a.data.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(i32_of(b, a.order))
    };
    let mut dups = Duplicates::new(tokens);
    let mut odd = Vec::new();
    match tokens.order {
        ByteOrder::LittleEndian => {
            dups.walk::<false>(tokens.data, tokens.len, limits::VOCAB_SPLIT_MIN_TOKENS, known_split, &mut odd)
        }
        ByteOrder::BigEndian => {
            dups.walk::<true>(tokens.data, tokens.len, limits::VOCAB_SPLIT_MIN_TOKENS, known_split, &mut odd)
        }
    }
    for (i, pos) in odd {
        let Some(s) = Duplicates::string_at(tokens, pos) else { continue };
        let is_byte_type = type_of(i) == Some(limits::LLAMA_TOKEN_TYPE_BYTE);
        if is_byte_type || has_byte_token_shape(s.bytes) {
            sink.emit(
                RuleId::TokenizerByteToken,
                s.offset,
                || format!("{}[{i}]", kv_path(kv)),
                || format!("token {i} `{}` is not a byte token `<0xHH>`", s.display()),
            );
        }
    }
    dups.report(kv, tokens, sink);
}

/// llama.cpp gives tokens of a model whose `general.name` contains `phi3`
/// or `phi-3` (lowercased) special attributes, looking up `</s>`, `<unk>`,
/// `<s>` and `<|endoftext|>` with `std::map::at`: a vocabulary without one
/// of them makes it refuse the file. (Its jina/nomic branch comes first.)
fn check_name_quirk(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    const NEEDED: [&[u8]; 4] = [b"</s>", b"<unk>", b"<s>", b"<|endoftext|>"];
    let Some(name_kv) = file.get("general.name") else { return };
    let Some(name) = name_kv.value.as_string() else { return };
    let lower = name.bytes.to_ascii_lowercase();
    let has = |needle: &[u8]| lower.windows(needle.len()).any(|w| w == needle);
    if !(has(b"phi3") || has(b"phi-3")) {
        return;
    }
    let text =
        |key: &str| file.get(key).and_then(|kv| kv.value.as_string()).map(|s| s.bytes.to_vec()).unwrap_or_default();
    let pre = text("tokenizer.ggml.pre");
    let arch = text("general.architecture");
    let contains = |hay: &[u8], n: &[u8]| !n.is_empty() && hay.windows(n.len()).any(|w| w == n);
    let jina_branch = [&b"jina-v2-de"[..], b"jina-v2-es", b"jina-v2-code"].iter().any(|n| contains(&pre, n))
        || [&b"nomic-bert-moe"[..], b"jina-bert-v3"].iter().any(|n| contains(&arch, n));
    if jina_branch {
        return;
    }
    let Some(tokens) = file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()) else { return };
    let mut found = [false; 4];
    for (_, s) in tokens.strings() {
        if let Some(i) = NEEDED.iter().position(|n| *n == s.bytes)
            && let Some(f) = found.get_mut(i)
        {
            *f = true;
        }
    }
    let missing: Vec<String> =
        NEEDED.iter().zip(found).filter(|(_, f)| !f).map(|(n, _)| String::from_utf8_lossy(n).into_owned()).collect();
    if !missing.is_empty() {
        sink.emit(RuleId::TokenizerNameQuirk, name_kv.value_offset(), || kv_path(&name_kv), || {
            format!(
                "general.name `{}` contains `phi3`/`phi-3`, so llama.cpp looks up {} in the vocabulary, which lacks {}: it refuses the file",
                name.display(),
                NEEDED.iter().map(|n| format!("`{}`", String::from_utf8_lossy(n))).collect::<Vec<_>>().join(", "),
                missing.join(", ")
            )
        });
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    /// A string array of `texts` at absolute offset 1000.
    fn array(texts: &[Vec<u8>]) -> (Vec<u8>, u64) {
        let mut data = Vec::new();
        for t in texts {
            data.extend_from_slice(&u64::try_from(t.len()).unwrap().to_le_bytes());
            data.extend_from_slice(t);
        }
        (data, u64::try_from(texts.len()).unwrap())
    }

    /// A string array of `len` strings whose bytes are `data`, at offset 1000.
    fn string_array(data: &[u8], len: u64, order: ByteOrder) -> Array<'_> {
        Array {
            offset: 1000,
            elem_type: ValueType::String,
            len,
            data,
            order,
            depth: 1,
            plain_lengths: false,
            checked: false,
        }
    }

    /// Every token whose text (as llama.cpp names it) an earlier one has,
    /// with the first such token: by comparing every pair.
    fn naive_duplicates(texts: &[Vec<u8>]) -> Vec<(u64, u64)> {
        let mut want = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let i = u64::try_from(i).unwrap();
            let text = Duplicates::text(i, t);
            let first = (0u64..i).find(|j| Duplicates::text(*j, &texts[usize::try_from(*j).unwrap()]) == text);
            if let Some(first) = first {
                want.push((i, first));
            }
        }
        want
    }

    #[test]
    fn duplicates_are_found_across_checkpoints_as_a_naive_search_finds_them() {
        // Texts of every length class of the hash (empty, 1..=3, 4..=8,
        // 9..=16, longer), repeats near and far, across checkpoints.
        let mut texts: Vec<Vec<u8>> = (0..3000u32).map(|i| format!("t{}", i * 7919 % 100_003).into_bytes()).collect();
        let stems = ["a", "ab", "abc", "abcd", "abcdefgh", "abcdefghi", "abcdefghijklmnop", "abcdefghijklmnopq"];
        for (k, stem) in stems.iter().enumerate() {
            texts[k * 300 + 5] = stem.as_bytes().to_vec();
            texts[k * 300 + 64] = stem.as_bytes().to_vec();
            texts[2999 - k] = stem.as_bytes().to_vec();
        }
        texts[128] = Vec::new();
        texts[1280] = Vec::new();
        texts[2000] = b"[EMPTY_128]".to_vec();
        let (data, len) = array(&texts);
        let tokens = string_array(&data, len, ByteOrder::LittleEndian);
        let want = naive_duplicates(&texts);
        assert!(want.len() >= 17, "{want:?}");
        // Walked on one thread, and in two parts (tokens 1792.. on another).
        // The split point where the extent's walk found it, and a wrong one (the
        // parts do not meet: one walk).
        let at = |i: usize| usize::try_from(tokens.strings().nth(i).unwrap().1.offset - tokens.data_offset()).unwrap();
        let known_splits = [None, None, Some((1024, at(1024))), Some((1024, at(1025))), Some((1000, at(1000)))];
        for (split_at, known_split) in [u64::MAX, 0, 0, 0, 0].into_iter().zip(known_splits) {
            let mut dups = Duplicates::new(&tokens);
            let mut odd = Vec::new();
            dups.walk::<false>(tokens.data, tokens.len, split_at, known_split, &mut odd);
            assert!(odd.is_empty());
            for (i, s) in tokens.strings() {
                assert_eq!(dups.string(&tokens, i), Some(s), "token {i} from its checkpoint");
            }
            let got: Vec<(u64, u64)> = dups.found(&tokens).iter().map(|(i, first, _)| (*i, *first)).collect();
            assert_eq!(got, want, "split at {split_at}");
        }
    }

    /// Where the candidates do not all fit in the bitmap's memory (every
    /// token the same text, or a few texts many times over, all of them
    /// candidates), those past it are kept on the heap, and the
    /// duplicates are still those a naive search finds, in token order.
    #[test]
    fn duplicates_past_the_bitmaps_room_are_found_as_a_naive_search_finds_them() {
        for texts in [
            vec![b"same".to_vec(); 3000],
            (0..3000u32).map(|i| format!("t{}", i % 3).into_bytes()).collect(),
            (0..3000u32).map(|i| if i % 2 == 0 { b"x".to_vec() } else { format!("u{i}").into_bytes() }).collect(),
        ] {
            let (data, len) = array(&texts);
            let tokens = string_array(&data, len, ByteOrder::LittleEndian);
            let mut dups = Duplicates::new(&tokens);
            // Every candidate is a pair of words: more of them than the
            // bitmap holds in the first two cases.
            let room = dups.scratch.as_slice().len() - dups.hash_room;
            dups.walk::<false>(tokens.data, tokens.len, u64::MAX, None, &mut Vec::new());
            let want = naive_duplicates(&texts);
            let got: Vec<(u64, u64)> = dups.found(&tokens).iter().map(|(i, first, _)| (*i, *first)).collect();
            assert_eq!(got, want);
            assert!(room < 2 * 3000, "{room} words of room");
        }
    }

    /// The walk over an array's bytes in the file's byte order: hashes,
    /// checkpoints, hot bits and odd `<0x` tokens all as one token at a
    /// time gives them, for texts of every length up to past the two-word
    /// hash (read from the bytes after the text, or copied near the end of
    /// the array), empty texts, and `<0x` texts of every kind.
    #[test]
    fn the_walk_equals_one_token_at_a_time_in_either_byte_order() {
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for n in 0..=40usize {
            for k in 0..3u8 {
                texts.push((0..n).map(|j| b'a' + ((u8::try_from(j).unwrap()).wrapping_mul(7) ^ k) % 26).collect());
            }
        }
        for t in ["<0x41>", "<0xZZ>", "<0x", "<0x4", "<0x41", "<0x41>x", "<0x0A>", "<0xab>", "<0x41><0x41><0x41>x"] {
            texts.push(t.as_bytes().to_vec());
            texts.push(t.as_bytes().to_vec());
        }
        // The last texts end the array: fewer than 16 bytes follow them.
        texts.extend([b"ab".to_vec(), Vec::new(), b"<0x4".to_vec(), b"abcdefghijk".to_vec()]);
        for big in [false, true] {
            let mut data = Vec::new();
            for t in &texts {
                let n = u64::try_from(t.len()).unwrap();
                data.extend_from_slice(&if big { n.to_be_bytes() } else { n.to_le_bytes() });
                data.extend_from_slice(t);
            }
            let order = if big { ByteOrder::BigEndian } else { ByteOrder::LittleEndian };
            let tokens = string_array(&data, u64::try_from(texts.len()).unwrap(), order);
            let at =
                |i: usize| usize::try_from(tokens.strings().nth(i).unwrap().1.offset - tokens.data_offset()).unwrap();
            let known_splits = [None, None, Some((64, at(64))), Some((64, at(65)))];
            for (split_at, known_split) in [u64::MAX, 0, 0, 0].into_iter().zip(known_splits) {
                let mut walked = Duplicates::new(&tokens);
                let mut odd = Vec::new();
                if big {
                    walked.walk::<true>(&data, tokens.len, split_at, known_split, &mut odd);
                } else {
                    walked.walk::<false>(&data, tokens.len, split_at, known_split, &mut odd);
                }
                let mut one = Duplicates { text: walked.text.clone(), ..Duplicates::new(&tokens) };
                let mut want_odd = Vec::new();
                for (i, s) in tokens.strings() {
                    let pos = usize::try_from(s.offset - tokens.data_offset()).unwrap();
                    one.push(i, pos, s.bytes);
                    if s.bytes.starts_with(b"<0x") && !is_byte_token(s.bytes) {
                        want_odd.push((i, pos));
                    }
                }
                assert_eq!(walked.hashes().len(), texts.len());
                assert_eq!(
                    (walked.hashes(), &walked.checkpoints, &walked.hot),
                    (one.hashes(), &one.checkpoints, &one.hot)
                );
                assert_eq!(odd, want_odd);
                // Six odd texts twice, and the last but one.
                assert_eq!(odd.len(), 2 * 6 + 1, "{odd:?}");
                let found: Vec<(u64, u64)> = walked.found(&tokens).iter().map(|(i, f, _)| (*i, *f)).collect();
                assert_eq!(found, naive_duplicates(&texts));
                assert!(found.len() >= 10, "{found:?}");
            }
        }
    }

    /// The parts meet where one walk would pass: the second part's start
    /// is found by stepping over the first's length fields, in either byte
    /// order, and the hashes are one walk's; an array whose bytes end
    /// before the known_split gives no parts.
    #[test]
    fn the_parts_of_a_split_walk_meet() {
        let texts: Vec<Vec<u8>> = (0..300u32).map(|i| format!("token {}", i * 31).into_bytes()).collect();
        for big in [false, true] {
            let mut data = Vec::new();
            let mut starts = Vec::new();
            for t in &texts {
                starts.push(data.len());
                let n = u64::try_from(t.len()).unwrap();
                data.extend_from_slice(&if big { n.to_be_bytes() } else { n.to_le_bytes() });
                data.extend_from_slice(t);
            }
            let skip = if big { skip_strings::<true> } else { skip_strings::<false> };
            assert_eq!(skip(&data, 0), Some(0));
            assert_eq!(skip(&data, 128), Some(starts[128]));
            assert_eq!(skip(&data, 300), Some(data.len()));
            assert_eq!(skip(&data, 301), None);
            assert_eq!(skip(&data[..starts[128] - 1], 128), None);
            let order = if big { ByteOrder::BigEndian } else { ByteOrder::LittleEndian };
            let tokens = Array { offset: 0, ..string_array(&data, 300, order) };
            let dups = Duplicates::new(&tokens);
            let mut hashes = vec![0u32; 300];
            let split_from = |d: &[u8], mid: u64, from: Option<usize>, h: &mut [u32]| {
                if big {
                    dups.text.walk_split::<true>(d, mid, from, h)
                } else {
                    dups.text.walk_split::<false>(d, mid, from, h)
                }
            };
            let split = |d: &[u8], mid: u64, h: &mut [u32]| split_from(d, mid, None, h);
            let mut one = Duplicates { text: dups.text.clone(), ..Duplicates::new(&tokens) };
            for (i, s) in tokens.strings() {
                one.push(i, usize::try_from(s.offset).unwrap(), s.bytes);
            }
            // Stepping over the first part, or starting where the extent's
            // walk found the known_split: the same walk.
            for from in [None, Some(starts[128])] {
                let w = split_from(&data, 128, from, &mut hashes).expect("two parts");
                assert_eq!((w.count, w.odd.len()), (300, 0));
                assert_eq!(w.checkpoints, [0, starts[64], starts[128], starts[192], starts[256]].map(|p| p as u64));
                assert_eq!(hashes, one.hashes());
            }
            // A known_split given at the wrong place: the parts do not meet.
            assert!(split_from(&data, 128, Some(starts[129]), &mut hashes).is_none());
            // Cut inside the first part: the other thread finds no known_split.
            let cut = &data[..starts[100]];
            assert!(split(cut, 128, &mut hashes).is_none());
            // A known_split past the hashes: no parts.
            assert!(split(&data, 301, &mut hashes).is_none());
        }
    }

    /// The branch-free pass over token types agrees with a plain one: all
    /// known, or one type out of range (just past either end of it) at the
    /// start, the known_split or the end, in either byte order.
    #[test]
    fn token_types_are_all_known_only_when_each_is() {
        for order in [ByteOrder::LittleEndian, ByteOrder::BigEndian] {
            for bad in [None, Some((0, -1)), Some((500, 7)), Some((999, i32::MIN)), Some((999, 6))] {
                let mut types: Vec<i32> = (0..1000).map(|i| i % 7).collect();
                if let Some((at, t)) = bad {
                    types[at] = t;
                }
                let data: Vec<u8> = types
                    .iter()
                    .flat_map(|t| if order == ByteOrder::BigEndian { t.to_be_bytes() } else { t.to_le_bytes() })
                    .collect();
                let a = Array {
                    offset: 0,
                    elem_type: ValueType::I32,
                    len: 1000,
                    data: &data,
                    order,
                    depth: 1,
                    plain_lengths: false,
                    checked: false,
                };
                let plain = types.iter().all(|t| limits::LLAMA_TOKEN_TYPES.contains(t));
                assert_eq!(all_types_known(&a), plain, "{order:?} {bad:?}");
                assert_eq!(plain, bad.is_none_or(|(_, t)| t == 6));
            }
        }
    }
}
