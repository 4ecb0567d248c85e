//! rwkv.cpp checkpoints and the pre-GGUF ggml formats (GGML, GGMF, GGJT):
//! one test per rule (a file that breaks it and one at its boundary), the
//! data view, `dump`, report snapshots, the CLI verdicts, and the
//! generated corpus in `corpus/legacy/`.
#![allow(clippy::disallowed_macros, clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;

use gguf_validate_core::legacy::rwkv::RwkvArch;
use gguf_validate_core::legacy::write::{GgmlWriter, RwkvParamSpec, RwkvWriter, TinyRwkv};
use gguf_validate_core::legacy::{self};
use gguf_validate_core::numerics;
use gguf_validate_core::parse::LegacyFormat;
use gguf_validate_core::rules::{Level, Profile};
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::{Options, Report, Validator};

use gguf_validate_testkit as support;

use support::cli::run;
use support::root;
use support::tmp::TempDir;

// ---------------------------------------------------------------- helpers

fn report_in(bytes: &[u8], profile: Profile) -> Report {
    Validator::new(Options::new(profile)).validate_bytes(bytes).report
}

fn report(bytes: &[u8]) -> Report {
    report_in(bytes, Profile::Strict)
}

/// Rule ids reported at `level`.
fn at(r: &Report, level: Level) -> BTreeSet<&'static str> {
    r.diagnostics.iter().filter(|d| d.severity == level).map(|d| d.rule.id()).collect()
}

fn errors(r: &Report) -> BTreeSet<&'static str> {
    at(r, Level::Error)
}

fn warnings(r: &Report) -> BTreeSet<&'static str> {
    at(r, Level::Warning)
}

fn set(ids: &[&'static str]) -> BTreeSet<&'static str> {
    ids.iter().copied().collect()
}

/// Asserts the file is valid with no warnings under every profile.
fn assert_clean(bytes: &[u8]) {
    for p in Profile::ALL {
        let r = report_in(bytes, p);
        assert!(r.valid, "{p}: {:#?}", r.diagnostics);
        assert_eq!(warnings(&r), set(&[]), "{p}");
    }
}

/// A small rwkv.cpp model: 1 layer, n_embed 32, n_vocab 32, Q8_0 matrices.
fn mini(arch: RwkvArch) -> RwkvWriter {
    TinyRwkv { arch, version: 101, n_layer: 1, n_embed: 32, n_vocab: 32, matrix_type: 9 }.build()
}

fn mini_v4() -> RwkvWriter {
    mini(RwkvArch::V4)
}

fn tiny(format: LegacyFormat, version: u32, matrix_type: u32) -> GgmlWriter {
    GgmlWriter::tiny_llama(format, version, matrix_type)
}

fn ggjt3() -> GgmlWriter {
    tiny(LegacyFormat::Ggjt, 3, 2)
}

/// Errors of a legacy ggml file besides the ever-present `legacy-format`.
fn legacy_errors(r: &Report) -> BTreeSet<&'static str> {
    let mut e = errors(r);
    assert!(e.remove("legacy-format"), "legacy-format missing: {:#?}", r.diagnostics);
    e
}

fn message_of<'r>(r: &'r Report, rule: &str) -> &'r str {
    &r.diagnostics.iter().find(|d| d.rule == rule).unwrap_or_else(|| panic!("no {rule}: {:#?}", r.diagnostics)).message
}

// ---------------------------------------------------------------- rwkv.cpp: valid files

#[test]
fn tiny_rwkv_models_of_every_architecture_are_valid() {
    for arch in RwkvArch::ALL {
        for matrix_type in [0, 1, 8, 9] {
            let bytes = TinyRwkv { matrix_type, ..TinyRwkv::new(arch) }.build().to_bytes();
            assert_clean(&bytes);
            let r = report(&bytes);
            assert_eq!(r.format.name(), "rwkv-cpp");
            assert_eq!(r.version, Some(101));
            assert_eq!(r.summary.architecture.as_deref(), Some(arch.name()), "{arch:?}");
            assert!(
                message_of(&r, "rwkv-architecture")
                    .starts_with(&format!("RWKV {}", arch.name().trim_start_matches("rwkv-")))
            );
            assert!(message_of(&r, "legacy-type-table").contains("rwkv_type_to_ggml"));
        }
    }
}

#[test]
fn rwkv_summary_counts_parameters_and_data() {
    let w = TinyRwkv::new(RwkvArch::V4).build();
    let bytes = w.to_bytes();
    let r = report(&bytes);
    let s = &r.summary;
    assert_eq!(s.tensor_count, Some(u64::try_from(w.params.len()).unwrap()));
    assert_eq!(s.kv_count, Some(4));
    let data: usize = w.params.iter().map(|p| p.data.len()).sum();
    assert_eq!(s.data_size, Some(u64::try_from(data).unwrap()));
    // emb + head: 2 x 64 x 256; per layer 4 x 64^2 + 2 x 64 x 256 + 64^2 matrices.
    let matrices = 2 * 64 * 256 + 2 * (5 * 64 * 64 + 2 * 64 * 256);
    let vectors = 4 * 64 + 2 * 11 * 64;
    assert_eq!(s.parameters, Some(matrices + vectors));
    assert_eq!(s.tensor_types.get("f16"), Some(&(2 + 2 * 7)));
    assert_eq!(s.tensor_types.get("f32"), Some(&(4 + 2 * 11)));
}

