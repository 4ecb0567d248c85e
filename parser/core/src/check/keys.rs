//! Rules on the well-known keys: `general.alignment`,
//! `general.architecture`, the types of standard keys, the tokenizer arrays
//! and special token ids, and the keys a file must have.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::limits;
use crate::parse::{GgufFile, KeyValue, Value, type_label};
use crate::report::Sink;
use crate::rules::RuleId;

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
        check_alignment(&kv, sink);
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
                        || kv_path(&kv),
                        || format!("architecture `{}` is not [a-z0-9]+", s.display()),
                    );
                }
            }
            None => sink.emit(
                RuleId::ArchitectureType,
                kv.type_offset(),
                || kv_path(&kv),
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

/// Keys llama.cpp reads with a fixed type outside the per-architecture
/// hyper-parameters (src/llama-model.cpp, src/llama-model-loader.cpp,
/// src/llama-vocab.cpp), with every type a read accepts.
const LOADER_FIXED: &[(&str, &[&str])] = &[
    ("general.name", &["string"]),
    ("general.file_type", &["u32"]),
    ("tokenizer.ggml.model", &["string"]),
    ("tokenizer.ggml.pre", &["string"]),
    ("tokenizer.ggml.tokens", &["array[string]"]),
    ("tokenizer.ggml.scores", &["array[f32]", "array[i32]"]),
    ("tokenizer.ggml.token_type", &["array[i32]"]),
    ("tokenizer.ggml.token_type_count", &["u32"]),
    ("tokenizer.ggml.merges", &["array[string]"]),
    ("tokenizer.ggml.precompiled_charsmap", &["array[u8]", "array[i8]"]),
    ("tokenizer.ggml.add_space_prefix", &["bool"]),
    ("tokenizer.ggml.remove_extra_whitespaces", &["bool"]),
    ("split.no", &["u16"]),
    ("split.count", &["u16"]),
    ("split.tensors.count", &["i32"]),
];

/// Standard keys of the spec that llama.cpp does not read, with their type.
const SPEC_ONLY: &[(&str, &str)] = &[
    ("general.type", "string"),
    ("general.author", "string"),
    ("general.version", "string"),
    ("general.organization", "string"),
    ("general.basename", "string"),
    ("general.finetune", "string"),
    ("general.description", "string"),
    ("general.quantized_by", "string"),
    ("general.size_label", "string"),
    ("general.license", "string"),
    ("general.license.name", "string"),
    ("general.license.link", "string"),
    ("general.url", "string"),
    ("general.doi", "string"),
    ("general.uuid", "string"),
    ("general.repo_url", "string"),
    ("general.source.url", "string"),
    ("general.source.doi", "string"),
    ("general.source.uuid", "string"),
    ("general.source.repo_url", "string"),
    ("general.base_model.count", "u32"),
    ("general.dataset.count", "u32"),
    ("general.tags", "array[string]"),
    ("general.languages", "array[string]"),
    ("tokenizer.chat_template", "string"),
    ("tokenizer.chat_templates", "array[string]"),
    ("tokenizer.huggingface.json", "string"),
    ("tokenizer.rwkv.world", "string"),
];

/// The type of a value as the tables name it: `u32`, `array[f32]`.
fn type_name(v: &Value<'_>) -> String {
    match v {
        Value::Array(a) => format!("array[{}]", a.elem_type),
        v => v.value_type().to_string(),
    }
}

/// The type tables as maps, built once per process: a file of a million
/// keys looks each key up once instead of scanning the tables.
struct Tables {
    /// [`LOADER_FIXED`].
    fixed: HashMap<&'static str, &'static [&'static str], foldhash::fast::RandomState>,
    /// [`SPEC_ONLY`].
    spec: HashMap<&'static str, &'static str, foldhash::fast::RandomState>,
    /// The `{arch}.` keys of `LOADER_KEY_TYPES`, by the rest of the key.
    per_arch: HashMap<&'static str, &'static [&'static str], foldhash::fast::RandomState>,
    /// The first segments (up to the first dot) of the keys of [`LOADER_FIXED`]
    /// and [`SPEC_ONLY`]: a key with another one, and not the architecture's,
    /// is in no table (a file of a million keys of its own skips the lookups).
    heads: Heads,
}

/// A set of a few first segments, most keys told apart from all of them
/// by their length and first byte alone (a file of a million keys of its
/// own took 8% of its time comparing each with every segment).
#[derive(Debug, Default)]
struct Heads {
    /// For each length up to [`Heads::SHORT`], the first bytes (mod 64) of
    /// the segments of that length, as bits.
    first_bytes: [u64; Heads::SHORT + 1],
    segments: Vec<&'static [u8]>,
}

impl Heads {
    /// Segments of up to this many bytes are told by length and first byte.
    const SHORT: usize = 31;

    fn insert(&mut self, segment: &'static [u8]) {
        if self.segments.contains(&segment) {
            return;
        }
        if let (Some(bits), Some(b)) = (self.first_bytes.get_mut(segment.len()), segment.first()) {
            *bits |= 1 << (b & 63);
        }
        self.segments.push(segment);
    }

    fn contains(&self, segment: &[u8]) -> bool {
        let maybe = match (self.first_bytes.get(segment.len()), segment.first()) {
            (Some(bits), Some(b)) => bits & (1 << (b & 63)) != 0,
            // Longer than SHORT, or empty: compared.
            _ => true,
        };
        maybe && self.segments.contains(&segment)
    }
}

/// The key up to its first dot (the whole key without one).
fn first_segment(key: &[u8]) -> &[u8] {
    key.split(|b| *b == b'.').next().unwrap_or_default()
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        // The first entry of a key wins, as a scan of the table finds it.
        let mut fixed = HashMap::with_hasher(foldhash::fast::RandomState::default());
        for (k, t) in LOADER_FIXED {
            fixed.entry(*k).or_insert(*t);
        }
        let mut spec = HashMap::with_hasher(foldhash::fast::RandomState::default());
        for (k, t) in SPEC_ONLY {
            spec.entry(*k).or_insert(*t);
        }
        let mut per_arch = HashMap::with_hasher(foldhash::fast::RandomState::default());
        for (k, t) in super::llama_arch_table::LOADER_KEY_TYPES {
            if let Some(rest) = k.strip_prefix("{arch}.") {
                per_arch.entry(rest).or_insert(*t);
            }
        }
        let mut heads = Heads::default();
        for key in LOADER_FIXED.iter().map(|(k, _)| *k).chain(SPEC_ONLY.iter().map(|(k, _)| *k)) {
            heads.insert(first_segment(key.as_bytes()));
        }
        Tables { fixed, spec, per_arch, heads }
    })
}

/// The types llama.cpp reads `key` with, for a file of architecture `arch`
/// (`arch`: only one llama.cpp knows).
fn loader_types(tables: &Tables, key: &str, arch: Option<&str>) -> Option<&'static [&'static str]> {
    if let Some(t) = tables.fixed.get(key) {
        return Some(t);
    }
    if key.starts_with("tokenizer.ggml.") {
        if key.ends_with("_token_id") {
            return Some(&["u32"]);
        }
        if key.starts_with("tokenizer.ggml.add_") && key.ends_with("_token") {
            return Some(&["bool"]);
        }
    }
    let rest = key.strip_prefix(arch?)?.strip_prefix('.')?;
    tables.per_arch.get(rest).copied()
}

