//! The key/value pairs of a parsed file, kept in 16 bytes a pair and
//! decoded from the metadata's bytes on access.
//!
//! A [`KeyValue`] borrows its key and value from the metadata and takes 72
//! bytes; a file of a million pairs kept 69 MiB of them beside 29 MiB of
//! metadata. [`Pairs`] keeps where each pair starts and, for an array, the
//! length of its elements' bytes and two flags (what the bytes alone do not
//! say without walking them again), and decodes a [`KeyValue`] from the
//! bytes the parser already read, each time one is asked for: a few reads,
//! no walk, no allocation.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::KeyValue;
use super::primitives::{ByteOrder, Str, u64_of};
use super::value::{Array, Value};
use crate::scratch::PagedVec;
use crate::types::ValueType;

/// The bits of [`Record::array`] that hold the elements' byte length.
const ARRAY_LEN: u64 = (1 << 62) - 1;
/// [`Array::plain_lengths`].
const PLAIN_LENGTHS: u64 = 1 << 62;
/// [`Array::checked`].
const CHECKED: u64 = 1 << 63;

/// One pair: where it starts and what its bytes do not say cheaply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    /// The offset of the key's length field (the metadata's bytes start at
    /// offset 0 of the file).
    at: u64,
    /// For an array: the byte length of its elements ([`ARRAY_LEN`]) and
    /// its flags ([`PLAIN_LENGTHS`], [`CHECKED`]); 0 otherwise.
    array: u64,
}

impl Record {
    /// As [`Pairs`] keeps it: `[at, array]`.
    #[inline]
    fn of([at, array]: [u64; 2]) -> Record {
        Record { at, array }
    }
}

/// The key/value pairs of a file, in file order: [`Pairs::get`] and
/// [`Pairs::iter`] give each as a [`KeyValue`] (by value; it is `Copy`).
#[derive(Clone)]
pub struct Pairs<'a> {
    /// The metadata's bytes, from offset 0 of the file.
    buf: &'a [u8],
    order: ByteOrder,
    /// Each pair's [`Record`] as `[at, array]` (in huge pages for many).
    records: PagedVec<[u64; 2]>,
    /// The records a kept parse holds, read in place of `records` (pairs
    /// given again over their bytes push nothing).
    kept: Option<&'a PagedVec<[u64; 2]>>,
}

impl<'a> Pairs<'a> {
    /// No pairs yet, over the metadata `buf` (from offset 0 of the file) in
    /// byte order `order`.
    pub(crate) fn new(buf: &'a [u8], order: ByteOrder) -> Pairs<'a> {
        Pairs { buf, order, records: PagedVec::default(), kept: None }
    }

    /// Pairs over `buf` whose records another [`Pairs`] over the same
    /// bytes kept ([`Pairs::records`]), read where they are (not copied).
    pub(crate) fn over_kept(buf: &'a [u8], order: ByteOrder, records: &'a PagedVec<[u64; 2]>) -> Pairs<'a> {
        Pairs { buf, order, records: PagedVec::default(), kept: Some(records) }
    }

    /// The records, to keep ([`super::KeptParse`]).
    pub(crate) fn records(&self) -> &PagedVec<[u64; 2]> {
        self.kept.unwrap_or(&self.records)
    }

    /// The records, moved out ([`super::KeptParse::keep`]; copied when they
    /// are a kept parse's).
    pub(crate) fn into_records(self) -> PagedVec<[u64; 2]> {
        match self.kept {
            Some(kept) => kept.clone(),
            None => self.records,
        }
    }

    /// The records as a slice.
    #[inline]
    fn slice(&self) -> &[[u64; 2]] {
        match self.kept {
            Some(kept) => kept.as_slice(),
            None => self.records.as_slice(),
        }
    }

    /// The byte order.
    pub(crate) fn order(&self) -> ByteOrder {
        self.order
    }

    /// The length of the metadata the pairs are read from.
    pub(crate) fn buf_len(&self) -> usize {
        self.buf.len()
    }

