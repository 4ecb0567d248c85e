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
use crate::loader::Loader;
use crate::parse::{GgufFile, KeyValue, TensorInfo, Value};
use crate::report::{Examined, Sink};
use crate::rules::RuleId;
use crate::types::type_info;

use super::kv::kv_path;
use super::llama_arch_table::{ArchTable, EXPERT_GATING_FUNCS, ExpertGating, SwaMasks, SwaWhen};
use super::model_tensors::layer0;

/// Per-layer hyper-parameters llama.cpp reads with `get_key_or_arr`: a
/// scalar, or an array of `block_count` values.
const PER_LAYER: [&str; 4] =
    ["feed_forward_length", "attention.head_count", "attention.head_count_kv", "expert_used_count"];

fn arch_key<'a>(file: &GgufFile<'a>, arch: &str, name: &str) -> Option<KeyValue<'a>> {
    file.get(&format!("{arch}.{name}"))
}

/// What kind of GGUF file this is, by `general.type` (and the
/// architecture): which model-layer rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A model llama.cpp loads (the default).
    Model,
    /// A LoRA adapter (`general.type` = `adapter`).
    Adapter,
    /// A multimodal projector (`mmproj`, or architecture `clip`).
    Projector,
    /// An importance matrix (`general.type` = `imatrix`).
    Imatrix,
    /// A control vector (architecture `controlvector`).
    ControlVector,
    /// A diffusion model, judged for this loader (stable-diffusion.cpp or
    /// ComfyUI-GGUF; [`super::diffusion::judged_for`]).
    Diffusion(Loader),
}

impl FileKind {
    /// The kind of `file`, judged for `loader` (`--loader`): a diffusion
    /// loader makes every file a diffusion model; unset, a file whose
    /// architecture or tensor names are a diffusion model's is one
    /// ([`super::diffusion::is_for_diffusion`]).
    pub(crate) fn of(file: &GgufFile<'_>, arch: Option<&str>, loader: Option<Loader>) -> FileKind {
        if let Some(l) = loader.filter(|l| l.is_diffusion()) {
            return FileKind::Diffusion(l);
        }
        let t = file.get("general.type").and_then(|kv| kv.value.as_string()).map(|s| s.bytes);
        match t {
            Some(b"adapter") => FileKind::Adapter,
            Some(b"mmproj" | b"clip" | b"projector") => FileKind::Projector,
            Some(t) if t == super::imatrix_table::GENERAL_TYPE.as_bytes() => FileKind::Imatrix,
            _ if arch == Some("clip") => FileKind::Projector,
            _ if arch == Some(super::control_vector::ARCH) => FileKind::ControlVector,
            _ if loader.is_none() && super::diffusion::is_for_diffusion(file, arch) => {
                FileKind::Diffusion(Loader::SdCpp)
            }
            _ => FileKind::Model,
        }
    }

    /// The kind of `file` as this validation judges it: from the loader
    /// decided before its tensor infos ([`Sink::file_loader`]), without
    /// looking at its tensor names again, or, where none was decided (a split
    /// set's model layer), decided now.
    pub(crate) fn judged(file: &GgufFile<'_>, arch: Option<&str>, sink: &Sink<'_>) -> FileKind {
        match sink.file_loader {
            Some(l) if l.is_diffusion() => FileKind::Diffusion(l),
            Some(l) => FileKind::of(file, arch, Some(l)),
            None => FileKind::of(file, arch, sink.loader()),
        }
    }

    /// The layer of checks a kind of file llama.cpp opens has instead of
    /// the model layer (`None`: a model).
    fn layer(self) -> Option<&'static str> {
        match self {
            FileKind::Adapter => Some("adapter"),
            FileKind::ControlVector => Some("control vector"),
            FileKind::Projector => Some("projector"),
            FileKind::Imatrix => Some("imatrix"),
            FileKind::Diffusion(_) => Some("diffusion"),
            FileKind::Model => None,
        }
    }

    /// What said the file is of this kind: `general.type`, or its
    /// architecture.
    fn detected_by(self, file: &GgufFile<'_>) -> &'static str {
        if let FileKind::Diffusion(_) = self {
            return if file.get("general.architecture").is_some() { "its architecture" } else { "its tensor names" };
        }
        if file.get("general.type").is_some() && self != FileKind::ControlVector {
            "general.type"
        } else {
            "its architecture"
        }
    }

    fn describe(self) -> &'static str {
        match self {
            FileKind::Model => "a model",
            FileKind::Adapter => "a LoRA adapter",
            FileKind::Projector => "a multimodal projector",
            FileKind::Imatrix => "an importance matrix",
            FileKind::ControlVector => "a control vector",
            FileKind::Diffusion(_) => "a diffusion model",
        }
    }
}

