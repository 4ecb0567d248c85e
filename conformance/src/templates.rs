//! The template scanners matrix: the chat-template cases of the corpus
//! (`corpus/gguf/*template*`: code execution, obfuscations, hidden text,
//! triggers, role branches, benign look-alikes, defects) and llama.cpp's
//! real templates (`models/templates/*.jinja` of the llama-cpp-python 0.3.36
//! sdist, fetched at run time, never committed; each wrapped in a small GGUF
//! file as `tokenizer.chat_template`) × template scanners.
//!
//! A scanner is an adapter command (`conformance/scanners.json`, the same
//! shape as a reader) that gets a GGUF file as `$1` and exits 0 when it
//! raises no alarm about the template, 1 when it does; anything else is a
//! crash. A case expects an alarm when `strict` reports one of the template
//! security rules on it ([`ALARM_RULES`]), no alarm when it is a benign
//! look-alike or a real template, and either otherwise (a template that
//! does not parse, a value of the wrong type, an analysis limit: flagged or
//! not, never scored). Each cell is caught / missed / false alarm / clean.
//! `conformance/template-probes.json` adds attack shapes outside the corpus
//! (class `probe: …`), written to find what another scanner catches and
//! gguf-validate misses.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::matrix::{Outcome, ReaderConfig, read_readers, reader_version, run_one};

/// The rules of `gguf-validate` that are an alarm about a template.
pub const ALARM_RULES: [&str; 5] = [
    "template-code-execution",
    "template-hidden-text",
    "template-trigger",
    "template-role-branch",
    "template-injected-instruction",
];

/// What a scanner should say about a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Want {
    /// An attack: the scanner should raise an alarm.
    Alarm,
    /// Benign: any alarm is a false alarm.
    Clean,
    /// A defect that is no attack: either is fine (not scored).
    Either,
}

/// What a scanner's answer counts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Score {
    /// Alarm on an attack.
    Caught,
    /// No alarm on an attack.
    Missed,
    /// Alarm on a benign template.
    FalseAlarm,
    /// No alarm on a benign template.
    Clean,
    /// Alarm on a defect (not scored).
    Flagged,
    /// No alarm on a defect (not scored).
    NotFlagged,
    /// The scanner crashed.
    Crash,
    /// The scanner hit the time limit.
    Timeout,
}

impl Score {
    /// Every score, in legend order.
    pub const ALL: [Score; 8] = [
        Score::Caught,
        Score::Missed,
        Score::FalseAlarm,
        Score::Clean,
        Score::Flagged,
        Score::NotFlagged,
        Score::Crash,
        Score::Timeout,
    ];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Score::Caught => "caught",
            Score::Missed => "missed",
            Score::FalseAlarm => "false-alarm",
            Score::Clean => "clean",
            Score::Flagged => "flagged",
            Score::NotFlagged => "not-flagged",
            Score::Crash => "crash",
            Score::Timeout => "timeout",
        }
    }
}

/// Scores one answer.
pub fn score(want: Want, outcome: &Outcome) -> Score {
    match (outcome, want) {
        (Outcome::Crash, _) => Score::Crash,
        (Outcome::Timeout, _) => Score::Timeout,
        (Outcome::Reject, Want::Alarm) => Score::Caught,
        (Outcome::Accept, Want::Alarm) => Score::Missed,
        (Outcome::Reject, Want::Clean) => Score::FalseAlarm,
        (Outcome::Accept, Want::Clean) => Score::Clean,
        (Outcome::Reject, Want::Either) => Score::Flagged,
        (Outcome::Accept, Want::Either) => Score::NotFlagged,
    }
}

/// One template case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateCase {
    /// `gguf/<file>` for a corpus case, `llama.cpp/<name>.jinja` for a real template.
    pub id: String,
    /// Class: code execution, obfuscation, hidden text, trigger, role
    /// branch, benign look-alike, defect, real template.
    pub class: String,
    /// What a scanner should say.
    pub want: Want,
    /// What the case is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The rule ids `strict` reports on a corpus case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
}

/// One cell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanCell {
    /// Alarm (reject) or none (accept), crash, timeout.
    pub outcome: Outcome,
    /// How that scores.
    pub score: Score,
    /// Status and reason of a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What the scanner said (its findings, readable, clipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// One scanner and its version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScannerResult {
    /// The adapter.
    #[serde(flatten)]
    pub config: ReaderConfig,
    /// What its version command printed.
    pub version_found: String,
}

