//! What validation produces: diagnostics and a per-file report. These are
//! the structures behind the JSON output (`--format json`), whose shape is
//! part of the CLI contract.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use serde::Serialize;

use crate::limits;
use crate::parse::{ByteOrder, LegacyFormat};
use crate::rules::{Level, Profile, RuleId};

/// How a remote file was read: defined with the HTTP source that counts it
/// (`remote`, below this layer), reported in [`Summary::remote`].
pub use crate::remote::RemoteSummary;

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The rule (serialised as its stable id).
    pub rule: RuleId,
    /// `error`, `warning` or `info`.
    pub severity: Level,
    /// Absolute byte offset in the file.
    pub offset: u64,
    /// Field path, e.g. `kv[23] tokenizer.ggml.tokens[5]` or `tensor[3] blk.0.attn_q.weight/offset`.
    pub path: String,
    /// What is wrong, with the values involved.
    pub message: String,
    /// Bytes the finding covers from `offset`, where that is known (a
    /// field, a padding run, a tensor's data); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// The finding this one follows from (every tensor past the end of a
    /// truncated file follows from the truncation), named by its rule and
    /// offset: front ends show the cause first and fold these under it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caused_by: Option<Cause>,
}

/// Names the diagnostic that others follow from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// Its rule.
    pub rule: RuleId,
    /// Its offset.
    pub offset: u64,
}

impl Diagnostic {
    /// Whether `self` is the cause `other` follows from.
    pub fn causes(&self, other: &Diagnostic) -> bool {
        self.caused_by.is_none() && other.caused_by == Some(Cause { rule: self.rule, offset: self.offset })
    }
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

/// What a file was recognised as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// GGUF (any version; the report's `version` says which).
    Gguf,
    /// A format GGUF replaced, or rwkv.cpp's.
    Legacy(LegacyFormat),
    /// Not a format the tool knows.
    Unknown,
}

impl FileFormat {
    /// `gguf`, `unknown`, or the legacy format's name (`ggjt`, `rwkv-cpp`, ...).
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Gguf => "gguf",
            FileFormat::Legacy(f) => f.name(),
            FileFormat::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for FileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Serialised as [`FileFormat::name`].
impl Serialize for FileFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
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
    /// What was and was not examined, one entry per layer of checks.
    pub examined: Vec<Examined>,
    /// For a shard of a split set (`split.count` above 1): its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<Shard>,
    /// For a file read over HTTP: what it cost and what the server said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteSummary>,
    /// Which llama.cpp releases load the file, for a model or a projector
    /// llama.cpp opens ([`crate::llama_cpp`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llama_cpp: Option<LlamaCpp>,
    /// The loader the file was judged against: the one set (`--loader`),
    /// or the one the file is for ([`crate::loader`]); none for a file the
    /// checks did not reach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loader: Option<crate::loader::Loader>,
    /// Rules of ggml's reader that this file's loader reads past (a
    /// diffusion loader's own reader, [`crate::loader`]): under `strict`
    /// each is at most a warning here, unless the run sets its level.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerated: Vec<RuleId>,
}

/// A suppression or baseline entry applied to a report (listed in it;
/// the policy that applies them is [`crate::config`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The rule whose findings were set aside.
    pub rule: &'static str,
    /// `config` or `baseline`.
    pub source: &'static str,
    /// Why.
    pub reason: String,
    /// How many findings it set aside (listed and unlisted).
    pub findings: u64,
    /// The listed findings it set aside (SARIF reports them as suppressed
    /// results).
    #[serde(skip)]
    pub set_aside: Vec<Diagnostic>,
}

/// A file's place in a split set, from its own `split.*` keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// `split.no` (0-based), when present and an integer.
    pub no: Option<u64>,
    /// `split.count` (above 1).
    pub count: u64,
}

