//! rwkv.cpp checkpoints (`.bin`): parser and rules.
//!
//! Layout (rwkv.cpp `docs/FILE_FORMAT.md`, `rwkv_file_format.inc`): six
//! little-endian u32 (magic `0x67676d66`, version 100 or 101, n_vocab,
//! n_embed, n_layer, data_type), then parameters until the end of the file:
//! u32 dim_count, u32 key_length, u32 data_type, u32 shape[dim_count]
//! (ne0 first, i.e. reversed from PyTorch), the key bytes, and the data,
//! `type_size * elements / block_size` bytes with no padding.
//!
//! Data types use rwkv.cpp's own numbering ([`RWKV_TYPES`]), mapped to
//! ggml types as `rwkv_type_to_ggml` does. Version 101 quantized blocks have
//! the current ggml layout (rwkv.cpp moved to ggml `00b49ec7`, 2023-05-26,
//! after the 2023-05 block changes); version 100 quantized blocks do not.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value as Json, json};

use super::{Fatal, Reader, element_count};
use crate::data::DataTensor;
use crate::limits;
use crate::parse::{ByteOrder, quote_bytes};
use crate::report::{Sink, Summary};
use crate::rules::RuleId;
use crate::types::GgmlType;

/// One rwkv.cpp data type: its id, rwkv.cpp's name and the ggml type it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RwkvType {
    /// The id written in the file.
    pub id: u32,
    /// rwkv.cpp's name (`rwkv_type_to_string`).
    pub name: &'static str,
    /// The ggml type (`rwkv_type_to_ggml`); `None` for the removed ids 4-6.
    pub ggml: Option<GgmlType>,
}

const fn ty(id: u32, name: &'static str, ggml: Option<GgmlType>) -> RwkvType {
    RwkvType { id, name, ggml }
}

/// rwkv.cpp's data types (`enum rwkv_type`, rwkv.cpp commit `4358e709`),
/// indexed by id. FILE_FORMAT.md lists only 0-9; the loader accepts 10-16.
pub const RWKV_TYPES: [RwkvType; 17] = [
    ty(0, "FP32", Some(GgmlType::F32)),
    ty(1, "FP16", Some(GgmlType::F16)),
    ty(2, "Q4_0", Some(GgmlType::Q4_0)),
    ty(3, "Q4_1", Some(GgmlType::Q4_1)),
    ty(4, "Q4_1_O", None),
    ty(5, "Q4_2", None),
    ty(6, "Q4_3", None),
    ty(7, "Q5_0", Some(GgmlType::Q5_0)),
    ty(8, "Q5_1", Some(GgmlType::Q5_1)),
    ty(9, "Q8_0", Some(GgmlType::Q8_0)),
    ty(10, "Q8_1", Some(GgmlType::Q8_1)),
    ty(11, "Q2_K", Some(GgmlType::Q2_K)),
    ty(12, "Q3_K", Some(GgmlType::Q3_K)),
    ty(13, "Q4_K", Some(GgmlType::Q4_K)),
    ty(14, "Q5_K", Some(GgmlType::Q5_K)),
    ty(15, "Q6_K", Some(GgmlType::Q6_K)),
    ty(16, "Q8_K", Some(GgmlType::Q8_K)),
];

/// The rwkv.cpp data type with this id, including the removed ones.
pub fn rwkv_type(id: u32) -> Option<RwkvType> {
    RWKV_TYPES.get(usize::try_from(id).ok()?).copied()
}

/// The file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// 100 or 101 in a valid file.
    pub version: u32,
    /// Vocabulary size.
    pub n_vocab: u32,
    /// Embedding width.
    pub n_embed: u32,
    /// Number of layers (`blocks.N.*`).
    pub n_layer: u32,
    /// Data type of most parameters (rwkv.cpp id).
    pub data_type: u32,
}

/// One parameter (tensor) of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// Absolute offset of its dim_count field.
    pub offset: u64,
    /// dim_count as written.
    pub dim_count: u32,
    /// rwkv.cpp data type id.
    pub data_type: u32,
    /// The ggml type of the data (parsing stops at ids without one).
    pub ty: GgmlType,
    /// The shape, ne0 first, as written.
    pub dims: Vec<u64>,
    /// The key bytes (UTF-8 in a valid file).
    pub key: &'a [u8],
    /// Absolute offset of the key bytes.
    pub key_offset: u64,
    /// Absolute offset of the data.
    pub data_offset: u64,
    /// Bytes of data.
    pub nbytes: u64,
}

