//! The renderer: the one place that writes to stdout and stderr.
#![allow(clippy::disallowed_macros)]

use std::io::{self, IsTerminal, Write};

use gguf_validate::check_data::{DataReport, TensorStatus};
use gguf_validate::parse::LegacyFormat;
use gguf_validate::parse::{escape_bytes, quote_bytes};
use gguf_validate::report::{Diagnostic, FileFormat, Report, Summary};
use gguf_validate::rules::{Level, Profile, RULES};
use gguf_validate::split_set::SetReport;
use serde::Serialize;

use crate::cli::Format;

/// Version of the JSON report's shape (`--format json` and `jsonl`):
/// 2 added `schema_version`, `jsonl`, and the capped `data.per_tensor`;
/// 3 added split sets: an entry with `"kind": "split-set"` after a set's
/// shards (in `files`, or as a line of its own), and `split_set` on each
/// shard's entry naming it. File entries are otherwise unchanged.
/// 4 added `totals` at the end of the document (files valid, invalid,
/// unreadable, split sets).
/// 5 added URLs: `summary.remote` (the URL without its query, bytes
/// fetched, requests, whether ranges were honoured, revision, ETag) on the
/// entry of a file read over HTTP.
pub const JSON_SCHEMA_VERSION: u32 = 5;

/// The outcome for one file on the command line.
#[derive(Clone, Debug)]
pub enum FileOutcome {
    /// Validated (with the `--check-data` results, when asked for).
    Report(Box<Report>, Option<Box<DataReport>>),
    /// Could not be read.
    Unreadable(String),
}

#[derive(Serialize)]
struct JsonFile<'a> {
    path: &'a str,
    /// The split set the file is a shard of (its entry follows the shards).
    #[serde(skip_serializing_if = "Option::is_none")]
    split_set: Option<&'a str>,
    #[serde(flatten)]
    report: &'a Report,
    /// Only with `--check-data`: per-tensor counts of the data scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a DataReport>,
}

#[derive(Serialize)]
struct JsonSet<'a> {
    /// `NAME-*-of-0000n.gguf`.
    path: &'a str,
    /// Always `split-set` (file entries have no `kind`).
    kind: &'static str,
    #[serde(flatten)]
    report: &'a SetReport,
}

#[derive(Serialize)]
struct JsonUnreadable<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    split_set: Option<&'a str>,
    valid: bool,
    profile: Profile,
    error: &'a str,
}

/// A path as people see it (a URL without its query): control characters, ESC, bidi controls and
/// bytes that are not UTF-8 escaped (`\n`, `\u{1b}`, `\xff`), and `\`
/// doubled, so a file name can neither forge a line of output nor lose
/// bytes.
pub fn display_path(path: &std::path::Path) -> String {
    if let Some(url) = crate::remote::url_of(path) {
        return escape_bytes(gguf_validate::remote::shown(url).as_bytes(), true);
    }
    escape_bytes(path.as_os_str().as_encoded_bytes(), true)
}

/// A path in JSON: the path itself when it is UTF-8 (JSON escapes control
/// characters losslessly), the escaped form of [`display_path`] otherwise.
pub fn json_path(path: &std::path::Path) -> String {
    if let Some(url) = crate::remote::url_of(path) {
        // Never a query string: it may hold a signature.
        return gguf_validate::remote::shown(url);
    }
    match path.to_str() {
        Some(s) => s.to_string(),
        None => display_path(path),
    }
}

/// ANSI styles, empty when colour is off.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    on: bool,
}

impl Style {
    pub fn new(on: bool) -> Style {
        Style { on }
    }
    fn paint(self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }
    fn level(self, l: Level) -> String {
        match l {
            Level::Error => self.paint("1;31", "error"),
            Level::Warning => self.paint("1;33", "warning"),
            Level::Info => self.paint("1;36", "info"),
            Level::Allow => "allow".into(),
        }
    }
}

pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

