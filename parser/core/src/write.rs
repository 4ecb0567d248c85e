//! A minimal GGUF writer over an owned model of a file.
//!
//! It writes exactly what the model says, including invalid things (a
//! misaligned offset, a bool byte of 2, a nested array), so tests, the
//! generator and the fault injector can build any file. [`GgufModel::canonical`]
//! lays tensors out the way ggml and gguf-py do.
#![forbid(unsafe_code)]

use crate::parse::align_up;
use crate::parse::{ByteOrder, Parsed, Value};
use crate::types::{GgmlType, ValueType};

/// An owned metadata value.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum OwnedValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    /// The raw byte (0 or 1 in a valid file).
    Bool(u8),
    String(Vec<u8>),
    /// Element type and elements (all of that type in a valid file).
    Array(ValueType, Vec<OwnedValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl OwnedValue {
    /// A string value.
    pub fn str(s: &str) -> OwnedValue {
        OwnedValue::String(s.as_bytes().to_vec())
    }

    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            OwnedValue::U8(_) => ValueType::U8,
            OwnedValue::I8(_) => ValueType::I8,
            OwnedValue::U16(_) => ValueType::U16,
            OwnedValue::I16(_) => ValueType::I16,
            OwnedValue::U32(_) => ValueType::U32,
            OwnedValue::I32(_) => ValueType::I32,
            OwnedValue::F32(_) => ValueType::F32,
            OwnedValue::Bool(_) => ValueType::Bool,
            OwnedValue::String(_) => ValueType::String,
            OwnedValue::Array(..) => ValueType::Array,
            OwnedValue::U64(_) => ValueType::U64,
            OwnedValue::I64(_) => ValueType::I64,
            OwnedValue::F64(_) => ValueType::F64,
        }
    }

    /// Converts a parsed value (with all array elements).
    pub fn from_value(v: &Value<'_>) -> OwnedValue {
        match v {
            Value::U8(x) => OwnedValue::U8(*x),
            Value::I8(x) => OwnedValue::I8(*x),
            Value::U16(x) => OwnedValue::U16(*x),
            Value::I16(x) => OwnedValue::I16(*x),
            Value::U32(x) => OwnedValue::U32(*x),
            Value::I32(x) => OwnedValue::I32(*x),
            Value::F32(x) => OwnedValue::F32(*x),
            Value::Bool(x) => OwnedValue::Bool(*x),
            Value::String(s) => OwnedValue::String(s.bytes.to_vec()),
            Value::Array(a) => {
                OwnedValue::Array(a.elem_type, a.iter().map(|e| OwnedValue::from_value(&e.value)).collect())
            }
            Value::U64(x) => OwnedValue::U64(*x),
            Value::I64(x) => OwnedValue::I64(*x),
            Value::F64(x) => OwnedValue::F64(*x),
        }
    }
}

/// An owned tensor: info fields as written, plus its data bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedTensor {
    /// Name bytes.
    pub name: Vec<u8>,
    /// Dims, `ne[0]` first (`n_dims` = `dims.len()`).
    pub dims: Vec<u64>,
    /// `ggml_type` id.
    pub type_id: u32,
    /// Data offset relative to the data section.
    pub offset: u64,
    /// The data bytes written at that offset.
    pub data: Vec<u8>,
}

impl OwnedTensor {
    /// A tensor of a live type with zeroed data of the right size
    /// (`None` when the shape is not whole blocks or too large).
    pub fn zeroed(name: &str, dims: &[u64], ty: GgmlType) -> Option<OwnedTensor> {
        let n = dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d))?;
        let bytes = ty.row_size(n)?;
        if dims.first().is_some_and(|d| d % u64::from(ty.block_size()) != 0) {
            return None;
        }
        Some(OwnedTensor {
            name: name.as_bytes().to_vec(),
            dims: dims.to_vec(),
            type_id: ty.id(),
            offset: 0,
            data: vec![0; usize::try_from(bytes).ok()?],
        })
    }
}

