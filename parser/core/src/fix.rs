//! The fixes of a validation's findings (`gguf-validate fix`): which
//! metadata changes and which layout of tensor data make them go away.
//!
//! The catalogue of fixes is [`crate::rules::FIXES`] (a rule, a kind, what it
//! does). [`plan`] reads the findings of a report against the file's parse
//! and gives the [`Change`]s and the [`Layout`] that fix them, each fix
//! listed with its rule, field path and the value before and after. A fix
//! of kind [`FixKind::Unsafe`] is made only when asked; otherwise it is
//! listed as held back. Tensor bytes are never changed: a layout fix moves
//! whole tensors ([`Layout::Packed`]), and [`crate::rewrite`] copies them.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
#![deny(clippy::as_conversions)]

use serde::Serialize;

use crate::check::template::is_hidden;
use crate::check::well_known_type;
use crate::parse::{Parsed, Value};
use crate::report::Diagnostic;
use crate::rewrite::{Change, Layout, show_value};
use crate::rules::{FixKind, RuleId};
use crate::types::ValueType;
use crate::write::OwnedValue;

/// One finding's fix, as planned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fixed {
    /// The rule of the finding.
    pub rule: RuleId,
    /// The fix's kind.
    pub kind: FixKind,
    /// The finding's field path.
    pub path: String,
    /// The value (or the layout) before.
    pub before: String,
    /// The value (or the layout) after.
    pub after: String,
    /// Made (false: an unsafe fix held back, `--unsafe` makes it).
    pub applied: bool,
}

/// What fixing a file's findings takes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FixPlan {
    /// The metadata changes (one per key).
    pub changes: Vec<Change>,
    /// How tensor data is laid out ([`Layout::Packed`] for a layout fix).
    pub layout: Layout,
    /// Every fix, in the findings' order (held-back ones included).
    pub fixes: Vec<Fixed>,
}

impl FixPlan {
    /// Whether anything would be changed.
    pub fn changes_anything(&self) -> bool {
        !self.changes.is_empty() || self.layout == Layout::Packed
    }
}

/// The rules a re-layout of tensor data fixes.
const LAYOUT_RULES: [RuleId; 6] = [
    RuleId::TensorOffsetMisaligned,
    RuleId::TensorDataGap,
    RuleId::TensorDataOrder,
    RuleId::PaddingNonZero,
    RuleId::PaddingFinalMissing,
    RuleId::TrailingBytes,
];

/// The index of the pair a `kv[i] ...` path names.
fn kv_index(path: &str) -> Option<usize> {
    path.strip_prefix("kv[")?.split_once(']')?.0.parse().ok()
}

/// The index of the tensor a `tensor[i] ...` path names.
fn tensor_index(path: &str) -> Option<usize> {
    path.strip_prefix("tensor[")?.split_once(']')?.0.parse().ok()
}