fn summary_line(r: &Report) -> String {
    let s: &Summary = &r.summary;
    let mut parts = Vec::new();
    if s.file_size == 0 {
        return "empty file (0 bytes)".into();
    }
    let fmt = match (r.format, r.version) {
        (FileFormat::Gguf, Some(v)) => format!("GGUF v{v}"),
        // No GGUF magic nor any other known one was read.
        (FileFormat::Unknown, _) => "unknown format".into(),
        (FileFormat::Legacy(LegacyFormat::Rwkv), Some(v)) => format!("rwkv.cpp v{v}"),
        (f, Some(v)) => format!("{} v{v}", f.name().to_uppercase()),
        (f, None) => f.name().to_uppercase(),
    };
    parts.push(match r.byte_order {
        Some(o) => format!("{fmt}, {}", o.name()),
        None => fmt,
    });
    let plural = |n: u64, w: &str| if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") };
    if let Some(k) = s.kv_count {
        // Legacy formats count hyper-parameters where GGUF counts keys.
        parts.push(plural(k, if r.format == FileFormat::Gguf { "key" } else { "hyper-parameter" }));
    }
    if let Some(t) = s.tensor_count {
        parts.push(plural(t, "tensor"));
    }
    if let Some(a) = s.alignment {
        parts.push(format!("alignment {a}"));
    }
    if let Some(a) = &s.architecture {
        parts.push(format!("architecture {a}"));
    }
    if let Some(p) = s.parameters.filter(|p| *p > 0) {
        parts.push(format!("{p} parameters"));
    }
    match (s.data_size, s.data_offset) {
        (Some(d), Some(o)) => parts.push(format!("tensor data {} at 0x{o:x}", human_size(d))),
        (Some(d), None) if d > 0 => parts.push(format!("tensor data {}", human_size(d))),
        _ => {}
    }
    parts.push(format!("file {}", human_size(s.file_size)));
    parts.join(" | ")
}

/// What reading a remote file cost: `remote: fetched 8.0 MiB in 6
/// requests, revision 1a2b3c`.
fn remote_line(r: &Report) -> Option<String> {
    let m = r.summary.remote.as_ref()?;
    let plural = |n: u64, w: &str| if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") };
    let mut line = format!("remote: fetched {} in {}", human_size(m.bytes_fetched), plural(m.requests, "request"));
    if !m.range_requests {
        line.push_str(" (the server ignores Range: one response, read as far as needed)");
    }
    if let Some(rev) = &m.revision {
        line.push_str(&format!(", revision {}", escape_bytes(rev.as_bytes(), true)));
    }
    Some(line)
}

/// What was and was not examined, in one line: `examined: container,
/// model, tokenizer; not examined: data (use --check-data)`.
fn examined_line(r: &Report) -> Option<String> {
    let show = |e: &gguf_validate::report::Examined| match &e.note {
        Some(n) => format!("{} ({n})", e.layer),
        None => e.layer.to_string(),
    };
    let done: Vec<String> = r.summary.examined.iter().filter(|e| e.checked).map(show).collect();
    let not: Vec<String> = r.summary.examined.iter().filter(|e| !e.checked).map(show).collect();
    match (done.is_empty(), not.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("examined: {}", done.join(", "))),
        (true, false) => Some(format!("not examined: {}", not.join(", "))),
        (false, false) => Some(format!("examined: {}; not examined: {}", done.join(", "), not.join(", "))),
    }
}

fn human_report(out: &mut impl Write, path: &str, r: &Report, style: Style) -> io::Result<()> {
    let verdict = if r.valid { style.paint("1;32", "valid") } else { style.paint("1;31", "INVALID") };
    let c = r.counts;
    let plural = |n: u64, w: &str| if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") };
    writeln!(
        out,
        "{path}: {verdict} (profile {}): {}, {}",
        r.profile,
        plural(c.errors, "error"),
        plural(c.warnings, "warning")
    )?;
    writeln!(out, "  {}", summary_line(r))?;
    if let Some(line) = remote_line(r) {
        writeln!(out, "  {line}")?;
    }
    if let Some(line) = examined_line(r) {
        writeln!(out, "  {line}")?;
    }
    human_diagnostics(out, &r.diagnostics, &r.suppressed, style)
}

