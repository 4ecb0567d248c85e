//! rwkv.cpp's data types and the ggml types they map to.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

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
