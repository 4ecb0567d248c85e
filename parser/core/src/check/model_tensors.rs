//! Hyper-parameters against tensors, per architecture: the keys llama.cpp's
//! loader requires, the tensors it creates (a tensor it never creates makes
//! it refuse the file: "wrong number of tensors"), the tensors it requires,
//! and their shapes (`check_tensor_dims`: "tensor has wrong shape").
//!
//! Everything comes from [`super::llama_arch_table`], generated from
//! llama.cpp's sources. Shapes are expressions over llama.cpp's local
//! variables (`n_embd`, `n_embd_head_k * n_head`, ...); a dimension whose
//! expression names anything this module does not evaluate is not judged.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{HashMap, HashSet};

use crate::parse::{GgufFile, KeyValue, TensorInfo, Value};
use crate::report::Sink;
use crate::rules::RuleId;

use super::llama_arch_table::{
    ARCH_TABLE, ArchTable, BASE_REQUIRED_KEYS, ConditionalKey, GENERIC_SHAPES, Required, TensorShape,
};

/// The architecture's row of the generated table.
pub(crate) fn arch_table(arch: &str) -> Option<&'static ArchTable> {
    ARCH_TABLE.iter().find(|a| a.name == arch)
}

/// What the report says about the tensor checks of one architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TensorScope {
    /// Names, required tensors and shapes were checked.
    Checked,
    /// Required tensors and shapes were checked; the table cannot list every
    /// name this architecture creates, so unknown names were not judged.
    NamesNotChecked,
}

/// The hyper-parameters llama.cpp's shape expressions use, read as the
/// loader reads them (per-layer values at layer 0, like its locals).
#[derive(Clone, Debug, Default)]
struct Hparams {
    n_embd: Option<u64>,
    n_vocab: Option<u64>,
    n_ff: Option<u64>,
    n_head: Option<u64>,
    n_head_kv: Option<u64>,
    head_k: Option<u64>,
    head_v: Option<u64>,
    n_expert: u64,
    n_expert_used: Option<u64>,
    n_ff_exp: Option<u64>,
    n_rot: Option<u64>,
    /// Classifier outputs: the number of `ARCH.classifier.output_labels`,
    /// 1 without labels (llama_model_base::load_hparams).
    n_cls_out: Option<u64>,
    /// BERT-style token types: `tokenizer.ggml.token_type_count`, 0 when
    /// absent (llama_vocab::impl::load reads it as an optional u32; the
    /// token-type embedding is `{n_embd, n_token_types}`).
    n_token_types: Option<u64>,
}

/// A scalar u32, or the first element of a per-layer array.
pub(crate) fn layer0(kv: KeyValue<'_>) -> Option<u64> {
    match kv.value {
        Value::Array(a) => a.iter().next().and_then(|e| e.value.as_u64()),
        v => v.as_u64(),
    }
}

/// A scalar u32, or element `layer` of a per-layer array.
fn at_layer(kv: KeyValue<'_>, layer: u64) -> Option<u64> {
    match kv.value {
        Value::Array(a) => a.iter().nth(usize::try_from(layer).ok()?).and_then(|e| e.value.as_u64()),
        v => v.as_u64(),
    }
}

/// The keys llama.cpp reads per layer (`get_key_or_arr`) whose element a
/// shape expression may take with `NAME@layer`.
const PER_LAYER_KEYS: [&str; 5] = [
    "attention.head_count",
    "attention.head_count_kv",
    "feed_forward_length",
    "expert_feed_forward_length",
    "expert_used_count",
];

impl Hparams {
    /// Reads the values as llama.cpp's loader does, defaults included: an
    /// absent `feed_forward_length` or `head_count` is 0, `head_count_kv`
    /// defaults to `head_count`, head sizes to `n_embd / n_head` (0 without
    /// heads), the vocabulary size is the number of tokens (`vocab_size`
    /// for the `none` tokenizer). Layer 0's values, as llama.cpp's
    /// accessors without a layer give them.
    fn read(file: &GgufFile<'_>, arch: &str) -> Hparams {
        Self::read_at(file, arch, 0)
    }

