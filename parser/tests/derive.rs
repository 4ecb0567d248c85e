//! `derive BASE QUANT`: a quant made with ggml_quantize_chunk from a base is
//! identical tensor by tensor; an altered block, a changed shape or a
//! tensor missing from the base is reported.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gguf_validate::types::GgmlType;
use gguf_validate::write::{GgufModel, OwnedTensor, OwnedValue};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gguf-validate")).args(args).output().expect("run")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gguf-validate-derive-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Deterministic values with outliers.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v = (x % 2001) as f32 / 1000.0 - 1.0;
            if i % 97 == 0 { v * 40.0 } else { v }
        })
        .collect()
}

fn tensor(name: &str, dims: &[u64], ty: GgmlType, data: Vec<u8>) -> OwnedTensor {
    OwnedTensor { name: name.as_bytes().to_vec(), dims: dims.to_vec(), type_id: ty.id(), offset: 0, data }
}

/// (name, dims, quant type) of the test model.
const TENSORS: [(&str, [u64; 2], GgmlType); 4] = [
    ("a.weight", [256, 4], GgmlType::Q4_K),
    ("b.weight", [64, 8], GgmlType::Q8_0),
    ("c.weight", [32, 3], GgmlType::Q4_0),
    ("norm.weight", [64, 1], GgmlType::F32),
];

/// The base (F32) and the quant made from it with the library's quantizer.
fn pair(dir: &Path) -> (PathBuf, PathBuf, Vec<u8>) {
    let (mut base, mut quant) = (GgufModel::new(), GgufModel::new());
    for m in [&mut base, &mut quant] {
        m.kv("general.architecture", OwnedValue::str("plain"));
        m.kv("general.quantization_version", OwnedValue::U32(2));
    }
    for (i, (name, dims, ty)) in TENSORS.iter().enumerate() {
        let n = (dims[0] * dims[1]) as usize;
        let v = values(n, i as u32 + 1);
        let f32_bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        base.tensor(tensor(name, dims, GgmlType::F32, f32_bytes.clone()));
        let q = if *ty == GgmlType::F32 {
            f32_bytes
        } else {
            let mut out = Vec::new();
            gguf_numerics::quantize_chunk(*ty, &v, dims[0] as usize, None, &mut out).unwrap();
            out
        };
        quant.tensor(tensor(name, dims, *ty, q));
    }
    base.canonical().unwrap();
    quant.canonical().unwrap();
    let (b, q) = (dir.join("base.gguf"), dir.join("quant.gguf"));
    std::fs::write(&b, base.to_bytes()).unwrap();
    let qbytes = quant.to_bytes();
    std::fs::write(&q, &qbytes).unwrap();
    (b, q, qbytes)
}

fn statuses(o: &Output) -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["status"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn a_quant_made_from_its_base_is_identical() {
    let d = tmp("same");
    let (b, q, _) = pair(&d);
    let o = run(&["derive", b.to_str().unwrap(), q.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).ends_with("4 tensors: 4 identical, 0 differ, 0 not derivable\n"));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn an_altered_block_differs_and_is_located() {
    let d = tmp("altered");
    let (b, q, mut qbytes) = pair(&d);
    // Flip one byte inside b.weight's (Q8_0) second block: find it by parsing.
    let parsed = gguf_validate::parse::parse_bytes(&qbytes).unwrap();
    let start = parsed.file.data_start().unwrap();
    let t = parsed.file.tensors.iter().find(|t| t.name.bytes == b"b.weight").unwrap();
    let at = (start + t.data_offset) as usize + 34 + 10; // block 1 (34 bytes each), a quant byte
    qbytes[at] ^= 0x55;
    std::fs::write(&q, &qbytes).unwrap();
    let o = run(&["derive", "--json", b.to_str().unwrap(), q.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let bw = v["tensors"].as_array().unwrap().iter().find(|t| t["name"] == "b.weight").unwrap().clone();
    assert_eq!(bw["status"], "differs");
    assert_eq!(bw["first_block"], 1);
    assert_eq!(bw["blocks"], 1);
    assert!(bw["max_abs_error"].as_f64().unwrap() > 0.0);
    assert_eq!(statuses(&o).iter().filter(|(_, s)| s == "identical").count(), 3);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn shape_and_name_mismatches_are_not_derivable() {
    let d = tmp("mismatch");
    let (b, _, _) = pair(&d);
    let mut other = GgufModel::new();
    other.kv("general.architecture", OwnedValue::str("plain"));
    other.kv("general.quantization_version", OwnedValue::U32(2));
    let v = values(512, 9);
    let mut q = Vec::new();
    gguf_numerics::quantize_chunk(GgmlType::Q8_0, &v, 128, None, &mut q).unwrap();
    other.tensor(tensor("b.weight", &[128, 4], GgmlType::Q8_0, q.clone()));
    other.tensor(tensor("z.weight", &[128, 4], GgmlType::Q8_0, q));
    other.canonical().unwrap();
    let qpath = d.join("other.gguf");
    std::fs::write(&qpath, other.to_bytes()).unwrap();
    let o = run(&["derive", "--json", b.to_str().unwrap(), qpath.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        statuses(&o),
        [("b.weight".to_string(), "not-derivable".to_string()), ("z.weight".to_string(), "not-derivable".to_string())]
    );
    let missing = run(&["derive", b.to_str().unwrap(), d.join("nope.gguf").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    std::fs::remove_dir_all(&d).ok();
}
