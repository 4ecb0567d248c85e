//! `gguf-conformance`: generate the corpus, check it is up to date, run the
//! cross-reader matrix.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use gguf_conformance::matrix;

#[derive(Debug, Parser)]
#[command(name = "gguf-conformance", version, about = "GGUF conformance corpus tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write every case to corpus/gguf/ with manifest.json, and the split sets
    /// to corpus/split/ (deterministic).
    Generate {
        /// Only check that corpus/gguf/ and corpus/split/ are up to date; exit 1 if not.
        #[arg(long)]
        check: bool,
    },
    /// Run reader adapters over the corpus and write MATRIX.md, matrix.json
    /// and matrix.html (JSONTestSuite-style classification).
    Matrix {
        /// Readers configuration (name, command, version command, profile).
        #[arg(long, default_value = "conformance/readers.json")]
        readers: PathBuf,
        /// Only these readers (repeatable; by name).
        #[arg(long = "reader")]
        only: Vec<String>,
        /// Only corpus files whose path (relative to corpus/) contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Per-file time limit in seconds.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// Adapter processes run at once.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Directory for MATRIX.md, matrix.json and matrix.html.
        #[arg(long, default_value = "conformance")]
        out: PathBuf,
    },
}

/// The only place that prints.
#[allow(clippy::disallowed_macros)]
fn report(ok: bool, msg: &str) {
    if ok {
        println!("{msg}");
    } else {
        eprintln!("gguf-conformance: {msg}");
    }
}

fn run_matrix(
    readers: PathBuf,
    only: Vec<String>,
    filter: Option<String>,
    timeout: u64,
    jobs: usize,
    out: PathBuf,
) -> Result<String, String> {
    let root = gguf_conformance::workspace_root();
    let readers_path = if readers.is_absolute() { readers } else { root.join(readers) };
    let mut config = matrix::read_readers(&readers_path)?.readers;
    if !only.is_empty() {
        config.retain(|r| only.contains(&r.name));
    }
    if config.is_empty() {
        return Err("no readers selected".into());
    }
    let mut files = matrix::load_corpus(&root)?;
    if let Some(f) = &filter {
        files.retain(|c| c.file.contains(f.as_str()));
    }
    let m = matrix::run(&root, &config, files, Duration::from_secs(timeout), jobs);
    let out = if out.is_absolute() { out } else { root.join(out) };
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    for (name, text) in [("MATRIX.md", m.to_markdown()), ("matrix.json", m.to_json()), ("matrix.html", m.to_html())] {
        std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    let mut summary = format!("{} files x {} readers -> {}", m.rows.len(), m.readers.len(), out.display());
    for r in &m.readers {
        let counts: Vec<String> =
            r.summary.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{}={n}", c.name())).collect();
        summary.push_str(&format!("\n  {:<22} {}", r.config.name, counts.join(" ")));
    }
    // gguf-validate is scored against its own expectations: any wrong
    // verdict, crash or timeout there is a failure of the run.
    let own: Vec<String> = m
        .rows
        .iter()
        .flat_map(|row| {
            m.readers.iter().filter(|r| r.config.profile.is_some()).filter_map(move |r| {
                row.results
                    .get(&r.config.name)
                    .filter(|c| c.class.is_failure())
                    .map(|c| format!("{}: {}: {}", r.config.name, row.file.file, c.class.name()))
            })
        })
        .collect();
    if own.is_empty() {
        Ok(summary)
    } else {
        Err(format!("{summary}\ngguf-validate missed its expectations:\n  {}", own.join("\n  ")))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate { check } => {
            let dir = gguf_conformance::corpus_dir();
            let split = gguf_conformance::split::split_dir();
            let r = if check {
                gguf_conformance::check_corpus(&dir)
                    .and_then(|n| gguf_conformance::split::check_split(&split).map(|m| (n, m)))
            } else {
                gguf_conformance::write_corpus(&dir)
                    .and_then(|n| gguf_conformance::split::write_split(&split).map(|m| (n, m)))
                    .map_err(|e| e.to_string())
            };
            r.map(|(n, m)| {
                let verb = if check { "checked" } else { "wrote" };
                format!("{verb} {n} cases in {} and {m} split sets in {}", dir.display(), split.display())
            })
        }
        Command::Matrix { readers, only, filter, timeout, jobs, out } => {
            run_matrix(readers, only, filter, timeout, jobs, out)
        }
    };
    match result {
        Ok(msg) => {
            report(true, &msg);
            ExitCode::SUCCESS
        }
        Err(e) => {
            report(false, &e);
            ExitCode::FAILURE
        }
    }
}