impl Param<'_> {
    /// The key, printable.
    pub fn name(&self) -> String {
        quote_bytes(self.key)
    }

    /// Element count (the parser checked it fits in u64).
    pub fn elements(&self) -> u64 {
        element_count(&self.dims).unwrap_or(0)
    }

    /// The shape without trailing 1s, as `ggml_n_dims` counts dimensions
    /// (at least one dimension is kept).
    pub fn effective_dims(&self) -> &[u64] {
        let mut n = self.dims.len();
        while n > 1 && self.dims.get(n.saturating_sub(1)) == Some(&1) {
            n = n.saturating_sub(1);
        }
        self.dims.get(..n).unwrap_or(&[])
    }
}

/// A parsed rwkv.cpp file: the header, the parameters read, and the reason
/// reading stopped early, if it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RwkvFile<'a> {
    /// Length of the file.
    pub len: u64,
    /// The header, when the file is long enough to hold it.
    pub header: Option<Header>,
    /// Parameters in file order, each complete.
    pub params: Vec<Param<'a>>,
    /// Why decoding stopped before the end of the file.
    pub fatal: Option<Fatal>,
}

fn param_path(index: usize, key: Option<&[u8]>, field: &str) -> String {
    match key {
        Some(k) => format!("param[{index}] {}/{field}", quote_bytes(k)),
        None => format!("param[{index}]/{field}"),
    }
}

/// Parses a whole rwkv.cpp file. Never fails: what cannot be read is in
/// [`RwkvFile::fatal`].
pub fn parse(buf: &[u8]) -> RwkvFile<'_> {
    let mut r = Reader::new(buf);
    let mut file = RwkvFile { len: r.remaining(), header: None, params: Vec::new(), fatal: None };
    let mut fields = [0u32; 6];
    for (i, f) in fields.iter_mut().enumerate() {
        match r.u32() {
            Ok(v) => *f = v,
            Err(short) => {
                let name = ["magic", "version", "n_vocab", "n_embed", "n_layer", "data_type"]
                    .get(i)
                    .copied()
                    .unwrap_or("header");
                file.fatal = Some(short.fatal(
                    RuleId::RwkvTruncated,
                    format!("header.{name}"),
                    &format!("24-byte header (field {name})"),
                ));
                return file;
            }
        }
    }
    let [magic, version, n_vocab, n_embed, n_layer, data_type] = fields;
    if magic != limits::RWKV_MAGIC {
        file.fatal = Some(Fatal {
            rule: RuleId::Magic,
            offset: 0,
            path: "header.magic".into(),
            message: format!("magic 0x{magic:08x} is not rwkv.cpp's 0x{:08x}", limits::RWKV_MAGIC),
        });
        return file;
    }
    file.header = Some(Header { version, n_vocab, n_embed, n_layer, data_type });
    while !r.at_end() {
        match parse_param(&mut r, file.params.len()) {
            Ok(p) => file.params.push(p),
            Err(f) => {
                file.fatal = Some(f);
                break;
            }
        }
    }
    file
}

