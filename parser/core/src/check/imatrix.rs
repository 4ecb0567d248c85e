//! Importance matrices (`general.type` = `imatrix`, as llama-imatrix writes
//! them) as `llama-quantize --imatrix` reads them: the keys
//! `common_imatrix_load` (common/imatrix-loader.cpp) reads and how, the
//! `X.in_sum2` / `X.counts` pairs it builds, F32 only, the slices
//! `load_imatrix` (tools/quantize/quantize.cpp) cuts the sums into; and,
//! when the run has the model (`--with MODEL`, the same folder), the size
//! `llama_model_quantize` wants of each entry. The contract is generated
//! from those sources ([`super::imatrix_table`]).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::BTreeMap;

use crate::parse::{GgufFile, TensorInfo, Value, quote_bytes};
use crate::report::{Examined, ModelFacts, Sink};
use crate::rules::RuleId;
use crate::types::{ValueType, type_info};

use super::imatrix_table as table;
use super::kv::kv_path;
use super::tensors::tensor_path;

/// One entry as the loader groups the tensors: its sums and its counts.
#[derive(Default)]
struct Pair<'f, 'a> {
    sums: Option<&'f TensorInfo<'a>>,
    counts: Option<&'f TensorInfo<'a>>,
}

/// An entry the loader accepts: its sums tensor and how many values each
/// tensor holds.
struct Entry<'f, 'a> {
    name: String,
    sums: &'f TensorInfo<'a>,
    n_sums: u64,
    n_counts: u64,
}

fn elements(t: &TensorInfo<'_>) -> u64 {
    t.dims().try_fold(1u64, u64::checked_mul).unwrap_or(u64::MAX)
}

