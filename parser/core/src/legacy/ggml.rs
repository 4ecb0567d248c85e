//! GGML (unversioned), GGMF v1 and GGJT v1-v3: the llama.cpp model formats
//! GGUF replaced. Parser, era type tables and rules.
//!
//! Layout (llama.cpp `convert_llama_ggml_to_gguf.py`; all little-endian
//! u32): magic, a version (GGMF, GGJT only), seven llama hyper-parameters
//! (n_vocab, n_embd, n_mult, n_head, n_layer, n_rot, ftype), n_vocab
//! vocabulary entries (u32 length, bytes, and for GGMF/GGJT an f32 score),
//! then tensors until the end of the file: n_dims, name_len, type,
//! ne\[n_dims\], name, (GGJT only) zero padding to the next absolute 32-byte
//! offset, data.
//!
//! Type ids and block layouts moved during 2023, so the tensor type table
//! depends on the format ([`type_table`]):
//! - [`TABLE_2023_04`] for GGML, GGMF and GGJT v1 (before ggml `fe48e22f`,
//!   2023-05-14): Q4_0/Q4_1/Q8_0 with f32 scales, Q4_2 and Q4_3 still present,
//!   nibbles interleaved; no quantized block has the current layout.
//! - [`TABLE_2023_05`] for GGJT v2 (ggml `fe48e22f`): Q5_0/Q5_1 have the
//!   current layout; Q4_0, Q4_1, Q8_0 still have f32 scales.
//! - [`TABLE_2023_06`] for GGJT v3 (ggml `b0d536bb`, k-quants `93b94a2d`):
//!   current layouts except Q8_1 (f32 d and s, 40 bytes); the integer types
//!   are I8/I16/I32 = 16/17/18 (now 24/25/26, and 16-18 are IQ types).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value as Json, json};

use super::{Fatal, Reader, element_count};
use crate::data::DataTensor;
use crate::limits;
use crate::parse::{ByteOrder, LegacyFormat, quote_bytes};
use crate::report::{Sink, Summary};
use crate::rules::RuleId;
use crate::types::GgmlType;

/// One row of an era type table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraType {
    /// The type id written in the file.
    pub id: u32,
    /// ggml's name of the type at the time.
    pub name: &'static str,
    /// Elements per block.
    pub block_size: u32,
    /// Bytes per block in this era.
    pub type_size: u32,
    /// The current ggml type with the same block layout, if there is one.
    pub current: Option<GgmlType>,
}

impl EraType {
    /// True for block-quantized types.
    pub fn is_quantized(&self) -> bool {
        self.block_size > 1
    }
}

/// A tensor type table of one ggml era.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeTable {
    /// Stable name, e.g. `ggml-2023-06`.
    pub name: &'static str,
    /// The formats it applies to.
    pub applies_to: &'static str,
    /// The ggml source it follows.
    pub source: &'static str,
    /// The ids of the era.
    pub types: &'static [EraType],
}

impl TypeTable {
    /// The row of `id`.
    pub fn get(&self, id: u32) -> Option<&'static EraType> {
        self.types.iter().find(|t| t.id == id)
    }
}

const fn era(id: u32, name: &'static str, block_size: u32, type_size: u32, current: Option<GgmlType>) -> EraType {
    EraType { id, name, block_size, type_size, current }
}

/// GGML, GGMF and GGJT v1 (ggml `abea4b76`, 2023-04-27).
pub const TABLE_2023_04: TypeTable = TypeTable {
    name: "ggml-2023-04",
    applies_to: "GGML, GGMF v1, GGJT v1",
    source: "ggml abea4b76 (2023-04-27) include/ggml/ggml.h and ggml.c block structs",
    types: &[
        era(0, "f32", 1, 4, Some(GgmlType::F32)),
        era(1, "f16", 1, 2, Some(GgmlType::F16)),
        era(2, "q4_0", 32, 20, None),
        era(3, "q4_1", 32, 24, None),
        era(4, "q4_2", 16, 10, None),
        era(5, "q4_3", 16, 12, None),
        era(6, "q5_0", 32, 22, None),
        era(7, "q5_1", 32, 24, None),
        era(8, "q8_0", 32, 36, None),
        era(9, "q8_1", 32, 44, None),
        era(10, "i8", 1, 1, Some(GgmlType::I8)),
        era(11, "i16", 1, 2, Some(GgmlType::I16)),
        era(12, "i32", 1, 4, Some(GgmlType::I32)),
    ],
};

