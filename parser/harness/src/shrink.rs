//! Delta debugging of a model description: the smallest description that
//! still shows a finding. Passes remove tensors, key/values and array
//! elements (ddmin over each list), cut tensors down to one block, empty
//! strings and zero numbers, and shorten names, repeated while any of them
//! helps and the budget lasts.

use std::time::{Duration, Instant};

use crate::compare::Size;
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedValue};

/// How much shrinking may cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Most runs of the test (each one a run of the writer under test).
    pub max_runs: usize,
    /// Most time.
    pub max_time: Duration,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { max_runs: 400, max_time: Duration::from_secs(120) }
    }
}

/// What shrinking did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShrinkStats {
    /// Runs of the test.
    pub runs: usize,
    /// Runs whose candidate still showed the finding.
    pub kept: usize,
    /// Time taken.
    #[serde(serialize_with = "crate::campaign_report::secs")]
    pub elapsed: Duration,
    /// Size before.
    pub before: Size,
    /// Size after.
    pub after: Size,
    /// Whether the budget ran out before no pass could shrink further.
    pub budget_exhausted: bool,
}

struct Shrinker<'t> {
    test: &'t mut dyn FnMut(&GgufModel) -> bool,
    budget: Budget,
    start: Instant,
    runs: usize,
    kept: usize,
}

impl Shrinker<'_> {
    fn exhausted(&self) -> bool {
        self.runs >= self.budget.max_runs || self.start.elapsed() >= self.budget.max_time
    }

    /// Runs the test on a candidate (laid out canonically); false once the
    /// budget is spent.
    fn try_model(&mut self, mut candidate: GgufModel) -> Option<GgufModel> {
        if self.exhausted() || candidate.canonical().is_none() {
            return None;
        }
        self.runs += 1;
        if (self.test)(&candidate) {
            self.kept += 1;
            Some(candidate)
        } else {
            None
        }
    }

    /// ddmin over the list `get(m)`: removes chunks, halving their size
    /// when no chunk can go.
    fn ddmin<T: Clone>(
        &mut self,
        model: &mut GgufModel,
        get: &dyn Fn(&GgufModel) -> Option<Vec<T>>,
        set: &dyn Fn(&mut GgufModel, Vec<T>),
    ) -> bool {
        let mut progress = false;
        let mut n = 1usize;
        loop {
            let Some(items) = get(model) else { return progress };
            if items.is_empty() || self.exhausted() {
                return progress;
            }
            let chunk = items.len().div_ceil(n);
            let mut reduced = false;
            let mut start = 0;
            while start < items.len() {
                let end = (start + chunk).min(items.len());
                let mut rest = items.get(..start).unwrap_or_default().to_vec();
                rest.extend_from_slice(items.get(end..).unwrap_or_default());
                let mut candidate = model.clone();
                set(&mut candidate, rest);
                if let Some(better) = self.try_model(candidate) {
                    *model = better;
                    reduced = true;
                    break;
                }
                start = end;
            }
            if reduced {
                progress = true;
                n = n.saturating_sub(1).max(1);
            } else if n >= items.len() {
                return progress;
            } else {
                n = (n * 2).min(items.len());
            }
        }
    }

    /// Tries each candidate made by `make` from the current model; keeps
    /// the first that still shows the finding.
    fn first_of(&mut self, model: &mut GgufModel, candidates: Vec<GgufModel>) -> bool {
        for c in candidates {
            if c == *model {
                continue;
            }
            if let Some(better) = self.try_model(c) {
                *model = better;
                return true;
            }
        }
        false
    }
}

