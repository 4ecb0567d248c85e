//! `dequant`, `quantize` and `dump --tensor`: raw little-endian buffers in
//! and out, through the library's numerics. Nothing here prints: messages
//! and JSON go through `render`.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use gguf_validate_core::io as gio;
use gguf_validate_core::numerics::{self, NumericsError};
use gguf_validate_core::parse;
use gguf_validate_core::pipeline::Input;
use gguf_validate_core::pipeline::commands::{self, CopyError, TensorError};
use gguf_validate_core::types::GgmlType;

use crate::render;
use crate::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID};

fn all_names(filter: impl Fn(GgmlType) -> bool) -> String {
    GgmlType::ALL.iter().copied().filter(|t| filter(*t)).map(GgmlType::name).collect::<Vec<_>>().join(", ")
}

fn parse_type(name: &str) -> Result<GgmlType, String> {
    GgmlType::from_name(name).ok_or_else(|| format!("unknown type `{name}`; valid types: {}", all_names(|_| true)))
}

fn read_input(path: &Path) -> io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

fn usage(msg: &str) -> u8 {
    render::error(msg);
    EXIT_USAGE
}

/// Exit status for a failed write: a closed pipe is not worth a message.
fn write_failed(e: &io::Error, path: &Path) -> u8 {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return EXIT_VALID;
    }
    usage(&format!("writing {}: {e}", path.display()))
}

/// `gguf-validate dequant --type T --input BLOCKS --output F32`.
pub fn dequant(ty: &str, input: &Path, output: &Path) -> u8 {
    let ty = match parse_type(ty) {
        Ok(t) => t,
        Err(e) => return usage(&e),
    };
    let src = match read_input(input) {
        Ok(b) => b,
        Err(e) => return usage(&format!("{}: {e}", input.display())),
    };
    if numerics::element_count(ty, src.len()).is_none() {
        let e = NumericsError::PartialBlock { ty, len: src.len(), type_size: ty.type_size() as usize };
        return usage(&format!("{}: {e}", input.display()));
    }
    let mut out = match render::output(output) {
        Ok(o) => o,
        Err(e) => return usage(&format!("{}: {e}", output.display())),
    };
    match commands::write_dequantized(ty, &src, &mut out) {
        Ok(_) => EXIT_VALID,
        Err(e) => write_failed(&e, output),
    }
}

/// The optional arguments of `quantize`.
pub struct QuantizeOpts {
    /// `--row-length N`.
    pub row_length: Option<usize>,
    /// `--imatrix WEIGHTS`.
    pub imatrix: Option<PathBuf>,
    /// `--imatrix-tensor NAME`: `imatrix` is a llama.cpp imatrix file.
    pub imatrix_tensor: Option<String>,
    /// `--reference chunk|row`.
    pub reference: String,
}

