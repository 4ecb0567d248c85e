//! Writer campaigns: generate, write, judge, group, shrink.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbitrary::Unstructured;

use crate::campaign_report::{mismatch_line, time};
use crate::caps::Capabilities;
use crate::compare::{Comparison, Size, compare};
use crate::process::{self, RunOutcome};
use crate::shrink::{Budget, ShrinkStats, shrink};
use crate::{Kind, Mismatch, model_json};
use gguf_validate_core::Validator;
use gguf_validate_core::parse::ByteOrder;
use gguf_validate_core::report::Options;
use gguf_validate_core::rules::Profile;
use gguf_validate_core::seeded::SplitMix64;
use gguf_validate_core::smith::{self, Config};
use gguf_validate_core::types::ValueType;
use gguf_validate_core::write::{GgufModel, OwnedValue};

/// Random bytes behind each generated description.
pub const CASE_BYTES: usize = 8192;

/// A writer under test: reads the description at `model`, writes `out`.
pub trait Writer {
    /// What to call it in reports (the command line).
    fn name(&self) -> String;
    /// Writes one file. `Err` only when the writer cannot be run at all.
    fn write(&mut self, model: &Path, out: &Path) -> std::io::Result<RunOutcome>;
}

/// A command line with `{model}` and `{out}` placeholders, run by `sh -c`.
#[derive(Clone, Debug)]
pub struct CommandWriter {
    /// The template, e.g. `python3 writer.py {model} {out}`.
    pub template: String,
    /// Killed (with its process group) after this long.
    pub timeout: Duration,
}

impl Writer for CommandWriter {
    fn name(&self) -> String {
        self.template.clone()
    }

    fn write(&mut self, model: &Path, out: &Path) -> std::io::Result<RunOutcome> {
        let cmd = process::substitute(
            &self.template,
            &[("model", &model.to_string_lossy()), ("out", &out.to_string_lossy())],
        );
        // Run where the harness runs, so relative paths in the command work.
        process::run(&cmd, Path::new("."), self.timeout).map(|(o, _)| o)
    }
}

/// A writer in this process (tests, and the project's own writer).
pub struct FnWriter<F: FnMut(&Path, &Path) -> RunOutcome> {
    /// Its name in reports.
    pub name: String,
    /// The function.
    pub f: F,
}

impl<F: FnMut(&Path, &Path) -> RunOutcome> std::fmt::Debug for FnWriter<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnWriter").field("name", &self.name).finish()
    }
}

impl<F: FnMut(&Path, &Path) -> RunOutcome> Writer for FnWriter<F> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn write(&mut self, model: &Path, out: &Path) -> std::io::Result<RunOutcome> {
        Ok((self.f)(model, out))
    }
}

/// The project's own writer as a [`Writer`] function: reads the
/// description, lays it out canonically and writes it with
/// [`GgufModel::to_bytes`] (what `gguf-validate write-model` runs).
pub fn write_model_file(model: &Path, out: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let m = model_json::from_str(&text)?;
    std::fs::write(out, m.to_bytes()).map_err(|e| format!("{}: {e}", out.display()))
}

/// Settings of a campaign.
#[derive(Clone, Debug)]
pub struct CampaignOptions {
    /// Most cases.
    pub cases: u64,
    /// Seed: case `i` is generated from `(seed, i)` alone.
    pub seed: u64,
    /// Stop starting new cases after this long.
    pub time: Option<Duration>,
    /// Profile the written files must be valid under.
    pub profile: Profile,
    /// What the writer claims.
    pub caps: Capabilities,
    /// Shrinking budget per kind.
    pub shrink: Budget,
    /// A scratch directory (the model and output files of the case at hand).
    pub work_dir: PathBuf,
    /// Where to write reproducers, if anywhere.
    pub findings_dir: Option<PathBuf>,
}

