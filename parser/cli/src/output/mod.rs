//! Writing a run's results: a [`Renderer`] per output format, each in its
//! own file (`human.rs`, `json.rs`, `jsonl.rs`, `sarif.rs`, `junit.rs`,
//! `github.rs`), and the [`Stream`] that feeds them each file and split
//! set as the pipeline hands it over, counts the totals, applies
//! `--quiet`, and writes the side reports (`--output-sarif`,
//! `--output-junit`).
//!
//! A new output format is one file here with a [`Renderer`], one variant of
//! [`crate::values::Format`] and one arm in [`renderer`].

mod github;
mod human;
mod json;
mod jsonl;
mod junit;
mod sarif;

use std::io::{self, Write};
use std::path::PathBuf;

use gguf_validate::pipeline::{Input, Outcome};
use gguf_validate::report::Diagnostic;
use gguf_validate::rules::Profile;
use gguf_validate::split_set::SetReport;
use serde::Serialize;

pub use human::Style;

use crate::values::Format;

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
    Checked { valid: bool, diagnostics: Vec<Diagnostic>, errors: u64, warnings: u64, waived: Vec<(Diagnostic, String)> },
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
    pub count: u64,
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
    pub sarif: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}

/// The validation output, written file by file as each one finishes: the
/// format on stdout, and the side reports collected for the end.
pub struct Stream {
    main: Box<dyn Renderer>,
    out: io::BufWriter<io::Stdout>,
    /// Side reports and the files they go to.
    sides: Vec<(Box<dyn Renderer>, PathBuf)>,
    /// `--quiet`: valid files are counted, not printed.
    quiet: bool,
    /// Counts for the closing summary.
    totals: Totals,
    /// `*.gguf` files the walk's ignore rules left out, as shown.
    skipped: Vec<String>,
}

impl Stream {
    /// Starts the output (the JSON document's head).
    pub fn begin(format: Format, profile: Profile, style: Style, side: SideOutputs, quiet: bool) -> io::Result<Stream> {
        let mut sides: Vec<(Box<dyn Renderer>, PathBuf)> = Vec::new();
        if let Some(p) = side.sarif {
            sides.push((renderer(Format::Sarif, profile, style), p));
        }
        if let Some(p) = side.junit {
            sides.push((renderer(Format::Junit, profile, style), p));
        }
        let mut s = Stream {
            main: renderer(format, profile, style),
            out: io::BufWriter::new(io::stdout()),
            sides,
            quiet,
            totals: Totals::default(),
            skipped: Vec::new(),
        };
        s.main.begin(&mut s.out)?;
        Ok(s)
    }

    /// Whether the stdout renderer writes an entry that is `valid`.
    fn shows(&self, valid: bool) -> bool {
        !(self.quiet && valid && self.main.quiet_applies())
    }

    /// Writes one file's result (`set`: the split set it is a shard of).
    pub fn file(&mut self, input: &Input, outcome: &Outcome, set: Option<&str>) -> io::Result<()> {
        let entry = FileEntry { input, outcome, set };
        for (side, _) in &mut self.sides {
            side.file(&mut io::sink(), &entry)?;
        }
        self.totals.files += 1;
        let valid = match outcome {
            Outcome::Report(r, _) if r.valid => {
                self.totals.valid += 1;
                true
            }
            Outcome::Report(..) => {
                self.totals.invalid += 1;
                false
            }
            Outcome::Unreadable(_) => {
                self.totals.unreadable += 1;
                false
            }
        };
        if self.shows(valid) {
            self.main.file(&mut self.out, &entry)?;
        }
        self.out.flush()
    }

    /// Writes a split set's result (after its shards').
    pub fn set(&mut self, set: &SetReport) -> io::Result<()> {
        for (side, _) in &mut self.sides {
            side.set(&mut io::sink(), set)?;
        }
        self.totals.split_sets += 1;
        if !set.valid {
            self.totals.split_sets_invalid += 1;
        }
        if self.shows(set.valid) {
            self.main.set(&mut self.out, set)?;
        }
        self.out.flush()
    }

    /// Records the `*.gguf` files that the walk's ignore rules left out:
    /// every format reports them (counted, and the first
    /// [`MAX_LISTED_SKIPPED`] by name).
    pub fn skipped(&mut self, paths: &[Input]) {
        self.totals.skipped_by_ignore = u64::try_from(paths.len()).unwrap_or(u64::MAX);
        self.skipped = paths.iter().take(MAX_LISTED_SKIPPED).map(Input::json_name).collect();
    }

    /// Ends the output (closing brackets, whole-run reports, side files).
    pub fn finish(mut self) -> io::Result<()> {
        let end = RunEnd {
            totals: &self.totals,
            skipped: Skipped { count: self.totals.skipped_by_ignore, listed: &self.skipped },
            quiet: self.quiet,
        };
        self.main.finish(&mut self.out, &end)?;
        for (side, path) in &mut self.sides {
            let mut text = Vec::new();
            side.finish(&mut text, &end)?;
            std::fs::write(path, text)?;
        }
        self.out.flush()
    }
}
