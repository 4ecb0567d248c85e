//! LoRA adapters (`general.type` = `adapter`) as llama.cpp's
//! `llama_adapter_lora_init` (src/llama-adapter.cpp) loads them: the keys
//! it reads and their types, the tensor names it accepts, the pairs it
//! builds, and, when the run has the base model
//! ([`crate::report::Options::companions`]), the architecture and the
//! shapes it compares with the base's tensors.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::BTreeMap;

use crate::parse::{GgufFile, KeyValue, TensorInfo, Value, quote_bytes};
use crate::report::{Examined, ModelFacts, Sink};
use crate::rules::RuleId;
use crate::types::ValueType;

use super::kv::kv_path;
use super::tensors::tensor_path;

const LORA_A: &[u8] = b".lora_a";
const LORA_B: &[u8] = b".lora_b";
/// Norm vectors an adapter may carry; the loader skips them.
const SKIPPED_SUFFIX: &[u8] = b"_norm.weight";
const TOKEN_EMBD: &[u8] = b"token_embd.weight";
/// The expert tensors llama.cpp's `build_moe_ffn` multiplies with
/// `build_lora_mm_id` (src/llama-graph.cpp): one matrix per expert, so their
/// LoRA matrices are 3-D too and applied with `ggml_mul_mat_id`.
const EXPERT_TENSORS: [&[u8]; 4] =
    [b".ffn_gate_exps.weight", b".ffn_up_exps.weight", b".ffn_down_exps.weight", b".ffn_gate_up_exps.weight"];

/// Whether `name` (without `.lora_a`/`.lora_b`) is an expert tensor.
fn is_expert(name: &[u8]) -> bool {
    EXPERT_TENSORS.iter().any(|s| name.ends_with(s))
}

/// One `X.lora_a` / `X.lora_b` pair as the loader groups them.
#[derive(Default)]
struct Pair<'f, 'a> {
    a: Option<&'f TensorInfo<'a>>,
    b: Option<&'f TensorInfo<'a>>,
}

/// A tensor's dims padded to 4 with ones, as ggml keeps `ne`.
fn ne(t: &TensorInfo<'_>) -> [u64; 4] {
    let mut out = [1u64; 4];
    for (slot, d) in out.iter_mut().zip(t.dims()) {
        *slot = d;
    }
    out
}

/// `name` with every occurrence of `pat` removed (llama.cpp's
/// `replace_all(name, ".lora_a", "")`, which removes them all).
fn remove_all(name: &[u8], pat: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    let mut rest = name;
    while !rest.is_empty() {
        if rest.starts_with(pat) {
            rest = rest.get(pat.len()..).unwrap_or_default();
        } else if let Some((first, tail)) = rest.split_first() {
            out.push(*first);
            rest = tail;
        }
    }
    out
}

fn string_key<'a>(file: &GgufFile<'a>, key: &str, sink: &mut Sink<'_>) -> Option<(KeyValue<'a>, Option<&'a [u8]>)> {
    let kv = file.get(key)?;
    match kv.value {
        Value::String(s) => Some((kv, Some(s.bytes))),
        _ => {
            sink.emit(RuleId::AdapterKeyType, kv.value_offset(), || kv_path(&kv), || {
                format!(
                    "`{key}` is {}; llama.cpp reads it with gguf_get_val_str, which aborts the process on any type but string",
                    crate::parse::type_label(&kv.value)
                )
            });
            Some((kv, None))
        }
    }
}