fn simpler_values(v: &OwnedValue) -> Vec<OwnedValue> {
    match v {
        OwnedValue::String(s) if !s.is_empty() => {
            let mut out = vec![OwnedValue::String(Vec::new())];
            let half = s.len() / 2;
            if half > 0 {
                // Only cuts on a character boundary keep the string UTF-8.
                if let Some(prefix) = s.get(..half).filter(|p| std::str::from_utf8(p).is_ok()) {
                    out.push(OwnedValue::String(prefix.to_vec()));
                }
            }
            out
        }
        OwnedValue::U8(x) if *x != 0 => vec![OwnedValue::U8(0)],
        OwnedValue::I8(x) if *x != 0 => vec![OwnedValue::I8(0)],
        OwnedValue::U16(x) if *x != 0 => vec![OwnedValue::U16(0)],
        OwnedValue::I16(x) if *x != 0 => vec![OwnedValue::I16(0)],
        OwnedValue::U32(x) if *x != 0 => vec![OwnedValue::U32(0)],
        OwnedValue::I32(x) if *x != 0 => vec![OwnedValue::I32(0)],
        OwnedValue::U64(x) if *x != 0 => vec![OwnedValue::U64(0)],
        OwnedValue::I64(x) if *x != 0 => vec![OwnedValue::I64(0)],
        OwnedValue::F32(x) if x.to_bits() != 0 => vec![OwnedValue::F32(0.0)],
        OwnedValue::F64(x) if x.to_bits() != 0 => vec![OwnedValue::F64(0.0)],
        OwnedValue::Bool(1) => vec![OwnedValue::Bool(0)],
        _ => Vec::new(),
    }
}

/// Keys the generator gives meaning to (the architecture's, the tokenizer's,
/// `general.*`): never renamed.
fn renamable(key: &[u8]) -> bool {
    const ROOTS: &[&[u8]] = &[b"custom.", b"fuzz.", b"meta.", b"train.", b"quant_info.", b"x0."];
    ROOTS.iter().any(|r| key.starts_with(r))
}

