//! A GGUF file written again with its metadata changed and its tensor data
//! copied byte for byte (`gguf-validate edit`).
//!
//! A [`Rewrite`] is planned from a file's parse: the new header, the
//! key/value pairs (each unchanged pair copied as its bytes, each changed
//! or added pair encoded in the file's byte order, each removed pair left
//! out) and the tensor infos copied as they are. Tensor data offsets are
//! relative to the data section, and the data section (from its start to
//! the end of the file) is copied as one block, so no offset changes: only
//! the section's start moves, to the end of the new tensor infos padded to
//! `general.alignment`. A change of the alignment itself cannot be made
//! that way (every tensor would move within the section) and is refused.
//!
//! [`Layout::Packed`] (what `gguf-validate fix` uses for a finding about
//! the layout) instead copies each tensor's bytes on their own, in
//! tensor-info order, each at the next offset aligned to the (new)
//! alignment, with zero padding between and after them: the infos' offsets
//! are rewritten and nothing of the data section but the tensors' bytes is
//! kept. Each tensor's bytes are still copied unchanged.
//!
//! The block is streamed from the source, never held: through one buffer
//! of [`COPY_STEP_BYTES`] ([`Rewrite::write`], any [`ByteSource`]), or, file
//! to file, by `std::io::copy` in steps of the same size, which is the
//! kernel's `copy_file_range` on Linux ([`Rewrite::write_file`]).
//! [`tensor_digest`] is the `hash` command's whole-model SHA-256 of tensor
//! data: equal before and after, whatever the metadata.
//!
//! [`Request`]s are what a person asks for (`--set KEY=VALUE` typed by a
//! prefix or by the key's well-known type, `--pre-tokenizer`,
//! `--special-token`, `--chat-template`); [`resolve`] turns them into
//! [`Change`]s against the file (its architecture, its vocabulary).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
#![deny(clippy::as_conversions)]

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::check::{known_pre_tokenizers, well_known_type};
use crate::hash::{self, Algo, Algos, Digest, HashError, HashOptions, Part};
use crate::io::{ByteSource, ReadError};
use crate::parse::{ByteOrder, Parsed, align_up, escape_bytes};
use crate::types::ValueType;
use crate::write::{OwnedValue, encode_pair};

/// Bytes of tensor data copied per step (one buffer of this size, or one
/// kernel copy of at most this many bytes between progress reports).
pub const COPY_STEP_BYTES: u64 = 8 << 20;

/// Bytes of the fixed header of a GGUF v2/v3 file (magic, version, tensor
/// count, key/value count).
const HEADER_BYTES: u64 = 24;

/// One change of the metadata.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The key holds this value afterwards: its first pair is rewritten in
    /// place (later pairs of the same key are dropped), or a pair is added
    /// after the last.
    Set {
        /// The key.
        key: String,
        /// Its new value.
        value: OwnedValue,
    },
    /// No pair of this key is left (refused when the file has none).
    Remove {
        /// The key.
        key: String,
    },
}

impl Change {
    /// The key it changes.
    pub fn key(&self) -> &str {
        match self {
            Change::Set { key, .. } | Change::Remove { key } => key,
        }
    }
}

/// A change as made: the key, its value before (`None`: the file had no
/// such pair) and after (`None`: removed).
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The key.
    pub key: String,
    /// The value before.
    pub before: Option<OwnedValue>,
    /// The value after.
    pub after: Option<OwnedValue>,
}

/// What a person asks to change, before it is typed against the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `KEY=VALUE`: the value's text, typed by a prefix (`str:`, `u32:`,
    /// `i32:`, `f32:`, `bool:`, and `u8:` `i8:` `u16:` `i16:` `u64:` `i64:`
    /// `f64:`) or else by the type the spec or llama.cpp gives the key.
    Set {
        /// The key.
        key: String,
        /// The value as written.
        text: String,
    },
    /// Remove the key.
    Remove {
        /// The key.
        key: String,
    },
    /// `tokenizer.chat_template` set to this text.
    ChatTemplate(String),
    /// A named chat template (the spec's `tokenizer.chat_template.NAME`,
    /// which llama.cpp's `llama_model_chat_template(model, NAME)` reads, e.g.
    /// `tool_use`) set to this text, and NAME listed in
    /// `tokenizer.chat_templates`.
    NamedChatTemplate {
        /// The name (`[a-z0-9_]+`).
        name: String,
        /// The template's text.
        text: String,
    },
    /// `tokenizer.ggml.pre` set to a pre-tokenizer llama.cpp knows.
    PreTokenizer(String),
    /// A special token's id (`tokenizer.ggml.<role>_token_id`, u32): the id,
    /// or the text of a token of the vocabulary.
    SpecialToken {
        /// The role (`bos`, `eos`, `eot`, ...; [`SPECIAL_TOKEN_ROLES`]).
        role: String,
        /// The id, or a token's text.
        token: String,
    },
}

/// The special-token roles and the key llama.cpp reads each from
/// (`src/llama-arch.cpp`, `LLM_KV_TOKENIZER_*_ID`; `sep`, `pad` and `unk`
/// are spelled as llama.cpp spells their keys).
pub const SPECIAL_TOKEN_ROLES: &[(&str, &str)] = &[
    ("bos", "tokenizer.ggml.bos_token_id"),
    ("eos", "tokenizer.ggml.eos_token_id"),
    ("eot", "tokenizer.ggml.eot_token_id"),
    ("eom", "tokenizer.ggml.eom_token_id"),
    ("unk", "tokenizer.ggml.unknown_token_id"),
    ("sep", "tokenizer.ggml.seperator_token_id"),
    ("pad", "tokenizer.ggml.padding_token_id"),
    ("cls", "tokenizer.ggml.cls_token_id"),
    ("mask", "tokenizer.ggml.mask_token_id"),
    ("fim_pre", "tokenizer.ggml.fim_pre_token_id"),
    ("fim_suf", "tokenizer.ggml.fim_suf_token_id"),
    ("fim_mid", "tokenizer.ggml.fim_mid_token_id"),
    ("fim_pad", "tokenizer.ggml.fim_pad_token_id"),
    ("fim_rep", "tokenizer.ggml.fim_rep_token_id"),
    ("fim_sep", "tokenizer.ggml.fim_sep_token_id"),
];

/// The value-type prefixes `--set` takes, with the type each gives.
pub const VALUE_PREFIXES: &[(&str, ValueType)] = &[
    ("str", ValueType::String),
    ("string", ValueType::String),
    ("u8", ValueType::U8),
    ("i8", ValueType::I8),
    ("u16", ValueType::U16),
    ("i16", ValueType::I16),
    ("u32", ValueType::U32),
    ("i32", ValueType::I32),
    ("u64", ValueType::U64),
    ("i64", ValueType::I64),
    ("f32", ValueType::F32),
    ("f64", ValueType::F64),
    ("bool", ValueType::Bool),
];