/// The type the spec or llama.cpp gives a well-known key (`u32`,
/// `string`, `array[string]`, ...) in a file of architecture `arch`: the
/// first type llama.cpp's loader reads it with, else the spec's. `None`
/// for a key in neither table.
pub fn well_known_type(key: &str, arch: Option<&str>) -> Option<&'static str> {
    let tables = tables();
    let arch = arch.filter(|a| super::llama_arches::LLAMA_ARCHES.contains(a));
    match loader_types(tables, key, arch) {
        Some(types) => types.first().copied(),
        None => tables.spec.get(key).copied(),
    }
}

fn check_standard_types(file: &GgufFile<'_>, arch: Option<&str>, sink: &mut Sink<'_>) {
    // Checked under every profile (not skipped when the profile does not
    // report these rules): a key llama.cpp refuses at load also tells which
    // releases load the file (`summary.llama_cpp`, whatever the profile).
    let arch = arch.filter(|a| super::llama_arches::LLAMA_ARCHES.contains(a));
    let tables = tables();
    // Keys first: only a pair of a known key is decoded.
    for (i, key) in file.kvs.keys() {
        let of_arch = arch.is_some_and(|a| key.strip_prefix(a.as_bytes()).is_some_and(|r| r.first() == Some(&b'.')));
        if !of_arch && !tables.heads.contains(first_segment(key)) {
            continue;
        }
        // A template key holding a non-string is template-value-type's.
        if super::template::is_template_key(key) {
            continue;
        }
        let Ok(key) = std::str::from_utf8(key) else { continue };
        let loader = loader_types(tables, key, arch);
        let spec = if loader.is_none() { tables.spec.get(key) } else { None };
        if loader.is_none() && spec.is_none() {
            continue;
        }
        let Some(kv) = file.kvs.get(i) else { continue };
        if let Some(types) = loader {
            let actual = type_name(&kv.value);
            if !types.contains(&actual.as_str()) {
                sink.emit(
                    RuleId::StandardKeyType,
                    kv.type_offset(),
                    || kv_path(&kv),
                    || {
                        format!(
                            "`{key}` is {actual}; llama.cpp reads it as {} and refuses the file",
                            types.join(" or ")
                        )
                    },
                );
            }
        } else if let Some(t) = spec {
            let actual = type_name(&kv.value);
            if actual != *t {
                sink.emit(
                    RuleId::MetadataKeyType,
                    kv.type_offset(),
                    || kv_path(&kv),
                    || format!("`{key}` is {actual}; the spec gives it type {t}"),
                );
            }
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
                || kv_path(&kv),
                || format!("`{name}` has {} elements but tokenizer.ggml.tokens has {n_vocab}", a.len),
            );
        }
    }
    for (i, key) in file.kvs.keys() {
        if !(key.starts_with(b"tokenizer.ggml.") && key.ends_with(b"_token_id")) {
            continue;
        }
        let (Ok(key), Some(kv)) = (std::str::from_utf8(key), file.kvs.get(i)) else { continue };
        if let Some(id) = kv.value.as_u64()
            && id >= n_vocab
        {
            sink.emit(
                RuleId::TokenIdRange,
                kv.value_offset(),
                || kv_path(&kv),
                || {
                    format!(
                        "`{key}` is {id} but the vocabulary has {n_vocab} tokens: llama.cpp loads the model but ignores the value (\"bad special token ... using default id\"), keeping its vocabulary type's default for that role, or no token when the default is out of range too, so the model does not behave as written"
                    )
                },
            );
        }
    }
    check_substituted_defaults(file, sink);
}