/// Plans the fixes of `findings` (a validation's diagnostics of the file
/// parsed as `parsed`); unsafe ones are made only when `allow_unsafe`.
pub fn plan(parsed: &Parsed<'_>, findings: &[Diagnostic], allow_unsafe: bool) -> FixPlan {
    let mut out = FixPlan::default();
    let f = &parsed.file;
    let arch = f.get("general.architecture").and_then(|kv| kv.value.as_string()).and_then(|s| s.as_str());
    let set = |out: &mut FixPlan, change: Change| {
        if let Some(c) = out.changes.iter_mut().find(|c| c.key() == change.key()) {
            *c = change;
        } else {
            out.changes.push(change);
        }
    };
    // Duplicates first: a later type fix of the same key sees the value kept.
    let mut ordered: Vec<&Diagnostic> = findings.iter().filter(|d| d.rule == RuleId::KeyDuplicate).collect();
    ordered.extend(findings.iter().filter(|d| d.rule != RuleId::KeyDuplicate));
    let mut packed: Option<Option<Vec<(u64, u64)>>> = None;
    for d in ordered {
        let listed = |kind: FixKind, before: String, after: String| Fixed {
            rule: d.rule,
            kind,
            path: d.path.clone(),
            before,
            after,
            applied: kind == FixKind::Safe || allow_unsafe,
        };
        let kv = kv_index(&d.path).and_then(|i| f.kvs.get(i));
        match d.rule {
            RuleId::KeyDuplicate => {
                let Some(kv) = kv else { continue };
                let Ok(key) = std::str::from_utf8(kv.key.bytes) else { continue };
                let Some(first) = f.get(key) else { continue };
                let kept = OwnedValue::from_value(&first.value);
                let this = OwnedValue::from_value(&kv.value);
                let kind = if kept == this { FixKind::Safe } else { FixKind::Unsafe };
                let fixed =
                    listed(kind, show_value(&this), format!("removed (the first copy, {}, kept)", show_value(&kept)));
                if fixed.applied && !out.changes.iter().any(|c| c.key() == key) {
                    set(&mut out, Change::Set { key: key.to_string(), value: kept });
                }
                out.fixes.push(fixed);
            }
            RuleId::StandardKeyType | RuleId::MetadataKeyType | RuleId::QuantVersionType => {
                let Some(kv) = kv else { continue };
                let Ok(key) = std::str::from_utf8(kv.key.bytes) else { continue };
                let want = if d.rule == RuleId::QuantVersionType { Some("u32") } else { well_known_type(key, arch) };
                let Some(ty) = want.and_then(|w| ValueType::ALL.into_iter().find(|t| t.name() == w)) else { continue };
                // The value the change of this key (a duplicate's) keeps, or the pair's.
                let current = match out.changes.iter().find(|c| c.key() == key) {
                    Some(Change::Set { value, .. }) => value.clone(),
                    _ => OwnedValue::from_value(&kv.value),
                };
                let Some(value) = convert(&current, ty) else { continue };
                let fixed = listed(FixKind::Safe, show_value(&current), show_value(&value));
                set(&mut out, Change::Set { key: key.to_string(), value });
                out.fixes.push(fixed);
            }
            RuleId::QuantVersionMissing => {
                const KEY: &str = "general.quantization_version";
                if out.changes.iter().any(|c| c.key() == KEY) {
                    continue;
                }
                let value = OwnedValue::U32(2);
                out.fixes.push(listed(FixKind::Safe, "absent".into(), show_value(&value)));
                set(&mut out, Change::Set { key: KEY.into(), value });
            }
            RuleId::TokenIdRange => {
                let Some(kv) = kv else { continue };
                let Ok(key) = std::str::from_utf8(kv.key.bytes) else { continue };
                let fixed = listed(FixKind::Unsafe, show_value(&OwnedValue::from_value(&kv.value)), "removed".into());
                if fixed.applied {
                    set(&mut out, Change::Remove { key: key.to_string() });
                }
                out.fixes.push(fixed);
            }
            RuleId::TemplateHiddenText => {
                let Some(kv) = kv else { continue };
                let Ok(key) = std::str::from_utf8(kv.key.bytes) else { continue };
                if out.changes.iter().any(|c| c.key() == key) {
                    continue;
                }
                let Some((value, removed)) = strip_hidden(&kv.value) else { continue };
                let fixed = listed(
                    FixKind::Unsafe,
                    format!("{removed} invisible or bidi-reordering code point(s)"),
                    "none".into(),
                );
                if fixed.applied {
                    set(&mut out, Change::Set { key: key.to_string(), value });
                }
                out.fixes.push(fixed);
            }
            rule if LAYOUT_RULES.contains(&rule) => {
                // Where each tensor goes, once: all layout fixes are one re-layout.
                let Some(offsets) = packed.get_or_insert_with(|| packed_offsets(parsed)).as_ref() else { continue };
                let (before, after) = match tensor_index(&d.path).and_then(|i| offsets.get(i)) {
                    Some((was, now)) if d.path.ends_with("/offset") => {
                        (format!("offset {was}"), format!("offset {now}"))
                    }
                    _ => (layout_before(rule, d), layout_after(rule)),
                };
                out.fixes.push(listed(FixKind::Safe, before, after));
                out.layout = Layout::Packed;
            }
            _ => {}
        }
    }
    out
}

