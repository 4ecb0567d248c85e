//! `gguf-validate fix FILE... (-o OUT | --in-place | --dry-run)`: each
//! file validated, the fixes of its findings planned
//! (`gguf_validate_core::fix`) and made by the same rewrite as `edit`
//! (a temporary file beside OUT, validated, renamed into place), and what
//! changed reported per finding.

use std::path::PathBuf;

use clap::Args;
use gguf_validate_core::pipeline::commands::{Edit, EditError, EditTarget, edit};
use gguf_validate_core::pipeline::{Input, Settings, Validation, validate_set};

use crate::edit_command::{EditFormat, JudgedArgs, human};
use crate::render;
use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID};

const AFTER_HELP: &str = "\
Each FILE is validated and the findings whose rule has a fix are fixed
(`gguf-validate rules` shows the fixes). A safe fix leaves the file meaning
the same to every reader: a well-known key written again as its type, a
duplicated key whose copies are equal removed, tensor data laid out again
at aligned offsets with zero padding and nothing after it. An unsafe fix
changes what some reader sees (a special-token id out of range removed, so
llama.cpp uses its default; invisible characters stripped from a template;
a later duplicate with another value dropped): made only with --unsafe,
listed as held back otherwise.

Tensor bytes are never changed: the report gives the tensor-data digest
(`hash --algo sha256`) before and after. The result is written to a
temporary file beside OUT, validated under the profile, and renamed into
place only when it has no error (or with --force); --in-place replaces FILE
the same way, so FILE is intact whenever the command is stopped, and is
left alone when nothing needs fixing. Findings without a fix stay and set
the exit status.

A shard stands for its split set: every shard of the set is fixed, and the
set is then judged as a whole. With several files (or a set), OUT is a
folder: each result is written there under its file's name.

Examples:
  gguf-validate fix model.gguf -o fixed.gguf
  gguf-validate fix model.gguf --dry-run
  gguf-validate fix model.gguf --in-place --unsafe
  gguf-validate fix model-0000*-of-00003.gguf -o fixed/ --format json

Exit status:
  0  every result (or, with --dry-run, every file) is valid under the profile
  1  a result has errors left (findings without a fix, or unsafe ones held
     back): not written unless --force
  2  usage error, or a file that cannot be read or written";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct FixArgs {
    /// The GGUF files to fix (not changed, unless --in-place).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write: a file for one FILE, a folder for several.
    #[arg(short = 'o', long = "output", value_name = "OUT", required_unless_present_any = ["in_place", "dry_run"])]
    pub output: Option<PathBuf>,
    /// Replace each FILE itself, only once its fixed copy is complete,
    /// validated and on disk.
    #[arg(long = "in-place", conflicts_with = "output")]
    pub in_place: bool,
    /// Make the unsafe fixes too.
    #[arg(long = "unsafe")]
    pub unsafe_fixes: bool,
    /// Say what would be fixed; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write a result even when it has errors left under the profile.
    #[arg(long)]
    pub force: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EditFormat::Human)]
    pub format: EditFormat,
    /// How the findings are found and the results validated.
    #[command(flatten)]
    pub judged: JudgedArgs,
}

/// The files to fix: each FILE, and for a shard of a split set every
/// shard of its set (a set is fixed as one), each once, in order.
fn files(args: &FixArgs) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in &args.files {
        let shards = Input::from_path(f.clone()).shards().unwrap_or_default();
        let paths: Vec<PathBuf> = shards.iter().filter_map(|s| s.path().map(PathBuf::from)).collect();
        for p in if paths.is_empty() { vec![f.clone()] } else { paths } {
            if seen.insert(Input::from_path(p.clone()).identity()) {
                out.push(p);
            }
        }
    }
    out
}