/// A special-token role whose id llama.cpp substitutes with its tokenizer
/// model's default (the key is absent, or outside the vocabulary) while
/// that default is outside the vocabulary too.
pub(crate) struct SubstitutedDefault {
    /// `tokenizer.ggml.eos_token_id`, ...
    pub(crate) key: &'static str,
    /// The tokenizer model (`llama`, `gpt2`, ...).
    pub(crate) model: String,
    pub(crate) default: u32,
    pub(crate) n_vocab: u64,
    /// The key's value when it is present (outside the vocabulary).
    pub(crate) value: Option<u64>,
    pub(crate) offset: u64,
    pub(crate) path: String,
}

/// The special-token defaults llama.cpp's vocabulary loader would take
/// outside `file`'s vocabulary (`TOKENIZER_DEFAULT_IDS`, generated from
/// `llama_vocab::impl::load`).
pub(crate) fn substituted_defaults(file: &GgufFile<'_>) -> Vec<SubstitutedDefault> {
    let Some(tokens) = file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()) else {
        return Vec::new();
    };
    let Some(model_kv) = file.get("tokenizer.ggml.model") else { return Vec::new() };
    let Some(model) = model_kv.value.as_string().and_then(|s| s.as_str()) else { return Vec::new() };
    let Some((_, defaults)) = super::llama_arch_table::TOKENIZER_DEFAULT_IDS.iter().find(|(m, _)| *m == model) else {
        return Vec::new();
    };
    let n_vocab = tokens.len;
    let mut out = Vec::new();
    for (key, default) in defaults.iter() {
        if u64::from(*default) < n_vocab {
            continue;
        }
        let kv = file.get(key);
        let value = kv.as_ref().and_then(|kv| kv.value.as_u64());
        // A key inside the vocabulary is used as it is.
        if value.is_some_and(|v| v < n_vocab) {
            continue;
        }
        let (offset, path) = match &kv {
            Some(kv) => (kv.value_offset(), kv_path(kv)),
            None => (model_kv.value_offset(), kv_path(&model_kv)),
        };
        out.push(SubstitutedDefault { key, model: model.to_string(), default: *default, n_vocab, value, offset, path });
    }
    out
}