/// A file fixed in memory ([`fix_bytes`]).
#[derive(Clone, Debug)]
pub struct FixedBytes {
    /// The fixed file (the input's bytes when nothing needed fixing).
    pub bytes: Vec<u8>,
    /// Whether anything was changed (false: `bytes` are the input's).
    pub changed: bool,
    /// Each finding's fix, held-back ones included.
    pub fixes: Vec<Fixed>,
    /// The metadata changes as made.
    pub changes: Vec<crate::rewrite::Applied>,
    /// The input's report.
    pub before: crate::Report,
    /// The fixed file's report.
    pub after: crate::Report,
    /// The tensor-data digests before and after (`hash`'s sha256 of all
    /// tensor data), or why one was not computed.
    pub digests: (Result<crate::hash::Digest, String>, Result<crate::hash::Digest, String>),
}

impl FixedBytes {
    /// The JSON document of `fix` and `edit` on a file in memory (the
    /// Python package's, the npm package's): the changes, the fixes, the
    /// reports before and after, the tensor-data digests.
    pub fn json(&self) -> serde_json::Value {
        use crate::rewrite::{changes_json, digests_json};
        serde_json::json!({
            "valid": self.after.valid,
            "changes": changes_json(&self.changes),
            "fixes": self.fixes,
            "before": self.before,
            "report": self.after,
            "tensor_data": digests_json(&self.digests.0, &self.digests.1),
            "bytes": self.bytes.len(),
        })
    }
}

/// What [`rewrite_bytes_validated`] changes.
enum InMemory<'a> {
    Requests(&'a [crate::rewrite::Request]),
    Fixes { allow_unsafe: bool },
}

/// Validates `bytes` with `validator`, makes the fixes of its findings
/// (unsafe ones when `allow_unsafe`) and validates the result: what the
/// Python `fix(bytes)`, the npm package and the page use. Refused (the
/// message says why) for a file whose metadata does not decode or whose
/// layout fix cannot be made.
pub fn fix_bytes(
    bytes: &[u8],
    validator: &crate::Validator,
    allow_unsafe: bool,
) -> Result<FixedBytes, crate::rewrite::RewriteError> {
    rewrite_bytes_validated(bytes, validator, InMemory::Fixes { allow_unsafe })
}

/// `edit` of a file in memory: the changes `requests` ask for
/// ([`crate::rewrite::resolve`]), the result validated with `validator`.
pub fn edit_bytes(
    bytes: &[u8],
    validator: &crate::Validator,
    requests: &[crate::rewrite::Request],
) -> Result<FixedBytes, crate::rewrite::RewriteError> {
    rewrite_bytes_validated(bytes, validator, InMemory::Requests(requests))
}

fn rewrite_bytes_validated(
    bytes: &[u8],
    validator: &crate::Validator,
    what: InMemory<'_>,
) -> Result<FixedBytes, crate::rewrite::RewriteError> {
    use crate::io::SliceSource;
    use crate::rewrite::{Rewrite, RewriteError, resolve, tensor_digest};
    let validator = validator.clone().report_only(false).with_every_profile(false);
    let validated = validator.validate_bytes(bytes);
    let parsed = validated.parsed().ok_or_else(|| RewriteError::NotGguf("not a GGUF v2/v3 file".into()))?;
    let planned = match what {
        InMemory::Fixes { allow_unsafe } => plan(&parsed, &validated.report.diagnostics, allow_unsafe),
        InMemory::Requests(requests) => FixPlan { changes: resolve(&parsed, requests)?, ..FixPlan::default() },
    };
    if !planned.changes_anything() {
        // Nothing to change: the file as it is.
        let digest = tensor_digest(&SliceSource(bytes), &parsed).map_err(|e| e.to_string());
        drop(parsed);
        return Ok(FixedBytes {
            bytes: bytes.to_vec(),
            changed: false,
            fixes: planned.fixes,
            changes: Vec::new(),
            after: validated.report.clone(),
            before: validated.report,
            digests: (digest.clone(), digest),
        });
    }
    let rewrite = Rewrite::plan_laid_out(&parsed, validated.metadata.as_slice(), &planned.changes, planned.layout)?;
    let before_digest = tensor_digest(&SliceSource(bytes), &parsed).map_err(|e| e.to_string());
    drop(parsed);
    let mut out = Vec::with_capacity(usize::try_from(rewrite.len()).map_err(|_| RewriteError::Overflow)?);
    rewrite.write(&SliceSource(bytes), &mut out, &|_| {})?;
    let checked = validator.validate_bytes(&out);
    let after_digest = match checked.parsed() {
        Some(p) => tensor_digest(&SliceSource(&out), &p).map_err(|e| e.to_string()),
        None => Err("the result is not a GGUF v2/v3 file".into()),
    };
    let after = checked.report;
    Ok(FixedBytes {
        bytes: out,
        changed: true,
        fixes: planned.fixes,
        changes: rewrite.changes().to_vec(),
        before: validated.report,
        after,
        digests: (before_digest, after_digest),
    })
}

