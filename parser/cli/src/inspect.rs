//! `dump` (a file's header, metadata and tensor table as JSON) and
//! `derive` (every tensor of a quant against the base's).

use std::path::Path;

use gguf_validate::Options;
use gguf_validate::io::{self as gio, ByteSource};

use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID, convert, render, report_io};

/// `derive BASE QUANT`: every tensor of the quant against the base's.
pub fn derive(base: &Path, quant: &Path, json: bool, imatrix: Option<&Path>) -> u8 {
    let open = |path: &Path| -> Result<(gio::Source, Vec<gguf_validate::data::DataTensor>), String> {
        let shown = render::display_path(path);
        let src = gio::open(path, &gio::OpenPolicy::default()).map_err(|e| format!("{shown}: {e}"))?;
        let v = gguf_validate::validate_source(&src, &Options::default()).map_err(|e| format!("{shown}: {e}"))?;
        let tensors = gguf_validate::validate::layout(&v.metadata, src.len()).tensors;
        Ok((src, tensors))
    };
    let ((bsrc, btensors), (qsrc, qtensors)) = match (open(base), open(quant)) {
        (Ok(b), Ok(q)) => (b, q),
        (Err(e), _) | (_, Err(e)) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let imatrix = match imatrix.map(convert::read_imatrix_file).transpose() {
        Ok(m) => m,
        Err(e) => {
            render::error(&e);
            return EXIT_USAGE;
        }
    };
    let results = gguf_validate::derive::derive(&bsrc, &btensors, &qsrc, &qtensors, imatrix.as_ref());
    let all_identical =
        !results.is_empty() && results.iter().all(|r| matches!(r.verdict, gguf_validate::derive::Verdict::Identical));
    match report_io(render::derive_report(&results, json)) {
        EXIT_VALID if all_identical => EXIT_VALID,
        EXIT_VALID => EXIT_INVALID,
        other => other,
    }
}

/// `dump FILE [--full]`.
pub fn dump(path: &Path, full: bool) -> u8 {
    let shown = render::display_path(path);
    let src = match gio::open(path, &gio::OpenPolicy::default()) {
        Ok(s) => s,
        Err(e) => {
            render::error(&format!("{shown}: {e}"));
            return EXIT_USAGE;
        }
    };
    let file_len = src.len();
    let metadata = match gguf_validate::validate_source(&src, &Options::default()) {
        Ok(v) => v.metadata,
        Err(e) => {
            render::error(&format!("{shown}: {e}"));
            return EXIT_USAGE;
        }
    };
    let Some((mut value, complete)) = gguf_validate::dump::describe(&metadata, file_len, full) else {
        render::error(&format!("{shown}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)"));
        return EXIT_INVALID;
    };
    if let Some(o) = value.as_object_mut() {
        o.insert("path".into(), serde_json::json!(render::json_path(path)));
        o.insert("file_size".into(), serde_json::json!(file_len));
    }
    match report_io(render::json(&value)) {
        EXIT_VALID if !complete => EXIT_INVALID,
        other => other,
    }
}