#[test]
fn rwkv_v100_fp16_is_valid() {
    let w = TinyRwkv { version: 100, ..TinyRwkv::new(RwkvArch::V5_1) }.build();
    assert_clean(&w.to_bytes());
    assert!(
        message_of(&report(&w.to_bytes()), "legacy-type-table").contains("only FP32 and FP16 are read in version 100")
    );
}

#[test]
fn rwkv_architecture_detection_follows_rwkv_cpp() {
    // v5.1 and v5.2 differ only by the gate; v4 is the default.
    let mut w = mini(RwkvArch::V5_2);
    assert_eq!(report(&w.to_bytes()).summary.architecture.as_deref(), Some("rwkv-v5.2"));
    w.remove("blocks.0.att.gate.weight");
    let r = report(&w.to_bytes());
    assert_eq!(r.summary.architecture.as_deref(), Some("rwkv-v5.1"));
    // Read as v5.1, the v5.2 names are now the wrong ones.
    assert_eq!(errors(&r), set(&["rwkv-missing-parameter"]));
    assert_eq!(warnings(&r), set(&["rwkv-unused-parameter"]));
    // Without r_k a v7 file reads as v5.1 (it has att.ln_x.weight, no gate),
    // exactly as rwkv.cpp's detection goes.
    let mut w = mini(RwkvArch::V7);
    w.remove("blocks.0.att.r_k");
    let arch = report(&w.to_bytes()).summary.architecture;
    assert_eq!(arch.as_deref(), Some("rwkv-v5.1"));
    let mut w = mini(RwkvArch::V5_1);
    w.remove("blocks.0.att.ln_x.weight");
    let arch = report(&w.to_bytes()).summary.architecture;
    assert_eq!(arch.as_deref(), Some("rwkv-v4"));
}

// ---------------------------------------------------------------- rwkv.cpp: one test per rule

#[test]
fn rwkv_truncated() {
    let bytes = mini_v4().to_bytes();
    for cut in [1, 10, bytes.len() - 30] {
        let r = report(&bytes[..bytes.len() - cut]);
        assert!(!r.valid);
        assert_eq!(errors(&r), set(&["rwkv-truncated"]), "cut {cut}");
    }
    // Inside the header.
    let r = report(&bytes[..23]);
    assert_eq!(errors(&r), set(&["rwkv-truncated"]));
    assert_eq!(r.diagnostics[0].path, "header.data_type");
    // A key_length or dim_count larger than the file.
    let mut w = mini_v4();
    w.get_mut("ln_out.bias").unwrap().key_length = Some(u32::MAX);
    assert_eq!(errors(&report(&w.to_bytes())), set(&["rwkv-truncated"]));
    let mut w = mini_v4();
    w.get_mut("ln_out.bias").unwrap().dim_count = Some(0x4000_0000);
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-truncated"]));
    assert!(message_of(&r, "rwkv-truncated").contains("dim_count 1073741824"));
    // Element counts that overflow 64 bits cannot be in the file either.
    let mut w = mini_v4();
    w.get_mut("ln_out.bias").unwrap().dims = vec![u32::MAX, u32::MAX, u32::MAX];
    assert_eq!(errors(&report(&w.to_bytes())), set(&["rwkv-truncated"]));
    // Boundary: the whole file; and a header with no parameters is not truncated.
    assert_clean(&bytes);
    let r = report(&bytes[..24]);
    assert!(!errors(&r).contains("rwkv-truncated"));
    assert!(errors(&r).contains("rwkv-missing-parameter"));
}

#[test]
fn rwkv_version() {
    let mut w = mini_v4();
    w.version = 102;
    let r = report(&w.to_bytes());
    assert_eq!(r.format.name(), "rwkv-cpp");
    assert_eq!(r.version, Some(102));
    assert_eq!(errors(&r), set(&["rwkv-version"]));
    // Boundary: 100 (FP16 only) and 101 are rwkv.cpp; 1 is GGMF.
    w.version = 101;
    assert_clean(&w.to_bytes());
    let w = TinyRwkv { version: 100, n_embed: 32, n_vocab: 32, n_layer: 1, ..TinyRwkv::new(RwkvArch::V4) }.build();
    assert_clean(&w.to_bytes());
    let mut w = mini_v4();
    w.version = 1;
    assert_eq!(report(&w.to_bytes()).format.name(), "ggmf");
}

#[test]
fn rwkv_data_type() {
    // The header's type: removed (4-6) or unknown (>= 17); the parameters are still read.
    for bad in [4, 5, 6, 17, u32::MAX] {
        let mut w = mini_v4();
        w.data_type = bad;
        let r = report(&w.to_bytes());
        assert_eq!(errors(&r), set(&["rwkv-data-type"]), "{bad}");
        assert_eq!(r.summary.architecture.as_deref(), Some("rwkv-v4"));
    }
    // A parameter's type stops decoding: its size is unknown.
    let mut w = mini_v4();
    w.get_mut("blocks.0.ln1.weight").unwrap().data_type = 17;
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-data-type"]));
    assert!(message_of(&r, "rwkv-data-type").contains("rest of the file cannot be read"));
    assert_eq!(r.summary.architecture, None);
    // Boundary: the header type need not match the parameters (real files
    // keep vectors in FP32), and 16 (Q8_K) is the last id.
    for ok in [0, 1, 3, 7, 16] {
        let mut w = mini_v4();
        w.data_type = ok;
        assert_clean(&w.to_bytes());
    }
}