/// One kind of finding over a campaign (a [`Kind::family`]: for value
/// and tensor fields, one mismatch over every type it was seen with).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FindingGroup {
    /// What differs (`ty` is `*` for a family over types, see `types`).
    pub kind: Kind,
    /// Cases that showed it.
    pub cases: u64,
    /// The value or tensor types it was seen with, and in how many cases.
    pub types: BTreeMap<String, u64>,
    /// The first such case.
    pub first_case: u64,
    /// Seconds from the campaign's start to that case's verdict.
    pub first_after_secs: f64,
    /// The mismatch as seen in the first case.
    pub first: Mismatch,
    /// The shrunk reproducer.
    pub shrunk: Shrunk,
}

/// A shrunk reproducer.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Shrunk {
    /// The description (model JSON).
    #[serde(skip)]
    pub model_json: String,
    /// What the writer wrote for it (empty when it wrote nothing).
    #[serde(skip)]
    pub out: Vec<u8>,
    /// The mismatches of this kind in the shrunk case.
    pub mismatches: Vec<Mismatch>,
    /// Cost and sizes.
    pub stats: ShrinkStats,
    /// The directory it was written to, relative to the findings directory.
    pub dir: Option<String>,
}

/// A campaign's results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CampaignReport {
    /// The writer (command line).
    pub writer: String,
    /// Profile.
    pub profile: Profile,
    /// Seed.
    pub seed: u64,
    /// Cases run (written and judged).
    pub cases: u64,
    /// Cases whose generated description was not valid under the profile
    /// once cut to the writer's claims (not run).
    pub skipped: u64,
    /// Cases with at least one finding.
    pub cases_with_findings: u64,
    /// Wall time.
    #[serde(serialize_with = "crate::campaign_report::secs")]
    pub elapsed: Duration,
    /// Why it stopped: `cases` or `time`.
    pub stopped_by: &'static str,
    /// The claims, summarised.
    pub capabilities: String,
    /// Findings by kind, in order of discovery.
    pub findings: Vec<FindingGroup>,
    /// Differences that are not findings (key order), with case counts.
    pub infos: BTreeMap<String, u64>,
}

impl FindingGroup {
    /// `kv u32,u64: off by one`, `rule tensor-offset-misaligned: error`.
    pub fn label(&self) -> String {
        if self.kind.ty != "*" {
            return self.kind.to_string();
        }
        let mut names: Vec<&str> = self.types.keys().map(String::as_str).take(8).collect();
        let more = self.types.len().saturating_sub(names.len());
        let extra = format!("+{more}");
        if more > 0 {
            names.push(&extra);
        }
        format!("{} {}: {}", self.kind.class, names.join(","), self.kind.what)
    }
}

impl CampaignReport {
    /// Exit status of the CLI: 0 no findings, 1 findings.
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.findings.is_empty())
    }
}

/// Something went wrong with the harness, not the writer.
#[derive(Debug)]
pub struct HarnessError(pub String);

impl std::fmt::Display for HarnessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Progress events, for front ends.
#[derive(Clone, Debug)]
pub enum Event<'a> {
    /// A case has been judged.
    Case(u64),
    /// A new kind was found in a case.
    NewKind(&'a Kind, u64),
    /// Its reproducer was shrunk.
    Shrunk(&'a Kind, &'a ShrinkStats),
}

/// The smith configuration for a case, cut to the writer's claims.
fn config_for(u: &mut Unstructured<'_>, caps: &Capabilities, profile: Profile) -> arbitrary::Result<Config> {
    let mut cfg = Config::arbitrary_for(u, profile)?;
    let keep_vt: Vec<ValueType> = cfg.value_types.iter().copied().filter(|t| caps.value_types.contains(t)).collect();
    cfg.value_types = if keep_vt.is_empty() { caps.value_types.clone() } else { keep_vt };
    let keep_tt: Vec<_> = cfg.tensor_types.iter().copied().filter(|t| caps.tensor_types.contains(t)).collect();
    cfg.tensor_types = if keep_tt.is_empty() { caps.tensor_types.clone() } else { keep_tt };
    if !caps.versions.contains(&cfg.version) {
        cfg.version = *u.choose(&caps.versions)?;
    }
    if !caps.big_endian {
        cfg.byte_order = ByteOrder::LittleEndian;
    }
    if !caps.alignment {
        cfg.alignment = None;
    }
    if !caps.nested_arrays {
        cfg.max_nesting = 0;
    }
    cfg.zero_dims &= caps.zero_dims;
    cfg.zero_n_dims &= caps.scalar_tensors;
    cfg.max_dims = cfg.max_dims.min(caps.max_dims).max(1);
    if !caps.tensors {
        cfg.max_tensors = 0;
    }
    // A writer lays out its own data: no gaps, no shuffling, no garbage.
    cfg.shuffle_data = false;
    cfg.data_gaps = false;
    cfg.trailing_bytes = 0;
    cfg.pad_end = true;
    // Descriptions are JSON: UTF-8 strings, keys and names only.
    cfg.lax_bytes = false;
    cfg.spec_tensor_names = false;
    cfg.edge_values = true;
    Ok(cfg)
}

