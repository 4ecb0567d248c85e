//! `gguf-validate hash`: digests of tensor data in llama-gguf-hash's
//! layout, and `--check MANIFEST`. The work is the library's
//! (`gguf_validate_core::pipeline::commands::hash_target`, which opens the
//! files and split sets at the front door); this module parses the
//! arguments and writes the lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use gguf_validate_core::hash::{self, Algo, Algos, HashOptions, Manifest};
use gguf_validate_core::io::{self as gio, ByteSource};
use gguf_validate_core::pipeline::Input;
use gguf_validate_core::pipeline::commands::{hash_target, hash_targets};
use gguf_validate_core::remote::UrlOpener;

use crate::render;
use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID};

const AFTER_HELP: &str = "\
Only tensor data is hashed (never the header or metadata), so editing
metadata leaves every digest unchanged. The text is llama.cpp's
llama-gguf-hash's, line for line: per tensor `ALGO  HEX  FILE:TENSOR`, then
`ALGO  HEX  FILE` for the whole model (all tensor data in order); `uuid` is
the UUIDv5 of all tensor data under llama.cpp's namespace.

A shard named NAME-0000k-of-0000n.gguf stands for its whole split set: the
shards' tensors are hashed as one model, in set order, named after the
first shard (the whole-model digests are those of the merged file).
--no-split hashes each file on its own, as llama-gguf-hash does.

Examples:
  gguf-validate hash model.gguf
  gguf-validate hash --all --uuid model.gguf > model.manifest
  gguf-validate hash --check model.manifest model.gguf

Exit status:
  0  hashed; with --check, every digest compared matches
  1  --check: a digest differs, or a tensor or digest is missing on one side
  2  usage error, or a file or manifest that cannot be read or hashed";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct HashArgs {
    /// Models to hash: files, or http(s):// and hf:// URLs (their tensor
    /// data is streamed in ranges, never stored).
    #[arg(required = true, value_name = "FILE|URL")]
    pub files: Vec<PathBuf>,
    /// Digest algorithm (repeatable, or comma-separated); xxh64 unless
    /// --all, --uuid or, with --check, what the manifest holds.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ALGO")]
    pub algo: Vec<AlgoArg>,
    /// xxh64, sha1 and sha256 (llama-gguf-hash --all).
    #[arg(long)]
    pub all: bool,
    /// Also the UUIDv5 line (same as --algo uuid).
    #[arg(long)]
    pub uuid: bool,
    /// Whole-model digests only: no per-tensor lines.
    #[arg(long)]
    pub no_layer: bool,
    /// Hash each shard of a split set as a model of its own.
    #[arg(long)]
    pub no_split: bool,
    /// Verify against a manifest (this command's output, or
    /// llama-gguf-hash's) instead of printing digests: every algorithm the
    /// manifest has, unless --algo/--all/--uuid choose.
    #[arg(long, short = 'c', value_name = "MANIFEST")]
    pub check: Option<PathBuf>,
    /// Give up on a model after this long (seconds, or 500ms, 30s, 2m, 1h;
    /// exit 2 for it, the other models go on).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_timeout)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub remote: crate::url_options::RemoteArgs,
}