fn parse_param<'a>(r: &mut Reader<'a>, index: usize) -> Result<Param<'a>, Fatal> {
    let offset = r.offset();
    fn trunc(path: String, what: &'static str) -> impl FnOnce(super::Short) -> Fatal {
        move |s| s.fatal(RuleId::RwkvTruncated, path, what)
    }
    let dim_count = r.u32().map_err(trunc(param_path(index, None, "dim_count"), "parameter header"))?;
    let key_length = r.u32().map_err(trunc(param_path(index, None, "key_length"), "parameter header"))?;
    let type_offset = r.offset();
    let data_type = r.u32().map_err(trunc(param_path(index, None, "data_type"), "parameter header"))?;
    let Some(ty) = rwkv_type(data_type).and_then(|t| t.ggml) else {
        return Err(Fatal {
            rule: RuleId::RwkvDataType,
            offset: type_offset,
            path: param_path(index, None, "data_type"),
            message: type_message(data_type, "parameter", true),
        });
    };
    let shape_bytes = u64::from(dim_count).saturating_mul(4);
    if shape_bytes > r.remaining() {
        return Err(Fatal {
            rule: RuleId::RwkvTruncated,
            offset,
            path: param_path(index, None, "dim_count"),
            message: format!(
                "dim_count {dim_count} needs {shape_bytes} bytes of shape, but only {} are left",
                r.remaining()
            ),
        });
    }
    let mut dims = Vec::new();
    for i in 0..dim_count {
        let d = r.u32().map_err(trunc(param_path(index, None, &format!("shape[{i}]")), "shape"))?;
        dims.push(u64::from(d));
    }
    let key_offset = r.offset();
    if u64::from(key_length) > r.remaining() {
        return Err(Fatal {
            rule: RuleId::RwkvTruncated,
            offset: key_offset,
            path: param_path(index, None, "key"),
            message: format!("key_length {key_length} is larger than the {} bytes left", r.remaining()),
        });
    }
    let key = r.bytes(u64::from(key_length)).map_err(trunc(param_path(index, None, "key"), "key"))?;
    let data_path = || param_path(index, Some(key), "data");
    let Some(n) = element_count(&dims) else {
        return Err(Fatal {
            rule: RuleId::RwkvTruncated,
            offset: key_offset,
            path: data_path(),
            message: format!("shape {dims:?} has more elements than fit in 64 bits; its data cannot be in the file"),
        });
    };
    let ne0 = dims.first().copied().unwrap_or(1);
    let block = u64::from(ty.block_size());
    if ne0.checked_rem(block) != Some(0) {
        return Err(Fatal {
            rule: RuleId::RwkvRowBlock,
            offset,
            path: param_path(index, Some(key), "shape"),
            message: format!("row length ne0 = {ne0} is not a multiple of the {} block size {block}", ty.name()),
        });
    }
    let nbytes = ty.row_size(n).ok_or_else(|| Fatal {
        rule: RuleId::RwkvTruncated,
        offset: key_offset,
        path: data_path(),
        message: format!("{n} {} elements take more than 2^64 bytes", ty.name()),
    })?;
    let data_offset = r.offset();
    r.bytes(nbytes).map_err(|s| {
        let mut f = s.fatal(RuleId::RwkvTruncated, data_path(), "parameter data");
        f.message = format!(
            "the data of {} ({n} {} elements, {nbytes} bytes) runs past the end of the file: {} bytes left",
            quote_bytes(key),
            ty.name(),
            s.have
        );
        f
    })?;
    Ok(Param { offset, dim_count, data_type, ty, dims, key, key_offset, data_offset, nbytes })
}

fn type_message(id: u32, what: &str, stops: bool) -> String {
    let tail = if stops { "; its data size is unknown, so the rest of the file cannot be read" } else { "" };
    match rwkv_type(id) {
        Some(t) => format!(
            "{what} data type {id} ({}) was removed from rwkv.cpp; requantize the model or use an older rwkv.cpp{tail}",
            t.name
        ),
        None => format!(
            "{what} data type {id} is not an rwkv.cpp data type (0..={}){tail}",
            limits::RWKV_TYPE_COUNT.saturating_sub(1)
        ),
    }
}

/// The RWKV architecture versions rwkv.cpp knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwkvArch {
    /// RWKV v4 (rwkv.cpp's default).
    V4,
    /// RWKV v5.1 (`blocks.0.att.ln_x.weight`).
    V5_1,
    /// RWKV v5.2 (v5 with `blocks.0.att.gate.weight`).
    V5_2,
    /// RWKV v6 (`blocks.0.att.time_maa_x`).
    V6,
    /// RWKV v7 (`blocks.0.att.r_k`).
    V7,
}

impl RwkvArch {
    /// Every version.
    pub const ALL: [RwkvArch; 5] = [RwkvArch::V4, RwkvArch::V5_1, RwkvArch::V5_2, RwkvArch::V6, RwkvArch::V7];

