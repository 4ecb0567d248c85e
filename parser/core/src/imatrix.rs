//! llama.cpp importance-matrix files, read the way `llama-quantize` reads
//! them, and the per-tensor weights it hands to `ggml_quantize_chunk`.
//!
//! Two formats exist (llama.cpp `common/imatrix-loader.cpp`,
//! `tools/quantize/quantize.cpp`):
//! - **GGUF** (`llama-imatrix` since 2025): for each weight tensor `W`, an F32
//!   tensor `W.in_sum2` of `ne0 × n_mat` sums of squared activations and an
//!   F32 tensor `W.counts` of `n_mat` token counts (one per expert for MoE
//!   tensors), plus the keys `imatrix.datasets`, `imatrix.chunk_count` and
//!   `imatrix.chunk_size`, without which `llama-quantize` refuses the file.
//!   Weights are `in_sum2 / count` per expert slice (count rounded to an
//!   integer as `lround` does), `1` for a slice that saw no token.
//! - **legacy `.dat`**: `i32 n_entries`, then per entry `i32 len`, the
//!   name's `len` bytes (cut at a NUL, as a C string), `i32 ncall`,
//!   `i32 nval`, `nval` f32 values; then optionally `i32` chunk count,
//!   `i32 len` and a dataset name. Weights are `value / ncall` when
//!   `ncall > 0`. ggml tries GGUF first and falls back to this format when
//!   the file is not a GGUF file it accepts.
//!
//! [`Imatrix::lookup`] gives the weights for one tensor as
//! `llama_model_quantize` selects them: by exact name, used only when they
//! hold `ne0 · ne2` values (one row of weights per expert); a size mismatch
//! makes `llama-quantize` fail, except for the token embeddings, which are
//! then quantized without weights.
//!
//! Everything is bounded by the file's bytes: every count is checked
//! against the bytes that remain before anything is sized by it.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt;

use crate::check::imatrix_table::{COUNTS_SUFFIX, SIZE_EXEMPT, SUMS_SUFFIX};
use crate::data::{DataTensor, gguf_tensors};
use crate::io::{ByteSource, ReadError, read_range};
use crate::parse::{self, ByteOrder, Value};
use crate::report::Options;
use crate::types::GgmlType;

/// Which of the two formats a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImatrixFormat {
    /// `llama-imatrix`'s GGUF format (`*.in_sum2` / `*.counts` tensors).
    Gguf,
    /// The legacy `.dat` format.
    Legacy,
}

/// The weights of one tensor: `n_mat` rows of `values.len() / n_mat`.
#[derive(Clone, Debug, PartialEq)]
pub struct ImatrixEntry {
    /// Normalised weights, expert slice after expert slice.
    pub weights: Vec<f32>,
    /// Number of slices (experts; 1 for a dense tensor).
    pub n_mat: u64,
}

/// A whole importance-matrix file.
#[derive(Clone, Debug, PartialEq)]
pub struct Imatrix {
    /// The format it was read as.
    pub format: ImatrixFormat,
    /// Dataset names recorded in the file.
    pub datasets: Vec<String>,
    /// Chunks the matrix was computed on (`imatrix.chunk_count`, or the
    /// legacy trailer; 0 when absent).
    pub chunk_count: i64,
    /// Tokens per chunk (`imatrix.chunk_size`; 0 for legacy files).
    pub chunk_size: i64,
    /// Weights by tensor name.
    pub entries: BTreeMap<String, ImatrixEntry>,
}

/// Why a file cannot be used as an importance matrix.
#[derive(Debug)]
pub enum ImatrixError {
    /// A read failed.
    Read(ReadError),
    /// The file does not have the layout it must have: where and why.
    Malformed {
        /// Absolute byte offset (0 when it concerns the whole file).
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

impl fmt::Display for ImatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read(e) => write!(f, "{e}"),
            Self::Malformed { offset, what } => write!(f, "at byte {offset}: {what}"),
        }
    }
}

impl std::error::Error for ImatrixError {}

impl From<ReadError> for ImatrixError {
    fn from(e: ReadError) -> Self {
        Self::Read(e)
    }
}

fn bad<T>(offset: u64, what: impl Into<String>) -> Result<T, ImatrixError> {
    Err(ImatrixError::Malformed { offset, what: what.into() })
}