/// Shrinks `model` while `test` holds (the caller's test returns true when
/// a candidate still shows the finding; the original must). Returns the
/// smallest description found and what it cost.
pub fn shrink(model: &GgufModel, budget: Budget, test: &mut dyn FnMut(&GgufModel) -> bool) -> (GgufModel, ShrinkStats) {
    let mut s = Shrinker { test, budget, start: Instant::now(), runs: 0, kept: 0 };
    let before = Size::of(model);
    let mut m = model.clone();
    for _round in 0..4 {
        let mut progress = false;
        progress |= s.ddmin(&mut m, &|m| Some(m.tensors.clone()), &|m, v| m.tensors = v);
        progress |= s.ddmin(&mut m, &|m| Some(m.kvs.clone()), &|m, v| m.kvs = v);
        // Array elements, key by key.
        let mut i = 0;
        while i < m.kvs.len() {
            let get = move |m: &GgufModel| match m.kvs.get(i) {
                Some((_, OwnedValue::Array(_, items))) => Some(items.clone()),
                _ => None,
            };
            let set = move |m: &mut GgufModel, v: Vec<OwnedValue>| {
                if let Some((_, OwnedValue::Array(_, items))) = m.kvs.get_mut(i) {
                    *items = v;
                }
            };
            progress |= s.ddmin(&mut m, &get, &set);
            i += 1;
        }
        // Tensors cut to one block (one dimension), then each dim to 1.
        for t in 0..m.tensors.len() {
            let Some(tensor) = m.tensors.get(t) else { break };
            let Some(ty) = GgmlType::from_id(tensor.type_id) else { continue };
            let bs = u64::from(ty.block_size());
            let mut shapes = vec![vec![bs]];
            for d in 0..tensor.dims.len() {
                let mut dims = tensor.dims.clone();
                if let Some(x) = dims.get_mut(d) {
                    *x = if d == 0 { bs } else { 1 };
                }
                shapes.push(dims);
            }
            let candidates = shapes
                .into_iter()
                .filter_map(|dims| {
                    let n = dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d))?;
                    let bytes = usize::try_from(ty.row_size(n)?).ok()?;
                    let mut c = m.clone();
                    let ct = c.tensors.get_mut(t)?;
                    if bytes > ct.data.len() || dims == ct.dims {
                        return None;
                    }
                    ct.data.truncate(bytes);
                    ct.dims = dims;
                    Some(c)
                })
                .collect();
            progress |= s.first_of(&mut m, candidates);
        }
        // Simpler values: top-level scalars, then array elements.
        for i in 0..m.kvs.len() {
            let Some((_, v)) = m.kvs.get(i) else { break };
            let mut candidates = Vec::new();
            for simpler in simpler_values(v) {
                let mut c = m.clone();
                if let Some(kv) = c.kvs.get_mut(i) {
                    kv.1 = simpler;
                }
                candidates.push(c);
            }
            if let OwnedValue::Array(_, items) = v {
                for (j, item) in items.iter().enumerate() {
                    if let Some(simpler) = simpler_values(item).into_iter().next() {
                        let mut c = m.clone();
                        if let Some((_, OwnedValue::Array(_, items))) = c.kvs.get_mut(i) {
                            if let Some(x) = items.get_mut(j) {
                                *x = simpler;
                            }
                        }
                        candidates.push(c);
                    }
                }
            }
            // One at a time: keep every simplification that holds.
            for c in candidates {
                progress |= s.first_of(&mut m, vec![c]);
            }
        }
        // Shorter names.
        for t in 0..m.tensors.len() {
            let mut c = m.clone();
            if let Some(ct) = c.tensors.get_mut(t) {
                let name = format!("t{t}").into_bytes();
                if ct.name.len() > name.len() && !m.tensors.iter().any(|x| x.name == name) {
                    ct.name = name;
                    progress |= s.first_of(&mut m, vec![c]);
                }
            }
        }
        for i in 0..m.kvs.len() {
            let mut c = m.clone();
            if let Some((k, _)) = c.kvs.get_mut(i) {
                let key = format!("custom.k{i}").into_bytes();
                if renamable(k) && k.len() > key.len() && !m.kvs.iter().any(|(x, _)| *x == key) {
                    *k = key;
                    progress |= s.first_of(&mut m, vec![c]);
                }
            }
        }
        if !progress || s.exhausted() {
            break;
        }
    }
    let stats = ShrinkStats {
        runs: s.runs,
        kept: s.kept,
        elapsed: s.start.elapsed(),
        before,
        after: Size::of(&m),
        budget_exhausted: s.exhausted(),
    };
    (m, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gguf_validate_core::types::ValueType;
    use gguf_validate_core::write::OwnedTensor;

    #[test]
    fn shrinks_to_the_one_value_that_matters() {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("toy"));
        for i in 0..20u32 {
            m.kv(&format!("custom.key_number_{i}"), OwnedValue::U32(i * 3));
        }
        m.kv("custom.list", OwnedValue::Array(ValueType::U32, (0..30).map(OwnedValue::U32).collect()));
        m.tensor(OwnedTensor::zeroed("a_long_tensor_name", &[64, 3], GgmlType::F32).unwrap());
        // The "finding": some u32 equal to 27 somewhere.
        let mut test = |m: &GgufModel| {
            m.kvs.iter().any(|(_, v)| match v {
                OwnedValue::U32(27) => true,
                OwnedValue::Array(_, items) => items.contains(&OwnedValue::U32(27)),
                _ => false,
            })
        };
        let (small, stats) = shrink(&m, Budget::default(), &mut test);
        assert_eq!(small.kvs.len(), 1, "{small:?}");
        assert!(small.tensors.is_empty());
        assert_eq!(
            stats.after.values,
            small.kvs.iter().map(|(_, v)| if let OwnedValue::Array(_, i) = v { i.len() + 1 } else { 1 }).sum::<usize>()
        );
        assert!(stats.after.values <= 2, "{stats:?}");
        assert!(!stats.budget_exhausted);
    }

    #[test]
    fn the_budget_is_honoured() {
        let mut m = GgufModel::new();
        for i in 0..50u32 {
            m.kv(&format!("custom.k{i}"), OwnedValue::U32(i));
        }
        let mut runs = 0;
        let mut test = |_: &GgufModel| {
            runs += 1;
            false
        };
        let (same, stats) = shrink(&m, Budget { max_runs: 7, max_time: Duration::from_secs(60) }, &mut test);
        assert_eq!(stats.runs, 7);
        assert!(stats.budget_exhausted);
        assert_eq!(same.kvs.len(), 50);
        assert_eq!(runs, 7);
    }

    #[test]
    fn tensors_are_cut_to_one_block() {
        let mut m = GgufModel::new();
        let mut t = OwnedTensor::zeroed("w", &[64, 4], GgmlType::Q4_0).unwrap();
        t.data[0] = 9;
        m.tensor(t);
        let mut test = |m: &GgufModel| m.tensors.iter().any(|t| t.data.first() == Some(&9));
        let (small, _) = shrink(&m, Budget::default(), &mut test);
        assert_eq!(small.tensors[0].dims, vec![32]);
        assert_eq!(small.tensors[0].data.len(), 18);
        assert_eq!(small.tensors[0].name, b"w");
    }
}