/// GGJT v2 (ggml `fe48e22f`, 2023-05-14: new Q4 and Q5 formats).
pub const TABLE_2023_05: TypeTable = TypeTable {
    name: "ggml-2023-05",
    applies_to: "GGJT v2",
    source: "ggml fe48e22f (2023-05-14) include/ggml/ggml.h and ggml.c block structs",
    types: &[
        era(0, "f32", 1, 4, Some(GgmlType::F32)),
        era(1, "f16", 1, 2, Some(GgmlType::F16)),
        era(2, "q4_0", 32, 20, None),
        era(3, "q4_1", 32, 24, None),
        era(6, "q5_0", 32, 22, Some(GgmlType::Q5_0)),
        era(7, "q5_1", 32, 24, Some(GgmlType::Q5_1)),
        era(8, "q8_0", 32, 36, None),
        era(9, "q8_1", 32, 40, None),
        era(10, "i8", 1, 1, Some(GgmlType::I8)),
        era(11, "i16", 1, 2, Some(GgmlType::I16)),
        era(12, "i32", 1, 4, Some(GgmlType::I32)),
    ],
};

/// GGJT v3 (ggml `b0d536bb`, 2023-05-20: f16 scales; k-quants from
/// `93b94a2d`, 2023-06-26).
pub const TABLE_2023_06: TypeTable = TypeTable {
    name: "ggml-2023-06",
    applies_to: "GGJT v3",
    source: "ggml b0d536bb (2023-05-20) and 93b94a2d (2023-06-26, k-quants) include/ggml/ggml.h",
    types: &[
        era(0, "f32", 1, 4, Some(GgmlType::F32)),
        era(1, "f16", 1, 2, Some(GgmlType::F16)),
        era(2, "q4_0", 32, 18, Some(GgmlType::Q4_0)),
        era(3, "q4_1", 32, 20, Some(GgmlType::Q4_1)),
        era(6, "q5_0", 32, 22, Some(GgmlType::Q5_0)),
        era(7, "q5_1", 32, 24, Some(GgmlType::Q5_1)),
        era(8, "q8_0", 32, 34, Some(GgmlType::Q8_0)),
        era(9, "q8_1", 32, 40, None),
        era(10, "q2_K", 256, 84, Some(GgmlType::Q2_K)),
        era(11, "q3_K", 256, 110, Some(GgmlType::Q3_K)),
        era(12, "q4_K", 256, 144, Some(GgmlType::Q4_K)),
        era(13, "q5_K", 256, 176, Some(GgmlType::Q5_K)),
        era(14, "q6_K", 256, 210, Some(GgmlType::Q6_K)),
        era(15, "q8_K", 256, 292, Some(GgmlType::Q8_K)),
        era(16, "i8", 1, 1, Some(GgmlType::I8)),
        era(17, "i16", 1, 2, Some(GgmlType::I16)),
        era(18, "i32", 1, 4, Some(GgmlType::I32)),
    ],
};

/// The type table of a format and version; `None` for versions with no
/// known layout.
pub fn type_table(format: LegacyFormat, version: Option<u32>) -> Option<&'static TypeTable> {
    match (format, version) {
        (LegacyFormat::Ggml, _) | (LegacyFormat::Ggmf, Some(1)) | (LegacyFormat::Ggjt, Some(1)) => Some(&TABLE_2023_04),
        (LegacyFormat::Ggjt, Some(2)) => Some(&TABLE_2023_05),
        (LegacyFormat::Ggjt, Some(3)) => Some(&TABLE_2023_06),
        _ => None,
    }
}

