//! The per-architecture table against llama.cpp itself: `corpus/models/`
//! holds tiny models of the most used architectures, complete and with one
//! defect each, and `manifest.json` records whether llama.cpp's loader
//! (libllama of llama-cpp-python 0.3.36, through ctypes:
//! conformance/tools/llama-load/) loads, refuses or crashes on each.
//!
//! A model it loads must be valid under `strict`, one it refuses or crashes
//! on must be invalid, except the deliberate differences listed here with
//! their reason (a stale entry fails the test too).
use std::path::Path;

use gguf_validate_core::rules::Profile;
use gguf_validate_core::{Options, Validator};

/// Files where strict deliberately disagrees with a full load.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "llama__head_count_kv_3_consistent.gguf",
        "libllama loads it (the manifest records the load), then aborts creating a context: GGML_ASSERT(ggml_can_mul_mat(a, b)) in the attention graph, 4 heads over 3 key/value heads (model-head-groups; corpus/gguf/i_model_head_groups_kv_3 is the same class)",
    ),
    ("llama__vocab_only.gguf", "vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)"),
    ("qwen3__vocab_only.gguf", "vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)"),
    ("gemma3__vocab_only.gguf", "vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)"),
    ("qwen3moe__vocab_only.gguf", "vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)"),
    (
        "llama__vocab_only_with_hparams.gguf",
        "vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)",
    ),
    (
        "llama__unknown_architecture.gguf",
        "an architecture llama.cpp does not know gets an info, never an error: other programs use GGUF too",
    ),
    (
        "llama__tokenizer_token_type_99.gguf",
        "llama.cpp loads it, but its tokenizer dispatches on the type: strict requires llama.cpp's enum",
    ),
    (
        "deepseek2__q_lora_26_layers.gguf",
        "a lite deepseek2 (block_count 26) never reads q_lora_rank, so llama.cpp then requires attn_q instead of attn_q_a/attn_q_b: a tensor requirement decided by a value the loader does not read; strict checks the keys' conditions, not this one",
    ),
    (
        "llama__tokenizer_bos_out_of_range.gguf",
        "current llama.cpp drops the id with a warning, older versions read past the vocabulary: strict rejects it",
    ),
];

/// What strict's verdicts on the models of one `manifest.json` say
/// against libllama's full load (`loads` is `yes` when it loads).
struct Judged {
    models: usize,
    loads: usize,
    /// Disagreements not in the exceptions, and what `extra` found.
    wrong: Vec<String>,
    /// Exceptions that agree now.
    stale: Vec<String>,
}

/// Judges every model listed in `dir/manifest.json` under strict; `extra`
/// adds its own findings on each (manifest entry, file name, report).
fn judge(
    dir: &Path,
    exceptions: &[(&str, &str)],
    extra: impl Fn(&serde_json::Value, &str, &gguf_validate_core::Report, &mut Vec<String>),
) -> Judged {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest")).expect("json");
    let models = manifest["models"].as_array().expect("models");
    let mut judged = Judged { models: models.len(), loads: 0, wrong: Vec::new(), stale: Vec::new() };
    for m in models {
        let file = m["file"].as_str().expect("file");
        let verdict = m["loads"].as_str().expect("loads");
        let report = Validator::new(Options::new(Profile::Strict))
            .validate_bytes(&std::fs::read(dir.join(file)).expect("read"))
            .report;
        let llama_ok = verdict == "yes";
        judged.loads += usize::from(llama_ok);
        let agrees = report.valid == llama_ok;
        let excepted = exceptions.iter().any(|(f, _)| *f == file);
        if !agrees && !excepted {
            let findings: Vec<String> =
                report.diagnostics.iter().map(|d| format!("{} {}", d.rule.id(), d.message)).collect();
            judged.wrong.push(format!(
                "{file}: llama.cpp {verdict}, strict valid={} {findings:?} ({})",
                report.valid, m["detail"]
            ));
        }
        if agrees && excepted {
            judged.stale.push(file.to_string());
        }
        extra(m, file, &report, &mut judged.wrong);
    }
    judged
}