    /// The same with per-layer arrays read at `layer` (the values of
    /// llama.cpp's accessors called with that layer: `n_head_kv(il)`,
    /// `n_ff(il)`, ...); head sizes stay layer 0's, as llama.cpp derives them
    /// once from `n_head()`.
    fn read_at(file: &GgufFile<'_>, arch: &str, layer: u64) -> Hparams {
        let key = |name: &str| file.get(&format!("{arch}.{name}"));
        let per_layer = |kv: KeyValue<'_>| at_layer(kv, layer);
        let n_embd = key("embedding_length").and_then(layer0);
        let n_head0 = key("attention.head_count").map_or(Some(0), layer0);
        let n_head = key("attention.head_count").map_or(Some(0), per_layer);
        let n_head_kv = match key("attention.head_count_kv") {
            Some(kv) => per_layer(kv),
            None => n_head,
        };
        // Sliding-window layers may have their own head sizes; layer 0's
        // locals then depend on the window pattern: not evaluated.
        let swa_sizes = key("attention.key_length_swa").is_some() || key("attention.value_length_swa").is_some();
        let head = |name: &str| -> Option<u64> {
            if swa_sizes {
                return None;
            }
            match n_head0? {
                0 => Some(0),
                h => match key(name) {
                    Some(kv) => layer0(kv),
                    None => n_embd?.checked_div(h),
                },
            }
        };
        let head_k = head("attention.key_length");
        let head_v = head("attention.value_length");
        let model = file.get("tokenizer.ggml.model").and_then(|kv| kv.value.as_string()).map(|s| s.bytes);
        let n_vocab = if matches!(model, Some(b"none" | b"no_vocab")) {
            key("vocab_size").map_or(Some(0), layer0)
        } else {
            // Without tokens llama.cpp refuses the file before any tensor
            // (tokenizer-vocab-missing says so): the size is not judged.
            file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().map(|a| a.len))
        };
        let n_ff = key("feed_forward_length").map_or(Some(0), per_layer);
        let n_expert = key("expert_count").and_then(layer0).unwrap_or(0);
        let n_expert_used = key("expert_used_count").map_or(Some(0), per_layer);
        let n_ff_exp = key("expert_feed_forward_length")
            .and_then(per_layer)
            .filter(|v| *v > 0)
            .or_else(|| n_ff?.checked_div(n_expert_used.filter(|u| *u > 0)?));
        let n_rot = match key("rope.dimension_count") {
            Some(kv) => layer0(kv),
            None => head_k,
        };
        let n_cls_out = match key("classifier.output_labels").map(|kv| kv.value) {
            None => Some(1),
            Some(Value::Array(a)) => Some(if a.len == 0 { 1 } else { a.len }),
            // Another type is the key-type rules'.
            Some(_) => None,
        };
        let n_token_types = match file.get("tokenizer.ggml.token_type_count").map(|kv| kv.value) {
            None => Some(0),
            Some(Value::U32(n)) => Some(u64::from(n)),
            // Another type is the key-type rules'.
            Some(_) => None,
        };
        Hparams {
            n_embd,
            n_vocab,
            n_ff,
            n_head,
            n_head_kv,
            head_k,
            head_v,
            n_expert,
            n_expert_used,
            n_ff_exp,
            n_rot,
            n_cls_out,
            n_token_types,
        }
    }

    /// The value of one of llama.cpp's local names, when known.
    fn var(&self, name: &str) -> Option<u64> {
        let mul = |a: Option<u64>, b: Option<u64>| a?.checked_mul(b?);
        match name {
            "n_embd" | "hparams.n_embd" => self.n_embd,
            "n_vocab" => self.n_vocab,
            "n_ff" | "hparams.n_ff()" => self.n_ff,
            "n_head" | "hparams.n_head()" => self.n_head,
            "n_head_kv" | "hparams.n_head_kv()" => self.n_head_kv,
            "n_embd_head_k" | "hparams.n_embd_head_k()" => self.head_k,
            "n_embd_head_v" | "hparams.n_embd_head_v()" => self.head_v,
            "n_embd_k_gqa" | "hparams.n_embd_k_gqa()" => mul(self.head_k, self.n_head_kv),
            "n_embd_v_gqa" | "hparams.n_embd_v_gqa()" | "n_embd_gqa" => mul(self.head_v, self.n_head_kv),
            "n_expert" | "hparams.n_expert" => Some(self.n_expert),
            "n_expert_used" | "hparams.n_expert_used()" => self.n_expert_used,
            "n_ff_exp" | "hparams.n_ff_exp()" => self.n_ff_exp,
            "n_rot" | "hparams.n_rot()" => self.n_rot,
            "hparams.n_cls_out" => self.n_cls_out,
            "n_token_types" | "vocab.n_token_types()" => self.n_token_types,
            _ => None,
        }
    }
}

/// Evaluates a shape expression of the generated table (`+ - * /`,
/// parentheses, integers and llama.cpp's local names); `None` when it names
/// anything unknown or overflows. The expressions are the table's own
/// (static, shallow), never file input; the depth guard is belt and braces.
fn eval(expr: &str, hp: &Hparams, layer: Option<&Hparams>, meta: Option<(&GgufFile<'_>, &str)>) -> Option<u64> {
    let mut p = Expr { s: expr.as_bytes(), at: 0, hp, layer, meta, depth: 0 };
    let v = p.sum()?;
    p.skip_ws();
    (p.at == p.s.len()).then_some(v)
}

struct Expr<'s, 'h, 'f> {
    s: &'s [u8],
    at: usize,
    hp: &'h Hparams,
    /// The values at the tensor's layer, for `NAME@layer` (none for a
    /// tensor outside the layers).
    layer: Option<&'h Hparams>,
    /// The file and its architecture, for `kv:KEY[:DEFAULT]` (a field
    /// llama.cpp reads from `ARCH.KEY`, its default when absent).
    meta: Option<(&'h GgufFile<'f>, &'h str)>,
    depth: u32,
}

impl Expr<'_, '_, '_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn bump(&mut self) {
        self.at = self.at.saturating_add(1);
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.bump();
        }
    }

    fn sum(&mut self) -> Option<u64> {
        let mut v = self.product()?;
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'+') => {
                    self.bump();
                    v = v.checked_add(self.product()?)?;
                }
                Some(b'-') => {
                    self.bump();
                    v = v.checked_sub(self.product()?)?;
                }
                _ => return Some(v),
            }
        }
    }

    fn product(&mut self) -> Option<u64> {
        let mut v = self.atom()?;
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'*') => {
                    self.bump();
                    v = v.checked_mul(self.atom()?)?;
                }
                Some(b'/') => {
                    self.bump();
                    v = v.checked_div(self.atom()?)?;
                }
                _ => return Some(v),
            }
        }
    }

    fn atom(&mut self) -> Option<u64> {
        self.skip_ws();
        match self.peek()? {
            b'(' => {
                self.depth = self.depth.checked_add(1).filter(|d| *d <= 32)?;
                self.bump();
                let v = self.sum()?;
                self.skip_ws();
                (self.peek()? == b')').then_some(())?;
                self.bump();
                self.depth = self.depth.saturating_sub(1);
                Some(v)
            }
            c if c.is_ascii_digit() => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.bump();
                }
                std::str::from_utf8(self.s.get(start..self.at)?).ok()?.parse().ok()
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'@')) {
                    self.bump();
                }
                // `hparams.n_ff()`: a call with no arguments is part of the name.
                if self.s.get(self.at..self.at.saturating_add(2)) == Some(b"()") {
                    self.at = self.at.saturating_add(2);
                }
                let name = std::str::from_utf8(self.s.get(start..self.at)?).ok()?;
                if let Some(field) = name.strip_prefix("kv:") {
                    let (key, default) = match field.split_once(':') {
                        Some((key, d)) => (key, Some(d.parse().ok()?)),
                        None => (field, None),
                    };
                    let (meta, arch) = self.meta?;
                    return match meta.get(&format!("{arch}.{key}")) {
                        // A value of another type is the key-type rules'.
                        Some(kv) => kv.value.as_u64(),
                        None => default,
                    };
                }
                match name.strip_suffix("@layer") {
                    Some(base) => self.layer?.var(base),
                    None => self.hp.var(name),
                }
            }
            _ => None,
        }
    }
}

