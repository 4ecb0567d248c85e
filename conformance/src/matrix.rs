//! The cross-reader matrix: runs reader adapters over the corpus and
//! classifies every result the way JSONTestSuite does.
//!
//! A reader is a shell command (from `conformance/readers.json`) that gets a
//! file path as `$1` and exits 0 to accept, 1 to reject; any other exit
//! status or a signal is a crash, and running past the time limit is a
//! timeout. The expected verdict for a reader is the file's `y`/`n`/`i`
//! prefix (for `i` both verdicts are fine); a reader bound to a
//! `gguf-validate` profile is scored against that profile's verdict instead.
//! Files that are not GGUF (`corpus/legacy/`: GGML, GGJT, rwkv.cpp) are
//! expected to be rejected by every GGUF reader that has no profile.
//!
//! The rows are every case of the corpus: `gguf/`, `gguf-py/`,
//! `regressions/`, `legacy/`, `samples/`, the tiny models of `models/` (and
//! `models/converter/`), whose expectation is libllama's verdict from their
//! manifest (`y_` when it loads them, `i_` when it refuses or crashes: a
//! container reader may accept a model the loader refuses), the projectors,
//! LoRA adapters, control vectors and importance matrices of `models/mmproj/`,
//! `models/lora/`, `models/cvec/` and `models/imatrix/`, whose expectation is
//! their own loader's verdict (libmtmd, `llama_adapter_lora_init`,
//! `common_control_vector_load`, `llama-quantize --imatrix`; libllama for the
//! text models and bases beside them), and the split
//! sets of `split/` (one row per set: readers get its first file; a set
//! reader finds the others by name). [`coverage`] lists the case files a
//! matrix lacks. Each cell keeps an excerpt of what the reader printed
//! (made [`readable`](crate::readable::readable)) and, for a crash, its
//! class (the signal or exit status and the abort or panic line).
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::releases::Releases;
use crate::{Verdict, prefix_of, read_manifest};

/// One reader of `readers.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderConfig {
    /// Short name (a column of the matrix).
    pub name: String,
    /// Shell command; the file path is passed as `$1` (appended as `"$1"`
    /// when the command does not mention it). Run from the workspace root.
    pub command: String,
    /// Shell command printing the reader's version on its first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The `gguf-validate` profile this reader applies, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// What the adapter reads.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Per-file time limit for this reader, seconds (else the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// A command that judges a file for several readers at once: the
    /// readers with the same one run it once per file, and each takes its
    /// verdict from the section of its `profile` (the output of
    /// `gguf-validate --every-profile`: a line `== profile P (exit N) ==`,
    /// then what `--profile P` prints). Without it, `command` runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<String>,
    /// Only the corpus files whose path (relative to `corpus/`) contains
    /// this: the reader runs on no other file and has no result for it (a
    /// loader of one kind of file, e.g. `diffusion` for stable-diffusion.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<String>,
}

impl ReaderConfig {
    /// Whether this reader runs on (and has a result for) a corpus file.
    pub fn runs_on(&self, file: &str) -> bool {
        self.files.as_deref().is_none_or(|f| file.contains(f))
    }
}

/// `conformance/readers.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadersFile {
    /// The readers, in column order.
    pub readers: Vec<ReaderConfig>,
}

/// Reads a readers file.
pub fn read_readers(path: &Path) -> Result<ReadersFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One file of the corpus with its expectations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusFile {
    /// Path relative to `corpus/`, e.g. `gguf/n_key_empty.gguf`.
    pub file: String,
    /// Corpus directory: `gguf`, `gguf-py`, `regressions`, `legacy`.
    pub set: String,
    /// Group for display (case module, or the set).
    pub group: String,
    /// `y`, `n` or `i`.
    pub prefix: String,
    /// Verdict per `gguf-validate` profile.
    pub expected: BTreeMap<String, Verdict>,
    /// False for files that are not GGUF at all (legacy formats).
    pub gguf: bool,
    /// One-line description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The rule ids `strict` reports on the case (from its manifest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Where the case comes from (spec section, upstream code, advisory).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub citation: String,
    /// The other files of a split set (paths relative to `corpus/`); the
    /// row's `file` is the first one present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<String>,
    /// The loader's verdict from the models' manifest (`yes`, `refused`,
    /// `crash`) and its loader line: libllama for a model, libmtmd for a
    /// projector, `llama_adapter_lora_init + llama_decode` for a LoRA
    /// adapter (loaded against its base, set on a context and applied in
    /// one decode),
    /// `common_control_vector_load` for a control vector, `llama-quantize
    /// --imatrix` for an importance matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Reference>,
    /// Byte offset the case's first finding names (strict, in process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// A verdict recorded by the program a corpus directory was made with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Who: `libllama`, `libmtmd`, `llama_adapter_lora_init + llama_decode`,
    /// `common_control_vector_load`, `llama-quantize --imatrix`.
    pub by: String,
    /// `yes`, `refused`, `crash`.
    pub verdict: String,
    /// The loader's line, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Whether the verdict is for a `vocab_only` load.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vocab_only: bool,
}

