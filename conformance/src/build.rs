//! Small helpers for writing cases: a valid base file and byte patching.

use gguf_validate::types::{GgmlType, ValueType};
use gguf_validate::write::{GgufModel, OwnedTensor, OwnedValue};

pub use gguf_validate::write::{GgufModel as Model, OwnedValue as V};

/// A valid little-endian v3 file: `general.architecture = "llama"` and one
/// F32 tensor `t` of 8 elements. 160 bytes: header 24, key/value 45,
/// tensor info 33, padding to 128, data 32.
pub fn base() -> GgufModel {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("llama"));
    m.tensor(f32_tensor("t", &[8]));
    m
}

/// A model with only `general.architecture` (no tensors).
pub fn base_no_tensors() -> GgufModel {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("llama"));
    m
}

/// An F32 tensor with data 0.0, 1.0, 2.0, ...
pub fn f32_tensor(name: &str, dims: &[u64]) -> OwnedTensor {
    let n: u64 = dims.iter().product();
    let data = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    OwnedTensor { name: name.as_bytes().to_vec(), dims: dims.to_vec(), type_id: GgmlType::F32.id(), offset: 0, data }
}

/// A tensor of any live type with zeroed data (shape must be whole blocks).
pub fn zero_tensor(name: &str, dims: &[u64], ty: GgmlType) -> OwnedTensor {
    OwnedTensor::zeroed(name, dims, ty).unwrap_or_else(|| OwnedTensor {
        name: name.as_bytes().to_vec(),
        dims: dims.to_vec(),
        type_id: ty.id(),
        offset: 0,
        data: Vec::new(),
    })
}

/// A tensor info with no data (for shapes that cannot be laid out).
pub fn info_only(name: &str, dims: &[u64], type_id: u32, offset: u64) -> OwnedTensor {
    OwnedTensor { name: name.as_bytes().to_vec(), dims: dims.to_vec(), type_id, offset, data: Vec::new() }
}

/// Canonical layout, then bytes.
pub fn bytes(mut m: GgufModel) -> Vec<u8> {
    if m.canonical().is_none() {
        return m.to_bytes();
    }
    m.to_bytes()
}

/// Bytes without re-laying out the offsets set by the case.
pub fn raw(m: &GgufModel) -> Vec<u8> {
    m.to_bytes()
}

/// An array value of one element type.
pub fn array(t: ValueType, items: Vec<OwnedValue>) -> OwnedValue {
    OwnedValue::Array(t, items)
}

/// Overwrites bytes at `at` (little-endian u32/u64 helpers below).
pub fn patch(mut b: Vec<u8>, at: usize, with: &[u8]) -> Vec<u8> {
    if let Some(dst) = b.get_mut(at..at + with.len()) {
        dst.copy_from_slice(with);
    }
    b
}

/// Offset of the first occurrence of `needle`.
pub fn find(b: &[u8], needle: &[u8]) -> usize {
    b.windows(needle.len()).position(|w| w == needle).unwrap_or(0)
}
