//! `derive BASE QUANT`: a quant made with ggml_quantize_chunk from a base is
//! identical tensor by tensor; an altered block, a changed shape or a
//! tensor missing from the base is reported.
use std::path::{Path, PathBuf};
use std::process::Output;

use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};

use gguf_validate_testkit as support;

use support::cli::run;
use support::tmp::TempDir;

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
            gguf_validate_core::numerics::quantize_chunk(*ty, &v, dims[0] as usize, None, &mut out).unwrap();
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
    let d = TempDir::new("derive-same");
    let (b, q, _) = pair(&d);
    let o = run(&["derive", b.to_str().unwrap(), q.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).ends_with("4 tensors: 4 identical, 0 differ, 0 not derivable\n"));
}

#[test]
fn an_altered_block_differs_and_is_located() {
    let d = TempDir::new("derive-altered");
    let (b, q, mut qbytes) = pair(&d);
    // Flip one byte inside b.weight's (Q8_0) second block: find it by parsing.
    let parsed = gguf_validate_core::parse::parse_bytes(&qbytes).unwrap();
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
}

#[test]
fn shape_and_name_mismatches_are_not_derivable() {
    let d = TempDir::new("derive-mismatch");
    let (b, _, _) = pair(&d);
    let mut other = GgufModel::new();
    other.kv("general.architecture", OwnedValue::str("plain"));
    other.kv("general.quantization_version", OwnedValue::U32(2));
    let v = values(512, 9);
    let mut q = Vec::new();
    gguf_validate_core::numerics::quantize_chunk(GgmlType::Q8_0, &v, 128, None, &mut q).unwrap();
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
}

/// An importance matrix as `llama-imatrix` writes it (GGUF): per entry,
/// `in_sum2` (ne0 × n_mat) and `counts` (n_mat).
fn imatrix_gguf(entries: &[(&str, Vec<f32>, Vec<f32>)]) -> Vec<u8> {
    use gguf_validate_core::types::ValueType;
    let mut m = GgufModel::new();
    m.kv("general.type", OwnedValue::str("imatrix"));
    m.kv("imatrix.datasets", OwnedValue::Array(ValueType::String, vec![OwnedValue::str("calibration.txt")]));
    m.kv("imatrix.chunk_count", OwnedValue::U32(10));
    m.kv("imatrix.chunk_size", OwnedValue::U32(512));
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for (name, sums, counts) in entries {
        let n_mat = counts.len() as u64;
        let ne0 = sums.len() as u64 / n_mat;
        m.tensor(tensor(&format!("{name}.in_sum2"), &[ne0, n_mat], GgmlType::F32, bytes(sums)));
        m.tensor(tensor(&format!("{name}.counts"), &[1, n_mat], GgmlType::F32, bytes(counts)));
    }
    m.canonical().unwrap();
    m.to_bytes()
}

