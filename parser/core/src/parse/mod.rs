//! The GGUF parser: bytes in, a borrowed [`GgufFile`] out.
//!
//! The parser decodes; it does not judge. It stops only where the rest of
//! the file cannot be read (a truncation, an unknown value type, a length
//! that cannot fit in the file), and reports that as a [`DecodeError`]
//! together with everything it decoded before. Every rule about what is
//! *valid* lives in [`crate::check`] (and [`crate::legacy`] for other formats).
//!
//! The parser works on a prefix of the file plus the file's length:
//! counts and lengths are checked against the bytes left in the *file*,
//! and a read that runs past the prefix yields [`ParseOutcome::NeedMoreData`].
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

pub mod extent;
pub mod header;
pub mod kept;
mod key_index;
pub mod pairs;
pub mod primitives;
pub mod value;

pub(crate) use extent::lean_strings;
pub use extent::{Extent, Reach};
pub use header::{Detected, LegacyFormat, detect};
pub use kept::KeptParse;
pub(crate) use key_index::{KeyHashes, KeyIndex};
pub use pairs::Pairs;
pub use primitives::{ByteOrder, Ctx, DecodeKind, Str, StringSpan, escape_bytes, is_invisible_format, quote_bytes};
pub use value::{Array, Element, Value};

use crate::limits;
use crate::types::type_info;
use primitives::{PError, PResult, u64_of};

/// The fixed header of a GGUF v2/v3 file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// 2 or 3.
    pub version: u32,
    /// Byte order, inferred from the version field.
    pub byte_order: ByteOrder,
    /// `tensor_count` as written.
    pub tensor_count: u64,
    /// `metadata_kv_count` as written.
    pub kv_count: u64,
}

/// One metadata key/value pair, borrowed from the metadata's bytes. The
/// offsets of the type and value follow from the key's. A file keeps its
/// pairs as [`Pairs`] (16 bytes each) and gives each as one of these.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyValue<'a> {
    /// Position among the pairs.
    pub index: usize,
    /// The key (offset is that of its length field, the start of the pair).
    pub key: Str<'a>,
    /// The value.
    pub value: Value<'a>,
}

impl KeyValue<'_> {
    /// Absolute offset of the u32 value type (just after the key).
    pub fn type_offset(&self) -> u64 {
        self.key.content_offset().saturating_add(u64_of(self.key.bytes.len()))
    }

    /// Absolute offset of the value (just after its type).
    pub fn value_offset(&self) -> u64 {
        self.type_offset().saturating_add(4)
    }
}

/// One tensor info.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorInfo<'a> {
    /// Position among the tensor infos.
    pub index: usize,
    /// The name (offset is that of its length field, the start of the info).
    pub name: Str<'a>,
    /// Absolute offset of `n_dims`.
    pub n_dims_offset: u64,
    /// Number of dimensions as written.
    pub n_dims: u32,
    /// The dims as raw bytes (`n_dims` × u64 in file order).
    pub dims_raw: &'a [u8],
    /// Absolute offset of the first dim.
    pub dims_offset: u64,
    /// Byte order, to decode dims.
    pub order: ByteOrder,
    /// Absolute offset of the type id.
    pub type_offset: u64,
    /// The `ggml_type` id as written.
    pub type_id: u32,
    /// Absolute offset of the data-offset field.
    pub offset_field: u64,
    /// The tensor's data offset, relative to the start of the data section.
    pub data_offset: u64,
}

/// More bytes are needed: supply a prefix of at least this length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeedMoreData(pub u64);

/// `offset` rounded up to a multiple of `align` (> 0); `None` on overflow.
pub fn align_up(offset: u64, align: u64) -> Option<u64> {
    let rem = offset.checked_rem(align)?;
    if rem == 0 { Some(offset) } else { offset.checked_add(align.checked_sub(rem)?) }
}

impl<'a> TensorInfo<'a> {
    /// Bytes of data, as ggml sizes a tensor: a type with a non-zero block
    /// size, `ne[0]` a multiple of it (`n_dims` 0 reads as one element), and
    /// no overflow; `None` otherwise (the validator says which rule broke).
    pub fn nbytes(&self) -> Option<u64> {
        let info = type_info(self.type_id).filter(|i| i.block_size > 0)?;
        let block = u64::from(info.block_size);
        let ne0 = if self.n_dims == 0 { 1 } else { self.dims().next()? };
        if ne0.checked_rem(block)? != 0 {
            return None;
        }
        let elements = self.dims().try_fold(1u64, u64::checked_mul)?;
        elements.checked_div(block)?.checked_mul(u64::from(info.type_size))
    }

