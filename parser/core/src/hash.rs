//! Digests of tensor data, and manifests of them, in the layout of
//! llama.cpp's `llama-gguf-hash` (`examples/gguf-hash/gguf-hash.cpp`).
//!
//! Only tensor bytes are hashed, never the header or the metadata, so a
//! metadata edit (a new chat template, a renamed model) leaves every digest
//! unchanged. For each tensor, in tensor-info order, one line per chosen
//! algorithm (`xxh64`, then `sha1`, then `sha256`), then the whole-model
//! lines over the tensors' bytes concatenated in that order (`xxh64`,
//! `sha1`, `sha256`, `uuid`):
//!
//! ```text
//! xxh64     8b7c0a6f7c2f3f4e  model.gguf:token_embd.weight
//! xxh64     0f3c...           model.gguf
//! ```
//!
//! (`%-8s  %s  %s`: the algorithm padded to 8 columns, two spaces, the
//! lower-case hex digest, two spaces, `FILE:TENSOR` or `FILE`). The `uuid`
//! line is a UUIDv5 whose name is all tensor data: the SHA-1 of the
//! llama.cpp namespace [`UUID_NAMESPACE`] followed by the data, with the
//! version and variant bits set (RFC 9562, section 5.5).
//!
//! The work is bounded by the bytes that exist: each tensor's range is
//! checked against the file before anything is read (a tensor past the end
//! of the file is an error, not a read attempt), and overlapping ranges are
//! refused (ggml's reader refuses them too), so every byte of the file is
//! read at most once. Bytes are read through a [`ByteSource`] in chunks of
//! [`limits::HASH_CHUNK_BYTES`], a batch at a time, and the next batch is
//! read while the current one is hashed: memory is two batches whatever the
//! size of a tensor. Inside a batch every digest chain (the whole-model
//! digest of each algorithm, each tensor's digest of each algorithm) is an
//! independent task, so tensors are hashed in parallel with each other and
//! with the whole-model digests; a single chain runs at the speed of one
//! core, like `sha256sum`.
//!
//! [`Manifest`] reads that text back and [`ManifestModel::check`] compares a
//! model's digests against it, tensor by tensor.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use sha1::Digest as _;

use crate::io::{ByteSource, ReadError};
use crate::limits;
use crate::parse::{self, Detected, ParseOutcome};
use crate::types::GgmlType;

/// llama.cpp's UUIDv5 namespace: `uuid.uuid5(uuid.NAMESPACE_URL,
/// 'en.wikipedia.org/wiki/Llama.cpp')` (`UUID_NAMESPACE_LLAMA_CPP`).
pub const UUID_NAMESPACE: uuid::Uuid = uuid::Uuid::from_bytes([
    0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d, 0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5,
]);

/// A digest algorithm, in the order llama-gguf-hash prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algo {
    /// XXH64 with seed 0 (llama-gguf-hash's default): fast, not secure.
    Xxh64,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
    /// A UUIDv5 of all tensor data (whole model only, no per-tensor lines).
    Uuid,
}

impl Algo {
    /// Every algorithm, in print order.
    pub const ALL: [Algo; 4] = [Algo::Xxh64, Algo::Sha1, Algo::Sha256, Algo::Uuid];

    /// The name in the text layout: `xxh64`, `sha1`, `sha256`, `uuid`.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Xxh64 => "xxh64",
            Algo::Sha1 => "sha1",
            Algo::Sha256 => "sha256",
            Algo::Uuid => "uuid",
        }
    }

    /// The algorithm of a name (exact, lower case).
    pub fn from_name(name: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether the algorithm also gives one digest per tensor.
    pub fn per_tensor(self) -> bool {
        self != Algo::Uuid
    }

    fn bit(self) -> u8 {
        match self {
            Algo::Xxh64 => 1,
            Algo::Sha1 => 2,
            Algo::Sha256 => 4,
            Algo::Uuid => 8,
        }
    }

    /// Length of the printed digest.
    fn text_len(self) -> usize {
        match self {
            Algo::Xxh64 => 16,
            Algo::Sha1 => 40,
            Algo::Sha256 => 64,
            Algo::Uuid => 36,
        }
    }
}

impl fmt::Display for Algo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of algorithms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Algos(u8);

impl Algos {
    /// No algorithm.
    pub const NONE: Algos = Algos(0);
    /// llama-gguf-hash's default: `xxh64`.
    pub const DEFAULT: Algos = Algos(1);
    /// llama-gguf-hash's `--all`: `xxh64`, `sha1` and `sha256` (not `uuid`,
    /// which is an id, not a hash).
    pub const ALL_HASHES: Algos = Algos(1 | 2 | 4);

    /// The set with `algo` added.
    pub fn with(self, algo: Algo) -> Algos {
        Algos(self.0 | algo.bit())
    }

    /// Whether `algo` is in the set.
    pub fn contains(self, algo: Algo) -> bool {
        self.0 & algo.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The algorithms, in print order.
    pub fn iter(self) -> impl Iterator<Item = Algo> {
        Algo::ALL.into_iter().filter(move |a| self.contains(*a))
    }
}

impl FromIterator<Algo> for Algos {
    fn from_iter<I: IntoIterator<Item = Algo>>(iter: I) -> Self {
        iter.into_iter().fold(Algos::NONE, Algos::with)
    }
}

/// One digest value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Digest {
    /// XXH64.
    Xxh64(u64),
    /// SHA-1.
    Sha1([u8; 20]),
    /// SHA-256.
    Sha256([u8; 32]),
    /// UUIDv5.
    Uuid(uuid::Uuid),
}

