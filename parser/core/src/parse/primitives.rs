//! Primitive readers: numbers in the file's byte order and length-prefixed
//! strings, as nom parsers over `&[u8]` that know their absolute offset.
#![forbid(unsafe_code)]

use nom::error::{ErrorKind, ParseError};
use nom::number::Endianness;
use nom::number::complete as num;
use nom::{IResult, Parser};

use crate::limits;

/// Byte order of a GGUF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ByteOrder {
    /// Little-endian (what every current writer produces by default).
    LittleEndian,
    /// Big-endian (GGUF v3 allows it; detected from the version field).
    BigEndian,
}

impl ByteOrder {
    pub(crate) fn nom(self) -> Endianness {
        match self {
            ByteOrder::LittleEndian => Endianness::Little,
            ByteOrder::BigEndian => Endianness::Big,
        }
    }

    /// `little-endian` or `big-endian`.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::LittleEndian => "little-endian",
            ByteOrder::BigEndian => "big-endian",
        }
    }
}

/// Why decoding stopped. Each kind maps to one fatal rule of the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeKind {
    /// A read ran past the end of the file.
    Truncated {
        /// What was being read.
        what: &'static str,
    },
    /// A count in the header cannot fit in the bytes that remain.
    CountExceedsFile {
        /// `tensor_count` or `kv_count`.
        what: &'static str,
        /// The count read.
        count: u64,
        /// Bytes left in the file after the header.
        remaining: u64,
    },
    /// A string's length is larger than the bytes that remain.
    StringExceedsFile {
        /// The length read.
        len: u64,
        /// Bytes left in the file after the length.
        remaining: u64,
    },
    /// A value type id outside 0..=12.
    ValueTypeUnknown(u32),
    /// An array element type id outside 0..=12.
    ArrayElementTypeUnknown(u32),
    /// An array's count cannot fit in the bytes that remain.
    ArrayExceedsFile {
        /// The count read.
        len: u64,
        /// Smallest size of one element.
        min_elem: u64,
        /// Bytes left after the count.
        remaining: u64,
    },
    /// Arrays nested deeper than [`limits::MAX_ARRAY_DEPTH`].
    ArrayTooDeep,
    /// A declared count or length, or the metadata as a whole, is beyond
    /// one of the caps of [`limits::MetadataLimits`]: decoding stops
    /// there, before anything it declares is read or walked.
    OverLimit {
        /// `kv_count`, `tensor_count`, `string length`, `array length`,
        /// or `metadata bytes` (where the metadata would end).
        what: &'static str,
        /// The count, length or end offset declared.
        declared: u64,
        /// The cap.
        limit: u64,
    },
    /// A tensor's `n_dims` cannot fit in the bytes that remain.
    DimsExceedFile {
        /// The n_dims read.
        n_dims: u32,
        /// Bytes left after it.
        remaining: u64,
    },
}

/// A nom error: where (as the length of the input that was left) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PError {
    /// Bytes of the buffer left when the error was raised.
    pub rem: usize,
    /// The reason.
    pub kind: DecodeKind,
    /// Index of the array element being read, if any (innermost).
    pub element: Option<u64>,
}

impl ParseError<&[u8]> for PError {
    fn from_error_kind(input: &[u8], _kind: ErrorKind) -> Self {
        PError { rem: input.len(), kind: DecodeKind::Truncated { what: "value" }, element: None }
    }

    fn append(_input: &[u8], _kind: ErrorKind, other: Self) -> Self {
        other
    }
}

/// Parser result over a byte slice.
pub type PResult<'a, T> = IResult<&'a [u8], T, PError>;

