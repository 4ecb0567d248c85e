//! A run's results as text: a [`Renderer`] per output format, each in its
//! own file (`human.rs`, `json.rs`, `jsonl.rs`, `sarif.rs`, `junit.rs`,
//! `github.rs`), writing to any [`Write`]. Front ends feed them: the
//! command line's stream (stdout and the side reports, as files finish),
//! and [`render`] for a run held in memory (the browser build).
//!
//! A new output format is one file here with a [`Renderer`], one variant of
//! [`Format`] and one arm in [`renderer`].

mod github;
mod human;
mod json;
mod jsonl;
mod junit;
mod sarif;

use std::io::{self, Write};

use crate::pipeline::{Input, Outcome};
use crate::report::Diagnostic;
use crate::rules::Profile;
use crate::split_set::SetReport;
use serde::Serialize;

pub use human::{Style, human_size};

/// An output format ([`Format::about`] says what each is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// For people.
    Human,
    /// One JSON document.
    Json,
    /// JSON Lines.
    Jsonl,
    /// SARIF 2.1.0.
    Sarif,
    /// JUnit XML.
    Junit,
    /// GitHub Actions annotations.
    Github,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 6] =
        [Format::Human, Format::Json, Format::Jsonl, Format::Sarif, Format::Junit, Format::Github];

    /// What it is, in a line (`--help`).
    pub fn about(self) -> &'static str {
        match self {
            Format::Human => "Verdict, summary and diagnostics for people",
            Format::Json => "One JSON document for machines (written as files finish)",
            Format::Jsonl => "One JSON object per file per line, as each file finishes",
            Format::Sarif => "SARIF 2.1.0 (code-scanning dashboards), one run, written at the end",
            Format::Junit => "JUnit XML (CI test tabs): one test case per file, written at the end",
            Format::Github => "GitHub Actions annotations: one workflow command per finding",
        }
    }

    /// Its name on the command line (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Sarif => "sarif",
            Format::Junit => "junit",
            Format::Github => "github",
        }
    }
}

/// One file of a run, as renderers see it.
#[derive(Clone, Copy, Debug)]
pub struct FileEntry<'a> {
    /// What was validated.
    pub input: &'a Input,
    /// What came of it.
    pub outcome: &'a Outcome,
    /// The split set it is a shard of.
    pub set: Option<&'a str>,
}

/// What a renderer knows at the end of a run.
#[derive(Debug)]
pub struct RunEnd<'a> {
    /// Counts of the whole run (quiet or not).
    pub totals: &'a Totals,
    /// Files the walk's ignore rules left out.
    pub skipped: Skipped<'a>,
    /// `--quiet` was given.
    pub quiet: bool,
}