/// An owned GGUF file.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufModel {
    /// Version written in the header (2 or 3 in a valid file).
    pub version: u32,
    /// Byte order of every number.
    pub order: ByteOrder,
    /// Key/value pairs in order (`general.alignment` included, if any).
    pub kvs: Vec<(Vec<u8>, OwnedValue)>,
    /// Tensors in info order.
    pub tensors: Vec<OwnedTensor>,
    /// Pad the end of the data section to the alignment (after the last
    /// tensor, or after the infos when there are no tensors).
    pub pad_end: bool,
    /// Bytes appended after everything else.
    pub trailing: Vec<u8>,
}

impl Default for GgufModel {
    fn default() -> Self {
        GgufModel {
            version: 3,
            order: ByteOrder::LittleEndian,
            kvs: Vec::new(),
            tensors: Vec::new(),
            pad_end: true,
            trailing: Vec::new(),
        }
    }
}

impl GgufModel {
    /// An empty v3 little-endian model.
    pub fn new() -> GgufModel {
        GgufModel::default()
    }

    /// Adds a pair.
    pub fn kv(&mut self, key: &str, value: OwnedValue) -> &mut Self {
        self.kvs.push((key.as_bytes().to_vec(), value));
        self
    }

    /// Adds a tensor.
    pub fn tensor(&mut self, t: OwnedTensor) -> &mut Self {
        self.tensors.push(t);
        self
    }

    /// The alignment the file declares: `general.alignment` when it is a
    /// non-zero u32, else 32.
    pub fn alignment(&self) -> u64 {
        self.kvs
            .iter()
            .find_map(|(k, v)| match v {
                OwnedValue::U32(a) if k == b"general.alignment" && *a > 0 => Some(u64::from(*a)),
                _ => None,
            })
            .unwrap_or(crate::limits::DEFAULT_ALIGNMENT)
    }

    /// Sets every tensor's offset to the running padded size, as ggml and
    /// gguf-py lay data out. Returns `None` on overflow.
    pub fn canonical(&mut self) -> Option<&mut Self> {
        let align = self.alignment();
        let mut next = 0u64;
        for t in &mut self.tensors {
            t.offset = next;
            next = next.checked_add(align_up(u64::try_from(t.data.len()).ok()?, align)?)?;
        }
        Some(self)
    }

    /// Serialises the model. Tensor data is written at each tensor's
    /// offset; gaps are zero-filled. Overlapping data is written in info
    /// order (later tensors overwrite).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer { out: Vec::new(), order: self.order };
        w.out.extend_from_slice(b"GGUF");
        w.u32(self.version);
        w.u64(self.tensors.len() as u64);
        w.u64(self.kvs.len() as u64);
        for (k, v) in &self.kvs {
            w.string(k);
            w.u32(v.value_type().id());
            w.value(v);
        }
        for t in &self.tensors {
            w.string(&t.name);
            w.u32(t.dims.len() as u32);
            for d in &t.dims {
                w.u64(*d);
            }
            w.u32(t.type_id);
            w.u64(t.offset);
        }
        let align = self.alignment();
        let pad_to = |out: &mut Vec<u8>| {
            let target = align_up(out.len() as u64, align).unwrap_or(out.len() as u64);
            out.resize(usize::try_from(target).unwrap_or(out.len()).min(MAX_WRITTEN_DATA), 0);
        };
        if !self.tensors.is_empty() || self.pad_end {
            pad_to(&mut w.out);
        }
        let data_start = w.out.len();
        for t in &self.tensors {
            // Offsets far beyond any test file (fault injection) place no data.
            let Some(start) = usize::try_from(t.offset).ok().and_then(|o| data_start.checked_add(o)) else { continue };
            let end = start.saturating_add(t.data.len());
            if end > MAX_WRITTEN_DATA {
                continue;
            }
            if w.out.len() < end {
                w.out.resize(end, 0);
            }
            if let Some(dst) = w.out.get_mut(start..end) {
                dst.copy_from_slice(&t.data);
            }
        }
        if self.pad_end && !self.tensors.is_empty() {
            pad_to(&mut w.out);
        }
        w.out.extend_from_slice(&self.trailing);
        w.out
    }

    /// Rebuilds a model from a parsed file and its bytes (tensor data taken
    /// from the file; tensors whose size or range is invalid get no data).
    /// Writing the result back gives the same bytes for any canonical file.
    pub fn from_parsed(parsed: &Parsed<'_>, bytes: &[u8]) -> GgufModel {
        let f = &parsed.file;
        let kvs: Vec<(Vec<u8>, OwnedValue)> =
            f.kvs.iter().map(|kv| (kv.key.bytes.to_vec(), OwnedValue::from_value(&kv.value))).collect();
        let mut model =
            GgufModel { version: f.header.version, order: f.header.byte_order, kvs, ..GgufModel::default() };
        let align = f.alignment();
        let data_start = f.data_start().unwrap_or(u64::MAX);
        let mut data_end = data_start;
        for t in &f.tensors {
            let dims: Vec<u64> = t.dims().collect();
            let nbytes = t.nbytes();
            let data = nbytes
                .and_then(|n| {
                    let s = data_start.checked_add(t.data_offset)?;
                    let e = s.checked_add(n)?;
                    data_end = data_end.max(e);
                    bytes.get(usize::try_from(s).ok()?..usize::try_from(e).ok()?)
                })
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            model.tensors.push(OwnedTensor {
                name: t.name.bytes.to_vec(),
                dims,
                type_id: t.type_id,
                offset: t.data_offset,
                data,
            });
        }
        let len = bytes.len() as u64;
        let end = if f.tensors.is_empty() { f.infos_end } else { data_end };
        let padded = align_up(end, align).unwrap_or(end);
        model.pad_end = len >= padded && (padded > end || f.tensors.is_empty() && len > end);
        let tail_from = if model.pad_end { padded } else { end };
        model.trailing =
            bytes.get(usize::try_from(tail_from).unwrap_or(usize::MAX)..).map(<[u8]>::to_vec).unwrap_or_default();
        model
    }
}