impl Digest {
    /// Its algorithm.
    pub fn algo(&self) -> Algo {
        match self {
            Digest::Xxh64(_) => Algo::Xxh64,
            Digest::Sha1(_) => Algo::Sha1,
            Digest::Sha256(_) => Algo::Sha256,
            Digest::Uuid(_) => Algo::Uuid,
        }
    }
}

impl fmt::Display for Digest {
    /// Lower-case hex, as llama-gguf-hash prints it (XXH64 big-endian; the
    /// UUID hyphenated).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = |f: &mut fmt::Formatter<'_>, bytes: &[u8]| bytes.iter().try_for_each(|b| write!(f, "{b:02x}"));
        match self {
            Digest::Xxh64(h) => write!(f, "{h:016x}"),
            Digest::Sha1(d) => hex(f, d),
            Digest::Sha256(d) => hex(f, d),
            Digest::Uuid(u) => write!(f, "{}", u.hyphenated()),
        }
    }
}

/// Where one tensor's data lies in its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorRange {
    /// Position of the tensor info in its file.
    pub index: usize,
    /// The name as it is printed: escaped by [`parse::escape_bytes`], so a
    /// name can neither break a line nor hide bytes (only names with
    /// control characters, invisible characters, `\` or bytes that are not
    /// UTF-8 print differently from llama-gguf-hash).
    pub name: String,
    /// Absolute offset of the first byte.
    pub offset: u64,
    /// Bytes of data (ggml's `ggml_nbytes`).
    pub nbytes: u64,
}

/// Why a model cannot be hashed.
#[derive(Debug)]
pub enum HashError {
    /// A read failed (or was cancelled).
    Read(ReadError),
    /// Not a GGUF v2/v3 file (`what` says what it is).
    NotGguf(String),
    /// The metadata cannot be decoded.
    Decode {
        /// Where decoding stopped.
        offset: u64,
        /// The field.
        path: String,
    },
    /// A tensor's data cannot be located (unknown type, bad shape, or a
    /// range that is not inside the file).
    Tensor {
        /// Its tensor info index.
        index: usize,
        /// Its name (escaped).
        name: String,
        /// Why.
        reason: String,
    },
    /// Two tensors claim the same bytes.
    Overlap {
        /// The first tensor, by offset.
        first: String,
        /// The tensor that starts inside it.
        second: String,
    },
    /// Two tensors of the model have the same name.
    DuplicateName(String),
}

impl fmt::Display for HashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HashError::Read(e) => write!(f, "{e}"),
            HashError::NotGguf(what) => write!(f, "not a GGUF v2/v3 file ({what}); only GGUF tensor data is hashed"),
            HashError::Decode { offset, path } => write!(
                f,
                "the metadata cannot be decoded at offset {offset} ({path}); run `gguf-validate` on the file for details"
            ),
            HashError::Tensor { index, name, reason } => write!(f, "tensor[{index}] `{name}`: {reason}"),
            HashError::Overlap { first, second } => write!(
                f,
                "tensors `{first}` and `{second}` share bytes; not hashed (ggml's reader refuses overlapping tensors)"
            ),
            HashError::DuplicateName(name) => write!(f, "two tensors are named `{name}`; not hashed"),
        }
    }
}

impl std::error::Error for HashError {}

impl From<ReadError> for HashError {
    fn from(e: ReadError) -> Self {
        HashError::Read(e)
    }
}

/// Reads the metadata of the GGUF file in `src` as validation reads it
/// ([`crate::Validator`], container checks only: the library's one
/// metadata reader) and returns where each tensor's data lies, in
/// tensor-info order. Fails, before any tensor data is read, when a
/// tensor's type or shape is invalid, its range is not inside the file, or
/// two ranges overlap.
pub fn tensor_ranges(src: &dyn ByteSource) -> Result<Vec<TensorRange>, HashError> {
    let opts = crate::Options { container_only: true, ..crate::Options::default() };
    let validated = crate::Validator::new(opts.clone()).validate(src)?;
    // From the validation's own parse; only a file whose header was not
    // read as GGUF v2/v3 is looked at again, for what it is.
    let file_len = validated.file_len();
    if let Some(parsed) = validated.parsed() {
        return ranges_of(&parsed, file_len);
    }
    let prefix = validated.metadata.as_slice();
    match parse::detect(prefix) {
        Detected::Gguf { version, order } if version >= 2 => {
            match parse::parse_gguf(prefix, file_len, version, order, &limits::MetadataLimits::DEFAULT) {
                ParseOutcome::Done(parsed) => ranges_of(&parsed, file_len),
                // Validation stopped reading at the metadata cap.
                ParseOutcome::NeedMoreData(n) => Err(HashError::Read(ReadError::TooLarge {
                    need: n,
                    limit: opts.limits.bytes,
                    what: "the metadata",
                })),
            }
        }
        Detected::Gguf { version, .. } => Err(HashError::NotGguf(format!("GGUF version {version}"))),
        Detected::GgufV1 { .. } => Err(HashError::NotGguf("GGUF v1".into())),
        Detected::GgufBadVersion { version } => Err(HashError::NotGguf(format!("GGUF magic with version {version}"))),
        Detected::Legacy { format, version } => Err(HashError::NotGguf(format.describe(version))),
        _ => Err(HashError::NotGguf("no GGUF magic".into())),
    }
}