/// Each tensor's data offset before and after [`Layout::Packed`]
/// ([`crate::rewrite::packed_tensors`]; the alignment a fix of
/// `general.alignment` gives is not one of the fixes), or None when the
/// data cannot be moved (then no layout fix is made).
fn packed_offsets(parsed: &Parsed<'_>) -> Option<Vec<(u64, u64)>> {
    let f = &parsed.file;
    let placed = crate::rewrite::packed_tensors(parsed, f.alignment()).ok()?;
    Some(f.tensors.iter().zip(placed).map(|(t, p)| (t.data_offset, p.to)).collect())
}

fn layout_before(rule: RuleId, d: &Diagnostic) -> String {
    match rule {
        RuleId::TrailingBytes => {
            format!("{} byte(s) after the data", d.length.map_or("some".into(), |n| n.to_string()))
        }
        RuleId::PaddingNonZero => "non-zero padding".into(),
        RuleId::PaddingFinalMissing => "no padding after the last tensor".into(),
        _ => "tensor data not laid out in order at aligned offsets".into(),
    }
}

fn layout_after(rule: RuleId) -> String {
    match rule {
        RuleId::TrailingBytes => "none".into(),
        RuleId::PaddingNonZero => "zeros".into(),
        RuleId::PaddingFinalMissing => "zeros to the alignment".into(),
        _ => "in tensor-info order at aligned offsets".into(),
    }
}

/// `v` as a scalar of type `ty` when that type holds exactly the same
/// number (integers in range, floats that round-trip); None otherwise.
fn convert(v: &OwnedValue, ty: ValueType) -> Option<OwnedValue> {
    let int: Option<i128> = match *v {
        OwnedValue::U8(x) => Some(x.into()),
        OwnedValue::I8(x) => Some(x.into()),
        OwnedValue::U16(x) => Some(x.into()),
        OwnedValue::I16(x) => Some(x.into()),
        OwnedValue::U32(x) => Some(x.into()),
        OwnedValue::I32(x) => Some(x.into()),
        OwnedValue::U64(x) => Some(x.into()),
        OwnedValue::I64(x) => Some(x.into()),
        _ => None,
    };
    if let Some(n) = int {
        return Some(match ty {
            ValueType::U8 => OwnedValue::U8(n.try_into().ok()?),
            ValueType::I8 => OwnedValue::I8(n.try_into().ok()?),
            ValueType::U16 => OwnedValue::U16(n.try_into().ok()?),
            ValueType::I16 => OwnedValue::I16(n.try_into().ok()?),
            ValueType::U32 => OwnedValue::U32(n.try_into().ok()?),
            ValueType::I32 => OwnedValue::I32(n.try_into().ok()?),
            ValueType::U64 => OwnedValue::U64(n.try_into().ok()?),
            ValueType::I64 => OwnedValue::I64(n.try_into().ok()?),
            ValueType::F32 => OwnedValue::F32(narrow(f64::from(i32::try_from(n).ok()?))?),
            ValueType::F64 => {
                let small = i32::try_from(n).ok()?;
                OwnedValue::F64(f64::from(small))
            }
            _ => return None,
        });
    }
    // An integral float as an integer type: the same number.
    let float = match *v {
        OwnedValue::F32(x) => Some(f64::from(x)),
        OwnedValue::F64(x) => Some(x),
        _ => None,
    };
    if let Some(x) = float
        && matches!(
            ty,
            ValueType::U8
                | ValueType::I8
                | ValueType::U16
                | ValueType::I16
                | ValueType::U32
                | ValueType::I32
                | ValueType::U64
                | ValueType::I64
        )
        && x.fract() == 0.0
        && x.abs() <= 9_007_199_254_740_992.0
    {
        let n: i64 = format!("{x:.0}").parse().ok()?;
        return convert(&OwnedValue::I64(n), ty);
    }
    match (v, ty) {
        (OwnedValue::F64(x), ValueType::F32) => {
            let narrowed = narrow(*x)?;
            Some(OwnedValue::F32(narrowed))
        }
        (OwnedValue::F32(x), ValueType::F64) => Some(OwnedValue::F64(f64::from(*x))),
        _ => None,
    }
}

