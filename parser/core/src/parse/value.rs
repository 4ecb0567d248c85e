//! Metadata values: scalars, strings and (possibly nested) arrays.
//!
//! Arrays are not materialised: an [`Array`] keeps the raw bytes of its
//! elements and decodes them on demand, so a 262,144-entry string array
//! costs one walk and no allocation.
#![forbid(unsafe_code)]

use super::primitives::{ByteOrder, Ctx, DecodeKind, PError, PResult, Str, u64_of};
use crate::limits;
use crate::types::ValueType;

/// One metadata value.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Value<'a> {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    /// The raw byte: the spec allows only 0 and 1.
    Bool(u8),
    String(Str<'a>),
    Array(Array<'a>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl<'a> Value<'a> {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// The value as an unsigned integer, for any integer type holding a
    /// non-negative value.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(u64::from(v)),
            Value::U16(v) => Some(u64::from(v)),
            Value::U32(v) => Some(u64::from(v)),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The string, if this is a string value.
    pub fn as_string(&self) -> Option<Str<'a>> {
        match self {
            Value::String(s) => Some(*s),
            _ => None,
        }
    }

    /// The array, if this is an array value.
    pub fn as_array(&self) -> Option<&Array<'a>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// An array value: element type, count and the raw bytes of the elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Array<'a> {
    /// Absolute offset of the array's element-type field.
    pub offset: u64,
    /// Type of every element.
    pub elem_type: ValueType,
    /// Number of elements.
    pub len: u64,
    /// The elements' bytes, exactly.
    pub data: &'a [u8],
    /// Byte order, to decode elements.
    pub order: ByteOrder,
    /// Nesting depth of this array (1 for a top-level array).
    pub depth: u32,
    /// A string array whose length fields have no byte of 0x80 or above
    /// and give no length over [`limits::MAX_STRING_LEN`] (false for other
    /// arrays). A bool, where the array's padding has room: a `u64` here
    /// made every key/value pair 8 bytes larger.
    pub(crate) plain_lengths: bool,
    /// A string array whose strings a lean read found valid UTF-8 of at
    /// most [`limits::MAX_STRING_LEN`] bytes as they streamed past
    /// ([`super::StringSpan::checked`]): `data` may hold zeros in their
    /// place, and the container's checks do not read it.
    pub(crate) checked: bool,
}

/// One element of an array, with its absolute offset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Element<'a> {
    /// Index in the array.
    pub index: u64,
    /// Absolute offset of the element.
    pub offset: u64,
    /// The element.
    pub value: Value<'a>,
}

impl<'a> Array<'a> {
    /// Absolute offset of the first element (after the u32 element type
    /// and the u64 count).
    pub fn data_offset(&self) -> u64 {
        self.offset.saturating_add(12)
    }

    /// Iterates the elements in order, decoding each from the raw bytes.
    pub fn iter(&self) -> ArrayIter<'a> {
        ArrayIter { array: *self, rest: self.data, index: 0 }
    }

    /// For a string array, iterates the strings only (fast path: no [`Value`]).
    pub fn strings(&self) -> impl Iterator<Item = (u64, Str<'a>)> + use<'a> {
        let arr = *self;
        let is_string = arr.elem_type == ValueType::String;
        let mut rest = if is_string { arr.data } else { &[][..] };
        let mut offset = arr.data_offset();
        let mut index = 0u64;
        std::iter::from_fn(move || {
            let (len_bytes, tail) = rest.split_first_chunk::<8>()?;
            let len = match arr.order {
                ByteOrder::LittleEndian => u64::from_le_bytes(*len_bytes),
                ByteOrder::BigEndian => u64::from_be_bytes(*len_bytes),
            };
            let n = usize::try_from(len).ok()?;
            let bytes = tail.get(..n)?;
            rest = tail.get(n..)?;
            let item = (index, Str { offset, bytes });
            offset = offset.saturating_add(8).saturating_add(len);
            index = index.saturating_add(1);
            Some(item)
        })
    }
}

