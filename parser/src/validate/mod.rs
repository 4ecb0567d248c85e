//! The validator: runs every rule of [`crate::rules`] over a parsed file.
//!
//! Entry points: [`validate_source`] for a file read through a
//! [`ByteSource`] (the CLI: the metadata is read into memory by doubling
//! reads, padding is read in place), [`validate_bytes`] for a whole file in
//! memory, [`validate_prefix`] for a prefix of a file of known length (it
//! asks for more bytes when the metadata, or a padding region, runs past
//! the prefix).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

mod keys;
mod layout;
mod tensors;

use crate::io::{ByteSource, ReadError};
use crate::limits;
use crate::parse::{self, DecodeKind, Detected, ParseOutcome, Parsed};
use crate::report::{FileFormat, Options, Report, Sink, Summary};
use crate::rules::RuleId;

pub use crate::parse::NeedMoreData;

/// Why a check could not finish with the bytes at hand.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Supply a prefix of at least this length (prefix validation only).
    More(u64),
    /// Reading the source failed (the file shrank, or an I/O error).
    Read(ReadError),
}

impl From<NeedMoreData> for Stop {
    fn from(n: NeedMoreData) -> Stop {
        Stop::More(n.0)
    }
}

/// A validated file: the report and the metadata bytes that were read
/// (the file's first `metadata.len()` bytes), which later steps such as
/// `--check-data` parse again instead of reading the file twice.
#[derive(Debug)]
pub struct Validated {
    /// The report.
    pub report: Report,
    /// A prefix of the file holding all of its metadata.
    pub metadata: Vec<u8>,
}

/// Validates a file read through `src`: reads its metadata with positioned
/// reads, starting with [`limits::METADATA_FIRST_READ`] bytes and doubling
/// while the parser asks for more (never past the file), and reads padding
/// and gaps in place in chunks. Memory follows the metadata, not the file.
///
/// Formats that interleave headers and data (rwkv.cpp, GGML, GGMF, GGJT)
/// are read whole, up to [`limits::MAX_LEGACY_FILE_BYTES`].
pub fn validate_source(src: &dyn ByteSource, opts: &Options) -> Result<Validated, ReadError> {
    let file_len = src.len();
    let mut prefix = crate::io::read_range(src, 0, limits::METADATA_FIRST_READ.min(file_len))?;
    loop {
        match validate_in(&prefix, file_len, Some(src), opts) {
            Ok(report) => return Ok(Validated { report, metadata: prefix }),
            Err(Stop::Read(e)) => return Err(e),
            Err(Stop::More(want)) => {
                let have = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
                let next = want.max(have.saturating_mul(2)).min(file_len);
                if next <= have {
                    // The parser asked for bytes the file does not have;
                    // cannot happen (it knows the length), but never loop.
                    return Err(ReadError::Shrunk { offset: have, len: 0, opened_len: file_len });
                }
                if matches!(parse::detect(&prefix), Detected::Legacy { .. }) && next > limits::MAX_LEGACY_FILE_BYTES {
                    return Err(ReadError::TooLarge {
                        need: next,
                        limit: limits::MAX_LEGACY_FILE_BYTES,
                        what: "a legacy-format file (headers and data interleaved, validated from memory)",
                    });
                }
                // Grow in place and read straight into the new tail (no
                // second buffer: every page is touched once).
                let (Ok(from), Ok(to)) = (usize::try_from(have), usize::try_from(next)) else {
                    return Err(ReadError::TooLarge { need: next, limit: u64::MAX, what: "the metadata" });
                };
                prefix.reserve_exact(to.saturating_sub(from));
                prefix.resize(to, 0);
                src.read_exact_at(have, prefix.get_mut(from..).unwrap_or_default())?;
            }
        }
    }
}

/// Validates a whole file held in memory.
pub fn validate_bytes(buf: &[u8], opts: &Options) -> Report {
    let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
    match validate_prefix(buf, len, opts) {
        Ok(r) => r,
        // Cannot happen when the prefix is the whole file; report it as a
        // truncation rather than panic.
        Err(NeedMoreData(_)) => {
            let mut sink = Sink::new(opts);
            sink.emit(RuleId::FileTruncated, len, String::new, || "file ends early".into());
            sink.finish(opts.profile, FileFormat::Gguf, None, None, Summary { file_size: len, ..Summary::default() })
        }
    }
}

