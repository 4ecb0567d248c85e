//! Command-line arguments. The flags, formats and exit codes are a contract
//! that scripts rely on: change them only compatibly.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::values::{ColorArg, FormatArg, ProfileArg, RuleLevelArgs, RulesFormat};

pub const AFTER_HELP: &str = "\
Examples:
  gguf-validate model.gguf
  gguf-validate --profile ggml --format json *.gguf
  gguf-validate --deny-warnings --allow trailing-bytes model.gguf
  gguf-validate rules
  gguf-validate dump model.gguf --full
  gguf-validate --check-data model.gguf
  gguf-validate dump model.gguf --tensor token_embd.weight --dequant --output emb.f32
  gguf-validate dequant --type q4_K --input blocks.bin --output values.f32
  gguf-validate quantize --type q4_K --input values.f32 --output blocks.bin
  gguf-validate hash --algo sha256 model.gguf > model.manifest
  gguf-validate edit model.gguf -o fixed.gguf --pre-tokenizer llama-bpe
  gguf-validate https://host/models/model.gguf
  HF_TOKEN=... gguf-validate hf://ORG/REPO/model-Q4_K_M.gguf@main
  gguf-validate --format jsonl --jobs 16 --files-from urls.txt

Exit status:
  0  every file is valid under the profile
  1  at least one file is invalid
  2  usage error, or a file that cannot be read (or timed out)

Files named like a subcommand or an option:
  A first argument that names a subcommand (rules, dump, dequant, quantize,
  hash, edit, help) while a file of that name exists, and any option that
  is also the name of an existing file, is refused (exit 2) instead of
  guessed: write `./dump`, or put file names after `--` (gguf-validate --
  *.gguf).

Resources:
  Memory follows the metadata, not the file: tensor data is never loaded,
  and --check-data reads it in 8 MiB chunks per core, scanning each byte
  range once per type however many tensors claim it. Only regular files are
  read; FIFOs, sockets and devices are refused unless --allow-special-files
  (then read into memory up to --special-file-limit, for at most 60 s
  unless --timeout). Results are written as each file finishes.

