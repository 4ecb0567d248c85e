//! Validating one file from the command line: open it under the file
//! policy, validate it, scan its data when asked, all in a worker thread
//! under the time limit. Nothing here prints (see `render`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gguf_validate::Options;
use gguf_validate::check_data::{self, DataOptions};
use gguf_validate::io::{self as gio, ByteSource, FileKind, OpenPolicy};
use gguf_validate::split_name;
use gguf_validate::split_set::{self, SetReport, ShardInput};

use crate::cli::ValidateArgs;
use crate::render::{self, FileOutcome};

/// Time allowed to read a FIFO, socket or device (with
/// `--allow-special-files`) when no `--timeout` is given: a writer that
/// never comes must not hang the run.
pub const SPECIAL_FILE_TIMEOUT: Duration = Duration::from_secs(60);

/// What every file of one run is validated with.
#[derive(Clone, Debug)]
pub struct Settings {
    pub options: Options,
    pub policy: OpenPolicy,
    pub check_data: Option<DataOptions>,
    pub timeout: Option<Duration>,
    /// Hash each file's metadata (for config suppressions pinned by sha256).
    pub metadata_hash: bool,
    /// The HTTP client, when an input is a URL.
    pub remote: Option<crate::remote::Remote>,
    /// A deadline for remote reads earlier than the file's own: that of
    /// the split set (named by URL) being read.
    pub deadline: Option<Instant>,
}

impl Settings {
    pub fn from_args(args: &ValidateArgs, options: Options) -> Settings {
        Settings {
            options,
            policy: OpenPolicy { special_files: args.allow_special_files, max_special_bytes: args.special_file_limit },
            check_data: args.check_data.then(|| DataOptions::listing(args.max_data_findings)),
            timeout: args.timeout.map(Duration::from_secs_f64),
            metadata_hash: false,
            remote: None,
            deadline: None,
        }
    }
}

/// One file's result, with what a split set needs of it.
#[derive(Debug)]
pub struct Validation {
    /// What is reported for the file.
    pub outcome: FileOutcome,
    /// Its metadata prefix and length, when it was read.
    pub metadata: Option<(Vec<u8>, u64)>,
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
        matches!(&self.outcome, FileOutcome::Report(r, _) if r.summary.split.is_some())
    }
}

/// A split set: its shards (given or found by name) and the set's report.
#[derive(Debug)]
pub struct SetRun {
    pub members: Vec<(PathBuf, Validation)>,
    pub report: SetReport,
}

/// Validates the split set `path` (already validated as `first`) belongs
/// to: its siblings by name (`NAME-0000k-of-0000n.gguf` in the same
/// folder, at most `limits::MAX_SPLIT_SHARDS`; for a URL, every name the
/// count in its name gives, a `404` meaning absent, at most
/// `limits::REMOTE_MAX_SET_SHARDS` and all by one deadline from the first
/// shard's start), each as a file under the time limit, then the set. A
/// shard whose name does not follow the pattern is a set of one (its
/// siblings cannot be found). A set named by URL with too many shards is
/// the given shard alone, the others missing, with the reason in the
/// set's `examined`.
pub fn validate_set(path: &Path, first: Validation, settings: &Settings) -> SetRun {
    let (paths, refused) = match crate::remote::shard_inputs(path) {
        Some(Ok(paths)) => (paths, None),
        Some(Err(why)) => (vec![path.to_path_buf()], Some(why)),
        None => (split_name::siblings(path).unwrap_or_else(|| vec![path.to_path_buf()]), None),
    };
    // A set named by URL: one deadline for all its shards.
    let mut settings = settings.clone();
    if let (Some(remote), Some(_)) = (&settings.remote, crate::remote::url_of(path)) {
        let until = first.started.checked_add(remote.file_deadline()).unwrap_or(first.started);
        settings.deadline = Some(settings.deadline.map_or(until, |d| d.min(until)));
    }
    let settings = &settings;
    let mut first = Some(first);
    let members: Vec<(PathBuf, Validation)> = paths
        .into_iter()
        .map(|p| {
            let v = if p == path { first.take() } else { None };
            let v = v.unwrap_or_else(|| match settings.deadline {
                Some(d) if Instant::now() >= d => unreadable(
                    "not requested: the split set's deadline passed (one --http-deadline for all its shards)".into(),
                ),
                _ => validate_file(&p, settings),
            });
            (p, v)
        })
        .filter(|(p, v)| p == path || !v.not_found)
        .collect();
    let names: Vec<String> = members.iter().map(|(p, _)| crate::remote::shard_name(p)).collect();
    let inputs: Vec<ShardInput<'_>> = members
        .iter()
        .zip(&names)
        .map(|((_, v), name)| {
            let report = match &v.outcome {
                FileOutcome::Report(r, _) => Some(&**r),
                FileOutcome::Unreadable(_) => None,
            };
            let (metadata, file_len) = v.metadata.as_ref().map_or((&[][..], 0), |(m, l)| (m.as_slice(), *l));
            ShardInput { name, file_len, report, metadata }
        })
        .collect();
    let mut report = split_set::check_set(&inputs, &settings.options);
    if let Some(why) = refused {
        report.valid = false;
        report.summary.examined.retain(|e| e.layer != "split");
        report.summary.examined.insert(0, gguf_validate::report::Examined::partly("split", why));
    }
    SetRun { members, report }
}