/// Validates a file of `file_len` bytes of which `prefix` holds the first
/// `prefix.len()`. When the prefix is too short, returns how many bytes to
/// supply; the same call with more bytes gives the same report as with
/// the whole file.
pub fn validate_prefix(prefix: &[u8], file_len: u64, opts: &Options) -> Result<Report, NeedMoreData> {
    match validate_in(prefix, file_len, None, opts) {
        Ok(r) => Ok(r),
        Err(Stop::More(n)) => Err(NeedMoreData(n)),
        // Without a source nothing is read, so this cannot happen; asking
        // for the whole file is the safe answer.
        Err(Stop::Read(_)) => Err(NeedMoreData(file_len)),
    }
}

/// [`validate_prefix`], reading what lies past the prefix from `source`
/// when there is one.
fn validate_in(prefix: &[u8], file_len: u64, source: Option<&dyn ByteSource>, opts: &Options) -> Result<Report, Stop> {
    let prefix_len = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
    let complete = prefix_len >= file_len;
    if !complete && prefix_len < crate::limits::HEADER_SIZE {
        return Err(Stop::More(crate::limits::HEADER_SIZE.min(file_len)));
    }
    let detected = parse::detect(prefix);
    let need_header = |n: u64| if complete || prefix_len >= n { Ok(()) } else { Err(Stop::More(n.min(file_len))) };
    let mut sink = Sink::new(opts);
    let summary = Summary { file_size: file_len, ..Summary::default() };
    let (version, order) = match detected {
        Detected::TooShort | Detected::GgufTruncated => {
            need_header(8)?;
            let at = if matches!(detected, Detected::TooShort) { 0 } else { 4 };
            let what = if at == 0 { "magic" } else { "version" };
            sink.emit(
                RuleId::FileTruncated,
                at,
                || format!("header.{what}"),
                || format!("the file ends ({file_len} bytes) inside the header's {what}"),
            );
            return Ok(sink.finish(opts.profile, FileFormat::Gguf, None, None, summary));
        }
        Detected::Unknown { magic } => {
            sink.emit(
                RuleId::Magic,
                0,
                || "header.magic".into(),
                || {
                    format!(
                        "the file starts with {} instead of `GGUF`; it is not a GGUF file",
                        parse::quote_bytes(&magic)
                    )
                },
            );
            return Ok(sink.finish(opts.profile, FileFormat::Unknown, None, None, summary));
        }
        Detected::SwappedMagic => {
            sink.emit(RuleId::Magic, 0, || "header.magic".into(), || {
                "the file starts with `FUGG`, the GGUF magic byte-swapped; ggml and gguf-py always write the bytes `GGUF`, also in big-endian files".into()
            });
            return Ok(sink.finish(opts.profile, FileFormat::Unknown, None, None, summary));
        }
        Detected::Legacy { format, version } => {
            // rwkv.cpp, GGML, GGMF, GGJT (and the `legacy-format` verdict).
            return crate::legacy::validate(prefix, file_len, format, version, opts).map_err(Stop::from);
        }
        Detected::GgufBadVersion { version } => {
            let msg = match version {
                0 => "version 0 is not a GGUF version".to_string(),
                v if v & 0xFFFF == 0 => format!("version word 0x{v:08x} is not 2 or 3 in either byte order"),
                v => format!("version {v} is newer than 3, the latest GGUF version"),
            };
            sink.emit(RuleId::VersionUnsupported, 4, || "header.version".into(), || msg);
            return Ok(sink.finish(opts.profile, FileFormat::Gguf, Some(version), None, summary));
        }
        Detected::GgufV1 { order, tensor_count, kv_count } => {
            need_header(16)?;
            let s = Summary { tensor_count: tensor_count.map(u64::from), kv_count: kv_count.map(u64::from), ..summary };
            sink.emit(RuleId::VersionObsolete, 4, || "header.version".into(), || {
                let n = |c: Option<u32>| c.map_or_else(|| "?".into(), |c| c.to_string());
                format!(
                    "GGUF v1 (2023, u32 counts and lengths; tensor_count {}, kv_count {}) is obsolete and read by no current reader; convert it with a current llama.cpp",
                    n(tensor_count),
                    n(kv_count)
                )
            });
            return Ok(sink.finish(opts.profile, FileFormat::Gguf, Some(1), Some(order), s));
        }
        Detected::Gguf { version, order } => (version, order),
    };
    let parsed = match parse::parse_gguf(prefix, file_len, version, order) {
        ParseOutcome::Done(p) => p,
        ParseOutcome::NeedMoreData(n) => return Err(Stop::More(n)),
    };
    let mut summary = summary;
    let region = Region { buf: prefix, file_len, source };
    check_parsed(&parsed, &region, &mut sink, &mut summary)?;
    Ok(sink.finish(opts.profile, FileFormat::Gguf, Some(version), Some(order), summary))
}

