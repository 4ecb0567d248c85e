//! `gguf-candle-adapter FILE`: reads a GGUF file with candle-core's reader
//! (`candle_core::quantized::gguf_file::Content::read`), then loads and
//! dequantizes every tensor on the CPU.
//!
//! Exit status (JSONTestSuite adapter contract): 0 accepted, 1 rejected
//! (an `Err` from candle). A panic exits 101, which the matrix runner
//! counts as a crash. `--version` prints the candle-core version.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use candle_core::quantized::gguf_file::Content;
use candle_core::Device;

const CANDLE_VERSION: &str = "candle-core 0.11.1";

fn read(path: &str) -> candle_core::Result<()> {
    let mut file = std::fs::File::open(path)?;
    let content = Content::read(&mut file)?;
    for value in content.metadata.values() {
        // Touch every value the way a loader would (strings, arrays, numbers).
        let _ = format!("{value:?}");
    }
    let names: Vec<String> = content.tensor_infos.keys().cloned().collect();
    for name in names {
        let tensor = content.tensor(&mut file, &name, &Device::Cpu)?;
        let _ = tensor.dequantize(&Device::Cpu)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--version") => {
            #[allow(clippy::print_stdout)]
            {
                println!("{CANDLE_VERSION}");
            }
            ExitCode::SUCCESS
        }
        Some(path) => match read(path) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("candle: {e}");
                }
                ExitCode::from(1)
            }
        },
        None => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("usage: gguf-candle-adapter FILE | --version");
            }
            ExitCode::from(2)
        }
    }
}
