//! The values of the command line's enumerated options (profiles, output
//! formats, colour), shared by every subcommand; a leaf module.

use clap::ValueEnum;
use gguf_validate::rules::Profile;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ProfileArg {
    /// Valid by the spec AND loadable by ggml (default).
    Strict,
    /// Exactly the spec's requirements.
    Spec,
    /// ggml's reader's verdict (with documented safety divergences).
    Ggml,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Verdict, summary and diagnostics for people.
    Human,
    /// One JSON document for machines (written as files finish).
    Json,
    /// One JSON object per file per line, as each file finishes.
    Jsonl,
    /// SARIF 2.1.0 (code-scanning dashboards), one run, written at the end.
    Sarif,
    /// JUnit XML (CI test tabs): one test case per file, written at the end.
    Junit,
    /// GitHub Actions annotations: one workflow command per finding.
    Github,
}

impl From<Format> for gguf_validate::output::Format {
    fn from(f: Format) -> Self {
        use gguf_validate::output::Format as Out;
        match f {
            Format::Human => Out::Human,
            Format::Json => Out::Json,
            Format::Jsonl => Out::Jsonl,
            Format::Sarif => Out::Sarif,
            Format::Junit => Out::Junit,
            Format::Github => Out::Github,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum RulesFormat {
    /// Aligned text.
    Text,
    /// JSON array.
    Json,
    /// The book's rules reference (parser/docs/rules.md): Markdown, one
    /// anchor per rule id.
    Markdown,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ColorArg {
    /// Colour when stdout is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl From<ProfileArg> for Profile {
    /// The one mapping from the command line's profile to the library's.
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::Strict => Profile::Strict,
            ProfileArg::Spec => Profile::Spec,
            ProfileArg::Ggml => Profile::Ggml,
        }
    }
}