/// llama.cpp file types of the era (`GGMLFType` of the converter).
pub fn ftype_name(ftype: u32) -> Option<&'static str> {
    Some(match ftype {
        0 => "ALL_F32",
        1 => "MOSTLY_F16",
        2 => "MOSTLY_Q4_0",
        3 => "MOSTLY_Q4_1",
        4 => "MOSTLY_Q4_1_SOME_F16",
        7 => "MOSTLY_Q8_0",
        8 => "MOSTLY_Q5_0",
        9 => "MOSTLY_Q5_1",
        10 => "MOSTLY_Q2_K",
        11 => "MOSTLY_Q3_K_S",
        12 => "MOSTLY_Q3_K_M",
        13 => "MOSTLY_Q3_K_L",
        14 => "MOSTLY_Q4_K_S",
        15 => "MOSTLY_Q4_K_M",
        16 => "MOSTLY_Q5_K_S",
        17 => "MOSTLY_Q5_K_M",
        18 => "MOSTLY_Q6_K",
        _ => return None,
    })
}

/// Names of the seven hyper-parameters, in file order.
pub const HPARAM_NAMES: [&str; limits::LEGACY_HPARAMS] =
    ["n_vocab", "n_embd", "n_mult", "n_head", "n_layer", "n_rot", "ftype"];

/// A vocabulary entry longer than the converter accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongEntry {
    /// Index of the entry.
    pub index: u64,
    /// Absolute offset of its length field.
    pub offset: u64,
    /// The length read.
    pub len: u32,
}

/// What was read of the vocabulary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Vocab<'a> {
    /// Absolute offset of the first entry.
    pub offset: u64,
    /// Entries read completely.
    pub read: u64,
    /// Whether entries carry an f32 score (GGMF, GGJT).
    pub scores: bool,
    /// Bytes of token text.
    pub text_bytes: u64,
    /// The first [`limits::LEGACY_VOCAB_PREVIEW`] entries.
    pub preview: Vec<(&'a [u8], Option<f32>)>,
    /// Entries of 4096 bytes or more.
    pub long: Vec<LongEntry>,
}

/// One tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor<'a> {
    /// Absolute offset of its n_dims field.
    pub offset: u64,
    /// n_dims as written.
    pub n_dims: u32,
    /// The type id as written.
    pub type_id: u32,
    /// Its row of the era table.
    pub ty: &'static EraType,
    /// ne[], ne0 first.
    pub dims: Vec<u64>,
    /// The name bytes.
    pub name: &'a [u8],
    /// name_len as written.
    pub name_len: u32,
    /// Bytes of padding before the data (GGJT).
    pub padding: u64,
    /// Whether any padding byte is not zero.
    pub padding_nonzero: bool,
    /// Absolute offset of the data.
    pub data_offset: u64,
    /// Bytes of data.
    pub nbytes: u64,
}

impl Tensor<'_> {
    /// Element count (the parser checked it fits in u64).
    pub fn elements(&self) -> u64 {
        element_count(&self.dims).unwrap_or(0)
    }
}

/// A parsed GGML, GGMF or GGJT file.
#[derive(Clone, Debug, PartialEq)]
pub struct GgmlFile<'a> {
    /// The format.
    pub format: LegacyFormat,
    /// The version (none for GGML).
    pub version: Option<u32>,
    /// The type table applied, when the version has one.
    pub table: Option<&'static TypeTable>,
    /// Absolute offset of the hyper-parameters.
    pub hparams_offset: u64,
    /// The hyper-parameters, in [`HPARAM_NAMES`] order.
    pub hparams: Option<[u32; limits::LEGACY_HPARAMS]>,
    /// The vocabulary read.
    pub vocab: Vocab<'a>,
    /// Tensors in file order, each complete.
    pub tensors: Vec<Tensor<'a>>,
    /// Why decoding stopped before the end of the file.
    pub fatal: Option<Fatal>,
}

fn tensor_path(index: usize, name: Option<&[u8]>, field: &str) -> String {
    match name {
        Some(n) => format!("tensor[{index}] {}/{field}", quote_bytes(n)),
        None => format!("tensor[{index}]/{field}"),
    }
}

fn truncated(what: &'static str, path: String) -> impl FnOnce(super::Short) -> Fatal {
    move |s| s.fatal(RuleId::LegacyTruncated, path, what)
}

