//! `--check-data`: scans every tensor's bytes for the values ggml's
//! `ggml_validate_row_data` rejects (llama.cpp `--check-tensors`), and
//! reports them as diagnostics of the `data` rules of [`crate::rules`].
//!
//! The scan works on the file's bytes in place (a memory map in the CLI):
//! tensors are cut into chunks of whole blocks ([`DataOptions::chunk_bytes`],
//! 8 MiB by default) that rayon spreads over all cores, and no tensor is
//! ever decoded to f32, so memory stays flat whatever the file size. Each
//! chunk is first screened with a branch-free pass over the exponent bits
//! of its elements or block scales; only a chunk that may hold a finding
//! goes through [`numerics::check_row_data`], which classifies each one
//! exactly.
//!
//! Byte order: tensor data of a big-endian GGUF file is read with each
//! F32/F16/BF16/F64 element byte-swapped. Quantized blocks of a big-endian
//! file are not checked (status `unsupported-byte-order`): writers disagree
//! on whether their fp16 scales are swapped (gguf-py swaps numpy arrays
//! element-wise, which leaves byte arrays of blocks untouched), so there is
//! no layout to check them against.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::data::DataTensor;
use crate::numerics::{self, DataFinding, FindingKind, ScaleKind};
use crate::parse::{ByteOrder, Parsed};
use crate::report::{Diagnostic, Options, Report};
use crate::rules::{Level, RuleId};
use crate::types::GgmlType;

/// Findings listed per tensor by default (the rest are counted).
pub const DEFAULT_MAX_LISTED_PER_TENSOR: usize = 10;

/// Bytes of tensor data per parallel task by default.
pub const DEFAULT_CHUNK_BYTES: u64 = 8 << 20;

/// How to scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataOptions {
    /// At most this many findings of a tensor are kept for listing.
    pub max_listed_per_tensor: usize,
    /// Target bytes per task (rounded down to whole blocks, at least one).
    pub chunk_bytes: u64,
}

impl Default for DataOptions {
    fn default() -> Self {
        DataOptions { max_listed_per_tensor: DEFAULT_MAX_LISTED_PER_TENSOR, chunk_bytes: DEFAULT_CHUNK_BYTES }
    }
}

/// Whether and how a tensor's values were checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TensorStatus {
    /// Every value ggml checks was checked.
    Checked,
    /// ggml accepts every byte pattern of this type (NVFP4, I8..I64).
    NothingToCheck,
    /// ggml's validator has no case for the type (Q8_1) and rejects it.
    TypeNotValidatable,
    /// Quantized data of a big-endian file (see the module docs).
    UnsupportedByteOrder,
    /// The tensor's bytes are not all inside the buffer given.
    OutOfBounds,
}

/// What the scan found in one tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TensorData {
    /// Index of the tensor in the file (its tensor info, for GGUF).
    pub index: usize,
    /// Tensor name.
    pub name: String,
    /// Type name as ggml prints it.
    #[serde(rename = "type")]
    pub ty: &'static str,
    /// Absolute offset of the tensor's first byte.
    pub offset: u64,
    /// Bytes of data.
    pub bytes: u64,
    /// Whether the values were checked.
    pub status: TensorStatus,
    /// Blocks scanned (elements, for F32/F16/BF16/F64).
    pub blocks: u64,
    /// Values examined: elements, or block scale fields.
    pub values_checked: u64,
    /// All findings.
    pub findings: u64,
    /// NaN elements or scales.
    pub nan: u64,
    /// Infinite elements or scales.
    pub inf: u64,
    /// MXFP4 exponent bytes of 0xFF.
    pub mxfp4_exponent: u64,
    /// Finite F64 elements beyond the f32 range.
    pub f64_overflow: u64,
    /// Findings kept for listing (at most [`DataOptions::max_listed_per_tensor`]).
    pub listed: u64,
}

/// One finding, located in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataIssue {
    /// The rule it breaks.
    pub rule: RuleId,
    /// Position of the tensor in the list given to [`check_data`].
    pub tensor: usize,
    /// Block index inside the tensor (element index for element types).
    pub block: u64,
    /// Absolute byte offset of the offending field.
    pub offset: u64,
    /// What it is: the finding kind from [`numerics`].
    pub kind: FindingKind,
    /// Field name (`element`, `d`, `dmin`, `m`, `e`, `scales`, `type`).
    pub field: &'static str,
    /// Raw little-endian bits of the field.
    pub raw: u64,
}

