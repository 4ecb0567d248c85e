//! The pipeline every front end runs (the command line, the Python
//! bindings): [`Input`]s and [`Settings`] in, one typed [`Outcome`] per
//! file and one [`SetReport`] per split set out, in input order.
//!
//! For each input: open it (a file under the [`OpenPolicy`], a URL through
//! the run's [`UrlOpener`], bytes in memory), validate its metadata
//! ([`crate::Validator`]), scan its data when asked
//! ([`crate::data_scan`], merged into the same report), record what
//! reading a URL cost, apply the config's levels, suppressions and
//! baseline; a shard of a split set brings its siblings and the set's own
//! checks ([`crate::split_set`]). A time limit runs a file in a worker
//! thread that is abandoned when the limit passes; without one, nothing is
//! spawned. Nothing here prints or exits: a front end renders what
//! [`Pipeline::run`] hands it.
//!
//! ```
//! use std::ops::ControlFlow;
//! use gguf_validate_core::pipeline::{Input, Item, Pipeline, Settings};
//!
//! let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/samples/tiny-llama.gguf");
//! let pipeline = Pipeline::new(Settings::default());
//! // One input...
//! let bytes = std::fs::read(sample).unwrap();
//! assert!(pipeline.validate(&Input::bytes("tiny-llama.gguf", bytes)).outcome.is_valid());
//! // ... or many, in input order, with two workers.
//! let inputs = vec![Input::from_path(sample.into()); 3];
//! let mut valid = 0;
//! let _ = pipeline.run::<()>(&inputs, 2, |item| {
//!     if let Item::File { outcome, .. } = item {
//!         valid += usize::from(outcome.is_valid());
//!     }
//!     ControlFlow::Continue(())
//! });
//! assert_eq!(valid, 3);
//! ```
#![forbid(unsafe_code)]

pub mod commands;
pub mod companion;
pub mod input;
pub mod json;
pub mod open;
pub mod scan;

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use web_time::Instant;

pub use input::{Input, SharedSource};
pub use open::Opened;

use crate::config::{self, Baseline, Config};
use crate::data_scan::{self, DataOptions, DataReport};
use crate::io::{self as gio, ByteSource, FileKind, OpenPolicy, ReadError};
use crate::remote::UrlOpener;
use crate::report::{Examined, Options, Report};
use crate::rules::{Level, RuleId};
use crate::split_set::{self, SetReport, ShardInput};
use crate::validate::{Validated, Validator};

/// Time allowed to read a FIFO, socket or device (when special files are
/// allowed) when no time limit is given: a writer that never comes must
/// not hang the run.
pub const SPECIAL_FILE_TIMEOUT: Duration = Duration::from_secs(60);

/// Files validated per worker in one window of [`Pipeline::run`]: results
/// are handed out in input order as each window completes, so memory holds
/// one window's reports whatever the number of inputs.
pub const WINDOW_PER_JOB: usize = 4;

/// The outcome for one file.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Validated (with the data scan's per-tensor results, when asked for).
    Report(Box<Report>, Option<Box<DataReport>>),
    /// Could not be read: why.
    Unreadable(String),
}

impl Outcome {
    /// The report, when the file was read.
    pub fn report(&self) -> Option<&Report> {
        match self {
            Outcome::Report(r, _) => Some(r),
            Outcome::Unreadable(_) => None,
        }
    }

    /// Whether the file was read and is valid.
    pub fn is_valid(&self) -> bool {
        self.report().is_some_and(|r| r.valid)
    }
}

/// Shows the progress of a long data scan (the CLI's progress bar).
pub trait ScanProgress: Send + Sync + std::fmt::Debug {
    /// A scan of `total` bytes of the input shown as `name` begins.
    fn begin(&self, name: &str, total: u64) -> Box<dyn ScanBar>;
}

/// One data scan's progress.
pub trait ScanBar: Send + Sync {
    /// `n` more bytes were scanned (called from any thread).
    fn inc(&self, n: u64);
    /// The scan ended.
    fn finish(&self);
}

