//! Rules on the header: magic, version, byte order; and the fatal
//! decoding failures, each mapped to its rule with a message.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::parse::{self, ByteOrder, DecodeKind, Detected, Header};
use crate::report::{FileFormat, Sink, Summary};
use crate::rules::RuleId;

use super::Stop;

/// What the header allows: go on with a GGUF v2/v3 file, or stop with a
/// finished verdict (not GGUF, a version no reader reads, a truncated
/// header).
pub(crate) enum Outcome {
    /// Parse the body with this version and byte order.
    Body { version: u32, order: ByteOrder },
    /// Nothing more to read: the format, version, byte order and summary
    /// of the report.
    Done(FileFormat, Option<u32>, Option<ByteOrder>, Box<Summary>),
}

/// Judges what [`parse::detect`] found in the first bytes of a file of
/// `file_len` bytes (`complete` when they are the whole file).
pub(crate) fn check_detected(
    detected: Detected,
    prefix: &[u8],
    file_len: u64,
    sink: &mut Sink<'_>,
) -> Result<Outcome, Stop> {
    let prefix_len = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
    let complete = prefix_len >= file_len;
    let need_header = |n: u64| if complete || prefix_len >= n { Ok(()) } else { Err(Stop::More(n.min(file_len))) };
    let summary = Summary { file_size: file_len, ..Summary::default() };
    match detected {
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
            Ok(Outcome::Done(FileFormat::Gguf, None, None, Box::new(summary)))
        }
        Detected::Unknown { magic } => {
            if could_be_pointer(prefix) {
                // A pointer is a few hundred bytes: all of it (and never a
                // verdict from a part of its first line) names it.
                need_header(file_len.min(POINTER_MAX))?;
            }
            if let Some((kind, fix)) = pointer_kind(prefix) {
                let what = pointer_fields(prefix);
                sink.emit(RuleId::PointerFile, 0, || "file".into(), || {
                    format!("this is a {kind} pointer file ({file_len} bytes{what}), not the model: the checkout did not fetch the large-file objects; {fix}")
                });
                return Ok(Outcome::Done(FileFormat::Unknown, None, None, Box::new(summary)));
            }
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
            Ok(Outcome::Done(FileFormat::Unknown, None, None, Box::new(summary)))
        }
        Detected::SwappedMagic => {
            sink.emit(RuleId::Magic, 0, || "header.magic".into(), || {
                "the file starts with `FUGG`, the GGUF magic byte-swapped; ggml and gguf-py always write the bytes `GGUF`, also in big-endian files".into()
            });
            Ok(Outcome::Done(FileFormat::Unknown, None, None, Box::new(summary)))
        }
        // Dispatched before (see `crate::validate`); judged as unknown here.
        Detected::Legacy { .. } => Ok(Outcome::Done(FileFormat::Unknown, None, None, Box::new(summary))),
        Detected::GgufBadVersion { version } => {
            let msg = match version {
                0 => "version 0 is not a GGUF version".to_string(),
                v if v & 0xFFFF == 0 => format!("version word 0x{v:08x} is not 2 or 3 in either byte order"),
                v => format!("version {v} is newer than 3, the latest GGUF version"),
            };
            sink.emit(RuleId::VersionUnsupported, 4, || "header.version".into(), || msg);
            Ok(Outcome::Done(FileFormat::Gguf, Some(version), None, Box::new(summary)))
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
            Ok(Outcome::Done(FileFormat::Gguf, Some(1), Some(order), Box::new(s)))
        }
        Detected::Gguf { version, order } => Ok(Outcome::Body { version, order }),
    }
}

/// Notes on a GGUF v2/v3 header: big-endian files, version 2.
pub(crate) fn check_header(header: &Header, sink: &mut Sink<'_>) {
    if header.byte_order == ByteOrder::BigEndian {
        sink.emit(RuleId::ByteOrderBigEndian, 4, || "header.version".into(), || {
            "big-endian file (version field byte-swapped); validated in big-endian order. ggml loads it only on big-endian hosts".into()
        });
    }
    if header.version == 2 {
        sink.emit(
            RuleId::VersionTwo,
            4,
            || "header.version".into(),
            || "GGUF v2; current writers produce v3 (same layout)".into(),
        );
    }
}

/// The rule and message of a fatal decoding failure.
pub(crate) fn fatal_message(kind: &DecodeKind) -> (RuleId, String) {
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
        DecodeKind::OverLimit { what, declared, limit } => (
            RuleId::MetadataLimit,
            match *what {
                "metadata bytes" => format!(
                    "the metadata runs to byte {declared} or further, past the {limit} bytes of metadata this run reads; not decoded further (a resource limit of the validator, not a rule of the format)"
                ),
                _ => format!(
                    "{what} {declared} is over the limit of {limit} this run reads; not decoded further (a resource limit of the validator, not a rule of the format)"
                ),
            },
        ),
        DecodeKind::DimsExceedFile { n_dims, remaining } => (
            RuleId::DimsExceedFile,
            format!(
                "n_dims {n_dims} needs {} bytes of dims but only {remaining} are left",
                u64::from(*n_dims).saturating_mul(8)
            ),
        ),
    }
}

/// The most bytes a pointer file is read for its fields.
const POINTER_MAX: u64 = 1024;

/// How the pointers this tool names start.
const LFS_STARTS: [&[u8]; 2] =
    [b"version https://git-lfs.github.com/spec/", b"version https://hawser.github.com/spec/"];
const XET_START: &[u8] = b"# xet version";

/// Whether `prefix` starts a pointer, or is the start of one's first line.
fn could_be_pointer(prefix: &[u8]) -> bool {
    LFS_STARTS
        .iter()
        .chain(std::iter::once(&XET_START))
        .any(|sig| if prefix.len() < sig.len() { sig.starts_with(prefix) } else { prefix.starts_with(sig) })
}

/// A Git LFS pointer (`version https://git-lfs.github.com/spec/v1`, or the
/// pre-release `hawser` URL) or a git-xet pointer (`# xet version`): its
/// kind and how to get the file instead.
fn pointer_kind(prefix: &[u8]) -> Option<(&'static str, &'static str)> {
    if LFS_STARTS.iter().any(|p| prefix.starts_with(p)) {
        return Some((
            "Git LFS",
            "check out with `lfs: true` (actions/checkout), or run `git lfs pull`, and validate the file it fetches",
        ));
    }
    if prefix.starts_with(XET_START) {
        return Some((
            "git-xet",
            "run `git xet checkout` (or fetch the file from the Hub), and validate the file it fetches",
        ));
    }
    None
}

/// `, oid sha256:..., size N` from a pointer's first bytes (each field
/// when present, at most 80 characters of each).
fn pointer_fields(prefix: &[u8]) -> String {
    let head = prefix.get(..prefix.len().min(1024)).unwrap_or_default();
    let text = String::from_utf8_lossy(head);
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim();
        for key in ["oid ", "size ", "hash ", "filesize "] {
            if let Some(v) = line.strip_prefix(key) {
                let v: String = v.chars().filter(|c| !c.is_control()).take(80).collect();
                out.push_str(&format!(", {}{v}", key));
            }
        }
    }
    out
}