/// The result of [`check_data`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DataReport {
    /// Tensors whose values were checked (status `checked`).
    pub tensors_checked: u64,
    /// Bytes of tensor data scanned.
    pub bytes_checked: u64,
    /// Findings in all tensors.
    pub findings: u64,
    /// One entry per tensor, in the order given.
    pub per_tensor: Vec<TensorData>,
    /// The listed findings, by tensor then offset.
    #[serde(skip)]
    pub issues: Vec<DataIssue>,
}

/// The rule a finding breaks; `None` for a partial block, which the
/// layout rules own.
pub fn rule_for(kind: FindingKind, field: &str) -> Option<RuleId> {
    match kind {
        FindingKind::Nan | FindingKind::Inf if field == "element" => Some(RuleId::DataNonFinite),
        FindingKind::Nan | FindingKind::Inf => Some(RuleId::DataScaleNonFinite),
        FindingKind::InvalidE8m0 => Some(RuleId::DataMxfp4Exponent),
        FindingKind::F32Overflow => Some(RuleId::DataF64Overflow),
        FindingKind::TypeNotValidatable => Some(RuleId::DataTypeNotValidatable),
        FindingKind::PartialBlock => None,
    }
}

fn is_element_type(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 | GgmlType::F64)
}

fn status_of(t: &DataTensor, buf_len: u64) -> TensorStatus {
    use GgmlType as T;
    let in_bounds = t.offset.checked_add(t.nbytes).is_some_and(|e| e <= buf_len);
    if !in_bounds {
        return TensorStatus::OutOfBounds;
    }
    match t.ty {
        T::Q8_1 => TensorStatus::TypeNotValidatable,
        T::NVFP4 | T::I8 | T::I16 | T::I32 | T::I64 => TensorStatus::NothingToCheck,
        ty if t.order == ByteOrder::BigEndian && !is_element_type(ty) => TensorStatus::UnsupportedByteOrder,
        _ => TensorStatus::Checked,
    }
}

/// One task: whole blocks `[start, start + len)` of tensor `tensor`.
#[derive(Clone, Copy, Debug)]
struct Task {
    tensor: usize,
    start: u64,
    len: u64,
}

#[derive(Debug, Default)]
struct ChunkResult {
    blocks: u64,
    values_checked: u64,
    nan: u64,
    inf: u64,
    mxfp4_exponent: u64,
    f64_overflow: u64,
    findings: u64,
    listed: Vec<DataFinding>,
}

