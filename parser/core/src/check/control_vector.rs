//! Control vectors (architecture `controlvector`, as llama.cpp's
//! cvector-generator writes them) as `common_control_vector_load_one`
//! (common/common.cpp) reads them: one `direction.N` tensor per layer,
//! F32, 1-D, all of one width, the layer index read with `std::stoi`; and
//! the `int` arithmetic that sizes its buffer (`n_embd * layer_idx`). With
//! the base model in the run, the width and layer count it is applied to
//! (`llama_adapter_cvec::apply`).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{GgufFile, TensorInfo, quote_bytes};
use crate::report::{Examined, Sink};
use crate::rules::RuleId;
use crate::types::GgmlType;

use super::kv::kv_path;
use super::tensors::tensor_path;

/// The architecture name cvector-generator writes.
pub(crate) const ARCH: &str = "controlvector";

/// What `std::stoi` makes of `s`: leading white space, an optional sign,
/// then at least one decimal digit (the rest is ignored); `None` where it
/// throws (no digits, or out of `int`'s range).
pub(crate) fn stoi(s: &[u8]) -> Option<i32> {
    let mut rest = s;
    while let Some((c, tail)) = rest.split_first() {
        if matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            rest = tail;
        } else {
            break;
        }
    }
    let negative = match rest.first() {
        Some(b'-') => true,
        Some(b'+') => false,
        _ => {
            return digits(rest).and_then(|v| i32::try_from(v).ok());
        }
    };
    let magnitude = digits(rest.get(1..).unwrap_or_default())?;
    if negative {
        0i64.checked_sub(magnitude).and_then(|v| i32::try_from(v).ok())
    } else {
        i32::try_from(magnitude).ok()
    }
}

/// The value of the leading decimal digits, saturating past `i64`'s range
/// (which is past `int`'s anyway); `None` without a digit.
fn digits(s: &[u8]) -> Option<i64> {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    Some(s.iter().take(n).fold(0i64, |acc, c| acc.saturating_mul(10).saturating_add(i64::from(c.saturating_sub(b'0')))))
}

/// `ggml_n_dims`: the dims up to the last one above 1 (at least one).
fn n_dims(t: &TensorInfo<'_>) -> usize {
    t.dims().enumerate().filter(|(_, d)| *d > 1).map(|(i, _)| i.saturating_add(1)).max().unwrap_or(1)
}

