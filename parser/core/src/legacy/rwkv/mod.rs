//! rwkv.cpp checkpoints (`.bin`): parser and rules.
//!
//! Layout (rwkv.cpp `docs/FILE_FORMAT.md`, `rwkv_file_format.inc`): six
//! little-endian u32 (magic `0x67676d66`, version 100 or 101, n_vocab,
//! n_embed, n_layer, data_type), then parameters until the end of the file:
//! u32 dim_count, u32 key_length, u32 data_type, u32 shape\[dim_count\]
//! (ne0 first, i.e. reversed from PyTorch), the key bytes, and the data,
//! `type_size * elements / block_size` bytes with no padding.
//!
//! Data types use rwkv.cpp's own numbering ([`RWKV_TYPES`]), mapped to
//! ggml types as `rwkv_type_to_ggml` does. Version 101 quantized blocks have
//! the current ggml layout (rwkv.cpp moved to ggml `00b49ec7`, 2023-05-26,
//! after the 2023-05 block changes); version 100 quantized blocks do not.
//!
//! One module per concern: `types` (the data type table), `parse`
//! (bytes to [`RwkvFile`]), `arch` (architecture versions and their
//! parameter names), `check` (the `rwkv-*` rules), `dump` (the JSON
//! description and the data view).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

mod arch;
mod check;
mod dump;
mod parse;
mod types;

pub use arch::{GLOBAL_NAMES, RwkvArch};
pub(crate) use check::check;
pub use dump::{data_tensors, dump};
pub use parse::parse;
pub use types::{RWKV_TYPES, RwkvType, rwkv_type};

use super::{Fatal, element_count};
use crate::parse::quote_bytes;
use crate::types::GgmlType;

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
