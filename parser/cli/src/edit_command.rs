//! `gguf-validate edit FILE -o OUT`: the arguments into the library's
//! requests (`gguf_validate_core::rewrite::Request`) and validator, the
//! edit itself (`gguf_validate_core::pipeline::commands::edit`: a temporary
//! file beside OUT, validated, renamed into place), and its report: each
//! change, the tensor-data digest before and after, the result's findings.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use gguf_validate_core::loader::Loader;
use gguf_validate_core::parse::escape_bytes;
use gguf_validate_core::pipeline::commands::{Edit, EditError, EditTarget, Edited, edit};
use gguf_validate_core::rewrite::{Request, SPECIAL_TOKEN_ROLES, is_template_name, show_value};
use gguf_validate_core::rules::Profile;
use gguf_validate_core::{Options, Validator};

use crate::render;
use crate::values::{ProfileArg, RuleLevelArgs};
use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID};

const AFTER_HELP: &str = "\
The metadata is written again and the tensor data copied byte for byte
(file to file by the kernel, copy_file_range, in bounded memory): the
report gives the tensor-data digest (`hash --algo sha256`, all tensor data,
no metadata) before and after. Tensor offsets stay; only the start of the
data section moves, padded to general.alignment. A change that would move
tensor data (general.alignment) is refused.

The result is written to a temporary file in OUT's folder and validated
under the profile; it is renamed to OUT only when it has no error, or with
--force. Otherwise nothing is left behind. OUT may not be FILE; --in-place
replaces FILE the same way (the new file is complete, validated and synced
before the rename, so FILE is intact whenever the command is stopped).

Values of --set are typed by a prefix: str: u32: i32: f32: bool: (and u8:
i8: u16: i16: u64: i64: f64:); without one, a well-known key takes the type
the spec or llama.cpp gives it (general.name: string, llama.context_length:
u32, tokenizer.ggml.add_bos_token: bool) and another key is refused.

Examples:
  gguf-validate edit model.gguf -o fixed.gguf --set general.name=MyModel
  gguf-validate edit model.gguf -o fixed.gguf --pre-tokenizer llama-bpe
  gguf-validate edit model.gguf --in-place --pre-tokenizer qwen2
  gguf-validate edit model.gguf -o fixed.gguf --chat-template template.jinja
  gguf-validate edit model.gguf -o fixed.gguf --chat-template tool_use=tools.jinja
  gguf-validate edit model.gguf -o fixed.gguf --special-token eot=128009
  gguf-validate edit model.gguf -o out.gguf --set x.flag=bool:true --remove general.url

Exit status:
  0  written, and valid under the profile
  1  the result is invalid under the profile: not written (or, with
     --force, written anyway)
  2  usage error, a change that cannot be made, or a file that cannot be
     read or written";

/// `--format` of `edit`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum EditFormat {
    /// Lines for people.
    Human,
    /// One JSON document.
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct EditArgs {
    /// The GGUF file to edit (not changed, unless --in-place).
    pub file: PathBuf,
    /// Where to write the edited file (not FILE itself: see --in-place).
    #[arg(short = 'o', long = "output", value_name = "OUT", required_unless_present = "in_place")]
    pub output: Option<PathBuf>,
    /// Replace FILE itself, only once the new file is complete, validated
    /// and on disk (an atomic rename in FILE's folder): an interruption at
    /// any moment leaves FILE as it was.
    #[arg(long = "in-place", conflicts_with = "output")]
    pub in_place: bool,
    /// Set KEY to VALUE (repeatable): `general.name=str:My model`, `x.n=u32:7`,
    /// or without a prefix the key's well-known type.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Remove KEY (repeatable; refused when the file has no such key).
    #[arg(long = "remove", value_name = "KEY")]
    pub remove: Vec<String>,
    /// Set tokenizer.chat_template to the text of FILE; NAME=FILE sets the
    /// named template tokenizer.chat_template.NAME (e.g. tool_use=tools.jinja)
    /// and lists NAME in tokenizer.chat_templates (repeatable).
    #[arg(long = "chat-template", value_name = "[NAME=]FILE")]
    pub chat_template: Vec<PathBuf>,
    /// Set tokenizer.ggml.pre to NAME, a pre-tokenizer llama.cpp knows.
    #[arg(long = "pre-tokenizer", value_name = "NAME")]
    pub pre_tokenizer: Option<String>,
    /// Set a special token's id (repeatable): ROLE=ID or ROLE=TEXT (a
    /// token of the vocabulary); roles bos, eos, eot, eom, unk, sep, pad,
    /// cls, mask, fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep.
    #[arg(long = "special-token", value_name = "ROLE=ID")]
    pub special_token: Vec<String>,
    /// Write the result even when it has errors under the profile.
    #[arg(long)]
    pub force: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EditFormat::Human)]
    pub format: EditFormat,
    /// How the result is validated.
    #[command(flatten)]
    pub judged: JudgedArgs,
}