#[test]
fn rwkv_quantized_v100() {
    // Quantized header type and quantized parameters in a version 100 file.
    let mut w = mini_v4();
    w.version = 100;
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-quantized-v100"]));
    let n = r.diagnostics.iter().filter(|d| d.rule == "rwkv-quantized-v100").count();
    assert_eq!(n, 1 + 7, "header + 7 Q8_0 matrices");
    // A quantized parameter in an FP16 version 100 file.
    let mut w = TinyRwkv { version: 100, n_embed: 32, n_vocab: 32, n_layer: 1, ..TinyRwkv::new(RwkvArch::V4) }.build();
    assert_clean(&w.to_bytes());
    let key = w.get_mut("blocks.0.att.key.weight").unwrap();
    *key = RwkvParamSpec::zeroed("blocks.0.att.key.weight", 9, &[32, 32]);
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-quantized-v100"]));
    assert_eq!(
        r.diagnostics.iter().find(|d| d.rule == "rwkv-quantized-v100").unwrap().path,
        "param[10] blocks.0.att.key.weight/data_type"
    );
}

#[test]
fn rwkv_dim_count() {
    for dims in [vec![32, 1, 1, 1], vec![]] {
        let mut w = mini_v4();
        let p = w.get_mut("ln_out.weight").unwrap();
        let data = std::mem::take(&mut p.data);
        *p = RwkvParamSpec { dims: dims.clone(), ..RwkvParamSpec::zeroed("ln_out.weight", 0, &dims) };
        p.data = if dims.is_empty() { vec![0; 4] } else { data };
        let bytes = w.to_bytes();
        let r = report(&bytes);
        assert!(errors(&r).contains("rwkv-dim-count"), "{dims:?}");
        assert!(!report_in(&bytes, Profile::Ggml).valid);
        let spec = report_in(&bytes, Profile::Spec);
        assert!(warnings(&spec).contains("rwkv-dim-count"));
    }
    // 4 dims with trailing 1s: only the dim count is wrong.
    let mut w = mini_v4();
    w.get_mut("ln_out.weight").unwrap().dims = vec![32, 1, 1, 1];
    assert_eq!(errors(&report(&w.to_bytes())), set(&["rwkv-dim-count"]));
    // Boundary: 3 dims.
    w.get_mut("ln_out.weight").unwrap().dims = vec![32, 1, 1];
    assert_clean(&w.to_bytes());
}

#[test]
fn rwkv_row_block() {
    let mut w = mini_v4();
    w.get_mut("blocks.0.att.key.weight").unwrap().dims = vec![48, 16];
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-row-block"]));
    assert!(message_of(&r, "rwkv-row-block").contains("ne0 = 48"));
    // Boundary: a multiple of 32 with the same element count.
    w.get_mut("blocks.0.att.key.weight").unwrap().dims = vec![64, 16];
    assert_clean(&w.to_bytes());
}

#[test]
fn rwkv_key_utf8() {
    let mut w = mini_v4();
    w.params.push(RwkvParamSpec::zeroed("x", 0, &[4]));
    w.params.last_mut().unwrap().key = b"bad\xff".to_vec();
    let bytes = w.to_bytes();
    let r = report(&bytes);
    assert_eq!(errors(&r), set(&["rwkv-key-utf8"]));
    assert_eq!(warnings(&r), set(&["rwkv-unused-parameter"]));
    assert!(report_in(&bytes, Profile::Ggml).valid, "rwkv.cpp does not check keys");
    // Boundary: non-ASCII UTF-8 is fine.
    w.params.last_mut().unwrap().key = "blocks.0.é".as_bytes().to_vec();
    let r = report(&w.to_bytes());
    assert!(r.valid);
    assert_eq!(warnings(&r), set(&["rwkv-unused-parameter"]));
}

#[test]
fn rwkv_key_duplicate() {
    let mut w = mini_v4();
    let copy = w.params.iter().find(|p| p.key == b"ln_out.bias").unwrap().clone();
    w.params.push(copy);
    let bytes = w.to_bytes();
    let r = report(&bytes);
    assert_eq!(errors(&r), set(&["rwkv-key-duplicate"]));
    let g = report_in(&bytes, Profile::Ggml);
    assert!(g.valid);
    assert_eq!(warnings(&g), set(&["rwkv-key-duplicate"]));
    // Boundary: distinct keys.
    w.params.pop();
    assert_clean(&w.to_bytes());
}

#[test]
fn rwkv_header_value() {
    let mut w = mini_v4();
    w.n_vocab = 0;
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-header-value", "rwkv-shape", "rwkv-parameter-shape"]));
    let mut w = mini_v4();
    w.n_layer = 0;
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-header-value"]));
    assert_eq!(warnings(&r), set(&["rwkv-unused-parameter"]), "blocks.0 is unused with n_layer 0");
    // Boundary: one layer.
    assert_clean(&mini_v4().to_bytes());
}

#[test]
fn rwkv_missing_parameter() {
    for name in
        ["head.weight", "emb.weight", "blocks.0.ln0.bias", "blocks.0.att.time_first", "blocks.0.ffn.receptance.weight"]
    {
        let mut w = mini_v4();
        w.remove(name).unwrap();
        let r = report(&w.to_bytes());
        assert_eq!(errors(&r), set(&["rwkv-missing-parameter"]), "{name}");
        assert!(message_of(&r, "rwkv-missing-parameter").contains(name));
    }
    // n_layer above the layers present; a hostile n_layer costs nothing.
    let mut w = mini_v4();
    w.n_layer = 2;
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-missing-parameter"]));
    assert!(message_of(&r, "rwkv-missing-parameter").contains("blocks.1.ln1.weight"));
    w.n_layer = u32::MAX;
    let r = report(&w.to_bytes());
    assert!(r.diagnostics.iter().any(|d| { d.message.contains("no parameter names any layer from 2 to 4294967294") }));
    // v7 layer 0 has no v0/v1/v2; later layers do.
    let mut w = TinyRwkv { n_layer: 2, ..TinyRwkv::new(RwkvArch::V7) }.build();
    assert_clean(&w.to_bytes());
    w.remove("blocks.1.att.v2").unwrap();
    assert_eq!(errors(&report(&w.to_bytes())), set(&["rwkv-missing-parameter"]));
}