/// The findings, each cause first with the findings that follow from it
/// folded into one line under it (all of them are in the JSON), then the
/// counts of findings not listed.
fn human_diagnostics(
    out: &mut impl Write,
    diagnostics: &[Diagnostic],
    suppressed: &std::collections::BTreeMap<&'static str, u64>,
    style: Style,
) -> io::Result<()> {
    let line = |d: &Diagnostic| {
        let path = if d.path.is_empty() { String::new() } else { format!(" {}", d.path) };
        format!("  {}[{}] 0x{:08x}{path}: {}", style.level(d.severity), d.rule, d.offset, d.message)
    };
    let mut folded_rules = std::collections::BTreeSet::new();
    // Each cause named by a finding: how many follow from it, and the first.
    let mut follow: std::collections::BTreeMap<(&str, u64), (u64, &Diagnostic)> = std::collections::BTreeMap::new();
    for o in diagnostics {
        if let Some(c) = o.caused_by {
            follow.entry((c.rule.id(), c.offset)).or_insert((0, o)).0 += 1;
        }
    }
    let key = |d: &Diagnostic| (d.rule.id(), d.offset);
    let is_cause = |d: &Diagnostic| d.caused_by.is_none() && follow.contains_key(&key(d));
    // Causes first (the one fact a person needs), then the rest in offset
    // order, without the findings that follow from a listed cause.
    let causes = diagnostics.iter().filter(|d| is_cause(d));
    let listed_causes: std::collections::BTreeSet<(&str, u64)> =
        diagnostics.iter().filter(|d| is_cause(d)).map(key).collect();
    let rest = diagnostics
        .iter()
        .filter(|d| !is_cause(d) && d.caused_by.is_none_or(|c| !listed_causes.contains(&(c.rule.id(), c.offset))));
    for d in causes.chain(rest) {
        let (n, first) = match follow.get(&key(d)).filter(|_| is_cause(d)) {
            Some((n, first)) => (*n, Some(*first)),
            None => (0, None),
        };
        writeln!(out, "{}", line(d))?;
        if let Some(first) = first {
            let rule = first.rule.id();
            let total = n + suppressed.get(rule).copied().unwrap_or(0);
            folded_rules.insert(rule);
            writeln!(
                out,
                "    \u{2514} {total} [{rule}] {} follow from it, the first at 0x{:08x} {} (each one in --format json)",
                if total == 1 { "finding" } else { "findings" },
                first.offset,
                first.path
            )?;
        }
    }
    for (rule, n) in suppressed {
        if !folded_rules.contains(rule) {
            writeln!(out, "  ... and {n} more [{rule}] findings not listed")?;
        }
    }
    Ok(())
}

/// A split set: verdict, the set's facts, its shards, its findings.
fn human_set(out: &mut impl Write, set: &SetReport, style: Style) -> io::Result<()> {
    let verdict = if set.valid { style.paint("1;32", "valid") } else { style.paint("1;31", "INVALID") };
    let c = set.counts;
    let plural = |n: u64, w: &str| if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") };
    let name = escape_bytes(set.name.as_bytes(), true);
    writeln!(
        out,
        "{name}: split set {verdict} (profile {}): {}, {}",
        set.profile,
        plural(c.errors, "error"),
        plural(c.warnings, "warning")
    )?;
    let s = &set.summary;
    let mut parts = Vec::new();
    parts.push(match s.shard_count {
        Some(n) => format!("{} of {n} shards", s.shards_present),
        None => plural(s.shards_present, "shard"),
    });
    parts.push(match s.tensors_expected {
        Some(t) => format!("{} (split.tensors.count {t})", plural(s.tensor_count, "tensor")),
        None => plural(s.tensor_count, "tensor"),
    });
    if let Some(a) = &s.architecture {
        parts.push(format!("architecture {a}"));
    }
    if let Some(p) = s.parameters.filter(|p| *p > 0) {
        parts.push(format!("{p} parameters"));
    }
    parts.push(format!("total {}", human_size(s.total_size)));
    writeln!(out, "  {}", parts.join(" | "))?;
    let show = |e: &gguf_validate::report::Examined| match &e.note {
        Some(n) => format!("{} ({n})", e.layer),
        None => e.layer.to_string(),
    };
    let done: Vec<String> = s.examined.iter().filter(|e| e.checked).map(show).collect();
    let not: Vec<String> = s.examined.iter().filter(|e| !e.checked).map(show).collect();
    let mut line = Vec::new();
    if !done.is_empty() {
        line.push(format!("examined: {}", done.join(", ")));
    }
    if !not.is_empty() {
        line.push(format!("not examined: {}", not.join(", ")));
    }
    if !line.is_empty() {
        writeln!(out, "  {}", line.join("; "))?;
    }
    for (i, sh) in set.shards.iter().enumerate() {
        let state = match (sh.readable, sh.valid) {
            (false, _) => style.paint("1;31", "unreadable"),
            (true, true) => "valid".to_string(),
            (true, false) => style.paint("1;31", "INVALID"),
        };
        let tensors = sh.tensor_count.map(|t| format!(", {}", plural(t, "tensor"))).unwrap_or_default();
        let shown = escape_bytes(sh.name.as_bytes(), true);
        writeln!(out, "  shard[{i}] {shown}: {state}{tensors}, {}", human_size(sh.file_size))?;
    }
    human_diagnostics(out, &set.diagnostics, &set.suppressed, style)
}