/// One row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateRow {
    /// The case.
    #[serde(flatten)]
    pub case: TemplateCase,
    /// Cell per scanner name.
    pub results: BTreeMap<String, ScanCell>,
}

/// `conformance/templates.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateMatrix {
    /// Where the real templates came from.
    pub templates_source: String,
    /// The scanners, in column order.
    pub scanners: Vec<ScannerResult>,
    /// One row per case.
    pub rows: Vec<TemplateRow>,
}

/// The class of a corpus template case, from its name.
pub fn class_of(file: &str) -> &'static str {
    let name = file.rsplit('/').next().unwrap_or(file);
    if name.contains("_template_exec_") {
        "code execution"
    } else if name.contains("_template_obf_") {
        "obfuscation"
    } else if name.contains("_template_hidden_") {
        "hidden text"
    } else if name.contains("_template_trigger_") {
        "trigger"
    } else if name.contains("_template_role_branch_") {
        "role branch"
    } else if name.contains("_template_injected_") {
        "hidden instruction"
    } else if name.contains("_template_benign_") {
        "benign look-alike"
    } else {
        "defect or boundary"
    }
}

/// The corpus's template cases (group `template` of `corpus/gguf/manifest.json`).
pub fn corpus_cases(root: &Path) -> Result<Vec<TemplateCase>, String> {
    let m = crate::read_manifest(&root.join("corpus/gguf/manifest.json"))?;
    Ok(m.cases
        .into_iter()
        .filter(|e| e.group == "template")
        .map(|e| {
            let class = class_of(&e.file);
            let alarm = e.rules.iter().any(|r| ALARM_RULES.contains(&r.as_str()));
            let any_template_rule = e.rules.iter().any(|r| r.starts_with("template-"));
            let want = if alarm {
                Want::Alarm
            } else if class == "benign look-alike" || !any_template_rule {
                Want::Clean
            } else {
                Want::Either
            };
            TemplateCase {
                id: format!("gguf/{}", e.file),
                class: class.to_string(),
                want,
                description: e.description,
                rules: e.rules,
            }
        })
        .collect())
}

/// A small valid GGUF file carrying `template` as `tokenizer.chat_template`
/// (the frame of the corpus's template cases: architecture `neutral`, one
/// F32 tensor).
pub fn wrap_template(template: &str) -> Vec<u8> {
    use crate::build::{Model, V, bytes, f32_tensor};
    let mut m = Model::new();
    m.kv("general.architecture", V::str("neutral"));
    m.kv("tokenizer.chat_template", V::str(template));
    m.tensor(f32_tensor("t", &[8]));
    bytes(m)
}

/// llama.cpp's real templates from `dir` (`*.jinja`, sorted), each written
/// wrapped into `out` as `<name>.gguf`: (case, file).
pub fn real_cases(dir: &Path, out: &Path) -> Result<Vec<(TemplateCase, PathBuf)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<PathBuf> =
        rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "jinja")).collect();
    names.sort();
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cases = Vec::new();
    for p in names {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let file = out.join(format!("{}.gguf", name.trim_end_matches(".jinja")));
        std::fs::write(&file, wrap_template(&text)).map_err(|e| format!("{}: {e}", file.display()))?;
        cases.push((
            TemplateCase {
                id: format!("llama.cpp/{name}"),
                class: "real template (llama.cpp)".into(),
                want: Want::Clean,
                description: format!(
                    "llama.cpp models/templates/{name} ({} bytes), wrapped as tokenizer.chat_template",
                    text.len()
                ),
                rules: Vec::new(),
            },
            file,
        ));
    }
    Ok(cases)
}

/// `conformance/template-probes.json`: attack shapes outside the corpus.
#[derive(Debug, Deserialize)]
struct Probes {
    probes: Vec<Probe>,
}

#[derive(Debug, Deserialize)]
struct Probe {
    name: String,
    class: String,
    want: Want,
    description: String,
    template: String,
}

/// The probes of `path`, each written wrapped into `out` as
/// `probe-<name>.gguf`: (case, file). Their class is `probe: <class>`.
pub fn probe_cases(path: &Path, out: &Path) -> Result<Vec<(TemplateCase, PathBuf)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let p: Probes = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cases = Vec::new();
    for probe in p.probes {
        let file = out.join(format!("probe-{}.gguf", probe.name));
        std::fs::write(&file, wrap_template(&probe.template)).map_err(|e| format!("{}: {e}", file.display()))?;
        cases.push((
            TemplateCase {
                id: format!("probe/{}", probe.name),
                class: format!("probe: {}", probe.class),
                want: probe.want,
                description: probe.description,
                rules: Vec::new(),
            },
            file,
        ));
    }
    Ok(cases)
}