#[test]
fn rwkv_unused_parameter() {
    let mut w = mini_v4();
    w.params.push(RwkvParamSpec::zeroed("blocks.1.ln1.weight", 0, &[32]));
    let bytes = w.to_bytes();
    let r = report(&bytes);
    assert!(r.valid, "a warning");
    assert_eq!(warnings(&r), set(&["rwkv-unused-parameter"]));
    assert!(message_of(&r, "rwkv-unused-parameter").contains("n_layer 1"));
    assert_eq!(warnings(&report_in(&bytes, Profile::Ggml)), set(&[]));
    // Boundary: with n_layer 2 the same name is wanted (and its siblings missing).
    w.n_layer = 2;
    let r = report(&w.to_bytes());
    assert!(!warnings(&r).contains("rwkv-unused-parameter"));
}

fn swap_dims(w: &mut RwkvWriter, key: &str, dims: Vec<u32>) {
    w.get_mut(key).unwrap().dims = dims;
}

#[test]
fn rwkv_shape() {
    let mut w = TinyRwkv { n_vocab: 64, ..TinyRwkv::new(RwkvArch::V4) }.build();
    swap_dims(&mut w, "emb.weight", vec![64, 64]);
    assert_clean(&w.to_bytes());
    // Transposed embedding (same size): rwkv.cpp's "Unexpected dimension".
    let mut w = mini_v4();
    w.n_vocab = 64;
    for p in ["emb.weight", "head.weight"] {
        *w.get_mut(p).unwrap() = RwkvParamSpec::zeroed(p, 1, &[32, 64]);
    }
    assert_clean(&w.to_bytes());
    swap_dims(&mut w, "emb.weight", vec![64, 32]);
    let r = report(&w.to_bytes());
    assert_eq!(errors(&r), set(&["rwkv-shape"]));
    assert!(message_of(&r, "rwkv-shape").contains("[32, 64]"));
    // 1-D of the same size.
    swap_dims(&mut w, "emb.weight", vec![2048]);
    assert_eq!(errors(&report(&w.to_bytes())), set(&["rwkv-shape"]));
    // Boundary: a trailing 1 is not a dimension for ggml_n_dims.
    swap_dims(&mut w, "emb.weight", vec![32, 64, 1]);
    assert_clean(&w.to_bytes());
}

#[test]
fn rwkv_parameter_shape() {
    let mut w = mini_v4();
    swap_dims(&mut w, "blocks.0.ln1.weight", vec![16, 2]);
    let bytes = w.to_bytes();
    assert_eq!(errors(&report(&bytes)), set(&["rwkv-parameter-shape"]));
    let g = report_in(&bytes, Profile::Ggml);
    assert!(g.valid);
    assert_eq!(warnings(&g), set(&["rwkv-parameter-shape"]));
    let mut w = mini_v4();
    w.n_vocab = 64;
    *w.get_mut("emb.weight").unwrap() = RwkvParamSpec::zeroed("emb.weight", 1, &[32, 64]);
    *w.get_mut("head.weight").unwrap() = RwkvParamSpec::zeroed("head.weight", 1, &[64, 32]);
    assert_eq!(errors(&report(&w.to_bytes())), set(&["rwkv-parameter-shape"]));
    // Boundary: [32, 1] is a vector of 32.
    let mut w = mini_v4();
    swap_dims(&mut w, "blocks.0.ln1.weight", vec![32, 1]);
    assert_clean(&w.to_bytes());
}

#[test]
fn rwkv_architecture_is_info_only() {
    let r = report(&mini(RwkvArch::V6).to_bytes());
    let d = r.diagnostics.iter().find(|d| d.rule == "rwkv-architecture").unwrap();
    assert_eq!(d.severity, Level::Info);
    assert_eq!(d.message, "RWKV v6 (rwkv.cpp's detection: `blocks.0.att.time_maa_x` is present)");
}

#[test]
fn rwkv_prefix_asks_for_the_whole_file() {
    let bytes = mini_v4().to_bytes();
    let len = u64::try_from(bytes.len()).unwrap();
    let validator = Validator::new(Options::new(Profile::Strict));
    assert_eq!(validator.validate_prefix(&bytes[..100], len).err(), Some(gguf_validate_core::NeedMoreData(len)));
    assert!(validator.validate_prefix(&bytes, len).unwrap().report.valid);
}

// ---------------------------------------------------------------- GGML, GGMF, GGJT

