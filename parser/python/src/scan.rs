//! `gguf_validate._native.Scanner`: what `gguf_validate.scan` calls for
//! each file of a fleet. One `Scanner` per process holds one HTTP client,
//! so its rate cap per host and the pauses servers ask for (`RateLimit`,
//! `Retry-After`) hold across every thread of the process.
//!
//! - `probe(url)`: one `HEAD` (the hub's answer: revision, SHA-256, size)
//!   so the scan can tell a copy it has judged already without fetching it.
//! - `scan(url, profiles)`: the metadata read once (starting where the
//!   probe's redirect pointed), validated under each profile
//!   (`pipeline::scan::judge`), with the facts a scan tabulates; judged
//!   against the llama.cpp releases the scanner was made with
//!   (`llama_cpp`: `--llama-cpp R` or `R..` of the command line), if any.
//!
//! `llama_cpp_releases(setting)` checks such a setting before a scan
//! starts: the releases it judges against, oldest first, or a usage error
//! naming the known ones (without a setting: every known release, as the
//! report orders them).
//!
//! Both return JSON text and never raise for a file that cannot be read:
//! the answer carries an `error_class` and an `error` (no credentials, no
//! query strings) instead.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gguf_validate_core::llama_cpp::{Release, Releases};
use gguf_validate_core::pipeline::Outcome;
use gguf_validate_core::pipeline::scan;
use gguf_validate_core::remote::redact_text;
use gguf_validate_core::rules::Profile;
use gguf_validate_core::{Options, Validator};
use gguf_validate_http::{HttpOptions, Opener, Probe};
use pyo3::prelude::*;
use serde_json::{Value, json};

/// Probes kept for the `scan` that follows them (one per file in flight);
/// past this many the oldest are forgotten (a scan then probes again).
const MAX_KEPT_PROBES: usize = 4096;

/// A fleet scanner: one HTTP client for the process (see the module).
#[pyclass(frozen, module = "gguf_validate._native")]
pub struct Scanner {
    opener: Opener,
    timeout: Option<Duration>,
    releases: Option<Releases>,
    probes: Mutex<HashMap<String, Probe>>,
}

/// The timeout only: kept probes hold signed URLs, never shown.
impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("timeout", &self.timeout)
            .field("releases", &self.releases)
            .finish_non_exhaustive()
    }
}

fn usage(message: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(("usage".to_string(), message.into()))
}

/// A `--llama-cpp` setting (`R`, `R..`), or a usage error naming the
/// known releases (as the command line's).
fn releases_of(setting: &str) -> PyResult<Releases> {
    setting.parse::<Releases>().map_err(|e| usage(format!("llama_cpp: {e}")))
}

/// The answer for a file that could not be read, and what trying cost.
fn failed(class: &str, message: &str, requests: u64, bytes: u64) -> String {
    json!({ "error_class": class, "error": redact_text(message), "requests": requests, "bytes": bytes }).to_string()
}

#[pymethods]
impl Scanner {
    /// `rate_per_host`: most requests per second to one host from this
    /// process; `timeout`: seconds per file (its requests, retries and
    /// waits); `connections`: idle connections kept per host; `llama_cpp`:
    /// the llama.cpp releases `strict` is judged against too (`R`, `R..`).
    #[new]
    #[pyo3(signature = (rate_per_host=None, timeout=None, connections=8, llama_cpp=None))]
    fn new(
        rate_per_host: Option<f64>,
        timeout: Option<f64>,
        connections: usize,
        llama_cpp: Option<&str>,
    ) -> PyResult<Scanner> {
        let releases = llama_cpp.map(releases_of).transpose()?;
        if let Some(r) = rate_per_host.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(usage(format!("rate {r}: a positive number of requests per second")));
        }
        let timeout = match timeout {
            Some(t) if !(t.is_finite() && t > 0.0) => {
                return Err(usage(format!("timeout {t}: a positive number of seconds")));
            }
            t => t.map(Duration::from_secs_f64),
        };
        let opts =
            HttpOptions { max_rate_per_host: rate_per_host, connections: connections.max(1), ..HttpOptions::default() };
        let opener = Opener::from_env(opts, &[]).map_err(usage)?;
        Ok(Scanner { opener, timeout, releases, probes: Mutex::new(HashMap::new()) })
    }

    /// One `HEAD`: `{"size", "revision", "sha256", "requests"}`, or
    /// `{"error_class", "error", "requests"}`.
    fn probe(&self, py: Python<'_>, url: &str) -> String {
        py.detach(|| self.probe_now(url))
    }

    /// The file judged under each profile: `{"entries": [the command
    /// line's JSON entry per profile], "facts": {"file_type", "templates":
    /// [[key, sha256], ...]}, "remote": {...}, "requests", "bytes"}`, or
    /// `{"error_class", "error", "requests", "bytes"}`.
    fn scan(&self, py: Python<'_>, url: &str, profiles: Vec<String>) -> PyResult<String> {
        let profiles = profiles
            .iter()
            .map(|name| {
                Profile::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| usage(format!("profile `{name}`")))
            })
            .collect::<PyResult<Vec<Profile>>>()?;
        Ok(py.detach(|| self.scan_now(url, &profiles)))
    }
}

