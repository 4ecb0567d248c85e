//! What validation produces: diagnostics and a per-file report. These are
//! the structures behind the JSON output (`--format json`), whose shape is
//! part of the CLI contract.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use serde::Serialize;

use crate::limits;
use crate::parse::ByteOrder;
use crate::rules::{Level, Profile, RuleId};

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable rule id.
    pub rule: &'static str,
    /// `error`, `warning` or `info`.
    pub severity: Level,
    /// Absolute byte offset in the file.
    pub offset: u64,
    /// Field path, e.g. `kv[23] tokenizer.ggml.tokens[5]` or `tensor[3] blk.0.attn_q.weight/offset`.
    pub path: String,
    /// What is wrong, with the values involved.
    pub message: String,
}

/// Diagnostic counts by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Errors.
    pub errors: u64,
    /// Warnings.
    pub warnings: u64,
    /// Infos.
    pub infos: u64,
}

/// Facts about the file, for the one-line summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Number of key/value pairs (as written in the header).
    pub kv_count: Option<u64>,
    /// Number of tensors (as written in the header).
    pub tensor_count: Option<u64>,
    /// Alignment in effect.
    pub alignment: Option<u64>,
    /// `general.architecture`, when it is a string.
    pub architecture: Option<String>,
    /// Absolute offset of the data section.
    pub data_offset: Option<u64>,
    /// Bytes of tensor data (sum of tensor sizes, without padding).
    pub data_size: Option<u64>,
    /// Total number of tensor elements.
    pub parameters: Option<u64>,
    /// Tensors per type name.
    pub tensor_types: BTreeMap<String, u64>,
}

/// The report for one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// True when no diagnostic is an error (nor a warning, with `--deny-warnings`).
    pub valid: bool,
    /// The profile applied.
    pub profile: Profile,
    /// `gguf`, or the name of another format that was recognised (`ggjt`, `rwkv-cpp`, ...).
    pub format: String,
    /// Format version, when one was read.
    pub version: Option<u32>,
    /// Byte order the file was validated in.
    pub byte_order: Option<ByteOrder>,
    /// Summary facts.
    pub summary: Summary,
    /// Diagnostics, in file order (at most
    /// [`limits::MAX_DIAGNOSTICS_PER_RULE`] per rule).
    pub diagnostics: Vec<Diagnostic>,
    /// Counts of all findings, including those not listed.
    pub counts: Counts,
    /// Findings per rule that were counted but not listed.
    pub suppressed: BTreeMap<&'static str, u64>,
}

/// Per-run options: profile and per-rule level overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Which profile's levels to start from.
    pub profile: Profile,
    /// `--allow` / `--warn` / `--deny`, applied in order.
    pub overrides: Vec<(RuleId, Level)>,
    /// Warnings make the file invalid.
    pub deny_warnings: bool,
}

impl Options {
    /// Options for a profile with no overrides.
    pub fn new(profile: Profile) -> Options {
        Options { profile, ..Options::default() }
    }

    /// The level of a rule under these options.
    pub fn level(&self, rule: RuleId) -> Level {
        let r = rule.rule();
        if r.fatal {
            return Level::Error;
        }
        self.overrides.iter().rev().find(|(id, _)| *id == rule).map_or_else(|| r.level(self.profile), |(_, l)| *l)
    }
}

/// Collects diagnostics, applying levels, the per-rule cap and counts.
#[derive(Debug)]
pub(crate) struct Sink<'o> {
    opts: &'o Options,
    pub(crate) diagnostics: Vec<Diagnostic>,
    per_rule: BTreeMap<&'static str, u64>,
    pub(crate) counts: Counts,
}

impl<'o> Sink<'o> {
    pub(crate) fn new(opts: &'o Options) -> Sink<'o> {
        Sink { opts, diagnostics: Vec::new(), per_rule: BTreeMap::new(), counts: Counts::default() }
    }

    /// Whether a rule is reported at all (lets callers skip work).
    pub(crate) fn enabled(&self, rule: RuleId) -> bool {
        self.opts.level(rule) != Level::Allow
    }

    /// Reports a finding. `path` and `message` are built only if kept.
    pub(crate) fn emit(
        &mut self,
        rule: RuleId,
        offset: u64,
        path: impl FnOnce() -> String,
        message: impl FnOnce() -> String,
    ) {
        let severity = self.opts.level(rule);
        let counter = match severity {
            Level::Allow => return,
            Level::Info => &mut self.counts.infos,
            Level::Warning => &mut self.counts.warnings,
            Level::Error => &mut self.counts.errors,
        };
        *counter = counter.saturating_add(1);
        let id = rule.id();
        let seen = self.per_rule.entry(id).or_insert(0);
        *seen = seen.saturating_add(1);
        if *seen > limits::MAX_DIAGNOSTICS_PER_RULE as u64 {
            return;
        }
        self.diagnostics.push(Diagnostic { rule: id, severity, offset, path: path(), message: message() });
    }

    pub(crate) fn finish(
        mut self,
        profile: Profile,
        format: String,
        version: Option<u32>,
        byte_order: Option<ByteOrder>,
        summary: Summary,
    ) -> Report {
        self.diagnostics.sort_by_key(|d| d.offset);
        let suppressed = self
            .per_rule
            .iter()
            .filter_map(|(id, n)| {
                n.checked_sub(limits::MAX_DIAGNOSTICS_PER_RULE as u64).filter(|x| *x > 0).map(|x| (*id, x))
            })
            .collect();
        let valid = self.counts.errors == 0 && !(self.opts.deny_warnings && self.counts.warnings > 0);
        Report {
            valid,
            profile,
            format,
            version,
            byte_order,
            summary,
            diagnostics: self.diagnostics,
            counts: self.counts,
            suppressed,
        }
    }
}
