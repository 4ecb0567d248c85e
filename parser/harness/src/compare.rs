//! Judging what a writer wrote: validation under a profile, then a field
//! by field comparison with the description it was given.

use crate::{Kind, Mismatch};
use gguf_validate_core::Validator;
use gguf_validate_core::parse::{ByteOrder, parse_bytes};
use gguf_validate_core::report::Options;
use gguf_validate_core::rules::Level;
use gguf_validate_core::types::{GgmlType, ValueType};
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};

/// What a comparison found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Findings: broken rules and fields that differ.
    pub findings: Vec<Mismatch>,
    /// Differences GGUF does not promise to keep (key and tensor order).
    pub infos: Vec<Mismatch>,
}

/// Validates `out` under `opts` and compares it with `asked`.
pub fn compare(asked: &GgufModel, out: &[u8], opts: &Options) -> Comparison {
    let mut c = Comparison::default();
    let report = Validator::new(opts.clone()).validate_bytes(out).report;
    let mut seen_rules = Vec::new();
    for d in report.diagnostics.iter().filter(|d| d.severity == Level::Error) {
        if seen_rules.contains(&d.rule) {
            continue;
        }
        seen_rules.push(d.rule);
        c.findings.push(Mismatch {
            kind: Kind::new("rule", d.rule.id(), "error"),
            path: d.path.clone(),
            expected: "no error".into(),
            got: d.message.clone(),
            offset: Some(d.offset),
        });
    }
    let Some(parsed) = parse_bytes(out) else {
        if seen_rules.is_empty() {
            c.findings.push(Mismatch {
                kind: Kind::new("header", "file", "not a GGUF file"),
                path: "header".into(),
                expected: "a GGUF file".into(),
                got: format!("{} bytes", out.len()),
                offset: Some(0),
            });
        }
        return c;
    };
    let got = GgufModel::from_parsed(&parsed, out);
    let f = &parsed.file;
    if got.version != asked.version {
        c.findings.push(Mismatch {
            kind: Kind::new("header", "version", format!("wrote v{} when asked for v{}", got.version, asked.version)),
            path: "header/version".into(),
            expected: asked.version.to_string(),
            got: got.version.to_string(),
            offset: Some(4),
        });
    }
    if got.order != asked.order {
        let name = |o: ByteOrder| if o == ByteOrder::BigEndian { "big-endian" } else { "little-endian" };
        c.findings.push(Mismatch {
            kind: Kind::new("header", "byte-order", format!("wrote {}", name(got.order))),
            path: "header".into(),
            expected: name(asked.order).into(),
            got: name(got.order).into(),
            offset: Some(4),
        });
    }
    // Key/values, matched by key.
    let kv_offset = |key: &[u8]| f.kvs.iter().find(|kv| kv.key.bytes == key).map(|kv| kv.key.offset);
    let mut common_asked = Vec::new();
    for (i, (key, want)) in asked.kvs.iter().enumerate() {
        let shown = String::from_utf8_lossy(key);
        let path = format!("kv[{i}] {shown}");
        match got.kvs.iter().find(|(k, _)| k == key) {
            None => c.findings.push(Mismatch {
                kind: Kind::new("kv", want.value_type().name(), "missing"),
                path,
                expected: show(want),
                got: "no such key".into(),
                offset: None,
            }),
            Some((_, have)) => {
                common_asked.push(key.clone());
                let offset = kv_offset(key);
                if let Some(m) = compare_value("kv", &path, want, have, offset) {
                    c.findings.push(m);
                }
            }
        }
    }
    for (key, have) in &got.kvs {
        if !asked.kvs.iter().any(|(k, _)| k == key) {
            c.findings.push(Mismatch {
                kind: Kind::new("kv", have.value_type().name(), "extra key"),
                path: format!("kv {}", String::from_utf8_lossy(key)),
                expected: "no such key".into(),
                got: show(have),
                offset: kv_offset(key),
            });
        }
    }
    let common_got: Vec<&Vec<u8>> = got.kvs.iter().map(|(k, _)| k).filter(|k| common_asked.contains(k)).collect();
    if common_got.iter().zip(&common_asked).any(|(a, b)| *a != b) {
        c.infos.push(Mismatch {
            kind: Kind::new("kv", "order", "key order changed"),
            path: "kvs".into(),
            expected: "the order asked".into(),
            got: "another order".into(),
            offset: None,
        });
    }
    // Tensors, matched by name.
    let align = asked.alignment();
    let data_start = f.data_start();
    let mut common_tensors = Vec::new();
    for (i, want) in asked.tensors.iter().enumerate() {
        let ty = type_name(want.type_id);
        let path = format!("tensor[{i}] {}", String::from_utf8_lossy(&want.name));
        let Some((j, have)) = got.tensors.iter().enumerate().find(|(_, t)| t.name == want.name) else {
            c.findings.push(Mismatch {
                kind: Kind::new("tensor-info", &ty, "missing"),
                path,
                expected: format!("{ty} {:?}", want.dims),
                got: "no such tensor".into(),
                offset: None,
            });
            continue;
        };
        common_tensors.push(want.name.clone());
        let info = f.tensors.get(j);
        c.findings.extend(compare_tensor(&path, want, have, info, data_start, align));
    }
    for t in &got.tensors {
        if !asked.tensors.iter().any(|w| w.name == t.name) {
            c.findings.push(Mismatch {
                kind: Kind::new("tensor-info", type_name(t.type_id), "extra tensor"),
                path: format!("tensor {}", String::from_utf8_lossy(&t.name)),
                expected: "no such tensor".into(),
                got: format!("{} {:?}", type_name(t.type_id), t.dims),
                offset: None,
            });
        }
    }
    let got_order: Vec<&Vec<u8>> = got.tensors.iter().map(|t| &t.name).filter(|n| common_tensors.contains(n)).collect();
    if got_order.iter().zip(&common_tensors).any(|(a, b)| *a != b) {
        c.infos.push(Mismatch {
            kind: Kind::new("tensor-info", "order", "tensor order changed"),
            path: "tensors".into(),
            expected: "the order asked".into(),
            got: "another order".into(),
            offset: None,
        });
    }
    c
}

