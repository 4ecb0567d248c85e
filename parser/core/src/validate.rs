//! The validator: [`Validator`], configured once per run, validates a
//! file through any [`ByteSource`] into one [`Validated`] (the report under
//! every profile asked, the metadata read, the validation's own parse)
//! that every later step reads. This is also the one place that
//! dispatches on the format: GGUF goes to [`crate::check`], rwkv.cpp and
//! the formats GGUF replaced go to [`crate::legacy`].
//!
//! ```
//! use gguf_validate_core::{Options, Profile, Validator};
//! use gguf_validate_core::io::SliceSource;
//!
//! let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/samples/tiny-llama.gguf")).unwrap();
//! let validator = Validator::new(Options::new(Profile::Strict)).with_every_profile(true);
//! let validated = validator.validate(&SliceSource(&bytes)).unwrap();
//! assert!(validated.report.valid);
//! assert_eq!(validated.profiles.len(), 3);
//! // The validation's own parse, for a step after the report.
//! let parsed = validated.parsed().unwrap();
//! assert_eq!(parsed.file.tensors.len(), validated.layout().tensors.len());
//! ```
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::check::{self, Checked, Stop};
use crate::io::{ByteSource, MetadataBytes, ReadError, SliceSource};
use crate::limits;
use crate::llama_cpp::Releases;
use crate::loader::Loader;
use crate::parse::{self, Detected, KeptParse, Parsed};
use crate::report::{Companions, FileFormat, Judging, ModelFacts, Options, Report, Sink, Summary};
use crate::rules::{Level, Profile, RuleId};

pub use crate::data::Layout;
pub use crate::parse::NeedMoreData;

/// What every file of a run is validated with, built once: the options
/// (profile, levels, limits, container only), whether one pass judges
/// every profile, the models a projector, adapter or control vector is
/// paired with, and whether anything after the report is needed.
///
/// [`Validator::validate`] is the one entry point; every front end and
/// every command (the pipeline, `dump`, `hash`, `derive`, the hub scan, the
/// Python and WebAssembly bindings) calls it and reads what it needs from
/// the [`Validated`] it returns.
#[derive(Clone, Debug, Default)]
pub struct Validator {
    options: Options,
    every_profile: bool,
    companions: Companions,
    report_only: bool,
    releases: Option<Releases>,
    loader: Option<Loader>,
}

/// The levels a loader set with `--loader` gives the rules of the other
/// diffusion loader: judged for ComfyUI-GGUF, its refusals are errors and
/// stable-diffusion.cpp's warnings (the catalogue's levels are the other
/// way round).
fn loader_levels(loader: Option<Loader>) -> Vec<(RuleId, Level)> {
    match loader {
        Some(Loader::ComfyuiGguf) => vec![
            (RuleId::DiffusionVersionUnknown, Level::Warning),
            (RuleId::DiffusionCrash, Level::Warning),
            (RuleId::DiffusionTensorMissing, Level::Warning),
            (RuleId::DiffusionTensorShape, Level::Warning),
            (RuleId::ComfyuiArchitecture, Level::Error),
            (RuleId::ComfyuiKeyType, Level::Error),
            (RuleId::ComfyuiOrigShape, Level::Error),
        ],
        // the NumPy fallback is slow, not a refusal: its level stays
        _ => Vec::new(),
    }
}

impl From<Options> for Validator {
    fn from(options: Options) -> Validator {
        Validator::new(options)
    }
}

impl Validator {
    /// A validator judging under `options`: one profile, no models to
    /// pair with, the metadata and parse kept for the steps after the report.
    pub fn new(options: Options) -> Validator {
        Validator { options, ..Validator::default() }
    }

    /// Judge one pass under every profile: [`Validated::profiles`] holds
    /// each profile's report, equal to what a validator of that profile
    /// alone gives, from one read and one parse.
    #[must_use]
    pub fn with_every_profile(self, every_profile: bool) -> Validator {
        Validator { every_profile, ..self }
    }

    /// The models a projector, LoRA adapter or control vector is checked
    /// against (`--with MODEL`, read beforehand).
    #[must_use]
    pub fn with_companions(self, companions: Companions) -> Validator {
        Validator { companions, ..self }
    }

