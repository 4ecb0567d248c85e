//! The values of the command line's enumerated options (profiles, output
//! formats, colour) and the rule levels of `--allow/--warn/--deny`, shared
//! by every subcommand; a leaf module.

use clap::ValueEnum;
use gguf_validate_core::rules::{Level, Profile, RuleId};

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

/// `--allow/--warn/--deny` (their values, and the matches that say where
/// each was given) in command-line order, later flags winning; a fatal
/// rule can only be an error.
pub fn rule_levels(levels: &RuleLevelArgs, matches: &clap::ArgMatches) -> Result<Vec<(RuleId, Level)>, String> {
    let mut all = Vec::new();
    for (name, level, values) in [
        ("allow", Level::Allow, &levels.allow),
        ("warn", Level::Warning, &levels.warn),
        ("deny", Level::Error, &levels.deny),
    ] {
        let indices: Vec<usize> = matches.indices_of(name).map(|i| i.collect()).unwrap_or_default();
        for (i, id) in values.iter().enumerate() {
            let rule = RuleId::from_id(id)
                .ok_or_else(|| format!("unknown rule `{id}` in --{name} (see `gguf-validate rules`)"))?;
            if rule.rule().fatal && level != Level::Error {
                return Err(format!(
                    "rule `{id}` is a decoding error and cannot be --{name}ed: the rest of the file cannot be read"
                ));
            }
            all.push((indices.get(i).copied().unwrap_or(usize::MAX), rule, level));
        }
    }
    all.sort_by_key(|(i, _, _)| *i);
    Ok(all.into_iter().map(|(_, r, l)| (r, l)).collect())
}

/// The levels of rules a run sets (`--allow/--warn/--deny RULE`, later
/// flags winning): one set of flags for every command that judges a file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RuleLevelArgs {
    /// Do not report this rule (repeatable; later flags win).
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,
    /// Report this rule as a warning (repeatable; later flags win).
    #[arg(long, value_name = "RULE")]
    pub warn: Vec<String>,
    /// Report this rule as an error (repeatable; later flags win).
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,
}
