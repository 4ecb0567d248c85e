//! `gguf-candle-writer MODEL OUT`: writes a gguf-validate model description
//! (fuzz-writer's JSON) with candle-core's GGUF writer,
//! `candle_core::quantized::gguf_file::write`, tensors built with
//! `ggml_file::qtensor_from_ggml` from their raw bytes.
//!
//! Exit 0 when candle wrote the file, 1 when it returned an error or the
//! description asks for something candle's API cannot express (the
//! message says which). `--version` prints the candle-core version.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use base64::Engine as _;
use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::quantized::gguf_file::{write, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;
use serde_json::Value as Json;

const CANDLE_VERSION: &str = "candle-core 0.11.1";

fn bits(v: &Json) -> Result<u64, String> {
    let s = v.as_str().ok_or("float is not a string")?;
    u64::from_str_radix(s.trim_start_matches("0x"), 16).map_err(|e| e.to_string())
}

fn int(v: &Json) -> Result<i128, String> {
    match v {
        Json::Number(n) => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)).ok_or("bad int".into()),
        Json::String(s) => s.parse().map_err(|_| "bad int".into()),
        _ => Err("bad int".into()),
    }
}

fn value(ty: &str, elem: Option<&Json>, v: &Json) -> Result<Value, String> {
    let n = || int(v);
    let conv = |e: std::num::TryFromIntError| e.to_string();
    Ok(match ty {
        "u8" => Value::U8(n()?.try_into().map_err(conv)?),
        "i8" => Value::I8(n()?.try_into().map_err(conv)?),
        "u16" => Value::U16(n()?.try_into().map_err(conv)?),
        "i16" => Value::I16(n()?.try_into().map_err(conv)?),
        "u32" => Value::U32(n()?.try_into().map_err(conv)?),
        "i32" => Value::I32(n()?.try_into().map_err(conv)?),
        "u64" => Value::U64(n()?.try_into().map_err(conv)?),
        "i64" => Value::I64(n()?.try_into().map_err(conv)?),
        "f32" => Value::F32(f32::from_bits(u32::try_from(bits(v)?).map_err(conv)?)),
        "f64" => Value::F64(f64::from_bits(bits(v)?)),
        "bool" => Value::Bool(v.as_bool().ok_or("bad bool")?),
        "string" => Value::String(v.as_str().ok_or("bad string")?.to_string()),
        "array" => {
            let elem = elem.and_then(Json::as_str).ok_or("array without element_type")?;
            let items = v.as_array().ok_or("array value is not a list")?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(if elem == "array" {
                    value("array", item.get("element_type"), &item["value"])?
                } else {
                    value(elem, None, item)?
                });
            }
            // candle's Value::Array carries no element type: an empty
            // array's type cannot be passed on.
            Value::Array(out)
        }
        other => return Err(format!("unknown type {other}")),
    })
}

fn dtype(id: u64) -> Result<GgmlDType, String> {
    Ok(match id {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        9 => GgmlDType::Q8_1,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        15 => GgmlDType::Q8K,
        30 => GgmlDType::BF16,
        other => return Err(format!("ggml type {other} has no GgmlDType in candle")),
    })
}

fn run(model: &str, out: &str) -> Result<(), String> {
    let doc: Json = serde_json::from_str(&std::fs::read_to_string(model).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if doc["format"] != "gguf-writer-model" || doc["format_version"] != 1 {
        return Err("not a gguf-writer-model v1 description".into());
    }
    let mut kvs: Vec<(String, Value)> = Vec::new();
    for kv in doc["kvs"].as_array().ok_or("no kvs")? {
        let key = kv["key"].as_str().ok_or("no key")?.to_string();
        let v = value(kv["type"].as_str().ok_or("no type")?, kv.get("element_type"), &kv["value"])?;
        kvs.push((key, v));
    }
    let mut tensors: Vec<(String, QTensor)> = Vec::new();
    for t in doc["tensors"].as_array().ok_or("no tensors")? {
        let name = t["name"].as_str().ok_or("no name")?.to_string();
        let dt = dtype(t["type_id"].as_u64().ok_or("no type_id")?)?;
        // candle's shapes are row-major: the reverse of ggml's ne order.
        let mut dims: Vec<usize> = t["dims"]
            .as_array()
            .ok_or("no dims")?
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()).ok_or("bad dim"))
            .collect::<Result<_, _>>()?;
        dims.reverse();
        let data = base64::engine::general_purpose::STANDARD
            .decode(t["data"].as_str().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let q = qtensor_from_ggml(dt, &data, dims, &Device::Cpu).map_err(|e| e.to_string())?;
        tensors.push((name, q));
    }
    let md: Vec<(&str, &Value)> = kvs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::fs::File::create(out).map_err(|e| e.to_string())?;
    write(&mut f, &md, &ts).map_err(|e| e.to_string())
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("--version"), _) => {
            println!("{CANDLE_VERSION}");
            ExitCode::SUCCESS
        }
        (Some(model), Some(out)) => match run(model, out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("candle-writer: {e}");
                ExitCode::from(1)
            }
        },
        _ => {
            eprintln!("usage: gguf-candle-writer MODEL OUT | --version");
            ExitCode::from(2)
        }
    }
}
