//! `--format jsonl`: one JSON object per file (and per split set) per
//! line, as each finishes; the same entries as `json`.

use std::io::{self, Write};

use crate::pipeline::json as entries;
use crate::rules::Profile;
use crate::split_set::SetReport;

use super::{FileEntry, Renderer, RunEnd};

/// The JSON lines renderer.
pub struct Jsonl {
    profile: Profile,
}

impl Jsonl {
    pub fn new(profile: Profile) -> Jsonl {
        Jsonl { profile }
    }
}

/// One value on one line.
fn line(out: &mut dyn Write, value: &serde_json::Value) -> io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)
}

impl Renderer for Jsonl {
    fn file(&mut self, out: &mut dyn Write, file: &FileEntry<'_>) -> io::Result<()> {
        line(out, &entries::file(&file.input.json_name(), file.outcome, self.profile, file.set))
    }

    fn set(&mut self, out: &mut dyn Write, set: &SetReport) -> io::Result<()> {
        line(out, &entries::set(set))
    }

    /// No closing line (each line stands alone): a front end tells of
    /// skipped files elsewhere (the command line: a warning on stderr).
    fn finish(&mut self, _out: &mut dyn Write, _end: &RunEnd<'_>) -> io::Result<()> {
        Ok(())
    }
}
