//! Which llama.cpp releases load a file: what each release users run knows
//! (`llama_releases.rs`, generated from the releases' own sources by
//! `conformance/tools/llama-releases/`) against what the file needs of its
//! loader: its architecture, tokenizer model and pre-tokenizer (a model),
//! its projector type (a projector) and its tensors' ggml types. A release
//! that does not know one of these refuses the file at load. For the
//! releases whose model loader is one switch (`table::CONTRACTS_READ`), also
//! what that loader holds a model of each architecture to: the keys and
//! tensors it requires, the tensors it creates and their shapes. The later
//! releases' contract is the pinned tree's (the model layer's); graph
//! changes between releases are not read.
//!
//! The releases and their facts are [`crate::llama_cpp`]. Every report of
//! such a file says the oldest release that loads it
//! (`summary.llama_cpp.loads_from`) and why; a validation judged against
//! releases (`--llama-cpp R`, `--llama-cpp R..`) reports each release of
//! them that refuses it (`llama-cpp-release`).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::HashMap;

use super::model::FileKind;
use super::model_tensors::{ShapeVars, pattern_into, shape_mismatch};
use crate::llama_cpp::table;
use crate::llama_cpp::{ContractRow, Term};
use crate::llama_cpp::{PINNED, Release, bit, known, run, since};
use crate::parse::{GgufFile, TensorInfo};
use crate::report::{LlamaCpp, Sink};
use crate::rules::RuleId;

/// One thing a file needs of its loader, and the releases whose loader
/// gives it (bit `i`: release `i` of the table, which holds at most 128).
#[derive(Debug)]
struct Need {
    /// A name the loader must know (`what` `name`), or what a release's
    /// model loader holds the file to.
    kind: NeedKind,
    what: &'static str,
    name: String,
    offset: u64,
    path: String,
    known: u128,
}

/// The kinds of [`Need`].
#[derive(Debug)]
enum NeedKind {
    /// A name (architecture, tokenizer, type) the release must know.
    Name,
    /// A key the file lacks and some releases require.
    KeyAbsent,
    /// A tensor the file lacks and some releases require.
    TensorAbsent,
    /// A tensor of the file some releases never create.
    TensorUnknown { arch: String },
    /// A tensor whose shape some releases expect otherwise: (expected by
    /// the newest of them, the file's).
    Shape { expected: String, actual: String },
    /// A fault of the loaders without a fix (`detail`: what they do).
    Unfixed { detail: String },
    /// A finding (this rule) by which the pinned tree refuses the file at
    /// load ([`RuleId::refuses_at_load`]): reported as itself, not again
    /// per release.
    Pinned(RuleId),
}

/// The most reasons `summary.llama_cpp.because` lists.
const MAX_BECAUSE: usize = 8;

impl Need {
    fn knows(&self, r: Release) -> bool {
        self.known & bit(r.0) != 0
    }

    /// The newest run's first release: since when the newest releases
    /// that know it have known it.
    fn since(&self) -> Option<Release> {
        since(self.known)
    }

    /// What changed in release `from` (its predecessor refuses the file).
    fn change(&self, from: Release) -> String {
        let from = from.name();
        match &self.kind {
            NeedKind::Name => format!("{} `{}` since {from}", self.what, self.name),
            NeedKind::KeyAbsent => format!("key `{}` not required since {from}", self.name),
            NeedKind::TensorAbsent => format!("tensor `{}` not required since {from}", self.name),
            NeedKind::TensorUnknown { .. } => format!("tensor `{}` created since {from}", self.name),
            NeedKind::Shape { actual, .. } => format!("shape {actual} of `{}` since {from}", self.name),
            NeedKind::Pinned(rule) => format!("no `{rule}` since {from}"),
            NeedKind::Unfixed { .. } => format!("{} `{}` safe since {from}", self.what, self.name),
        }
    }

    /// How a release refuses the file, with since when one does not.
    fn refusal(&self) -> String {
        let since = match (self.since(), &self.kind) {
            (Some(r), NeedKind::Name) => format!("known since {}", r.name()),
            (Some(r), _) => format!("loaded since {}", r.name()),
            (None, NeedKind::Name) => "known to no release of the table".to_string(),
            (None, _) => "loaded by no release of the table".to_string(),
        };
        match &self.kind {
            NeedKind::Name => format!("does not know the {} `{}` ({since})", self.what, self.name),
            NeedKind::KeyAbsent => format!("requires the key `{}`, which the file lacks ({since})", self.name),
            NeedKind::TensorAbsent => format!("requires the tensor `{}`, which the file lacks ({since})", self.name),
            NeedKind::TensorUnknown { arch } => format!(
                "never creates a tensor `{}` for architecture `{arch}` (wrong number of tensors; {since})",
                self.name
            ),
            NeedKind::Shape { expected, actual } => {
                format!("expects `{}` to have shape {expected}, not {actual} ({since})", self.name)
            }
            NeedKind::Pinned(rule) => format!("refuses the file at load as the pinned tree does (`{rule}`)"),
            NeedKind::Unfixed { detail } => format!("{detail} ({since})"),
        }
    }