    /// Summary name: `rwkv-v4`, `rwkv-v5.1`, `rwkv-v5.2`, `rwkv-v6`, `rwkv-v7`.
    pub fn name(self) -> &'static str {
        match self {
            RwkvArch::V4 => "rwkv-v4",
            RwkvArch::V5_1 => "rwkv-v5.1",
            RwkvArch::V5_2 => "rwkv-v5.2",
            RwkvArch::V6 => "rwkv-v6",
            RwkvArch::V7 => "rwkv-v7",
        }
    }

    /// Detects the version from the parameter names, as
    /// `rwkv_load_model_from_file` does; also returns the deciding name.
    pub fn detect(has: impl Fn(&str) -> bool) -> (RwkvArch, Option<&'static str>) {
        if has("blocks.0.att.r_k") {
            return (RwkvArch::V7, Some("blocks.0.att.r_k"));
        }
        if has("blocks.0.att.time_maa_x") {
            return (RwkvArch::V6, Some("blocks.0.att.time_maa_x"));
        }
        if has("blocks.0.att.ln_x.weight") {
            if has("blocks.0.att.gate.weight") {
                return (RwkvArch::V5_2, Some("blocks.0.att.gate.weight"));
            }
            return (RwkvArch::V5_1, Some("blocks.0.att.ln_x.weight"));
        }
        (RwkvArch::V4, None)
    }

    /// The per-layer parameter names (after `blocks.N.`) rwkv.cpp's
    /// `rwkv_set_params` requires for layer `layer`.
    pub fn layer_names(self, layer: u64) -> Vec<&'static str> {
        let mut n = vec!["ln1.weight", "ln1.bias"];
        match self {
            RwkvArch::V7 => {
                n.extend([
                    "att.x_rwkvag",
                    "att.w0",
                    "att.w1",
                    "att.w2",
                    "att.a0",
                    "att.a1",
                    "att.a2",
                    "att.g1",
                    "att.g2",
                ]);
                if layer != 0 {
                    n.extend(["att.v0", "att.v1", "att.v2"]);
                }
                n.extend(["att.r_k", "att.k_k", "att.k_a"]);
                n.extend(["att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight"]);
                n.extend(["att.ln_x.weight", "att.ln_x.bias"]);
            }
            RwkvArch::V6 => {
                n.extend([
                    "att.time_maa_x",
                    "att.time_maa_w",
                    "att.time_maa_k",
                    "att.time_maa_v",
                    "att.time_maa_r",
                    "att.time_maa_g",
                ]);
                n.extend([
                    "att.time_maa_w1",
                    "att.time_maa_w2",
                    "att.time_faaaa",
                    "att.time_decay",
                    "att.time_decay_w1",
                    "att.time_decay_w2",
                ]);
                n.extend([
                    "att.key.weight",
                    "att.value.weight",
                    "att.receptance.weight",
                    "att.gate.weight",
                    "att.output.weight",
                ]);
                n.extend(["att.ln_x.weight", "att.ln_x.bias"]);
            }
            RwkvArch::V5_1 | RwkvArch::V5_2 => {
                n.extend(["att.time_mix_k", "att.time_mix_v", "att.time_mix_r"]);
                n.push(if self == RwkvArch::V5_2 { "att.time_faaaa" } else { "att.time_first" });
                n.extend([
                    "att.time_decay",
                    "att.key.weight",
                    "att.value.weight",
                    "att.receptance.weight",
                    "att.output.weight",
                ]);
                n.extend(["att.ln_x.weight", "att.ln_x.bias"]);
                if self == RwkvArch::V5_2 {
                    n.extend(["att.time_mix_g", "att.gate.weight"]);
                }
            }
            RwkvArch::V4 => {
                n.extend(["att.time_mix_k", "att.time_mix_v", "att.time_mix_r", "att.time_first", "att.time_decay"]);
                n.extend(["att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight"]);
            }
        }
        n.extend(["ln2.weight", "ln2.bias"]);
        match self {
            RwkvArch::V7 => n.push("ffn.x_k"),
            RwkvArch::V6 => n.extend(["ffn.time_maa_k", "ffn.time_maa_r"]),
            _ => n.extend(["ffn.time_mix_k", "ffn.time_mix_r"]),
        }
        n.extend(["ffn.key.weight", "ffn.value.weight"]);
        if self != RwkvArch::V7 {
            n.push("ffn.receptance.weight");
        }
        n
    }
}

/// The parameters outside the layers that rwkv.cpp requires.
pub const GLOBAL_NAMES: [&str; 6] =
    ["emb.weight", "blocks.0.ln0.weight", "blocks.0.ln0.bias", "ln_out.weight", "ln_out.bias", "head.weight"];

/// What shape rule an expected parameter is under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// No shape rule.
    Any,
    /// `emb.weight`: [n_embed, n_vocab] (`rwkv-shape`).
    Embedding,
    /// `head.weight`: [n_embed, n_vocab] (`rwkv-parameter-shape`).
    Head,
    /// A layer norm weight or bias: [n_embed] (`rwkv-parameter-shape`).
    Norm,
}

