//! `fuzz-writer`, `fuzz-quantizer` and `write-model`: thin front ends over
//! `gguf_validate_harness`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use gguf_validate_core::numerics::GgmlType;
use gguf_validate_core::rules::Profile;
use gguf_validate_harness::caps::Capabilities;
use gguf_validate_harness::quant::{self, CommandQuantizer, QuantOptions};
use gguf_validate_harness::shrink::Budget;
use gguf_validate_harness::writer::{self, CampaignOptions, CommandWriter, Event};

use crate::render;
use crate::values::ProfileArg;

const EXIT_OK: u8 = 0;
const EXIT_FINDINGS: u8 = 1;
const EXIT_HARNESS: u8 = 2;

pub const WRITER_AFTER_HELP: &str = "\
The command is run by `sh -c` with {model} and {out} replaced by shell-quoted
paths: {model} is a model description (JSON, format documented in
gguf_validate_harness::model_json), {out} the GGUF file to write.

Examples:
  gguf-validate fuzz-writer --cmd 'python3 conformance/writers/gguf_py.py {model} {out}' \\
      --capabilities conformance/writers/gguf_py.toml --cases 10000 --findings findings/
  gguf-validate fuzz-writer --cmd 'gguf-validate write-model {model} {out}' --cases 200

Exit status:
  0  no case found anything
  1  at least one finding (reproducers under --findings)
  2  harness error (the command cannot be run, a directory cannot be written)";

pub const QUANT_AFTER_HELP: &str = "\
The command is run by `sh -c` with {type} (ggml's name, q4_K), {type_id},
{input} (f32 little-endian rows), {output} (the blocks to write) and, if it
uses it, {row_len} (values per row: then it gets --batch rows per run).

Examples:
  gguf-validate fuzz-quantizer --cmd 'python3 conformance/writers/ggml_quant.py {type_id} {input} {output} {row_len}'

Exit status:
  0  every row identical, or differing only within the error bound or where no bound applies
  1  a row beyond the error bound, or a failed run
  2  harness error";

