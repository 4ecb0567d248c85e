//! Split-set cases: the tiny llama ([`crate::build::tiny_llama`]) split into
//! shards as `gguf-split` writes them (all metadata in the first shard,
//! `split.no`, `split.count` and `split.tensors.count` in every shard,
//! tensors in order), then broken one way at a time.
//!
//! `gguf-conformance generate` writes each case to
//! `corpus/split/<y|n|i>_<slug>/tiny-0000k-of-0000n.gguf` with
//! `corpus/split/manifest.json`; `tests/split_sets.rs` validates each set
//! under every profile and asserts the exact rule ids.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gguf_validate_core::write::GgufModel;
use serde::{Deserialize, Serialize};

use crate::build::{V, drop_kv, set_kv, tiny_llama};
use crate::{A, R, Verdict, prefix_of};

/// One split-set case.
#[derive(Debug)]
pub struct SplitCase {
    /// Slug without the y/n/i prefix.
    pub slug: &'static str,
    /// Expected verdict of the set under `strict`, `spec`, `ggml`.
    pub verdicts: [Verdict; 3],
    /// Rule ids `strict` reports for the set and its shards, exactly.
    pub rules: &'static [&'static str],
    /// What the set holds.
    pub description: &'static str,
    /// Where the expectation comes from.
    pub citation: &'static str,
    /// The shards: (file name, bytes), in position order (absent ones left out).
    pub build: fn() -> Vec<(String, Vec<u8>)>,
}

impl SplitCase {
    /// `y_valid`, `n_...`, `i_...`: the case's directory under `corpus/split`.
    pub fn dir_name(&self) -> String {
        format!("{}_{}", prefix_of(&self.verdicts), self.slug)
    }
}

/// Tensors of the tiny llama.
const TINY_TENSORS: i32 = 20;

/// The shard name gguf-split writes (`tiny-00001-of-00003.gguf`).
fn name(k: usize, n: usize) -> String {
    format!("tiny-{:05}-of-{n:05}.gguf", k + 1)
}

/// The tiny llama as `n` shards: the metadata in the first, the tensors
/// split into `n` runs in order, the split keys in every shard.
pub fn split_tiny(n: usize) -> Vec<GgufModel> {
    let model = tiny_llama();
    let total = model.tensors.len();
    let per = total.div_ceil(n);
    (0..n)
        .map(|k| {
            let mut m = GgufModel::new();
            if k == 0 {
                m.kvs = model.kvs.clone();
            }
            m.kv("split.no", V::U16(k as u16));
            m.kv("split.count", V::U16(n as u16));
            m.kv("split.tensors.count", V::I32(total as i32));
            for t in model.tensors.iter().skip(k * per).take(per) {
                m.tensor(t.clone());
            }
            m
        })
        .collect()
}

/// Bytes of shards, named by position.
fn files(shards: Vec<GgufModel>) -> Vec<(String, Vec<u8>)> {
    let n = shards.len();
    shards.into_iter().enumerate().map(|(k, m)| (name(k, n), crate::build::bytes(m))).collect()
}

/// The three shards of the tiny llama, changed by `f`.
fn three(f: impl Fn(&mut [GgufModel])) -> Vec<(String, Vec<u8>)> {
    let mut s = split_tiny(3);
    f(&mut s);
    files(s)
}

