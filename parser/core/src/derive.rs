//! Provenance: does a quantized model derive, bit for bit, from a base
//! model through ggml's quantizer (`ggml_quantize_chunk`, what
//! `llama-quantize` calls)?
//!
//! For every tensor of the quant, the base's tensor of the same name (F32,
//! F16 or BF16) is quantized to the quant's type with
//! [`gguf_numerics::quantize_chunk`] and compared byte for byte. Work is
//! streamed: rows are read, converted and compared in chunks of at most
//! [`DERIVE_CHUNK_ELEMENTS`] elements, never a whole tensor; tensors run in
//! parallel. Every range is checked against the file before it is read.
//!
//! With an importance matrix ([`crate::imatrix::Imatrix`]), each tensor is
//! quantized with the weights `llama_model_quantize` would select for it
//! (by name, one slice per expert of a 3-D tensor), so quants made with
//! `llama-quantize --imatrix` can be checked too.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

use gguf_numerics::GgmlType;
use rayon::prelude::*;
use serde::Serialize;

use crate::data::DataTensor;
use crate::imatrix::{Imatrix, Lookup};
use crate::io::{ByteSource, read_range};
use crate::parse::ByteOrder;

/// Elements converted and compared at a time per tensor (4 Mi f32: 16 MiB).
pub const DERIVE_CHUNK_ELEMENTS: u64 = 1 << 22;

/// What came of one tensor of the quant.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Verdict {
    /// Quantizing the base's tensor gives exactly the quant's bytes (or, for
    /// a tensor stored as in the base, the bytes are the same).
    Identical,
    /// Some blocks differ.
    Differs {
        /// Index of the first differing block.
        first_block: u64,
        /// How many blocks differ.
        blocks: u64,
        /// Largest absolute difference between the dequantized values of
        /// the quant's blocks and ours, over the differing blocks.
        max_abs_error: f32,
    },
    /// The tensor cannot be derived from the base: why.
    NotDerivable {
        /// The reason.
        reason: String,
    },
}

/// One tensor's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TensorResult {
    /// Tensor name.
    pub name: String,
    /// The quant's type of the tensor.
    #[serde(rename = "type")]
    pub ty: String,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

fn not(reason: impl Into<String>) -> Verdict {
    Verdict::NotDerivable { reason: reason.into() }
}

/// Compares every tensor of `quant` with the base's tensor of the same name
/// (tensors described by [`crate::Validated::layout`] of each file),
/// quantizing with the weights `imatrix` holds for each tensor, if any.
/// Once `cancel` is set, the tensors not started are not compared.
pub fn derive(
    base: &dyn ByteSource,
    base_tensors: &[DataTensor],
    quant: &dyn ByteSource,
    quant_tensors: &[DataTensor],
    imatrix: Option<&Imatrix>,
    cancel: Option<&AtomicBool>,
) -> Vec<TensorResult> {
    quant_tensors
        .par_iter()
        .map(|q| {
            let verdict = match base_tensors.iter().find(|b| b.name == q.name) {
                // A time limit passed: the tensors not started are not read.
                _ if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) => not("not compared: the time limit passed"),
                None => not("no tensor of that name in the base"),
                Some(b) => one(base, b, quant, q, imatrix),
            };
            TensorResult { name: q.name.clone(), ty: q.ty.name().to_string(), verdict }
        })
        .collect()
}

fn in_file(t: &DataTensor, len: u64) -> bool {
    t.offset.checked_add(t.nbytes).is_some_and(|end| end <= len)
}

