//! Fuzzing of third-party GGUF writers and quantizers: the `gguf-validate-harness` crate.
//!
//! A writer under test is a command that reads a *model description* (the
//! versioned JSON format of [`model_json`]) and writes a GGUF file. A
//! campaign ([`writer::run_campaign`]) generates descriptions with
//! [`smith`](gguf_validate_core::smith) within what the writer claims to support
//! ([`caps::Capabilities`]), runs the writer on each under a timeout
//! ([`process`]), validates what it wrote under a profile and reads it back
//! field by field against what was asked ([`compare`]). Mismatches are
//! grouped by kind (what differs: field class × value or tensor type ×
//! kind of mismatch, or the rule broken); the first case of each kind is
//! shrunk by delta debugging ([`shrink`]) to the smallest description that
//! still shows it, and written as a reproducer.
//!
//! [`quant`] does the same for quantizers: f32 rows in, blocks out,
//! compared with the reference quantizer of `gguf-numerics`.
//!
//! Each campaign renders its own report as text
//! ([`writer::campaign_text`], [`quant::quant_text`]) from the pieces
//! they share in [`campaign_report`]; the CLI's `fuzz-writer`, `fuzz-quantizer` and
//! `write-model` are thin front ends over this module.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod campaign_report;
pub mod caps;
pub mod compare;
pub mod model_json;
pub mod process;
pub mod quant;
pub mod shrink;
pub mod writer;

/// A kind of finding: what differs, grouped so that one bug met in many
/// cases is reported once.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Kind {
    /// Field class: `header`, `kv`, `kv-array`, `tensor-info`,
    /// `tensor-data`, `layout`, `rule`, `writer`, or for quantizers `blocks`.
    pub class: String,
    /// The value type, ggml type or rule id the finding is about.
    pub ty: String,
    /// The kind of mismatch (`off by one`, `missing`, `NaN payload changed`, ...).
    pub what: String,
}

impl Kind {
    /// A kind from its three parts.
    pub fn new(class: &str, ty: impl Into<String>, what: impl Into<String>) -> Kind {
        Kind { class: class.to_string(), ty: ty.into(), what: what.into() }
    }

    /// The group a kind is reported in: for value and tensor fields
    /// (`kv`, `kv-array`, `tensor-info`, `tensor-data`) the class and the
    /// kind of mismatch, whatever the type (`ty` becomes `*`: one bug that
    /// drops trailing dims does so for every tensor type); anything else
    /// (rules, headers, layout, writer failures) stays as it is.
    pub fn family(&self) -> Kind {
        match self.class.as_str() {
            "kv" | "kv-array" | "tensor-info" | "tensor-data" => {
                Kind { class: self.class.clone(), ty: "*".into(), what: self.what.clone() }
            }
            _ => self.clone(),
        }
    }

    /// A file-name-safe slug (`kv-u32-off-by-one`).
    pub fn slug(&self) -> String {
        let raw = if self.ty == "*" {
            format!("{}-{}", self.class, self.what)
        } else {
            format!("{}-{}-{}", self.class, self.ty, self.what)
        };
        let mut out = String::new();
        for c in raw.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        let trimmed: String = out.trim_matches('-').chars().take(80).collect();
        trimmed.trim_end_matches('-').to_string()
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.class, self.ty, self.what)
    }
}

/// One difference between what was asked and what was written.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Mismatch {
    /// Its kind.
    pub kind: Kind,
    /// Where: `kv[3] custom.x[2]`, `tensor[0] blk.0.w/dims`, a rule's path.
    pub path: String,
    /// What was asked.
    pub expected: String,
    /// What the writer wrote.
    pub got: String,
    /// Absolute offset in the written file, when known.
    pub offset: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        let k = Kind::new("kv", "u32", "off by one");
        assert_eq!(k.slug(), "kv-u32-off-by-one");
        assert_eq!(Kind::new("writer", "exit", "failed: KeyError: 'x'").slug(), "writer-exit-failed-keyerror-x");
        assert_eq!(k.to_string(), "kv u32: off by one");
        assert_eq!(k.family().slug(), "kv-off-by-one");
        assert_eq!(Kind::new("rule", "tensor-offset-misaligned", "error").family().ty, "tensor-offset-misaligned");
    }
}