/// Why a file cannot be rewritten as asked.
#[derive(Debug)]
pub enum RewriteError {
    /// Not a GGUF v2/v3 file whose metadata decodes (the message says what).
    NotGguf(String),
    /// A request that cannot be made (a value that does not parse as its
    /// type, an unknown role or pre-tokenizer, a token not in the vocabulary).
    Request(String),
    /// Two changes of the same key.
    Conflict(String),
    /// A key to remove that the file does not have.
    Absent(String),
    /// The change would change the alignment tensor data is laid out with,
    /// which cannot be done without moving tensor data.
    Alignment {
        /// The alignment in effect.
        from: u64,
        /// The alignment the change gives.
        to: u64,
    },
    /// A size or offset overflows.
    Overflow,
    /// Reading the source failed.
    Read(ReadError),
    /// Writing the output failed.
    Write(io::Error),
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::NotGguf(what) => write!(f, "cannot be rewritten: {what}"),
            RewriteError::Request(why) => f.write_str(why),
            RewriteError::Conflict(key) => write!(f, "`{key}` is changed twice; give one change per key"),
            RewriteError::Absent(key) => write!(f, "`{key}` cannot be removed: the file has no such key"),
            RewriteError::Alignment { from, to } => write!(
                f,
                "the change makes the alignment {to} instead of {from}: tensor data would have to move, and an edit never touches tensor data"
            ),
            RewriteError::Overflow => f.write_str("a size or offset of the rewritten file overflows"),
            RewriteError::Read(e) => write!(f, "reading: {e}"),
            RewriteError::Write(e) => write!(f, "writing: {e}"),
        }
    }
}

impl std::error::Error for RewriteError {}

/// How the new file lays tensor data out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layout {
    /// The data section copied as one block (from its start to the end of
    /// the file): no tensor offset changes, and the alignment must stay.
    #[default]
    Kept,
    /// Each tensor copied on its own, in tensor-info order, at the next
    /// offset aligned to the new alignment, zero padding between tensors
    /// and after the last; the infos' offsets rewritten to match.
    Packed,
}

/// A piece of the new file after its head.
#[derive(Clone, Debug, PartialEq)]
enum Segment {
    /// Bytes of the source, from this absolute offset.
    Copy { from: u64, len: u64 },
    /// Zero bytes (padding).
    Zeros(u64),
}

impl Segment {
    fn len(&self) -> u64 {
        match self {
            Segment::Copy { len, .. } | Segment::Zeros(len) => *len,
        }
    }
}

/// A planned rewrite: the new metadata (header, pairs, tensor infos and
/// the padding to the data section) and the pieces of the source copied
/// after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rewrite {
    head: Vec<u8>,
    segments: Vec<Segment>,
    copy_len: u64,
    tail_len: u64,
    data_start: (u64, u64),
    applied: Vec<Applied>,
}

/// `n` as a `usize` index, or [`RewriteError::Overflow`].
fn index(n: u64) -> Result<usize, RewriteError> {
    usize::try_from(n).map_err(|_| RewriteError::Overflow)
}