    /// Judge `strict` against these llama.cpp releases (`--llama-cpp R`,
    /// `R..`) besides the pinned tree the tables come from: a release that
    /// does not know the file's architecture, tokenizer, pre-tokenizer,
    /// projector type or a tensor's type refuses it (`llama-cpp-release`).
    /// None: the pinned tree alone.
    #[must_use]
    pub fn with_llama_cpp(self, releases: Option<Releases>) -> Validator {
        Validator { releases, ..self }
    }

    /// The llama.cpp releases judged against, when asked for.
    pub fn llama_cpp(&self) -> Option<Releases> {
        self.releases
    }

    /// Judge every file against this loader (`--loader`); None: each file
    /// against the loader it is for ([`crate::loader`]). Judged for
    /// ComfyUI-GGUF, its refusals are errors and stable-diffusion.cpp's
    /// warnings; for stable-diffusion.cpp, the other way round; for
    /// llama.cpp, a diffusion model is a model llama.cpp does not know.
    #[must_use]
    pub fn with_loader(self, loader: Option<Loader>) -> Validator {
        let mut options = self.options.clone();
        // the loader's levels first (in place of the previous loader's):
        // the caller's overrides stay above them
        let mut overrides = loader_levels(loader);
        overrides.extend(self.options.overrides.iter().skip(loader_levels(self.loader).len()).copied());
        options.overrides = overrides;
        Validator { loader, options, ..self }
    }

    /// The loader set with [`Validator::with_loader`], if any.
    pub fn loader(&self) -> Option<Loader> {
        self.loader
    }

    /// Nothing after the report is needed: [`Validated`] keeps neither
    /// the metadata nor the parse, and under [`Options::container_only`] a
    /// local GGUF v2/v3 file is read lean (the large arrays of its metadata
    /// walked as they stream through one buffer, not held): the same
    /// report, for less.
    #[must_use]
    pub fn report_only(self, report_only: bool) -> Validator {
        Validator { report_only, ..self }
    }

    /// The same validator with `levels` applied before its own overrides
    /// (a config's levels for one path, which the command line's override).
    #[must_use]
    pub fn with_levels_first(&self, levels: Vec<(RuleId, Level)>) -> Validator {
        let mut v = self.clone();
        // the loader's levels, then `levels`, then the caller's own
        let ours = loader_levels(self.loader);
        let mut overrides = ours.clone();
        overrides.extend(levels);
        overrides.extend(self.options.overrides.iter().skip(ours.len()).copied());
        v.options.overrides = overrides;
        v
    }

    /// The options files are judged with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Whether one pass judges every profile.
    pub fn judges_every_profile(&self) -> bool {
        self.every_profile
    }

    /// Whether nothing after the report is kept ([`Validator::report_only`]).
    pub fn is_report_only(&self) -> bool {
        self.report_only
    }

    fn judging<'a>(&'a self, find: Option<&'a dyn Fn() -> Companions>) -> Judging<'a> {
        Judging {
            options: &self.options,
            every_profile: self.every_profile,
            companions: &self.companions,
            find_companions: find,
            releases: self.releases,
            loader: self.loader,
        }
    }

    /// Validates a file read through `src`: reads its metadata with
    /// positioned reads, starting with [`ByteSource::first_read`] bytes
    /// ([`limits::METADATA_FIRST_READ`] for a file), then to the end of the
    /// metadata as a walk of it says ([`ByteSource::sized_reads`]) or
    /// doubling while the parser asks for more (never past the file or the
    /// metadata cap), and reads padding and gaps in place in chunks. Memory
    /// follows the metadata, not the file.
    ///
    /// Formats that interleave headers and data (rwkv.cpp, GGML, GGMF,
    /// GGJT) are read whole, up to [`limits::MAX_LEGACY_FILE_BYTES`].
    pub fn validate(&self, src: &dyn ByteSource) -> Result<Validated, ReadError> {
        self.validate_pairing(src, None)
    }

    /// [`Validator::validate`], where the models a projector, adapter or
    /// control vector pairs with are found by `find` when its checks reach
    /// the pairing (at most once, and never for another kind of file) and
    /// the validator was given none: the pipeline looks for them so, and
    /// the file is validated once, with them.
    pub fn validate_pairing(
        &self,
        src: &dyn ByteSource,
        find: Option<&dyn Fn() -> Companions>,
    ) -> Result<Validated, ReadError> {
        if self.report_only
            && self.options.container_only
            && src.sized_reads()
            && !src.round_trips()
            && let Some((report, profiles)) = validate_lean(src, self.judging(None))?
        {
            let file_len = src.len();
            return Ok(Validated { report, profiles, metadata: MetadataBytes::default(), parse: None, file_len });
        }
        // A validation that asks for more bytes checks again: the models are
        // looked for once.
        let found = std::cell::OnceCell::new();
        let cached = find.map(|f| move || found.get_or_init(f).clone());
        let find = cached.as_ref().map(|f| f as &dyn Fn() -> Companions);
        let mut v = read_and_validate(src, self.judging(find))?;
        if self.report_only {
            v.metadata = MetadataBytes::default();
            v.parse = None;
        }
        Ok(v)
    }