#[test]
fn legacy_files_are_rejected_as_legacy_with_their_table() {
    let cases = [
        (LegacyFormat::Ggml, 0, 1, "ggml", "ggml-2023-04"),
        (LegacyFormat::Ggmf, 1, 0, "ggmf", "ggml-2023-04"),
        (LegacyFormat::Ggjt, 1, 1, "ggjt", "ggml-2023-04"),
        (LegacyFormat::Ggjt, 2, 7, "ggjt", "ggml-2023-05"),
        (LegacyFormat::Ggjt, 3, 2, "ggjt", "ggml-2023-06"),
        (LegacyFormat::Ggjt, 3, 12, "ggjt", "ggml-2023-06"),
    ];
    for (format, version, ty, name, table) in cases {
        let bytes = tiny(format, version, ty).to_bytes();
        for p in Profile::ALL {
            let r = report_in(&bytes, p);
            assert!(!r.valid);
            assert_eq!(legacy_errors(&r), set(&[]), "{name} v{version} {p}: {:#?}", r.diagnostics);
            assert_eq!(warnings(&r), set(&[]));
        }
        let r = report(&bytes);
        assert_eq!(r.format.name(), name);
        assert_eq!(r.summary.tensor_count, Some(12));
        assert_eq!(r.summary.kv_count, Some(7));
        assert_eq!(r.summary.architecture.as_deref(), Some("llama"));
        assert!(message_of(&r, "legacy-format").contains("convert it to GGUF"));
        assert!(message_of(&r, "legacy-type-table").contains(table), "{}", message_of(&r, "legacy-type-table"));
    }
}

#[test]
fn legacy_version() {
    for (format, version) in
        [(LegacyFormat::Ggjt, 4), (LegacyFormat::Ggjt, 0), (LegacyFormat::Ggmf, 2), (LegacyFormat::Ggmf, 99)]
    {
        let mut w = tiny(format, 3, 0);
        w.version = version;
        let r = report(&w.to_bytes());
        assert_eq!(legacy_errors(&r), set(&["legacy-version"]), "{format:?} {version}");
        assert_eq!(r.format.name(), format.name());
    }
    // Boundary: GGJT 1..=3 and GGMF 1 have a layout (GGMF 1 checked above).
    for v in 1..=3 {
        assert_eq!(legacy_errors(&report(&tiny(LegacyFormat::Ggjt, v, 0).to_bytes())), set(&[]));
    }
}

#[test]
fn legacy_truncated() {
    let bytes = ggjt3().to_bytes();
    for cut in [1, 100, bytes.len() - 40, bytes.len() - 6] {
        let r = report(&bytes[..bytes.len() - cut]);
        assert_eq!(legacy_errors(&r), set(&["legacy-truncated"]), "cut {cut}");
    }
    let mut w = ggjt3();
    w.hparams[0] = u32::MAX;
    let r = report(&w.to_bytes());
    assert_eq!(legacy_errors(&r), set(&["legacy-truncated"]));
    assert!(message_of(&r, "legacy-truncated").starts_with("n_vocab 4294967295 entries"));
    let mut w = ggjt3();
    w.tensors[3].name_len = Some(1 << 30);
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&["legacy-truncated"]));
    // Boundary: the whole file.
    assert_eq!(legacy_errors(&report(&bytes)), set(&[]));
}

#[test]
fn legacy_ftype() {
    for bad in [5, 6, 19, 1000] {
        let mut w = ggjt3();
        w.hparams[6] = bad;
        assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&["legacy-ftype"]), "{bad}");
    }
    for ok in [0, 4, 7, 18] {
        let mut w = ggjt3();
        w.hparams[6] = ok;
        assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&[]), "{ok}");
    }
}

#[test]
fn legacy_vocab_length() {
    let mut w = ggjt3();
    w.vocab[3].0 = vec![b'x'; 4096];
    let r = report(&w.to_bytes());
    assert_eq!(legacy_errors(&r), set(&["legacy-vocab-length"]));
    assert_eq!(r.diagnostics.iter().find(|d| d.rule == "legacy-vocab-length").unwrap().path, "vocab[3]");
    w.vocab[3].0 = vec![b'x'; 4095];
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&[]));
}

#[test]
fn legacy_name_length() {
    let mut w = ggjt3();
    w.tensors[1].name = vec![b'n'; 4096];
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&["legacy-name-length"]));
    w.tensors[1].name = vec![b'n'; 4095];
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&[]));
}

#[test]
fn legacy_name_duplicate() {
    let mut w = ggjt3();
    w.tensors[8].name = w.tensors[3].name.clone();
    let r = report(&w.to_bytes());
    assert_eq!(legacy_errors(&r), set(&["legacy-name-duplicate"]));
    assert!(message_of(&r, "legacy-name-duplicate").contains("tensor[3]"));
    assert_eq!(legacy_errors(&report(&ggjt3().to_bytes())), set(&[]));
}

#[test]
fn legacy_n_dims() {
    let mut w = ggjt3();
    w.tensors[1].dims = vec![32, 1, 1, 1, 1];
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&["legacy-n-dims"]));
    w.tensors[1].dims = vec![32, 1, 1, 1];
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&[]));
}

#[test]
fn legacy_tensor_type() {
    // Ids outside the era's table stop decoding.
    for (version, id) in [(3, 19), (3, 4), (2, 13), (1, 13), (3, 24)] {
        let mut w = tiny(LegacyFormat::Ggjt, version, 0);
        w.tensors[2].type_id = id;
        let r = report(&w.to_bytes());
        assert_eq!(legacy_errors(&r), set(&["legacy-tensor-type"]), "v{version} id {id}");
        assert_eq!(r.summary.tensor_count, Some(2));
    }
    // Boundary: GGJT v2's id 10 is i8, GGJT v3's is q2_K.
    let w = tiny(LegacyFormat::Ggjt, 2, 10);
    let r = report(&w.to_bytes());
    assert_eq!(legacy_errors(&r), set(&[]));
    assert_eq!(r.summary.tensor_types.get("i8"), Some(&9));
    let r = report(&tiny(LegacyFormat::Ggjt, 3, 10).to_bytes());
    assert_eq!(r.summary.tensor_types.get("q2_K"), Some(&9));
}

