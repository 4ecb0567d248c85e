//! The model description format a writer under test reads: versioned JSON.
//!
//! ```json
//! {
//!   "format": "gguf-writer-model",
//!   "format_version": 1,
//!   "gguf_version": 3,
//!   "byte_order": "little",
//!   "alignment": 32,
//!   "kvs": [
//!     { "key": "general.architecture", "type": "string", "value": "toy" },
//!     { "key": "general.alignment", "type": "u32", "value": 32 },
//!     { "key": "custom.big", "type": "u64", "value": "18446744073709551615" },
//!     { "key": "custom.nan", "type": "f32", "value": "0x7fc00001" },
//!     { "key": "custom.list", "type": "array", "element_type": "i16", "value": [1, -2] },
//!     { "key": "custom.nested", "type": "array", "element_type": "array",
//!       "value": [ { "element_type": "u8", "value": [1, 2] } ] }
//!   ],
//!   "tensors": [
//!     { "name": "w", "type": "q4_0", "type_id": 2, "dims": [32, 2], "nbytes": 36, "data": "<base64>" }
//!   ]
//! }
//! ```
//!
//! - `kvs` are in the order to write them. `type` is the GGUF value type
//!   (`u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool string array`).
//! - Integers up to 32 bits are JSON numbers; `u64` and `i64` are decimal
//!   strings (JSON numbers lose precision above 2^53 in most parsers).
//! - `f32` and `f64` are their IEEE bit patterns as `0x` hex strings, so
//!   `-0.0`, infinities and NaN payloads survive: write exactly these bits.
//! - Strings are JSON strings (UTF-8; they may hold `\u0000`).
//! - `general.alignment`, when present, is an ordinary key (a `u32`) that
//!   the writer must honour as the data alignment; `alignment` repeats the
//!   alignment in effect (the key's value, else 32) for writers that take
//!   it as a separate setting.
//! - Tensors are in info order; `dims` are ggml's order (`ne[0]`, the
//!   fastest-varying dimension, first; numpy shapes are the reverse);
//!   `type` is ggml's type name and `type_id` its id; `data` is the
//!   tensor's bytes (exactly `nbytes`, little-endian, already in the
//!   tensor's type) in standard base64.
//! - A writer lays out the data itself: the description has no offsets.
//!
//! Readers must refuse a `format_version` they do not know.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use gguf_validate_core::parse::ByteOrder;
use gguf_validate_core::types::{GgmlType, ValueType};
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};

/// The `format` member.
pub const FORMAT: &str = "gguf-writer-model";
/// The `format_version` this module writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// Serialises a description. Fails on strings, keys or tensor names that
/// are not UTF-8 (the generator never makes them for writers).
pub fn to_json(model: &GgufModel) -> Result<Value, String> {
    let mut kvs = Vec::with_capacity(model.kvs.len());
    for (i, (k, v)) in model.kvs.iter().enumerate() {
        let key = std::str::from_utf8(k).map_err(|_| format!("kv[{i}]: key is not UTF-8"))?;
        let mut obj = Map::new();
        obj.insert("key".into(), Value::String(key.to_string()));
        obj.insert("type".into(), Value::String(v.value_type().name().to_string()));
        if let OwnedValue::Array(elem, _) = v {
            obj.insert("element_type".into(), Value::String(elem.name().to_string()));
        }
        obj.insert("value".into(), value_json(v).map_err(|e| format!("kv[{i}] {key}: {e}"))?);
        kvs.push(Value::Object(obj));
    }
    let mut tensors = Vec::with_capacity(model.tensors.len());
    for (i, t) in model.tensors.iter().enumerate() {
        let name = std::str::from_utf8(&t.name).map_err(|_| format!("tensor[{i}]: name is not UTF-8"))?;
        let ty = GgmlType::from_id(t.type_id).map_or_else(|| format!("type{}", t.type_id), |g| g.name().to_string());
        tensors.push(json!({
            "name": name,
            "type": ty,
            "type_id": t.type_id,
            "dims": t.dims,
            "nbytes": t.data.len(),
            "data": STANDARD.encode(&t.data),
        }));
    }
    Ok(json!({
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "gguf_version": model.version,
        "byte_order": if model.order == ByteOrder::BigEndian { "big" } else { "little" },
        "alignment": model.alignment(),
        "kvs": kvs,
        "tensors": tensors,
    }))
}

/// Serialises a description as pretty JSON text.
pub fn to_string(model: &GgufModel) -> Result<String, String> {
    serde_json::to_string_pretty(&to_json(model)?).map_err(|e| e.to_string())
}