/// How `edit` and `fix` validate (the input's findings, for `fix`, and the
/// result): the options of a validation they take.
#[derive(Debug, Args)]
pub struct JudgedArgs {
    /// The profile (default strict).
    #[arg(long, value_enum)]
    pub profile: Option<ProfileArg>,
    /// `--allow`, `--warn`, `--deny`.
    #[command(flatten)]
    pub levels: RuleLevelArgs,
    /// Treat warnings as errors.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Validate the container only (no model layer).
    #[arg(long)]
    pub container_only: bool,
    /// Judge against this loader: `llama.cpp`, `sd.cpp` or `comfyui-gguf`.
    #[arg(long, value_name = "LOADER")]
    pub loader: Option<String>,
}

impl JudgedArgs {
    /// The validator these options make.
    pub fn validator(&self, matches: &clap::ArgMatches) -> Result<Validator, String> {
        let overrides = crate::values::rule_levels(&self.levels, matches)?;
        let loader =
            self.loader.as_deref().map(str::parse::<Loader>).transpose().map_err(|e| format!("--loader: {e}"))?;
        let options = Options {
            profile: self.profile.map(Profile::from).unwrap_or_default(),
            overrides,
            deny_warnings: self.deny_warnings,
            container_only: self.container_only,
            ..Options::default()
        };
        Ok(Validator::new(options).with_loader(loader))
    }
}

/// The requests the arguments ask for, or why one is malformed.
fn requests(args: &EditArgs) -> Result<Vec<Request>, String> {
    let mut out = Vec::new();
    for s in &args.set {
        let (key, text) = s
            .split_once('=')
            .ok_or_else(|| format!("--set {s}: expected KEY=VALUE (e.g. general.name=str:My model)"))?;
        out.push(Request::Set { key: key.to_string(), text: text.to_string() });
    }
    for key in &args.remove {
        out.push(Request::Remove { key: key.clone() });
    }
    for p in &args.chat_template {
        // NAME=FILE names a template, unless the whole argument is a file.
        let named =
            p.to_str().filter(|_| !p.exists()).and_then(|s| s.split_once('=')).filter(|(n, _)| is_template_name(n));
        let file = named.map_or_else(|| p.clone(), |(_, f)| PathBuf::from(f));
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("--chat-template {}: {e}", render::display_path(&file)))?;
        out.push(match named {
            Some((name, _)) => Request::NamedChatTemplate { name: name.to_string(), text },
            None => Request::ChatTemplate(text),
        });
    }
    if let Some(name) = &args.pre_tokenizer {
        out.push(Request::PreTokenizer(name.clone()));
    }
    for s in &args.special_token {
        let (role, token) = s.split_once('=').ok_or_else(|| {
            let roles: Vec<&str> = SPECIAL_TOKEN_ROLES.iter().map(|(r, _)| *r).collect();
            format!("--special-token {s}: expected ROLE=ID or ROLE=TEXT (roles: {})", roles.join(", "))
        })?;
        out.push(Request::SpecialToken { role: role.to_string(), token: token.to_string() });
    }
    if out.is_empty() {
        return Err(
            "nothing to change: give --set, --remove, --chat-template, --pre-tokenizer or --special-token".into()
        );
    }
    Ok(out)
}