#[test]
fn legacy_row_block() {
    let mut w = ggjt3();
    w.tensors[4].dims = vec![48, 16];
    let r = report(&w.to_bytes());
    assert_eq!(legacy_errors(&r), set(&["legacy-row-block"]));
    w.tensors[4].dims = vec![64, 16];
    assert_eq!(legacy_errors(&report(&w.to_bytes())), set(&[]));
}

#[test]
fn legacy_quant_layout() {
    // Quantized before GGJT v2, and Q4/Q8 in GGJT v2: the converter refuses.
    for (format, version, ty) in [
        (LegacyFormat::Ggjt, 1, 2),
        (LegacyFormat::Ggmf, 1, 3),
        (LegacyFormat::Ggml, 0, 6),
        (LegacyFormat::Ggjt, 2, 2),
        (LegacyFormat::Ggjt, 2, 8),
    ] {
        let r = report(&tiny(format, version, ty).to_bytes());
        assert_eq!(legacy_errors(&r), set(&["legacy-quant-layout"]), "{format:?} v{version} type {ty}");
        assert!(message_of(&r, "legacy-quant-layout").starts_with("9 tensor(s)"));
    }
    // Q8_1 keeps its f32 scales in GGJT v3.
    assert_eq!(legacy_errors(&report(&tiny(LegacyFormat::Ggjt, 3, 9).to_bytes())), set(&["legacy-quant-layout"]));
    // Boundary: GGJT v2 Q5_x, GGJT v3 Q4_0, unquantized GGML.
    for (format, version, ty) in
        [(LegacyFormat::Ggjt, 2, 6), (LegacyFormat::Ggjt, 2, 7), (LegacyFormat::Ggjt, 3, 2), (LegacyFormat::Ggml, 0, 1)]
    {
        assert_eq!(
            legacy_errors(&report(&tiny(format, version, ty).to_bytes())),
            set(&[]),
            "{format:?} v{version} type {ty}"
        );
    }
}

#[test]
fn legacy_padding_nonzero() {
    let mut w = ggjt3();
    w.pad_byte = 0xAA;
    let bytes = w.to_bytes();
    let r = report(&bytes);
    assert_eq!(legacy_errors(&r), set(&[]));
    assert_eq!(warnings(&r), set(&["legacy-padding-nonzero"]));
    assert!(at(&report_in(&bytes, Profile::Spec), Level::Info).contains("legacy-padding-nonzero"));
    assert_eq!(warnings(&report(&ggjt3().to_bytes())), set(&[]));
    // GGMF has no padding: the pad byte is never written.
    let mut w = tiny(LegacyFormat::Ggmf, 1, 1);
    w.pad_byte = 0xAA;
    assert_eq!(warnings(&report(&w.to_bytes())), set(&[]));
}

#[test]
fn ggjt_data_is_32_byte_aligned() {
    let bytes = ggjt3().to_bytes();
    let tensors = legacy::data_tensors(&bytes);
    assert_eq!(tensors.len(), 12);
    assert!(tensors.iter().all(|t| t.offset % 32 == 0));
    // GGMF is unaligned: some tensor starts off a 32-byte boundary.
    let tensors = legacy::data_tensors(&tiny(LegacyFormat::Ggmf, 1, 1).to_bytes());
    assert!(tensors.iter().any(|t| t.offset % 32 != 0));
}

#[test]
fn other_legacy_magics_only_get_legacy_format() {
    for (magic, name) in [(b"algg", "ggla"), (b"nsgg", "ggsn"), (b"qsgg", "ggsq")] {
        let mut bytes = magic.to_vec();
        bytes.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        let r = report(&bytes);
        assert_eq!(r.format.name(), name);
        assert_eq!(errors(&r), set(&["legacy-format"]));
    }
}

// ---------------------------------------------------------------- data view and dump

#[test]
fn rwkv_data_tensors_dequantize() {
    let w = mini(RwkvArch::V5_2);
    let bytes = w.to_bytes();
    let tensors = legacy::data_tensors(&bytes);
    assert_eq!(tensors.len(), w.params.len());
    let mut q8 = 0;
    for (t, p) in tensors.iter().zip(&w.params) {
        assert_eq!(t.name.as_bytes(), p.key.as_slice());
        let start = usize::try_from(t.offset).unwrap();
        let data = &bytes[start..start + usize::try_from(t.nbytes).unwrap()];
        assert_eq!(data, p.data.as_slice());
        let values = numerics::dequantize_to_vec(t.ty, data).unwrap();
        assert_eq!(values.len() as u64, t.dims.iter().product::<u64>());
        if t.ty == GgmlType::F32 {
            assert_eq!(values[0].to_le_bytes(), data[..4]);
        }
        if t.ty == GgmlType::Q8_0 {
            q8 += 1;
            assert!(values.iter().all(|v| v.abs() <= 0.51), "{}", t.name);
        }
    }
    assert_eq!(q8, 8, "att k/v/r/o/gate + ffn k/v/r");
}

