//! `general.tensor_extra.*`: per-tensor flags the pinned llama.cpp reads
//! after creating a model's tensors (`llama_prec_policy::load`, src/llama-model.cpp):
//! `general.tensor_extra.name` (strings) names tensors, and
//! `general.tensor_extra.prec_a4` must then be a bool array of the same
//! length, or the load throws. A name that is no tensor of the model is
//! skipped by the loader: a warning. The releases of the table do not read
//! these keys (they load such files).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::HashSet;

use crate::parse::{GgufFile, TensorInfo};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

use super::kv::kv_path;

const NAMES: &str = "general.tensor_extra.name";
const PREC_A4: &str = "general.tensor_extra.prec_a4";

pub(crate) fn check(file: &GgufFile<'_>, tensors: &[&TensorInfo<'_>], sink: &mut Sink<'_>) {
    let Some(names_kv) = file.get(NAMES) else { return };
    let Some(names) = names_kv.value.as_array().filter(|a| a.elem_type == ValueType::String) else {
        // Another type: the loader's get_arr refuses it (`standard-key-type`).
        return;
    };
    match file.get(PREC_A4) {
        None => sink.emit(RuleId::ModelTensorExtra, names_kv.key.offset, || kv_path(&names_kv), || {
            format!("`{NAMES}` is present without `{PREC_A4}`: llama.cpp refuses the model at load (\"{PREC_A4} must be a bool array\")")
        }),
        Some(prec) => match prec.value.as_array() {
            Some(a) if a.elem_type == ValueType::Bool => {
                if a.len != names.len {
                    sink.emit(RuleId::ModelTensorExtra, a.offset, || kv_path(&prec), || {
                        format!(
                            "`{PREC_A4}` has {} values for the {} names of `{NAMES}`: llama.cpp refuses the model at load (\"tensor/value length mismatch\")",
                            a.len, names.len
                        )
                    });
                }
            }
            _ => sink.emit(RuleId::ModelTensorExtra, prec.type_offset(), || kv_path(&prec), || {
                format!("`{PREC_A4}` is not an array of bool: llama.cpp refuses the model at load (\"{PREC_A4} must be a bool array\")")
            }),
        },
    }
    let present: HashSet<&[u8]> = tensors.iter().map(|t| t.name.bytes).collect();
    for (i, name) in names.strings() {
        if !present.contains(name.bytes) {
            sink.emit(
                RuleId::ModelTensorExtraUnknown,
                names.offset,
                || format!("{}[{i}]", kv_path(&names_kv)),
                || {
                    format!(
                        "`{NAMES}`[{i}] is `{}`, which is no tensor of the model: llama.cpp skips it",
                        crate::parse::escape_bytes(name.bytes, false)
                    )
                },
            );
        }
    }
}
