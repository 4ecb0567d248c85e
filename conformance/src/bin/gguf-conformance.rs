//! `gguf-conformance`: generate the corpus, check it is up to date.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "gguf-conformance", version, about = "GGUF conformance corpus tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write every case to corpus/gguf/ with manifest.json (deterministic).
    Generate {
        /// Only check that corpus/gguf/ is up to date; exit 1 if not.
        #[arg(long)]
        check: bool,
    },
}

#[allow(clippy::disallowed_macros)]
fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Generate { check } => {
            let dir = gguf_conformance::corpus_dir();
            let result = if check {
                gguf_conformance::check_corpus(&dir)
            } else {
                gguf_conformance::write_corpus(&dir).map_err(|e| e.to_string())
            };
            match result {
                Ok(n) => {
                    println!("{} {n} cases in {}", if check { "checked" } else { "wrote" }, dir.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("gguf-conformance: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