/// Iterator over an [`Array`]'s elements.
#[derive(Clone, Debug)]
pub struct ArrayIter<'a> {
    array: Array<'a>,
    rest: &'a [u8],
    index: u64,
}

impl<'a> Iterator for ArrayIter<'a> {
    type Item = Element<'a>;

    fn next(&mut self) -> Option<Element<'a>> {
        if self.index >= self.array.len {
            return None;
        }
        // The array's bytes were fully decoded once already, so this
        // re-decode cannot fail; stop quietly if it ever does.
        // Offsets inside the elements are absolute: the context starts at
        // the first element and the "file" ends after the last one.
        let base = self.array.data_offset();
        let file_len = base.saturating_add(u64_of(self.array.data.len()));
        let ctx = Ctx {
            buf: self.array.data,
            file_len,
            order: self.array.order,
            base,
            limits: limits::MetadataLimits::UNBOUNDED,
            spans: &[],
        };
        let offset = ctx.offset(self.rest);
        let (rest, value) = parse_value(&ctx, self.rest, self.array.elem_type, self.array.depth).ok()?;
        let element = Element { index: self.index, offset, value };
        self.rest = rest;
        self.index = self.index.saturating_add(1);
        Some(element)
    }
}

/// Reads a value type id (u32) and maps it to a [`ValueType`].
pub(crate) fn value_type<'a>(ctx: &Ctx<'a>, i: &'a [u8], in_array: bool) -> PResult<'a, ValueType> {
    let (rest, id) = ctx.u32(i, "value type")?;
    match ValueType::from_id(id) {
        Some(t) => Ok((rest, t)),
        None if in_array => ctx.fail(i, DecodeKind::ArrayElementTypeUnknown(id)),
        None => ctx.fail(i, DecodeKind::ValueTypeUnknown(id)),
    }
}

/// Parses one value of type `ty`. `depth` is the nesting depth of the
/// array this value is an element of (0 at top level).
pub(crate) fn parse_value<'a>(ctx: &Ctx<'a>, i: &'a [u8], ty: ValueType, depth: u32) -> PResult<'a, Value<'a>> {
    Ok(match ty {
        ValueType::U8 => {
            let (r, v) = ctx.u8(i, "u8 value")?;
            (r, Value::U8(v))
        }
        ValueType::I8 => {
            let (r, v) = ctx.u8(i, "i8 value")?;
            (r, Value::I8(i8::from_ne_bytes([v])))
        }
        ValueType::U16 => {
            let (r, v) = ctx.u16(i, "u16 value")?;
            (r, Value::U16(v))
        }
        ValueType::I16 => {
            let (r, v) = ctx.u16(i, "i16 value")?;
            (r, Value::I16(i16::from_ne_bytes(v.to_ne_bytes())))
        }
        ValueType::U32 => {
            let (r, v) = ctx.u32(i, "u32 value")?;
            (r, Value::U32(v))
        }
        ValueType::I32 => {
            let (r, v) = ctx.u32(i, "i32 value")?;
            (r, Value::I32(i32::from_ne_bytes(v.to_ne_bytes())))
        }
        ValueType::F32 => {
            let (r, v) = ctx.u32(i, "f32 value")?;
            (r, Value::F32(f32::from_bits(v)))
        }
        ValueType::Bool => {
            let (r, v) = ctx.u8(i, "bool value")?;
            (r, Value::Bool(v))
        }
        ValueType::String => {
            let (r, s) = ctx.string(i, "string value")?;
            (r, Value::String(s))
        }
        ValueType::Array => {
            let (r, a) = parse_array(ctx, i, depth.saturating_add(1))?;
            (r, Value::Array(a))
        }
        ValueType::U64 => {
            let (r, v) = ctx.u64(i, "u64 value")?;
            (r, Value::U64(v))
        }
        ValueType::I64 => {
            let (r, v) = ctx.u64(i, "i64 value")?;
            (r, Value::I64(i64::from_ne_bytes(v.to_ne_bytes())))
        }
        ValueType::F64 => {
            let (r, v) = ctx.u64(i, "f64 value")?;
            (r, Value::F64(f64::from_bits(v)))
        }
    })
}

