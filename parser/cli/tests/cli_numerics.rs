//! The numerics in the CLI: `--check-data` (exit codes, human and JSON
//! output, one insta snapshot), `dequant` / `quantize` against ggml's
//! golden vectors in `corpus/golden/`, `dump --tensor --dequant`, the
//! legacy `dump` fallback, and the usage errors (exit 2).

use std::path::{Path, PathBuf};

use gguf_validate_core::numerics;
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
use serde_json::Value;

use gguf_validate_testkit as support;

use support::cli::{code, run_in, stderr, stdout};
use support::root;
use support::tmp::TempDir;

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A valid file with an F32 norm holding a NaN, a Q4_K matrix with an
/// infinite `d` in block 1, and an MXFP4 tensor with exponent 0xFF in block 2.
fn bad_file() -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    m.kv("general.quantization_version", OwnedValue::U32(2));
    let mut norm = OwnedTensor::zeroed("blk.0.attn_norm.weight", &[8], GgmlType::F32).expect("shape");
    norm.data = f32s(&[1.0, 1.0, f32::NAN, 1.0, 1.0, 1.0, 1.0, 1.0]);
    let mut q = OwnedTensor::zeroed("blk.0.attn_q.weight", &[256, 2], GgmlType::Q4_K).expect("shape");
    for blk in q.data.chunks_exact_mut(144) {
        blk[0..2].copy_from_slice(&0x3c00u16.to_le_bytes());
    }
    q.data[144..146].copy_from_slice(&0x7c00u16.to_le_bytes());
    let mut mx = OwnedTensor::zeroed("blk.0.ffn_up.weight", &[128], GgmlType::MXFP4).expect("shape");
    mx.data[34] = 0xff;
    m.tensor(norm).tensor(q).tensor(mx);
    m.canonical().expect("layout");
    m.to_bytes()
}