fn strip_nul(v: &mut OwnedValue) {
    match v {
        OwnedValue::String(s) => s.iter_mut().filter(|b| **b == 0).for_each(|b| *b = b'0'),
        OwnedValue::Array(_, items) => items.iter_mut().for_each(strip_nul),
        _ => {}
    }
}

/// Whether `model` (laid out canonically by the project's writer) is valid
/// under `profile`: descriptions that are not are never given to a writer.
pub fn valid_description(model: &GgufModel, profile: Profile) -> bool {
    let mut m = model.clone();
    m.canonical().is_some()
        && Validator::new(Options::new(profile)).validate_bytes(&m.to_bytes()).report.counts.errors == 0
}

/// Generates the description of case `case`, or `None` when the generated
/// file, cut to the claims, is not valid under the profile.
pub fn describe(seed: u64, case: u64, caps: &Capabilities, profile: Profile) -> Option<GgufModel> {
    let bytes = SplitMix64::for_case(seed, case).bytes(CASE_BYTES);
    let mut u = Unstructured::new(&bytes);
    let cfg = config_for(&mut u, caps, profile).ok()?;
    let mut model = smith::generate(&mut u, &cfg).ok()?;
    // Standard keys have fixed types: drop those the writer does not claim.
    model.kvs.retain(|(_, v)| {
        caps.value_types.contains(&v.value_type())
            && !matches!(v, OwnedValue::Array(e, _) if !caps.value_types.contains(e))
    });
    if !caps.nul_in_strings {
        model.kvs.iter_mut().for_each(|(_, v)| strip_nul(v));
    }
    model.trailing.clear();
    model.canonical()?;
    valid_description(&model, profile).then_some(model)
}

/// One judged case.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Findings and infos.
    pub comparison: Comparison,
    /// The bytes written (empty when none).
    pub out: Vec<u8>,
}

/// The line of stderr that names the failure: an assertion, a panic, an
/// error or exception line; else the last line that is not the shell's own
/// report of the signal (`sh: line 1: 123 Aborted ...`).
pub(crate) fn telling_line(stderr: &str) -> &str {
    const TELLING: [&str; 6] = ["GGML_ASSERT", "GGML_ABORT", "panicked", "Error", "error:", "Exception"];
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let shell = |l: &str| l.starts_with("sh:") || l.starts_with("bash:") || l.contains("core dumped") || l == "Aborted";
    lines
        .iter()
        .rev()
        .find(|l| TELLING.iter().any(|t| l.contains(t)))
        .or_else(|| lines.iter().rev().find(|l| !shell(l)))
        .or_else(|| lines.last())
        .copied()
        .unwrap_or("no message")
}

/// [`telling_line`] with numbers and quoted text blanked (`KeyError: '…'`,
/// `line N`), to group failures by message.
fn stderr_class(stderr: &str) -> String {
    let line = telling_line(stderr);
    let mut out = String::new();
    let mut quote: Option<char> = None;
    // Inside a number (a digit run not glued to a name like `Q8_1`).
    let mut in_number = false;
    let mut prev = ' ';
    for c in line.chars() {
        let word = |p: char| p.is_alphanumeric() || p == '_';
        match quote {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if (c == '\'' || c == '"' || c == '`') && !word(prev) => {
                out.push(c);
                quote = Some(c);
            }
            None if c.is_ascii_digit() && (in_number || !word(prev)) => {
                if !in_number {
                    out.push('N');
                }
                in_number = true;
            }
            None => {
                in_number = false;
                out.push(c);
            }
        }
        prev = c;
    }
    out.chars().take(100).collect()
}

