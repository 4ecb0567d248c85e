//! The values of the command line's enumerated options (profiles, output
//! formats, colour), shared by every subcommand; a leaf module.

use clap::ValueEnum;
use gguf_validate_core::rules::Profile;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ProfileArg {
    /// Valid by the spec AND loadable by ggml (default).
    Strict,
    /// Exactly the spec's requirements.
    Spec,
    /// ggml's reader's verdict (with documented safety divergences).
    Ggml,
}

/// `--format`: one of the library's output formats, named and described
/// by it (`gguf_validate_core::output::Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatArg(pub gguf_validate_core::output::Format);

impl ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<FormatArg>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| gguf_validate_core::output::Format::ALL.into_iter().map(FormatArg).collect())
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.about()))
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
