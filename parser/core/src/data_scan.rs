//! `--check-data`: scans every tensor's bytes for the values ggml's
//! `ggml_validate_row_data` rejects (llama.cpp `--check-tensors`), and
//! reports them as diagnostics of the `data` rules of [`crate::rules`].
//!
//! Work follows the bytes that exist, not what the tensor infos declare:
//! - each byte range is scanned at most once per element type, however
//!   many tensors claim it. Tensors of one type are walked in offset order
//!   and each is scanned only from where the ranges already scanned end
//!   (rounded up to its own block grid), so findings in shared bytes go to
//!   the first tensor that claims them (overlaps themselves are the layout
//!   rules' business);
//! - the scan is cut into tasks of whole blocks ([`DataOptions::chunk_bytes`],
//!   8 MiB by default), so the number of tasks is bounded by the file's
//!   length (per type) plus the number of tensor infos;
//! - holes of sparse files are not read (zeros are valid for every type);
//! - bytes are read through a [`ByteSource`] into one reused buffer per
//!   thread (no memory map: a file that shrinks gives an error, not a
//!   signal); tasks run in batches on all cores and their results are
//!   folded in file order, so what is listed is deterministic and memory
//!   stays flat;
//! - what is kept for listing is capped per tensor and per rule, and the
//!   report lists only the tensors with findings or left unchecked (at most
//!   [`limits::MAX_LISTED_DATA_TENSORS`]), with counts for the rest.
//!
//! Each chunk is first screened with a branch-free pass over the exponent
//! bits of its elements or block scales; only a chunk that may hold a
//! finding goes through [`numerics::check_row_data`], which classifies
//! each one exactly.
//!
//! Byte order: tensor data of a big-endian GGUF file is read with each
//! F32/F16/BF16/F64 element byte-swapped. Quantized blocks of a big-endian
//! file are not checked (status `unsupported-byte-order`): writers disagree
//! on whether their fp16 scales are swapped (gguf-py swaps numpy arrays
//! element-wise, which leaves byte arrays of blocks untouched), so there is
//! no layout to check them against.
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::Serialize;

use crate::data::DataTensor;
use crate::io::{ByteSource, ReadError};
use crate::limits;
use crate::numerics::{self, DataFinding, FindingKind, ScaleKind};
use crate::parse::ByteOrder;
use crate::report::{Options, Report, Sink};
use crate::rules::{Level, RuleId};
use crate::types::GgmlType;

/// Findings listed per tensor by default (the rest are counted).
pub const DEFAULT_MAX_LISTED_PER_TENSOR: usize = 10;

/// Bytes of tensor data per parallel task by default.
pub const DEFAULT_CHUNK_BYTES: u64 = 8 << 20;

/// Tasks handed to the thread pool at once, per thread.
const TASKS_PER_THREAD_PER_BATCH: usize = 8;

/// How to scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataOptions {
    /// At most this many findings of a tensor are listed.
    pub max_listed_per_tensor: usize,
    /// At most this many findings of a rule are listed in the whole file.
    pub max_listed_per_rule: usize,
    /// Target bytes per task (rounded down to whole blocks, at least one).
    pub chunk_bytes: u64,
}

impl Default for DataOptions {
    fn default() -> Self {
        DataOptions {
            max_listed_per_tensor: DEFAULT_MAX_LISTED_PER_TENSOR,
            max_listed_per_rule: limits::MAX_DIAGNOSTICS_PER_RULE,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
        }
    }
}

impl DataOptions {
    /// Options that list `n` findings per tensor, and at least as many per
    /// rule (never fewer than the report's usual per-rule cap).
    pub fn listing(n: usize) -> DataOptions {
        DataOptions {
            max_listed_per_tensor: n,
            max_listed_per_rule: n.max(limits::MAX_DIAGNOSTICS_PER_RULE),
            ..DataOptions::default()
        }
    }
}

