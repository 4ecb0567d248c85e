//! The validator's entry points, and the one place that dispatches on the
//! format: GGUF goes to [`crate::check`], rwkv.cpp and the formats GGUF
//! replaced go to [`crate::legacy`].
//!
//! [`validate_source`] validates a file read through a [`ByteSource`] (the
//! CLI: the metadata is read into memory, to its end as a walk of it says
//! or by doubling reads, padding is read in place), [`validate_bytes`] a whole file in memory, and
//! [`validate_prefix`] a prefix of a file of known length (it asks for more
//! bytes when the metadata, or a padding region, runs past the prefix).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::check::{self, Stop};
use crate::io::{ByteSource, MetadataBytes, ReadError};
use crate::limits;
use crate::parse::{self, Detected};
use crate::report::{FileFormat, Options, Report, Sink, Summary};
use crate::rules::RuleId;

pub use crate::parse::NeedMoreData;

/// A validated file: the report and the metadata bytes that were read
/// (the file's first `metadata.len()` bytes), which later steps such as
/// `--check-data` parse again instead of reading the file twice.
#[derive(Debug)]
pub struct Validated {
    /// The report.
    pub report: Report,
    /// A prefix of the file holding all of its metadata.
    pub metadata: MetadataBytes,
}

/// Validates a file read through `src`: reads its metadata with positioned
/// reads, starting with [`ByteSource::first_read`] bytes
/// ([`limits::METADATA_FIRST_READ`] for a file), then to the end of the
/// metadata as a walk of it says ([`ByteSource::sized_reads`]) or doubling
/// while the parser asks for more (never past the file), and reads padding
/// and gaps in place in chunks. Memory follows the metadata, not the file.
///
/// Formats that interleave headers and data (rwkv.cpp, GGML, GGMF, GGJT)
/// are read whole, up to [`limits::MAX_LEGACY_FILE_BYTES`].
pub fn validate_source(src: &dyn ByteSource, opts: &Options) -> Result<Validated, ReadError> {
    let file_len = src.len();
    // Never more than the metadata cap, whatever the file declares (the
    // parser stops at the cap with `metadata-limit`).
    let cap = opts.limits.bytes.max(limits::HEADER_SIZE);
    let first = src.first_read().max(1).min(file_len).min(cap);
    let mut prefix = MetadataBytes::default();
    if src.sized_reads() && first >= limits::PAGED_METADATA_MIN {
        prefix.reserve_pages(file_len.min(cap));
    }
    prefix.read_append(src, 0, first)?;
    let caps = limits::MetadataLimits { bytes: cap, ..opts.limits };
    let mut spans = Vec::new();
    if src.sized_reads() || src.round_trips() {
        spans = read_to_extent(src, &mut prefix, &caps)?;
    }
    if caps != opts.limits {
        // Walked under other caps: the parser walks every array itself.
        spans.clear();
    }
    loop {
        match validate_in(&prefix, file_len, Some(src), &spans, opts) {
            Ok(report) => return Ok(Validated { report, metadata: prefix }),
            Err(Stop::Read(e)) => return Err(e),
            Err(Stop::More(want)) => {
                let have = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
                let mut next = want.max(have.saturating_mul(2)).min(file_len);
                if !matches!(parse::detect(&prefix), Detected::Legacy { .. }) {
                    next = next.min(cap);
                }
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
                prefix.read_append(src, have, u64::try_from(to.saturating_sub(from)).unwrap_or(u64::MAX))?;
            }
        }
    }
}