/// The same weights in the legacy `.dat` layout (values stored × ncall).
fn imatrix_dat(entries: &[(&str, Vec<f32>, i32)]) -> Vec<u8> {
    let mut b = (entries.len() as i32).to_le_bytes().to_vec();
    for (name, weights, ncall) in entries {
        b.extend_from_slice(&(name.len() as i32).to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(&ncall.to_le_bytes());
        b.extend_from_slice(&(weights.len() as i32).to_le_bytes());
        for w in weights {
            b.extend_from_slice(&(w * *ncall as f32).to_le_bytes());
        }
    }
    b
}

/// A MoE tensor of 3 experts × 2 rows × 256 columns, a dense one, and token
/// embeddings whose imatrix entry has the wrong size (llama-quantize then
/// quantizes them without weights).
struct Moe {
    base: PathBuf,
    quant: PathBuf,
    imatrix: PathBuf,
    dat: PathBuf,
    experts: Vec<f32>,
    expert_weights: Vec<f32>,
    expected_experts: Vec<u8>,
}

fn moe(dir: &Path) -> Moe {
    let (mut base, mut quant) = (GgufModel::new(), GgufModel::new());
    for m in [&mut base, &mut quant] {
        m.kv("general.architecture", OwnedValue::str("plain"));
    }
    let experts = values(256 * 2 * 3, 21);
    let dense = values(256 * 4, 22);
    let embd = values(32 * 4, 23);
    // Sums and counts: expert 1 saw no token (weight 1 everywhere).
    let sums: Vec<f32> = values(256 * 3, 24).iter().map(|v| v.abs() * 7.0 + 0.01).collect();
    let counts = vec![3.2f32, 0.0, 5.0];
    let mut expert_weights = Vec::new();
    for (e, c) in counts.iter().enumerate() {
        for s in &sums[e * 256..(e + 1) * 256] {
            expert_weights.push(if *c > 0.0 { s / c.round() } else { 1.0 });
        }
    }
    let dense_sums: Vec<f32> = values(256, 25).iter().map(|v| v * v + 0.5).collect();
    let dense_weights: Vec<f32> = dense_sums.iter().map(|s| s / 4.0).collect();
    let f32b = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let quantized = |ty, v: &[f32], n, w: Option<&[f32]>| {
        let mut out = Vec::new();
        gguf_validate_core::numerics::quantize_chunk(ty, v, n, w, &mut out).unwrap();
        out
    };
    let mut expected_experts = Vec::new();
    for e in 0..3 {
        expected_experts.extend(quantized(
            GgmlType::Q4_K,
            &experts[e * 512..(e + 1) * 512],
            256,
            Some(&expert_weights[e * 256..(e + 1) * 256]),
        ));
    }
    base.tensor(tensor("blk.0.ffn_up_exps.weight", &[256, 2, 3], GgmlType::F32, f32b(&experts)));
    base.tensor(tensor("blk.0.attn_q.weight", &[256, 4], GgmlType::F32, f32b(&dense)));
    base.tensor(tensor("token_embd.weight", &[32, 4], GgmlType::F32, f32b(&embd)));
    quant.tensor(tensor("blk.0.ffn_up_exps.weight", &[256, 2, 3], GgmlType::Q4_K, expected_experts.clone()));
    quant.tensor(tensor(
        "blk.0.attn_q.weight",
        &[256, 4],
        GgmlType::Q5_K,
        quantized(GgmlType::Q5_K, &dense, 256, Some(&dense_weights)),
    ));
    quant.tensor(tensor("token_embd.weight", &[32, 4], GgmlType::Q4_0, quantized(GgmlType::Q4_0, &embd, 32, None)));
    // An IQ type ggml quantizes only with an importance matrix.
    let lattice = values(256 * 2, 26);
    base.tensor(tensor("blk.0.attn_k.weight", &[256, 2], GgmlType::F32, f32b(&lattice)));
    quant.tensor(tensor(
        "blk.0.attn_k.weight",
        &[256, 2],
        GgmlType::IQ2_XXS,
        quantized(GgmlType::IQ2_XXS, &lattice, 256, Some(&dense_weights)),
    ));
    base.canonical().unwrap();
    quant.canonical().unwrap();
    let m = Moe {
        base: dir.join("base.gguf"),
        quant: dir.join("quant.gguf"),
        imatrix: dir.join("imatrix.gguf"),
        dat: dir.join("imatrix.dat"),
        experts,
        expert_weights: expert_weights.clone(),
        expected_experts,
    };
    std::fs::write(&m.base, base.to_bytes()).unwrap();
    std::fs::write(&m.quant, quant.to_bytes()).unwrap();
    std::fs::write(
        &m.imatrix,
        imatrix_gguf(&[
            ("blk.0.ffn_up_exps.weight", sums, counts),
            ("blk.0.attn_q.weight", dense_sums.clone(), vec![4.0]),
            ("token_embd.weight", vec![1.0; 16], vec![1.0]),
            ("blk.0.attn_k.weight", dense_sums, vec![4.0]),
        ]),
    )
    .unwrap();
    std::fs::write(
        &m.dat,
        imatrix_dat(&[
            ("blk.0.attn_q.weight", dense_weights.clone(), 2),
            ("token_embd.weight", vec![1.0; 16], 1),
            ("blk.0.attn_k.weight", dense_weights, 2),
        ]),
    )
    .unwrap();
    m
}

#[test]
fn an_imatrix_quant_derives_with_its_matrix_only() {
    let d = TempDir::new("derive-imatrix");
    let m = moe(&d);
    let (b, q, im) = (m.base.to_str().unwrap(), m.quant.to_str().unwrap(), m.imatrix.to_str().unwrap());
    let o = run(&["derive", "--json", "--imatrix", im, b, q]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(statuses(&o).iter().all(|(_, s)| s == "identical"), "{:?}", statuses(&o));
    // Without the matrix the weighted tensors differ; the embeddings, whose
    // entry llama-quantize ignores, do not; IQ2_XXS cannot be made without one.
    let o = run(&["derive", "--json", b, q]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        statuses(&o),
        [
            ("blk.0.ffn_up_exps.weight".to_string(), "differs".to_string()),
            ("blk.0.attn_q.weight".to_string(), "differs".to_string()),
            ("token_embd.weight".to_string(), "identical".to_string()),
            ("blk.0.attn_k.weight".to_string(), "not-derivable".to_string()),
        ]
    );
    let text = run(&["derive", b, q]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("iq2_xxs is quantized only with an importance matrix"));
    // The legacy file has only the dense entries: the experts then differ.
    let o = run(&["derive", "--json", "--imatrix", m.dat.to_str().unwrap(), b, q]);
    let s = statuses(&o);
    let got: Vec<&str> = s.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(got, ["differs", "identical", "identical", "identical"]);
}

#[test]
fn a_mis_sized_imatrix_entry_is_not_derivable() {
    let d = TempDir::new("derive-imatrix-size");
    let m = moe(&d);
    // 128 weights for a 256-column tensor: llama-quantize refuses it.
    std::fs::write(&m.dat, imatrix_dat(&[("blk.0.attn_q.weight", vec![1.0; 128], 1)])).unwrap();
    let o = run(&["derive", "--imatrix", m.dat.to_str().unwrap(), m.base.to_str().unwrap(), m.quant.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("holds 128 weights for this tensor, not 256"), "{out}");
    // A file that is no importance matrix is a usage error.
    std::fs::write(&m.dat, b"\x00\x00\x00\x00").unwrap();
    let o = run(&["derive", "--imatrix", m.dat.to_str().unwrap(), m.base.to_str().unwrap(), m.quant.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an importance matrix"));
}

#[test]
fn quantize_takes_weights_from_an_imatrix_file_per_expert() {
    let d = TempDir::new("derive-imatrix-quantize");
    let m = moe(&d);
    let input = d.join("experts.f32");
    std::fs::write(&input, m.experts.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let out = d.join("experts.q4k");
    let quantize = |tensor: &str| {
        run(&[
            "quantize",
            "--type",
            "q4_K",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--imatrix",
            m.imatrix.to_str().unwrap(),
            "--imatrix-tensor",
            tensor,
        ])
    };
    let o = quantize("blk.0.ffn_up_exps.weight");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), m.expected_experts);
    // The weights differ per expert, so one slice for all rows gives other bytes.
    let mut one = Vec::new();
    gguf_validate_core::numerics::quantize_chunk(
        GgmlType::Q4_K,
        &m.experts,
        256,
        Some(&m.expert_weights[..256]),
        &mut one,
    )
    .unwrap();
    assert_ne!(one, m.expected_experts);
    let o = quantize("nope.weight");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no entry `nope.weight` (it has 4 entries"));
}
