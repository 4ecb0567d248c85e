//! `gguf-validate`: validate GGUF files, print the rule catalogue, dump a
//! file or one tensor, and convert raw buffers with the numerics.

mod cli;
mod convert;
mod formats;
mod fuzz;
mod hash;
mod inputs;
mod remote;
mod render;
mod run;
mod units;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use gguf_validate::config::{self, Baseline, Config};
use gguf_validate::io::{self as gio, ByteSource};
use gguf_validate::limits::MetadataLimits;
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
        Some(Command::Quantize { ty, input, output, row_length, imatrix, imatrix_tensor, reference }) => {
            let opts = convert::QuantizeOpts { row_length, imatrix, imatrix_tensor, reference };
            convert::quantize(&ty, &input, &output, &opts)
        }
        Some(Command::Hash(args)) => hash::run(&args),
        Some(Command::FuzzWriter(args)) => fuzz::fuzz_writer(&args),
        Some(Command::FuzzQuantizer(args)) => fuzz::fuzz_quantizer(&args),
        Some(Command::WriteModel { model, out }) => fuzz::write_model(&model, &out),
        Some(Command::Derive { base, quant, json, imatrix }) => derive(&base, &quant, json, imatrix.as_deref()),
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
    if let Err(e) = args.remote.check() {
        render::error(&e);
        return EXIT_USAGE;
    }
    // The config: --config (trusted), else the nearest gguf-validate.toml.
    let config = if args.no_config {
        None
    } else if let Some(p) = &args.config {
        match Config::load(&absolute(p), config::Origin::Explicit) {
            Ok(c) => Some(c),
            Err(e) => {
                render::error(&e);
                return EXIT_USAGE;
            }
        }
    } else {
        let cwd = std::env::current_dir().unwrap_or_default();
        match Config::discover(&cwd).map(|p| Config::load(&p, config::Origin::Discovered)) {
            None => None,
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                render::error(&e);
                return EXIT_USAGE;
            }
        }
    };
    if let Some(c) = &config {
        for m in &c.ignored {
            render::warning(m);
        }
    }
    let profile = match args.profile {
        Some(ProfileArg::Strict) => Profile::Strict,
        Some(ProfileArg::Spec) => Profile::Spec,
        Some(ProfileArg::Ggml) => Profile::Ggml,
        None => config.as_ref().and_then(|c| c.profile).unwrap_or_default(),
    };
    let baseline = match &args.baseline {
        None => None,
        Some(p) => match std::fs::read_to_string(p) {
            Ok(text) => Some(Baseline::parse(&text)),
            Err(e) => {
                render::error(&format!("--baseline {}: {e}", p.display()));
                return EXIT_USAGE;
            }
        },
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
    let deny_warnings = args.deny_warnings || config.as_ref().and_then(|c| c.deny_warnings).unwrap_or(false);
    let container_only = args.container_only || config.as_ref().and_then(|c| c.container_only).unwrap_or(false);
    let inputs::Expanded { files, errors: input_errors, skipped_by_ignore } = match inputs::expand(
        &args.files,
        args.files_from.as_deref(),
        inputs::WalkOptions { no_ignore: args.no_ignore },
    ) {
        Ok(x) => x,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let jobs = args
        .jobs
        .map_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get), usize::from);
    let mut settings = run::Settings::from_args(
        args,
        Options {
            profile,
            overrides: overrides.clone(),
            deny_warnings,
            container_only,
            limits: args.max_metadata.map_or_else(MetadataLimits::default, MetadataLimits::with_total),
        },
    );
    settings.metadata_hash = config.as_ref().is_some_and(Config::has_pins);
    // URLs: one HTTP client for the run, one connection per job and host.
    if files.iter().any(|f| remote::url_of(f).is_some()) {
        match remote::Remote::new(&args.remote, jobs) {
            Ok(r) => settings.remote = Some(r),
            Err(e) => {
                render::error(&e);
                return EXIT_USAGE;
            }
        }
    }
    // Per file: the config's levels for its path, then the command line's.
    let settings_for = |path: &std::path::Path| -> run::Settings {
        let mut s = settings.clone();
        if let Some(c) = &config {
            let mut levels = c.levels_for(&remote::config_path(path));
            levels.extend(overrides.iter().copied());
            s.options.overrides = levels;
        }
        s
    };
    // After validation: the config's suppressions, then the baseline.
    let mut baseline_out: Vec<String> = Vec::new();
    let today = config::today();
    let mut finish_file = |path: &std::path::Path, v: &mut run::Validation, opts: &Options| {
        if let render::FileOutcome::Report(report, _) = &mut v.outcome {
            if let Some(c) = &config {
                c.apply(&remote::config_path(path), report, opts, v.metadata_sha256.as_deref(), today);
            }
            let shown = render::json_path(path);
            if let Some(b) = &baseline {
                b.apply(&shown, report, opts);
            }
            if args.write_baseline.is_some() {
                baseline_out.extend(Baseline::of_report(&shown, report));
            }
        }
    };
    let side = render::SideOutputs { sarif: args.output_sarif.clone(), junit: args.output_junit.clone() };
    let mut out = match render::Stream::begin(args.format, profile, render::Style::new(color), side, args.quiet) {
        Ok(o) => o,
        Err(e) => return report_io(Err(e)),
    };
    out.skipped(&skipped_by_ignore);
    let mut code = EXIT_VALID;
    // A run that validates nothing is no pass: a release gate over a
    // folder whose models are all ignored, or an empty list, must fail.
    if files.is_empty() && input_errors.is_empty() && !args.allow_empty {
        let mut msg = String::from("nothing to validate: the arguments name no file");
        if !skipped_by_ignore.is_empty() {
            let n = skipped_by_ignore.len();
            msg.push_str(&format!(
                " ({n} .gguf {} under the given directories {} skipped by ignore rules: .gitignore, .ignore or a hidden name; pass --no-ignore to validate {}, or name the files)",
                if n == 1 { "file" } else { "files" },
                if n == 1 { "is" } else { "are" },
                if n == 1 { "it" } else { "them" },
            ));
        }
        msg.push_str("; --allow-empty accepts an empty run");
        render::error(&msg);
        code = EXIT_USAGE;
    }
    for e in input_errors {
        code = EXIT_USAGE;
        if let Err(e) = out.file(&e.path, &render::FileOutcome::Unreadable(e.message), None) {
            return report_io(Err(e));
        }
    }
    // Shards already written as part of their set (by canonical path), so
    // `*.gguf` over a set's shards validates the set once.
    let mut done = std::collections::HashSet::new();
    let key = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let file_code = |outcome: &render::FileOutcome| match outcome {
        render::FileOutcome::Report(r, _) if r.valid => EXIT_VALID,
        render::FileOutcome::Report(..) => EXIT_INVALID,
        render::FileOutcome::Unreadable(_) => EXIT_USAGE,
    };
    // Worker threads only when there are several files to share among
    // them: one file is validated on this thread (no spawn, no hand-off).
    let pool =
        if jobs > 1 && files.len() > 1 { rayon::ThreadPoolBuilder::new().num_threads(jobs).build().ok() } else { None };
    // Files are validated `jobs` at a time in windows of a few per worker,
    // and written in input order as each window completes: memory holds
    // one window's reports, whatever the number of files.
    for window in files.chunks(jobs.saturating_mul(4).max(1)) {
        let validate_one = |path: &std::path::PathBuf| run::validate_file(path, &settings_for(path));
        let validations: Vec<run::Validation> = match &pool {
            Some(pool) if jobs > 1 => {
                use rayon::prelude::*;
                pool.install(|| window.par_iter().map(validate_one).collect())
            }
            _ => window.iter().map(validate_one).collect(),
        };
        for (path, mut validation) in window.iter().zip(validations) {
            if done.contains(&key(path)) {
                continue;
            }
            finish_file(path, &mut validation, &settings_for(path).options);
            // A shard of a split set brings its siblings: each shard's
            // result, then the set's.
            if settings.options.container_only || !validation.is_shard() {
                code = code.max(file_code(&validation.outcome));
                if let Err(e) = out.file(path, &validation.outcome, None) {
                    return report_io(Err(e));
                }
                continue;
            }
            let mut set = run::validate_set(path, validation, &settings);
            for (member, v) in &mut set.members {
                if member.as_path() != path.as_path() {
                    finish_file(member, v, &settings_for(member).options);
                }
            }
            for (member, v) in &set.members {
                done.insert(key(member));
                code = code.max(file_code(&v.outcome));
                if let Err(e) = out.file(member, &v.outcome, Some(&set.report.name)) {
                    return report_io(Err(e));
                }
            }
            code = code.max(if set.report.valid { EXIT_VALID } else { EXIT_INVALID });
            if let Err(e) = out.set(&set.report) {
                return report_io(Err(e));
            }
        }
    }
    if let Some(p) = &args.write_baseline {
        let mut text = String::from("# gguf-validate baseline: rule|file|field path of each accepted finding\n");
        for id in &baseline_out {
            text.push_str(id);
            text.push('\n');
        }
        if let Err(e) = std::fs::write(p, text) {
            render::error(&format!("--write-baseline {}: {e}", p.display()));
            return EXIT_USAGE;
        }
    }
    match report_io(out.finish()) {
        EXIT_VALID => code,
        other => other,
    }
}