/// The time limit per model, when given.
fn timeout(args: &HashArgs) -> Option<std::time::Duration> {
    args.timeout.map(std::time::Duration::from_secs_f64)
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum AlgoArg {
    /// XXH64, seed 0 (fast; not secure).
    Xxh64,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
    /// UUIDv5 of all tensor data (whole model only).
    Uuid,
}

impl From<AlgoArg> for Algo {
    fn from(a: AlgoArg) -> Algo {
        match a {
            AlgoArg::Xxh64 => Algo::Xxh64,
            AlgoArg::Sha1 => Algo::Sha1,
            AlgoArg::Sha256 => Algo::Sha256,
            AlgoArg::Uuid => Algo::Uuid,
        }
    }
}

fn chosen_algos(args: &HashArgs) -> Algos {
    let mut algos: Algos = args.algo.iter().map(|a| Algo::from(*a)).collect();
    if args.all {
        algos = Algos::ALL_HASHES.iter().fold(algos, Algos::with);
    }
    if args.uuid {
        algos = algos.with(Algo::Uuid);
    }
    algos
}

/// `gguf-validate hash ...`.
pub fn run(args: &HashArgs) -> u8 {
    if let Err(e) = args.remote.check() {
        render::error(&e);
        return EXIT_USAGE;
    }
    let files: Vec<Input> = args.files.iter().cloned().map(Input::from_path).collect();
    let connections = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let opener = match crate::url_options::opener_for(&args.remote, &files, connections) {
        Ok(o) => o,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    match &args.check {
        Some(manifest) => check(args, &files, manifest, opener.as_deref()),
        None => print(args, &files, opener.as_deref()),
    }
}

fn print(args: &HashArgs, files: &[Input], opener: Option<&dyn UrlOpener>) -> u8 {
    let chosen = chosen_algos(args);
    let algos = if chosen.is_empty() { Algos::DEFAULT } else { chosen };
    let opts = HashOptions { algos, per_tensor: !args.no_layer };
    let mut out = match render::output(Path::new("-")) {
        Ok(o) => o,
        Err(e) => return crate::report_io(Err(e)),
    };
    let mut code = EXIT_VALID;
    for model in hash_targets(files, args.no_split) {
        match hash_target(&model, &opts, opener, Some(&render::Bars), timeout(args)) {
            Ok(d) => {
                let text: String = d.lines(&model.name).iter().map(|l| format!("{l}\n")).collect();
                if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                    return crate::report_io(Err(e));
                }
            }
            Err(msg) => {
                render::error(&msg);
                code = EXIT_USAGE;
            }
        }
    }
    code
}

fn check(args: &HashArgs, files: &[Input], manifest_path: &Path, opener: Option<&dyn UrlOpener>) -> u8 {
    let shown = render::display_path(manifest_path);
    let text = match read_manifest(manifest_path) {
        Ok(t) => t,
        Err(e) => {
            render::error(&format!("{shown}: {e}"));
            return EXIT_USAGE;
        }
    };
    let manifest = match Manifest::parse(&text) {
        Ok(m) => m,
        Err(e) => {
            render::error(&format!("{shown}: {e}"));
            return EXIT_USAGE;
        }
    };
    let chosen = chosen_algos(args);
    let mut out = match render::output(Path::new("-")) {
        Ok(o) => o,
        Err(e) => return crate::report_io(Err(e)),
    };
    let mut code = EXIT_VALID;
    for model in hash_targets(files, args.no_split) {
        let Some(entries) = manifest.model_for(&model.name) else {
            render::error(&format!("{}: {shown} has no entries for this model", model.name));
            code = code.max(EXIT_INVALID);
            continue;
        };
        let algos = if chosen.is_empty() { entries.algos() } else { chosen };
        let per_tensor = !args.no_layer && algos.iter().any(|a| entries.tensors.contains_key(&a));
        let digests =
            match hash_target(&model, &HashOptions { algos, per_tensor }, opener, Some(&render::Bars), timeout(args)) {
                Ok(d) => d,
                Err(msg) => {
                    render::error(&msg);
                    code = EXIT_USAGE;
                    continue;
                }
            };
        let report = entries.check(&digests, algos);
        let text = check_text(&model.name, &report);
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            return crate::report_io(Err(e));
        }
        if !report.ok() {
            code = code.max(EXIT_INVALID);
        }
    }
    code
}

fn read_manifest(path: &Path) -> Result<String, String> {
    let src = gio::open(path, &gio::OpenPolicy::default()).map_err(|e| e.to_string())?;
    if src.len() > gguf_validate_core::limits::MAX_MANIFEST_BYTES {
        return Err(format!(
            "{} bytes is more than the {} a manifest may have",
            src.len(),
            gguf_validate_core::limits::MAX_MANIFEST_BYTES
        ));
    }
    let bytes = gio::read_range(&src, 0, src.len()).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

/// The lines of a check: one per difference, then the verdict.
fn check_text(name: &str, r: &hash::CheckReport) -> String {
    let what = |t: &Option<String>| match t {
        Some(t) => format!("tensor `{t}`"),
        None => "whole model".to_string(),
    };
    let mut s = String::new();
    for m in &r.mismatched {
        s.push_str(&format!(
            "{name}: {} MISMATCH {}: manifest {}, file {}\n",
            m.algo,
            what(&m.tensor),
            m.expected,
            m.actual
        ));
    }
    for (algo, t) in &r.missing {
        s.push_str(&format!("{name}: {algo} {} is in the manifest but not in the file\n", what(t)));
    }
    for (algo, t) in &r.extra {
        s.push_str(&format!("{name}: {algo} {} is in the file but not in the manifest\n", what(t)));
    }
    let algos: Vec<&str> = r.algos.iter().map(|a| a.name()).collect();
    let algos = algos.join(", ");
    if r.ok() {
        s.push_str(&format!("{name}: OK ({algos}: {} digests match)\n", r.matched));
    } else {
        s.push_str(&format!(
            "{name}: FAILED ({algos}: {} mismatched, {} missing from the file, {} not in the manifest, {} match)\n",
            r.mismatched.len(),
            r.missing.len(),
            r.extra.len(),
            r.matched
        ));
    }
    s
}