/// The tensor ranges of a parsed file of `file_len` bytes.
pub fn ranges_of(parsed: &parse::Parsed<'_>, file_len: u64) -> Result<Vec<TensorRange>, HashError> {
    if let Some(e) = &parsed.fatal {
        return Err(HashError::Decode { offset: e.offset, path: e.path.clone() });
    }
    let f = &parsed.file;
    let data_start = f.data_start().ok_or(HashError::Decode { offset: f.infos_end, path: "data section".into() })?;
    let mut out = Vec::with_capacity(f.tensors.len().min(limits::MAX_INITIAL_CAPACITY));
    for t in &f.tensors {
        let name = parse::escape_bytes(t.name.bytes, true);
        let bad = |reason: String| HashError::Tensor { index: t.index, name: name.clone(), reason };
        if GgmlType::from_id(t.type_id).is_none() {
            return Err(bad(format!("unknown ggml type {}", t.type_id)));
        }
        if t.n_dims > limits::MAX_DIMS {
            return Err(bad(format!("{} dims (ggml has at most {})", t.n_dims, limits::MAX_DIMS)));
        }
        let nbytes =
            t.nbytes().ok_or_else(|| bad("its size cannot be computed (shape, block size or overflow)".into()))?;
        let offset = data_start.checked_add(t.data_offset).ok_or_else(|| bad("its offset overflows".into()))?;
        match offset.checked_add(nbytes) {
            Some(end) if end <= file_len => {}
            _ => {
                return Err(bad(format!(
                    "its {nbytes} bytes at offset {offset} lie past the end of the file ({file_len} bytes)"
                )));
            }
        }
        out.push(TensorRange { index: t.index, name, offset, nbytes });
    }
    let mut by_offset: Vec<&TensorRange> = out.iter().filter(|t| t.nbytes > 0).collect();
    by_offset.sort_by_key(|t| (t.offset, t.index));
    let mut last: Option<&TensorRange> = None;
    for t in by_offset {
        if let Some(p) = last {
            if t.offset < p.offset.saturating_add(p.nbytes) {
                return Err(HashError::Overlap { first: p.name.clone(), second: t.name.clone() });
            }
        }
        if last.is_none_or(|p| t.offset.saturating_add(t.nbytes) > p.offset.saturating_add(p.nbytes)) {
            last = Some(t);
        }
    }
    Ok(out)
}

/// One file of a model (a split set has several, in set order).
#[derive(Debug)]
pub struct Part<'a> {
    /// The file's bytes.
    pub source: &'a dyn ByteSource,
    /// Its tensors, from [`tensor_ranges`].
    pub tensors: Vec<TensorRange>,
}

/// What to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashOptions {
    /// The algorithms.
    pub algos: Algos,
    /// Also one digest per tensor (llama-gguf-hash without `--no-layer`).
    pub per_tensor: bool,
}

/// The digests of one tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDigests {
    /// The part (file) it is in.
    pub part: usize,
    /// Its name (escaped, see [`TensorRange::name`]).
    pub name: String,
    /// One digest per per-tensor algorithm, in print order.
    pub digests: Vec<Digest>,
}

/// The digests of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelDigests {
    /// Per tensor, in model order (empty without [`HashOptions::per_tensor`]).
    pub tensors: Vec<TensorDigests>,
    /// Whether per-tensor digests were computed.
    pub per_tensor: bool,
    /// Whole-model digests, in print order.
    pub model: Vec<Digest>,
    /// Bytes of tensor data hashed.
    pub bytes: u64,
}

/// One line of the text layout: `ALGO  HEX  NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The digest.
    pub digest: Digest,
    /// `FILE:TENSOR` or `FILE`.
    pub name: String,
}

impl fmt::Display for Line {
    /// llama-gguf-hash's `"%-8s  %-s  %s"` (without the newline).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<8}  {}  {}", self.digest.algo().name(), self.digest, self.name)
    }
}

impl ModelDigests {
    /// The lines llama-gguf-hash prints for a model named `model` (the
    /// file name as given): per tensor `model:TENSOR`, then the model.
    pub fn lines(&self, model: &str) -> Vec<Line> {
        let tensors = self
            .tensors
            .iter()
            .flat_map(|t| t.digests.iter().map(move |d| Line { digest: *d, name: format!("{model}:{}", t.name) }));
        tensors.chain(self.model.iter().map(|d| Line { digest: *d, name: model.to_string() })).collect()
    }
}

/// A digest in progress.
#[derive(Clone)]
enum Hasher {
    Xxh64(xxhash_rust::xxh64::Xxh64),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Uuid(sha1::Sha1),
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let algo = match self {
            Hasher::Xxh64(_) => Algo::Xxh64,
            Hasher::Sha1(_) => Algo::Sha1,
            Hasher::Sha256(_) => Algo::Sha256,
            Hasher::Uuid(_) => Algo::Uuid,
        };
        write!(f, "Hasher({algo})")
    }
}