/// What every file of one run is validated with.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The validator: profile, levels, limits, every profile or one,
    /// report only or the metadata kept.
    pub validator: Validator,
    /// Which local files may be opened.
    pub policy: OpenPolicy,
    /// Scan tensor data too.
    pub check_data: Option<DataOptions>,
    /// Give up on a file after this long.
    pub timeout: Option<Duration>,
    /// Hash each file's metadata (for config suppressions pinned by sha256).
    pub metadata_hash: bool,
    /// Opens URLs; without one, a URL is unreadable.
    pub opener: Option<Arc<dyn UrlOpener>>,
    /// Shows long data scans.
    pub progress: Option<Arc<dyn ScanProgress>>,
    /// A deadline for remote reads earlier than the file's own: that of the
    /// split set (named by URL) being read.
    pub deadline: Option<Instant>,
    /// The models projectors, LoRA adapters and control vectors are paired
    /// with (`--with MODEL`); without them, the models of the file's own
    /// folder ([`companion`]).
    pub with: Vec<Input>,
    /// The files given together with the input, standing for its folder
    /// when it has none on a file system (files dropped together on the
    /// browser page): where the models a projector, adapter or control
    /// vector pairs with are looked for, as in a path's folder.
    pub folder: Option<Vec<Input>>,
    /// What the run has read of the models it pairs with, shared by its
    /// files.
    pub companion_cache: companion::Cache,
}

/// One file's result, with what a split set needs of it.
#[derive(Debug)]
pub struct Validation {
    /// What is reported for the file.
    pub outcome: Outcome,
    /// Judging every profile: the report of each (with the data scan
    /// merged), in [`crate::Profile::ALL`] order.
    pub profiles: Vec<Report>,
    /// The validation itself (its metadata and parse), kept for a shard
    /// (the set's checks read it) and for [`Pipeline::validate`] (a step
    /// after the report reads it instead of reading the file again).
    pub validated: Option<Validated>,
    /// The sha256 of its metadata, when asked for ([`Settings::metadata_hash`]).
    pub metadata_sha256: Option<String>,
    /// A URL the server says is not there (`404`/`410`): a sibling shard
    /// that is left out of its set, as a file that is not in the folder.
    pub not_found: bool,
    /// When its validation started (a split set named by URL has one
    /// deadline from its first shard's start).
    pub started: Instant,
}

impl Validation {
    /// Whether the file is a shard of a split set (`split.count` above 1).
    pub fn is_shard(&self) -> bool {
        self.outcome.report().is_some_and(|r| r.summary.split.is_some())
    }

    /// A validation made elsewhere (its metadata and parse kept), as a
    /// run's: what a split set's checks read of a shard.
    pub fn of(validated: Validated) -> Validation {
        Validation {
            outcome: Outcome::Report(Box::new(validated.report.clone()), None),
            profiles: Vec::new(),
            validated: Some(validated),
            metadata_sha256: None,
            not_found: false,
            started: Instant::now(),
        }
    }

    fn unreadable(why: String) -> Validation {
        Validation {
            outcome: Outcome::Unreadable(why),
            profiles: Vec::new(),
            validated: None,
            metadata_sha256: None,
            not_found: false,
            started: Instant::now(),
        }
    }
}

/// A split set: its shards (given or found by name) and the set's report.
#[derive(Debug)]
pub struct SetRun {
    /// Each shard and its result, in position order.
    pub members: Vec<(Input, Validation)>,
    /// The set's own report.
    pub report: SetReport,
}

/// One step of a run, in input order: a file (`set`: the name of the
/// split set it is a shard of), then after a set's shards the set.
#[derive(Debug)]
pub enum Item<'a> {
    /// A file's outcome.
    File {
        /// The input.
        input: &'a Input,
        /// Its outcome.
        outcome: &'a Outcome,
        /// Judging every profile: the report under each.
        profiles: &'a [Report],
        /// The split set it is a shard of.
        set: Option<&'a str>,
    },
    /// A split set's own report (after its shards).
    Set(&'a SetReport),
}

/// A command's time limit (`hash`, `derive`): a flag a timer thread sets
/// when the limit passes, which the work checks between batches and stops
/// at; the timer ends when this is dropped. Where no thread can be had
/// (a browser), [`TimeLimit::passed`] still tells by the clock.
#[derive(Debug)]
pub struct TimeLimit {
    flag: Arc<AtomicBool>,
    limit: Duration,
    deadline: Instant,
    _stop: mpsc::Sender<()>,
}