fn u64_of(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn put_u32(out: &mut Vec<u8>, order: ByteOrder, v: u32) {
    out.extend_from_slice(&match order {
        ByteOrder::LittleEndian => v.to_le_bytes(),
        ByteOrder::BigEndian => v.to_be_bytes(),
    });
}

fn put_u64(out: &mut Vec<u8>, order: ByteOrder, v: u64) {
    out.extend_from_slice(&match order {
        ByteOrder::LittleEndian => v.to_le_bytes(),
        ByteOrder::BigEndian => v.to_be_bytes(),
    });
}

/// The alignment a `general.alignment` value gives, as readers lay data out.
fn alignment_of(value: Option<&OwnedValue>) -> u64 {
    match value {
        Some(OwnedValue::U32(a)) if *a > 0 => u64::from(*a),
        _ => crate::limits::DEFAULT_ALIGNMENT,
    }
}

impl Rewrite {
    /// Plans the rewrite of the file parsed as `parsed` from `metadata` (a
    /// prefix of the file holding all of its metadata, the bytes the parse
    /// borrows) with `changes`.
    pub fn plan(parsed: &Parsed<'_>, metadata: &[u8], changes: &[Change]) -> Result<Rewrite, RewriteError> {
        Rewrite::plan_laid_out(parsed, metadata, changes, Layout::Kept)
    }

    /// [`Rewrite::plan`] with tensor data laid out as `layout` says.
    pub fn plan_laid_out(
        parsed: &Parsed<'_>,
        metadata: &[u8],
        changes: &[Change],
        layout: Layout,
    ) -> Result<Rewrite, RewriteError> {
        if let Some(e) = &parsed.fatal {
            return Err(RewriteError::NotGguf(format!(
                "its metadata does not decode at offset {} ({})",
                e.offset, e.path
            )));
        }
        for (i, c) in changes.iter().enumerate() {
            if changes.iter().take(i).any(|d| d.key() == c.key()) {
                return Err(RewriteError::Conflict(c.key().to_string()));
            }
        }
        let f = &parsed.file;
        let order = f.header.byte_order;
        let infos_start = f.tensors.first().map_or(f.infos_end, |t| t.name.offset);
        if infos_start < HEADER_BYTES || infos_start > f.infos_end {
            return Err(RewriteError::NotGguf("its tensor infos are not where the pairs end".into()));
        }
        // The pairs, each copied as its bytes unless a change names it.
        let mut pairs: Vec<u8> = Vec::new();
        let mut count = 0u64;
        let mut applied: Vec<Applied> = Vec::new();
        let mut seen = vec![false; changes.len()];
        let kvs: Vec<_> = f.kvs.iter().collect();
        for (i, kv) in kvs.iter().enumerate() {
            let start = kv.key.offset;
            let end = kvs.get(i.saturating_add(1)).map_or(infos_start, |n| n.key.offset);
            let change = changes.iter().position(|c| c.key().as_bytes() == kv.key.bytes);
            let Some(ci) = change else {
                let raw = metadata.get(index(start)?..index(end)?).ok_or(RewriteError::Overflow)?;
                pairs.extend_from_slice(raw);
                count = count.checked_add(1).ok_or(RewriteError::Overflow)?;
                continue;
            };
            let first = seen.get(ci).is_some_and(|s| !s);
            if let Some(s) = seen.get_mut(ci) {
                *s = true;
            }
            let before = Some(OwnedValue::from_value(&kv.value));
            let key = String::from_utf8_lossy(kv.key.bytes).into_owned();
            match changes.get(ci) {
                Some(Change::Set { value, .. }) if first => {
                    pairs.extend_from_slice(&encode_pair(order, kv.key.bytes, value));
                    count = count.checked_add(1).ok_or(RewriteError::Overflow)?;
                    applied.push(Applied { key, before, after: Some(value.clone()) });
                }
                // A later copy of a key that is set, or any copy of a key
                // that is removed: left out.
                _ => applied.push(Applied { key, before, after: None }),
            }
        }
        for (c, was_seen) in changes.iter().zip(&seen) {
            match c {
                Change::Set { key, value } if !was_seen => {
                    pairs.extend_from_slice(&encode_pair(order, key.as_bytes(), value));
                    count = count.checked_add(1).ok_or(RewriteError::Overflow)?;
                    applied.push(Applied { key: key.clone(), before: None, after: Some(value.clone()) });
                }
                Change::Remove { key } if !was_seen => return Err(RewriteError::Absent(key.clone())),
                _ => {}
            }
        }
        // The alignment tensor data is laid out with must stay.
        let align = f.alignment();
        let new_align = match changes.iter().find(|c| c.key() == "general.alignment") {
            Some(Change::Set { value, .. }) => alignment_of(Some(value)),
            Some(Change::Remove { .. }) => alignment_of(None),
            None => align,
        };
        if new_align != align && layout == Layout::Kept {
            return Err(RewriteError::Alignment { from: align, to: new_align });
        }
        let mut head = Vec::with_capacity(
            pairs.len().saturating_add(index(f.infos_end.saturating_sub(infos_start))?).saturating_add(64),
        );
        head.extend_from_slice(b"GGUF");
        put_u32(&mut head, order, f.header.version);
        put_u64(&mut head, order, u64_of(f.tensors.len()));
        put_u64(&mut head, order, count);
        head.extend_from_slice(&pairs);
        drop(pairs);
        let infos_at = head.len();
        let infos = metadata.get(index(infos_start)?..index(f.infos_end)?).ok_or(RewriteError::Overflow)?;
        head.extend_from_slice(infos);
        let data_start = f.data_start().ok_or(RewriteError::Overflow)?;
        let new_data_start = align_up(u64_of(head.len()), new_align).ok_or(RewriteError::Overflow)?;
        let segments = match layout {
            // The data section: from its start to the end of the file, as
            // one block. A file that ends before it (no tensors, no padding
            // or part of it) keeps what follows its infos as it is.
            Layout::Kept => match f.file_len.checked_sub(data_start) {
                Some(len) => {
                    head.resize(index(new_data_start)?, 0);
                    vec![Segment::Copy { from: data_start, len }]
                }
                None => vec![Segment::Copy { from: f.infos_end, len: f.file_len.saturating_sub(f.infos_end) }],
            },
            Layout::Packed => {
                let segments = pack(parsed, new_align, &mut head, infos_at, infos_start)?;
                if !segments.is_empty() {
                    head.resize(index(new_data_start)?, 0);
                }
                segments
            }
        };
        let mut copy_len = 0u64;
        let mut tail_len = 0u64;
        for s in &segments {
            tail_len = tail_len.checked_add(s.len()).ok_or(RewriteError::Overflow)?;
            if let Segment::Copy { len, .. } = s {
                copy_len = copy_len.checked_add(*len).ok_or(RewriteError::Overflow)?;
            }
        }
        Ok(Rewrite { head, segments, copy_len, tail_len, data_start: (data_start, new_data_start), applied })
    }

    /// The changes as made, in the order of the file's pairs (then the
    /// pairs added).
    pub fn changes(&self) -> &[Applied] {
        &self.applied
    }

    /// The new file's bytes before its data section.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Where the data section starts, before and after (where it would,
    /// for a file that ends before it).
    pub fn data_start(&self) -> (u64, u64) {
        self.data_start
    }

    /// Bytes of the source copied after the head (the data section, or
    /// for a file that ends before it, what follows its tensor infos; for
    /// [`Layout::Packed`], the tensors' bytes).
    pub fn copied_bytes(&self) -> u64 {
        self.copy_len
    }

    /// The new file's length.
    pub fn len(&self) -> u64 {
        u64_of(self.head.len()).saturating_add(self.tail_len)
    }

    /// Whether the new file is empty (never: it has a header).
    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail_len == 0
    }

    /// Writes the new file to `out`, the data section read from `src` (the
    /// source the plan was made from) through one buffer of
    /// [`COPY_STEP_BYTES`]; `progress` gets the bytes of data copied after
    /// each step. Returns the bytes written.
    pub fn write(
        &self,
        src: &dyn ByteSource,
        out: &mut dyn Write,
        progress: &dyn Fn(u64),
    ) -> Result<u64, RewriteError> {
        out.write_all(&self.head).map_err(RewriteError::Write)?;
        let longest = self.segments.iter().map(Segment::len).max().unwrap_or(0);
        let mut buf = vec![0u8; index(COPY_STEP_BYTES.min(longest))?];
        for segment in &self.segments {
            let mut done = 0u64;
            let len = segment.len();
            while done < len {
                let n = COPY_STEP_BYTES.min(len.saturating_sub(done));
                let chunk = buf.get_mut(..index(n)?).ok_or(RewriteError::Overflow)?;
                match segment {
                    Segment::Copy { from, .. } => {
                        let at = from.checked_add(done).ok_or(RewriteError::Overflow)?;
                        src.read_exact_at(at, chunk).map_err(RewriteError::Read)?;
                        progress(n);
                    }
                    Segment::Zeros(_) => chunk.fill(0),
                }
                out.write_all(chunk).map_err(RewriteError::Write)?;
                done = done.saturating_add(n);
            }
        }
        out.flush().map_err(RewriteError::Write)?;
        Ok(self.len())
    }

    /// [`Rewrite::write`] from a file to a file: the data section copied by
    /// `std::io::copy` in steps of [`COPY_STEP_BYTES`] (the kernel's
    /// `copy_file_range` where it can, else a small buffer), so it never
    /// passes through this process's memory on Linux. `out` is written from
    /// its current position; `src`'s position is moved.
    pub fn write_file(&self, src: &File, out: &mut File, progress: &dyn Fn(u64)) -> Result<u64, RewriteError> {
        out.write_all(&self.head).map_err(RewriteError::Write)?;
        let mut reader = src;
        for segment in &self.segments {
            let (from, len) = match segment {
                Segment::Copy { from, len } => (*from, *len),
                Segment::Zeros(len) => {
                    io::copy(&mut io::repeat(0).take(*len), out).map_err(RewriteError::Write)?;
                    continue;
                }
            };
            reader
                .seek(SeekFrom::Start(from))
                .map_err(|error| RewriteError::Read(ReadError::Io { offset: from, error }))?;
            let mut done = 0u64;
            while done < len {
                let want = COPY_STEP_BYTES.min(len.saturating_sub(done));
                let n = io::copy(&mut reader.take(want), out).map_err(RewriteError::Write)?;
                if n == 0 {
                    return Err(RewriteError::Read(ReadError::Shrunk {
                        offset: from.saturating_add(done),
                        len: len.saturating_sub(done),
                        opened_len: from.saturating_add(len),
                    }));
                }
                done = done.saturating_add(n);
                progress(n);
            }
        }
        out.flush().map_err(RewriteError::Write)?;
        Ok(self.len())
    }
}