impl Hasher {
    fn new(algo: Algo) -> Hasher {
        match algo {
            Algo::Xxh64 => Hasher::Xxh64(xxhash_rust::xxh64::Xxh64::new(0)),
            Algo::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Algo::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algo::Uuid => {
                let mut h = sha1::Sha1::new();
                h.update(UUID_NAMESPACE.as_bytes());
                Hasher::Uuid(h)
            }
        }
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Xxh64(h) => h.update(data),
            Hasher::Sha1(h) | Hasher::Uuid(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    fn finish(self) -> Digest {
        match self {
            Hasher::Xxh64(h) => Digest::Xxh64(h.digest()),
            Hasher::Sha1(h) => Digest::Sha1(h.finalize().into()),
            Hasher::Sha256(h) => Digest::Sha256(h.finalize().into()),
            Hasher::Uuid(h) => {
                let d: [u8; 20] = h.finalize().into();
                let mut b = [0u8; 16];
                b.copy_from_slice(d.get(..16).unwrap_or(&[0; 16]));
                Digest::Uuid(uuid::Builder::from_sha1_bytes(b).into_uuid())
            }
        }
    }
}

/// One chunk of one tensor: `len` bytes at absolute `offset` of part `part`.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    part: usize,
    /// Position of the tensor in the model (over all parts).
    tensor: usize,
    offset: u64,
    len: usize,
    last: bool,
}

/// The chunks of the model, in order, lazily (a zero-byte tensor is one
/// empty chunk, so that it still gets its digest).
fn chunks<'p>(parts: &'p [Part<'_>], chunk_bytes: u64) -> impl Iterator<Item = Chunk> + 'p {
    let step = chunk_bytes.clamp(1, 1 << 30);
    parts.iter().enumerate().flat_map(|(p, part)| part.tensors.iter().map(move |t| (p, t))).enumerate().flat_map(
        move |(tensor, (part, t))| {
            let n = t.nbytes.div_ceil(step).max(1);
            (0..n).map(move |i| {
                let start = i.saturating_mul(step);
                let len = step.min(t.nbytes.saturating_sub(start));
                Chunk {
                    part,
                    tensor,
                    offset: t.offset.saturating_add(start),
                    len: usize::try_from(len).unwrap_or(0),
                    last: i.saturating_add(1) == n,
                }
            })
        },
    )
}

/// How the data is cut: bytes per chunk, and bytes and chunks per batch.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    chunk: u64,
    batch_bytes: u64,
    batch_chunks: usize,
}

const SIZES: Sizes = Sizes {
    chunk: limits::HASH_CHUNK_BYTES,
    batch_bytes: limits::HASH_BATCH_BYTES,
    batch_chunks: limits::HASH_BATCH_CHUNKS,
};

/// Chunks read for one batch, in one buffer reused batch after batch (so
/// memory is bounded by the batch size, whatever the mix of tensor sizes).
#[derive(Debug, Default)]
struct Batch {
    chunks: Vec<Chunk>,
    /// Where each chunk starts in `buf` (each placed by
    /// [`crate::io::read_start`], at most [`crate::io::READ_SLACK`] bytes
    /// after the one before).
    starts: Vec<usize>,
    buf: Vec<u8>,
}

impl Batch {
    /// Takes the next chunks from `it` (up to the batch limits) and reads
    /// them in parallel.
    fn fill(&mut self, parts: &[Part<'_>], it: &mut dyn Iterator<Item = Chunk>, sizes: Sizes) -> Result<(), ReadError> {
        self.chunks.clear();
        let mut bytes = 0usize;
        while self.chunks.len() < sizes.batch_chunks.max(1)
            && u64::try_from(bytes).unwrap_or(u64::MAX) < sizes.batch_bytes
        {
            let Some(c) = it.next() else { break };
            bytes = bytes.saturating_add(c.len);
            self.chunks.push(c);
        }
        self.buf.resize(bytes.saturating_add(self.chunks.len().saturating_mul(crate::io::READ_SLACK)), 0);
        self.starts.clear();
        let mut slices: Vec<&mut [u8]> = Vec::with_capacity(self.chunks.len());
        let mut rest = self.buf.as_mut_slice();
        let mut at = 0usize;
        for c in &self.chunks {
            let skip = crate::io::read_start(rest, c.offset).min(rest.len());
            let len = c.len.min(rest.len().saturating_sub(skip));
            let (head, tail) = rest.split_at_mut(skip).1.split_at_mut(len);
            at = at.saturating_add(skip);
            self.starts.push(at);
            at = at.saturating_add(head.len());
            slices.push(head);
            rest = tail;
        }
        self.chunks.par_iter().zip(slices.into_par_iter()).try_for_each(|(c, buf)| {
            let Some(part) = parts.get(c.part) else { return Ok(()) };
            let len = u64::try_from(c.len).unwrap_or(u64::MAX);
            if c.len > 0 && part.source.is_hole(c.offset, len) {
                // A hole of a sparse file reads as zeros without being stored.
                buf.fill(0);
                Ok(())
            } else {
                part.source.read_exact_at(c.offset, buf)
            }
        })
    }

    /// The chunks' bytes, in order.
    fn slices(&self) -> Vec<&[u8]> {
        self.chunks
            .iter()
            .zip(&self.starts)
            .map(|(c, &start)| self.buf.get(start..start.saturating_add(c.len)).unwrap_or_default())
            .collect()
    }

    fn bytes(&self) -> u64 {
        self.chunks.iter().fold(0u64, |n, c| n.saturating_add(u64::try_from(c.len).unwrap_or(u64::MAX)))
    }
}

/// A tensor being hashed: its position in the model and its chains.
#[derive(Debug)]
struct Open {
    tensor: usize,
    hashers: Vec<Hasher>,
}

/// Hashes the tensors of `parts` (a model: one file, or the shards of a
/// split set in set order). `progress` is called with the bytes hashed
/// after each batch; setting `cancel` stops at the next batch with
/// [`ReadError::Cancelled`].
pub fn hash_model(
    parts: &[Part<'_>],
    opts: &HashOptions,
    progress: &(dyn Fn(u64) + Sync),
    cancel: Option<&AtomicBool>,
) -> Result<ModelDigests, HashError> {
    hash_with(parts, opts, progress, cancel, SIZES)
}

fn hash_with(
    parts: &[Part<'_>],
    opts: &HashOptions,
    progress: &(dyn Fn(u64) + Sync),
    cancel: Option<&AtomicBool>,
    sizes: Sizes,
) -> Result<ModelDigests, HashError> {
    let tensor_algos: Vec<Algo> =
        if opts.per_tensor { opts.algos.iter().filter(|a| a.per_tensor()).collect() } else { Vec::new() };
    let mut model: Vec<Hasher> = opts.algos.iter().map(Hasher::new).collect();
    let names: Vec<(usize, &str)> =
        parts.iter().enumerate().flat_map(|(p, part)| part.tensors.iter().map(move |t| (p, t.name.as_str()))).collect();
    let mut seen = BTreeSet::new();
    for (_, name) in &names {
        if !seen.insert(*name) {
            return Err(HashError::DuplicateName((*name).to_string()));
        }
    }
    let mut done: Vec<TensorDigests> = Vec::with_capacity(names.len().min(limits::MAX_INITIAL_CAPACITY));
    let mut open: Option<Open> = None;
    let mut it = chunks(parts, sizes.chunk);
    let mut current = Batch::default();
    let mut next = Batch::default();
    let mut total = 0u64;
    current.fill(parts, &mut it, sizes)?;
    while !current.chunks.is_empty() {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(HashError::Read(ReadError::Cancelled));
        }
        // Read the next batch while this one is hashed.
        let (read, finished) = rayon::join(
            || next.fill(parts, &mut it, sizes),
            || hash_batch(&current, &mut model, &mut open, &tensor_algos),
        );
        read?;
        for o in finished {
            let (part, name) = names.get(o.tensor).copied().unwrap_or((0, ""));
            let digests = o.hashers.into_iter().map(Hasher::finish).collect();
            done.push(TensorDigests { part, name: name.to_string(), digests });
        }
        let n = current.bytes();
        total = total.saturating_add(n);
        progress(n);
        std::mem::swap(&mut current, &mut next);
    }
    if !opts.per_tensor {
        done.clear();
    }
    Ok(ModelDigests {
        tensors: done,
        per_tensor: opts.per_tensor,
        model: model.into_iter().map(Hasher::finish).collect(),
        bytes: total,
    })
}

/// Feeds one batch to every chain, each chain a task; returns the tensors
/// whose last chunk was in the batch (the last tensor may stay `open`).
fn hash_batch(batch: &Batch, model: &mut [Hasher], open: &mut Option<Open>, algos: &[Algo]) -> Vec<Open> {
    let slices = batch.slices();
    let bufs = slices.as_slice();
    // Runs of consecutive chunks of one tensor.
    let mut groups: Vec<(Open, Range<usize>, bool)> = Vec::new();
    let mut start = 0usize;
    for (i, c) in batch.chunks.iter().enumerate() {
        let end = i.saturating_add(1);
        if c.last || end == batch.chunks.len() {
            let hashers = match open.take() {
                Some(o) if o.tensor == c.tensor => o,
                _ => Open { tensor: c.tensor, hashers: algos.iter().map(|a| Hasher::new(*a)).collect() },
            };
            groups.push((hashers, start..end, c.last));
            start = end;
        }
    }
    rayon::scope(|s| {
        for h in model.iter_mut() {
            s.spawn(move |_| bufs.iter().for_each(|b| h.update(b)));
        }
        for (o, range, _) in groups.iter_mut() {
            let bufs = bufs.get(range.clone()).unwrap_or_default();
            for h in o.hashers.iter_mut() {
                s.spawn(move |_| bufs.iter().for_each(|b| h.update(b)));
            }
        }
    });
    let mut finished = Vec::with_capacity(groups.len());
    for (o, _, last) in groups {
        if last {
            finished.push(o);
        } else {
            *open = Some(o);
        }
    }
    finished
}

/// A manifest: lines `ALGO  HEX  NAME` as [`ModelDigests::lines`] (and
/// llama-gguf-hash) print them, grouped by model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The models, in the order their first line appears.
    pub models: Vec<ManifestModel>,
}

/// The entries of one model of a manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManifestModel {
    /// The model's name (the file name it was hashed under).
    pub name: String,
    /// Whole-model digests.
    pub model: BTreeMap<Algo, String>,
    /// Per-tensor digests: algorithm, then tensor name (in the order listed).
    pub tensors: BTreeMap<Algo, Vec<(String, String)>>,
}

/// The parts of `name` before each of its `:`.
fn prefixes(name: &str) -> Vec<&str> {
    name.char_indices().filter(|(_, c)| *c == ':').map(|(i, _)| name.get(..i).unwrap_or_default()).collect()
}

/// A line of a manifest that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ManifestError {}

impl Manifest {
    /// Reads a manifest. Each non-blank line is `ALGO HEX NAME`, fields
    /// separated by blanks, NAME running to the end of the line; a name
    /// that another line's name extends with `:TENSOR` is a model, the
    /// other lines are its tensors (`MODEL:TENSOR`, the longest model name
    /// that fits). Unknown algorithms and malformed digests are errors, so
    /// a damaged manifest cannot pass by checking less.
    pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
        let mut entries: Vec<(usize, Algo, &str, &str)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i.saturating_add(1);
            let err = |reason: String| ManifestError { line, reason };
            let l = raw.trim_start();
            if l.trim_end().is_empty() {
                continue;
            }
            let (algo, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            let rest = rest.trim_start();
            let (hex, name) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let name = name.trim_start();
            let algo = Algo::from_name(algo).ok_or_else(|| {
                err(format!("unknown algorithm `{}` (xxh64, sha1, sha256, uuid)", parse::quote_bytes(algo.as_bytes())))
            })?;
            let hex_ok = hex.len() == algo.text_len()
                && hex.bytes().enumerate().all(|(j, b)| {
                    matches!(b, b'0'..=b'9' | b'a'..=b'f')
                        || (algo == Algo::Uuid && b == b'-' && matches!(j, 8 | 13 | 18 | 23))
                });
            if !hex_ok {
                return Err(err(format!(
                    "`{}` is not a {algo} digest ({} lower-case hex characters)",
                    parse::quote_bytes(hex.as_bytes()),
                    algo.text_len()
                )));
            }
            if name.is_empty() {
                return Err(err("no file name after the digest".into()));
            }
            entries.push((line, algo, hex, name));
        }
        let names: BTreeSet<&str> = entries.iter().map(|e| e.3).collect();
        // A model's own line: no other name is a prefix of it before a `:`.
        let models: BTreeSet<&str> =
            names.iter().copied().filter(|n| !prefixes(n).iter().any(|p| names.contains(p))).collect();
        // The model a tensor line belongs to: the longest model name that
        // is a prefix followed by `:` (tensor names may hold `:` too).
        fn owner<'n>(models: &BTreeSet<&str>, name: &'n str) -> Option<&'n str> {
            if models.contains(name) {
                return None;
            }
            prefixes(name).into_iter().rev().find(|p| models.contains(p))
        }
        let mut manifest = Manifest::default();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for (line, algo, hex, name) in entries {
            let (model, tensor) = match owner(&models, name) {
                Some(m) => (m, Some(name.get(m.len().saturating_add(1)..).unwrap_or_default())),
                None => (name, None),
            };
            let i = *index.entry(model.to_string()).or_insert_with(|| {
                manifest.models.push(ManifestModel { name: model.to_string(), ..ManifestModel::default() });
                manifest.models.len().saturating_sub(1)
            });
            let Some(m) = manifest.models.get_mut(i) else { continue };
            match tensor {
                None => {
                    if let Some(old) = m.model.insert(algo, hex.to_string()) {
                        if old != hex {
                            return Err(ManifestError {
                                line,
                                reason: format!("a second {algo} digest for `{model}` that differs from the first"),
                            });
                        }
                    }
                }
                Some(t) => {
                    let listed = m.tensors.entry(algo).or_default();
                    match listed.iter().find(|(n, _)| n == t) {
                        Some((_, old)) if old != hex => {
                            return Err(ManifestError {
                                line,
                                reason: format!("a second {algo} digest for tensor `{t}` that differs from the first"),
                            });
                        }
                        Some(_) => {}
                        None => listed.push((t.to_string(), hex.to_string())),
                    }
                }
            }
        }
        Ok(manifest)
    }

    /// The manifest's model for a file shown as `name`: the model of that
    /// exact name, else the only model, else the only model with the same
    /// final path component.
    pub fn model_for(&self, name: &str) -> Option<&ManifestModel> {
        if let Some(m) = self.models.iter().find(|m| m.name == name) {
            return Some(m);
        }
        if let [only] = self.models.as_slice() {
            return Some(only);
        }
        let base = |s: &str| s.rsplit(['/', '\\']).next().unwrap_or(s).to_string();
        let mut same = self.models.iter().filter(|m| base(&m.name) == base(name));
        match (same.next(), same.next()) {
            (Some(m), None) => Some(m),
            _ => None,
        }
    }
}