    /// The name as ggml keeps it (`ggml_set_name` copies up to the first
    /// NUL): what llama.cpp's loaders look tensors up and match suffixes by.
    pub fn ggml_name(&self) -> &'a [u8] {
        let b = self.name.bytes;
        b.iter().position(|c| *c == 0).and_then(|n| b.get(..n)).unwrap_or(b)
    }

    /// The dims (`ne[0]` first, the fastest-varying one).
    pub fn dims(&self) -> impl Iterator<Item = u64> + '_ {
        self.dims_raw.chunks_exact(8).map(|c| {
            let b: [u8; 8] = c.try_into().unwrap_or([0; 8]);
            match self.order {
                ByteOrder::LittleEndian => u64::from_le_bytes(b),
                ByteOrder::BigEndian => u64::from_be_bytes(b),
            }
        })
    }

    /// Absolute offset of dim `i`.
    pub fn dim_offset(&self, i: usize) -> u64 {
        self.dims_offset.saturating_add(u64_of(i).saturating_mul(8))
    }
}

/// A decoded GGUF v2/v3 file (or the part of it decoded before a fatal error).
#[derive(Clone, Debug, PartialEq)]
pub struct GgufFile<'a> {
    /// The header.
    pub header: Header,
    /// The key/value pairs, in file order (16 bytes a pair, each decoded
    /// from the metadata as it is asked for).
    pub kvs: Pairs<'a>,
    /// The tensor infos, in file order.
    pub tensors: Vec<TensorInfo<'a>>,
    /// Absolute offset just after the last tensor info (valid when complete).
    pub infos_end: u64,
    /// Length of the whole file.
    pub file_len: u64,
    /// The pairs by key, built on first use ([`GgufFile::key_index`]).
    pub(crate) key_index: KeyIndex,
    /// The string arrays the parse stepped over ([`parse_gguf_spanned`]).
    pub(crate) spans: Spans<'a>,
}

/// The spans a file was parsed with: what the extent's walk learnt of its
/// large string arrays (where a vocabulary is split in two, [`StringSpan::mid`]).
/// Derived data: two files are equal, and print alike, whatever their spans.
#[derive(Clone, Copy, Default)]
pub(crate) struct Spans<'a>(pub(crate) &'a [StringSpan]);

impl PartialEq for Spans<'_> {
    fn eq(&self, _: &Spans<'_>) -> bool {
        true
    }
}

impl std::fmt::Debug for Spans<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spans")
    }
}

/// Sorts packed entries (a 32-bit hash above a 32-bit position, as a
/// [`KeyHashes::candidates`] and the duplicate searches of
/// `check::later_duplicates` give them) as `sort_unstable` does. Many entries pushed in
/// position order, as the indexes push them, are sorted by a stable radix
/// sort of the hash: three passes of 11, 11 and 10 bits between the
/// entries and a second buffer in huge pages (then copied back), where a
/// comparison sort of a million made twenty (a third of a run over a file
/// of a million keys). Four passes of a byte, which end in place, were no
/// faster on a million entries and took more instructions.
pub(crate) fn sort_packed(packed: &mut [u64]) {
    const DIGITS: [u32; 3] = [32, 43, 54];
    let digit = |p: u64, shift: u32| usize::try_from((p >> shift) & 0x7ff).unwrap_or(0);
    let in_position_order =
        packed.windows(2).all(|w| matches!(w, [a, b] if a & u64::from(u32::MAX) < b & u64::from(u32::MAX)));
    if packed.len() < limits::RADIX_SORT_MIN_ENTRIES || !in_position_order {
        packed.sort_unstable();
        return;
    }
    let mut counts = [[0usize; 1 << 11]; 3];
    for p in packed.iter() {
        for (count, shift) in counts.iter_mut().zip(DIGITS) {
            if let Some(n) = count.get_mut(digit(*p, shift)) {
                *n = n.saturating_add(1);
            }
        }
    }
    let mut other = crate::scratch::PagedVec::<u64>::zeroed(packed.len());
    let other = other.as_mut_slice();
    if other.len() != packed.len() {
        packed.sort_unstable();
        return;
    }
    for (pass, (count, shift)) in counts.iter_mut().zip(DIGITS).enumerate() {
        // Where each digit's entries start; then each entry to its place,
        // in the order met (stable: equal hashes stay in position order).
        let mut start = 0usize;
        for n in count.iter_mut() {
            let here = *n;
            *n = start;
            start = start.saturating_add(here);
        }
        let (from, to): (&[u64], &mut [u64]) = if pass % 2 == 0 { (packed, other) } else { (other, packed) };
        for p in from {
            if let Some(slot) = count.get_mut(digit(*p, shift)) {
                if let Some(o) = to.get_mut(*slot) {
                    *o = *p;
                }
                *slot = slot.saturating_add(1);
            }
        }
    }
    // An odd number of passes: the entries are in the second buffer.
    packed.copy_from_slice(other);
}