/// Writes `model` with `writer` in `dir` and judges the output.
pub fn judge(
    writer: &mut dyn Writer,
    model: &GgufModel,
    dir: &Path,
    opts: &Options,
) -> Result<(Verdict, RunOutcome), HarnessError> {
    let json = model_json::to_string(model).map_err(HarnessError)?;
    let model_path = dir.join("model.json");
    let out_path = dir.join("out.gguf");
    std::fs::write(&model_path, json).map_err(|e| HarnessError(format!("{}: {e}", model_path.display())))?;
    let _ = std::fs::remove_file(&out_path);
    let outcome =
        writer.write(&model_path, &out_path).map_err(|e| HarnessError(format!("cannot run the writer: {e}")))?;
    let mut v = Verdict::default();
    let writer_finding = |what: String, got: String| Mismatch {
        kind: Kind::new("writer", "exit", what),
        path: "writer".into(),
        expected: "exit 0 and a file".into(),
        got,
        offset: None,
    };
    match &outcome {
        RunOutcome::Success => match std::fs::read(&out_path) {
            Ok(bytes) => {
                v.comparison = compare(model, &bytes, opts);
                v.out = bytes;
            }
            Err(_) => {
                v.comparison.findings.push(writer_finding("exit 0 without an output file".into(), "no file".into()))
            }
        },
        RunOutcome::Failed { code, stderr } => {
            let what = format!("failed: {}", stderr_class(stderr));
            let status = code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
            let got = format!("{status}: {}", telling_line(stderr));
            v.comparison.findings.push(writer_finding(what, got));
        }
        RunOutcome::TimedOut => v.comparison.findings.push(writer_finding("timed out".into(), "killed".into())),
    }
    Ok((v, outcome))
}

/// The families of a case's findings, each with the types it showed.
fn families(c: &Comparison) -> BTreeMap<Kind, Vec<String>> {
    let mut out: BTreeMap<Kind, Vec<String>> = BTreeMap::new();
    for m in &c.findings {
        let tys = out.entry(m.kind.family()).or_default();
        if !tys.contains(&m.kind.ty) {
            tys.push(m.kind.ty.clone());
        }
    }
    out
}