fn type_name(t: &TensorInfo<'_>) -> &'static str {
    type_info(t.type_id).map_or("an unknown type", |i| i.name)
}

/// Runs the importance-matrix rules and says what was examined.
pub(crate) fn check(
    file: &GgufFile<'_>,
    tensors: &[&TensorInfo<'_>],
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    check_keys(file, sink);
    if u64::try_from(tensors.len()).unwrap_or(u64::MAX) < table::MIN_TENSORS {
        sink.emit(
            RuleId::ImatrixEmpty,
            super::KV_SECTION,
            || "tensors".into(),
            || "the importance matrix has no tensor; llama-quantize refuses it (\"no data in file\")".into(),
        );
    }
    let pairs = tensor_pairs(tensors, sink);
    let mut entries = Vec::new();
    for (name, pair) in &pairs {
        let shown = quote_bytes(name);
        let (Some(sums), Some(counts)) = (pair.sums, pair.counts) else {
            let (have, lacks) = if pair.sums.is_some() {
                (table::SUMS_SUFFIX, table::COUNTS_SUFFIX)
            } else {
                (table::COUNTS_SUFFIX, table::SUMS_SUFFIX)
            };
            if let Some(t) = pair.sums.or(pair.counts) {
                sink.emit(RuleId::ImatrixPairMissing, t.name.offset, || tensor_path(t, "name"), || {
                    format!(
                        "`{shown}` has its `{have}` but no `{lacks}`; llama-quantize refuses the file (\"mismatched sums and counts\")"
                    )
                });
            }
            continue;
        };
        let mut typed = true;
        for t in [sums, counts] {
            if !type_info(t.type_id).is_some_and(|i| i.name.eq_ignore_ascii_case(table::TENSOR_TYPE)) {
                typed = false;
                sink.emit(RuleId::ImatrixTensorType, t.type_offset, || tensor_path(t, "type"), || {
                    format!(
                        "`{}` is {}; llama-quantize reads sums and counts as {} only and refuses the file (\"sums and counts for {shown} must be F32\")",
                        t.name.display(),
                        type_name(t),
                        table::TENSOR_TYPE
                    )
                });
            }
        }
        if !typed {
            continue;
        }
        let (n_sums, n_counts) = (elements(sums), elements(counts));
        if n_counts == 0 {
            sink.emit(RuleId::ImatrixCountsEmpty, counts.dims_offset, || tensor_path(counts, "dims"), || {
                format!(
                    "`{}` has no element; llama-quantize divides the {n_sums} sums by the number of counts, 0, and dies (SIGFPE)",
                    counts.name.display()
                )
            });
            continue;
        }
        if n_sums.checked_rem(n_counts).is_some_and(|r| r != 0) {
            sink.emit(RuleId::ImatrixSlices, sums.dims_offset, || tensor_path(sums, "dims"), || {
                format!(
                    "`{shown}` has {n_sums} sums and {n_counts} counts; llama-quantize cuts the sums into {n_counts} slices of {} and gives the last {} values weight 0",
                    n_sums.checked_div(n_counts).unwrap_or(0),
                    n_sums.checked_rem(n_counts).unwrap_or(0)
                )
            });
        }
        entries.push(Entry { name: String::from_utf8_lossy(name).into_owned(), sums, n_sums, n_counts });
    }
    examined.push(Examined::checked("imatrix"));
    pair_with_model(&entries, sink, examined);
}

/// The keys, as `common_imatrix_load` and `load_imatrix` read them.
fn check_keys(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    for key in table::REQUIRED_KEYS {
        if file.get(key).is_none() {
            sink.emit(
                RuleId::ImatrixMetadataMissing,
                super::KV_SECTION,
                || "kv".into(),
                || {
                    format!(
                        "the importance matrix has no `{key}`; llama-quantize refuses it (\"missing imatrix metadata\")"
                    )
                },
            );
        }
    }
    for key in table::U32_KEYS {
        if let Some(kv) = file.get(key)
            && !matches!(kv.value, Value::U32(_))
        {
            sink.emit(RuleId::ImatrixKeyType, kv.value_offset(), || kv_path(&kv), || {
                format!(
                    "`{key}` is {}; llama.cpp reads it with gguf_get_val_u32, which aborts the process (llama-quantize dies) on any type but u32",
                    crate::parse::type_label(&kv.value)
                )
            });
        }
    }
    for key in table::STRING_ARRAY_KEYS {
        if let Some(kv) = file.get(key)
            && kv.value.as_array().is_none_or(|a| a.elem_type != ValueType::String)
        {
            sink.emit(RuleId::ImatrixDatasetsType, kv.value_offset(), || kv_path(&kv), || {
                format!(
                    "`{key}` is {}; llama-quantize reads it only as an array of strings and ignores it (the quantized model records no dataset)",
                    crate::parse::type_label(&kv.value)
                )
            });
        }
    }
}

/// Groups the tensors by entry as the loader does (the name less one
/// suffix); a tensor with neither suffix is reported.
fn tensor_pairs<'f, 'a>(tensors: &[&'f TensorInfo<'a>], sink: &mut Sink<'_>) -> BTreeMap<Vec<u8>, Pair<'f, 'a>> {
    let mut pairs: BTreeMap<Vec<u8>, Pair<'f, 'a>> = BTreeMap::new();
    let mut stray = Vec::new();
    for t in tensors {
        let name = t.ggml_name();
        if name.is_empty() {
            continue;
        }
        if let Some(base) = name.strip_suffix(table::SUMS_SUFFIX.as_bytes()) {
            pairs.entry(base.to_vec()).or_default().sums = Some(t);
        } else if let Some(base) = name.strip_suffix(table::COUNTS_SUFFIX.as_bytes()) {
            pairs.entry(base.to_vec()).or_default().counts = Some(t);
        } else {
            stray.push(*t);
        }
    }
    let none = pairs.is_empty();
    for t in stray {
        sink.emit(
            RuleId::ImatrixStrayTensor,
            t.name.offset,
            || tensor_path(t, "name"),
            || {
                let then = if none {
                    "; the file has no entry, so llama-quantize quantizes without an importance matrix"
                } else {
                    ""
                };
                format!(
                    "`{}` ends neither in `{}` nor in `{}`: llama-quantize ignores it{then}",
                    t.name.display(),
                    table::SUMS_SUFFIX,
                    table::COUNTS_SUFFIX
                )
            },
        );
    }
    pairs
}

/// `ggml_n_dims`: the dims up to the last one above 1 (at least one).
fn n_dims(dims: &[u64]) -> usize {
    dims.iter().enumerate().filter(|(_, d)| **d > 1).map(|(i, _)| i.saturating_add(1)).max().unwrap_or(1)
}

/// Whether llama-quantize quantizes the tensor (and so looks its entry up):
/// 2-D or 3-D, named `*weight`, not a norm (the main cases of
/// `tensor_allows_quantization`).
fn quantized(name: &str, dims: &[u64]) -> bool {
    n_dims(dims) >= 2 && name.ends_with("weight") && !name.contains("_norm.weight")
}

/// What one model says of the entries: each problem as rule, offset, path
/// and message.
type Problems = Vec<(RuleId, u64, String, String)>;

fn against_model(entries: &[Entry<'_, '_>], model: &ModelFacts) -> Problems {
    let mut out = Problems::new();
    for e in entries {
        let Some(dims) = model.tensor(&e.name) else {
            out.push((
                RuleId::ImatrixTensorUnknown,
                e.sums.name.offset,
                tensor_path(e.sums, "name"),
                format!(
                    "the model {} has no tensor `{}`: llama-quantize never reads this entry",
                    model.name,
                    quote_bytes(e.name.as_bytes())
                ),
            ));
            continue;
        };
        let ne0 = dims.first().copied().unwrap_or(1);
        let experts = dims.get(2).copied().unwrap_or(1);
        let want = ne0.saturating_mul(experts);
        if e.n_sums != want {
            if quantized(&e.name, dims) && !table::SIZE_EXEMPT.contains(&e.name.as_str()) {
                out.push((
                    RuleId::ImatrixModelSize,
                    e.sums.dims_offset,
                    tensor_path(e.sums, "dims"),
                    format!(
                        "`{}` is {dims:?} in the model {}, so llama-quantize wants {ne0} x {experts} = {want} sums, and the entry has {}; it refuses the quantization (\"imatrix size {} is different from tensor size {want}\")",
                        quote_bytes(e.name.as_bytes()),
                        model.name,
                        e.n_sums,
                        e.n_sums
                    ),
                ));
            }
            continue;
        }
        if e.n_counts != 1 && e.n_counts != experts {
            out.push((
                RuleId::ImatrixExpertCount,
                e.sums.dims_offset,
                tensor_path(e.sums, "dims"),
                format!(
                    "`{}` has {experts} experts in the model {} and its entry {} counts: llama-quantize normalises slices of {} sums that are not the experts' by counts that are not theirs",
                    quote_bytes(e.name.as_bytes()),
                    model.name,
                    e.n_counts,
                    e.n_sums.checked_div(e.n_counts).unwrap_or(0)
                ),
            ));
        }
    }
    out
}

fn pair_with_model(entries: &[Entry<'_, '_>], sink: &mut Sink<'_>, examined: &mut Vec<Examined>) {
    let Some(companions) = super::companions(sink, "model", examined) else { return };
    let given = companions.given;
    if entries.is_empty() {
        // Nothing to compare: with a named model that is its whole pairing.
        let names: Vec<&str> = companions.models.iter().map(|m| m.name.as_str()).collect();
        examined.push(if given {
            Examined::partly("pairing", format!("model {}: no valid entry to compare", names.join(", ")))
        } else {
            Examined::skipped("pairing", "model: the importance matrix has no valid entry")
        });
        return;
    }
    let (whole, split): (Vec<_>, Vec<_>) = companions.models.iter().partition(|m| m.all_tensors);
    if whole.is_empty() {
        let names: Vec<&str> = split.iter().map(|m| m.name.as_str()).collect();
        examined.push(Examined::skipped(
            "pairing",
            format!("model: {} is a shard of a split set, which holds only some of its tensors", names.join(", ")),
        ));
        return;
    }
    // Found beside the file: only a model holding every tensor the entries
    // name is the one it was computed on; named: whatever it is.
    let candidates: Vec<&ModelFacts> = whole
        .iter()
        .map(|m| m.as_ref())
        .filter(|m| given || entries.iter().all(|e| m.tensor(&e.name).is_some()))
        .collect();
    if candidates.is_empty() {
        examined.push(Examined::skipped(
            "pairing",
            "model: no model in the folder has every tensor the importance matrix names",
        ));
        return;
    }
    let results: Vec<(&ModelFacts, Problems)> = candidates.iter().map(|m| (*m, against_model(entries, m))).collect();
    let fitting = results.iter().find(|(_, p)| p.is_empty()).map(|(m, _)| m.name.clone());
    match (given, fitting) {
        (false, Some(name)) => {
            examined.push(Examined::partly("pairing", format!("model {name} (found in the folder)")));
        }
        _ => {
            for (_, problems) in &results {
                for (rule, offset, path, message) in problems {
                    sink.emit(*rule, *offset, || path.clone(), || message.clone());
                }
                if !given {
                    // One candidate's findings say it all.
                    break;
                }
            }
            let names: Vec<&str> = results.iter().map(|(m, _)| m.name.as_str()).collect();
            examined.push(Examined::partly("pairing", format!("model {}", names.join(", "))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{n_dims, quantized};

    #[test]
    fn quantized_tensors_are_those_llama_quantize_looks_up() {
        assert_eq!(n_dims(&[16, 1, 1]), 1);
        assert_eq!(n_dims(&[16, 1, 4]), 3);
        assert!(quantized("blk.0.ffn_up_exps.weight", &[16, 32, 4]));
        assert!(!quantized("blk.0.attn_norm.weight", &[16]));
        assert!(!quantized("blk.0.attn_norm.weight", &[16, 16]));
        assert!(!quantized("blk.0.attn_q.bias", &[16, 16]));
    }
}
