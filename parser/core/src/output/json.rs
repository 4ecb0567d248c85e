//! `--format json`: one document for machines, written as files finish
//! (its head first, one entry per file and split set, then the closing
//! brackets with the totals), so memory does not grow with the number of
//! files. The entries are the library's ([`crate::pipeline::json`]).

use std::io::{self, Write};

use crate::pipeline::json::{self as entries, JSON_SCHEMA_VERSION};
use crate::rules::Profile;
use crate::split_set::SetReport;

use super::{FileEntry, Renderer, RunEnd};

/// The JSON document renderer.
pub struct Json {
    profile: Profile,
    /// Entries written so far.
    entries: u64,
}

impl Json {
    pub fn new(profile: Profile) -> Json {
        Json { profile, entries: 0 }
    }

    /// One entry of the `files` array, pretty-printed at its depth.
    fn entry(&mut self, out: &mut dyn Write, value: &serde_json::Value) -> io::Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        let sep = if self.entries == 0 { "\n" } else { ",\n" };
        out.write_all(sep.as_bytes())?;
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                out.write_all(b"\n")?;
            }
            out.write_all(b"    ")?;
            out.write_all(line.as_bytes())?;
        }
        self.entries += 1;
        Ok(())
    }
}

impl Renderer for Json {
    fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{{")?;
        writeln!(out, "  \"schema_version\": {JSON_SCHEMA_VERSION},")?;
        writeln!(out, "  \"tool\": \"gguf-validate\",")?;
        writeln!(out, "  \"tool_version\": \"{}\",", env!("CARGO_PKG_VERSION"))?;
        write!(out, "  \"files\": [")
    }

    fn file(&mut self, out: &mut dyn Write, file: &FileEntry<'_>) -> io::Result<()> {
        self.entry(out, &entries::file(&file.input.json_name(), file.outcome, self.profile, file.set))
    }

    fn set(&mut self, out: &mut dyn Write, set: &SetReport) -> io::Result<()> {
        self.entry(out, &entries::set(set))
    }

    fn finish(&mut self, out: &mut dyn Write, end: &RunEnd<'_>) -> io::Result<()> {
        let close = if self.entries == 0 { "]" } else { "\n  ]" };
        out.write_all(close.as_bytes())?;
        if !end.skipped.listed.is_empty() {
            let listed = serde_json::to_string(end.skipped.listed).map_err(io::Error::other)?;
            write!(out, ",\n  \"skipped_by_ignore\": {listed}")?;
        }
        let totals = serde_json::to_string(end.totals).map_err(io::Error::other)?;
        write!(out, ",\n  \"totals\": {totals}\n}}\n")
    }
}