/// A per-file JSON expectation (`corpus/regressions/*.json`, `corpus/legacy/*.json`).
#[derive(Debug, Deserialize)]
struct Sidecar {
    verdict: BTreeMap<String, Verdict>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// The directories of `corpus/` that hold cases (everything else there is
/// data for other tests: `golden/`, `hash/`).
pub const CASE_DIRS: [&str; 8] =
    ["gguf", "gguf-py", "regressions", "legacy", "samples", "models", "diffusion", "split"];

/// The offset of the first finding of `rules` (else the first error) that
/// `strict` reports on `path`.
fn offset_of(path: &Path, rules: &[String]) -> Option<u64> {
    use gguf_validate_core::rules::{Level, Profile};
    let bytes = std::fs::read(path).ok()?;
    let report = gguf_validate_core::Validator::new(gguf_validate_core::Options::new(Profile::Strict))
        .validate_bytes(&bytes)
        .report;
    let named = report.diagnostics.iter().find(|d| rules.iter().any(|r| r == d.rule.id()));
    named.or_else(|| report.diagnostics.iter().find(|d| d.severity == Level::Error)).map(|d| d.offset)
}

fn row(file: String, set: &str, group: String, expected: BTreeMap<String, Verdict>, gguf: bool) -> CorpusFile {
    CorpusFile {
        file,
        set: set.to_string(),
        group,
        prefix: prefix_of(expected.values()).to_string(),
        expected,
        gguf,
        description: String::new(),
        rules: Vec::new(),
        citation: String::new(),
        shards: Vec::new(),
        reference: None,
        offset: None,
    }
}

/// True for a GGUF v2/v3 file (either byte order) whose header declares no
/// tensor: a vocabulary file, which llama.cpp's tools load with `vocab_only`.
pub fn declares_no_tensor(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    let ok = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok();
    if !ok || head.get(..4) != Some(b"GGUF".as_slice()) {
        return false;
    }
    let word = |b: &[u8], le: bool| -> u64 {
        b.iter().enumerate().fold(0u64, |acc, (i, x)| {
            let shift = if le { 8 * i } else { 8 * (b.len() - 1 - i) };
            acc | (u64::from(*x) << shift)
        })
    };
    [true, false].into_iter().any(|le| {
        let version = word(head.get(4..8).unwrap_or_default(), le);
        (version == 2 || version == 3) && word(head.get(8..16).unwrap_or_default(), le) == 0
    })
}

/// `corpus/models/manifest.json` and the `manifest.json` of its folders
/// (`converter`, `mmproj`, `lora`, `cvec`); fields not read here are ignored.
#[derive(Debug, Deserialize)]
struct ModelsManifest {
    models: Vec<ModelEntry>,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    file: String,
    #[serde(default)]
    arch: String,
    /// `text`, `projector`, `adapter`, `control_vector`, `imatrix` (absent: a model).
    #[serde(default)]
    kind: String,
    #[serde(default)]
    family: Option<String>,
    /// The text model or base it was loaded with (null for those themselves).
    #[serde(default)]
    with: Option<String>,
    loads: String,
    #[serde(default)]
    detail: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    loads_vocab_only: Option<String>,
    #[serde(default)]
    detail_vocab_only: Option<String>,
}

/// `corpus/split/manifest.json`.
#[derive(Debug, Deserialize)]
struct SplitEntry {
    dir: String,
    files: Vec<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    citation: String,
    verdict: BTreeMap<String, Verdict>,
    #[serde(default)]
    rules: Vec<String>,
}

/// corpus/diffusion/manifest.json (conformance/tools/sd-cpp/): what
/// stable-diffusion.cpp did with each file; fields not read here are ignored.
#[derive(Debug, Deserialize)]
struct DiffusionManifest {
    files: BTreeMap<String, DiffusionEntry>,
}

#[derive(Debug, Deserialize)]
struct DiffusionEntry {
    family: String,
    #[serde(default)]
    breaks: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    converter: String,
    sdcpp: SdCppVerdict,
}

#[derive(Debug, Deserialize)]
struct SdCppVerdict {
    verdict: String,
    #[serde(default)]
    signal: Option<String>,
    #[serde(default)]
    detail: String,
}

/// The group of the diffusion models' rows.
const DIFFUSION_GROUP: &str = "diffusion models (stable-diffusion.cpp, new_sd_ctx)";

/// The folders of `corpus/models/` with a manifest: (folder, group).
const MODEL_DIRS: [(&str, &str); 6] = [
    ("models", "models"),
    ("models/converter", "models (convert_hf_to_gguf.py)"),
    ("models/mmproj", "models (projectors, libmtmd)"),
    ("models/lora", "models (LoRA adapters, llama_adapter_lora_init + llama_decode: loaded, set and applied)"),
    ("models/cvec", "models (control vectors, common_control_vector_load)"),
    ("models/imatrix", "models (importance matrices, llama-quantize --imatrix)"),
];

/// The loader whose verdict a models manifest records for a file of `kind`,
/// and where its code is.
fn loader_of(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "projector" => (
            "libmtmd",
            "llama.cpp tools/mtmd/mtmd.cpp, tools/mtmd/clip.cpp (mtmd_init_from_file; libmtmd of llama-cpp-python 0.3.36)",
        ),
        "adapter" => (
            "llama_adapter_lora_init + llama_decode",
            "llama.cpp src/llama-adapter.cpp, src/llama-graph.cpp (llama_adapter_lora_init, llama_set_adapters_lora, then one llama_decode applies it; libllama of llama-cpp-python 0.3.36)",
        ),
        "control_vector" => (
            "common_control_vector_load",
            "llama.cpp common/common.cpp (common_control_vector_load; vendor/llama.cpp of llama-cpp-python 0.3.36)",
        ),
        "imatrix" => (
            "llama-quantize --imatrix",
            "llama.cpp common/imatrix-loader.cpp, tools/quantize/quantize.cpp, src/llama-quant.cpp (llama-quantize built from vendor/llama.cpp of llama-cpp-python 0.3.36)",
        ),
        _ => (
            "libllama",
            "llama.cpp src/llama-model-loader.cpp, src/llama-model.cpp (libllama of llama-cpp-python 0.3.36)",
        ),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every corpus case with an expectation, in a stable order: `gguf`,
/// `gguf-py`, `regressions`, `legacy`, `samples`, `models` (then
/// `models/converter`, `models/mmproj`, `models/lora`, `models/cvec`,
/// `models/imatrix`), `diffusion`, `split` (when present).
pub fn load_corpus(root: &Path) -> Result<Vec<CorpusFile>, String> {
    let corpus = root.join("corpus");
    let mut out = Vec::new();
    for set in ["gguf", "gguf-py"] {
        let m = read_manifest(&corpus.join(set).join("manifest.json"))?;
        for e in m.cases {
            let group = if e.group.is_empty() { set.to_string() } else { e.group.clone() };
            let mut r = row(format!("{set}/{}", e.file), set, group, e.verdict, true);
            r.description = e.description;
            r.citation = e.citation;
            r.rules = e.rules;
            out.push(r);
        }
    }
    for set in ["regressions", "legacy"] {
        let dir = corpus.join(set);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x != "json" && x != "md"))
            .collect();
        files.sort();
        for path in files {
            let side = path.with_extension("json");
            let s: Sidecar = read_json(&side)?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let gguf = s.format.as_deref().is_none_or(|f| f == "gguf");
            let group = s
                .format
                .clone()
                .filter(|_| set == "legacy")
                .map_or_else(|| set.to_string(), |f| format!("legacy ({f})"));
            let mut r = row(format!("{set}/{name}"), set, group, s.verdict, gguf);
            r.description = s.description.unwrap_or_default();
            out.push(r);
        }
    }
    // The bundled sample: the README's first command validates it (a valid model).
    if let Ok(rd) = std::fs::read_dir(corpus.join("samples")) {
        let mut files: Vec<String> = rd
            .filter_map(|e| e.ok().and_then(|e| e.file_name().into_string().ok()))
            .filter(|n| n.ends_with(".gguf"))
            .collect();
        files.sort();
        for name in files {
            let mut r = row(format!("samples/{name}"), "samples", "samples".into(), BTreeMap::new(), true);
            r.prefix = "y".into();
            r.description = "The bundled sample model of the README (a tiny llama that must load).".into();
            out.push(r);
        }
    }
    for (sub, group) in MODEL_DIRS {
        let path = corpus.join(sub).join("manifest.json");
        if !path.exists() {
            continue;
        }
        let m: ModelsManifest = read_json(&path)?;
        let mut seen = std::collections::BTreeSet::new();
        for e in m.models {
            // a projector or adapter is also loaded with another companion:
            // its first entry (with its own) is the expectation
            if !seen.insert(e.file.clone()) {
                continue;
            }
            // the vocab_only verdict counts for a vocabulary file (no tensor), as the libllama adapter loads it
            let vocab_file = declares_no_tensor(&corpus.join(sub).join(&e.file));
            let (verdict, detail, vocab_only) = match (&e.loads_vocab_only, &e.detail_vocab_only) {
                (Some(v), d) if vocab_file => (v.clone(), d.clone().unwrap_or_default(), true),
                _ => (e.loads.clone(), e.detail.clone(), false),
            };
            let mut r = row(format!("{sub}/{}", e.file), "models", group.to_string(), BTreeMap::new(), true);
            // Valid containers: a reader must accept what the loader loads;
            // what it refuses or crashes on is the loader's contract, not
            // the container's (implementation-defined for a GGUF reader).
            r.prefix = if verdict == "yes" { "y".into() } else { "i".into() };
            let name = if e.arch.is_empty() { e.family.unwrap_or_default() } else { e.arch };
            r.description = if name.is_empty() { e.description } else { format!("{name}: {}", e.description) };
            if let Some(with) = e.with {
                let _ = write!(r.description, " (loaded with {with})");
            }
            let (by, citation) = loader_of(&e.kind);
            r.citation = citation.into();
            r.reference = Some(Reference { by: by.into(), verdict, detail, vocab_only });
            out.push(r);
        }
    }
    // Diffusion models, each with stable-diffusion.cpp's verdict (load.py)
    let path = corpus.join("diffusion").join("manifest.json");
    if path.exists() {
        let m: DiffusionManifest = read_json(&path)?;
        for (file, e) in m.files {
            let mut r = row(format!("diffusion/{file}"), "diffusion", DIFFUSION_GROUP.into(), BTreeMap::new(), true);
            let verdict = match e.sdcpp.verdict.as_str() {
                "loads" => "yes",
                "abort" => "crash",
                other => other,
            };
            r.prefix = if verdict == "yes" { "y".into() } else { "i".into() };
            r.description =
                format!("{}: {}", e.family, e.breaks.as_deref().or(e.note.as_deref()).unwrap_or(&e.converter));
            r.citation = "stable-diffusion.cpp src/model.cpp, src/stable-diffusion.cpp (new_sd_ctx; stable-diffusion-cpp-python 0.4.7)".into();
            let detail = match &e.sdcpp.signal {
                Some(sig) => format!("{sig}: {}", e.sdcpp.detail),
                None => e.sdcpp.detail.clone(),
            };
            r.reference = Some(Reference {
                by: "stable-diffusion.cpp".into(),
                verdict: verdict.into(),
                detail,
                vocab_only: false,
            });
            out.push(r);
        }
    }
    let split_manifest = corpus.join("split").join("manifest.json");
    if split_manifest.exists() {
        let sets: Vec<SplitEntry> = read_json(&split_manifest)?;
        for e in sets {
            let mut files = e.files.iter().map(|f| format!("split/{}/{f}", e.dir));
            let Some(first) = files.next() else { continue };
            let mut r = row(first, "split", "split sets".into(), e.verdict, true);
            r.shards = files.collect();
            r.description = e.description;
            r.citation = e.citation;
            r.rules = e.rules;
            out.push(r);
        }
    }
    for r in &mut out {
        r.offset = offset_of(&corpus.join(&r.file), &r.rules);
    }
    Ok(out)
}

/// Every case file under the case directories of `corpus/` (paths relative
/// to `corpus/`): everything but the manifests, sidecars and notes, and but
/// the older releases' converter output (`models/converter-TAG/`, written by
/// conformance/tools/llama-releases/old_converters.py): those are held to
/// today's llama.cpp by conformance/tests/llama_models.rs, not run through
/// the readers (not in `MODEL_DIRS`).
pub fn case_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let rel_name = format!("{rel}/{name}");
            if path.is_dir() && rel == "models" && name.starts_with("converter-") {
                continue;
            }
            if path.is_dir() {
                walk(&path, &rel_name, out);
            } else if !matches!(path.extension().and_then(|x| x.to_str()), Some("json" | "md" | "txt" | "py")) {
                out.push(rel_name);
            }
        }
    }
    let mut out = Vec::new();
    for d in CASE_DIRS {
        walk(&root.join("corpus").join(d), d, &mut out);
    }
    out.sort();
    out
}

