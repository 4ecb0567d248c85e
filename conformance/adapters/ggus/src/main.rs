//! `gguf-ggus-adapter FILE`: reads a GGUF file with the `ggus` crate
//! (InfiniTensor/gguf, the reader of the `gguf-utils` CLI): `GGuf::new` over
//! the whole file, then every key's value bytes and every tensor's
//! information (type, shape, byte size) and data slice, as `gguf-utils show`
//! does before printing.
//!
//! Exit status (JSONTestSuite adapter contract): 0 accepted, 1 rejected
//! (an `Err` from ggus, or a tensor whose bytes lie outside the data
//! section). A panic exits 101 and a segfault is a signal: the matrix
//! runner counts both as crashes. `--version` prints the crate version.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use ggus::GGuf;

const GGUS_VERSION: &str = "ggus 0.5.1";

fn read(path: &str) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("read: {e}"))?;
    let gguf = GGuf::new(&bytes).map_err(|e| e.to_string())?;
    let mut touched = 0usize;
    for (key, kv) in &gguf.meta_kvs {
        touched = touched.wrapping_add(key.len()).wrapping_add(kv.value_bytes().len());
        let _ = format!("{:?}", kv.ty());
    }
    for (name, meta) in &gguf.tensors {
        let info = meta.to_info();
        let (start, len) = (info.offset(), info.nbytes());
        let end = start.checked_add(len).ok_or_else(|| format!("tensor {name}: size overflows"))?;
        let data = gguf.data.get(start..end).ok_or_else(|| format!("tensor {name}: data outside the file"))?;
        touched = touched.wrapping_add(data.iter().map(|b| usize::from(*b)).sum::<usize>());
        let _ = format!("{:?} {:?}", info.ty(), info.shape());
    }
    std::hint::black_box(touched);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--version") => {
            #[allow(clippy::print_stdout)]
            {
                println!("{GGUS_VERSION}");
            }
            ExitCode::SUCCESS
        }
        Some(path) => match read(path) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("ggus: {e}");
                }
                ExitCode::from(1)
            }
        },
        None => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("usage: gguf-ggus-adapter FILE | --version");
            }
            ExitCode::from(2)
        }
    }
}