/// Runs the adapter rules and says what was examined.
pub(crate) fn check(
    file: &GgufFile<'_>,
    tensors: &[&TensorInfo<'_>],
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    // The keys, in the order the loader reads them.
    let _ = string_key(file, "general.type", sink);
    let arch = string_key(file, "general.architecture", sink);
    match string_key(file, "adapter.type", sink) {
        Some((_, None)) => {}
        Some((_, Some(b"lora"))) => {}
        Some((kv, Some(other))) => sink.emit(
            RuleId::AdapterType,
            kv.value_offset(),
            || kv_path(&kv),
            || {
                format!(
                    "`adapter.type` is `{}`; llama.cpp loads only `lora` adapters and refuses this one",
                    quote_bytes(other)
                )
            },
        ),
        None => sink.emit(
            RuleId::AdapterType,
            super::KV_SECTION,
            || "kv".into(),
            || "the adapter has no `adapter.type`; llama.cpp expects `lora` and refuses it".into(),
        ),
    }
    if let Some(kv) = file.get("adapter.lora.alpha")
        && !matches!(kv.value, Value::F32(_))
    {
        sink.emit(RuleId::AdapterKeyType, kv.value_offset(), || kv_path(&kv), || {
            format!(
                "`adapter.lora.alpha` is {}; llama.cpp reads it with gguf_get_val_f32, which aborts the process on any type but f32",
                crate::parse::type_label(&kv.value)
            )
        });
    }
    let invocation = invocation_tokens(file, sink);

    let arch_name = arch.and_then(|(_, b)| b);
    let known =
        arch_name.and_then(|b| std::str::from_utf8(b).ok()).filter(|a| super::llama_arches::LLAMA_ARCHES.contains(a));
    match (arch, known) {
        (_, Some(_)) | (Some((_, None)), _) => {}
        (Some((kv, Some(b))), None) => sink.emit(RuleId::AdapterArchitecture, kv.value_offset(), || kv_path(&kv), || {
            format!(
                "the adapter's architecture `{}` is not one llama.cpp knows: no base model matches it (\"model arch and LoRA arch mismatch\")",
                quote_bytes(b)
            )
        }),
        (None, None) => sink.emit(RuleId::AdapterArchitecture, super::KV_SECTION, || "kv".into(), || {
            "the adapter has no `general.architecture`: no base model matches it (\"model arch and LoRA arch mismatch\")".into()
        }),
    }

    let pairs = tensor_pairs(tensors, sink);
    for (name, pair) in &pairs {
        let (Some(a), Some(b)) = (pair.a, pair.b) else {
            let (have, lacks) = if pair.a.is_some() { ("lora_a", "lora_b") } else { ("lora_b", "lora_a") };
            if let Some(t) = pair.a.or(pair.b) {
                sink.emit(RuleId::AdapterTensorPair, t.name.offset, || tensor_path(t, "name"), || {
                    format!(
                        "`{}` has its {have} but no {lacks}; llama.cpp refuses the adapter (\"tensor pair is missing one component\")",
                        quote_bytes(name)
                    )
                });
            }
            continue;
        };
        check_rank(name, a, b, sink);
    }

    examined.push(Examined::checked("adapter"));
    pair_with_base(file, known, &pairs, invocation.as_deref(), sink, examined);
}

/// `adapter.alora.invocation_tokens`: an array of u32 token ids, each
/// below 2^31 (llama.cpp copies them into signed ids). Returns the ids.
fn invocation_tokens<'a>(file: &GgufFile<'a>, sink: &mut Sink<'_>) -> Option<Vec<(u64, u64)>> {
    let kv = file.get("adapter.alora.invocation_tokens")?;
    let Some(arr) = kv.value.as_array() else {
        sink.emit(RuleId::AdapterKeyType, kv.value_offset(), || kv_path(&kv), || {
            format!(
                "`adapter.alora.invocation_tokens` is {}; llama.cpp refuses the adapter unless it is an array of u32 (\"invalid gguf type\")",
                crate::parse::type_label(&kv.value)
            )
        });
        return None;
    };
    if arr.elem_type != ValueType::U32 {
        sink.emit(RuleId::AdapterKeyType, kv.value_offset(), || kv_path(&kv), || {
            format!(
                "`adapter.alora.invocation_tokens` is {}; llama.cpp refuses the adapter unless its elements are u32 (\"invalid gguf element type\")",
                crate::parse::type_label(&kv.value)
            )
        });
        return None;
    }
    if arr.len == 0 {
        sink.emit(RuleId::AdapterInvocationToken, kv.value_offset(), || kv_path(&kv), || {
            "`adapter.alora.invocation_tokens` is empty: llama-server scans prompts for the sequence from its last id and reads before the array".into()
        });
        return None;
    }
    let mut ids = Vec::new();
    for e in arr.iter() {
        let Some(id) = e.value.as_u64() else { continue };
        if id > u64::from(i32::MAX.unsigned_abs()) {
            sink.emit(RuleId::AdapterInvocationUnreachable, e.offset, || format!("{}[{}]", kv_path(&kv), e.index), || {
                format!(
                    "invocation token {id} is not a token id: llama.cpp reads it as the negative id {}, which no prompt holds, so llama-server never activates the adapter",
                    i64::from(u32::try_from(id).unwrap_or(u32::MAX)).wrapping_sub(1 << 32)
                )
            });
        }
        ids.push((id, e.offset));
    }
    Some(ids)
}

