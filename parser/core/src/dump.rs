//! `gguf-validate dump`: a canonical JSON description of a GGUF file, the
//! basis for comparing what different readers see.
//!
//! Canonical means: keys and tensors in file order; integers as JSON
//! numbers; floats as numbers, or the strings `"nan"`, `"inf"`, `"-inf"`;
//! strings as JSON strings when valid UTF-8, else `{"hex": "..."}`; bools
//! as JSON bools when the byte is 0 or 1, else `{"bool_byte": n}`.
#![forbid(unsafe_code)]

use serde_json::{Map, Value as Json, json};

use crate::limits;
use crate::parse::{Array, ByteOrder, Parsed, Str, Value};
use crate::types::type_info;

fn float(x: f64) -> Json {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

fn string(s: &Str<'_>) -> Json {
    match s.as_str() {
        Some(t) => json!(t),
        None => {
            let hex: String = s.bytes.iter().map(|b| format!("{b:02x}")).collect();
            json!({ "hex": hex })
        }
    }
}

fn value(v: &Value<'_>, full: bool) -> Json {
    match v {
        Value::U8(x) => json!(x),
        Value::I8(x) => json!(x),
        Value::U16(x) => json!(x),
        Value::I16(x) => json!(x),
        Value::U32(x) => json!(x),
        Value::I32(x) => json!(x),
        Value::U64(x) => json!(x),
        Value::I64(x) => json!(x),
        Value::F32(x) => float(f64::from(*x)),
        Value::F64(x) => float(*x),
        Value::Bool(0) => json!(false),
        Value::Bool(1) => json!(true),
        Value::Bool(b) => json!({ "bool_byte": b }),
        Value::String(s) => string(s),
        Value::Array(a) => array(a, full),
    }
}

fn array(a: &Array<'_>, full: bool) -> Json {
    let limit = if full { u64::MAX } else { u64::try_from(limits::DUMP_ARRAY_PREVIEW).unwrap_or(16) };
    let items: Vec<Json> = if a.elem_type == crate::types::ValueType::String {
        a.strings().take_while(|(i, _)| *i < limit).map(|(_, s)| string(&s)).collect()
    } else {
        a.iter().take_while(|e| e.index < limit).map(|e| value(&e.value, full)).collect()
    };
    let mut m = Map::new();
    m.insert("element_type".into(), json!(a.elem_type.name()));
    m.insert("len".into(), json!(a.len));
    m.insert("values".into(), Json::Array(items));
    if a.len > limit {
        m.insert("truncated".into(), json!(true));
    }
    Json::Object(m)
}

/// The canonical description of a parsed file. `full` lists every array
/// element instead of the first [`limits::DUMP_ARRAY_PREVIEW`].
pub fn dump(parsed: &Parsed<'_>, full: bool) -> Json {
    let f = &parsed.file;
    let align = f.alignment();
    let data_offset = if parsed.fatal.is_none() && !f.tensors.is_empty() { f.data_start() } else { None };
    let kvs: Vec<Json> = f
        .kvs
        .iter()
        .map(|kv| {
            json!({
                "key": string(&kv.key),
                "type": kv.value.value_type().name(),
                "offset": kv.key.offset,
                "value": value(&kv.value, full),
            })
        })
        .collect();
    let tensors: Vec<Json> = f
        .tensors
        .iter()
        .map(|t| {
            let info = type_info(t.type_id);
            let dims: Vec<u64> = t.dims().collect();
            let nbytes = t.nbytes();
            json!({
                "name": string(&t.name),
                "n_dims": t.n_dims,
                "dims": dims,
                "type": info.map_or("unknown", |i| i.name),
                "type_id": t.type_id,
                "offset": t.data_offset,
                "absolute_offset": data_offset.and_then(|d| d.checked_add(t.data_offset)),
                "n_bytes": nbytes,
            })
        })
        .collect();
    let mut out = json!({
        "format": "gguf",
        "version": f.header.version,
        "byte_order": match f.header.byte_order { ByteOrder::LittleEndian => "little-endian", ByteOrder::BigEndian => "big-endian" },
        "tensor_count": f.header.tensor_count,
        "kv_count": f.header.kv_count,
        "alignment": align,
        "data_offset": data_offset,
        "kv": kvs,
        "tensors": tensors,
    });
    if let (Some(e), Some(o)) = (&parsed.fatal, out.as_object_mut()) {
        o.insert("error".into(), json!({ "offset": e.offset, "path": e.path, "kind": format!("{:?}", e.kind) }));
    }
    out
}

/// A validated file's description, whatever its format: GGUF ([`dump`] of
/// the validation's own parse), else rwkv.cpp, GGML, GGMF or GGJT
/// ([`crate::legacy::dump`]; their metadata is the whole file). The bool
/// says whether the whole file could be described (false when decoding
/// stopped). `None` for a file of no known format.
pub fn describe(validated: &crate::Validated, full: bool) -> Option<(Json, bool)> {
    match validated.parsed() {
        Some(parsed) => Some((dump(&parsed, full), parsed.fatal.is_none())),
        None => {
            let value = crate::legacy::dump(&validated.metadata)?;
            let complete = value.get("complete").and_then(Json::as_bool) != Some(false);
            Some((value, complete))
        }
    }
}