/// Runs the model layer (`model-*`, `tokenizer-*` and `split-*` rules) and
/// records what it examined. A shard of a split set (`split.count` above 1)
/// gets the `split-*` rules one shard can answer; its model and tokenizer
/// are checked on the whole set ([`crate::split_set`]), since only the first
/// shard holds the metadata and each holds some of the tensors.
pub(crate) fn check_layer(file: &GgufFile<'_>, arch: Option<&str>, sink: &mut Sink<'_>, examined: &mut Vec<Examined>) {
    if sink.options().container_only {
        for layer in ["model", "tokenizer", "split"] {
            examined.push(Examined::skipped(layer, crate::report::CONTAINER_ONLY));
        }
        return;
    }
    super::split::check(file, sink);
    if let Some(shard) = super::split::role(file) {
        let why = format!(
            "a shard of a split set (split.no {}, split.count {}): checked on the set",
            shard.no_label(),
            shard.count
        );
        examined.push(Examined::partly("split", "this shard only: the set is checked as a whole"));
        examined.push(Examined::skipped("model", why.clone()));
        examined.push(Examined::skipped("tokenizer", why));
        return;
    }
    examined.push(Examined::partly("split", "a single file, not a shard of a split set"));
    let tensors: Vec<_> = file.tensors.iter().collect();
    check_model(file, arch, &tensors, true, sink, examined);
}