fn expect_of(name: &str) -> Expect {
    match name {
        "emb.weight" => Expect::Embedding,
        "head.weight" => Expect::Head,
        n if n.starts_with("ln_out.") || n.contains(".ln0.") || n.contains(".ln1.") || n.contains(".ln2.") => {
            Expect::Norm
        }
        _ => Expect::Any,
    }
}

/// Highest `N` of the `blocks.N.` names present, if any.
fn max_block_index(params: &[Param<'_>]) -> Option<u64> {
    params
        .iter()
        .filter_map(|p| {
            let rest = p.key.strip_prefix(b"blocks.")?;
            let digits = rest.split(|b| *b == b'.').next()?;
            std::str::from_utf8(digits).ok()?.parse::<u64>().ok()
        })
        .max()
}

/// The type table note of the report (`legacy-type-table`).
fn type_table_message(version: u32) -> String {
    let base = "type table rwkv-cpp (rwkv.cpp's own ids: 0 FP32, 1 FP16, 2 Q4_0, 3 Q4_1, 7 Q5_0, 8 Q5_1, 9 Q8_0, 10 Q8_1, 11-16 Q2_K..Q8_K; 4-6 removed), mapped to ggml types as rwkv_type_to_ggml does";
    if version == limits::RWKV_VERSION_QUANTIZED {
        format!("{base}; version 101 quantized blocks have the current ggml layout")
    } else {
        format!(
            "{base}; only FP32 and FP16 are read in version {version} files (version 100 quantized blocks predate ggml 00b49ec7 and have another layout)"
        )
    }
}

/// Runs the `rwkv-*` rules over a parsed file and fills the summary.
pub(crate) fn check(file: &RwkvFile<'_>, sink: &mut Sink<'_>, summary: &mut Summary) {
    summary.tensor_count = Some(u64::try_from(file.params.len()).unwrap_or(u64::MAX));
    summary.parameters = file.params.iter().try_fold(0u64, |a, p| a.checked_add(p.elements()));
    summary.data_size = file.params.iter().try_fold(0u64, |a, p| a.checked_add(p.nbytes));
    let mut types = BTreeMap::new();
    for p in &file.params {
        let n: &mut u64 = types.entry(p.ty.name().to_string()).or_insert(0);
        *n = n.saturating_add(1);
    }
    summary.tensor_types = types;
    let Some(h) = file.header else {
        if let Some(f) = &file.fatal {
            sink.emit(f.rule, f.offset, || f.path.clone(), || f.message.clone());
        }
        return;
    };
    summary.kv_count = Some(4);
    check_header(&h, sink);
    for (i, p) in file.params.iter().enumerate() {
        check_param(&h, i, p, sink);
    }
    check_duplicates(file, sink);
    if let Some(f) = &file.fatal {
        sink.emit(f.rule, f.offset, || f.path.clone(), || f.message.clone());
        return;
    }
    let arch = check_names(&h, file, sink);
    summary.architecture = Some(arch.name().to_string());
}

fn check_header(h: &Header, sink: &mut Sink<'_>) {
    sink.emit(RuleId::LegacyTypeTable, 20, || "header.data_type".into(), || type_table_message(h.version));
    if !limits::RWKV_VERSIONS.contains(&h.version) {
        sink.emit(RuleId::RwkvVersion, 4, || "header.version".into(), || {
            format!("rwkv.cpp file version {} is not supported; rwkv.cpp reads versions 100 and 101 (GGMF, with the same magic, has version 1)", h.version)
        });
    }
    match rwkv_type(h.data_type) {
        Some(RwkvType { ggml: Some(t), name, .. }) => {
            if t.is_quantized() && h.version == limits::RWKV_VERSION_ORIGINAL {
                sink.emit(RuleId::RwkvQuantizedV100, 20, || "header.data_type".into(), || {
                    format!(
                        "the model data type is {name}, but quantized files must have version 101; this version {} file was made by an old rwkv.cpp whose quantized blocks current ggml cannot read (requantize it)",
                        h.version
                    )
                });
            }
        }
        _ => sink.emit(
            RuleId::RwkvDataType,
            20,
            || "header.data_type".into(),
            || type_message(h.data_type, "model", false),
        ),
    }
    for (offset, name, value) in [(8, "n_vocab", h.n_vocab), (12, "n_embed", h.n_embed), (16, "n_layer", h.n_layer)] {
        if value == 0 {
            sink.emit(RuleId::RwkvHeaderValue, offset, || format!("header.{name}"), || format!("{name} is 0"));
        }
    }
}

fn check_param(h: &Header, index: usize, p: &Param<'_>, sink: &mut Sink<'_>) {
    let path = |field: &str| param_path(index, Some(p.key), field);
    if !(1..=limits::RWKV_MAX_DIMS).contains(&p.dim_count) {
        sink.emit(
            RuleId::RwkvDimCount,
            p.offset,
            || path("dim_count"),
            || format!("{} has {} dimensions; rwkv.cpp reads parameters of 1, 2 or 3", p.name(), p.dim_count),
        );
    }
    if std::str::from_utf8(p.key).is_err() {
        sink.emit(RuleId::RwkvKeyUtf8, p.key_offset, || path("key"), || format!("key {} is not valid UTF-8", p.name()));
    }
    if p.ty.is_quantized() && h.version == limits::RWKV_VERSION_ORIGINAL {
        let type_offset = p.offset.saturating_add(8);
        sink.emit(RuleId::RwkvQuantizedV100, type_offset, || path("data_type"), || {
            format!(
                "{} is quantized ({}) in a version {} file; only version 101 quantized blocks have the layout current ggml reads",
                p.name(),
                p.ty.name(),
                h.version
            )
        });
    }
}

fn check_duplicates(file: &RwkvFile<'_>, sink: &mut Sink<'_>) {
    let mut first: HashMap<&[u8], usize> = HashMap::new();
    for (i, p) in file.params.iter().enumerate() {
        if let Some(j) = first.get(p.key) {
            sink.emit(RuleId::RwkvKeyDuplicate, p.key_offset, || param_path(i, Some(p.key), "key"), || {
                format!("key {} already names param[{j}]; rwkv.cpp keeps the last copy and reads every copy's data with its size", p.name())
            });
        } else {
            first.insert(p.key, i);
        }
    }
}

/// Missing, unused and mis-shaped parameters; returns the architecture.
fn check_names(h: &Header, file: &RwkvFile<'_>, sink: &mut Sink<'_>) -> RwkvArch {
    let present: HashSet<&[u8]> = file.params.iter().map(|p| p.key).collect();
    let (arch, evidence) = RwkvArch::detect(|n| present.contains(n.as_bytes()));
    sink.emit(
        RuleId::RwkvArchitecture,
        limits::RWKV_HEADER_SIZE,
        || "parameters".into(),
        || match evidence {
            Some(e) => {
                format!("RWKV {} (rwkv.cpp's detection: `{e}` is present)", arch.name().trim_start_matches("rwkv-"))
            }
            None => "RWKV v4 (rwkv.cpp's default: no v5, v6 or v7 parameter names in layer 0)".into(),
        },
    );
    // Layers to list: every layer below n_layer, but no further than one
    // past the highest layer present or the parameter count (each layer
    // needs at least ten parameters), so a hostile n_layer costs nothing.
    let n_layer = u64::from(h.n_layer);
    let params = u64::try_from(file.params.len()).unwrap_or(u64::MAX);
    let cap = max_block_index(&file.params).map_or(1, |m| m.saturating_add(2)).min(params.saturating_add(1));
    let listed = n_layer.min(cap);
    let mut expected: HashMap<String, Expect> = HashMap::new();
    let mut missing = |name: String, expected: &mut HashMap<String, Expect>| {
        if !present.contains(name.as_bytes()) {
            sink.emit(
                RuleId::RwkvMissingParameter,
                limits::RWKV_HEADER_SIZE,
                || "parameters".into(),
                || format!("parameter {name} is missing; rwkv.cpp needs it for {} with n_layer {n_layer}", arch.name()),
            );
        }
        let e = expect_of(&name);
        expected.insert(name, e);
    };
    for name in GLOBAL_NAMES.iter().take(3) {
        missing((*name).to_string(), &mut expected);
    }
    for layer in 0..listed {
        for suffix in arch.layer_names(layer) {
            missing(format!("blocks.{layer}.{suffix}"), &mut expected);
        }
    }
    for name in GLOBAL_NAMES.iter().skip(3) {
        missing((*name).to_string(), &mut expected);
    }
    if n_layer > listed {
        sink.emit(
            RuleId::RwkvMissingParameter,
            16,
            || "header.n_layer".into(),
            || {
                format!(
                    "n_layer is {n_layer}, but no parameter names any layer from {listed} to {}",
                    n_layer.saturating_sub(1)
                )
            },
        );
    }
    for (i, p) in file.params.iter().enumerate() {
        let name = std::str::from_utf8(p.key).ok();
        match name.and_then(|n| expected.get(n)) {
            None => sink.emit(
                RuleId::RwkvUnusedParameter,
                p.offset,
                || param_path(i, Some(p.key), "key"),
                || {
                    format!(
                        "{} is not a parameter of {} with n_layer {n_layer}; rwkv.cpp reads it and never uses it",
                        p.name(),
                        arch.name()
                    )
                },
            ),
            Some(e) => check_shape(h, i, p, *e, sink),
        }
    }
    arch
}

fn check_shape(h: &Header, index: usize, p: &Param<'_>, e: Expect, sink: &mut Sink<'_>) {
    let (embed, vocab) = (u64::from(h.n_embed), u64::from(h.n_vocab));
    let dims = p.effective_dims();
    let (rule, want): (RuleId, Vec<u64>) = match e {
        Expect::Any => return,
        Expect::Embedding => (RuleId::RwkvShape, vec![embed, vocab]),
        Expect::Head => (RuleId::RwkvParameterShape, vec![embed, vocab]),
        Expect::Norm => (RuleId::RwkvParameterShape, vec![embed]),
    };
    if dims != want.as_slice() {
        sink.emit(
            rule,
            p.offset,
            || param_path(index, Some(p.key), "shape"),
            || {
                format!(
                    "{} has shape {:?}; with n_embed {embed} and n_vocab {vocab} it must be {want:?} (ne0 first)",
                    p.name(),
                    p.dims
                )
            },
        );
    }
}

/// The parameters whose data current ggml types read (see
/// [`super::data_tensors`]).
pub fn data_tensors(file: &RwkvFile<'_>) -> Vec<DataTensor> {
    let Some(h) = file.header else {
        return Vec::new();
    };
    file.params
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.ty.is_quantized() || h.version == limits::RWKV_VERSION_QUANTIZED)
        .map(|(index, p)| DataTensor {
            index,
            name: String::from_utf8_lossy(p.key).into_owned(),
            ty: p.ty,
            dims: p.dims.clone(),
            offset: p.data_offset,
            nbytes: p.nbytes,
            order: ByteOrder::LittleEndian,
        })
        .collect()
}

