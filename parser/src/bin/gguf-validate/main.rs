//! `gguf-validate`: validate GGUF files, print the rule catalogue, dump a
//! file or one tensor, and convert raw buffers with the numerics.

mod cli;
mod convert;
mod render;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use gguf_validate::check_data::{DataOptions, DataReport};
use gguf_validate::rules::{Level, Profile, RuleId};
use gguf_validate::{Options, io as gio, parse};

use cli::{Cli, ColorArg, Command, Format, ProfileArg, ValidateArgs};
use render::FileOutcome;

const EXIT_VALID: u8 = 0;
const EXIT_INVALID: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let code = match cli.command {
        Some(Command::Rules { format }) => report_io(render::rules(format)),
        Some(Command::Dump { file, no_mmap, tensor: Some(name), dequant, output: Some(out), .. }) => {
            convert::dump_tensor(&file, no_mmap, &name, dequant, &out)
        }
        Some(Command::Dump { file, full, no_mmap, .. }) => dump(&file, full, no_mmap),
        Some(Command::Dequant { ty, input, output }) => convert::dequant(&ty, &input, &output),
        Some(Command::Quantize { ty, input, output }) => convert::quantize(&ty, &input, &output),
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
    let opts = Options { profile, overrides, deny_warnings: args.deny_warnings };
    let mut code = EXIT_VALID;
    let mut outcomes = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let shown = path.display().to_string();
        let bytes = if args.no_mmap { gio::read(path) } else { gio::open(path) };
        let outcome = match bytes {
            Ok(bytes) => {
                let mut report = gguf_validate::validate_bytes(&bytes, &opts);
                let data = args.check_data.then(|| {
                    let data = check_data(&bytes, &report, args.max_data_findings, &shown);
                    data.merge_into(&mut report, &opts);
                    Box::new(data)
                });
                if !report.valid {
                    code = code.max(EXIT_INVALID);
                }
                FileOutcome::Report(Box::new(report), data)
            }
            Err(e) => {
                code = EXIT_USAGE;
                FileOutcome::Unreadable(e.to_string())
            }
        };
        outcomes.push((shown, outcome));
    }
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let written = render::validation(&outcomes, args.format == Format::Json, profile, render::Style::new(color));
    match report_io(written) {
        EXIT_VALID => code,
        other => other,
    }
}

/// `--check-data`: the data scan of one file, GGUF or legacy.
fn check_data(bytes: &[u8], report: &gguf_validate::Report, max_listed: usize, label: &str) -> DataReport {
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let gguf = if report.format == "gguf" { parse::parse_bytes(bytes) } else { None };
    let tensors = match &gguf {
        Some(parsed) => gguf_validate::data::gguf_tensors(parsed, len),
        None => gguf_validate::legacy::data_tensors(bytes),
    };
    let total: u64 = tensors.iter().map(|t| t.nbytes).sum();
    let progress = render::Progress::new(total, label);
    let opts = DataOptions { max_listed_per_tensor: max_listed, ..DataOptions::default() };
    let mut data = gguf_validate::check_data::check_data(bytes, &tensors, &opts, &|n| progress.inc(n));
    progress.finish();
    if let Some(parsed) = &gguf {
        data.set_gguf_indices(parsed);
    }
    data
}

fn dump(path: &std::path::Path, full: bool, no_mmap: bool) -> u8 {
    let bytes = match if no_mmap { gio::read(path) } else { gio::open(path) } {
        Ok(b) => b,
        Err(e) => {
            render::error(&format!("{}: {e}", path.display()));
            return EXIT_USAGE;
        }
    };
    let Some(parsed) = parse::parse_bytes(&bytes) else {
        // rwkv.cpp, GGML, GGMF and GGJT files have their own description.
        if let Some(mut value) = gguf_validate::legacy::dump(&bytes) {
            if let Some(o) = value.as_object_mut() {
                o.insert("path".into(), serde_json::json!(path.display().to_string()));
                o.insert("file_size".into(), serde_json::json!(bytes.len()));
            }
            let complete = value.get("complete").and_then(serde_json::Value::as_bool) != Some(false);
            return match report_io(render::json(&value)) {
                EXIT_VALID if !complete => EXIT_INVALID,
                other => other,
            };
        }
        render::error(&format!("{}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)", path.display()));
        return EXIT_INVALID;
    };
    let mut value = gguf_validate::dump::dump(&parsed, full);
    if let Some(o) = value.as_object_mut() {
        o.insert("path".into(), serde_json::json!(path.display().to_string()));
        o.insert("file_size".into(), serde_json::json!(bytes.len()));
    }
    match report_io(render::json(&value)) {
        EXIT_VALID if parsed.fatal.is_some() => EXIT_INVALID,
        other => other,
    }
}
