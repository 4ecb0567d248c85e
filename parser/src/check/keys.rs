//! Rules on the well-known keys: `general.alignment`,
//! `general.architecture`, the types of standard keys, the tokenizer arrays
//! and special token ids, and the keys a file must have.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{GgufFile, KeyValue, Value, type_label};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

use super::kv::kv_path;
use super::tensors::TensorFacts;

/// What later rules need to know from the metadata.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyFacts {
    /// Alignment in effect for layout rules.
    pub(crate) alignment: u64,
    /// `general.architecture` if it is a string.
    pub(crate) architecture: Option<String>,
}

/// Checks the well-known keys; returns the facts later rules need.
pub(crate) fn check_known(file: &GgufFile<'_>, sink: &mut Sink<'_>) -> KeyFacts {
    // Layout rules use the alignment every reader lays data out with;
    // check_alignment only judges the key.
    let mut facts = KeyFacts { alignment: file.alignment(), architecture: None };
    if let Some(kv) = file.get("general.alignment") {
        check_alignment(kv, sink);
    }
    if let Some(kv) = file.get("general.architecture") {
        match kv.value.as_string() {
            Some(s) => {
                facts.architecture = Some(String::from_utf8_lossy(s.bytes).into_owned());
                let ok = !s.bytes.is_empty() && s.bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
                if !ok {
                    sink.emit(
                        RuleId::ArchitectureCharset,
                        kv.value_offset(),
                        || kv_path(kv),
                        || format!("architecture `{}` is not [a-z0-9]+", s.display()),
                    );
                }
            }
            None => sink.emit(
                RuleId::ArchitectureType,
                kv.type_offset(),
                || kv_path(kv),
                || format!("general.architecture is {}, not a string", type_label(&kv.value)),
            ),
        }
    }
    check_standard_types(file, facts.architecture.as_deref(), sink);
    check_tokenizer(file, sink);
    facts
}

fn check_alignment(kv: &KeyValue<'_>, sink: &mut Sink<'_>) {
    let Value::U32(a) = kv.value else {
        sink.emit(
            RuleId::AlignmentType,
            kv.type_offset(),
            || kv_path(kv),
            || format!("general.alignment is {}; it must be a scalar u32", type_label(&kv.value)),
        );
        return;
    };
    let at = kv.value_offset();
    if a == 0 {
        sink.emit(RuleId::AlignmentZero, at, || kv_path(kv), || "general.alignment is 0".into());
        return;
    }
    if !a.is_power_of_two() {
        sink.emit(
            RuleId::AlignmentPowerOfTwo,
            at,
            || kv_path(kv),
            || format!("general.alignment {a} is not a power of two"),
        );
    }
    if a % 8 != 0 {
        sink.emit(
            RuleId::AlignmentMultipleOf8,
            at,
            || kv_path(kv),
            || format!("general.alignment {a} is not a multiple of 8"),
        );
    }
    if u64::from(a) > limits::MAX_SANE_ALIGNMENT {
        sink.emit(RuleId::AlignmentLarge, at, || kv_path(kv), || format!("general.alignment {a} is above 1 MiB"));
    }
}

/// Expected type of a standard key.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Scalar(ValueType),
    ArrayOf(ValueType),
    /// A scalar u32, or an array of i32/u32 (per-layer values).
    U32OrArray,
}

impl Expect {
    fn matches(self, v: &Value<'_>) -> bool {
        match (self, v) {
            (Expect::Scalar(t), v) => v.value_type() == t,
            (Expect::ArrayOf(t), Value::Array(a)) => a.elem_type == t,
            (Expect::U32OrArray, Value::U32(_)) => true,
            (Expect::U32OrArray, Value::Array(a)) => matches!(a.elem_type, ValueType::I32 | ValueType::U32),
            _ => false,
        }
    }

    fn describe(self) -> String {
        match self {
            Expect::Scalar(t) => t.to_string(),
            Expect::ArrayOf(t) => format!("array[{t}]"),
            Expect::U32OrArray => "u32 or array[i32]".into(),
        }
    }
}

const STRING_KEYS: &[&str] = &[
    "general.type",
    "general.name",
    "general.author",
    "general.version",
    "general.organization",
    "general.basename",
    "general.finetune",
    "general.description",
    "general.quantized_by",
    "general.size_label",
    "general.license",
    "general.license.name",
    "general.license.link",
    "general.url",
    "general.doi",
    "general.uuid",
    "general.repo_url",
    "general.source.url",
    "general.source.doi",
    "general.source.uuid",
    "general.source.repo_url",
    "tokenizer.ggml.model",
    "tokenizer.ggml.pre",
    "tokenizer.chat_template",
    "tokenizer.huggingface.json",
    "tokenizer.rwkv.world",
];