/// The `--check-data` summary: totals, then each tensor with findings or
/// left unchecked.
fn human_data(out: &mut impl Write, d: &DataReport) -> io::Result<()> {
    let plural = |n: u64, w: &str| if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") };
    let shared = if d.bytes_claimed > d.bytes_checked {
        format!(", {} claimed by several tensors scanned once", human_size(d.bytes_claimed - d.bytes_checked))
    } else {
        String::new()
    };
    writeln!(
        out,
        "  data: {} checked ({}{shared}), {}",
        plural(d.tensors_checked, "tensor"),
        human_size(d.bytes_checked),
        plural(d.findings, "finding")
    )?;
    for t in &d.per_tensor {
        let why = match t.status {
            TensorStatus::Checked | TensorStatus::TypeNotValidatable => None,
            TensorStatus::NothingToCheck => continue,
            TensorStatus::UnsupportedByteOrder => Some("not checked: quantized data of a big-endian file"),
            TensorStatus::OutOfBounds => Some("not checked: data outside the file"),
        };
        if let Some(why) = why {
            writeln!(out, "    tensor[{}] {} ({}): {why}", t.index, quote_bytes(t.name.as_bytes()), t.ty)?;
        } else if t.findings > 0 {
            let mut kinds = Vec::new();
            for (n, k) in
                [(t.nan, "nan"), (t.inf, "inf"), (t.mxfp4_exponent, "exponent 0xff"), (t.f64_overflow, "f32 overflow")]
            {
                if n > 0 {
                    kinds.push(format!("{k} {n}"));
                }
            }
            let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
            let name = quote_bytes(t.name.as_bytes());
            writeln!(out, "    tensor[{}] {name} ({}): {}{kinds}", t.index, t.ty, plural(t.findings, "finding"))?;
        }
    }
    if d.per_tensor_omitted > 0 {
        writeln!(out, "    ... and {} more tensors with findings or not checked", d.per_tensor_omitted)?;
    }
    Ok(())
}

/// Progress of a long `--check-data` scan on stderr; hidden unless stderr
/// is a terminal and the scan covers at least [`PROGRESS_MIN_BYTES`].
#[derive(Debug)]
pub struct Progress(Option<indicatif::ProgressBar>);

/// Scans smaller than this finish in well under a second: no bar.
pub const PROGRESS_MIN_BYTES: u64 = 1 << 30;

impl Progress {
    pub fn new(total: u64, label: &str) -> Progress {
        if total < PROGRESS_MIN_BYTES || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_string());
        Progress(Some(bar))
    }
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// Where converted data goes: a file, or stdout for `-`.
pub fn output(path: &std::path::Path) -> io::Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        Ok(Box::new(io::BufWriter::new(io::stdout().lock())))
    } else {
        Ok(Box::new(io::BufWriter::new(std::fs::File::create(path)?)))
    }
}

/// The validation output, written file by file as each one finishes:
/// human text and JSON lines are flushed per file; the JSON document is
/// written as it goes (its head first, its closing brackets by
/// [`Stream::finish`]), so memory does not grow with the number of files.
pub struct Stream {
    format: Format,
    profile: Profile,
    style: Style,
    out: io::BufWriter<io::Stdout>,
    files: u64,
    /// Whole-run reports (SARIF, JUnit) need every outcome: kept here.
    collected: Vec<crate::formats::Entry>,
    /// `--output-sarif` / `--output-junit` files.
    side: SideOutputs,
    /// `--quiet`: valid files are counted, not printed.
    quiet: bool,
    /// Counts for the closing summary.
    totals: Totals,
    /// `*.gguf` files the walk's ignore rules left out, as shown.
    skipped: Vec<String>,
}

