//! The GGUF conformance suite: case definitions, the corpus generator and
//! the expectations every reader is scored against.
//!
//! A case is builder code (reviewable in a diff, one comment per field that
//! matters) plus what every profile of `gguf-validate` must say about it.
//! `gguf-conformance generate` writes the cases to `corpus/gguf/` with a
//! `manifest.json`; a test fails when that directory is stale.
//!
//! Names follow JSONTestSuite: `y_` every conforming reader must accept,
//! `n_` every reader must reject, `i_` implementation-defined (the three
//! profiles disagree, so readers may too).
#![forbid(unsafe_code)]

pub mod build;
mod cases;
pub mod fixes;
pub mod matrix;
pub mod readable;
pub mod releases;
pub mod split;
pub mod templates;
pub mod web;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gguf_validate_core::rules::Profile;
use serde::{Deserialize, Serialize};

/// What a reader must do with a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Load it.
    Accept,
    /// Refuse it.
    Reject,
}

/// Accept.
pub const A: Verdict = Verdict::Accept;
/// Reject.
pub const R: Verdict = Verdict::Reject;

/// One conformance case.
pub struct Case {
    /// Slug without the y/n/i prefix, e.g. `key_empty`.
    pub slug: String,
    /// What the file contains, in one or two sentences.
    pub description: String,
    /// The spec section, ggml behaviour or advisory the case reproduces.
    pub citation: String,
    /// Expected verdict under `strict`, `spec`, `ggml`.
    pub verdicts: [Verdict; 3],
    /// Rule ids `gguf-validate --profile strict` must report (any severity), exactly.
    pub rules: Vec<&'static str>,
    /// Part of the suite the case belongs to (its module: `header`, `kv`,
    /// `security`, `test-gguf`, ...), for grouping in reports.
    pub group: &'static str,
    /// Why the `ggml` verdict differs from ggml's own, if it does.
    pub ggml_divergence: Option<String>,
    /// Rule ids reported under one profile only (beyond `rules`, which
    /// holds for every profile where the rule is not allowed).
    pub also: Vec<(Profile, &'static str)>,
    /// Builds the file's bytes.
    pub build: Box<dyn Fn() -> Vec<u8> + Send + Sync>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("slug", &self.slug)
            .field("verdicts", &self.verdicts)
            .field("rules", &self.rules)
            .finish()
    }
}

impl Case {
    /// `y`, `n` or `i`.
    pub fn prefix(&self) -> &'static str {
        if self.verdicts.iter().all(|v| *v == A) {
            "y"
        } else if self.verdicts.iter().all(|v| *v == R) {
            "n"
        } else {
            "i"
        }
    }

    /// File name, e.g. `n_key_empty.gguf`.
    pub fn file_name(&self) -> String {
        format!("{}_{}.gguf", self.prefix(), self.slug)
    }
}

/// Starts a case: `case("key_empty", [R, R, R], &["key-empty"], "...", "...", || bytes)`.
pub fn case(
    slug: &str,
    verdicts: [Verdict; 3],
    rules: &[&'static str],
    description: &str,
    citation: &str,
    build: impl Fn() -> Vec<u8> + Send + Sync + 'static,
) -> Case {
    Case {
        slug: slug.to_string(),
        description: description.to_string(),
        citation: citation.to_string(),
        verdicts,
        rules: rules.to_vec(),
        group: "",
        ggml_divergence: None,
        also: Vec::new(),
        build: Box::new(build),
    }
}

impl Case {
    /// Expects `rule` under `profile` too, where strict does not report it.
    pub fn also_under(mut self, profile: Profile, rule: &'static str) -> Case {
        self.also.push((profile, rule));
        self
    }

    /// Marks the `ggml` verdict as an intended divergence from ggml itself.
    pub fn diverges(mut self, why: &str) -> Case {
        self.ggml_divergence = Some(why.to_string());
        self
    }
}

/// Every case, in a stable order (slugs are unique).
pub fn all_cases() -> Vec<Case> {
    type AddCases = fn(&mut Vec<Case>);
    let modules: [(&'static str, AddCases); 14] = [
        ("header", cases::header::cases),
        ("kv", cases::kv::cases),
        ("keys", cases::keys::cases),
        ("tensors", cases::tensors::cases),
        ("layout", cases::layout::cases),
        ("model", cases::model::cases),
        ("projector", cases::projector::cases),
        ("adapter", cases::adapter::cases),
        ("imatrix", cases::imatrix::cases),
        ("diffusion", cases::diffusion::cases),
        ("types", cases::types::cases),
        ("security", cases::security::cases),
        ("template", cases::template::cases),
        ("test-gguf", cases::test_gguf::cases),
    ];
    let mut v = Vec::new();
    for (group, add) in modules {
        let start = v.len();
        add(&mut v);
        for c in &mut v[start..] {
            c.group = group;
        }
    }
    v
}

/// One entry of `corpus/gguf/manifest.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// File name in the corpus directory.
    pub file: String,
    /// Description.
    pub description: String,
    /// Citation.
    pub citation: String,
    /// Part of the suite (see [`Case::group`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Verdict per profile name.
    pub verdict: BTreeMap<String, Verdict>,
    /// Rule ids `strict` reports.
    pub rules: Vec<String>,
    /// Intended divergence of our `ggml` profile from ggml.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ggml_divergence: Option<String>,
    /// Size of the file.
    pub size: u64,
}

/// The manifest, versioned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Corpus format version; bump when expectations change meaning.
    pub corpus_version: u32,
    /// Entries in case order.
    pub cases: Vec<ManifestEntry>,
}

