//! The GGUF checker: runs every GGUF rule of [`crate::rules`] over a parsed
//! file, one module per family, in this order:
//! - `header`: magic, version, byte order, and fatal decoding failures;
//! - `kv`: key/value pairs as such (key grammar, duplicates, strings,
//!   bools, arrays);
//! - `keys`: the well-known keys (`general.*`, tokenizer arrays, required
//!   keys);
//! - `tensors`: tensor infos (names, dims, types, byte sizes);
//! - `layout`: the data section (offsets, order, overlaps, padding);
//! - `model`, `tokenizer`, `split`: what llama.cpp's loader and tokenizer
//!   assume of hyper-parameters, the vocabulary and split shards;
//! - [`template`]: chat templates (code execution, hidden instructions,
//!   parse failures, special tokens), a pure analysis per template.
//!
//! Further families of the model layer go here as further modules, after
//! `layout`. Format dispatch is one level
//! up, in [`crate::validate`].
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

mod adapter;
#[rustfmt::skip]
mod clip_table;
mod control_vector;
mod dialects;
mod diffusion;
#[rustfmt::skip]
pub(crate) mod diffusion_table;
mod header;
mod imatrix;
pub(crate) mod imatrix_table;
mod keys;
mod kv;
mod layout;
#[rustfmt::skip]
mod llama_arch_table;
mod llama_arches;
mod model;
mod model_tensors;
mod projector;
mod projector_pairing;
pub mod releases;
mod split;
pub mod template;
mod tensor_extra;
mod tensors;
mod tokenizer;

use std::cell::Cell;

use crate::io::{ByteSource, ReadError};
use crate::limits;
use crate::parse::{self, Detected, NeedMoreData, ParseOutcome, Parsed};
use crate::report::{CONTAINER_ONLY, DATA_NOT_ASKED, Examined, FileFormat, Judging, Report, Sink, Summary};

pub use keys::well_known_type;

/// The pre-tokenizers (`tokenizer.ggml.pre`) the pinned llama.cpp knows for
/// a BPE vocabulary (the generated table), sorted.
pub fn known_pre_tokenizers() -> &'static [&'static str] {
    llama_arch_table::BPE_PRE_TOKENIZERS
}

/// Offset reported for a missing key: the header's kv_count field. Here,
/// not in one family's module, because several families report missing
/// keys (`keys`, `split`, `model`, `model_tensors`, `tokenizer`).
pub(crate) const KV_SECTION: u64 = 16;

/// Why a projector, adapter or control vector was not paired with a model:
/// the run had none to pair it with.
pub const NO_COMPANION: &str = "none in the run (name it with --with MODEL, or keep it in the same folder)";

/// The models a projector, adapter or control vector is paired with
/// (given to the [`crate::Validator`], or found as its pairing asks), or `None` after recording in
/// `examined` why the pairing did not run (`role`: `base model`, `text model`).
pub(crate) fn companions(
    sink: &Sink<'_>,
    role: &str,
    examined: &mut Vec<Examined>,
) -> Option<crate::report::Companions> {
    let c = sink.companions();
    if c.models.is_empty() {
        let why = c.none_because.as_deref().unwrap_or(NO_COMPANION);
        examined.push(Examined::skipped("pairing", format!("{role}: {why}")));
        return None;
    }
    Some(c)
}

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

/// What checking one file gave: the report, each profile's when every
/// profile was judged, and the parse (a GGUF file's, also when decoding
/// stopped early), kept for the steps after the report.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) report: Report,
    pub(crate) profiles: Vec<Report>,
    pub(crate) parse: Option<parse::KeptParse>,
}