/// The corpus files the llama.cpp releases' loaders are run on
/// (`conformance/releases.json`): the case files, the older releases'
/// converter output (`models/converter-TAG/*.gguf`) and the fixed files of
/// `corpus/fixes` (neither in the readers matrix); paths relative to
/// `corpus/`, sorted.
pub fn release_files(root: &Path) -> Vec<String> {
    let mut out = case_files(root);
    // The fixed files of `gguf-validate fix` (corpus/fixes), which must load.
    for f in std::fs::read_dir(root.join("corpus/fixes")).into_iter().flatten().flatten() {
        let file = f.file_name().to_string_lossy().into_owned();
        if file.ends_with(".fixed.gguf") {
            out.push(format!("fixes/{file}"));
        }
    }
    let models = root.join("corpus/models");
    for dir in std::fs::read_dir(&models).into_iter().flatten().flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("converter-") && dir.path().is_dir()) {
            continue;
        }
        for f in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            let file = f.file_name().to_string_lossy().into_owned();
            if file.ends_with(".gguf") {
                out.push(format!("models/{name}/{file}"));
            }
        }
    }
    out.sort();
    out
}

/// Case files of the corpus that no row of `m` covers (as a row's file or a
/// shard of a split row), and rows whose file is gone.
pub fn coverage(root: &Path, m: &Matrix) -> (Vec<String>, Vec<String>) {
    let covered: std::collections::BTreeSet<&str> = m
        .rows
        .iter()
        .flat_map(|r| std::iter::once(r.file.file.as_str()).chain(r.file.shards.iter().map(String::as_str)))
        .collect();
    let files = case_files(root);
    let missing = files.iter().filter(|f| !covered.contains(f.as_str())).cloned().collect();
    let on_disk: std::collections::BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let gone = covered.iter().filter(|f| !on_disk.contains(**f)).map(|f| f.to_string()).collect();
    (missing, gone)
}

/// What a reader did with a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Exit 0.
    Accept,
    /// Exit 1.
    Reject,
    /// Any other exit status, a signal, or failure to start.
    Crash,
    /// Still running at the time limit (killed).
    Timeout,
}

/// JSONTestSuite's result classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A file that must be accepted was.
    ExpectedAccept,
    /// A file that must be rejected was.
    ExpectedReject,
    /// An implementation-defined file was accepted.
    ImplAccept,
    /// An implementation-defined file was rejected.
    ImplReject,
    /// A file that must be rejected was accepted.
    WrongAccept,
    /// A file that must be accepted was rejected.
    WrongReject,
    /// The reader crashed.
    Crash,
    /// The reader hit the time limit.
    Timeout,
}

impl Class {
    /// Every class, in legend order.
    pub const ALL: [Class; 8] = [
        Class::ExpectedAccept,
        Class::ExpectedReject,
        Class::ImplAccept,
        Class::ImplReject,
        Class::WrongAccept,
        Class::WrongReject,
        Class::Crash,
        Class::Timeout,
    ];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Class::ExpectedAccept => "expected-accept",
            Class::ExpectedReject => "expected-reject",
            Class::ImplAccept => "impl-accept",
            Class::ImplReject => "impl-reject",
            Class::WrongAccept => "wrong-accept",
            Class::WrongReject => "wrong-reject",
            Class::Crash => "crash",
            Class::Timeout => "timeout",
        }
    }

    /// Legend text.
    pub fn label(self) -> &'static str {
        match self {
            Class::ExpectedAccept => "expected accept",
            Class::ExpectedReject => "expected reject",
            Class::ImplAccept => "implementation-defined, accepted",
            Class::ImplReject => "implementation-defined, rejected",
            Class::WrongAccept => "wrong accept (must reject)",
            Class::WrongReject => "wrong reject (must accept)",
            Class::Crash => "crash (exit status other than 0/1, or a signal)",
            Class::Timeout => "timeout",
        }
    }

    fn colour(self) -> (&'static str, &'static str) {
        match self {
            Class::ExpectedAccept => ("#2e7d32", "#fff"),
            Class::ExpectedReject => ("#81c784", "#000"),
            Class::ImplAccept => ("#1e88e5", "#fff"),
            Class::ImplReject => ("#90caf9", "#000"),
            Class::WrongAccept => ("#ef6c00", "#fff"),
            Class::WrongReject => ("#ffcc80", "#000"),
            Class::Crash => ("#c62828", "#fff"),
            Class::Timeout => ("#4a148c", "#fff"),
        }
    }

    /// Whether the result is a failure of the reader.
    pub fn is_failure(self) -> bool {
        matches!(self, Class::WrongAccept | Class::WrongReject | Class::Crash | Class::Timeout)
    }
}

/// What a reader should do with a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Must accept.
    Accept,
    /// Must reject.
    Reject,
    /// Either is fine.
    Either,
}

/// The expectation for `reader` on `file`.
pub fn expectation(file: &CorpusFile, reader: &ReaderConfig) -> Expect {
    if let Some(v) = reader.profile.as_ref().and_then(|p| file.expected.get(p)) {
        return if *v == Verdict::Accept { Expect::Accept } else { Expect::Reject };
    }
    if !file.gguf {
        return Expect::Reject;
    }
    // libllama loads models: a projector, adapter or control vector is
    // not one, and another loader's verdict is its expectation.
    if reader.name == "libllama" && file.reference.as_ref().is_some_and(|r| r.by != "libllama") {
        return Expect::Either;
    }
    match file.prefix.as_str() {
        "y" => Expect::Accept,
        "n" => Expect::Reject,
        _ => Expect::Either,
    }
}

/// Classifies one result.
pub fn classify(expect: Expect, outcome: &Outcome) -> Class {
    match (outcome, expect) {
        (Outcome::Crash, _) => Class::Crash,
        (Outcome::Timeout, _) => Class::Timeout,
        (Outcome::Accept, Expect::Accept) => Class::ExpectedAccept,
        (Outcome::Reject, Expect::Reject) => Class::ExpectedReject,
        (Outcome::Accept, Expect::Either) => Class::ImplAccept,
        (Outcome::Reject, Expect::Either) => Class::ImplReject,
        (Outcome::Accept, Expect::Reject) => Class::WrongAccept,
        (Outcome::Reject, Expect::Accept) => Class::WrongReject,
    }
}

fn shell(command: &str, arg: Option<&Path>) -> Command {
    let mut script = command.trim().to_string();
    if arg.is_some() && !script.contains("$1") {
        script.push_str(" \"$1\"");
    }
    // exec: the adapter replaces the shell, so its signals reach us as signals.
    if !script.starts_with("exec ") && !script.contains(';') && !script.contains("&&") && !script.contains('|') {
        script.insert_str(0, "exec ");
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).arg("sh");
    if let Some(a) = arg {
        cmd.arg(a);
    }
    cmd
}

/// The name of a signal a reader died of.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => "signal",
    }
}

fn describe(status: ExitStatus) -> (Outcome, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => describe_code(c),
        (None, Some(s)) => (Outcome::Crash, Some(format!("signal {s} ({})", signal_name(s)))),
        (None, None) => (Outcome::Crash, Some("unknown status".into())),
    }
}

fn describe_code(code: i32) -> (Outcome, Option<String>) {
    match code {
        0 => (Outcome::Accept, None),
        1 => (Outcome::Reject, None),
        // a shell between the runner and the program reports its signal as 128 + N
        c if c > 128 && c < 160 => (Outcome::Crash, Some(format!("signal {} ({})", c - 128, signal_name(c - 128)))),
        101 => (Outcome::Crash, Some("exit 101 (Rust panic)".into())),
        c => (Outcome::Crash, Some(format!("exit {c}"))),
    }
}

/// The line of a crashed reader's output that says why: an assertion or
/// abort message, a Rust panic, a Python exception, a sanitizer report.
pub fn crash_line(output: &str) -> Option<String> {
    const MARKS: [&str; 9] = [
        "GGML_ASSERT",
        "GGML_ABORT",
        "Assertion",
        "panicked at",
        "terminate called",
        "AddressSanitizer",
        "Segmentation fault",
        "Fatal Python error",
        "Error:",
    ];
    let lines: Vec<&str> = output.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    for mark in MARKS {
        if let Some(i) = lines.iter().position(|l| l.contains(mark)) {
            let mut line = lines.get(i).copied().unwrap_or_default().to_string();
            // a Rust panic puts its message on the next line
            if mark == "panicked at" {
                if let Some(next) = lines.get(i + 1) {
                    line = format!("{line} {next}");
                }
            }
            return Some(clip(&line, 200));
        }
    }
    // a Python traceback ends in the exception
    if lines.iter().any(|l| l.starts_with("Traceback")) {
        return lines.last().map(|l| clip(l, 200));
    }
    None
}

/// At most `n` characters of `s` (an ellipsis marks a cut).
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The excerpt of a reader's output kept in a cell: its last non-empty
/// lines, made readable, at most `EXCERPT_CHARS` characters.
pub const EXCERPT_CHARS: usize = 320;