/// Where [`Layout::Packed`] puts one tensor's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedTensor {
    /// Its bytes in the source: absolute offset and length.
    pub from: u64,
    /// Their length.
    pub len: u64,
    /// Its new offset in the data section.
    pub to: u64,
}

/// Where [`Layout::Packed`] puts each tensor (tensor-info order): at the
/// next offset aligned to `align` after the one before. Refused for a
/// tensor without a known size or whose bytes are not all in the file.
pub fn packed_tensors(parsed: &Parsed<'_>, align: u64) -> Result<Vec<PackedTensor>, RewriteError> {
    let f = &parsed.file;
    let data_start = f.data_start().ok_or(RewriteError::Overflow)?;
    let mut out = Vec::with_capacity(f.tensors.len());
    let mut at = 0u64;
    for t in &f.tensors {
        let name = || escape_bytes(t.name.bytes, false);
        let len = t.nbytes().ok_or_else(|| {
            RewriteError::NotGguf(format!("tensor `{}` has no known size, so its data cannot be moved", name()))
        })?;
        let from = data_start.checked_add(t.data_offset).ok_or(RewriteError::Overflow)?;
        if from.checked_add(len).is_none_or(|end| end > f.file_len) {
            return Err(RewriteError::NotGguf(format!("the data of tensor `{}` is not all in the file", name())));
        }
        out.push(PackedTensor { from, len, to: at });
        at = align_up(at.checked_add(len).ok_or(RewriteError::Overflow)?, align).ok_or(RewriteError::Overflow)?;
    }
    Ok(out)
}

/// The pieces of [`Layout::Packed`] ([`packed_tensors`]): each tensor's
/// bytes, zero padding after each to `align`; the offsets in the copied
/// infos (at `infos_at` in `head`, from `infos_start` in the file)
/// rewritten to match.
fn pack(
    parsed: &Parsed<'_>,
    align: u64,
    head: &mut [u8],
    infos_at: usize,
    infos_start: u64,
) -> Result<Vec<Segment>, RewriteError> {
    let f = &parsed.file;
    let order = f.header.byte_order;
    let placed = packed_tensors(parsed, align)?;
    let mut segments = Vec::with_capacity(placed.len().saturating_mul(2));
    for (t, p) in f.tensors.iter().zip(&placed) {
        let field = t.offset_field.checked_sub(infos_start).ok_or(RewriteError::Overflow)?;
        let field_at = index(field)?.checked_add(infos_at).ok_or(RewriteError::Overflow)?;
        let slot = head.get_mut(field_at..field_at.saturating_add(8)).ok_or(RewriteError::Overflow)?;
        slot.copy_from_slice(&match order {
            ByteOrder::LittleEndian => p.to.to_le_bytes(),
            ByteOrder::BigEndian => p.to.to_be_bytes(),
        });
        segments.push(Segment::Copy { from: p.from, len: p.len });
        let end = p.to.checked_add(p.len).ok_or(RewriteError::Overflow)?;
        let padded = align_up(end, align).ok_or(RewriteError::Overflow)?;
        if padded > end {
            segments.push(Segment::Zeros(padded.saturating_sub(end)));
        }
    }
    Ok(segments)
}

/// Whether `name` can name a chat template
/// (`tokenizer.chat_template.NAME`, [`Request::NamedChatTemplate`]):
/// lower-case ASCII letters, digits and `_`, at least one.
pub fn is_template_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The changes of a rewrite in the JSON of `edit` and `fix`: each key with
/// its value before and after (`null`: absent, removed).
pub fn changes_json(changes: &[Applied]) -> serde_json::Value {
    changes
        .iter()
        .map(|c| {
            serde_json::json!({
                "key": c.key,
                "before": c.before.as_ref().map(value_json),
                "after": c.after.as_ref().map(value_json),
            })
        })
        .collect()
}

/// The tensor-data digests in the JSON of `edit` and `fix` (`tensor_data`):
/// before, after (`null` where not computed) and whether they are equal.
pub fn digests_json(before: &Result<Digest, String>, after: &Result<Digest, String>) -> serde_json::Value {
    let digest = |d: &Result<Digest, String>| d.as_ref().map_or(serde_json::Value::Null, |d| d.to_string().into());
    serde_json::json!({
        "algorithm": "sha256",
        "before": digest(before),
        "after": digest(after),
        "unchanged": matches!((before, after), (Ok(a), Ok(b)) if a == b),
    })
}

/// The `hash` command's whole-model SHA-256 of the tensor data of the file
/// `parsed` describes, read from `src` (tensor-info order, no metadata).
pub fn tensor_digest(src: &dyn ByteSource, parsed: &Parsed<'_>) -> Result<Digest, HashError> {
    let tensors = hash::ranges_of(parsed, src.len())?;
    let parts = [Part { source: src, tensors }];
    let opts = HashOptions { algos: Algos::NONE.with(Algo::Sha256), per_tensor: false };
    let digests = hash::hash_model(&parts, &opts, &|_| {}, None)?;
    digests.model.into_iter().next().ok_or_else(|| HashError::NotGguf("no digest".into()))
}

/// Rewrites a whole file held in memory: the new bytes and the plan (its
/// changes). The file is parsed here, with the default limits.
pub fn rewrite_bytes(bytes: &[u8], changes: &[Change]) -> Result<(Vec<u8>, Rewrite), RewriteError> {
    let parsed =
        crate::parse::parse_bytes(bytes).ok_or_else(|| RewriteError::NotGguf("not a GGUF v2/v3 file".into()))?;
    let plan = Rewrite::plan(&parsed, bytes, changes)?;
    let mut out = Vec::with_capacity(index(plan.len())?);
    plan.write(&crate::io::SliceSource(bytes), &mut out, &|_| {})?;
    Ok((out, plan))
}