/// A string array an [`super::Extent`] walk went through to its end,
/// every string within the file and the caps it was given: the parser, given the same caps
/// and bytes, steps over it instead of walking it again
/// ([`crate::parse::Ctx::spans`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringSpan {
    /// Absolute offset of the first string's length field.
    pub start: u64,
    /// Absolute offset just past the last string.
    pub end: u64,
    /// How many strings.
    pub len: u64,
    /// The OR of their lengths.
    pub lengths_or: u64,
    /// Every string was found valid UTF-8 of at most
    /// [`limits::MAX_STRING_LEN`] bytes as it streamed past (a lean read,
    /// [`super::Extent::streamed`]): its bytes may never have been read into
    /// the buffer, which then holds zeros there, and nothing may read them.
    pub checked: bool,
    /// For a vocabulary-sized array ([`crate::limits::VOCAB_SPLIT_MIN_TOKENS`]
    /// strings or more): the index of the string where a walk split in two
    /// starts its second part (three fifths of the strings, rounded down to
    /// a multiple of [`crate::limits::VOCAB_SPLIT_ALIGN`]) and the absolute
    /// offset of that string's length field, so the second part starts
    /// there without stepping over the first's length fields.
    pub mid: Option<(u64, u64)>,
}

/// Context shared by all parsers of one file: the whole buffer (a prefix of
/// the file, or all of it), the file's real length and its byte order.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    /// The bytes available (the file, or a prefix of it).
    pub buf: &'a [u8],
    /// Length of the whole file, which may exceed `buf.len()`.
    pub file_len: u64,
    /// Byte order of every number in the file.
    pub order: ByteOrder,
    /// Absolute offset of `buf[0]` in the file (0 unless `buf` is a part
    /// of the file, such as an array's elements).
    pub base: u64,
    /// What the metadata may declare.
    pub limits: limits::MetadataLimits,
    /// String arrays a walk of the same bytes under the same limits went
    /// through without fault ([`super::Extent::spans`]), in file order: the
    /// parser steps over them instead of walking them again. Empty unless
    /// the caller has them.
    pub spans: &'a [StringSpan],
}

/// `usize` to `u64`; lossless on every platform Rust supports.
pub(crate) fn u64_of(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl<'a> Ctx<'a> {
    /// Absolute offset of `input`, which is always a suffix of `buf`.
    pub fn offset(&self, input: &[u8]) -> u64 {
        self.base.saturating_add(u64_of(self.buf.len().saturating_sub(input.len())))
    }

    /// Bytes of the file (not only of the buffer) that follow `input`'s start.
    pub fn remaining(&self, input: &[u8]) -> u64 {
        self.file_len.saturating_sub(self.offset(input))
    }

    /// A failure at `input`.
    pub fn fail<T>(&self, input: &'a [u8], kind: DecodeKind) -> PResult<'a, T> {
        Err(nom::Err::Failure(PError { rem: input.len(), kind, element: None }))
    }

    /// Fails at `at` when a declared `count` is over `cap`, or when
    /// `bytes` from `from` on would end past the metadata cap.
    pub fn within_limits(
        &self,
        at: &'a [u8],
        from: &'a [u8],
        what: &'static str,
        count: u64,
        cap: u64,
        bytes: u64,
    ) -> Result<(), nom::Err<PError>> {
        let over = |what, declared, limit| {
            Err(nom::Err::Failure(PError {
                rem: at.len(),
                kind: DecodeKind::OverLimit { what, declared, limit },
                element: None,
            }))
        };
        if count > cap {
            return over(what, count, cap);
        }
        let end = self.offset(from).saturating_add(bytes);
        if end > self.limits.bytes {
            return over("metadata bytes", end, self.limits.bytes);
        }
        Ok(())
    }

    fn truncated<T>(&self, input: &'a [u8], what: &'static str) -> PResult<'a, T> {
        self.fail(input, DecodeKind::Truncated { what })
    }

    /// A u8.
    pub fn u8(&self, i: &'a [u8], what: &'static str) -> PResult<'a, u8> {
        num::u8::<_, PError>.parse(i).or_else(|_| self.truncated(i, what))
    }

    /// A u16 in the file's order.
    pub fn u16(&self, i: &'a [u8], what: &'static str) -> PResult<'a, u16> {
        num::u16::<_, PError>(self.order.nom()).parse(i).or_else(|_| self.truncated(i, what))
    }

    /// A u32 in the file's order.
    pub fn u32(&self, i: &'a [u8], what: &'static str) -> PResult<'a, u32> {
        num::u32::<_, PError>(self.order.nom()).parse(i).or_else(|_| self.truncated(i, what))
    }

    /// A u64 in the file's order.
    pub fn u64(&self, i: &'a [u8], what: &'static str) -> PResult<'a, u64> {
        num::u64::<_, PError>(self.order.nom()).parse(i).or_else(|_| self.truncated(i, what))
    }

    /// `n` raw bytes.
    pub fn take(&self, i: &'a [u8], n: u64, what: &'static str) -> PResult<'a, &'a [u8]> {
        match usize::try_from(n) {
            Ok(n) if n <= i.len() => Ok((i.get(n..).unwrap_or_default(), i.get(..n).unwrap_or_default())),
            _ => self.truncated(i, what),
        }
    }

    /// A `gguf_string_t`: u64 length, then that many bytes. The length is
    /// checked against the bytes left in the file before anything is taken.
    pub fn string(&self, i: &'a [u8], what: &'static str) -> PResult<'a, Str<'a>> {
        let offset = self.offset(i);
        let (rest, len) = self.u64(i, what)?;
        let remaining = self.remaining(rest);
        if len > remaining {
            return self.fail(i, DecodeKind::StringExceedsFile { len, remaining });
        }
        self.within_limits(i, rest, "string length", len, self.limits.string_bytes, len)?;
        let (rest, bytes) = self.take(rest, len, what)?;
        Ok((rest, Str { offset, bytes }))
    }

    /// Skips one string without building it (for walking string arrays).
    pub fn skip_string(&self, i: &'a [u8]) -> PResult<'a, ()> {
        let (rest, len) = self.u64(i, "string length")?;
        let remaining = self.remaining(rest);
        if len > remaining {
            return self.fail(i, DecodeKind::StringExceedsFile { len, remaining });
        }
        self.within_limits(i, rest, "string length", len, self.limits.string_bytes, len)?;
        let (rest, _) = self.take(rest, len, "string")?;
        Ok((rest, ()))
    }
}