fn excerpt(output: &str, root: &str) -> Option<String> {
    let text = crate::readable::readable(output, Some(root));
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut len = 0;
    for l in lines.iter().rev() {
        len += l.chars().count() + 1;
        kept.push(l);
        if len >= EXCERPT_CHARS || kept.len() >= 6 {
            break;
        }
    }
    kept.reverse();
    let joined = kept.join("\n");
    if joined.is_empty() {
        return None;
    }
    let n = joined.chars().count();
    Some(if n > EXCERPT_CHARS {
        format!("…{}", joined.chars().skip(n - EXCERPT_CHARS + 1).collect::<String>())
    } else {
        joined
    })
}

/// Reads at most the last `max` bytes of a file.
fn tail(path: &Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > max {
        let _ = f.seek(SeekFrom::Start(len - max));
    }
    let mut buf = Vec::new();
    let _ = f.take(max).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

static CAPTURE: AtomicUsize = AtomicUsize::new(0);

/// What one run of a reader on one file gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// Accept, reject, crash, timeout.
    pub outcome: Outcome,
    /// For a crash or timeout: the status and the line that says why.
    pub detail: Option<String>,
    /// The end of what the reader printed (stdout and stderr), readable.
    pub excerpt: Option<String>,
}

/// Runs one reader on one file (path relative to `root`), capturing what
/// it prints (stdout and stderr together, the last 64 KiB).
pub fn run_one(root: &Path, reader: &ReaderConfig, file: &Path, limit: Duration) -> RunResult {
    run_captured(root, &reader.command, file, limit, 64 * 1024).result()
}

/// What [`run_together`] captures of a run for several readers: each
/// profile's section in full (an excerpt is taken from each section's end).
const TOGETHER_CAPTURE: u64 = 4 * 1024 * 1024;

/// The sections of an `--every-profile` output: profile, exit code, text.
fn sections(output: &str) -> Vec<(&str, i32, String)> {
    let mut found: Vec<(&str, i32, String)> = Vec::new();
    for line in output.split_inclusive('\n') {
        let head = line.strip_prefix("== profile ").and_then(|r| r.trim_end().strip_suffix(") =="));
        match head.and_then(|h| h.split_once(" (exit ")).and_then(|(p, c)| Some((p, c.parse().ok()?))) {
            Some((p, c)) => found.push((p, c, String::new())),
            None => {
                if let Some((_, _, text)) = found.last_mut() {
                    text.push_str(line);
                }
            }
        }
    }
    found
}

/// Runs the `together` command of `readers` (which share it) once on one
/// file and gives each reader's result: its profile's section judged as
/// its own run would be (the section's exit code, the excerpt of its
/// text), or, when the run as a whole crashed, timed out or printed no
/// section for a profile, what the run gave.
pub fn run_together(root: &Path, readers: &[&ReaderConfig], file: &Path, limit: Duration) -> Vec<RunResult> {
    let command = readers.first().and_then(|r| r.together.as_deref()).unwrap_or_default();
    let run = run_captured(root, command, file, limit, TOGETHER_CAPTURE);
    // The run's own status is the worst of its sections': only a plain
    // exit (0, 1 or 2) has sections to judge by.
    if !matches!(&run.status, Ok(s) if matches!(s.code(), Some(0..=2))) {
        return readers.iter().map(|_| run.result()).collect();
    }
    let parts = sections(&run.output);
    readers
        .iter()
        .map(|r| {
            let part = r.profile.as_deref().and_then(|p| parts.iter().find(|(name, ..)| *name == p));
            match part {
                Some((_, code, text)) => {
                    let (outcome, detail) = describe_code(*code);
                    result_of(outcome, detail, text, &run.root)
                }
                None => RunResult {
                    outcome: Outcome::Crash,
                    detail: Some(format!(
                        "the output has no section for profile {}",
                        r.profile.as_deref().unwrap_or("(none)")
                    )),
                    excerpt: excerpt(&run.output, &run.root),
                },
            }
        })
        .collect()
}

/// A run as captured: its exit status (or a timeout, or why it could not
/// be waited for), the end of its output, and the root as its paths show it.
struct Captured {
    status: Result<ExitStatus, (Outcome, String)>,
    output: String,
    root: String,
}

impl Captured {
    /// The run's result as a whole: its status, and its output.
    fn result(&self) -> RunResult {
        let (outcome, detail) = match &self.status {
            Ok(status) => describe(*status),
            Err((o, d)) => (o.clone(), Some(d.clone())),
        };
        result_of(outcome, detail, &self.output, &self.root)
    }
}

/// A result from an outcome and the output it printed: the crash line
/// added to a crash's detail, an excerpt of the output's end.
fn result_of(outcome: Outcome, mut detail: Option<String>, output: &str, root_text: &str) -> RunResult {
    if outcome == Outcome::Crash {
        if let (Some(d), Some(line)) = (detail.as_mut(), crash_line(output)) {
            d.push_str(": ");
            d.push_str(&crate::readable::readable(&line, Some(root_text)));
        }
    }
    RunResult { outcome, detail, excerpt: excerpt(output, root_text) }
}

/// Runs `command` on one file (path relative to `root`) under `limit`,
/// capturing the last `max` bytes of what it prints (stdout and stderr
/// together).
fn run_captured(root: &Path, command: &str, file: &Path, limit: Duration, max: u64) -> Captured {
    let mut cmd = shell(command, Some(file));
    let log = std::env::temp_dir().join(format!(
        "gguf-matrix-{}-{}.log",
        std::process::id(),
        CAPTURE.fetch_add(1, Ordering::SeqCst)
    ));
    let (out, err) = match std::fs::File::create(&log).and_then(|f| f.try_clone().map(|g| (f, g))) {
        Ok((f, g)) => (Stdio::from(f), Stdio::from(g)),
        Err(_) => (Stdio::null(), Stdio::null()),
    };
    cmd.current_dir(root).stdin(Stdio::null()).stdout(out).stderr(err);
    let root_text = root.canonicalize().unwrap_or_else(|_| root.to_path_buf()).to_string_lossy().into_owned();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&log);
            let status = Err((Outcome::Crash, format!("cannot start: {e}")));
            return Captured { status, output: String::new(), root: root_text };
        }
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                break Err((Outcome::Timeout, format!("killed after {} s", limit.as_secs())));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => break Err((Outcome::Crash, format!("wait failed: {e}"))),
        }
    };
    let output = tail(&log, max);
    let _ = std::fs::remove_file(&log);
    Captured { status, output, root: root_text }
}

/// The first line a reader's version command prints (or why there is none).
pub fn reader_version(root: &Path, reader: &ReaderConfig) -> String {
    let Some(v) = &reader.version else { return "unknown".into() };
    let out = shell(v, None).current_dir(root).stdin(Stdio::null()).stderr(Stdio::null()).output();
    match out {
        Ok(o) if o.status.success() => {
            String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("unknown").trim().to_string()
        }
        Ok(o) => format!("unavailable (version command exited {})", o.status.code().unwrap_or(-1)),
        Err(e) => format!("unavailable ({e})"),
    }
}

/// One cell of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// What the reader did.
    pub outcome: Outcome,
    /// How that is scored.
    pub class: Class,
    /// Exit status or signal for crashes and timeouts, with the abort,
    /// assertion or panic line when the reader printed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The end of what the reader printed, readable (see [`crate::readable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// A reader as recorded in the results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderResult {
    /// The reader's configuration.
    #[serde(flatten)]
    pub config: ReaderConfig,
    /// Version as its version command printed it.
    pub version_found: String,
    /// Count per class.
    pub summary: BTreeMap<Class, usize>,
}

/// One row: a file and every reader's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// The file and its expectations.
    #[serde(flatten)]
    pub file: CorpusFile,
    /// Result per reader name.
    pub results: BTreeMap<String, Cell>,
}

/// The whole matrix (`conformance/matrix.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matrix {
    /// Per-file time limit, seconds.
    pub timeout_secs: u64,
    /// The readers, in column order.
    pub readers: Vec<ReaderResult>,
    /// One row per corpus file.
    pub rows: Vec<Row>,
    /// The llama.cpp releases' loaders on the corpus models (`releases.json`
    /// beside `matrix.json`, see [`crate::releases`]): one column per
    /// release. Read by [`Matrix::read`], never written into `matrix.json`.
    #[serde(skip)]
    pub releases: Option<Releases>,
}