/// The value `text` gives a key of type `ty`.
fn parse_typed(key: &str, ty: ValueType, text: &str) -> Result<OwnedValue, RewriteError> {
    let bad = |what: &str| RewriteError::Request(format!("`{key}`: `{text}` is not {what}"));
    let t = text.trim();
    Ok(match ty {
        ValueType::String => OwnedValue::String(text.as_bytes().to_vec()),
        ValueType::U8 => OwnedValue::U8(t.parse().map_err(|_| bad("a u8"))?),
        ValueType::I8 => OwnedValue::I8(t.parse().map_err(|_| bad("an i8"))?),
        ValueType::U16 => OwnedValue::U16(t.parse().map_err(|_| bad("a u16"))?),
        ValueType::I16 => OwnedValue::I16(t.parse().map_err(|_| bad("an i16"))?),
        ValueType::U32 => OwnedValue::U32(t.parse().map_err(|_| bad("a u32"))?),
        ValueType::I32 => OwnedValue::I32(t.parse().map_err(|_| bad("an i32"))?),
        ValueType::U64 => OwnedValue::U64(t.parse().map_err(|_| bad("a u64"))?),
        ValueType::I64 => OwnedValue::I64(t.parse().map_err(|_| bad("an i64"))?),
        ValueType::F32 => OwnedValue::F32(t.parse().map_err(|_| bad("an f32"))?),
        ValueType::F64 => OwnedValue::F64(t.parse().map_err(|_| bad("an f64"))?),
        ValueType::Bool => OwnedValue::Bool(match t {
            "true" | "1" => 1,
            "false" | "0" => 0,
            _ => return Err(bad("a bool (true, false, 1 or 0)")),
        }),
        ValueType::Array => {
            return Err(RewriteError::Request(format!("`{key}` is an array, which --set cannot write")));
        }
    })
}

/// The value of `--set KEY=TEXT` for a file of architecture `arch`: typed
/// by a prefix of [`VALUE_PREFIXES`] (`u32:5`), else by the type the spec
/// or llama.cpp gives the key; refused for a key of neither without a prefix.
pub fn typed_value(key: &str, text: &str, arch: Option<&str>) -> Result<OwnedValue, RewriteError> {
    if let Some((prefix, rest)) = text.split_once(':')
        && let Some((_, ty)) = VALUE_PREFIXES.iter().find(|(p, _)| *p == prefix)
    {
        return parse_typed(key, *ty, rest);
    }
    let Some(known) = well_known_type(key, arch) else {
        let prefixes: Vec<&str> = VALUE_PREFIXES.iter().map(|(p, _)| *p).collect();
        return Err(RewriteError::Request(format!(
            "`{key}` is not a well-known key, so its type must be given: prefix the value with one of {}: (e.g. str:{text})",
            prefixes.join(": ")
        )));
    };
    let ty = ValueType::ALL.into_iter().find(|t| t.name() == known).unwrap_or(ValueType::Array);
    parse_typed(key, ty, text)
}

/// The changes `requests` ask of the file parsed as `parsed`: values typed
/// against its architecture, special tokens given as text found in its
/// vocabulary, pre-tokenizers checked against llama.cpp's list.
pub fn resolve(parsed: &Parsed<'_>, requests: &[Request]) -> Result<Vec<Change>, RewriteError> {
    let f = &parsed.file;
    let arch_kv = f.get("general.architecture");
    let arch = arch_kv.as_ref().and_then(|kv| kv.value.as_string()).and_then(|s| s.as_str());
    let mut out = Vec::with_capacity(requests.len());
    let mut named: Vec<String> = Vec::new();
    for r in requests {
        out.push(match r {
            Request::Set { key, text } => Change::Set { key: key.clone(), value: typed_value(key, text, arch)? },
            Request::Remove { key } => Change::Remove { key: key.clone() },
            Request::ChatTemplate(text) => {
                Change::Set { key: "tokenizer.chat_template".into(), value: OwnedValue::str(text) }
            }
            Request::NamedChatTemplate { name, text } => {
                if !is_template_name(name) {
                    return Err(RewriteError::Request(format!(
                        "`{name}` is not a template name: lower-case letters, digits and `_` (e.g. tool_use)"
                    )));
                }
                named.push(name.clone());
                Change::Set { key: format!("tokenizer.chat_template.{name}"), value: OwnedValue::str(text) }
            }
            Request::PreTokenizer(name) => {
                let known = known_pre_tokenizers();
                if !known.contains(&name.as_str()) {
                    return Err(RewriteError::Request(format!(
                        "`{name}` is not a pre-tokenizer llama.cpp knows; the known ones: {}",
                        known.join(", ")
                    )));
                }
                Change::Set { key: "tokenizer.ggml.pre".into(), value: OwnedValue::str(name) }
            }
            Request::SpecialToken { role, token } => {
                let Some((_, key)) = SPECIAL_TOKEN_ROLES.iter().find(|(r, _)| r == role) else {
                    let roles: Vec<&str> = SPECIAL_TOKEN_ROLES.iter().map(|(r, _)| *r).collect();
                    return Err(RewriteError::Request(format!(
                        "`{role}` is not a special-token role; the roles: {}",
                        roles.join(", ")
                    )));
                };
                Change::Set { key: (*key).to_string(), value: OwnedValue::U32(token_id(parsed, role, token)?) }
            }
        });
    }
    // Named templates are listed in `tokenizer.chat_templates`: the file's
    // names (a value that is not an array of strings is replaced) and the
    // new ones, each once.
    if !named.is_empty() {
        let mut names: Vec<OwnedValue> = match f.get("tokenizer.chat_templates").map(|kv| kv.value) {
            Some(crate::parse::Value::Array(a)) if a.elem_type == ValueType::String => {
                a.strings().map(|(_, s)| OwnedValue::String(s.bytes.to_vec())).collect()
            }
            _ => Vec::new(),
        };
        for n in &named {
            if !names.contains(&OwnedValue::str(n)) {
                names.push(OwnedValue::str(n));
            }
        }
        out.push(Change::Set {
            key: "tokenizer.chat_templates".into(),
            value: OwnedValue::Array(ValueType::String, names),
        });
    }
    Ok(out)
}

/// A special token's id: `token` as a number, or the position of the token
/// of that text in `tokenizer.ggml.tokens`; within the vocabulary.
fn token_id(parsed: &Parsed<'_>, role: &str, token: &str) -> Result<u32, RewriteError> {
    let tokens = parsed.file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied());
    let n_vocab = tokens.map(|a| a.len);
    let id = match token.trim().parse::<u32>() {
        Ok(id) => u64::from(id),
        Err(_) => {
            let Some(a) = tokens else {
                return Err(RewriteError::Request(format!(
                    "--special-token {role}: `{token}` is not a number, and the file has no vocabulary to find it in"
                )));
            };
            a.strings().position(|(_, s)| s.bytes == token.as_bytes()).map(u64_of).ok_or_else(|| {
                RewriteError::Request(format!(
                    "--special-token {role}: no token of the vocabulary is `{}`",
                    escape_bytes(token.as_bytes(), true)
                ))
            })?
        }
    };
    if let Some(n) = n_vocab
        && id >= n
    {
        return Err(RewriteError::Request(format!(
            "--special-token {role}: id {id} is outside the vocabulary of {n} tokens"
        )));
    }
    u32::try_from(id).map_err(|_| RewriteError::Request(format!("--special-token {role}: id {id} is not a u32")))
}

