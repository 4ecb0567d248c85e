//! `gguf-validate`: validate GGUF files, print the rule catalogue, dump a
//! file or one tensor, and convert raw buffers with the numerics.

mod cli;
mod convert;
mod fuzz;
mod hash;
mod inputs;
mod inspect;
mod output;
mod remote;
mod render;
mod units;
mod validate;
mod values;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use cli::{Cli, Command};

pub const EXIT_VALID: u8 = 0;
pub const EXIT_INVALID: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

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
        Some(Command::Dump { file, full, .. }) => inspect::dump(&file, full),
        Some(Command::Dequant { ty, input, output }) => convert::dequant(&ty, &input, &output),
        Some(Command::Quantize { ty, input, output, row_length, imatrix, imatrix_tensor, reference }) => {
            let opts = convert::QuantizeOpts { row_length, imatrix, imatrix_tensor, reference };
            convert::quantize(&ty, &input, &output, &opts)
        }
        Some(Command::Hash(args)) => hash::run(&args),
        Some(Command::FuzzWriter(args)) => fuzz::fuzz_writer(&args),
        Some(Command::FuzzQuantizer(args)) => fuzz::fuzz_quantizer(&args),
        Some(Command::WriteModel { model, out }) => fuzz::write_model(&model, &out),
        Some(Command::Derive { base, quant, json, imatrix }) => {
            inspect::derive(&base, &quant, json, imatrix.as_deref())
        }
        None => validate::run(&cli.validate, &matches),
    };
    ExitCode::from(code)
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