/// The position in a packed entry (a 32-bit hash above a 32-bit position).
pub(crate) fn key_index_position(packed: u64) -> usize {
    usize::try_from(packed & u64::from(u32::MAX)).unwrap_or(usize::MAX)
}

impl<'a> GgufFile<'a> {
    /// The alignment readers lay data out with: `general.alignment` when it
    /// is a non-zero u32, else 32. (Whether that value is valid is the
    /// validator's business.)
    pub fn alignment(&self) -> u64 {
        match self.get("general.alignment").map(|kv| kv.value) {
            Some(Value::U32(a)) if a > 0 => u64::from(a),
            _ => limits::DEFAULT_ALIGNMENT,
        }
    }

    /// Absolute offset of the data section: the end of the tensor infos
    /// rounded up to [`GgufFile::alignment`]; `None` on overflow.
    pub fn data_start(&self) -> Option<u64> {
        align_up(self.infos_end, self.alignment())
    }

    /// The first pair with this key.
    pub fn get(&self, key: &str) -> Option<KeyValue<'a>> {
        let key = key.as_bytes();
        let indexed = if self.kvs.len() > limits::KEY_INDEX_MIN_PAIRS { self.key_index() } else { None };
        let Some(index) = indexed else { return self.kvs.find(key) };
        self.kvs.get(index.first(key, |i| self.kvs.key(i))?)
    }

    /// The pairs' keys hashed ([`KeyIndex`]); `None` for more pairs than a
    /// `u32` counts, or a key that could not be read again (the callers
    /// then compare keys with every pair).
    pub(crate) fn key_index(&self) -> Option<&KeyHashes> {
        self.key_index.get_or_build(&self.kvs)
    }
}

/// A fatal decoding error: where, why, and in which field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Absolute byte offset.
    pub offset: u64,
    /// Why decoding stopped.
    pub kind: DecodeKind,
    /// Field path (`kv[3] general.name`, `tensor[2] w/ne`, `header.kv_count`).
    pub path: String,
}

/// The result of parsing a GGUF v2/v3 file.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed<'a> {
    /// Everything decoded.
    pub file: GgufFile<'a>,
    /// Why decoding stopped early, if it did.
    pub fatal: Option<DecodeError>,
}

/// Outcome of parsing a prefix of a file.
#[derive(Clone, Debug, PartialEq)]
// One per parse, returned once and matched at once: a box would add an
// allocation to every parse to save copying some 200 bytes.
#[allow(clippy::large_enum_variant)]
pub enum ParseOutcome<'a> {
    /// Parsed (possibly with a fatal error).
    Done(Parsed<'a>),
    /// The prefix ends before the metadata does: supply at least this many bytes.
    NeedMoreData(u64),
}

/// Where in the file the parser is, for error paths.
#[derive(Clone, Copy)]
enum Section<'a> {
    Header(&'static str),
    Kv(usize, Option<Str<'a>>),
    Tensor(usize, Option<Str<'a>>, &'static str),
}

fn path_of(section: Section<'_>, element: Option<u64>) -> String {
    match section {
        Section::Header(field) => format!("header.{field}"),
        Section::Kv(i, None) => format!("kv[{i}]"),
        Section::Kv(i, Some(key)) => match element {
            Some(e) => format!("kv[{i}] {}[{e}]", key.display()),
            None => format!("kv[{i}] {}", key.display()),
        },
        Section::Tensor(i, None, _) => format!("tensor[{i}]"),
        Section::Tensor(i, Some(name), field) => format!("tensor[{i}] {}/{field}", name.display()),
    }
}

/// Parses a GGUF v2/v3 file whose version and byte order were detected.
///
/// `buf` is the file or a prefix of it; `file_len` is the whole file's
/// length. Returns [`ParseOutcome::NeedMoreData`] only when
/// `buf.len() < file_len` and the metadata runs past `buf`.
///
/// Nothing a file declares beyond `limits` is read or walked: decoding
/// stops there with [`DecodeKind::OverLimit`], and more data is never
/// asked for past `limits.bytes`.
pub fn parse_gguf<'a>(
    buf: &'a [u8],
    file_len: u64,
    version: u32,
    order: ByteOrder,
    limits: &limits::MetadataLimits,
) -> ParseOutcome<'a> {
    parse_gguf_spanned(buf, file_len, version, order, limits, &[])
}