/// Every split-set case, in a stable order.
pub fn split_cases() -> Vec<SplitCase> {
    vec![
        SplitCase {
            slug: "valid",
            verdicts: [A, A, A],
            rules: &[],
            description: "The tiny llama in three shards as gguf-split writes them: metadata in the first, 7 + 7 + 6 tensors, split.tensors.count 20 (the boundary of every split-* rule).",
            citation: "llama.cpp tools/gguf-split; src/llama-model-loader.cpp",
            build: || three(|_| {}),
        },
        SplitCase {
            slug: "two_shards",
            verdicts: [A, A, A],
            rules: &[],
            description: "The tiny llama in two shards (10 + 10 tensors).",
            citation: "llama.cpp tools/gguf-split",
            build: || files(split_tiny(2)),
        },
        SplitCase {
            slug: "shard_missing",
            verdicts: [R, A, A],
            rules: &["split-shard-missing"],
            description: "Shards 1 and 3 of 3: the second file is absent (its tensors are not checked; the hyper-parameters are).",
            citation: "llama.cpp src/llama-model-loader.cpp (failed to load GGUF split)",
            build: || {
                let mut f = three(|_| {});
                f.remove(1);
                f
            },
        },
        SplitCase {
            slug: "first_shard_missing",
            verdicts: [R, A, A],
            rules: &["split-shard-missing"],
            description: "Shards 2 and 3 of 3: the first, which holds the metadata, is absent (the model layer is not checked).",
            citation: "llama.cpp src/llama-model-loader.cpp (illegal split file idx: the first shard is loaded first)",
            build: || {
                let mut f = three(|_| {});
                f.remove(0);
                f
            },
        },
        SplitCase {
            slug: "tensor_duplicate",
            verdicts: [R, A, A],
            rules: &["split-tensor-duplicate"],
            description: "The third shard also holds the second shard's first tensor (split.tensors.count counts it, 21).",
            citation: "llama.cpp src/llama-model-loader.cpp (tensor is duplicated)",
            build: || {
                three(|s| {
                    let t = s[1].tensors[0].clone();
                    s[2].tensor(t);
                    for m in s.iter_mut() {
                        set_kv(m, "split.tensors.count", V::I32(TINY_TENSORS + 1));
                    }
                })
            },
        },
        SplitCase {
            slug: "count_mismatch",
            verdicts: [R, A, A],
            rules: &["split-count-mismatch"],
            description: "The second shard says split.count 2 where the first says 3.",
            citation: "llama.cpp tools/gguf-split (the same split.count in every shard)",
            build: || three(|s| set_kv(&mut s[1], "split.count", V::U16(2))),
        },
        SplitCase {
            slug: "tensors_count_wrong",
            verdicts: [R, A, A],
            rules: &["split-tensors-count"],
            description: "split.tensors.count is 19 in every shard; the shards hold 20 tensors.",
            citation: "llama.cpp src/llama-model-loader.cpp (corrupted model: N tensors expected but M found)",
            build: || {
                three(|s| {
                    for m in s.iter_mut() {
                        set_kv(m, "split.tensors.count", V::I32(TINY_TENSORS - 1));
                    }
                })
            },
        },
        SplitCase {
            slug: "tensors_count_absent",
            verdicts: [R, A, A],
            rules: &["split-tensors-count"],
            description: "The first shard has no split.tensors.count.",
            citation: "llama.cpp src/llama-model-loader.cpp get_key(split.tensors.count) (required)",
            build: || three(|s| drop_kv(&mut s[0], "split.tensors.count")),
        },
        SplitCase {
            slug: "no_duplicate",
            verdicts: [R, A, A],
            rules: &["split-no-duplicate"],
            description: "The second file says split.no 2, the third shard's index: two shards numbered 2.",
            citation: "llama.cpp src/llama-model-loader.cpp (invalid split file idx)",
            build: || three(|s| set_kv(&mut s[1], "split.no", V::U16(2))),
        },
        SplitCase {
            slug: "index_swapped",
            verdicts: [R, A, A],
            rules: &["split-index"],
            description: "The second and third files carry each other's split.no (2 and 1): neither is at the position its index says.",
            citation: "llama.cpp src/llama-model-loader.cpp (invalid split file idx)",
            build: || {
                three(|s| {
                    set_kv(&mut s[1], "split.no", V::U16(2));
                    set_kv(&mut s[2], "split.no", V::U16(1));
                })
            },
        },
        SplitCase {
            slug: "metadata_in_later_shard",
            verdicts: [A, A, A],
            rules: &["split-metadata-location"],
            description: "A chat template in the second shard only: llama.cpp reads metadata from the first shard and never sees it (a warning); general.name there too is not model metadata (the boundary).",
            citation: "llama.cpp src/llama-model-loader.cpp (metadata of the first shard); tools/gguf-split",
            build: || {
                three(|s| {
                    // general.* in a later shard is not model metadata (the boundary).
                    s[1].kv("general.name", V::str("tiny"));
                    s[1].kv("tokenizer.chat_template", V::str("{{ messages }}"));
                })
            },
        },
        SplitCase {
            slug: "hparams_in_later_shard",
            verdicts: [R, A, A],
            rules: &["split-metadata-location", "model-key-missing"],
            description: "llama.block_count moved from the first shard to the second: llama.cpp does not find it (key not found in model).",
            citation: "llama.cpp src/llama-model-loader.cpp (metadata of the first shard); src/llama-model.cpp load_hparams",
            build: || {
                three(|s| {
                    drop_kv(&mut s[0], "llama.block_count");
                    s[1].kv("llama.block_count", V::U32(2));
                })
            },
        },
        SplitCase {
            slug: "tensor_missing_across_shards",
            verdicts: [R, A, A],
            rules: &["model-tensor-missing", "split-tensors-count"],
            description: "The third shard lacks blk.1.ffn_down.weight (split.tensors.count still says 20): the model rules run on the union of the shards and find it missing.",
            citation: "llama.cpp src/llama-model-loader.cpp create_tensor (missing tensor)",
            build: || three(|s| s[2].tensors.retain(|t| t.name != b"blk.1.ffn_down.weight")),
        },
    ]
}