#[derive(Debug, Args)]
pub struct WriterArgs {
    /// The writer: a command line with {model} and {out}.
    #[arg(long, value_name = "COMMAND")]
    cmd: String,
    /// Most cases.
    #[arg(long, default_value_t = 1000)]
    cases: u64,
    /// Seed (case i is generated from the seed and i alone).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop starting cases after SECS seconds.
    #[arg(long, value_name = "SECS")]
    time: Option<u64>,
    /// Write each kind's shrunk reproducer (model.json, out.gguf, report) here.
    #[arg(long, value_name = "DIR")]
    findings: Option<PathBuf>,
    /// Profile the written files must be valid under.
    #[arg(long, value_enum, default_value_t = ProfileArg::Strict)]
    profile: ProfileArg,
    /// What the writer claims to support (TOML; default: everything).
    #[arg(long, value_name = "FILE")]
    capabilities: Option<PathBuf>,
    /// Kill a run of the writer (and its process group) after SECS seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    timeout: u64,
    /// Most writer runs to shrink one kind of finding.
    #[arg(long, value_name = "N", default_value_t = 400)]
    shrink_runs: usize,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct QuantArgs {
    /// The quantizer: a command line with {type}/{type_id}, {input}, {output} [and {row_len}].
    #[arg(long, value_name = "COMMAND")]
    cmd: String,
    /// Types to test, comma-separated (default: every type the reference quantizes as
    /// ggml_quantize_chunk does without an importance matrix).
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Most rows in all.
    #[arg(long, default_value_t = 1000)]
    rows: u64,
    /// Rows per run when the command takes {row_len}.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop starting runs after SECS seconds.
    #[arg(long, value_name = "SECS")]
    time: Option<u64>,
    /// Write each kind's shrunk row, expected and actual blocks here.
    #[arg(long, value_name = "DIR")]
    findings: Option<PathBuf>,
    /// Kill a run after SECS seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    timeout: u64,
    /// Most runs to shrink one kind.
    #[arg(long, value_name = "N", default_value_t = 200)]
    shrink_runs: usize,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

fn work_dir(kind: &str) -> PathBuf {
    std::env::temp_dir().join(format!("gguf-validate-{kind}-{}", std::process::id()))
}

fn print(text: &str, json: Option<serde_json::Value>) -> u8 {
    let r = match json {
        Some(v) => render::json(&v),
        None => render::text(text),
    };
    match r {
        Ok(()) => EXIT_OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            render::error(&format!("writing output: {e}"));
            EXIT_HARNESS
        }
    }
}

pub fn fuzz_writer(args: &WriterArgs) -> u8 {
    let caps = match &args.capabilities {
        None => Capabilities::default(),
        Some(p) => {
            match std::fs::read_to_string(p).map_err(|e| e.to_string()).and_then(|t| Capabilities::from_toml(&t)) {
                Ok(c) => c,
                Err(e) => {
                    render::error(&format!("{}: {e}", render::display_path(p)));
                    return EXIT_HARNESS;
                }
            }
        }
    };
    let opts = CampaignOptions {
        cases: args.cases,
        seed: args.seed,
        time: args.time.map(Duration::from_secs),
        profile: Profile::from(args.profile),
        caps,
        shrink: Budget { max_runs: args.shrink_runs, ..Budget::default() },
        work_dir: work_dir("fuzz-writer"),
        findings_dir: args.findings.clone(),
    };
    let mut w = CommandWriter { template: args.cmd.clone(), timeout: Duration::from_secs(args.timeout.max(1)) };
    let mut on_event = |e: Event<'_>| match e {
        Event::NewKind(kind, case) => render::note(&format!("case {case}: new kind `{kind}`; shrinking")),
        Event::Shrunk(kind, st) => render::note(&format!(
            "`{kind}` shrunk to {} in {} runs ({:.1} s)",
            st.after,
            st.runs,
            st.elapsed.as_secs_f64()
        )),
        Event::Case(_) => {}
    };
    let result = writer::run_campaign(&mut w, &opts, &mut on_event);
    let _ = std::fs::remove_dir_all(&opts.work_dir);
    match result {
        Err(e) => {
            render::error(&e.0);
            EXIT_HARNESS
        }
        Ok(r) => {
            let json = if args.json { serde_json::to_value(&r).ok() } else { None };
            match print(&writer::campaign_text(&r, true), json) {
                EXIT_OK => r.exit_code(),
                code => code,
            }
        }
    }
}

pub fn fuzz_quantizer(args: &QuantArgs) -> u8 {
    let types = if args.types.is_empty() {
        quant::default_types()
    } else {
        let mut out = Vec::new();
        for name in &args.types {
            match GgmlType::from_name(name) {
                Some(t) if quant::testable(t) => out.push(t),
                Some(t) => {
                    render::error(&format!(
                        "{t} has no reference chunk quantizer that runs without an importance matrix to compare with"
                    ));
                    return EXIT_HARNESS;
                }
                None => {
                    render::error(&format!("unknown ggml type `{name}`"));
                    return EXIT_HARNESS;
                }
            }
        }
        out
    };
    let opts = QuantOptions {
        types,
        rows: args.rows,
        batch: args.batch.max(1),
        seed: args.seed,
        time: args.time.map(Duration::from_secs),
        shrink_runs: args.shrink_runs,
        work_dir: work_dir("fuzz-quantizer"),
        findings_dir: args.findings.clone(),
    };
    let mut q = CommandQuantizer { template: args.cmd.clone(), timeout: Duration::from_secs(args.timeout.max(1)) };
    let result = quant::run_quant_campaign(&mut q, &opts);
    let _ = std::fs::remove_dir_all(&opts.work_dir);
    match result {
        Err(e) => {
            render::error(&e);
            EXIT_HARNESS
        }
        Ok(r) => {
            let json = if args.json { serde_json::to_value(&r).ok() } else { None };
            match print(&quant::quant_text(&r, true), json) {
                EXIT_OK => r.exit_code(),
                code => code,
            }
        }
    }
}

/// `write-model MODEL OUT`: the project's own writer as a writer under test.
pub fn write_model(model: &Path, out: &Path) -> u8 {
    match writer::write_model_file(model, out) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            render::error(&e);
            EXIT_FINDINGS
        }
    }
}