fn type_name(id: u32) -> String {
    GgmlType::from_id(id).map_or_else(|| format!("type{id}"), |t| t.name().to_string())
}

fn compare_tensor(
    path: &str,
    want: &OwnedTensor,
    have: &OwnedTensor,
    info: Option<&gguf_validate_core::parse::TensorInfo<'_>>,
    data_start: Option<u64>,
    align: u64,
) -> Vec<Mismatch> {
    let ty = type_name(want.type_id);
    let mut out = Vec::new();
    if have.dims != want.dims {
        let trimmed: Vec<u64> = {
            let mut d = want.dims.clone();
            while d.len() > 1 && d.last() == Some(&1) {
                d.pop();
            }
            if d.is_empty() { vec![1] } else { d }
        };
        let reversed: Vec<u64> = want.dims.iter().rev().copied().collect();
        let what = if have.dims == trimmed {
            if want.dims.is_empty() { "n_dims 0 written as [1]" } else { "trailing dims of 1 dropped" }
        } else if have.dims == reversed {
            "dims reversed"
        } else if have.dims.len() != want.dims.len() {
            "n_dims changed"
        } else {
            "dims changed"
        };
        out.push(Mismatch {
            kind: Kind::new("tensor-info", &ty, what),
            path: format!("{path}/dims"),
            expected: format!("{:?}", want.dims),
            got: format!("{:?}", have.dims),
            offset: info.map(|t| t.n_dims_offset),
        });
    }
    if have.type_id != want.type_id {
        out.push(Mismatch {
            kind: Kind::new("tensor-info", &ty, format!("type changed to {}", type_name(have.type_id))),
            path: format!("{path}/type"),
            expected: ty.clone(),
            got: type_name(have.type_id),
            offset: info.map(|t| t.type_offset),
        });
        return out;
    }
    if align > 0 && have.offset % align != 0 {
        out.push(Mismatch {
            kind: Kind::new("layout", "alignment", "tensor data not aligned to general.alignment"),
            path: format!("{path}/offset"),
            expected: format!("a multiple of {align}"),
            got: have.offset.to_string(),
            offset: info.map(|t| t.offset_field),
        });
    }
    if have.data != want.data {
        let first = want.data.iter().zip(&have.data).position(|(a, b)| a != b);
        let at = first.unwrap_or(want.data.len().min(have.data.len()));
        let what = if have.data.is_empty() && !want.data.is_empty() {
            "data missing"
        } else if have.data.len() != want.data.len() {
            "data size differs"
        } else if have.data.iter().all(|b| *b == 0) {
            "data zeroed"
        } else {
            "data bytes differ"
        };
        let abs = data_start
            .and_then(|s| s.checked_add(have.offset))
            .and_then(|s| s.checked_add(u64::try_from(at).unwrap_or(u64::MAX)));
        let hex = |d: &[u8]| d.iter().skip(at).take(8).map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
        out.push(Mismatch {
            kind: Kind::new("tensor-data", &ty, what),
            path: format!("{path}/data[{at}]"),
            expected: format!("{} bytes: {}", want.data.len(), hex(&want.data)),
            got: format!("{} bytes: {}", have.data.len(), hex(&have.data)),
            offset: abs,
        });
    }
    out
}