#[test]
fn check_data_changes_the_verdict_only_when_asked() {
    let dir = TempDir::new("numerics-verdict");
    std::fs::write(dir.join("bad.gguf"), bad_file()).expect("write");
    assert_eq!(code(&run_in(&dir, &["bad.gguf"])), 0, "values are not looked at without --check-data");
    let o = run_in(&dir, &["--check-data", "bad.gguf"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("INVALID (profile strict): 3 errors"), "{out}");
    assert!(out.contains("error[data-non-finite]"), "{out}");
    assert!(out.contains("tensor[1] blk.0.attn_q.weight/data[block 1].d: scale `d` of q4_K block 1 is +inf"), "{out}");
    assert!(out.contains("error[data-mxfp4-exponent]"), "{out}");
    assert!(out.contains("  data: 3 tensors checked (388 B), 3 findings"), "{out}");
    assert!(out.contains("    tensor[0] blk.0.attn_norm.weight (f32): 1 finding (nan 1)"), "{out}");
    // The spec does not forbid non-finite values: warnings only.
    assert_eq!(code(&run_in(&dir, &["--check-data", "--profile", "spec", "bad.gguf"])), 0);
    let o =
        run_in(&dir, &["--check-data", "--allow", "data-non-finite", "--allow", "data-scale-non-finite", "bad.gguf"]);
    assert_eq!(code(&o), 1, "the MXFP4 exponent still counts");
}

#[test]
fn check_data_json_report() {
    let dir = TempDir::new("numerics-json");
    std::fs::write(dir.join("bad.gguf"), bad_file()).expect("write");
    let o = run_in(&dir, &["--check-data", "--format", "json", "bad.gguf"]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    let f = &v["files"][0];
    assert_eq!(f["data"]["findings"], 3);
    assert_eq!(f["data"]["per_tensor"][1]["inf"], 1);
    insta::assert_json_snapshot!("check_data_json", v);
    // Without the flag, the JSON has no `data` member (the contract is additive).
    let o = run_in(&dir, &["--format", "json", "bad.gguf"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(v["files"][0].get("data").is_none());
}

#[test]
fn check_data_on_committed_corpus_files() {
    let o = run_in(root(), &["--check-data", "corpus/gguf/y_base.gguf", "corpus/legacy/y_rwkv_v4_q8_0.bin"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).matches("0 findings").count() == 2, "{}", stdout(&o));
}

fn golden() -> PathBuf {
    root().join("corpus/golden")
}

fn manifest() -> Value {
    serde_json::from_str(&std::fs::read_to_string(golden().join("manifest.json")).expect("manifest")).expect("json")
}

#[test]
fn dequant_matches_the_golden_vectors_for_every_type() {
    let dir = TempDir::new("numerics-dequant");
    let m = manifest();
    let mut checked = 0;
    for e in m["dequant"].as_array().expect("dequant list") {
        let name = e["type"].as_str().expect("type");
        let ty = GgmlType::from_name(name).expect("known type");
        let raw = std::fs::read(golden().join(e["file"].as_str().expect("file"))).expect("golden file");
        let n_in = e["in_bytes"].as_u64().expect("in_bytes") as usize;
        let (input, expected) = if n_in == 0 {
            // f16 / bf16: the output of every bit pattern, in order.
            let all: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
            (all, raw)
        } else {
            (raw[..n_in].to_vec(), raw[n_in..].to_vec())
        };
        let in_path = dir.join(format!("{name}.blocks"));
        std::fs::write(&in_path, &input).expect("write input");
        // Type names are case-insensitive.
        let upper = name.to_ascii_uppercase();
        let o = run_in(&dir, &["dequant", "--type", &upper, "--input", &format!("{name}.blocks"), "--output", "-"]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        assert_eq!(o.stdout.len(), expected.len(), "{name}");
        assert!(o.stdout == expected, "{name}: output differs from ggml's to_float");
        let _ = ty;
        checked += 1;
    }
    assert!(checked >= 35, "{checked}");
}

#[test]
fn quantize_matches_ggml_reference_and_round_trips() {
    let dir = TempDir::new("numerics-quantize");
    let m = manifest();
    let row_len = m["row_len"].as_u64().expect("row_len") as usize;
    let input = std::fs::read(golden().join("quant/input.f32")).expect("input");
    for e in m["quant"].as_array().expect("quant list") {
        let name = e["type"].as_str().expect("type");
        let rows: Vec<usize> =
            e["rows"].as_array().expect("rows").iter().map(|r| r.as_u64().expect("row") as usize).collect();
        let mut src = Vec::new();
        for r in &rows {
            src.extend_from_slice(&input[r * row_len * 4..(r + 1) * row_len * 4]);
        }
        std::fs::write(dir.join(format!("{name}.f32")), &src).expect("write");
        let o = run_in(
            &dir,
            &[
                "quantize",
                "--type",
                name,
                "--input",
                &format!("{name}.f32"),
                "--output",
                &format!("{name}.blocks"),
                "--reference",
                "row",
            ],
        );
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let ours = std::fs::read(dir.join(format!("{name}.blocks"))).expect("output");
        let expected = std::fs::read(golden().join(e["file"].as_str().expect("file"))).expect("golden");
        assert_eq!(ours.len(), expected.len(), "{name}");
        // Blocks where ggml leaves the quants uninitialised (IQ4_NL of an
        // all-zero block): only the scale is defined.
        let undefined: Vec<(usize, usize)> = e
            .get("undefined_qs_blocks")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|p| (p[0].as_u64().expect("row") as usize, p[1].as_u64().expect("block") as usize))
                    .collect()
            })
            .unwrap_or_default();
        let ts = GgmlType::from_name(name).expect("type").type_size() as usize;
        let per_row = ours.len() / rows.len() / ts;
        for (i, (g, w)) in ours.chunks_exact(ts).zip(expected.chunks_exact(ts)).enumerate() {
            let cmp = if undefined.contains(&(rows[i / per_row], i % per_row)) { 2 } else { ts };
            assert!(g[..cmp] == w[..cmp], "{name}: block {i} differs from ggml's quantize_row_*_ref");
        }
        // And back: the CLI's f32 is the library's dequantization.
        let o = run_in(&dir, &["dequant", "--type", name, "--input", &format!("{name}.blocks"), "--output", "-"]);
        assert_eq!(code(&o), 0, "{name}");
        let ty = GgmlType::from_name(name).expect("type");
        let back = numerics::dequantize_to_vec(ty, &ours).expect("decodes");
        assert!(o.stdout == f32s(&back), "{name}: CLI dequant differs from the library's");
    }
}

/// The input rows a golden file holds (its "rows", or all), written to a
/// scratch file when they are a subset (the lattice types leave out the
/// rows ggml aborts on).
fn rows_input(dir: &Path, input: &Path, npr: usize, file: &Value, tag: &str) -> PathBuf {
    let Some(rows) = file.get("rows").and_then(Value::as_array) else { return input.to_path_buf() };
    let all = std::fs::read(input).expect("input");
    if rows.len() * npr * 4 == all.len() {
        return input.to_path_buf();
    }
    let mut out = Vec::new();
    for r in rows {
        let r = r.as_u64().expect("row") as usize;
        out.extend_from_slice(&all[r * npr * 4..(r + 1) * npr * 4]);
    }
    let path = dir.join(format!("{tag}.f32"));
    std::fs::write(&path, out).expect("write rows");
    path
}

/// The default `quantize` is `ggml_quantize_chunk`; `--imatrix` adds the
/// importance matrix (golden files in quant/chunk/).
#[test]
fn quantize_matches_ggml_quantize_chunk_with_and_without_imatrix() {
    let m = manifest();
    let dir = TempDir::new("numerics-chunk-rows");
    let mut checked = 0;
    for set in m["chunk"].as_array().expect("chunk") {
        let set_name = set["set"].as_str().expect("set");
        let npr_n = set["n_per_row"].as_u64().expect("n_per_row") as usize;
        let npr = npr_n.to_string();
        let input = golden().join(set["input"]["file"].as_str().expect("input"));
        let imatrix = golden().join(set["imatrix"][1]["file"].as_str().expect("imatrix"));
        let imatrix = imatrix.to_str().expect("utf-8 path");
        for e in set["types"].as_array().expect("types") {
            let name = e["type"].as_str().expect("type");
            match e.get("chunk") {
                Some(chunk) => {
                    let x = rows_input(&dir, &input, npr_n, chunk, &format!("{set_name}-{name}"));
                    let x = x.to_str().expect("utf-8 path");
                    let o = run_in(&golden(), &["quantize", "--type", name, "--input", x, "--output", "-"]);
                    assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
                    let want = std::fs::read(golden().join(chunk["file"].as_str().expect("file"))).expect("golden");
                    assert!(o.stdout == want, "{name}: differs from ggml_quantize_chunk");
                }
                None => {
                    let x = input.to_str().expect("utf-8 path");
                    let o = run_in(&golden(), &["quantize", "--type", name, "--input", x, "--output", "-"]);
                    assert_eq!(code(&o), 2, "{name}: refused without an importance matrix");
                }
            }
            let Some(files) = e.get("imatrix").and_then(Value::as_array) else { continue };
            let x = rows_input(&dir, &input, npr_n, &files[1], &format!("{set_name}-{name}-w"));
            let x = x.to_str().expect("utf-8 path");
            let args =
                ["quantize", "--type", name, "--input", x, "--output", "-", "--row-length", &npr, "--imatrix", imatrix];
            let o = run_in(&golden(), &args);
            assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
            let want = std::fs::read(golden().join(files[1]["file"].as_str().expect("file"))).expect("golden");
            assert!(o.stdout == want, "{name}: differs from ggml_quantize_chunk with an imatrix");
            checked += 1;
        }
    }
    assert_eq!(checked, 36);
}

/// The command line's `quantize` only reads arguments into
/// `numerics::quantize_tensor`: for every type, with and without an
/// importance matrix, row length and reference, its bytes are the
/// library's on the same seeded input, and it refuses (exit 2) exactly
/// what the library refuses.
#[test]
fn quantize_command_is_the_library_quantize_tensor_for_every_type() {
    let dir = TempDir::new("numerics-one-dispatch");
    let (rows, n) = (4usize, 256usize);
    let mut rng = gguf_validate_core::seeded::SplitMix64::new(0x0123_4567_89ab_cdef);
    let x: Vec<f32> = (0..rows * n).map(|_| (rng.unit_f32() - 0.5) * 2f32.powi(rng.below(9) as i32 - 4)).collect();
    let w: Vec<f32> = (0..n).map(|_| rng.unit_f32() * 4.0 + 0.01).collect();
    std::fs::write(dir.join("x.f32"), f32s(&x)).expect("write");
    std::fs::write(dir.join("w.f32"), f32s(&w)).expect("write");
    let npr = n.to_string();
    let mut quantized = Vec::new();
    for ty in GgmlType::ALL {
        let name = ty.name();
        let cases: [(&[&str], numerics::QuantizeOptions<'_>); 5] = [
            (&[], numerics::QuantizeOptions::default()),
            (&["--row-length", &npr], numerics::QuantizeOptions { n_per_row: Some(n), ..Default::default() }),
            (&["--imatrix", "w.f32"], numerics::QuantizeOptions { imatrix: Some(&w), ..Default::default() }),
            (
                &["--row-length", &npr, "--imatrix", "w.f32"],
                numerics::QuantizeOptions { n_per_row: Some(n), imatrix: Some(&w), ..Default::default() },
            ),
            (
                &["--reference", "row"],
                numerics::QuantizeOptions { reference: numerics::Reference::Row, ..Default::default() },
            ),
        ];
        let mut ok = 0;
        for (extra, opts) in cases {
            let mut args = vec!["quantize", "--type", name, "--input", "x.f32", "--output", "-"];
            args.extend_from_slice(extra);
            let o = run_in(&dir, &args);
            let mut want = Vec::new();
            match numerics::quantize_tensor(ty, &x, &opts, &mut want) {
                Ok(()) => {
                    assert_eq!(code(&o), 0, "{name} {extra:?}: {}", stderr(&o));
                    assert!(o.stdout == want, "{name} {extra:?}: the CLI's bytes differ from quantize_tensor's");
                    ok += 1;
                }
                Err(e) => assert_eq!(code(&o), 2, "{name} {extra:?}: the library refuses ({e}), the CLI did not"),
            }
        }
        assert_eq!(ok > 0, numerics::has_quantizer(ty), "{name}: {ok} cases quantized");
        if ok > 0 {
            quantized.push(name);
        }
    }
    assert_eq!(quantized.len(), 30, "{quantized:?}");
}

#[test]
fn conversion_usage_errors_exit_2() {
    let dir = TempDir::new("numerics-errors");
    std::fs::write(dir.join("odd.bin"), [0u8; 145]).expect("write");
    std::fs::write(dir.join("x.f32"), f32s(&[0.5; 256])).expect("write");

    let o = run_in(&dir, &["dequant", "--type", "q4_k_m", "--input", "odd.bin", "--output", "-"]);
    assert_eq!(code(&o), 2);
    let e = stderr(&o);
    assert!(e.contains("unknown type `q4_k_m`; valid types: f32, f16,"), "{e}");
    assert!(e.contains("iq2_xxs") && e.contains("mxfp4"), "{e}");

    let o = run_in(&dir, &["dequant", "--type", "q4_K", "--input", "odd.bin", "--output", "-"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("145 bytes is not a whole number of q4_K blocks (144 bytes each)"), "{}", stderr(&o));

    let o = run_in(&dir, &["quantize", "--type", "iq2_xxs", "--input", "x.f32", "--output", "out.bin"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("iq2_xxs needs an importance matrix (--imatrix)"), "{}", stderr(&o));
    assert!(!dir.join("out.bin").exists(), "nothing written on error");
    let o = run_in(&dir, &["quantize", "--type", "i32", "--input", "x.f32", "--output", "out.bin"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("i32 has no quantizer"), "{}", stderr(&o));
    let o = run_in(&dir, &["quantize", "--type", "iq1_m", "--reference", "row", "--input", "x.f32", "--output", "-"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("iq1_m has no reference quantizer"), "{}", stderr(&o));

    std::fs::write(dir.join("short.f32"), f32s(&[0.5; 100])).expect("write");
    let o = run_in(&dir, &["quantize", "--type", "q8_0", "--input", "short.f32", "--output", "out.bin"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("100 values is not a whole number of q8_0 blocks (32 values each)"), "{}", stderr(&o));

    std::fs::write(dir.join("ragged.f32"), [0u8; 6]).expect("write");
    let o = run_in(&dir, &["quantize", "--type", "f16", "--input", "ragged.f32", "--output", "out.bin"]);
    assert_eq!(code(&o), 2);

    let o = run_in(&dir, &["dequant", "--type", "q8_0", "--input", "missing.bin", "--output", "-"]);
    assert_eq!(code(&o), 2);

    // --dequant and --output only make sense with --tensor.
    let o = run_in(root(), &["dump", "corpus/gguf/y_base.gguf", "--dequant"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn dump_tensor_writes_raw_and_dequantized_data() {
    let dir = TempDir::new("numerics-dump_tensor");
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    m.kv("general.quantization_version", OwnedValue::U32(2));
    let x: Vec<f32> = (0..128).map(|i| (i as f32 - 60.0) / 7.0).collect();
    let mut blocks = Vec::new();
    numerics::quantize(GgmlType::Q8_0, &x, &mut blocks).expect("q8_0");
    let mut t = OwnedTensor::zeroed("tok_embd.weight", &[64, 2], GgmlType::Q8_0).expect("shape");
    t.data = blocks.clone();
    m.tensor(OwnedTensor::zeroed("first", &[32], GgmlType::F16).expect("shape")).tensor(t);
    m.canonical().expect("layout");
    std::fs::write(dir.join("m.gguf"), m.to_bytes()).expect("write");

    let o = run_in(&dir, &["dump", "m.gguf", "--tensor", "tok_embd.weight", "--dequant", "--output", "t.f32"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let want = numerics::dequantize_to_vec(GgmlType::Q8_0, &blocks).expect("decodes");
    assert!(std::fs::read(dir.join("t.f32")).expect("out") == f32s(&want));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("summary json");
    assert_eq!(v["type"], "q8_0");
    assert_eq!(v["dims"], serde_json::json!([64, 2]));
    assert_eq!(v["bytes_written"], 512);

    let o = run_in(&dir, &["dump", "m.gguf", "--tensor", "tok_embd.weight", "--output", "-"]);
    assert_eq!(code(&o), 0);
    assert!(o.stdout == blocks, "raw bytes as stored");

    let o = run_in(&dir, &["dump", "m.gguf", "--tensor", "nope", "--dequant", "--output", "n.f32"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("no tensor named `nope`"), "{}", stderr(&o));

    // --timeout (the library's tests make it pass): a generous one changes
    // nothing, a malformed one is a usage error.
    let timed = run_in(&dir, &["dump", "m.gguf", "--tensor", "tok_embd.weight", "--output", "-", "--timeout", "30s"]);
    assert_eq!(code(&timed), 0);
    assert!(timed.stdout == blocks);
    let plain = run_in(&dir, &["dump", "m.gguf"]);
    let timed = run_in(&dir, &["dump", "m.gguf", "--timeout", "30"]);
    assert_eq!((code(&timed), &timed.stdout), (0, &plain.stdout));
    assert_eq!(code(&run_in(&dir, &["dump", "m.gguf", "--timeout", "-1"])), 2);
}

#[test]
fn dump_tensor_refuses_unreadable_tensors() {
    let dir = TempDir::new("numerics-dump_unreadable");
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    let mut t = OwnedTensor::zeroed("w", &[32], GgmlType::F32).expect("shape");
    t.type_id = 4; // removed type: no data view
    m.tensor(t);
    m.canonical().expect("layout");
    std::fs::write(dir.join("m.gguf"), m.to_bytes()).expect("write");
    let o = run_in(&dir, &["dump", "m.gguf", "--tensor", "w", "--dequant", "--output", "w.f32"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("tensor `w` has no readable data"), "{}", stderr(&o));
}

#[test]
fn dump_falls_back_to_the_legacy_description() {
    let o = run_in(root(), &["dump", "corpus/legacy/n_ggjt_v3_q4_0.bin"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["format"], "ggjt");
    assert_eq!(v["path"], "corpus/legacy/n_ggjt_v3_q4_0.bin");
    // A legacy tensor can be written out too.
    let name = v["tensors"][0]["name"].as_str().expect("name").to_string();
    let dir = TempDir::new("numerics-legacy_dump");
    let file = root().join("corpus/legacy/n_ggjt_v3_q4_0.bin");
    let o = run_in(
        &dir,
        &["dump", file.to_str().expect("utf-8 path"), "--tensor", &name, "--dequant", "--output", "t.f32"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}