    /// Validates a whole file held in memory: [`Validator::validate`] of
    /// the bytes as a source (which cannot fail to read).
    pub fn validate_bytes(&self, bytes: &[u8]) -> Validated {
        match self.validate(&SliceSource(bytes)) {
            Ok(v) => v,
            // Cannot happen in memory; report it as a truncation rather
            // than panic.
            Err(_) => {
                let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                let mut sink = Sink::new(&self.options);
                sink.emit(RuleId::FileTruncated, len, String::new, || "file ends early".into());
                let summary = Summary { file_size: len, ..Summary::default() };
                let report = sink.finish(self.options.profile, FileFormat::Gguf, None, None, summary);
                Validated {
                    report,
                    profiles: Vec::new(),
                    metadata: MetadataBytes::default(),
                    parse: None,
                    file_len: len,
                }
            }
        }
    }

    /// Validates a file of `file_len` bytes of which `prefix` holds the
    /// first `prefix.len()`, reading nothing else. When the prefix is too
    /// short, returns how many bytes to supply; the same call with more
    /// bytes gives the same report as with the whole file.
    pub fn validate_prefix(&self, prefix: &[u8], file_len: u64) -> Result<Validated, NeedMoreData> {
        match validate_in(prefix, file_len, None, &[], self.judging(None)) {
            Ok(checked) => {
                let metadata = MetadataBytes::from_vec(if self.report_only { Vec::new() } else { prefix.to_vec() });
                let parse = checked.parse.filter(|_| !self.report_only);
                Ok(Validated { report: checked.report, profiles: checked.profiles, metadata, parse, file_len })
            }
            Err(Stop::More(n)) => Err(NeedMoreData(n)),
            // Without a source nothing is read, so this cannot happen;
            // asking for the whole file is the safe answer.
            Err(Stop::Read(_)) => Err(NeedMoreData(file_len)),
        }
    }
}

/// A validated file: what [`Validator::validate`] gives, and what every
/// step after the report reads instead of reading or parsing the file
/// again.
#[derive(Debug)]
pub struct Validated {
    /// The report, under the validator's profile.
    pub report: Report,
    /// Judging every profile ([`Validator::with_every_profile`]): the
    /// report of each, in [`Profile::ALL`] order; empty otherwise.
    pub profiles: Vec<Report>,
    /// A prefix of the file holding all of its metadata (empty for a
    /// [`Validator::report_only`] validation).
    pub metadata: MetadataBytes,
    /// The validation's own parse of `metadata` (a GGUF v2/v3 file).
    parse: Option<KeptParse>,
    /// The file's length.
    file_len: u64,
}

impl Validated {
    /// The report under `profile`: the report itself, or, judging every
    /// profile, that profile's.
    pub fn report_under(&self, profile: Profile) -> Option<&Report> {
        if self.report.profile == profile {
            return Some(&self.report);
        }
        self.profiles.iter().find(|r| r.profile == profile)
    }

    /// The validation's own parse of a GGUF v2/v3 file's metadata, also
    /// when decoding stopped early ([`Parsed::fatal`] says where): no
    /// walk of the bytes (the parse's records are kept beside them).
    /// `None` for another format, a header that is not read, or a
    /// [`Validator::report_only`] validation.
    pub fn parsed(&self) -> Option<Parsed<'_>> {
        self.parse.as_ref()?.parsed(self.metadata.as_slice())
    }

    /// The file's length.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Where the file's tensor data lies: from the validation's parse, or
    /// for the formats GGUF replaced from their tensors as read.
    pub fn layout(&self) -> Layout {
        match self.parsed() {
            Some(parsed) => Layout {
                tensors: crate::data::gguf_tensors(&parsed, self.file_len),
                metadata_end: Some(parsed.file.infos_end),
            },
            None => Layout { tensors: crate::legacy::data_tensors(&self.metadata), metadata_end: None },
        }
    }

    /// What a projector, LoRA adapter or control vector is checked against
    /// in this file (named `name` in messages), from its parse. `None`
    /// when the file is not a model llama.cpp loads (another projector or
    /// adapter, no tensors, not GGUF, decoding stopped).
    pub fn model_facts(&self, name: &str) -> Option<ModelFacts> {
        let parsed = self.parsed()?;
        if parsed.fatal.is_some() {
            return None;
        }
        check::model_facts(&parsed.file, name)
    }
}

