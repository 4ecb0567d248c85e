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

use super::llama_arch_table::{ARCH_TABLE, ArchTable, BASE_REQUIRED_KEYS, GENERIC_SHAPES, Required, TensorShape};

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
}

/// A scalar u32, or the first element of a per-layer array.
pub(crate) fn layer0(kv: &KeyValue<'_>) -> Option<u64> {
    match kv.value {
        Value::Array(a) => a.iter().next().and_then(|e| e.value.as_u64()),
        v => v.as_u64(),
    }
}

impl Hparams {
    /// Reads the values as llama.cpp's loader does, defaults included: an
    /// absent `feed_forward_length` or `head_count` is 0, `head_count_kv`
    /// defaults to `head_count`, head sizes to `n_embd / n_head` (0 without
    /// heads), the vocabulary size is the number of tokens (`vocab_size`
    /// for the `none` tokenizer).
    fn read(file: &GgufFile<'_>, arch: &str) -> Hparams {
        let key = |name: &str| file.get(&format!("{arch}.{name}"));
        let n_embd = key("embedding_length").and_then(layer0);
        let n_head = key("attention.head_count").map_or(Some(0), layer0);
        let n_head_kv = match key("attention.head_count_kv") {
            Some(kv) => layer0(kv),
            None => n_head,
        };
        // Sliding-window layers may have their own head sizes; layer 0's
        // locals then depend on the window pattern: not evaluated.
        let swa_sizes = key("attention.key_length_swa").is_some() || key("attention.value_length_swa").is_some();
        let head = |name: &str| -> Option<u64> {
            if swa_sizes {
                return None;
            }
            match n_head? {
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
        let n_ff = key("feed_forward_length").map_or(Some(0), layer0);
        let n_expert = key("expert_count").and_then(layer0).unwrap_or(0);
        let n_expert_used = key("expert_used_count").map_or(Some(0), layer0);
        let n_ff_exp = key("expert_feed_forward_length")
            .and_then(layer0)
            .filter(|v| *v > 0)
            .or_else(|| n_ff?.checked_div(n_expert_used.filter(|u| *u > 0)?));
        let n_rot = match key("rope.dimension_count") {
            Some(kv) => layer0(kv),
            None => head_k,
        };
        Hparams { n_embd, n_vocab, n_ff, n_head, n_head_kv, head_k, head_v, n_expert, n_expert_used, n_ff_exp, n_rot }
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
            _ => None,
        }
    }
}

/// Evaluates a shape expression of the generated table (`+ - * /`,
/// parentheses, integers and llama.cpp's local names); `None` when it names
/// anything unknown or overflows. The expressions are the table's own
/// (static, shallow), never file input; the depth guard is belt and braces.
fn eval(expr: &str, hp: &Hparams) -> Option<u64> {
    let mut p = Expr { s: expr.as_bytes(), at: 0, hp, depth: 0 };
    let v = p.sum()?;
    p.skip_ws();
    (p.at == p.s.len()).then_some(v)
}

struct Expr<'s, 'h> {
    s: &'s [u8],
    at: usize,
    hp: &'h Hparams,
    depth: u32,
}

impl Expr<'_, '_> {
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
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':')) {
                    self.bump();
                }
                // `hparams.n_ff()`: a call with no arguments is part of the name.
                if self.s.get(self.at..self.at.saturating_add(2)) == Some(b"()") {
                    self.at = self.at.saturating_add(2);
                }
                let name = std::str::from_utf8(self.s.get(start..self.at)?).ok()?;
                self.hp.var(name)
            }
            _ => None,
        }
    }
}

/// A tensor name split into its pattern (`blk.{}.attn_q.weight`) and the
/// numbers in place of `{}`: every dot-separated segment that is a
/// canonical decimal number (`0`, `17`; not `01`).
fn pattern_of(name: &str) -> (String, Vec<u64>) {
    let mut pattern = String::with_capacity(name.len());
    let mut numbers = Vec::new();
    for (i, seg) in name.split('.').enumerate() {
        if i > 0 {
            pattern.push('.');
        }
        let canonical = !seg.is_empty()
            && seg.bytes().all(|b| b.is_ascii_digit())
            && (seg == "0" || !seg.starts_with('0'))
            && seg.len() <= 18;
        match seg.parse::<u64>() {
            Ok(n) if canonical => {
                pattern.push_str("{}");
                numbers.push(n);
            }
            _ => pattern.push_str(seg),
        }
    }
    (pattern, numbers)
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
    let block_count = meta
        .get(&format!("{arch}.block_count"))
        .and_then(layer0)
        .filter(|n| (1..=crate::limits::LLAMA_MAX_LAYERS).contains(n));
    let nextn = meta.get(&format!("{arch}.nextn_predict_layers")).and_then(layer0).unwrap_or(0);
    let main_layers = block_count.map(|n| n.saturating_sub(nextn));

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
        check_shape(t, name, shape, &hp, arch, sink);
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

fn check_shape(t: &TensorInfo<'_>, name: &str, shape: &TensorShape, hp: &Hparams, arch: &str, sink: &mut Sink<'_>) {
    if shape.dims.is_empty() || t.n_dims > 4 {
        return;
    }
    let actual = padded(t.dims().map(Some));
    let mut first_expected = None;
    for alt in shape.dims {
        if alt.len() > 4 {
            return;
        }
        let expected = padded(alt.iter().map(|e| eval(e, hp)));
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
                super::keys::KV_SECTION,
                || "kv".into(),
                || format!("`{key}` is missing; llama.cpp requires it for architecture `{arch}` and refuses the file"),
            );
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
        assert_eq!(eval("n_embd_head_k * n_head", &hp), Some(32));
        assert_eq!(eval("((n_embd_head_k * n_head) + (n_embd_gqa) + (n_embd_gqa))", &hp), Some(64));
        assert_eq!(eval("2 * n_ff", &hp), Some(128));
        assert_eq!(eval("hparams.n_ff()", &hp), Some(64));
        assert_eq!(eval("n_rot/2", &hp), None, "n_rot unknown here");
        assert_eq!(eval("local:n_ff", &hp), None);
        assert_eq!(eval("n_embd / 0", &hp), None);
        assert_eq!(eval(&"(".repeat(100), &hp), None);
    }
}