    /// Room for `n` pairs, before the first is pushed (the parser sizes it
    /// once, by the bytes at hand; after, a push past the room moves the
    /// records to the heap).
    pub(crate) fn reserve(&mut self, n: usize) {
        if self.kept.is_none() && self.records.as_slice().is_empty() {
            self.records = PagedVec::with_capacity(n);
        }
    }

    /// Appends a pair the parser decoded from `buf`.
    pub(crate) fn push(&mut self, kv: &KeyValue<'a>) {
        let array = match kv.value {
            Value::Array(a) => {
                let flags = if a.plain_lengths { PLAIN_LENGTHS } else { 0 } | if a.checked { CHECKED } else { 0 };
                // The elements are in memory: their length is far below 2^62.
                u64_of(a.data.len()).min(ARRAY_LEN) | flags
            }
            _ => 0,
        };
        self.records.push([kv.key.offset, array]);
    }

    /// Appends a pair of a scalar value whose key's length field is at
    /// `at` (what [`Pairs::push`] keeps of one).
    #[inline]
    pub(crate) fn push_scalar(&mut self, at: u64) {
        self.records.push([at, 0]);
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.slice().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slice().is_empty()
    }

    /// Pair `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<KeyValue<'a>> {
        self.decode(i, Record::of(*self.slice().get(i)?))
    }

    /// The pairs in file order.
    pub fn iter(&self) -> Iter<'_, 'a> {
        Iter { pairs: self, next: 0 }
    }

    /// The key of pair `i` (without decoding its value).
    #[inline]
    pub(crate) fn key(&self, i: usize) -> Option<&'a [u8]> {
        let [at, _] = *self.slice().get(i)?;
        self.string_at(usize::try_from(at).ok()?).map(|(bytes, _)| bytes)
    }

    /// Each pair's position and key, without decoding values: for a pass
    /// that decodes ([`Pairs::get`]) only the pairs whose key it wants.
    pub fn keys(&self) -> impl Iterator<Item = (usize, &'a [u8])> + '_ {
        self.slice().iter().enumerate().filter_map(|(i, [at, _])| {
            let (key, _) = self.string_at(usize::try_from(*at).ok()?)?;
            Some((i, key))
        })
    }

    /// Each pair's position, key and value type, without decoding values.
    pub fn keys_and_types(&self) -> impl Iterator<Item = (usize, &'a [u8], Option<ValueType>)> + '_ {
        self.slice().iter().enumerate().filter_map(|(i, [at, _])| {
            let (key, type_at) = self.string_at(usize::try_from(*at).ok()?)?;
            Some((i, key, self.u32_at(type_at).and_then(ValueType::from_id)))
        })
    }

    /// The type of pair `i`'s value, without decoding it.
    pub fn value_type(&self, i: usize) -> Option<ValueType> {
        let [at, _] = *self.slice().get(i)?;
        let (_, type_at) = self.string_at(usize::try_from(at).ok()?)?;
        ValueType::from_id(self.u32_at(type_at)?)
    }

    /// The first pair with key `key`, comparing it with every pair's.
    pub(crate) fn find(&self, key: &[u8]) -> Option<KeyValue<'a>> {
        self.keys().find(|(_, k)| *k == key).and_then(|(i, _)| self.get(i))
    }

    /// The `N` bytes at `at`.
    #[inline]
    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.buf.get(at..)?.first_chunk::<N>().copied()
    }

    #[inline]
    fn u16_at(&self, at: usize) -> Option<u16> {
        let b = self.bytes::<2>(at)?;
        Some(if self.order == ByteOrder::BigEndian { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) })
    }

    #[inline]
    fn u32_at(&self, at: usize) -> Option<u32> {
        let b = self.bytes::<4>(at)?;
        Some(if self.order == ByteOrder::BigEndian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    #[inline]
    fn u64_at(&self, at: usize) -> Option<u64> {
        let b = self.bytes::<8>(at)?;
        Some(if self.order == ByteOrder::BigEndian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    /// The string whose length field is at `at`, and where it ends.
    #[inline]
    fn string_at(&self, at: usize) -> Option<(&'a [u8], usize)> {
        let len = usize::try_from(self.u64_at(at)?).ok()?;
        let start = at.checked_add(8)?;
        let end = start.checked_add(len)?;
        Some((self.buf.get(start..end)?, end))
    }

    /// Pair `index` from its record: the bytes the parser read, decoded
    /// again as it decoded them (so this cannot fail; `None` if it ever
    /// did). By hand rather than through the parser's nom functions, whose
    /// error paths made this decode 38% of a run over a million pairs; the
    /// test below holds the two to the same result for every type.
    #[inline]
    fn decode(&self, index: usize, r: Record) -> Option<KeyValue<'a>> {
        let at = usize::try_from(r.at).ok()?;
        let (key, type_at) = self.string_at(at)?;
        let key = Str { offset: r.at, bytes: key };
        let v = type_at.checked_add(4)?;
        let value = match ValueType::from_id(self.u32_at(type_at)?)? {
            ValueType::U8 => Value::U8(*self.buf.get(v)?),
            ValueType::I8 => Value::I8(i8::from_ne_bytes([*self.buf.get(v)?])),
            ValueType::U16 => Value::U16(self.u16_at(v)?),
            ValueType::I16 => Value::I16(i16::from_ne_bytes(self.u16_at(v)?.to_ne_bytes())),
            ValueType::U32 => Value::U32(self.u32_at(v)?),
            ValueType::I32 => Value::I32(i32::from_ne_bytes(self.u32_at(v)?.to_ne_bytes())),
            ValueType::F32 => Value::F32(f32::from_bits(self.u32_at(v)?)),
            ValueType::Bool => Value::Bool(*self.buf.get(v)?),
            ValueType::String => Value::String(Str { offset: u64_of(v), bytes: self.string_at(v)?.0 }),
            ValueType::U64 => Value::U64(self.u64_at(v)?),
            ValueType::I64 => Value::I64(i64::from_ne_bytes(self.u64_at(v)?.to_ne_bytes())),
            ValueType::F64 => Value::F64(f64::from_bits(self.u64_at(v)?)),
            ValueType::Array => {
                let start = v.checked_add(12)?;
                let len = usize::try_from(r.array & ARRAY_LEN).ok()?;
                Value::Array(Array {
                    offset: u64_of(v),
                    elem_type: ValueType::from_id(self.u32_at(v)?)?,
                    len: self.u64_at(v.checked_add(4)?)?,
                    data: self.buf.get(start..start.checked_add(len)?)?,
                    order: self.order,
                    depth: 1,
                    plain_lengths: r.array & PLAIN_LENGTHS != 0,
                    checked: r.array & CHECKED != 0,
                })
            }
        };
        Some(KeyValue { index, key, value })
    }
}

/// The pairs in order ([`Pairs::iter`]).
#[derive(Clone, Debug)]
pub struct Iter<'p, 'a> {
    pairs: &'p Pairs<'a>,
    next: usize,
}

impl<'a> Iterator for Iter<'_, 'a> {
    type Item = KeyValue<'a>;

    #[inline]
    fn next(&mut self) -> Option<KeyValue<'a>> {
        while self.next < self.pairs.len() {
            let i = self.next;
            self.next = self.next.saturating_add(1);
            if let Some(kv) = self.pairs.get(i) {
                return Some(kv);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.pairs.len().saturating_sub(self.next)))
    }
}

