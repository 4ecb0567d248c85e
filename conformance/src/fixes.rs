//! Fix cases: the tiny llama ([`crate::build::tiny_llama`], which every
//! llama.cpp release of `conformance/releases.json` loads) broken one way
//! at a time so that `gguf-validate fix` has something to fix, one case per
//! fix of the catalogue ([`gguf_validate_core::rules::FIXES`]), and cases
//! at a fix's boundary (a finding the fix cannot make, an unsafe fix held
//! back).
//!
//! `gguf-conformance generate` writes each case to
//! `corpus/fixes/<slug>.gguf`, its fixed file (made by
//! [`gguf_validate_core::fix::fix_bytes`] under `strict`, with `--unsafe` for
//! an unsafe fix) to `corpus/fixes/<slug>.fixed.gguf`, and
//! `corpus/fixes/manifest.json` (each case's fixes, and the strict findings
//! before and after). `tests/fixes.rs` holds the fixed files to what the
//! fix makes and to the catalogue; CI loads every fixed file with each
//! release's llama.cpp (`conformance/tools/llama-releases/prove.py`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gguf_validate_core::fix::fix_bytes;
use gguf_validate_core::rules::{FixKind, Profile};
use gguf_validate_core::write::GgufModel;
use gguf_validate_core::{Options, Validator};
use serde::{Deserialize, Serialize};

use crate::build::{V, drop_kv, set_kv, tiny_llama};
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::OwnedTensor;

/// One fix case.
#[derive(Debug)]
pub struct FixCase {
    /// File name without `.gguf`.
    pub slug: &'static str,
    /// The rule whose fix it exercises.
    pub rule: &'static str,
    /// The fix's kind; None: a boundary case the fix does not fix.
    pub kind: Option<FixKind>,
    /// What is broken.
    pub description: &'static str,
    /// The broken file.
    pub build: fn() -> Vec<u8>,
}

/// A case's manifest entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixEntry {
    /// The rule.
    pub rule: String,
    /// `safe`, `unsafe`, or absent for a boundary case.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kind: Option<String>,
    /// What is broken.
    pub description: String,
    /// The broken file (relative to `corpus/fixes`).
    pub file: String,
    /// The fixed file, when the fix is made.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fixed: Option<String>,
    /// `rule (kind): path: before -> after` for each planned fix.
    pub fixes: Vec<String>,
    /// Strict's errors and warnings before the fix (rule ids).
    pub before: Vec<String>,
    /// ... and after it.
    pub after: Vec<String>,
}

/// `corpus/fixes`.
pub fn fixes_dir() -> PathBuf {
    crate::workspace_root().join("corpus").join("fixes")
}

/// The tiny llama, edited, laid out canonically, as bytes.
fn tiny_bytes(edit: impl FnOnce(&mut GgufModel)) -> Vec<u8> {
    let mut m = tiny_llama();
    edit(&mut m);
    m.canonical();
    m.to_bytes()
}

/// An alignment the tiny llama's last tensor does not fill, so that it has
/// final padding to lose.
fn odd_alignment(m: &GgufModel) -> u32 {
    let last = m.tensors.last().map_or(0, |t| t.data.len() as u64);
    [64u32, 128, 256, 512, 1024, 2048, 4096].into_iter().find(|a| last % u64::from(*a) != 0).unwrap_or(64)
}