/// The model and tokenizer rules over `file`'s metadata and `tensors` (the
/// file's own, or every shard's of a split set). Without `all_tensors` (a
/// set with shards missing) the tensor rules are left out.
pub(crate) fn check_model(
    file: &GgufFile<'_>,
    arch: Option<&str>,
    tensors: &[&TensorInfo<'_>],
    all_tensors: bool,
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    let kind = FileKind::judged(file, arch, sink);
    if let Some(layer) = kind.layer() {
        // Another kind of file llama.cpp opens, or a file for another
        // loader: checked as its own loader reads it.
        let why = match kind {
            FileKind::Diffusion(l) => format!(
                "the file is {} ({}), for {l}, not a model llama.cpp loads: see `{layer}`",
                kind.describe(),
                kind.detected_by(file)
            ),
            _ => format!("the file is {} ({}), not a model: see `{layer}`", kind.describe(), kind.detected_by(file)),
        };
        examined.push(Examined::skipped("model", why.clone()));
        examined.push(Examined::skipped("tokenizer", why));
        match kind {
            FileKind::Adapter => super::adapter::check(file, tensors, sink, examined),
            FileKind::ControlVector => super::control_vector::check(file, tensors, sink, examined),
            FileKind::Imatrix => super::imatrix::check(file, tensors, sink, examined),
            FileKind::Diffusion(l) => super::diffusion::check(file, arch, tensors, l, sink, examined),
            FileKind::Projector | FileKind::Model => {
                let facts = super::projector::check(file, tensors, sink);
                examined.push(match facts.not_checked.as_slice() {
                    [] => Examined::checked("projector"),
                    reasons if facts.skipped => Examined::skipped("projector", reasons.join("; ")),
                    reasons => Examined::partly("projector", reasons.join("; ")),
                });
                if !facts.skipped {
                    super::projector_pairing::check(file, &facts, sink, examined);
                }
            }
        }
        return;
    }
    let needs_vocab = arch.is_some_and(|a| super::llama_arches::LLAMA_ARCHES.contains(&a)) && !tensors.is_empty();
    super::tokenizer::check(file, needs_vocab, sink);
    examined.push(Examined::checked("tokenizer"));
    let Some(arch) = arch else {
        examined.push(Examined::skipped("model", "no general.architecture"));
        return;
    };
    if !check(file, arch, sink) {
        if sink.loader() == Some(Loader::LlamaCpp)
            && let Some(kv) = file.get("general.architecture")
        {
            sink.emit(RuleId::ModelArchitectureRefused, kv.value_offset(), || super::kv::kv_path(&kv), || {
                format!("architecture `{arch}` is not one llama.cpp knows: it refuses the file (\"unknown model architecture\")")
            });
            examined.push(Examined::checked("model"));
            return;
        }
        examined.push(Examined::skipped("model", format!("architecture `{arch}` is not one llama.cpp knows")));
        return;
    }
    let Some(table) = super::model_tensors::arch_table(arch) else {
        examined.push(Examined::partly(
            "model",
            format!("hyper-parameters checked; llama.cpp has no model class for `{arch}`"),
        ));
        return;
    };
    if tensors.is_empty() {
        sink.emit(RuleId::ModelNotChecked, super::KV_SECTION, || "tensors".into(), || {
            "the file has no tensors (a vocabulary-only file): required hyper-parameters and tensors were not checked".into()
        });
        examined.push(Examined::partly(
            "model",
            "vocabulary only: no tensors, so required keys and tensors were not checked",
        ));
        return;
    }
    check_expert_gating(file, arch, table, tensors, sink);
    check_graph_inputs(file, arch, table, sink);
    if all_tensors {
        super::tensor_extra::check(file, tensors, sink);
    }
    if !all_tensors {
        super::model_tensors::check_required_keys(file, table, sink);
        examined.push(Examined::partly(
            "model",
            "hyper-parameters checked; shards are missing, so tensors were not checked",
        ));
        return;
    }
    match super::model_tensors::check(file, table, tensors, sink) {
        super::model_tensors::TensorScope::Checked => examined.push(Examined::checked("model")),
        super::model_tensors::TensorScope::NamesNotChecked => {
            sink.emit(RuleId::ModelNotChecked, super::KV_SECTION, || "tensors".into(), || {
                format!("llama.cpp's loader for `{arch}` ({}) builds some tensor names at run time: unknown tensor names were not checked", table.class)
            });
            examined.push(Examined::partly("model", "tensor names not checked (names built at run time)"));
        }
    }
    check_file_type(file, tensors, sink);
}

/// Runs the `model-*` hyper-parameter rules for the architecture `arch`;
/// false when llama.cpp does not know it (and nothing was checked).
pub(crate) fn check(file: &GgufFile<'_>, arch: &str, sink: &mut Sink<'_>) -> bool {
    if !super::llama_arches::LLAMA_ARCHES.contains(&arch) {
        if let Some(kv) = file.get("general.architecture") {
            sink.emit(
                RuleId::ModelArchitectureUnknown,
                kv.value_offset(),
                || kv_path(&kv),
                || {
                    format!(
                        "architecture `{}` is not one llama.cpp knows; its hyper-parameters were not checked",
                        crate::parse::quote_bytes(arch.as_bytes())
                    )
                },
            );
        }
        return false;
    }
    let block_count =
        arch_key(file, arch, "block_count").and_then(|kv| {
            // A value that is not a non-negative integer is standard-key-type's.
            let n = kv.value.as_u64()?;
            if n == 0 || n > limits::LLAMA_MAX_LAYERS {
                sink.emit(RuleId::ModelBlockCount, kv.value_offset(), || kv_path(&kv), || {
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
                || kv_path(&kv),
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
    check_heads(file, arch, sink);
    check_rope(file, arch, sink);
    true
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
            || kv_path(&kv),
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
    let Some(used) = arch_key(file, arch, "expert_used_count") else {
        if let Some(kv) = count
            && n_expert.is_some_and(|n| n > 0)
        {
            sink.emit(RuleId::ModelExpertCount, kv.value_offset(), || kv_path(&kv), || {
                format!("`{}` is set but `{arch}.expert_used_count` is absent (0): llama.cpp aborts (GGML_ASSERT n_expert_used > 0)", kv.key.display())
            });
        }
        return;
    };
    let used_max = match used.value {
        Value::Array(a) => a.iter().filter_map(|e| e.value.as_u64()).max(),
        v => v.as_u64(),
    };
    if let Some(u) = used_max
        && u == 0
        && n_expert.is_some_and(|n| n > 0)
    {
        sink.emit(
            RuleId::ModelExpertCount,
            used.value_offset(),
            || kv_path(&used),
            || {
                format!(
                    "`{}` is 0 with {} experts: llama.cpp aborts (GGML_ASSERT n_expert_used > 0)",
                    used.key.display(),
                    n_expert.unwrap_or(0)
                )
            },
        );
    }
    if let Some(u) = used_max
        && u > n_expert.unwrap_or(0)
    {
        sink.emit(
            RuleId::ModelExpertCount,
            used.value_offset(),
            || kv_path(&used),
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

/// The `rope.scaling.type` values llama.cpp knows (`LLAMA_ROPE_SCALING_TYPES`
/// of src/llama-model.cpp); any other aborts the loader.
const ROPE_SCALING_TYPES: [&str; 4] = ["none", "linear", "yarn", "longrope"];

/// Architectures whose `rope.dimension_count` must equal the head size
/// (src/llama-model.cpp load_hparams, "invalid n_rot").
const ROPE_EQUALS_HEAD: [&str; 4] = ["llama", "deci", "falcon", "llama-embed"];

fn check_rope(file: &GgufFile<'_>, arch: &str, sink: &mut Sink<'_>) {
    if let Some(kv) = arch_key(file, arch, "rope.scaling.type")
        && let Some(s) = kv.value.as_string()
        && !ROPE_SCALING_TYPES.iter().any(|t| t.as_bytes() == s.bytes)
    {
        sink.emit(
            RuleId::ModelRope,
            kv.value_offset(),
            || kv_path(&kv),
            || {
                format!(
                    "`{}` is `{}`; llama.cpp knows {} and aborts the process (GGML_ASSERT) on any other",
                    kv.key.display(),
                    s.display(),
                    ROPE_SCALING_TYPES.join(", ")
                )
            },
        );
    }
    if !ROPE_EQUALS_HEAD.contains(&arch) {
        return;
    }
    let Some(kv) = arch_key(file, arch, "rope.dimension_count") else { return };
    let Some(n_rot) = kv.value.as_u64() else { return };
    let n_head = arch_key(file, arch, "attention.head_count").and_then(layer0);
    let Some(n_head) = n_head.filter(|h| *h > 0) else { return };
    let head = match arch_key(file, arch, "attention.key_length") {
        Some(k) => k.value.as_u64(),
        None => {
            arch_key(file, arch, "embedding_length").and_then(|e| e.value.as_u64()).and_then(|e| e.checked_div(n_head))
        }
    };
    if let Some(head) = head
        && head != n_rot
    {
        sink.emit(RuleId::ModelRope, kv.value_offset(), || kv_path(&kv), || {
            format!("`{}` is {n_rot} but the head size is {head}; llama.cpp refuses `{arch}` models unless they are equal (invalid n_rot)", kv.key.display())
        });
    }
}

fn check_heads(file: &GgufFile<'_>, arch: &str, sink: &mut Sink<'_>) {
    let Some(heads) = arch_key(file, arch, "attention.head_count") else { return };
    let Some(n_head) = layer0(heads).filter(|h| *h > 0) else { return };
    // Only a model with tensors builds the graph (a vocabulary-only file
    // never does).
    if let Some(kv) = arch_key(file, arch, "attention.head_count_kv").filter(|_| !file.tensors.is_empty()) {
        // Layer by layer: a per-layer array gives each layer its own counts
        // (0 key/value heads for a layer without attention).
        let layers = arch_key(file, arch, "block_count")
            .and_then(|b| b.value.as_u64())
            .unwrap_or(1)
            .clamp(1, limits::LLAMA_MAX_LAYERS);
        let at = |v: &KeyValue<'_>, il: u64| match v.value {
            Value::Array(a) => a.iter().nth(usize::try_from(il).ok()?).and_then(|e| e.value.as_u64()),
            other => other.as_u64(),
        };
        let bad = (0..layers).find_map(|il| {
            let (h, k) = (at(&heads, il)?, at(&kv, il)?);
            (k > 0 && h > 0 && h.checked_rem(k) != Some(0)).then_some((il, h, k))
        });
        if let Some((il, h, k)) = bad {
            sink.emit(RuleId::ModelHeadGroups, kv.value_offset(), || kv_path(&kv), || {
                format!("layer {il}: {h} attention heads do not split into groups of {k} key/value heads; llama.cpp aborts (GGML_ASSERT(ggml_can_mul_mat(k, q))) when it builds the attention graph, as it creates a context")
            });
        }
    }
    if arch_key(file, arch, "attention.key_length").is_none()
        && let Some(e) = arch_key(file, arch, "embedding_length").and_then(|e| e.value.as_u64())
        && e.checked_rem(n_head) != Some(0)
    {
        sink.emit(RuleId::ModelHeadCount, heads.value_offset(), || kv_path(&heads), || {
            format!("embedding_length {e} is not a multiple of {n_head} heads and `{arch}.attention.key_length` is absent: llama.cpp's head size {e}/{n_head} is rounded down")
        });
    }
}

/// `model-expert-gating`: the gating function the graph of an expert layer
/// passes to `build_moe_ffn`, which aborts on any value its switch does
/// not handle (NONE included). Only files with expert layers: a dense model
/// never reaches that switch.
fn check_expert_gating(
    file: &GgufFile<'_>,
    arch: &str,
    table: &ArchTable,
    tensors: &[&TensorInfo<'_>],
    sink: &mut Sink<'_>,
) {
    if table.expert_gating == ExpertGating::Unused {
        return;
    }
    let is_router = |t: &&&TensorInfo<'_>| {
        let name = t.ggml_name();
        name.starts_with(b"blk.") && name.ends_with(b".ffn_gate_inp.weight")
    };
    let Some(router) = tensors.iter().find(is_router) else { return };
    let kv = arch_key(file, arch, "expert_gating_func");
    let value = match &kv {
        // A required key that is absent is model-key-missing's.
        None if table.required_keys.contains(&"expert_gating_func") => return,
        None => 0,
        // A value of another type is the key-type rules'.
        Some(kv) => match kv.value.as_u64() {
            Some(v) => v,
            None => return,
        },
    };
    if value == 0 && table.expert_gating == ExpertGating::DefaultsNone {
        return;
    }
    if EXPERT_GATING_FUNCS.iter().any(|&(v, _)| v == value) {
        return;
    }
    let known = EXPERT_GATING_FUNCS.iter().map(|(v, n)| format!("{v} {n}")).collect::<Vec<_>>().join(", ");
    let router_name = crate::parse::quote_bytes(router.ggml_name());
    let what = match &kv {
        None => format!("`{arch}.expert_gating_func` is absent, so llama.cpp's gating function is NONE"),
        Some(kv) => format!("`{}` is {value}", kv.key.display()),
    };
    let (offset, path) = match &kv {
        Some(kv) => (kv.value_offset(), kv_path(kv)),
        None => (super::KV_SECTION, "kv".to_string()),
    };
    sink.emit(RuleId::ModelExpertGating, offset, || path, || {
        format!("{what}: llama.cpp loads the model, then aborts (GGML_ABORT in build_moe_ffn) building the graph of its expert layers ({router_name}) as a context is created; it handles {known}")
    });
}

/// `model-graph-input`: inputs the graph builds for a kind of layer the
/// model has none of (no buffer, so an abort at the first evaluation).
fn check_graph_inputs(file: &GgufFile<'_>, arch: &str, table: &ArchTable, sink: &mut Sink<'_>) {
    if table.swa_masks.is_none() && table.nope_step.is_none() {
        return;
    }
    let Some(blocks) = arch_key(file, arch, "block_count").and_then(|kv| kv.value.as_u64()) else { return };
    let nextn = arch_key(file, arch, "nextn_predict_layers").and_then(|kv| kv.value.as_u64()).unwrap_or(0);
    let n_layer = blocks.saturating_sub(nextn).min(limits::LLAMA_MAX_LAYERS);
    let window = arch_key(file, arch, "attention.sliding_window");
    let window_value = window.as_ref().and_then(|kv| kv.value.as_u64());
    let at = |kv: Option<KeyValue<'_>>| match kv {
        Some(kv) => (kv.value_offset(), kv_path(&kv)),
        None => (super::KV_SECTION, "kv".to_string()),
    };
    if let Some(swa) = table.swa_masks
        && (swa.when == SwaWhen::Always || window_value.is_some_and(|w| w > 0))
        && let Some((n_swa, n_full, pattern_kv)) = swa_layers(file, arch, swa, n_layer)
        && n_layer > 0
        && (n_swa == 0 || n_full == 0)
    {
        let (missing, used) =
            if n_full == 0 { ("full-attention", "sliding-window") } else { ("sliding-window", "full-attention") };
        let (offset, path) = at(pattern_kv.or_else(|| arch_key(file, arch, "block_count")));
        sink.emit(RuleId::ModelGraphInput, offset, || path, || {
            format!("all {n_layer} layers use {used} attention, so the {missing} mask llama.cpp builds for `{arch}` (attention without a KV cache) is used by no layer and gets no buffer: it loads the model, then aborts (GGML_ASSERT(buffer)) at the first evaluation")
        });
    }
    if table.nope_step.is_some() && window_value == Some(0) {
        let (offset, path) = at(window);
        sink.emit(RuleId::ModelGraphInput, offset, || path, || {
            format!("`{arch}.attention.sliding_window` is 0: llama.cpp's loader then leaves the attention-temperature scale at 0, yet its `{arch}` graph still builds that input; it loads the model, then aborts (GGML_ASSERT(f_attn_temp_scale != 0.0f)) at the first evaluation")
        });
    } else if let Some(step) = table.nope_step
        && step > 0
        && n_layer < step
        && n_layer > 0
    {
        let (offset, path) = at(arch_key(file, arch, "block_count"));
        sink.emit(RuleId::ModelGraphInput, offset, || path, || {
            format!("`{arch}` with {n_layer} layers has no NoPE layer (every {step}th), so the attention-temperature input its graph builds for them is used by no layer and gets no buffer: llama.cpp loads the model, then aborts (GGML_ASSERT(buf != NULL && \"tensor buffer not set\")) at the first evaluation")
        });
    }
}

/// How many of the first `n_layer` layers use sliding-window attention and
/// how many full attention, as `llama_hparams::set_swa_pattern` or an
/// explicit `ARCH.attention.sliding_window_pattern` array decides, with the
/// key when the file has one; `None` when the file's value cannot be read.
fn swa_layers<'a>(
    file: &GgufFile<'a>,
    arch: &str,
    swa: SwaMasks,
    n_layer: u64,
) -> Option<(u64, u64, Option<KeyValue<'a>>)> {
    let kv = arch_key(file, arch, "attention.sliding_window_pattern");
    let mut n_swa = 0u64;
    match kv.as_ref().map(|kv| kv.value) {
        Some(Value::Array(a)) => {
            if a.len < n_layer {
                return None;
            }
            for e in a.iter().take(usize::try_from(n_layer).ok()?) {
                let v = match e.value {
                    Value::Bool(b) => b != 0,
                    v => v.as_u64()? != 0,
                };
                n_swa = n_swa.saturating_add(u64::from(v));
            }
        }
        other => {
            let n = match other {
                Some(v) => v.as_u64()?,
                None => swa.pattern,
            };
            for il in 0..n_layer {
                let is_swa = n == 0
                    || match il.checked_rem(n) {
                        Some(r) if swa.dense_first => r != 0,
                        Some(r) => r < n.saturating_sub(1),
                        None => true,
                    };
                n_swa = n_swa.saturating_add(u64::from(is_swa));
            }
        }
    }
    Some((n_swa, n_layer.saturating_sub(n_swa), kv))
}

/// `general.file_type` (llama_ftype) -> the ggml types such a file's large
/// tensors have (`include/llama.h`, `src/llama-quant.cpp` default types).
fn file_type_types(ftype: u64) -> Option<&'static [u32]> {
    Some(match ftype {
        0 => &[0],
        1 => &[1],
        2 => &[2],
        3 => &[3],
        7 => &[8],
        8 => &[6],
        9 => &[7],
        10 | 21 => &[10],
        11..=13 => &[11],
        14 | 15 => &[12],
        16 | 17 => &[13],
        18 => &[14],
        19 => &[16],
        20 => &[17],
        22 | 26 | 27 => &[21],
        23 => &[18],
        24 => &[19],
        25 => &[20],
        28 | 29 => &[22],
        30 => &[23],
        31 => &[29],
        32 => &[30],
        36 => &[34],
        37 => &[35],
        38 => &[39],
        39 => &[40],
        40 => &[41],
        41 => &[42],
        _ => return None,
    })
}

fn check_file_type(file: &GgufFile<'_>, tensors: &[&TensorInfo<'_>], sink: &mut Sink<'_>) {
    let Some(kv) = file.get("general.file_type") else { return };
    let Some(ftype) = kv.value.as_u64() else { return };
    match file_type_types(ftype) {
        None => sink.emit(RuleId::ModelFileType, kv.value_offset(), || kv_path(&kv), || {
            format!("general.file_type {ftype} is not a llama_ftype llama.cpp knows (it prints \"unknown, may not work\")")
        }),
        Some(types) => {
            if tensors.iter().any(|t| types.contains(&t.type_id)) {
                return;
            }
            // llama.cpp's quantizer falls back to another type for a matrix
            // whose rows are not a multiple of the type's block (a tiny
            // model's Q4_K_M may hold no Q4_K): the key is wrong only when
            // some matrix could have held the type it names.
            let could_hold = |t: &&&TensorInfo<'_>| {
                let Some(ne0) = t.dims().next() else { return false };
                t.n_dims >= 2
                    && types.iter().any(|&ty| {
                        type_info(ty).is_some_and(|i| ne0.checked_rem(u64::from(i.block_size)) == Some(0))
                    })
            };
            let fitting = tensors.iter().filter(could_hold).count();
            if fitting > 0 {
                sink.emit(RuleId::ModelFileType, kv.value_offset(), || kv_path(&kv), || {
                    format!("general.file_type {ftype} names a type no tensor has, though {fitting} matrices have rows it fits; llama.cpp ignores the key, but tools that trust it misreport the quantization")
                });
            }
        }
    }
}

/// What a projector, LoRA adapter or control vector is checked against in
/// `file`, a model llama.cpp loads: `None` for any other kind of file, or
/// a file without an architecture or tensors.
pub(crate) fn model_facts(file: &GgufFile<'_>, name: &str) -> Option<crate::report::ModelFacts> {
    let arch_kv = file.get("general.architecture")?;
    let arch = arch_kv.value.as_string()?.as_str()?.to_string();
    if FileKind::of(file, Some(&arch), None) != FileKind::Model || file.tensors.is_empty() {
        return None;
    }
    let n_embd = arch_key(file, &arch, "embedding_length").and_then(|kv| kv.value.as_u64());
    // llama_hparams::n_embd_inp: n_embd times one plus the deepstack layers
    // (`ARCH.n_deepstack_layers`, or the distinct non-negative entries of
    // `ARCH.deepstack_mapping`).
    let deepstack = arch_key(file, &arch, "n_deepstack_layers").and_then(|kv| kv.value.as_u64()).or_else(|| {
        let kv = arch_key(file, &arch, "deepstack_mapping")?;
        let arr = *kv.value.as_array()?;
        let mut seen: Vec<u64> = arr.iter().filter_map(|e| e.value.as_u64()).collect();
        seen.sort_unstable();
        seen.dedup();
        u64::try_from(seen.len()).ok()
    });
    let n_embd_inp = n_embd.and_then(|n| n.checked_mul(deepstack.unwrap_or(0).checked_add(1)?));
    let n_layer = arch_key(file, &arch, "block_count").and_then(|kv| kv.value.as_u64());
    let n_vocab = file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().map(|a| a.len));
    let mut tensors: Vec<(String, Vec<u64>)> =
        file.tensors.iter().filter_map(|t| Some((t.name.as_str()?.to_string(), t.dims().collect()))).collect();
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    let all_tensors = super::split::role(file).is_none();
    let projector_tokens = super::projector_pairing::vocab_lookups(file);
    Some(crate::report::ModelFacts {
        projector_tokens,
        all_tensors,
        name: name.to_string(),
        architecture: arch,
        n_embd,
        n_embd_inp,
        n_layer,
        n_vocab,
        tensors,
    })
}