/// One entry of `corpus/split/manifest.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitEntry {
    /// Directory under `corpus/split`.
    pub dir: String,
    /// Shard files in it, in position order.
    pub files: Vec<String>,
    /// Description.
    pub description: String,
    /// Citation.
    pub citation: String,
    /// Verdict of the set per profile name.
    pub verdict: BTreeMap<String, Verdict>,
    /// Rule ids `strict` reports for the set and its shards.
    pub rules: Vec<String>,
}

/// `corpus/split` relative to the workspace root.
pub fn split_dir() -> PathBuf {
    crate::workspace_root().join("corpus").join("split")
}

/// Every case's files (path relative to `corpus/split`, bytes) and the manifest.
pub fn render_split() -> (Vec<(String, Vec<u8>)>, Vec<SplitEntry>) {
    let mut out = Vec::new();
    let mut entries = Vec::new();
    for c in split_cases() {
        let dir = c.dir_name();
        let shards = (c.build)();
        entries.push(SplitEntry {
            dir: dir.clone(),
            files: shards.iter().map(|(n, _)| n.clone()).collect(),
            description: c.description.to_string(),
            citation: c.citation.to_string(),
            verdict: ["strict", "spec", "ggml"].iter().zip(c.verdicts).map(|(p, v)| (p.to_string(), v)).collect(),
            rules: c.rules.iter().map(|r| r.to_string()).collect(),
        });
        out.extend(shards.into_iter().map(|(n, b)| (format!("{dir}/{n}"), b)));
    }
    (out, entries)
}

fn manifest_text(entries: &[SplitEntry]) -> String {
    let mut s = serde_json::to_string_pretty(entries).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes `corpus/split` afresh (removing case directories no case produces).
pub fn write_split(dir: &Path) -> std::io::Result<usize> {
    let (files, entries) = render_split();
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    for (rel, bytes) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    std::fs::write(dir.join("manifest.json"), manifest_text(&entries))?;
    Ok(entries.len())
}

/// Checks that `dir` holds exactly what [`write_split`] would write.
pub fn check_split(dir: &Path) -> Result<usize, String> {
    let (files, entries) = render_split();
    let mut problems = Vec::new();
    for (rel, bytes) in &files {
        match std::fs::read(dir.join(rel)) {
            Ok(b) if b == *bytes => {}
            Ok(_) => problems.push(format!("{rel} differs")),
            Err(_) => problems.push(format!("{rel} is missing")),
        }
    }
    let expected: std::collections::BTreeSet<&str> = files.iter().map(|(r, _)| r.as_str()).collect();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for d in rd.flatten().filter(|d| d.path().is_dir()) {
            for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
                let rel = format!("{}/{}", d.file_name().to_string_lossy(), f.file_name().to_string_lossy());
                if !expected.contains(rel.as_str()) {
                    problems.push(format!("{rel} is not produced by any case"));
                }
            }
        }
    }
    if std::fs::read_to_string(dir.join("manifest.json")).ok() != Some(manifest_text(&entries)) {
        problems.push("manifest.json differs".into());
    }
    if problems.is_empty() {
        Ok(entries.len())
    } else {
        Err(format!("corpus/split is stale ({}); run `cargo run -p gguf-conformance -- generate`", problems.join(", ")))
    }
}