/// Skipped files listed by name in a report (all are counted).
const MAX_LISTED_SKIPPED: usize = 100;

/// How many entries of a run were valid, invalid or unreadable.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Totals {
    pub files: u64,
    pub valid: u64,
    pub invalid: u64,
    pub unreadable: u64,
    /// Split sets (each also counted by its shards above).
    pub split_sets: u64,
    /// Split sets invalid as a whole (a missing shard, a tensor in two
    /// shards: every shard may be valid alone).
    pub split_sets_invalid: u64,
    /// `*.gguf` files under the walked directories left out by ignore
    /// files and hidden names (`--no-ignore` includes them).
    pub skipped_by_ignore: u64,
}

/// `1204` -> `1,204`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Totals {
    /// `1,204 files: 1,190 valid, 12 invalid, 2 unreadable`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} {}: {} valid, {} invalid, {} unreadable",
            thousands(self.files),
            if self.files == 1 { "file" } else { "files" },
            thousands(self.valid),
            thousands(self.invalid),
            thousands(self.unreadable)
        );
        if self.split_sets > 0 {
            let sets = if self.split_sets == 1 { "split set" } else { "split sets" };
            s.push_str(&format!(
                " ({} {sets}: {} valid, {} invalid)",
                thousands(self.split_sets),
                thousands(self.split_sets.saturating_sub(self.split_sets_invalid)),
                thousands(self.split_sets_invalid)
            ));
        }
        if self.skipped_by_ignore > 0 {
            s.push_str(&format!(
                "; {} .gguf {} skipped by ignore rules (--no-ignore includes {})",
                thousands(self.skipped_by_ignore),
                if self.skipped_by_ignore == 1 { "file" } else { "files" },
                if self.skipped_by_ignore == 1 { "it" } else { "them" },
            ));
        }
        s
    }
}

/// Reports written to files beside stdout.
#[derive(Clone, Debug, Default)]
pub struct SideOutputs {
    pub sarif: Option<std::path::PathBuf>,
    pub junit: Option<std::path::PathBuf>,
}

impl SideOutputs {
    fn any(&self) -> bool {
        self.sarif.is_some() || self.junit.is_some()
    }
}

impl Stream {
    /// Starts the output (the JSON document's head).
    pub fn begin(format: Format, profile: Profile, style: Style, side: SideOutputs, quiet: bool) -> io::Result<Stream> {
        let mut s = Stream {
            format,
            profile,
            style,
            out: io::BufWriter::new(io::stdout()),
            files: 0,
            collected: Vec::new(),
            side,
            quiet,
            totals: Totals::default(),
            skipped: Vec::new(),
        };
        if format == Format::Json {
            writeln!(s.out, "{{")?;
            writeln!(s.out, "  \"schema_version\": {JSON_SCHEMA_VERSION},")?;
            writeln!(s.out, "  \"tool\": \"gguf-validate\",")?;
            writeln!(s.out, "  \"tool_version\": \"{}\",", env!("CARGO_PKG_VERSION"))?;
            write!(s.out, "  \"files\": [")?;
        }
        Ok(s)
    }

    /// Writes one file's result (`set`: the split set it is a shard of).
    pub fn file(&mut self, path: &std::path::Path, outcome: &FileOutcome, set: Option<&str>) -> io::Result<()> {
        if matches!(self.format, Format::Sarif | Format::Junit) || self.side.any() {
            self.collected.push(crate::formats::Entry::of_file(json_path(path), outcome));
        }
        self.totals.files += 1;
        let valid = match outcome {
            FileOutcome::Report(r, _) if r.valid => {
                self.totals.valid += 1;
                true
            }
            FileOutcome::Report(..) => {
                self.totals.invalid += 1;
                false
            }
            FileOutcome::Unreadable(_) => {
                self.totals.unreadable += 1;
                false
            }
        };
        if self.quiet && valid {
            return Ok(());
        }
        match self.format {
            Format::Sarif | Format::Junit => {}
            Format::Github => {
                let entry = crate::formats::Entry::of_file(json_path(path), outcome);
                self.out.write_all(crate::formats::github(&entry).as_bytes())?;
            }
            Format::Human => {
                let shown = display_path(path);
                match outcome {
                    FileOutcome::Report(r, data) => {
                        human_report(&mut self.out, &shown, r, self.style)?;
                        if let Some(d) = data {
                            human_data(&mut self.out, d)?;
                        }
                    }
                    FileOutcome::Unreadable(e) => {
                        writeln!(self.out, "{shown}: {} cannot read the file: {e}", self.style.paint("1;31", "ERROR"))?;
                    }
                }
            }
            Format::Json | Format::Jsonl => {
                let value = json_file(&json_path(path), outcome, self.profile, set)?;
                self.json_entry(&value)?;
            }
        }
        self.files += 1;
        self.out.flush()
    }