/// Bytes of the file available to the validator: a prefix, the length,
/// and (when validating a source) a way to read past the prefix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) file_len: u64,
    pub(crate) source: Option<&'a dyn ByteSource>,
}

impl Region<'_> {
    /// The first non-zero byte of `[start, end)` (clipped to the file), with
    /// its absolute offset. Reads past the prefix from the source in chunks
    /// of [`limits::SCAN_READ_CHUNK`], or asks for more data without one.
    pub(crate) fn first_nonzero(&self, start: u64, end: u64) -> Result<Option<(u64, u8)>, Stop> {
        let end = end.min(self.file_len);
        let buf_len = u64::try_from(self.buf.len()).unwrap_or(u64::MAX);
        let mut at = start;
        // The part inside the prefix.
        let in_prefix = end.min(buf_len);
        if at < in_prefix {
            let (Ok(s), Ok(e)) = (usize::try_from(at), usize::try_from(in_prefix)) else {
                return Err(Stop::More(end));
            };
            let bytes = self.buf.get(s..e).unwrap_or_default();
            if let Some(p) = bytes.iter().position(|b| *b != 0) {
                let b = bytes.get(p).copied().unwrap_or(0);
                return Ok(Some((at.saturating_add(u64::try_from(p).unwrap_or(0)), b)));
            }
            at = in_prefix;
        }
        if at >= end {
            return Ok(None);
        }
        let Some(src) = self.source else { return Err(Stop::More(end)) };
        let mut chunk = Vec::new();
        while at < end {
            let n = (end.saturating_sub(at)).min(limits::SCAN_READ_CHUNK);
            chunk.resize(usize::try_from(n).unwrap_or(0), 0);
            src.read_exact_at(at, &mut chunk).map_err(Stop::Read)?;
            if let Some(p) = chunk.iter().position(|b| *b != 0) {
                let b = chunk.get(p).copied().unwrap_or(0);
                return Ok(Some((at.saturating_add(u64::try_from(p).unwrap_or(0)), b)));
            }
            at = at.saturating_add(n);
        }
        Ok(None)
    }
}

fn check_parsed(
    parsed: &Parsed<'_>,
    region: &Region<'_>,
    sink: &mut Sink<'_>,
    summary: &mut Summary,
) -> Result<(), Stop> {
    let file = &parsed.file;
    summary.kv_count = Some(file.header.kv_count);
    summary.tensor_count = Some(file.header.tensor_count);
    if file.header.byte_order == parse::ByteOrder::BigEndian {
        sink.emit(RuleId::ByteOrderBigEndian, 4, || "header.version".into(), || {
            "big-endian file (version field byte-swapped); validated in big-endian order. ggml loads it only on big-endian hosts".into()
        });
    }
    if file.header.version == 2 {
        sink.emit(
            RuleId::VersionTwo,
            4,
            || "header.version".into(),
            || "GGUF v2; current writers produce v3 (same layout)".into(),
        );
    }
    let key_facts = keys::check_kvs(file, sink);
    summary.architecture = key_facts.architecture.clone();
    let tensor_facts = tensors::check_tensors(file, sink);
    summary.parameters = tensor_facts.parameters;
    summary.data_size = tensor_facts.data_size;
    summary.tensor_types = tensor_facts.type_counts.clone();
    if let Some(fatal) = &parsed.fatal {
        let (rule, message) = fatal_message(&fatal.kind);
        sink.emit(rule, fatal.offset, || fatal.path.clone(), || message);
        return Ok(());
    }
    summary.alignment = Some(key_facts.alignment);
    keys::check_required(file, &tensor_facts, sink);
    layout::check_layout(file, &key_facts, &tensor_facts, region, sink, summary)
}

/// Positions, in increasing order, of the items whose key equals the key
/// of an earlier item. Sort-based: one `usize` per item, where a hash set
/// of millions of keys costs several times more memory and rehashes.
pub(crate) fn later_duplicates<T>(items: &[T], key: impl Fn(&T) -> &[u8]) -> Vec<usize> {
    let key_of = |i: usize| items.get(i).map_or(&[][..], &key);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_unstable_by(|&a, &b| key_of(a).cmp(key_of(b)).then(a.cmp(&b)));
    let mut later: Vec<usize> = order
        .windows(2)
        .filter_map(|w| match w {
            [a, b] if key_of(*a) == key_of(*b) => Some(*b),
            _ => None,
        })
        .collect();
    later.sort_unstable();
    later
}