/// [`parse_gguf`], stepping over the string arrays of `spans`: those an
/// [`Extent`] walk of the same bytes under the same `limits` went through
/// (the same outcome, without walking them twice).
pub fn parse_gguf_spanned<'a>(
    buf: &'a [u8],
    file_len: u64,
    version: u32,
    order: ByteOrder,
    limits: &limits::MetadataLimits,
    spans: &'a [StringSpan],
) -> ParseOutcome<'a> {
    let ctx = Ctx { buf, file_len, order, base: 0, limits: *limits, spans };
    let header = Header { version, byte_order: order, tensor_count: 0, kv_count: 0 };
    let mut file = GgufFile {
        header,
        kvs: Pairs::new(buf, order),
        tensors: Vec::new(),
        infos_end: 0,
        file_len,
        key_index: KeyIndex::default(),
        spans: Spans(spans),
    };
    let mut section = Section::Header("tensor_count");
    let result = parse_body(&ctx, &mut file, &mut section);
    match result {
        Ok(()) => ParseOutcome::Done(Parsed { file, fatal: None }),
        Err(e) => {
            let offset = u64_of(buf.len().saturating_sub(e.rem));
            let mut kind = e.kind;
            if matches!(kind, DecodeKind::Truncated { .. }) && u64_of(buf.len()) < file_len {
                // The read ran past the prefix, not past the file.
                let want = u64_of(buf.len()).saturating_mul(2).max(offset.saturating_add(64)).min(file_len);
                if u64_of(buf.len()) < limits.bytes {
                    return ParseOutcome::NeedMoreData(want.min(limits.bytes));
                }
                // The prefix holds all the metadata the limits allow.
                kind = DecodeKind::OverLimit { what: "metadata bytes", declared: want, limit: limits.bytes };
            }
            let path = path_of(section, e.element);
            ParseOutcome::Done(Parsed { file, fatal: Some(DecodeError { offset, kind, path }) })
        }
    }
}

fn lift<T>(r: PResult<'_, T>) -> Result<(&[u8], T), PError> {
    r.map_err(|e| match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) => PError { rem: 0, kind: DecodeKind::Truncated { what: "value" }, element: None },
    })
}

fn parse_body<'a>(ctx: &Ctx<'a>, file: &mut GgufFile<'a>, section: &mut Section<'a>) -> Result<(), PError> {
    let i = ctx.buf.get(8..).unwrap_or_default();
    let (i, tensor_count) = lift(ctx.u64(i, "tensor_count"))?;
    *section = Section::Header("kv_count");
    let (i, kv_count) = lift(ctx.u64(i, "kv_count"))?;
    file.header.tensor_count = tensor_count;
    file.header.kv_count = kv_count;

    // Both counts against the bytes left, before any loop or allocation.
    let remaining = ctx.remaining(i);
    let kv_min = kv_count.checked_mul(limits::MIN_KV_SIZE);
    let tensor_min = tensor_count.checked_mul(limits::MIN_TENSOR_INFO_SIZE);
    let count_at = ctx.buf.get(16..).unwrap_or_default();
    if kv_min.is_none_or(|n| n > remaining) {
        *section = Section::Header("kv_count");
        let kind = DecodeKind::CountExceedsFile { what: "kv_count", count: kv_count, remaining };
        return Err(PError { rem: count_at.len(), kind, element: None });
    }
    if tensor_min.zip(kv_min).and_then(|(t, k)| t.checked_add(k)).is_none_or(|n| n > remaining) {
        *section = Section::Header("tensor_count");
        let kind = DecodeKind::CountExceedsFile { what: "tensor_count", count: tensor_count, remaining };
        let at = ctx.buf.get(8..).unwrap_or_default();
        return Err(PError { rem: at.len(), kind, element: None });
    }

    // Then against the caps of what this run reads.
    let tensor_bytes = tensor_min.unwrap_or(u64::MAX);
    let kv_bytes = kv_min.unwrap_or(u64::MAX);
    let kv_cap = ctx.limits.kv_count;
    *section = Section::Header("kv_count");
    lift(ctx.within_limits(count_at, i, "kv_count", kv_count, kv_cap, kv_bytes).map(|()| (i, ())))?;
    *section = Section::Header("tensor_count");
    let at = ctx.buf.get(8..).unwrap_or_default();
    let (t_cap, both) = (ctx.limits.tensor_count, kv_bytes.saturating_add(tensor_bytes));
    lift(ctx.within_limits(at, i, "tensor_count", tensor_count, t_cap, both).map(|()| (i, ())))?;

    // Room for every record the buffer at hand can hold (each takes at
    // least `min` bytes of it), so the vector is sized once: a declared
    // count only sizes it as far as bytes that exist back it (and the
    // counts are within the caps checked above).
    let in_buf = u64_of(i.len());
    let cap = |n: u64, min: u64| {
        let backed = n.min(in_buf.checked_div(min).unwrap_or(0));
        let floor = n.min(u64_of(limits::MAX_INITIAL_CAPACITY));
        usize::try_from(backed.max(floor)).unwrap_or(0)
    };
    file.kvs.reserve(cap(kv_count, limits::MIN_KV_SIZE));
    let mut i = i;
    for index in 0..usize::try_from(kv_count).unwrap_or(usize::MAX) {
        if let Some(rest) = plain_scalar_pair(ctx, i).and_then(|n| i.get(n..)) {
            file.kvs.push_scalar(ctx.offset(i));
            i = rest;
            continue;
        }
        *section = Section::Kv(index, None);
        let (rest, key) = lift(ctx.string(i, "key"))?;
        *section = Section::Kv(index, Some(key));
        let (rest, ty) = lift(value::value_type(ctx, rest, false))?;
        let (rest, value) = lift(value::parse_value(ctx, rest, ty, 0))?;
        file.kvs.push(&KeyValue { index, key, value });
        i = rest;
    }

    file.tensors.reserve(cap(tensor_count, limits::MIN_TENSOR_INFO_SIZE));
    for index in 0..usize::try_from(tensor_count).unwrap_or(usize::MAX) {
        *section = Section::Tensor(index, None, "name");
        let (rest, info) = tensor_info(ctx, i, index, section)?;
        file.tensors.push(info);
        i = rest;
    }
    file.infos_end = ctx.offset(i);
    Ok(())
}

