//! `dump` (a file's header, metadata and tensor table as JSON) and
//! `derive` (every tensor of a quant against the base's).

use std::path::Path;

use gguf_validate::Options;
use gguf_validate::pipeline::Input;
use gguf_validate::remote::UrlOpener;

use crate::hash::{Opened, open_input};
use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID, render, report_io};

/// Every tensor of the quant against the base's (`derive`'s results), or
/// why a file could not be read.
pub fn derive_results(
    base: &Path,
    quant: &Path,
    imatrix: Option<&Path>,
) -> Result<Vec<gguf_validate::derive::TensorResult>, String> {
    let input = |p: &Path| Input::Path(p.to_path_buf());
    derive_inputs(&input(base), &input(quant), imatrix.map(input).as_ref(), None)
}

/// [`derive_results`] for any inputs: paths, URLs (through `opener`) or
/// bytes (the Python bindings' `derive()`).
pub fn derive_inputs(
    base: &Input,
    quant: &Input,
    imatrix: Option<&Input>,
    opener: Option<&dyn UrlOpener>,
) -> Result<Vec<gguf_validate::derive::TensorResult>, String> {
    let tensors = |f: &Input, src: &Opened<'_>| -> Result<Vec<gguf_validate::data::DataTensor>, String> {
        let src = src.as_source();
        let v = gguf_validate::validate_source(src, &Options::default()).map_err(|e| format!("{}: {e}", f.shown()))?;
        Ok(gguf_validate::validate::layout(&v.metadata, src.len()).tensors)
    };
    let bsrc = open_input(base, opener)?;
    let btensors = tensors(base, &bsrc)?;
    let qsrc = open_input(quant, opener)?;
    let qtensors = tensors(quant, &qsrc)?;
    let imatrix = match imatrix {
        Some(f) => {
            let src = open_input(f, opener)?;
            Some(
                gguf_validate::imatrix::Imatrix::read(src.as_source())
                    .map_err(|e| format!("{}: not an importance matrix llama-quantize accepts: {e}", f.shown()))?,
            )
        }
        None => None,
    };
    bsrc.before_data();
    qsrc.before_data();
    Ok(gguf_validate::derive::derive(bsrc.as_source(), &btensors, qsrc.as_source(), &qtensors, imatrix.as_ref()))
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
    dump_input(&Input::Path(path.to_path_buf()), full, None)
}

/// [`dump_value`] for any input: a path, a URL (through `opener`) or bytes
/// (`path` is then the URL without its query, or the bytes' name).
pub fn dump_input(
    input: &Input,
    full: bool,
    opener: Option<&dyn UrlOpener>,
) -> Result<(serde_json::Value, bool), DumpError> {
    let shown = input.shown();
    let opened = open_input(input, opener).map_err(DumpError::Unreadable)?;
    let src = opened.as_source();
    let file_len = src.len();
    let metadata = gguf_validate::validate_source(src, &Options::default())
        .map_err(|e| DumpError::Unreadable(format!("{shown}: {e}")))?
        .metadata;
    let Some((mut value, complete)) = gguf_validate::dump::describe(&metadata, file_len, full) else {
        return Err(DumpError::NotGguf(format!(
            "{shown}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)"
        )));
    };
    if let Some(o) = value.as_object_mut() {
        o.insert("path".into(), serde_json::json!(input.json_name()));
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