fn value_json(v: &OwnedValue) -> Result<Value, String> {
    Ok(match v {
        OwnedValue::U8(x) => json!(x),
        OwnedValue::I8(x) => json!(x),
        OwnedValue::U16(x) => json!(x),
        OwnedValue::I16(x) => json!(x),
        OwnedValue::U32(x) => json!(x),
        OwnedValue::I32(x) => json!(x),
        OwnedValue::U64(x) => Value::String(x.to_string()),
        OwnedValue::I64(x) => Value::String(x.to_string()),
        OwnedValue::F32(x) => Value::String(format!("0x{:08x}", x.to_bits())),
        OwnedValue::F64(x) => Value::String(format!("0x{:016x}", x.to_bits())),
        OwnedValue::Bool(b) => match b {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            _ => return Err(format!("bool byte {b} is not 0 or 1")),
        },
        OwnedValue::String(s) => {
            Value::String(String::from_utf8(s.clone()).map_err(|_| "string is not UTF-8".to_string())?)
        }
        OwnedValue::Array(_, items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(match item {
                    OwnedValue::Array(elem, _) => json!({
                        "element_type": elem.name(),
                        "value": value_json(item).map_err(|e| format!("[{i}]{e}"))?,
                    }),
                    _ => value_json(item).map_err(|e| format!("[{i}]: {e}"))?,
                });
            }
            Value::Array(out)
        }
    })
}

fn value_type(name: &str) -> Result<ValueType, String> {
    ValueType::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| format!("unknown value type `{name}`"))
}

/// Reads a description (the inverse of [`to_json`]); errors name the member.
pub fn from_json(doc: &Value) -> Result<GgufModel, String> {
    let obj = doc.as_object().ok_or("the description is not a JSON object")?;
    if obj.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(format!("`format` is not \"{FORMAT}\""));
    }
    match obj.get("format_version").and_then(Value::as_u64) {
        Some(FORMAT_VERSION) => {}
        other => return Err(format!("unsupported format_version {other:?} (this reader knows {FORMAT_VERSION})")),
    }
    let version = obj
        .get("gguf_version")
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or("`gguf_version` is missing or not a u32")?;
    let order = match obj.get("byte_order").and_then(Value::as_str).unwrap_or("little") {
        "little" => ByteOrder::LittleEndian,
        "big" => ByteOrder::BigEndian,
        other => return Err(format!("unknown byte_order `{other}`")),
    };
    let mut model = GgufModel { version, order, ..GgufModel::default() };
    for (i, kv) in obj.get("kvs").and_then(Value::as_array).ok_or("`kvs` is missing")?.iter().enumerate() {
        let key = kv.get("key").and_then(Value::as_str).ok_or_else(|| format!("kvs[{i}]: no `key`"))?;
        let ty = value_type(kv.get("type").and_then(Value::as_str).unwrap_or_default())
            .map_err(|e| format!("kvs[{i}] {key}: {e}"))?;
        let value = parse_value(ty, kv.get("element_type"), kv.get("value").unwrap_or(&Value::Null))
            .map_err(|e| format!("kvs[{i}] {key}: {e}"))?;
        model.kvs.push((key.as_bytes().to_vec(), value));
    }
    for (i, t) in obj.get("tensors").and_then(Value::as_array).ok_or("`tensors` is missing")?.iter().enumerate() {
        let name = t.get("name").and_then(Value::as_str).ok_or_else(|| format!("tensors[{i}]: no `name`"))?;
        let type_id = t
            .get("type_id")
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| format!("tensors[{i}] {name}: no `type_id`"))?;
        let dims = t
            .get("dims")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("tensors[{i}] {name}: no `dims`"))?
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| format!("tensors[{i}] {name}: a dim is not a u64"))?;
        let data = STANDARD
            .decode(t.get("data").and_then(Value::as_str).unwrap_or_default())
            .map_err(|e| format!("tensors[{i}] {name}: data: {e}"))?;
        model.tensors.push(OwnedTensor { name: name.as_bytes().to_vec(), dims, type_id, offset: 0, data });
    }
    model.canonical().ok_or("tensor data too large to lay out")?;
    Ok(model)
}

/// Reads a description from JSON text.
pub fn from_str(text: &str) -> Result<GgufModel, String> {
    from_json(&serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?)
}