impl Scanner {
    fn deadline(&self) -> Option<Instant> {
        self.timeout.and_then(|t| Instant::now().checked_add(t))
    }

    fn probe_now(&self, url: &str) -> String {
        let target = match self.opener.resolve(url) {
            Ok(u) => u,
            Err(e) => return failed("refused", &e, 0, 0),
        };
        match self.opener.client().probe(&target, self.deadline()) {
            Ok(p) => {
                let answer = json!({
                    "size": p.size, "revision": p.revision, "sha256": p.sha256, "requests": p.requests,
                })
                .to_string();
                let mut kept = self.probes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if kept.len() >= MAX_KEPT_PROBES {
                    kept.clear();
                }
                kept.insert(url.to_string(), p);
                answer
            }
            Err(e) => failed(e.class(), &e.to_string(), 1, 0),
        }
    }

    fn scan_now(&self, url: &str, profiles: &[Profile]) -> String {
        let target = match self.opener.resolve(url) {
            Ok(u) => u,
            Err(e) => return failed("refused", &e, 0, 0),
        };
        let probe = self.probes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(url);
        let client = self.opener.client();
        let deadline = self.deadline();
        let opened = match &probe {
            Some(p) => client.open_probed(&target, p, deadline),
            None => client.open_until(&target, deadline),
        };
        let src = match opened {
            Ok(s) => s,
            Err(e) => return failed(e.class(), &e.to_string(), 1, 0),
        };
        let judged =
            Validator::new(Options::default()).with_every_profile(true).with_llama_cpp(self.releases).validate(&src);
        let summary = src.summary();
        let (requests, bytes) = (summary.requests, summary.bytes_fetched);
        let judged = match judged {
            Ok(j) => j,
            Err(e) => {
                let class =
                    if matches!(e, gguf_validate_core::io::ReadError::Changed { .. }) { "changed" } else { "read" };
                return failed(class, &e.to_string(), requests, bytes);
            }
        };
        let name = target.shown();
        let facts = scan::facts(&judged);
        let entries: Vec<Value> = profiles
            .iter()
            .filter_map(|p| judged.report_under(*p).map(|r| (p, r)))
            .map(|(p, r)| {
                let mut r = r.clone();
                r.summary.remote = Some(summary.clone());
                gguf_validate_core::pipeline::json::file(&name, &Outcome::Report(Box::new(r), None), *p, None)
            })
            .collect();
        json!({
            "entries": entries,
            "facts": { "file_type": facts.file_type, "templates": facts.templates },
            "remote": summary,
            "requests": requests,
            "bytes": bytes,
        })
        .to_string()
    }
}

/// The releases a `--llama-cpp` setting judges against, oldest first
/// (`b4600..`: every known release from b4600 to the newest), or a usage
/// error naming the known ones; without one, every known release.
#[pyfunction]
#[pyo3(signature = (setting=None))]
fn llama_cpp_releases(setting: Option<&str>) -> PyResult<Vec<String>> {
    Ok(match setting {
        Some(s) => releases_of(s)?.iter().map(|r| r.name().to_string()).collect(),
        None => Release::all().map(|r| r.name().to_string()).collect(),
    })
}

/// Adds the scanner to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Scanner>()?;
    m.add_function(wrap_pyfunction!(llama_cpp_releases, m)?)
}