/// Parses a whole GGML, GGMF or GGJT file (llama layout). Never fails:
/// what cannot be read is in [`GgmlFile::fatal`].
pub fn parse(buf: &[u8], format: LegacyFormat, version: Option<u32>) -> GgmlFile<'_> {
    let table = type_table(format, version);
    let mut file = GgmlFile {
        format,
        version,
        table,
        hparams_offset: 0,
        hparams: None,
        vocab: Vocab::default(),
        tensors: Vec::new(),
        fatal: None,
    };
    if let Err(f) = parse_into(buf, &mut file) {
        file.fatal = Some(f);
    }
    file
}

fn parse_into<'a>(buf: &'a [u8], file: &mut GgmlFile<'a>) -> Result<(), Fatal> {
    let mut r = Reader::new(buf);
    r.u32().map_err(truncated("magic", "header.magic".into()))?;
    if file.format != LegacyFormat::Ggml {
        r.u32().map_err(truncated("version", "header.version".into()))?;
    }
    let Some(table) = file.table else {
        let known = if file.format == LegacyFormat::Ggmf { "1" } else { "1, 2 and 3" };
        return Err(Fatal {
            rule: RuleId::LegacyVersion,
            offset: 4,
            path: "header.version".into(),
            message: format!(
                "{} version {} has no known layout; {} has versions {known}",
                file.format.name().to_uppercase(),
                file.version.map_or_else(|| "?".into(), |v| v.to_string()),
                file.format.name().to_uppercase()
            ),
        });
    };
    file.hparams_offset = r.offset();
    let mut hp = [0u32; limits::LEGACY_HPARAMS];
    for (v, name) in hp.iter_mut().zip(HPARAM_NAMES) {
        *v = r.u32().map_err(truncated("hyper-parameters", format!("hparams.{name}")))?;
    }
    file.hparams = Some(hp);
    let [n_vocab, ..] = hp;
    parse_vocab(&mut r, file, n_vocab)?;
    let mut index = 0usize;
    while !r.at_end() {
        let t = parse_tensor(&mut r, file.format, table, index)?;
        file.tensors.push(t);
        index = index.saturating_add(1);
    }
    Ok(())
}

fn parse_vocab<'a>(r: &mut Reader<'a>, file: &mut GgmlFile<'a>, n_vocab: u32) -> Result<(), Fatal> {
    let scores = file.format != LegacyFormat::Ggml;
    let min_entry: u64 = if scores { 8 } else { 4 };
    file.vocab.offset = r.offset();
    file.vocab.scores = scores;
    let need = u64::from(n_vocab).saturating_mul(min_entry);
    if need > r.remaining() {
        return Err(Fatal {
            rule: RuleId::LegacyTruncated,
            offset: file.hparams_offset,
            path: "hparams.n_vocab".into(),
            message: format!(
                "n_vocab {n_vocab} entries need at least {need} bytes, but only {} are left",
                r.remaining()
            ),
        });
    }
    for i in 0..u64::from(n_vocab) {
        let offset = r.offset();
        let path = || format!("vocab[{i}]");
        let len = r.u32().map_err(truncated("vocabulary entry length", path()))?;
        if len >= limits::LEGACY_MAX_VOCAB_ITEM_LEN {
            file.vocab.long.push(LongEntry { index: i, offset, len });
        }
        let text = r.bytes(u64::from(len)).map_err(truncated("vocabulary entry", path()))?;
        let score =
            if scores { Some(f32::from_bits(r.u32().map_err(truncated("vocabulary score", path()))?)) } else { None };
        if file.vocab.preview.len() < limits::LEGACY_VOCAB_PREVIEW {
            file.vocab.preview.push((text, score));
        }
        file.vocab.read = i.saturating_add(1);
        file.vocab.text_bytes = file.vocab.text_bytes.saturating_add(u64::from(len));
    }
    Ok(())
}