/// `path` made absolute against the working directory (config globs are
/// absolute too, so a config found in a parent matches relative paths).
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `derive BASE QUANT`: every tensor of the quant against the base's.
fn derive(base: &std::path::Path, quant: &std::path::Path, json: bool, imatrix: Option<&std::path::Path>) -> u8 {
    let open = |path: &std::path::Path| -> Result<(gio::Source, Vec<gguf_validate::data::DataTensor>), String> {
        let shown = render::display_path(path);
        let src = gio::open(path, &gio::OpenPolicy::default()).map_err(|e| format!("{shown}: {e}"))?;
        let v = gguf_validate::validate_source(&src, &Options::default()).map_err(|e| format!("{shown}: {e}"))?;
        let tensors = gguf_validate::check_data::data_tensors(&v.metadata, src.len());
        Ok((src, tensors))
    };
    let ((bsrc, btensors), (qsrc, qtensors)) = match (open(base), open(quant)) {
        (Ok(b), Ok(q)) => (b, q),
        (Err(e), _) | (_, Err(e)) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let imatrix = match imatrix.map(convert::read_imatrix_file).transpose() {
        Ok(m) => m,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let results = gguf_validate::derive::derive(&bsrc, &btensors, &qsrc, &qtensors, imatrix.as_ref());
    let all_identical =
        !results.is_empty() && results.iter().all(|r| matches!(r.verdict, gguf_validate::derive::Verdict::Identical));
    match report_io(render::derive_report(&results, json)) {
        EXIT_VALID if all_identical => EXIT_VALID,
        EXIT_VALID => EXIT_INVALID,
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