/// Groups the tensors into pairs by name as the loader does; a name with
/// neither suffix (nor a norm's) is reported.
fn tensor_pairs<'f, 'a>(tensors: &[&'f TensorInfo<'a>], sink: &mut Sink<'_>) -> BTreeMap<Vec<u8>, Pair<'f, 'a>> {
    let mut pairs: BTreeMap<Vec<u8>, Pair<'f, 'a>> = BTreeMap::new();
    for t in tensors {
        let name = t.ggml_name();
        if name.ends_with(LORA_A) {
            pairs.entry(remove_all(name, LORA_A)).or_default().a = Some(t);
        } else if name.ends_with(LORA_B) {
            pairs.entry(remove_all(name, LORA_B)).or_default().b = Some(t);
        } else if !name.ends_with(SKIPPED_SUFFIX) {
            sink.emit(RuleId::AdapterTensorName, t.name.offset, || tensor_path(t, "name"), || {
                format!(
                    "adapter tensor `{}` ends neither in `.lora_a` nor in `.lora_b`; llama.cpp refuses the adapter (\"unexpected suffix\")",
                    t.name.display()
                )
            });
        }
    }
    pairs
}

fn check_rank(name: &[u8], a: &TensorInfo<'_>, b: &TensorInfo<'_>, sink: &mut Sink<'_>) {
    let (na, nb) = (ne(a), ne(b));
    let expert = is_expert(name);
    // 2-D everywhere, 3-D on an expert tensor (ggml_mul_mat_id takes one matrix per expert, never 4-D).
    let too_many =
        |n: &[u64; 4]| n.get(if expert { 3.. } else { 2.. }).is_some_and(|rest| rest.iter().any(|d| *d != 1));
    for (t, n) in [(a, &na), (b, &nb)] {
        if too_many(n) {
            sink.emit(RuleId::AdapterRank, t.dims_offset, || tensor_path(t, "dims"), || {
                let dims = t.dims().collect::<Vec<_>>();
                if expert {
                    format!(
                        "`{}` has shape {dims:?}; a LoRA matrix of an expert tensor is at most 3-D (one matrix per expert), and llama.cpp aborts (GGML_ASSERT in ggml_mul_mat_id) when it applies a 4-D one",
                        t.name.display()
                    )
                } else {
                    format!(
                        "`{}` has shape {dims:?}; a LoRA matrix is 2-D (3-D only on an expert tensor, `ffn_*_exps`), and llama.cpp aborts (GGML_ASSERT in ggml_mul_mat) when it applies a larger one",
                        t.name.display()
                    )
                }
            });
            return;
        }
    }
    if expert && na.get(2) != nb.get(2) {
        let (ea, eb) = (na.get(2).copied().unwrap_or(1), nb.get(2).copied().unwrap_or(1));
        let fewer = if ea < eb { a } else { b };
        sink.emit(RuleId::AdapterExpertCount, fewer.dims_offset, || tensor_path(fewer, "dims"), || {
            format!(
                "`{}`'s lora_a has {ea} expert matrices (ne[2]) and its lora_b {eb}: llama.cpp applies both with ggml_mul_mat_id to the experts the router picks, and for an expert id past the smaller count the CPU kernel writes out of bounds (llama_adapter_lora_init accepts the adapter; llama.cpp #29128)",
                quote_bytes(name)
            )
        });
    }
    let (a1, b0, a0) = (na.get(1).copied(), nb.first().copied(), na.first().copied());
    if name.ends_with(TOKEN_EMBD) {
        // A is [rank, n_vocab] and B [rank, n_embd]: rows of A are
        // gathered, then multiplied by B.
        if a0 != b0 {
            sink.emit(RuleId::AdapterRank, b.dims_offset, || tensor_path(b, "dims"), || {
                format!(
                    "`{}`'s lora_a has rank {} and its lora_b rank {}; llama.cpp aborts (GGML_ASSERT in ggml_mul_mat) at the first token",
                    quote_bytes(name),
                    a0.unwrap_or(0),
                    b0.unwrap_or(0)
                )
            });
        }
    } else if a1 != b0 {
        sink.emit(RuleId::AdapterRank, b.dims_offset, || tensor_path(b, "dims"), || {
            format!(
                "`{}`'s lora_a is {:?} and its lora_b {:?}: lora_a's ne[1] ({}) is not lora_b's ne[0] ({}); llama.cpp refuses the adapter (\"lora_a tensor is not transposed\")",
                quote_bytes(name),
                a.dims().collect::<Vec<_>>(),
                b.dims().collect::<Vec<_>>(),
                a1.unwrap_or(0),
                b0.unwrap_or(0)
            )
        });
    }
}