/// Runs every scanner over every case (`files`: the case and the file the
/// scanners read), `jobs` at a time.
pub fn run(
    root: &Path,
    scanners: &[ReaderConfig],
    cases: Vec<(TemplateCase, PathBuf)>,
    source: String,
    limit: Duration,
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> TemplateMatrix {
    let tasks: Vec<(usize, usize)> = (0..cases.len()).flat_map(|c| (0..scanners.len()).map(move |s| (s, c))).collect();
    let cells: Mutex<BTreeMap<(usize, usize), ScanCell>> = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..jobs.max(1) {
            sc.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(s, c)) = tasks.get(i) else { break };
                    let (Some(scanner), Some((case, file))) = (scanners.get(s), cases.get(c)) else { break };
                    let limit = scanner.timeout_secs.map_or(limit, Duration::from_secs);
                    let r = run_one(root, scanner, file, limit);
                    let cell = ScanCell {
                        score: score(case.want, &r.outcome),
                        outcome: r.outcome,
                        detail: r.detail,
                        excerpt: r.excerpt,
                    };
                    if let Ok(mut m) = cells.lock() {
                        m.insert((s, c), cell);
                    }
                    progress(done.fetch_add(1, Ordering::SeqCst) + 1, tasks.len());
                }
            });
        }
    });
    let mut cells = cells.into_inner().unwrap_or_default();
    let rows = cases
        .into_iter()
        .enumerate()
        .map(|(c, (case, _))| TemplateRow {
            case,
            results: scanners
                .iter()
                .enumerate()
                .filter_map(|(s, sc)| cells.remove(&(s, c)).map(|cell| (sc.name.clone(), cell)))
                .collect(),
        })
        .collect();
    let scanners =
        scanners.iter().map(|c| ScannerResult { config: c.clone(), version_found: reader_version(root, c) }).collect();
    TemplateMatrix { templates_source: source, scanners, rows }
}

/// Reads `conformance/scanners.json`.
pub fn read_scanners(path: &Path) -> Result<Vec<ReaderConfig>, String> {
    read_readers(path).map(|r| r.readers)
}

/// Detection and false-alarm counts of one scanner over some rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rates {
    /// Attacks.
    pub attacks: usize,
    /// Attacks caught.
    pub caught: usize,
    /// Benign templates.
    pub benign: usize,
    /// False alarms on them.
    pub false_alarms: usize,
    /// Crashes and timeouts.
    pub failures: usize,
}

impl Rates {
    /// `caught / attacks` as a percentage text, or `-`.
    pub fn detection(&self) -> String {
        pct(self.caught, self.attacks)
    }

    /// `false_alarms / benign` as a percentage text, or `-`.
    pub fn false_alarm(&self) -> String {
        pct(self.false_alarms, self.benign)
    }
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 { "-".into() } else { format!("{:.0}% ({n}/{d})", 100.0 * n as f64 / d as f64) }
}