/// Checks a file detected as GGUF (or as nothing known) whose first
/// `prefix.len()` bytes are `prefix`, reading past them from `source` when
/// there is one; `spans` are string arrays a walk of the prefix under
/// the options' limits went through (see [`parse::parse_gguf_spanned`]).
pub(crate) fn gguf(
    prefix: &[u8],
    file_len: u64,
    detected: Detected,
    source: Option<&dyn ByteSource>,
    spans: &[parse::StringSpan],
    judging: Judging<'_>,
) -> Result<Checked, Stop> {
    let opts = judging.options;
    let mut sink = Sink::judging(judging);
    let (version, order) = match header::check_detected(detected, prefix, file_len, &mut sink)? {
        header::Outcome::Body { version, order } => (version, order),
        header::Outcome::Done(format, version, order, summary) => {
            let (report, profiles) = sink.finish_judged(opts.profile, format, version, order, *summary);
            return Ok(Checked { report, profiles, parse: None });
        }
    };
    let parsed = match parse::parse_gguf_spanned(prefix, file_len, version, order, &opts.limits, spans) {
        ParseOutcome::Done(p) => p,
        ParseOutcome::NeedMoreData(n) => return Err(Stop::More(n)),
    };
    let mut summary = Summary { file_size: file_len, ..Summary::default() };
    let declined = Cell::new(0u64);
    let region = Region { buf: prefix, file_len, source, declined: &declined };
    check_parsed(&parsed, &region, &mut sink, &mut summary)?;
    if declined.get() > 0 {
        // A remote source declined to fetch padding inside the data section.
        let n = declined.get();
        let note = format!(
            "{n} padding {} inside the data section not read (a remote file: fetched only by a data scan)",
            if n == 1 { "region" } else { "regions" }
        );
        if let Some(e) = summary.examined.iter_mut().find(|e| e.layer == "container" && e.checked) {
            *e = Examined::partly("container", note);
        }
    }
    let (report, profiles) = sink.finish_judged(opts.profile, FileFormat::Gguf, Some(version), Some(order), summary);
    // The parse itself (its records moved, not copied) for later steps.
    Ok(Checked { report, profiles, parse: Some(parse::KeptParse::keep(parsed)) })
}

/// Bytes of the file available to the validator: a prefix, the length,
/// and (when validating a source) a way to read past the prefix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) file_len: u64,
    pub(crate) source: Option<&'a dyn ByteSource>,
    /// Ranges past the prefix the source declined to read
    /// ([`ByteSource::read_optional_at`]).
    pub(crate) declined: &'a Cell<u64>,
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
            if !src.read_optional_at(at, &mut chunk).map_err(Stop::Read)? {
                self.declined.set(self.declined.get().saturating_add(1));
                return Ok(None);
            }
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
    header::check_header(&file.header, sink);
    kv::check_pairs(file, sink);
    let key_facts = keys::check_known(file, sink);
    summary.architecture = key_facts.architecture.clone();
    // the loader the file is for, and what its reader reads past, before
    // its tensor infos are judged
    let loader = match model::FileKind::of(file, key_facts.architecture.as_deref(), sink.loader()) {
        model::FileKind::Diffusion(l) => l,
        _ => crate::loader::Loader::LlamaCpp,
    };
    sink.file_loader = Some(loader);
    sink.tolerated = diffusion::tolerated(file, loader);
    summary.tolerated = sink.tolerated.clone();
    let tensor_facts = tensors::check_tensors(file, sink);
    summary.parameters = tensor_facts.parameters;
    summary.data_size = tensor_facts.data_size;
    summary.tensor_types = tensor_facts.type_counts.clone();
    if let Some(fatal) = &parsed.fatal {
        let (rule, message) = header::fatal_message(&fatal.kind);
        sink.emit(rule, fatal.offset, || fatal.path.clone(), || message);
        return Ok(());
    }
    summary.alignment = Some(key_facts.alignment);
    keys::check_required(file, &tensor_facts, sink);
    layout::check_layout(file, &key_facts, &tensor_facts, region, sink, summary)?;
    summary.examined.push(Examined::checked("container"));
    summary.split = split::role(file).map(|r| crate::report::Shard { no: r.no, count: r.count });
    model::check_layer(file, key_facts.architecture.as_deref(), sink, &mut summary.examined);
    summary.loader = sink.file_loader;
    summary.llama_cpp = releases::of(file, key_facts.architecture.as_deref(), sink);
    if sink.options().container_only {
        summary.examined.push(Examined::skipped("template", CONTAINER_ONLY));
    } else {
        template::check(file, sink);
        summary.examined.push(Examined::checked("template"));
    }
    summary.examined.push(Examined::skipped("data", DATA_NOT_ASKED));
    const ORDER: [&str; 6] = ["container", "model", "tokenizer", "split", "template", "data"];
    summary.examined.sort_by_key(|e| ORDER.iter().position(|l| *l == e.layer));
    Ok(())
}