/// Whether and how a tensor's values were checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
    /// The tensor's bytes are not all inside the file.
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
    pub ty: GgmlType,
    /// Absolute offset of the tensor's first byte.
    pub offset: u64,
    /// Bytes of data.
    pub bytes: u64,
    /// Whether the values were checked.
    pub status: TensorStatus,
    /// Bytes of this tensor scanned for it (less than `bytes` when another
    /// tensor of the same type claims some of them first).
    pub bytes_scanned: u64,
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
    /// Findings listed as diagnostics in the report.
    pub listed: u64,
}

/// One finding, located in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataIssue {
    /// The rule it breaks.
    pub rule: RuleId,
    /// Position of the tensor in the list given to [`check_data`].
    pub tensor: usize,
    /// Index of the tensor in its file.
    pub tensor_index: usize,
    /// Tensor name.
    pub tensor_name: String,
    /// Tensor type.
    pub ty: GgmlType,
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
    /// Tensors per status (what was and was not examined).
    pub tensors_by_status: BTreeMap<TensorStatus, u64>,
    /// Bytes the checked tensors declare (shared bytes counted per tensor).
    pub bytes_claimed: u64,
    /// Bytes of tensor data scanned (each range once per type).
    pub bytes_checked: u64,
    /// Findings in all tensors.
    pub findings: u64,
    /// Counts per rule id of all findings (listed or not).
    pub findings_by_rule: BTreeMap<&'static str, u64>,
    /// Tensors with findings or not checked, in file order (at most
    /// [`limits::MAX_LISTED_DATA_TENSORS`]).
    pub per_tensor: Vec<TensorData>,
    /// Tensors with findings or not checked that `per_tensor` leaves out.
    pub per_tensor_omitted: u64,
    /// The listed findings, by offset.
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

fn status_of(t: &DataTensor, len: u64) -> TensorStatus {
    use GgmlType as T;
    let in_bounds = t.offset.checked_add(t.nbytes).is_some_and(|e| e <= len);
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

/// One task: whole blocks `[start, start + len)` of tensor `tensor`
/// (offsets relative to the tensor's first byte).
#[derive(Clone, Copy, Debug)]
struct Task {
    tensor: usize,
    start: u64,
    len: u64,
}

/// What a scan counts, per chunk and per tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ValueCounts {
    blocks: u64,
    values_checked: u64,
    nan: u64,
    inf: u64,
    mxfp4_exponent: u64,
    f64_overflow: u64,
}

impl ValueCounts {
    fn add(&mut self, o: &ValueCounts) {
        self.blocks += o.blocks;
        self.values_checked += o.values_checked;
        self.nan += o.nan;
        self.inf += o.inf;
        self.mxfp4_exponent += o.mxfp4_exponent;
        self.f64_overflow += o.f64_overflow;
    }

    fn findings(&self) -> u64 {
        self.nan.saturating_add(self.inf).saturating_add(self.mxfp4_exponent).saturating_add(self.f64_overflow)
    }

    /// `blocks` clean blocks of `ty` (every value checked, nothing found).
    fn clean(ty: GgmlType, blocks: u64) -> ValueCounts {
        let per_block = if is_element_type(ty) { 1 } else { numerics::scale_fields(ty).len() as u64 };
        ValueCounts { blocks, values_checked: blocks * per_block, ..ValueCounts::default() }
    }
}

#[derive(Debug, Default)]
struct ChunkResult {
    counts: ValueCounts,
    listed: Vec<DataFinding>,
}

/// Per-tensor running counts.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    counts: ValueCounts,
    bytes_scanned: u64,
    listed: u64,
}