/// The length of the pair at `i` when it is one of a scalar value that the
/// parser's own functions would decode without a fault, wholly in the
/// buffer: its key's length within the bytes left in the file and the
/// caps, a known scalar type, every byte at hand. Decoded by hand, the
/// common case of a file of many keys (nom's error paths cost more than
/// the decoding); `None` for anything else, which the parser's functions
/// decode (and where they stop, say why). A test holds the two to the
/// same pairs.
fn plain_scalar_pair(ctx: &Ctx<'_>, i: &[u8]) -> Option<usize> {
    let len = *i.first_chunk::<8>()?;
    let len = match ctx.order {
        ByteOrder::LittleEndian => u64::from_le_bytes(len),
        ByteOrder::BigEndian => u64::from_be_bytes(len),
    };
    let key = i.get(8..)?;
    // As `Ctx::string` checks the key: the bytes left in the file, the
    // cap on one string, the cap on the metadata.
    if len > ctx.remaining(key) || len > ctx.limits.string_bytes {
        return None;
    }
    if ctx.offset(key).checked_add(len)? > ctx.limits.bytes {
        return None;
    }
    let type_at = usize::try_from(len).ok()?.checked_add(8)?;
    let ty = *i.get(type_at..)?.first_chunk::<4>()?;
    let ty = match ctx.order {
        ByteOrder::LittleEndian => u32::from_le_bytes(ty),
        ByteOrder::BigEndian => u32::from_be_bytes(ty),
    };
    let size = crate::types::ValueType::from_id(ty)?.fixed_size()?;
    let end = type_at.checked_add(4)?.checked_add(size)?;
    (end <= i.len()).then_some(end)
}

fn tensor_info<'a>(
    ctx: &Ctx<'a>,
    i: &'a [u8],
    index: usize,
    section: &mut Section<'a>,
) -> Result<(&'a [u8], TensorInfo<'a>), PError> {
    let (rest, name) = lift(ctx.string(i, "tensor name"))?;
    *section = Section::Tensor(index, Some(name), "n_dims");
    let n_dims_offset = ctx.offset(rest);
    let (rest, n_dims) = lift(ctx.u32(rest, "n_dims"))?;
    *section = Section::Tensor(index, Some(name), "ne");
    let remaining = ctx.remaining(rest);
    let dims_len = u64::from(n_dims).saturating_mul(8);
    if dims_len > remaining {
        let kind = DecodeKind::DimsExceedFile { n_dims, remaining };
        return Err(PError { rem: rest.len().saturating_add(4), kind, element: None });
    }
    let dims_end = ctx.offset(rest).saturating_add(dims_len);
    if dims_end > ctx.limits.bytes {
        let kind = DecodeKind::OverLimit { what: "metadata bytes", declared: dims_end, limit: ctx.limits.bytes };
        return Err(PError { rem: rest.len().saturating_add(4), kind, element: None });
    }
    let dims_offset = ctx.offset(rest);
    let (rest, dims_raw) = lift(ctx.take(rest, dims_len, "dims"))?;
    *section = Section::Tensor(index, Some(name), "type");
    let type_offset = ctx.offset(rest);
    let (rest, type_id) = lift(ctx.u32(rest, "tensor type"))?;
    *section = Section::Tensor(index, Some(name), "offset");
    let offset_field = ctx.offset(rest);
    let (rest, data_offset) = lift(ctx.u64(rest, "tensor offset"))?;
    let info = TensorInfo {
        index,
        name,
        n_dims_offset,
        n_dims,
        dims_raw,
        dims_offset,
        order: ctx.order,
        type_offset,
        type_id,
        offset_field,
        data_offset,
    };
    Ok((rest, info))
}