/// A tensor name split into its pattern (`blk.{}.attn_q.weight`) and the
/// numbers in place of `{}`: every dot-separated segment that is a
/// canonical decimal number (`0`, `17`; not `01`).
pub(crate) fn pattern_of(name: &str) -> (String, Vec<u64>) {
    let mut pattern = String::with_capacity(name.len());
    let mut numbers = Vec::new();
    pattern_into(name, &mut pattern, |n| numbers.push(n));
    (pattern, numbers)
}

/// [`pattern_of`] into `pattern` (cleared first), each number handed to
/// `number`: no allocation when `pattern` has room.
pub(crate) fn pattern_into(name: &str, pattern: &mut String, mut number: impl FnMut(u64)) {
    pattern.clear();
    for (i, seg) in name.split('.').enumerate() {
        if i > 0 {
            pattern.push('.');
        }
        let canonical = !seg.is_empty()
            && seg.len() <= 18
            && seg.bytes().all(|b| b.is_ascii_digit())
            && (seg == "0" || !seg.starts_with('0'));
        match canonical.then(|| seg.parse::<u64>().ok()).flatten() {
            Some(n) => {
                pattern.push_str("{}");
                number(n);
            }
            None => pattern.push_str(seg),
        }
    }
}

/// Dims as llama.cpp compares them: padded with 1 to four.
fn padded(dims: impl Iterator<Item = Option<u64>>) -> [Option<u64>; 4] {
    let mut out = [Some(1); 4];
    for (slot, d) in out.iter_mut().zip(dims) {
        *slot = d;
    }
    out
}

fn show(dims: &[Option<u64>]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.map_or_else(|| "?".to_string(), |v| v.to_string())).collect();
    format!("[{}]", parts.join(", "))
}

/// The hyper-parameters of `arch` a release's shape expressions read
/// (layer 0's, as the loaders read by one switch took them once).
pub(crate) struct ShapeVars<'f> {
    meta: &'f GgufFile<'f>,
    arch: &'f str,
    hp: Hparams,
}