/// The cases.
pub fn cases() -> Vec<FixCase> {
    vec![
        FixCase {
            slug: "key_duplicate_equal",
            rule: "key-duplicate",
            kind: Some(FixKind::Safe),
            description: "general.name written twice with the same value (ggml refuses the file).",
            build: || {
                tiny_bytes(|m| {
                    m.kv("general.name", V::str("tiny"));
                    m.kv("general.name", V::str("tiny"));
                })
            },
        },
        FixCase {
            slug: "key_duplicate_differs",
            rule: "key-duplicate",
            kind: Some(FixKind::Unsafe),
            description: "general.name written twice with different values (readers disagree on which wins).",
            build: || {
                tiny_bytes(|m| {
                    m.kv("general.name", V::str("tiny"));
                    m.kv("general.name", V::str("other"));
                })
            },
        },
        FixCase {
            slug: "standard_key_type_u64",
            rule: "standard-key-type",
            kind: Some(FixKind::Safe),
            description: "llama.context_length as a u64 (llama.cpp reads a u32 and refuses the file).",
            build: || tiny_bytes(|m| set_kv(m, "llama.context_length", V::U64(64))),
        },
        FixCase {
            slug: "standard_key_type_f32_integral",
            rule: "standard-key-type",
            kind: Some(FixKind::Safe),
            description: "llama.block_count as the f32 2.0: the same number as a u32.",
            build: || tiny_bytes(|m| set_kv(m, "llama.block_count", V::F32(2.0))),
        },
        FixCase {
            slug: "standard_key_type_f32_fraction",
            rule: "standard-key-type",
            kind: None,
            description: "llama.block_count as the f32 2.5: no u32 holds it, so there is no fix (the boundary).",
            build: || tiny_bytes(|m| set_kv(m, "llama.block_count", V::F32(2.5))),
        },
        FixCase {
            slug: "metadata_key_type_u64",
            rule: "metadata-key-type",
            kind: Some(FixKind::Safe),
            description: "general.base_model.count as a u64 instead of the spec's u32.",
            build: || {
                tiny_bytes(|m| {
                    m.kv("general.base_model.count", V::U64(0));
                })
            },
        },
        FixCase {
            slug: "quantization_version_u64",
            rule: "quantization-version-type",
            kind: Some(FixKind::Safe),
            description: "general.quantization_version as a u64.",
            build: || tiny_bytes(|m| set_kv(m, "general.quantization_version", V::U64(2))),
        },
        FixCase {
            slug: "quantization_version_missing",
            rule: "quantization-version-missing",
            kind: Some(FixKind::Safe),
            description: "a Q8_0 tensor (blk.0.ffn_down.weight) and no general.quantization_version.",
            build: || {
                tiny_bytes(|m| {
                    drop_kv(m, "general.quantization_version");
                    if let Some(t) = m.tensors.iter_mut().find(|t| t.name == b"blk.0.ffn_down.weight")
                        && let Some(q) = OwnedTensor::zeroed("blk.0.ffn_down.weight", &t.dims, GgmlType::Q8_0)
                    {
                        *t = q;
                    }
                })
            },
        },
        FixCase {
            slug: "token_id_out_of_range",
            rule: "token-id-range",
            kind: Some(FixKind::Unsafe),
            description: "tokenizer.ggml.eos_token_id past the vocabulary (llama.cpp ignores it and uses its default).",
            build: || tiny_bytes(|m| set_kv(m, "tokenizer.ggml.eos_token_id", V::U32(1_000_000))),
        },
        FixCase {
            slug: "template_hidden_text",
            rule: "template-hidden-text",
            kind: Some(FixKind::Unsafe),
            description: "a chat template with a zero-width space and a right-to-left override in it.",
            build: || {
                tiny_bytes(|m| {
                    set_kv(
                        m,
                        "tokenizer.chat_template",
                        V::str(
                            "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\u{200b}\u{202e}\n{% endfor %}",
                        ),
                    )
                })
            },
        },
        FixCase {
            slug: "tensor_offset_misaligned",
            rule: "tensor-offset-misaligned",
            kind: Some(FixKind::Safe),
            description: "the last tensor's data 4 bytes past an aligned offset.",
            build: || {
                let mut m = tiny_llama();
                m.canonical();
                if let Some(t) = m.tensors.last_mut() {
                    t.offset += 4;
                }
                m.to_bytes()
            },
        },
        FixCase {
            slug: "tensor_data_gap",
            rule: "tensor-data-gap",
            kind: Some(FixKind::Safe),
            description: "a 32-byte zero gap before the last tensor's data.",
            build: || {
                let mut m = tiny_llama();
                m.canonical();
                if let Some(t) = m.tensors.last_mut() {
                    t.offset += 32;
                }
                m.to_bytes()
            },
        },
        FixCase {
            slug: "tensor_data_order",
            rule: "tensor-data-order",
            kind: Some(FixKind::Safe),
            description: "two tensors of the same size with their data swapped (and their offsets with it).",
            build: || {
                let mut m = tiny_llama();
                m.canonical();
                let n = m.tensors.len();
                let pair = (0..n).find_map(|i| {
                    (i + 1..n).find(|j| m.tensors[*j].data.len() == m.tensors[i].data.len()).map(|j| (i, j))
                });
                if let Some((i, j)) = pair {
                    let (a, b) = (m.tensors[i].offset, m.tensors[j].offset);
                    m.tensors[i].offset = b;
                    m.tensors[j].offset = a;
                }
                m.to_bytes()
            },
        },
        FixCase {
            slug: "padding_nonzero",
            rule: "padding-nonzero",
            kind: Some(FixKind::Safe),
            description: "0xAA bytes in the padding between the tensor infos and the data.",
            build: || {
                // A name of the length that leaves padding before the data.
                let mut bytes = tiny_bytes(|m| {
                    m.kv("general.name", V::str("tiny"));
                });
                let parsed = gguf_validate_core::parse::parse_bytes(&bytes).map(|p| {
                    let f = &p.file;
                    (f.infos_end, f.data_start().unwrap_or(f.infos_end))
                });
                if let Some((from, to)) = parsed {
                    for b in bytes.iter_mut().take(to as usize).skip(from as usize) {
                        *b = 0xAA;
                    }
                }
                bytes
            },
        },
        FixCase {
            slug: "padding_final_missing",
            rule: "padding-final-missing",
            kind: Some(FixKind::Safe),
            description: "general.alignment larger than the last tensor, whose padding is missing.",
            build: || {
                let mut m = tiny_llama();
                let align = odd_alignment(&m);
                m.kv("general.alignment", V::U32(align));
                m.canonical();
                m.pad_end = false;
                m.to_bytes()
            },
        },
        FixCase {
            slug: "trailing_bytes",
            rule: "trailing-bytes",
            kind: Some(FixKind::Safe),
            description: "18 bytes after the data.",
            build: || {
                let mut m = tiny_llama();
                m.canonical();
                m.trailing = b"appended by a tool".to_vec();
                m.to_bytes()
            },
        },
    ]
}

