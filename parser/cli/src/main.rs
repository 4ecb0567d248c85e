//! The `gguf-validate` binary: the command line of [`gguf_validate_cli`].
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(gguf_validate_cli::main_with_args(std::env::args_os().collect()))
}
