//! `dump` (a file's header, metadata and tensor table as JSON) and
//! `derive` (every tensor of a quant against the base's).

use std::path::Path;

use gguf_validate::Options;
use gguf_validate::io::{self as gio, ByteSource};

use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID, convert, render, report_io};

/// Every tensor of the quant against the base's (`derive`'s results; the
/// Python bindings' `derive()`), or why a file could not be read.
pub fn derive_results(
    base: &Path,
    quant: &Path,
    imatrix: Option<&Path>,
) -> Result<Vec<gguf_validate::derive::TensorResult>, String> {
    let open = |path: &Path| -> Result<(gio::Source, Vec<gguf_validate::data::DataTensor>), String> {
        let shown = render::display_path(path);
        let src = gio::open(path, &gio::OpenPolicy::default()).map_err(|e| format!("{shown}: {e}"))?;
        let v = gguf_validate::validate_source(&src, &Options::default()).map_err(|e| format!("{shown}: {e}"))?;
        let tensors = gguf_validate::validate::layout(&v.metadata, src.len()).tensors;
        Ok((src, tensors))
    };
    let (bsrc, btensors) = open(base)?;
    let (qsrc, qtensors) = open(quant)?;
    let imatrix = imatrix.map(convert::read_imatrix_file).transpose()?;
    Ok(gguf_validate::derive::derive(&bsrc, &btensors, &qsrc, &qtensors, imatrix.as_ref()))
}

/// `derive BASE QUANT`: every tensor of the quant against the base's.
pub fn derive(base: &Path, quant: &Path, json: bool, imatrix: Option<&Path>) -> u8 {
    let results = match derive_results(base, quant, imatrix) {
        Ok(r) => r,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let all_identical =
        !results.is_empty() && results.iter().all(|r| matches!(r.verdict, gguf_validate::derive::Verdict::Identical));
    match report_io(render::derive_report(&results, json)) {
        EXIT_VALID if all_identical => EXIT_VALID,
        EXIT_VALID => EXIT_INVALID,
        other => other,
    }
}

/// Why a file has no dump: it could not be read (exit 2), or it is not a
/// GGUF v2/v3 file (exit 1).
#[derive(Debug)]
pub enum DumpError {
    Unreadable(String),
    NotGguf(String),
}

/// A file's header, metadata and tensor table as `dump` prints it (with
/// `path` and `file_size`), and whether the file was read completely.
pub fn dump_value(path: &Path, full: bool) -> Result<(serde_json::Value, bool), DumpError> {
    let shown = render::display_path(path);
    let src =
        gio::open(path, &gio::OpenPolicy::default()).map_err(|e| DumpError::Unreadable(format!("{shown}: {e}")))?;
    let file_len = src.len();
    let metadata = gguf_validate::validate_source(&src, &Options::default())
        .map_err(|e| DumpError::Unreadable(format!("{shown}: {e}")))?
        .metadata;
    let Some((mut value, complete)) = gguf_validate::dump::describe(&metadata, file_len, full) else {
        return Err(DumpError::NotGguf(format!(
            "{shown}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)"
        )));
    };
    if let Some(o) = value.as_object_mut() {
        o.insert("path".into(), serde_json::json!(render::json_path(path)));
        o.insert("file_size".into(), serde_json::json!(file_len));
    }
    Ok((value, complete))
}

/// `dump FILE [--full]`.
pub fn dump(path: &Path, full: bool) -> u8 {
    let (value, complete) = match dump_value(path, full) {
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