impl ManifestModel {
    /// The algorithms this model has entries for.
    pub fn algos(&self) -> Algos {
        self.model.keys().chain(self.tensors.keys()).copied().collect()
    }

    /// Compares `digests` (computed with at least the algorithms checked)
    /// against this model's entries for the algorithms in `algos`.
    pub fn check(&self, digests: &ModelDigests, algos: Algos) -> CheckReport {
        let mut r = CheckReport::default();
        for algo in algos.iter() {
            r.algos.push(algo);
            // Without per-tensor entries for the algorithm (`--no-layer`)
            // on either side there is nothing to compare tensor by tensor.
            if let Some(listed) = self.tensors.get(&algo).filter(|_| digests.per_tensor) {
                r.compare_tensors(algo, listed, digests);
            }
            let ours = digests.model.iter().find(|d| d.algo() == algo);
            match (self.model.get(&algo), ours) {
                (Some(want), Some(got)) => r.compare(algo, None, want, got),
                (None, Some(_)) => r.extra.push((algo, None)),
                (Some(_), None) => r.missing.push((algo, None)),
                (None, None) => {}
            }
        }
        r
    }
}

/// A digest that differs from the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The algorithm.
    pub algo: Algo,
    /// The tensor, or `None` for the whole model.
    pub tensor: Option<String>,
    /// The manifest's digest.
    pub expected: String,
    /// The file's digest.
    pub actual: String,
}