/// What one base model says of the adapter: each problem as rule, offset,
/// path and message.
type Problems = Vec<(RuleId, u64, String, String)>;

fn against_base(
    pairs: &BTreeMap<Vec<u8>, Pair<'_, '_>>,
    invocation: Option<&[(u64, u64)]>,
    base: &ModelFacts,
) -> Problems {
    let mut out = Problems::new();
    for (name, pair) in pairs {
        let (Some(a), Some(b)) = (pair.a, pair.b) else { continue };
        let shown = quote_bytes(name);
        let Some(dims) = std::str::from_utf8(name).ok().and_then(|n| base.tensor(n)) else {
            out.push((
                RuleId::AdapterBaseTensor,
                a.name.offset,
                tensor_path(a, "name"),
                format!(
                    "`{shown}` does not exist in the base model {}; llama.cpp refuses the adapter (\"maybe wrong base model?\")",
                    base.name
                ),
            ));
            continue;
        };
        let (m0, m1) = (dims.first().copied().unwrap_or(1), dims.get(1).copied().unwrap_or(1));
        let (na, nb) = (ne(a), ne(b));
        let ok = if name.ends_with(TOKEN_EMBD) {
            na.get(1) == Some(&m1) && nb.get(1) == Some(&m0)
        } else {
            na.first() == Some(&m0) && nb.get(1) == Some(&m1)
        };
        if ok {
            if let Some(problem) = expert_count(name, a, b, dims, base) {
                out.push(problem);
            }
        } else {
            out.push((
                RuleId::AdapterBaseShape,
                a.dims_offset,
                tensor_path(a, "dims"),
                format!(
                    "`{shown}` is {dims:?} in the base model {}, and its lora_a {:?} / lora_b {:?} do not fit it; llama.cpp refuses the adapter (\"incorrect shape (hint: maybe wrong base model?)\")",
                    base.name,
                    a.dims().collect::<Vec<_>>(),
                    b.dims().collect::<Vec<_>>()
                ),
            ));
        }
    }
    if let (Some(ids), Some(n_vocab)) = (invocation, base.n_vocab) {
        for (id, offset) in ids {
            if *id >= n_vocab && *id <= u64::from(i32::MAX.unsigned_abs()) {
                out.push((
                    RuleId::AdapterInvocationUnreachable,
                    *offset,
                    "kv adapter.alora.invocation_tokens".into(),
                    format!(
                        "invocation token {id} is not below the vocabulary size {n_vocab} of the base model {}: no prompt holds it, so llama-server never activates the adapter",
                        base.name
                    ),
                ));
            }
        }
    }
    out
}