impl TimeLimit {
    /// Starts the clock.
    pub fn start(limit: Duration) -> TimeLimit {
        let flag = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel::<()>();
        let set = Arc::clone(&flag);
        let _ = std::thread::Builder::new().name("time-limit".into()).spawn(move || {
            // Dropped before the limit: the sender is gone, nothing to do.
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(limit) {
                set.store(true, Ordering::Relaxed);
            }
        });
        let now = Instant::now();
        TimeLimit { flag, limit, deadline: now.checked_add(limit).unwrap_or(now), _stop: stop }
    }

    /// The flag the work checks (set when the limit passed).
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// When the limit passes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the limit has passed.
    pub fn passed(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }

    /// What is said of work the limit stopped.
    pub fn message(&self) -> String {
        format!("timed out after {} s (the time limit, --timeout); gave up", self.limit.as_secs_f64())
    }

    /// `inner`, whose reads fail ([`ReadError::Cancelled`]) once the limit
    /// has passed, and a read that ends after it: work that reads (a
    /// metadata read, a tensor's copy) stops at the read the limit passed
    /// in, and gives no result late.
    pub fn source<'a>(&'a self, inner: &'a dyn ByteSource) -> TimedSource<'a> {
        TimedSource::new(inner, Some(self))
    }

    /// What is said of a read that failed with `error` (the input shown as
    /// `shown`): the limit's message when it passed, else the error's.
    pub fn explain(limit: Option<&TimeLimit>, shown: &str, error: &dyn std::fmt::Display) -> String {
        match limit {
            Some(l) if l.passed() => format!("{shown}: {}", l.message()),
            _ => format!("{shown}: {error}"),
        }
    }
}

/// A source read under a [`TimeLimit`] ([`TimeLimit::source`]), or as it
/// is when there is none.
#[derive(Debug)]
pub struct TimedSource<'a> {
    inner: &'a dyn ByteSource,
    limit: Option<&'a TimeLimit>,
}

impl<'a> TimedSource<'a> {
    /// `inner` read under `limit` (when there is one).
    pub fn new(inner: &'a dyn ByteSource, limit: Option<&'a TimeLimit>) -> TimedSource<'a> {
        TimedSource { inner, limit }
    }

    fn check(&self) -> Result<(), ReadError> {
        if self.limit.is_some_and(TimeLimit::passed) { Err(ReadError::Cancelled) } else { Ok(()) }
    }
}

impl ByteSource for TimedSource<'_> {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.check()?;
        let read = self.inner.read_exact_at(offset, buf);
        self.check()?;
        read
    }
    fn is_hole(&self, offset: u64, len: u64) -> bool {
        self.inner.is_hole(offset, len)
    }
    fn first_read(&self) -> u64 {
        self.inner.first_read()
    }
    fn sized_reads(&self) -> bool {
        self.inner.sized_reads()
    }
    fn round_trips(&self) -> bool {
        self.inner.round_trips()
    }
    fn read_append(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        self.check()?;
        let read = self.inner.read_append(offset, len, buf);
        self.check()?;
        read
    }
    fn read_optional_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, ReadError> {
        self.check()?;
        let read = self.inner.read_optional_at(offset, buf);
        self.check()?;
        read
    }
}

/// Validates one input under the time limit: a worker thread when there is
/// one (told to stop when the limit passes, then abandoned: a read blocked
/// in the kernel cannot be interrupted, but it cannot keep the process
/// alive either), on the calling thread otherwise.
pub fn validate_input(input: &Input, settings: &Settings) -> Validation {
    validate_reading(input, settings, Read::AsNeeded)
}

/// [`validate_input`], keeping what `read` says of the metadata.
fn validate_reading(input: &Input, settings: &Settings, read: Read) -> Validation {
    let started = Instant::now();
    Validation { started, ..validate_timed(input, settings, read) }
}

/// How much of a file's metadata a validation keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// What the settings need after the report (with a report-only
    /// validator, none: a run under `--container-only` checks no split
    /// set), and a shard's validation for its set.
    AsNeeded,
    /// A shard's metadata and parse, always: for its set's checks.
    Shard,
    /// The validation, whatever the file is.
    Kept,
}