/// The result of [`ManifestModel::check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The algorithms compared.
    pub algos: Vec<Algo>,
    /// Digests equal to the manifest's.
    pub matched: u64,
    /// Digests that differ, in model order per algorithm.
    pub mismatched: Vec<Mismatch>,
    /// In the manifest but not in the file (`None`: the model line).
    pub missing: Vec<(Algo, Option<String>)>,
    /// In the file but not in the manifest (`None`: the model line).
    pub extra: Vec<(Algo, Option<String>)>,
}

impl CheckReport {
    /// Whether everything compared matches, with nothing missing or extra.
    pub fn ok(&self) -> bool {
        self.mismatched.is_empty() && self.missing.is_empty() && self.extra.is_empty() && self.matched > 0
    }

    /// Compares the per-tensor digests of `algo` with the manifest's.
    fn compare_tensors(&mut self, algo: Algo, listed: &[(String, String)], digests: &ModelDigests) {
        let mut want: BTreeMap<&str, &str> = listed.iter().map(|(t, hex)| (t.as_str(), hex.as_str())).collect();
        for t in &digests.tensors {
            let Some(got) = t.digests.iter().find(|d| d.algo() == algo) else { continue };
            match want.remove(t.name.as_str()) {
                Some(hex) => self.compare(algo, Some(&t.name), hex, got),
                None => self.extra.push((algo, Some(t.name.clone()))),
            }
        }
        // In manifest order.
        for (t, _) in listed {
            if want.remove(t.as_str()).is_some() {
                self.missing.push((algo, Some(t.clone())));
            }
        }
    }