impl<'f> ShapeVars<'f> {
    pub(crate) fn read(meta: &'f GgufFile<'f>, arch: &'f str) -> ShapeVars<'f> {
        ShapeVars { meta, arch, hp: Hparams::read(meta, arch) }
    }

    /// The shape `dims` gives (comma-separated shape expressions; `?` or
    /// a name not known: not compared), padded as llama.cpp compares.
    pub(crate) fn expected(&self, dims: &str) -> Option<[Option<u64>; 4]> {
        if dims.split(',').count() > 4 {
            return None;
        }
        Some(padded(dims.split(',').map(|e| eval(e, &self.hp, None, Some((self.meta, self.arch))))))
    }
}

/// When `t` does not have the `expected` shape ([`ShapeVars::expected`]):
/// the expected and the actual shape, shown.
pub(crate) fn shape_mismatch(t: &TensorInfo<'_>, expected: &[Option<u64>; 4]) -> Option<(String, String)> {
    if t.n_dims > 4 {
        return None;
    }
    let actual = padded(t.dims().map(Some));
    if expected.iter().zip(&actual).all(|(e, a)| e.is_none() || e == a) {
        return None;
    }
    let n = usize::try_from(t.n_dims).unwrap_or(4).clamp(1, 4);
    let last = expected.iter().rposition(|d| *d != Some(1)).map_or(1, |i| i.saturating_add(1));
    Some((show(expected.get(..last).unwrap_or(expected)), show(actual.get(..n).unwrap_or(&actual))))
}

/// Runs the tensor rules of `arch` over `tensors` (the file's own, or the
/// union of a split set's shards), with hyper-parameters from `meta`.
pub(crate) fn check(
    meta: &GgufFile<'_>,
    table: &ArchTable,
    tensors: &[&TensorInfo<'_>],
    sink: &mut Sink<'_>,
) -> TensorScope {
    let arch = table.name;
    check_required_keys(meta, table, sink);
    let hp = Hparams::read(meta, arch);
    // Per-layer values only when some per-layer key is an array: otherwise
    // every layer's are layer 0's.
    let varies = PER_LAYER_KEYS
        .iter()
        .any(|k| meta.get(&format!("{arch}.{k}")).is_some_and(|kv| matches!(kv.value, Value::Array(_))));
    let mut layers: HashMap<u64, Hparams> = HashMap::new();
    let block_count = meta
        .get(&format!("{arch}.block_count"))
        .and_then(layer0)
        .filter(|n| (1..=crate::limits::LLAMA_MAX_LAYERS).contains(n));
    let nextn = meta.get(&format!("{arch}.nextn_predict_layers")).and_then(layer0).unwrap_or(0);
    let main_layers = block_count.map(|n| n.saturating_sub(nextn));

    if let (Some(needed), Some(n_vocab)) = (table.logits_written, hp.n_vocab)
        && n_vocab < needed
    {
        let at = meta.get("tokenizer.ggml.tokens").or_else(|| meta.get(&format!("{arch}.vocab_size")));
        sink.emit(
            RuleId::ModelVocabLogits,
            at.as_ref().map_or(super::KV_SECTION, |kv| kv.value_offset()),
            || at.as_ref().map_or_else(|| "kv".into(), super::kv::kv_path),
            || format!("the vocabulary has {n_vocab} tokens, but llama.cpp's `{arch}` graph writes the logits of token ids up to {needed}: it loads the model, then aborts (GGML_ASSERT in ggml_set_1d) as a context is created, or writes past the logits"),
        );
    }
    let shapes: HashMap<&str, &TensorShape> =
        table.shapes.iter().chain(GENERIC_SHAPES.iter()).map(|s| (s.name, s)).collect();
    let names: HashSet<&str> = table.tensors.iter().copied().chain(GENERIC_SHAPES.iter().map(|s| s.name)).collect();
    // (pattern, first number) of every tensor present.
    let mut present: HashSet<(&'static str, Option<u64>)> = HashSet::new();

    for t in tensors {
        let Some(name) = t.name.as_str() else { continue };
        let (pattern, numbers) = pattern_of(name);
        let known = names.get(pattern.as_str()).copied();
        let layer = numbers.first().copied();
        // Kept for the release contracts (`releases.rs`), not computed twice.
        sink.tensor_patterns.push((t.index, pattern, layer));
        let Some(known) = known else {
            if table.complete {
                sink.emit(
                    RuleId::ModelTensorUnexpected,
                    t.name.offset,
                    || format!("tensor[{}] {name}", t.index),
                    || {
                        format!(
                            "llama.cpp never creates a tensor `{name}` for architecture `{arch}`, so it refuses the file (wrong number of tensors)"
                        )
                    },
                );
            }
            continue;
        };
        if let (Some(l), Some(n)) = (layer, block_count)
            && known.starts_with("blk.{}")
            && l >= n
        {
            sink.emit(
                RuleId::ModelTensorUnexpected,
                t.name.offset,
                || format!("tensor[{}] {name}", t.index),
                || {
                    format!(
                        "`{name}` belongs to layer {l}, but `{arch}.block_count` is {n}: llama.cpp creates no such tensor and refuses the file (wrong number of tensors)"
                    )
                },
            );
            continue;
        }
        present.insert((known, layer));
        let Some(shape) = shapes.get(known) else { continue };
        let in_layers = |l: &u64| known.starts_with("blk.{}") && *l < crate::limits::LLAMA_MAX_LAYERS;
        let at_layer = match layer.filter(in_layers) {
            Some(l) if varies => Some(&*layers.entry(l).or_insert_with(|| Hparams::read_at(meta, arch, l))),
            Some(_) => Some(&hp),
            None => None,
        };
        check_shape(meta, t, name, shape, &hp, at_layer, arch, sink);
    }

    // create_tensor_qkv creates the separate projections only without a
    // fused one (and create_tensor_gate_up_exps likewise): a file with both
    // holds tensors llama.cpp never creates.
    for (fused, separate) in [
        ("blk.{}.attn_qkv.weight", "blk.{}.attn_q.weight"),
        ("blk.{}.ffn_gate_up_exps.weight", "blk.{}.ffn_gate_exps.weight"),
    ] {
        if !(names.contains(fused) && names.contains(separate)) {
            continue;
        }
        let both: Vec<u64> = present
            .iter()
            .filter(|(p, _)| *p == fused)
            .filter_map(|(_, l)| *l)
            .filter(|l| present.contains(&(separate, Some(*l))))
            .collect();
        if let Some(l) = both.iter().min() {
            let f = fused.replacen("{}", &l.to_string(), 1);
            let sep = separate.replacen("{}", &l.to_string(), 1);
            sink.emit(
                RuleId::ModelTensorUnexpected,
                tensors.first().map_or(meta.infos_end, |t| t.name.offset),
                || "tensors".into(),
                || format!("layer {l} has both `{f}` and `{sep}` ({} layers in all): llama.cpp uses the fused tensor, never creates the separate ones and refuses the file (wrong number of tensors)", both.len()),
            );
        }
    }

    if tensors.is_empty() {
        return if table.complete { TensorScope::Checked } else { TensorScope::NamesNotChecked };
    }
    for shape in table.shapes {
        let required = match shape.required {
            Required::Always => true,
            Required::Dense => hp.n_expert == 0,
            Required::Moe => hp.n_expert > 0,
            Required::No => false,
        };
        if !required {
            continue;
        }
        let missing: Vec<u64> = if shape.name.contains("{}") {
            let Some(layers) = main_layers else { continue };
            (0..layers).filter(|l| !present.contains(&(shape.name, Some(*l)))).collect()
        } else if present.contains(&(shape.name, None)) {
            Vec::new()
        } else {
            vec![0]
        };
        if missing.is_empty() {
            continue;
        }
        let shown = if shape.name.contains("{}") {
            let first = missing.first().copied().unwrap_or(0);
            let name = shape.name.replacen("{}", &first.to_string(), 1);
            if missing.len() > 1 {
                format!("`{name}` (and {} more layers)", missing.len().saturating_sub(1))
            } else {
                format!("`{name}`")
            }
        } else {
            format!("`{}`", shape.name)
        };
        sink.emit(
            RuleId::ModelTensorMissing,
            tensors.first().map_or(meta.infos_end, |t| t.name.offset),
            || "tensors".into(),
            || format!("architecture `{arch}` requires the tensor {shown}; llama.cpp refuses the file without it"),
        );
    }
    if table.complete { TensorScope::Checked } else { TensorScope::NamesNotChecked }
}

#[allow(clippy::too_many_arguments)]
fn check_shape(
    meta: &GgufFile<'_>,
    t: &TensorInfo<'_>,
    name: &str,
    shape: &TensorShape,
    hp: &Hparams,
    layer: Option<&Hparams>,
    arch: &str,
    sink: &mut Sink<'_>,
) {
    if shape.dims.is_empty() || t.n_dims > 4 {
        return;
    }
    let actual = padded(t.dims().map(Some));
    let mut first_expected = None;
    for alt in shape.dims {
        if alt.len() > 4 {
            return;
        }
        let expected = padded(alt.iter().map(|e| eval(e, hp, layer, Some((meta, arch)))));
        let fits = expected.iter().zip(&actual).all(|(e, a)| e.is_none() || e == a);
        if fits {
            return;
        }
        first_expected.get_or_insert(expected);
    }
    let Some(expected) = first_expected else { return };
    let n = usize::try_from(t.n_dims).unwrap_or(4).clamp(1, 4);
    let shown_actual = show(actual.get(..n).unwrap_or(&actual));
    let last = expected.iter().rposition(|d| *d != Some(1)).map_or(1, |i| i.saturating_add(1));
    let shown_expected = show(expected.get(..last).unwrap_or(&expected));
    sink.emit_span(
        RuleId::ModelTensorShape,
        t.dims_offset,
        Some(u64::from(t.n_dims).saturating_mul(8)),
        || format!("tensor[{}] {name}/dims", t.index),
        || {
            format!(
                "`{name}` has shape {shown_actual}; llama.cpp expects {shown_expected} for `{arch}` from its hyper-parameters and refuses the file (wrong shape)"
            )
        },
    );
}

pub(crate) fn check_required_keys(meta: &GgufFile<'_>, table: &ArchTable, sink: &mut Sink<'_>) {
    let arch = table.name;
    for k in BASE_REQUIRED_KEYS.iter().chain(table.required_keys) {
        let key = format!("{arch}.{k}");
        if meta.get(&key).is_none() {
            sink.emit(
                RuleId::ModelKeyMissing,
                super::KV_SECTION,
                || "kv".into(),
                || format!("`{key}` is missing; llama.cpp requires it for architecture `{arch}` and refuses the file"),
            );
        }
    }
    let mut reported: Vec<String> = Vec::new();
    for c in table.conditional_keys {
        let key = c.key.replace("{arch}", arch);
        if meta.get(&key).is_some() || reported.contains(&key) {
            continue;
        }
        let Some((true, seen)) = condition_holds(meta, arch, c) else { continue };
        let here = if seen.is_empty() { String::new() } else { format!(" (here {})", seen.join(", ")) };
        sink.emit(
            RuleId::ModelKeyMissing,
            super::KV_SECTION,
            || "kv".into(),
            || {
                format!(
                    "`{key}` is missing; llama.cpp requires it for architecture `{arch}` because {}{here} ({}), and refuses the file",
                    c.because, c.source
                )
            },
        );
        reported.push(key);
    }
}

/// Whether a conditionally required key's condition holds for this file,
/// with the values it was decided on; `None` when the condition was not
/// translated or names a value the file does not give as an integer.
fn condition_holds(meta: &GgufFile<'_>, arch: &str, c: &ConditionalKey) -> Option<(bool, Vec<String>)> {
    let mut p = Cond { s: c.when?.as_bytes(), at: 0, meta, arch, depth: 0, seen: Vec::new() };
    let v = p.or()?;
    p.skip_ws();
    (p.at == p.s.len()).then_some(())?;
    Some((v != 0, p.seen))
}

/// The evaluator of the table's conditions (grammar in
/// conformance/tools/llama-arch/loader_conditions.py). Values are integers,
/// truth is non-zero; `None` is "unknown" and propagates, except that
/// `false && unknown` is false and `true || unknown` is true. The
/// expressions are the table's own, never file input.
struct Cond<'s, 'm, 'a> {
    s: &'s [u8],
    at: usize,
    meta: &'m GgufFile<'a>,
    arch: &'s str,
    depth: u32,
    /// `name = value` of every value read, for the message.
    seen: Vec<String>,
}

impl Cond<'_, '_, '_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.at = self.at.saturating_add(1);
        }
    }

    fn eat(&mut self, tok: &str) -> bool {
        self.skip_ws();
        let end = self.at.saturating_add(tok.len());
        if self.s.get(self.at..end) == Some(tok.as_bytes()) {
            self.at = end;
            true
        } else {
            false
        }
    }

    fn deeper(&mut self) -> Option<()> {
        self.depth = self.depth.checked_add(1).filter(|d| *d <= 32)?;
        Some(())
    }

    /// Parses `or`; `Err(())` on a syntax error, `Ok(None)` for unknown.
    fn or(&mut self) -> Option<u64> {
        self.or_tri().ok()?
    }

    fn or_tri(&mut self) -> Result<Option<u64>, ()> {
        let mut acc = self.and_tri()?;
        while self.eat("||") {
            let r = self.and_tri()?;
            acc = match (acc, r) {
                (Some(a), _) if a != 0 => Some(1),
                (_, Some(b)) if b != 0 => Some(1),
                (Some(_), Some(_)) => Some(0),
                _ => None,
            };
        }
        Ok(acc)
    }

    fn and_tri(&mut self) -> Result<Option<u64>, ()> {
        let mut acc = self.not_tri()?;
        while self.eat("&&") {
            let r = self.not_tri()?;
            acc = match (acc, r) {
                (Some(0), _) | (_, Some(0)) => Some(0),
                (Some(_), Some(_)) => Some(1),
                _ => None,
            };
        }
        Ok(acc)
    }

    fn not_tri(&mut self) -> Result<Option<u64>, ()> {
        self.skip_ws();
        if self.peek() == Some(b'!') && self.s.get(self.at.saturating_add(1)) != Some(&b'=') {
            self.at = self.at.saturating_add(1);
            self.deeper().ok_or(())?;
            let v = self.not_tri()?;
            self.depth = self.depth.saturating_sub(1);
            return Ok(v.map(|v| u64::from(v == 0)));
        }
        self.cmp_tri()
    }

    fn cmp_tri(&mut self) -> Result<Option<u64>, ()> {
        let left = self.atom_tri()?;
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.eat(op) {
                let right = self.atom_tri()?;
                let (Some(a), Some(b)) = (left, right) else { return Ok(None) };
                let r = match op {
                    "==" => a == b,
                    "!=" => a != b,
                    "<=" => a <= b,
                    ">=" => a >= b,
                    "<" => a < b,
                    _ => a > b,
                };
                return Ok(Some(u64::from(r)));
            }
        }
        Ok(left)
    }

    fn word(&mut self) -> &str {
        self.skip_ws();
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.at = self.at.saturating_add(1);
        }
        self.s.get(start..self.at).and_then(|w| std::str::from_utf8(w).ok()).unwrap_or("")
    }

    /// A key name up to `,` or `)`, with `{arch}` replaced.
    fn key_name(&mut self) -> Result<String, ()> {
        self.skip_ws();
        let start = self.at;
        while self.peek().is_some_and(|c| c != b',' && c != b')') {
            self.at = self.at.saturating_add(1);
        }
        let raw = self.s.get(start..self.at).and_then(|w| std::str::from_utf8(w).ok()).ok_or(())?;
        Ok(raw.trim().replace("{arch}", self.arch))
    }

    /// `, default)` or `)`: the default, evaluated (`Ok(None)` without one).
    fn default_tri(&mut self) -> Result<Option<Option<u64>>, ()> {
        if self.eat(",") {
            self.deeper().ok_or(())?;
            let d = self.or_tri()?;
            self.depth = self.depth.saturating_sub(1);
            if !self.eat(")") {
                return Err(());
            }
            return Ok(Some(d));
        }
        if self.eat(")") { Ok(None) } else { Err(()) }
    }

    fn note(&mut self, label: &str, v: Option<u64>) {
        if let Some(v) = v {
            let s = format!("{label} = {v}");
            if !self.seen.contains(&s) {
                self.seen.push(s);
            }
        }
    }

    fn atom_tri(&mut self) -> Result<Option<u64>, ()> {
        self.skip_ws();
        match self.peek().ok_or(())? {
            b'(' => {
                self.at = self.at.saturating_add(1);
                self.deeper().ok_or(())?;
                let v = self.or_tri()?;
                self.depth = self.depth.saturating_sub(1);
                if self.eat(")") { Ok(v) } else { Err(()) }
            }
            c if c.is_ascii_digit() => {
                let w = self.word().to_string();
                w.parse().map(Some).map_err(|_| ())
            }
            _ => {
                let w = self.word().to_string();
                if matches!(w.as_str(), "key" | "len" | "has") {
                    if !self.eat("(") {
                        return Err(());
                    }
                    let name = self.key_name()?;
                    let kv = self.meta.get(&name);
                    let default = self.default_tri()?;
                    let v = match (w.as_str(), kv) {
                        ("has", kv) => return Ok(Some(u64::from(kv.is_some()))),
                        (_, None) => return Ok(default.flatten()),
                        ("key", Some(kv)) => match kv.value {
                            Value::Bool(b) => Some(u64::from(b != 0)),
                            v => v.as_u64(),
                        },
                        (_, Some(kv)) => kv.value.as_array().map(|a| a.len),
                    };
                    if let Some(v) = v {
                        let text = if w == "len" { format!("{name} has {v} entries") } else { format!("{name} = {v}") };
                        if !self.seen.contains(&text) {
                            self.seen.push(text);
                        }
                    }
                    return Ok(v);
                }
                let v = self.hparam(&w);
                self.note(&w, v);
                Ok(v)
            }
        }
    }

    /// The hyper-parameters conditions name, read as llama.cpp reads them.
    fn hparam(&self, name: &str) -> Option<u64> {
        let key = |k: &str| self.meta.get(&format!("{}.{k}", self.arch));
        let block_count = key("block_count").and_then(|kv| kv.value.as_u64());
        match name {
            "n_layer_all" => block_count,
            "n_layer" => {
                let nextn = key("nextn_predict_layers").map_or(Some(0), |kv| kv.value.as_u64())?;
                block_count?.checked_sub(nextn)
            }
            _ => Hparams::read(self.meta, self.arch).var(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_take_whole_decimal_segments_only() {
        assert_eq!(pattern_of("blk.12.attn_q.weight"), ("blk.{}.attn_q.weight".into(), vec![12]));
        assert_eq!(pattern_of("blk.0.ffn_gate.3.weight"), ("blk.{}.ffn_gate.{}.weight".into(), vec![0, 3]));
        assert_eq!(pattern_of("dense_2.weight"), ("dense_2.weight".into(), vec![]));
        assert_eq!(pattern_of("blk.01.attn_q.weight").1, Vec::<u64>::new(), "leading zero is not llama.cpp's spelling");
    }

    fn file_with(kvs: &[(&str, crate::write::OwnedValue)]) -> Vec<u8> {
        let mut m = crate::write::GgufModel::new();
        for (k, v) in kvs {
            m.kv(k, v.clone());
        }
        m.to_bytes()
    }

    fn holds(bytes: &[u8], arch: &str, when: &'static str) -> Option<bool> {
        let parsed = crate::parse::parse_bytes(bytes)?;
        let c = ConditionalKey { key: "{arch}.x", when: Some(when), because: "", source: "" };
        condition_holds(&parsed.file, arch, &c).map(|(b, _)| b)
    }

    #[test]
    fn every_table_condition_parses() {
        let bytes = file_with(&[]);
        let parsed = crate::parse::parse_bytes(&bytes).expect("parse");
        let mut n = 0;
        for a in ARCH_TABLE {
            for c in a.conditional_keys {
                let Some(when) = c.when else { continue };
                let mut p =
                    Cond { s: when.as_bytes(), at: 0, meta: &parsed.file, arch: a.name, depth: 0, seen: Vec::new() };
                assert!(p.or_tri().is_ok(), "{}: {when}", a.name);
                p.skip_ws();
                assert_eq!(p.at, when.len(), "{}: {when} not read to the end", a.name);
                n += 1;
            }
        }
        assert!(n >= 20, "{n} translated conditions");
    }

    #[test]
    fn conditions_follow_llama_cpp() {
        use crate::types::ValueType;
        use crate::write::OwnedValue as V;
        let lite = "!(n_layer == 27 || n_layer == 26 || (n_layer == 48 && key({arch}.vocab_size, len(tokenizer.ggml.tokens, 0)) == 128256))";
        let tokens = |n: usize| V::Array(ValueType::String, vec![V::str("t"); n]);
        let f = file_with(&[("deepseek2.block_count", V::U32(2)), ("tokenizer.ggml.tokens", tokens(3))]);
        assert_eq!(holds(&f, "deepseek2", lite), Some(true));
        let f = file_with(&[("deepseek2.block_count", V::U32(27))]);
        assert_eq!(holds(&f, "deepseek2", lite), Some(false));
        let f = file_with(&[("deepseek2.block_count", V::U32(28)), ("deepseek2.nextn_predict_layers", V::U32(1))]);
        assert_eq!(holds(&f, "deepseek2", lite), Some(false), "n_layer excludes the nextn layers");
        let f = file_with(&[("deepseek2.block_count", V::U32(48)), ("deepseek2.vocab_size", V::U32(128_256))]);
        assert_eq!(holds(&f, "deepseek2", lite), Some(false));
        let f = file_with(&[("deepseek2.block_count", V::U32(48)), ("tokenizer.ggml.tokens", tokens(4))]);
        assert_eq!(holds(&f, "deepseek2", lite), Some(true));
        // Without block_count: unknown, so never reported.
        assert_eq!(holds(&file_with(&[]), "deepseek2", lite), None);
        // A key's value with a default, presence, and three-valued logic.
        let hc = "key({arch}.hyper_connection.count, 0) > 0";
        assert_eq!(holds(&file_with(&[]), "dflash", hc), Some(false));
        assert_eq!(holds(&file_with(&[("dflash.hyper_connection.count", V::U32(4))]), "dflash", hc), Some(true));
        let swa = "has({arch}.attention.sliding_window) && key({arch}.attention.sliding_window) > 0";
        assert_eq!(holds(&file_with(&[]), "dflash", swa), Some(false), "false && unknown is false");
        let f = file_with(&[("dflash.attention.sliding_window", V::str("x"))]);
        assert_eq!(holds(&f, "dflash", swa), None, "a string is not a value the condition can compare");
        assert_eq!(holds(&file_with(&[]), "x", "1"), Some(true));
        assert_eq!(holds(&file_with(&[]), "x", "1 ||"), None, "syntax error");
        assert_eq!(holds(&file_with(&[]), "x", &*"(".repeat(100).leak()), None);
    }

    #[test]
    fn expressions_evaluate_known_names_and_refuse_others() {
        let hp = Hparams {
            n_embd: Some(32),
            n_head: Some(4),
            n_head_kv: Some(2),
            head_k: Some(8),
            head_v: Some(8),
            n_ff: Some(64),
            ..Hparams::default()
        };
        assert_eq!(eval("n_embd_head_k * n_head", &hp, None, None), Some(32));
        assert_eq!(eval("((n_embd_head_k * n_head) + (n_embd_gqa) + (n_embd_gqa))", &hp, None, None), Some(64));
        assert_eq!(eval("2 * n_ff", &hp, None, None), Some(128));
        assert_eq!(eval("hparams.n_ff()", &hp, None, None), Some(64));
        assert_eq!(eval("n_rot/2", &hp, None, None), None, "n_rot unknown here");
        assert_eq!(eval("local:n_ff", &hp, None, None), None);
        assert_eq!(eval("n_embd / 0", &hp, None, None), None);
        assert_eq!(eval(&"(".repeat(100), &hp, None, None), None);
        // `NAME@layer` takes the tensor's layer, and is unknown outside one.
        let l1 = Hparams { n_head_kv: Some(0), ..hp.clone() };
        assert_eq!(eval("(n_embd_v_gqa@layer)", &hp, Some(&l1), None), Some(0));
        assert_eq!(eval("n_embd_v_gqa + n_embd_v_gqa@layer", &hp, Some(&hp), None), Some(32));
        assert_eq!(eval("n_embd_v_gqa@layer", &hp, None, None), None);
        // `kv:KEY:DEFAULT` reads `ARCH.KEY` from the file, else the default
        use crate::write::OwnedValue as V;
        let f = file_with(&[("ernie4_5-moe.expert_shared_feed_forward_length", V::U32(64))]);
        let parsed = crate::parse::parse_bytes(&f).expect("parse");
        let m = Some((&parsed.file, "ernie4_5-moe"));
        assert_eq!(eval("2*kv:expert_shared_feed_forward_length:0", &hp, None, m), Some(128));
        assert_eq!(eval("kv:expert_count:7", &hp, None, m), Some(7));
        assert_eq!(eval("kv:expert_count", &hp, None, m), None, "no default: unknown");
        assert_eq!(eval("kv:expert_shared_feed_forward_length", &hp, None, None), None);
    }

    #[test]
    fn every_architectures_contract_is_complete() {
        // Every tensor name each loader may create is in the table, so an
        // unknown name is always reported (gen_arch_table.py marks a class
        // incomplete when a name is built at run time).
        let incomplete: Vec<&str> = ARCH_TABLE.iter().filter(|a| !a.complete).map(|a| a.name).collect();
        assert!(incomplete.is_empty(), "{incomplete:?}");
        assert!(ARCH_TABLE.len() >= 150, "{} architectures", ARCH_TABLE.len());
        // The hybrids' per-layer blocks: SSM tensors without a suffix, and
        // the convolutions glm5-next creates through a lambda.
        let jamba = arch_table("jamba").expect("jamba");
        assert!(jamba.tensors.contains(&"blk.{}.ssm_a") && jamba.tensors.contains(&"blk.{}.attn_k.weight"));
        let glm5 = arch_table("glm5-next").expect("glm5-next");
        assert!(glm5.tensors.contains(&"blk.{}.ssm_conv1d_q.weight"));
    }

    #[test]
    fn token_types_are_the_vocabularys_count() {
        // llama.cpp's BERT family creates `token_types.weight` as
        // `{n_embd, n_token_types}`: `tokenizer.ggml.token_type_count`, 0
        // when absent (b3889's converter wrote 1 for XLM-RoBERTa over a
        // 2-row tensor: today's llama.cpp refuses that file).
        use crate::write::OwnedValue as V;
        let count = |kvs: &[(&str, V)]| {
            let f = file_with(kvs);
            let parsed = crate::parse::parse_bytes(&f).expect("parse");
            Hparams::read(&parsed.file, "bert").var("n_token_types")
        };
        assert_eq!(count(&[("tokenizer.ggml.token_type_count", V::U32(2))]), Some(2));
        assert_eq!(count(&[]), Some(0));
        assert_eq!(count(&[("tokenizer.ggml.token_type_count", V::I32(2))]), None, "the key-type rules' finding");
    }

    #[test]
    fn per_layer_arrays_are_read_at_each_layer() {
        use crate::types::ValueType as T;
        use crate::write::OwnedValue as V;
        let arr = |xs: &[u32]| V::Array(T::U32, xs.iter().map(|x| V::U32(*x)).collect());
        let f = file_with(&[
            ("jamba.embedding_length", V::U32(64)),
            ("jamba.attention.head_count", V::U32(4)),
            ("jamba.attention.head_count_kv", arr(&[0, 2])),
            ("jamba.feed_forward_length", arr(&[128, 96])),
        ]);
        let parsed = crate::parse::parse_bytes(&f).expect("parse");
        let g = &parsed.file;
        let l0 = Hparams::read(g, "jamba");
        let l1 = Hparams::read_at(g, "jamba", 1);
        // head size is n_embd / n_head() (layer 0), for every layer
        assert_eq!((l0.head_k, l1.head_k), (Some(16), Some(16)));
        assert_eq!((l0.var("n_embd_k_gqa"), l1.var("n_embd_k_gqa")), (Some(0), Some(32)));
        assert_eq!((l0.n_ff, l1.n_ff), (Some(128), Some(96)));
        // past the array: unknown, never a guess
        assert_eq!(Hparams::read_at(g, "jamba", 2).n_ff, None);
    }
}