fn validate_timed(input: &Input, settings: &Settings, read: Read) -> Validation {
    let special = input
        .path()
        .is_some_and(|p| gio::kind_of(p).is_ok_and(|k| !matches!(k, FileKind::Regular | FileKind::Directory)));
    let timeout =
        settings.timeout.or_else(|| (special && settings.policy.special_files).then_some(SPECIAL_FILE_TIMEOUT));
    let cancel = Arc::new(AtomicBool::new(false));
    let Some(timeout) = timeout else {
        // No time limit: nothing to give up on, so no worker thread (a
        // thread per file is most of the cost of a folder of small files).
        return validate_now(input, settings, &cancel, read);
    };
    let (tx, rx) = mpsc::sync_channel(1);
    let job = (input.clone(), settings.clone(), Arc::clone(&cancel));
    let spawned = std::thread::Builder::new().name("validate".into()).spawn(move || {
        let (input, settings, cancel) = job;
        // The receiver is gone when the time limit passed first.
        let _ = tx.send(validate_now(&input, &settings, &cancel, read));
    });
    if spawned.is_err() {
        // No thread to be had: validate here, without a time limit.
        return validate_now(input, settings, &cancel, read);
    }
    match rx.recv_timeout(timeout) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            cancel.store(true, Ordering::Relaxed);
            let secs = timeout.as_secs_f64();
            Validation::unreadable(if special && settings.timeout.is_none() {
                format!("no answer from the special file within {secs} s; gave up on it")
            } else {
                format!("timed out after {secs} s (the time limit per file); gave up on the file")
            })
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Validation::unreadable("the validation worker stopped without a result".into())
        }
    }
}

fn validate_now(input: &Input, settings: &Settings, cancel: &AtomicBool, read: Read) -> Validation {
    // A URL: the file's time limit and the set's deadline, besides the
    // opener's own.
    let now = Instant::now();
    let until = [settings.deadline, settings.timeout.and_then(|t| now.checked_add(t))].into_iter().flatten().min();
    let opened = match input.open(&settings.policy, settings.opener.as_deref(), until) {
        Ok(o) => o,
        Err(f) => return Validation { not_found: f.not_found, ..Validation::unreadable(f.message) },
    };
    let mut v = validate_open(opened.source(), input, settings, cancel, read, &|| opened.before_data());
    // What reading a URL cost, in the summary.
    if let (Outcome::Report(r, _), Some(remote)) = (&mut v.outcome, opened.remote_summary()) {
        r.summary.remote = Some(remote);
    }
    v
}

