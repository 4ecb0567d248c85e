//! Type-id dialects: tensor types a fork of llama.cpp writes under ids that
//! upstream ggml gives another layout (or none). Upstream reads such a file
//! with the wrong block size, so its tensors' data no longer lines up, and
//! the report would only say that offsets are wrong. When the file's data
//! lines up exactly with a dialect's block sizes and not with upstream's,
//! the dialect is named (`tensor-type-dialect`).
//!
//! The dialects are data, each with where it is documented: the fork's
//! layouts are not in a source this project reads (PrismML's fork is not
//! on a package registry).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::parse::{GgufFile, align_up};
use crate::report::Sink;
use crate::rules::RuleId;

use super::tensors::{TensorFacts, tensor_path};

/// A type a fork writes under `id`: `block` elements in `bytes` bytes.
pub(crate) struct Dialect {
    pub(crate) id: u32,
    pub(crate) name: &'static str,
    pub(crate) block: u64,
    pub(crate) bytes: u64,
    pub(crate) source: &'static str,
}

/// The known dialects.
pub(crate) const DIALECTS: &[Dialect] = &[
    Dialect {
        id: 40,
        name: "Q1_0 with 32-element groups (the PrismML fork's early id 40; upstream 40 is NVFP4)",
        block: 32,
        bytes: 6,
        source: "unixsysdev/llama-turboquant#6 (PrismML's fork assigns 40 to Q1_0, 32-element blocks of 6 bytes)",
    },
    Dialect {
        id: 42,
        name: "Q2_0 with 128-element groups (the PrismML fork's legacy layout; upstream Q2_0 has 64-element groups)",
        block: 128,
        bytes: 34,
        source: "PrismML-Eng/llama.cpp#167, #130 (legacy group-128 Q2_0 stored as id 42)",
    },
    Dialect {
        id: 142,
        name: "PQ2_0 (the PrismML fork's Q2_0 with 128-element groups)",
        block: 128,
        bytes: 34,
        source: "llama.cpp#29058 (block_pq2_0: fp16 scale, 32 bytes of 2-bit codes)",
    },
    Dialect {
        id: 143,
        name: "PTQ1_0 (the PrismML fork's ternary type with 128-element groups)",
        block: 128,
        bytes: 28,
        source: "llama.cpp#29058 (block_ptq1_0: 24 + 2 bytes of trits, fp16 scale)",
    },
];

fn dialect(id: u32) -> Option<&'static Dialect> {
    DIALECTS.iter().find(|d| d.id == id)
}

/// Where the data ends (past `data_start`, padded to `align`) when every
/// tensor's data starts where the one before it ends (padded), the way
/// every GGUF writer lays data out, with each tensor's size from `size`,
/// and the last one ends inside the file; None otherwise.
fn lines_up(file: &GgufFile<'_>, align: u64, data_start: u64, size: impl Fn(usize) -> Option<u64>) -> Option<u64> {
    let mut at = 0u64;
    for (i, t) in file.tensors.iter().enumerate() {
        let n = size(i)?;
        if t.data_offset != at {
            return None;
        }
        let next = at.checked_add(n)?;
        if data_start.checked_add(next).is_none_or(|end| end > file.file_len) {
            return None;
        }
        at = align_up(next, align)?;
    }
    Some(at)
}

/// Names the dialect of `file`'s tensor types when its data lines up with
/// the dialect's sizes and not with upstream ggml's.
pub(crate) fn check(file: &GgufFile<'_>, tensors: &TensorFacts, align: u64, data_start: u64, sink: &mut Sink<'_>) {
    if !file.tensors.iter().any(|t| dialect(t.type_id).is_some()) {
        return;
    }
    if lines_up(file, align, data_start, |i| tensors.sizes.get(i)?.nbytes).is_some() {
        return;
    }
    let dialect_size = |i: usize| {
        let t = file.tensors.get(i)?;
        let size = tensors.sizes.get(i)?;
        match dialect(t.type_id) {
            Some(d) => {
                // The fork's ggml, like upstream's, takes rows of whole
                // blocks only.
                let elements = size.elements?;
                if t.dims().next()?.checked_rem(d.block)? != 0 {
                    return None;
                }
                elements.checked_div(d.block)?.checked_mul(d.bytes)
            }
            None => size.nbytes,
        }
    };
    // The dialect's sizes must also account for the file's end (up to the
    // padding after the last tensor): a last tensor that merely fits in
    // the bytes left is no evidence (a wrong shape can fit too).
    let Some(end) = lines_up(file, align, data_start, dialect_size) else { return };
    if data_start.checked_add(end).is_none_or(|end| end < file.file_len) {
        return;
    }
    let mut named: Vec<u32> = Vec::new();
    for t in &file.tensors {
        let Some(d) = dialect(t.type_id) else { continue };
        if named.contains(&d.id) {
            continue;
        }
        named.push(d.id);
        let count = file.tensors.iter().filter(|o| o.type_id == d.id).count();
        sink.emit(RuleId::TensorTypeDialect, t.type_offset, || tensor_path(t, "type"), || {
            format!(
                "type id {} is {} here: the data of every tensor lines up with {} bytes per {} elements for the {count} tensors of this id, not with upstream ggml's size; upstream llama.cpp cannot load it ({})",
                d.id, d.name, d.bytes, d.block, d.source
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::GgmlType;

    /// A dialect is another layout than upstream's for its id (or an id
    /// upstream does not have): otherwise upstream reads it rightly.
    #[test]
    fn every_dialect_differs_from_upstream() {
        for d in DIALECTS {
            if let Some(t) = GgmlType::from_id(d.id) {
                let upstream = (u64::from(t.block_size()), u64::from(t.type_size()));
                assert_ne!(upstream, (d.block, d.bytes), "{}", d.name);
                // Per element the sizes differ, so data can line up with one only.
                assert_ne!(upstream.1 * d.block, d.bytes * upstream.0, "{}", d.name);
            }
            assert!(!d.source.is_empty());
        }
    }
}