fn parse_tensor<'a>(
    r: &mut Reader<'a>,
    format: LegacyFormat,
    table: &'static TypeTable,
    index: usize,
) -> Result<Tensor<'a>, Fatal> {
    let offset = r.offset();
    let n_dims = r.u32().map_err(truncated("tensor header", tensor_path(index, None, "n_dims")))?;
    let name_len = r.u32().map_err(truncated("tensor header", tensor_path(index, None, "name_len")))?;
    let type_offset = r.offset();
    let type_id = r.u32().map_err(truncated("tensor header", tensor_path(index, None, "type")))?;
    let Some(ty) = table.get(type_id) else {
        return Err(Fatal {
            rule: RuleId::LegacyTensorType,
            offset: type_offset,
            path: tensor_path(index, None, "type"),
            message: format!(
                "type id {type_id} is not in the {} type table ({}); its data size is unknown, so the rest of the file cannot be read",
                table.name, table.applies_to
            ),
        });
    };
    let shape_bytes = u64::from(n_dims).saturating_mul(4);
    if shape_bytes > r.remaining() {
        return Err(Fatal {
            rule: RuleId::LegacyTruncated,
            offset,
            path: tensor_path(index, None, "n_dims"),
            message: format!("n_dims {n_dims} needs {shape_bytes} bytes of dims, but only {} are left", r.remaining()),
        });
    }
    let mut dims = Vec::new();
    for i in 0..n_dims {
        let d = r.u32().map_err(truncated("dims", tensor_path(index, None, &format!("ne[{i}]"))))?;
        dims.push(u64::from(d));
    }
    if u64::from(name_len) > r.remaining() {
        return Err(Fatal {
            rule: RuleId::LegacyTruncated,
            offset: offset.saturating_add(4),
            path: tensor_path(index, None, "name_len"),
            message: format!("name_len {name_len} is larger than the {} bytes left", r.remaining()),
        });
    }
    let name = r.bytes(u64::from(name_len)).map_err(truncated("name", tensor_path(index, None, "name")))?;
    let mut padding = 0;
    let mut padding_nonzero = false;
    if format == LegacyFormat::Ggjt {
        let at = r.offset();
        let aligned = crate::parse::align_up(at, limits::GGJT_ALIGNMENT).unwrap_or(u64::MAX);
        padding = aligned.saturating_sub(at);
        let pad = r
            .bytes(padding)
            .map_err(truncated("padding before the data", tensor_path(index, Some(name), "padding")))?;
        padding_nonzero = pad.iter().any(|b| *b != 0);
    }
    let data_path = || tensor_path(index, Some(name), "data");
    let Some(n) = element_count(&dims) else {
        return Err(Fatal {
            rule: RuleId::LegacyTruncated,
            offset,
            path: data_path(),
            message: format!("shape {dims:?} has more elements than fit in 64 bits; its data cannot be in the file"),
        });
    };
    let block = u64::from(ty.block_size);
    let ne0 = dims.first().copied().unwrap_or(1);
    if ne0.checked_rem(block) != Some(0) {
        return Err(Fatal {
            rule: RuleId::LegacyRowBlock,
            offset,
            path: tensor_path(index, Some(name), "ne[0]"),
            message: format!("row length ne0 = {ne0} is not a multiple of the {} block size {block}", ty.name),
        });
    }
    let nbytes = n.checked_div(block).and_then(|b| b.checked_mul(u64::from(ty.type_size))).ok_or_else(|| Fatal {
        rule: RuleId::LegacyTruncated,
        offset,
        path: data_path(),
        message: format!("{n} {} elements take more than 2^64 bytes", ty.name),
    })?;
    let data_offset = r.offset();
    r.bytes(nbytes).map_err(|s| {
        let mut f = s.fatal(RuleId::LegacyTruncated, data_path(), "tensor data");
        f.message = format!(
            "the data of {} ({n} {} elements, {nbytes} bytes) runs past the end of the file: {} bytes left",
            quote_bytes(name),
            ty.name,
            s.have
        );
        f
    })?;
    Ok(Tensor { offset, n_dims, type_id, ty, dims, name, name_len, padding, padding_nonzero, data_offset, nbytes })
}