/// Whether one layer of checks ran on a file, and if not (or only in
/// part), why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Examined {
    /// `container`, `model`, `tokenizer`, `split`, `projector`, `adapter`,
    /// `control vector`, `pairing`, `template` or `data`.
    pub layer: &'static str,
    /// True when the layer's rules ran (perhaps with `note` saying what
    /// part did not).
    pub checked: bool,
    /// What was left out and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The note of a layer left out because only containers were checked
/// (`Options::container_only`).
pub const CONTAINER_ONLY: &str = "container-only";

/// The note of the data layer when no data scan was asked for.
pub const DATA_NOT_ASKED: &str = "no data scan asked for";

impl Examined {
    /// A layer that ran in full.
    pub fn checked(layer: &'static str) -> Examined {
        Examined { layer, checked: true, note: None }
    }

    /// A layer that ran in part.
    pub fn partly(layer: &'static str, note: impl Into<String>) -> Examined {
        Examined { layer, checked: true, note: Some(note.into()) }
    }

    /// A layer that did not run.
    pub fn skipped(layer: &'static str, note: impl Into<String>) -> Examined {
        Examined { layer, checked: false, note: Some(note.into()) }
    }
}

/// The report for one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// True when no diagnostic is an error (nor a warning, with `--deny-warnings`).
    pub valid: bool,
    /// The profile applied.
    pub profile: Profile,
    /// `gguf`, or the name of another format that was recognised (`ggjt`, `rwkv-cpp`, ...).
    pub format: FileFormat,
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
    /// Findings set aside by a config suppression or a baseline, with the
    /// reason (every report lists what it did not count).
    #[serde(rename = "suppressions_applied", skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<Applied>,
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
    /// Check the container only: skip the model layer (hyper-parameters,
    /// tensors against the architecture, tokenizer, split shards), for
    /// GGUF files that llama.cpp is not meant to load.
    pub container_only: bool,
    /// What a file's metadata may declare before decoding stops
    /// (`metadata-limit`): time and memory stay bounded by these.
    pub limits: crate::limits::MetadataLimits,
}

/// What a run knows of one model file that a projector, a LoRA adapter or
/// a control vector is paired with: the values llama.cpp compares when it
/// loads them together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelFacts {
    /// How the model is named in messages (its path or URL as given).
    pub name: String,
    /// `general.architecture`.
    pub architecture: String,
    /// `ARCH.embedding_length` (`n_embd`).
    pub n_embd: Option<u64>,
    /// The width of the input embeddings a projector feeds
    /// (`llama_model_n_embd_inp`: `n_embd`, times one plus the deepstack
    /// layers where the architecture has them).
    pub n_embd_inp: Option<u64>,
    /// `ARCH.block_count`.
    pub n_layer: Option<u64>,
    /// The vocabulary's size (`tokenizer.ggml.tokens`).
    pub n_vocab: Option<u64>,
    /// Which of the token texts libmtmd looks up for some projector type
    /// (`<global-img>`, `<|img_thumbnail|>`, "\n", ...) a token of the
    /// vocabulary decodes to, as `llama_token_to_piece` decodes it; `None`
    /// without a vocabulary whose decoding is known.
    pub projector_tokens: Option<Vec<String>>,
    /// Every tensor's name and dims (`ne[0]` first), sorted by name.
    pub tensors: Vec<(String, Vec<u64>)>,
    /// `tensors` are all of the model's: false for a shard of a split set,
    /// which holds some of them.
    pub all_tensors: bool,
}

impl ModelFacts {
    /// The dims of the tensor `name`, if the model has it.
    pub fn tensor(&self, name: &str) -> Option<&[u64]> {
        self.tensors
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .and_then(|i| self.tensors.get(i))
            .map(|(_, d)| d.as_slice())
    }
}

/// The models a [`crate::Validator`] pairs with: given with `--with` (`given`:
/// the pair must match them), or found beside the file (the pair must
/// match one of them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Companions {
    /// The models, in the order they were found.
    pub models: Vec<std::sync::Arc<ModelFacts>>,
    /// They were named (`--with`) rather than found in the folder.
    pub given: bool,
    /// Why there are none, when the run looked (e.g. a remote file).
    pub none_because: Option<String>,
}