/// Runs every reader over every file, `jobs` processes at a time.
/// `progress` is called after each run with (done, total).
pub fn run(
    root: &Path,
    readers: &[ReaderConfig],
    files: Vec<CorpusFile>,
    limit: Duration,
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Matrix {
    let corpus = Path::new("corpus");
    // The readers in runs: one reader alone, or the readers sharing a
    // `together` command (one run of it per file for all of them).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (r, reader) in readers.iter().enumerate() {
        let shared = reader.together.as_ref().and_then(|t| {
            groups.iter().position(|g| g.first().and_then(|i| readers.get(*i)?.together.as_ref()) == Some(t))
        });
        match shared.and_then(|g| groups.get_mut(g)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    // a reader scoped to some files (`files`) runs on those only
    let runs = |g: usize, f: usize| {
        let reader = groups.get(g).and_then(|group| group.first()).and_then(|r| readers.get(*r));
        match (reader, files.get(f)) {
            (Some(reader), Some(file)) => reader.runs_on(&file.file),
            _ => false,
        }
    };
    let tasks: Vec<(usize, usize)> =
        (0..files.len()).flat_map(|f| (0..groups.len()).map(move |g| (g, f))).filter(|&(g, f)| runs(g, f)).collect();
    let cells_total = tasks.iter().map(|(g, _)| groups.get(*g).map_or(0, Vec::len)).sum();
    let results: Mutex<BTreeMap<(usize, usize), Cell>> = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(g, f)) = tasks.get(i) else { break };
                    let (Some(group), Some(file)) = (groups.get(g), files.get(f)) else { break };
                    let members: Vec<&ReaderConfig> = group.iter().filter_map(|r| readers.get(*r)).collect();
                    let Some(first) = members.first() else { break };
                    let limit = first.timeout_secs.map_or(limit, Duration::from_secs);
                    let path = corpus.join(&file.file);
                    let got = match first.together {
                        Some(_) => run_together(root, &members, &path, limit),
                        None => vec![run_one(root, first, &path, limit)],
                    };
                    for ((r, reader), res) in group.iter().zip(&members).zip(got) {
                        let class = classify(expectation(file, reader), &res.outcome);
                        if let Ok(mut m) = results.lock() {
                            m.insert(
                                (*r, f),
                                Cell { outcome: res.outcome, class, detail: res.detail, excerpt: res.excerpt },
                            );
                        }
                        progress(done.fetch_add(1, Ordering::SeqCst) + 1, cells_total);
                    }
                }
            });
        }
    });
    let mut cells = results.into_inner().unwrap_or_default();
    let out_readers = readers
        .iter()
        .map(|config| ReaderResult {
            config: config.clone(),
            version_found: reader_version(root, config),
            summary: BTreeMap::new(),
        })
        .collect();
    let rows = files
        .into_iter()
        .enumerate()
        .map(|(f, file)| {
            let results = readers
                .iter()
                .enumerate()
                .filter_map(|(r, reader)| cells.remove(&(r, f)).map(|c| (reader.name.clone(), c)))
                .collect();
            Row { file, results }
        })
        .collect();
    let mut m = Matrix { timeout_secs: limit.as_secs(), readers: out_readers, rows, releases: None };
    m.summarise();
    m
}

/// The loader contract of one reader: what it does with the tiny models,
/// projectors, LoRA adapters and control vectors (`corpus/models/`) and the
/// diffusion models (`corpus/diffusion/`) against their loader's verdict
/// (the row's [`Reference`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoaderContract {
    /// Files their loader refuses, and how many of them this reader rejects.
    pub refused: usize,
    /// Of `refused`, rejected by this reader.
    pub refused_rejected: usize,
    /// Files their loader crashes on.
    pub crash: usize,
    /// Of `crash`, rejected by this reader.
    pub crash_rejected: usize,
    /// Files their loader loads.
    pub loads: usize,
    /// Of `loads`, rejected by this reader (or crashed on).
    pub loads_rejected: usize,
}

impl Matrix {
    /// Recomputes every reader's count per class from the rows.
    pub fn summarise(&mut self) {
        for r in &mut self.readers {
            let mut summary: BTreeMap<Class, usize> = Class::ALL.iter().map(|c| (*c, 0)).collect();
            for row in &self.rows {
                if let Some(c) = row.results.get(&r.config.name) {
                    *summary.entry(c.class).or_default() += 1;
                }
            }
            r.summary = summary;
        }
    }

    /// Refreshes every row's case (description, expectation, reference)
    /// from `corpus` and classifies its cells again: what a change of
    /// expectation does to results already run.
    pub fn refresh(&mut self, corpus: Vec<CorpusFile>) {
        let mut by_file: BTreeMap<String, CorpusFile> = corpus.into_iter().map(|f| (f.file.clone(), f)).collect();
        for row in &mut self.rows {
            if let Some(file) = by_file.remove(&row.file.file) {
                row.file = file;
            }
            for r in &self.readers {
                if let Some(c) = row.results.get_mut(&r.config.name) {
                    c.class = classify(expectation(&row.file, &r.config), &c.outcome);
                }
            }
        }
        self.summarise();
    }

    /// Applies [`readable`](crate::readable::readable) to every captured
    /// text again (results of older runs, or adapters that printed paths
    /// the runner's root did not cover).
    pub fn make_readable(&mut self) {
        use crate::readable::readable;
        for row in &mut self.rows {
            for c in row.results.values_mut() {
                c.detail = c.detail.as_deref().map(|d| readable(d, None));
                c.excerpt = c.excerpt.as_deref().map(|d| readable(d, None));
            }
        }
        for r in &mut self.readers {
            r.version_found = readable(&r.version_found, None);
        }
    }

    /// Reads `matrix.json`.
    pub fn from_json(text: &str) -> Result<Matrix, String> {
        serde_json::from_str(text).map_err(|e| format!("matrix.json: {e}"))
    }

    /// Reads `dir/matrix.json` and, when it is there, `dir/releases.json`
    /// (the release columns).
    pub fn read(dir: &Path) -> Result<Matrix, String> {
        let text = std::fs::read_to_string(dir.join("matrix.json")).map_err(|e| format!("matrix.json: {e}"))?;
        let mut m = Matrix::from_json(&text)?;
        m.releases = Releases::read(dir)?;
        Ok(m)
    }

    /// `self` (a new run of some readers over some cases) merged into
    /// `old`: one row per case of `corpus` (the corpus as it is now, in its
    /// order), with this run's cells and `old`'s cells for what this run
    /// did not run; readers in `order` (by name; others after).
    pub fn merged_into(self, old: Matrix, order: &[String], corpus: Vec<CorpusFile>) -> Matrix {
        let ran: Vec<String> = self.readers.iter().map(|r| r.config.name.clone()).collect();
        let mut readers: Vec<ReaderResult> =
            old.readers.into_iter().filter(|r| !ran.contains(&r.config.name)).chain(self.readers).collect();
        readers.sort_by_key(|r| order.iter().position(|n| *n == r.config.name).unwrap_or(usize::MAX));
        let mut old_rows: BTreeMap<String, Row> = old.rows.into_iter().map(|r| (r.file.file.clone(), r)).collect();
        let mut new_rows: BTreeMap<String, Row> = self.rows.into_iter().map(|r| (r.file.file.clone(), r)).collect();
        let rows = corpus
            .into_iter()
            .map(|file| {
                let mut results = old_rows.remove(&file.file).map(|r| r.results).unwrap_or_default();
                if let Some(new) = new_rows.remove(&file.file) {
                    results.extend(new.results);
                }
                Row { file, results }
            })
            .collect();
        let mut m = Matrix { timeout_secs: self.timeout_secs, readers, rows, releases: self.releases.or(old.releases) };
        m.summarise();
        m
    }

    /// The loader contract of `reader` (see [`LoaderContract`]).
    pub fn loader_contract(&self, reader: &str) -> LoaderContract {
        let mut c = LoaderContract::default();
        for row in self.rows.iter().filter(|r| r.file.set == "models" || r.file.set == "diffusion") {
            let (Some(reference), Some(cell)) = (&row.file.reference, row.results.get(reader)) else { continue };
            let rejected = cell.outcome != Outcome::Accept;
            match reference.verdict.as_str() {
                "yes" => {
                    c.loads += 1;
                    c.loads_rejected += usize::from(rejected);
                }
                "crash" => {
                    c.crash += 1;
                    c.crash_rejected += usize::from(cell.outcome == Outcome::Reject);
                }
                _ => {
                    c.refused += 1;
                    c.refused_rejected += usize::from(cell.outcome == Outcome::Reject);
                }
            }
        }
        c
    }