fn table_message(file: &GgmlFile<'_>, table: &TypeTable) -> String {
    let ids: Vec<String> = table.types.iter().map(|t| format!("{} {}", t.id, t.name)).collect();
    let layouts = match table.name {
        "ggml-2023-04" => {
            "no quantized block of this era has the current layout (f32 scales, interleaved nibbles, Q4_2/Q4_3)"
        }
        "ggml-2023-05" => "Q5_0/Q5_1 have the current layout; Q4_0, Q4_1, Q8_0 have f32 scales (20, 24, 36 bytes)",
        _ => {
            "all types but Q8_1 (40 bytes, f32 d and s) have the current layout; the integer types are 16-18 here, 24-26 in GGUF"
        }
    };
    let what = match (file.format, file.version) {
        (LegacyFormat::Ggml, _) | (_, None) => "GGML (unversioned)".to_string(),
        (f, Some(v)) => format!("{} v{v}", f.name().to_uppercase()),
    };
    format!("{what}: type table {} ({}; {}): {}; {layouts}", table.name, table.applies_to, table.source, ids.join(", "))
}

/// Runs the `legacy-*` rules over a parsed file and fills the summary.
pub(crate) fn check(file: &GgmlFile<'_>, sink: &mut Sink<'_>, summary: &mut Summary) {
    summary.tensor_count = Some(u64::try_from(file.tensors.len()).unwrap_or(u64::MAX));
    summary.parameters = file.tensors.iter().try_fold(0u64, |a, t| a.checked_add(t.elements()));
    summary.data_size = file.tensors.iter().try_fold(0u64, |a, t| a.checked_add(t.nbytes));
    let mut types = BTreeMap::new();
    for t in &file.tensors {
        let n: &mut u64 = types.entry(t.ty.name.to_string()).or_insert(0);
        *n = n.saturating_add(1);
    }
    summary.tensor_types = types;
    if let Some(table) = file.table {
        summary.alignment = (file.format == LegacyFormat::Ggjt).then_some(limits::GGJT_ALIGNMENT);
        sink.emit(RuleId::LegacyTypeTable, 0, || "header.magic".into(), || table_message(file, table));
    }
    if let Some(hp) = file.hparams {
        summary.kv_count = Some(u64::try_from(hp.len()).unwrap_or(0));
        summary.architecture = Some("llama".into());
        let [.., ftype] = hp;
        if ftype_name(ftype).is_none() {
            let offset = file.hparams_offset.saturating_add(24);
            sink.emit(
                RuleId::LegacyFtype,
                offset,
                || "hparams.ftype".into(),
                || format!("ftype {ftype} is not a llama.cpp file type (0-4, 7-18); llama.cpp's converter rejects it"),
            );
        }
    }
    for e in &file.vocab.long {
        sink.emit(
            RuleId::LegacyVocabLength,
            e.offset,
            || format!("vocab[{}]", e.index),
            || {
                format!(
                    "vocabulary entry of {} bytes; llama.cpp's converter rejects entries of {} bytes or more",
                    e.len,
                    limits::LEGACY_MAX_VOCAB_ITEM_LEN
                )
            },
        );
    }
    check_tensors(file, sink);
    if let Some(f) = &file.fatal {
        sink.emit(f.rule, f.offset, || f.path.clone(), || f.message.clone());
    }
}