impl Options {
    /// Options for a profile with no overrides.
    pub fn new(profile: Profile) -> Options {
        Options { profile, ..Options::default() }
    }

    /// The level of a rule under these options.
    pub fn level(&self, rule: RuleId) -> Level {
        self.level_under(self.profile, rule)
    }

    /// The level of a rule under these options with another profile.
    pub fn level_under(&self, profile: Profile, rule: RuleId) -> Level {
        let r = rule.rule();
        if r.fatal {
            return Level::Error;
        }
        self.overrides.iter().rev().find(|(id, _)| *id == rule).map_or_else(|| r.level(profile), |(_, l)| *l)
    }

    /// The level of a rule under `profile` in a file whose loader reads
    /// past the rules `tolerated` (a report's `summary.tolerated`): under
    /// strict each of those is at most a warning, unless these options set
    /// its level.
    pub fn level_tolerating(&self, profile: Profile, rule: RuleId, tolerated: &[RuleId]) -> Level {
        let level = self.level_under(profile, rule);
        if profile == Profile::Strict
            && level > Level::Warning
            && tolerated.contains(&rule)
            && !self.overrides.iter().any(|(r, _)| *r == rule)
        {
            Level::Warning
        } else {
            level
        }
    }
}

/// Which llama.cpp releases load a file (`summary.llama_cpp`), from what
/// each release knows of the file's architecture, tokenizer, pre-tokenizer,
/// projector type and tensor types, and, for the releases whose model
/// loader is read ([`crate::llama_cpp::Release::model_contract_read`]), the
/// keys and tensors it requires, the tensors it creates and their shapes;
/// conditions on values and graph changes between releases are not
/// examined.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LlamaCpp {
    /// The oldest known release from which every newer one loads it, or
    /// none when the newest does not.
    pub loads_from: Option<String>,
    /// The newest release that loads it, where a newer one refuses it
    /// (none when the newest loads it).
    pub loads_until: Option<String>,
    /// The releases this validation's verdict speaks for.
    pub judged_against: Vec<String>,
    /// What sets `loads_from`: each fact the release before it did not
    /// know, with the release that brought it.
    pub because: Vec<String>,
}

/// No models to pair with (a validation that is not given any).
static NO_COMPANIONS: Companions = Companions { models: Vec::new(), given: false, none_because: None };

/// How one validation judges, as the checks see it: the options, one
/// profile or every profile in one pass, and the models a projector,
/// adapter or control vector pairs with ([`crate::Validator`]'s settings).
#[derive(Clone, Copy)]
pub(crate) struct Judging<'o> {
    /// Profile, levels, limits.
    pub(crate) options: &'o Options,
    /// Judge one pass under every profile ([`crate::Validator::every_profile`]).
    pub(crate) every_profile: bool,
    /// The models given for the pairing.
    pub(crate) companions: &'o Companions,
    /// Where the models a pairing needs are looked for when `companions`
    /// holds none and says nothing of why: asked at most once a
    /// validation, only by a pairing.
    pub(crate) find_companions: Option<&'o dyn Fn() -> Companions>,
    /// The llama.cpp releases judged against (`--llama-cpp`); none: the
    /// pinned tree the tables come from.
    pub(crate) releases: Option<crate::llama_cpp::Releases>,
    /// The loader every file is judged against (`--loader`); none: the
    /// one each file is for.
    pub(crate) loader: Option<crate::loader::Loader>,
}