/// Cuts the checked tensors into tasks so that each byte range is scanned
/// once per type (see the module docs); tasks come out in file order.
fn plan(tensors: &[DataTensor], statuses: &[TensorStatus], chunk_bytes: u64) -> Vec<Task> {
    let mut order: Vec<usize> =
        (0..tensors.len()).filter(|&i| statuses.get(i) == Some(&TensorStatus::Checked)).collect();
    order.sort_by_key(|&i| tensors.get(i).map(|t| (t.ty.id(), t.offset, i)));
    let mut tasks = Vec::new();
    let mut current: Option<GgmlType> = None;
    let mut covered_end = 0u64;
    for i in order {
        let Some(t) = tensors.get(i) else { continue };
        if current != Some(t.ty) {
            current = Some(t.ty);
            covered_end = 0;
        }
        let ts = u64::from(t.ty.type_size()).max(1);
        let whole = t.nbytes / ts * ts;
        let skip = covered_end.saturating_sub(t.offset);
        let mut start = crate::parse::align_up(skip, ts).unwrap_or(u64::MAX).min(whole);
        let step = (chunk_bytes / ts).max(1).saturating_mul(ts);
        while start < whole {
            let len = step.min(whole - start);
            tasks.push(Task { tensor: i, start, len });
            start += len;
        }
        covered_end = covered_end.max(t.offset.saturating_add(whole));
    }
    tasks
        .sort_by_key(|task| (tensors.get(task.tensor).map_or(0, |t| t.offset.saturating_add(task.start)), task.tensor));
    tasks
}

/// Scans the data of `tensors` (absolute ranges in `src`, normally the
/// whole file) and returns counts and the first findings. `progress` is
/// called with the number of bytes finished after each chunk, from any
/// thread; setting `cancel` stops the scan at the next batch
/// ([`ReadError::Cancelled`]).
pub fn check_data(
    src: &dyn ByteSource,
    tensors: &[DataTensor],
    opts: &DataOptions,
    progress: &(dyn Fn(u64) + Sync),
    cancel: Option<&AtomicBool>,
) -> Result<DataReport, ReadError> {
    let len = src.len();
    let statuses: Vec<TensorStatus> = tensors.iter().map(|t| status_of(t, len)).collect();
    let tasks = plan(tensors, &statuses, opts.chunk_bytes);
    let mut acc = vec![Acc::default(); tensors.len()];
    let mut report = DataReport::default();
    let mut listed_per_rule: BTreeMap<RuleId, usize> = BTreeMap::new();
    let per_chunk = opts.max_listed_per_tensor.min(opts.max_listed_per_rule);
    let batch = rayon::current_num_threads().max(1).saturating_mul(TASKS_PER_THREAD_PER_BATCH);
    for tasks in tasks.chunks(batch) {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(ReadError::Cancelled);
        }
        let results: Vec<Result<ChunkResult, ReadError>> = tasks
            .par_iter()
            .map(|task| {
                let r = match tensors.get(task.tensor) {
                    Some(t) => scan_task(src, t, task, per_chunk),
                    None => Ok(ChunkResult::default()),
                };
                progress(task.len);
                r
            })
            .collect();
        for (task, r) in tasks.iter().zip(results) {
            let r = r?;
            let (Some(a), Some(t)) = (acc.get_mut(task.tensor), tensors.get(task.tensor)) else { continue };
            a.bytes_scanned += task.len;
            a.counts.add(&r.counts);
            report.bytes_checked += task.len;
            let ts = u64::from(t.ty.type_size()).max(1);
            for f in r.listed {
                let Some(rule) = rule_for(f.kind, f.field) else { continue };
                let n = listed_per_rule.entry(rule).or_default();
                if a.listed >= opts.max_listed_per_tensor as u64 || *n >= opts.max_listed_per_rule {
                    continue;
                }
                *n += 1;
                a.listed += 1;
                report.issues.push(DataIssue {
                    rule,
                    tensor: task.tensor,
                    tensor_index: t.index,
                    tensor_name: t.name.clone(),
                    ty: t.ty,
                    block: task.start / ts + f.block,
                    offset: t.offset + task.start + f.byte_offset,
                    kind: f.kind,
                    field: f.field,
                    raw: f.raw,
                });
            }
        }
    }
    for (i, (t, status)) in tensors.iter().zip(&statuses).enumerate() {
        let Some(a) = acc.get_mut(i) else { continue };
        *report.tensors_by_status.entry(*status).or_default() += 1;
        let c = a.counts;
        let mut findings = c.findings();
        match status {
            TensorStatus::Checked => {
                report.tensors_checked += 1;
                report.bytes_claimed = report.bytes_claimed.saturating_add(t.nbytes);
            }
            TensorStatus::TypeNotValidatable => {
                // ggml rejects the tensor as a whole: one finding at its start.
                findings = 1;
                let n = listed_per_rule.entry(RuleId::DataTypeNotValidatable).or_default();
                if opts.max_listed_per_tensor > 0 && *n < opts.max_listed_per_rule {
                    *n += 1;
                    a.listed = 1;
                    report.issues.push(DataIssue {
                        rule: RuleId::DataTypeNotValidatable,
                        tensor: i,
                        tensor_index: t.index,
                        tensor_name: t.name.clone(),
                        ty: t.ty,
                        block: 0,
                        offset: t.offset,
                        kind: FindingKind::TypeNotValidatable,
                        field: "type",
                        raw: 0,
                    });
                }
            }
            _ => {}
        }
        report.findings += findings;
        let nonfinite = if is_element_type(t.ty) { RuleId::DataNonFinite } else { RuleId::DataScaleNonFinite };
        for (rule, n) in [
            (nonfinite, c.nan + c.inf),
            (RuleId::DataMxfp4Exponent, c.mxfp4_exponent),
            (RuleId::DataF64Overflow, c.f64_overflow),
            (RuleId::DataTypeNotValidatable, u64::from(*status == TensorStatus::TypeNotValidatable)),
        ] {
            if n > 0 {
                *report.findings_by_rule.entry(rule.id()).or_default() += n;
            }
        }
        let notable = findings > 0 || !matches!(status, TensorStatus::Checked | TensorStatus::NothingToCheck);
        if !notable {
            continue;
        }
        if report.per_tensor.len() >= limits::MAX_LISTED_DATA_TENSORS {
            report.per_tensor_omitted += 1;
            continue;
        }
        report.per_tensor.push(TensorData {
            index: t.index,
            name: t.name.clone(),
            ty: t.ty,
            offset: t.offset,
            bytes: t.nbytes,
            status: *status,
            bytes_scanned: a.bytes_scanned,
            blocks: c.blocks,
            values_checked: c.values_checked,
            findings,
            nan: c.nan,
            inf: c.inf,
            mxfp4_exponent: c.mxfp4_exponent,
            f64_overflow: c.f64_overflow,
            listed: a.listed,
        });
    }
    report.issues.sort_by_key(|i| (i.offset, i.tensor));
    Ok(report)
}

