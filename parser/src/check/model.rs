//! Rules on a model's hyper-parameters that llama.cpp's loader assumes:
//! the layer count its per-layer arrays are sized for, per-layer arrays of
//! the right length, expert counts it asserts on. Only keys that are
//! present are judged here, and only for the architectures llama.cpp knows
//! ([`super::llama_arches`], generated from its sources): any other
//! architecture gets one info saying its hyper-parameters were not checked,
//! never an error (diffusion, audio or custom models use GGUF too).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{GgufFile, KeyValue, Value};
use crate::report::Sink;
use crate::rules::RuleId;

use super::kv::kv_path;

/// Per-layer hyper-parameters llama.cpp reads with `get_key_or_arr`: a
/// scalar, or an array of `block_count` values.
const PER_LAYER: [&str; 4] =
    ["feed_forward_length", "attention.head_count", "attention.head_count_kv", "expert_used_count"];

fn arch_key<'f, 'a>(file: &'f GgufFile<'a>, arch: &str, name: &str) -> Option<&'f KeyValue<'a>> {
    file.get(&format!("{arch}.{name}"))
}

/// Runs the `model-*` rules for the architecture `arch`.
pub(crate) fn check(file: &GgufFile<'_>, arch: Option<&str>, sink: &mut Sink<'_>) {
    let Some(arch) = arch else { return };
    if !super::llama_arches::LLAMA_ARCHES.contains(&arch) {
        if let Some(kv) = file.get("general.architecture") {
            sink.emit(
                RuleId::ModelArchitectureUnknown,
                kv.value_offset(),
                || kv_path(kv),
                || {
                    format!(
                        "architecture `{}` is not one llama.cpp knows; its hyper-parameters were not checked",
                        crate::parse::quote_bytes(arch.as_bytes())
                    )
                },
            );
        }
        return;
    }
    // llama.cpp reads no hyper-parameters for projector files.
    if arch == "clip" {
        return;
    }
    let block_count =
        arch_key(file, arch, "block_count").and_then(|kv| {
            // A value that is not a non-negative integer is standard-key-type's.
            let n = kv.value.as_u64()?;
            if n == 0 || n > limits::LLAMA_MAX_LAYERS {
                sink.emit(RuleId::ModelBlockCount, kv.value_offset(), || kv_path(kv), || {
                format!(
                    "`{}` is {}; llama.cpp needs 1..={} (its per-layer arrays hold {} layers) and aborts otherwise",
                    kv.key.display(),
                    describe(&kv.value),
                    limits::LLAMA_MAX_LAYERS,
                    limits::LLAMA_MAX_LAYERS
                )
            });
            }
            Some(n).filter(|n| (1..=limits::LLAMA_MAX_LAYERS).contains(n))
        });
    for name in PER_LAYER {
        let Some(kv) = arch_key(file, arch, name) else { continue };
        let Value::Array(a) = kv.value else { continue };
        let ok = match block_count {
            Some(n) => a.len == n,
            None => a.len <= limits::LLAMA_MAX_LAYERS,
        };
        if !ok {
            sink.emit(
                RuleId::ModelLayerArray,
                a.offset,
                || kv_path(kv),
                || match block_count {
                    Some(n) => format!(
                        "`{}` has {} values for {n} layers; llama.cpp refuses the model",
                        kv.key.display(),
                        a.len
                    ),
                    None => format!(
                        "`{}` has {} values, more than llama.cpp's {} layers",
                        kv.key.display(),
                        a.len,
                        limits::LLAMA_MAX_LAYERS
                    ),
                },
            );
        }
    }
    check_experts(file, arch, sink);
}

fn check_experts(file: &GgufFile<'_>, arch: &str, sink: &mut Sink<'_>) {
    let count = arch_key(file, arch, "expert_count");
    let n_expert = count.and_then(|kv| kv.value.as_u64());
    if let Some(kv) = count
        && n_expert.is_some_and(|n| n > limits::LLAMA_MAX_EXPERTS)
    {
        sink.emit(
            RuleId::ModelExpertCount,
            kv.value_offset(),
            || kv_path(kv),
            || {
                format!(
                    "`{}` is {}; llama.cpp allows at most {} experts and aborts otherwise",
                    kv.key.display(),
                    describe(&kv.value),
                    limits::LLAMA_MAX_EXPERTS
                )
            },
        );
    }
    let Some(used) = arch_key(file, arch, "expert_used_count") else { return };
    let used_max = match used.value {
        Value::Array(a) => a.iter().filter_map(|e| e.value.as_u64()).max(),
        v => v.as_u64(),
    };
    if let Some(u) = used_max
        && u > n_expert.unwrap_or(0)
    {
        sink.emit(
            RuleId::ModelExpertCount,
            used.value_offset(),
            || kv_path(used),
            || {
                format!(
                    "`{}` uses {u} experts per token but `{arch}.expert_count` is {}; llama.cpp aborts",
                    used.key.display(),
                    n_expert.map_or_else(|| "absent".to_string(), |n| n.to_string())
                )
            },
        );
    }
}

/// A value for a message: the number, or its type.
fn describe(v: &Value<'_>) -> String {
    v.as_u64().map_or_else(|| format!("a {}", crate::parse::type_label(v)), |n| n.to_string())
}