/// Validates an open source: metadata, then the data scan when asked
/// (after `before_data` agrees).
fn validate_open(
    src: &dyn ByteSource,
    input: &Input,
    settings: &Settings,
    cancel: &AtomicBool,
    read: Read,
    before_data: &dyn Fn() -> Result<(), String>,
) -> Validation {
    // A set's checks read a shard's metadata and parse, a data scan where
    // the data lies, a pin the metadata's hash: never report only then.
    let needs_more = read != Read::AsNeeded || settings.check_data.is_some() || settings.metadata_hash;
    let keeping;
    let validator = match needs_more && settings.validator.is_report_only() {
        true => {
            keeping = settings.validator.clone().report_only(false);
            &keeping
        }
        false => &settings.validator,
    };
    // A projector, adapter or control vector asks for the models it pairs
    // with as its checks reach the pairing: found then, in the run's
    // `--with` models or its folder, and the file validated once.
    let find = || companion::find(input, settings);
    let mut validated = match validator.validate_pairing(src, Some(&find)) {
        Ok(v) => v,
        Err(e) => return Validation::unreadable(e.to_string()),
    };
    if !validator.is_report_only() {
        // What it is as a model, for a file of the run that pairs with it.
        companion::remember(input, &validated, settings);
    }
    // Where the data lies, from the validation's parse, only when a later
    // step reads the data or hashes the metadata.
    let layout = (settings.check_data.is_some() || settings.metadata_hash).then(|| validated.layout());
    let metadata_sha256 = match (&layout, settings.metadata_hash) {
        (Some(l), true) => l.metadata_end.and_then(|end| config::metadata_sha256(&validated.metadata, end)),
        _ => None,
    };
    let tensors = settings.check_data.as_ref().and(layout.map(|l| l.tensors));
    let data = match (&settings.check_data, tensors) {
        (Some(data_opts), Some(tensors)) => {
            if let Err(why) = before_data() {
                return Validation::unreadable(why);
            }
            let total: u64 = tensors.iter().map(|t| t.nbytes).fold(0, u64::saturating_add);
            let bar = settings.progress.as_ref().map(|p| p.begin(&input.shown(), total.min(src.len())));
            let inc = |n| {
                if let Some(b) = &bar {
                    b.inc(n);
                }
            };
            let scanned = data_scan::check_data(src, &tensors, data_opts, &inc, Some(cancel));
            if let Some(b) = &bar {
                b.finish();
            }
            match scanned {
                Ok(data) => Some(data),
                Err(e) => return Validation::unreadable(format!("during the data scan: {e}")),
            }
        }
        _ => None,
    };
    let options = validator.options();
    let mut profiles = std::mem::take(&mut validated.profiles);
    let mut data = data;
    if let Some(data) = &mut data {
        for r in &mut profiles {
            data.clone().merge_into(r, &Options { profile: r.profile, ..options.clone() });
        }
        data.merge_into(&mut validated.report, options);
    }
    // Kept for a shard (its set's checks) or when asked; else the report
    // is moved out and the metadata freed now.
    let shard = validated.report.summary.split.is_some();
    let keep = read == Read::Kept || (shard && !validator.is_report_only());
    let (report, validated) = match keep {
        true => (validated.report.clone(), Some(validated)),
        false => (validated.report, None),
    };
    Validation {
        outcome: Outcome::Report(Box::new(report), data.map(Box::new)),
        profiles,
        validated,
        metadata_sha256,
        not_found: false,
        started: Instant::now(),
    }
}

/// Validates the split set `input` (already validated as `first`) belongs
/// to: its shards ([`Input::shards`]; for a URL, a `404` means absent, and
/// all are read by one deadline from the first shard's start), each as a
/// file under the time limit, then the set. A set named by URL with too
/// many shards is the given shard alone, the others missing, with the
/// reason in the set's `examined`. A shard's validation is taken from
/// `known` where the run has it already (a shard that is also an input of
/// the run, validated beside this one) instead of validating it again.
pub fn validate_set(
    input: &Input,
    first: Validation,
    settings: &Settings,
    known: &mut dyn FnMut(&Input) -> Option<Validation>,
) -> SetRun {
    let (shards, refused) = match input.shards() {
        Ok(shards) => (shards, None),
        Err(why) => (vec![input.clone()], Some(why)),
    };
    // A set named by URL: one deadline for all its shards.
    let mut settings = settings.clone();
    if let (Some(opener), Input::Url(_)) = (&settings.opener, input) {
        let until = first.started.checked_add(opener.file_deadline()).unwrap_or(first.started);
        settings.deadline = Some(settings.deadline.map_or(until, |d| d.min(until)));
    }
    let settings = &settings;
    let mut first = Some(first);
    let members: Vec<(Input, Validation)> = shards
        .into_iter()
        .map(|shard| {
            let v = if &shard == input { first.take() } else { known(&shard) };
            // A shard validated for its report only kept no metadata: the
            // set reads it again.
            let v = v.filter(|v| !v.is_shard() || v.validated.is_some());
            let v = v.unwrap_or_else(|| match settings.deadline {
                Some(d) if Instant::now() >= d => Validation::unreadable(
                    "not requested: the split set's deadline passed (one deadline for all its shards)".into(),
                ),
                _ => validate_reading(&shard, settings, Read::Shard),
            });
            (shard, v)
        })
        .filter(|(shard, v)| shard == input || !v.not_found)
        .collect();
    let names: Vec<String> = members.iter().map(|(shard, _)| shard.shard_name()).collect();
    let inputs: Vec<ShardInput<'_>> = members
        .iter()
        .zip(&names)
        .map(|((_, v), name)| ShardInput {
            name,
            file_len: v.validated.as_ref().map_or(0, Validated::file_len),
            report: v.outcome.report(),
            profiles: &v.profiles,
            validated: v.validated.as_ref(),
        })
        .collect();
    let validator = &settings.validator;
    let mut report = split_set::check_set(&inputs, validator.options(), validator.judges_every_profile());
    if let Some(why) = &refused {
        let mut profiles = std::mem::take(&mut report.profiles);
        for r in std::iter::once(&mut report).chain(profiles.iter_mut()) {
            r.valid = false;
            r.summary.examined.retain(|e| e.layer != "split");
            r.summary.examined.insert(0, Examined::partly("split", why.clone()));
        }
        report.profiles = profiles;
    }
    SetRun { members, report }
}

