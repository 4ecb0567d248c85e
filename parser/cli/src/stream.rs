//! The validation output on stdout, written file by file as each one
//! finishes through the library's renderer of the format, with the side
//! reports (`--output-sarif`, `--output-junit`) written at the end; counts
//! the totals and applies `--quiet`.

use std::io::{self, Write};
use std::path::PathBuf;

use gguf_validate_core::Report;
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
/// format on stdout (or into a buffer: `--every-profile` writes one output
/// per profile), and the side reports collected for the end.
pub struct Stream<W: Write = io::Stdout> {
    main: Box<dyn Renderer>,
    format: Format,
    out: io::BufWriter<W>,
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
    /// Starts the output on stdout (the JSON document's head).
    pub fn begin(format: Format, profile: Profile, style: Style, side: SideOutputs, quiet: bool) -> io::Result<Stream> {
        Stream::begin_to(io::stdout(), format, profile, style, side, quiet)
    }
}

impl<W: Write> Stream<W> {
    /// Starts the output on `to`.
    pub fn begin_to(
        to: W,
        format: Format,
        profile: Profile,
        style: Style,
        side: SideOutputs,
        quiet: bool,
    ) -> io::Result<Stream<W>> {
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
            out: io::BufWriter::new(to),
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

    /// Ends the output (closing brackets, whole-run reports, side files);
    /// gives back what it was written to.
    pub fn finish(mut self) -> io::Result<W> {
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
        self.out.into_inner().map_err(io::IntoInnerError::into_error)
    }
}

/// The outputs of a run: one, or with `--every-profile` one per profile
/// (each written to a buffer, printed in turn at the end under a line
/// that names the profile and what its own run exits with).
pub enum Outputs {
    /// The profile's output, on stdout.
    One(Stream),
    /// Each profile's output and exit code so far.
    Each(Vec<(Profile, Stream<Vec<u8>>, u8)>),
}

impl Outputs {
    /// The outcome as `profile` judged it (the same outcome for a file
    /// that could not be read).
    fn under(outcome: &Outcome, profiles: &[Report], profile: Profile) -> Option<Outcome> {
        match outcome {
            Outcome::Report(_, data) => {
                let r = profiles.iter().find(|r| r.profile == profile)?;
                Some(Outcome::Report(Box::new(r.clone()), data.clone()))
            }
            Outcome::Unreadable(why) => Some(Outcome::Unreadable(why.clone())),
        }
    }

    /// Applies `f` to each output with its exit code so far.
    fn each(&mut self, mut f: impl FnMut(Option<Profile>, &mut dyn Sink, &mut u8) -> io::Result<()>) -> io::Result<()> {
        match self {
            Outputs::One(s) => f(None, s, &mut 0),
            Outputs::Each(all) => all.iter_mut().try_for_each(|(p, s, code)| f(Some(*p), s, code)),
        }
    }

    /// See [`Stream::skipped`].
    pub fn skipped(&mut self, paths: &[Input]) {
        let _ = self.each(|_, s, _| {
            s.skipped(paths);
            Ok(())
        });
    }

    /// Writes one file's result (`profiles`: its report under each profile,
    /// with `--every-profile`); `code` is what it asks the run to exit with
    /// (the worst of the profiles' with `--every-profile`).
    pub fn file(
        &mut self,
        input: &Input,
        outcome: &Outcome,
        profiles: &[Report],
        set: Option<&str>,
        code: impl Fn(&Outcome) -> u8,
    ) -> io::Result<u8> {
        let mut worst = 0;
        self.each(|p, s, own| {
            let under = match p {
                None => None,
                Some(p) => Some(
                    Outputs::under(outcome, profiles, p)
                        .ok_or_else(|| io::Error::other("no report under a profile"))?,
                ),
            };
            let shown = under.as_ref().unwrap_or(outcome);
            let c = code(shown);
            (*own, worst) = ((*own).max(c), worst.max(c));
            s.file(input, shown, set)
        })?;
        Ok(worst)
    }

    /// Writes a split set's result; gives what it asks the run to exit with.
    pub fn set(&mut self, set: &SetReport, code: impl Fn(&SetReport) -> u8) -> io::Result<u8> {
        let mut worst = 0;
        self.each(|p, s, own| {
            let shown = match p {
                None => set,
                Some(p) => set
                    .profiles
                    .iter()
                    .find(|r| r.profile == p)
                    .ok_or_else(|| io::Error::other("no set report under a profile"))?,
            };
            let c = code(shown);
            (*own, worst) = ((*own).max(c), worst.max(c));
            s.set(shown)
        })?;
        Ok(worst)
    }

    /// Ends the outputs: with `--every-profile`, each profile's in turn
    /// under its line, every one ending as its run would; `floor` is the
    /// exit code every profile's run shares (unreadable arguments).
    pub fn finish(self, floor: u8) -> io::Result<()> {
        match self {
            Outputs::One(s) => s.finish().map(|_| ()),
            Outputs::Each(all) => {
                let mut out = io::stdout().lock();
                for (p, s, code) in all {
                    let text = s.finish()?;
                    writeln!(out, "== profile {p} (exit {}) ==", code.max(floor))?;
                    out.write_all(&text)?;
                }
                out.flush()
            }
        }
    }
}

/// What [`Outputs`] writes through: a [`Stream`] to any writer.
trait Sink {
    fn skipped(&mut self, paths: &[Input]);
    fn file(&mut self, input: &Input, outcome: &Outcome, set: Option<&str>) -> io::Result<()>;
    fn set(&mut self, set: &SetReport) -> io::Result<()>;
}

impl<W: Write> Sink for Stream<W> {
    fn skipped(&mut self, paths: &[Input]) {
        Stream::skipped(self, paths);
    }
    fn file(&mut self, input: &Input, outcome: &Outcome, set: Option<&str>) -> io::Result<()> {
        Stream::file(self, input, outcome, set)
    }
    fn set(&mut self, set: &SetReport) -> io::Result<()> {
        Stream::set(self, set)
    }
}