impl<'o> Judging<'o> {
    /// Judged under `options` alone: one profile, no models to pair with.
    pub(crate) fn plain(options: &'o Options) -> Judging<'o> {
        Judging {
            options,
            every_profile: false,
            companions: &NO_COMPANIONS,
            find_companions: None,
            releases: None,
            loader: None,
        }
    }

    /// Whether some profile this validation judges reports `rule`.
    fn reported(&self, rule: RuleId) -> bool {
        if self.every_profile {
            Profile::ALL.iter().any(|p| self.options.level_under(*p, rule) != Level::Allow)
        } else {
            self.options.level(rule) != Level::Allow
        }
    }
}

/// Collects diagnostics, applying levels, the per-rule cap and counts.
pub(crate) struct Sink<'o> {
    /// The options (`judging.options`) and the rest of how it judges.
    judging: Judging<'o>,
    /// Findings listed per rule; the rest are counted.
    cap: u64,
    pub(crate) diagnostics: Vec<Diagnostic>,
    per_rule: BTreeMap<RuleId, u64>,
    pub(crate) counts: Counts,
    /// Judging every profile: findings per rule, listed or not (each
    /// profile's counts are made from these at the end).
    totals: BTreeMap<RuleId, u64>,
    /// The first finding, at any level, by which the pinned tree's model
    /// loader refuses the file ([`RuleId::refuses_at_load`]).
    pub(crate) refused_at_load: Option<RuleId>,
    /// The model layer's pattern of each tensor it read (index, pattern,
    /// first number), which the release contracts read again.
    pub(crate) tensor_patterns: Vec<(usize, String, Option<u64>)>,
    /// The loader this file is judged for, once known (set before the
    /// tensor infos are checked).
    pub(crate) file_loader: Option<crate::loader::Loader>,
    /// Rules of ggml's reader this file's loader reads past (a diffusion
    /// loader's own reader): under strict at most warnings.
    pub(crate) tolerated: Vec<RuleId>,
}