/// A run: the settings, and the policy applied to each report after
/// validation (the config's levels per path, its suppressions and pins,
/// then a baseline).
#[derive(Debug, Default)]
pub struct Pipeline {
    /// What every file is validated with (the options' levels are those of
    /// the command line; the config's come first for each path).
    pub settings: Settings,
    /// `gguf-validate.toml`, when one applies.
    pub config: Option<Config>,
    /// Findings accepted earlier, set aside.
    pub baseline: Option<Baseline>,
    /// Collect the identities of every finding for a new baseline
    /// ([`Pipeline::run`] returns them).
    pub collect_baseline: bool,
    /// Set to stop a run before its next file (files under way finish).
    pub cancel: Arc<AtomicBool>,
}

impl Pipeline {
    /// A run with `settings` and no config.
    pub fn new(settings: Settings) -> Pipeline {
        Pipeline { settings, ..Pipeline::default() }
    }

    /// The settings for one input: the config's levels for its path first,
    /// then the run's own overrides.
    pub fn settings_for(&self, input: &Input) -> Settings {
        let mut s = self.settings.clone();
        if let Some(c) = &self.config {
            let levels: Vec<(RuleId, Level)> = c.levels_for(&input.config_path());
            s.validator = self.settings.validator.with_levels_first(levels);
        }
        s
    }

    /// Validates one input (a shard without its set), keeping the
    /// validation ([`Validation::validated`]) for a step after the report
    /// unless the validator gives the report only.
    pub fn validate(&self, input: &Input) -> Validation {
        let settings = self.settings_for(input);
        let read = if settings.validator.is_report_only() { Read::AsNeeded } else { Read::Kept };
        let mut v = validate_reading(input, &settings, read);
        self.finish(input, &mut v, &mut Vec::new());
        v
    }

    /// After validation: the config's suppressions, then the baseline.
    fn finish(&self, input: &Input, v: &mut Validation, baseline_out: &mut Vec<String>) {
        let Outcome::Report(report, _) = &mut v.outcome else { return };
        let settings = self.settings_for(input);
        let opts = settings.validator.options();
        let shown = input.json_name();
        // The report, and judging every profile each profile's: the same policy.
        for r in std::iter::once(&mut **report).chain(v.profiles.iter_mut()) {
            let opts = Options { profile: r.profile, ..opts.clone() };
            if let Some(c) = &self.config {
                c.apply(&input.config_path(), r, &opts, v.metadata_sha256.as_deref(), config::today());
            }
            if let Some(b) = &self.baseline {
                b.apply(&shown, r, &opts);
            }
        }
        if self.collect_baseline {
            baseline_out.extend(Baseline::of_report(&shown, report));
        }
    }