/// Where each file's result goes.
fn targets(args: &FixArgs, files: &[PathBuf]) -> Result<Vec<(PathBuf, EditTarget)>, String> {
    let several = files.len() > 1;
    files
        .iter()
        .map(|f| match &args.output {
            _ if args.in_place || (args.dry_run && args.output.is_none()) => Ok((f.clone(), EditTarget::InPlace)),
            Some(o) if several || o.is_dir() => {
                if !o.is_dir() {
                    return Err(format!(
                        "-o {}: with several files (or the shards of a split set), OUT must be a folder",
                        render::display_path(o)
                    ));
                }
                let name = f.file_name().ok_or_else(|| format!("{}: not a file name", render::display_path(f)))?;
                Ok((o.join(name), EditTarget::Other))
            }
            Some(o) => Ok((o.clone(), EditTarget::Other)),
            None => Err("give -o OUT, --in-place or --dry-run".into()),
        })
        .collect()
}

/// `gguf-validate fix ...`.
pub fn run(args: &FixArgs, matches: &clap::ArgMatches) -> u8 {
    let files = files(args);
    let prepared = args.judged.validator(matches).and_then(|v| targets(args, &files).map(|t| (v, t)));
    let (validator, targets) = match prepared {
        Ok(x) => x,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let what = Edit::Fixes { unsafe_fixes: args.unsafe_fixes, dry_run: args.dry_run };
    let mut docs = Vec::new();
    let mut text = String::new();
    let mut status = EXIT_VALID;
    let mut results: Vec<(Input, Validation)> = Vec::new();
    for (file, (out, target)) in files.iter().zip(&targets) {
        // One bad file never loses the results of the others.
        let edited = match edit(file, out, *target, what, &validator, args.force, Some(&render::Bars)) {
            Ok(e) => e,
            Err(e) => {
                render::error(&match &e {
                    EditError::Refused(m) => format!("{m}; nothing was written"),
                    EditError::Unreadable(m) | EditError::Write(m) => m.clone(),
                });
                status = EXIT_USAGE;
                continue;
            }
        };
        let shown = (render::display_path(file), render::display_path(out));
        if !edited.written && !edited.dry_run && !edited.unchanged {
            render::error(&format!(
                "{}: the result has errors under the {} profile; nothing was written (--force writes it anyway)",
                shown.1, edited.report.profile
            ));
        }
        if !edited.report.valid && status == EXIT_VALID {
            status = EXIT_INVALID;
        }
        match args.format {
            EditFormat::Human => text.push_str(&human(&edited, &shown)),
            EditFormat::Json => docs.push(edited.json(file, out, args.in_place)),
        }
        let standing = Input::from_path(if edited.written { out.clone() } else { file.clone() });
        results.push((standing, Validation::of(edited.standing)));
    }
    // A split set is judged as one once its shards are fixed, from the
    // validations of the files that stand (none is read again), as
    // validating them would judge it.
    let mut sets = Vec::new();
    let settings = Settings { validator, ..Settings::default() };
    while let Some(at) = results.iter().position(|(r, _)| r.shards().is_ok_and(|s| s.len() > 1)) {
        let (first, validation) = results.swap_remove(at);
        let mut known = |shard: &Input| {
            let id = shard.identity();
            let pos = results.iter().position(|(r, _)| r.identity() == id)?;
            Some(results.swap_remove(pos).1)
        };
        let set = validate_set(&first, validation, &settings, &mut known).report;
        if !set.valid && status == EXIT_VALID {
            status = EXIT_INVALID;
        }
        text.push_str(&format!("split set {}: {} as a whole\n", set.name, if set.valid { "valid" } else { "invalid" }));
        sets.push(gguf_validate_core::pipeline::json::set(&set));
    }
    let written = match args.format {
        EditFormat::Human => render::text(&text),
        EditFormat::Json => render::json(&serde_json::json!({
            "valid": status == EXIT_VALID,
            "files": docs,
            "sets": sets,
        })),
    };
    if let Err(e) = written {
        return crate::report_io(Err(e));
    }
    status
}
