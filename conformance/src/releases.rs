//! The llama.cpp releases' own loaders on the corpus models
//! (`conformance/releases.json`, written by
//! `conformance/tools/llama-releases/prove.py`): for every corpus model file
//! and every release CI proves, what that release's prebuilt loader
//! (node-llama-cpp of the release, from the npm registry) did with it
//! (loads, refused, abort) and whether `gguf-validate --llama-cpp RELEASE`
//! agrees (loaded exactly when the report has no error), each disagreement
//! with the class of its exception (`conformance/tools/llama-releases/exceptions.json`).
//!
//! The readers matrix (`MATRIX.md`, `matrix.html`) and the web report show
//! one column per release, the way wpt.fyi shows browser versions; the
//! file is read beside `matrix.json`, never written into it.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name beside `matrix.json`.
pub const FILE: &str = "releases.json";

/// What a release's loader did with a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Loader {
    /// `loadModel` returned a model.
    Loads,
    /// `loadModel` threw (llama.cpp refused the file).
    Refused,
    /// The process died while loading (an abort is a verdict).
    Abort,
}

impl Loader {
    /// The word a cell shows.
    pub fn name(self) -> &'static str {
        match self {
            Loader::Loads => "loads",
            Loader::Refused => "refused",
            Loader::Abort => "abort",
        }
    }
}

/// One release as proven: its package and its counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    /// The llama.cpp tag (`b4600`, `v0.5.0`).
    pub tag: String,
    /// The node-llama-cpp version whose prebuilt loader it is.
    pub node_llama_cpp: String,
    /// Files loaded.
    pub files: usize,
    /// Files the loader loads.
    pub loads: usize,
    /// Files it refuses.
    pub refused: usize,
    /// Files it aborts on.
    pub abort: usize,
    /// Files where `--llama-cpp` agrees.
    pub agree: usize,
    /// Disagreements listed as exceptions.
    pub excepted: usize,
    /// Disagreements not listed (CI fails on them).
    pub unexpected: usize,
}

/// One file under one release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Repo-relative (`corpus/models/converter/llama.gguf`).
    pub file: String,
    /// The release's tag.
    pub release: String,
    /// The loader's verdict.
    pub loader: Loader,
    /// The loader's message when it did not load the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `--llama-cpp RELEASE` found no error.
    pub valid: bool,
    /// Its first error's rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Loaded exactly when valid.
    pub agrees: bool,
    /// The class of the exception a disagreement is listed under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
}

impl Verdict {
    /// A cell's short text: the loader's verdict, then `✗` when the tool
    /// disagrees (`*` when that is a listed exception).
    pub fn code(&self) -> String {
        let mark = match (self.agrees, &self.exception) {
            (true, _) => "",
            (false, Some(_)) => " *",
            (false, None) => " ✗",
        };
        format!("{}{mark}", self.loader.name())
    }

    /// A cell's hover text.
    pub fn title(&self) -> String {
        let mut t = format!("{}: the loader {}", self.release, self.loader.name());
        if let Some(m) = &self.message {
            t.push_str(&format!(" ({m})"));
        }
        t.push_str(&format!(
            "; --llama-cpp {}: {}",
            self.release,
            if self.valid { "valid".to_string() } else { self.rule.clone().unwrap_or_else(|| "invalid".into()) }
        ));
        match (self.agrees, &self.exception) {
            (true, _) => t.push_str(" (agrees)"),
            (false, Some(c)) => t.push_str(&format!(" (disagrees: exception, {c})")),
            (false, None) => t.push_str(" (disagrees: not an exception)"),
        }
        t
    }

    /// The cell's CSS class: agrees, an exception, or unexpected.
    pub fn css(&self) -> &'static str {
        match (self.agrees, &self.exception) {
            (true, _) => "rel-agree",
            (false, Some(_)) => "rel-excepted",
            (false, None) => "rel-unexpected",
        }
    }
}

/// `conformance/releases.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Releases {
    /// The command that regenerates it.
    pub command: String,
    /// The releases, in column order.
    pub releases: Vec<Release>,
    /// One verdict per file and release.
    pub files: Vec<Verdict>,
}

impl Releases {
    /// Parses `releases.json`.
    pub fn from_json(text: &str) -> Result<Releases, String> {
        serde_json::from_str(text).map_err(|e| format!("{FILE}: {e}"))
    }

