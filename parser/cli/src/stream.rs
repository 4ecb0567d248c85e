//! The validation output on stdout, written file by file as each one
//! finishes through the library's renderer of the format, with the side
//! reports (`--output-sarif`, `--output-junit`) written at the end; counts
//! the totals and applies `--quiet`.

use std::io::{self, Write};
use std::path::PathBuf;

use gguf_validate_core::output::{
    FileEntry, Format, MAX_LISTED_SKIPPED, Renderer, RunEnd, Skipped, Style, Totals, renderer,
};
use gguf_validate_core::pipeline::{Input, Outcome};
use gguf_validate_core::rules::Profile;
use gguf_validate_core::split_set::SetReport;

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
    format: Format,
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
            format,
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
        let valid = self.totals.add_file(outcome);
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
        self.totals.add_set(set);
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
        // JSON Lines has no closing line to say it in.
        if self.format == Format::Jsonl && end.skipped.count > 0 {
            crate::render::warning(&end.skipped.sentence());
        }
        for (side, path) in &mut self.sides {
            let mut text = Vec::new();
            side.finish(&mut text, &end)?;
            std::fs::write(path, text)?;
        }
        self.out.flush()
    }
}