/// The validator fix cases are judged by.
fn strict() -> Validator {
    Validator::new(Options::new(Profile::Strict))
}

/// Files by name, and the manifest's entries by case.
type Rendered = (Vec<(String, Vec<u8>)>, BTreeMap<String, FixEntry>);

/// Every file `generate` writes to `corpus/fixes` and the manifest.
pub fn render_fixes() -> Result<Rendered, String> {
    let mut files = Vec::new();
    let mut manifest = BTreeMap::new();
    for c in cases() {
        let broken = (c.build)();
        let fixed = fix_bytes(&broken, &strict(), c.kind == Some(FixKind::Unsafe))
            .map_err(|e| format!("{}: fix: {e}", c.slug))?;
        let findings = |r: &gguf_validate_core::Report| -> Vec<String> {
            r.diagnostics
                .iter()
                .filter(|d| d.severity >= gguf_validate_core::Level::Warning)
                .map(|d| d.rule.id().to_string())
                .collect()
        };
        let file = format!("{}.gguf", c.slug);
        let fixed_name = c.kind.map(|_| format!("{}.fixed.gguf", c.slug));
        manifest.insert(
            c.slug.to_string(),
            FixEntry {
                rule: c.rule.to_string(),
                kind: c.kind.map(|k| k.name().to_string()),
                description: c.description.to_string(),
                file: file.clone(),
                fixed: fixed_name.clone(),
                fixes: fixed
                    .fixes
                    .iter()
                    .map(|f| {
                        let held = if f.applied { "" } else { ", held back" };
                        format!("{} ({}{held}): {}: {} -> {}", f.rule, f.kind, f.path, f.before, f.after)
                    })
                    .collect(),
                before: findings(&fixed.before),
                after: findings(&fixed.after),
            },
        );
        files.push((file, broken));
        if let Some(name) = fixed_name {
            files.push((name, fixed.bytes));
        }
    }
    Ok((files, manifest))
}

fn manifest_json(m: &BTreeMap<String, FixEntry>) -> String {
    let mut s = serde_json::to_string_pretty(&serde_json::json!({ "cases": m })).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes `corpus/fixes`.
pub fn write_fixes(dir: &Path) -> Result<usize, String> {
    let (files, manifest) = render_fixes()?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".gguf") && !files.iter().any(|(n, _)| *n == name) {
            std::fs::remove_file(entry.path()).map_err(|e| e.to_string())?;
        }
    }
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
    }
    std::fs::write(dir.join("manifest.json"), manifest_json(&manifest)).map_err(|e| e.to_string())?;
    Ok(manifest.len())
}

/// Checks that `dir` holds exactly what [`write_fixes`] would write.
pub fn check_fixes(dir: &Path) -> Result<usize, String> {
    let (files, manifest) = render_fixes()?;
    crate::check_generated(dir, "corpus/fixes", &files, &manifest_json(&manifest))?;
    Ok(manifest.len())
}