/// Scans the data of `tensors` (absolute ranges in `bytes`, normally the
/// whole file) and returns per-tensor counts and the first findings of
/// each tensor. `progress` is called with the number of bytes finished
/// after each chunk, from any thread.
pub fn check_data(
    bytes: &[u8],
    tensors: &[DataTensor],
    opts: &DataOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> DataReport {
    let buf_len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let mut per_tensor: Vec<TensorData> = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| TensorData {
            index: i,
            name: t.name.clone(),
            ty: t.ty.name(),
            offset: t.offset,
            bytes: t.nbytes,
            status: status_of(t, buf_len),
            blocks: 0,
            values_checked: 0,
            findings: 0,
            nan: 0,
            inf: 0,
            mxfp4_exponent: 0,
            f64_overflow: 0,
            listed: 0,
        })
        .collect();
    let mut tasks = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        if per_tensor.get(i).map(|p| p.status) != Some(TensorStatus::Checked) {
            continue;
        }
        let ts = u64::from(t.ty.type_size()).max(1);
        let whole = t.nbytes / ts * ts;
        let step = (opts.chunk_bytes / ts).max(1).saturating_mul(ts);
        let mut start = 0;
        while start < whole {
            let len = step.min(whole - start);
            tasks.push(Task { tensor: i, start, len });
            start += len;
        }
    }
    let max_listed = opts.max_listed_per_tensor;
    let results: Vec<(Task, ChunkResult)> = tasks
        .par_iter()
        .map(|task| {
            let r = tensors.get(task.tensor).map(|t| scan_chunk(bytes, t, task, max_listed)).unwrap_or_default();
            progress(task.len);
            (*task, r)
        })
        .collect();
    let mut report = DataReport::default();
    for (task, r) in results {
        let (Some(p), Some(t)) = (per_tensor.get_mut(task.tensor), tensors.get(task.tensor)) else { continue };
        p.blocks += r.blocks;
        p.values_checked += r.values_checked;
        p.nan += r.nan;
        p.inf += r.inf;
        p.mxfp4_exponent += r.mxfp4_exponent;
        p.f64_overflow += r.f64_overflow;
        p.findings += r.findings;
        report.bytes_checked += task.len;
        let ts = u64::from(t.ty.type_size()).max(1);
        for f in r.listed {
            if p.listed >= max_listed as u64 {
                break;
            }
            let Some(rule) = rule_for(f.kind, f.field) else { continue };
            p.listed += 1;
            report.issues.push(DataIssue {
                rule,
                tensor: task.tensor,
                block: task.start / ts + f.block,
                offset: t.offset + task.start + f.byte_offset,
                kind: f.kind,
                field: f.field,
                raw: f.raw,
            });
        }
    }
    for (i, p) in per_tensor.iter_mut().enumerate() {
        if p.status == TensorStatus::TypeNotValidatable {
            // ggml rejects the tensor as a whole: one finding at its start.
            p.findings = 1;
            if max_listed > 0 {
                p.listed = 1;
                report.issues.push(DataIssue {
                    rule: RuleId::DataTypeNotValidatable,
                    tensor: i,
                    block: 0,
                    offset: p.offset,
                    kind: FindingKind::TypeNotValidatable,
                    field: "type",
                    raw: 0,
                });
            }
        }
        if p.status == TensorStatus::Checked {
            report.tensors_checked += 1;
        }
        report.findings += p.findings;
    }
    report.per_tensor = per_tensor;
    report
}

fn scan_chunk(bytes: &[u8], t: &DataTensor, task: &Task, max_listed: usize) -> ChunkResult {
    let range = t
        .offset
        .checked_add(task.start)
        .and_then(|s| Some((usize::try_from(s).ok()?, usize::try_from(s.checked_add(task.len)?).ok()?)));
    let Some(slice) = range.and_then(|(s, e)| bytes.get(s..e)) else { return ChunkResult::default() };
    if t.order == ByteOrder::BigEndian && is_element_type(t.ty) {
        let swapped = swap_elements(slice, t.ty.type_size() as usize);
        return scan_le(t.ty, &swapped, max_listed);
    }
    scan_le(t.ty, slice, max_listed)
}

fn swap_elements(src: &[u8], width: usize) -> Vec<u8> {
    let mut out = src.to_vec();
    for e in out.chunks_exact_mut(width.max(1)) {
        e.reverse();
    }
    out
}

/// Scans little-endian whole blocks of `ty`.
fn scan_le(ty: GgmlType, data: &[u8], max_listed: usize) -> ChunkResult {
    let ts = ty.type_size() as usize;
    let blocks = (data.len() / ts.max(1)) as u64;
    let clean = match ty {
        GgmlType::F32 => Some(count_exp_all_ones_u32(data) == 0),
        GgmlType::F16 => Some(count_exp_all_ones_u16(data, 0x7c00) == 0),
        GgmlType::BF16 => Some(count_exp_all_ones_u16(data, 0x7f80) == 0),
        GgmlType::F64 => Some(f64_suspects(data) == 0),
        _ => scales_clean(ty, data),
    };
    if clean == Some(true) {
        let per_block = if is_element_type(ty) { 1 } else { numerics::scale_fields(ty).len() as u64 };
        return ChunkResult { blocks, values_checked: blocks * per_block, ..ChunkResult::default() };
    }
    let mut listed = Vec::new();
    let sum = numerics::check_row_data(ty, data, &mut |f: DataFinding| {
        if listed.len() < max_listed && f.kind != FindingKind::PartialBlock {
            listed.push(f);
        }
    });
    ChunkResult {
        blocks: sum.blocks,
        values_checked: sum.values_checked,
        nan: sum.nan,
        inf: sum.inf,
        mxfp4_exponent: sum.invalid_e8m0,
        f64_overflow: sum.f32_overflow,
        findings: sum.nan + sum.inf + sum.invalid_e8m0 + sum.f32_overflow,
        listed,
    }
}

