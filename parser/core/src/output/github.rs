//! `--format github`: GitHub Actions workflow commands, one annotation
//! per finding as each file finishes.

use std::io::{self, Write};

use crate::rules::Level;
use crate::split_set::SetReport;

use super::{Entry, EntryOutcome, FileEntry, Renderer, RunEnd, Skipped};

/// The GitHub annotations renderer.
pub struct Github;

impl Renderer for Github {
    fn file(&mut self, out: &mut dyn Write, file: &FileEntry<'_>) -> io::Result<()> {
        out.write_all(github(&Entry::of_file(file)).as_bytes())
    }

    fn set(&mut self, out: &mut dyn Write, set: &SetReport) -> io::Result<()> {
        out.write_all(github(&Entry::of_set(set)).as_bytes())
    }

    fn finish(&mut self, out: &mut dyn Write, end: &RunEnd<'_>) -> io::Result<()> {
        if end.skipped.count > 0 {
            out.write_all(github_skipped(&end.skipped).as_bytes())?;
        }
        Ok(())
    }
}

/// A workflow notice naming the skipped files.
fn github_skipped(skipped: &Skipped<'_>) -> String {
    format!("::notice title=gguf-validate::{}\n", gh_escape(&skipped.sentence(), false))
}

/// `%`, CR and LF escaped as GitHub's workflow commands require (and `:`
/// and `,` in properties).
fn gh_escape(s: &str, property: bool) -> String {
    let mut out = s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    if property {
        out = out.replace(':', "%3A").replace(',', "%2C");
    }
    out
}

/// GitHub Actions workflow commands: one `::error` / `::warning` /
/// `::notice` line per finding, one `::error` per unreadable file.
fn github(entry: &Entry) -> String {
    let mut out = String::new();
    let path = entry.path.as_str();
    match &entry.outcome {
        EntryOutcome::Checked { diagnostics, .. } => {
            for d in diagnostics {
                let cmd = match d.severity {
                    Level::Error => "error",
                    Level::Warning => "warning",
                    _ => "notice",
                };
                let title = format!("{} at 0x{:x}", d.rule, d.offset);
                let msg = if d.path.is_empty() { d.message.clone() } else { format!("{}: {}", d.path, d.message) };
                out.push_str(&format!(
                    "::{cmd} file={},title={}::{}\n",
                    gh_escape(path, true),
                    gh_escape(&title, true),
                    gh_escape(&msg, false)
                ));
            }
        }
        EntryOutcome::Unreadable(e) => {
            out.push_str(&format!(
                "::error file={},title=unreadable::{}\n",
                gh_escape(path, true),
                gh_escape(e, false)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_escapes_newlines_and_separators() {
        assert_eq!(gh_escape("a%b\nc", false), "a%25b%0Ac");
        assert_eq!(gh_escape("x:y,z", true), "x%3Ay%2Cz");
    }
}