#[test]
fn data_tensors_leave_out_old_block_layouts() {
    // rwkv.cpp version 100: the Q8_0 matrices are not current Q8_0.
    let mut w = mini_v4();
    w.version = 100;
    let tensors = legacy::data_tensors(&w.to_bytes());
    assert_eq!(tensors.len(), w.params.len() - 7);
    assert!(tensors.iter().all(|t| !t.ty.is_quantized()));
    // GGJT v2: Q5_1 has today's layout, Q4_0 does not.
    assert_eq!(legacy::data_tensors(&tiny(LegacyFormat::Ggjt, 2, 7).to_bytes()).len(), 12);
    let t = legacy::data_tensors(&tiny(LegacyFormat::Ggjt, 2, 2).to_bytes());
    assert_eq!(t.len(), 3);
    assert!(t.iter().all(|t| t.ty == GgmlType::F32));
    // GGJT v1 / GGML: only the unquantized tensors.
    assert_eq!(legacy::data_tensors(&tiny(LegacyFormat::Ggjt, 1, 6).to_bytes()).len(), 3);
    assert_eq!(legacy::data_tensors(&tiny(LegacyFormat::Ggml, 0, 1).to_bytes()).len(), 12);
    // GGJT v3: q4_K maps to Q4_K and dequantizes.
    let bytes = tiny(LegacyFormat::Ggjt, 3, 12).to_bytes();
    let t = legacy::data_tensors(&bytes);
    let k = t.iter().find(|t| t.ty == GgmlType::Q4_K).unwrap();
    let start = usize::try_from(k.offset).unwrap();
    assert!(numerics::dequantize_to_vec(k.ty, &bytes[start..start + usize::try_from(k.nbytes).unwrap()]).is_ok());
    // Not a legacy file.
    assert!(legacy::data_tensors(b"GGUF\x03\0\0\0").is_empty());
}