/// How [`Imatrix::lookup`] resolved one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup<'a> {
    /// Weights to quantize with: `n_per_row` per expert slice.
    Weights(&'a [f32]),
    /// No entry of that name (or a mis-sized entry for the token
    /// embeddings): `llama-quantize` quantizes without weights.
    Unweighted,
    /// An entry whose size is not `ne0 · ne2`: `llama-quantize` stops with
    /// "imatrix size ... is different from tensor size".
    SizeMismatch {
        /// Values in the entry.
        have: u64,
        /// Values the tensor needs.
        want: u64,
    },
}

impl Imatrix {
    /// Reads a file in either format (GGUF first, as ggml does).
    pub fn read(src: &dyn ByteSource) -> Result<Self, ImatrixError> {
        let head = read_range(src, 0, src.len().min(4))?;
        if head == b"GGUF" { read_gguf(src) } else { read_legacy(src) }
    }

    /// The weights `llama_model_quantize` would use for the tensor `name`
    /// of `n_per_row` columns and `n_expert` expert slices (`ne[2]`, 1 for
    /// a 2-D tensor).
    pub fn lookup(&self, name: &str, n_per_row: u64, n_expert: u64) -> Lookup<'_> {
        let Some(e) = self.entries.get(name) else { return Lookup::Unweighted };
        let have = u64::try_from(e.weights.len()).unwrap_or(u64::MAX);
        let want = n_per_row.saturating_mul(n_expert.max(1));
        if have == want {
            Lookup::Weights(&e.weights)
        } else if SIZE_EXEMPT.contains(&name) {
            Lookup::Unweighted
        } else {
            Lookup::SizeMismatch { have, want }
        }
    }
}

/// Sequential reader over a [`ByteSource`] for the legacy format.
struct Cursor<'s> {
    src: &'s dyn ByteSource,
    at: u64,
}

impl Cursor<'_> {
    fn remaining(&self) -> u64 {
        self.src.len().saturating_sub(self.at)
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, ImatrixError> {
        if n > self.remaining() {
            return bad(self.at, format!("{what}: {n} bytes needed, {} left in the file", self.remaining()));
        }
        let b = read_range(self.src, self.at, n)?;
        self.at = self.at.saturating_add(n);
        Ok(b)
    }

    fn i32(&mut self, what: &str) -> Result<i32, ImatrixError> {
        let b = self.bytes(4, what)?;
        let a: [u8; 4] = b
            .as_slice()
            .try_into()
            .map_err(|_| ImatrixError::Malformed { offset: self.at, what: format!("{what}: short read") })?;
        Ok(i32::from_le_bytes(a))
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).filter_map(|c| <[u8; 4]>::try_from(c).ok()).map(f32::from_le_bytes).collect()
}

fn check_finite(name: &str, weights: &[f32], offset: u64) -> Result<(), ImatrixError> {
    match weights.iter().position(|w| !w.is_finite()) {
        // llama_model_quantize: "imatrix contains non-finite value".
        Some(i) => bad(
            offset,
            format!(
                "weight {i} of `{name}` is {}; llama-quantize refuses non-finite weights",
                weights.get(i).copied().unwrap_or(f32::NAN)
            ),
        ),
        None => Ok(()),
    }
}

fn read_legacy(src: &dyn ByteSource) -> Result<Imatrix, ImatrixError> {
    let mut c = Cursor { src, at: 0 };
    let n_entries = c.i32("entry count")?;
    // Each entry takes at least 16 bytes (len, ncall, nval, one value).
    let n = u64::try_from(n_entries).unwrap_or(0);
    if n == 0 {
        return bad(0, format!("entry count {n_entries}: no data (llama.cpp needs at least one entry)"));
    }
    if n > c.remaining() / 16 {
        return bad(0, format!("entry count {n_entries} needs more bytes than the {} left", c.remaining()));
    }
    let mut entries = BTreeMap::new();
    for i in 0..n {
        let at = c.at;
        let len = c.i32("name length")?;
        let Ok(len) = u64::try_from(len) else {
            return bad(at, format!("entry {i}: negative name length {len}"));
        };
        let raw = c.bytes(len, "name")?;
        // A C string: the name ends at the first NUL.
        let name_bytes = raw.split(|b| *b == 0).next().unwrap_or(&[]);
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        let ncall = c.i32("call count")?;
        let at_nval = c.at;
        let nval = c.i32("value count")?;
        let Some(nval) = u64::try_from(nval).ok().filter(|v| *v >= 1) else {
            return bad(at_nval, format!("entry {i} `{name}`: value count {nval} (must be at least 1)"));
        };
        let at_values = c.at;
        let values = f32s(&c.bytes(nval.saturating_mul(4), "values")?);
        // The file stores mean-square activations times ncall.
        let weights: Vec<f32> = if ncall > 0 {
            #[allow(clippy::cast_precision_loss)] // as C converts the divisor: int64 to float
            let d = i64::from(ncall) as f32;
            values.iter().map(|v| v / d).collect()
        } else {
            values
        };
        check_finite(&name, &weights, at_values)?;
        // A later entry of the same name replaces an earlier one (a map).
        entries.insert(name, ImatrixEntry { weights, n_mat: 1 });
    }
    let mut chunk_count = 0;
    let mut datasets = Vec::new();
    // The trailer is optional and read leniently, as llama.cpp does.
    if c.remaining() >= 4 {
        chunk_count = i64::from(c.i32("chunk count")?);
        if c.remaining() >= 4 {
            let len = c.i32("dataset name length")?;
            if let Ok(len) = u64::try_from(len)
                && len > 0
                && len <= c.remaining()
            {
                let raw = c.bytes(len, "dataset name")?;
                let name = raw.split(|b| *b == 0).next().unwrap_or(&[]);
                datasets.push(String::from_utf8_lossy(name).into_owned());
            }
        }
    }
    Ok(Imatrix { format: ImatrixFormat::Legacy, datasets, chunk_count, chunk_size: 0, entries })
}

