//! Which llama.cpp releases load a file: what each release users run knows
//! (`llama_releases.rs`, generated from the releases' own sources by
//! `conformance/tools/llama-releases/`) against what the file needs of its
//! loader: its architecture, tokenizer model and pre-tokenizer (a model),
//! its projector type (a projector) and its tensors' ggml types. A release
//! that does not know one of these refuses the file at load. What else a
//! release needs (keys, tensor shapes, graph changes between releases) is
//! not read here, and the report says so.
//!
//! The releases and their facts are [`crate::llama_cpp`]. Every report of
//! such a file says the oldest release that loads it
//! (`summary.llama_cpp.loads_from`) and why; a validation judged against
//! releases (`--llama-cpp R`, `--llama-cpp R..`) reports each release of
//! them that refuses it (`llama-cpp-release`).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::model::FileKind;
use crate::llama_cpp::table;
use crate::llama_cpp::{PINNED, Release};
use crate::parse::GgufFile;
use crate::report::{LlamaCpp, Sink};
use crate::rules::RuleId;

/// One thing a file needs its loader to know, and the releases that know
/// it (bit `i`: release `i` of the table, which holds at most 128).
#[derive(Debug)]
struct Need {
    what: &'static str,
    name: String,
    offset: u64,
    path: String,
    known: u128,
}

/// Release `i`'s bit.
fn bit(i: u8) -> u128 {
    1u128.checked_shl(u32::from(i)).unwrap_or(0)
}

impl Need {
    fn knows(&self, r: Release) -> bool {
        self.known & bit(r.0) != 0
    }

    /// The newest run's first release: since when the newest releases
    /// that know it have known it.
    fn since(&self) -> Option<Release> {
        let newest = Release::all().rev().find(|r| self.knows(*r))?;
        Release::all().rev().skip_while(|r| *r > newest).take_while(|r| self.knows(*r)).last()
    }
}

/// The tokenizer models llama.cpp reads as a BPE vocabulary, whose
/// `tokenizer.ggml.pre` it looks up and refuses when unknown ("unknown
/// pre-tokenizer type"); other vocabularies take the default pre-tokenizer
/// whatever the key says (src/llama-vocab.cpp `llama_vocab::impl::load`:
/// the `tokenizer_pre` branches sit under `type == LLAMA_VOCAB_TYPE_BPE`).
const BPE_TOKENIZER_MODELS: [&str; 3] = ["gpt2", "hybriddna", "whitespace"];

/// The releases that know `name` in `facts` (sorted by name, as the
/// generator writes them: found by binary search).
fn known(facts: &[(&str, u8, u8)], name: &str) -> u128 {
    let start = facts.partition_point(|(n, ..)| *n < name);
    let runs = facts.get(start..).unwrap_or_default().iter().take_while(|(n, ..)| *n == name);
    runs.fold(0, |mask, (_, first, last)| (*first..=*last).fold(mask, |m, i| m | bit(i)))
}

/// What `file` (of `kind`, architecture `arch`) needs its loader to know.
fn needs(file: &GgufFile<'_>, kind: FileKind, arch: Option<&str>) -> Vec<Need> {
    let mut out = Vec::new();
    let mut string_key = |key: &str, what: &'static str, facts: &[(&str, u8, u8)]| {
        let Some(kv) = file.get(key) else { return };
        let Some(name) = kv.value.as_string().and_then(|s| s.as_str()) else { return };
        out.push(Need {
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
        let known = runs.fold(0, |mask, (_, _, first, last)| (*first..=*last).fold(mask, |m, i| m | bit(i)));
        let name = crate::types::GgmlType::from_id(id).map_or_else(|| format!("id {id}"), |t| t.name().to_string());
        out.push(Need {
            what: "type",
            name,
            offset: t.type_offset,
            path: format!("tensor[{}] {}/type", t.index, crate::parse::escape_bytes(t.name.bytes, false)),
            known,
        });
    }
    out
}

/// Which releases load `file`, when it is a model whose architecture the
/// pinned tree knows or a projector, and its model layer was examined (not
/// `--container-only`, not a shard of a split set: a set is loaded whole);
/// judged against releases, each that refuses it is reported.
pub(crate) fn of(file: &GgufFile<'_>, arch: Option<&str>, sink: &mut Sink<'_>) -> Option<LlamaCpp> {
    if sink.options().container_only || super::split::role(file).is_some() {
        return None;
    }
    let kind = FileKind::of(file, arch);
    let known_arch = arch.is_some_and(|a| super::llama_arches::LLAMA_ARCHES.contains(&a));
    match kind {
        FileKind::Model if known_arch && !file.tensors.is_empty() => Some(judge(file, kind, arch, sink)),
        FileKind::Projector if !file.tensors.is_empty() => Some(judge(file, kind, arch, sink)),
        _ => None,
    }
}

/// [`of`] for a file of `kind`.
fn judge(file: &GgufFile<'_>, kind: FileKind, arch: Option<&str>, sink: &mut Sink<'_>) -> LlamaCpp {
    let needs = needs(file, kind, arch);
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
            Some(before) => needs
                .iter()
                .filter(|n| !n.knows(before))
                .map(|n| format!("{} `{}` since {}", n.what, n.name, from.name()))
                .collect(),
            None => Vec::new(),
        },
        None => needs
            .iter()
            .filter(|n| n.known == 0)
            .map(|n| format!("{} `{}` is known to no release of the table", n.what, n.name))
            .collect(),
    };
    let judged = sink.releases();
    let judged_against = match judged {
        Some(range) => range.iter().map(|r| r.name().to_string()).collect(),
        None => vec![PINNED.to_string()],
    };
    if let Some(range) = judged {
        for need in &needs {
            let refusing: Vec<&str> = range.iter().filter(|r| !need.knows(*r)).map(Release::name).collect();
            let [first, ..] = refusing.as_slice() else { continue };
            let which = match refusing.len() {
                1 => format!("llama.cpp {first}"),
                n => format!("{n} of the releases judged ({first} to {})", refusing.last().unwrap_or(first)),
            };
            let since = match need.since() {
                Some(r) => format!("known since {}", r.name()),
                None => "known to no release of the table".to_string(),
            };
            sink.emit(
                RuleId::LlamaCppRelease,
                need.offset,
                || need.path.clone(),
                || {
                    format!(
                        "{which} does not know the {} `{}` ({since}) and refuses the file at load",
                        need.what, need.name
                    )
                },
            );
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

    /// What [`judge`] says of `bytes` judged against `releases`: the
    /// summary, and the report with its findings (the file's other rules
    /// do not run: these files are not whole models).
    fn judged_alone(bytes: &[u8], releases: Option<&str>) -> (LlamaCpp, crate::Report) {
        let releases = releases.map(|r| r.parse::<Releases>().unwrap());
        let parsed = crate::parse::parse_bytes(bytes).unwrap();
        let arch = parsed.file.get("general.architecture").and_then(|kv| kv.value.as_string()?.as_str());
        let opts = Options::default();
        let mut judging = crate::report::Judging::plain(&opts);
        judging.releases = releases;
        let mut sink = Sink::judging(judging);
        let l = judge(&parsed.file, FileKind::of(&parsed.file, arch), arch, &mut sink);
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
}