/// Runs a campaign. Findings are written under `opts.findings_dir` as
/// they are shrunk, so an interrupted campaign keeps what it found.
pub fn run_campaign(
    writer: &mut dyn Writer,
    opts: &CampaignOptions,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<CampaignReport, HarnessError> {
    let start = Instant::now();
    let vopts = Options::new(opts.profile);
    std::fs::create_dir_all(&opts.work_dir).map_err(|e| HarnessError(format!("{}: {e}", opts.work_dir.display())))?;
    if let Some(d) = &opts.findings_dir {
        std::fs::create_dir_all(d).map_err(|e| HarnessError(format!("{}: {e}", d.display())))?;
    }
    let mut report = CampaignReport {
        writer: writer.name(),
        profile: opts.profile,
        seed: opts.seed,
        cases: 0,
        skipped: 0,
        cases_with_findings: 0,
        elapsed: Duration::ZERO,
        stopped_by: "cases",
        capabilities: opts.caps.summary(),
        findings: Vec::new(),
        infos: BTreeMap::new(),
    };
    for case in 0..opts.cases {
        if opts.time.is_some_and(|t| start.elapsed() >= t) {
            report.stopped_by = "time";
            break;
        }
        let Some(model) = describe(opts.seed, case, &opts.caps, opts.profile) else {
            report.skipped += 1;
            continue;
        };
        let (verdict, outcome) = judge(writer, &model, &opts.work_dir, &vopts)?;
        if report.cases == 0 {
            if let RunOutcome::Failed { code: Some(c @ (126 | 127)), stderr } = &outcome {
                return Err(HarnessError(format!("the writer command cannot be run (exit {c}): {}", stderr.trim())));
            }
        }
        report.cases += 1;
        on_event(Event::Case(case));
        for info in &verdict.comparison.infos {
            *report.infos.entry(info.kind.to_string()).or_insert(0) += 1;
        }
        let fams = families(&verdict.comparison);
        if !fams.is_empty() {
            report.cases_with_findings += 1;
        }
        for (kind, tys) in fams {
            if let Some(g) = report.findings.iter_mut().find(|g| g.kind == kind) {
                g.cases += 1;
                for ty in tys {
                    *g.types.entry(ty).or_insert(0) += 1;
                }
                continue;
            }
            let first_after_secs = start.elapsed().as_secs_f64();
            on_event(Event::NewKind(&kind, case));
            let first = verdict
                .comparison
                .findings
                .iter()
                .find(|m| m.kind.family() == kind)
                .cloned()
                .ok_or_else(|| HarnessError("internal: a kind without its mismatch".into()))?;
            let shrunk = shrink_kind(writer, &model, &kind, opts, &vopts)?;
            on_event(Event::Shrunk(&kind, &shrunk.stats));
            let types = tys.into_iter().map(|t| (t, 1)).collect();
            let mut group = FindingGroup { kind, cases: 1, types, first_case: case, first_after_secs, first, shrunk };
            if let Some(dir) = &opts.findings_dir {
                let index = report.findings.len() + 1;
                save_finding(dir, index, &mut group, &report)?;
            }
            report.findings.push(group);
        }
    }
    report.elapsed = start.elapsed();
    if let Some(dir) = &opts.findings_dir {
        // Reports again, now with the final case counts.
        for g in &report.findings {
            if let Some(name) = &g.shrunk.dir {
                let sub = dir.join(name);
                write(&sub, "report.txt", finding_text(g, &report, true).as_bytes())?;
                let json = serde_json::to_string_pretty(g).map_err(|e| HarnessError(e.to_string()))?;
                write(&sub, "report.json", json.as_bytes())?;
            }
        }
        let json = serde_json::to_string_pretty(&report).map_err(|e| HarnessError(e.to_string()))?;
        write(dir, "summary.json", json.as_bytes())?;
        write(dir, "summary.txt", campaign_text(&report, true).as_bytes())?;
    }
    Ok(report)
}

fn shrink_kind(
    writer: &mut dyn Writer,
    model: &GgufModel,
    kind: &Kind,
    opts: &CampaignOptions,
    vopts: &Options,
) -> Result<Shrunk, HarnessError> {
    let mut harness_error = None;
    let mut test = |candidate: &GgufModel| {
        if harness_error.is_some() || !valid_description(candidate, opts.profile) {
            return false;
        }
        match judge(writer, candidate, &opts.work_dir, vopts) {
            Ok((v, _)) => v.comparison.findings.iter().any(|m| m.kind.family() == *kind),
            Err(e) => {
                harness_error = Some(e);
                false
            }
        }
    };
    let (small, stats) = shrink(model, opts.shrink, &mut test);
    if let Some(e) = harness_error {
        return Err(e);
    }
    // The final run leaves the reproducer's output in the work directory.
    let (v, _) = judge(writer, &small, &opts.work_dir, vopts)?;
    let mismatches: Vec<Mismatch> = v.comparison.findings.into_iter().filter(|m| m.kind.family() == *kind).collect();
    Ok(Shrunk {
        model_json: model_json::to_string(&small).map_err(HarnessError)?,
        out: v.out,
        mismatches,
        stats,
        dir: None,
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), HarnessError> {
    let p = dir.join(name);
    std::fs::write(&p, bytes).map_err(|e| HarnessError(format!("{}: {e}", p.display())))
}

fn save_finding(dir: &Path, index: usize, g: &mut FindingGroup, report: &CampaignReport) -> Result<(), HarnessError> {
    let name = format!("{index:02}-{}", g.kind.slug());
    let sub = dir.join(&name);
    std::fs::create_dir_all(&sub).map_err(|e| HarnessError(format!("{}: {e}", sub.display())))?;
    write(&sub, "model.json", g.shrunk.model_json.as_bytes())?;
    if !g.shrunk.out.is_empty() {
        write(&sub, "out.gguf", &g.shrunk.out)?;
    }
    g.shrunk.dir = Some(name);
    write(&sub, "report.txt", finding_text(g, report, true).as_bytes())?;
    let json = serde_json::to_string_pretty(g).map_err(|e| HarnessError(e.to_string()))?;
    write(&sub, "report.json", json.as_bytes())
}

/// The size of the shrunk description of each kind (for tests and reports).
pub fn shrunk_size(g: &FindingGroup) -> Size {
    g.shrunk.stats.after
}

/// One finding's report (`report.txt`). `timings: false` prints `T` for
/// every time, for snapshots.
pub fn finding_text(g: &FindingGroup, r: &CampaignReport, timings: bool) -> String {
    let mut s = String::new();
    let st = &g.shrunk.stats;
    let _ = writeln!(s, "kind:     {}", g.label());
    if g.types.len() > 1 {
        let per: Vec<String> = g.types.iter().map(|(t, n)| format!("{t} {n}")).collect();
        let _ = writeln!(s, "types:    {}", per.join(", "));
    }
    let _ = writeln!(s, "writer:   {}", r.writer);
    let _ = writeln!(
        s,
        "cases:    {} (first: case {} of seed {}, after {})",
        g.cases,
        g.first_case,
        r.seed,
        time(g.first_after_secs, timings)
    );
    let _ = writeln!(s, "first:    {}", mismatch_line(&g.first));
    let _ = writeln!(
        s,
        "shrunk:   {} -> {} ({} writer runs, {}{})",
        st.before,
        st.after,
        st.runs,
        time(st.elapsed.as_secs_f64(), timings),
        if st.budget_exhausted { ", budget exhausted" } else { "" }
    );
    if let Some(dir) = &g.shrunk.dir {
        let out = if g.shrunk.out.is_empty() { "" } else { ", out.gguf" };
        let _ = writeln!(s, "files:    {dir}/model.json{out}");
    }
    if g.shrunk.mismatches.is_empty() {
        let _ = writeln!(s, "reproducer: (the shrunk description no longer shows it on a re-run: flaky)");
    }
    for m in &g.shrunk.mismatches {
        let _ = writeln!(s, "reproducer: {}", mismatch_line(m));
    }
    s
}

/// A campaign's summary.
pub fn campaign_text(r: &CampaignReport, timings: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "fuzz-writer: {}", r.writer);
    let _ = writeln!(
        s,
        "  {} cases ({} skipped), {}, stopped by {}; profile {}, seed {}",
        r.cases,
        r.skipped,
        time(r.elapsed.as_secs_f64(), timings),
        r.stopped_by,
        r.profile,
        r.seed
    );
    let _ = writeln!(s, "  claims: {}", r.capabilities);
    if r.findings.is_empty() {
        let _ = writeln!(s, "  no findings");
    } else {
        let _ = writeln!(
            s,
            "  {} kind{} of finding in {} case{}:",
            r.findings.len(),
            if r.findings.len() == 1 { "" } else { "s" },
            r.cases_with_findings,
            if r.cases_with_findings == 1 { "" } else { "s" }
        );
    }
    for (i, g) in r.findings.iter().enumerate() {
        let _ = writeln!(
            s,
            "  [{}] {} ({} case{}; first at case {}, {}; shrunk to {} in {} runs)",
            i + 1,
            g.label(),
            g.cases,
            if g.cases == 1 { "" } else { "s" },
            g.first_case,
            time(g.first_after_secs, timings),
            g.shrunk.stats.after,
            g.shrunk.stats.runs
        );
        if let Some(m) = g.shrunk.mismatches.first() {
            let _ = writeln!(s, "      {}", mismatch_line(m));
        }
        if let Some(dir) = &g.shrunk.dir {
            let _ = writeln!(s, "      reproducer: {dir}/");
        }
    }
    for (k, n) in &r.infos {
        let _ = writeln!(s, "  info: {k} ({n} case{})", if *n == 1 { "" } else { "s" });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(name: &str, cases: u64) -> CampaignOptions {
        CampaignOptions {
            cases,
            seed: 1,
            time: None,
            profile: Profile::Strict,
            caps: Capabilities::default(),
            shrink: Budget::default(),
            work_dir: std::env::temp_dir().join(format!("gguf-fw-{name}-{}", std::process::id())),
            findings_dir: None,
        }
    }

    fn own() -> FnWriter<impl FnMut(&Path, &Path) -> RunOutcome> {
        FnWriter {
            name: "own".into(),
            f: |m: &Path, o: &Path| match write_model_file(m, o) {
                Ok(()) => RunOutcome::Success,
                Err(e) => RunOutcome::Failed { code: Some(1), stderr: e },
            },
        }
    }

    #[test]
    fn the_projects_writer_has_no_findings() {
        let r = run_campaign(&mut own(), &options("own", 150), &mut |_| {}).unwrap();
        assert!(r.findings.is_empty(), "{}", campaign_text(&r, false));
        assert!(r.cases >= 120, "{} cases run, {} skipped", r.cases, r.skipped);
        assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn descriptions_cover_the_claims() {
        let caps = Capabilities::default();
        let mut value_types = std::collections::HashSet::new();
        let mut tensor_types = std::collections::HashSet::new();
        let (mut nan_payload, mut neg_zero, mut zero_dim) = (false, false, false);
        for case in 0..400 {
            let Some(m) = describe(3, case, &caps, Profile::Strict) else { continue };
            for (_, v) in &m.kvs {
                for t in ValueType::ALL {
                    if crate::compare::mentions(v, t) {
                        value_types.insert(t);
                    }
                }
                nan_payload |= matches!(v, OwnedValue::F32(x) if x.is_nan() && x.to_bits() != 0x7FC0_0000);
                neg_zero |= matches!(v, OwnedValue::F64(x) if x.to_bits() == 0x8000_0000_0000_0000);
            }
            for t in &m.tensors {
                tensor_types.insert(t.type_id);
                zero_dim |= t.dims.contains(&0);
            }
        }
        assert_eq!(value_types.len(), ValueType::ALL.len(), "{value_types:?}");
        assert_eq!(tensor_types.len(), gguf_validate_core::types::GgmlType::ALL.len());
        assert!(nan_payload && neg_zero && zero_dim);
        // Nothing unclaimed is generated.
        let narrow = Capabilities::from_toml(
            "value_types = [\"u32\", \"string\"]\ntensor_types = [\"f16\"]\nalignment = false\nzero_dims = false",
        )
        .unwrap();
        for case in 0..100 {
            let Some(m) = describe(3, case, &narrow, Profile::Strict) else { continue };
            assert!(
                m.kvs
                    .iter()
                    .all(|(k, v)| matches!(v, OwnedValue::U32(_) | OwnedValue::String(_)) && k != b"general.alignment")
            );
            assert!(m.tensors.iter().all(|t| t.type_id == 1 && !t.dims.contains(&0)));
        }
    }

    /// A writer with a bug: every top-level u32 value other than
    /// `general.alignment` is written one too high.
    fn off_by_one(m: &Path, o: &Path) -> RunOutcome {
        let text = std::fs::read_to_string(m).unwrap_or_default();
        let Ok(mut model) = model_json::from_str(&text) else {
            return RunOutcome::Failed { code: Some(1), stderr: "bad".into() };
        };
        for (k, v) in &mut model.kvs {
            if let OwnedValue::U32(x) = v {
                if k != b"general.alignment" {
                    *x = x.wrapping_add(1);
                }
            }
        }
        let _ = std::fs::write(o, model.to_bytes());
        RunOutcome::Success
    }

    #[test]
    fn a_broken_writer_is_found_grouped_and_shrunk() {
        let findings = std::env::temp_dir().join(format!("gguf-fw-findings-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&findings);
        let mut opts = options("broken", 60);
        opts.findings_dir = Some(findings.clone());
        let mut w = FnWriter { name: "off-by-one".into(), f: off_by_one };
        let mut new_kinds = 0;
        let r = run_campaign(&mut w, &opts, &mut |e| {
            if let Event::NewKind(..) = e {
                new_kinds += 1;
            }
        })
        .unwrap();
        assert_eq!(r.exit_code(), 1);
        let g = r.findings.iter().find(|g| g.kind == Kind::new("kv", "*", "off by one")).unwrap();
        assert_eq!(g.label(), "kv u32: off by one");
        assert_eq!(g.types.get("u32"), Some(&g.cases));
        // Grouped: many cases, one kind, one reproducer.
        assert!(g.cases > 10, "{}", g.cases);
        // The other faces of the bug: u32::MAX + 1 wraps to 0, and a special
        // token id one past the vocabulary breaks a rule.
        let kinds: Vec<String> = r.findings.iter().map(FindingGroup::label).collect();
        let expected = ["kv u32: off by one", "kv u32: zeroed", "rule token-id-range: error"];
        assert!(kinds.iter().all(|k| expected.contains(&k.as_str())), "{kinds:?}");
        // Shrunk to the u32 key and the one key strict requires of every
        // file (general.architecture), no tensors.
        let dir = findings.join(g.shrunk.dir.as_ref().unwrap());
        let shrunk = model_json::from_str(&std::fs::read_to_string(dir.join("model.json")).unwrap()).unwrap();
        assert_eq!(shrunk.kvs.len(), 2, "{:?}", shrunk.kvs);
        assert_eq!(shrunk.kvs[0].0, b"general.architecture");
        assert_eq!(shrunk.kvs[1].1, OwnedValue::U32(0), "values are simplified too");
        assert_eq!(g.shrunk.stats.after.kvs, 2);
        assert_eq!(g.shrunk.stats.after.tensors, 0);
        assert!(g.shrunk.stats.after.kvs < g.shrunk.stats.before.kvs);
        let m = &g.shrunk.mismatches[0];
        assert_eq!((m.expected.as_str(), m.got.as_str()), ("u32 0", "u32 1"));
        // Reproducer files.
        assert!(std::fs::read(dir.join("out.gguf")).unwrap().starts_with(b"GGUF"));
        assert!(std::fs::read_to_string(dir.join("report.txt")).unwrap().contains("kv u32: off by one"));
        assert!(findings.join("summary.json").exists());
        assert_eq!(new_kinds, r.findings.len());
        insta::assert_snapshot!("campaign_off_by_one", campaign_text(&r, false));
        insta::assert_snapshot!("finding_off_by_one", finding_text(g, &r, false));
        let _ = std::fs::remove_dir_all(&findings);
    }

    #[test]
    fn stderr_lines_group_by_message() {
        assert_eq!(
            stderr_class("x\nValueError: size 36 of Q8_1 at 'a.b' isn't 40\n\n"),
            "ValueError: size N of Q8_1 at '…' isn't N"
        );
        assert_eq!(stderr_class(""), "no message");
        let abort = "/src/gguf.cpp:1637: GGML_ASSERT(info.t.data) failed\nsh: line 1: 9525 Aborted (core dumped) python3 w.py\n";
        assert_eq!(stderr_class(abort), "/src/gguf.cpp:N: GGML_ASSERT(info.t.data) failed");
        assert_eq!(stderr_class("warning: x\nsh: line 1: 7 Segmentation fault w\n"), "warning: x");
    }

    #[test]
    fn writer_failures_and_timeouts_are_findings() {
        let mut w =
            CommandWriter { template: "echo 'KeyError: 12' >&2; exit 1".into(), timeout: Duration::from_secs(10) };
        let mut opts = options("fail", 3);
        opts.shrink.max_runs = 5;
        let r = run_campaign(&mut w, &opts, &mut |_| {}).unwrap();
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].kind.to_string(), "writer exit: failed: KeyError: N");
        let mut w = CommandWriter { template: "sleep 20".into(), timeout: Duration::from_millis(200) };
        let mut opts = options("slow", 1);
        opts.shrink.max_runs = 1;
        let r = run_campaign(&mut w, &opts, &mut |_| {}).unwrap();
        assert_eq!(r.findings[0].kind.what, "timed out");
        let mut w =
            CommandWriter { template: "no-such-writer-command {model} {out}".into(), timeout: Duration::from_secs(10) };
        assert!(run_campaign(&mut w, &options("missing", 1), &mut |_| {}).is_err());
    }
}
