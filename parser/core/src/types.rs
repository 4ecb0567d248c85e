//! The two type tables of the format: GGUF metadata value types (here)
//! and ggml tensor element types (the numerics crate's [`gguf_numerics::types`],
//! re-exported).
#![forbid(unsafe_code)]

use std::fmt;

pub use gguf_numerics::types::*;

/// Type id of a metadata value (`gguf_metadata_value_type`, a u32 in the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum ValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl ValueType {
    /// Every value type, in id order.
    pub const ALL: [ValueType; 13] = [
        ValueType::U8,
        ValueType::I8,
        ValueType::U16,
        ValueType::I16,
        ValueType::U32,
        ValueType::I32,
        ValueType::F32,
        ValueType::Bool,
        ValueType::String,
        ValueType::Array,
        ValueType::U64,
        ValueType::I64,
        ValueType::F64,
    ];

    /// The value type with this id, if any.
    pub fn from_id(id: u32) -> Option<ValueType> {
        let idx = usize::try_from(id).ok()?;
        Self::ALL.get(idx).copied()
    }

    /// The id written in the file.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Size in bytes of a scalar of this type; `None` for strings and arrays.
    pub fn fixed_size(self) -> Option<usize> {
        Some(match self {
            ValueType::U8 | ValueType::I8 | ValueType::Bool => 1,
            ValueType::U16 | ValueType::I16 => 2,
            ValueType::U32 | ValueType::I32 | ValueType::F32 => 4,
            ValueType::U64 | ValueType::I64 | ValueType::F64 => 8,
            ValueType::String | ValueType::Array => return None,
        })
    }

    /// Smallest number of bytes one value of this type can occupy in a
    /// GGUF v2/v3 file (a string is at least its u64 length, an array at
    /// least its element type and u64 count).
    pub fn min_size(self) -> usize {
        match self {
            ValueType::String => 8,
            ValueType::Array => 12,
            other => other.fixed_size().unwrap_or(1),
        }
    }

    /// Lower-case name, as gguf-py and the spec print it.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::U8 => "u8",
            ValueType::I8 => "i8",
            ValueType::U16 => "u16",
            ValueType::I16 => "i16",
            ValueType::U32 => "u32",
            ValueType::I32 => "i32",
            ValueType::F32 => "f32",
            ValueType::Bool => "bool",
            ValueType::String => "string",
            ValueType::Array => "array",
            ValueType::U64 => "u64",
            ValueType::I64 => "i64",
            ValueType::F64 => "f64",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_types() {
        for (i, t) in ValueType::ALL.iter().enumerate() {
            assert_eq!(ValueType::from_id(i as u32), Some(*t));
        }
        assert_eq!(ValueType::from_id(13), None);
    }
}