fn standard_type(key: &str, arch: Option<&str>) -> Option<Expect> {
    use ValueType as T;
    if STRING_KEYS.contains(&key) {
        return Some(Expect::Scalar(T::String));
    }
    let exact = match key {
        "general.file_type" | "general.base_model.count" | "general.dataset.count" => Expect::Scalar(T::U32),
        "general.tags"
        | "general.languages"
        | "tokenizer.ggml.tokens"
        | "tokenizer.ggml.merges"
        | "tokenizer.chat_templates" => Expect::ArrayOf(T::String),
        "tokenizer.ggml.scores" => Expect::ArrayOf(T::F32),
        "tokenizer.ggml.token_type" => Expect::ArrayOf(T::I32),
        "tokenizer.ggml.precompiled_charsmap" => Expect::ArrayOf(T::U8),
        "split.no" | "split.count" => Expect::Scalar(T::U16),
        "split.tensors.count" => Expect::Scalar(T::I32),
        k if k.starts_with("tokenizer.ggml.") && k.ends_with("_token_id") => Expect::Scalar(T::U32),
        k if k.starts_with("tokenizer.ggml.add_") && k.ends_with("_token") => Expect::Scalar(T::Bool),
        "tokenizer.ggml.add_space_prefix" | "tokenizer.ggml.remove_extra_whitespaces" => Expect::Scalar(T::Bool),
        _ => {
            let rest = key.strip_prefix(arch?)?.strip_prefix('.')?;
            match rest {
                "context_length"
                | "embedding_length"
                | "block_count"
                | "rope.dimension_count"
                | "expert_count"
                | "expert_used_count"
                | "attention.key_length"
                | "attention.value_length" => Expect::Scalar(T::U32),
                "feed_forward_length" | "attention.head_count" | "attention.head_count_kv" => Expect::U32OrArray,
                "rope.freq_base"
                | "attention.layer_norm_epsilon"
                | "attention.layer_norm_rms_epsilon"
                | "rope.scaling.factor" => Expect::Scalar(T::F32),
                _ => return None,
            }
        }
    };
    Some(exact)
}

fn check_standard_types(file: &GgufFile<'_>, arch: Option<&str>, sink: &mut Sink<'_>) {
    if !sink.enabled(RuleId::StandardKeyType) {
        return;
    }
    for kv in &file.kvs {
        // A template key holding a non-string is template-value-type's.
        if super::template::is_template_key(kv.key.bytes) {
            continue;
        }
        let Some(key) = kv.key.as_str() else { continue };
        let Some(expect) = standard_type(key, arch) else { continue };
        if !expect.matches(&kv.value) {
            sink.emit(
                RuleId::StandardKeyType,
                kv.type_offset(),
                || kv_path(kv),
                || format!("`{key}` is {}; the spec and llama.cpp expect {}", type_label(&kv.value), expect.describe()),
            );
        }
    }
}

fn check_tokenizer(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    let Some(tokens) = file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()) else {
        return;
    };
    let n_vocab = tokens.len;
    for name in ["tokenizer.ggml.scores", "tokenizer.ggml.token_type"] {
        let Some(kv) = file.get(name) else { continue };
        if let Some(a) = kv.value.as_array()
            && a.len != n_vocab
        {
            sink.emit(
                RuleId::TokenizerArrayLength,
                a.offset,
                || kv_path(kv),
                || format!("`{name}` has {} elements but tokenizer.ggml.tokens has {n_vocab}", a.len),
            );
        }
    }
    for kv in &file.kvs {
        let Some(key) = kv.key.as_str() else { continue };
        if !(key.starts_with("tokenizer.ggml.") && key.ends_with("_token_id")) {
            continue;
        }
        if let Some(id) = kv.value.as_u64()
            && id >= n_vocab
        {
            sink.emit(
                RuleId::TokenIdRange,
                kv.value_offset(),
                || kv_path(kv),
                || format!("`{key}` is {id} but the vocabulary has {n_vocab} tokens"),
            );
        }
    }
}

/// Rules that need the whole file: required keys.
pub(crate) fn check_required(file: &GgufFile<'_>, tensors: &TensorFacts, sink: &mut Sink<'_>) {
    if file.get("general.architecture").is_none() {
        sink.emit(RuleId::ArchitectureMissing, KV_SECTION, || "kv".into(), || "general.architecture is missing".into());
    }
    match file.get("general.quantization_version") {
        None if tensors.any_quantized => {
            sink.emit(
                RuleId::QuantVersionMissing,
                KV_SECTION,
                || "kv".into(),
                || "general.quantization_version is missing although some tensors are block-quantized".into(),
            );
        }
        Some(kv) if !matches!(kv.value, Value::U32(_)) => {
            sink.emit(
                RuleId::QuantVersionType,
                kv.type_offset(),
                || kv_path(kv),
                || format!("general.quantization_version is {}, not u32", type_label(&kv.value)),
            );
        }
        _ => {}
    }
}

/// Offset reported for a missing key: the header's kv_count field.
const KV_SECTION: u64 = 16;