/// One key/value pair as a GGUF file holds it (key, value type, value), in
/// byte order `order`.
pub(crate) fn encode_pair(order: ByteOrder, key: &[u8], value: &OwnedValue) -> Vec<u8> {
    let mut w = Writer { out: Vec::new(), order };
    w.string(key);
    w.u32(value.value_type().id());
    w.value(value);
    w.out
}

/// Largest data section the writer materialises: 4 GiB less a byte, or
/// what a `Vec` can hold on a 32-bit target.
const MAX_WRITTEN_DATA: usize = {
    let four_gib = usize::MAX >> usize::BITS.saturating_sub(32);
    let vec_max = isize::MAX.unsigned_abs();
    if four_gib < vec_max { four_gib } else { vec_max }
};

struct Writer {
    out: Vec<u8>,
    order: ByteOrder,
}

impl Writer {
    fn bytes<const N: usize>(&mut self, le: [u8; N]) {
        let mut b = le;
        if self.order == ByteOrder::BigEndian {
            b.reverse();
        }
        self.out.extend_from_slice(&b);
    }
    fn u32(&mut self, v: u32) {
        self.bytes(v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.bytes(v.to_le_bytes());
    }
    fn string(&mut self, s: &[u8]) {
        self.u64(u64::try_from(s.len()).unwrap_or(u64::MAX));
        self.out.extend_from_slice(s);
    }
    fn value(&mut self, v: &OwnedValue) {
        match v {
            OwnedValue::U8(x) => self.out.push(*x),
            OwnedValue::I8(x) => self.out.extend_from_slice(&x.to_le_bytes()),
            OwnedValue::U16(x) => self.bytes(x.to_le_bytes()),
            OwnedValue::I16(x) => self.bytes(x.to_le_bytes()),
            OwnedValue::U32(x) => self.bytes(x.to_le_bytes()),
            OwnedValue::I32(x) => self.bytes(x.to_le_bytes()),
            OwnedValue::F32(x) => self.bytes(x.to_bits().to_le_bytes()),
            OwnedValue::Bool(x) => self.out.push(*x),
            OwnedValue::String(s) => self.string(s),
            OwnedValue::Array(t, items) => {
                self.u32(t.id());
                self.u64(u64::try_from(items.len()).unwrap_or(u64::MAX));
                for i in items {
                    self.value(i);
                }
            }
            OwnedValue::U64(x) => self.bytes(x.to_le_bytes()),
            OwnedValue::I64(x) => self.bytes(x.to_le_bytes()),
            OwnedValue::F64(x) => self.bytes(x.to_bits().to_le_bytes()),
        }
    }
}