/// A value as a report shows it: `u32 7`, `string "…"` (long strings cut,
/// with their length), `array[string] of 32000`.
pub fn show_value(v: &OwnedValue) -> String {
    const SHOWN_CHARS: usize = 120;
    match v {
        OwnedValue::U8(x) => format!("u8 {x}"),
        OwnedValue::I8(x) => format!("i8 {x}"),
        OwnedValue::U16(x) => format!("u16 {x}"),
        OwnedValue::I16(x) => format!("i16 {x}"),
        OwnedValue::U32(x) => format!("u32 {x}"),
        OwnedValue::I32(x) => format!("i32 {x}"),
        OwnedValue::U64(x) => format!("u64 {x}"),
        OwnedValue::I64(x) => format!("i64 {x}"),
        OwnedValue::F32(x) => format!("f32 {x}"),
        OwnedValue::F64(x) => format!("f64 {x}"),
        OwnedValue::Bool(x) => format!("bool {}", if *x == 0 { "false" } else { "true" }),
        OwnedValue::String(s) => {
            let text = escape_bytes(s, true);
            if text.chars().count() > SHOWN_CHARS {
                let cut: String = text.chars().take(SHOWN_CHARS).collect();
                format!("string \"{cut}…\" ({} bytes)", s.len())
            } else {
                format!("string \"{text}\"")
            }
        }
        OwnedValue::Array(t, items) => format!("array[{t}] of {}", items.len()),
    }
}

/// A value in JSON: `{"type": "u32", "value": 7}`; strings whole (as
/// `dump` gives them: bytes that are not UTF-8 as `{"hex": ...}`), arrays as
/// their type and length.
pub fn value_json(v: &OwnedValue) -> serde_json::Value {
    use serde_json::json;
    let ty = v.value_type().name();
    match v {
        OwnedValue::U8(x) => json!({"type": ty, "value": x}),
        OwnedValue::I8(x) => json!({"type": ty, "value": x}),
        OwnedValue::U16(x) => json!({"type": ty, "value": x}),
        OwnedValue::I16(x) => json!({"type": ty, "value": x}),
        OwnedValue::U32(x) => json!({"type": ty, "value": x}),
        OwnedValue::I32(x) => json!({"type": ty, "value": x}),
        OwnedValue::U64(x) => json!({"type": ty, "value": x}),
        OwnedValue::I64(x) => json!({"type": ty, "value": x}),
        OwnedValue::F32(x) => json!({"type": ty, "value": x}),
        OwnedValue::F64(x) => json!({"type": ty, "value": x}),
        OwnedValue::Bool(x) => json!({"type": ty, "value": *x != 0}),
        OwnedValue::String(s) => match std::str::from_utf8(s) {
            Ok(text) => json!({"type": ty, "value": text}),
            Err(_) => {
                let hex: String = s.iter().map(|b| format!("{b:02x}")).collect();
                json!({"type": ty, "value": {"hex": hex}})
            }
        },
        OwnedValue::Array(t, items) => json!({"type": format!("array[{t}]"), "len": items.len()}),
    }
}