    /// The finding of a release judged that does not give it.
    fn finding(&self, which: &str) -> String {
        match self.kind {
            NeedKind::Unfixed { .. } => format!("{which} {}", self.refusal()),
            _ => format!("{which} {} and refuses the file at load", self.refusal()),
        }
    }
}

/// The tokenizer models llama.cpp reads as a BPE vocabulary, whose
/// `tokenizer.ggml.pre` it looks up and refuses when unknown ("unknown
/// pre-tokenizer type"); other vocabularies take the default pre-tokenizer
/// whatever the key says (src/llama-vocab.cpp `llama_vocab::impl::load`:
/// the `tokenizer_pre` branches sit under `type == LLAMA_VOCAB_TYPE_BPE`).
const BPE_TOKENIZER_MODELS: [&str; 3] = ["gpt2", "hybriddna", "whitespace"];

/// What `file` (of `kind`, architecture `arch`) needs its loader to know.
/// (`contracts`: also what the releases' model loaders hold it to.)
fn needs(
    file: &GgufFile<'_>,
    kind: FileKind,
    arch: Option<&str>,
    contracts: bool,
    patterns: &mut Vec<(usize, String, Option<u64>)>,
) -> Vec<Need> {
    let mut out = Vec::new();
    let mut string_key = |key: &str, what: &'static str, facts: &[(&str, u8, u8)]| {
        let Some(kv) = file.get(key) else { return };
        let Some(name) = kv.value.as_string().and_then(|s| s.as_str()) else { return };
        out.push(Need {
            kind: NeedKind::Name,
            what,
            name: name.to_string(),
            offset: kv.key.offset,
            path: format!("kv[{}] {key}", kv.index),
            known: known(facts, name),
        });
    };
    match kind {
        FileKind::Model => {
            if arch.is_some() {
                string_key("general.architecture", "architecture", table::ARCHITECTURES);
            }
            string_key("tokenizer.ggml.model", "tokenizer model", table::TOKENIZER_MODELS);
            // Only a BPE vocabulary's pre-tokenizer is looked up (and an
            // unknown one refused); every other kind takes the default.
            let model = file.get("tokenizer.ggml.model").and_then(|kv| kv.value.as_string()?.as_str());
            if model.is_some_and(|m| BPE_TOKENIZER_MODELS.contains(&m)) {
                string_key("tokenizer.ggml.pre", "pre-tokenizer", table::PRE_TOKENIZERS);
            }
            if let Some(arch) = arch.filter(|_| contracts) {
                contract_needs(file, arch, patterns, &mut out);
            }
            let fixed = crate::llama_cpp::fixed_in(crate::llama_cpp::SPECIAL_TOKEN_DEFAULT_FIX);
            for d in super::keys::substituted_defaults(file) {
                out.push(Need {
                    kind: NeedKind::Unfixed {
                        detail: format!(
                            "takes the `{}` vocabulary's default {} for `{}`, outside its {} tokens, and reads past the vocabulary or refuses the file at load",
                            d.model, d.default, d.key, d.n_vocab
                        ),
                    },
                    what: "default special token",
                    name: d.key.to_string(),
                    offset: d.offset,
                    path: d.path,
                    known: fixed,
                });
            }
        }
        FileKind::Projector => string_key("clip.projector_type", "projector type", table::PROJECTOR_TYPES),
        _ => {}
    }
    let mut types: Vec<(u32, &crate::parse::TensorInfo<'_>)> = Vec::new();
    for t in &file.tensors {
        if !types.iter().any(|(id, _)| *id == t.type_id) {
            types.push((t.type_id, t));
        }
    }
    for (id, t) in types {
        let start = table::GGML_TYPES.partition_point(|(i, ..)| *i < id);
        let runs = table::GGML_TYPES.get(start..).unwrap_or_default().iter().take_while(|(i, ..)| *i == id);
        let known = runs.fold(0, |mask, (_, _, first, last)| mask | run(*first, *last));
        let name = crate::types::GgmlType::from_id(id).map_or_else(|| format!("id {id}"), |t| t.name().to_string());
        out.push(Need {
            kind: NeedKind::Name,
            what: "type",
            name,
            offset: t.type_offset,
            path: format!("tensor[{}] {}/type", t.index, crate::parse::escape_bytes(t.name.bytes, false)),
            known,
        });
    }
    out
}

