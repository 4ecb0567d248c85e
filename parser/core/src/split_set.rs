//! Split sets (`gguf-split`): a model stored as shards `NAME-0000k-of-0000n.gguf`,
//! validated as a whole.
//!
//! Each shard is first validated as a file ([`crate::Validator`]):
//! its container and the `split-*` rules one shard can answer. A file with
//! `split.count` above 1 is judged as a shard there: its model and
//! tokenizer are not (a later shard has tensors but no hyper-parameters, the
//! first has the hyper-parameters but not every tensor). [`check_set`] then
//! judges the set from every shard's metadata: positions, counts, missing
//! shards, tensors in two shards, metadata outside the first shard, and the
//! model layer over the first shard's metadata and the tensors of all
//! shards (as llama.cpp's loader sees the set).
//!
//! Shards are named validations, so the same code serves files on disk
//! (siblings found by name with [`crate::split_name::siblings`]), remote
//! ones and bytes in memory: the pipeline's
//! [`crate::pipeline::validate_set`] validates each and hands them here. A
//! shard's position is the one its name says, else its `split.no`.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::{self, SetMember};
use crate::limits;
use crate::parse::{self, TensorInfo};
use crate::report::{Counts, Diagnostic, Examined, Options, Report, Sink, Summary};
use crate::rules::Profile;
use crate::split_name;
use crate::validate::Validated;

/// One shard handed to [`check_set`]: what validating it as a file gave.
#[derive(Clone, Copy, Debug)]
pub struct ShardInput<'a> {
    /// Its name: a path or URL ending in `NAME-0000k-of-0000n.gguf`, or
    /// any name (the position then comes from `split.no`).
    pub name: &'a str,
    /// Its length in bytes.
    pub file_len: u64,
    /// Its own report; `None` when it could not be read.
    pub report: Option<&'a Report>,
    /// Judging every profile: its report under each.
    pub profiles: &'a [Report],
    /// Its validation: the metadata and the validation's own parse of it.
    pub validated: Option<&'a Validated>,
}

/// One shard in a set report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SetShard {
    /// The name it was given as.
    pub name: String,
    /// Its position in the set (0-based): from its name, else `split.no`.
    pub position: Option<u64>,
    /// Its `split.no`.
    pub split_no: Option<u64>,
    /// Whether it could be read.
    pub readable: bool,
    /// Its own verdict (false when it could not be read).
    pub valid: bool,
    /// Its size in bytes.
    pub file_size: u64,
    /// Its number of tensors.
    pub tensor_count: Option<u64>,
}

/// Facts about the set, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SetSummary {
    /// Shards the set has (`split.count` of the first shard, else of the
    /// names).
    pub shard_count: Option<u64>,
    /// Shards that were given or found.
    pub shards_present: u64,
    /// Positions with no shard.
    pub shards_missing: u64,
    /// Tensors in all shards together.
    pub tensor_count: u64,
    /// The first shard's `split.tensors.count`.
    pub tensors_expected: Option<u64>,
    /// Bytes of all shards together.
    pub total_size: u64,
    /// Bytes of tensor data of all shards (when every shard says).
    pub data_size: Option<u64>,
    /// Tensor elements of all shards (when every shard says).
    pub parameters: Option<u64>,
    /// The first shard's `general.architecture`.
    pub architecture: Option<String>,
    /// What was and was not examined for the set (`split`, `model`,
    /// `tokenizer`); each shard's container is in its own report.
    pub examined: Vec<Examined>,
}