#[test]
fn strict_agrees_with_llama_cpp_on_every_tiny_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models");
    let j = judge(&dir, EXCEPTIONS, |_, _, _, _| {});
    assert!(j.models >= 150, "the manifest lists {} models", j.models);
    assert!(j.wrong.is_empty(), "{} disagreements:\n{}", j.wrong.len(), j.wrong.join("\n"));
    assert!(j.stale.is_empty(), "exceptions that no longer differ: {:?}", j.stale);
    assert!(j.loads >= 9, "the complete models load");
}

/// `general.tensor_extra.*` on the tiny llama (libllama's verdict in the
/// manifest, held by `strict_agrees_with_llama_cpp_on_every_tiny_model`):
/// each file breaks exactly its rule, and the well-formed one (its
/// boundary) has no finding.
#[test]
fn tensor_extra_files_break_exactly_their_rule() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models");
    for (file, want) in [
        ("llama__tensor_extra_prec.gguf", None),
        ("llama__tensor_extra_no_prec.gguf", Some("model-tensor-extra")),
        ("llama__tensor_extra_prec_short.gguf", Some("model-tensor-extra")),
        ("llama__tensor_extra_prec_u8.gguf", Some("model-tensor-extra")),
        ("llama__tensor_extra_unknown_name.gguf", Some("model-tensor-extra-unknown")),
    ] {
        let report = Validator::new(Options::new(Profile::Strict))
            .validate_bytes(&std::fs::read(dir.join(file)).expect("read"))
            .report;
        let rules: Vec<&str> = report.diagnostics.iter().map(|d| d.rule.id()).collect();
        assert_eq!(rules, want.into_iter().collect::<Vec<_>>(), "{file}");
    }
}

#[test]
fn every_complete_model_has_no_finding_at_all() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if !name.ends_with("__complete.gguf") {
            continue;
        }
        n += 1;
        let report =
            Validator::new(Options::new(Profile::Strict)).validate_bytes(&std::fs::read(&path).expect("read")).report;
        let found: Vec<String> = report.diagnostics.iter().map(|d| format!("{} {}", d.rule.id(), d.message)).collect();
        assert!(found.is_empty(), "{name}: {found:?}");
    }
    assert!(n >= 8, "{n} complete models");
}