impl<'p, 'a> IntoIterator for &'p Pairs<'a> {
    type Item = KeyValue<'a>;
    type IntoIter = Iter<'p, 'a>;

    fn into_iter(self) -> Iter<'p, 'a> {
        self.iter()
    }
}

/// Printed as the list of pairs it gives.
impl std::fmt::Debug for Pairs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Equal when they give equal pairs.
impl PartialEq for Pairs<'_> {
    fn eq(&self, other: &Pairs<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use crate::parse::{ByteOrder, parse_bytes};
    use crate::types::ValueType;
    use crate::write::{GgufModel, OwnedValue as V};

    /// Every kind of value, in either byte order, decoded from the bytes as
    /// the parser gave it: scalars, strings, arrays of numbers, of strings
    /// (plain and not) and nested.
    #[test]
    fn pairs_give_what_the_parser_decoded() {
        for order in [ByteOrder::LittleEndian, ByteOrder::BigEndian] {
            let mut b = GgufModel { order, ..GgufModel::new() };
            b.kv("a.u8", V::U8(7));
            b.kv("a.i8", V::I8(-7));
            b.kv("a.u16", V::U16(700));
            b.kv("a.i16", V::I16(-700));
            b.kv("a.u32", V::U32(70_000));
            b.kv("a.i32", V::I32(-70_000));
            b.kv("a.f32", V::F32(0.5));
            b.kv("a.bool", V::Bool(1));
            b.kv("a.str", V::str("text"));
            b.kv("a.u64", V::U64(1 << 40));
            b.kv("a.i64", V::I64(-(1 << 40)));
            b.kv("a.f64", V::F64(-0.25));
            b.kv("a.nums", V::Array(ValueType::U32, (0..5).map(V::U32).collect()));
            b.kv("a.strs", V::Array(ValueType::String, ["x", "yy", ""].map(V::str).to_vec()));
            b.kv("a.\u{e9}", V::Array(ValueType::String, ["\u{e9}t\u{e9}"].map(V::str).to_vec()));
            let inner = V::Array(ValueType::I8, vec![V::I8(1), V::I8(2)]);
            b.kv("a.nested", V::Array(ValueType::Array, vec![inner.clone(), inner]));
            b.kv("a.empty", V::Array(ValueType::F32, Vec::new()));
            let bytes = b.to_bytes();
            let parsed = parse_bytes(&bytes).expect("GGUF");
            assert!(parsed.fatal.is_none());
            let kvs = &parsed.file.kvs;
            assert_eq!(kvs.len(), 17);
            // What the parser decoded, pushed as it was: every field equal.
            let decoded: Vec<_> = kvs.iter().collect();
            let mut again = super::Pairs::new(&bytes, order);
            for kv in &decoded {
                again.push(kv);
            }
            assert_eq!(again.iter().collect::<Vec<_>>(), decoded);
            for (i, kv) in decoded.iter().enumerate() {
                assert_eq!(kv.index, i);
                assert_eq!(kvs.get(i), Some(*kv));
                assert_eq!(kvs.key(i), Some(kv.key.bytes));
                assert_eq!(kvs.value_type(i), Some(kv.value.value_type()));
            }
            let keys: Vec<(usize, &[u8])> = kvs.keys().collect();
            assert_eq!(keys, decoded.iter().map(|kv| (kv.index, kv.key.bytes)).collect::<Vec<_>>());
            let typed: Vec<_> = kvs.keys_and_types().collect();
            let want: Vec<_> = decoded.iter().map(|kv| (kv.index, kv.key.bytes, Some(kv.value.value_type()))).collect();
            assert_eq!(typed, want);
            assert_eq!((kvs.value_type(17), kvs.key(17)), (None, None));
            assert_eq!(kvs.find(b"a.f64"), Some(decoded[11]));
            assert_eq!(kvs.find(b"a.f6"), None);
            assert_eq!(decoded[8].value.as_string().map(|s| s.bytes), Some(&b"text"[..]));
            let strs = decoded[13].value.as_array().copied().expect("an array");
            assert_eq!(strs.strings().map(|(_, s)| s.bytes.to_vec()).collect::<Vec<_>>(), [&b"x"[..], b"yy", b""]);
            assert!(strs.plain_lengths);
            assert_eq!(decoded[15].value.as_array().map(|a| (a.len, a.depth)), Some((2, 1)));
            assert_eq!(kvs.get(17), None);
            assert_eq!(format!("{kvs:?}"), format!("{decoded:?}"));
        }
    }
}