    /// Rows whose expectation a `gguf-validate` profile reader misses
    /// (only where the case states that profile's verdict).
    pub fn own_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            for r in self.readers.iter().filter(|r| r.config.profile.is_some()) {
                let stated = r.config.profile.as_ref().is_some_and(|p| row.file.expected.contains_key(p));
                if let Some(c) = row.results.get(&r.config.name).filter(|c| c.class.is_failure() && stated) {
                    out.push(format!("{}: {}: {}", r.config.name, row.file.file, c.class.name()));
                }
            }
        }
        out
    }

    /// `matrix.json`.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    fn code(c: &Cell) -> &'static str {
        match c.outcome {
            Outcome::Accept => "A",
            Outcome::Reject => "R",
            Outcome::Crash => "CRASH",
            Outcome::Timeout => "TIME",
        }
    }

    /// `MATRIX.md`: readers, summary, and every file some reader got wrong.
    pub fn to_markdown(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "# Cross-reader conformance matrix\n");
        let _ = writeln!(
            o,
            "Generated by `cargo run -p gguf-conformance -- matrix` (see `conformance/README.md`); do not edit by hand. \
             {} corpus cases × {} readers, per-file time limit {} s (some readers set their own). The HTML grid of every \
             result is `matrix.html`, the raw data `matrix.json` (with each reader's output excerpt), the full report \
             `gguf-conformance report`.\n",
            self.rows.len(),
            self.readers.len(),
            self.timeout_secs
        );
        let _ = writeln!(
            o,
            "Scoring (JSONTestSuite): a reader's expected verdict is the file's prefix (`y_` accept, `n_` reject, `i_` either); \
             the `gguf-validate` readers are scored against their profile's verdict; files that are not GGUF (`corpus/legacy/`) \
             must be rejected by every other reader. Exit 0 = accept, 1 = reject, anything else or a signal = crash.\n"
        );
        let _ = writeln!(o, "## Readers\n\n| reader | version | command |\n|---|---|---|");
        for r in &self.readers {
            let _ =
                writeln!(o, "| {} | {} | `{}` |", r.config.name, md_cell(&r.version_found), md_cell(&r.config.command));
        }
        let _ = write!(o, "\n## Summary\n\n| reader |");
        for c in Class::ALL {
            let _ = write!(o, " {} |", c.name());
        }
        let _ = write!(o, "\n|---|");
        for _ in Class::ALL {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        for r in &self.readers {
            let _ = write!(o, "| {} |", r.config.name);
            for c in Class::ALL {
                let _ = write!(o, " {} |", r.summary.get(&c).copied().unwrap_or(0));
            }
            let _ = writeln!(o);
        }
        let _ =
            writeln!(o, "\n## Cases by corpus directory\n\n| directory | cases | y | n | i |\n|---|---|---|---|---|");
        let mut sets: Vec<&str> = Vec::new();
        for row in &self.rows {
            if !sets.contains(&row.file.set.as_str()) {
                sets.push(&row.file.set);
            }
        }
        for set in &sets {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.file.set == *set).collect();
            let n = |p: &str| rows.iter().filter(|r| r.file.prefix == p).count();
            let _ = writeln!(o, "| `{set}/` | {} | {} | {} | {} |", rows.len(), n("y"), n("n"), n("i"));
        }
        let _ = writeln!(
            o,
            "\n## Crashes\n\nEvery crash (an exit status other than 0 and 1, or a signal) with its class: the status or signal and \
             the abort, assertion or panic line the reader printed.\n\n| reader | file | crash |\n|---|---|---|"
        );
        let mut crashes = 0;
        for r in &self.readers {
            for row in &self.rows {
                if let Some(c) = row.results.get(&r.config.name).filter(|c| c.outcome == Outcome::Crash) {
                    crashes += 1;
                    let _ = writeln!(
                        o,
                        "| {} | `{}` | {} |",
                        r.config.name,
                        row.file.file,
                        md_cell(c.detail.as_deref().unwrap_or("crash"))
                    );
                }
            }
        }
        if crashes == 0 {
            let _ = writeln!(o, "| (none) | | |");
        }
        let _ = writeln!(
            o,
            "\n## Loader contract (`corpus/models/`, `corpus/diffusion/`)\n\nThe tiny models, projectors, LoRA adapters, control vectors, importance matrices and diffusion models against \
             their loader's verdict (their manifests): libllama for models, text models and bases, libmtmd for projectors \
             (`models/mmproj/`), `llama_adapter_lora_init + llama_decode` for LoRA adapters (`models/lora/`: loaded, set on a context and applied), `common_control_vector_load` for \
             control vectors (`models/cvec/`), `llama-quantize --imatrix` for importance matrices (`models/imatrix/`), stable-diffusion.cpp's `new_sd_ctx` for diffusion models (`diffusion/`). Of the files their loader refuses or crashes on, how many each reader rejects; of \
             those it loads, how many each reader rejects or crashes on.\n\n| reader | refused by the loader: rejected | crash in \
             the loader: rejected | loaded by the loader: rejected |\n|---|---|---|---|"
        );
        for r in &self.readers {
            let c = self.loader_contract(&r.config.name);
            let _ = writeln!(
                o,
                "| {} | {} of {} | {} of {} | {} of {} |",
                r.config.name, c.refused_rejected, c.refused, c.crash_rejected, c.crash, c.loads_rejected, c.loads
            );
        }
        let _ = write!(
            o,
            "\nPer file (its loader refuses or crashes on it; A accept, R reject):\n\n| file | loader (libllama, libmtmd, LoRA, cvec, imatrix) |"
        );
        for r in &self.readers {
            let _ = write!(o, " {} |", r.config.name);
        }
        let _ = write!(o, "\n|---|---|");
        for _ in &self.readers {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        for row in self.rows.iter().filter(|r| r.file.reference.as_ref().is_some_and(|x| x.verdict != "yes")) {
            let loader = row.file.reference.as_ref().map(|x| format!("{}: {}", x.by, x.verdict)).unwrap_or_default();
            let _ = write!(o, "| `{}` | {loader} |", row.file.file);
            for r in &self.readers {
                let _ = write!(o, " {} |", row.results.get(&r.config.name).map_or("-", Self::code));
            }
            let _ = writeln!(o);
        }
        if let Some(rel) = &self.releases {
            rel.write_markdown(&mut o);
        }
        let _ = writeln!(
            o,
            "\n## Files some reader got wrong, crashed on or timed out on\n\n\
             Cells: A accept, R reject, CRASH, TIME; **bold** = wrong, crash or timeout for that reader.\n"
        );
        let _ = write!(o, "| file |");
        for r in &self.readers {
            let _ = write!(o, " {} |", r.config.name);
        }
        let _ = write!(o, "\n|---|");
        for _ in &self.readers {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        let mut any = false;
        for row in &self.rows {
            if !row.results.values().any(|c| c.class.is_failure()) {
                continue;
            }
            any = true;
            let _ = write!(o, "| `{}` |", row.file.file);
            for r in &self.readers {
                match row.results.get(&r.config.name) {
                    Some(c) if c.class.is_failure() => {
                        let _ = write!(o, " **{}** |", Self::code(c));
                    }
                    Some(c) => {
                        let _ = write!(o, " {} |", Self::code(c));
                    }
                    None => {
                        let _ = write!(o, " - |");
                    }
                }
            }
            let _ = writeln!(o);
        }
        if !any {
            let _ = writeln!(o, "| (none) |");
        }
        o
    }

    /// `matrix.html`: a self-contained, coloured readers × files grid.
    pub fn to_html(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>GGUF cross-reader conformance matrix</title>\n<style>"
        );
        let _ = writeln!(
            o,
            "body{{font:13px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}}table{{border-collapse:collapse}}\
             td,th{{border:1px solid #ccc;padding:2px 6px}}th{{background:#eee;position:sticky;top:0}}\
             td.f{{font-family:monospace;white-space:nowrap}}td.c{{text-align:center;font-weight:600;min-width:3.5em}}\
             tr.g td{{background:#333;color:#fff;font-weight:600}}td.x{{font-family:monospace;color:#555}}\
             .legend span{{display:inline-block;padding:1px 8px;margin:2px 4px 2px 0;border-radius:3px}}"
        );
        for c in Class::ALL {
            let (bg, fg) = c.colour();
            let _ = writeln!(o, ".{}{{background:{bg};color:{fg}}}", c.name());
        }
        let _ = writeln!(o, "{}", crate::releases::CSS);
        let _ = writeln!(o, "</style></head><body>\n<h1>GGUF cross-reader conformance matrix</h1>");
        let _ = writeln!(
            o,
            "<p>{} corpus files × {} readers; per-file time limit {} s. Expected verdict: the file's prefix (<code>y_</code> accept, \
             <code>n_</code> reject, <code>i_</code> either); <code>gguf-validate</code> readers against their profile's verdict; \
             non-GGUF legacy files must be rejected by the other readers. Generated by <code>gguf-conformance matrix</code>.</p>",
            self.rows.len(),
            self.readers.len(),
            self.timeout_secs
        );
        let _ = writeln!(o, "<div class=\"legend\">");
        for c in Class::ALL {
            let _ = write!(o, "<span class=\"{}\">{}</span>", c.name(), esc(c.label()));
        }
        let _ = writeln!(o, "</div>\n<h2>Readers</h2>\n<table><tr><th>reader</th><th>version</th><th>command</th>");
        for c in Class::ALL {
            let _ = write!(o, "<th class=\"{}\">{}</th>", c.name(), c.name());
        }
        let _ = writeln!(o, "</tr>");
        for r in &self.readers {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td class=\"x\">{}</td>",
                esc(&r.config.name),
                esc(&r.version_found),
                esc(&r.config.command)
            );
            for c in Class::ALL {
                let _ = write!(o, "<td class=\"c\">{}</td>", r.summary.get(&c).copied().unwrap_or(0));
            }
            let _ = writeln!(o, "</tr>");
        }
        let tags: Vec<&str> = self.releases.iter().flat_map(|x| x.releases.iter().map(|r| r.tag.as_str())).collect();
        let _ = writeln!(o, "</table>");
        if let Some(rel) = &self.releases {
            rel.write_html(&mut o);
        }
        let _ = writeln!(
            o,
            "<h2>Results</h2>\n<table><tr><th>file</th><th>strict / spec / ggml, or the loader's verdict</th>"
        );
        for r in &self.readers {
            let _ = write!(o, "<th>{}</th>", esc(&r.config.name));
        }
        for tag in &tags {
            let _ = write!(o, "<th class=\"rel\">llama.cpp {}</th>", esc(tag));
        }
        let _ = writeln!(o, "</tr>");
        let mut group = String::new();
        for row in &self.rows {
            let g = format!("{}: {}", row.file.set, row.file.group);
            if g != group {
                group = g;
                let _ = writeln!(
                    o,
                    "<tr class=\"g\"><td colspan=\"{}\">{}</td></tr>",
                    self.readers.len() + tags.len() + 2,
                    esc(&group)
                );
            }
            // a model, projector, adapter or control vector: its loader's verdict
            let (exp, exp_title) = match &row.file.reference {
                Some(x) => (format!("{}: {}", x.by, x.verdict), x.detail.clone()),
                None => {
                    let exp: Vec<&str> = ["strict", "spec", "ggml"]
                        .iter()
                        .map(|p| match row.file.expected.get(*p) {
                            Some(Verdict::Accept) => "A",
                            Some(Verdict::Reject) => "R",
                            None => "-",
                        })
                        .collect();
                    (exp.join(" "), String::new())
                }
            };
            let _ = write!(
                o,
                "<tr><td class=\"f\" title=\"{}\">{}</td><td class=\"c\" title=\"{}\">{}</td>",
                esc(&row.file.description),
                esc(&row.file.file),
                esc(&exp_title),
                esc(&exp)
            );
            for r in &self.readers {
                match row.results.get(&r.config.name) {
                    Some(c) => {
                        let title = format!(
                            "{} — {}: {}{}",
                            row.file.file,
                            r.config.name,
                            c.class.label(),
                            c.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
                        );
                        let _ = write!(
                            o,
                            "<td class=\"c {}\" title=\"{}\">{}</td>",
                            c.class.name(),
                            esc(&title),
                            Self::code(c)
                        );
                    }
                    None => {
                        let _ = write!(o, "<td class=\"c\">-</td>");
                    }
                }
            }
            if let Some(rel) = &self.releases {
                let of = rel.of(&row.file.file);
                for tag in &tags {
                    match of.get(tag) {
                        Some(v) => {
                            let _ = write!(
                                o,
                                "<td class=\"c {}\" title=\"{}\">{}</td>",
                                v.css(),
                                esc(&v.title()),
                                esc(&v.code())
                            );
                        }
                        None => {
                            let _ = write!(o, "<td class=\"c\">-</td>");
                        }
                    }
                }
            }
            let _ = writeln!(o, "</tr>");
        }
        let _ = writeln!(o, "</table>\n</body></html>");
        o
    }
}

