//! The validate command (no subcommand): the arguments resolved into the
//! library's [`Pipeline`] (config, profile, levels, baseline, inputs, the
//! URL opener), the pipeline run over the inputs, each result rendered as
//! it comes, and the exit code.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use gguf_validate_core::config::{Baseline, Config};
use gguf_validate_core::data_scan::DataOptions;
use gguf_validate_core::io::OpenPolicy;
use gguf_validate_core::limits::MetadataLimits;
use gguf_validate_core::llama_cpp::Releases;
use gguf_validate_core::loader::Loader;
use gguf_validate_core::pipeline::{Input, Item, Outcome, Pipeline, Settings};
use gguf_validate_core::rules::{Level, Profile, RuleId};
use gguf_validate_core::{Options, Validator};

use crate::cli::ValidateArgs;
use crate::stream::{Outputs, SideOutputs, Stream};
use crate::values::ColorArg;
use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID, inputs, render, report_io};
use gguf_validate_core::output::Style;

/// Collects `--allow/--warn/--deny` in command-line order.
fn overrides(args: &ValidateArgs, matches: &clap::ArgMatches) -> Result<Vec<(RuleId, Level)>, String> {
    crate::values::rule_levels(&args.levels, matches)
}

/// The exit code one file's outcome asks for.
fn file_code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Report(r, _) if r.valid => EXIT_VALID,
        Outcome::Report(..) => EXIT_INVALID,
        Outcome::Unreadable(_) => EXIT_USAGE,
    }
}