/// Current corpus version.
pub const CORPUS_VERSION: u32 = 1;

/// Builds every case: (file name, bytes) and the manifest.
pub fn render_corpus() -> (Vec<(String, Vec<u8>)>, Manifest) {
    let mut files = Vec::new();
    let mut entries = Vec::new();
    for c in all_cases() {
        let bytes = (c.build)();
        let verdict = ["strict", "spec", "ggml"].iter().zip(c.verdicts).map(|(p, v)| (p.to_string(), v)).collect();
        entries.push(ManifestEntry {
            file: c.file_name(),
            description: c.description.clone(),
            citation: c.citation.clone(),
            group: c.group.to_string(),
            verdict,
            rules: c.rules.iter().map(|r| r.to_string()).collect(),
            ggml_divergence: c.ggml_divergence.clone(),
            size: bytes.len() as u64,
        });
        files.push((c.file_name(), bytes));
    }
    (files, Manifest { corpus_version: CORPUS_VERSION, cases: entries })
}

/// The workspace root (the directory holding `corpus/` and `conformance/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `corpus/gguf` relative to the workspace root.
pub fn corpus_dir() -> PathBuf {
    workspace_root().join("corpus").join("gguf")
}

/// `corpus/gguf-py`: files written by gguf-py's GGUFWriter, with a
/// hand-kept `manifest.json` (written by `conformance/tools/gguf_py_samples.py`).
pub fn gguf_py_dir() -> PathBuf {
    workspace_root().join("corpus").join("gguf-py")
}

/// Reads a `manifest.json` (`corpus/gguf/` or `corpus/gguf-py/`).
pub fn read_manifest(path: &Path) -> Result<Manifest, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The prefix (`y`, `n`, `i`) of a verdict triple, as [`Case::prefix`].
pub fn prefix_of<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> &'static str {
    let v: Vec<&Verdict> = verdicts.into_iter().collect();
    if v.iter().all(|x| **x == A) {
        "y"
    } else if v.iter().all(|x| **x == R) {
        "n"
    } else {
        "i"
    }
}

/// One known gap: a corpus file (path relative to `corpus/`) and profile
/// for which `gguf-validate` may miss its expectation, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct XfailEntry {
    /// File relative to `corpus/`, e.g. `gguf/n_key_empty.gguf`.
    pub file: String,
    /// `strict`, `spec` or `ggml`.
    pub profile: String,
    /// Why it fails and who owns the fix.
    pub reason: String,
}

/// `conformance/xfail.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Xfail {
    /// Known gaps (must be empty once every gap is fixed).
    pub xfail: Vec<XfailEntry>,
}

/// Reads `conformance/xfail.json`.
pub fn read_xfail() -> Result<Xfail, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("xfail.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The manifest as committed JSON text.
pub fn manifest_json(m: &Manifest) -> String {
    let mut s = serde_json::to_string_pretty(m).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes the corpus to `dir` (removing `.gguf` files no case produces).
pub fn write_corpus(dir: &Path) -> std::io::Result<usize> {
    let (files, manifest) = render_corpus();
    std::fs::create_dir_all(dir)?;
    let keep: std::collections::HashSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if name.ends_with(".gguf") && !keep.contains(name.as_str()) {
            std::fs::remove_file(&path)?;
        }
    }
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes)?;
    }
    std::fs::write(dir.join("manifest.json"), manifest_json(&manifest))?;
    Ok(files.len())
}

/// Checks that `dir` holds exactly what [`write_corpus`] would write.
pub fn check_corpus(dir: &Path) -> Result<usize, String> {
    let (files, manifest) = render_corpus();
    check_generated(dir, "corpus/gguf", &files, &manifest_json(&manifest))?;
    Ok(files.len())
}

/// Checks that the folder `dir` (shown as `shown`) holds exactly `files`
/// (by name, byte for byte, and no other `.gguf`) and `manifest` as its
/// `manifest.json`: what `generate` writes there.
pub(crate) fn check_generated(
    dir: &Path,
    shown: &str,
    files: &[(String, Vec<u8>)],
    manifest: &str,
) -> Result<(), String> {
    let mut problems = Vec::new();
    for (name, bytes) in files {
        match std::fs::read(dir.join(name)) {
            Ok(on_disk) if on_disk == *bytes => {}
            Ok(_) => problems.push(format!("{name} differs")),
            Err(_) => problems.push(format!("{name} is missing")),
        }
    }
    let names: std::collections::HashSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.ends_with(".gguf") && !names.contains(n.as_str()) {
            problems.push(format!("{n} is not produced by any case"));
        }
    }
    if std::fs::read_to_string(dir.join("manifest.json")).ok().as_deref() != Some(manifest) {
        problems.push("manifest.json differs".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{shown} is stale ({}); run `cargo run -p gguf-conformance -- generate`", problems.join(", ")))
    }
}