    /// `dir/releases.json` when it is there.
    pub fn read(dir: &Path) -> Result<Option<Releases>, String> {
        match std::fs::read_to_string(dir.join(FILE)) {
            Ok(text) => Releases::from_json(&text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{FILE}: {e}")),
        }
    }

    /// Verdicts of a matrix row's file (corpus-relative, as the matrix
    /// names it) by release tag.
    pub fn of(&self, corpus_file: &str) -> BTreeMap<&str, &Verdict> {
        let file = format!("corpus/{corpus_file}");
        self.files.iter().filter(|v| v.file == file).map(|v| (v.release.as_str(), v)).collect()
    }

    /// Every file judged, in order.
    pub fn file_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for v in &self.files {
            if !out.contains(&v.file.as_str()) {
                out.push(&v.file);
            }
        }
        out
    }

    /// What does not add up: every release's counts against its verdicts,
    /// every file judged by every release once.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let files = self.file_names();
        for r in &self.releases {
            let mine: Vec<&Verdict> = self.files.iter().filter(|v| v.release == r.tag).collect();
            let n = |f: &dyn Fn(&Verdict) -> bool| mine.iter().filter(|v| f(v)).count();
            let counted = Release {
                tag: r.tag.clone(),
                node_llama_cpp: r.node_llama_cpp.clone(),
                files: mine.len(),
                loads: n(&|v| v.loader == Loader::Loads),
                refused: n(&|v| v.loader == Loader::Refused),
                abort: n(&|v| v.loader == Loader::Abort),
                agree: n(&|v| v.agrees),
                excepted: n(&|v| !v.agrees && v.exception.is_some()),
                unexpected: n(&|v| !v.agrees && v.exception.is_none()),
            };
            if counted != *r {
                out.push(format!("{}: the counts {r:?} are not its verdicts' {counted:?}", r.tag));
            }
            if mine.len() != files.len() {
                out.push(format!("{}: {} verdicts for {} files", r.tag, mine.len(), files.len()));
            }
            for v in mine.iter().filter(|v| v.agrees != ((v.loader == Loader::Loads) == v.valid)) {
                out.push(format!("{} {}: `agrees` is not loaded == valid", v.release, v.file));
            }
        }
        for v in &self.files {
            if !self.releases.iter().any(|r| r.tag == v.release) {
                out.push(format!("{} {}: a release without its summary", v.release, v.file));
            }
        }
        out
    }
}

/// The release cells' colours in `matrix.html`.
pub const CSS: &str = "td.rel-agree{background:#2e7d32;color:#fff}td.rel-excepted{background:#ffcc80;color:#000}\
                       td.rel-unexpected{background:#c62828;color:#fff}th.rel{background:#e3f2fd}";

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Releases {
    /// The files a per-file table lists: those some release does not load
    /// or where the tool disagrees with one.
    pub fn notable(&self) -> Vec<&str> {
        self.file_names()
            .into_iter()
            .filter(|f| self.files.iter().any(|v| v.file == *f && (v.loader != Loader::Loads || !v.agrees)))
            .collect()
    }

    const ABOUT: &str = "Each llama.cpp release's own prebuilt CPU loader (node-llama-cpp of that release, installed \
        from the npm registry by name) loads every corpus model file in a subprocess (an abort is a verdict), and \
        `gguf-validate --llama-cpp RELEASE` judges it: they agree when the loader loads the file exactly when the \
        report has no error. Every disagreement must be an exception of \
        `conformance/tools/llama-releases/exceptions.json` (its class and reason there; CI fails on one that is not, \
        and on an exception that no longer disagrees). CI runs `conformance/tools/llama-releases/prove.py`";

    /// The section of `MATRIX.md`.
    pub fn write_markdown(&self, o: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            o,
            "\n## llama.cpp releases (`releases.json`)\n\n{}; regenerate with `{}`.\n\n\
             | release | node-llama-cpp | files | loads | refused | abort | agree | exceptions | unexpected |\n\
             |---|---|---|---|---|---|---|---|---|",
            Self::ABOUT,
            self.command
        );
        for r in &self.releases {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.tag, r.node_llama_cpp, r.files, r.loads, r.refused, r.abort, r.agree, r.excepted, r.unexpected
            );
        }
        let _ = write!(
            o,
            "\nPer file, one column per release (the files some release does not load, or where `--llama-cpp` \
             disagrees with it): the loader's verdict, `*` when `--llama-cpp` disagrees and that is an exception, \
             **✗** when it is not.\n\n| file |"
        );
        for r in &self.releases {
            let _ = write!(o, " {} |", r.tag);
        }
        let _ = write!(o, "\n|---|");
        for _ in &self.releases {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        let notable = self.notable();
        for f in &notable {
            let of = self.of(f.strip_prefix("corpus/").unwrap_or(f));
            let _ = write!(o, "| `{}` |", md_cell(f.strip_prefix("corpus/").unwrap_or(f)));
            for r in &self.releases {
                let cell = match of.get(r.tag.as_str()) {
                    Some(v) if !v.agrees && v.exception.is_none() => format!("**{}**", v.code()),
                    Some(v) => v.code(),
                    None => "-".into(),
                };
                let _ = write!(o, " {cell} |");
            }
            let _ = writeln!(o);
        }
        if notable.is_empty() {
            let _ = writeln!(o, "| (none) |");
        }
    }

    /// The section of `matrix.html` (its grid's release columns are
    /// written with the results).
    pub fn write_html(&self, o: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            o,
            "<h2>llama.cpp releases</h2>\n<p>{}; regenerate with <code>{}</code>. The results below have one column \
             per release: the loader's verdict, green when <code>--llama-cpp</code> agrees, amber (<code>*</code>) \
             when it disagrees and that is an exception, red (<code>✗</code>) when it is not.</p>\n\
             <table id=\"releases\"><tr><th>release</th><th>node-llama-cpp</th><th>files</th><th>loads</th>\
             <th>refused</th><th>abort</th><th>agree</th><th>exceptions</th><th>unexpected</th></tr>",
            esc(Self::ABOUT),
            esc(&self.command)
        );
        for r in &self.releases {
            let _ = writeln!(
                o,
                "<tr data-release=\"{}\"><td>{}</td><td>{}</td><td class=\"c\">{}</td><td class=\"c\">{}</td>\
                 <td class=\"c\">{}</td><td class=\"c\">{}</td><td class=\"c\">{}</td><td class=\"c\">{}</td>\
                 <td class=\"c\">{}</td></tr>",
                esc(&r.tag),
                esc(&r.tag),
                esc(&r.node_llama_cpp),
                r.files,
                r.loads,
                r.refused,
                r.abort,
                r.agree,
                r.excepted,
                r.unexpected
            );
        }
        let _ = writeln!(o, "</table>");
    }
}

