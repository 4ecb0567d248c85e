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
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

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

/// Every corpus file with an expectation, in a stable order: `gguf`,
/// `gguf-py`, `regressions`, `legacy` (when present).
pub fn load_corpus(root: &Path) -> Result<Vec<CorpusFile>, String> {
    let corpus = root.join("corpus");
    let mut out = Vec::new();
    for set in ["gguf", "gguf-py"] {
        let m = read_manifest(&corpus.join(set).join("manifest.json"))?;
        for e in m.cases {
            out.push(CorpusFile {
                file: format!("{set}/{}", e.file),
                set: set.to_string(),
                group: if e.group.is_empty() { set.to_string() } else { e.group.clone() },
                prefix: prefix_of(e.verdict.values()).to_string(),
                expected: e.verdict,
                gguf: true,
                description: e.description,
            });
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
            let text = std::fs::read_to_string(&side).map_err(|e| format!("{}: {e}", side.display()))?;
            let s: Sidecar = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", side.display()))?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let gguf = s.format.as_deref().is_none_or(|f| f == "gguf");
            out.push(CorpusFile {
                file: format!("{set}/{name}"),
                set: set.to_string(),
                group: s
                    .format
                    .clone()
                    .filter(|_| set == "legacy")
                    .map_or_else(|| set.to_string(), |f| format!("legacy ({f})")),
                prefix: prefix_of(s.verdict.values()).to_string(),
                expected: s.verdict,
                gguf,
                description: s.description.unwrap_or_default(),
            });
        }
    }
    Ok(out)
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

fn describe(status: ExitStatus) -> (Outcome, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => (Outcome::Accept, None),
        (Some(1), _) => (Outcome::Reject, None),
        (Some(c), _) if c > 128 && c < 160 => (Outcome::Crash, Some(format!("exit {c} (signal {})", c - 128))),
        (Some(c), _) => (Outcome::Crash, Some(format!("exit {c}"))),
        (None, Some(s)) => (Outcome::Crash, Some(format!("signal {s}"))),
        (None, None) => (Outcome::Crash, Some("unknown status".into())),
    }
}

/// Runs one reader on one file (path relative to `root`).
pub fn run_one(root: &Path, reader: &ReaderConfig, file: &Path, limit: Duration) -> (Outcome, Option<String>) {
    let mut cmd = shell(&reader.command, Some(file));
    cmd.current_dir(root).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (Outcome::Crash, Some(format!("cannot start: {e}"))),
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return describe(status),
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                return (Outcome::Timeout, Some(format!("killed after {} s", limit.as_secs())));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return (Outcome::Crash, Some(format!("wait failed: {e}"))),
        }
    }
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
    /// Exit status or signal for crashes and timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
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
}

/// Runs every reader over every file, `jobs` processes at a time.
pub fn run(root: &Path, readers: &[ReaderConfig], files: Vec<CorpusFile>, limit: Duration, jobs: usize) -> Matrix {
    let corpus = Path::new("corpus");
    let tasks: Vec<(usize, usize)> = (0..readers.len()).flat_map(|r| (0..files.len()).map(move |f| (r, f))).collect();
    let results: Mutex<BTreeMap<(usize, usize), Cell>> = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(r, f)) = tasks.get(i) else { break };
                    let (Some(reader), Some(file)) = (readers.get(r), files.get(f)) else { break };
                    let (outcome, detail) = run_one(root, reader, &corpus.join(&file.file), limit);
                    let class = classify(expectation(file, reader), &outcome);
                    if let Ok(mut m) = results.lock() {
                        m.insert((r, f), Cell { outcome, class, detail });
                    }
                }
            });
        }
    });
    let mut cells = results.into_inner().unwrap_or_default();
    let mut out_readers = Vec::new();
    for (r, config) in readers.iter().enumerate() {
        let mut summary: BTreeMap<Class, usize> = Class::ALL.iter().map(|c| (*c, 0)).collect();
        for f in 0..files.len() {
            if let Some(c) = cells.get(&(r, f)) {
                *summary.entry(c.class).or_default() += 1;
            }
        }
        out_readers.push(ReaderResult { config: config.clone(), version_found: reader_version(root, config), summary });
    }
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
    Matrix { timeout_secs: limit.as_secs(), readers: out_readers, rows }
}

impl Matrix {
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
             {} corpus files × {} readers, per-file time limit {} s. The HTML grid of every result is `matrix.html`, \
             the raw data `matrix.json`.\n",
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
                writeln!(o, "| {} | {} | `{}` |", r.config.name, r.version_found, r.config.command.replace('|', "\\|"));
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
        let _ = writeln!(o, "</table>\n<h2>Results</h2>\n<table><tr><th>file</th><th>strict / spec / ggml</th>");
        for r in &self.readers {
            let _ = write!(o, "<th>{}</th>", esc(&r.config.name));
        }
        let _ = writeln!(o, "</tr>");
        let mut group = String::new();
        for row in &self.rows {
            let g = format!("{}: {}", row.file.set, row.file.group);
            if g != group {
                group = g;
                let _ =
                    writeln!(o, "<tr class=\"g\"><td colspan=\"{}\">{}</td></tr>", self.readers.len() + 2, esc(&group));
            }
            let exp: Vec<&str> = ["strict", "spec", "ggml"]
                .iter()
                .map(|p| match row.file.expected.get(*p) {
                    Some(Verdict::Accept) => "A",
                    Some(Verdict::Reject) => "R",
                    None => "-",
                })
                .collect();
            let _ = write!(
                o,
                "<tr><td class=\"f\" title=\"{}\">{}</td><td class=\"c\">{}</td>",
                esc(&row.file.description),
                esc(&row.file.file),
                exp.join(" ")
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
            let _ = writeln!(o, "</tr>");
        }
        let _ = writeln!(o, "</table>\n</body></html>");
        o
    }
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
            file: "gguf/i_x.gguf".into(),
            set: "gguf".into(),
            group: "kv".into(),
            prefix: "i".into(),
            expected: [("strict".to_string(), Verdict::Reject), ("ggml".to_string(), Verdict::Accept)]
                .into_iter()
                .collect(),
            gguf: true,
            description: String::new(),
        };
        let mut reader = ReaderConfig {
            name: "r".into(),
            command: "true".into(),
            version: None,
            profile: None,
            description: String::new(),
        };
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
        };
        assert_eq!(run_one(root, &r("sh -c 'exit 0'"), Path::new("x"), limit).0, Outcome::Accept);
        assert_eq!(run_one(root, &r("sh -c 'exit 1'"), Path::new("x"), limit).0, Outcome::Reject);
        assert_eq!(run_one(root, &r("sh -c 'exit 2'"), Path::new("x"), limit).0, Outcome::Crash);
        assert_eq!(run_one(root, &r("sh -c 'kill -ABRT $$'"), Path::new("x"), limit).0, Outcome::Crash);
        assert_eq!(
            run_one(root, &r("sh -c 'sleep 5' --"), Path::new("x"), Duration::from_millis(200)).0,
            Outcome::Timeout
        );
    }
}