fn fatal_message(kind: &DecodeKind) -> (RuleId, String) {
    match kind {
        DecodeKind::Truncated { what } => (RuleId::FileTruncated, format!("the file ends inside the {what}")),
        DecodeKind::CountExceedsFile { what, count, remaining } => (
            RuleId::CountExceedsFile,
            format!("{what} {count} cannot fit in the {remaining} bytes left after the header"),
        ),
        DecodeKind::StringExceedsFile { len, remaining } => (
            RuleId::StringExceedsFile,
            format!("string length {len} is larger than the {remaining} bytes left in the file"),
        ),
        DecodeKind::ValueTypeUnknown(id) => {
            (RuleId::ValueTypeUnknown, format!("value type {id} is not a GGUF value type (0..=12)"))
        }
        DecodeKind::ArrayElementTypeUnknown(id) => {
            (RuleId::ArrayTypeUnknown, format!("array element type {id} is not a GGUF value type (0..=12)"))
        }
        DecodeKind::ArrayExceedsFile { len, min_elem, remaining } => (
            RuleId::ArrayExceedsFile,
            format!(
                "array of {len} elements (at least {min_elem} bytes each) cannot fit in the {remaining} bytes left"
            ),
        ),
        DecodeKind::ArrayTooDeep => {
            (RuleId::ArrayTooDeep, format!("arrays nested more than {} deep", crate::limits::MAX_ARRAY_DEPTH))
        }
        DecodeKind::DimsExceedFile { n_dims, remaining } => (
            RuleId::DimsExceedFile,
            format!(
                "n_dims {n_dims} needs {} bytes of dims but only {remaining} are left",
                u64::from(*n_dims).saturating_mul(8)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{ByteSource, ReadError, SliceSource};

    /// A source whose bytes past `keep` are gone (a file truncated by
    /// another process after it was opened).
    #[derive(Debug)]
    struct Truncated<'a>(&'a [u8], usize);

    impl ByteSource for Truncated<'_> {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
            SliceSource(self.0.get(..self.1).unwrap_or_default()).read_exact_at(offset, buf)
        }
    }

    fn model(keys: usize) -> Vec<u8> {
        let mut m = crate::write::GgufModel::new();
        m.kv("general.architecture", crate::write::OwnedValue::str("x"));
        for i in 0..keys {
            m.kv(&format!("x.k{i}"), crate::write::OwnedValue::U32(1));
        }
        m.to_bytes()
    }

    #[test]
    fn a_source_validates_like_the_same_bytes_in_memory() {
        // Larger than the first read, so the metadata is read by doubling.
        let bytes = model(80_000);
        assert!(bytes.len() as u64 > limits::METADATA_FIRST_READ);
        let opts = Options::default();
        let v = validate_source(&SliceSource(&bytes), &opts).unwrap();
        assert_eq!(v.report, validate_bytes(&bytes, &opts));
        assert!(v.metadata.len() <= bytes.len());
    }

    #[test]
    fn a_file_that_shrinks_while_its_metadata_is_read_is_an_error() {
        let bytes = model(80_000);
        let e = validate_source(&Truncated(&bytes, 1 << 20), &Options::default()).unwrap_err();
        assert!(matches!(e, ReadError::Shrunk { .. }), "{e}");
    }

    #[test]
    fn padding_past_the_metadata_is_read_in_place() {
        // A data section beyond the first read: its padding is read from the
        // source, not by growing the metadata buffer to the whole file.
        let mut m = crate::write::GgufModel::new();
        m.kv("general.architecture", crate::write::OwnedValue::str("x"));
        let mut t = crate::write::OwnedTensor::zeroed("w", &[(1 << 19) + 1], crate::types::GgmlType::F32).unwrap();
        t.data[0] = 1;
        m.tensor(t);
        m.pad_end = true;
        let mut bytes = m.to_bytes();
        let v = validate_source(&SliceSource(&bytes), &Options::default()).unwrap();
        assert!(v.report.valid, "{:?}", v.report.diagnostics);
        let n = bytes.len();
        bytes[n - 1] = 1; // a non-zero byte in the final padding, 2 MiB in
        let v = validate_source(&SliceSource(&bytes), &Options::default()).unwrap();
        let d: Vec<(&str, u64)> = v.report.diagnostics.iter().map(|d| (d.rule.id(), d.offset)).collect();
        assert_eq!(d, vec![("padding-nonzero", n as u64 - 1)]);
        assert!((v.metadata.len() as u64) <= limits::METADATA_FIRST_READ, "data was not read into memory");
    }
}