/// Parses an array header and walks its elements. The count is checked
/// against the bytes left in the file before the walk, so a hostile count
/// fails in O(1).
fn parse_array<'a>(ctx: &Ctx<'a>, i: &'a [u8], depth: u32) -> PResult<'a, Array<'a>> {
    if depth > limits::MAX_ARRAY_DEPTH {
        return ctx.fail(i, DecodeKind::ArrayTooDeep);
    }
    let offset = ctx.offset(i);
    let (rest, elem_type) = value_type(ctx, i, true)?;
    let count_at = rest;
    let (rest, len) = ctx.u64(rest, "array length")?;
    let remaining = ctx.remaining(rest);
    let min_elem = u64_of(elem_type.min_size());
    if len.checked_mul(min_elem).is_none_or(|need| need > remaining) {
        return ctx.fail(count_at, DecodeKind::ArrayExceedsFile { len, min_elem, remaining });
    }
    ctx.within_limits(count_at, rest, "array length", len, ctx.limits.array_len, len.saturating_mul(min_elem))?;
    let (after, (lengths_or, checked)) = match elem_type.fixed_size() {
        Some(size) => {
            // len * size <= remaining was checked above.
            let bytes = len.saturating_mul(u64_of(size));
            (ctx.take(rest, bytes, "array elements")?.0, (0, false))
        }
        None => walk_elements(ctx, rest, elem_type, len, depth)?,
    };
    let used = rest.len().saturating_sub(after.len());
    let data = rest.get(..used).unwrap_or_default();
    let plain_lengths = elem_type == ValueType::String
        && lengths_or & 0x8080_8080_8080_8080 == 0
        && lengths_or <= limits::MAX_STRING_LEN;
    Ok((after, Array { offset, elem_type, len, data, order: ctx.order, depth, plain_lengths, checked }))
}

/// Walks `len` variable-size elements (strings or arrays), returning the
/// input after the last one and, for strings, the OR of their lengths and
/// whether a lean read checked them ([`StringSpan::checked`]).
/// Errors carry the failing element's index.
fn walk_elements<'a>(
    ctx: &Ctx<'a>,
    mut rest: &'a [u8],
    ty: ValueType,
    len: u64,
    depth: u32,
) -> PResult<'a, (u64, bool)> {
    if ty == ValueType::String {
        return walk_strings(ctx, rest, len);
    }
    let mut index = 0u64;
    while index < len {
        let step = if ty == ValueType::String {
            ctx.skip_string(rest)
        } else {
            parse_value(ctx, rest, ty, depth).map(|(r, _)| (r, ()))
        };
        match step {
            Ok((r, ())) => rest = r,
            Err(nom::Err::Failure(e)) | Err(nom::Err::Error(e)) => {
                let element = Some(e.element.unwrap_or(index));
                return Err(nom::Err::Failure(PError { element, ..e }));
            }
            Err(nom::Err::Incomplete(n)) => return Err(nom::Err::Incomplete(n)),
        }
        index = index.saturating_add(1);
    }
    Ok((rest, (0, false)))
}