fn key_json(key: &[u8]) -> Json {
    match std::str::from_utf8(key) {
        Ok(s) => json!(s),
        Err(_) => json!({ "hex": key.iter().map(|b| format!("{b:02x}")).collect::<String>() }),
    }
}

/// Canonical JSON description (see [`super::dump`]).
pub fn dump(file: &RwkvFile<'_>) -> Json {
    let header = file.header.map(|h| {
        json!({
            "n_vocab": h.n_vocab,
            "n_embed": h.n_embed,
            "n_layer": h.n_layer,
            "data_type": h.data_type,
            "data_type_name": rwkv_type(h.data_type).map(|t| t.name),
        })
    });
    let names: HashSet<&[u8]> = file.params.iter().map(|p| p.key).collect();
    let arch = file.header.map(|_| RwkvArch::detect(|n| names.contains(n.as_bytes())).0.name());
    let tensors: Vec<Json> = file
        .params
        .iter()
        .map(|p| {
            json!({
                "name": key_json(p.key),
                "dims": p.dims,
                "data_type": p.data_type,
                "data_type_name": rwkv_type(p.data_type).map(|t| t.name),
                "type": p.ty.name(),
                "offset": p.offset,
                "data_offset": p.data_offset,
                "bytes": p.nbytes,
            })
        })
        .collect();
    json!({
        "format": "rwkv-cpp",
        "version": file.header.map(|h| h.version),
        "byte_order": "little-endian",
        "architecture": arch,
        "hparams": header,
        "tensors": tensors,
        "complete": file.fatal.is_none(),
        "error": file.fatal.as_ref().map(|f| json!({ "rule": f.rule.id(), "offset": f.offset, "path": f.path, "message": f.message })),
    })
}