fn read_and_validate(src: &dyn ByteSource, judging: Judging<'_>) -> Result<Validated, ReadError> {
    let opts = judging.options;
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
        match validate_in(&prefix, file_len, Some(src), &spans, judging) {
            Ok(Checked { report, profiles, parse }) => {
                return Ok(Validated { report, profiles, metadata: prefix, parse, file_len });
            }
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

/// The lean read of a [`Validator::report_only`] validation under
/// `--container-only` of a local file: the metadata
/// [`limits::LEAN_READ_CHUNK`] at a time, each large string array (256
/// strings or more) walked as it streams through one reused buffer, where
/// its lengths, the caps and UTF-8 are checked, and neither it nor the
/// large fixed-size arrays other than bools
/// ([`limits::LEAN_UNREAD_MIN_BYTES`]) copied into memory: nothing of the
/// container's checks reads them. `None` where it cannot vouch for an
/// array (a string longer than a chunk, invalid UTF-8, a cap, the end of
/// the file, a read error) or the walk gives up: the caller reads the
/// metadata whole, so the report is always the one that gives.
fn validate_lean(src: &dyn ByteSource, judging: Judging<'_>) -> Result<Option<(Report, Vec<Report>)>, ReadError> {
    let opts = judging.options;
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
    match validate_in(&prefix, file_len, Some(src), extent.spans(), judging) {
        Ok(checked) => Ok(Some((checked.report, checked.profiles))),
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

/// Validates a file of `file_len` bytes of which `prefix` holds the first
/// `prefix.len()`, reading what lies past the prefix from `source` when
/// there is one: the format dispatch.
fn validate_in(
    prefix: &[u8],
    file_len: u64,
    source: Option<&dyn ByteSource>,
    spans: &[parse::StringSpan],
    judging: Judging<'_>,
) -> Result<Checked, Stop> {
    let prefix_len = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
    if prefix_len < file_len && prefix_len < limits::HEADER_SIZE {
        return Err(Stop::More(limits::HEADER_SIZE.min(file_len)));
    }
    match parse::detect(prefix) {
        // rwkv.cpp, GGML, GGMF, GGJT (and the `legacy-format` verdict).
        Detected::Legacy { format, version } => {
            let (report, profiles) =
                crate::legacy::validate(prefix, file_len, format, version, judging).map_err(Stop::from)?;
            Ok(Checked { report, profiles, parse: None })
        }
        detected => check::gguf(prefix, file_len, detected, source, spans, judging),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate_source(src: &dyn ByteSource, opts: &Options) -> Result<Validated, ReadError> {
        Validator::new(opts.clone()).validate(src)
    }

    fn validate_bytes(bytes: &[u8], opts: &Options) -> Report {
        Validator::new(opts.clone()).validate_bytes(bytes).report
    }

    fn validate_source_report(src: &dyn ByteSource, opts: &Options) -> Result<Report, ReadError> {
        Validator::new(opts.clone()).report_only(true).validate(src).map(|v| v.report)
    }

    fn lean(src: &dyn ByteSource, opts: &Options) -> Option<Report> {
        validate_lean(src, Judging::plain(opts)).unwrap().map(|(report, _)| report)
    }

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
            let lean = lean(&src, &opts).expect("read lean");
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
        let read_lean = lean(&SliceSource(&bytes), &opts).expect("read lean");
        assert_eq!(read_lean, validate_source(&SliceSource(&bytes), &opts).unwrap().report);
        long[150] = 0xff;
        let bytes = vocabulary(20_000, Some((15_000, long)), order);
        assert!(lean(&SliceSource(&bytes), &opts).is_none());
        let whole = validate_source(&SliceSource(&bytes), &opts).unwrap().report;
        assert!(whole.diagnostics.iter().any(|d| d.rule.id() == "string-utf8"));
        for (what, bytes, opts) in cases {
            assert!(lean(&SliceSource(&bytes), &opts).is_none(), "{what}: not lean");
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
