//! Command-line arguments. The flags, formats and exit codes are a contract
//! that scripts rely on: change them only compatibly.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub const AFTER_HELP: &str = "\
Examples:
  gguf-validate model.gguf
  gguf-validate --profile ggml --format json *.gguf
  gguf-validate --deny-warnings --allow trailing-bytes model.gguf
  gguf-validate rules
  gguf-validate dump model.gguf --full

Exit status:
  0  every file is valid under the profile
  1  at least one file is invalid
  2  usage error, or a file that cannot be read";

#[derive(Debug, Parser)]
#[command(
    name = "gguf-validate",
    version,
    about = "Strict validator for GGUF model files",
    long_about = "Validates GGUF model files against the spec and ggml's reader, reporting every violation with a rule id, a byte offset and a field path.",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub validate: ValidateArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the rule catalogue (id, level per profile, citation, description).
    Rules {
        /// Output format.
        #[arg(long, value_enum, default_value_t = RulesFormat::Text)]
        format: RulesFormat,
    },
    /// Print a canonical JSON description of a GGUF file.
    Dump {
        /// The file.
        file: PathBuf,
        /// List every array element (long arrays are summarised otherwise).
        #[arg(long)]
        full: bool,
        /// Read the file instead of memory-mapping it.
        #[arg(long)]
        no_mmap: bool,
    },
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files to validate.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Which idea of "valid" to apply.
    #[arg(long, value_enum, default_value_t = ProfileArg::Strict)]
    pub profile: ProfileArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Treat warnings as errors.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Do not report this rule (repeatable; later flags win).
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,
    /// Report this rule as a warning (repeatable; later flags win).
    #[arg(long, value_name = "RULE")]
    pub warn: Vec<String>,
    /// Report this rule as an error (repeatable; later flags win).
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Read files instead of memory-mapping them.
    #[arg(long)]
    pub no_mmap: bool,
}

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
    /// One JSON document for machines.
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum RulesFormat {
    /// Aligned text.
    Text,
    /// JSON array.
    Json,
    /// The Markdown of docs/rules.md.
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
