//! Diffusion models judged against the loader that runs them:
//! stable-diffusion.cpp 0.4.7 (stable-diffusion-cpp-python's vendored
//! tree) loaded every file of `corpus/diffusion/` in a fresh process
//! (`conformance/tools/sd-cpp/load.py`, the verdicts in its manifest):
//! tiny checkpoints of five families converted by stable-diffusion.cpp's
//! own converter and by ComfyUI-GGUF's, quantized, and broken variants.
//! `strict` (the default: each file judged for the loader it is for) has an
//! error exactly when stable-diffusion.cpp refuses the file or dies on it.

use std::path::Path;

use gguf_validate_core::pipeline::{Input, Pipeline, Settings};
use gguf_validate_core::{Level, Validator};

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/diffusion")
}

fn manifest() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("manifest.json")).unwrap()).unwrap()
}

/// The errors strict finds in `file`, and the loader it was judged for.
fn errors(file: &str, validator: Validator) -> (Vec<String>, String) {
    let pipeline = Pipeline::new(Settings { validator, ..Settings::default() });
    let v = pipeline.validate(&Input::from_path(dir().join(file)));
    let report = v.outcome.report().unwrap();
    let errors = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Level::Error)
        .map(|d| format!("{} {}", d.rule.id(), d.message))
        .collect();
    let loader = report.summary.loader.map_or_else(|| "-".to_string(), |l| l.to_string());
    (errors, loader)
}

#[test]
fn strict_agrees_with_stable_diffusion_cpp_on_every_diffusion_file() {
    let manifest = manifest();
    let files = manifest["files"].as_object().unwrap();
    let (mut loads, mut wrong) = (0, Vec::new());
    let mut families = std::collections::BTreeSet::new();
    for (file, m) in files {
        let verdict = m["sdcpp"]["verdict"].as_str().unwrap();
        let (errs, loader) = errors(file, Validator::default());
        families.insert(m["family"].as_str().unwrap_or("?").to_string());
        if loader != "sd.cpp" {
            wrong.push(format!("{file}: judged for {loader}, not stable-diffusion.cpp"));
        }
        if verdict == "loads" {
            loads += 1;
            if !errs.is_empty() {
                wrong.push(format!("{file}: stable-diffusion.cpp loads it, strict finds {errs:?}"));
            }
        } else if errs.is_empty() {
            let detail = format!("{} {}", m["sdcpp"]["signal"], m["sdcpp"]["detail"]);
            wrong.push(format!("{file}: stable-diffusion.cpp: {verdict} ({detail}), strict has no error"));
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert!(files.len() >= 30 && loads >= 8 && files.len() - loads >= 20, "{} files, {loads} load", files.len());
    for family in ["flux", "sd1", "sdxl", "sd3", "wan", "qwen_image"] {
        assert!(families.contains(family), "{family}: {families:?}");
    }
}

/// stable-diffusion.cpp's converter writes no key at all; strict judges its
/// output for stable-diffusion.cpp (no `architecture-missing`), the spec
/// profile still requires the keys.
#[test]
fn the_converter_s_keyless_files_are_judged_for_stable_diffusion_cpp() {
    let (errs, loader) = errors("flux__sdcpp_q8_0.gguf", Validator::default());
    assert!(errs.is_empty() && loader == "sd.cpp", "{errs:?} {loader}");
    let spec = Validator::new(gguf_validate_core::Options::new(gguf_validate_core::Profile::Spec));
    let (errs, _) = errors("flux__sdcpp_q8_0.gguf", spec);
    assert!(errs.iter().any(|e| e.starts_with("diffusion-architecture-missing")), "{errs:?}");
    assert!(errs.iter().any(|e| e.starts_with("diffusion-quantization-version-missing")), "{errs:?}");
}