fn check_tensors(file: &GgmlFile<'_>, sink: &mut Sink<'_>) {
    let mut first: HashMap<&[u8], usize> = HashMap::new();
    let mut old_layout: Vec<(usize, &Tensor<'_>)> = Vec::new();
    for (i, t) in file.tensors.iter().enumerate() {
        let path = |field: &str| tensor_path(i, Some(t.name), field);
        if t.name_len >= limits::LEGACY_MAX_NAME_LEN {
            sink.emit(
                RuleId::LegacyNameLength,
                t.offset.saturating_add(4),
                || path("name_len"),
                || {
                    format!(
                        "tensor name of {} bytes; llama.cpp's converter rejects names of {} bytes or more",
                        t.name_len,
                        limits::LEGACY_MAX_NAME_LEN
                    )
                },
            );
        }
        if t.n_dims > limits::LEGACY_MAX_DIMS {
            sink.emit(
                RuleId::LegacyNDims,
                t.offset,
                || path("n_dims"),
                || format!("{} dimensions; at most {} are allowed", t.n_dims, limits::LEGACY_MAX_DIMS),
            );
        }
        if let Some(j) = first.get(t.name) {
            sink.emit(
                RuleId::LegacyNameDuplicate,
                t.offset,
                || path("name"),
                || format!("name {} already names tensor[{j}]", quote_bytes(t.name)),
            );
        } else {
            first.insert(t.name, i);
        }
        if t.padding_nonzero {
            let at = t.data_offset.saturating_sub(t.padding);
            sink.emit(
                RuleId::LegacyPaddingNonZero,
                at,
                || path("padding"),
                || format!("{} bytes of padding before the data are not all zero", t.padding),
            );
        }
        if t.ty.is_quantized() && t.ty.current.is_none() {
            old_layout.push((i, t));
        }
    }
    if let Some((i, t)) = old_layout.first() {
        let n = old_layout.len();
        let version = file.version.map_or_else(|| "0".into(), |v| v.to_string());
        sink.emit(RuleId::LegacyQuantLayout, t.offset.saturating_add(8), || tensor_path(*i, Some(t.name), "type"), || {
            format!(
                "{n} tensor(s), the first {} ({}), use a {} v{version} block layout that no current ggml reads; llama.cpp's converter refuses the file (re-quantize from the original weights)",
                quote_bytes(t.name),
                t.ty.name,
                file.format.name().to_uppercase()
            )
        });
    }
}

/// The tensors whose data current ggml types read (see
/// [`super::data_tensors`]).
pub fn data_tensors(file: &GgmlFile<'_>) -> Vec<DataTensor> {
    file.tensors
        .iter()
        .enumerate()
        .filter_map(|(index, t)| {
            Some(DataTensor {
                index,
                name: String::from_utf8_lossy(t.name).into_owned(),
                ty: t.ty.current?,
                dims: t.dims.clone(),
                offset: t.data_offset,
                nbytes: t.nbytes,
                order: ByteOrder::LittleEndian,
            })
        })
        .collect()
}

fn bytes_json(b: &[u8]) -> Json {
    match std::str::from_utf8(b) {
        Ok(s) => json!(s),
        Err(_) => json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() }),
    }
}

fn float_json(x: f32) -> Json {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(f64::from(x))
    }
}

/// Canonical JSON description (see [`super::dump`]).
pub fn dump(file: &GgmlFile<'_>) -> Json {
    let hparams = file.hparams.map(|hp| {
        let mut m = serde_json::Map::new();
        for (name, v) in HPARAM_NAMES.iter().zip(hp) {
            m.insert((*name).to_string(), json!(v));
        }
        let [.., ftype] = hp;
        m.insert("ftype_name".into(), json!(ftype_name(ftype)));
        Json::Object(m)
    });
    let preview: Vec<Json> = file
        .vocab
        .preview
        .iter()
        .map(|(text, score)| match score {
            Some(s) => json!({ "text": bytes_json(text), "score": float_json(*s) }),
            None => json!({ "text": bytes_json(text) }),
        })
        .collect();
    let tensors: Vec<Json> = file
        .tensors
        .iter()
        .map(|t| {
            json!({
                "name": bytes_json(t.name),
                "dims": t.dims,
                "type_id": t.type_id,
                "type": t.ty.name,
                "current_type": t.ty.current.map(|c| c.name()),
                "offset": t.offset,
                "data_offset": t.data_offset,
                "bytes": t.nbytes,
            })
        })
        .collect();
    json!({
        "format": file.format.name(),
        "version": file.version.filter(|_| file.format != LegacyFormat::Ggml),
        "byte_order": "little-endian",
        "type_table": file.table.map(|t| t.name),
        "hparams": hparams,
        "vocab": {
            "count": file.hparams.map(|[n_vocab, ..]| n_vocab),
            "read": file.vocab.read,
            "scores": file.vocab.scores,
            "text_bytes": file.vocab.text_bytes,
            "preview": preview,
        },
        "tensors": tensors,
        "complete": file.fatal.is_none(),
        "error": file.fatal.as_ref().map(|f| json!({ "rule": f.rule.id(), "offset": f.offset, "path": f.path, "message": f.message })),
    })
}
