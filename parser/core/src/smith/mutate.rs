//! The fault injector: takes a file generated valid under `strict` and
//! breaks exactly one thing in it (a count, a length, a type id, an
//! offset, a dim, the alignment, a padding byte, a key byte, ...), so that
//! the rule the validator must report is known in advance.
//!
//! Byte-level faults locate their field with the library's parser (the
//! file is valid, so the offsets it reports are those of the writer); the
//! others edit the [`GgufModel`] and write it again.
//!
//! A few faults leave the file valid on purpose (a key in upper case,
//! bytes appended, version 3 changed to 2): their [`Expected`] has no
//! required error but names the warning or info that must appear.
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};

use crate::parse::align_up;
use crate::parse::{self, ByteOrder, GgufFile, Value};
use crate::report::Report;
use crate::rules::{Level, Profile, RuleId};
use crate::types::{GGML_TYPE_COUNT, GgmlType, ValueType};
use crate::write::{GgufModel, OwnedValue};

/// Rules that any change to the data layout may trigger.
pub const LAYOUT: &[RuleId] = &[
    RuleId::DataSectionStart,
    RuleId::TensorOffsetMisaligned,
    RuleId::TensorDataOverlap,
    RuleId::TensorDataGap,
    RuleId::TensorDataOrder,
    RuleId::TensorDataOutOfBounds,
    RuleId::PaddingNonZero,
    RuleId::PaddingFinalMissing,
];

/// The fatal rules a cut inside the metadata may trigger (a count or
/// length checked against the bytes left fails before the read does).
pub const CUT_METADATA: &[RuleId] = &[
    RuleId::FileTruncated,
    RuleId::CountExceedsFile,
    RuleId::StringExceedsFile,
    RuleId::ArrayExceedsFile,
    RuleId::DimsExceedFile,
];

/// What the `strict` report of a mutant must say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// At least one of these must be reported as an error. Empty: the
    /// mutant is still valid (or may be: see `allowed`).
    pub required: Vec<RuleId>,
    /// Further errors that may follow from the fault (e.g. layout rules
    /// after the alignment changed). No other error may appear.
    pub allowed: Vec<RuleId>,
    /// A rule that must be reported at any level (for faults that keep the
    /// file valid: the warning or info they cause).
    pub notice: Option<RuleId>,
}

impl Expected {
    fn reject(required: &[RuleId], allowed: &[RuleId]) -> Expected {
        Expected { required: required.to_vec(), allowed: allowed.to_vec(), notice: None }
    }

    fn valid(notice: Option<RuleId>) -> Expected {
        Expected { required: Vec::new(), allowed: Vec::new(), notice }
    }

    /// What breaking `rule` must give under `strict`, from the catalogue: an
    /// error (with `allowed` follow-on errors) when `strict` makes it one,
    /// otherwise a valid file that reports it.
    fn of(rule: RuleId, allowed: &[RuleId]) -> Expected {
        if rule.rule().level(Profile::Strict) == Level::Error {
            Expected::reject(&[rule], allowed)
        } else {
            Expected { required: Vec::new(), allowed: allowed.to_vec(), notice: Some(rule) }
        }
    }