impl TemplateMatrix {
    /// The classes in row order.
    pub fn classes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.case.class) {
                out.push(r.case.class.clone());
            }
        }
        out
    }

    /// A scanner's counts over the rows of `class` (all rows when `None`).
    pub fn rates(&self, scanner: &str, class: Option<&str>) -> Rates {
        let mut r = Rates::default();
        for row in self.rows.iter().filter(|row| class.is_none_or(|c| row.case.class == c)) {
            let Some(cell) = row.results.get(scanner) else { continue };
            match row.case.want {
                Want::Alarm => {
                    r.attacks += 1;
                    r.caught += usize::from(cell.score == Score::Caught);
                }
                Want::Clean => {
                    r.benign += 1;
                    r.false_alarms += usize::from(cell.score == Score::FalseAlarm);
                }
                Want::Either => {}
            }
            r.failures += usize::from(matches!(cell.score, Score::Crash | Score::Timeout));
        }
        r
    }

    /// Attacks another scanner caught and `ours` missed: (case, scanners).
    pub fn missed_by(&self, ours: &str) -> Vec<(String, Vec<String>)> {
        self.rows
            .iter()
            .filter(|r| r.results.get(ours).is_some_and(|c| c.score == Score::Missed))
            .filter_map(|r| {
                let others: Vec<String> = r
                    .results
                    .iter()
                    .filter(|(n, c)| *n != ours && c.score == Score::Caught)
                    .map(|(n, _)| n.clone())
                    .collect();
                (!others.is_empty()).then(|| (r.case.id.clone(), others))
            })
            .collect()
    }

    /// `templates.json`.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Applies [`readable`](crate::readable::readable) to every captured text again.
    pub fn make_readable(&mut self) {
        use crate::readable::readable;
        for row in &mut self.rows {
            for c in row.results.values_mut() {
                c.detail = c.detail.as_deref().map(|d| readable(d, None));
                c.excerpt = c.excerpt.as_deref().map(|d| readable(d, None));
            }
        }
    }

    /// Reads `templates.json`.
    pub fn from_json(text: &str) -> Result<TemplateMatrix, String> {
        serde_json::from_str(text).map_err(|e| format!("templates.json: {e}"))
    }

    /// `TEMPLATES.md`.
    pub fn to_markdown(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "# Template scanners matrix\n");
        let _ = writeln!(
            o,
            "Generated by `cargo run -p gguf-conformance -- templates` (see `conformance/README.md`); do not edit by hand. \
             {} cases (the template cases of `corpus/gguf/` and llama.cpp's real templates from {}) × {} scanners. \
             An attack case expects an alarm (caught / missed), a benign look-alike or a real template expects none \
             (clean / false alarm); a defect that is no attack is flagged or not and not scored. The raw data is `templates.json`.\n",
            self.rows.len(),
            self.templates_source,
            self.scanners.len()
        );
        let _ = writeln!(o, "## Scanners\n\n| scanner | version | alarm means |\n|---|---|---|");
        for s in &self.scanners {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                s.config.name,
                s.version_found,
                s.config.description.replace('|', "\\|")
            );
        }
        let _ = writeln!(
            o,
            "\n## Detection and false-alarm rates\n\n| scanner | detection | false alarms | crashes, timeouts |\n|---|---|---|---|"
        );
        for s in &self.scanners {
            let r = self.rates(&s.config.name, None);
            let _ = writeln!(o, "| {} | {} | {} | {} |", s.config.name, r.detection(), r.false_alarm(), r.failures);
        }
        let _ = writeln!(o, "\n## Per class\n\nDetection for attack classes, false alarms for benign ones.\n");
        let _ = write!(o, "| class | cases |");
        for s in &self.scanners {
            let _ = write!(o, " {} |", s.config.name);
        }
        let _ = write!(o, "\n|---|---|");
        for _ in &self.scanners {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        for class in self.classes() {
            let n = self.rows.iter().filter(|r| r.case.class == class).count();
            let _ = write!(o, "| {class} | {n} |");
            for s in &self.scanners {
                let r = self.rates(&s.config.name, Some(&class));
                let text = if r.attacks > 0 {
                    format!("detects {}", r.detection())
                } else if r.benign > 0 {
                    format!("false alarms {}", r.false_alarm())
                } else {
                    let flagged = self
                        .rows
                        .iter()
                        .filter(|row| row.case.class == class)
                        .filter(|row| row.results.get(&s.config.name).is_some_and(|c| c.score == Score::Flagged))
                        .count();
                    format!("flags {flagged}/{n}")
                };
                let _ = write!(o, " {text} |");
            }
            let _ = writeln!(o);
        }
        if let Some(ours) = self.scanners.iter().find(|s| s.config.name.starts_with("gguf-validate")) {
            let _ = writeln!(o, "\n## Attacks another scanner caught and {} missed\n", ours.config.name);
            let missed = self.missed_by(&ours.config.name);
            if missed.is_empty() {
                let _ = writeln!(o, "None.");
            }
            for (case, by) in missed {
                let _ = writeln!(o, "- `{case}`: caught by {}", by.join(", "));
            }
        }
        let _ = writeln!(
            o,
            "\n## Every case\n\nc caught, m missed, F false alarm, . clean, f flagged, - not flagged, X crash, T timeout.\n"
        );
        let _ = write!(o, "| case | class | want |");
        for s in &self.scanners {
            let _ = write!(o, " {} |", s.config.name);
        }
        let _ = write!(o, "\n|---|---|---|");
        for _ in &self.scanners {
            let _ = write!(o, "---|");
        }
        let _ = writeln!(o);
        for row in &self.rows {
            let want = match row.case.want {
                Want::Alarm => "alarm",
                Want::Clean => "clean",
                Want::Either => "either",
            };
            let _ = write!(o, "| `{}` | {} | {want} |", row.case.id, row.case.class);
            for s in &self.scanners {
                let code = row.results.get(&s.config.name).map_or("", |c| match c.score {
                    Score::Caught => "c",
                    Score::Missed => "**m**",
                    Score::FalseAlarm => "**F**",
                    Score::Clean => ".",
                    Score::Flagged => "f",
                    Score::NotFlagged => "-",
                    Score::Crash => "**X**",
                    Score::Timeout => "**T**",
                });
                let _ = write!(o, " {code} |");
            }
            let _ = writeln!(o);
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores() {
        assert_eq!(score(Want::Alarm, &Outcome::Reject), Score::Caught);
        assert_eq!(score(Want::Alarm, &Outcome::Accept), Score::Missed);
        assert_eq!(score(Want::Clean, &Outcome::Reject), Score::FalseAlarm);
        assert_eq!(score(Want::Clean, &Outcome::Accept), Score::Clean);
        assert_eq!(score(Want::Either, &Outcome::Reject), Score::Flagged);
        assert_eq!(score(Want::Either, &Outcome::Crash), Score::Crash);
    }

    #[test]
    fn the_corpus_template_cases_have_a_class_and_an_expectation() {
        let cases = corpus_cases(&crate::workspace_root()).expect("manifest");
        assert!(cases.len() >= 80, "{} template cases", cases.len());
        let count = |want: Want| cases.iter().filter(|c| c.want == want).count();
        assert!(count(Want::Alarm) >= 50 && count(Want::Clean) >= 10, "{cases:?}");
        for c in &cases {
            match c.class.as_str() {
                "code execution" | "obfuscation" | "trigger" | "role branch" | "hidden instruction" => {
                    assert_eq!(c.want, Want::Alarm, "{}", c.id)
                }
                "benign look-alike" => assert_eq!(c.want, Want::Clean, "{}", c.id),
                _ => {}
            }
        }
    }

    #[test]
    fn the_probes_are_valid_files_with_their_template() {
        let root = crate::workspace_root();
        let out = std::env::temp_dir().join(format!("gguf-probes-{}", std::process::id()));
        let cases = probe_cases(&root.join("conformance/template-probes.json"), &out).expect("probes");
        assert!(cases.len() >= 10);
        for (case, file) in &cases {
            assert!(case.class.starts_with("probe: ") && case.id.starts_with("probe/"), "{case:?}");
            let bytes = std::fs::read(file).expect("written");
            let r = gguf_validate_core::Validator::new(gguf_validate_core::Options::new(
                gguf_validate_core::rules::Profile::Spec,
            ))
            .validate_bytes(&bytes)
            .report;
            assert!(r.valid, "{}: {:?}", case.id, r.diagnostics);
        }
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_wrapped_template_is_a_valid_file_with_that_template() {
        let t = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
        let bytes = wrap_template(t);
        let r = gguf_validate_core::Validator::new(gguf_validate_core::Options::new(
            gguf_validate_core::rules::Profile::Strict,
        ))
        .validate_bytes(&bytes)
        .report;
        assert!(r.valid, "{:?}", r.diagnostics);
        assert!(bytes.windows(t.len()).any(|w| w == t.as_bytes()));
    }

    #[test]
    fn rates_and_misses() {
        let cell = |outcome: Outcome, want: Want| ScanCell {
            score: score(want, &outcome),
            outcome,
            detail: None,
            excerpt: None,
        };
        let case = |id: &str, class: &str, want: Want| TemplateCase {
            id: id.into(),
            class: class.into(),
            want,
            description: String::new(),
            rules: Vec::new(),
        };
        let row = |c: TemplateCase, ours: Outcome, theirs: Outcome| TemplateRow {
            results: [("gguf-validate".to_string(), cell(ours, c.want)), ("other".to_string(), cell(theirs, c.want))]
                .into_iter()
                .collect(),
            case: c,
        };
        let m = TemplateMatrix {
            templates_source: String::new(),
            scanners: Vec::new(),
            rows: vec![
                row(case("a", "code execution", Want::Alarm), Outcome::Reject, Outcome::Accept),
                row(case("b", "code execution", Want::Alarm), Outcome::Accept, Outcome::Reject),
                row(case("c", "benign look-alike", Want::Clean), Outcome::Accept, Outcome::Reject),
            ],
        };
        let ours = m.rates("gguf-validate", None);
        assert_eq!((ours.attacks, ours.caught, ours.benign, ours.false_alarms), (2, 1, 1, 0));
        assert_eq!(ours.detection(), "50% (1/2)");
        assert_eq!(m.rates("other", Some("benign look-alike")).false_alarm(), "100% (1/1)");
        assert_eq!(m.missed_by("gguf-validate"), vec![("b".to_string(), vec!["other".to_string()])]);
    }
}