/// Runs the control-vector rules and says what was examined.
pub(crate) fn check(
    file: &GgufFile<'_>,
    tensors: &[&TensorInfo<'_>],
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    if tensors.is_empty() {
        sink.emit(RuleId::ControlVectorDirection, super::KV_SECTION, || "tensors".into(), || {
            "the control vector has no direction tensor; llama.cpp finds no valid control vector in it and refuses it".into()
        });
    }
    let layer_count = file.get("controlvector.layer_count");
    let declared = layer_count.as_ref().and_then(|kv| kv.value.as_u64());
    let mut width: Option<u64> = None;
    let mut layers: Vec<(u64, &TensorInfo<'_>)> = Vec::new();
    for t in tensors {
        let name = t.ggml_name();
        let index = match name.iter().position(|c| *c == b'.') {
            Some(dot) if name.get(..dot) == Some(b"direction") => {
                stoi(name.get(dot.saturating_add(1)..).unwrap_or_default())
            }
            _ => None,
        };
        let layer = match index {
            Some(i) if i > 0 => u64::from(i.unsigned_abs()),
            Some(0) => {
                sink.emit(RuleId::ControlVectorDirection, t.name.offset, || tensor_path(t, "name"), || {
                    format!(
                        "`{}` names layer 0; llama.cpp refuses it (\"invalid (zero) direction tensor layer index\") and skips the whole file",
                        t.name.display()
                    )
                });
                continue;
            }
            _ => {
                sink.emit(RuleId::ControlVectorDirection, t.name.offset, || tensor_path(t, "name"), || {
                    format!(
                        "`{}` is not `direction.N` with N a layer index from 1 to 2147483647 as std::stoi reads it; llama.cpp refuses it (\"invalid/unparsable direction tensor layer index\") and skips the whole file",
                        t.name.display()
                    )
                });
                continue;
            }
        };
        if t.type_id != GgmlType::F32.id() {
            sink.emit(RuleId::ControlVectorDirection, t.type_offset, || tensor_path(t, "type"), || {
                format!(
                    "`{}` has type {}; llama.cpp reads directions as F32 only (\"invalid (non-F32) direction tensor type\") and skips the whole file",
                    t.name.display(),
                    crate::types::type_info(t.type_id).map_or("an unknown type", |i| i.name)
                )
            });
            continue;
        }
        if n_dims(t) != 1 {
            sink.emit(RuleId::ControlVectorDirection, t.dims_offset, || tensor_path(t, "dims"), || {
                format!(
                    "`{}` has shape {:?}; a direction is 1-D (\"invalid (non-1D) direction tensor shape\"), and llama.cpp skips the whole file",
                    t.name.display(),
                    t.dims().collect::<Vec<_>>()
                )
            });
            continue;
        }
        let elements = t.dims().try_fold(1u64, u64::checked_mul).unwrap_or(u64::MAX);
        match width {
            None => width = Some(elements),
            Some(w) if w != elements => {
                sink.emit(RuleId::ControlVectorDirection, t.dims_offset, || tensor_path(t, "dims"), || {
                    format!(
                        "`{}` has {elements} elements and an earlier direction {w}; llama.cpp refuses directions of different widths (\"does not match previous dimensions\") and skips the whole file",
                        t.name.display()
                    )
                });
                continue;
            }
            Some(_) => {}
        }
        // int n_embd = nelements; data.resize(n_embd * layer_idx) in int.
        let int_max = u64::from(i32::MAX.unsigned_abs());
        let product = elements.checked_mul(layer);
        let bytes = product.and_then(|p| p.checked_mul(4));
        if elements > int_max || product.is_none_or(|p| p > int_max) {
            sink.emit(RuleId::ControlVectorOverflow, t.name.offset, || tensor_path(t, "name"), || {
                format!(
                    "`{}`: width {elements} x layer index {layer} does not fit in a 32-bit int; llama.cpp's buffer size (n_embd * layer_idx) overflows and it writes out of bounds",
                    t.name.display()
                )
            });
            continue;
        }
        if bytes.is_none_or(|b| b > limits::CONTROL_VECTOR_MAX_BYTES) {
            sink.emit(RuleId::ControlVectorOverflow, t.name.offset, || tensor_path(t, "name"), || {
                format!(
                    "`{}`: width {elements} x layer index {layer} makes llama.cpp allocate {} bytes for one control vector (more than {} bytes: limits::CONTROL_VECTOR_MAX_BYTES)",
                    t.name.display(),
                    bytes.unwrap_or(u64::MAX),
                    limits::CONTROL_VECTOR_MAX_BYTES
                )
            });
            continue;
        }
        if let (Some(n), Some(kv)) = (declared, layer_count.as_ref())
            && layer > n
        {
            sink.emit(RuleId::ControlVectorLayerCount, t.name.offset, || tensor_path(t, "name"), || {
                format!(
                    "`{}` is for layer {layer}, past `controlvector.layer_count` {n} ({}); such a direction is never applied",
                    t.name.display(),
                    kv_path(kv)
                )
            });
        }
        layers.push((layer, t));
    }
    examined.push(Examined::checked("control vector"));
    pair_with_base(file, width, &layers, sink, examined);
}

fn pair_with_base(
    file: &GgufFile<'_>,
    width: Option<u64>,
    layers: &[(u64, &TensorInfo<'_>)],
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    let Some(companions) = super::companions(sink, "base model", examined) else { return };
    let given = companions.given;
    let models = &companions.models;
    let Some(width) = width else {
        examined.push(Examined::skipped("pairing", "base model: the control vector has no valid direction"));
        return;
    };
    // Found beside it: it is for the one of its width, if any.
    let candidates: Vec<_> =
        if given { models.iter().collect() } else { models.iter().filter(|m| m.n_embd == Some(width)).collect() };
    let Some(base) = candidates.first() else {
        examined.push(Examined::skipped("pairing", format!("base model: no model of width {width} in the folder")));
        return;
    };
    let hint = file.get("controlvector.model_hint");
    for m in &candidates {
        if let Some(n) = m.n_embd
            && n != width
        {
            let at = layers.first().map(|(_, t)| *t);
            sink.emit(
                RuleId::ControlVectorWidth,
                at.map_or(super::KV_SECTION, |t| t.dims_offset),
                || at.map_or_else(|| "tensors".into(), |t| tensor_path(t, "dims")),
                || {
                    format!(
                        "the directions have {width} elements and the base model {} has embedding_length {n}; llama.cpp refuses to apply the control vector (\"control vector n_embd does not match model\")",
                        m.name
                    )
                },
            );
        }
        if let Some(n_layer) = m.n_layer {
            for (layer, t) in layers {
                if *layer >= n_layer {
                    sink.emit(RuleId::ControlVectorLayerCount, t.name.offset, || tensor_path(t, "name"), || {
                        format!(
                            "`{}` is for layer {layer}; the base model {} has {n_layer} layers, so it is never applied",
                            t.name.display(),
                            m.name
                        )
                    });
                }
            }
        }
    }
    let hint = hint.and_then(|kv| kv.value.as_string()).map(|s| quote_bytes(s.bytes));
    let note = match hint {
        Some(h) => format!("base model {} (model hint `{h}`)", base.name),
        None => format!("base model {}", base.name),
    };
    examined.push(Examined::partly("pairing", note));
}

#[cfg(test)]
mod tests {
    use super::stoi;

    #[test]
    fn stoi_reads_as_the_cpp_library_does() {
        assert_eq!(stoi(b"12"), Some(12));
        assert_eq!(stoi(b" \t+7abc"), Some(7));
        assert_eq!(stoi(b"-3"), Some(-3));
        assert_eq!(stoi(b"-0"), Some(0));
        assert_eq!(stoi(b"2147483647"), Some(i32::MAX));
        assert_eq!(stoi(b"2147483648"), None);
        assert_eq!(stoi(b"-2147483648"), Some(i32::MIN));
        assert_eq!(stoi(b"99999999999999999999999"), None);
        assert_eq!(stoi(b""), None);
        assert_eq!(stoi(b"x1"), None);
        assert_eq!(stoi(b"+"), None);
        assert_eq!(stoi(b"+-1"), None);
    }
}