    /// Checks a `strict` report of the mutant against the expectation.
    pub fn check(&self, report: &Report) -> std::result::Result<(), String> {
        let errors: Vec<&str> =
            report.diagnostics.iter().filter(|d| d.severity == Level::Error).map(|d| d.rule.id()).collect();
        let ok_ids: Vec<&str> = self.required.iter().chain(&self.allowed).map(|r| r.id()).collect();
        if let Some(bad) = errors.iter().find(|e| !ok_ids.contains(e)) {
            return Err(format!("unexpected error `{bad}` (expected one of {ok_ids:?}); errors: {errors:?}"));
        }
        if !self.required.is_empty() && !self.required.iter().any(|r| errors.contains(&r.id())) {
            let want: Vec<&str> = self.required.iter().map(|r| r.id()).collect();
            return Err(format!("none of the required errors {want:?} was reported; errors: {errors:?}"));
        }
        if self.required.is_empty() && self.allowed.is_empty() && report.counts.errors > 0 {
            return Err(format!("the mutant should stay valid; errors: {errors:?}"));
        }
        if let Some(n) = self.notice
            && !report.diagnostics.iter().any(|d| d.rule == n.id())
        {
            return Err(format!("`{}` was not reported", n.id()));
        }
        Ok(())
    }
}

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Fault {
    /// A magic byte changed (→ `magic`).
    Magic,
    /// The version word set to 0, 1 or a future version.
    Version,
    /// Version 3 set to 2 or back (still valid).
    VersionTwo,
    /// `kv_count` larger than the file can hold.
    KvCount,
    /// `tensor_count` larger than the file can hold.
    TensorCount,
    /// A string length (key, value, array element, tensor name) past the end.
    StringLength,
    /// A value type id outside 0..=12.
    ValueType,
    /// An array element type id outside 0..=12.
    ArrayType,
    /// An array count past the end.
    ArrayLength,
    /// `n_dims` past the end.
    NDims,
    /// `n_dims` above 4 (dims appended).
    TooManyDims,
    /// A dim of 2^63 or more.
    DimRange,
    /// Dims whose product reaches 2^63.
    ElementOverflow,
    /// `ne[0]` not a multiple of the block size.
    RowBlock,
    /// A removed ggml type id.
    TypeRemoved,
    /// A ggml type id of 43 or more.
    TypeUnknown,
    /// A data offset moved off the alignment.
    OffsetMisaligned,
    /// Two data offsets swapped.
    OffsetOrder,
    /// A data offset past the end of the file.
    OffsetPastEnd,
    /// `general.alignment` set to 0.
    AlignmentZero,
    /// `general.alignment` set to a non-power of two or a non-multiple of 8.
    AlignmentValue,
    /// `general.alignment` given another type.
    AlignmentType,
    /// A padding byte set to non-zero.
    PaddingByte,
    /// The file cut short.
    Truncate,
    /// Bytes appended (still valid, `trailing-bytes`).
    Trailing,
    /// A bool byte above 1.
    BoolByte,
    /// A string value made invalid UTF-8.
    StringUtf8,
    /// A key byte made non-ASCII.
    KeyAscii,
    /// A key letter made upper case (a warning, unless the key was a
    /// well-known one).
    KeyUppercase,
    /// A pair repeated.
    KeyDuplicate,
    /// A pair with an empty key added.
    KeyEmpty,
    /// An array of arrays added.
    NestedArray,
    /// A tensor name of 65 bytes or more.
    TensorNameLong,
    /// A tensor name of exactly 64 bytes.
    TensorName64,
    /// A tensor renamed to another's name.
    TensorNameDuplicate,
    /// A tensor name emptied.
    TensorNameEmpty,
    /// A NUL byte inserted in a tensor name.
    TensorNameNul,
    /// A tensor name made invalid UTF-8.
    TensorNameUtf8,
    /// `general.architecture` removed.
    ArchitectureMissing,
    /// `general.architecture` given another type.
    ArchitectureType,
    /// `general.quantization_version` removed while quantized tensors exist.
    QuantVersionMissing,
    /// `general.quantization_version` made a u64 (a warning).
    QuantVersionType,
    /// `tokenizer.ggml.scores` one element longer or shorter than the tokens.
    TokenizerLength,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 43] = [
        Fault::Magic,
        Fault::Version,
        Fault::VersionTwo,
        Fault::KvCount,
        Fault::TensorCount,
        Fault::StringLength,
        Fault::ValueType,
        Fault::ArrayType,
        Fault::ArrayLength,
        Fault::NDims,
        Fault::TooManyDims,
        Fault::DimRange,
        Fault::ElementOverflow,
        Fault::RowBlock,
        Fault::TypeRemoved,
        Fault::TypeUnknown,
        Fault::OffsetMisaligned,
        Fault::OffsetOrder,
        Fault::OffsetPastEnd,
        Fault::AlignmentZero,
        Fault::AlignmentValue,
        Fault::AlignmentType,
        Fault::PaddingByte,
        Fault::Truncate,
        Fault::Trailing,
        Fault::BoolByte,
        Fault::StringUtf8,
        Fault::KeyAscii,
        Fault::KeyUppercase,
        Fault::KeyDuplicate,
        Fault::KeyEmpty,
        Fault::NestedArray,
        Fault::TensorNameLong,
        Fault::TensorName64,
        Fault::TensorNameDuplicate,
        Fault::TensorNameEmpty,
        Fault::TensorNameNul,
        Fault::TensorNameUtf8,
        Fault::ArchitectureMissing,
        Fault::ArchitectureType,
        Fault::QuantVersionMissing,
        Fault::QuantVersionType,
        Fault::TokenizerLength,
    ];
}

/// A mutated file and what its `strict` report must say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutant {
    /// The fault injected.
    pub fault: Fault,
    /// What exactly was changed, for failure messages.
    pub detail: String,
    /// The mutated file.
    pub bytes: Vec<u8>,
    /// What the `strict` report must say.
    pub expected: Expected,
}

/// Injects an arbitrary fault into `model`, which must be valid under
/// `strict` (e.g. made by [`super::generate`] with a strict [`super::Config`]).
/// `Ok(None)` when the fault picked does not apply to this file (no
/// array to corrupt, no tensor, ...).
pub fn mutate(u: &mut Unstructured<'_>, model: &GgufModel) -> Result<Option<Mutant>> {
    let fault = *u.choose(&Fault::ALL)?;
    inject(u, model, fault)
}

/// Injects one given fault; see [`mutate`].
pub fn inject(u: &mut Unstructured<'_>, model: &GgufModel, fault: Fault) -> Result<Option<Mutant>> {
    let bytes = model.to_bytes();
    let Some(parsed) = parse::parse_bytes(&bytes) else {
        return Ok(None);
    };
    if parsed.fatal.is_some() {
        return Ok(None);
    }
    let mut f = Faulter { u, model, bytes: &bytes, file: &parsed.file, order: model.order };
    let out = f.apply(fault)?;
    Ok(out.map(|(detail, bytes, expected)| Mutant { fault, detail, bytes, expected }))
}

type Outcome = Option<(String, Vec<u8>, Expected)>;

struct Faulter<'u, 'd, 'm> {
    u: &'u mut Unstructured<'d>,
    model: &'m GgufModel,
    bytes: &'m [u8],
    file: &'m GgufFile<'m>,
    order: ByteOrder,
}

fn put(out: &mut [u8], at: u64, le: &[u8], order: ByteOrder) {
    let Ok(at) = usize::try_from(at) else { return };
    let mut b = le.to_vec();
    if order == ByteOrder::BigEndian {
        b.reverse();
    }
    if let Some(dst) = at.checked_add(b.len()).and_then(|end| out.get_mut(at..end)) {
        dst.copy_from_slice(&b);
    }
}

/// Errors that renaming or removing the pair `key` may cause.
fn key_collateral(key: &[u8], model: &GgufModel) -> Vec<RuleId> {
    match key {
        b"general.architecture" => vec![RuleId::ArchitectureMissing],
        b"general.quantization_version" if any_quantized(model) => {
            vec![RuleId::QuantVersionMissing]
        }
        b"general.alignment" if model.alignment() != crate::limits::DEFAULT_ALIGNMENT => LAYOUT.to_vec(),
        // Without its merges a BPE (gpt2) vocabulary is refused.
        b"tokenizer.ggml.merges" if is_bpe(model) => vec![RuleId::TokenizerMergesMissing],
        _ => Vec::new(),
    }
}

/// Whether the model's vocabulary is the generator's BPE one (`gpt2`).
fn is_bpe(model: &GgufModel) -> bool {
    model.kvs.iter().any(|(k, v)| k == b"tokenizer.ggml.model" && matches!(v, OwnedValue::String(s) if s == b"gpt2"))
}

