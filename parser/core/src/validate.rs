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

pub use crate::check::Hooks;
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
    read_and_validate(src, opts, Hooks::default())
}

/// [`validate_source`], handing the validation's own parse of a GGUF file
/// to `visit` when it finished (no fatal error): a caller that needs more
/// of the metadata than the report (a hash's tensor ranges, a scan's
/// facts, a model's shapes) takes it from this one parse. Not called for
/// other formats, nor when decoding stopped: the caller parses
/// [`Validated::metadata`] itself then.
pub fn validate_source_visiting(
    src: &dyn ByteSource,
    opts: &Options,
    visit: &mut dyn FnMut(&parse::Parsed<'_>),
) -> Result<Validated, ReadError> {
    read_and_validate(src, opts, Hooks { visit: Some(visit), companions: None })
}

/// [`validate_source`] with [`Hooks`].
pub fn validate_source_with(src: &dyn ByteSource, opts: &Options, hooks: Hooks<'_>) -> Result<Validated, ReadError> {
    read_and_validate(src, opts, hooks)
}

fn read_and_validate(src: &dyn ByteSource, opts: &Options, hooks: Hooks<'_>) -> Result<Validated, ReadError> {
    let Hooks { mut visit, companions } = hooks;
    // A validation that asks for more bytes checks again: the models are
    // looked for once.
    let found = std::cell::OnceCell::new();
    let cached = companions.map(|find| move || found.get_or_init(find).clone());
    let find = cached.as_ref().map(|f| f as &dyn Fn() -> crate::report::Companions);
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
        // (A shorter borrow of the visitor each round.)
        let visit = visit.as_deref_mut().map(|v| v as &mut dyn FnMut(&parse::Parsed<'_>));
        let hooks = Hooks { visit, companions: find };
        match validate_in(&prefix, file_len, Some(src), &spans, opts, hooks) {
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

/// The report of [`validate_source`], for callers that need nothing after
/// it (not the metadata): the same report, for less. Under
/// `--container-only` ([`Options::container_only`]), a local GGUF v2/v3
/// file (a source of [`ByteSource::sized_reads`] without round trips) is
/// read lean: the metadata [`limits::LEAN_READ_CHUNK`] at a time, each
/// large string array (256 strings or more) walked as it streams through
/// one reused buffer, where its lengths, the caps and UTF-8 are checked,
/// and neither it nor the large fixed-size arrays other than bools
/// ([`limits::LEAN_UNREAD_MIN_BYTES`]) copied into memory: nothing of the
/// container's checks reads them. Where the lean read cannot vouch for an
/// array (a string longer than a chunk, invalid UTF-8, a cap, the end of
/// the file, a read error) or the walk gives up, the file is validated by
/// [`validate_source`] instead, so the report is always the one it gives.
pub fn validate_source_report(src: &dyn ByteSource, opts: &Options) -> Result<Report, ReadError> {
    if opts.container_only
        && src.sized_reads()
        && !src.round_trips()
        && let Some(report) = validate_lean(src, opts)?
    {
        return Ok(report);
    }
    validate_source(src, opts).map(|v| v.report)
}

/// The lean read of [`validate_source_report`]: `None` where it cannot go
/// on (the caller validates as [`validate_source`] does).
fn validate_lean(src: &dyn ByteSource, opts: &Options) -> Result<Option<Report>, ReadError> {
    let file_len = src.len();
    let cap = opts.limits.bytes.max(limits::HEADER_SIZE);
    let caps = limits::MetadataLimits { bytes: cap, ..opts.limits };
    let mut prefix = MetadataBytes::default();
    // Pages of the base size: a range never written takes no memory.
    if caps != opts.limits || !prefix.reserve_sparse(file_len.min(cap)) {
        return Ok(None);
    }
    prefix.read_append(src, 0, limits::LEAN_READ_CHUNK.min(file_len).min(cap))?;
    let Detected::Gguf { version: 2.., order } = parse::detect(&prefix) else { return Ok(None) };
    let mut extent = parse::Extent::lean(order, file_len, &caps);
    let mut chunk = Vec::new();
    loop {
        let have = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
        let want = match extent.advance(&prefix) {
            parse::Reach::End(n) => n,
            parse::Reach::Unknown => return Ok(None),
            parse::Reach::Need(n) => match extent.pending_strings() {
                Some((start, len)) => {
                    let Some((end, lengths_or)) = stream_strings(src, &mut chunk, start, len, order, &caps) else {
                        return Ok(None);
                    };
                    // The strings' bytes past those read: left unread.
                    if end > have && !prefix.skip(end.saturating_sub(have)) {
                        return Ok(None);
                    }
                    extent.streamed(end, lengths_or);
                    continue;
                }
                // Past a vocabulary whose scores or token types may come,
                // a chunk on, not as far as the walk projects (their
                // elements are not needed): it asks again.
                None if extent.vocabulary_arrays_ahead() => have.saturating_add(limits::LEAN_READ_CHUNK),
                None => n.max(have.saturating_add(limits::LEAN_READ_CHUNK)),
            },
        };
        let want = want.min(cap).min(file_len);
        if want <= have {
            break;
        }
        if !read_around(src, &mut prefix, have, want, extent.unread())? {
            return Ok(None);
        }
    }
    match validate_in(&prefix, file_len, Some(src), extent.spans(), opts, Hooks::default()) {
        Ok(report) => Ok(Some(report)),
        Err(_) => Ok(None),
    }
}

/// Reads `[from, to)` of `src` onto `prefix` (which holds `from` bytes),
/// leaving the ranges of `unread` (in file order) unread. False where a
/// range cannot be left unread.
fn read_around(
    src: &dyn ByteSource,
    prefix: &mut MetadataBytes,
    from: u64,
    to: u64,
    unread: &[(u64, u64)],
) -> Result<bool, ReadError> {
    let mut at = from;
    for &(start, end) in unread.iter().filter(|(start, end)| *end > from && *start < to) {
        if start > at {
            prefix.read_append(src, at, start.saturating_sub(at))?;
            at = start;
        }
        let past = end.min(to);
        if past > at && !prefix.skip(past.saturating_sub(at)) {
            return Ok(false);
        }
        at = at.max(past);
    }
    if to > at {
        prefix.read_append(src, at, to.saturating_sub(at))?;
    }
    Ok(true)
}

/// Walks the `len` strings of a string array from `start` (its first
/// length field) as they stream through `chunk` ([`limits::LEAN_READ_CHUNK`]
/// bytes, reused): each within the file and the caps, every string valid
/// UTF-8 of at most [`limits::MAX_STRING_LEN`] bytes. A chunk's strings are
/// checked with their length fields in one UTF-8 check when no length has a
/// byte of 0x80 or above (with ASCII between them, the whole is valid
/// exactly when each string is), else in runs between such lengths
/// (`check::strings_valid`). Gives where the array ends and the OR of the
/// lengths; `None` where a string is not so, is longer than a chunk, or a
/// read fails.
fn stream_strings(
    src: &dyn ByteSource,
    chunk: &mut Vec<u8>,
    start: u64,
    len: u64,
    order: parse::ByteOrder,
    caps: &limits::MetadataLimits,
) -> Option<(u64, u64)> {
    let limit = src.len().min(caps.bytes);
    let longest = caps.string_bytes.min(limits::MAX_STRING_LEN);
    let (mut at, mut left, mut or) = (start, len, 0u64);
    while left > 0 {
        let n = usize::try_from(limit.saturating_sub(at).min(limits::LEAN_READ_CHUNK)).ok()?;
        let window = crate::io::placed_window(chunk, at, n);
        src.read_exact_at(at, window).ok()?;
        let (walked, strings, lengths) = match order {
            parse::ByteOrder::LittleEndian => parse::lean_strings::<false>(window, left, longest),
            parse::ByteOrder::BigEndian => parse::lean_strings::<true>(window, left, longest),
        };
        let walked_bytes = window.get(..walked)?;
        let plain = lengths & 0x8080_8080_8080_8080 == 0;
        let valid =
            (plain && simdutf8::basic::from_utf8(walked_bytes).is_ok()) || check::strings_valid(walked_bytes, order);
        if strings == 0 || !valid {
            return None;
        }
        (at, left, or) = (at.saturating_add(u64::try_from(walked).ok()?), left.saturating_sub(strings), or | lengths);
    }
    Some((at, or))
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
    match validate_in(prefix, file_len, None, &[], opts, Hooks::default()) {
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
    hooks: Hooks<'_>,
) -> Result<Report, Stop> {
    let prefix_len = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
    if prefix_len < file_len && prefix_len < limits::HEADER_SIZE {
        return Err(Stop::More(limits::HEADER_SIZE.min(file_len)));
    }
    match parse::detect(prefix) {
        // rwkv.cpp, GGML, GGMF, GGJT (and the `legacy-format` verdict).
        Detected::Legacy { format, version } => {
            let mut report = crate::legacy::validate(prefix, file_len, format, version, opts).map_err(Stop::from)?;
            if opts.want_layout {
                report.layout = Some(Layout { tensors: crate::legacy::data_tensors(prefix), metadata_end: None });
            }
            Ok(report)
        }
        detected => check::gguf(prefix, file_len, detected, source, spans, opts, hooks),
    }
}

pub use crate::data::Layout;

impl Validated {
    /// Where the file's data lies: from the validation's own parse when it
    /// was asked for ([`Options::want_layout`]) and finished, else from a
    /// parse of the metadata read.
    pub fn take_layout(&mut self, file_len: u64) -> Layout {
        self.report.layout.take().unwrap_or_else(|| layout(&self.metadata, file_len))
    }
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

/// What a projector, LoRA adapter or control vector is checked against in
/// the model read through `src` (named `name` in messages): its metadata is
/// read as [`validate_source`] reads it (under `opts`' caps, container
/// checks only) and parsed. `None` when the file is not a model llama.cpp
/// loads (another projector or adapter, no tensors, not GGUF).
pub fn model_facts(
    src: &dyn ByteSource,
    name: &str,
    opts: &Options,
) -> Result<Option<crate::report::ModelFacts>, ReadError> {
    let opts = Options {
        container_only: true,
        companions: crate::report::Companions::default(),
        want_layout: false,
        ..opts.clone()
    };
    let mut visited = None;
    let validated = validate_source_visiting(src, &opts, &mut |parsed| {
        visited = Some(crate::check::model_facts(&parsed.file, name));
    })?;
    if let Some(facts) = visited {
        return Ok(facts);
    }
    // Not GGUF, or decoding stopped under the caps: a parse without them.
    let Some(parsed) = parse::parse_prefix(validated.metadata.as_slice(), src.len()) else { return Ok(None) };
    if parsed.fatal.is_some() {
        return Ok(None);
    }
    Ok(crate::check::model_facts(&parsed.file, name))
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
    fn metadata_on_the_heap_lands_where_a_copy_of_it_is_not_slow() {
        // About 70 KB, 150 KB and 840 KB: the last two in buffers the
        // allocator maps, 16 bytes into a page, where they would be slow.
        for keys in [3_000, 6_500, 35_000] {
            let mut m = crate::write::GgufModel::new();
            m.kv("general.architecture", crate::write::OwnedValue::str("plain"));
            for i in 0..keys {
                m.kv(&format!("x.k{i}"), crate::write::OwnedValue::U32(1));
            }
            let bytes = m.to_bytes();
            assert!((bytes.len() as u64) < limits::PAGED_METADATA_MIN);
            let src = Counting(&bytes, Default::default(), Default::default());
            let v = validate_source(&src, &Options::default()).unwrap();
            assert!(!v.metadata.is_paged());
            let ahead = v.metadata.as_ptr().addr() % 4096;
            assert!(ahead == 0 || ahead >= crate::io::READ_SLACK, "{keys} keys: {ahead} bytes past its place");
            assert_eq!(&v.metadata[..], &bytes[..]);
            assert_eq!(v.report, validate_bytes(&bytes, &Options::default()));
            assert_eq!(v.metadata.into_vec(), bytes);
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

    /// A vocabulary of `n` tokens (with `odd`, the token of that index has
    /// that text), its scores and token types, a large bool array (one
    /// bool of 2), a small array, a tensor.
    fn vocabulary(n: u32, odd: Option<(u32, Vec<u8>)>, order: parse::ByteOrder) -> Vec<u8> {
        use crate::types::ValueType as T;
        use crate::write::OwnedValue as V;
        let mut m = crate::write::GgufModel::new();
        m.order = order;
        m.kv("general.architecture", V::str("llama"));
        m.kv("tokenizer.ggml.model", V::str("llama"));
        let tokens = (0..n)
            .map(|i| match &odd {
                Some((at, text)) if *at == i => V::String(text.clone()),
                _ => V::str(&format!("tök{i}")),
            })
            .collect();
        m.kv("tokenizer.ggml.tokens", V::Array(T::String, tokens));
        m.kv("tokenizer.ggml.scores", V::Array(T::F32, (0..n).map(|i| V::F32(i as f32)).collect()));
        m.kv("tokenizer.ggml.token_type", V::Array(T::I32, (0..n).map(|_| V::I32(1)).collect()));
        m.kv("x.flags", V::Array(T::Bool, (0..70_000).map(|i| V::Bool(if i == 69_999 { 2 } else { 0 })).collect()));
        m.kv("x.small", V::Array(T::U8, vec![V::U8(1); 10]));
        m.tensor(crate::write::OwnedTensor::zeroed("w", &[64], crate::types::GgmlType::F32).unwrap());
        m.to_bytes()
    }

    fn container_only() -> Options {
        Options { container_only: true, ..Options::default() }
    }

    #[test]
    fn a_lean_read_gives_the_report_of_the_whole_metadata_reading_less() {
        for order in [parse::ByteOrder::LittleEndian, parse::ByteOrder::BigEndian] {
            let n = 100_000;
            let bytes = vocabulary(n, None, order);
            let opts = container_only();
            let src = Counting(&bytes, Default::default(), Default::default());
            let lean = validate_lean(&src, &opts).unwrap().expect("read lean");
            let whole = validate_source(&SliceSource(&bytes), &opts).unwrap();
            assert_eq!(lean, whole.report);
            assert_eq!(validate_source_report(&SliceSource(&bytes), &opts).unwrap(), whole.report);
            // The bool array's finding is there: it was read.
            let rules: Vec<&str> = lean.diagnostics.iter().map(|d| d.rule.id()).collect();
            assert!(rules.contains(&"bool-value"), "{rules:?}");
            // The scores and token types (4 bytes a token each) were not
            // read, but for a chunk of each (read before the walk saw them);
            // the tokens were (the first chunk twice, a chunk past them).
            let read = src.2.load(std::sync::atomic::Ordering::Relaxed);
            let unread = 2 * 4 * u64::from(n);
            assert!(read <= whole.metadata.len() as u64 - unread + 4 * limits::LEAN_READ_CHUNK, "read {read}");
            assert!(read >= whole.metadata.len() as u64 - unread, "read {read}");
        }
    }

    #[test]
    fn what_a_lean_read_cannot_vouch_for_is_read_whole_with_the_same_report() {
        let order = parse::ByteOrder::LittleEndian;
        let cases: Vec<(&str, Vec<u8>, Options)> = vec![
            ("invalid UTF-8", vocabulary(20_000, Some((15_000, b"a\xffb".to_vec())), order), container_only()),
            (
                "a string longer than a chunk",
                vocabulary(20_000, Some((15_000, vec![b'a'; 70_000])), order),
                container_only(),
            ),
            (
                "a string over the cap",
                vocabulary(20_000, Some((15_000, vec![b'a'; 5000])), order),
                Options {
                    limits: limits::MetadataLimits { string_bytes: 4096, ..limits::MetadataLimits::DEFAULT },
                    ..container_only()
                },
            ),
            (
                "the metadata cap inside the vocabulary",
                vocabulary(20_000, None, order),
                Options {
                    limits: limits::MetadataLimits { bytes: 100_000, ..limits::MetadataLimits::DEFAULT },
                    ..container_only()
                },
            ),
        ];
        // A token of 200 bytes (a length byte of 0xc8): checked one string
        // at a time, still lean; with invalid UTF-8 in it, not.
        let mut long = vec![b'a'; 200];
        let bytes = vocabulary(20_000, Some((15_000, long.clone())), order);
        let opts = container_only();
        let lean = validate_lean(&SliceSource(&bytes), &opts).unwrap().expect("read lean");
        assert_eq!(lean, validate_source(&SliceSource(&bytes), &opts).unwrap().report);
        long[150] = 0xff;
        let bytes = vocabulary(20_000, Some((15_000, long)), order);
        assert!(validate_lean(&SliceSource(&bytes), &opts).unwrap().is_none());
        let whole = validate_source(&SliceSource(&bytes), &opts).unwrap().report;
        assert!(whole.diagnostics.iter().any(|d| d.rule.id() == "string-utf8"));
        for (what, bytes, opts) in cases {
            assert!(validate_lean(&SliceSource(&bytes), &opts).unwrap().is_none(), "{what}: not lean");
            let whole = validate_source(&SliceSource(&bytes), &opts).unwrap().report;
            assert_eq!(validate_source_report(&SliceSource(&bytes), &opts).unwrap(), whole, "{what}");
        }
        // Cut short: inside the vocabulary, the scores, the tensor infos.
        let bytes = vocabulary(20_000, None, order);
        let n = bytes.len();
        for cut in [200_000, 300_000, n - 20, n - 300] {
            let opts = container_only();
            let cut_bytes = &bytes[..cut];
            let whole = validate_source(&SliceSource(cut_bytes), &opts).unwrap().report;
            assert_eq!(validate_source_report(&SliceSource(cut_bytes), &opts).unwrap(), whole, "cut at {cut}");
        }
        // Not container-only, or in memory without sized reads: as before.
        let bytes = vocabulary(20_000, None, order);
        let full = Options::default();
        assert_eq!(
            validate_source_report(&SliceSource(&bytes), &full).unwrap(),
            validate_source(&SliceSource(&bytes), &full).unwrap().report
        );
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
