//! Rules on split sets (`gguf-split`): one shard's index (`check`, run on
//! every file), and the set as a whole (`check_set`, run by
//! [`crate::split_set`] over every shard's metadata): positions, counts,
//! missing shards, tensors in two shards, metadata outside the first shard.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::limits;
use crate::parse::{GgufFile, KeyValue};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::split_name;

use super::KV_SECTION;
use super::kv::kv_path;

/// Runs the `split-*` rules that one shard can answer.
pub(crate) fn check(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    let (Some(no), Some(count)) = (file.get("split.no"), file.get("split.count")) else { return };
    let (Some(n), Some(c)) = (no.value.as_u64(), count.value.as_u64()) else { return };
    if n >= c {
        sink.emit(
            RuleId::SplitIndex,
            no.value_offset(),
            || kv_path(&no),
            || format!("split.no is {n} but split.count is {c}: shards are numbered 0..{c}"),
        );
    }
}

/// A file's place in a split set, from its own keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Role {
    /// `split.no`, when present and an integer.
    pub(crate) no: Option<u64>,
    /// `split.count` (above 1).
    pub(crate) count: u64,
}

impl Role {
    pub(crate) fn no_label(self) -> String {
        self.no.map_or_else(|| "?".to_string(), |n| n.to_string())
    }

    /// A later shard: one that carries no model metadata of its own.
    pub(crate) fn is_later(self) -> bool {
        self.no.is_some_and(|n| n > 0)
    }
}

/// The file's role when it is a shard of a set: `split.count` above 1
/// (llama.cpp loads a file with `split.count` 0 or 1, or none, as a whole
/// model).
pub(crate) fn role(file: &GgufFile<'_>) -> Option<Role> {
    let count = file.get("split.count")?.value.as_u64().filter(|c| *c > 1)?;
    Some(Role { no: file.get("split.no").and_then(|kv| kv.value.as_u64()), count })
}

/// One present shard as the set rules see it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member<'f, 'a> {
    /// Its parsed metadata; `None` when it could not be read as GGUF.
    pub(crate) file: Option<&'f GgufFile<'a>>,
    /// Its index in the set report's list of shards (paths say `shard[i]`).
    pub(crate) slot: usize,
    /// Position and count from its name (`NAME-0000k-of-0000n.gguf`).
    pub(crate) named: Option<(u32, u32)>,
}

impl<'a> Member<'_, 'a> {
    fn key(&self, key: &str) -> Option<KeyValue<'a>> {
        self.file.and_then(|f| f.get(key))
    }

    fn int(&self, key: &str) -> Option<u64> {
        self.key(key).and_then(|kv| kv.value.as_u64())
    }

    /// Its position: from the name, else from `split.no`.
    pub(crate) fn position(&self) -> Option<u64> {
        self.named.map(|(p, _)| u64::from(p)).or_else(|| self.int("split.no"))
    }

    fn path(&self, kv: &KeyValue<'_>) -> String {
        format!("shard[{}] {}", self.slot, kv_path(kv))
    }

    fn kv_section(&self) -> String {
        format!("shard[{}] kv", self.slot)
    }
}

/// What the set rules found out about the set's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Shards the set has (`split.count` of the first shard, else of the
    /// names, else the largest any shard claims).
    pub(crate) count: Option<u64>,
    /// Positions below `count` with no shard.
    pub(crate) missing: u64,
    /// The member at position 0, if present (index into the members).
    pub(crate) first: Option<usize>,
}

/// Runs the `split-*` rules on a set: `members` in slot order, `prefix` the
/// shard names' common prefix (for naming missing shards).
pub(crate) fn check_set(members: &[Member<'_, '_>], prefix: Option<&str>, sink: &mut Sink<'_>) -> Shape {
    let first = members.iter().position(|m| m.position() == Some(0));
    let first_m = first.and_then(|i| members.get(i));
    let count = first_m
        .and_then(|m| m.int("split.count"))
        .or_else(|| members.iter().find_map(|m| m.named.map(|(_, n)| u64::from(n))))
        .or_else(|| members.iter().filter_map(|m| m.int("split.count")).max());
    let mut shape = Shape { count, missing: 0, first };
    let Some(n) = count else { return shape };
    shape.missing = missing_shards(members, n, prefix, sink);
    indices(members, sink);
    counts(members, n, sink);
    if let Some(f) = first_m {
        tensors_count(members, f, shape.missing == 0, sink);
        metadata_location(members, f, sink);
    }
    tensor_duplicates(members, sink);
    shape
}

