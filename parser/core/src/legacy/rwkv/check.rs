//! The `rwkv-*` rules over a parsed file.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, HashMap, HashSet};

use super::arch::{GLOBAL_NAMES, RwkvArch};
use super::parse::{param_path, type_message};
use super::types::{RwkvType, rwkv_type};
use super::{Header, Param, RwkvFile};
use crate::limits;
use crate::report::{Sink, Summary};
use crate::rules::RuleId;

/// What shape rule an expected parameter is under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// No shape rule.
    Any,
    /// `emb.weight`: [n_embed, n_vocab] (`rwkv-shape`).
    Embedding,
    /// `head.weight`: [n_embed, n_vocab] (`rwkv-parameter-shape`).
    Head,
    /// A layer norm weight or bias: [n_embed] (`rwkv-parameter-shape`).
    Norm,
}

fn expect_of(name: &str) -> Expect {
    match name {
        "emb.weight" => Expect::Embedding,
        "head.weight" => Expect::Head,
        n if n.starts_with("ln_out.") || n.contains(".ln0.") || n.contains(".ln1.") || n.contains(".ln2.") => {
            Expect::Norm
        }
        _ => Expect::Any,
    }
}

/// Highest `N` of the `blocks.N.` names present, if any.
fn max_block_index(params: &[Param<'_>]) -> Option<u64> {
    params
        .iter()
        .filter_map(|p| {
            let rest = p.key.strip_prefix(b"blocks.")?;
            let digits = rest.split(|b| *b == b'.').next()?;
            std::str::from_utf8(digits).ok()?.parse::<u64>().ok()
        })
        .max()
}

/// The type table note of the report (`legacy-type-table`).
fn type_table_message(version: u32) -> String {
    let base = "type table rwkv-cpp (rwkv.cpp's own ids: 0 FP32, 1 FP16, 2 Q4_0, 3 Q4_1, 7 Q5_0, 8 Q5_1, 9 Q8_0, 10 Q8_1, 11-16 Q2_K..Q8_K; 4-6 removed), mapped to ggml types as rwkv_type_to_ggml does";
    if version == limits::RWKV_VERSION_QUANTIZED {
        format!("{base}; version 101 quantized blocks have the current ggml layout")
    } else {
        format!(
            "{base}; only FP32 and FP16 are read in version {version} files (version 100 quantized blocks predate ggml 00b49ec7 and have another layout)"
        )
    }
}

/// Runs the `rwkv-*` rules over a parsed file and fills the summary.
pub(crate) fn check(file: &RwkvFile<'_>, sink: &mut Sink<'_>, summary: &mut Summary) {
    summary.tensor_count = Some(u64::try_from(file.params.len()).unwrap_or(u64::MAX));
    summary.parameters = file.params.iter().try_fold(0u64, |a, p| a.checked_add(p.elements()));
    summary.data_size = file.params.iter().try_fold(0u64, |a, p| a.checked_add(p.nbytes));
    let mut types = BTreeMap::new();
    for p in &file.params {
        let n: &mut u64 = types.entry(p.ty.name().to_string()).or_insert(0);
        *n = n.saturating_add(1);
    }
    summary.tensor_types = types;
    let Some(h) = file.header else {
        if let Some(f) = &file.fatal {
            sink.emit(f.rule, f.offset, || f.path.clone(), || f.message.clone());
        }
        return;
    };
    summary.kv_count = Some(4);
    check_header(&h, sink);
    for (i, p) in file.params.iter().enumerate() {
        check_param(&h, i, p, sink);
    }
    check_duplicates(file, sink);
    if let Some(f) = &file.fatal {
        sink.emit(f.rule, f.offset, || f.path.clone(), || f.message.clone());
        return;
    }
    let arch = check_names(&h, file, sink);
    summary.architecture = Some(arch.name().to_string());
}

fn check_header(h: &Header, sink: &mut Sink<'_>) {
    sink.emit(RuleId::LegacyTypeTable, 20, || "header.data_type".into(), || type_table_message(h.version));
    if !limits::RWKV_VERSIONS.contains(&h.version) {
        sink.emit(RuleId::RwkvVersion, 4, || "header.version".into(), || {
            format!("rwkv.cpp file version {} is not supported; rwkv.cpp reads versions 100 and 101 (GGMF, with the same magic, has version 1)", h.version)
        });
    }
    match rwkv_type(h.data_type) {
        Some(RwkvType { ggml: Some(t), name, .. }) => {
            if t.is_quantized() && h.version == limits::RWKV_VERSION_ORIGINAL {
                sink.emit(RuleId::RwkvQuantizedV100, 20, || "header.data_type".into(), || {
                    format!(
                        "the model data type is {name}, but quantized files must have version 101; this version {} file was made by an old rwkv.cpp whose quantized blocks current ggml cannot read (requantize it)",
                        h.version
                    )
                });
            }
        }
        _ => sink.emit(
            RuleId::RwkvDataType,
            20,
            || "header.data_type".into(),
            || type_message(h.data_type, "model", false),
        ),
    }
    for (offset, name, value) in [(8, "n_vocab", h.n_vocab), (12, "n_embed", h.n_embed), (16, "n_layer", h.n_layer)] {
        if value == 0 {
            sink.emit(RuleId::RwkvHeaderValue, offset, || format!("header.{name}"), || format!("{name} is 0"));
        }
    }
}

fn check_param(h: &Header, index: usize, p: &Param<'_>, sink: &mut Sink<'_>) {
    let path = |field: &str| param_path(index, Some(p.key), field);
    if !(1..=limits::RWKV_MAX_DIMS).contains(&p.dim_count) {
        sink.emit(
            RuleId::RwkvDimCount,
            p.offset,
            || path("dim_count"),
            || format!("{} has {} dimensions; rwkv.cpp reads parameters of 1, 2 or 3", p.name(), p.dim_count),
        );
    }
    if std::str::from_utf8(p.key).is_err() {
        sink.emit(RuleId::RwkvKeyUtf8, p.key_offset, || path("key"), || format!("key {} is not valid UTF-8", p.name()));
    }
    if p.ty.is_quantized() && h.version == limits::RWKV_VERSION_ORIGINAL {
        let type_offset = p.offset.saturating_add(8);
        sink.emit(RuleId::RwkvQuantizedV100, type_offset, || path("data_type"), || {
            format!(
                "{} is quantized ({}) in a version {} file; only version 101 quantized blocks have the layout current ggml reads",
                p.name(),
                p.ty.name(),
                h.version
            )
        });
    }
}

fn check_duplicates(file: &RwkvFile<'_>, sink: &mut Sink<'_>) {
    let mut first: HashMap<&[u8], usize> = HashMap::new();
    for (i, p) in file.params.iter().enumerate() {
        if let Some(j) = first.get(p.key) {
            sink.emit(RuleId::RwkvKeyDuplicate, p.key_offset, || param_path(i, Some(p.key), "key"), || {
                format!("key {} already names param[{j}]; rwkv.cpp keeps the last copy and reads every copy's data with its size", p.name())
            });
        } else {
            first.insert(p.key, i);
        }
    }
}

/// Missing, unused and mis-shaped parameters; returns the architecture.
fn check_names(h: &Header, file: &RwkvFile<'_>, sink: &mut Sink<'_>) -> RwkvArch {
    let present: HashSet<&[u8]> = file.params.iter().map(|p| p.key).collect();
    let (arch, evidence) = RwkvArch::detect(|n| present.contains(n.as_bytes()));
    sink.emit(
        RuleId::RwkvArchitecture,
        limits::RWKV_HEADER_SIZE,
        || "parameters".into(),
        || match evidence {
            Some(e) => {
                format!("RWKV {} (rwkv.cpp's detection: `{e}` is present)", arch.name().trim_start_matches("rwkv-"))
            }
            None => "RWKV v4 (rwkv.cpp's default: no v5, v6 or v7 parameter names in layer 0)".into(),
        },
    );
    // Layers to list: every layer below n_layer, but no further than one
    // past the highest layer present or the parameter count (each layer
    // needs at least ten parameters), so a hostile n_layer costs nothing.
    let n_layer = u64::from(h.n_layer);
    let params = u64::try_from(file.params.len()).unwrap_or(u64::MAX);
    let cap = max_block_index(&file.params).map_or(1, |m| m.saturating_add(2)).min(params.saturating_add(1));
    let listed = n_layer.min(cap);
    let mut expected: HashMap<String, Expect> = HashMap::new();
    let mut missing = |name: String, expected: &mut HashMap<String, Expect>| {
        if !present.contains(name.as_bytes()) {
            sink.emit(
                RuleId::RwkvMissingParameter,
                limits::RWKV_HEADER_SIZE,
                || "parameters".into(),
                || format!("parameter {name} is missing; rwkv.cpp needs it for {} with n_layer {n_layer}", arch.name()),
            );
        }
        let e = expect_of(&name);
        expected.insert(name, e);
    };
    for name in GLOBAL_NAMES.iter().take(3) {
        missing((*name).to_string(), &mut expected);
    }
    for layer in 0..listed {
        for suffix in arch.layer_names(layer) {
            missing(format!("blocks.{layer}.{suffix}"), &mut expected);
        }
    }
    for name in GLOBAL_NAMES.iter().skip(3) {
        missing((*name).to_string(), &mut expected);
    }
    if n_layer > listed {
        sink.emit(
            RuleId::RwkvMissingParameter,
            16,
            || "header.n_layer".into(),
            || {
                format!(
                    "n_layer is {n_layer}, but no parameter names any layer from {listed} to {}",
                    n_layer.saturating_sub(1)
                )
            },
        );
    }
    for (i, p) in file.params.iter().enumerate() {
        let name = std::str::from_utf8(p.key).ok();
        match name.and_then(|n| expected.get(n)) {
            None => sink.emit(
                RuleId::RwkvUnusedParameter,
                p.offset,
                || param_path(i, Some(p.key), "key"),
                || {
                    format!(
                        "{} is not a parameter of {} with n_layer {n_layer}; rwkv.cpp reads it and never uses it",
                        p.name(),
                        arch.name()
                    )
                },
            ),
            Some(e) => check_shape(h, i, p, *e, sink),
        }
    }
    arch
}

fn check_shape(h: &Header, index: usize, p: &Param<'_>, e: Expect, sink: &mut Sink<'_>) {
    let (embed, vocab) = (u64::from(h.n_embed), u64::from(h.n_vocab));
    let dims = p.effective_dims();
    let (rule, want): (RuleId, Vec<u64>) = match e {
        Expect::Any => return,
        Expect::Embedding => (RuleId::RwkvShape, vec![embed, vocab]),
        Expect::Head => (RuleId::RwkvParameterShape, vec![embed, vocab]),
        Expect::Norm => (RuleId::RwkvParameterShape, vec![embed]),
    };
    if dims != want.as_slice() {
        sink.emit(
            rule,
            p.offset,
            || param_path(index, Some(p.key), "shape"),
            || {
                format!(
                    "{} has shape {:?}; with n_embed {embed} and n_vocab {vocab} it must be {want:?} (ne0 first)",
                    p.name(),
                    p.dims
                )
            },
        );
    }
}