Remote files (http://, https://, hf://ORG/REPO/FILE[@REVISION]):
  The metadata is fetched with HTTP range requests from 256 KiB, doubling,
  and the size from the server; tensor data only with --check-data or hash.
  hf:// resolves against HF_ENDPOINT (default https://huggingface.co), with
  HF_TOKEN sent to that host only; --header values go to the URL's own host
  only. Proxies from HTTPS_PROXY/HTTP_PROXY/ALL_PROXY (NO_PROXY honoured);
  roots from the system (SSL_CERT_FILE/SSL_CERT_DIR) and --ca-cert. Query
  strings (signatures) and credentials are never printed.";

/// The subcommand names (and clap's `help`), which `check_ambiguous_args`
/// refuses as a first argument when a file of that name exists.
pub const SUBCOMMANDS: [&str; 12] = [
    "rules",
    "dump",
    "dequant",
    "quantize",
    "hash",
    "derive",
    "edit",
    "fix",
    "fuzz-writer",
    "fuzz-quantizer",
    "write-model",
    "help",
];

/// Refuses command lines that a shell glob could have made ambiguous: a
/// first argument naming a subcommand while a file of that name exists
/// (`gguf-validate *` in a folder holding a file `dump`), or an option
/// (before `--`) that is also the name of an existing file (a file named
/// `--help` or `--allow=...`). Guessing either way could turn an invalid
/// model into exit 0.
pub fn check_ambiguous_args(args: &[std::ffi::OsString]) -> Result<(), String> {
    let exists = |a: &std::ffi::OsString| std::fs::symlink_metadata(a).is_ok();
    if let Some(first) = args.get(1) {
        if SUBCOMMANDS.iter().any(|s| first == *s) && exists(first) {
            let name = first.to_string_lossy();
            return Err(format!(
                "`{name}` is both a subcommand and a file here; to validate the file write `./{name}` or put files after `--` (gguf-validate -- {name} ...); to run the subcommand, run it from another folder"
            ));
        }
    }
    if let Some(first) = args.get(1).and_then(|a| a.to_str())
        && looks_like_a_word(first)
        && !SUBCOMMANDS.contains(&first)
        && std::fs::symlink_metadata(first).is_err()
    {
        let near: Vec<&str> = SUBCOMMANDS.iter().copied().filter(|s| edit_distance(first, s) <= 2).collect();
        return Err(match near.first() {
            Some(s) => format!(
                "`{first}` is not a subcommand: did you mean `{s}`? (to validate a file of that name, write ./{first}); nothing was validated"
            ),
            None => format!(
                "`{first}` is neither a subcommand nor an existing file (subcommands: {}); nothing was validated",
                SUBCOMMANDS.join(", ")
            ),
        });
    }
    for a in args.iter().skip(1) {
        if a == "--" {
            break;
        }
        if a.as_encoded_bytes().starts_with(b"-") && a != "-" && exists(a) {
            let name = crate::render::display_path(std::path::Path::new(a));
            return Err(format!(
                "`{name}` is both an option and a file here; to validate the file write `./{name}` or put files after `--`"
            ));
        }
    }
    Ok(())
}

/// A lowercase word that could be a mistyped subcommand: letters and `-`,
/// no path separator, no extension, not an option.
fn looks_like_a_word(a: &str) -> bool {
    (2..=32).contains(&a.len()) && a.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') && !a.starts_with('-')
}

/// Levenshtein distance of two short ASCII words.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<u8> = b.bytes().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row.first().copied().unwrap_or(0);
        if let Some(r) = row.first_mut() {
            *r = i + 1;
        }
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let up = row.get(j + 1).copied().unwrap_or(usize::MAX);
            let left = row.get(j).copied().unwrap_or(usize::MAX);
            let best = (prev + cost).min(up.saturating_add(1)).min(left.saturating_add(1));
            prev = up;
            if let Some(r) = row.get_mut(j + 1) {
                *r = best;
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

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
    /// Print a canonical JSON description of a GGUF file (or of an rwkv.cpp,
    /// GGML, GGMF or GGJT file), or write one tensor's data.
    Dump {
        /// The file.
        file: PathBuf,
        /// List every array element (long arrays are summarised otherwise).
        #[arg(long)]
        full: bool,
        /// Accepted for compatibility: files are always read, never mapped.
        #[arg(long, hide = true)]
        no_mmap: bool,
        /// Write this tensor's data to --output (its bytes as stored, or f32 with --dequant).
        #[arg(long, value_name = "NAME", requires = "output")]
        tensor: Option<String>,
        /// With --tensor: decode the data to little-endian f32.
        #[arg(long, requires = "tensor")]
        dequant: bool,
        /// With --tensor: where to write the data (`-` for stdout).
        #[arg(long, value_name = "PATH", requires = "tensor")]
        output: Option<PathBuf>,
        /// Give up after this long (seconds, or 500ms, 30s, 2m, 1h; exit 2):
        /// the metadata's reads and, with --tensor, the data's.
        #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_timeout)]
        timeout: Option<f64>,
    },
    /// Decode raw little-endian blocks of a ggml type to little-endian f32.
    #[command(after_help = types_help())]
    Dequant {
        /// Type name as ggml prints it (`q4_K`, `iq2_xxs`, `bf16`, ...; any case).
        #[arg(long = "type", value_name = "TYPE")]
        ty: String,
        /// Blocks to decode (`-` for stdin); a whole number of blocks.
        #[arg(long, value_name = "BLOCKS")]
        input: PathBuf,
        /// Where to write the f32 values (`-` for stdout).
        #[arg(long, value_name = "F32")]
        output: PathBuf,
    },
    /// Encode little-endian f32 to blocks of a ggml type as ggml's
    /// `ggml_quantize_chunk` does (or its row reference, `--reference row`).
    #[command(after_help = types_help())]
    Quantize {
        /// Type name as ggml prints it (`q4_K`, `q8_0`, `bf16`, ...; any case).
        #[arg(long = "type", value_name = "TYPE")]
        ty: String,
        /// f32 values (`-` for stdin); a whole number of blocks of the type.
        #[arg(long, value_name = "F32")]
        input: PathBuf,
        /// Where to write the blocks (`-` for stdout).
        #[arg(long, value_name = "BLOCKS")]
        output: PathBuf,
        /// Values per row (a multiple of the block size dividing the input);
        /// default: the whole input is one row. Matters only with `--imatrix`.
        #[arg(long = "row-length", value_name = "N")]
        row_length: Option<usize>,
        /// Importance matrix: N little-endian f32 weights, one per column
        /// (`quant_weights` in ggml), or with --imatrix-tensor a llama.cpp
        /// imatrix file (GGUF or legacy .dat). Types that do not use one ignore it.
        #[arg(long, value_name = "WEIGHTS")]
        imatrix: Option<PathBuf>,
        /// Read --imatrix as a llama.cpp imatrix file and take the weights of
        /// this tensor (normalised as llama-quantize does; a MoE entry gives
        /// one slice per expert, the input's rows split evenly between them).
        #[arg(long = "imatrix-tensor", value_name = "NAME", requires = "imatrix")]
        imatrix_tensor: Option<String>,
        /// `chunk` (default): `ggml_quantize_chunk`, what llama-quantize runs;
        /// `row`: `quantize_row_*_ref` (differs for IQ4_NL; no importance matrix).
        #[arg(long, value_name = "chunk|row", default_value = "chunk")]
        reference: String,
    },
    /// Digests of tensor data (not metadata) per tensor and per model, in
    /// llama-gguf-hash's layout; or verify them against a manifest.
    Hash(crate::hash_command::HashArgs),
    /// Write a copy of a GGUF file with its metadata changed (--set,
    /// --remove, --chat-template, --pre-tokenizer, --special-token) and its
    /// tensor data copied byte for byte; validated before it is kept.
    Edit(crate::edit_command::EditArgs),
    /// Fix the findings whose rule has a fix (`rules` lists them): a
    /// validated copy with the metadata or the layout of tensor data
    /// changed, the tensor bytes copied unchanged.
    Fix(crate::fix_command::FixArgs),
    /// Fuzz a third-party GGUF writer: generate model descriptions, run the
    /// writer on each, validate and compare what it wrote with what was
    /// asked; group findings by kind and shrink one reproducer per kind.
    #[command(after_help = crate::fuzz::WRITER_AFTER_HELP)]
    FuzzWriter(crate::fuzz::WriterArgs),
    /// Fuzz a third-party quantizer: feed it f32 rows and compare its blocks
    /// with the reference quantizer (identical, within the error bound, wrong).
    #[command(after_help = crate::fuzz::QUANT_AFTER_HELP)]
    FuzzQuantizer(crate::fuzz::QuantArgs),
    /// Write a model description (fuzz-writer's JSON) as GGUF with this
    /// project's own writer.
    WriteModel {
        /// The description (JSON).
        model: PathBuf,
        /// The GGUF file to write.
        out: PathBuf,
    },
    /// Provenance: quantize every tensor of BASE (F32/F16/BF16) to QUANT's
    /// type with ggml_quantize_chunk and compare bytes. Exit 0 only when
    /// every tensor is identical.
    Derive {
        /// The base model (F32, F16 or BF16 tensors).
        base: PathBuf,
        /// The quantized model.
        quant: PathBuf,
        /// One JSON document instead of a line per tensor.
        #[arg(long)]
        json: bool,
        /// The llama.cpp importance matrix the quant was made with (GGUF or
        /// legacy .dat): each tensor is quantized with its weights, as
        /// llama-quantize --imatrix does.
        #[arg(long, value_name = "FILE")]
        imatrix: Option<PathBuf>,
        /// Give up after this long (seconds, or 500ms, 30s, 2m, 1h; exit 2):
        /// the tensors not started are not read.
        #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_timeout)]
        timeout: Option<f64>,
    },
}

/// The `after_help` of `dequant` and `quantize`: formats, type names, exit status.
pub fn types_help() -> String {
    let names: Vec<&str> = gguf_validate_core::types::GgmlType::ALL.iter().map(|t| t.name()).collect();
    format!(
        "Buffers are raw little-endian data with no header, as in a GGUF tensor; results are
bit-exact with ggml's dequantize_row_* and ggml_quantize_chunk (quantize_row_*_ref with
--reference row; Q8_1 and Q8_K, which ggml_quantize_chunk lacks, always use the row reference).

Types: {}

Exit status:
  0  converted
  2  usage error: unknown type, partial block, no reference quantizer, unreadable input",
        names.join(", ")
    )
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files to validate; a directory is walked recursively (`*.gguf` and
    /// files with a known magic; ignore files and hidden entries skipped);
    /// `http://`, `https://` and `hf://ORG/REPO/FILE[@REVISION]` URLs are
    /// read with range requests (metadata only unless --check-data).
    #[arg(required_unless_present = "files_from", value_name = "PATH|URL")]
    pub files: Vec<PathBuf>,
    /// Also validate the paths and URLs listed in FILE, one per line (`-`: stdin).
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<PathBuf>,
    /// Walk directories without skipping what `.gitignore`, `.ignore` and
    /// hidden names would.
    #[arg(long)]
    pub no_ignore: bool,
    /// Exit 0 when the arguments name no file to validate (by default such
    /// a run is an error, exit 2: a gate that checked nothing must not pass).
    #[arg(long)]
    pub allow_empty: bool,
    /// Print only invalid and unreadable files (and the closing summary).
    #[arg(long, short)]
    pub quiet: bool,
    /// Validate this many files at once (default: the number of CPUs);
    /// results are written in input order.
    #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Which idea of "valid" to apply (default: the config's, else strict).
    #[arg(long, value_enum)]
    pub profile: Option<ProfileArg>,
    /// Judge each file and split set under every profile (strict, spec,
    /// ggml) from one validation: prints, for each profile in turn, a line
    /// `== profile P (exit N) ==` and then what `--profile P` alone prints
    /// and N what it exits with; exits with the worst of them. The human
    /// report only, with no side report or baseline to write.
    #[arg(long, conflicts_with_all = ["profile", "output_sarif", "output_junit", "write_baseline"])]
    pub every_profile: bool,
    /// Read settings from this config file (trusted: it may lower any
    /// rule) instead of the `gguf-validate.toml` found in the working
    /// directory or its parents.
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Ignore any `gguf-validate.toml`.
    #[arg(long)]
    pub no_config: bool,
    /// Accept the findings listed in FILE (written by --write-baseline):
    /// only new findings count.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write this run's findings to FILE as a baseline (one `rule|file|field`
    /// identity per line, no offsets).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: FormatArg,
    /// Treat warnings as errors.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Also write a SARIF 2.1.0 report of the run to FILE (beside the
    /// `--format` output on stdout).
    #[arg(long, value_name = "FILE")]
    pub output_sarif: Option<PathBuf>,
    /// Also write a JUnit XML report of the run to FILE.
    #[arg(long, value_name = "FILE")]
    pub output_junit: Option<PathBuf>,
    /// Check the GGUF container only: skip the model layer (hyper-parameters
    /// and tensors against llama.cpp's architectures, tokenizer, split
    /// shards). For GGUF files llama.cpp is not meant to load (diffusion,
    /// audio, custom models); the report says the model layer did not run.
    #[arg(long)]
    pub container_only: bool,
    /// Judge strict against this llama.cpp release's loader too (`b4600`,
    /// `v0.5.0`), or with `RELEASE..` against every known release from it
    /// to the newest (a support window: the file must load in all of
    /// them): a release that does not know the file's architecture,
    /// tokenizer, pre-tokenizer, projector type or a tensor's type refuses
    /// it (`llama-cpp-release`). Without it, the verdict is the pinned
    /// llama.cpp's (llama-cpp-python 0.3.36).
    #[arg(long = "llama-cpp", value_name = "RELEASE[..]")]
    pub llama_cpp: Option<String>,
    /// Judge every file against this loader: `llama.cpp`, `sd.cpp`
    /// (stable-diffusion.cpp) or `comfyui-gguf` (ComfyUI-GGUF). Without it,
    /// each file is judged by the loader it is for: a diffusion model (an
    /// architecture of ComfyUI-GGUF's list, or no architecture and tensors
    /// stable-diffusion.cpp recognises) by stable-diffusion.cpp, with
    /// ComfyUI-GGUF's refusals as warnings; any other file by llama.cpp.
    #[arg(long, value_name = "LOADER")]
    pub loader: Option<String>,
    /// Pair multimodal projectors, LoRA adapters, control vectors and
    /// importance matrices with this model (a path or URL; repeatable): a
    /// projector's width, an adapter's architecture, tensors and shapes, a
    /// control vector's width and layers, an importance matrix's entries are
    /// checked against it as llama.cpp checks them. Without it, the models in
    /// the file's own folder are used.
    #[arg(long = "with", value_name = "MODEL")]
    pub with: Vec<PathBuf>,
    /// `--allow`, `--warn`, `--deny`.
    #[command(flatten)]
    pub levels: RuleLevelArgs,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Accepted for compatibility: files are always read with positioned
    /// reads (metadata only, unless --check-data), never memory-mapped.
    #[arg(long, hide = true)]
    pub no_mmap: bool,
    /// Give up on a file after this long (seconds, or 500ms, 30s, 2m, 1h;
    /// exit 2 for it, the other files go on). Off by default, so a long
    /// --check-data is not cut.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_timeout)]
    pub timeout: Option<f64>,
    /// Most metadata read from one file (header, key/values, tensor infos;
    /// units K, M, G, KiB, MiB, GiB). The caps on one string (a quarter of
    /// it), one array, the key and tensor counts scale with it. A file
    /// that declares more is reported as `metadata-limit`, not examined
    /// further [default: 256MiB].
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size)]
    pub max_metadata: Option<u64>,
    /// Also read FIFOs, sockets and devices (into memory, up to
    /// --special-file-limit bytes). Without it they are refused at once.
    #[arg(long)]
    pub allow_special_files: bool,
    /// With --allow-special-files: most bytes read from one special file.
    #[arg(long, value_name = "BYTES", default_value_t = gguf_validate_core::limits::MAX_SPECIAL_FILE_BYTES)]
    pub special_file_limit: u64,
    /// Also scan every tensor's values for what ggml's --check-tensors rejects
    /// (NaN/Inf elements and block scales, MXFP4 exponent 0xFF, ...).
    #[arg(long)]
    pub check_data: bool,
    /// With --check-data: list at most N findings per tensor, and at most
    /// max(N, 50) per rule in the whole file (all are counted); N <= 10000.
    #[arg(long, value_name = "N", default_value_t = gguf_validate_core::data_scan::DEFAULT_MAX_LISTED_PER_TENSOR,
          value_parser = parse_max_data_findings)]
    pub max_data_findings: usize,
    #[command(flatten)]
    pub remote: crate::url_options::RemoteArgs,
}

fn parse_max_data_findings(s: &str) -> Result<usize, String> {
    let max = gguf_validate_core::limits::MAX_DATA_FINDINGS;
    match s.parse::<usize>() {
        Ok(n) if n <= max => Ok(n),
        Ok(n) => Err(format!("{n} is above the limit of {max} findings listed per tensor")),
        Err(e) => Err(e.to_string()),
    }
}