fn bits(v: &Value, hex_digits: usize) -> Result<u64, String> {
    let s = v.as_str().ok_or("a float must be a hex bit-pattern string")?;
    let h = s.strip_prefix("0x").ok_or("a float bit pattern starts with 0x")?;
    if h.is_empty() || h.len() > hex_digits {
        return Err(format!("`{s}` is not a {hex_digits}-digit bit pattern"));
    }
    u64::from_str_radix(h, 16).map_err(|e| format!("`{s}`: {e}"))
}

fn int<T: TryFrom<i128>>(v: &Value) -> Result<T, String> {
    let wide: i128 = match v {
        Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        Value::String(s) => s.parse::<i128>().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("`{v}` is not an integer"))?;
    T::try_from(wide).map_err(|_| format!("{wide} is out of range"))
}

fn parse_value(ty: ValueType, elem: Option<&Value>, v: &Value) -> Result<OwnedValue, String> {
    Ok(match ty {
        ValueType::U8 => OwnedValue::U8(int(v)?),
        ValueType::I8 => OwnedValue::I8(int(v)?),
        ValueType::U16 => OwnedValue::U16(int(v)?),
        ValueType::I16 => OwnedValue::I16(int(v)?),
        ValueType::U32 => OwnedValue::U32(int(v)?),
        ValueType::I32 => OwnedValue::I32(int(v)?),
        ValueType::U64 => OwnedValue::U64(int(v)?),
        ValueType::I64 => OwnedValue::I64(int(v)?),
        ValueType::F32 => OwnedValue::F32(f32::from_bits(u32::try_from(bits(v, 8)?).map_err(|e| e.to_string())?)),
        ValueType::F64 => OwnedValue::F64(f64::from_bits(bits(v, 16)?)),
        ValueType::Bool => OwnedValue::Bool(u8::from(v.as_bool().ok_or("a bool must be true or false")?)),
        ValueType::String => OwnedValue::str(v.as_str().ok_or("a string must be a JSON string")?),
        ValueType::Array => {
            let elem = value_type(elem.and_then(Value::as_str).ok_or("an array needs `element_type`")?)?;
            let items = v.as_array().ok_or("an array's value must be a JSON array")?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let parsed = if elem == ValueType::Array {
                    parse_value(elem, item.get("element_type"), item.get("value").unwrap_or(&Value::Null))
                } else {
                    parse_value(elem, None, item)
                };
                out.push(parsed.map_err(|e| format!("[{i}]: {e}"))?);
            }
            OwnedValue::Array(elem, out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> GgufModel {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("toy"))
            .kv("general.alignment", OwnedValue::U32(64))
            .kv("a.u64", OwnedValue::U64(u64::MAX))
            .kv("a.i64", OwnedValue::I64(i64::MIN))
            .kv("a.nan", OwnedValue::F32(f32::from_bits(0x7FC0_0001)))
            .kv("a.negzero", OwnedValue::F64(-0.0))
            .kv("a.nul", OwnedValue::str("a\0b"))
            .kv("a.b", OwnedValue::Bool(1))
            .kv(
                "a.nested",
                OwnedValue::Array(
                    ValueType::Array,
                    vec![
                        OwnedValue::Array(ValueType::I8, vec![OwnedValue::I8(-128)]),
                        OwnedValue::Array(ValueType::String, vec![]),
                    ],
                ),
            );
        let mut t = OwnedTensor::zeroed("w", &[32, 2], GgmlType::Q4_0).unwrap();
        t.data.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        m.tensor(t);
        m.canonical().unwrap();
        m
    }

    #[test]
    fn round_trips_bits_and_order() {
        let m = sample();
        let text = to_string(&m).unwrap();
        let back = from_str(&text).unwrap();
        assert_eq!(back.to_bytes(), m.to_bytes());
        assert!(text.contains("\"0x7fc00001\"") && text.contains("\"0x8000000000000000\""));
        assert!(text.contains("\"18446744073709551615\""));
        assert!(text.contains("\"alignment\": 64"));
    }

    #[test]
    fn refuses_unknown_versions_and_bad_members() {
        let mut doc = to_json(&sample()).unwrap();
        doc["format_version"] = json!(2);
        assert!(from_json(&doc).unwrap_err().contains("format_version"));
        let mut doc = to_json(&sample()).unwrap();
        doc["kvs"][2]["value"] = json!(1.5);
        assert!(from_json(&doc).unwrap_err().contains("a.u64"));
        let mut doc = to_json(&sample()).unwrap();
        doc["kvs"][4]["value"] = json!("0x1234567890");
        assert!(from_json(&doc).is_err());
        let mut m = GgufModel::new();
        m.kv("x", OwnedValue::String(vec![0xFF]));
        assert!(to_json(&m).is_err());
    }
}