/// The report for a split set. Diagnostics name the shard in their path
/// (`shard[i] kv[3] split.count`, `i` indexing [`SetReport::shards`]) and
/// their offset is in that shard; a missing shard is `position[k]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SetReport {
    /// `NAME-*-of-0000n.gguf`, or the first shard's name.
    pub name: String,
    /// True when the set's own findings hold no error (nor a warning, with
    /// `--deny-warnings`) and every shard is readable and valid.
    pub valid: bool,
    /// The profile applied.
    pub profile: Profile,
    /// Summary facts.
    pub summary: SetSummary,
    /// The shards, in position order.
    pub shards: Vec<SetShard>,
    /// The set's findings.
    pub diagnostics: Vec<Diagnostic>,
    /// Counts of the set's findings, including those not listed.
    pub counts: Counts,
    /// The set's findings per rule that were counted but not listed.
    pub suppressed: BTreeMap<&'static str, u64>,
    /// Judging every profile: the set's report under each, in
    /// [`Profile::ALL`] order, from the shards' reports under it (empty
    /// otherwise).
    #[serde(skip)]
    pub profiles: Vec<SetReport>,
}

/// Judges a set from its shards' own validations: the `split-*` rules,
/// then the model layer over the first shard's metadata and every shard's
/// tensors. At most [`limits::MAX_SPLIT_SHARDS`] shards are looked at.
/// `every_profile`: the set's report under each profile too
/// ([`SetReport::profiles`]), from the shards' reports under it, each
/// shard's parse taken once for all of them.
pub fn check_set(shards: &[ShardInput<'_>], opts: &Options, every_profile: bool) -> SetReport {
    let parsed = parse_shards(shards);
    let mut report = check_set_parsed(shards, &parsed, opts);
    if every_profile {
        report.profiles = Profile::ALL
            .iter()
            .map(|p| {
                let under: Vec<ShardInput<'_>> = shards
                    .iter()
                    .map(|s| ShardInput { report: s.profiles.iter().find(|r| r.profile == *p), ..*s })
                    .collect();
                check_set_parsed(&under, &parsed, &Options { profile: *p, ..opts.clone() })
            })
            .collect();
    }
    report
}

/// The parses of a set's shards, each taken once from its validation, for
/// [`check_set_parsed`] to judge the set as often as it is asked (once per
/// profile judged).
struct ParsedShards<'a>(Vec<Option<parse::Parsed<'a>>>);

/// The parses of the shards [`check_set`] looks at (the first
/// [`limits::MAX_SPLIT_SHARDS`]; those that were read), each its
/// validation's own.
fn parse_shards<'a>(shards: &[ShardInput<'a>]) -> ParsedShards<'a> {
    let taken = shards.get(..limits::MAX_SPLIT_SHARDS).unwrap_or(shards);
    let parse = |s: &ShardInput<'a>| {
        s.report?;
        s.validated?.parsed()
    };
    ParsedShards(taken.iter().map(parse).collect())
}