/// The first value of `key` in a parsed file, owned.
pub fn value_of(parsed: &Parsed<'_>, key: &str) -> Option<OwnedValue> {
    parsed.file.get(key).map(|kv| OwnedValue::from_value(&kv.value))
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::parse::parse_bytes;
    use crate::write::{GgufModel, OwnedTensor};

    fn corpus(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus").join(rel)
    }

    fn tiny() -> Vec<u8> {
        std::fs::read(corpus("samples/tiny-llama.gguf")).unwrap()
    }

    fn set(key: &str, value: OwnedValue) -> Change {
        Change::Set { key: key.into(), value }
    }

    /// The data section (from its start to the end) of a parsed file.
    fn data_section(bytes: &[u8]) -> &[u8] {
        let p = parse_bytes(bytes).unwrap();
        let start = p.file.data_start().unwrap().min(bytes.len() as u64) as usize;
        &bytes[start..]
    }

    fn digest(bytes: &[u8]) -> Result<Digest, String> {
        let p = parse_bytes(bytes).unwrap();
        tensor_digest(&crate::io::SliceSource(bytes), &p).map_err(|e| e.to_string())
    }

    /// Every tensor info as (name, type, dims, relative offset).
    fn infos(bytes: &[u8]) -> Vec<(Vec<u8>, u32, Vec<u64>, u64)> {
        let p = parse_bytes(bytes).unwrap();
        p.file.tensors.iter().map(|t| (t.name.bytes.to_vec(), t.type_id, t.dims().collect(), t.data_offset)).collect()
    }

    #[test]
    fn a_no_op_rewrite_of_a_canonical_file_gives_the_same_bytes() {
        let bytes = tiny();
        let (out, plan) = rewrite_bytes(&bytes, &[]).unwrap();
        assert_eq!(out, bytes);
        assert!(plan.changes().is_empty());
        assert_eq!(plan.data_start().0, plan.data_start().1);
    }

    #[test]
    fn a_set_rewrites_the_pair_in_place_and_keeps_every_other_byte_of_metadata() {
        let bytes = tiny();
        let (out, plan) = rewrite_bytes(&bytes, &[set("general.name", OwnedValue::str("renamed"))]).unwrap();
        let p = parse_bytes(&out).unwrap();
        assert!(p.fatal.is_none());
        assert_eq!(value_of(&p, "general.name"), Some(OwnedValue::str("renamed")));
        let before = parse_bytes(&bytes).unwrap();
        assert_eq!(plan.changes().len(), 1);
        assert_eq!(plan.changes()[0].before, value_of(&before, "general.name"));
        // Same keys in the same order, the other values equal.
        let keys = |p: &Parsed<'_>| p.file.kvs.keys().map(|(_, k)| k.to_vec()).collect::<Vec<_>>();
        assert_eq!(keys(&p), keys(&before));
        for (_, k) in before.file.kvs.keys() {
            let k = std::str::from_utf8(k).unwrap();
            if k != "general.name" {
                assert_eq!(value_of(&p, k), value_of(&before, k), "{k}");
            }
        }
        assert_eq!(infos(&out), infos(&bytes));
        assert_eq!(data_section(&out), data_section(&bytes));
        assert_eq!(digest(&out), digest(&bytes));
        // The data section starts aligned.
        assert_eq!(plan.data_start().1 % 32, 0);
    }

    #[test]
    fn added_and_removed_keys_move_only_the_start_of_the_data_section() {
        let bytes = tiny();
        let long = "x".repeat(5000);
        let (grown, plan) = rewrite_bytes(&bytes, &[set("edit.note", OwnedValue::str(&long))]).unwrap();
        assert!(plan.data_start().1 > plan.data_start().0);
        assert_eq!(plan.changes()[0].before, None);
        let p = parse_bytes(&grown).unwrap();
        assert_eq!(p.file.header.kv_count, parse_bytes(&bytes).unwrap().file.header.kv_count + 1);
        assert_eq!(value_of(&p, "edit.note"), Some(OwnedValue::str(&long)));
        let (shrunk, plan) = rewrite_bytes(&grown, &[Change::Remove { key: "edit.note".into() }]).unwrap();
        assert_eq!(plan.changes()[0].after, None);
        // Removing what was added gives the original back.
        assert_eq!(shrunk, bytes);
        assert_eq!(digest(&grown), digest(&bytes));
    }

    #[test]
    fn changes_that_cannot_be_made_are_refused() {
        let bytes = tiny();
        let err = rewrite_bytes(&bytes, &[set("general.alignment", OwnedValue::U32(64))]).err();
        assert!(matches!(err, Some(RewriteError::Alignment { from: 32, to: 64 })), "{err:?}");
        // The alignment in effect, written out, is no change of layout.
        assert!(rewrite_bytes(&bytes, &[set("general.alignment", OwnedValue::U32(32))]).is_ok());
        let err = rewrite_bytes(&bytes, &[Change::Remove { key: "no.such.key".into() }]).err();
        assert!(matches!(&err, Some(RewriteError::Absent(k)) if k == "no.such.key"), "{err:?}");
        let twice = [set("general.name", OwnedValue::str("a")), Change::Remove { key: "general.name".into() }];
        assert!(matches!(rewrite_bytes(&bytes, &twice).err(), Some(RewriteError::Conflict(_))));
        assert!(matches!(rewrite_bytes(b"GGUF", &[]).err(), Some(RewriteError::NotGguf(_))));
        let mut cut = bytes.clone();
        cut.truncate(40);
        assert!(rewrite_bytes(&cut, &[]).is_err());
    }

    #[test]
    fn a_file_with_a_declared_alignment_keeps_it_and_its_layout() {
        let mut m = GgufModel::new();
        m.kv("general.alignment", OwnedValue::U32(64)).kv("general.name", OwnedValue::str("a"));
        let mut t = OwnedTensor::zeroed("w", &[64, 2], crate::types::GgmlType::F32).unwrap();
        t.data.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        m.tensor(t.clone());
        t.name = b"v".to_vec();
        m.tensor(t);
        m.canonical().unwrap();
        let bytes = m.to_bytes();
        for name in ["ab", &"long name ".repeat(40)] {
            let (out, plan) = rewrite_bytes(&bytes, &[set("general.name", OwnedValue::str(name))]).unwrap();
            assert_eq!(plan.data_start().1 % 64, 0);
            assert_eq!(data_section(&out), data_section(&bytes));
            assert_eq!(infos(&out), infos(&bytes));
            assert_eq!(digest(&out), digest(&bytes));
        }
    }

    #[test]
    fn a_big_endian_file_is_rewritten_in_its_byte_order() {
        let bytes = std::fs::read(corpus("gguf/i_big_endian_v3.gguf")).unwrap();
        let (out, _) =
            rewrite_bytes(&bytes, &[set("general.name", OwnedValue::str("be")), set("x.n", OwnedValue::U32(7))])
                .unwrap();
        let p = parse_bytes(&out).unwrap();
        assert_eq!(p.file.header.byte_order, ByteOrder::BigEndian);
        assert!(p.fatal.is_none());
        assert_eq!(value_of(&p, "general.name"), Some(OwnedValue::str("be")));
        assert_eq!(value_of(&p, "x.n"), Some(OwnedValue::U32(7)));
        assert_eq!(data_section(&out), data_section(&bytes));
    }

    #[test]
    fn a_set_key_with_duplicates_is_left_once() {
        let mut m = GgufModel::new();
        m.kv("a", OwnedValue::U32(1)).kv("b", OwnedValue::U32(2)).kv("a", OwnedValue::U32(3));
        let bytes = m.to_bytes();
        let (out, plan) = rewrite_bytes(&bytes, &[set("a", OwnedValue::U32(9))]).unwrap();
        let p = parse_bytes(&out).unwrap();
        let keys: Vec<&[u8]> = p.file.kvs.keys().map(|(_, k)| k).collect();
        assert_eq!(keys, [&b"a"[..], b"b"]);
        assert_eq!(value_of(&p, "a"), Some(OwnedValue::U32(9)));
        assert_eq!(plan.changes().len(), 2);
        assert_eq!(plan.changes()[1].after, None);
    }

    #[test]
    fn writing_file_to_file_gives_the_bytes_of_the_buffered_copy() {
        let bytes = tiny();
        let dir = gguf_validate_testkit::tmp::TempDir::new("rewrite");
        let src_path = dir.join("in.gguf");
        std::fs::write(&src_path, &bytes).unwrap();
        let parsed = parse_bytes(&bytes).unwrap();
        let plan = Rewrite::plan(&parsed, &bytes, &[set("general.name", OwnedValue::str("file to file"))]).unwrap();
        let mut buffered = Vec::new();
        let copied = std::cell::Cell::new(0u64);
        plan.write(&crate::io::SliceSource(&bytes), &mut buffered, &|n| copied.set(copied.get() + n)).unwrap();
        assert_eq!(copied.get(), plan.copied_bytes());
        let out_path = dir.join("out.gguf");
        let mut out = std::fs::File::create(&out_path).unwrap();
        let src = std::fs::File::open(&src_path).unwrap();
        assert_eq!(plan.write_file(&src, &mut out, &|_| {}).unwrap(), plan.len());
        drop(out);
        assert_eq!(std::fs::read(&out_path).unwrap(), buffered);
        assert_eq!(buffered.len() as u64, plan.len());
    }

    /// Every corpus file that parses, rewritten with no change, with its
    /// metadata grown and shrunk: the tensor data digest is unchanged, the
    /// data section and the tensor infos are the same bytes.
    #[test]
    fn tensor_data_is_unchanged_on_every_corpus_file_that_parses() {
        let mut files = Vec::new();
        for (dir, prefix) in [("gguf", "y_"), ("models", ""), ("diffusion", "")] {
            for e in std::fs::read_dir(corpus(dir)).unwrap() {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.starts_with(prefix) && name.ends_with(".gguf") {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(files.len() > 200, "{}", files.len());
        let mut checked = 0;
        let mut hashed = 0;
        for path in &files {
            let bytes = std::fs::read(path).unwrap();
            let Some(parsed) = parse_bytes(&bytes) else { continue };
            if parsed.fatal.is_some() {
                continue;
            }
            // Shrink: remove the last pair that is not the alignment.
            let last = parsed
                .file
                .kvs
                .keys()
                .map(|(_, k)| String::from_utf8_lossy(k).into_owned())
                .filter(|k| k != "general.alignment")
                .last();
            let before = digest(&bytes);
            let edits: Vec<Vec<Change>> = vec![
                vec![],
                vec![
                    set("general.name", OwnedValue::str(&"grown ".repeat(300))),
                    set("edit.added", OwnedValue::U32(1)),
                ],
                last.iter().map(|k| Change::Remove { key: k.clone() }).collect(),
            ];
            for changes in &edits {
                let keys: Vec<&str> = changes.iter().map(Change::key).collect();
                let shown = format!("{} {keys:?}", path.display());
                let (out, plan) = rewrite_bytes(&bytes, changes).unwrap_or_else(|e| panic!("{shown}: {e}"));
                let p = parse_bytes(&out).unwrap();
                assert!(p.fatal.is_none(), "{shown}: {:?}", p.fatal);
                assert_eq!(infos(&out), infos(&bytes), "{shown}");
                assert_eq!(data_section(&out), data_section(&bytes), "{shown}");
                // A file whose data cannot be hashed (a tensor past the
                // end) cannot be after either; its data section is the same.
                match (&before, digest(&out)) {
                    (Ok(a), Ok(b)) => assert_eq!(*a, b, "{shown}"),
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{shown}: {a:?} before, {b:?} after"),
                }
                assert_eq!(out.len() as u64, plan.len());
                if changes.is_empty() {
                    assert_eq!(plan.data_start().0, plan.data_start().1, "{shown}");
                    // The same bytes, but for padding before the data that was not zeros.
                    let pad =
                        &bytes[parsed.file.infos_end as usize..plan.data_start().0.min(bytes.len() as u64) as usize];
                    assert!(out == bytes || pad.iter().any(|b| *b != 0), "{shown}");
                }
            }
            checked += 1;
            hashed += usize::from(before.is_ok());
        }
        assert!(checked > 200 && hashed > 200, "{checked} files rewritten, {hashed} hashed");
    }

    fn resolved(requests: &[Request]) -> Result<Vec<Change>, RewriteError> {
        let bytes = tiny();
        let parsed = parse_bytes(&bytes).unwrap();
        resolve(&parsed, requests)
    }

    #[test]
    fn values_are_typed_by_prefix_or_by_the_keys_well_known_type() {
        let req = |key: &str, text: &str| Request::Set { key: key.into(), text: text.into() };
        let one = |r: Request| resolved(&[r]).map(|mut c| c.remove(0));
        assert_eq!(one(req("general.name", "str:u32:7")).ok(), Some(set("general.name", OwnedValue::str("u32:7"))));
        assert_eq!(one(req("general.name", "Tiny")).ok(), Some(set("general.name", OwnedValue::str("Tiny"))));
        assert_eq!(one(req("x.n", "u32:7")).ok(), Some(set("x.n", OwnedValue::U32(7))));
        assert_eq!(one(req("x.n", "i32:-7")).ok(), Some(set("x.n", OwnedValue::I32(-7))));
        assert_eq!(one(req("x.n", "f32:0.5")).ok(), Some(set("x.n", OwnedValue::F32(0.5))));
        assert_eq!(one(req("x.n", "bool:true")).ok(), Some(set("x.n", OwnedValue::Bool(1))));
        // The architecture's keys and the tokenizer's take llama.cpp's types.
        assert_eq!(
            one(req("llama.context_length", "4096")).ok(),
            Some(set("llama.context_length", OwnedValue::U32(4096)))
        );
        assert_eq!(
            one(req("tokenizer.ggml.add_bos_token", "false")).ok(),
            Some(set("tokenizer.ggml.add_bos_token", OwnedValue::Bool(0)))
        );
        assert!(matches!(one(req("x.n", "7")), Err(RewriteError::Request(m)) if m.contains("prefix")));
        assert!(matches!(one(req("x.n", "u32:-1")), Err(RewriteError::Request(m)) if m.contains("not a u32")));
        assert!(matches!(one(req("x.n", "bool:yes")), Err(RewriteError::Request(_))));
        assert!(matches!(one(req("tokenizer.ggml.tokens", "a")), Err(RewriteError::Request(m)) if m.contains("array")));
    }

    #[test]
    fn pre_tokenizers_and_special_tokens_are_checked_against_llama_cpp_and_the_vocabulary() {
        let ok = resolved(&[Request::PreTokenizer("llama-bpe".into())]).unwrap();
        assert_eq!(ok, [set("tokenizer.ggml.pre", OwnedValue::str("llama-bpe"))]);
        let err = resolved(&[Request::PreTokenizer("llama-bpee".into())]).err().map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains("not a pre-tokenizer") && e.contains("qwen2")), "{err:?}");
        let tok = |role: &str, token: &str| Request::SpecialToken { role: role.into(), token: token.into() };
        assert_eq!(resolved(&[tok("eos", "2")]).unwrap(), [set("tokenizer.ggml.eos_token_id", OwnedValue::U32(2))]);
        assert_eq!(resolved(&[tok("pad", "0")]).unwrap(), [set("tokenizer.ggml.padding_token_id", OwnedValue::U32(0))]);
        let bytes = tiny();
        let parsed = parse_bytes(&bytes).unwrap();
        let vocab = parsed.file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()).unwrap();
        let (_, third) = vocab.strings().nth(2).unwrap();
        let text = third.as_str().unwrap().to_string();
        let by_text = resolve(&parsed, &[tok("eot", &text)]).unwrap();
        let first_of_text = vocab.strings().position(|(_, s)| s.bytes == text.as_bytes()).unwrap() as u32;
        assert_eq!(by_text, [set("tokenizer.ggml.eot_token_id", OwnedValue::U32(first_of_text))]);
        let err = resolved(&[tok("eos", &vocab.len.to_string())]).err().map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains("outside the vocabulary")), "{err:?}");
        let err = resolved(&[tok("bogus", "1")]).err().map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains("fim_pre")), "{err:?}");
        assert!(resolved(&[tok("eos", "no such token text \u{1}")]).is_err());
        assert_eq!(
            resolved(&[Request::ChatTemplate("{{ x }}".into())]).unwrap(),
            [set("tokenizer.chat_template", OwnedValue::str("{{ x }}"))]
        );
    }

    #[test]
    fn values_are_shown_short_and_in_json_whole() {
        assert_eq!(show_value(&OwnedValue::U32(7)), "u32 7");
        assert_eq!(show_value(&OwnedValue::str("a\nb")), "string \"a\\nb\"");
        assert!(show_value(&OwnedValue::str(&"y".repeat(500))).ends_with("…\" (500 bytes)"));
        assert_eq!(show_value(&OwnedValue::Array(ValueType::U8, vec![OwnedValue::U8(1)])), "array[u8] of 1");
        assert_eq!(value_json(&OwnedValue::str("a\nb"))["value"], "a\nb");
        assert_eq!(value_json(&OwnedValue::String(vec![0xff]))["value"]["hex"], "ff");
        assert_eq!(value_json(&OwnedValue::Bool(1))["value"], true);
    }
}