/// Detection plus parse of the first `buf.len()` bytes of a file of
/// `file_len` bytes. `None` when the bytes are not GGUF v2/v3 or the
/// metadata runs past `buf`.
pub fn parse_prefix(buf: &[u8], file_len: u64) -> Option<Parsed<'_>> {
    match detect(buf) {
        Detected::Gguf { version, order } if version >= 2 => {
            match parse_gguf(buf, file_len, version, order, &limits::MetadataLimits::UNBOUNDED) {
                ParseOutcome::Done(p) => Some(p),
                ParseOutcome::NeedMoreData(_) => None,
            }
        }
        _ => None,
    }
}

/// Convenience: detection plus parse of a whole in-memory file. Returns
/// `None` when the bytes are not GGUF v2/v3 (see [`detect`]).
pub fn parse_bytes(buf: &[u8]) -> Option<Parsed<'_>> {
    parse_prefix(buf, u64_of(buf.len()))
}

/// Value type of a key/value pair, for messages: `u32`, `array[string]`, ...
pub fn type_label(value: &Value<'_>) -> String {
    match value {
        Value::Array(a) => format!("array[{}]", a.elem_type),
        v => v.value_type().to_string(),
    }
}

#[cfg(test)]
mod tests {
    //! Each decoding failure, on a few annotated bytes: its kind, offset
    //! and field path, and what was decoded before it.
    use super::*;
    use proptest::strategy::Strategy as _;