/// [`check_set`] from the shards' parses of [`parse_shards`] (of the same
/// shards, in the same order; a shard without a report is judged unread
/// whatever was parsed).
fn check_set_parsed(shards: &[ShardInput<'_>], parsed: &ParsedShards<'_>, opts: &Options) -> SetReport {
    let taken = shards.get(..limits::MAX_SPLIT_SHARDS).unwrap_or(shards);
    let parsed: Vec<Option<&parse::Parsed<'_>>> =
        taken.iter().enumerate().map(|(i, s)| s.report.and(parsed.0.get(i).and_then(Option::as_ref))).collect();
    // Slot order: by position, then as given.
    let named: Vec<Option<split_name::SplitName<'_>>> = taken.iter().map(|s| split_name::parse(s.name)).collect();
    let mut members: Vec<(usize, SetMember<'_, '_>)> = parsed
        .iter()
        .zip(&named)
        .enumerate()
        .map(|(i, (p, n))| {
            (i, SetMember { file: p.map(|p| &p.file), slot: 0, named: n.map(|n| (n.position, n.count)) })
        })
        .collect();
    members.sort_by_key(|(i, m)| (m.position().unwrap_or(u64::MAX), *i));
    for (slot, (_, m)) in members.iter_mut().enumerate() {
        m.slot = slot;
    }
    let prefix = named.iter().flatten().next().map(|n| n.prefix);
    let name_count = named.iter().flatten().next().map(|n| n.count);
    let name = match (prefix, name_count) {
        (Some(p), Some(n)) => split_name::set_name(p, n),
        _ => taken.first().map(|s| s.name.to_string()).unwrap_or_default(),
    };
    let ordered: Vec<SetMember<'_, '_>> = members.iter().map(|(_, m)| *m).collect();
    let input_of = |slot: usize| members.get(slot).and_then(|(i, _)| taken.get(*i));

    let mut examined = Vec::new();
    let mut sink = Sink::new(opts);
    let mut shape = check::SetShape::default();
    if opts.container_only {
        for layer in ["split", "model", "tokenizer"] {
            examined.push(Examined::skipped(layer, crate::report::CONTAINER_ONLY));
        }
    } else {
        shape = check::check_split_set(&ordered, prefix, &mut sink);
        if taken.len() < shards.len() {
            examined.push(Examined::partly(
                "split",
                format!("only the first {} of {} shards were read", limits::MAX_SPLIT_SHARDS, shards.len()),
            ));
        } else {
            examined.push(Examined::checked("split"));
        }
    }
    let mut report = finish(sink, opts, &name);
    if !opts.container_only {
        let model = model_layer(&ordered, &shape, opts, &mut examined);
        if let Some(model) = model {
            merge(&mut report, model, opts);
        }
    }
    report.diagnostics.sort_by_key(|d| (place(&d.path), d.offset));
    const ORDER: [&str; 3] = ["split", "model", "tokenizer"];
    examined.sort_by_key(|e| ORDER.iter().position(|l| *l == e.layer));

    let first = shape.first.and_then(|i| ordered.get(i));
    let sum = |f: fn(&Summary) -> Option<u64>| {
        taken.iter().try_fold(0u64, |acc, s| Some(acc.saturating_add(f(&s.report?.summary)?)))
    };
    report.summary = SetSummary {
        shard_count: shape.count,
        shards_present: u64::try_from(taken.len()).unwrap_or(u64::MAX),
        shards_missing: shape.missing,
        tensor_count: ordered
            .iter()
            .filter_map(|m| m.file)
            .fold(0u64, |acc, f| acc.saturating_add(u64::try_from(f.tensors.len()).unwrap_or(u64::MAX))),
        tensors_expected: first
            .and_then(|m| m.file)
            .and_then(|f| f.get("split.tensors.count"))
            .and_then(|kv| kv.value.as_u64()),
        total_size: taken.iter().fold(0u64, |acc, s| acc.saturating_add(s.file_len)),
        data_size: sum(|s| s.data_size),
        parameters: sum(|s| s.parameters),
        architecture: first.and_then(|m| input_of(m.slot)).and_then(|s| s.report?.summary.architecture.clone()),
        examined,
    };
    report.shards = ordered
        .iter()
        .filter_map(|m| {
            let s = input_of(m.slot)?;
            Some(SetShard {
                name: s.name.to_string(),
                position: m.position(),
                split_no: m.file.and_then(|f| f.get("split.no")).and_then(|kv| kv.value.as_u64()),
                readable: s.report.is_some(),
                valid: s.report.is_some_and(|r| r.valid),
                file_size: s.file_len,
                tensor_count: m.file.map(|f| u64::try_from(f.tensors.len()).unwrap_or(u64::MAX)),
            })
        })
        .collect();
    report.valid = report.valid && report.shards.iter().all(|s| s.valid);
    report
}

/// The model layer over the set: the first shard's metadata, every
/// shard's tensors (numbered across the set, then renamed back to their
/// shard in the paths). `None` when there is no first shard to read.
fn model_layer(
    members: &[SetMember<'_, '_>],
    shape: &check::SetShape,
    opts: &Options,
    examined: &mut Vec<Examined>,
) -> Option<SetReport> {
    let first = shape.first.and_then(|i| members.get(i));
    let Some((first, first_file)) = first.and_then(|m| Some((m, m.file?))) else {
        let why = "the first shard (split.no 0) is missing or unreadable: it holds the metadata";
        examined.push(Examined::skipped("model", why));
        examined.push(Examined::skipped("tokenizer", why));
        return None;
    };
    let mut tensors: Vec<TensorInfo<'_>> = Vec::new();
    let mut origin: Vec<(usize, usize)> = Vec::new();
    for m in members {
        let Some(f) = m.file else { continue };
        for t in &f.tensors {
            origin.push((m.slot, t.index));
            tensors.push(TensorInfo { index: tensors.len(), ..*t });
        }
    }
    let refs: Vec<&TensorInfo<'_>> = tensors.iter().collect();
    let complete = shape.missing == 0 && members.iter().all(|m| m.file.is_some());
    let mut sink = Sink::new(opts);
    check::check_set_model(first_file, &refs, complete, &mut sink, examined);
    let mut report = finish(sink, opts, "");
    for d in &mut report.diagnostics {
        d.path = shard_path(&d.path, first.slot, &origin);
    }
    Some(report)
}

/// A model-layer path in the set: `tensor[G] ...` (G numbering the set's
/// tensors) becomes `shard[s] tensor[i] ...`; anything else is about the
/// first shard's metadata.
fn shard_path(path: &str, first_slot: usize, origin: &[(usize, usize)]) -> String {
    if let Some(rest) = path.strip_prefix("tensor[")
        && let Some((num, tail)) = rest.split_once(']')
        && let Some((slot, index)) = num.parse::<usize>().ok().and_then(|g| origin.get(g))
    {
        return format!("shard[{slot}] tensor[{index}]{tail}");
    }
    if path.is_empty() { format!("shard[{first_slot}]") } else { format!("shard[{first_slot}] {path}") }
}

/// A set report from a sink (summary and shards filled in later).
fn finish(sink: Sink<'_>, opts: &Options, name: &str) -> SetReport {
    let r = sink.finish(opts.profile, crate::report::FileFormat::Gguf, None, None, Summary::default());
    SetReport {
        name: name.to_string(),
        valid: r.valid,
        profile: opts.profile,
        summary: SetSummary::default(),
        shards: Vec::new(),
        diagnostics: r.diagnostics,
        counts: r.counts,
        suppressed: r.suppressed,
        profiles: Vec::new(),
    }
}

/// Adds `more`'s findings to `into` (disjoint rules, so per-rule caps hold)
fn merge(into: &mut SetReport, more: SetReport, opts: &Options) {
    into.diagnostics.extend(more.diagnostics);
    into.counts.errors = into.counts.errors.saturating_add(more.counts.errors);
    into.counts.warnings = into.counts.warnings.saturating_add(more.counts.warnings);
    into.counts.infos = into.counts.infos.saturating_add(more.counts.infos);
    for (k, v) in more.suppressed {
        let e = into.suppressed.entry(k).or_insert(0);
        *e = e.saturating_add(v);
    }
    into.valid = into.counts.errors == 0 && !(opts.deny_warnings && into.counts.warnings > 0);
}

/// Sort key of a set path: missing positions first, then shards in order.
fn place(path: &str) -> (u8, usize) {
    let num = |rest: &str| rest.split_once(']').and_then(|(n, _)| n.parse().ok()).unwrap_or(usize::MAX);
    if let Some(rest) = path.strip_prefix("position[") {
        (0, num(rest))
    } else if let Some(rest) = path.strip_prefix("shard[") {
        (1, num(rest))
    } else {
        (2, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::shard_path;

    #[test]
    fn a_set_path_names_the_shard_of_its_slot() {
        assert_eq!(shard_path("tensor[1] b/dims", 0, &[(0, 0), (1, 0)]), "shard[1] tensor[0] b/dims");
        assert_eq!(shard_path("kv[2] x", 3, &[]), "shard[3] kv[2] x");
    }
}
