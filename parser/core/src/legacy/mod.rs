//! Formats that are not GGUF: rwkv.cpp checkpoints and the llama.cpp
//! formats GGUF replaced (unversioned GGML, GGMF, GGJT v1-v3).
//!
//! Each format has a parser (bytes in, a borrowed description out; it stops
//! only where the rest of the file cannot be read) and a checker that runs
//! the `rwkv-*` / `legacy-*` rules of [`crate::rules`] over what was parsed:
//! - [`rwkv`]: rwkv.cpp `.bin` (magic `fmgg`, versions 100/101), rwkv.cpp's
//!   native format; a valid file validates as VALID with format `rwkv-cpp`.
//! - [`ggml`]: GGML, GGMF and GGJT. These always get the fatal
//!   `legacy-format` error (current llama.cpp cannot load them) plus the
//!   structural rules, and the report names the type table applied.
//! - [`write`](mod@write): a minimal writer of both, for tests and the corpus.
//!
//! All three formats interleave headers and data, so validation needs the
//! whole file (the [`crate::Validator`] asks for it with [`NeedMoreData`]).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

pub mod ggml;
pub mod rwkv;
pub mod write;

use crate::data::DataTensor;
use crate::parse::NeedMoreData;
use crate::parse::{ByteOrder, Ctx, Detected, LegacyFormat, detect};
use crate::report::{FileFormat, Judging, Report, Sink, Summary};
use crate::rules::RuleId;

/// A finding that stops decoding: its rule (a fatal one), where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fatal {
    /// The fatal rule.
    pub rule: RuleId,
    /// Absolute offset of the field that could not be read.
    pub offset: u64,
    /// Field path, e.g. `param[3] blocks.0.ln1.weight/data`.
    pub path: String,
    /// What went wrong, with the values involved.
    pub message: String,
}

/// A read that ran past the end of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Short {
    /// Where the read started.
    pub(crate) offset: u64,
    /// Bytes it needed.
    pub(crate) need: u64,
    /// Bytes that were left.
    pub(crate) have: u64,
}

impl Short {
    /// A [`Fatal`] of `rule` describing this short read of `what`.
    pub(crate) fn fatal(self, rule: RuleId, path: String, what: &str) -> Fatal {
        Fatal {
            rule,
            offset: self.offset,
            path,
            message: format!(
                "the file ends inside the {what}: {} bytes needed at offset 0x{:x}, {} left",
                self.need, self.offset, self.have
            ),
        }
    }
}

/// A little-endian cursor over a whole file, built on the parser's
/// [`Ctx`] readers (nom underneath). Every read is checked against the
/// bytes left; nothing is allocated from a length read from the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    ctx: Ctx<'a>,
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at offset 0 of `buf`, the whole file.
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        let file_len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        Reader {
            ctx: Ctx {
                buf,
                file_len,
                order: ByteOrder::LittleEndian,
                base: 0,
                limits: crate::limits::MetadataLimits::UNBOUNDED,
                spans: &[],
            },
            rest: buf,
        }
    }

    /// Absolute offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.ctx.offset(self.rest)
    }

    /// Bytes left after the cursor.
    pub(crate) fn remaining(&self) -> u64 {
        self.ctx.remaining(self.rest)
    }

    /// Whether the cursor is at the end of the file.
    pub(crate) fn at_end(&self) -> bool {
        self.rest.is_empty()
    }

    fn short(&self, need: u64) -> Short {
        Short { offset: self.offset(), need, have: self.remaining() }
    }

    /// A little-endian u32.
    pub(crate) fn u32(&mut self) -> Result<u32, Short> {
        match self.ctx.u32(self.rest, "u32") {
            Ok((rest, v)) => {
                self.rest = rest;
                Ok(v)
            }
            Err(_) => Err(self.short(4)),
        }
    }

    /// `n` raw bytes.
    pub(crate) fn bytes(&mut self, n: u64) -> Result<&'a [u8], Short> {
        if n > self.remaining() {
            return Err(self.short(n));
        }
        match self.ctx.take(self.rest, n, "bytes") {
            Ok((rest, v)) => {
                self.rest = rest;
                Ok(v)
            }
            Err(_) => Err(self.short(n)),
        }
    }
}

/// Element count of a shape: the product of the dims, `None` on overflow.
pub(crate) fn element_count(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d))
}