/// A corpus file (corpus-relative, as the matrix names it) is a model the
/// releases' loaders load: `models/NAME.gguf` or `models/converter*/NAME.gguf`
/// (prove.py's MODEL_GLOBS).
pub fn is_model_file(corpus_file: &str) -> bool {
    // The fixed files of `gguf-validate fix` (corpus/fixes): each must load.
    if let Some(name) = corpus_file.strip_prefix("fixes/") {
        return name.ends_with(".fixed.gguf") && !name.contains('/');
    }
    let Some(rest) = corpus_file.strip_prefix("models/") else { return false };
    if !rest.ends_with(".gguf") {
        return false;
    }
    match rest.split_once('/') {
        None => true,
        Some((dir, name)) => dir.starts_with("converter") && !name.contains('/'),
    }
}

impl Releases {
    /// The model files of `corpus_files` (corpus-relative) no release has a
    /// verdict on, and the files with verdicts that are not among them.
    pub fn coverage<'a>(&self, corpus_files: impl IntoIterator<Item = &'a str>) -> (Vec<String>, Vec<String>) {
        let judged: std::collections::BTreeSet<&str> =
            self.files.iter().map(|v| v.file.strip_prefix("corpus/").unwrap_or(&v.file)).collect();
        let models: std::collections::BTreeSet<&str> = corpus_files.into_iter().filter(|f| is_model_file(f)).collect();
        let missing = models.iter().filter(|f| !judged.contains(*f)).map(|f| f.to_string()).collect();
        let gone = judged.iter().filter(|f| !models.contains(*f)).map(|f| f.to_string()).collect();
        (missing, gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_releases_add_up() {
        let dir = crate::workspace_root().join("conformance");
        let r = Releases::read(&dir).expect("releases.json").expect("conformance/releases.json is there");
        assert!(r.releases.len() >= 4, "{} releases", r.releases.len());
        let problems = r.problems();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn model_files_are_the_globs_of_prove_py() {
        assert!(is_model_file("models/llama__vocab_only.gguf"));
        assert!(is_model_file("models/converter/llama.gguf"));
        assert!(is_model_file("models/converter-b4600/llama.gguf"));
        assert!(!is_model_file("models/mmproj/clip.gguf"));
        assert!(!is_model_file("models/converter/x/y.gguf"));
        assert!(!is_model_file("models/converter/manifest.json"));
        assert!(!is_model_file("gguf/y_base.gguf"));
        assert!(is_model_file("fixes/trailing_bytes.fixed.gguf"));
        assert!(!is_model_file("fixes/trailing_bytes.gguf"));
    }
}