pub(crate) use kv::strings_valid;
pub(crate) use model::model_facts;
pub(crate) use split::{Member as SetMember, Shape as SetShape, check_set as check_split_set};

/// The model layer of a split set: the first shard's metadata against the
/// tensors of every shard (`all_tensors`: every shard is present, so the
/// tensor rules can run).
pub(crate) fn check_set_model(
    first: &parse::GgufFile<'_>,
    tensors: &[&parse::TensorInfo<'_>],
    all_tensors: bool,
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    let arch = first.get("general.architecture").and_then(|kv| kv.value.as_string());
    let arch = arch.and_then(|s| std::str::from_utf8(s.bytes).ok());
    model::check_model(first, arch, tensors, all_tensors, sink, examined);
}

/// Positions, in increasing order, of the items whose key equals the key
/// of an earlier item. Each key is hashed once (per-process seed) to 32
/// bits, packed above its position in one `u64` (8 bytes an item, where a
/// hash set of millions of keys costs several times more), and the `u64`s
/// are sorted; only items of equal hashes compare their keys.
pub(crate) fn later_duplicates<T>(items: &[T], key: impl Fn(&T) -> &[u8]) -> Vec<usize> {
    use std::hash::BuildHasher;
    let hasher = foldhash::fast::RandomState::default();
    let mut packed = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Ok(i) = u32::try_from(i) else { return later_duplicates_sorted(items, key) };
        let h = hasher.hash_one(key(item)) >> 32;
        packed.push(h << 32 | u64::from(i));
    }
    parse::sort_packed(&mut packed);
    later_duplicates_packed(&packed, |i| items.get(i).map_or(&[][..], &key))
}

/// [`later_duplicates`] from the items' keys hashed to 32 bits above their
/// positions, sorted (as [`parse::KeyHashes::candidates`] gives them); `key`
/// gives the key of the item at a position.
pub(crate) fn later_duplicates_packed<'k>(packed: &[u64], key: impl Fn(usize) -> &'k [u8]) -> Vec<usize> {
    let position = |p: &u64| parse::key_index_position(*p);
    let key_of = |p: &u64| key(position(p));
    let mut later = Vec::new();
    for run in packed.chunk_by(|a, b| a >> 32 == b >> 32) {
        let [first, rest @ ..] = run else { continue };
        if rest.is_empty() {
            continue;
        }
        // In position order: each distinct key of the run once, by its first.
        let mut firsts: Vec<&[u8]> = vec![key_of(first)];
        for p in rest {
            let k = key_of(p);
            if firsts.contains(&k) {
                later.push(position(p));
            } else {
                firsts.push(k);
            }
        }
    }
    later.sort_unstable();
    later
}