/// `split-shard-missing`: positions 0..n without a shard. Lists at most
/// [`limits::MAX_DIAGNOSTICS_PER_RULE`] and counts the rest, so a count of
/// 65535 costs no more than the shards that exist. Returns how many.
fn missing_shards(members: &[Member<'_, '_>], n: u64, prefix: Option<&str>, sink: &mut Sink<'_>) -> u64 {
    let mut covered: Vec<u64> = members.iter().filter_map(Member::position).filter(|p| *p < n).collect();
    covered.sort_unstable();
    covered.dedup();
    let covered_len = u64::try_from(covered.len()).unwrap_or(u64::MAX);
    let total = n.saturating_sub(covered_len);
    let mut listed = 0usize;
    let mut p = 0u64;
    let mut next_covered = covered.iter().peekable();
    while p < n && listed < limits::MAX_DIAGNOSTICS_PER_RULE {
        if next_covered.peek().is_some_and(|c| **c == p) {
            next_covered.next();
        } else {
            let name = match (prefix, u32::try_from(p), u32::try_from(n)) {
                (Some(pre), Ok(p32), Ok(n32)) => format!(" (`{}`)", split_name::shard_name(pre, p32, n32)),
                _ => String::new(),
            };
            let cap = if p >= u64::try_from(limits::MAX_SPLIT_SHARDS).unwrap_or(u64::MAX) {
                format!("; at most {} shards of a set are read", limits::MAX_SPLIT_SHARDS)
            } else {
                String::new()
            };
            let human = p.saturating_add(1);
            sink.emit(
                RuleId::SplitShardMissing,
                0,
                || format!("position[{p}]"),
                || format!("shard {human} of {n}{name} is missing (split.no {p}){cap}; llama.cpp cannot load the set"),
            );
            listed = listed.saturating_add(1);
        }
        p = p.saturating_add(1);
    }
    let listed_u = u64::try_from(listed).unwrap_or(u64::MAX);
    if total > listed_u {
        sink.count_unlisted(RuleId::SplitShardMissing, total.saturating_sub(listed_u));
    }
    total
}

/// `split-index` (a shard without `split.no`, or whose `split.no` is not
/// its position by name) and `split-no-duplicate`. A shard whose index
/// agrees with its name claims it first, so of two shards numbered alike
/// the one out of place is reported.
fn indices(members: &[Member<'_, '_>], sink: &mut Sink<'_>) {
    let no_of = |m: &Member<'_, '_>| m.key("split.no").and_then(|kv| kv.value.as_u64());
    let in_place = |m: &Member<'_, '_>| m.named.is_none_or(|(p, _)| no_of(m) == Some(u64::from(p)));
    let mut claimed: Vec<(u64, usize)> = Vec::new();
    for m in members.iter().filter(|m| in_place(m)) {
        if let Some(no) = no_of(m)
            && !claimed.iter().any(|(n, _)| *n == no)
        {
            claimed.push((no, m.slot));
        }
    }
    for m in members {
        if m.file.is_none() {
            continue;
        }
        let Some(kv) = m.key("split.no") else {
            sink.emit(RuleId::SplitIndex, KV_SECTION, || m.kv_section(), || {
                "split.no is missing: llama.cpp requires it in every shard of a set (missing key split.no in GGUF split)".into()
            });
            continue;
        };
        // A value that is not a u16 is standard-key-type's.
        let Some(no) = kv.value.as_u64() else { continue };
        match claimed.iter().find(|(n, _)| *n == no) {
            Some((_, owner)) if *owner == m.slot => continue,
            Some((_, owner)) => {
                let owner = *owner;
                sink.emit(RuleId::SplitNoDuplicate, kv.value_offset(), || m.path(&kv), || {
                    format!("split.no {no} is also the index of shard[{owner}]: llama.cpp refuses the shard that is not at position {no} (invalid split file idx)")
                });
                continue;
            }
            None => claimed.push((no, m.slot)),
        }
        if let Some((pos, n)) = m.named
            && u64::from(pos) != no
        {
            let human = pos.saturating_add(1);
            sink.emit(RuleId::SplitIndex, kv.value_offset(), || m.path(&kv), || {
                format!("split.no is {no} but the file name says shard {human} of {n} (split.no {pos}): llama.cpp refuses it (invalid split file idx)")
            });
        }
    }
}

/// `split-count-mismatch`: a shard without `split.count`, with another one
/// than the set's, or whose name says another count.
fn counts(members: &[Member<'_, '_>], n: u64, sink: &mut Sink<'_>) {
    for m in members {
        if m.file.is_none() {
            continue;
        }
        let Some(kv) = m.key("split.count") else {
            sink.emit(
                RuleId::SplitCountMismatch,
                KV_SECTION,
                || m.kv_section(),
                || format!("split.count is missing; the set has {n} shards"),
            );
            continue;
        };
        let Some(c) = kv.value.as_u64() else { continue };
        if c != n {
            sink.emit(RuleId::SplitCountMismatch, kv.value_offset(), || m.path(&kv), || {
                format!("split.count is {c} but the set has {n} shards: this shard belongs to another split of the model")
            });
        } else if let Some((_, named)) = m.named
            && u64::from(named) != c
        {
            sink.emit(RuleId::SplitCountMismatch, kv.value_offset(), || m.path(&kv), || {
                format!("split.count is {c} but the file name says `-of-{named:05}`: llama.cpp looks for the shards by that name")
            });
        }
    }
}

