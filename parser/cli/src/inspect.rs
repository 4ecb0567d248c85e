//! `dump` (a file's header, metadata and tensor table as JSON) and
//! `derive` (every tensor of a quant against the base's): the library's
//! `pipeline::commands` does the work, this module renders it.

use std::path::Path;
use std::time::Duration;

use gguf_validate_core::pipeline::Input;
use gguf_validate_core::pipeline::commands::{self, DumpError};

use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID, render, report_io};

/// Every tensor of the quant against the base's (`derive`'s results), or
/// why a file could not be read.
pub fn derive_results(
    base: &Path,
    quant: &Path,
    imatrix: Option<&Path>,
    timeout: Option<Duration>,
) -> Result<Vec<gguf_validate_core::derive::TensorResult>, String> {
    let input = |p: &Path| Input::Path(p.to_path_buf());
    commands::derive(&input(base), &input(quant), imatrix.map(input).as_ref(), None, timeout)
}

/// `derive BASE QUANT`: every tensor of the quant against the base's.
pub fn derive(base: &Path, quant: &Path, json: bool, imatrix: Option<&Path>, timeout: Option<Duration>) -> u8 {
    let results = match derive_results(base, quant, imatrix, timeout) {
        Ok(r) => r,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let all_identical = !results.is_empty()
        && results.iter().all(|r| matches!(r.verdict, gguf_validate_core::derive::Verdict::Identical));
    match report_io(render::derive_report(&results, json)) {
        EXIT_VALID if all_identical => EXIT_VALID,
        EXIT_VALID => EXIT_INVALID,
        other => other,
    }
}

/// A file's header, metadata and tensor table as `dump` prints it (with
/// `path` and `file_size`), and whether the file was read completely.
pub fn dump_value(
    path: &Path,
    full: bool,
    timeout: Option<std::time::Duration>,
) -> Result<(serde_json::Value, bool), DumpError> {
    commands::dump(&Input::Path(path.to_path_buf()), full, None, timeout)
}

/// `dump FILE [--full] [--timeout D]`.
pub fn dump(path: &Path, full: bool, timeout: Option<std::time::Duration>) -> u8 {
    let (value, complete) = match dump_value(path, full, timeout) {
        Ok(v) => v,
        Err(DumpError::Unreadable(e)) => {
            render::error(&e);
            return EXIT_USAGE;
        }
        Err(DumpError::NotGguf(e)) => {
            render::error(&e);
            return EXIT_INVALID;
        }
    };
    match report_io(render::json(&value)) {
        EXIT_VALID if !complete => EXIT_INVALID,
        other => other,
    }
}