thread_local! {
    /// One read buffer per thread, reused across tasks (a fresh 8 MiB
    /// buffer per task would be mapped and faulted in every time).
    static READ_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn scan_task(src: &dyn ByteSource, t: &DataTensor, task: &Task, max_listed: usize) -> Result<ChunkResult, ReadError> {
    let at = t.offset.saturating_add(task.start);
    let n = usize::try_from(task.len).map_err(|_| ReadError::TooLarge {
        need: task.len,
        limit: u64::try_from(usize::MAX).unwrap_or(u64::MAX),
        what: "a data chunk",
    })?;
    if src.is_hole(at, task.len) {
        // A hole of a sparse file reads as zeros, and zero is a valid value
        // and a valid scale for every type: nothing to read or find.
        let blocks = task.len / u64::from(t.ty.type_size()).max(1);
        return Ok(ChunkResult { counts: ValueCounts::clean(t.ty, blocks), listed: Vec::new() });
    }
    READ_BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let data = crate::io::placed_window(&mut buf, at, n);
        src.read_exact_at(at, data)?;
        if t.order == ByteOrder::BigEndian && is_element_type(t.ty) {
            for e in data.chunks_exact_mut((t.ty.type_size() as usize).max(1)) {
                e.reverse();
            }
        }
        Ok(scan_le(t.ty, data, max_listed))
    })
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
        return ChunkResult { counts: ValueCounts::clean(ty, blocks), listed: Vec::new() };
    }
    let mut listed = Vec::new();
    let sum = numerics::check_row_data(ty, data, &mut |f: DataFinding| {
        if listed.len() < max_listed && f.kind != FindingKind::PartialBlock {
            listed.push(f);
        }
    });
    let counts = ValueCounts {
        blocks: sum.blocks,
        values_checked: sum.values_checked,
        nan: sum.nan,
        inf: sum.inf,
        mxfp4_exponent: sum.invalid_e8m0,
        f64_overflow: sum.f32_overflow,
    };
    ChunkResult { counts, listed }
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
    /// Adds the listed findings to `report` as diagnostics (path
    /// `tensor[i] NAME/data[block N]`) at the levels of `opts`; counts
    /// include every finding, and findings counted but not listed go to
    /// `suppressed`. Each tensor's `listed` is set to what was really added
    /// (a rule at level `allow` lists nothing). `valid` is recomputed.
    pub fn merge_into(&mut self, report: &mut Report, opts: &Options) {
        // Listing was capped during the scan (per tensor and per rule), so
        // the sink lists everything it is given; its levels, counts and
        // `suppressed` are the same policy as for every other rule.
        let unchecked: u64 = self
            .tensors_by_status
            .iter()
            .filter(|(s, _)| !matches!(s, TensorStatus::Checked | TensorStatus::NothingToCheck))
            .map(|(_, n)| *n)
            .sum();
        let entry = if unchecked == 0 {
            crate::report::Examined::checked("data")
        } else {
            crate::report::Examined::partly("data", format!("{unchecked} tensors not checked"))
        };
        match report.summary.examined.iter_mut().find(|e| e.layer == "data") {
            Some(e) => *e = entry,
            None => report.summary.examined.push(entry),
        }
        let cap = self.issues.len().max(limits::MAX_DIAGNOSTICS_PER_RULE) as u64;
        let mut sink = Sink::resume(report, opts).with_cap(cap);
        let mut shown: BTreeMap<RuleId, u64> = BTreeMap::new();
        let mut listed_per_tensor: BTreeMap<usize, u64> = BTreeMap::new();
        for issue in &self.issues {
            if opts.level(issue.rule) == Level::Allow {
                continue;
            }
            *shown.entry(issue.rule).or_default() += 1;
            *listed_per_tensor.entry(issue.tensor_index).or_default() += 1;
            let width = u64::from(bits_of(issue.ty, issue.field) / 8);
            sink.emit_span(issue.rule, issue.offset, Some(width), || issue_path(issue), || issue_message(issue));
        }
        for p in &mut self.per_tensor {
            p.listed = listed_per_tensor.get(&p.index).copied().unwrap_or(0);
        }
        for (id, total) in &self.findings_by_rule {
            let Some(rule) = RuleId::from_id(id) else { continue };
            let listed = shown.get(&rule).copied().unwrap_or(0);
            sink.count_unlisted(rule, total.saturating_sub(listed));
        }
        sink.finish_into(report);
    }
}

fn issue_path(issue: &DataIssue) -> String {
    let name = crate::parse::quote_bytes(issue.tensor_name.as_bytes());
    let index = issue.tensor_index;
    match issue.kind {
        FindingKind::TypeNotValidatable => format!("tensor[{index}] {name}/data"),
        _ if issue.field == "element" => format!("tensor[{index}] {name}/data[element {}]", issue.block),
        _ => format!("tensor[{index}] {name}/data[block {}].{}", issue.block, issue.field),
    }
}

fn issue_message(issue: &DataIssue) -> String {
    let ty = issue.ty;
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
        FindingKind::TypeNotValidatable => {
            format!("{ty} data cannot be validated: ggml_validate_row_data has no case for {ty} and rejects the tensor")
        }
        FindingKind::PartialBlock => String::new(),
    }
}

/// Width in bits of a finding's raw field.
fn bits_of(ty: GgmlType, field: &str) -> u32 {
    match (ty, field) {
        (GgmlType::F32, "element") | (GgmlType::Q8_K, _) => 32,
        (GgmlType::F64, "element") => 64,
        (GgmlType::MXFP4, _) => 8,
        _ => 16,
    }
}