/// Validates a legacy file of `file_len` bytes whose first `prefix.len()`
/// bytes are in `prefix`, recognised as `format` (with its `version`) by
/// [`crate::parse::detect`]. These formats interleave headers and data, so
/// for rwkv.cpp, GGML, GGMF and GGJT the whole file is needed: a shorter
/// prefix gives `Err(NeedMoreData(file_len))`.
///
/// An `fmgg` file whose version is neither 1 (GGMF) nor 100/101 (rwkv.cpp)
/// is read as rwkv.cpp when the version is above 101 (`rwkv-version`) and
/// as GGMF otherwise (`legacy-version`).
pub(crate) fn validate(
    prefix: &[u8],
    file_len: u64,
    format: LegacyFormat,
    version: Option<u32>,
    judging: Judging<'_>,
) -> Result<(Report, Vec<Report>), NeedMoreData> {
    let opts = judging.options;
    let mut sink = Sink::judging(judging);
    let mut summary = Summary { file_size: file_len, ..Summary::default() };
    let format = effective_format(format, version);
    let needs_whole_file =
        matches!(format, LegacyFormat::Rwkv | LegacyFormat::Ggml | LegacyFormat::Ggmf | LegacyFormat::Ggjt);
    let prefix_len = u64::try_from(prefix.len()).unwrap_or(u64::MAX);
    if needs_whole_file && prefix_len < file_len {
        return Err(NeedMoreData(file_len));
    }
    let (version, order) = match format {
        LegacyFormat::Rwkv => {
            let file = rwkv::parse(prefix);
            rwkv::check(&file, &mut sink, &mut summary);
            (file.header.map(|h| h.version).or(version), Some(ByteOrder::LittleEndian))
        }
        LegacyFormat::Ggml | LegacyFormat::Ggmf | LegacyFormat::Ggjt => {
            emit_legacy_format(&mut sink, format, version);
            let file = ggml::parse(prefix, format, version);
            ggml::check(&file, &mut sink, &mut summary);
            (version, Some(ByteOrder::LittleEndian))
        }
        LegacyFormat::Ggla | LegacyFormat::Ggsn | LegacyFormat::Ggsq => {
            emit_legacy_format(&mut sink, format, version);
            (version, None)
        }
    };
    Ok(sink.finish_judged(opts.profile, FileFormat::Legacy(format), version, order, summary))
}

/// The format to parse as: `fmgg` with a version above 101 is taken for a
/// damaged rwkv.cpp file (GGMF only ever had version 1).
fn effective_format(format: LegacyFormat, version: Option<u32>) -> LegacyFormat {
    match (format, version) {
        (LegacyFormat::Ggmf, Some(v)) if v > 101 => LegacyFormat::Rwkv,
        _ => format,
    }
}

fn emit_legacy_format(sink: &mut Sink<'_>, format: LegacyFormat, version: Option<u32>) {
    sink.emit(
        RuleId::LegacyFormat,
        0,
        || "header.magic".into(),
        || {
            let version = version.filter(|_| format != LegacyFormat::Ggml);
            format!(
                "this is {}, not GGUF; convert it to GGUF before current llama.cpp can load it",
                format.describe(version)
            )
        },
    );
}

/// Detects a legacy format from the first bytes, with the same rule for
/// ambiguous `fmgg` versions as [`validate`].
fn detect_legacy(bytes: &[u8]) -> Option<(LegacyFormat, Option<u32>)> {
    match detect(bytes) {
        Detected::Legacy { format, version } => Some((effective_format(format, version), version)),
        _ => None,
    }
}

/// The tensors of a whole legacy file whose data can be read with the
/// current ggml types of [`crate::numerics`], for `--check-data` and
/// `dump --tensor --dequant`. Left out: tensors whose data is not fully in
/// the file, and tensors whose era block layout differs from the current
/// one (rwkv.cpp version 100 quantized types; GGML, GGMF and GGJT v1
/// quantized types; Q4_0, Q4_1, Q8_0 in GGJT v2; Q8_1 before GGUF).
/// Empty for GGUF and unknown files.
pub fn data_tensors(bytes: &[u8]) -> Vec<DataTensor> {
    match detect_legacy(bytes) {
        Some((LegacyFormat::Rwkv, _)) => rwkv::data_tensors(&rwkv::parse(bytes)),
        Some((format @ (LegacyFormat::Ggml | LegacyFormat::Ggmf | LegacyFormat::Ggjt), version)) => {
            ggml::data_tensors(&ggml::parse(bytes, format, version))
        }
        _ => Vec::new(),
    }
}

/// A canonical JSON description of a whole legacy file (format, version,
/// hyper-parameters, vocabulary summary, tensors with name, dims, type,
/// offset and size), or `None` when `bytes` is not rwkv.cpp, GGML, GGMF or
/// GGJT. A file that cannot be read to the end is described up to the
/// failure, with `"complete": false` and the `"error"`.
pub fn dump(bytes: &[u8]) -> Option<serde_json::Value> {
    match detect_legacy(bytes)? {
        (LegacyFormat::Rwkv, _) => Some(rwkv::dump(&rwkv::parse(bytes))),
        (format @ (LegacyFormat::Ggml | LegacyFormat::Ggmf | LegacyFormat::Ggjt), version) => {
            Some(ggml::dump(&ggml::parse(bytes, format, version)))
        }
        _ => None,
    }
}