/// The hot loop of real files (a tokenizer's vocabulary): walks `len`
/// strings with the same checks as [`Ctx::string`], without nom's per-call
/// overhead. The loop bound was checked against the file size by the caller.
/// Gives the OR of the lengths, and whether a lean read checked the strings.
fn walk_strings<'a>(ctx: &Ctx<'a>, mut rest: &'a [u8], len: u64) -> PResult<'a, (u64, bool)> {
    // An array the extent's walk already went through under these limits:
    // every string fits the file and the caps, so the walk below would
    // reach its end with these lengths; only its bytes must be at hand.
    let start = ctx.offset(rest);
    if let Ok(i) = ctx.spans.binary_search_by_key(&start, |s| s.start)
        && let Some(span) = ctx.spans.get(i)
        && span.len == len
        && let Some(after) = usize::try_from(span.end.saturating_sub(start)).ok().and_then(|n| rest.get(n..))
    {
        return Ok((after, (span.lengths_or, span.checked)));
    }
    // A string that ends inside the buffer is inside the file; when the
    // buffer also ends within the metadata cap, so does the string, and
    // only the string cap is left to check.
    let in_cap = ctx.base.saturating_add(u64_of(ctx.buf.len())) <= ctx.limits.bytes;
    let mut index = 0u64;
    let mut lengths_or = 0u64;
    while index < len {
        let fail = |kind| Err(nom::Err::Failure(PError { rem: rest.len(), kind, element: Some(index) }));
        let Some((len_bytes, tail)) = rest.split_first_chunk::<8>() else {
            return fail(DecodeKind::Truncated { what: "string length" });
        };
        let n = match ctx.order {
            ByteOrder::LittleEndian => u64::from_le_bytes(*len_bytes),
            ByteOrder::BigEndian => u64::from_be_bytes(*len_bytes),
        };
        if in_cap
            && n <= ctx.limits.string_bytes
            && let Some(after) = usize::try_from(n).ok().and_then(|n| tail.get(n..))
        {
            rest = after;
            lengths_or |= n;
            index = index.saturating_add(1);
            continue;
        }
        // Bytes of the file after the length field.
        let remaining = ctx.remaining(tail);
        if n > remaining {
            return fail(DecodeKind::StringExceedsFile { len: n, remaining });
        }
        if n > ctx.limits.string_bytes || ctx.offset(tail).saturating_add(n) > ctx.limits.bytes {
            // The same failure as `Ctx::string` gives.
            ctx.within_limits(rest, tail, "string length", n, ctx.limits.string_bytes, n)
                .map_err(|e| e.map(|e| PError { element: Some(index), ..e }))?;
        }
        match usize::try_from(n).ok().and_then(|n| tail.get(n..)) {
            Some(after) => rest = after,
            None => return fail(DecodeKind::Truncated { what: "string" }),
        }
        lengths_or |= n;
        index = index.saturating_add(1);
    }
    Ok((rest, (lengths_or, false)))
}

#[cfg(test)]
mod tests {
    use crate::types::ValueType as T;
    use crate::write::{GgufModel, OwnedValue as V};

    /// Offsets inside nested arrays are absolute file offsets, like every
    /// other offset (they were relative to the outer array's elements).
    #[test]
    fn a_flag_for_plain_lengths_keeps_values_as_small_as_before() {
        assert!(std::mem::size_of::<super::Array<'_>>() <= 48);
    }

    #[test]
    fn nested_array_offsets_are_absolute() {
        let inner = V::Array(T::U8, vec![V::U8(1), V::U8(2)]);
        let mut m = GgufModel::new();
        m.kv("general.architecture", V::str("x"));
        m.kv("custom.nested", V::Array(T::Array, vec![inner.clone(), inner]));
        let bytes = m.to_bytes();
        let parsed = crate::parse::parse_bytes(&bytes).unwrap();
        let kv = parsed.file.get("custom.nested").unwrap();
        let outer = kv.value.as_array().unwrap();
        // Outer: element type (4) + count (8), then each inner array:
        // element type (4) + count (8) + two u8.
        assert_eq!(outer.offset, kv.value_offset());
        assert_eq!(outer.data_offset(), kv.value_offset() + 12);
        let inner: Vec<(u64, u64, u64)> = outer
            .iter()
            .map(|e| {
                let a = e.value.as_array().unwrap();
                (e.offset, a.offset, a.data_offset())
            })
            .collect();
        let first = outer.data_offset();
        assert_eq!(inner, vec![(first, first, first + 12), (first + 14, first + 14, first + 26)]);
        let bytes_at = |o: u64| bytes[usize::try_from(o).unwrap()];
        assert_eq!((bytes_at(first + 12), bytes_at(first + 27)), (1, 2));
    }
}