/// `gguf-validate [OPTIONS] FILE...`.
pub fn run(args: &ValidateArgs, matches: &clap::ArgMatches) -> u8 {
    if let Err(e) = args.remote.check() {
        render::error(&e);
        return EXIT_USAGE;
    }
    let config = match Config::for_run(args.config.as_deref(), !args.no_config) {
        Ok(c) => c,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    if let Some(c) = &config {
        for m in &c.ignored {
            render::warning(m);
        }
    }
    let profile = match args.profile {
        Some(p) => Profile::from(p),
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
    // `--llama-cpp` over the config's `llama-cpp`.
    let llama_cpp = match args.llama_cpp.as_deref().map(str::parse::<Releases>).transpose() {
        Ok(r) => r.or_else(|| config.as_ref().and_then(|c| c.llama_cpp)),
        Err(e) => {
            render::error(&format!("--llama-cpp: {e}"));
            return EXIT_USAGE;
        }
    };
    // `--loader` over the config's `loader`.
    let loader = match args.loader.as_deref().map(str::parse::<Loader>).transpose() {
        Ok(l) => l.or_else(|| config.as_ref().and_then(|c| c.loader)),
        Err(e) => {
            render::error(&format!("--loader: {e}"));
            return EXIT_USAGE;
        }
    };
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
    let with: Vec<Input> = args.with.iter().cloned().map(Input::from_path).collect();
    // One file on this machine: nothing runs beside it (no pool of jobs, no
    // connections), so the machine's parallelism is not asked for (on Linux
    // that reads the cgroup's CPU quota, three files, at every start).
    let alone = files.len() <= 1 && !files.iter().chain(&with).any(|i| i.url().is_some());
    let jobs = match args.jobs {
        Some(n) => usize::from(n),
        None if alone => 1,
        None => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
    };
    // URLs: one HTTP client for the run, one connection per job and host.
    let opener = match crate::url_options::opener_for(&args.remote, &[files.as_slice(), with.as_slice()].concat(), jobs)
    {
        Ok(o) => o,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    if args.every_profile && args.format.0 != gguf_validate_core::output::Format::Human {
        render::error("--every-profile prints the human report of each profile: it takes no --format");
        return EXIT_USAGE;
    }
    let options = Options {
        profile,
        overrides,
        deny_warnings,
        container_only,
        limits: args.max_metadata.map_or_else(MetadataLimits::default, MetadataLimits::with_total),
    };
    // Under `--container-only` nothing after the report is needed (no
    // pairing, no split set): the report alone, read lean where it can be.
    let validator = Validator::new(options)
        .with_every_profile(args.every_profile)
        .with_llama_cpp(llama_cpp)
        .with_loader(loader)
        .report_only(container_only);
    let settings = Settings {
        validator,
        policy: OpenPolicy { special_files: args.allow_special_files, max_special_bytes: args.special_file_limit },
        check_data: args.check_data.then(|| DataOptions::listing(args.max_data_findings)),
        timeout: args.timeout.map(Duration::from_secs_f64),
        metadata_hash: config.as_ref().is_some_and(Config::has_pins),
        opener,
        progress: Some(Arc::new(render::Bars)),
        deadline: None,
        with,
        folder: None,
        companion_cache: Default::default(),
    };
    let pipeline =
        Pipeline { settings, config, baseline, collect_baseline: args.write_baseline.is_some(), ..Pipeline::default() };
    let side = SideOutputs { sarif: args.output_sarif.clone(), junit: args.output_junit.clone() };
    let begun = if args.every_profile {
        Profile::ALL
            .iter()
            .map(|p| {
                Stream::begin_to(Vec::new(), args.format.0, *p, Style::new(color), side.clone(), args.quiet)
                    .map(|s| (*p, s, EXIT_VALID))
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map(Outputs::Each)
    } else {
        Stream::begin(args.format.0, profile, Style::new(color), side, args.quiet).map(Outputs::One)
    };
    let mut out = match begun {
        Ok(o) => o,
        Err(e) => return report_io(Err(e)),
    };
    out.skipped(&skipped_by_ignore);
    let mut code = EXIT_VALID;
    // A run that validates nothing is no pass: a release gate over a
    // folder whose models are all ignored, or an empty list, must fail.
    if files.is_empty() && input_errors.is_empty() && !args.allow_empty {
        render::error(&nothing_to_validate(&args.files, args.files_from.as_deref(), skipped_by_ignore.len()));
        code = EXIT_USAGE;
    }
    for e in input_errors {
        code = EXIT_USAGE;
        if let Err(e) = out.file(&e.input, &Outcome::Unreadable(e.message), &[], None, file_code) {
            return report_io(Err(e));
        }
    }
    // What every profile's run exits with whatever it finds (an empty run,
    // an argument that names nothing readable).
    let floor = code;
    let ran = pipeline.run(&files, jobs, |item| {
        let written = match item {
            Item::File { input, outcome, profiles, set } => out.file(input, outcome, profiles, set, file_code),
            Item::Set(set) => out.set(set, |set| if set.valid { EXIT_VALID } else { EXIT_INVALID }),
        };
        match written {
            Ok(c) => {
                code = code.max(c);
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(e),
        }
    });
    let baseline_out = match ran {
        Ok(b) => b,
        Err(e) => return report_io(Err(e)),
    };
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
    match report_io(out.finish(floor)) {
        EXIT_VALID => code,
        other => other,
    }
}

/// Why an empty run fails, naming what was given, and how to accept it.
fn nothing_to_validate(given: &[std::path::PathBuf], list: Option<&std::path::Path>, skipped: usize) -> String {
    let named = |p: &std::path::Path| format!("`{}`", p.display());
    let what = match (given, list) {
        ([], Some(l)) if l == std::path::Path::new("-") => {
            "the list read from standard input names no file".to_string()
        }
        ([], Some(l)) => format!("the list {} names no file", named(l)),
        ([one], None) => format!("the directory {} holds no .gguf file", named(one)),
        (many, None) => {
            let shown: Vec<String> = many.iter().take(3).map(|p| named(p)).collect();
            let more = many.len().saturating_sub(3);
            let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
            format!("the directories {}{tail} hold no .gguf file", shown.join(", "))
        }
        (_, Some(l)) => format!("the arguments and the list {} name no file", named(l)),
    };
    let mut msg = format!("nothing to validate: {what}");
    if skipped > 0 {
        let one = skipped == 1;
        msg.push_str(&format!(
            " ({skipped} .gguf {} under the given directories {} skipped by ignore rules: .gitignore, .ignore or a hidden name; pass --no-ignore to validate {}, or name the files)",
            if one { "file" } else { "files" },
            if one { "is" } else { "are" },
            if one { "it" } else { "them" },
        ));
    }
    msg.push_str("; --allow-empty accepts an empty run");
    msg
}