/// An f64 as the f32 of exactly the same value, if there is one.
fn narrow(x: f64) -> Option<f32> {
    let s: f32 = format!("{x}").parse().ok()?;
    (f64::from(s) == x || (x.is_nan() && s.is_nan())).then_some(s)
}

/// A string (or array of strings) value without the hidden code points,
/// and how many were removed; None when there is nothing to remove or a
/// string is not UTF-8.
fn strip_hidden(v: &Value<'_>) -> Option<(OwnedValue, usize)> {
    let strip = |bytes: &[u8]| -> Option<(Vec<u8>, usize)> {
        let s = std::str::from_utf8(bytes).ok()?;
        let kept: String = s.chars().filter(|c| !is_hidden(*c)).collect();
        let removed = s.chars().count().saturating_sub(kept.chars().count());
        Some((kept.into_bytes(), removed))
    };
    match v {
        Value::String(s) => {
            let (bytes, removed) = strip(s.bytes)?;
            (removed > 0).then_some((OwnedValue::String(bytes), removed))
        }
        Value::Array(a) if a.elem_type == ValueType::String => {
            let mut total = 0usize;
            let mut items = Vec::new();
            for (_, s) in a.strings() {
                let (bytes, removed) = strip(s.bytes)?;
                total = total.saturating_add(removed);
                items.push(OwnedValue::String(bytes));
            }
            (total > 0).then_some((OwnedValue::Array(ValueType::String, items), total))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_the_number_or_refuse() {
        assert_eq!(convert(&OwnedValue::I32(5), ValueType::U32), Some(OwnedValue::U32(5)));
        assert_eq!(convert(&OwnedValue::I32(-1), ValueType::U32), None);
        assert_eq!(convert(&OwnedValue::U64(1 << 32), ValueType::U32), None);
        assert_eq!(convert(&OwnedValue::U64(u64::from(u32::MAX)), ValueType::U32), Some(OwnedValue::U32(u32::MAX)));
        assert_eq!(convert(&OwnedValue::F64(0.5), ValueType::F32), Some(OwnedValue::F32(0.5)));
        assert_eq!(convert(&OwnedValue::F64(0.1), ValueType::F32), None);
        assert_eq!(convert(&OwnedValue::I32(16_777_216), ValueType::F32), Some(OwnedValue::F32(16_777_216.0)));
        assert_eq!(convert(&OwnedValue::I32(16_777_217), ValueType::F32), None);
        assert_eq!(convert(&OwnedValue::String(b"5".to_vec()), ValueType::U32), None);
        assert_eq!(convert(&OwnedValue::F32(2.0), ValueType::U32), Some(OwnedValue::U32(2)));
        assert_eq!(convert(&OwnedValue::F32(2.5), ValueType::U32), None);
        assert_eq!(convert(&OwnedValue::F32(-1.0), ValueType::U32), None);
        assert_eq!(convert(&OwnedValue::F64(f64::NAN), ValueType::U32), None);
    }

    #[test]
    fn paths_name_their_pair_or_tensor() {
        assert_eq!(kv_index("kv[12] general.name"), Some(12));
        assert_eq!(kv_index("kv[x] a"), None);
        assert_eq!(tensor_index("tensor[3] blk.0.attn_q.weight/offset"), Some(3));
        assert_eq!(tensor_index("padding"), None);
    }

    /// Every fix of the catalogue is planned by this module.
    #[test]
    fn every_catalogued_rule_is_planned() {
        for fix in crate::rules::FIXES {
            let planned = matches!(
                fix.rule,
                RuleId::KeyDuplicate
                    | RuleId::StandardKeyType
                    | RuleId::MetadataKeyType
                    | RuleId::QuantVersionType
                    | RuleId::QuantVersionMissing
                    | RuleId::TokenIdRange
                    | RuleId::TemplateHiddenText
            ) || LAYOUT_RULES.contains(&fix.rule);
            assert!(planned, "{} has a catalogued fix that plan() does not make", fix.rule);
        }
    }
}