/// Text for a markdown table cell.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_jsontestsuite() {
        assert_eq!(classify(Expect::Accept, &Outcome::Accept), Class::ExpectedAccept);
        assert_eq!(classify(Expect::Reject, &Outcome::Reject), Class::ExpectedReject);
        assert_eq!(classify(Expect::Either, &Outcome::Accept), Class::ImplAccept);
        assert_eq!(classify(Expect::Either, &Outcome::Reject), Class::ImplReject);
        assert_eq!(classify(Expect::Reject, &Outcome::Accept), Class::WrongAccept);
        assert_eq!(classify(Expect::Accept, &Outcome::Reject), Class::WrongReject);
        assert_eq!(classify(Expect::Either, &Outcome::Crash), Class::Crash);
        assert_eq!(classify(Expect::Accept, &Outcome::Timeout), Class::Timeout);
    }

    #[test]
    fn profile_readers_are_scored_against_their_profile() {
        let file = CorpusFile {
            expected: [("strict".to_string(), Verdict::Reject), ("ggml".to_string(), Verdict::Accept)]
                .into_iter()
                .collect(),
            ..gguf_case("gguf/i_x.gguf", "kv", "i")
        };
        let mut reader = true_reader("r", None);
        assert_eq!(expectation(&file, &reader), Expect::Either);
        reader.profile = Some("strict".into());
        assert_eq!(expectation(&file, &reader), Expect::Reject);
        reader.profile = Some("ggml".into());
        assert_eq!(expectation(&file, &reader), Expect::Accept);
        let legacy = CorpusFile { gguf: false, prefix: "y".into(), ..file };
        reader.profile = None;
        assert_eq!(expectation(&legacy, &reader), Expect::Reject);
    }

    #[test]
    fn exit_statuses_map_to_outcomes() {
        let root = Path::new(".");
        let limit = Duration::from_secs(5);
        let r = |cmd: &str| ReaderConfig {
            name: "t".into(),
            command: cmd.into(),
            version: None,
            profile: None,
            description: String::new(),
            timeout_secs: None,
            together: None,
            files: None,
        };
        assert_eq!(run_one(root, &r("sh -c 'exit 0'"), Path::new("x"), limit).outcome, Outcome::Accept);
        assert_eq!(run_one(root, &r("sh -c 'exit 1'"), Path::new("x"), limit).outcome, Outcome::Reject);
        assert_eq!(run_one(root, &r("sh -c 'exit 2'"), Path::new("x"), limit).outcome, Outcome::Crash);
        assert_eq!(run_one(root, &r("sh -c 'kill -ABRT $$'"), Path::new("x"), limit).outcome, Outcome::Crash);
        assert_eq!(
            run_one(root, &r("sh -c 'sleep 5' --"), Path::new("x"), Duration::from_millis(200)).outcome,
            Outcome::Timeout
        );
    }

    /// Readers sharing a `together` command: each takes its profile's
    /// section (its exit code and the excerpt of its text); a run that
    /// crashed or timed out as a whole, or printed no section for a
    /// profile, gives that to each reader.
    #[test]
    fn readers_run_together_take_their_profiles_section() {
        let root = Path::new(".");
        let limit = Duration::from_secs(5);
        let r = |profile: &str, together: &str| ReaderConfig {
            name: format!("v {profile}"),
            command: "false".into(),
            version: None,
            profile: Some(profile.into()),
            description: String::new(),
            timeout_secs: None,
            together: Some(together.into()),
            files: None,
        };
        let three = |together: &str| [r("strict", together), r("spec", together), r("ggml", together)];
        let run = |readers: &[ReaderConfig], limit| {
            let refs: Vec<&ReaderConfig> = readers.iter().collect();
            run_together(root, &refs, Path::new("x"), limit)
        };
        let printed = "printf '== profile strict (exit 1) ==\\nx: INVALID (profile strict)\\n  error[a] 0x0 kv[0]\\n\
                       == profile spec (exit 0) ==\\nx: valid (profile spec)\\n\
                       == profile ggml (exit 2) ==\\nx: unreadable\\n'; exit 2";
        let got = run(&three(&format!("sh -c \"{printed}\" --")), limit);
        let outcomes: Vec<Outcome> = got.iter().map(|g| g.outcome.clone()).collect();
        assert_eq!(outcomes, [Outcome::Reject, Outcome::Accept, Outcome::Crash]);
        assert_eq!(got[0].excerpt.as_deref(), Some("x: INVALID (profile strict)\n  error[a] 0x0 kv[0]"));
        assert_eq!(got[1].excerpt.as_deref(), Some("x: valid (profile spec)"));
        assert_eq!((got[2].detail.as_deref(), got[2].excerpt.as_deref()), (Some("exit 2"), Some("x: unreadable")));
        // A crash of the whole run.
        let got = run(&three("sh -c 'echo \"thread main panicked at a.rs:1:1:\"; echo boom; exit 101' --"), limit);
        for g in &got {
            assert_eq!(g.outcome, Outcome::Crash);
            assert_eq!(g.detail.as_deref(), Some("exit 101 (Rust panic): thread main panicked at a.rs:1:1: boom"));
        }
        // A timeout of the whole run.
        let got = run(&three("sh -c 'sleep 5' --"), Duration::from_millis(200));
        assert!(got.iter().all(|g| g.outcome == Outcome::Timeout), "{got:?}");
        // No section for a profile.
        let got = run(&three("sh -c \"printf '== profile strict (exit 0) ==\\nok\\n'\" --"), limit);
        assert_eq!(got[0].outcome, Outcome::Accept);
        assert_eq!(got[1].outcome, Outcome::Crash);
        assert_eq!(got[1].detail.as_deref(), Some("the output has no section for profile spec"));
    }

    #[test]
    fn crashes_keep_their_class_and_output_its_end() {
        let root = Path::new(".");
        let r = |cmd: &str| ReaderConfig {
            name: "t".into(),
            command: cmd.into(),
            version: None,
            profile: None,
            description: String::new(),
            timeout_secs: None,
            together: None,
            files: None,
        };
        let limit = Duration::from_secs(5);
        let abort = run_one(
            root,
            &r(
                "sh -c 'echo loading >&2; echo \"/tmp/pip-req-build-ab12/vendor/llama.cpp/ggml/src/gguf.cpp:12: GGML_ASSERT(x) failed\" >&2; kill -ABRT $$'",
            ),
            Path::new("x"),
            limit,
        );
        assert_eq!(abort.outcome, Outcome::Crash);
        assert_eq!(abort.detail.as_deref(), Some("signal 6 (SIGABRT): ggml/src/gguf.cpp:12: GGML_ASSERT(x) failed"));
        let e = abort.excerpt.unwrap_or_default();
        assert!(e.starts_with("loading\nggml/src/gguf.cpp:12: GGML_ASSERT(x) failed"), "{e}");
        let panic = run_one(
            root,
            &r("sh -c 'echo \"thread main panicked at src/file.rs:9:5:\"; echo \"index out of range\"; exit 101'"),
            Path::new("x"),
            limit,
        );
        assert_eq!(
            panic.detail.as_deref(),
            Some("exit 101 (Rust panic): thread main panicked at src/file.rs:9:5: index out of range")
        );
        let quiet = run_one(root, &r("sh -c 'exit 0'"), Path::new("x"), limit);
        assert_eq!((quiet.detail, quiet.excerpt), (None, None));
        // a long output keeps its end, within the bound
        let long = run_one(root, &r("sh -c 'seq 1 5000; echo last line; exit 1'"), Path::new("x"), limit);
        let e = long.excerpt.unwrap_or_default();
        assert!(e.ends_with("last line") && e.chars().count() <= EXCERPT_CHARS, "{e}");
    }

    #[test]
    fn every_case_file_of_the_corpus_is_a_row() {
        let root = crate::workspace_root();
        let files = load_corpus(&root).expect("corpus");
        let m = Matrix {
            timeout_secs: 1,
            readers: Vec::new(),
            rows: files.into_iter().map(|file| Row { file, results: BTreeMap::new() }).collect(),
            releases: None,
        };
        let (missing, gone) = coverage(&root, &m);
        assert!(missing.is_empty(), "case files without a row: {missing:?}");
        assert!(gone.is_empty(), "rows without a file: {gone:?}");
        for set in ["gguf", "models", "split", "legacy", "samples"] {
            assert!(m.rows.iter().any(|r| r.file.set == set), "no row of {set}");
        }
        // a split set is one row: its first shard, the others listed
        let split = m.rows.iter().find(|r| r.file.file.starts_with("split/y_valid/")).expect("y_valid");
        assert_eq!(split.file.shards.len(), 2);
        // a model's expectation is libllama's verdict, vocab_only for a vocabulary file only
        let vocab = m.rows.iter().find(|r| r.file.file == "models/llama__vocab_only.gguf").expect("vocab");
        assert!(vocab.file.reference.as_ref().is_some_and(|r| r.vocab_only && r.verdict == "yes"));
        let full =
            m.rows.iter().find(|r| r.file.file == "models/converter/deepseek2_no_q_lora.gguf").expect("deepseek2");
        assert!(full.file.reference.as_ref().is_some_and(|r| !r.vocab_only && r.verdict == "refused"));
        assert_eq!(full.file.prefix, "i");
        let complete = m.rows.iter().find(|r| r.file.file == "models/llama__complete.gguf").expect("llama");
        assert_eq!(
            (complete.file.prefix.as_str(), complete.file.reference.as_ref().map(|r| r.verdict.as_str())),
            ("y", Some("yes"))
        );
        // a projector, adapter or control vector: one row, its own loader's
        // verdict with its own companion (the first entry of its manifest)
        let reference = |file: &str| {
            let rows: Vec<&Row> = m.rows.iter().filter(|r| r.file.file == file).collect();
            assert_eq!(rows.len(), 1, "{file}: one row");
            let r = rows[0];
            let x = r.file.reference.as_ref().unwrap_or_else(|| panic!("{file}: no reference"));
            (r.file.prefix.as_str(), x.by.as_str(), x.verdict.as_str())
        };
        assert_eq!(reference("models/mmproj/mmproj-gemma3.gguf"), ("y", "libmtmd", "yes"));
        assert_eq!(reference("models/mmproj/mmproj-pixtral.gguf"), ("i", "libmtmd", "refused"));
        assert_eq!(reference("models/mmproj/gemma3.gguf"), ("y", "libllama", "yes"));
        assert_eq!(reference("models/lora/lora-qwen2_r8.gguf"), ("y", "llama_adapter_lora_init + llama_decode", "yes"));
        assert_eq!(
            reference("models/lora/lora-llama_4_layers_r8.gguf"),
            ("i", "llama_adapter_lora_init + llama_decode", "refused")
        );
        assert_eq!(reference("models/lora/llama.gguf"), ("y", "libllama", "yes"));
        assert_eq!(reference("models/cvec/cvec__complete.gguf"), ("y", "common_control_vector_load", "yes"));
        assert_eq!(reference("models/cvec/cvec__layer_2_pow_28.gguf"), ("i", "common_control_vector_load", "crash"));
        assert_eq!(reference("models/imatrix/imatrix__real.gguf"), ("y", "llama-quantize --imatrix", "yes"));
        assert_eq!(reference("models/imatrix/imatrix__counts_empty.gguf"), ("i", "llama-quantize --imatrix", "crash"));
        assert_eq!(reference("models/imatrix/imatrix__sums_f16.gguf"), ("i", "llama-quantize --imatrix", "refused"));
        // an n_ case names where its finding is
        let empty_key = m.rows.iter().find(|r| r.file.file == "gguf/n_key_empty.gguf").expect("n_key_empty");
        assert!(empty_key.file.offset.is_some_and(|o| o > 0));
    }

    /// A reader that accepts everything (`true`), on `files` when given.
    fn true_reader(name: &str, files: Option<&str>) -> ReaderConfig {
        ReaderConfig {
            name: name.into(),
            command: "true".into(),
            version: None,
            profile: None,
            description: String::new(),
            timeout_secs: None,
            together: None,
            files: files.map(Into::into),
        }
    }

    /// A case of `corpus/gguf/` with no expectation or reference.
    fn gguf_case(name: &str, group: &str, prefix: &str) -> CorpusFile {
        CorpusFile {
            file: name.into(),
            set: "gguf".into(),
            group: group.into(),
            prefix: prefix.into(),
            expected: BTreeMap::new(),
            gguf: true,
            description: String::new(),
            rules: Vec::new(),
            citation: String::new(),
            shards: Vec::new(),
            reference: None,
            offset: None,
        }
    }

    #[test]
    fn a_merge_keeps_the_other_readers_and_cases() {
        let file = |name: &str| gguf_case(name, "g", "n");
        let reader = |name: &str| ReaderResult {
            config: true_reader(name, None),
            version_found: "1".into(),
            summary: BTreeMap::new(),
        };
        let cell =
            |outcome: Outcome| Cell { class: classify(Expect::Reject, &outcome), outcome, detail: None, excerpt: None };
        let row = |name: &str, cells: &[(&str, Outcome)]| Row {
            file: file(name),
            results: cells.iter().map(|(r, o)| (r.to_string(), cell(o.clone()))).collect(),
        };
        let old = Matrix {
            timeout_secs: 10,
            readers: vec![reader("a"), reader("b")],
            rows: vec![
                row("x", &[("a", Outcome::Accept), ("b", Outcome::Accept)]),
                row("y", &[("a", Outcome::Accept), ("b", Outcome::Accept)]),
            ],
            releases: None,
        };
        // a new run of b (and a new reader c) over y only
        let new = Matrix {
            timeout_secs: 10,
            readers: vec![reader("c"), reader("b")],
            rows: vec![row("y", &[("b", Outcome::Reject), ("c", Outcome::Crash)])],
            releases: None,
        };
        let order = ["a".to_string(), "b".to_string(), "c".to_string()];
        let m = new.merged_into(old, &order, vec![file("x"), file("y"), file("z")]);
        let names: Vec<&str> = m.readers.iter().map(|r| r.config.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(m.rows.len(), 3);
        assert_eq!(m.rows[0].results["b"].outcome, Outcome::Accept, "x keeps b's old cell");
        assert_eq!(m.rows[1].results["b"].outcome, Outcome::Reject, "y has b's new cell");
        assert_eq!(m.rows[1].results["a"].outcome, Outcome::Accept, "y keeps a");
        assert!(m.rows[2].results.is_empty(), "z is new: no cell yet");
        assert_eq!(m.readers[1].summary[&Class::ExpectedReject], 1);
        assert_eq!(m.readers[1].summary[&Class::WrongAccept], 1);
    }

    #[test]
    fn a_reader_scoped_to_some_files_runs_on_those_only() {
        let file = |name: &str| gguf_case(name, "kv", "y");
        let reader = true_reader;
        let readers = [reader("every", None), reader("sd", Some("diffusion"))];
        assert!(readers[1].runs_on("diffusion/flux.gguf") && !readers[1].runs_on("gguf/y_base.gguf"));
        let files = vec![file("gguf/y_base.gguf"), file("gguf/y_diffusion_flux.gguf")];
        let m = run(Path::new("."), &readers, files, Duration::from_secs(5), 1, &|_, _| {});
        assert_eq!(m.rows[0].results.keys().collect::<Vec<_>>(), ["every"]);
        assert_eq!(m.rows[1].results.keys().collect::<Vec<_>>(), ["every", "sd"]);
    }
}