/// `gguf-validate edit ...`.
pub fn run(args: &EditArgs, matches: &clap::ArgMatches) -> u8 {
    let prepared = requests(args).and_then(|r| args.judged.validator(matches).map(|v| (r, v)));
    let (requests, validator) = match prepared {
        Ok(x) => x,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let (out, target) = match &args.output {
        Some(o) => (o.clone(), EditTarget::Other),
        None => (args.file.clone(), EditTarget::InPlace),
    };
    let edited = edit(&args.file, &out, target, Edit::Requests(&requests), &validator, args.force, Some(&render::Bars));
    let edited = match edited {
        Ok(e) => e,
        Err(e) => {
            render::error(&match &e {
                EditError::Refused(m) => format!("{m}; nothing was written"),
                EditError::Unreadable(m) | EditError::Write(m) => m.clone(),
            });
            return EXIT_USAGE;
        }
    };
    let shown = (render::display_path(&args.file), render::display_path(&out));
    let written = match args.format {
        EditFormat::Human => render::text(&human(&edited, &shown)),
        EditFormat::Json => render::json(&edited.json(&args.file, &out, args.in_place)),
    };
    if let Err(e) = written {
        return crate::report_io(Err(e));
    }
    if !edited.written {
        render::error(&format!(
            "{}: the result has errors under the {} profile; nothing was written (--force writes it anyway)",
            shown.1, edited.report.profile
        ));
    }
    if edited.report.valid { EXIT_VALID } else { EXIT_INVALID }
}

fn digest_text(d: &Result<gguf_validate_core::hash::Digest, String>) -> String {
    match d {
        Ok(d) => d.to_string(),
        Err(e) => format!("not computed: {e}"),
    }
}

/// The human report (of `fix` too).
pub(crate) fn human(e: &Edited, (from, to): &(String, String)) -> String {
    let mut out = String::new();
    let verb = match (&e.before, e.written, e.dry_run) {
        (_, _, true) => "dry run, nothing written",
        (Some(_), false, _) if e.unchanged => "nothing to fix, left as it is",
        (Some(_), true, _) if e.unchanged => "nothing to fix, copied",
        (Some(_), true, _) => "fixed",
        (None, true, _) => "edited",
        (_, false, _) => "not written",
    };
    out.push_str(&format!("{verb}: {from} -> {to}\n"));
    for f in &e.fixes {
        let how = if f.applied { f.kind.to_string() } else { format!("{}, held back: --unsafe makes it", f.kind) };
        out.push_str(&format!("  fix {} ({how}) {}: {} -> {}\n", f.rule, f.path, f.before, f.after));
    }
    if e.before.is_some() && e.fixes.is_empty() {
        out.push_str("  no finding has a fix\n");
    }
    for c in &e.changes {
        let before = c.before.as_ref().map_or_else(|| "(absent)".to_string(), show_value);
        let after = c.after.as_ref().map_or_else(|| "(removed)".to_string(), show_value);
        out.push_str(&format!("  {}: {before} -> {after}\n", escape_bytes(c.key.as_bytes(), true)));
    }
    let same = matches!((&e.digest_before, &e.digest_after), (Ok(a), Ok(b)) if a == b);
    out.push_str(&format!("tensor data sha256 before: {}\n", digest_text(&e.digest_before)));
    out.push_str(&format!(
        "tensor data sha256 after:  {}{}\n",
        digest_text(&e.digest_after),
        if same { " (unchanged)" } else { "" }
    ));
    let (b, a) = e.data_start;
    out.push_str(&format!(
        "data section: at {b} before, {a} after; {} bytes in all{}\n",
        e.bytes,
        if e.kernel_copy { " (tensor data copied by the kernel)" } else { "" }
    ));
    let r = &e.report;
    let verdict = if r.valid { "valid" } else { "invalid" };
    out.push_str(&format!(
        "{}: {verdict} under {} ({} errors, {} warnings)\n",
        if e.dry_run || (e.unchanged && !e.written) { "the file as it is" } else { "result" },
        r.profile,
        r.counts.errors,
        r.counts.warnings
    ));
    for d in &r.diagnostics {
        out.push_str(&format!("  {} {} at {} {}: {}\n", d.severity, d.rule, d.offset, d.path, d.message));
    }
    out
}