/// Reads the rest of a GGUF v2/v3 file's metadata onto `prefix`, as far as
/// a walk of it ([`parse::Extent`]) says it reaches, and no further than
/// the metadata cap or the file: a few reads, each walked once, so the metadata is
/// parsed once. Where the walk cannot say, the bytes are left as they are
/// and the caller reads by doubling while the parser asks.
fn read_to_extent(
    src: &dyn ByteSource,
    prefix: &mut MetadataBytes,
    caps: &limits::MetadataLimits,
) -> Result<Vec<parse::StringSpan>, ReadError> {
    let (file_len, cap) = (src.len(), caps.bytes);
    let Detected::Gguf { version: 2.., order } = parse::detect(prefix) else { return Ok(Vec::new()) };
    let mut extent = parse::Extent::new(order, file_len, caps);
    let round_trips = src.round_trips();
    loop {
        let have = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
        let want = match extent.advance(prefix) {
            // Past the end by the bytes a scan of the padding reads, so a
            // remote file needs no request for them.
            parse::Reach::End(n) if round_trips => n.saturating_add(limits::DEFAULT_ALIGNMENT),
            parse::Reach::End(n) => n,
            // As far as the walk projects the metadata to reach.
            parse::Reach::Need(n) if round_trips => {
                extent.projection(n).max(have.saturating_add(limits::METADATA_MIN_STEP))
            }
            // At least 64 KiB more: a few reads, not one per small item.
            parse::Reach::Need(n) => n.max(have.saturating_add(limits::METADATA_MIN_STEP)),
            // The arrays walked before the walk gave up are still sound.
            parse::Reach::Unknown => return Ok(extent.spans().to_vec()),
        };
        let want = want.min(cap).min(file_len);
        if want <= have {
            return Ok(extent.spans().to_vec());
        }
        prefix.read_append(src, have, want.saturating_sub(have))?;
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
    match validate_in(prefix, file_len, None, &[], opts) {
        Ok(r) => Ok(r),
        Err(Stop::More(n)) => Err(NeedMoreData(n)),
        // Without a source nothing is read, so this cannot happen; asking
        // for the whole file is the safe answer.
        Err(Stop::Read(_)) => Err(NeedMoreData(file_len)),
    }
}

/// [`validate_prefix`], reading what lies past the prefix from `source`
/// when there is one: the format dispatch.
fn validate_in(
    prefix: &[u8],
    file_len: u64,
    source: Option<&dyn ByteSource>,
    spans: &[parse::StringSpan],
    opts: &Options,
) -> Result<Report, Stop> {
    let prefix_len = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
    if prefix_len < file_len && prefix_len < limits::HEADER_SIZE {
        return Err(Stop::More(limits::HEADER_SIZE.min(file_len)));
    }
    match parse::detect(prefix) {
        // rwkv.cpp, GGML, GGMF, GGJT (and the `legacy-format` verdict).
        Detected::Legacy { format, version } => {
            crate::legacy::validate(prefix, file_len, format, version, opts).map_err(Stop::from)
        }
        detected => check::gguf(prefix, file_len, detected, source, spans, opts),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SliceSource;

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
        m.kv("general.architecture", crate::write::OwnedValue::str("plain"));
        for i in 0..keys {
            m.kv(&format!("x.k{i}"), crate::write::OwnedValue::U32(1));
        }
        m.to_bytes()
    }

    #[test]
    fn a_source_validates_like_the_same_bytes_in_memory() {
        // Larger than the first read, so the metadata is read by doubling.
        let bytes = model(300_000);
        assert!(bytes.len() as u64 > limits::METADATA_FIRST_READ);
        let opts = Options::default();
        let v = validate_source(&SliceSource(&bytes), &opts).unwrap();
        assert_eq!(v.report, validate_bytes(&bytes, &opts));
        assert!(v.metadata.len() <= bytes.len());
    }

    /// A source that counts what it reads.
    #[derive(Debug)]
    struct Counting<'a>(&'a [u8], std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64);

    impl ByteSource for Counting<'_> {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn sized_reads(&self) -> bool {
            true
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.2.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
            SliceSource(self.0).read_exact_at(offset, buf)
        }
    }

    #[test]
    fn a_local_source_reads_the_metadata_to_its_end_and_no_further() {
        let mut m = crate::write::GgufModel::new();
        m.kv("general.architecture", crate::write::OwnedValue::str("plain"));
        for i in 0..300_000 {
            m.kv(&format!("x.k{i}"), crate::write::OwnedValue::U32(1));
        }
        m.tensor(crate::write::OwnedTensor::zeroed("w", &[1 << 22], crate::types::GgmlType::F32).unwrap());
        let bytes = m.to_bytes();
        let end = parse::parse_bytes(&bytes).unwrap().file.infos_end;
        assert!(end > limits::METADATA_FIRST_READ && (bytes.len() as u64) > 2 * end);
        let src = Counting(&bytes, Default::default(), Default::default());
        let opts = Options { limits: limits::MetadataLimits::with_total(2 << 30), ..Options::default() };
        let v = validate_source(&src, &opts).unwrap();
        // A first read of 4 MiB goes into pages (huge ones where the
        // system has them), holding the file's bytes as the heap would.
        assert!(cfg!(not(target_os = "linux")) || v.metadata.is_paged());
        assert_eq!(&v.metadata[..], &bytes[..v.metadata.len()]);
        assert!(!v.report.diagnostics.iter().any(|d| d.rule.id() == "metadata-limit"));
        assert_eq!(v.report, validate_bytes(&bytes, &opts));
        let read = src.2.load(std::sync::atomic::Ordering::Relaxed);
        assert!(read >= end && read <= end + limits::METADATA_MIN_STEP, "read {read} bytes of a metadata of {end}");
        assert!(src.1.load(std::sync::atomic::Ordering::Relaxed) <= 8, "a few reads");
    }

    #[test]
    fn a_vocabulary_the_extent_walked_is_stepped_over_with_the_same_report() {
        // Duplicate and malformed tokens (findings inside the stepped-over
        // array), a vocabulary past the first read: the report of the
        // source (walked once) equals that of the bytes (parsed alone).
        let mut m = crate::write::GgufModel::new();
        m.kv("general.architecture", crate::write::OwnedValue::str("llama"));
        m.kv("tokenizer.ggml.model", crate::write::OwnedValue::str("llama"));
        let tokens = (0..400_000u32)
            .map(|i| match i {
                7 | 300_007 => crate::write::OwnedValue::str("dup"),
                9 => crate::write::OwnedValue::str("<0xZZ>"),
                _ => crate::write::OwnedValue::str(&format!("tok{i}")),
            })
            .collect();
        m.kv("tokenizer.ggml.tokens", crate::write::OwnedValue::Array(crate::types::ValueType::String, tokens));
        let bytes = m.to_bytes();
        assert!(bytes.len() as u64 > limits::METADATA_FIRST_READ);
        let src = Counting(&bytes, Default::default(), Default::default());
        let opts = Options::default();
        let v = validate_source(&src, &opts).unwrap();
        assert_eq!(v.report, validate_bytes(&bytes, &opts));
        let rules: Vec<&str> = v.report.diagnostics.iter().map(|d| d.rule.id()).collect();
        assert!(rules.contains(&"tokenizer-duplicate-token") && rules.contains(&"tokenizer-byte-token"), "{rules:?}");
    }

    #[test]
    fn a_file_that_shrinks_while_its_metadata_is_read_is_an_error() {
        let bytes = model(300_000);
        let e = validate_source(&Truncated(&bytes, 1 << 20), &Options::default()).unwrap_err();
        assert!(matches!(e, ReadError::Shrunk { .. }), "{e}");
    }

    #[test]
    fn padding_past_the_metadata_is_read_in_place() {
        // A data section beyond the first read: its padding is read from the
        // source, not by growing the metadata buffer to the whole file.
        let mut m = crate::write::GgufModel::new();
        m.kv("general.architecture", crate::write::OwnedValue::str("plain"));
        let mut t = crate::write::OwnedTensor::zeroed("w", &[(1 << 21) + 1], crate::types::GgmlType::F32).unwrap();
        t.data[0] = 1;
        m.tensor(t);
        m.pad_end = true;
        let mut bytes = m.to_bytes();
        let v = validate_source(&SliceSource(&bytes), &Options::default()).unwrap();
        assert!(v.report.valid, "{:?}", v.report.diagnostics);
        let n = bytes.len();
        bytes[n - 1] = 1; // a non-zero byte in the final padding, 8 MiB in
        let v = validate_source(&SliceSource(&bytes), &Options::default()).unwrap();
        let d: Vec<(&str, u64)> = v
            .report
            .diagnostics
            .iter()
            .filter(|d| d.severity != crate::rules::Level::Info)
            .map(|d| (d.rule.id(), d.offset))
            .collect();
        assert_eq!(d, vec![("padding-nonzero", n as u64 - 1)]);
        assert!((v.metadata.len() as u64) <= limits::METADATA_FIRST_READ, "data was not read into memory");
    }
}

/// Where a validated file's tensor data lies and where its metadata ends,
/// from the metadata [`validate_source`] read: the one format dispatch
/// after validation (GGUF, else the legacy formats, which interleave
/// headers and data), one parse for everything a later step needs.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// The tensors whose data can be read ([`crate::data::gguf_tensors`],
    /// [`crate::legacy::data_tensors`]).
    pub tensors: Vec<crate::data::DataTensor>,
    /// The end of a GGUF file's tensor infos (what a metadata hash covers).
    pub metadata_end: Option<u64>,
}

/// The [`Layout`] of a file of `file_len` bytes whose metadata is `metadata`.
pub fn layout(metadata: &[u8], file_len: u64) -> Layout {
    match parse::parse_prefix(metadata, file_len) {
        Some(parsed) => {
            Layout { tensors: crate::data::gguf_tensors(&parsed, file_len), metadata_end: Some(parsed.file.infos_end) }
        }
        None => Layout { tensors: crate::legacy::data_tensors(metadata), metadata_end: None },
    }
}