#[test]
fn dump_describes_rwkv_files() {
    let w = mini(RwkvArch::V5_2);
    let bytes = w.to_bytes();
    let d = legacy::dump(&bytes).unwrap();
    assert_eq!(d["format"], "rwkv-cpp");
    assert_eq!(d["version"], 101);
    assert_eq!(d["architecture"], "rwkv-v5.2");
    assert_eq!(d["hparams"]["n_embed"], 32);
    assert_eq!(d["hparams"]["data_type_name"], "Q8_0");
    assert_eq!(d["complete"], true);
    let tensors = d["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), w.params.len());
    assert_eq!(tensors[0]["name"], "emb.weight");
    assert_eq!(tensors[0]["dims"], serde_json::json!([32, 32]));
    assert_eq!(tensors[0]["offset"], 24);
    let key = tensors.iter().find(|t| t["name"] == "blocks.0.att.key.weight").unwrap();
    assert_eq!(key["type"], "q8_0");
    assert_eq!(key["data_type"], 9);
    assert_eq!(key["bytes"], 32 * 34);
    let cut = legacy::dump(&bytes[..bytes.len() - 1]).unwrap();
    assert_eq!(cut["complete"], false);
    assert_eq!(cut["error"]["rule"], "rwkv-truncated");
    assert_eq!(cut["tensors"].as_array().unwrap().len(), w.params.len() - 1);
}

#[test]
fn dump_describes_ggml_files() {
    let d = legacy::dump(&ggjt3().to_bytes()).unwrap();
    assert_eq!(d["format"], "ggjt");
    assert_eq!(d["version"], 3);
    assert_eq!(d["type_table"], "ggml-2023-06");
    assert_eq!(d["hparams"]["n_vocab"], 8);
    assert_eq!(d["hparams"]["ftype_name"], "MOSTLY_Q4_0");
    assert_eq!(d["vocab"]["read"], 8);
    assert_eq!(d["vocab"]["scores"], true);
    assert_eq!(d["vocab"]["preview"][1], serde_json::json!({ "text": "<s>", "score": -1.0 }));
    assert_eq!(d["tensors"][4]["type"], "q4_0");
    assert_eq!(d["tensors"][4]["current_type"], "q4_0");
    let d = legacy::dump(&tiny(LegacyFormat::Ggml, 0, 0).to_bytes()).unwrap();
    assert_eq!(d["version"], serde_json::Value::Null);
    assert_eq!(d["vocab"]["scores"], false);
    assert_eq!(d["vocab"]["preview"][0], serde_json::json!({ "text": "<unk>" }));
    assert!(legacy::dump(b"GGUF\x03\0\0\0").is_none());
    assert!(legacy::dump(b"xy").is_none());
}

// ---------------------------------------------------------------- hostile input

#[test]
fn hostile_inputs_do_not_panic() {
    // Every prefix of a valid file, and every single-byte corruption of
    // the headers, decodes without panicking.
    let rwkv = mini_v4().to_bytes();
    let ggjt = ggjt3().to_bytes();
    for bytes in [&rwkv, &ggjt] {
        for n in (0..bytes.len()).step_by(7) {
            let _ = report(&bytes[..n]);
            let _ = legacy::dump(&bytes[..n]);
            let _ = legacy::data_tensors(&bytes[..n]);
        }
        for i in 0..400.min(bytes.len()) {
            for v in [0x00, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                let _ = report(&b);
                let _ = legacy::dump(&b);
            }
        }
    }
}

// ---------------------------------------------------------------- snapshots

#[test]
fn report_snapshots() {
    insta::assert_json_snapshot!("rwkv_v5_2_q8_0", report(&mini(RwkvArch::V5_2).to_bytes()));
    let mut w = mini_v4();
    w.remove("head.weight");
    w.version = 100;
    insta::assert_json_snapshot!("rwkv_v100_quantized_missing_head", report(&w.to_bytes()));
    insta::assert_json_snapshot!("ggjt_v3_q4_0", report(&ggjt3().to_bytes()));
    insta::assert_json_snapshot!("ggjt_v1_q4_0_truncated", {
        let b = tiny(LegacyFormat::Ggjt, 1, 2).to_bytes();
        report(&b[..b.len() - 3])
    });
}

// ---------------------------------------------------------------- CLI

#[test]
fn cli_exit_codes_and_format_names() {
    let dir = TempDir::new("legacy-cli");
    let rwkv = dir.join("tiny-rwkv.bin");
    std::fs::write(&rwkv, mini(RwkvArch::V5_2).to_bytes()).unwrap();
    let out = run(&[rwkv.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("valid"), "{stdout}");
    assert!(stdout.contains("rwkv.cpp v101"), "{stdout}");
    assert!(stdout.contains("rwkv-v5.2"), "{stdout}");

    let ggjt = dir.join("tiny-ggjt.bin");
    std::fs::write(&ggjt, ggjt3().to_bytes()).unwrap();
    let out = run(&[ggjt.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("this is a GGJT v3 model file, not GGUF"), "{stdout}");

    let out = run(&["--format", "json", ggjt.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["files"][0]["format"], "ggjt");
    assert_eq!(doc["files"][0]["valid"], false);
}

// ---------------------------------------------------------------- corpus/legacy

/// The corpus cases: name (with its y_/n_/i_ prefix) and bytes.
fn corpus_cases() -> Vec<(&'static str, Vec<u8>)> {
    let v4 = mini_v4();
    let mut cases =
        vec![("y_rwkv_v4_q8_0.bin", v4.to_bytes()), ("y_rwkv_v5_2_q8_0.bin", mini(RwkvArch::V5_2).to_bytes())];
    let b = v4.to_bytes();
    // An interrupted download: the file stops inside a parameter's data.
    cases.push(("n_rwkv_truncated.bin", b[..b.len() / 2].to_vec()));
    let mut w = v4.clone();
    w.version = 100;
    cases.push(("n_rwkv_quantized_v100.bin", w.to_bytes()));
    let mut w = v4.clone();
    w.remove("head.weight");
    cases.push(("n_rwkv_missing_parameter.bin", w.to_bytes()));
    let mut w = v4.clone();
    w.params.truncate(2);
    w.params[1].data_type = 5;
    cases.push(("n_rwkv_data_type.bin", w.to_bytes()));
    let mut w = v4.clone();
    let copy = w.params.iter().find(|p| p.key == b"ln_out.bias").unwrap().clone();
    w.params.push(copy);
    cases.push(("i_rwkv_key_duplicate.bin", w.to_bytes()));
    cases.push(("n_ggml_q4_0.bin", tiny(LegacyFormat::Ggml, 0, 2).to_bytes()));
    cases.push(("n_ggmf_v1_q4_1.bin", tiny(LegacyFormat::Ggmf, 1, 3).to_bytes()));
    cases.push(("n_ggjt_v1_q4_0.bin", tiny(LegacyFormat::Ggjt, 1, 2).to_bytes()));
    cases.push(("n_ggjt_v2_q5_1.bin", tiny(LegacyFormat::Ggjt, 2, 7).to_bytes()));
    cases.push(("n_ggjt_v3_q4_0.bin", ggjt3().to_bytes()));
    let b = ggjt3().to_bytes();
    cases.push(("n_ggjt_v3_truncated.bin", b[..b.len() - 3].to_vec()));
    cases
}

fn verdict(r: &Report) -> &'static str {
    if r.valid { "accept" } else { "reject" }
}

fn expectation(bytes: &[u8]) -> serde_json::Value {
    let strict = report(bytes);
    let rules: BTreeSet<&str> =
        strict.diagnostics.iter().filter(|d| d.severity != Level::Info).map(|d| d.rule.id()).collect();
    serde_json::json!({
        "format": strict.format,
        "verdict": {
            "strict": verdict(&strict),
            "spec": verdict(&report_in(bytes, Profile::Spec)),
            "ggml": verdict(&report_in(bytes, Profile::Ggml)),
        },
        "rules": rules,
    })
}

/// `corpus/legacy/` is what [`corpus_cases`] generates; `BLESS=1`
/// rewrites it. Each file's report matches the expectation next to it and
/// its y_/n_/i_ prefix.
#[test]
fn corpus_legacy_is_generated_and_expected() {
    let dir = root().join("corpus/legacy");
    let bless = std::env::var_os("BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut total = 0;
    for (name, bytes) in corpus_cases() {
        let expect = expectation(&bytes);
        let json_path = dir.join(name.replace(".bin", ".json"));
        if bless {
            std::fs::write(dir.join(name), &bytes).unwrap();
            std::fs::write(&json_path, serde_json::to_string_pretty(&expect).unwrap() + "\n").unwrap();
        }
        let on_disk = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e} (run with BLESS=1)"));
        assert!(on_disk == bytes, "{name} is stale: run BLESS=1 cargo test -p gguf-validate --test legacy");
        let committed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        assert_eq!(committed, expect, "{name}");
        let v = &expect["verdict"];
        match &name[..2] {
            "y_" => assert!(["strict", "spec", "ggml"].iter().all(|p| v[*p] == "accept"), "{name}: {v}"),
            "n_" => assert!(["strict", "spec", "ggml"].iter().all(|p| v[*p] == "reject"), "{name}: {v}"),
            _ => assert!(v["strict"] != v["ggml"], "{name}: an i_ case is one the profiles disagree on"),
        }
        total += bytes.len();
    }
    assert!(total < 200 * 1024, "corpus/legacy is {total} bytes");
}