    /// Validates `inputs` with `jobs` workers (one input, or one job: on
    /// the calling thread) and hands each file, then each split set after
    /// its shards, to `each` in input order. A shard brings its siblings
    /// (unless only containers are checked); a set named again through
    /// another of its shards is not validated twice, and a sibling given as
    /// an input too is validated once (the set takes that validation). `each` may stop the
    /// run with `ControlFlow::Break`, and so may [`Pipeline::cancel`]
    /// between windows. Returns the baseline identities when
    /// [`Pipeline::collect_baseline`] is set.
    pub fn run<E>(
        &self,
        inputs: &[Input],
        jobs: usize,
        mut each: impl FnMut(Item<'_>) -> ControlFlow<E>,
    ) -> Result<Vec<String>, E> {
        let mut baseline_out = Vec::new();
        let mut done: HashSet<Input> = HashSet::new();
        let pool = if jobs > 1 && inputs.len() > 1 {
            rayon::ThreadPoolBuilder::new().num_threads(jobs).build().ok()
        } else {
            None
        };
        companion::note_run(inputs, &self.settings);
        let one = |input: &Input| validate_input(input, &self.settings_for(input));
        // A model named with `--with` that is an input too: validated first,
        // so that the projectors, adapters and control vectors of the run
        // pair with what its own validation read, whatever the order.
        let mut early: Vec<(Input, Validation)> = Vec::new();
        if !self.settings.validator.options().container_only && !self.settings.with.is_empty() {
            let with: Vec<Input> = self.settings.with.iter().map(Input::identity).collect();
            for input in inputs {
                let id = input.identity();
                if with.contains(&id) && !early.iter().any(|(e, _)| *e == id) {
                    early.push((id, one(input)));
                }
            }
        }
        for window in inputs.chunks(jobs.saturating_mul(WINDOW_PER_JOB).max(1)) {
            if self.cancel.load(Ordering::Relaxed) {
                break;
            }
            // Validated already: as a shard of a set an earlier window
            // checked (not again), or first (taken as it is). Identities
            // (a path resolved through links) only when either may hold one.
            let mut validations: Vec<Option<Validation>> = Vec::with_capacity(window.len());
            let mut ids: Vec<Option<Input>> = Vec::with_capacity(window.len());
            let mut todo = Vec::new();
            for (at, input) in window.iter().enumerate() {
                let (taken, seen) = match done.is_empty() && early.is_empty() {
                    true => (None, false),
                    false => {
                        let id = input.identity();
                        let taken = early.iter().position(|(e, _)| *e == id).map(|i| early.swap_remove(i).1);
                        let seen = done.contains(&id);
                        ids.resize(at, None);
                        ids.push(Some(id));
                        (taken, seen)
                    }
                };
                if taken.is_none() && !seen {
                    todo.push(at);
                }
                validations.push(taken);
            }
            let of = |at: &usize| window.get(*at).map(one);
            let fresh: Vec<Option<Validation>> = match &pool {
                Some(pool) if todo.len() > 1 => {
                    use rayon::prelude::*;
                    pool.install(|| todo.par_iter().map(of).collect())
                }
                _ => todo.iter().map(of).collect(),
            };
            for (at, v) in todo.iter().zip(fresh) {
                if let Some(slot) = validations.get_mut(*at) {
                    *slot = v;
                }
            }
            for (at, input) in window.iter().enumerate() {
                let Some(mut v) = validations.get_mut(at).and_then(Option::take) else { continue };
                let seen = |id: &Input| done.contains(id);
                if !done.is_empty()
                    && ids.get(at).and_then(Option::as_ref).map_or_else(|| seen(&input.identity()), seen)
                {
                    continue;
                }
                self.finish(input, &mut v, &mut baseline_out);
                if self.settings.validator.options().container_only || !v.is_shard() {
                    let item = Item::File { input, outcome: &v.outcome, profiles: &v.profiles, set: None };
                    if let ControlFlow::Break(e) = each(item) {
                        return Err(e);
                    }
                    continue;
                }
                // A sibling shard given later in this window was validated
                // with it: the set takes that validation.
                let mut known = |shard: &Input| {
                    let id = shard.identity();
                    let later = window.iter().enumerate().skip(at.saturating_add(1));
                    let (pos, _) = later.into_iter().find(|(_, w)| w.identity() == id)?;
                    validations.get_mut(pos)?.take()
                };
                let mut set = validate_set(input, v, &self.settings, &mut known);
                for (member, v) in &mut set.members {
                    if member != input {
                        self.finish(member, v, &mut baseline_out);
                    }
                }
                for (member, v) in &set.members {
                    done.insert(member.identity());
                    let item = Item::File {
                        input: member,
                        outcome: &v.outcome,
                        profiles: &v.profiles,
                        set: Some(&set.report.name),
                    };
                    if let ControlFlow::Break(e) = each(item) {
                        return Err(e);
                    }
                }
                if let ControlFlow::Break(e) = each(Item::Set(&set.report)) {
                    return Err(e);
                }
            }
        }
        Ok(baseline_out)
    }
}