/// `split-tensors-count`: the first shard's `split.tensors.count` is
/// present and (with every shard present) the set's number of tensors;
/// other shards that carry it agree.
fn tensors_count(members: &[Member<'_, '_>], first: &Member<'_, '_>, complete: bool, sink: &mut Sink<'_>) {
    if first.file.is_none() {
        return;
    }
    let Some(kv) = first.key("split.tensors.count") else {
        sink.emit(
            RuleId::SplitTensorsCount,
            KV_SECTION,
            || first.kv_section(),
            || "split.tensors.count is missing from the first shard: llama.cpp requires it to load a set".into(),
        );
        return;
    };
    let want = kv.value.as_u64();
    let readable = members.iter().all(|m| m.file.is_some());
    if complete && readable {
        let total = members
            .iter()
            .filter_map(|m| m.file)
            .fold(0u64, |acc, f| acc.saturating_add(u64::try_from(f.tensors.len()).unwrap_or(u64::MAX)));
        if want != Some(total) {
            let shown = want.map_or_else(|| "not a count".to_string(), |w| w.to_string());
            sink.emit(RuleId::SplitTensorsCount, kv.value_offset(), || first.path(&kv), || {
                format!("split.tensors.count is {shown} but the shards hold {total} tensors: llama.cpp refuses the set (corrupted model)")
            });
        }
    }
    for m in members {
        if m.slot == first.slot {
            continue;
        }
        let Some(other) = m.key("split.tensors.count") else { continue };
        let theirs = other.value.as_u64();
        if theirs != want {
            let shown = |v: Option<u64>| v.map_or_else(|| "not a count".to_string(), |w| w.to_string());
            sink.emit(
                RuleId::SplitTensorsCount,
                other.value_offset(),
                || m.path(&other),
                || format!("split.tensors.count is {} here but {} in the first shard", shown(theirs), shown(want)),
            );
        }
    }
}

/// Keys a later shard may carry without them being model metadata: the
/// split keys, and `general.*` (alignment, names) other than the
/// architecture.
fn is_model_key(key: &[u8]) -> bool {
    key == b"general.architecture" || !(key.starts_with(b"split.") || key.starts_with(b"general."))
}

/// `split-metadata-location`: a later shard's model key the first lacks.
fn metadata_location(members: &[Member<'_, '_>], first: &Member<'_, '_>, sink: &mut Sink<'_>) {
    let Some(first_file) = first.file else { return };
    for m in members {
        let Some(file) = m.file else { continue };
        if m.slot == first.slot {
            continue;
        }
        for kv in &file.kvs {
            if !is_model_key(kv.key.bytes) || first_file.kvs.iter().any(|f| f.key.bytes == kv.key.bytes) {
                continue;
            }
            sink.emit(RuleId::SplitMetadataLocation, kv.key.offset, || m.path(&kv), || {
                format!(
                    "`{}` is in a later shard but not in the first: llama.cpp reads metadata from the first shard only, so it never sees this key",
                    kv.key.display()
                )
            });
        }
    }
    quantization_version(members, first_file, first.slot, sink);
}

/// `quantization-version-missing` for a set: the first shard (which holds
/// the metadata) lacks `general.quantization_version` while a later shard
/// holds block-quantized tensors. (The first shard's own quantized tensors
/// are already judged in its own report.)
fn quantization_version(members: &[Member<'_, '_>], first: &GgufFile<'_>, first_slot: usize, sink: &mut Sink<'_>) {
    let quantized = |f: &GgufFile<'_>| {
        f.tensors.iter().any(|t| crate::types::GgmlType::from_id(t.type_id).is_some_and(|ty| ty.is_quantized()))
    };
    if first.get("general.quantization_version").is_some() || quantized(first) {
        return;
    }
    if members.iter().filter(|m| m.slot != first_slot).filter_map(|m| m.file).any(quantized) {
        sink.emit(RuleId::QuantVersionMissing, KV_SECTION, || format!("shard[{first_slot}] kv"), || {
            "general.quantization_version is missing from the first shard although later shards hold block-quantized tensors".into()
        });
    }
}

/// `split-tensor-duplicate`: a tensor name in two shards (the later copy
/// is reported; copies inside one shard are tensor-name-duplicate's).
fn tensor_duplicates(members: &[Member<'_, '_>], sink: &mut Sink<'_>) {
    let mut all: Vec<(&[u8], usize, u64, usize)> = Vec::new();
    for m in members {
        let Some(f) = m.file else { continue };
        all.extend(f.tensors.iter().map(|t| (t.name.bytes, m.slot, t.name.offset, t.index)));
    }
    all.sort_unstable();
    let mut group_start: Option<(&[u8], usize)> = None;
    for (name, slot, offset, index) in all {
        match group_start {
            Some((n, first_slot)) if n == name => {
                if slot != first_slot {
                    sink.emit(
                        RuleId::SplitTensorDuplicate,
                        offset,
                        || format!("shard[{slot}] tensor[{index}] {}", crate::parse::quote_bytes(name)),
                        || {
                            format!(
                                "tensor `{}` is also in shard[{first_slot}]: llama.cpp refuses the set (tensor is duplicated)",
                                crate::parse::quote_bytes(name)
                            )
                        },
                    );
                }
            }
            _ => group_start = Some((name, slot)),
        }
    }
}