/// Validates one file in a worker thread and waits for it at most the
/// time limit. A worker that overruns is told to stop (the data scan
/// checks between batches) and abandoned: a read blocked in the kernel
/// cannot be interrupted, but it cannot keep the process alive either,
/// since the process exits when `main` returns.
pub fn validate_file(path: &Path, settings: &Settings) -> Validation {
    let started = Instant::now();
    Validation { started, ..validate_file_timed(path, settings) }
}

fn validate_file_timed(path: &Path, settings: &Settings) -> Validation {
    let special = gio::kind_of(path).is_ok_and(|k| !matches!(k, FileKind::Regular | FileKind::Directory));
    let timeout =
        settings.timeout.or_else(|| (special && settings.policy.special_files).then_some(SPECIAL_FILE_TIMEOUT));
    let cancel = Arc::new(AtomicBool::new(false));
    if timeout.is_none() {
        // No time limit: nothing to give up on, so no worker thread (a
        // thread per file is most of the cost of a folder of small files).
        return validate_now(path, settings, &cancel);
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let job_path: PathBuf = path.to_path_buf();
    let job_settings = settings.clone();
    let job_cancel = Arc::clone(&cancel);
    let spawned = std::thread::Builder::new().name("validate".into()).spawn(move || {
        let outcome = validate_now(&job_path, &job_settings, &job_cancel);
        // The receiver is gone when the time limit passed first.
        let _ = tx.send(outcome);
    });
    if spawned.is_err() {
        // No thread to be had: validate here, without a time limit.
        return validate_now(path, settings, &cancel);
    }
    let received = match timeout {
        Some(t) => rx.recv_timeout(t).map_err(|e| matches!(e, mpsc::RecvTimeoutError::Timeout)),
        None => rx.recv().map_err(|_| false),
    };
    match received {
        Ok(outcome) => outcome,
        Err(true) => {
            cancel.store(true, Ordering::Relaxed);
            let secs = timeout.map_or(0.0, |t| t.as_secs_f64());
            let why = if special && settings.timeout.is_none() {
                format!("no answer from the special file within {secs} s; gave up on it")
            } else {
                format!("timed out after {secs} s (--timeout); gave up on the file")
            };
            unreadable(why)
        }
        Err(false) => unreadable("the validation worker stopped without a result".into()),
    }
}

fn unreadable(why: String) -> Validation {
    Validation {
        outcome: FileOutcome::Unreadable(why),
        metadata: None,
        metadata_sha256: None,
        not_found: false,
        started: Instant::now(),
    }
}

fn validate_now(path: &Path, settings: &Settings, cancel: &AtomicBool) -> Validation {
    if let Some(url) = crate::remote::url_of(path) {
        return validate_url(url, path, settings, cancel);
    }
    let src = match gio::open(path, &settings.policy) {
        Ok(s) => s,
        Err(e) => return unreadable(e.to_string()),
    };
    validate_source(&src, path, settings, cancel, &|| Ok(()))
}

/// A URL: opened through the run's HTTP client, validated as a file, with
/// what it cost in the summary. A data scan needs a server that honours
/// `Range` (the data section is read in parallel ranges, never kept).
#[cfg(feature = "remote")]
fn validate_url(url: &str, path: &Path, settings: &Settings, cancel: &AtomicBool) -> Validation {
    let Some(remote) = &settings.remote else { return unreadable("no HTTP client for URLs".into()) };
    // The file's time limit (--timeout) and the set's deadline, besides
    // --http-deadline.
    let now = Instant::now();
    let until = [settings.deadline, settings.timeout.and_then(|t| now.checked_add(t))].into_iter().flatten().min();
    let src = match remote.open(url, until) {
        Ok(s) => s,
        Err(f) => return Validation { not_found: f.not_found, ..unreadable(f.message) },
    };
    let before_data = || {
        if !src.supports_ranges() {
            return Err("the server ignores range requests: --check-data reads the data section in ranges (download the file to scan it)".to_string());
        }
        src.release_cache();
        Ok(())
    };
    let mut v = validate_source(&src, path, settings, cancel, &before_data);
    if let FileOutcome::Report(r, _) = &mut v.outcome {
        r.summary.remote = Some(src.summary());
    }
    v
}

#[cfg(not(feature = "remote"))]
fn validate_url(_: &str, _: &Path, _: &Settings, _: &AtomicBool) -> Validation {
    unreadable("this gguf-validate was built without the `remote` feature: URLs cannot be read".into())
}

/// Validates an open source: metadata, then the data scan when asked
/// (after `before_data` agrees).
fn validate_source(
    src: &dyn ByteSource,
    path: &Path,
    settings: &Settings,
    cancel: &AtomicBool,
    before_data: &dyn Fn() -> Result<(), String>,
) -> Validation {
    let validated = match gguf_validate::validate_source(src, &settings.options) {
        Ok(v) => v,
        Err(e) => return unreadable(e.to_string()),
    };
    let mut report = validated.report;
    let tensors = settings.check_data.as_ref().map(|_| check_data::data_tensors(&validated.metadata, src.len()));
    let metadata_sha256 = if settings.metadata_hash {
        gguf_validate::config::metadata_sha256(&validated.metadata, src.len())
    } else {
        None
    };
    // Only a shard's metadata is kept (for the set's checks).
    let metadata = report.summary.split.is_some().then(|| (validated.metadata, src.len()));
    let (Some(data_opts), Some(tensors)) = (&settings.check_data, tensors) else {
        return Validation {
            outcome: FileOutcome::Report(Box::new(report), None),
            metadata,
            metadata_sha256,
            not_found: false,
            started: Instant::now(),
        };
    };
    if let Err(why) = before_data() {
        return unreadable(why);
    }
    let total: u64 = tensors.iter().map(|t| t.nbytes).fold(0, u64::saturating_add);
    let progress = render::Progress::new(total.min(src.len()), &render::display_path(path));
    let scanned = check_data::check_data(src, &tensors, data_opts, &|n| progress.inc(n), Some(cancel));
    progress.finish();
    match scanned {
        Ok(mut data) => {
            data.merge_into(&mut report, &settings.options);
            Validation {
                outcome: FileOutcome::Report(Box::new(report), Some(Box::new(data))),
                metadata,
                metadata_sha256,
                not_found: false,
                started: Instant::now(),
            }
        }
        Err(e) => unreadable(format!("during --check-data: {e}")),
    }
}