// The screens count candidates with plain integer compares so that LLVM
// vectorises them; a candidate only sends the chunk to the exact check.

fn count_exp_all_ones_u32(data: &[u8]) -> u32 {
    let mut n = 0u32;
    for c in data.chunks_exact(4) {
        let x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        n += u32::from(x & 0x7f80_0000 == 0x7f80_0000);
    }
    n
}

fn count_exp_all_ones_u16(data: &[u8], mask: u16) -> u32 {
    let mut n = 0u32;
    for c in data.chunks_exact(2) {
        let x = u16::from_le_bytes([c[0], c[1]]);
        n += u32::from(x & mask == mask);
    }
    n
}

/// F64 elements that are NaN, infinite or at least 2^127 in magnitude
/// (a superset of those that overflow f32).
fn f64_suspects(data: &[u8]) -> u32 {
    let mut n = 0u32;
    for c in data.chunks_exact(8) {
        let x = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        n += u32::from((x >> 52) & 0x7ff >= 0x3ff + 127);
    }
    n
}

/// `Some(true)` when no scale field of any block can be a finding,
/// `Some(false)` when one may be, `None` when the type has no cheap screen.
fn scales_clean(ty: GgmlType, data: &[u8]) -> Option<bool> {
    let ts = ty.type_size() as usize;
    let mut suspects = 0u32;
    for f in numerics::scale_fields(ty) {
        let o = f.offset;
        match f.kind {
            ScaleKind::F16 => {
                for b in data.chunks_exact(ts) {
                    let x = b.get(o..o + 2).map_or(0x7c00, |s| u16::from_le_bytes([s[0], s[1]]));
                    suspects += u32::from(x & 0x7c00 == 0x7c00);
                }
            }
            ScaleKind::F32 => {
                for b in data.chunks_exact(ts) {
                    let x = b.get(o..o + 4).map_or(0x7f80_0000, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
                    suspects += u32::from(x & 0x7f80_0000 == 0x7f80_0000);
                }
            }
            ScaleKind::E8M0 => {
                for b in data.chunks_exact(ts) {
                    suspects += u32::from(b.get(o).is_none_or(|&e| e == 0xff));
                }
            }
            ScaleKind::Ue4m3 => {}
            ScaleKind::Iq1mPacked => return None,
        }
    }
    Some(suspects == 0)
}

impl DataReport {
    /// Adds the findings to `report` as diagnostics (path
    /// `tensor[i] NAME/data[block N]`), at the levels of `opts`: counts
    /// include every finding; at most
    /// [`crate::limits::MAX_DIAGNOSTICS_PER_RULE`] per rule are listed and
    /// the rest are added to `suppressed`. `valid` is recomputed.
    pub fn merge_into(&self, report: &mut Report, opts: &Options) {
        // Totals per rule, from the per-tensor counts (not just the listed).
        let mut totals: BTreeMap<RuleId, u64> = BTreeMap::new();
        for p in &self.per_tensor {
            let elem = matches!(p.ty, "f32" | "f16" | "bf16" | "f64");
            let nonfinite = if elem { RuleId::DataNonFinite } else { RuleId::DataScaleNonFinite };
            *totals.entry(nonfinite).or_default() += p.nan + p.inf;
            *totals.entry(RuleId::DataMxfp4Exponent).or_default() += p.mxfp4_exponent;
            *totals.entry(RuleId::DataF64Overflow).or_default() += p.f64_overflow;
            if p.status == TensorStatus::TypeNotValidatable {
                *totals.entry(RuleId::DataTypeNotValidatable).or_default() += 1;
            }
        }
        let cap = crate::limits::MAX_DIAGNOSTICS_PER_RULE as u64;
        let mut shown: BTreeMap<RuleId, u64> = BTreeMap::new();
        for issue in &self.issues {
            let level = opts.level(issue.rule);
            if level == Level::Allow {
                continue;
            }
            let n = shown.entry(issue.rule).or_default();
            if *n >= cap {
                continue;
            }
            *n += 1;
            let Some(p) = self.per_tensor.get(issue.tensor) else { continue };
            report.diagnostics.push(Diagnostic {
                rule: issue.rule.id(),
                severity: level,
                offset: issue.offset,
                path: issue_path(p, issue),
                message: issue_message(p, issue),
            });
        }
        for (rule, total) in totals {
            let level = opts.level(rule);
            if total == 0 || level == Level::Allow {
                continue;
            }
            let counter = match level {
                Level::Error => &mut report.counts.errors,
                Level::Warning => &mut report.counts.warnings,
                _ => &mut report.counts.infos,
            };
            *counter = counter.saturating_add(total);
            let listed = shown.get(&rule).copied().unwrap_or(0);
            if total > listed {
                *report.suppressed.entry(rule.id()).or_default() += total - listed;
            }
        }
        report.diagnostics.sort_by_key(|d| d.offset);
        report.valid = report.counts.errors == 0 && !(opts.deny_warnings && report.counts.warnings > 0);
    }

    /// Sets each tensor's [`TensorData::index`] to its position among the
    /// tensor infos of `parsed`, for tensors that came from
    /// [`crate::data::gguf_tensors`] of the same file.
    pub fn set_gguf_indices(&mut self, parsed: &Parsed<'_>) {
        let f = &parsed.file;
        let Some(data_start) = f.data_start() else { return };
        // `gguf_tensors` keeps the infos' order, so one forward walk pairs them.
        let mut infos = f.tensors.iter();
        for p in &mut self.per_tensor {
            for info in infos.by_ref() {
                let same = String::from_utf8_lossy(info.name.bytes) == p.name
                    && data_start.checked_add(info.data_offset) == Some(p.offset);
                if same {
                    p.index = info.index;
                    break;
                }
            }
        }
    }
}

fn issue_path(p: &TensorData, issue: &DataIssue) -> String {
    let name = crate::parse::quote_bytes(p.name.as_bytes());
    match issue.kind {
        FindingKind::TypeNotValidatable => format!("tensor[{}] {name}/data", p.index),
        _ if issue.field == "element" => format!("tensor[{}] {name}/data[element {}]", p.index, issue.block),
        _ => format!("tensor[{}] {name}/data[block {}].{}", p.index, issue.block, issue.field),
    }
}

fn issue_message(p: &TensorData, issue: &DataIssue) -> String {
    let ty = p.ty;
    let what = match issue.kind {
        FindingKind::Nan => "NaN",
        FindingKind::Inf => {
            if issue.raw >> (bits_of(ty, issue.field) - 1) & 1 == 1 {
                "-inf"
            } else {
                "+inf"
            }
        }
        _ => "",
    };
    let hex = |width: u32| format!("0x{:0w$x}", issue.raw, w = (width / 4) as usize);
    match issue.kind {
        FindingKind::Nan | FindingKind::Inf if issue.field == "element" => {
            format!("{ty} element {} is {what} (bits {})", issue.block, hex(bits_of(ty, "element")))
        }
        FindingKind::Nan | FindingKind::Inf => format!(
            "scale `{}` of {ty} block {} is {what} (bits {}); ggml rejects the tensor",
            issue.field,
            issue.block,
            hex(bits_of(ty, issue.field))
        ),
        FindingKind::InvalidE8m0 => {
            format!("mxfp4 block {} has shared exponent 0xff, E8M0's NaN; ggml rejects the tensor", issue.block)
        }
        FindingKind::F32Overflow => format!(
            "f64 element {} = {:e} is finite but beyond f32's range; ggml narrows it to float and rejects it as infinite",
            issue.block,
            f64::from_bits(issue.raw)
        ),
        FindingKind::TypeNotValidatable => format!(
            "{ty} data cannot be validated: ggml_validate_row_data has no case for {ty} and rejects the tensor ({} bytes not checked)",
            p.bytes
        ),
        FindingKind::PartialBlock => String::new(),
    }
}

/// Width in bits of a finding's raw field.
fn bits_of(ty: &str, field: &str) -> u32 {
    match (ty, field) {
        ("f32", "element") | ("q8_K", _) => 32,
        ("f64", "element") => 64,
        ("mxfp4", _) => 8,
        _ => 16,
    }
}