fn check_substituted_defaults(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    use crate::llama_cpp::{SPECIAL_TOKEN_DEFAULT_FIX, fixed_in, since};
    let fixed = since(fixed_in(SPECIAL_TOKEN_DEFAULT_FIX)).map_or("", |r| r.name());
    for d in substituted_defaults(file) {
        sink.emit(
            RuleId::TokenizerSpecialDefault,
            d.offset,
            || d.path.clone(),
            || {
                let why = match d.value {
                    Some(v) => format!("`{}` is {v}, outside the vocabulary", d.key),
                    None => format!("`{}` is absent", d.key),
                };
                format!(
                    "{why}, so llama.cpp takes the `{}` vocabulary's default {}, outside its {} tokens too: the pinned llama.cpp disables it (the model has no such token); releases before {fixed} read past the vocabulary or refuse the file at load",
                    d.model, d.default, d.n_vocab
                )
            },
        );
    }
}

/// Rules that need the whole file: required keys.
///
/// A later shard of a split set (`split.no` above 0, `split.count` above 1)
/// carries no metadata of its own: `gguf-split` writes it all to the first
/// shard, so the architecture and quantization version are judged there
/// (and, for the set, by [`crate::split_set`]).
pub(crate) fn check_required(file: &GgufFile<'_>, tensors: &TensorFacts, sink: &mut Sink<'_>) {
    if super::split::role(file).is_some_and(super::split::Role::is_later) {
        return;
    }
    // An importance matrix (general.type = imatrix, written by
    // llama-imatrix) is not a model and has no architecture: its own rule,
    // whose levels per profile the catalogue gives.
    let imatrix = file.get("general.type").and_then(|kv| kv.value.as_string()).is_some_and(|s| s.bytes == b"imatrix");
    // A diffusion model (stable-diffusion.cpp's converter writes no key at
    // all): its own rules, whose levels per profile the catalogue gives.
    let diffusion = sink.file_loader.is_some_and(crate::loader::Loader::is_diffusion);
    if file.get("general.architecture").is_none() {
        let rule = if imatrix {
            RuleId::ImatrixArchitectureMissing
        } else if diffusion {
            RuleId::DiffusionArchitectureMissing
        } else {
            RuleId::ArchitectureMissing
        };
        sink.emit(rule, KV_SECTION, || "kv".into(), || "general.architecture is missing".into());
    }
    match file.get("general.quantization_version") {
        None if tensors.any_quantized => {
            sink.emit(
                if diffusion { RuleId::DiffusionQuantVersionMissing } else { RuleId::QuantVersionMissing },
                KV_SECTION,
                || "kv".into(),
                || "general.quantization_version is missing although some tensors are block-quantized".into(),
            );
        }
        Some(kv) if !matches!(kv.value, Value::U32(_)) => {
            sink.emit(
                RuleId::QuantVersionType,
                kv.type_offset(),
                || kv_path(&kv),
                || format!("general.quantization_version is {}, not u32", type_label(&kv.value)),
            );
        }
        _ => {}
    }
}

/// Kept under its old path for `tokenizer.rs`, which names it
/// `super::keys::KV_SECTION`; the constant lives in `check/mod.rs`.
pub(crate) use super::KV_SECTION;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every first segment of the tables, and segments like them (one
    /// byte changed, cut short, made longer), and arbitrary ones: the set
    /// answers as a comparison with every segment does.
    #[test]
    fn heads_answer_as_a_comparison_with_every_segment() {
        let heads = &tables().heads;
        assert!(
            heads.segments.contains(&&b"general"[..]) && heads.segments.contains(&&b"tokenizer"[..]),
            "{:?}",
            heads.segments
        );
        let is_head = |s: &[u8]| heads.segments.contains(&s);
        let mut tried = 0;
        for head in &heads.segments {
            assert!(heads.contains(head));
            let mut like: Vec<Vec<u8>> = vec![head[..head.len() - 1].to_vec(), [head, &b"x"[..]].concat()];
            for i in 0..head.len() {
                for b in [b'a', b'z', b'.', b'_', 0xC3, head[i] ^ 64, head[i] ^ 1] {
                    let mut v = head.to_vec();
                    v[i] = b;
                    like.push(v);
                }
            }
            for v in like {
                assert_eq!(heads.contains(&v), is_head(&v), "{}", String::from_utf8_lossy(&v));
                tried += 1;
            }
        }
        assert!(tried > 100);
        let long = [b'g'; 40];
        assert!(!heads.contains(&long) && !heads.contains(b""));
    }

    proptest::proptest! {
        #[test]
        fn heads_answer_for_any_segment(segment in proptest::collection::vec(proptest::sample::select(b"abcdegiklnoprstuz_.\xff".to_vec()), 0..40)) {
            let heads = &tables().heads;
            proptest::prop_assert_eq!(heads.contains(&segment), heads.segments.contains(&segment.as_slice()));
        }
    }
}