impl<'o> Sink<'o> {
    pub(crate) fn new(opts: &'o Options) -> Sink<'o> {
        Sink::judging(Judging::plain(opts))
    }

    /// A sink that judges as `judging` says.
    pub(crate) fn judging(judging: Judging<'o>) -> Sink<'o> {
        Sink {
            judging,
            cap: limits::MAX_DIAGNOSTICS_PER_RULE as u64,
            diagnostics: Vec::new(),
            per_rule: BTreeMap::new(),
            counts: Counts::default(),
            totals: BTreeMap::new(),
            refused_at_load: None,
            tensor_patterns: Vec::new(),
            file_loader: None,
            tolerated: Vec::new(),
        }
    }

    /// The models a projector, adapter or control vector is paired with:
    /// those given, or, when none are given and nothing says why, what
    /// [`Judging::find_companions`] finds.
    pub(crate) fn companions(&self) -> Companions {
        let given = self.judging.companions;
        match self.judging.find_companions {
            Some(find) if given.models.is_empty() && given.none_because.is_none() => find(),
            _ => given.clone(),
        }
    }

    /// The llama.cpp releases judged against, when asked for.
    pub(crate) fn releases(&self) -> Option<crate::llama_cpp::Releases> {
        self.judging.releases
    }

    /// The loader set for the run (`--loader`), if any.
    pub(crate) fn loader(&self) -> Option<crate::loader::Loader> {
        self.judging.loader
    }

    /// Whether a rule is reported at all (lets callers skip work).
    /// The options findings are judged with.
    pub(crate) fn options(&self) -> &'o Options {
        self.judging.options
    }

    pub(crate) fn enabled(&self, rule: RuleId) -> bool {
        self.judging.reported(rule)
    }

    /// Judging every profile, counts `n` findings of `rule` (false when no
    /// profile reports it); each profile's counts come at the end.
    fn count_all(&mut self, rule: RuleId, n: u64) -> bool {
        if !self.judging.reported(rule) {
            return false;
        }
        let t = self.totals.entry(rule).or_insert(0);
        *t = t.saturating_add(n);
        true
    }

    /// Reports a finding. `path` and `message` are built only if kept.
    pub(crate) fn emit(
        &mut self,
        rule: RuleId,
        offset: u64,
        path: impl FnOnce() -> String,
        message: impl FnOnce() -> String,
    ) {
        self.emit_span(rule, offset, None, path, message);
    }

    /// [`Sink::emit`] for a finding that covers `length` bytes.
    pub(crate) fn emit_span(
        &mut self,
        rule: RuleId,
        offset: u64,
        length: Option<u64>,
        path: impl FnOnce() -> String,
        message: impl FnOnce() -> String,
    ) {
        if self.refused_at_load.is_none() && rule.refuses_at_load() {
            self.refused_at_load = Some(rule);
        }
        let severity = self.level_under(self.judging.options.profile, rule);
        let counted = if self.judging.every_profile { self.count_all(rule, 1) } else { self.count(severity, 1) };
        if !counted {
            return;
        }
        let seen = self.per_rule.entry(rule).or_insert(0);
        *seen = seen.saturating_add(1);
        if *seen > self.cap {
            return;
        }
        self.diagnostics.push(Diagnostic {
            rule,
            severity,
            offset,
            path: path(),
            message: message(),
            length,
            caused_by: None,
        });
    }

    /// Emits a finding that others follow from, and returns how they
    /// name it ([`Sink::emit_from`]); `None` when it was not listed (its
    /// level is `allow`, or past the rule's cap).
    pub(crate) fn emit_cause(
        &mut self,
        rule: RuleId,
        offset: u64,
        path: impl FnOnce() -> String,
        message: impl FnOnce() -> String,
    ) -> Option<Cause> {
        let before = self.diagnostics.len();
        self.emit(rule, offset, path, message);
        (self.diagnostics.len() > before).then_some(Cause { rule, offset })
    }

    /// [`Sink::emit`] for a finding that follows from `cause`.
    pub(crate) fn emit_from(
        &mut self,
        cause: Option<Cause>,
        rule: RuleId,
        offset: u64,
        path: impl FnOnce() -> String,
        message: impl FnOnce() -> String,
    ) {
        let before = self.diagnostics.len();
        self.emit(rule, offset, path, message);
        if let Some(d) = self.diagnostics.get_mut(before) {
            d.caused_by = cause;
        }
    }

    /// The level of `rule` under `profile` for this file: the options',
    /// except that under strict a rule the file's own loader reads past
    /// ([`Sink::tolerated`]) is at most a warning, unless the run sets its
    /// level.
    fn level_under(&self, profile: Profile, rule: RuleId) -> Level {
        self.judging.options.level_tolerating(profile, rule, &self.tolerated)
    }

    /// Counts `n` findings of `rule` that are not listed (they appear in
    /// the report's counts and `suppressed`).
    pub(crate) fn count_unlisted(&mut self, rule: RuleId, n: u64) {
        let counted = if self.judging.every_profile {
            self.count_all(rule, n)
        } else {
            self.count(self.level_under(self.judging.options.profile, rule), n)
        };
        if !counted {
            return;
        }
        let seen = self.per_rule.entry(rule).or_insert(0);
        // Past the cap, so that `finish` counts them as suppressed.
        *seen = (*seen).max(self.cap).saturating_add(n);
    }

    /// Adds `n` findings at `level` to the counts; false for `allow`, which
    /// is neither counted nor listed.
    fn count(&mut self, level: Level, n: u64) -> bool {
        let counter = match level {
            Level::Allow => return false,
            Level::Info => &mut self.counts.infos,
            Level::Warning => &mut self.counts.warnings,
            Level::Error => &mut self.counts.errors,
        };
        *counter = counter.saturating_add(n);
        true
    }

    /// Lists up to `cap` findings per rule (instead of
    /// [`limits::MAX_DIAGNOSTICS_PER_RULE`]).
    pub(crate) fn with_cap(mut self, cap: u64) -> Self {
        self.cap = cap;
        self
    }

    /// A sink that goes on where `report` (made with the same options)
    /// left off: its diagnostics, counts and suppressed findings.
    pub(crate) fn resume(report: &mut Report, opts: &'o Options) -> Sink<'o> {
        let mut sink = Sink::new(opts);
        sink.counts = report.counts;
        sink.diagnostics = std::mem::take(&mut report.diagnostics);
        for d in &sink.diagnostics {
            *sink.per_rule.entry(d.rule).or_default() += 1;
        }
        for (id, n) in std::mem::take(&mut report.suppressed) {
            if let Some(rule) = RuleId::from_id(id) {
                let seen = sink.per_rule.entry(rule).or_default();
                *seen = (*seen).max(sink.cap).saturating_add(n);
            }
        }
        sink
    }

    /// Puts the findings back into `report` (see [`Sink::resume`]) and
    /// recomputes its verdict.
    pub(crate) fn finish_into(self, report: &mut Report) {
        let (diagnostics, counts, suppressed, valid) = self.into_parts();
        report.diagnostics = diagnostics;
        report.counts = counts;
        report.suppressed = suppressed;
        report.valid = valid;
    }

    fn into_parts(mut self) -> (Vec<Diagnostic>, Counts, BTreeMap<&'static str, u64>, bool) {
        // A cause's findings right after it, whatever their own offsets.
        self.diagnostics.sort_by_key(|d| (d.caused_by.map_or(d.offset, |c| c.offset), d.caused_by.is_some(), d.offset));
        let cap = self.cap;
        let suppressed = self
            .per_rule
            .iter()
            .filter_map(|(rule, n)| n.checked_sub(cap).filter(|x| *x > 0).map(|x| (rule.id(), x)))
            .collect();
        let valid = self.counts.errors == 0 && !(self.judging.options.deny_warnings && self.counts.warnings > 0);
        (self.diagnostics, self.counts, suppressed, valid)
    }

    pub(crate) fn finish(
        self,
        profile: Profile,
        format: FileFormat,
        version: Option<u32>,
        byte_order: Option<ByteOrder>,
        summary: Summary,
    ) -> Report {
        self.finish_judged(profile, format, version, byte_order, summary).0
    }

    /// [`Sink::finish`], and when judging every profile, the report of
    /// each, in [`Profile::ALL`] order (else none).
    pub(crate) fn finish_judged(
        self,
        profile: Profile,
        format: FileFormat,
        version: Option<u32>,
        byte_order: Option<ByteOrder>,
        summary: Summary,
    ) -> (Report, Vec<Report>) {
        if self.judging.every_profile {
            let profiles: Vec<Report> = Profile::ALL
                .iter()
                .map(|p| self.under(*p).report(*p, format, version, byte_order, summary.clone()))
                .collect();
            // The run's own profile is one of them: no second derivation.
            let report = match profiles.iter().find(|r| r.profile == profile) {
                Some(r) => r.clone(),
                None => self.under(profile).report(profile, format, version, byte_order, summary),
            };
            return (report, profiles);
        }
        (self.report(profile, format, version, byte_order, summary), Vec::new())
    }

    /// The report of the findings collected for one profile.
    fn report(
        self,
        profile: Profile,
        format: FileFormat,
        version: Option<u32>,
        byte_order: Option<ByteOrder>,
        summary: Summary,
    ) -> Report {
        let (diagnostics, counts, suppressed, valid) = self.into_parts();
        Report {
            valid,
            profile,
            format,
            version,
            byte_order,
            summary,
            diagnostics,
            counts,
            suppressed,
            applied: Vec::new(),
        }
    }

    /// What a run of `profile` alone would have collected, from the
    /// findings of a pass judging every profile: the findings it reports, at its
    /// levels, a cause it does not report dropped, its counts.
    fn under(&self, profile: Profile) -> Sink<'o> {
        let level = |rule: RuleId| self.level_under(profile, rule);
        let diagnostics = self
            .diagnostics
            .iter()
            .filter(|d| level(d.rule) != Level::Allow)
            .map(|d| Diagnostic {
                severity: level(d.rule),
                caused_by: d.caused_by.filter(|c| level(c.rule) != Level::Allow),
                ..d.clone()
            })
            .collect();
        let mut sink =
            Sink { cap: self.cap, diagnostics, tolerated: self.tolerated.clone(), ..Sink::new(self.judging.options) };
        for (rule, n) in &self.totals {
            if sink.count(level(*rule), *n) {
                sink.per_rule.insert(*rule, self.per_rule.get(rule).copied().unwrap_or(0));
            }
        }
        sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finish(sink: Sink<'_>) -> Report {
        sink.finish(Profile::Strict, FileFormat::Gguf, Some(3), None, Summary::default())
    }

    #[test]
    fn levels_come_from_the_profile_and_the_last_override_wins() {
        let opts = Options {
            overrides: vec![(RuleId::KeyNaming, Level::Error), (RuleId::KeyNaming, Level::Allow)],
            ..Options::new(Profile::Strict)
        };
        assert_eq!(opts.level(RuleId::KeyNaming), Level::Allow);
        assert_eq!(opts.level(RuleId::KeyEmpty), Level::Error);
        // A fatal rule stays an error whatever is asked.
        let opts = Options { overrides: vec![(RuleId::FileTruncated, Level::Allow)], ..Options::default() };
        assert_eq!(opts.level(RuleId::FileTruncated), Level::Error);
    }

    #[test]
    fn the_sink_lists_up_to_the_cap_and_counts_the_rest() {
        let opts = Options { overrides: vec![(RuleId::KeyAscii, Level::Allow)], ..Options::default() };
        let mut sink = Sink::new(&opts);
        for i in 0..60u64 {
            sink.emit(RuleId::KeyEmpty, 100 - i, String::new, || "empty".into());
        }
        sink.emit(RuleId::KeyNaming, 7, || "kv[0]".into(), || "naming".into());
        // An allowed rule is neither counted nor built.
        sink.emit(RuleId::KeyAscii, 8, || unreachable!("path of an allowed rule"), || unreachable!());
        let r = finish(sink);
        assert_eq!(r.counts, Counts { errors: 60, warnings: 1, infos: 0 });
        assert_eq!(r.diagnostics.iter().filter(|d| d.rule == RuleId::KeyEmpty).count(), 50);
        assert_eq!(r.suppressed.get("key-empty"), Some(&10));
        assert!(r.diagnostics.windows(2).all(|w| w[0].offset <= w[1].offset), "sorted by offset");
        assert!(!r.valid);
    }

    #[test]
    fn a_resumed_sink_adds_to_a_report_with_one_policy() {
        let opts = Options::new(Profile::Spec);
        let mut sink = Sink::new(&opts);
        sink.emit(RuleId::TrailingBytes, 10, String::new, || "trailing".into());
        let mut r = finish(sink);
        assert!(r.valid);
        let mut sink = Sink::resume(&mut r, &opts).with_cap(2);
        for i in 0..3u64 {
            sink.emit_span(RuleId::DataNonFinite, 20 + i, Some(4), String::new, || "nan".into());
        }
        sink.count_unlisted(RuleId::DataNonFinite, 5);
        sink.finish_into(&mut r);
        // data-non-finite is a warning under spec: still valid, 8 counted,
        // 2 listed, 6 suppressed; the earlier finding is kept.
        assert!(r.valid);
        assert_eq!(r.counts.warnings, 8);
        assert_eq!(r.diagnostics.iter().filter(|d| d.rule == RuleId::DataNonFinite).count(), 2);
        assert_eq!(r.suppressed.get("data-non-finite"), Some(&6));
        assert_eq!(r.diagnostics[0].rule, RuleId::TrailingBytes);
        assert_eq!(r.diagnostics[1].length, Some(4));
    }
}
