//! `--format human`: a verdict line, the file's facts, what was and was
//! not examined, then the findings (each cause first, with the findings
//! that follow from it folded under it); a closing count for many files.

use std::io::{self, Write};

use crate::data_scan::{DataReport, TensorStatus};
use crate::parse::{LegacyFormat, escape_bytes, quote_bytes};
use crate::pipeline::Outcome;
use crate::report::{CONTAINER_ONLY, Counts, DATA_NOT_ASKED, Diagnostic, Examined, FileFormat, Report, Summary};
use crate::rules::{Level, Profile};
use crate::split_set::SetReport;

use super::{FileEntry, Renderer, RunEnd};

/// The human renderer.
pub struct Human {
    style: Style,
}

impl Human {
    pub fn new(style: Style) -> Human {
        Human { style }
    }
}

impl Renderer for Human {
    fn file(&mut self, out: &mut dyn Write, file: &FileEntry<'_>) -> io::Result<()> {
        let shown = file.input.shown();
        match file.outcome {
            Outcome::Report(r, data) => {
                human_report(out, &shown, r, self.style)?;
                if let Some(d) = data {
                    human_data(out, d)?;
                }
                Ok(())
            }
            Outcome::Unreadable(e) => {
                writeln!(out, "{shown}: {} cannot read the file: {e}", self.style.paint("1;31", "ERROR"))
            }
        }
    }

    fn set(&mut self, out: &mut dyn Write, set: &SetReport) -> io::Result<()> {
        human_set(out, set, self.style)
    }

    /// Many files: one closing line (a single file's report says it all).
    fn finish(&mut self, out: &mut dyn Write, end: &RunEnd<'_>) -> io::Result<()> {
        let t = end.totals;
        if t.files != 1 || t.split_sets > 0 || end.quiet || t.skipped_by_ignore > 0 {
            writeln!(out, "{}", t.line())?;
        }
        Ok(())
    }
}

/// `1 error`, `2 warnings`.
fn plural(n: u64, w: &str) -> String {
    if n == 1 { format!("{n} {w}") } else { format!("{n} {w}s") }
}

/// ANSI styles, empty when colour is off.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Colours when `on`.
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
fn examined_line(examined: &[Examined]) -> Option<String> {
    let show = |e: &Examined| match e.note.as_deref() {
        // The library's notes name options, not flags: here they are flags.
        Some(CONTAINER_ONLY) => format!("{} (--container-only)", e.layer),
        Some(DATA_NOT_ASKED) => format!("{} (use --check-data)", e.layer),
        Some(n) => format!("{} ({n})", e.layer),
        None => e.layer.to_string(),
    };
    let done: Vec<String> = examined.iter().filter(|e| e.checked).map(show).collect();
    let not: Vec<String> = examined.iter().filter(|e| !e.checked).map(show).collect();
    match (done.is_empty(), not.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("examined: {}", done.join(", "))),
        (true, false) => Some(format!("not examined: {}", not.join(", "))),
        (false, false) => Some(format!("examined: {}; not examined: {}", done.join(", "), not.join(", "))),
    }
}

/// `NAME: [KIND]valid (profile strict): 0 errors, 1 warning`.
fn verdict_line(name: &str, kind: &str, valid: bool, profile: Profile, c: Counts, style: Style) -> String {
    let verdict = if valid { style.paint("1;32", "valid") } else { style.paint("1;31", "INVALID") };
    format!(
        "{name}: {kind}{verdict} (profile {profile}): {}, {}",
        plural(c.errors, "error"),
        plural(c.warnings, "warning")
    )
}

fn human_report(out: &mut dyn Write, path: &str, r: &Report, style: Style) -> io::Result<()> {
    writeln!(out, "{}", verdict_line(path, "", r.valid, r.profile, r.counts, style))?;
    writeln!(out, "  {}", summary_line(r))?;
    if let Some(line) = remote_line(r) {
        writeln!(out, "  {line}")?;
    }
    if let Some(line) = examined_line(&r.summary.examined) {
        writeln!(out, "  {line}")?;
    }
    if let Some(line) = llama_cpp_line(r) {
        writeln!(out, "  {line}")?;
    }
    human_diagnostics(out, &r.diagnostics, &r.suppressed, style)
}

/// Which llama.cpp releases load the file, in one line: `llama.cpp: from
/// b4980 on, every release loads it (architecture `gemma3` since b4980)`.
fn llama_cpp_line(r: &Report) -> Option<String> {
    let l = r.summary.llama_cpp.as_ref()?;
    const KNOWS: &str = "loads it";
    let window = match (&l.loads_from, &l.loads_until) {
        (Some(from), None) => format!("from {from} on, every release {KNOWS}"),
        (Some(from), Some(until)) => format!("from {from} to {until}, every release {KNOWS} (newer ones do not)"),
        (None, Some(until)) => format!("up to {until}, some release {KNOWS} (newer ones do not)"),
        (None, None) => format!("no known release {KNOWS}"),
    };
    let why = if l.because.is_empty() { String::new() } else { format!(" ({})", l.because.join(", ")) };
    Some(format!("llama.cpp: {window}{why}; judged against {}", l.judged_against.join(", ")))
}

/// The findings, each cause first with the findings that follow from it
/// folded into one line under it (all of them are in the JSON), then the
/// counts of findings not listed.
fn human_diagnostics(
    out: &mut dyn Write,
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
fn human_set(out: &mut dyn Write, set: &SetReport, style: Style) -> io::Result<()> {
    let name = escape_bytes(set.name.as_bytes(), true);
    writeln!(out, "{}", verdict_line(&name, "split set ", set.valid, set.profile, set.counts, style))?;
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
    if let Some(line) = examined_line(&s.examined) {
        writeln!(out, "  {line}")?;
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
fn human_data(out: &mut dyn Write, d: &DataReport) -> io::Result<()> {
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

/// `1536` -> `1.5 KiB` (bytes below 1 KiB as they are).
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    // A display value: the precision of a float is enough for one decimal.
    #[allow(clippy::cast_precision_loss)]
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS.iter().skip(1) {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if unit == "B" { format!("{n} B") } else { format!("{v:.1} {unit}") }
}