fn any_quantized(model: &GgufModel) -> bool {
    model.tensors.iter().any(|t| GgmlType::from_id(t.type_id).is_some_and(GgmlType::is_quantized))
}

fn fresh_key(model: &GgufModel) -> Vec<u8> {
    let mut n = 0u32;
    loop {
        let k = format!("fault.added_{n}").into_bytes();
        if !model.kvs.iter().any(|(key, _)| *key == k) {
            return k;
        }
        n = n.saturating_add(1);
    }
}

impl Faulter<'_, '_, '_> {
    fn file_len(&self) -> u64 {
        u64::try_from(self.bytes.len()).unwrap_or(u64::MAX)
    }

    fn patched(&self, at: u64, le: &[u8]) -> Vec<u8> {
        let mut out = self.bytes.to_vec();
        put(&mut out, at, le, self.order);
        out
    }

    /// A value strictly above `floor`, sometimes the largest u64.
    fn above(&mut self, floor: u64) -> Result<u64> {
        Ok(match self.u.int_in_range(0u8..=3)? {
            0 => u64::MAX,
            1 => floor.saturating_add(1),
            _ => self.u.int_in_range(floor.saturating_add(1)..=u64::MAX)?,
        })
    }

    fn edited(&self, edit: impl FnOnce(&mut GgufModel)) -> Vec<u8> {
        let mut m = self.model.clone();
        edit(&mut m);
        m.to_bytes()
    }

    fn kv_index(&self, key: &[u8]) -> Option<usize> {
        self.model.kvs.iter().position(|(k, _)| k == key)
    }

    fn apply(&mut self, fault: Fault) -> Result<Outcome> {
        use Fault as F;
        match fault {
            F::Magic | F::Version | F::VersionTwo | F::KvCount | F::TensorCount | F::Truncate | F::Trailing => {
                self.header_fault(fault)
            }
            F::StringLength
            | F::ValueType
            | F::ArrayType
            | F::ArrayLength
            | F::BoolByte
            | F::StringUtf8
            | F::NestedArray => self.value_fault(fault),
            F::KeyAscii
            | F::KeyUppercase
            | F::KeyDuplicate
            | F::KeyEmpty
            | F::AlignmentZero
            | F::AlignmentValue
            | F::AlignmentType
            | F::ArchitectureMissing
            | F::QuantVersionMissing
            | F::ArchitectureType
            | F::QuantVersionType
            | F::TokenizerLength => self.key_fault(fault),
            F::NDims
            | F::TooManyDims
            | F::DimRange
            | F::ElementOverflow
            | F::RowBlock
            | F::TypeRemoved
            | F::TypeUnknown
            | F::TensorNameLong
            | F::TensorName64
            | F::TensorNameDuplicate
            | F::TensorNameEmpty
            | F::TensorNameNul
            | F::TensorNameUtf8 => self.tensor_fault(fault),
            F::OffsetMisaligned | F::OffsetOrder | F::OffsetPastEnd | F::PaddingByte => self.layout_fault(fault),
        }
    }

    /// Faults in the header and the file as a whole: magic, version, counts, truncation, trailing bytes.
    fn header_fault(&mut self, fault: Fault) -> Result<Outcome> {
        use Fault as F;
        let len = self.file_len();
        Ok(match fault {
            F::Magic => {
                let i = self.u.int_in_range(0..=3usize)?;
                let mut out = self.bytes.to_vec();
                // Flipping the case bit gives `gGUF`, `GgUF`, ...: no known magic.
                if let Some(b) = out.get_mut(i) {
                    *b ^= 0x20;
                }
                Some((format!("magic byte {i}"), out, Expected::of(RuleId::Magic, &[])))
            }
            F::Version => {
                let v: u32 = match self.u.int_in_range(0u8..=3)? {
                    0 => 0,
                    1 => 1,
                    2 => self.u.int_in_range(4..=0xFFFF)?,
                    _ => self.u.arbitrary()?,
                };
                let bytes = self.patched(4, &v.to_le_bytes());
                // The word a reader sees, read little-endian.
                let word = if self.order == ByteOrder::BigEndian { v.swap_bytes() } else { v };
                let swapped = word.swap_bytes();
                let rule = match (word, swapped) {
                    (1, _) => RuleId::VersionObsolete,
                    (2 | 3, _) => return Ok(None),
                    (_, 1) if word & 0xFFFF == 0 => RuleId::VersionObsolete,
                    (_, 2 | 3) if word & 0xFFFF == 0 => return Ok(None),
                    _ => RuleId::VersionUnsupported,
                };
                Some((format!("version {v}"), bytes, Expected::of(rule, &[])))
            }
            F::VersionTwo => {
                let v: u32 = if self.model.version == 3 { 2 } else { 3 };
                let expected = if v == 2 { Expected::of(RuleId::VersionTwo, &[]) } else { Expected::valid(None) };
                Some((format!("version {v}"), self.patched(4, &v.to_le_bytes()), expected))
            }
            F::KvCount | F::TensorCount => {
                let remaining = len.saturating_sub(crate::limits::HEADER_SIZE);
                let (at, min) = if fault == F::KvCount {
                    (16, crate::limits::MIN_KV_SIZE)
                } else {
                    (8, crate::limits::MIN_TENSOR_INFO_SIZE)
                };
                let n = self.above(remaining / min)?;
                Some((
                    format!("count at {at} = {n}"),
                    self.patched(at, &n.to_le_bytes()),
                    Expected::of(RuleId::CountExceedsFile, &[]),
                ))
            }
            F::Truncate => self.truncate()?,
            F::Trailing => {
                let n = self.u.int_in_range(1..=64usize)?;
                let mut t = vec![0u8; n];
                self.u.fill_buffer(&mut t)?;
                if let Some(b) = t.first_mut() {
                    *b |= 1;
                }
                let out = self.edited(|m| {
                    m.pad_end = true;
                    m.trailing.extend_from_slice(&t);
                });
                Some((format!("{n} bytes appended"), out, Expected::of(RuleId::TrailingBytes, &[])))
            }
            _ => None,
        })
    }

    /// Faults in values: string lengths, value and element types, array lengths, bools, UTF-8, nesting.
    fn value_fault(&mut self, fault: Fault) -> Result<Outcome> {
        use Fault as F;
        let file = self.file;
        let len = self.file_len();
        Ok(match fault {
            F::StringLength => {
                let mut at: Vec<u64> =
                    file.kvs.iter().map(|kv| kv.key.offset).chain(file.tensors.iter().map(|t| t.name.offset)).collect();
                for kv in &file.kvs {
                    match kv.value {
                        Value::String(s) => at.push(s.offset),
                        Value::Array(a) => at.extend(a.strings().map(|(_, s)| s.offset)),
                        _ => {}
                    }
                }
                let Some(&off) = self.pick(&at)? else {
                    return Ok(None);
                };
                let remaining = len.saturating_sub(off.saturating_add(8));
                let n = self.above(remaining)?;
                Some((
                    format!("string length at {off} = {n}"),
                    self.patched(off, &n.to_le_bytes()),
                    Expected::of(RuleId::StringExceedsFile, &[]),
                ))
            }
            F::ValueType => {
                let at: Vec<u64> = file.kvs.iter().map(|kv| kv.type_offset()).collect();
                let Some(&off) = self.pick(&at)? else {
                    return Ok(None);
                };
                let id = self.u.int_in_range(13..=u32::MAX)?;
                Some((
                    format!("value type at {off} = {id}"),
                    self.patched(off, &id.to_le_bytes()),
                    Expected::of(RuleId::ValueTypeUnknown, &[]),
                ))
            }
            F::ArrayType | F::ArrayLength => {
                let arrays: Vec<_> = file.kvs.iter().filter_map(|kv| kv.value.as_array().copied()).collect();
                let Some(a) = self.pick(&arrays)?.copied() else {
                    return Ok(None);
                };
                if fault == F::ArrayType {
                    let id = self.u.int_in_range(13..=u32::MAX)?;
                    let out = self.patched(a.offset, &id.to_le_bytes());
                    Some((
                        format!("array type at {} = {id}", a.offset),
                        out,
                        Expected::of(RuleId::ArrayTypeUnknown, &[]),
                    ))
                } else {
                    let at = a.offset.saturating_add(4);
                    let remaining = len.saturating_sub(at.saturating_add(8));
                    let min = u64::try_from(a.elem_type.min_size()).unwrap_or(1).max(1);
                    let n = self.above(remaining / min)?;
                    Some((
                        format!("array count at {at} = {n}"),
                        self.patched(at, &n.to_le_bytes()),
                        Expected::of(RuleId::ArrayExceedsFile, &[]),
                    ))
                }
            }
            F::BoolByte => {
                let mut at: Vec<u64> = Vec::new();
                for kv in &file.kvs {
                    match kv.value {
                        Value::Bool(_) => at.push(kv.value_offset()),
                        Value::Array(a) if a.elem_type == ValueType::Bool => {
                            at.extend((0..a.len).map(|i| a.data_offset().saturating_add(i)));
                        }
                        _ => {}
                    }
                }
                let b = self.u.int_in_range(2u8..=255)?;
                let out = match self.pick(&at)? {
                    Some(&off) => {
                        let mut out = self.bytes.to_vec();
                        if let Some(x) = usize::try_from(off).ok().and_then(|i| out.get_mut(i)) {
                            *x = b;
                        }
                        out
                    }
                    None => {
                        let k = fresh_key(self.model);
                        self.edited(|m| m.kvs.push((k, OwnedValue::Bool(b))))
                    }
                };
                Some((format!("bool byte {b}"), out, Expected::of(RuleId::BoolValue, &[])))
            }
            F::StringUtf8 => {
                let mut at: Vec<(u64, u64)> = Vec::new();
                for kv in &file.kvs {
                    match kv.value {
                        Value::String(s) => at.push((s.content_offset(), u64::try_from(s.bytes.len()).unwrap_or(0))),
                        Value::Array(a) => at.extend(
                            a.strings().map(|(_, s)| (s.content_offset(), u64::try_from(s.bytes.len()).unwrap_or(0))),
                        ),
                        _ => {}
                    }
                }
                at.retain(|(_, n)| *n > 0);
                let b = *self.u.choose(&[0xC0u8, 0xC1, 0xF5, 0xF8, 0xFE, 0xFF])?;
                let out = match self.pick(&at)? {
                    Some(&(start, n)) => {
                        let off = start.saturating_add(self.u.int_in_range(0..=n - 1)?);
                        let mut out = self.bytes.to_vec();
                        if let Some(x) = usize::try_from(off).ok().and_then(|i| out.get_mut(i)) {
                            *x = b;
                        }
                        out
                    }
                    None => {
                        let k = fresh_key(self.model);
                        self.edited(|m| m.kvs.push((k, OwnedValue::String(vec![b'a', b]))))
                    }
                };
                // A changed byte in a tokenizer string may also change what
                // the tokenizer rules see (an unknown model name, a token
                // now equal to another).
                let collateral = [
                    RuleId::TokenizerModelUnknown,
                    RuleId::TokenizerDuplicateToken,
                    RuleId::TokenizerByteToken,
                    RuleId::TokenizerByteFallback,
                ];
                Some((format!("string byte {b:#x}"), out, Expected::reject(&[RuleId::StringUtf8], &collateral)))
            }
            F::NestedArray => {
                let k = fresh_key(self.model);
                let inner = OwnedValue::Array(ValueType::U8, vec![OwnedValue::U8(1), OwnedValue::U8(2)]);
                let n = self.u.int_in_range(0..=3usize)?;
                let out = self.edited(|m| m.kvs.push((k, OwnedValue::Array(ValueType::Array, vec![inner; n]))));
                Some((format!("array of {n} arrays added"), out, Expected::of(RuleId::ArrayNested, &[])))
            }
            _ => None,
        })
    }

    /// Faults in keys and the well-known keys: key grammar, duplicates, alignment, architecture, quantization version, tokenizer arrays.
    fn key_fault(&mut self, fault: Fault) -> Result<Outcome> {
        use Fault as F;
        let file = self.file;
        Ok(match fault {
            F::AlignmentZero => {
                let Some(kv) = file.get("general.alignment") else {
                    return Ok(None);
                };
                let out = self.patched(kv.value_offset(), &0u32.to_le_bytes());
                Some(("general.alignment = 0".into(), out, Expected::of(RuleId::AlignmentZero, LAYOUT)))
            }
            F::AlignmentValue => {
                let old = u32::try_from(self.model.alignment()).unwrap_or(32);
                let v = *self.u.choose(&[1u32, 2, 4, 12, 20, 24, 40, 96, old.saturating_mul(3), old / 2 + 1])?;
                let mut required = Vec::new();
                if !v.is_power_of_two() {
                    required.push(RuleId::AlignmentPowerOfTwo);
                }
                if v % 8 != 0 {
                    required.push(RuleId::AlignmentMultipleOf8);
                }
                if required.is_empty() {
                    return Ok(None);
                }
                let out = self.edited(|m| match m.kvs.iter_mut().find(|(k, _)| k == b"general.alignment") {
                    Some((_, val)) => *val = OwnedValue::U32(v),
                    None => m.kvs.push((b"general.alignment".to_vec(), OwnedValue::U32(v))),
                });
                let mut allowed = LAYOUT.to_vec();
                allowed.extend([RuleId::AlignmentPowerOfTwo, RuleId::AlignmentMultipleOf8]);
                Some((format!("general.alignment = {v}"), out, Expected { required, allowed, notice: None }))
            }
            F::AlignmentType => {
                let a = self.model.alignment();
                let v = match self.u.int_in_range(0u8..=4)? {
                    0 => OwnedValue::I32(i32::try_from(a).unwrap_or(32)),
                    1 => OwnedValue::U64(a),
                    2 => OwnedValue::F32(a as f32),
                    3 => OwnedValue::Array(ValueType::U32, vec![OwnedValue::U32(u32::try_from(a).unwrap_or(32))]),
                    _ => OwnedValue::String(a.to_string().into_bytes()),
                };
                let detail = format!("general.alignment = {v:?}");
                let out = self.edited(|m| match m.kvs.iter_mut().find(|(k, _)| k == b"general.alignment") {
                    Some((_, val)) => *val = v,
                    None => m.kvs.push((b"general.alignment".to_vec(), v)),
                });
                Some((detail, out, Expected::of(RuleId::AlignmentType, LAYOUT)))
            }
            F::KeyAscii | F::KeyUppercase => {
                let Some(i) = self.pick_index(self.model.kvs.len())? else {
                    return Ok(None);
                };
                let Some((key, _)) = self.model.kvs.get(i) else {
                    return Ok(None);
                };
                let mut new_key = key.clone();
                let expected = if fault == F::KeyAscii {
                    let Some(p) = self.pick_index(key.len())? else {
                        return Ok(None);
                    };
                    if let Some(b) = new_key.get_mut(p) {
                        *b = self.u.int_in_range(0x80..=0xFF)?;
                    }
                    Expected::of(RuleId::KeyAscii, &key_collateral(key, self.model))
                } else {
                    let lower: Vec<usize> =
                        key.iter().enumerate().filter(|(_, b)| b.is_ascii_lowercase()).map(|(p, _)| p).collect();
                    let Some(&p) = self.pick(&lower)? else {
                        return Ok(None);
                    };
                    if let Some(b) = new_key.get_mut(p) {
                        b.make_ascii_uppercase();
                    }
                    if self.kv_index(&new_key).is_some() {
                        return Ok(None);
                    }
                    let collateral = key_collateral(key, self.model);
                    match key.as_slice() {
                        b"general.alignment" => {
                            Expected { required: Vec::new(), allowed: collateral, notice: Some(RuleId::KeyNaming) }
                        }
                        _ if !collateral.is_empty() => {
                            Expected { required: collateral, allowed: Vec::new(), notice: Some(RuleId::KeyNaming) }
                        }
                        _ => Expected::of(RuleId::KeyNaming, &[]),
                    }
                };
                let detail = format!("key {i} renamed to {}", crate::parse::quote_bytes(&new_key));
                let out = self.edited(|m| {
                    if let Some((k, _)) = m.kvs.get_mut(i) {
                        *k = new_key;
                    }
                });
                Some((detail, out, expected))
            }
            F::KeyDuplicate => {
                let Some(pair) = self.pick(&self.model.kvs)?.cloned() else {
                    return Ok(None);
                };
                let detail = format!("key {} repeated", crate::parse::quote_bytes(&pair.0));
                let out = self.edited(|m| m.kvs.push(pair));
                Some((detail, out, Expected::of(RuleId::KeyDuplicate, &[])))
            }
            F::KeyEmpty => {
                let v = OwnedValue::U8(self.u.arbitrary()?);
                let out = self.edited(|m| m.kvs.push((Vec::new(), v)));
                Some(("empty key added".into(), out, Expected::of(RuleId::KeyEmpty, &[])))
            }
            F::ArchitectureMissing | F::QuantVersionMissing => {
                let (key, rule): (&[u8], RuleId) = if fault == F::ArchitectureMissing {
                    (b"general.architecture", RuleId::ArchitectureMissing)
                } else {
                    (b"general.quantization_version", RuleId::QuantVersionMissing)
                };
                if fault == F::QuantVersionMissing && !any_quantized(self.model) {
                    return Ok(None);
                }
                let Some(i) = self.kv_index(key) else {
                    return Ok(None);
                };
                let out = self.edited(|m| {
                    m.kvs.remove(i);
                });
                Some((format!("{} removed", crate::parse::quote_bytes(key)), out, Expected::of(rule, &[])))
            }
            F::ArchitectureType | F::QuantVersionType => {
                let arch = fault == F::ArchitectureType;
                let key: &[u8] = if arch { b"general.architecture" } else { b"general.quantization_version" };
                let Some(i) = self.kv_index(key) else {
                    return Ok(None);
                };
                let v = if arch { OwnedValue::U32(self.u.arbitrary()?) } else { OwnedValue::U64(2) };
                let out = self.edited(|m| {
                    if let Some((_, val)) = m.kvs.get_mut(i) {
                        *val = v;
                    }
                });
                let expected = if arch {
                    Expected::of(RuleId::ArchitectureType, &[])
                } else {
                    Expected::of(RuleId::QuantVersionType, &[])
                };
                Some((format!("{} retyped", crate::parse::quote_bytes(key)), out, expected))
            }
            F::TokenizerLength => {
                if self.kv_index(b"tokenizer.ggml.tokens").is_none() {
                    return Ok(None);
                }
                let Some(i) = self.kv_index(b"tokenizer.ggml.scores") else {
                    return Ok(None);
                };
                let grow = self.u.arbitrary::<bool>()?;
                let out = self.edited(|m| {
                    if let Some((_, OwnedValue::Array(_, items))) = m.kvs.get_mut(i) {
                        if grow || items.is_empty() {
                            items.push(OwnedValue::F32(0.5));
                        } else {
                            items.pop();
                        }
                    }
                });
                Some(("tokenizer.ggml.scores resized".into(), out, Expected::of(RuleId::TokenizerArrayLength, &[])))
            }
            _ => None,
        })
    }

    /// Faults in tensor infos: dims, types, names.
    fn tensor_fault(&mut self, fault: Fault) -> Result<Outcome> {
        use Fault as F;
        let file = self.file;
        let len = self.file_len();
        Ok(match fault {
            F::NDims => {
                let at: Vec<u64> = file.tensors.iter().map(|t| t.n_dims_offset).collect();
                let Some(&off) = self.pick(&at)? else {
                    return Ok(None);
                };
                let remaining = len.saturating_sub(off.saturating_add(4));
                let Ok(floor) = u32::try_from(remaining / 8 + 1) else {
                    return Ok(None);
                };
                let n = self.u.int_in_range(floor..=u32::MAX)?;
                Some((
                    format!("n_dims at {off} = {n}"),
                    self.patched(off, &n.to_le_bytes()),
                    Expected::of(RuleId::DimsExceedFile, &[]),
                ))
            }
            F::TooManyDims => {
                let Some(i) = self.pick_index(self.model.tensors.len())? else {
                    return Ok(None);
                };
                let n = self.u.int_in_range(5..=8usize)?;
                let out = self.edited(|m| {
                    if let Some(t) = m.tensors.get_mut(i) {
                        t.dims.resize(n.max(t.dims.len()), 1);
                    }
                });
                Some((format!("tensor {i} n_dims {n}"), out, Expected::of(RuleId::TensorNDims, &[])))
            }
            F::DimRange => {
                let dims: Vec<(u64, usize)> = file
                    .tensors
                    .iter()
                    .flat_map(|t| (0..t.dims().count()).map(move |i| (t.dim_offset(i), i)))
                    .collect();
                let Some(&(off, i)) = self.pick(&dims)? else {
                    return Ok(None);
                };
                let d = self.u.int_in_range(1u64 << 63..=u64::MAX)?;
                let allowed: &[RuleId] = if i == 0 { &[RuleId::TensorRowBlock] } else { &[] };
                Some((
                    format!("dim at {off} = {d}"),
                    self.patched(off, &d.to_le_bytes()),
                    Expected::of(RuleId::TensorDimRange, allowed),
                ))
            }
            F::ElementOverflow => {
                // A tensor with >= 2 dims, none zero, whose other dims
                // multiply to at least 2: raising one dim j >= 1 then
                // reaches 2^63 while every dim stays below it.
                let cands: Vec<(u64, u64)> = file
                    .tensors
                    .iter()
                    .filter_map(|t| {
                        let dims: Vec<u64> = t.dims().collect();
                        if dims.len() < 2 || dims.contains(&0) {
                            return None;
                        }
                        let others: u64 = dims.iter().skip(2).chain(dims.first()).product();
                        (others >= 2).then(|| (t.dim_offset(1), others))
                    })
                    .collect();
                let Some(&(off, others)) = self.pick(&cands)? else {
                    return Ok(None);
                };
                let floor = (1u64 << 63).div_ceil(others);
                let d = self.u.int_in_range(floor..=(1u64 << 63) - 1)?;
                Some((
                    format!("dim at {off} = {d}"),
                    self.patched(off, &d.to_le_bytes()),
                    Expected::of(RuleId::TensorElementCountOverflow, &[]),
                ))
            }
            F::RowBlock => {
                let cands: Vec<(u64, u64, u64)> = file
                    .tensors
                    .iter()
                    .filter_map(|t| {
                        let bs = u64::from(GgmlType::from_id(t.type_id)?.block_size());
                        (bs > 1).then(|| (t.dims_offset, t.dims().next().unwrap_or(0), bs))
                    })
                    .collect();
                let Some(&(off, ne0, bs)) = self.pick(&cands)? else {
                    return Ok(None);
                };
                let d = ne0.saturating_add(self.u.int_in_range(1..=bs - 1)?);
                Some((
                    format!("ne[0] at {off} = {d}"),
                    self.patched(off, &d.to_le_bytes()),
                    Expected::of(RuleId::TensorRowBlock, &[]),
                ))
            }
            F::TypeRemoved | F::TypeUnknown => {
                let at: Vec<u64> = file.tensors.iter().map(|t| t.type_offset).collect();
                let Some(&off) = self.pick(&at)? else {
                    return Ok(None);
                };
                let (id, rule) = if fault == F::TypeRemoved {
                    (*self.u.choose(&[4u32, 5, 31, 32, 33, 36, 37, 38])?, RuleId::TensorTypeRemoved)
                } else {
                    (self.u.int_in_range(GGML_TYPE_COUNT..=u32::MAX)?, RuleId::TensorTypeUnknown)
                };
                Some((format!("type at {off} = {id}"), self.patched(off, &id.to_le_bytes()), Expected::of(rule, &[])))
            }
            F::TensorNameLong | F::TensorName64 => {
                let Some(i) = self.pick_index(self.model.tensors.len())? else {
                    return Ok(None);
                };
                let n = if fault == F::TensorName64 { 64 } else { self.u.int_in_range(65..=300usize)? };
                let mut name = format!("long.{i}.").into_bytes();
                name.resize(n, b'x');
                let rule = if n == 64 { RuleId::TensorName64 } else { RuleId::TensorNameTooLong };
                let out = self.edited(|m| {
                    if let Some(t) = m.tensors.get_mut(i) {
                        t.name = name;
                    }
                });
                Some((format!("tensor {i} name of {n} bytes"), out, Expected::of(rule, &[])))
            }
            F::TensorNameDuplicate => {
                let n = self.model.tensors.len();
                if n < 2 {
                    return Ok(None);
                }
                let i = self.u.int_in_range(0..=n - 1)?;
                let j = (i + self.u.int_in_range(1..=n - 1)?) % n;
                let name = self.model.tensors.get(j).map(|t| t.name.clone()).unwrap_or_default();
                let out = self.edited(|m| {
                    if let Some(t) = m.tensors.get_mut(i) {
                        t.name = name;
                    }
                });
                Some((format!("tensor {i} renamed as tensor {j}"), out, Expected::of(RuleId::TensorNameDuplicate, &[])))
            }
            F::TensorNameEmpty => {
                let Some(i) = self.pick_index(self.model.tensors.len())? else {
                    return Ok(None);
                };
                let out = self.edited(|m| {
                    if let Some(t) = m.tensors.get_mut(i) {
                        t.name.clear();
                    }
                });
                Some((format!("tensor {i} name emptied"), out, Expected::of(RuleId::TensorNameEmpty, &[])))
            }
            F::TensorNameNul | F::TensorNameUtf8 => {
                let Some(i) = self.pick_index(self.model.tensors.len())? else {
                    return Ok(None);
                };
                let Some(t) = self.model.tensors.get(i) else {
                    return Ok(None);
                };
                let mut name = t.name.clone();
                let (rule, allowed): (RuleId, &[RuleId]) = if fault == F::TensorNameNul {
                    // Make room, and insert on a character boundary so the
                    // name stays UTF-8.
                    while name.len() >= crate::limits::MAX_TENSOR_NAME_LEN_GGML
                        || (!name.is_empty() && std::str::from_utf8(&name).is_err())
                    {
                        name.pop();
                    }
                    let cuts: Vec<usize> = (0..=name.len())
                        .filter(|p| name.get(..*p).is_some_and(|h| std::str::from_utf8(h).is_ok()))
                        .collect();
                    let p = self.pick(&cuts)?.copied().unwrap_or(0);
                    name.insert(p, 0);
                    (RuleId::TensorNameNul, &[RuleId::TensorNameDuplicateAfterNul])
                } else {
                    let Some(p) = self.pick_index(name.len())? else {
                        return Ok(None);
                    };
                    if let Some(b) = name.get_mut(p) {
                        *b = 0xFF;
                    }
                    (RuleId::TensorNameUtf8, &[])
                };
                let detail = format!("tensor {i} renamed to {}", crate::parse::quote_bytes(&name));
                let out = self.edited(|m| {
                    if let Some(t) = m.tensors.get_mut(i) {
                        t.name = name;
                    }
                });
                Some((detail, out, Expected::of(rule, allowed)))
            }
            _ => None,
        })
    }

    /// Faults in the data section: offsets and padding.
    fn layout_fault(&mut self, fault: Fault) -> Result<Outcome> {
        use Fault as F;
        let file = self.file;
        let len = self.file_len();
        Ok(match fault {
            F::OffsetMisaligned => {
                let align = self.model.alignment();
                let Some(t) = self.pick(&file.tensors)?.copied() else {
                    return Ok(None);
                };
                if align < 2 {
                    return Ok(None);
                }
                let off = t.data_offset.saturating_add(self.u.int_in_range(1..=align - 1)?);
                let out = self.patched(t.offset_field, &off.to_le_bytes());
                Some((
                    format!("offset of tensor {} = {off}", t.index),
                    out,
                    Expected::of(RuleId::TensorOffsetMisaligned, LAYOUT),
                ))
            }
            F::OffsetOrder => {
                let pairs: Vec<(usize, usize)> = file
                    .tensors
                    .iter()
                    .enumerate()
                    .flat_map(|(i, a)| {
                        file.tensors
                            .iter()
                            .enumerate()
                            .skip(i + 1)
                            .filter(move |(_, b)| b.data_offset != a.data_offset)
                            .map(move |(j, _)| (i, j))
                    })
                    .take(256)
                    .collect();
                let Some(&(i, j)) = self.pick(&pairs)? else {
                    return Ok(None);
                };
                let (Some(a), Some(b)) = (file.tensors.get(i), file.tensors.get(j)) else {
                    return Ok(None);
                };
                let mut out = self.bytes.to_vec();
                put(&mut out, a.offset_field, &b.data_offset.to_le_bytes(), self.order);
                put(&mut out, b.offset_field, &a.data_offset.to_le_bytes(), self.order);
                Some((
                    format!("offsets of tensors {i} and {j} swapped"),
                    out,
                    Expected::of(RuleId::TensorDataOrder, LAYOUT),
                ))
            }
            F::OffsetPastEnd => {
                let align = self.model.alignment().max(1);
                let cands: Vec<usize> =
                    self.model.tensors.iter().enumerate().filter(|(_, t)| !t.data.is_empty()).map(|(i, _)| i).collect();
                let Some(&i) = self.pick(&cands)? else {
                    return Ok(None);
                };
                let Some(t) = file.tensors.get(i) else {
                    return Ok(None);
                };
                let k = self.u.int_in_range(len.div_ceil(align)..=1u64 << 40)?;
                let off = k.saturating_mul(align);
                let out = self.patched(t.offset_field, &off.to_le_bytes());
                Some((
                    format!("offset of tensor {i} = {off}"),
                    out,
                    Expected::of(RuleId::TensorDataOutOfBounds, LAYOUT),
                ))
            }
            F::PaddingByte => {
                let regions = self.padding_regions();
                let Some(&(s, e)) = self.pick(&regions)? else {
                    return Ok(None);
                };
                let at = self.u.int_in_range(s..=e - 1)?;
                let b = self.u.int_in_range(1u8..=255)?;
                let mut out = self.bytes.to_vec();
                if let Some(x) = usize::try_from(at).ok().and_then(|i| out.get_mut(i)) {
                    *x = b;
                }
                Some((format!("padding byte at {at} = {b:#x}"), out, Expected::of(RuleId::PaddingNonZero, &[])))
            }
            _ => None,
        })
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Result<Option<&'a T>> {
        if items.is_empty() {
            return Ok(None);
        }
        Ok(items.get(self.u.choose_index(items.len())?))
    }

    fn pick_index(&mut self, n: usize) -> Result<Option<usize>> {
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(self.u.choose_index(n)?))
    }

    /// Start of the data section, end of the last tensor's data and the
    /// padded end, all absolute (`None` without tensors).
    fn data_bounds(&self) -> Option<(u64, u64, u64)> {
        if self.model.tensors.is_empty() {
            return None;
        }
        let align = self.model.alignment();
        let start = align_up(self.file.infos_end, align)?;
        let mut end = start;
        let mut padded = start;
        for t in &self.model.tensors {
            let e = start.checked_add(t.offset)?.checked_add(u64::try_from(t.data.len()).ok()?)?;
            end = end.max(e);
            padded = padded.max(start.checked_add(align_up(e.checked_sub(start)?, align)?)?);
        }
        Some((start, end, padded))
    }

    /// Non-empty `[start, end)` ranges of padding bytes present in the file.
    fn padding_regions(&self) -> Vec<(u64, u64)> {
        let len = self.file_len();
        let align = self.model.alignment();
        let infos_end = self.file.infos_end;
        let mut out = Vec::new();
        let Some(data_start) = align_up(infos_end, align) else {
            return out;
        };
        out.push((infos_end, data_start.min(len)));
        for t in &self.model.tensors {
            let Some(rel_end) = u64::try_from(t.data.len()).ok().and_then(|n| t.offset.checked_add(n)) else {
                continue;
            };
            let Some(padded) = align_up(rel_end, align) else {
                continue;
            };
            let (s, e) = (data_start.saturating_add(rel_end), data_start.saturating_add(padded).min(len));
            out.push((s, e));
        }
        out.retain(|(s, e)| s < e);
        out
    }

    fn truncate(&mut self) -> Result<Outcome> {
        let infos_end = self.file.infos_end;
        let bounds = self.data_bounds();
        let zone = match bounds {
            Some(_) => self.u.int_in_range(0u8..=3)?,
            None => 0,
        };
        let (cut, expected) = match (zone, bounds) {
            (1, Some((start, _, _))) if start > infos_end => {
                (self.u.int_in_range(infos_end..=start - 1)?, Expected::of(RuleId::DataSectionStart, &[]))
            }
            (2, Some((start, end, _))) if end > start => {
                (self.u.int_in_range(start..=end - 1)?, Expected::of(RuleId::TensorDataOutOfBounds, LAYOUT))
            }
            (3, Some((_, end, padded))) if padded > end => {
                (self.u.int_in_range(end..=padded - 1)?, Expected::of(RuleId::PaddingFinalMissing, &[]))
            }
            _ if infos_end > 0 => (self.u.int_in_range(0..=infos_end - 1)?, Expected::reject(CUT_METADATA, &[])),
            _ => return Ok(None),
        };
        let n = usize::try_from(cut).unwrap_or(0);
        let out = self.bytes.get(..n).unwrap_or_default().to_vec();
        Ok(Some((format!("cut at {cut}"), out, expected)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, generate};
    use super::*;
    use crate::Validator;
    use crate::report::Options;

    fn data(seed: u64, n: usize) -> Vec<u8> {
        crate::seeded::SplitMix64::new(seed).bytes(n)
    }

    #[test]
    fn every_fault_is_caught_as_expected() {
        let mut applied = std::collections::HashSet::new();
        for seed in 0..400u64 {
            let bytes = data(seed, 4096);
            let mut u = Unstructured::new(&bytes);
            let cfg = Config::arbitrary_for(&mut u, Profile::Strict).unwrap();
            let model = generate(&mut u, &cfg).unwrap();
            let fault = Fault::ALL[seed as usize % Fault::ALL.len()];
            let Some(m) = inject(&mut u, &model, fault).unwrap() else {
                continue;
            };
            applied.insert(m.fault);
            let r = Validator::new(Options::new(Profile::Strict)).validate_bytes(&m.bytes).report;
            if let Err(e) = m.expected.check(&r) {
                panic!("seed {seed} {:?} ({}): {e}\n{:#?}", m.fault, m.detail, r.diagnostics);
            }
        }
        assert!(applied.len() >= Fault::ALL.len() - 4, "only {} faults applied: {applied:?}", applied.len());
    }
}
