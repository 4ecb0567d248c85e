//! `gguf-validate`: validate GGUF files, print the rule catalogue, dump a
//! file or one tensor, and convert raw buffers with the numerics.
//!
//! The command line is this library's [`main_with_args`], which the binary
//! (`main.rs`) calls; the Python wheel ships that same binary as its
//! `gguf-validate` command (parser/python/cli-binary.sh), so both behave
//! the same, exit codes included. Every command's work is the library's
//! (`gguf_validate_core::pipeline`: inputs opened at its front door,
//! `commands` for `dump`, `derive`, `hash` and `edit`); this crate parses
//! arguments and renders. The Python bindings call the library directly
//! and do not depend on this crate.
#![forbid(unsafe_code)]

mod cli;
mod convert;
mod edit_command;
mod fix_command;
mod fuzz;
mod hash_command;
mod inputs;
mod inspect;
mod render;
mod stream;
mod units;
mod url_options;
mod validate_command;
mod values;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use cli::{Cli, Command};

pub const EXIT_VALID: u8 = 0;
pub const EXIT_INVALID: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

/// Runs the command line on `args` (the program's name first, as
/// `std::env::args_os` gives them) and returns the exit code. Help,
/// `--version` and argument errors are printed here, as clap prints them,
/// and return clap's code instead of exiting the process.
pub fn main_with_args(args: Vec<OsString>) -> u8 {
    if let Err(msg) = cli::check_ambiguous_args(&args) {
        render::error(&msg);
        return EXIT_USAGE;
    }
    let parsed = Cli::command().try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(x) => x,
        Err(e) => {
            // What clap's `exit` does, without leaving the process.
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE);
        }
    };
    match cli.command {
        Some(Command::Rules { format }) => report_io(render::rules(format)),
        Some(Command::Dump { file, tensor: Some(name), dequant, output: Some(out), timeout, .. }) => {
            convert::dump_tensor(&file, &name, dequant, &out, timeout.map(std::time::Duration::from_secs_f64))
        }
        Some(Command::Dump { file, full, timeout, .. }) => {
            inspect::dump(&file, full, timeout.map(std::time::Duration::from_secs_f64))
        }
        Some(Command::Dequant { ty, input, output }) => convert::dequant(&ty, &input, &output),
        Some(Command::Quantize { ty, input, output, row_length, imatrix, imatrix_tensor, reference }) => {
            let opts = convert::QuantizeOpts { row_length, imatrix, imatrix_tensor, reference };
            convert::quantize(&ty, &input, &output, &opts)
        }
        Some(Command::Hash(args)) => hash_command::run(&args),
        Some(Command::Edit(args)) => {
            let sub = matches.subcommand_matches("edit").unwrap_or(&matches);
            edit_command::run(&args, sub)
        }
        Some(Command::Fix(args)) => {
            let sub = matches.subcommand_matches("fix").unwrap_or(&matches);
            fix_command::run(&args, sub)
        }
        Some(Command::FuzzWriter(args)) => fuzz::fuzz_writer(&args),
        Some(Command::FuzzQuantizer(args)) => fuzz::fuzz_quantizer(&args),
        Some(Command::WriteModel { model, out }) => fuzz::write_model(&model, &out),
        Some(Command::Derive { base, quant, json, imatrix, timeout }) => {
            inspect::derive(&base, &quant, json, imatrix.as_deref(), timeout.map(std::time::Duration::from_secs_f64))
        }
        None => validate_command::run(&cli.validate, &matches),
    }
}

pub fn report_io(r: std::io::Result<()>) -> u8 {
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