/// A short rendering of a value: `u32 7`, `f32 0x7fc00001 (NaN)`, `string "ab"`, `array[u8; 3]`.
pub fn show(v: &OwnedValue) -> String {
    match v {
        OwnedValue::U8(x) => format!("u8 {x}"),
        OwnedValue::I8(x) => format!("i8 {x}"),
        OwnedValue::U16(x) => format!("u16 {x}"),
        OwnedValue::I16(x) => format!("i16 {x}"),
        OwnedValue::U32(x) => format!("u32 {x}"),
        OwnedValue::I32(x) => format!("i32 {x}"),
        OwnedValue::U64(x) => format!("u64 {x}"),
        OwnedValue::I64(x) => format!("i64 {x}"),
        OwnedValue::F32(x) => format!("f32 0x{:08x} ({x:?})", x.to_bits()),
        OwnedValue::F64(x) => format!("f64 0x{:016x} ({x:?})", x.to_bits()),
        OwnedValue::Bool(b) => format!("bool {b}"),
        OwnedValue::String(s) => {
            let text: String = String::from_utf8_lossy(s).chars().take(48).collect();
            format!("string {text:?} ({} bytes)", s.len())
        }
        OwnedValue::Array(t, items) => format!("array[{t}; {}]", items.len()),
    }
}

/// Integer views of a value: (value, width in bits, signed).
fn int_of(v: &OwnedValue) -> Option<(i128, u32, bool)> {
    Some(match v {
        OwnedValue::U8(x) => (i128::from(*x), 8, false),
        OwnedValue::I8(x) => (i128::from(*x), 8, true),
        OwnedValue::U16(x) => (i128::from(*x), 16, false),
        OwnedValue::I16(x) => (i128::from(*x), 16, true),
        OwnedValue::U32(x) => (i128::from(*x), 32, false),
        OwnedValue::I32(x) => (i128::from(*x), 32, true),
        OwnedValue::U64(x) => (i128::from(*x), 64, false),
        OwnedValue::I64(x) => (i128::from(*x), 64, true),
        _ => return None,
    })
}

fn classify_int(want: i128, have: i128, width: u32, signed: bool) -> &'static str {
    let diff = have.wrapping_sub(want);
    if diff == 1 || diff == -1 {
        return "off by one";
    }
    if have == 0 {
        return "zeroed";
    }
    let to_bits = |v: i128| (v as u128) & (u128::MAX >> (128 - width));
    let (w, h) = (to_bits(want), to_bits(have));
    let bytes = usize::try_from(width / 8).unwrap_or(8);
    let swapped = (0..bytes).fold(0u128, |acc, i| (acc << 8) | ((w >> (8 * i)) & 0xFF));
    if h == swapped {
        return "byte-swapped";
    }
    if w == h {
        return if signed { "read as unsigned" } else { "read as signed" };
    }
    for narrow in [8u32, 16, 32] {
        if narrow < width {
            let mask = (1u128 << narrow) - 1;
            let low = w & mask;
            let sign_ext = if low >> (narrow - 1) & 1 == 1 { to_bits(-((mask + 1 - low) as i128)) } else { low };
            if h == low || h == sign_ext {
                return match narrow {
                    8 => "truncated to 8 bits",
                    16 => "truncated to 16 bits",
                    _ => "truncated to 32 bits",
                };
            }
        }
    }
    "changed"
}

