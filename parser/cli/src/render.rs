//! The terminal: messages on stderr, plain text and JSON documents on
//! stdout, the progress bar of long data scans; the only code that writes
//! to stdout and stderr besides the renderers of `output/` (which write to
//! the stream they are given).
#![allow(clippy::disallowed_macros)]

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use gguf_validate_core::parse::escape_bytes;
use gguf_validate_core::pipeline::{Input, ScanBar, ScanProgress};
use gguf_validate_core::rules::RULES;
use serde::Serialize;

use crate::values::RulesFormat;

/// A local path as people see it ([`Input::shown`]): control characters,
/// ESC, bidi controls and bytes that are not UTF-8 escaped.
pub fn display_path(path: &Path) -> String {
    Input::Path(path.to_path_buf()).shown()
}

/// A local path in JSON ([`Input::json_name`]).
pub fn json_path(path: &Path) -> String {
    Input::Path(path.to_path_buf()).json_name()
}

/// Progress of a long `--check-data` scan on stderr; hidden unless stderr
/// is a terminal and the scan covers at least [`PROGRESS_MIN_BYTES`].
#[derive(Debug)]
pub struct Progress(Option<indicatif::ProgressBar>);

/// The pipeline's data scans shown with [`Progress`].
#[derive(Debug)]
pub struct Bars;

impl ScanProgress for Bars {
    fn begin(&self, name: &str, total: u64) -> Box<dyn ScanBar> {
        Box::new(Progress::new(total, name))
    }
}

impl ScanBar for Progress {
    fn inc(&self, n: u64) {
        Progress::inc(self, n);
    }

    fn finish(&self) {
        Progress::finish(self);
    }
}

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

/// `gguf-validate rules`.
pub fn rules(format: RulesFormat) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match format {
        RulesFormat::Markdown => write!(out, "{}", gguf_validate_core::rules::catalogue_markdown())?,
        RulesFormat::Json => write_json(&mut out, &gguf_validate_core::rules::catalogue_rows())?,
        RulesFormat::Text => {
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
pub fn derive_report(results: &[gguf_validate_core::derive::TensorResult], json: bool) -> io::Result<()> {
    use gguf_validate_core::derive::Verdict;
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