fn read_gguf(src: &dyn ByteSource) -> Result<Imatrix, ImatrixError> {
    // From the validation's own parse (also when decoding stopped: it says
    // where).
    let opts = Options { container_only: true, ..Options::default() };
    let validated = crate::Validator::new(opts).validate(src)?;
    let Some(parsed) = validated.parsed() else {
        return bad(0, "not a GGUF v2/v3 file ggml can read (run `gguf-validate` on it for details)");
    };
    if let Some(fatal) = &parsed.fatal {
        return bad(fatal.offset, format!("the GGUF file cannot be decoded ({})", fatal.path));
    }
    from_parsed(&parsed, src)
}

/// The importance matrix of a parsed GGUF file whose data `src` holds.
fn from_parsed(parsed: &parse::Parsed<'_>, src: &dyn ByteSource) -> Result<Imatrix, ImatrixError> {
    let file = &parsed.file;
    let key = |k: &str| file.get(k);
    // llama-quantize: "missing imatrix metadata".
    for k in ["imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"] {
        if key(k).is_none() {
            return bad(0, format!("missing imatrix metadata `{k}` (llama-quantize refuses the file)"));
        }
    }
    let mut datasets = Vec::new();
    if let Some(Value::Array(a)) = key("imatrix.datasets").map(|kv| kv.value) {
        datasets.extend(a.strings().map(|(_, s)| String::from_utf8_lossy(s.bytes).into_owned()));
    }
    // ggml's gguf_get_val_u32 asserts the type: anything else aborts.
    let u32_of = |k: &str| -> Result<i64, ImatrixError> {
        match key(k) {
            Some(kv) => match kv.value {
                Value::U32(v) => Ok(i64::from(v)),
                _ => bad(
                    kv.value_offset(),
                    format!("`{k}` is {}, not u32 (llama.cpp aborts)", parse::type_label(&kv.value)),
                ),
            },
            None => Ok(0),
        }
    };
    let chunk_count = u32_of("imatrix.chunk_count")?;
    let chunk_size = u32_of("imatrix.chunk_size")?;

    let tensors = gguf_tensors(parsed, src.len());
    if tensors.is_empty() {
        return bad(0, "no tensors: no data in the file");
    }
    let mut pairs: BTreeMap<&str, (Option<&DataTensor>, Option<&DataTensor>)> = BTreeMap::new();
    for t in &tensors {
        if let Some(base) = t.name.strip_suffix(SUMS_SUFFIX) {
            pairs.entry(base).or_default().0 = Some(t);
        } else if let Some(base) = t.name.strip_suffix(COUNTS_SUFFIX) {
            pairs.entry(base).or_default().1 = Some(t);
        }
    }
    let mut entries = BTreeMap::new();
    for (name, pair) in pairs {
        let (Some(sums), Some(counts)) = pair else {
            return bad(0, format!("`{name}` has sums without counts or counts without sums"));
        };
        for t in [sums, counts] {
            if t.ty != GgmlType::F32 || t.order != ByteOrder::LittleEndian {
                return bad(t.offset, format!("`{}` must be little-endian F32, not {}", t.name, t.ty.name()));
            }
        }
        let sums_v = f32s(&read_range(src, sums.offset, sums.nbytes)?);
        let counts_v = f32s(&read_range(src, counts.offset, counts.nbytes)?);
        let n_mat = counts_v.len();
        if n_mat == 0 {
            return bad(counts.offset, format!("`{name}.counts` is empty"));
        }
        let ne0 = sums_v.len() / n_mat;
        // Values past n_mat · ne0 stay 0, as in llama-quantize's buffer.
        let mut weights = vec![0f32; sums_v.len()];
        for (j, count) in counts_v.iter().enumerate() {
            // std::lround, then back to float.
            let rounded = count.round();
            if !rounded.is_finite() || rounded.abs() >= 9.2e18 {
                return bad(counts.offset, format!("`{name}.counts` holds {count}, not a token count"));
            }
            #[allow(clippy::cast_possible_truncation)] // checked to be in i64's range just above
            let count = rounded as i64;
            #[allow(clippy::cast_precision_loss)] // (float) int64, as llama-quantize converts
            let count = count as f32;
            let start = j.saturating_mul(ne0);
            let (Some(out), Some(sum)) =
                (weights.get_mut(start..start.saturating_add(ne0)), sums_v.get(start..start.saturating_add(ne0)))
            else {
                continue;
            };
            for (w, s) in out.iter_mut().zip(sum) {
                *w = if count > 0.0 { s / count } else { 1.0 };
            }
        }
        check_finite(name, &weights, sums.offset)?;
        let n_mat = u64::try_from(n_mat).unwrap_or(u64::MAX);
        entries.insert(name.to_string(), ImatrixEntry { weights, n_mat });
    }
    if entries.is_empty() {
        return bad(0, "no `*.in_sum2` / `*.counts` tensor pairs");
    }
    Ok(Imatrix { format: ImatrixFormat::Gguf, datasets, chunk_count, chunk_size, entries })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemSource;

    fn legacy(entries: &[(&[u8], i32, &[f32])], trailer: Option<(i32, &[u8])>) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&i32::try_from(entries.len()).unwrap().to_le_bytes());
        for (name, ncall, values) in entries {
            b.extend_from_slice(&i32::try_from(name.len()).unwrap().to_le_bytes());
            b.extend_from_slice(name);
            b.extend_from_slice(&ncall.to_le_bytes());
            b.extend_from_slice(&i32::try_from(values.len()).unwrap().to_le_bytes());
            for v in *values {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        if let Some((chunks, dataset)) = trailer {
            b.extend_from_slice(&chunks.to_le_bytes());
            b.extend_from_slice(&i32::try_from(dataset.len()).unwrap().to_le_bytes());
            b.extend_from_slice(dataset);
        }
        b
    }

    fn read(bytes: Vec<u8>) -> Result<Imatrix, ImatrixError> {
        Imatrix::read(&MemSource(bytes))
    }

    #[test]
    fn legacy_values_are_divided_by_ncall() {
        let m = read(legacy(
            &[(b"blk.0.ffn_up.weight", 4, &[2.0, 6.0, 1.0]), (b"a\0hidden", 0, &[3.0])],
            Some((7, b"wiki.txt")),
        ))
        .unwrap();
        assert_eq!(m.format, ImatrixFormat::Legacy);
        assert_eq!(m.entries["blk.0.ffn_up.weight"].weights, [0.5, 1.5, 0.25]);
        // ncall 0: values as stored; the name is cut at its NUL.
        assert_eq!(m.entries["a"].weights, [3.0]);
        assert_eq!((m.chunk_count, m.datasets.as_slice()), (7, ["wiki.txt".to_string()].as_slice()));
    }

    #[test]
    fn legacy_counts_are_bounded_by_the_bytes() {
        // 2^31-1 entries declared in 20 bytes: refused before any loop.
        let mut b = legacy(&[(b"x", 1, &[1.0])], None);
        b.splice(0..4, i32::MAX.to_le_bytes());
        assert!(matches!(read(b), Err(ImatrixError::Malformed { offset: 0, .. })));
        // A value count past the end of the file.
        let mut b = legacy(&[(b"x", 1, &[1.0])], None);
        b.splice(13..17, 1_000_000_000i32.to_le_bytes());
        let e = read(b).unwrap_err().to_string();
        assert!(e.contains("4000000000 bytes needed"), "{e}");
        // Negative lengths and counts.
        let mut b = legacy(&[(b"x", 1, &[1.0])], None);
        b.splice(4..8, (-1i32).to_le_bytes());
        assert!(read(b).unwrap_err().to_string().contains("negative name length"));
        assert!(read(legacy(&[], None)).is_err());
        assert!(read(Vec::new()).is_err());
    }

    #[test]
    fn non_finite_weights_are_refused() {
        let e = read(legacy(&[(b"w", 1, &[1.0, f32::INFINITY])], None)).unwrap_err().to_string();
        assert!(e.contains("weight 1 of `w` is inf"), "{e}");
    }

    /// A GGUF imatrix as `llama-imatrix` writes it: `in_sum2` of ne0 × n_mat,
    /// `counts` of n_mat.
    pub(crate) fn gguf(entries: &[(&str, &[f32], &[f32])], with_metadata: bool) -> Vec<u8> {
        use crate::types::ValueType;
        use crate::write::{GgufModel, OwnedTensor, OwnedValue};
        let mut m = GgufModel::new();
        m.kv("general.type", OwnedValue::str("imatrix"));
        if with_metadata {
            m.kv("imatrix.datasets", OwnedValue::Array(ValueType::String, vec![OwnedValue::str("calib.txt")]));
            m.kv("imatrix.chunk_count", OwnedValue::U32(12));
            m.kv("imatrix.chunk_size", OwnedValue::U32(512));
        }
        for (name, sums, counts) in entries {
            let ne0 = u64::try_from(sums.len() / counts.len()).unwrap();
            let n_mat = u64::try_from(counts.len()).unwrap();
            let data = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
            m.tensor(OwnedTensor {
                name: format!("{name}.in_sum2").into_bytes(),
                dims: vec![ne0, n_mat],
                type_id: 0,
                offset: 0,
                data: data(sums),
            });
            m.tensor(OwnedTensor {
                name: format!("{name}.counts").into_bytes(),
                dims: vec![1, n_mat],
                type_id: 0,
                offset: 0,
                data: data(counts),
            });
        }
        m.canonical().unwrap();
        m.to_bytes()
    }

    #[test]
    fn gguf_sums_are_divided_by_rounded_counts_per_expert() {
        let m = read(gguf(
            &[
                ("blk.0.ffn_up_exps.weight", &[4.0, 8.0, 5.0, 5.0, 9.0, 9.0], &[3.6, 0.0, 2.0]),
                ("w", &[1.0, 3.0], &[2.0]),
            ],
            true,
        ))
        .unwrap();
        assert_eq!(m.format, ImatrixFormat::Gguf);
        assert_eq!(
            (m.chunk_count, m.chunk_size, m.datasets.as_slice()),
            (12, 512, ["calib.txt".to_string()].as_slice())
        );
        let e = &m.entries["blk.0.ffn_up_exps.weight"];
        // 3.6 rounds to 4; an expert that saw no token weighs 1.
        assert_eq!((e.n_mat, e.weights.as_slice()), (3, [1.0, 2.0, 1.0, 1.0, 4.5, 4.5].as_slice()));
        assert_eq!(m.entries["w"].weights, [0.5, 1.5]);
        assert!(matches!(m.lookup("blk.0.ffn_up_exps.weight", 2, 3), Lookup::Weights(_)));
    }

    #[test]
    fn gguf_without_metadata_or_counts_is_refused() {
        let e = read(gguf(&[("w", &[1.0], &[1.0])], false)).unwrap_err().to_string();
        assert!(e.contains("missing imatrix metadata"), "{e}");
        let e = read(gguf(&[("w", &[f32::NAN], &[1.0])], true)).unwrap_err().to_string();
        assert!(e.contains("is NaN"), "{e}");
        let e = read(gguf(&[("w", &[1.0], &[f32::INFINITY])], true)).unwrap_err().to_string();
        assert!(e.contains("not a token count"), "{e}");
    }

    #[test]
    fn lookup_follows_llama_quantize() {
        let m =
            read(legacy(&[(b"w", 1, &[1.0; 8]), (b"token_embd.weight", 1, &[1.0; 3]), (b"moe", 2, &[2.0; 12])], None))
                .unwrap();
        assert!(matches!(m.lookup("w", 8, 1), Lookup::Weights(w) if w.len() == 8));
        assert_eq!(m.lookup("w", 4, 1), Lookup::SizeMismatch { have: 8, want: 4 });
        assert_eq!(m.lookup("token_embd.weight", 4, 1), Lookup::Unweighted);
        assert_eq!(m.lookup("absent", 4, 1), Lookup::Unweighted);
        // Three experts of four columns: one slice of weights per expert.
        assert!(matches!(m.lookup("moe", 4, 3), Lookup::Weights(w) if w == [1.0; 12]));
    }
}
