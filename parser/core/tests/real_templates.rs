//! The chat templates real models ship must not make noise: llama.cpp's
//! `models/templates/*.jinja` (about 70), the vocabulary files next to them
//! and gemma-3-270m. None may give an error under `strict`; the warnings
//! are printed and counted (run with `--nocapture` to see them).
//!
//! The files carry their models' licences, so they are not committed:
//! `.ci/reference.sh` extracts them from the llama-cpp-python sdist (PyPI)
//! and sets `GGUF_VALIDATE_LLAMA_CPP` (llama.cpp's tree: `models/templates/`
//! and `models/ggml-vocab-*.gguf`) and `GGUF_VALIDATE_GEMMA`. Under
//! `CI=true` missing templates fail the test. `GGUF_VALIDATE_TEMPLATES`
//! points at another template directory. Without any of them the test
//! looks in the usual places and otherwise skips with a notice.
#![allow(clippy::disallowed_macros)]

use gguf_validate_testkit as support;

use std::path::{Path, PathBuf};

use gguf_validate_core::rules::Group;
use gguf_validate_core::template::{self, Kind};
use gguf_validate_core::{Level, Options, Profile, Validator};

/// llama.cpp's `models/` directory (`GGUF_VALIDATE_LLAMA_CPP`, set by
/// `.ci/reference.sh`).
fn llama_cpp_models() -> Option<PathBuf> {
    std::env::var_os("GGUF_VALIDATE_LLAMA_CPP").map(|p| PathBuf::from(p).join("models"))
}

fn templates_dir() -> Option<PathBuf> {
    let p = match std::env::var_os("GGUF_VALIDATE_TEMPLATES") {
        Some(p) => PathBuf::from(p),
        None => llama_cpp_models()?.join("templates"),
    };
    p.is_dir().then_some(p)
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "needs the reference files: source .ci/reference.sh && fetch_reference, then cargo test -- --ignored"]
fn llama_cpp_templates_give_no_error() {
    let dir =
        templates_dir().expect("llama.cpp's models/templates (GGUF_VALIDATE_LLAMA_CPP or GGUF_VALIDATE_TEMPLATES)");
    let paths = files(&dir, ".jinja");
    assert!(paths.len() >= 60, "only {} templates in {}", paths.len(), dir.display());
    let mut errors = Vec::new();
    let mut warnings = 0usize;
    let mut tokens = 0usize;
    for p in &paths {
        let src = std::fs::read_to_string(p).expect("UTF-8 template");
        let a = template::analyse(&src);
        tokens += a.special_tokens.len();
        for f in &a.findings {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            let line = format!("{name} @{}:{} {:?}: {}", f.line, f.column, f.kind, f.message);
            match f.kind.rule().rule().level(Profile::Strict) {
                Level::Error => errors.push(line),
                Level::Warning => {
                    warnings += 1;
                    eprintln!("warning: {line}");
                }
                _ => {}
            }
        }
    }
    eprintln!(
        "{} llama.cpp templates: {} errors, {warnings} warnings, {tokens} special-token spellings emitted",
        paths.len(),
        errors.len()
    );
    assert!(errors.is_empty(), "errors on real templates:\n{}", errors.join("\n"));
    assert_eq!(warnings, 0, "warnings on real templates (see above)");
}

/// The template findings of a GGUF file under `strict`: (errors, warnings).
fn template_findings(path: &Path) -> (Vec<String>, Vec<String>) {
    let bytes = std::fs::read(path).expect("readable GGUF file");
    let r = Validator::new(Options::new(Profile::Strict)).validate_bytes(&bytes).report;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for d in r.diagnostics.iter().filter(|d| d.rule.rule().group == Group::Template) {
        let line = format!("{}: {} {} {}", path.display(), d.rule.id(), d.path, d.message);
        match d.severity {
            Level::Error => errors.push(line),
            Level::Warning => warnings.push(line),
            _ => {}
        }
    }
    (errors, warnings)
}

#[test]
#[ignore = "needs the reference files: source .ci/reference.sh && fetch_reference, then cargo test -- --ignored"]
fn vocabulary_files_and_gemma_give_no_template_error() {
    let models = support::reference::llama_cpp().join("models");
    let mut paths: Vec<PathBuf> = files(&models, ".gguf")
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("ggml-vocab-")))
        .collect();
    paths.push(support::reference::gemma());
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for p in &paths {
        let (e, w) = template_findings(p);
        errors.extend(e);
        warnings.extend(w);
    }
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    eprintln!("{} GGUF files: {} template errors, {} template warnings", paths.len(), errors.len(), warnings.len());
    assert!(errors.is_empty(), "template errors on real files:\n{}", errors.join("\n"));
}

#[test]
fn a_template_finding_is_never_silent() {
    // The analysis is total: every kind maps to a rule that strict reports.
    for k in [
        Kind::CodeExecution,
        Kind::Unparseable,
        Kind::Syntax,
        Kind::HiddenText,
        Kind::Trigger,
        Kind::Injected,
        Kind::RoleBranch,
        Kind::AnalysisLimit,
    ] {
        assert_ne!(k.rule().rule().level(Profile::Strict), Level::Allow, "{k:?}");
    }
}