/// [`later_duplicates`] by sorting the positions by key (more than 2^32 items).
fn later_duplicates_sorted<T>(items: &[T], key: impl Fn(&T) -> &[u8]) -> Vec<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SliceSource;

    #[test]
    fn later_duplicates_are_the_second_and_later_copies_in_order() {
        let keys: [&[u8]; 6] = [b"b", b"a", b"b", b"c", b"a", b"b"];
        assert_eq!(later_duplicates(&keys, |k| k), vec![2, 4, 5]);
        assert!(later_duplicates::<&[u8]>(&[], |k| k).is_empty());
        assert_eq!(later_duplicates_sorted(&keys, |k| k), vec![2, 4, 5]);
        let many: Vec<Vec<u8>> = (0..5000u32).map(|i| format!("k{}", i % 1700).into_bytes()).collect();
        let want: Vec<usize> = (1700..5000).collect();
        assert_eq!(later_duplicates(&many, |k| k), want);
        assert_eq!(later_duplicates_sorted(&many, |k| k), want);
    }

    /// A GGUF v3 file of these keys, each a u32.
    fn file_of_keys(keys: &[String]) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&(keys.len() as u64).to_le_bytes());
        for k in keys {
            b.extend_from_slice(&(k.len() as u64).to_le_bytes());
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(&4u32.to_le_bytes());
            b.extend_from_slice(&7u32.to_le_bytes());
        }
        b
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The key index's candidates hold every repeated key with its
        /// first, so the duplicates found from them are a comparison of
        /// every pair's; `get` finds each key's first pair, and no other
        /// key, as a comparison with every pair does.
        #[test]
        fn the_key_index_finds_what_comparing_every_pair_finds(
            picks in proptest::collection::vec(0u32..400, 65..900),
        ) {
            let keys: Vec<String> = picks.iter().map(|p| format!("k.{p}")).collect();
            let bytes = file_of_keys(&keys);
            let parsed = parse::parse_bytes(&bytes).expect("GGUF v3");
            let file = &parsed.file;
            let index = file.key_index().expect("an index");
            let found = later_duplicates_packed(&index.candidates(), |i| file.kvs.key(i).unwrap_or_default());
            proptest::prop_assert_eq!(found, later_duplicates_sorted(&keys, |k| k.as_bytes()));
            for probe in keys.iter().map(String::as_str).chain(["k.400", "k.", "missing"]) {
                let first = keys.iter().position(|k| k == probe);
                proptest::prop_assert_eq!(file.get(probe).map(|kv| kv.index), first);
            }
        }
    }

    #[test]
    fn first_nonzero_reads_past_the_prefix_only_from_a_source() {
        let mut file = vec![0u8; 300_000];
        file[250_000] = 7;
        let prefix = &file[..1000];
        let declined = Cell::new(0);
        let without = Region { buf: prefix, file_len: 300_000, source: None, declined: &declined };
        assert_eq!(without.first_nonzero(10, 900).unwrap(), None);
        assert!(matches!(without.first_nonzero(10, 2000), Err(Stop::More(2000))));
        let src = SliceSource(&file);
        let with = Region { buf: prefix, file_len: 300_000, source: Some(&src), declined: &declined };
        assert_eq!(with.first_nonzero(10, 300_000).unwrap(), Some((250_000, 7)));
        assert_eq!(with.first_nonzero(250_001, 400_000).unwrap(), None, "clipped to the file");
        assert_eq!(declined.get(), 0);
    }

    /// A source that declines optional reads (as a remote one does).
    #[derive(Debug)]
    struct Declining<'a>(&'a [u8]);

    impl ByteSource for Declining<'_> {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
            SliceSource(self.0).read_exact_at(offset, buf)
        }
        fn read_optional_at(&self, _: u64, _: &mut [u8]) -> Result<bool, ReadError> {
            Ok(false)
        }
    }

    #[test]
    fn a_declined_padding_read_is_counted_not_guessed() {
        let mut file = vec![0u8; 300_000];
        file[250_000] = 7;
        let src = Declining(&file);
        let declined = Cell::new(0);
        let region = Region { buf: &file[..1000], file_len: 300_000, source: Some(&src), declined: &declined };
        assert_eq!(region.first_nonzero(10, 900).unwrap(), None, "inside the prefix: read");
        assert_eq!(region.first_nonzero(10, 300_000).unwrap(), None);
        assert_eq!(declined.get(), 1);
    }
}