fn one(
    base: &dyn ByteSource,
    b: &DataTensor,
    quant: &dyn ByteSource,
    q: &DataTensor,
    imatrix: Option<&Imatrix>,
) -> Verdict {
    if b.dims != q.dims {
        return not(format!("shape {:?} in the base, {:?} in the quant", b.dims, q.dims));
    }
    if !matches!(b.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        return not(format!("the base's tensor is {}, not F32, F16 or BF16", b.ty.name()));
    }
    if b.order != ByteOrder::LittleEndian || q.order != ByteOrder::LittleEndian {
        return not("big-endian files are not compared");
    }
    if !in_file(b, base.len()) || !in_file(q, quant.len()) {
        return not("the tensor's bytes are not all inside its file");
    }
    let same_type = b.ty == q.ty;
    let n_per_row = b.dims.first().copied().unwrap_or(1).max(1);
    // Rows per expert slice (`ne[1]`) and slices (`ne[2]`), as
    // llama_model_quantize picks one row of weights per expert.
    let rows_per_expert = b.dims.get(1).copied().unwrap_or(1).max(1);
    let n_expert = b.dims.get(2).copied().unwrap_or(1).max(1);
    let weights = match imatrix.map(|m| m.lookup(&q.name, n_per_row, n_expert)) {
        Some(Lookup::Weights(w)) if !same_type => Some(w),
        Some(Lookup::SizeMismatch { have, want }) if !same_type => {
            return not(format!(
                "the importance matrix holds {have} weights for this tensor, not {want}: llama-quantize refuses it"
            ));
        }
        _ => None,
    };
    if !same_type && weights.is_none() {
        if !gguf_numerics::has_chunk_quantizer(q.ty) {
            return not(format!("{} has no ggml_quantize_chunk case", q.ty.name()));
        }
        if gguf_numerics::requires_imatrix(q.ty) {
            return not(format!(
                "{} is quantized only with an importance matrix (ggml_quantize_requires_imatrix): give an importance matrix",
                q.ty.name()
            ));
        }
    }
    let (qbs, qts) = (u64::from(q.ty.block_size()), u64::from(q.ty.type_size()));
    let (bbs, bts) = (u64::from(b.ty.block_size()), u64::from(b.ty.type_size()));
    if qbs == 0 || bbs == 0 || n_per_row.checked_rem(qbs) != Some(0) {
        return not(format!("rows of {n_per_row} are not whole {} blocks", q.ty.name()));
    }
    let elements: u64 = b.dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d)).unwrap_or(0);
    let rows = elements.checked_div(n_per_row).unwrap_or(0);
    let rows_per_chunk = DERIVE_CHUNK_ELEMENTS.checked_div(n_per_row).unwrap_or(1).max(1);
    let (mut first, mut blocks, mut max_err) = (None, 0u64, 0f32);
    let (mut ours, mut f) = (Vec::new(), Vec::new());
    let mut row = 0u64;
    while row < rows {
        // All products are at most the tensor's element count or byte size,
        // which were checked against the file: saturation never happens.
        // A chunk never crosses an expert boundary (one weight row each).
        let to_boundary = rows_per_expert.saturating_sub(row % rows_per_expert);
        let n = rows_per_chunk.min(rows.saturating_sub(row)).min(to_boundary);
        let slice = weights.and_then(|w| {
            let start = usize::try_from((row / rows_per_expert).saturating_mul(n_per_row)).ok()?;
            w.get(start..start.checked_add(usize::try_from(n_per_row).ok()?)?)
        });
        let elems = n.saturating_mul(n_per_row);
        let at = row.saturating_mul(n_per_row);
        let (boff, blen) = (at / bbs * bts, elems / bbs * bts);
        let (qoff, qlen) = (at / qbs * qts, elems / qbs * qts);
        let (Ok(bbytes), Ok(qbytes)) = (
            read_range(base, b.offset.saturating_add(boff), blen),
            read_range(quant, q.offset.saturating_add(qoff), qlen),
        ) else {
            return not("a read failed");
        };
        let mine: &[u8] = if same_type {
            &bbytes
        } else {
            f.resize(usize::try_from(elems).unwrap_or(0), 0.0);
            if let Err(e) = gguf_numerics::dequantize(b.ty, &bbytes, &mut f) {
                return not(format!("the base's values could not be read: {e}"));
            }
            if let Err(e) =
                gguf_numerics::quantize_chunk(q.ty, &f, usize::try_from(n_per_row).unwrap_or(0), slice, &mut ours)
            {
                return not(format!("the base's values could not be quantized: {e}"));
            }
            &ours
        };
        let qts_us = usize::try_from(qts).unwrap_or(1).max(1);
        for (k, (x, y)) in mine.chunks(qts_us).zip(qbytes.chunks(qts_us)).enumerate() {
            if x != y {
                let index = (at / qbs).saturating_add(u64::try_from(k).unwrap_or(0));
                first.get_or_insert(index);
                blocks = blocks.saturating_add(1);
                let mut dx = vec![0f32; usize::try_from(qbs).unwrap_or(0)];
                let mut dy = dx.clone();
                if gguf_numerics::dequantize(q.ty, x, &mut dx).is_ok()
                    && gguf_numerics::dequantize(q.ty, y, &mut dy).is_ok()
                {
                    for (a, c) in dx.iter().zip(&dy) {
                        let e = (a - c).abs();
                        if e > max_err || e.is_nan() {
                            max_err = if e.is_nan() { f32::NAN } else { e };
                        }
                    }
                }
            }
        }
        row = row.saturating_add(n);
    }
    match first {
        None => Verdict::Identical,
        Some(first_block) => Verdict::Differs { first_block, blocks, max_abs_error: max_err },
    }
}