    /// Writes a split set's result (after its shards').
    pub fn set(&mut self, set: &SetReport) -> io::Result<()> {
        if matches!(self.format, Format::Sarif | Format::Junit) || self.side.any() {
            self.collected.push(crate::formats::Entry::of_set(set));
        }
        self.totals.split_sets += 1;
        if !set.valid {
            self.totals.split_sets_invalid += 1;
        }
        if self.quiet && set.valid {
            return Ok(());
        }
        match self.format {
            Format::Sarif | Format::Junit => {}
            Format::Github => {
                self.out.write_all(crate::formats::github(&crate::formats::Entry::of_set(set)).as_bytes())?;
            }
            Format::Human => human_set(&mut self.out, set, self.style)?,
            Format::Json | Format::Jsonl => {
                let value = serde_json::to_value(JsonSet { path: &set.name, kind: "split-set", report: set })
                    .map_err(io::Error::other)?;
                self.json_entry(&value)?;
            }
        }
        self.files += 1;
        self.out.flush()
    }

    /// One entry of the `files` array, or one line.
    fn json_entry(&mut self, value: &serde_json::Value) -> io::Result<()> {
        if self.format == Format::Jsonl {
            let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
            line.push(b'\n');
            return self.out.write_all(&line);
        }
        // Pretty-printed at the depth of the `files` array.
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        let sep = if self.files == 0 { "\n" } else { ",\n" };
        self.out.write_all(sep.as_bytes())?;
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                self.out.write_all(b"\n")?;
            }
            self.out.write_all(b"    ")?;
            self.out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// Records the `*.gguf` files that the walk's ignore rules left out:
    /// every format reports them (counted, and the first
    /// [`MAX_LISTED_SKIPPED`] by name).
    pub fn skipped(&mut self, paths: &[std::path::PathBuf]) {
        self.totals.skipped_by_ignore = u64::try_from(paths.len()).unwrap_or(u64::MAX);
        self.skipped = paths.iter().take(MAX_LISTED_SKIPPED).map(|p| json_path(p)).collect();
    }

    /// Ends the output (the JSON document's closing brackets).
    pub fn finish(mut self) -> io::Result<()> {
        let skipped = crate::formats::Skipped { count: self.totals.skipped_by_ignore, listed: &self.skipped };
        match self.format {
            Format::Json => {
                let close = if self.files == 0 { "]" } else { "\n  ]" };
                self.out.write_all(close.as_bytes())?;
                if !self.skipped.is_empty() {
                    let listed = serde_json::to_string(&self.skipped).map_err(io::Error::other)?;
                    write!(self.out, ",\n  \"skipped_by_ignore\": {listed}")?;
                }
                let totals = serde_json::to_string(&self.totals).map_err(io::Error::other)?;
                write!(self.out, ",\n  \"totals\": {totals}\n}}\n")?;
            }
            // Many files: one closing line (a single file's report says it all).
            Format::Human
                if self.totals.files != 1
                    || self.totals.split_sets > 0
                    || self.quiet
                    || self.totals.skipped_by_ignore > 0 =>
            {
                writeln!(self.out, "{}", self.totals.line())?;
            }
            Format::Sarif => {
                self.out.write_all(crate::formats::sarif(&self.collected, self.profile, &skipped).as_bytes())?
            }
            Format::Junit => {
                self.out.write_all(crate::formats::junit(&self.collected, self.profile, &skipped).as_bytes())?
            }
            Format::Github if skipped.count > 0 => {
                self.out.write_all(crate::formats::github_skipped(&skipped).as_bytes())?
            }
            Format::Jsonl if skipped.count > 0 => warning(&skipped.sentence()),
            _ => {}
        }
        if let Some(p) = &self.side.sarif {
            std::fs::write(p, crate::formats::sarif(&self.collected, self.profile, &skipped))?;
        }
        if let Some(p) = &self.side.junit {
            std::fs::write(p, crate::formats::junit(&self.collected, self.profile, &skipped))?;
        }
        self.out.flush()
    }
}