fn classify_f32(want: u32, have: u32) -> &'static str {
    let (w, h) = (f32::from_bits(want), f32::from_bits(have));
    if w.is_nan() && h.is_nan() {
        if want | 0x0040_0000 == have {
            "signalling NaN quieted"
        } else if want ^ have == 0x8000_0000 {
            "NaN sign changed"
        } else {
            "NaN payload changed"
        }
    } else if w.is_nan() {
        "NaN lost"
    } else if want == 0x8000_0000 && have == 0 {
        "negative zero lost"
    } else if w.is_subnormal() && h == 0.0 {
        "subnormal flushed to zero"
    } else {
        "changed"
    }
}

fn classify_f64(want: u64, have: u64) -> &'static str {
    let (w, h) = (f64::from_bits(want), f64::from_bits(have));
    if w.is_nan() && h.is_nan() {
        if want | 0x0008_0000_0000_0000 == have {
            "signalling NaN quieted"
        } else if want ^ have == 0x8000_0000_0000_0000 {
            "NaN sign changed"
        } else {
            "NaN payload changed"
        }
    } else if w.is_nan() {
        "NaN lost"
    } else if want == 0x8000_0000_0000_0000 && have == 0 {
        "negative zero lost"
    } else if w.is_subnormal() && h == 0.0 {
        "subnormal flushed to zero"
    } else if f64::from(w as f32).to_bits() == have {
        "rounded through f32"
    } else {
        "changed"
    }
}