/// Where libllama's `load_hparams` stops, strict's `model-key-missing` says
/// so: every file the loader refuses with "error loading model
/// hyperparameters: key not found in model: K" has a
/// `model-key-missing` error naming K, and every file it refuses only later
/// (a tensor: `check_tensor_dims`, past the hyperparameters) or loads has
/// none. The vocabulary-only files (no tensors) are left out: strict checks
/// no required key there. The `*_embd_only` probes of dflash, qwen4exp and
/// wavtokenizer-dec and their `*_missing_*` variants (keys required under a
/// condition: a key's value, an array's length, a key's presence and value,
/// the architecture) have `token_embd.weight` as their one tensor, so
/// libllama refuses them either way; this is what tells their
/// hyperparameters apart.
#[test]
fn model_key_missing_is_where_load_hparams_stops() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest")).expect("json");
    let mut wrong = Vec::new();
    let (mut missing, mut past) = (0, 0);
    for m in manifest["models"].as_array().expect("models") {
        let file = m["file"].as_str().expect("file");
        let detail = m["detail"].as_str().unwrap_or_default();
        let report = Validator::new(Options::new(Profile::Strict))
            .validate_bytes(&std::fs::read(dir.join(file)).expect("read"))
            .report;
        let key_missing: Vec<&str> = report
            .diagnostics
            .iter()
            .filter(|d| d.rule.id() == "model-key-missing")
            .map(|d| d.message.as_str())
            .collect();
        if file.ends_with("__vocab_only.gguf") {
            // no tensors: a vocabulary-only file, where strict checks no required key (EXCEPTIONS)
            continue;
        }
        if let Some((_, key)) = detail
            .split_once("error loading model hyperparameters: key not found in model: ")
            .or_else(|| detail.split_once("error loading model hyperparameters: array key not found in model: "))
        {
            missing += 1;
            if !key_missing.iter().any(|msg| msg.contains(key.trim())) {
                wrong.push(format!("{file}: libllama needs {key}, strict model-key-missing {key_missing:?}"));
            }
        } else if m["loads"] == "yes" || detail.contains("check_tensor_dims") {
            past += 1;
            if !key_missing.is_empty() {
                wrong.push(format!("{file}: libllama gets past load_hparams, strict {key_missing:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(missing >= 30 && past >= 60, "{missing} refused for a key, {past} past load_hparams");
}

/// Converter outputs where strict deliberately disagrees with a full load.
const CONVERTER_EXCEPTIONS: &[(&str, &str)] = &[
    (
        "llama_vocab_only.gguf",
        "convert_hf_to_gguf.py --vocab-only: vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)",
    ),
    (
        "qwen2_vocab_only.gguf",
        "convert_hf_to_gguf.py --vocab-only: vocabulary-only files are legitimate (llama.cpp loads them with vocab_only)",
    ),
];

/// `corpus/models/converter/`: llama.cpp's own `convert_hf_to_gguf.py` run
/// on tiny random Hugging Face checkpoints of 56 architectures (decoders,
/// MoE, SSM and hybrid models, BERT and T5 encoders; F32, F16, BF16, Q8_0,
/// vocabulary-only) and libllama's own quantizer on a selection (Q2_K to
/// Q8_0, IQ4_XS, TQ2_0, MXFP4_MOE), each loaded, given a context and a
/// first prompt by libllama (`manifest.json`,
/// conformance/tools/llama-load/make_converter_models.py); and
/// `corpus/models/converter-TAG/`: the same checkpoints converted by an
/// older release TAG's own converter with its own gguf-py, loaded the same
/// way by today's llama.cpp (v0.5.0's prebuilt libraries;
/// conformance/tools/llama-releases/old_converters.py). Strict accepts
/// exactly what libllama loads and runs: a crash at a context or at the
/// first evaluation is an error too. A file libllama runs has no error and
/// no warning but the spec's naming rules for llama.cpp's own hyphenated
/// architecture names (`gpt-oss.*`), and no info but `model-not-checked`
/// for a table marked incomplete; every vocabulary of a file libllama runs
/// loads with `vocab_only`.
#[test]
fn strict_agrees_with_llama_cpp_on_every_converter_output() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models");
    let mut folders: Vec<String> = std::fs::read_dir(&models)
        .expect("corpus/models")
        .filter_map(|e| e.ok().filter(|e| e.path().join("manifest.json").is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name == "converter" || name.starts_with("converter-"))
        .collect();
    folders.sort();
    let mut wrong = Vec::new();
    for folder in &folders {
        let j = judge(&models.join(folder), CONVERTER_EXCEPTIONS, |m, file, report, wrong| {
            let arch_name = report
                .summary
                .architecture
                .as_deref()
                .is_some_and(|a| !a.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
            let findings: Vec<String> = report
                .diagnostics
                .iter()
                .filter(|d| match d.rule.id() {
                    "architecture-charset" | "key-naming" => !arch_name,
                    "model-not-checked" => false,
                    _ => true,
                })
                .map(|d| format!("{} {}", d.rule.id(), d.message))
                .collect();
            if m["loads"] == "yes" && !findings.is_empty() {
                wrong.push(format!("{file}: libllama loads and runs it, strict finds {findings:?}"));
            }
            if m["loads"] == "yes" && m["loads_vocab_only"].as_str() != Some("yes") {
                wrong.push(format!("{file}: vocab_only load {}", m["loads_vocab_only"]));
            }
        });
        wrong.extend(j.wrong.iter().map(|w| format!("{folder}/{w}")));
        assert!(j.stale.is_empty(), "{folder}: exceptions that no longer differ: {:?}", j.stale);
        let refused = j.models - j.loads;
        if folder == "converter" {
            assert!(j.models >= 120, "the manifest lists {} converter outputs", j.models);
            assert!(j.loads >= 100 && refused >= 15, "{} loaded, {refused} refused or crashed", j.loads);
        } else {
            assert!(j.models >= 20 && j.loads >= 15, "{folder}: {} files, {} loaded", j.models, j.loads);
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(folders.len() >= 4, "the converter folders: {folders:?} (today's and three older releases')");
}

/// What each kind's manifest says of a file, and what strict says of it
/// through the pipeline with its companion (`with`: the text model of a
/// projector, the base of an adapter) named as `--with` names it.
fn judge_paired(folder: &str) -> (usize, usize, Vec<String>) {
    use gguf_validate_core::pipeline::{Input, Pipeline, Settings};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models").join(folder);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let (mut files, mut loads, mut wrong) = (0, 0, Vec::new());
    for m in manifest["models"].as_array().unwrap() {
        let file = m["file"].as_str().unwrap();
        let with: Vec<Input> = m["with"].as_str().map(|w| Input::from_path(dir.join(w))).into_iter().collect();
        // an importance matrix's values are what llama-quantize refuses when
        // not finite: they are read (--check-data), as the quantizer reads them
        let check_data = (folder == "imatrix").then(|| gguf_validate_core::data_scan::DataOptions::listing(10));
        let pipeline = Pipeline::new(Settings { with: with.clone(), check_data, ..Settings::default() });
        let v = pipeline.validate(&Input::from_path(dir.join(file)));
        let report = v.outcome.report().unwrap();
        // a projector that loads must also survive its first image or audio (make_converter_mmproj.py step 5)
        let used = match m.get("first_use").filter(|_| folder == "mmproj") {
            Some(f) => f == "yes",
            None if folder == "mmproj" && m["loads"] == "yes" && m["kind"] == "projector" => {
                wrong.push(format!("{folder}/{file}: loads, but the manifest has no first_use verdict"));
                true
            }
            None => true,
        };
        let ok = m["loads"] == "yes" && used;
        files += 1;
        loads += usize::from(ok);
        let errors: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.severity == gguf_validate_core::Level::Error)
            .map(|d| format!("{} {}", d.rule.id(), d.message))
            .collect();
        let shown = format!("{folder}/{file} with {:?}", m["with"]);
        if ok && !errors.is_empty() {
            wrong.push(format!("{shown}: llama.cpp loads (and uses) it, strict finds {errors:?}"));
        }
        if !ok && report.valid {
            let (verdict, detail) = if m["loads"] == "yes" {
                (format!("loads it, then at the first use: {}", m["first_use"]), &m["first_use_detail"])
            } else {
                (m["loads"].to_string(), &m["detail"])
            };
            wrong.push(format!("{shown}: llama.cpp {verdict} ({detail}), strict calls it valid"));
        }
        // A paired file says what it was paired with.
        if !with.is_empty() {
            let pairing = report.summary.examined.iter().find(|e| e.layer == "pairing");
            if !pairing.is_some_and(|e| e.checked) {
                wrong.push(format!("{shown}: pairing not examined: {pairing:?}"));
            }
        }
    }
    (files, loads, wrong)
}

/// Projectors written by the pinned `convert_hf_to_gguf.py --mmproj` from
/// tiny checkpoints of 9 families, each loaded by libmtmd
/// (`mtmd_init_from_file` with its text model, warm-up included;
/// conformance/tools/llama-load/make_converter_mmproj.py), then used on a
/// first image or audio chunk (`load_mtmd.py --first-use`): strict with the
/// text model equals libmtmd on every pair, including mismatched ones (a
/// pair that loads and then aborts at its first image is invalid).
#[test]
fn strict_agrees_with_libmtmd_on_every_converter_projector() {
    let (files, loads, wrong) = judge_paired("mmproj");
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(files >= 20 && loads >= 15 && files - loads >= 3, "{files} files, {loads} load");
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models/mmproj/manifest.json"))
            .unwrap();
    let v: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let used = v["models"].as_array().unwrap().iter().filter(|m| m["first_use"] == "yes").count();
    let crashed = v["models"].as_array().unwrap().iter().filter(|m| m["first_use"] == "crash").count();
    assert!(used >= 7 && crashed >= 2, "{used} projectors used, {crashed} crashed at the first use");
}

/// LoRA adapters made with peft for 7 bases (3 of them MoE: adapters on
/// the experts, 3-D pairs) and converted by the pinned
/// `convert_lora_to_gguf.py`, each loaded by `llama_adapter_lora_init`
/// against its base, then applied and evaluated
/// (make_converter_lora.py), adapters loaded against the wrong base, and
/// adapters derived from them that llama.cpp loads and then crashes on:
/// strict with the base equals llama.cpp on every one (an adapter it loads,
/// applies and decodes has no error, an expert adapter included).
#[test]
fn strict_agrees_with_the_lora_loader_on_every_converter_adapter() {
    let (files, loads, wrong) = judge_paired("lora");
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(files >= 31 && files - loads >= 9, "{files} files, {loads} load");
    // The expert adapters are there: four that run, and the three that load and then write out of bounds.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models/lora");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let experts = |loads: &str| {
        manifest["models"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                m["kind"] == "adapter" && m["loads"] == loads && m["file"].as_str().unwrap().contains("experts")
            })
            .filter(|m| m["detail"].as_str().unwrap_or("").starts_with("SIGSEGV") || loads == "yes")
            .count()
    };
    assert!(experts("yes") >= 5 && experts("crash") >= 3, "{} run, {} crash", experts("yes"), experts("crash"));
}

/// Control vectors written with gguf-py and loaded by llama.cpp's own
/// `common_control_vector_load` (conformance/tools/llama-load/cvec_load.cpp
/// against llama.cpp's common library; cvec_cases.py): strict equals it on
/// every file, the `int` overflow that crashes it included.
#[test]
fn strict_agrees_with_the_control_vector_loader() {
    let (files, loads, wrong) = judge_paired("cvec");
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(files >= 12 && files - loads >= 8, "{files} files, {loads} load");
}

/// Importance matrices read by llama.cpp's own `llama-quantize --imatrix`
/// (built from the pinned tree) against the converter's qwen3moe: the
/// pinned `llama-imatrix`'s own output and that file with one change each
/// (conformance/tools/llama-load/imatrix_cases.py). strict with the model
/// (and `--check-data`: llama-quantize refuses a NaN or infinite sum, which
/// only the values show) equals llama-quantize on every one, the abort on a
/// key's type and the division by zero on empty counts included;
/// llama-imatrix's own output has no error and no warning.
#[test]
fn strict_agrees_with_llama_quantize_on_every_importance_matrix() {
    let (files, loads, wrong) = judge_paired("imatrix");
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(files >= 20 && loads >= 8 && files - loads >= 8, "{files} files, {loads} load");
    use gguf_validate_core::pipeline::{Input, Pipeline, Settings};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models");
    let settings =
        Settings { with: vec![Input::from_path(dir.join("converter/qwen3moe.gguf"))], ..Settings::default() };
    let v = Pipeline::new(settings).validate(&Input::from_path(dir.join("imatrix/imatrix__real.gguf")));
    let report = v.outcome.report().unwrap();
    assert!(report.valid && report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    assert!(report.summary.examined.iter().any(|e| e.layer == "imatrix" && e.checked));
}

/// `projector-text-tokens` on converter pairs: a projector whose looked-up
/// tokens the text model lacks is reported (libmtmd aborts at its first
/// tiled image: the manifest's first_use is `crash`), and the same
/// projector with its own text model, which has them, is not (first_use
/// `yes`).
#[test]
fn projector_text_tokens_breaks_and_holds_on_converter_pairs() {
    use gguf_validate_core::pipeline::{Input, Pipeline, Settings};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/models/mmproj");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let rules = |file: &str, with: &str| -> Vec<String> {
        let pipeline = Pipeline::new(Settings { with: vec![Input::from_path(dir.join(with))], ..Settings::default() });
        let v = pipeline.validate(&Input::from_path(dir.join(file)));
        v.outcome.report().unwrap().diagnostics.iter().map(|d| d.rule.id().to_string()).collect()
    };
    let first_use = |file: &str, with: &str| -> String {
        let m = manifest["models"].as_array().unwrap().iter().find(|m| m["file"] == file && m["with"] == with);
        m.map(|m| m["first_use"].as_str().unwrap_or("-").to_string()).unwrap_or_default()
    };
    for (proj, own, other) in [
        ("mmproj-idefics3.gguf", "idefics3.gguf", "gemma3.gguf"),
        ("mmproj-lfm2vl.gguf", "lfm2vl.gguf", "qwen25vl.gguf"),
    ] {
        assert_eq!(first_use(proj, other), "crash", "{proj} with {other}");
        assert!(rules(proj, other).iter().any(|r| r == "projector-text-tokens"), "{proj} with {other}");
        assert_eq!(first_use(proj, own), "yes", "{proj} with {own}");
        assert!(!rules(proj, own).iter().any(|r| r == "projector-text-tokens"), "{proj} with {own}");
        // found in the folder: one text model there has them all
        let v = Pipeline::new(Settings::default()).validate(&Input::from_path(dir.join(proj)));
        let report = v.outcome.report().unwrap();
        assert!(!report.diagnostics.iter().any(|d| d.rule.id() == "projector-text-tokens"), "{proj} in its folder");
    }
}