/// What the model loaders of the releases read by one switch
/// (`table::CONTRACTS`) hold a model of `arch` to, where the file and a
/// release part: a key or a tensor it requires that the file lacks, a
/// tensor of the file it never creates, a shape it expects otherwise.
/// Each release the rows do not cover accepts what they would refuse.
fn contract_needs(
    file: &GgufFile<'_>,
    arch: &str,
    patterns: &mut Vec<(usize, String, Option<u64>)>,
    out: &mut Vec<Need>,
) {
    let rows = crate::llama_cpp::contract(arch);
    if rows.is_empty() {
        return;
    }
    // The file's tensors by pattern (`blk.{}.attn_q.weight`), with their layers.
    // The model layer's patterns when it read every tensor of the file;
    // else made here (one buffer for every name).
    let mut present: HashMap<String, Vec<(Option<u64>, &TensorInfo<'_>)>, foldhash::fast::RandomState> =
        HashMap::with_hasher(foldhash::fast::RandomState::default());
    let kept = std::mem::take(patterns);
    if kept.len() == file.tensors.len() {
        for ((index, pattern, layer), t) in kept.into_iter().zip(&file.tensors) {
            if index != t.index {
                present.clear();
                break;
            }
            present.entry(pattern).or_default().push((layer, t));
        }
    }
    if present.is_empty() {
        let mut pattern = String::new();
        for t in &file.tensors {
            let Some(name) = t.name.as_str() else { continue };
            let mut layer = None;
            pattern_into(name, &mut pattern, |n| {
                layer.get_or_insert(n);
            });
            match present.get_mut(pattern.as_str()) {
                Some(ts) => ts.push((layer, t)),
                None => {
                    present.insert(pattern.clone(), vec![(layer, t)]);
                }
            }
        }
    }
    let first_tensor = file.tensors.first().map_or(file.infos_end, |t| t.name.offset);
    let layers = file.get(&format!("{arch}.block_count")).and_then(super::model_tensors::layer0);
    let mut vars = None;
    // The releases of the rows of one (term, item): rows are sorted by
    // term and item, so they are found by binary search.
    let refusing = |item: &str, term: Term| -> u128 {
        let at = rows.partition_point(|r| (r.term, r.item) < (term, item));
        let same = rows.get(at..).unwrap_or_default().iter().take_while(|r| r.term == term && r.item == item);
        same.fold(0, |m, r| m | run(r.first, r.last))
    };
    let mut complete = 0u128;
    let mut i = 0;
    while let Some(&ContractRow { term, item, .. }) = rows.get(i) {
        let group = rows.get(i..).unwrap_or_default().iter().take_while(|r| r.term == term && r.item == item);
        let (same, mask) = group.fold((0usize, 0u128), |(n, m), r| (n.saturating_add(1), m | run(r.first, r.last)));
        i = i.saturating_add(same.max(1));
        match term {
            Term::Key => {
                let key = item.strip_prefix('=').map_or_else(|| format!("{arch}.{item}"), str::to_string);
                if file.get(&key).is_none() {
                    out.push(Need {
                        kind: NeedKind::KeyAbsent,
                        what: "key",
                        offset: super::KV_SECTION,
                        path: "kv".into(),
                        name: key,
                        known: !mask,
                    });
                }
            }
            Term::Tensor => {
                let missing = match (item.contains("{}"), present.get(item)) {
                    (false, found) => found.is_none().then(|| item.to_string()),
                    (true, found) => (0..layers.unwrap_or(0))
                        .find(|l| !found.is_some_and(|ts| ts.iter().any(|(at, _)| *at == Some(*l))))
                        .map(|l| item.replacen("{}", &l.to_string(), 1)),
                };
                if let Some(name) = missing {
                    out.push(Need {
                        kind: NeedKind::TensorAbsent,
                        what: "tensor",
                        offset: first_tensor,
                        path: "tensors".into(),
                        name,
                        known: !mask,
                    });
                }
            }
            Term::Complete => complete = mask,
            Term::Creates => {}
            Term::Shape => {
                let Some((pattern, dims)) = item.split_once('=') else { continue };
                let Some(found) = present.get(pattern) else { continue };
                let vars = vars.get_or_insert_with(|| ShapeVars::read(file, arch));
                // The same for every layer (the hyper-parameters are layer 0's).
                let Some(want) = vars.expected(dims) else { continue };
                let Some((t, (expected, actual))) =
                    found.iter().find_map(|(_, t)| Some((*t, shape_mismatch(t, &want)?)))
                else {
                    continue;
                };
                let name = crate::parse::escape_bytes(t.name.bytes, false);
                let refused = mask;
                // One finding per tensor: the releases of every shape it fails.
                match out.iter_mut().find(|n| matches!(n.kind, NeedKind::Shape { .. }) && n.name == name) {
                    Some(need) => need.known &= !refused,
                    None => out.push(Need {
                        kind: NeedKind::Shape { expected, actual },
                        what: "shape",
                        offset: t.dims_offset,
                        path: format!("tensor[{}] {name}/dims", t.index),
                        name,
                        known: !refused,
                    }),
                }
            }
        }
    }
    if complete == 0 {
        return;
    }
    let mut unknown: Vec<(&String, &TensorInfo<'_>)> =
        present.iter().filter_map(|(p, ts)| Some((p, ts.first()?.1))).collect();
    unknown.sort_by_key(|(_, t)| t.index);
    for (pattern, t) in unknown {
        let refused = complete & !refusing(pattern, Term::Creates);
        if refused == 0 {
            continue;
        }
        let name = crate::parse::escape_bytes(t.name.bytes, false);
        out.push(Need {
            kind: NeedKind::TensorUnknown { arch: arch.to_string() },
            what: "tensor",
            offset: t.name.offset,
            path: format!("tensor[{}] {name}", t.index),
            name,
            known: !refused,
        });
    }
}

/// Which releases load `file`, when it is a model of an architecture the
/// pinned tree knows, or any when releases are judged (a vocabulary
/// without tensors by its names only), or a projector, and its model layer was examined (not
/// `--container-only`, not a shard of a split set: a set is loaded whole);
/// judged against releases, each that refuses it is reported.
pub(crate) fn of(file: &GgufFile<'_>, arch: Option<&str>, sink: &mut Sink<'_>) -> Option<LlamaCpp> {
    if sink.options().container_only || super::split::role(file).is_some() {
        return None;
    }
    let kind = FileKind::judged(file, arch, sink);
    let known_arch = arch.is_some_and(|a| super::llama_arches::LLAMA_ARCHES.contains(&a));
    match kind {
        // An architecture the pinned tree does not know is not examined as
        // a llama.cpp model (the file may be for another runtime), unless
        // releases are judged: every release refuses it then (`unknown
        // model architecture`).
        FileKind::Model if !(known_arch || arch.is_some() && sink.releases().is_some()) => None,
        FileKind::Model if !file.tensors.is_empty() => {
            Some(judge(needs(file, kind, arch, true, &mut sink.tensor_patterns), sink))
        }
        // A vocabulary (no tensors), as llama.cpp's tools open one
        // (`vocab_only`): the names only, no hyper-parameters or tensors.
        FileKind::Model => Some(judge(needs(file, kind, arch, false, &mut sink.tensor_patterns), sink)),
        FileKind::Projector if !file.tensors.is_empty() => {
            Some(judge(needs(file, kind, arch, true, &mut sink.tensor_patterns), sink))
        }
        _ => None,
    }
}

/// [`of`] for a file with these needs.
fn judge(mut needs: Vec<Need>, sink: &mut Sink<'_>) -> LlamaCpp {
    // A file the pinned tree refuses at load (its finding is the verdict,
    // whichever release is judged) is counted as loaded by no release.
    if let Some(rule) = sink.refused_at_load {
        needs.push(Need {
            kind: NeedKind::Pinned(rule),
            what: "finding",
            name: rule.to_string(),
            offset: super::KV_SECTION,
            path: "model".into(),
            known: 0,
        });
    }
    let loads = |r: Release| needs.iter().all(|n| n.knows(r));
    let loading: Vec<Release> = Release::all().filter(|r| loads(*r)).collect();
    // The oldest release from which every newer one loads it (a release
    // that knew a name once and lost it does not count as loading it now).
    let newest = Release::newest();
    let loads_from = match loads(newest) {
        true => Release::all().rev().take_while(|r| loads(*r)).last(),
        false => loading.first().copied(),
    };
    let loads_until = match loads(newest) {
        true => None,
        false => loading.last().copied(),
    };
    // What sets the oldest release: each need the release before it did
    // not know.
    let because = match loads_from {
        Some(from) => match from.0.checked_sub(1).map(Release) {
            Some(before) => needs.iter().filter(|n| !n.knows(before)).map(|n| n.change(from)).collect(),
            None => Vec::new(),
        },
        // No release loads it: why the newest does not.
        None => needs
            .iter()
            .filter(|n| !n.knows(newest))
            .map(|n| match n.kind {
                NeedKind::Name if n.known == 0 => {
                    format!("{} `{}` is known to no release of the table", n.what, n.name)
                }
                NeedKind::Pinned(rule) => {
                    format!("the pinned tree refuses it at load (`{rule}`), so no release is counted")
                }
                _ => format!("{} {}", newest.name(), n.refusal()),
            })
            .collect(),
    };
    // At most a few reasons, and how many more (a file may need hundreds).
    let mut because = because;
    if because.len() > MAX_BECAUSE {
        let more = because.len().saturating_sub(MAX_BECAUSE.saturating_sub(1));
        because.truncate(MAX_BECAUSE.saturating_sub(1));
        because.push(format!("and {more} more"));
    }
    let judged = sink.releases();
    let judged_against = match judged {
        Some(range) => range.iter().map(|r| r.name().to_string()).collect(),
        None => vec![PINNED.to_string()],
    };
    if let Some(range) = judged {
        for need in needs.iter().filter(|n| !matches!(n.kind, NeedKind::Pinned(_))) {
            let refusing: Vec<&str> = range.iter().filter(|r| !need.knows(*r)).map(Release::name).collect();
            let [first, ..] = refusing.as_slice() else { continue };
            let which = match refusing.len() {
                1 => format!("llama.cpp {first}"),
                n => format!("{n} of the releases judged ({first} to {})", refusing.last().unwrap_or(first)),
            };
            sink.emit(RuleId::LlamaCppRelease, need.offset, || need.path.clone(), || need.finding(&which));
        }
    }
    LlamaCpp {
        loads_from: loads_from.map(|r| r.name().to_string()),
        loads_until: loads_until.map(|r| r.name().to_string()),
        judged_against,
        because,
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::llama_cpp::Releases;
    use crate::write::{GgufModel, OwnedTensor, OwnedValue};
    use crate::{Options, Validator};

    fn model(arch: &str, pre: Option<&str>, ty: crate::types::GgmlType) -> Vec<u8> {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str(arch));
        if let Some(pre) = pre {
            m.kv("tokenizer.ggml.model", OwnedValue::str("gpt2"));
            m.kv("tokenizer.ggml.pre", OwnedValue::str(pre));
        }
        m.tensor(OwnedTensor::zeroed("token_embd.weight", &[256, 2], ty).unwrap());
        m.to_bytes()
    }

    /// What [`judge`] says of `bytes` judged against `releases` by the
    /// names the file needs (not the model loaders' contracts: these files
    /// are not whole models): the summary, and the report with its
    /// findings (the file's other rules do not run).
    fn judged_alone(bytes: &[u8], releases: Option<&str>) -> (LlamaCpp, crate::Report) {
        let releases = releases.map(|r| r.parse::<Releases>().unwrap());
        let parsed = crate::parse::parse_bytes(bytes).unwrap();
        let arch = parsed.file.get("general.architecture").and_then(|kv| kv.value.as_string()?.as_str());
        let opts = Options::default();
        let mut judging = crate::report::Judging::plain(&opts);
        judging.releases = releases;
        let mut sink = Sink::judging(judging);
        let l =
            judge(needs(&parsed.file, FileKind::of(&parsed.file, arch, None), arch, false, &mut Vec::new()), &mut sink);
        let report = sink.finish(
            crate::Profile::Strict,
            crate::report::FileFormat::Gguf,
            Some(3),
            None,
            crate::report::Summary::default(),
        );
        (l, report)
    }

    /// The whole validation of `bytes` judged against `releases`.
    fn judged(bytes: &[u8], releases: Option<&str>) -> crate::Report {
        let releases = releases.map(|r| r.parse::<Releases>().unwrap());
        Validator::new(Options::default()).with_llama_cpp(releases).validate_bytes(bytes).report
    }

    fn refusals(r: &crate::Report) -> Vec<String> {
        r.diagnostics.iter().filter(|d| d.rule == RuleId::LlamaCppRelease).map(|d| d.message.clone()).collect()
    }

    /// The facts are sorted as their binary search needs, and the table
    /// holds no more releases than a mask has bits.
    #[test]
    fn the_table_is_sorted_and_fits_a_mask() {
        assert!(table::RELEASES.len() <= 128);
        for facts in [table::ARCHITECTURES, table::TOKENIZER_MODELS, table::PRE_TOKENIZERS, table::PROJECTOR_TYPES] {
            assert!(facts.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        }
        assert!(table::GGML_TYPES.windows(2).all(|w| (w[0].0, w[0].2) < (w[1].0, w[1].2)));
        assert_eq!(known(table::ARCHITECTURES, "llama"), (1u128 << table::RELEASES.len()) - 1);
        assert_eq!(known(table::ARCHITECTURES, "no-such-architecture"), 0);
    }

    #[test]
    fn a_release_is_named_by_its_tag_and_a_window_runs_to_the_newest() {
        let oldest = Release::all().next().unwrap();
        assert_eq!(Release::named(oldest.name()), Some(oldest));
        let one: Releases = oldest.name().parse().unwrap();
        assert_eq!(one.iter().count(), 1);
        let window: Releases = format!("{}..", oldest.name()).parse().unwrap();
        assert_eq!(window.iter().count(), table::RELEASES.len());
        assert_eq!(window.to_string(), format!("{}..", oldest.name()));
        let e = "b0".parse::<Releases>().unwrap_err();
        assert!(e.contains("unknown llama.cpp release `b0`") && e.contains(Release::newest().name()), "{e}");
    }

    /// Every architecture the pinned tree knows that a later release
    /// brought: judged against the release before, refused (exactly this
    /// rule); against the release that brought it, loaded; and the report
    /// says since when.
    #[test]
    fn an_architecture_is_refused_before_its_release_and_loaded_from_it() {
        let mut tried = 0;
        for (arch, first, last) in table::ARCHITECTURES {
            let last_run = table::ARCHITECTURES.iter().filter(|(a, ..)| a == arch).map(|(_, f, _)| *f).max();
            if *first == 0
                || last_run != Some(*first)
                || usize::from(*last) + 1 != table::RELEASES.len()
                || !crate::check::llama_arches::LLAMA_ARCHES.contains(arch)
                || *arch == "clip"
            {
                continue;
            }
            let bytes = model(arch, None, crate::types::GgmlType::F32);
            let (before, from) = (Release(first - 1), Release(*first));
            let (_, refused) = judged_alone(&bytes, Some(before.name()));
            assert_eq!(refusals(&refused).len(), 1, "{arch} under {}: {:?}", before.name(), refused.diagnostics);
            assert!(refusals(&refused)[0].contains(&format!("architecture `{arch}` (known since {})", from.name())));
            let (l, loaded) = judged_alone(&bytes, Some(from.name()));
            assert!(refusals(&loaded).is_empty(), "{arch} under {}", from.name());
            assert_eq!(l.loads_from.as_deref(), Some(from.name()), "{arch}");
            assert_eq!(l.loads_until, None);
            assert_eq!(l.because, [format!("architecture `{arch}` since {}", from.name())]);
            assert_eq!(l.judged_against, [from.name()]);
            tried += 1;
        }
        assert!(tried >= 10, "{tried} architectures");
    }

    /// The pinned tree (llama-cpp-python 0.3.36, which agrees with v0.5.0
    /// on every model file tried) and the newest release of the table know
    /// the same architectures but for those named here, each with why.
    #[test]
    fn the_newest_release_knows_what_the_pinned_tree_knows() {
        // (name, why the newest release does not know it)
        let differ: [(&str, &str); 1] = [(
            "glm5-next",
            "in the pinned tree (0c1e570), not in v0.5.0: its report says no release of the table loads it",
        )];
        let newest = Release::newest();
        let missing: Vec<&str> = crate::check::llama_arches::LLAMA_ARCHES
            .iter()
            .copied()
            .filter(|a| known(table::ARCHITECTURES, a) & bit(newest.0) == 0)
            .collect();
        let expected: Vec<&str> = differ.iter().map(|(a, _)| *a).collect();
        assert_eq!(missing, expected, "architectures the pinned tree knows and {} does not", newest.name());
    }

    #[test]
    fn a_window_reports_every_release_that_refuses_a_type() {
        // A type the oldest release does not know: each release of the
        // window before it refuses the file, in one finding.
        let (id, _, first, _) = *table::GGML_TYPES
            .iter()
            .rfind(|(_, _, f, l)| *f > 1 && usize::from(*l) + 1 == table::RELEASES.len())
            .unwrap();
        let ty = crate::types::GgmlType::from_id(id).unwrap();
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("llama"));
        let n = ty.block_size() as u64 * 2;
        m.tensor(OwnedTensor::zeroed("token_embd.weight", &[n, 1], ty).unwrap());
        let bytes = m.to_bytes();
        let oldest = Release::all().next().unwrap();
        let (_, r) = judged_alone(&bytes, Some(&format!("{}..", oldest.name())));
        let found = refusals(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with(&format!("{first} of the releases judged")), "{found:?}");
        assert!(!r.valid);
        // Not asked for: the pinned tree's verdict, and since when it loads.
        let (l, plain) = judged_alone(&bytes, None);
        assert!(refusals(&plain).is_empty());
        assert_eq!(l.loads_from.as_deref(), Some(Release(first).name()));
        assert_eq!(l.judged_against, [PINNED]);
    }

    #[test]
    fn a_pre_tokenizer_no_release_knows_loads_nowhere() {
        let bytes = model("llama", Some("not-a-pre-tokenizer"), crate::types::GgmlType::F32);
        let (l, _) = judged_alone(&bytes, None);
        assert_eq!((l.loads_from, l.loads_until), (None, None));
        assert_eq!(l.because, ["pre-tokenizer `not-a-pre-tokenizer` is known to no release of the table"]);
        let (_, r) = judged_alone(&bytes, Some(Release::newest().name()));
        assert!(refusals(&r)[0].contains("known to no release of the table"), "{:?}", refusals(&r));
        // A vocabulary that is not BPE: its pre-tokenizer is not looked up
        // (llama.cpp b4600 loads converter output of `bert` with `bert-bge`).
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("bert"));
        m.kv("tokenizer.ggml.model", OwnedValue::str("bert"));
        m.kv("tokenizer.ggml.pre", OwnedValue::str("not-a-pre-tokenizer"));
        m.tensor(OwnedTensor::zeroed("token_embd.weight", &[256, 2], crate::types::GgmlType::F32).unwrap());
        let (l, r) = judged_alone(&m.to_bytes(), Some(Release::all().next().unwrap().name()));
        assert!(refusals(&r).is_empty(), "{:?}", refusals(&r));
        assert_eq!(l.loads_from.as_deref(), Some(Release::all().next().unwrap().name()));
    }

    /// A whole model: the sample loads in every release, judged against
    /// all of them; the summary is the same under every profile (it says
    /// what the releases know of the file, whatever rules ran).
    #[test]
    fn a_whole_model_loads_in_every_release() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let sample = std::fs::read(root.join("samples/tiny-llama.gguf")).unwrap();
        let r = judged(&sample, Some(&format!("{}..", Release::all().next().unwrap().name())));
        assert!(r.valid, "{:?}", r.diagnostics);
        let l = r.summary.llama_cpp.unwrap();
        assert_eq!(l.loads_from.as_deref(), Some(Release::all().next().unwrap().name()));
        assert_eq!(l.judged_against.len(), table::RELEASES.len());
        for p in crate::Profile::ALL {
            let under = Validator::new(Options::new(p)).validate_bytes(&sample).report;
            let l = under.summary.llama_cpp.unwrap();
            assert_eq!(l.loads_from.as_deref(), Some(Release::all().next().unwrap().name()), "{p}");
        }
    }
    /// A converter file of the corpus (today's converter output).
    fn converter(name: &str) -> Vec<u8> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/models");
        std::fs::read(root.join(name)).unwrap()
    }

    /// The last release of the newest run of a contract row.
    fn contract_until(arch: &str, term: Term, item: &str) -> Release {
        let last =
            crate::llama_cpp::contract(arch).iter().filter(|r| r.term == term && r.item == item).map(|r| r.last).max();
        Release(last.unwrap_or_else(|| panic!("no {term:?} row {arch} {item}")))
    }

    /// Each kind of contract row, on the converter file an older loader
    /// refuses for it (the loader's own message in corpus/models/RELEASES.md):
    /// the last release of the row refuses the file with exactly that
    /// finding, the next one does not (its boundary), and the summary says
    /// since when.
    #[test]
    fn a_model_loader_contract_refuses_until_it_changes() {
        let cases: [(&str, &str, Term, &str, &str); 4] = [
            // (file, architecture, term, row item, the finding's words)
            (
                "converter/gpt2.gguf",
                "gpt2",
                Term::Tensor,
                "output.weight",
                "requires the tensor `output.weight`, which the file lacks",
            ),
            (
                "converter/deepseek3.gguf",
                "deepseek2",
                Term::Key,
                "rope.scaling.yarn_log_multiplier",
                "requires the key `deepseek2.rope.scaling.yarn_log_multiplier`",
            ),
            (
                "converter/olmo2.gguf",
                "olmo2",
                Term::Shape,
                "blk.{}.attn_k_norm.weight=n_embd",
                "expects `blk.0.attn_k_norm.weight` to have shape [64], not [32]",
            ),
            (
                "llama__weight_scales.gguf",
                "llama",
                Term::Creates,
                "blk.{}.attn_q.scale",
                "never creates a tensor `blk.0.attn_q.scale` for architecture `llama`",
            ),
        ];
        for (file, arch, term, item, words) in cases {
            let bytes = converter(file);
            let (last, next) = match term {
                // A tensor no read release creates: the newest read release
                // refuses it, the first release after them (the pinned
                // tree's contract) loads it.
                Term::Creates => {
                    assert!(!crate::llama_cpp::contract(arch).iter().any(|r| r.term == term && r.item == item));
                    let last = Release::all().rfind(|r| r.model_contract_read()).unwrap();
                    (last, Release(last.0 + 1))
                }
                _ => {
                    let last = contract_until(arch, term, item);
                    (last, Release(last.0 + 1))
                }
            };
            let refused = judged(&bytes, Some(last.name()));
            let found = refusals(&refused);
            assert!(found.iter().any(|m| m.contains(words)), "{file} under {}: {found:?}", last.name());
            let loaded = judged(&bytes, Some(next.name()));
            let found = refusals(&loaded);
            assert!(!found.iter().any(|m| m.contains(words)), "{file} under {}: {found:?}", next.name());
            let l = loaded.summary.llama_cpp.unwrap();
            assert!(l.loads_from.is_some(), "{file}: {l:?}");
        }
    }

    /// A special-token default outside the vocabulary (the `gpt2` defaults
    /// 11 with 11 tokens): every release before the fix (b10361) refuses it
    /// or reads past the vocabulary, the fix's first release loads it, and
    /// 12 tokens (the defaults inside) load everywhere.
    #[test]
    fn a_substituted_default_outside_the_vocabulary_needs_the_fix() {
        let fix = since(crate::llama_cpp::fixed_in(crate::llama_cpp::SPECIAL_TOKEN_DEFAULT_FIX)).unwrap();
        assert_eq!(fix.name(), "b10361");
        let before = Release(fix.0 - 1);
        let outside = converter("qwen2__vocab_11_default_eos.gguf");
        let refused = judged(&outside, Some(before.name()));
        let found = refusals(&refused);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|m| m.contains("vocabulary's default 11") && m.contains("loaded since b10361")));
        assert!(refusals(&judged(&outside, Some(fix.name()))).is_empty());
        let l = judged(&outside, None).summary.llama_cpp.unwrap();
        assert_eq!(l.loads_from.as_deref(), Some("b10361"));
        assert!(l.because.iter().any(|b| b.contains("`tokenizer.ggml.eos_token_id` safe since b10361")), "{l:?}");
        let inside = converter("qwen2__vocab_12_default_eos.gguf");
        assert!(refusals(&judged(&inside, Some("b3889.."))).is_empty());
        assert_eq!(judged(&inside, None).summary.llama_cpp.unwrap().loads_from.as_deref(), Some("b3889"));
    }

    /// The releases whose model loader is read are the oldest ones (one
    /// switch over the architecture), the later ones the pinned tree's.
    #[test]
    fn model_contracts_are_read_for_the_switch_releases() {
        let read: Vec<&str> = Release::all().filter(|r| r.model_contract_read()).map(Release::name).collect();
        assert_eq!(read.first(), Some(&"b3889"));
        assert!(read.contains(&"b8390") && !read.contains(&Release::newest().name()), "{read:?}");
        // Architectures sorted and each one's rows sorted by term, item and
        // first release; every row is of a read release, and every item is
        // read back whole from its span.
        let arches: Vec<&str> = crate::llama_cpp::contract_arches().collect();
        assert!(arches.len() > 100 && arches.windows(2).all(|w| w[0] < w[1]), "{arches:?}");
        let mut rows = 0;
        for arch in arches {
            let c = crate::llama_cpp::contract(arch);
            assert!(!c.is_empty(), "{arch}");
            assert!(c.windows(2).all(|w| (w[0].term, w[0].item, w[0].first) < (w[1].term, w[1].item, w[1].first)));
            assert!(c.iter().all(|r| Release(r.first).model_contract_read() && Release(r.last).model_contract_read()));
            assert!(c.iter().all(|r| r.item.is_empty() == (r.term == Term::Complete)));
            rows += c.len();
        }
        assert_eq!(rows, table::CONTRACT_ROWS.len());
        let gemma3 = crate::llama_cpp::contract("gemma3");
        assert!(gemma3.iter().any(|r| r.term == Term::Tensor && r.item == "blk.{}.attn_q_norm.weight"));
        assert!(gemma3.iter().any(|r| r.term == Term::Key && r.item == "attention.layer_norm_rms_epsilon"));
        assert!(crate::llama_cpp::contract("no-such-architecture").is_empty());
    }
    /// Judged against releases, an architecture no release knows is
    /// refused by every one. A vocabulary (no tensors) is judged by its names only, as
    /// llama.cpp's tools open one (`vocab_only`: no hyper-parameters, no
    /// tensors read).
    #[test]
    fn unknown_architectures_and_vocabularies_are_judged_by_their_names() {
        let r = judged(&model("llamax", None, crate::types::GgmlType::F32), Some(Release::newest().name()));
        let found = refusals(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("does not know the architecture `llamax` (known to no release of the table)"));
        // Not asked about releases: not examined as a llama.cpp model.
        let plain = judged(&model("llamax", None, crate::types::GgmlType::F32), None);
        assert!(refusals(&plain).is_empty() && plain.summary.llama_cpp.is_none());

        let bytes = converter("qwen3__vocab_only.gguf");
        let since = Release(known(table::ARCHITECTURES, "qwen3").trailing_zeros() as u8);
        let before = Release(since.0 - 1);
        let found = refusals(&judged(&bytes, Some(before.name())));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("does not know the architecture `qwen3`"), "{found:?}");
        let r = judged(&bytes, Some(since.name()));
        assert!(refusals(&r).is_empty(), "{:?}", r.diagnostics);
        assert_eq!(r.summary.llama_cpp.unwrap().loads_from.as_deref(), Some(since.name()));
    }
    /// A file the pinned tree refuses at load (here a wrong shape) loads
    /// in no release: its finding is the verdict under every release
    /// judged, and not repeated per release.
    #[test]
    fn a_file_the_pinned_tree_refuses_at_load_loads_in_no_release() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/gguf");
        let bytes = std::fs::read(root.join("i_model_tensor_shape_attn_q.gguf")).unwrap();
        let plain = judged(&bytes, None);
        let l = plain.summary.llama_cpp.unwrap();
        assert_eq!((l.loads_from, l.loads_until), (None, None));
        assert_eq!(l.because, ["the pinned tree refuses it at load (`model-tensor-shape`), so no release is counted"]);
        let first_pinned = Release::all().find(|r| !r.model_contract_read()).unwrap();
        let report = judged(&bytes, Some(first_pinned.name()));
        assert!(refusals(&report).is_empty() && !report.valid, "{:?}", report.diagnostics);
        // The same file, its shape made right: every release loads it.
        let sample = std::fs::read(root.join("../samples/tiny-llama.gguf")).unwrap();
        assert!(refusals(&judged(&sample, Some(first_pinned.name()))).is_empty());
    }
}
