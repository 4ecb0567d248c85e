//! `gguf-validate`: validate GGUF files, print the rule catalogue, dump a
//! file or one tensor, and convert raw buffers with the numerics.

mod cli;
mod convert;
mod hash;
mod render;
mod run;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use gguf_validate::io::{self as gio, ByteSource};
use gguf_validate::rules::{Level, Profile, RuleId};
use gguf_validate::{Options, parse};

use cli::{Cli, ColorArg, Command, ProfileArg, ValidateArgs};

const EXIT_VALID: u8 = 0;
const EXIT_INVALID: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Err(msg) = cli::check_ambiguous_args(&args) {
        render::error(&msg);
        return ExitCode::from(EXIT_USAGE);
    }
    let matches = Cli::command().get_matches_from(args);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let code = match cli.command {
        Some(Command::Rules { format }) => report_io(render::rules(format)),
        Some(Command::Dump { file, tensor: Some(name), dequant, output: Some(out), .. }) => {
            convert::dump_tensor(&file, &name, dequant, &out)
        }
        Some(Command::Dump { file, full, .. }) => dump(&file, full),
        Some(Command::Dequant { ty, input, output }) => convert::dequant(&ty, &input, &output),
        Some(Command::Quantize { ty, input, output }) => convert::quantize(&ty, &input, &output),
        Some(Command::Hash(args)) => hash::run(&args),
        None => validate(&cli.validate, &matches),
    };
    ExitCode::from(code)
}

fn report_io(r: std::io::Result<()>) -> u8 {
    match r {
        Ok(()) => EXIT_VALID,
        // A closed pipe (`| head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_VALID,
        Err(e) => {
            render::error(&format!("writing output: {e}"));
            EXIT_USAGE
        }
    }
}

/// Collects `--allow/--warn/--deny` in command-line order.
fn overrides(args: &ValidateArgs, matches: &clap::ArgMatches) -> Result<Vec<(RuleId, Level)>, String> {
    let mut all = Vec::new();
    for (name, level, values) in
        [("allow", Level::Allow, &args.allow), ("warn", Level::Warning, &args.warn), ("deny", Level::Error, &args.deny)]
    {
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

fn validate(args: &ValidateArgs, matches: &clap::ArgMatches) -> u8 {
    let profile = match args.profile {
        ProfileArg::Strict => Profile::Strict,
        ProfileArg::Spec => Profile::Spec,
        ProfileArg::Ggml => Profile::Ggml,
    };
    let overrides = match overrides(args, matches) {
        Ok(o) => o,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let settings = run::Settings::from_args(
        args,
        Options { profile, overrides, deny_warnings: args.deny_warnings, container_only: args.container_only },
    );
    let mut out = match render::Stream::begin(args.format, profile, render::Style::new(color)) {
        Ok(o) => o,
        Err(e) => return report_io(Err(e)),
    };
    let mut code = EXIT_VALID;
    for path in &args.files {
        // One file at a time, each in its own worker under the time limit;
        // its result is written (and flushed) before the next one starts,
        // so nothing is lost if a later file goes wrong.
        let outcome = run::validate_file(path, &settings);
        code = code.max(match &outcome {
            render::FileOutcome::Report(r, _) if r.valid => EXIT_VALID,
            render::FileOutcome::Report(..) => EXIT_INVALID,
            render::FileOutcome::Unreadable(_) => EXIT_USAGE,
        });
        if let Err(e) = out.file(path, &outcome) {
            return report_io(Err(e));
        }
    }
    match report_io(out.finish()) {
        EXIT_VALID => code,
        other => other,
    }
}

fn dump(path: &std::path::Path, full: bool) -> u8 {
    let shown = render::display_path(path);
    let src = match gio::open(path, &gio::OpenPolicy::default()) {
        Ok(s) => s,
        Err(e) => {
            render::error(&format!("{shown}: {e}"));
            return EXIT_USAGE;
        }
    };
    let file_len = src.len();
    let metadata = match gguf_validate::validate_source(&src, &Options::default()) {
        Ok(v) => v.metadata,
        Err(e) => {
            render::error(&format!("{shown}: {e}"));
            return EXIT_USAGE;
        }
    };
    let Some(parsed) = parse::parse_prefix(&metadata, file_len) else {
        // rwkv.cpp, GGML, GGMF and GGJT files have their own description
        // (their metadata is the whole file, which validation read).
        if let Some(mut value) = gguf_validate::legacy::dump(&metadata) {
            if let Some(o) = value.as_object_mut() {
                o.insert("path".into(), serde_json::json!(render::json_path(path)));
                o.insert("file_size".into(), serde_json::json!(file_len));
            }
            let complete = value.get("complete").and_then(serde_json::Value::as_bool) != Some(false);
            return match report_io(render::json(&value)) {
                EXIT_VALID if !complete => EXIT_INVALID,
                other => other,
            };
        }
        render::error(&format!("{shown}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)"));
        return EXIT_INVALID;
    };
    let mut value = gguf_validate::dump::dump(&parsed, full);
    if let Some(o) = value.as_object_mut() {
        o.insert("path".into(), serde_json::json!(render::json_path(path)));
        o.insert("file_size".into(), serde_json::json!(file_len));
    }
    match report_io(render::json(&value)) {
        EXIT_VALID if parsed.fatal.is_some() => EXIT_INVALID,
        other => other,
    }
}