    fn compare(&mut self, algo: Algo, tensor: Option<&str>, want: &str, got: &Digest) {
        let got = got.to_string();
        if want == got {
            self.matched = self.matched.saturating_add(1);
        } else {
            self.mismatched.push(Mismatch {
                algo,
                tensor: tensor.map(str::to_string),
                expected: want.to_string(),
                actual: got,
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::io::SliceSource;
    use crate::write::{GgufModel, OwnedTensor, OwnedValue};

    fn model(sizes: &[usize]) -> Vec<u8> {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("plain"));
        for (i, n) in sizes.iter().enumerate() {
            let mut t = OwnedTensor::zeroed(&format!("t{i}"), &[*n as u64], GgmlType::F32).unwrap();
            for (j, b) in t.data.iter_mut().enumerate() {
                *b = (j * 31 + i * 7) as u8;
            }
            m.tensor(t);
        }
        m.canonical().unwrap().to_bytes()
    }

    fn digests(bytes: &[u8], algos: Algos, sizes: Option<Sizes>) -> (Vec<TensorRange>, ModelDigests) {
        let src = SliceSource(bytes);
        let tensors = tensor_ranges(&src).unwrap();
        let parts = [Part { source: &src, tensors: tensors.clone() }];
        let opts = HashOptions { algos, per_tensor: true };
        let d = hash_with(&parts, &opts, &|_| {}, None, sizes.unwrap_or(SIZES)).unwrap();
        (tensors, d)
    }

    #[test]
    fn a_batch_gives_each_chunk_its_bytes_where_its_reads_were_placed() {
        // Chunks of one byte, each 4095 bytes on in the file: unmoved, the
        // k-th would land 2k bytes further ahead of its place in a page,
        // so within 2048 of them some land 1 to 63 bytes ahead and move.
        let file: Vec<u8> = (0..5000u64 * 4095 + 1).map(|i| (i % 251) as u8).collect();
        let src = SliceSource(&file);
        let parts = [Part { source: &src, tensors: Vec::new() }];
        let chunks = (0..5000u64).map(|k| Chunk { part: 0, tensor: 0, offset: k * 4095, len: 1, last: false });
        let mut batch = Batch::default();
        let sizes = Sizes { chunk: 1, batch_bytes: u64::MAX, batch_chunks: 5000 };
        batch.fill(&parts, &mut chunks.into_iter(), sizes).unwrap();
        let slices = batch.slices();
        assert_eq!(slices.len(), 5000);
        for (k, slice) in slices.iter().enumerate() {
            assert_eq!(*slice, &file[k * 4095..k * 4095 + 1], "chunk {k}");
        }
        assert!(batch.starts.iter().enumerate().any(|(k, &start)| start != k), "no read was moved");
        assert!(batch.starts.windows(2).all(|w| w[1] > w[0] && w[1] - w[0] <= 1 + crate::io::READ_SLACK));
        assert_eq!(batch.bytes(), 5000);
    }

    #[test]
    fn digests_are_those_of_the_tensor_bytes() {
        let bytes = model(&[3, 0, 1000, 17]);
        let all = Algos::ALL_HASHES.with(Algo::Uuid);
        let (tensors, d) = digests(&bytes, all, None);
        assert_eq!(d.tensors.len(), 4);
        let mut concat = Vec::new();
        for (t, got) in tensors.iter().zip(&d.tensors) {
            let data = &bytes[t.offset as usize..(t.offset + t.nbytes) as usize];
            concat.extend_from_slice(data);
            let want = vec![
                Digest::Xxh64(xxhash_rust::xxh64::xxh64(data, 0)),
                Digest::Sha1(sha1::Sha1::digest(data).into()),
                Digest::Sha256(sha2::Sha256::digest(data).into()),
            ];
            assert_eq!(got.digests, want, "{}", t.name);
        }
        assert_eq!(d.bytes, concat.len() as u64);
        assert_eq!(d.model[2], Digest::Sha256(sha2::Sha256::digest(&concat).into()));
        let mut name = UUID_NAMESPACE.as_bytes().to_vec();
        name.extend_from_slice(&concat);
        let d1: [u8; 20] = sha1::Sha1::digest(&name).into();
        let u = d.model[3].to_string();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "5", "version 5");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "variant");
        assert_eq!(u.replace('-', "")[..12], d1.iter().map(|b| format!("{b:02x}")).collect::<String>()[..12]);
    }

    #[test]
    fn chunks_and_batches_do_not_change_the_digests() {
        let bytes = model(&[5, 0, 33, 1, 64]);
        let all = Algos::ALL_HASHES.with(Algo::Uuid);
        let (_, whole) = digests(&bytes, all, None);
        for (chunk, batch_bytes, batch_chunks) in [(1, 1, 1), (7, 20, 3), (4, 1000, 2), (1000, 8, 1000)] {
            let (_, d) = digests(&bytes, all, Some(Sizes { chunk, batch_bytes, batch_chunks }));
            assert_eq!(d, whole, "chunk {chunk}, batch {batch_bytes} bytes / {batch_chunks} chunks");
        }
    }

    #[test]
    fn overlapping_tensors_and_duplicate_names_are_refused() {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("plain"));
        m.tensor(OwnedTensor::zeroed("a", &[8], GgmlType::F32).unwrap());
        m.tensor(OwnedTensor::zeroed("b", &[8], GgmlType::F32).unwrap());
        let bytes = m.canonical().unwrap().to_bytes();
        let parsed = crate::parse::parse_bytes(&bytes).unwrap();
        let mut bad = parsed.clone();
        bad.file.tensors[1].data_offset = 16;
        let e = ranges_of(&bad, bytes.len() as u64).unwrap_err();
        assert!(matches!(e, HashError::Overlap { .. }), "{e}");
        let mut dup = parsed.clone();
        dup.file.tensors[1].name = dup.file.tensors[0].name;
        let src = SliceSource(&bytes);
        let parts = [Part { source: &src, tensors: ranges_of(&dup, bytes.len() as u64).unwrap() }];
        let e = hash_model(&parts, &HashOptions { algos: Algos::DEFAULT, per_tensor: true }, &|_| {}, None);
        assert!(matches!(e, Err(HashError::DuplicateName(_))), "{e:?}");
    }

