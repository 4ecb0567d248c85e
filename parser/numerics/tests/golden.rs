//! Golden-vector tests: `numerics` against ggml's own C reference.
//!
//! The vectors in `corpus/golden/` were produced by
//! `conformance/tools/golden/gen_golden.py` from ggml's `libggml-base.so`
//! (see `manifest.json` for versions and seeds). These tests need only the
//! committed files. Comparisons are on bits: every f32 (NaN payloads and
//! signs included) and every quantized byte must be identical.
#![allow(clippy::disallowed_macros, clippy::expect_used, clippy::unwrap_used)]

use gguf_numerics::GgmlType;
use gguf_numerics::{self as numerics, DataFinding, FindingKind, NumericsError};
use serde_json::Value;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/golden")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(golden_dir().join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest is JSON")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(golden_dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn ty_of(entry: &Value) -> GgmlType {
    let name = entry["type"].as_str().expect("type name");
    let ty = GgmlType::from_name(name).unwrap_or_else(|| panic!("unknown type {name}"));
    assert_eq!(u64::from(ty.id()), entry["id"].as_u64().expect("id"), "{name}: id");
    ty
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The input bytes and expected output of one dequant entry.
fn dequant_case(entry: &Value) -> (GgmlType, Vec<u8>, Vec<f32>) {
    let ty = ty_of(entry);
    let body = read(entry["file"].as_str().expect("file"));
    let in_bytes = entry["in_bytes"].as_u64().expect("in_bytes") as usize;
    let input = if in_bytes == 0 {
        // F16 / BF16: every u16 bit pattern, in order.
        (0..=u16::MAX).flat_map(u16::to_le_bytes).collect()
    } else {
        body[..in_bytes].to_vec()
    };
    let expected = f32s(&body[in_bytes..]);
    (ty, input, expected)
}

#[test]
fn manifest_covers_every_live_type() {
    let m = manifest();
    assert_eq!(m["reference"]["ggml_type_count"].as_u64(), Some(43));
    assert!(m["reference"]["missing_types"].as_array().expect("missing_types").is_empty());
    let mut seen: Vec<GgmlType> = m["dequant"].as_array().expect("dequant").iter().map(ty_of).collect();
    seen.sort();
    let mut all = GgmlType::ALL.to_vec();
    all.sort();
    assert_eq!(seen, all, "one dequant vector per live type");
    for ty in all {
        let q = m["quant"].as_array().expect("quant").iter().any(|e| ty_of(e) == ty);
        let expected = numerics::has_reference_quantizer(ty) && ty != GgmlType::F32;
        assert_eq!(q, expected, "{ty}: quant golden present iff we have a reference quantizer");
    }
}

#[test]
fn dequantize_matches_ggml_bit_for_bit() {
    let m = manifest();
    let mut failures = Vec::new();
    for entry in m["dequant"].as_array().expect("dequant") {
        let (ty, input, expected) = dequant_case(entry);
        let n_blocks = entry["n_blocks"].as_u64().expect("n_blocks") as usize;
        assert_eq!(input.len(), n_blocks * ty.type_size() as usize, "{ty}: input size");
        assert_eq!(expected.len(), n_blocks * ty.block_size() as usize, "{ty}: output size");
        let mut got = vec![0.0f32; expected.len()];
        numerics::dequantize(ty, &input, &mut got).expect("dequantize");
        let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i].to_bits() != expected[i].to_bits()).collect();
        if let Some(&i) = bad.first() {
            let bs = ty.block_size() as usize;
            failures.push(format!(
                "{ty} ({}): {} of {} values differ; first at element {i} (block {}): got {:#010x} ({}), want {:#010x} ({})",
                entry["reference"],
                bad.len(),
                got.len(),
                i / bs,
                got[i].to_bits(),
                got[i],
                expected[i].to_bits(),
                expected[i]
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Rows of the quantizer input.
fn quant_rows(m: &Value) -> Vec<Vec<f32>> {
    let row_len = m["row_len"].as_u64().expect("row_len") as usize;
    let all = f32s(&read(m["quant_input"]["file"].as_str().expect("file")));
    assert_eq!(all.len(), row_len * m["quant_input"]["rows"].as_u64().expect("rows") as usize);
    all.chunks_exact(row_len).map(<[f32]>::to_vec).collect()
}

#[test]
fn quantize_matches_ggml_reference_bit_for_bit() {
    let m = manifest();
    let rows = quant_rows(&m);
    let kinds = m["quant_input"]["kinds"].as_array().expect("kinds");
    let mut failures = Vec::new();
    let mut compared = 0usize;
    for entry in m["quant"].as_array().expect("quant") {
        let ty = ty_of(entry);
        let expected = read(entry["file"].as_str().expect("file"));
        let use_rows: Vec<usize> =
            entry["rows"].as_array().expect("rows").iter().map(|v| v.as_u64().expect("row") as usize).collect();
        let row_bytes = expected.len() / use_rows.len();
        let ts = ty.type_size() as usize;
        let undefined: Vec<(usize, usize)> = entry
            .get("undefined_qs_blocks")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_u64().unwrap() as usize)).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (k, &r) in use_rows.iter().enumerate() {
            numerics::quantize_row_ref(ty, &rows[r], &mut out).expect("quantize");
            let want = &expected[k * row_bytes..(k + 1) * row_bytes];
            assert_eq!(out.len(), want.len(), "{ty} row {r}: length");
            for (b, (g, w)) in out.chunks_exact(ts).zip(want.chunks_exact(ts)).enumerate() {
                compared += 1;
                // ggml leaves these nibbles uninitialised; only the scale is defined.
                let cmp = if undefined.contains(&(r, b)) { 2 } else { ts };
                if g[..cmp] != w[..cmp] {
                    failures.push(format!("{ty} row {r} ({}) block {b}:\n  got  {g:02x?}\n  want {w:02x?}", kinds[r]));
                    break;
                }
            }
        }
    }
    assert!(compared > 5000, "compared {compared} blocks");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Compares `got` with `want` block by block; returns the blocks compared.
fn compare_blocks(
    ty: GgmlType,
    what: &str,
    row_bytes: usize,
    got: &[u8],
    want: &[u8],
    failures: &mut Vec<String>,
) -> usize {
    let ts = ty.type_size() as usize;
    if got.len() != want.len() {
        failures.push(format!("{ty} {what}: {} bytes, want {}", got.len(), want.len()));
        return 0;
    }
    let mut n = 0;
    for (b, (g, w)) in got.chunks_exact(ts).zip(want.chunks_exact(ts)).enumerate() {
        n += 1;
        if g != w {
            let per_row = row_bytes / ts;
            failures.push(format!(
                "{ty} {what} row {} block {}:\n  got  {g:02x?}\n  want {w:02x?}",
                b / per_row,
                b % per_row
            ));
            break;
        }
    }
    n
}

/// The rows of `x` (rows of `npr`) that a golden file holds: all, or the
/// ones listed in its `rows` (the lattice types leave out those ggml aborts on).
fn golden_rows(file: &Value, x: &[f32], npr: usize) -> Vec<f32> {
    match file.get("rows").and_then(Value::as_array) {
        Some(rows) => rows
            .iter()
            .flat_map(|r| {
                let r = r.as_u64().expect("row") as usize;
                x[r * npr..(r + 1) * npr].iter().copied()
            })
            .collect(),
        None => x.to_vec(),
    }
}

/// `quantize_chunk` (and `quantize`, its no-imatrix default) against
/// `ggml_quantize_chunk` over every row of each set at once, without and with
/// each importance matrix.
#[test]
fn quantize_chunk_matches_ggml_quantize_chunk_bit_for_bit() {
    let m = manifest();
    let mut failures = Vec::new();
    let (mut plain, mut weighted, mut lattice) = (0usize, 0usize, 0usize);
    for set in m["chunk"].as_array().expect("chunk") {
        let npr = set["n_per_row"].as_u64().expect("n_per_row") as usize;
        let x = f32s(&read(set["input"]["file"].as_str().expect("input")));
        assert_eq!(x.len(), npr * set["rows"].as_u64().expect("rows") as usize);
        let mats: Vec<Vec<f32>> = set["imatrix"]
            .as_array()
            .expect("imatrix")
            .iter()
            .map(|e| f32s(&read(e["file"].as_str().expect("file"))))
            .collect();
        let name = set["set"].as_str().expect("set");
        for entry in set["types"].as_array().expect("types") {
            let ty = ty_of(entry);
            assert_eq!(entry["uses_imatrix"].as_bool(), Some(numerics::uses_imatrix(ty)), "{ty}");
            assert_eq!(entry["requires_imatrix"].as_bool(), Some(numerics::requires_imatrix(ty)), "{ty}");
            let mut out = Vec::new();
            let row_bytes = npr / ty.block_size() as usize * ty.type_size() as usize;
            let want = match entry.get("chunk") {
                Some(file) => {
                    let want = read(file["file"].as_str().expect("file"));
                    let xs = golden_rows(file, &x, npr);
                    numerics::quantize_chunk(ty, &xs, npr, None, &mut out).expect("quantize_chunk");
                    plain += compare_blocks(ty, &format!("{name} chunk"), row_bytes, &out, &want, &mut failures);
                    numerics::quantize(ty, &xs, &mut out).expect("quantize");
                    compare_blocks(ty, &format!("{name} quantize"), row_bytes, &out, &want, &mut failures);
                    Some(want)
                }
                None => {
                    // ggml asserts an importance matrix for these types.
                    let err = Err(NumericsError::ImatrixRequired { ty });
                    assert_eq!(numerics::quantize_chunk(ty, &x, npr, None, &mut out), err);
                    assert_eq!(numerics::quantize(ty, &x, &mut out), err);
                    None
                }
            };
            let files = entry.get("imatrix").and_then(Value::as_array);
            for (k, w) in mats.iter().enumerate() {
                // Types that ignore the weights must give the plain result.
                let (want_w, xs) = match files {
                    Some(f) => (read(f[k]["file"].as_str().expect("file")), golden_rows(&f[k], &x, npr)),
                    None => (want.clone().expect("plain golden"), x.clone()),
                };
                numerics::quantize_chunk(ty, &xs, npr, Some(w), &mut out).expect("quantize_chunk imatrix");
                let n = compare_blocks(ty, &format!("{name} imatrix{k}"), row_bytes, &out, &want_w, &mut failures);
                weighted += n;
                use GgmlType as T;
                if matches!(ty, T::IQ2_XXS | T::IQ2_XS | T::IQ2_S | T::IQ3_XXS | T::IQ3_S | T::IQ1_S | T::IQ1_M) {
                    lattice += n;
                }
            }
        }
    }
    assert!(plain > 5000 && weighted > 15000 && lattice > 2000, "compared {plain} / {weighted} / {lattice} blocks");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn check_row_data_agrees_with_ggml_validate_row_data() {
    let m = manifest();
    for entry in m["dequant"].as_array().expect("dequant") {
        let (ty, input, _) = dequant_case(entry);
        let ts = ty.type_size() as usize;
        let mut findings: Vec<DataFinding> = Vec::new();
        let summary = numerics::check_row_data(ty, &input, &mut |f| findings.push(f));
        assert_eq!(summary.findings as usize, findings.len(), "{ty}: summary count");
        assert_eq!(summary.blocks as usize, input.len() / ts, "{ty}: blocks");
        if let Some(flags) = entry.get("ggml_valid_blocks").and_then(Value::as_str) {
            for (b, flag) in flags.chars().enumerate() {
                let ours_ok =
                    !findings.iter().any(|f| f.block as usize == b || f.kind == FindingKind::TypeNotValidatable);
                assert_eq!(ours_ok, flag == '1', "{ty} block {b}: ggml says {flag}, findings {findings:?}");
            }
            for f in &findings {
                if f.kind != FindingKind::TypeNotValidatable {
                    let off = f.byte_offset as usize;
                    assert_eq!(off / ts, f.block as usize, "{ty}: offset inside the block");
                }
            }
        }
        if let Some(n_valid) = entry.get("ggml_valid_elements").and_then(Value::as_u64) {
            let n = input.len() / ts;
            assert_eq!((n - findings.len()) as u64, n_valid, "{ty}: valid elements");
            assert_eq!(summary.nan + summary.inf + summary.f32_overflow, findings.len() as u64, "{ty}: nan + inf");
        }
    }
}

#[test]
fn gguf_py_cross_check_is_recorded_and_agrees_where_expected() {
    // gguf-py is a second, independent implementation; the generator records
    // how far it agrees with ggml. Its decoders must agree on every finite
    // value; its Q4_0/Q5_0 quantizers are known to differ in rounding
    // (gguf-py's own FIXME about FMA), so only decoders are asserted here.
    let m = manifest();
    let mut checked = 0;
    for entry in m["dequant"].as_array().expect("dequant") {
        if let Some(s) = entry.get("gguf_py_dequant_agree").and_then(Value::as_str) {
            let fin = s.split('(').nth(1).expect("finite part");
            let (a, b) = fin.split_once('/').expect("a/b");
            let b = b.split_whitespace().next().expect("b");
            assert_eq!(a, b, "{}: gguf-py disagrees with ggml on finite values: {s}", entry["type"]);
            checked += 1;
        }
    }
    assert!(checked >= 25, "gguf-py covered {checked} types");
}