/// An expert tensor's pair against the base tensor's expert count (its
/// ne[2]): fewer matrices than experts is an out-of-bounds write when the
/// router picks an expert past them, more are never used. A pair whose two
/// matrices disagree is reported without the base (`check_rank`).
fn expert_count(
    name: &[u8],
    a: &TensorInfo<'_>,
    b: &TensorInfo<'_>,
    dims: &[u64],
    base: &ModelFacts,
) -> Option<(RuleId, u64, String, String)> {
    let (na, nb) = (ne(a), ne(b));
    let (ea, eb) = (na.get(2).copied().unwrap_or(1), nb.get(2).copied().unwrap_or(1));
    if !is_expert(name) || ea != eb || na.get(3) != Some(&1) || nb.get(3) != Some(&1) {
        return None;
    }
    let experts = dims.get(2).copied().unwrap_or(1);
    let shown = quote_bytes(name);
    let pair = (a.dims().collect::<Vec<_>>(), b.dims().collect::<Vec<_>>());
    if ea < experts {
        Some((
            RuleId::AdapterExpertCount,
            a.dims_offset,
            tensor_path(a, "dims"),
            format!(
                "`{shown}` has {experts} experts in the base model {} and its lora_a {:?} / lora_b {:?} {}: llama.cpp loads the adapter (it compares ne[0] and ne[1] only), and when the router picks expert {ea} or above, the CPU kernel of ggml_mul_mat_id writes out of bounds (a segmentation fault at the first decode; llama.cpp #29128)",
                base.name,
                pair.0,
                pair.1,
                if ea == 1 { "one matrix (2-D)".to_string() } else { format!("{ea} expert matrices") }
            ),
        ))
    } else if ea > experts {
        Some((
            RuleId::AdapterExpertUnused,
            a.dims_offset,
            tensor_path(a, "dims"),
            format!(
                "`{shown}` has {experts} experts in the base model {} and its lora_a {:?} / lora_b {:?} {ea} expert matrices: llama.cpp runs it, but the router never picks the matrices past {experts}; the adapter was made for another base model",
                base.name, pair.0, pair.1
            ),
        ))
    } else {
        None
    }
}

fn pair_with_base(
    file: &GgufFile<'_>,
    arch: Option<&str>,
    pairs: &BTreeMap<Vec<u8>, Pair<'_, '_>>,
    invocation: Option<&[(u64, u64)]>,
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    let Some(companions) = super::companions(sink, "base model", examined) else { return };
    let given = companions.given;
    let models = &companions.models;
    let (whole, split): (Vec<_>, Vec<_>) = models.iter().partition(|m| m.all_tensors);
    if whole.is_empty() {
        let names: Vec<&str> = split.iter().map(|m| m.name.as_str()).collect();
        examined.push(Examined::skipped(
            "pairing",
            format!("base model: {} is a shard of a split set, which holds only some of its tensors", names.join(", ")),
        ));
        return;
    }
    let models: Vec<_> = whole.into_iter().cloned().collect();
    let same_arch: Vec<_> = models.iter().filter(|m| Some(m.architecture.as_str()) == arch).collect();
    if same_arch.is_empty() {
        if given {
            let first = models.first().map(|m| (m.name.clone(), m.architecture.clone())).unwrap_or_default();
            let at = file.get("general.architecture");
            sink.emit(
                RuleId::AdapterArchitecture,
                at.as_ref().map_or(super::KV_SECTION, KeyValue::value_offset),
                || at.as_ref().map_or_else(|| "kv".into(), kv_path),
                || {
                    format!(
                        "the adapter is for `{}` and its base model {} is `{}`; llama.cpp refuses the pair (\"model arch and LoRA arch mismatch\")",
                        arch.unwrap_or("(none)"),
                        first.0,
                        first.1
                    )
                },
            );
            examined.push(Examined::checked("pairing"));
        } else {
            examined.push(Examined::skipped(
                "pairing",
                format!("base model: no model of architecture `{}` in the folder", arch.unwrap_or("(none)")),
            ));
        }
        return;
    }
    // Found beside the file: the adapter must fit one of them; named: all.
    let results: Vec<(&ModelFacts, Problems)> =
        same_arch.iter().map(|m| (m.as_ref(), against_base(pairs, invocation, m))).collect();
    let fitting = results.iter().find(|(_, p)| p.is_empty()).map(|(m, _)| m.name.clone());
    match (given, fitting) {
        (false, Some(name)) => {
            examined.push(Examined::partly("pairing", format!("base model {name} (found in the folder)")));
        }
        _ => {
            for (m, problems) in &results {
                for (rule, offset, path, message) in problems {
                    sink.emit(*rule, *offset, || path.clone(), || message.clone());
                }
                if !given {
                    // One candidate's findings say it all.
                    let _ = m;
                    break;
                }
            }
            let names: Vec<&str> = results.iter().map(|(m, _)| m.name.as_str()).collect();
            examined.push(Examined::partly("pairing", format!("base model {}", names.join(", "))));
        }
    }
}