    #[test]
    fn manifests_report_missing_and_extra_tensors() {
        let bytes = model(&[5, 6, 7]);
        let (_, d) = digests(&bytes, Algos::DEFAULT, None);
        let lines = d.lines("m.gguf");
        // Drop t1's line and add one for a tensor the file does not have.
        let mut text: String = lines.iter().filter(|l| !l.name.ends_with(":t1")).map(|l| format!("{l}\n")).collect();
        text.push_str("xxh64     0000000000000000  m.gguf:gone:with:colons\n");
        let m = Manifest::parse(&text).unwrap();
        let r = m.model_for("elsewhere/m.gguf").unwrap().check(&d, Algos::DEFAULT);
        assert_eq!(r.extra, vec![(Algo::Xxh64, Some("t1".to_string()))]);
        assert_eq!(r.missing, vec![(Algo::Xxh64, Some("gone:with:colons".to_string()))]);
        assert_eq!(r.mismatched, vec![]);
        assert!(!r.ok());
    }

    /// Seeded mutations of a valid file: no panic, and never more bytes
    /// hashed than the file has (overlaps refused, ranges inside the file).
    #[test]
    fn mutated_files_never_panic_and_hash_at_most_the_file() {
        let base = model(&[5, 0, 33, 64, 2]);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let opts = HashOptions { algos: Algos::ALL_HASHES.with(Algo::Uuid), per_tensor: true };
        let mut hashed = 0;
        for _ in 0..3000 {
            let mut bytes = base.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            if next() % 8 == 0 {
                bytes.truncate((next() % bytes.len() as u64) as usize);
            }
            let src = SliceSource(&bytes);
            let Ok(tensors) = tensor_ranges(&src) else { continue };
            let parts = [Part { source: &src, tensors }];
            if let Ok(d) = hash_model(&parts, &opts, &|_| {}, None) {
                assert!(d.bytes <= bytes.len() as u64);
                hashed += 1;
            }
        }
        assert!(hashed > 100, "some mutants stay hashable ({hashed})");
        for text in ["xxh64", "xxh64 ", "sha1  :", "uuid  0-0  :", "\u{feff}xxh64  0123456789abcdef  a:b:c", ":::"] {
            let _ = Manifest::parse(text);
        }
    }

    #[test]
    fn a_tensor_past_the_end_is_an_error_before_any_read() {
        let mut bytes = model(&[1000]);
        bytes.truncate(bytes.len() - 10);
        let e = tensor_ranges(&SliceSource(&bytes)).unwrap_err();
        assert!(e.to_string().contains("past the end of the file"), "{e}");
    }

    #[test]
    fn lines_have_the_llama_gguf_hash_layout() {
        let bytes = model(&[4]);
        let (_, d) = digests(&bytes, Algos::DEFAULT, None);
        let lines: Vec<String> = d.lines("m.gguf").iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("xxh64     ") && lines[0].ends_with("  m.gguf:t0"), "{}", lines[0]);
        assert!(lines[1].ends_with("  m.gguf"));
        assert_eq!(lines[0].len(), 8 + 2 + 16 + 2 + "m.gguf:t0".len());
    }

    #[test]
    fn manifests_round_trip_and_name_what_differs() {
        let bytes = model(&[5, 6, 7]);
        let all = Algos::ALL_HASHES.with(Algo::Uuid);
        let (tensors, d) = digests(&bytes, all, None);
        let text: String = d.lines("dir:x/m.gguf").iter().map(|l| format!("{l}\n")).collect();
        let m = Manifest::parse(&text).unwrap();
        assert_eq!(m.models.len(), 1);
        assert_eq!(m.models[0].name, "dir:x/m.gguf");
        assert_eq!(m.models[0].algos(), all);
        let r = m.models[0].check(&d, all);
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.matched, 3 * 3 + 4);
        let mut tampered = bytes.clone();
        tampered[tensors[1].offset as usize] ^= 1;
        let (_, d2) = digests(&tampered, all, None);
        let r = m.models[0].check(&d2, all);
        assert!(!r.ok());
        let names: BTreeSet<Option<&str>> = r.mismatched.iter().map(|m| m.tensor.as_deref()).collect();
        assert_eq!(names, [None, Some("t1")].into_iter().collect());
    }

    #[test]
    fn malformed_manifests_are_refused() {
        for (text, want) in [
            ("md5  00  m\n", "unknown algorithm"),
            ("xxh64  0123  m\n", "not a xxh64 digest"),
            ("sha1  0123456789ABCDEF0123456789ABCDEF01234567  m\n", "not a sha1 digest"),
            ("xxh64  0123456789abcdef\n", "no file name"),
        ] {
            let e = Manifest::parse(text).unwrap_err();
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
        assert_eq!(Manifest::parse("\n  \n").unwrap(), Manifest::default());
    }
}
