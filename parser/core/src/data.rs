//! A format-independent view of where each tensor's data lies, used by
//! `--check-data` and `dump --tensor --dequant` for every format the tool
//! reads (GGUF, and the legacy formats of [`crate::legacy`]).
#![forbid(unsafe_code)]

use crate::parse::{ByteOrder, Parsed};
use crate::types::GgmlType;

/// Where a validated file's tensor data lies and where its metadata ends,
/// from its metadata: the one format dispatch after validation (GGUF, else
/// the legacy formats, which interleave headers and data), one parse for
/// everything a later step needs (`validate::layout`, or the validation's
/// own parse with `Options::want_layout`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// The tensors whose data can be read ([`gguf_tensors`],
    /// [`crate::legacy::data_tensors`]).
    pub tensors: Vec<DataTensor>,
    /// The end of a GGUF file's tensor infos (what a metadata hash covers).
    pub metadata_end: Option<u64>,
}

/// One tensor's data: name, element type, absolute byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataTensor {
    /// Position of the tensor in its file (the tensor info index, for GGUF).
    pub index: usize,
    /// Tensor name (lossy UTF-8).
    pub name: String,
    /// Element type.
    pub ty: GgmlType,
    /// Dims, `ne[0]` first.
    pub dims: Vec<u64>,
    /// Absolute offset of the first byte.
    pub offset: u64,
    /// Bytes of data.
    pub nbytes: u64,
    /// Byte order of the elements.
    pub order: ByteOrder,
}

/// The tensors of a parsed GGUF file whose data is fully inside a file of
/// `file_len` bytes and whose type and shape are valid; the others are
/// left out (validation reports them).
pub fn gguf_tensors(parsed: &Parsed<'_>, file_len: u64) -> Vec<DataTensor> {
    let f = &parsed.file;
    if parsed.fatal.is_some() {
        return Vec::new();
    }
    let Some(data_start) = f.data_start() else { return Vec::new() };
    f.tensors
        .iter()
        .filter_map(|t| {
            let ty = GgmlType::from_id(t.type_id)?;
            if t.n_dims > crate::limits::MAX_DIMS {
                return None;
            }
            let nbytes = t.nbytes()?;
            let dims: Vec<u64> = t.dims().collect();
            let offset = data_start.checked_add(t.data_offset)?;
            (offset.checked_add(nbytes)? <= file_len).then(|| DataTensor {
                index: t.index,
                name: String::from_utf8_lossy(t.name.bytes).into_owned(),
                ty,
                dims,
                offset,
                nbytes,
                order: f.header.byte_order,
            })
        })
        .collect()
}