/// Compares one value (`None` when equal, bit for bit). `class` is `kv`
/// at the top and `kv-array` inside arrays.
fn compare_value(
    class: &str,
    path: &str,
    want: &OwnedValue,
    have: &OwnedValue,
    offset: Option<u64>,
) -> Option<Mismatch> {
    let ty = want.value_type();
    let mk = |what: &str| Mismatch {
        kind: Kind::new(class, ty.name(), what),
        path: path.to_string(),
        expected: show(want),
        got: show(have),
        offset,
    };
    if have.value_type() != ty {
        return Some(mk(&format!("type changed to {}", have.value_type())));
    }
    match (want, have) {
        (OwnedValue::F32(a), OwnedValue::F32(b)) => {
            (a.to_bits() != b.to_bits()).then(|| mk(classify_f32(a.to_bits(), b.to_bits())))
        }
        (OwnedValue::F64(a), OwnedValue::F64(b)) => {
            (a.to_bits() != b.to_bits()).then(|| mk(classify_f64(a.to_bits(), b.to_bits())))
        }
        (OwnedValue::String(a), OwnedValue::String(b)) => (a != b).then(|| {
            let what = if a.starts_with(b) {
                if a.get(b.len()) == Some(&0) { "truncated at NUL" } else { "truncated" }
            } else {
                "changed"
            };
            mk(what)
        }),
        (OwnedValue::Bool(a), OwnedValue::Bool(b)) => (a != b).then(|| mk("changed")),
        (OwnedValue::Array(ta, a), OwnedValue::Array(tb, b)) => {
            let mka = |what: String| Mismatch {
                kind: Kind::new("kv-array", ta.name(), what),
                path: path.to_string(),
                expected: show(want),
                got: show(have),
                offset,
            };
            if ta != tb {
                return Some(mka(format!("element type changed to {tb}")));
            }
            if a.len() != b.len() {
                let what = if b.is_empty() { "emptied" } else { "length changed" };
                return Some(mka(what.to_string()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| compare_value("kv-array", &format!("{path}[{i}]"), x, y, offset))
        }
        _ => match (int_of(want), int_of(have)) {
            (Some((a, width, signed)), Some((b, _, _))) => (a != b).then(|| mk(classify_int(a, b, width, signed))),
            _ => None,
        },
    }
}

/// The size of a description, for shrinking reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Size {
    /// Key/value pairs.
    pub kvs: usize,
    /// Tensors.
    pub tensors: usize,
    /// Scalar values, strings and array elements.
    pub values: usize,
    /// Bytes of tensor data.
    pub data_bytes: usize,
}

impl Size {
    /// Measures a description.
    pub fn of(m: &GgufModel) -> Size {
        fn count(v: &OwnedValue) -> usize {
            match v {
                OwnedValue::Array(_, items) => items.iter().map(count).sum::<usize>() + 1,
                _ => 1,
            }
        }
        Size {
            kvs: m.kvs.len(),
            tensors: m.tensors.len(),
            values: m.kvs.iter().map(|(_, v)| count(v)).sum(),
            data_bytes: m.tensors.iter().map(|t| t.data.len()).sum(),
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} kvs, {} values, {} tensors, {} data bytes", self.kvs, self.values, self.tensors, self.data_bytes)
    }
}

/// Whether the value type `t` appears anywhere in `v`.
pub fn mentions(v: &OwnedValue, t: ValueType) -> bool {
    v.value_type() == t || matches!(v, OwnedValue::Array(e, items) if *e == t || items.iter().any(|i| mentions(i, t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gguf_validate_core::rules::Profile;

    fn model() -> GgufModel {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("toy"))
            .kv("general.quantization_version", OwnedValue::U32(2))
            .kv("a.n", OwnedValue::U32(7))
            .kv("a.f", OwnedValue::F32(f32::from_bits(0x7FC0_0001)))
            .kv("a.z", OwnedValue::F64(-0.0))
            .kv("a.s", OwnedValue::str("x\0y"))
            .kv("a.l", OwnedValue::Array(ValueType::I16, vec![OwnedValue::I16(1), OwnedValue::I16(-300)]));
        m.tensor(OwnedTensor::zeroed("w", &[32, 1], GgmlType::Q8_0).unwrap());
        m.canonical().unwrap();
        m
    }

    fn kinds(c: &Comparison) -> Vec<String> {
        c.findings.iter().map(|m| m.kind.to_string()).collect()
    }

    #[test]
    fn a_faithful_copy_has_no_findings() {
        let m = model();
        let c = compare(&m, &m.to_bytes(), &Options::new(Profile::Strict));
        assert_eq!(c, Comparison::default());
    }

    #[test]
    fn each_change_is_classified() {
        let m = model();
        let mut bad = m.clone();
        bad.kvs[2].1 = OwnedValue::U32(8);
        bad.kvs[3].1 = OwnedValue::F32(f32::from_bits(0x7FC0_0000));
        bad.kvs[4].1 = OwnedValue::F64(0.0);
        bad.kvs[5].1 = OwnedValue::str("x");
        bad.kvs[6].1 = OwnedValue::Array(ValueType::I16, vec![OwnedValue::I16(1), OwnedValue::I16(-44)]);
        bad.tensors[0].dims = vec![32];
        bad.kvs.swap(0, 1);
        let c = compare(&m, &bad.to_bytes(), &Options::new(Profile::Strict));
        assert_eq!(
            kinds(&c),
            [
                "kv u32: off by one",
                "kv f32: NaN payload changed",
                "kv f64: negative zero lost",
                "kv string: truncated at NUL",
                "kv-array i16: truncated to 8 bits",
                "tensor-info q8_0: trailing dims of 1 dropped",
            ]
        );
        assert_eq!(c.infos.len(), 1);
        assert!(c.findings[0].offset.is_some());
    }

    #[test]
    fn integer_classes() {
        assert_eq!(classify_int(0x0102, 0x0201, 16, false), "byte-swapped");
        assert_eq!(classify_int(-1, 0xFFFF_FFFF, 64, true), "truncated to 32 bits");
        assert_eq!(classify_int(5, 0, 32, false), "zeroed");
        assert_eq!(classify_int(5, 9, 32, false), "changed");
        assert_eq!(classify_f64(0.1f64.to_bits(), f64::from(0.1f32).to_bits()), "rounded through f32");
        assert_eq!(classify_f32(0x7F80_0001, 0x7FC0_0001), "signalling NaN quieted");
    }

    #[test]
    fn misaligned_data_and_missing_things_are_found() {
        let mut m = model();
        m.kv("general.alignment", OwnedValue::U32(64));
        m.tensor(OwnedTensor::zeroed("v", &[32], GgmlType::F32).unwrap());
        m.canonical().unwrap();
        // Written as if the alignment were 32: the second tensor lands on 32 mod 64.
        let mut bad = m.clone();
        bad.kvs.retain(|(k, _)| k != b"a.n");
        bad.tensors[0].offset = 0;
        bad.tensors[1].offset = 64 + 32;
        let c = compare(&m, &bad.to_bytes(), &Options::new(Profile::Strict));
        let k = kinds(&c);
        assert!(k.contains(&"kv u32: missing".to_string()), "{k:?}");
        assert!(k.contains(&"layout alignment: tensor data not aligned to general.alignment".to_string()), "{k:?}");
        assert!(k.iter().any(|k| k.starts_with("rule ")), "{k:?}");
    }
}