    /// Entries enough for the radix sort's second buffer to be in huge
    /// pages (a megabyte or more), with runs of equal hashes: sorted as a
    /// comparison sort sorts them.
    #[test]
    #[allow(clippy::arithmetic_side_effects)]
    fn a_large_key_index_sorts_as_sort_unstable_does() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut packed: Vec<u64> = (0..200_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x & 0xffff_f000_0000_0000) | i
            })
            .collect();
        let mut want = packed.clone();
        want.sort_unstable();
        sort_packed(&mut packed);
        assert!(packed == want);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// The radix sort of a key index orders it as a comparison sort
        /// does: hashes of few bits (many equal, in long runs) and of all
        /// 32, counts on either side of where the radix sort starts, and
        /// entries not in position order (which it leaves to the other).
        #[allow(clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
        #[test]
        fn packed_entries_sort_as_sort_unstable_does(
            seed in proptest::prelude::any::<u64>(),
            len in 0usize..3 * limits::RADIX_SORT_MIN_ENTRIES,
            bits in 0u32..=32,
            shuffled in proptest::prelude::any::<bool>(),
        ) {
            let mut x = seed | 1;
            let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let mask = if bits == 32 { u64::from(u32::MAX) } else { (1u64 << bits) - 1 };
            let mut packed: Vec<u64> = (0..len as u64).map(|i| (next() & mask) << 32 | i).collect();
            if shuffled && len > 1 {
                let (a, b) = ((next() % len as u64) as usize, (next() % len as u64) as usize);
                packed.swap(a, b);
            }
            let mut want = packed.clone();
            want.sort_unstable();
            sort_packed(&mut packed);
            proptest::prop_assert_eq!(packed, want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// A pair the hand decoding takes is one the parser's functions
        /// decode without a fault, to the same end and key, as a scalar:
        /// key lengths around the bytes left in the file, the buffer and
        /// the caps, every type id around the known ones, both orders.
        #[allow(clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
        #[test]
        fn hand_decoded_pairs_are_the_parsers(
            key_len in 0u64..40,
            declared in proptest::prop_oneof![proptest::prelude::Just(None), (0u64..48).prop_map(Some), proptest::prelude::any::<u64>().prop_map(Some)],
            ty in 0u32..16,
            tail in 0usize..12,
            file_extra in 0u64..16,
            string_cap in 0u64..48,
            bytes_cap in 0u64..96,
            big_endian in proptest::prelude::any::<bool>(),
        ) {
            let order = if big_endian { ByteOrder::BigEndian } else { ByteOrder::LittleEndian };
            let n = declared.unwrap_or(key_len);
            let mut buf = Vec::new();
            buf.extend(if big_endian { n.to_be_bytes() } else { n.to_le_bytes() });
            buf.extend(std::iter::repeat_n(b'k', key_len as usize));
            buf.extend(if big_endian { ty.to_be_bytes() } else { ty.to_le_bytes() });
            buf.extend(std::iter::repeat_n(7u8, tail));
            let limits = limits::MetadataLimits { string_bytes: string_cap, bytes: bytes_cap, ..limits::MetadataLimits::UNBOUNDED };
            let ctx = Ctx { buf: &buf, file_len: buf.len() as u64 + file_extra, order, base: 0, limits, spans: &[] };
            if let Some(end) = plain_scalar_pair(&ctx, &buf) {
                let (rest, key) = ctx.string(&buf, "key").expect("the parser takes the key");
                let (rest, t) = value::value_type(&ctx, rest, false).expect("and the type");
                let (rest, v) = value::parse_value(&ctx, rest, t, 0).expect("and the value");
                proptest::prop_assert_eq!(buf.len() - rest.len(), end);
                proptest::prop_assert_eq!(key.offset, 0);
                proptest::prop_assert!(!matches!(v, Value::String(_) | Value::Array(_)));
            } else if declared.is_none() && (ty as usize) < 13 && ty != 8 && ty != 9 && tail >= 8
                && key_len <= string_cap && 8 + key_len <= bytes_cap {
                proptest::prop_assert!(false, "a plain scalar pair left to the parser");
            }
        }
    }

    /// Little-endian helpers for hand-written files.
    fn u32le(v: u32) -> [u8; 4] {
        v.to_le_bytes()
    }
    fn u64le(v: u64) -> [u8; 8] {
        v.to_le_bytes()
    }

    /// `GGUF`, version 3, then the two counts.
    fn header(tensors: u64, kvs: u64) -> Vec<u8> {
        [&b"GGUF"[..], &u32le(3), &u64le(tensors), &u64le(kvs)].concat()
    }

    fn fatal_of(bytes: &[u8]) -> DecodeError {
        let p = parse_bytes(bytes).expect("GGUF v3");
        p.fatal.expect("a decoding failure")
    }

    /// A file of u32 pairs with these keys (value: the pair's position).
    fn pairs(keys: &[String]) -> Vec<u8> {
        let mut b = header(0, keys.len() as u64);
        for (i, k) in keys.iter().enumerate() {
            b.extend_from_slice(&u64le(k.len() as u64));
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(&u32le(4));
            b.extend_from_slice(&u32le(u32::try_from(i).unwrap()));
        }
        b
    }

    /// `get` finds what a comparison with every pair finds, the first of
    /// repeated keys included, below and above the size from which it
    /// uses the index; the index holds every pair once, sorted.
    #[test]
    fn get_finds_the_first_pair_of_a_key_with_or_without_the_index() {
        for n in [3usize, limits::KEY_INDEX_MIN_PAIRS, limits::KEY_INDEX_MIN_PAIRS + 1, 5000] {
            let mut keys: Vec<String> = (0..n).map(|i| format!("k.{}", i * 7 % (n + 1))).collect();
            // Repeats: a key again later, twice.
            keys.push(keys[n / 2].clone());
            keys.push(keys[0].clone());
            keys.push(keys[n / 2].clone());
            let bytes = pairs(&keys);
            let p = parse_bytes(&bytes).expect("GGUF v3");
            assert!(p.fatal.is_none());
            let file = &p.file;
            for probe in keys.iter().map(String::as_str).chain(["k.", "missing", "", "k.00"]) {
                let plain = file.kvs.iter().find(|kv| kv.key.bytes == probe.as_bytes());
                assert_eq!(file.get(probe).map(|kv| kv.index), plain.map(|kv| kv.index), "{n} pairs, `{probe}`");
            }
            assert_eq!(file.get(&keys[0]).map(|kv| kv.index), Some(0));
            let index = file.key_index().expect("an index");
            assert_eq!(index.len(), keys.len());
            // Every repeat is a candidate with its first, each pair once, sorted.
            let candidates: Vec<usize> = index.candidates().iter().map(|p| key_index_position(*p)).collect();
            for dup in [0, n / 2, n, n + 1, n + 2] {
                assert!(candidates.contains(&dup), "{n} pairs: {dup} is a candidate");
            }
            assert!(index.candidates().is_sorted());
            let mut once = candidates.clone();
            once.sort_unstable();
            once.dedup();
            assert_eq!(once.len(), candidates.len());
        }
    }

    #[test]
    fn truncated_inside_a_value() {
        let mut f = header(0, 1);
        f.extend_from_slice(&u64le(1)); // key length 1
        f.extend_from_slice(b"k"); // key
        f.extend_from_slice(&u32le(4)); // type u32 ...
        f.extend_from_slice(&[1, 2]); // ... but only 2 of its 4 bytes
        let e = fatal_of(&f);
        assert_eq!(e.kind, DecodeKind::Truncated { what: "u32 value" });
        assert_eq!((e.offset, e.path.as_str()), (24 + 8 + 1 + 4, "kv[0] k"));
    }

    #[test]
    fn counts_that_cannot_fit() {
        // kv_count 2 needs at least 26 bytes after the header; there are 0.
        let e = fatal_of(&header(0, 2));
        assert_eq!(e.kind, DecodeKind::CountExceedsFile { what: "kv_count", count: 2, remaining: 0 });
        assert_eq!((e.offset, e.path.as_str()), (16, "header.kv_count"));
        // tensor_count 1 needs 24 bytes: 23 zero bytes follow.
        let mut f = header(1, 0);
        f.extend_from_slice(&[0; 23]);
        let e = fatal_of(&f);
        assert_eq!(e.kind, DecodeKind::CountExceedsFile { what: "tensor_count", count: 1, remaining: 23 });
        assert_eq!((e.offset, e.path.as_str()), (8, "header.tensor_count"));
    }

    #[test]
    fn a_string_longer_than_the_file() {
        let mut f = header(0, 1);
        f.extend_from_slice(&u64le(1_000)); // key length 1000 ...
        f.extend_from_slice(&[b'k'; 5]); // ... 5 bytes left
        let e = fatal_of(&f);
        assert_eq!(e.kind, DecodeKind::StringExceedsFile { len: 1_000, remaining: 5 });
        assert_eq!((e.offset, e.path.as_str()), (24, "kv[0]"));
    }

    /// One pair `k` whose type and value bytes are `rest`.
    fn one_kv(rest: &[u8]) -> Vec<u8> {
        [&header(0, 1)[..], &u64le(1), b"k", rest].concat()
    }

    #[test]
    fn unknown_value_and_element_types() {
        let e = fatal_of(&one_kv(&[&u32le(13)[..], &[0; 8]].concat()));
        assert_eq!(e.kind, DecodeKind::ValueTypeUnknown(13));
        assert_eq!((e.offset, e.path.as_str()), (33, "kv[0] k"));
        // An array (9) of element type 99.
        let e = fatal_of(&one_kv(&[&u32le(9)[..], &u32le(99), &u64le(0)].concat()));
        assert_eq!(e.kind, DecodeKind::ArrayElementTypeUnknown(99));
        assert_eq!(e.offset, 37, "at the element type");
    }

    #[test]
    fn an_array_count_that_cannot_fit() {
        // Array of 1,000 u32: 4,000 bytes, 4 are left.
        let e = fatal_of(&one_kv(&[&u32le(9)[..], &u32le(4), &u64le(1_000), &[0; 4]].concat()));
        assert_eq!(e.kind, DecodeKind::ArrayExceedsFile { len: 1_000, min_elem: 4, remaining: 4 });
        assert_eq!(e.offset, 41, "at the count");
    }

    #[test]
    fn arrays_nested_past_the_depth_limit() {
        // 17 nested arrays of one array each.
        let mut v = Vec::new();
        v.extend_from_slice(&u32le(9));
        for _ in 0..limits::MAX_ARRAY_DEPTH {
            v.extend_from_slice(&u32le(9)); // element type: array
            v.extend_from_slice(&u64le(1)); // one element
        }
        v.extend_from_slice(&u32le(4)); // innermost: u32 ...
        v.extend_from_slice(&u64le(0)); // ... none
        let e = fatal_of(&one_kv(&v));
        assert_eq!(e.kind, DecodeKind::ArrayTooDeep);
        assert_eq!(e.path, "kv[0] k[0]");
    }

    #[test]
    fn dims_that_cannot_fit() {
        let mut f = header(1, 0);
        f.extend_from_slice(&u64le(1)); // name length
        f.extend_from_slice(b"t"); // name
        f.extend_from_slice(&u32le(1_000_000)); // n_dims: 8 MB of dims
        f.extend_from_slice(&[0; 16]); // type + offset bytes
        let e = fatal_of(&f);
        assert_eq!(e.kind, DecodeKind::DimsExceedFile { n_dims: 1_000_000, remaining: 16 });
        assert_eq!((e.offset, e.path.as_str()), (33, "tensor[0] t/ne"));
    }

    #[test]
    fn a_prefix_asks_for_more_and_the_whole_file_parses() {
        let mut f = one_kv(&[&u32le(8)[..], &u64le(3), b"abc"].concat());
        f.extend_from_slice(&[0; 29]);
        let len = f.len() as u64;
        // Cut inside the string value: more data, never a failure.
        assert!(
            matches!(parse_gguf(&f[..40], len, 3, ByteOrder::LittleEndian, &limits::MetadataLimits::DEFAULT), ParseOutcome::NeedMoreData(n) if n > 40)
        );
        let p = parse_bytes(&f).unwrap();
        assert!(p.fatal.is_none());
        assert_eq!(p.file.kvs.get(0).unwrap().value.as_string().unwrap().bytes, b"abc");
        assert_eq!((p.file.kvs.get(0).unwrap().type_offset(), p.file.kvs.get(0).unwrap().value_offset()), (33, 37));
    }
}