fn read_f32s(path: &Path) -> Result<Vec<f32>, String> {
    let raw = read_input(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if raw.len() % 4 != 0 {
        return Err(format!("{}: {} bytes is not a whole number of f32 values", path.display(), raw.len()));
    }
    Ok(raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Reads a llama.cpp importance-matrix file (GGUF or legacy `.dat`).
pub fn read_imatrix_file(path: &Path) -> Result<gguf_validate_core::imatrix::Imatrix, String> {
    let shown = render::display_path(path);
    let input = Input::Path(path.to_path_buf());
    let opened = input.open(&gio::OpenPolicy::default(), None, None).map_err(|e| format!("{shown}: {}", e.message))?;
    gguf_validate_core::imatrix::Imatrix::read(opened.source())
        .map_err(|e| format!("{shown}: not an importance matrix llama-quantize accepts: {e}"))
}

/// The weights of `name` in an imatrix file, and its number of expert slices.
fn imatrix_entry(path: &Path, name: &str) -> Result<(Vec<f32>, usize), String> {
    let mut m = read_imatrix_file(path)?;
    let Some(e) = m.entries.remove(name) else {
        let some: Vec<&str> = m.entries.keys().take(5).map(String::as_str).collect();
        return Err(format!(
            "{}: no entry `{}` (it has {} entries, e.g. {})",
            render::display_path(path),
            parse::quote_bytes(name.as_bytes()),
            m.entries.len(),
            some.join(", ")
        ));
    };
    Ok((e.weights, usize::try_from(e.n_mat).unwrap_or(usize::MAX)))
}

/// What the CLI says when `numerics::quantize_tensor` refuses: the
/// library's message, with the option to change where there is one.
fn quantize_refusal(e: &NumericsError, input: &Path, q: &numerics::QuantizeOptions<'_>) -> String {
    match e {
        NumericsError::Unsupported { ty, .. } if !numerics::has_quantizer(*ty) => {
            format!("{e}; types with one: {}", all_names(numerics::has_quantizer))
        }
        NumericsError::ImatrixRequired { ty } => format!(
            "{ty} needs an importance matrix (--imatrix): ggml quantizes it only with one (ggml_quantize_requires_imatrix)"
        ),
        NumericsError::Unsupported { .. } if q.imatrix.is_some() && q.reference == numerics::Reference::Row => {
            "--imatrix needs --reference chunk (ggml's row references take no importance matrix)".to_string()
        }
        _ => format!("{}: {e}", input.display()),
    }
}

/// `gguf-validate quantize --type T --input F32 --output BLOCKS [--row-length N]
/// [--imatrix WEIGHTS [--imatrix-tensor NAME]] [--reference chunk|row]`: the
/// arguments read into `numerics::quantize_tensor`, which decides everything else.
pub fn quantize(ty: &str, input: &Path, output: &Path, opts: &QuantizeOpts) -> u8 {
    let ty = match parse_type(ty) {
        Ok(t) => t,
        Err(e) => return usage(&e),
    };
    let Some(reference) = numerics::Reference::from_name(&opts.reference) else {
        return usage(&format!("--reference {}: expected `chunk` or `row`", opts.reference));
    };
    let values = match read_f32s(input) {
        Ok(v) => v,
        Err(e) => return usage(&e),
    };
    let (imatrix, experts) = match (opts.imatrix.as_deref(), opts.imatrix_tensor.as_deref()) {
        (Some(path), Some(name)) => match imatrix_entry(path, name) {
            Ok((w, n_mat)) => (Some(w), n_mat),
            Err(e) => return usage(&e),
        },
        (path, _) => match path.map(read_f32s).transpose() {
            Ok(w) => (w, 1),
            Err(e) => return usage(&e),
        },
    };
    let q = numerics::QuantizeOptions { reference, n_per_row: opts.row_length, imatrix: imatrix.as_deref(), experts };
    let mut blocks = Vec::new();
    if let Err(e) = numerics::quantize_tensor(ty, &values, &q, &mut blocks) {
        return usage(&quantize_refusal(&e, input, &q));
    }
    let written = render::output(output).and_then(|mut out| {
        out.write_all(&blocks)?;
        out.flush()
    });
    match written {
        Ok(()) => EXIT_VALID,
        Err(e) => write_failed(&e, output),
    }
}

/// `gguf-validate dump FILE --tensor NAME [--dequant] --output PATH`: the
/// tensor's bytes as stored, or decoded to f32, read and written in steps
/// (a tensor of any size costs a few MB). Exit 1 when the file has no
/// readable tensor of that name or its data cannot be decoded; exit 2 when
/// it cannot be read (or `timeout` passed).
pub fn dump_tensor(path: &Path, name: &str, dequant: bool, output: &Path, timeout: Option<Duration>) -> u8 {
    let input = Input::Path(path.to_path_buf());
    let data = match commands::tensor_data(&input, name, dequant, None, timeout) {
        Ok(d) => d,
        Err(TensorError::Unreadable(e)) => return usage(&e),
        Err(TensorError::Invalid(e)) => {
            render::error(&e);
            return EXIT_INVALID;
        }
    };
    let t = &data.tensor;
    let mut out = match render::output(output) {
        Ok(o) => o,
        Err(e) => return usage(&format!("{}: {e}", render::display_path(output))),
    };
    let written = data.write(dequant, &mut out);
    drop(out);
    let written = match written {
        Ok(n) => n,
        Err(CopyError::Read(e)) => return usage(&e),
        Err(CopyError::Write(e)) => return write_failed(&e, output),
    };
    if output.as_os_str() == "-" {
        return EXIT_VALID;
    }
    let summary = serde_json::json!({
        "path": render::json_path(path),
        "tensor": t.name,
        "type": t.ty.name(),
        "dims": t.dims,
        "offset": t.offset,
        "n_bytes": t.nbytes,
        "output": render::json_path(output),
        "output_format": if dequant { "f32-le" } else { "raw" },
        "bytes_written": written,
    });
    crate::report_io(render::json(&summary))
}