fn json_file(
    path: &str,
    outcome: &FileOutcome,
    profile: Profile,
    split_set: Option<&str>,
) -> io::Result<serde_json::Value> {
    let v = match outcome {
        FileOutcome::Report(r, data) => {
            serde_json::to_value(JsonFile { path, split_set, report: r, data: data.as_deref() })
        }
        FileOutcome::Unreadable(e) => {
            serde_json::to_value(JsonUnreadable { path, split_set, valid: false, profile, error: e })
        }
    };
    v.map_err(io::Error::other)
}

/// `gguf-validate rules`.
pub fn rules(format: crate::cli::RulesFormat) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match format {
        crate::cli::RulesFormat::Markdown => write!(out, "{}", gguf_validate::rules::catalogue_markdown())?,
        crate::cli::RulesFormat::Json => {
            let rows: Vec<serde_json::Value> = RULES
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "id": r.id,
                        "group": r.group,
                        "fatal": r.fatal,
                        "strict": r.levels.strict,
                        "spec": r.levels.spec,
                        "ggml": r.levels.ggml,
                        "citation": r.citation,
                        "description": r.description,
                        "ggml_divergence": r.divergence,
                    })
                })
                .collect();
            write_json(&mut out, &rows)?;
        }
        crate::cli::RulesFormat::Text => {
            let w = RULES.iter().map(|r| r.id.len()).max().unwrap_or(10);
            writeln!(out, "{:w$}  {:7} {:7} {:7}  description", "rule", "strict", "spec", "ggml")?;
            for r in RULES {
                writeln!(
                    out,
                    "{:w$}  {:7} {:7} {:7}  {}",
                    r.id,
                    r.levels.strict.name(),
                    r.levels.spec.name(),
                    r.levels.ggml.name(),
                    r.description
                )?;
                writeln!(out, "{:w$}  {:23}  see: {}", "", "", r.citation)?;
            }
        }
    }
    out.flush()
}

/// Writes a JSON value followed by a newline.
pub fn json(value: &serde_json::Value) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    write_json(&mut out, value)?;
    out.flush()
}

/// An error message on stderr.
pub fn error(msg: &str) {
    eprintln!("gguf-validate: error: {msg}");
}

/// A warning about the run itself (a config setting that was ignored).
pub fn warning(msg: &str) {
    eprintln!("gguf-validate: warning: {msg}");
}

/// Serialises to memory first so that I/O errors keep their kind (a closed
/// pipe stays `BrokenPipe`).
fn write_json(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)
}

/// The `derive` report: a line per tensor (`identical`, `differs`, `not
/// derivable`) and a closing count, or one JSON document.
pub fn derive_report(results: &[gguf_validate::derive::TensorResult], json: bool) -> io::Result<()> {
    use gguf_validate::derive::Verdict;
    let mut out = io::BufWriter::new(io::stdout().lock());
    if json {
        let doc = serde_json::json!({ "tensors": results });
        write_json(&mut out, &doc)?;
        return out.flush();
    }
    let (mut same, mut differ, mut not) = (0u64, 0u64, 0u64);
    for r in results {
        let name = escape_bytes(r.name.as_bytes(), true);
        match &r.verdict {
            Verdict::Identical => {
                same += 1;
                writeln!(out, "identical      {:<8} {name}", r.ty)?;
            }
            Verdict::Differs { first_block, blocks, max_abs_error } => {
                differ += 1;
                writeln!(
                    out,
                    "differs        {:<8} {name}: {blocks} blocks, the first at block {first_block}, max abs error {max_abs_error}",
                    r.ty
                )?;
            }
            Verdict::NotDerivable { reason } => {
                not += 1;
                writeln!(out, "not derivable  {:<8} {name}: {reason}", r.ty)?;
            }
        }
    }
    writeln!(out, "{} tensors: {same} identical, {differ} differ, {not} not derivable", results.len())?;
    out.flush()
}

/// Text as it is, on stdout (the fuzz-writer / fuzz-quantizer reports).
pub fn text(s: &str) -> io::Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// A progress note about a long run, on stderr.
pub fn note(msg: &str) {
    eprintln!("gguf-validate: {msg}");
}