/// One output format.
pub trait Renderer {
    /// Before the first entry (a document's head).
    fn begin(&mut self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }
    /// One file's result.
    fn file(&mut self, out: &mut dyn Write, file: &FileEntry<'_>) -> io::Result<()>;
    /// A split set's result (after its shards').
    fn set(&mut self, out: &mut dyn Write, set: &SetReport) -> io::Result<()>;
    /// After the last entry (closing brackets, totals, a whole-run report).
    fn finish(&mut self, out: &mut dyn Write, end: &RunEnd<'_>) -> io::Result<()>;
    /// Whether `--quiet` leaves valid entries out (a whole-run report such
    /// as SARIF lists every file).
    fn quiet_applies(&self) -> bool {
        true
    }
}

/// A report of the whole run (SARIF, JUnit): every entry collected, the
/// report written at the end by `report`.
#[derive(Debug)]
pub struct WholeRun {
    profile: Profile,
    entries: Vec<Entry>,
    report: fn(&[Entry], Profile, &Skipped<'_>) -> String,
}

impl Renderer for WholeRun {
    fn file(&mut self, _out: &mut dyn Write, file: &FileEntry<'_>) -> io::Result<()> {
        self.entries.push(Entry::of_file(file));
        Ok(())
    }

    fn set(&mut self, _out: &mut dyn Write, set: &SetReport) -> io::Result<()> {
        self.entries.push(Entry::of_set(set));
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Write, end: &RunEnd<'_>) -> io::Result<()> {
        out.write_all((self.report)(&self.entries, self.profile, &end.skipped).as_bytes())
    }

    /// Every file is listed, valid or not.
    fn quiet_applies(&self) -> bool {
        false
    }
}

/// The renderer of `format`.
pub fn renderer(format: Format, profile: Profile, style: Style) -> Box<dyn Renderer> {
    match format {
        Format::Human => Box::new(human::Human::new(style)),
        Format::Json => Box::new(json::Json::new(profile)),
        Format::Jsonl => Box::new(jsonl::Jsonl::new(profile)),
        Format::Sarif => Box::new(WholeRun { profile, entries: Vec::new(), report: sarif::sarif }),
        Format::Junit => Box::new(WholeRun { profile, entries: Vec::new(), report: junit::junit }),
        Format::Github => Box::new(github::Github),
    }
}

/// One entry of a run as the pipeline formats see it: a file, or a split
/// set (whose findings name their shard in the field path).
#[derive(Clone, Debug)]
pub struct Entry {
    /// The path (or the set's `NAME-*-of-0000n.gguf`).
    pub path: String,
    /// What came of it.
    pub outcome: EntryOutcome,
}

/// A checked entry's verdict and findings, or why it could not be read.
#[derive(Clone, Debug)]
pub enum EntryOutcome {
    /// Validated (`waived`: findings a suppression or the baseline set
    /// aside, with the reason).
    Checked {
        /// The verdict.
        valid: bool,
        /// The findings reported.
        diagnostics: Vec<Diagnostic>,
        /// Errors among them.
        errors: u64,
        /// Warnings among them.
        warnings: u64,
        /// Findings set aside, each with why.
        waived: Vec<(Diagnostic, String)>,
    },
    /// Could not be read.
    Unreadable(String),
}

impl Entry {
    /// A file's entry.
    pub fn of_file(file: &FileEntry<'_>) -> Entry {
        let outcome = match file.outcome {
            Outcome::Report(r, _) => EntryOutcome::Checked {
                valid: r.valid,
                diagnostics: r.diagnostics.clone(),
                errors: r.counts.errors,
                warnings: r.counts.warnings,
                waived: r
                    .applied
                    .iter()
                    .flat_map(|a| a.set_aside.iter().map(move |d| (d.clone(), format!("{} ({})", a.reason, a.source))))
                    .collect(),
            },
            Outcome::Unreadable(e) => EntryOutcome::Unreadable(e.clone()),
        };
        Entry { path: file.input.json_name(), outcome }
    }

    /// A split set's entry.
    pub fn of_set(set: &SetReport) -> Entry {
        Entry {
            path: set.name.clone(),
            outcome: EntryOutcome::Checked {
                valid: set.valid,
                diagnostics: set.diagnostics.clone(),
                errors: set.counts.errors,
                warnings: set.counts.warnings,
                waived: Vec::new(),
            },
        }
    }
}

/// The `*.gguf` files the walk's ignore rules left out: how many, and the
/// first ones by name.
#[derive(Clone, Copy, Debug)]
pub struct Skipped<'a> {
    /// How many.
    pub count: u64,
    /// The first ones, as shown.
    pub listed: &'a [String],
}

impl Skipped<'_> {
    /// `2 .gguf files skipped by ignore rules (--no-ignore includes them): a.gguf, b.gguf`.
    pub fn sentence(&self) -> String {
        let more = self.count.saturating_sub(u64::try_from(self.listed.len()).unwrap_or(0));
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!(
            "{} .gguf {} skipped by ignore rules (.gitignore, .ignore, hidden names; --no-ignore includes them): {}{tail}",
            self.count,
            if self.count == 1 { "file" } else { "files" },
            self.listed.join(", ")
        )
    }
}

/// Skipped files listed by name in a report (all are counted).
pub const MAX_LISTED_SKIPPED: usize = 100;

/// How many entries of a run were valid, invalid or unreadable.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Totals {
    /// Files.
    pub files: u64,
    /// Valid files.
    pub valid: u64,
    /// Invalid files.
    pub invalid: u64,
    /// Files that could not be read.
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

impl Totals {
    /// Counts one file's outcome; whether it was valid.
    pub fn add_file(&mut self, outcome: &Outcome) -> bool {
        self.files = self.files.saturating_add(1);
        match outcome {
            Outcome::Report(r, _) if r.valid => {
                self.valid = self.valid.saturating_add(1);
                true
            }
            Outcome::Report(..) => {
                self.invalid = self.invalid.saturating_add(1);
                false
            }
            Outcome::Unreadable(_) => {
                self.unreadable = self.unreadable.saturating_add(1);
                false
            }
        }
    }

    /// Counts one split set's report.
    pub fn add_set(&mut self, set: &SetReport) {
        self.split_sets = self.split_sets.saturating_add(1);
        if !set.valid {
            self.split_sets_invalid = self.split_sets_invalid.saturating_add(1);
        }
    }
}

/// The whole output of a run held in memory, in `format`: every file in
/// order (as the command line writes them without `--quiet`).
pub fn render(format: Format, profile: Profile, files: &[(Input, Outcome)]) -> String {
    let mut r = renderer(format, profile, Style::new(false));
    let mut out: Vec<u8> = Vec::new();
    let mut totals = Totals::default();
    // Writing to memory cannot fail.
    let _ = r.begin(&mut out);
    for (input, outcome) in files {
        totals.add_file(outcome);
        let _ = r.file(&mut out, &FileEntry { input, outcome, set: None });
    }
    let end = RunEnd { totals: &totals, skipped: Skipped { count: 0, listed: &[] }, quiet: false };
    let _ = r.finish(&mut out, &end);
    String::from_utf8_lossy(&out).into_owned()
}