/// A string of the file, borrowed: its bytes and the offset of its length field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Str<'a> {
    /// Absolute offset of the u64 length that precedes the bytes.
    pub offset: u64,
    /// The bytes, not necessarily UTF-8.
    pub bytes: &'a [u8],
}

impl<'a> Str<'a> {
    /// The string if it is valid UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes).ok()
    }

    /// Absolute offset of the first byte of the string's content.
    pub fn content_offset(&self) -> u64 {
        self.offset.saturating_add(8)
    }

    /// A printable rendering for messages and paths: invalid UTF-8 and
    /// control characters escaped, shortened past [`limits::MAX_QUOTED_LEN`].
    pub fn display(&self) -> String {
        quote_bytes(self.bytes)
    }
}

/// Printable form of arbitrary bytes (see [`Str::display`]), shortened
/// past [`limits::MAX_QUOTED_LEN`].
pub fn quote_bytes(bytes: &[u8]) -> String {
    escape_into(bytes, false, Some(limits::MAX_QUOTED_LEN))
}

/// Printable form of arbitrary bytes, in full: control characters (newline,
/// ESC, ...) and the invisible or bidi-reordering characters that can make
/// text display as something else are escaped (`\n`, `\u{1b}`,
/// `\u{202e}`), bytes that are not UTF-8 become `\xNN`, and with
/// `escape_backslash` a `\` becomes `\\`, which makes the form lossless.
pub fn escape_bytes(bytes: &[u8], escape_backslash: bool) -> String {
    escape_into(bytes, escape_backslash, None)
}

/// Characters that change how the text around them is displayed without
/// showing themselves: zero-width characters, bidi embeddings, overrides
/// and isolates, the byte-order mark.
pub fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn escape_into(bytes: &[u8], escape_backslash: bool, max: Option<usize>) -> String {
    let mut out = String::new();
    let full = |out: &mut String| {
        if max.is_some_and(|m| out.len() >= m) {
            out.push('…');
            true
        } else {
            false
        }
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if full(&mut out) {
                return out;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else if is_invisible_format(c) {
                out.extend(c.escape_unicode());
            } else if c == '\\' && escape_backslash {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            if full(&mut out) {
                return out;
            }
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}
