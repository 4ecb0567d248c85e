//! The `gguf-validate-http` crate: the I/O layer for remote files: [`HttpSource`], a [`ByteSource`] read
//! with HTTP range requests.
//!
//! - **Size.** The first request asks for the first
//!   [`HttpOptions::first_read`] bytes; the file's length comes from its
//!   `Content-Range` (a `206`) or `Content-Length` (a `200`), and a `416`
//!   with `bytes */0` is an empty file. Validation then reads the metadata
//!   by doubling ([`ByteSource::first_read`]), each read one request for
//!   the bytes not yet fetched.
//! - **No byte twice.** Fetched ranges are kept (up to
//!   [`limits::REMOTE_CACHE_BYTES`]), so the first request is not repeated
//!   when the validator reads the same bytes; [`HttpSource::release_cache`]
//!   drops them before a data scan, whose reads are served once each.
//! - **Servers that ignore `Range`** answer `200` with the whole file: that
//!   one response is read as a stream, only as far as the reads go, and
//!   dropped when the source is (the connection is closed, the rest never
//!   read). Such a source reads forward only: data scans are refused.
//! - **A file replaced while it is read** is detected: every later range
//!   request carries `If-Range` (the strong `ETag`, else `Last-Modified`),
//!   and an answer with the whole file, another `ETag` or another length is
//!   [`ReadError::Changed`].
//! - **Redirects** are followed here (at most
//!   [`limits::REMOTE_MAX_REDIRECTS`]), never from `https` to `http`;
//!   `--header` values and the hub token go only to the origin they are
//!   for, so a redirect to a CDN on another host never carries them. Later
//!   reads go straight to where the redirects led (a signed CDN URL); when
//!   it stops answering (`401`, `403`, `410`: the signature expired) the
//!   original URL is resolved again.
//! - **Failures that may pass** (connection errors, timeouts, `408`, `429`,
//!   `5xx` gateway errors) are retried with exponential backoff, honouring
//!   `Retry-After` up to [`limits::REMOTE_MAX_RETRY_AFTER_SECS`]; `404` and
//!   the other statuses fail at once with the status. A `Retry-After` past
//!   what is left of the deadline fails at once (status and wait asked).
//! - **Deadlines.** Besides the per-read timeout, each request (its
//!   redirects, status lines and headers, `1xx` interim answers, and its
//!   body) has a deadline ([`HttpOptions::request_deadline`]), and each
//!   source one for all its requests, retries and sleeps
//!   ([`HttpOptions::file_deadline`], or an earlier one given to
//!   [`Client::open_until`], as for the shards of a set). A server sending
//!   a byte a second holds a file no longer than that.
//! - **Nothing secret is shown**: messages name hosts and statuses, and any
//!   text from the HTTP library goes through [`redact_text`].
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ureq::Agent;
use ureq::Body;
use ureq::http::Response;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};

use gguf_validate_core::io::{ByteSource, ReadError};
use gguf_validate_core::limits;
use gguf_validate_core::remote::{OpenFailure, RemoteSource, RemoteSummary, Url, UrlOpener, redact_text};

/// How remote files are fetched.
#[derive(Clone)]
pub struct HttpOptions {
    /// Request headers (`--header 'K: V'`), sent to the origin (scheme,
    /// host, port) of the URL being read and dropped on a redirect to any
    /// other origin.
    pub headers: Vec<(String, String)>,
    /// A bearer token and the URL of the origin it is for (`HF_TOKEN` for
    /// the hub at `HF_ENDPOINT`): sent as `Authorization: Bearer` to that
    /// origin only, unless `headers` has an `Authorization` of its own.
    pub token: Option<(Url, String)>,
    /// PEM certificates trusted besides the platform's roots (`--ca-cert`).
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// Retries of a request that failed in a way that may pass.
    pub retries: u32,
    /// Wait before the first retry (doubled for each next one).
    pub backoff: Duration,
    /// Time to connect, and to wait for any read from the server.
    pub timeout: Duration,
    /// Most time for one request: its redirects, headers and body.
    pub request_deadline: Duration,
    /// Most time for everything read from one source (its requests,
    /// retries and backoff sleeps), from when it is opened.
    pub file_deadline: Duration,
    /// Idle connections kept per host (set to the number of files read at
    /// once).
    pub connections: usize,
    /// Bytes asked for by the first request (then doubling).
    pub first_read: u64,
    /// Requests spent on optional reads (padding) per source.
    pub optional_requests: u32,
    /// Longest `Retry-After` waited for (asking for more than the deadline
    /// leaves fails at once).
    pub retry_after_cap: Duration,
    /// Most requests per second to one host (origin), across every source
    /// of this client; `None` for no cap. A server's `RateLimit` headers
    /// saying no requests are left pause that host until their reset (at
    /// most [`limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS`]), whatever the cap.
    pub max_rate_per_host: Option<f64>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            headers: Vec::new(),
            token: None,
            extra_roots_pem: Vec::new(),
            retries: limits::REMOTE_RETRIES,
            backoff: Duration::from_millis(limits::REMOTE_BACKOFF_MS),
            timeout: Duration::from_secs(limits::REMOTE_TIMEOUT_SECS),
            request_deadline: Duration::from_secs(limits::REMOTE_TIMEOUT_SECS),
            file_deadline: Duration::from_secs(limits::REMOTE_FILE_DEADLINE_SECS),
            connections: 4,
            first_read: limits::REMOTE_FIRST_READ,
            optional_requests: limits::REMOTE_OPTIONAL_REQUESTS,
            retry_after_cap: Duration::from_secs(limits::REMOTE_MAX_RETRY_AFTER_SECS),
            max_rate_per_host: None,
        }
    }
}

/// Header names and the token's origin only: values are never shown.
impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("headers", &self.headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .field("token_for", &self.token.as_ref().map(|(u, _)| u.authority()))
            .field("extra_roots_pem", &self.extra_roots_pem.len())
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .field("timeout", &self.timeout)
            .field("request_deadline", &self.request_deadline)
            .field("file_deadline", &self.file_deadline)
            .field("connections", &self.connections)
            .field("first_read", &self.first_read)
            .field("optional_requests", &self.optional_requests)
            .field("retry_after_cap", &self.retry_after_cap)
            .field("max_rate_per_host", &self.max_rate_per_host)
            .finish()
    }
}

/// What kind of failure a [`RemoteError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteErrorKind {
    /// `404` or `410`: there is no such file.
    NotFound,
    /// Another HTTP status that is not a success.
    Status,
    /// The connection, DNS, TLS or a timeout.
    Network,
    /// An answer that breaks HTTP's rules (a bad `Content-Range`, no length).
    Protocol,
    /// A request that cannot be made (bad URL, refused redirect, no roots).
    Refused,
    /// The source's deadline passed, or a `Retry-After` asks to wait past it.
    Deadline,
}

/// Why a remote file could not be opened. The message names hosts and
/// statuses, never a query string or a credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteError {
    /// The kind.
    pub kind: RemoteErrorKind,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// A request ran out of its time (`--http-timeout`).
    pub timed_out: bool,
    message: String,
}

impl RemoteError {
    fn new(kind: RemoteErrorKind, message: impl Into<String>) -> RemoteError {
        RemoteError { kind, status: None, timed_out: false, message: redact_text(&message.into()) }
    }

    /// A request that ran out of its time.
    fn timeout(message: impl Into<String>) -> RemoteError {
        RemoteError { timed_out: true, ..RemoteError::new(RemoteErrorKind::Network, message) }
    }

    fn status(status: u16, from: &Url, requested: &Url) -> RemoteError {
        let kind = if matches!(status, 404 | 410) { RemoteErrorKind::NotFound } else { RemoteErrorKind::Status };
        let reason = reason(status);
        let via = if from.same_origin(requested) {
            String::new()
        } else {
            format!(" (from {} after a redirect)", from.authority())
        };
        let hint = match status {
            401 | 403 => "; a private or gated repository needs HF_TOKEN or --header 'Authorization: Bearer ...'",
            _ => "",
        };
        RemoteError {
            kind,
            status: Some(status),
            timed_out: false,
            message: format!("HTTP {status} {reason}{via}{hint}"),
        }
    }
}

impl RemoteError {
    /// A stable name of what went wrong, for tables of many files:
    /// `not_found`, `rate_limited` (a `429` that retries did not get past),
    /// `server_error` (a `5xx`: the server's own trouble, which passes),
    /// `http_status` (another status), `network`, `protocol`, `refused`,
    /// `timeout`.
    pub fn class(&self) -> &'static str {
        match (self.kind, self.status) {
            (RemoteErrorKind::NotFound, _) => "not_found",
            (RemoteErrorKind::Status | RemoteErrorKind::Deadline, Some(429)) => "rate_limited",
            (RemoteErrorKind::Status, Some(500..=599)) => "server_error",
            (RemoteErrorKind::Status, _) => "http_status",
            (RemoteErrorKind::Network, _) => "network",
            (RemoteErrorKind::Protocol, _) => "protocol",
            (RemoteErrorKind::Refused, _) => "refused",
            (RemoteErrorKind::Deadline, _) => "timeout",
        }
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RemoteError {}

/// An HTTP client for remote files: one connection pool, the TLS roots and
/// the options, shared (cheaply cloned) by every [`HttpSource`] of a run.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    agent: Agent,
    opts: HttpOptions,
    roots: usize,
    /// When each host (`scheme://host:port`) may next be sent a request
    /// (the rate cap, and `RateLimit`/`Retry-After` pauses); at most
    /// [`limits::REMOTE_MAX_PACED_HOSTS`] hosts are remembered.
    pacer: Mutex<BTreeMap<String, Instant>>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("opts", &self.inner.opts).field("roots", &self.inner.roots).finish()
    }
}

impl Client {
    /// A client with the platform's root certificates (the system store;
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR` replace it, as for OpenSSL) and
    /// `opts.extra_roots_pem`, rustls with ring's cryptography, and the
    /// proxy of `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` (with `NO_PROXY`).
    /// Fails when an extra root holds no certificate.
    pub fn new(opts: HttpOptions) -> Result<Client, String> {
        let mut roots: Vec<Certificate<'static>> = Vec::new();
        let native = rustls_native_certs::load_native_certs();
        for c in &native.certs {
            roots.push(Certificate::from_der(c.as_ref()).to_owned());
        }
        for (i, pem) in opts.extra_roots_pem.iter().enumerate() {
            let before = roots.len();
            for item in ureq::tls::parse_pem(pem) {
                if let Ok(PemItem::Certificate(c)) = item {
                    roots.push(c.to_owned());
                }
            }
            if roots.len() == before {
                return Err(format!("extra root certificate file {} holds no PEM certificate", i.saturating_add(1)));
            }
        }
        let n_roots = roots.len();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = TlsConfig::builder()
            .provider(TlsProvider::Rustls)
            .root_certs(RootCerts::Specific(Arc::new(roots)))
            .unversioned_rustls_crypto_provider(provider)
            .build();
        let config = agent_config(&opts, ureq::Proxy::try_from_env(), Some(tls));
        let pacer = Mutex::new(BTreeMap::new());
        Ok(Client { inner: Arc::new(ClientInner { agent: config.new_agent(), opts, roots: n_roots, pacer }) })
    }

    /// The options.
    pub fn options(&self) -> &HttpOptions {
        &self.inner.opts
    }

    /// Opens a remote file: one request for its first bytes, which tells
    /// its length. `404`/`410` are [`RemoteErrorKind::NotFound`]. Every
    /// read of it ends by [`HttpOptions::file_deadline`] from now.
    pub fn open(&self, url: &Url) -> Result<HttpSource, RemoteError> {
        self.open_until(url, None)
    }

    /// [`Client::open`] with a deadline that may be earlier than the
    /// file's own (the one of a split set, shared by its shards).
    pub fn open_until(&self, url: &Url, deadline: Option<Instant>) -> Result<HttpSource, RemoteError> {
        let now = Instant::now();
        let own = now.checked_add(self.inner.opts.file_deadline).unwrap_or(now);
        let deadline = deadline.map_or(own, |d| d.min(own));
        HttpSource::open(self.clone(), url.clone(), None, deadline)
    }

    /// [`Client::open_until`] for a file already [probed](Client::probe):
    /// its first request goes straight to where the probe's redirect
    /// pointed (one round trip less), and what the hub said is kept.
    pub fn open_probed(&self, url: &Url, probe: &Probe, deadline: Option<Instant>) -> Result<HttpSource, RemoteError> {
        let now = Instant::now();
        let own = now.checked_add(self.inner.opts.file_deadline).unwrap_or(now);
        let deadline = deadline.map_or(own, |d| d.min(own));
        HttpSource::open(self.clone(), url.clone(), Some(probe), deadline)
    }

    /// Sends the request (following redirects, retrying what may pass) and
    /// returns the final answer, where it came from, and what the hub said
    /// on the way.
    fn get(&self, req: &Req<'_>, stats: &Stats) -> Result<(Response<Body>, Url, Hub), RemoteError> {
        let opts = &self.inner.opts;
        let mut attempt = 0u32;
        let mut timeouts = 0u32;
        loop {
            let result = self.chain(req, stats);
            let (after, status) = match &result {
                Ok((resp, _, _)) if retryable_status(resp.status().as_u16()) => {
                    (retry_after(resp), Some(resp.status().as_u16()))
                }
                // A request that ran out of its time is tried again at
                // most REMOTE_TIMEOUT_RETRIES times: the wait stays a small
                // multiple of --http-timeout however many retries are set.
                Err(e) if e.timed_out && timeouts >= limits::REMOTE_TIMEOUT_RETRIES => return result,
                Err(e) if e.kind == RemoteErrorKind::Network => {
                    timeouts = timeouts.saturating_add(u32::from(e.timed_out));
                    (None, None)
                }
                _ => return result,
            };
            if attempt >= opts.retries {
                return result;
            }
            let left = req.deadline.saturating_duration_since(Instant::now());
            if let (Some(asked), Some(status)) = (after, status)
                && asked > left
            {
                let at = result.as_ref().map_or_else(|_| req.url.authority(), |(_, u, _)| u.authority());
                return Err(RemoteError {
                    kind: RemoteErrorKind::Deadline,
                    status: Some(status),
                    timed_out: false,
                    message: format!(
                        "HTTP {status} {} from {at}: the server asks to retry after {} s, past this file's deadline ({} s left); gave up at once",
                        reason(status),
                        asked.as_secs(),
                        left.as_secs()
                    ),
                });
            }
            let backoff = opts.backoff.saturating_mul(2u32.saturating_pow(attempt));
            let asked = after.map(|a| a.min(opts.retry_after_cap));
            let wait =
                asked.map_or(backoff, |a| a.max(backoff)).min(Duration::from_millis(limits::REMOTE_MAX_BACKOFF_MS));
            if wait >= left {
                // No time to wait and try again: the last answer stands.
                return result;
            }
            std::thread::sleep(wait);
            attempt = attempt.saturating_add(1);
        }
    }

    /// One request and its redirects (up to the first one to another
    /// origin when `req.same_origin_only`, whose answer is returned).
    fn chain(&self, req: &Req<'_>, stats: &Stats) -> Result<(Response<Body>, Url, Hub), RemoteError> {
        let opts = &self.inner.opts;
        let mut at = req.url.clone();
        let mut hub = Hub::default();
        let start = Instant::now();
        let until = start.checked_add(opts.request_deadline).map_or(req.deadline, |d| d.min(req.deadline));
        for _ in 0..=limits::REMOTE_MAX_REDIRECTS {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(deadline_error(req, &at, until));
            }
            self.pace(&at, until).map_err(|wait| {
                RemoteError::new(
                    RemoteErrorKind::Deadline,
                    format!(
                        "{} asks for a pause of {} s (rate limit), past this file's deadline; gave up at once",
                        at.authority(),
                        wait.as_secs()
                    ),
                )
            })?;
            let request =
                if req.head { self.inner.agent.head(at.as_request()) } else { self.inner.agent.get(at.as_request()) };
            let mut r = request.config().timeout_global(Some(left)).build().header("Accept-Encoding", "identity");
            if let Some((a, b)) = req.range {
                r = r.header("Range", format!("bytes={a}-{b}"));
            }
            if let Some(v) = req.if_range {
                r = r.header("If-Range", v);
            }
            let mut authorization = false;
            if at.same_origin(req.origin) {
                for (k, v) in &opts.headers {
                    authorization |= k.eq_ignore_ascii_case("authorization");
                    r = r.header(k.as_str(), v.as_str());
                }
            }
            if let Some((hub, token)) = &opts.token
                && !authorization
                && at.same_origin(hub)
            {
                r = r.header("Authorization", format!("Bearer {token}"));
            }
            stats.requests.fetch_add(1, Ordering::Relaxed);
            let resp = r.call().map_err(|e| match e {
                ureq::Error::Timeout(ureq::Timeout::Global) => deadline_error(req, &at, until),
                e => transport_error(&e, &at),
            })?;
            self.note_limits(&at, &resp);
            hub.note(&resp);
            let status = resp.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                return Ok((resp, at, hub));
            }
            let location = header(&resp, "location").ok_or_else(|| {
                RemoteError::new(RemoteErrorKind::Protocol, format!("HTTP {status} without a Location"))
            })?;
            let next = at
                .join(&location)
                .map_err(|e| RemoteError::new(RemoteErrorKind::Protocol, format!("a redirect to a bad URL: {e}")))?;
            if at.scheme == "https" && next.scheme != "https" {
                return Err(RemoteError::new(
                    RemoteErrorKind::Refused,
                    format!("refused a redirect from https to http (to {})", next.authority()),
                ));
            }
            if req.same_origin_only && !next.same_origin(&at) {
                hub.location = Some(next);
                return Ok((resp, at, hub));
            }
            at = next;
        }
        Err(RemoteError::new(
            RemoteErrorKind::Protocol,
            format!("more than {} redirects", limits::REMOTE_MAX_REDIRECTS),
        ))
    }
}

impl Client {
    /// Waits until `at`'s host may be sent a request (the rate cap and any
    /// pause a server asked for), and books the next slot. Fails with the
    /// wait when it would pass `until`.
    fn pace(&self, at: &Url, until: Instant) -> Result<(), Duration> {
        let opts = &self.inner.opts;
        let gap = opts
            .max_rate_per_host
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(|r| Duration::from_secs_f64((1.0 / r).min(limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS as f64)));
        let key = format!("{}://{}", at.scheme, at.authority());
        let slot = {
            let mut pacer = self.inner.pacer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = Instant::now();
            let free = pacer.get(&key).copied().filter(|t| *t > now).unwrap_or(now);
            if gap.is_some() || free > now {
                if pacer.len() >= limits::REMOTE_MAX_PACED_HOSTS && !pacer.contains_key(&key) {
                    // Forget the hosts whose slots passed; never grow past the bound.
                    pacer.retain(|_, t| *t > now);
                }
                if pacer.len() < limits::REMOTE_MAX_PACED_HOSTS || pacer.contains_key(&key) {
                    pacer.insert(key, free.checked_add(gap.unwrap_or_default()).unwrap_or(free));
                }
            }
            free
        };
        let now = Instant::now();
        if slot <= now {
            return Ok(());
        }
        if slot >= until {
            return Err(slot.saturating_duration_since(now));
        }
        std::thread::sleep(slot.saturating_duration_since(now));
        Ok(())
    }

    /// A server's word on its rate limit: `RateLimit` (`r=` requests left,
    /// `t=` seconds to the reset; the IETF draft's structured form) or
    /// `RateLimit-Remaining` with `RateLimit-Reset`, and a `429`'s or
    /// `503`'s `Retry-After`: when nothing is left, the host is paused for
    /// other requests too (at most [`limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS`]
    /// for `RateLimit`, [`HttpOptions::retry_after_cap`] for `Retry-After`).
    fn note_limits(&self, at: &Url, resp: &Response<Body>) {
        let status = resp.status().as_u16();
        let pause = match rate_limit(resp) {
            Some((0, reset)) => Some(reset.min(Duration::from_secs(limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS))),
            // The retry's own wait, as `get` honours it.
            _ if matches!(status, 429 | 503) => retry_after(resp).map(|a| a.min(self.inner.opts.retry_after_cap)),
            _ => None,
        };
        let Some(pause) = pause else { return };
        let Some(until) = Instant::now().checked_add(pause) else { return };
        let key = format!("{}://{}", at.scheme, at.authority());
        let mut pacer = self.inner.pacer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pacer.len() < limits::REMOTE_MAX_PACED_HOSTS || pacer.contains_key(&key) {
            let slot = pacer.entry(key).or_insert(until);
            *slot = (*slot).max(until);
        }
    }

    /// Sends a `HEAD` for `url` (following redirects within its origin, not
    /// to another: the hub's redirect to its content server carries what
    /// the hub knows) and says what it learnt: one request per hop, no
    /// body. `404`/`410` are [`RemoteErrorKind::NotFound`].
    pub fn probe(&self, url: &Url, deadline: Option<Instant>) -> Result<Probe, RemoteError> {
        let now = Instant::now();
        let own = now.checked_add(self.inner.opts.file_deadline).unwrap_or(now);
        let deadline = deadline.map_or(own, |d| d.min(own));
        let stats = Stats::default();
        let req = Req { url, origin: url, range: None, if_range: None, deadline, head: true, same_origin_only: true };
        let (resp, at, hub) = self.get(&req, &stats)?;
        let status = resp.status().as_u16();
        if !matches!(status, 200..=299 | 301 | 302 | 303 | 307 | 308) {
            return Err(RemoteError::status(status, &at, url));
        }
        let len = header(&resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
        Ok(Probe {
            size: hub.linked_size.or(if hub.location.is_none() { len } else { None }),
            revision: hub.revision,
            sha256: hub.linked_etag.as_deref().and_then(sha256_of_etag),
            location: hub.location,
            requests: stats.requests.load(Ordering::Relaxed),
        })
    }
}

/// What a `HEAD` said of a file ([`Client::probe`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// Its length: `X-Linked-Size`, or the `Content-Length` of a file
    /// served where it was asked for.
    pub size: Option<u64>,
    /// The revision the hub resolved it to (`X-Repo-Commit`).
    pub revision: Option<String>,
    /// Its SHA-256 (lowercase hex), from `X-Linked-Etag` (LFS files).
    pub sha256: Option<String>,
    /// Where its bytes are (the redirect to another origin), if elsewhere.
    pub location: Option<Url>,
    /// Requests sent.
    pub requests: u64,
}

/// The SHA-256 in an `ETag` (`"<64 hex>"`, maybe weak), if it is one.
fn sha256_of_etag(etag: &str) -> Option<String> {
    let v = etag.trim().trim_start_matches("W/").trim_matches('"');
    (v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())).then(|| v.to_ascii_lowercase())
}

/// `RateLimit: ...;r=REMAINING;t=RESET` (or `remaining=`/`reset=`), else
/// `RateLimit-Remaining` and `RateLimit-Reset`: requests left and seconds
/// to the reset.
fn rate_limit(resp: &Response<Body>) -> Option<(u64, Duration)> {
    let num = |v: &str| v.trim().trim_matches('"').parse::<u64>().ok();
    if let Some(v) = header(resp, "ratelimit") {
        let (mut left, mut reset) = (None, None);
        for part in v.split([';', ',']) {
            let Some((k, val)) = part.split_once('=') else { continue };
            match k.trim().to_ascii_lowercase().as_str() {
                "r" | "remaining" => left = num(val),
                "t" | "reset" => reset = num(val),
                _ => {}
            }
        }
        if let (Some(l), Some(t)) = (left, reset) {
            return Some((l, Duration::from_secs(t)));
        }
    }
    let left = header(resp, "ratelimit-remaining").and_then(|v| num(&v))?;
    let reset = header(resp, "ratelimit-reset").and_then(|v| num(&v))?;
    Some((left, Duration::from_secs(reset)))
}

/// What a hub says on the way to a file (the first of each in a chain).
#[derive(Clone, Debug, Default)]
struct Hub {
    revision: Option<String>,
    linked_etag: Option<String>,
    linked_size: Option<u64>,
    /// A redirect to another origin not followed (a probe's).
    location: Option<Url>,
}

impl Hub {
    fn note(&mut self, resp: &Response<Body>) {
        if self.revision.is_none() {
            self.revision = header(resp, "x-repo-commit");
        }
        if self.linked_etag.is_none() {
            self.linked_etag = header(resp, "x-linked-etag");
        }
        if self.linked_size.is_none() {
            self.linked_size = header(resp, "x-linked-size").and_then(|v| v.trim().parse::<u64>().ok());
        }
    }
}

/// The agent's settings besides TLS and proxy: no redirects followed by
/// ureq (they are followed here), statuses as answers, the per-read
/// timeout, the header size limit, the pool.
fn agent_config(opts: &HttpOptions, proxy: Option<ureq::Proxy>, tls: Option<TlsConfig>) -> ureq::config::Config {
    let connections = opts.connections.max(1);
    let builder = Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(opts.timeout))
        .timeout_per_read(Some(opts.timeout))
        .user_agent(format!("gguf-validate/{}", env!("CARGO_PKG_VERSION")))
        .max_response_header_size(limits::REMOTE_MAX_HEADER_BYTES)
        .max_idle_connections(connections.saturating_mul(2))
        .max_idle_connections_per_host(connections)
        .proxy(proxy);
    match tls {
        Some(tls) => builder.tls_config(tls).build(),
        None => builder.build(),
    }
}

/// One request to make.
struct Req<'a> {
    url: &'a Url,
    /// The origin `--header` values are for (the input's).
    origin: &'a Url,
    range: Option<(u64, u64)>,
    if_range: Option<&'a str>,
    /// The source's deadline: no request, retry or sleep goes past it.
    deadline: Instant,
    /// A `HEAD` rather than a `GET`.
    head: bool,
    /// Stop at a redirect to another origin (and return it).
    same_origin_only: bool,
}

/// The error for a request that ran out of time: the source's deadline
/// ([`RemoteErrorKind::Deadline`], not retried) or the request's own
/// ([`RemoteErrorKind::Network`], retried while time is left).
fn deadline_error(req: &Req<'_>, at: &Url, until: Instant) -> RemoteError {
    let host = at.authority();
    if until >= req.deadline {
        RemoteError::new(RemoteErrorKind::Deadline, format!("{host}: gave up: the deadline for this file passed"))
    } else {
        RemoteError::timeout(format!(
            "{host}: timed out: the request (headers and body) took longer than its time (--http-timeout)"
        ))
    }
}

/// The reason phrase of a status, or nothing.
fn reason(status: u16) -> &'static str {
    ureq::http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("")
}

fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured).
fn retry_after(resp: &Response<Body>) -> Option<Duration> {
    header(resp, "retry-after").and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs)
}

fn header(resp: &Response<Body>, name: &str) -> Option<String> {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

fn transport_error(e: &ureq::Error, at: &Url) -> RemoteError {
    use ureq::Error as E;
    let host = at.authority();
    match e {
        E::Io(io) => RemoteError::new(RemoteErrorKind::Network, format!("{host}: {io}")),
        E::Timeout(t) => RemoteError::timeout(format!("{host}: timed out ({t})")),
        E::HostNotFound => RemoteError::new(RemoteErrorKind::Network, format!("{host}: host not found")),
        E::ConnectionFailed => RemoteError::new(RemoteErrorKind::Network, format!("{host}: connection failed")),
        E::Rustls(t) => RemoteError::new(RemoteErrorKind::Refused, format!("{host}: TLS: {t}")),
        E::Tls(t) => RemoteError::new(RemoteErrorKind::Refused, format!("{host}: TLS: {t}")),
        E::BadUri(_) | E::Http(_) => {
            RemoteError::new(RemoteErrorKind::Refused, format!("{host}: a request that cannot be made"))
        }
        other => RemoteError::new(RemoteErrorKind::Protocol, format!("{host}: {other}")),
    }
}

/// A `Content-Range`: the first and last byte (`None` for `*`), and the
/// file's length (`None` for `*`).
type ContentRange = (Option<(u64, u64)>, Option<u64>);

/// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`), or
/// `bytes */TOTAL`.
fn content_range(resp: &Response<Body>) -> Option<ContentRange> {
    let v = header(resp, "content-range")?;
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (span, total) = rest.split_once('/')?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse::<u64>().ok()?),
    };
    let span = match span.trim() {
        "*" => None,
        s => {
            let (a, b) = s.split_once('-')?;
            let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
            if b < a {
                return None;
            }
            Some((a, b))
        }
    };
    Some((span, total))
}

/// Requests and bytes of one source.
#[derive(Debug, Default)]
struct Stats {
    requests: AtomicU64,
    bytes: AtomicU64,
}

/// Fetched ranges, disjoint, kept up to a byte budget.
#[derive(Debug, Default)]
struct Cache {
    chunks: BTreeMap<u64, Vec<u8>>,
    bytes: u64,
    off: bool,
}

impl Cache {
    /// Copies what is cached from `at` on into `out`; the bytes copied.
    fn copy(&self, at: u64, out: &mut [u8]) -> usize {
        let Some((start, chunk)) = self.chunks.range(..=at).next_back() else { return 0 };
        let Ok(skip) = usize::try_from(at.saturating_sub(*start)) else { return 0 };
        let Some(have) = chunk.get(skip..) else { return 0 };
        let n = have.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), have.get(..n)) {
            dst.copy_from_slice(src);
        }
        n
    }

    /// Where the next cached chunk after `at` starts.
    fn next_start(&self, at: u64) -> Option<u64> {
        self.chunks.range(at.saturating_add(1)..).next().map(|(s, _)| *s)
    }

    /// Keeps `bytes` fetched at `at`, unless they overlap a kept chunk or
    /// the budget is spent.
    fn insert(&mut self, at: u64, bytes: &[u8]) {
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        let end = at.saturating_add(len);
        if self.off || bytes.is_empty() || self.bytes.saturating_add(len) > limits::REMOTE_CACHE_BYTES {
            return;
        }
        let before = self.chunks.range(..end).next_back();
        if before.is_some_and(|(s, c)| s.saturating_add(u64::try_from(c.len()).unwrap_or(u64::MAX)) > at) {
            return;
        }
        self.bytes = self.bytes.saturating_add(len);
        self.chunks.insert(at, bytes.to_vec());
    }
}

/// The one response of a server that ignores `Range`, read forward.
struct Stream {
    reader: Box<dyn Read + Send>,
    pos: u64,
}

struct State {
    /// Where range requests go (the end of the last redirect chain).
    location: Url,
    /// Whether `location` was already resolved again after it failed.
    re_resolved: bool,
    cache: Cache,
    stream: Option<Stream>,
}

/// A remote file read with HTTP range requests (see the module docs).
pub struct HttpSource {
    client: Client,
    url: Url,
    len: u64,
    etag: Option<String>,
    last_modified: Option<String>,
    revision: Option<String>,
    sha256: Option<String>,
    ranges: bool,
    state: Mutex<State>,
    stats: Stats,
    optional_left: AtomicU32,
    /// No request, retry or sleep for this source goes past it.
    deadline: Instant,
}

impl fmt::Debug for HttpSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSource")
            .field("url", &self.url.shown())
            .field("len", &self.len)
            .field("ranges", &self.ranges)
            .finish()
    }
}

impl HttpSource {
    fn open(client: Client, url: Url, probe: Option<&Probe>, deadline: Instant) -> Result<HttpSource, RemoteError> {
        if url.scheme == "https" && client.inner.roots == 0 {
            return Err(RemoteError::new(
                RemoteErrorKind::Refused,
                "no trusted root certificates: install the system's CA bundle (ca-certificates), set SSL_CERT_FILE, or pass --ca-cert FILE",
            ));
        }
        let stats = Stats::default();
        let first = client.inner.opts.first_read.max(1);
        let start = probe.and_then(|p| p.location.clone()).unwrap_or_else(|| url.clone());
        let req = Req {
            url: &start,
            origin: &url,
            range: Some((0, first.saturating_sub(1))),
            if_range: None,
            deadline,
            head: false,
            same_origin_only: false,
        };
        let (resp, location, mut hub) = client.get(&req, &stats)?;
        if let Some(p) = probe {
            hub.revision = hub.revision.or_else(|| p.revision.clone());
            hub.linked_etag = hub.linked_etag.or_else(|| p.sha256.clone());
        }
        let (revision, sha256) = (hub.revision, hub.linked_etag.as_deref().and_then(sha256_of_etag));
        let status = resp.status().as_u16();
        let etag = header(&resp, "etag");
        let last_modified = header(&resp, "last-modified");
        let protocol = |m: String| RemoteError::new(RemoteErrorKind::Protocol, m);
        let mut cache = Cache::default();
        let (len, ranges, stream) = match status {
            206 => {
                let (Some((a, b)), Some(total)) = content_range(&resp).unwrap_or((None, None)) else {
                    return Err(protocol("HTTP 206 without a Content-Range that gives the file's length".into()));
                };
                if a != 0 || b >= total || b >= first {
                    return Err(protocol(format!(
                        "HTTP 206 with bytes {a}-{b}/{total} for a request of 0-{}",
                        first.saturating_sub(1)
                    )));
                }
                let n = b.saturating_add(1);
                let mut buf = vec![0u8; usize::try_from(n).map_err(|_| protocol("a range too large".into()))?];
                let mut reader = resp.into_body().into_reader();
                read_body(&mut reader, &mut buf, &stats).map_err(|(_, e)| body_error(&location, &e, deadline))?;
                cache.insert(0, &buf);
                (total, true, None)
            }
            200 => {
                let Some(len) = header(&resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok()) else {
                    return Err(protocol(
                        "the server ignores range requests and gives no Content-Length: the file's size is unknown"
                            .into(),
                    ));
                };
                let reader: Box<dyn Read + Send> = Box::new(resp.into_body().into_reader());
                (len, false, Some(Stream { reader, pos: 0 }))
            }
            416 => match content_range(&resp) {
                Some((None, Some(0))) => (0, true, None),
                _ => return Err(protocol("HTTP 416 for the first bytes of a file that is not empty".into())),
            },
            s => return Err(RemoteError::status(s, &location, &url)),
        };
        let optional = client.inner.opts.optional_requests;
        let state = State { location, re_resolved: false, cache, stream };
        let src = HttpSource {
            client,
            url,
            len,
            etag,
            last_modified,
            revision,
            sha256,
            ranges,
            state: Mutex::new(state),
            stats,
            optional_left: AtomicU32::new(optional),
            deadline,
        };
        if !ranges {
            // Read the first bytes now, as a range server would have sent.
            let n = first.min(len);
            let mut buf = vec![0u8; usize::try_from(n).unwrap_or(0)];
            src.read_exact_at(0, &mut buf)
                .map_err(|e| RemoteError::new(RemoteErrorKind::Network, format!("{}: {e}", src.url.authority())))?;
        }
        Ok(src)
    }

    /// Whether the server answers range requests (else only a forward
    /// read of one response is possible: no data scan, no hashing).
    pub fn supports_ranges(&self) -> bool {
        self.ranges
    }

    /// What reading cost so far, and what the server said.
    pub fn summary(&self) -> RemoteSummary {
        RemoteSummary {
            url: self.url.shown(),
            bytes_fetched: self.stats.bytes.load(Ordering::Relaxed),
            requests: self.stats.requests.load(Ordering::Relaxed),
            range_requests: self.ranges,
            revision: self.revision.clone(),
            etag: self.etag.clone(),
            sha256: self.sha256.clone(),
        }
    }

    /// Drops the kept ranges and keeps no more: before a data scan or
    /// hashing, whose reads are served once each (memory stays that of
    /// the reads in flight).
    pub fn release_cache(&self) {
        let mut st = self.lock();
        st.cache = Cache { off: true, ..Cache::default() };
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held cannot leave the state torn (it
        // is only ever replaced whole or appended to).
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The validator `If-Range` sends: a strong `ETag`, else `Last-Modified`.
    fn if_range(&self) -> Option<&str> {
        match &self.etag {
            Some(e) if !e.starts_with("W/") => Some(e),
            _ => self.last_modified.as_deref(),
        }
    }

    /// Fetches `[from, from + out.len())` with range requests.
    fn fetch(&self, from: u64, out: &mut [u8]) -> Result<(), ReadError> {
        let to = from.saturating_add(u64::try_from(out.len()).unwrap_or(u64::MAX));
        let mut done = 0usize;
        let mut tries = 0u32;
        let mut timeouts = 0u32;
        while done < out.len() {
            let at = from.saturating_add(u64::try_from(done).unwrap_or(u64::MAX));
            let location = self.lock().location.clone();
            let req = Req {
                url: &location,
                origin: &self.url,
                range: Some((at, to.saturating_sub(1))),
                if_range: self.if_range(),
                deadline: self.deadline,
                head: false,
                same_origin_only: false,
            };
            let (resp, final_url, _) = self.client.get(&req, &self.stats).map_err(|e| io_error(at, &e.to_string()))?;
            if final_url != location {
                self.lock().location = final_url.clone();
            }
            let status = resp.status().as_u16();
            match status {
                206 => {}
                200 => {
                    return Err(self.changed_or(at, &resp, "the server answered a range request with the whole file"));
                }
                416 => {
                    return Err(ReadError::Changed {
                        offset: at,
                        detail: format!("bytes {at}-{} are not in the file any more (HTTP 416)", to.saturating_sub(1)),
                    });
                }
                401 | 403 | 410 if final_url != self.url => {
                    // A signed redirect target that expired: resolve again, once.
                    let mut st = self.lock();
                    if st.re_resolved {
                        return Err(io_error(at, &RemoteError::status(status, &final_url, &self.url).to_string()));
                    }
                    st.re_resolved = true;
                    st.location = self.url.clone();
                    continue;
                }
                404 => {
                    return Err(ReadError::Changed { offset: at, detail: "the file is gone (HTTP 404)".into() });
                }
                s => return Err(io_error(at, &RemoteError::status(s, &final_url, &self.url).to_string())),
            }
            let etag = header(&resp, "etag");
            if let (Some(was), Some(now)) = (&self.etag, &etag)
                && was != now
            {
                return Err(ReadError::Changed { offset: at, detail: format!("its ETag was {was}, it is now {now}") });
            }
            match content_range(&resp) {
                Some((Some((a, b)), total))
                    if a == at && b == to.saturating_sub(1) && total.is_none_or(|t| t == self.len) => {}
                Some((_, Some(total))) if total != self.len => {
                    return Err(ReadError::Changed {
                        offset: at,
                        detail: format!("it had {} bytes, it has {total}", self.len),
                    });
                }
                _ => return Err(io_error(at, "HTTP 206 with another range than the one asked for")),
            }
            let mut reader = resp.into_body().into_reader();
            let part = out.get_mut(done..).unwrap_or_default();
            match read_body(&mut reader, part, &self.stats) {
                Ok(()) => done = out.len(),
                Err((n, e)) => {
                    // The connection broke mid-body: ask for the rest.
                    done = done.saturating_add(n);
                    tries = tries.saturating_add(1);
                    // A body that ran out of the request's time is asked
                    // for again at most REMOTE_TIMEOUT_RETRIES times.
                    let timed_out = is_timeout(&e);
                    timeouts = timeouts.saturating_add(u32::from(timed_out));
                    if tries > self.client.inner.opts.retries
                        || timeouts > limits::REMOTE_TIMEOUT_RETRIES
                        || Instant::now() >= self.deadline
                    {
                        return Err(io_error(at, &body_error(&final_url, &e, self.deadline).to_string()));
                    }
                }
            }
        }
        Ok(())
    }

    /// A `200` to a conditional range request: the file changed when its
    /// validators or length did, else the server stopped honouring ranges.
    fn changed_or(&self, at: u64, resp: &Response<Body>, otherwise: &str) -> ReadError {
        let etag = header(resp, "etag");
        let len = header(resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
        if let (Some(was), Some(now)) = (&self.etag, &etag)
            && was != now
        {
            return ReadError::Changed { offset: at, detail: format!("its ETag was {was}, it is now {now}") };
        }
        if let Some(n) = len.filter(|n| *n != self.len) {
            return ReadError::Changed { offset: at, detail: format!("it had {} bytes, it has {n}", self.len) };
        }
        if self.if_range().is_some() && etag.is_none() {
            return ReadError::Changed { offset: at, detail: "the server no longer matches If-Range".into() };
        }
        io_error(at, otherwise)
    }

    /// Reads `[from, from + out.len())` from the one response of a server
    /// that ignores `Range`: forward only.
    fn read_stream(&self, st: &mut State, from: u64, out: &mut [u8]) -> Result<(), ReadError> {
        let keep = !st.cache.off;
        let State { stream, cache, .. } = st;
        let Some(s) = stream.as_mut() else {
            return Err(io_error(from, "the response of a server that ignores range requests broke off"));
        };
        if s.pos > from {
            return Err(io_error(
                from,
                "the server ignores range requests and these bytes were passed already; download the file to read them",
            ));
        }
        // Skip ahead (keeping what is skipped, within the budget).
        let mut skip = vec![0u8; usize::try_from(limits::SCAN_READ_CHUNK).unwrap_or(1 << 16)];
        while s.pos < from {
            let n = usize::try_from(from.saturating_sub(s.pos)).unwrap_or(usize::MAX).min(skip.len());
            let buf = skip.get_mut(..n).unwrap_or_default();
            if let Err((_, e)) = read_body(&mut s.reader, buf, &self.stats) {
                *stream = None;
                return Err(io_error(from, &body_error(&self.url, &e, self.deadline).to_string()));
            }
            if keep {
                cache.insert(s.pos, buf);
            }
            s.pos = s.pos.saturating_add(u64::try_from(n).unwrap_or(0));
        }
        if let Err((_, e)) = read_body(&mut s.reader, out, &self.stats) {
            *stream = None;
            return Err(io_error(from, &body_error(&self.url, &e, self.deadline).to_string()));
        }
        if keep {
            cache.insert(from, out);
        }
        s.pos = from.saturating_add(u64::try_from(out.len()).unwrap_or(0));
        Ok(())
    }

    /// Fills `buf` from the cache where it can, fetching the rest; `fetch`
    /// says how (a `false` answer declines the read).
    fn read_with(&self, offset: u64, buf: &mut [u8], optional: bool) -> Result<bool, ReadError> {
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let end = offset.checked_add(len).filter(|e| *e <= self.len);
        let Some(end) = end else {
            return Err(ReadError::Shrunk { offset, len, opened_len: self.len });
        };
        let mut at = offset;
        while at < end {
            let i = usize::try_from(at.saturating_sub(offset)).unwrap_or(usize::MAX);
            let rest = buf.get_mut(i..).unwrap_or_default();
            let mut st = self.lock();
            let n = st.cache.copy(at, rest);
            if n > 0 {
                at = at.saturating_add(u64::try_from(n).unwrap_or(0));
                continue;
            }
            let gap_end = st.cache.next_start(at).map_or(end, |s| s.min(end));
            let gap = usize::try_from(gap_end.saturating_sub(at)).unwrap_or(usize::MAX);
            let part = rest.get_mut(..gap).unwrap_or_default();
            if !self.ranges {
                if optional {
                    let next = st.stream.as_ref().map_or(u64::MAX, |s| s.pos);
                    if next > at || gap_end.saturating_sub(next) > limits::SCAN_READ_CHUNK {
                        return Ok(false);
                    }
                }
                self.read_stream(&mut st, at, part)?;
            } else {
                drop(st);
                if optional
                    && self
                        .optional_left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_err()
                {
                    return Ok(false);
                }
                self.fetch(at, part)?;
                self.lock().cache.insert(at, part);
            }
            at = gap_end;
        }
        Ok(true)
    }
}

impl ByteSource for HttpSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.read_with(offset, buf, false).map(|_| ())
    }

    fn first_read(&self) -> u64 {
        self.client.inner.opts.first_read.max(1)
    }

    fn round_trips(&self) -> bool {
        true
    }

    fn read_optional_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, ReadError> {
        self.read_with(offset, buf, true)
    }
}

/// A body that could not be read: the source's deadline when it passed,
/// else what the connection said.
/// A read that ran out of the request's time or the per-read timeout.
fn is_timeout(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|x| x.downcast_ref::<ureq::Error>())
            .is_some_and(|x| matches!(x, ureq::Error::Timeout(_)))
}

fn body_error(at: &Url, e: &io::Error, deadline: Instant) -> RemoteError {
    if Instant::now() >= deadline {
        RemoteError::new(
            RemoteErrorKind::Deadline,
            format!("{}: gave up: the deadline for this file passed", at.authority()),
        )
    } else if is_timeout(e) {
        RemoteError::timeout(format!(
            "{}: timed out reading the body ({e}: the request's deadline or the per-read timeout)",
            at.authority()
        ))
    } else {
        RemoteError::new(RemoteErrorKind::Network, format!("{}: {e}", at.authority()))
    }
}

fn io_error(offset: u64, message: &str) -> ReadError {
    ReadError::Io { offset, error: io::Error::other(redact_text(message)) }
}

/// Reads exactly `out.len()` bytes of a body, counting them; on failure,
/// how many were read.
fn read_body(reader: &mut impl Read, out: &mut [u8], stats: &Stats) -> Result<(), (usize, io::Error)> {
    let mut done = 0usize;
    while done < out.len() {
        let rest = out.get_mut(done..).unwrap_or_default();
        match reader.read(rest) {
            Ok(0) => return Err((done, io::Error::new(io::ErrorKind::UnexpectedEof, "the response ended early"))),
            Ok(n) => {
                done = done.saturating_add(n);
                stats.bytes.fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(())
}

/// A [`Client`] whose server is a script: each connection it opens is
/// answered with the next of a list of raw responses (status lines,
/// headers, bodies: any bytes), then closed. The real request path runs
/// over it (ureq's parser, redirects, retries, deadlines, `Content-Range`,
/// the cache), without a socket: for the fuzz target and tests.
#[doc(hidden)]
pub mod scripted {
    use std::collections::VecDeque;
    use std::net::{Ipv4Addr, SocketAddr};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
    use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, Transport};

    use super::{Client, ClientInner, HttpOptions, agent_config};

    /// What the script's server saw.
    #[derive(Debug, Default)]
    pub struct Served {
        /// Connections opened (one response each).
        pub connections: AtomicU64,
        /// Bytes of requests written to it.
        pub request_bytes: AtomicU64,
        /// Bytes of responses read from it.
        pub response_bytes: AtomicU64,
    }

    #[derive(Debug)]
    struct Script {
        responses: Mutex<VecDeque<Vec<u8>>>,
        served: Arc<Served>,
    }

    /// Hands each connection the next response; none left is a refused
    /// connection.
    #[derive(Debug)]
    struct ScriptConnector(Arc<Script>);

    /// Every host is 127.0.0.1, without a lookup.
    #[derive(Debug)]
    struct Loopback;

    impl Resolver for Loopback {
        fn resolve(
            &self,
            _: &ureq::http::Uri,
            _: &ureq::config::Config,
            _: NextTimeout,
        ) -> Result<ResolvedSocketAddrs, ureq::Error> {
            let mut addrs = self.empty();
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
            Ok(addrs)
        }
    }

    struct ScriptTransport {
        buffers: LazyBuffers,
        response: Vec<u8>,
        at: usize,
        served: Arc<Served>,
    }

    impl std::fmt::Debug for ScriptTransport {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("ScriptTransport").field("at", &self.at).finish()
        }
    }

    impl Connector for ScriptConnector {
        type Out = ScriptTransport;

        fn connect(&self, details: &ConnectionDetails, _: Option<()>) -> Result<Option<ScriptTransport>, ureq::Error> {
            let next = self.0.responses.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop_front();
            let Some(response) = next else { return Err(ureq::Error::ConnectionFailed) };
            self.0.served.connections.fetch_add(1, Ordering::Relaxed);
            let config = details.config;
            Ok(Some(ScriptTransport {
                buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
                response,
                at: 0,
                served: Arc::clone(&self.0.served),
            }))
        }
    }

    impl Transport for ScriptTransport {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }

        fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
            expired(timeout.for_write())?;
            let n = u64::try_from(amount).unwrap_or(u64::MAX);
            self.served.request_bytes.fetch_add(n, Ordering::Relaxed);
            Ok(())
        }

        fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
            expired(timeout.for_read())?;
            let rest = self.response.get(self.at..).unwrap_or_default();
            let input = self.buffers.input_append_buf();
            let n = rest.len().min(input.len());
            if let (Some(dst), Some(src)) = (input.get_mut(..n), rest.get(..n)) {
                dst.copy_from_slice(src);
            }
            self.buffers.input_appended(n);
            self.at = self.at.saturating_add(n);
            self.served.response_bytes.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
            Ok(n > 0)
        }

        fn is_open(&mut self) -> bool {
            false
        }
    }

    /// A timeout that has run out is an error, as for a socket.
    fn expired(t: NextTimeout) -> Result<(), ureq::Error> {
        if t.after.is_zero() { Err(ureq::Error::Timeout(t.reason)) } else { Ok(()) }
    }

    /// A client answered by `responses`, one per connection, and what
    /// it was served.
    pub fn client(opts: HttpOptions, responses: Vec<Vec<u8>>) -> (Client, Arc<Served>) {
        let served = Arc::new(Served::default());
        let script = Arc::new(Script { responses: Mutex::new(responses.into()), served: Arc::clone(&served) });
        let config = agent_config(&opts, None, None);
        let agent = ureq::Agent::with_parts(config, ScriptConnector(script), Loopback);
        (Client { inner: Arc::new(ClientInner { agent, opts, roots: 0, pacer: Mutex::default() }) }, served)
    }
}

impl RemoteSource for HttpSource {
    fn supports_ranges(&self) -> bool {
        HttpSource::supports_ranges(self)
    }

    fn release_cache(&self) {
        HttpSource::release_cache(self);
    }

    fn summary(&self) -> RemoteSummary {
        HttpSource::summary(self)
    }
}

/// The [`UrlOpener`] front ends pass to the library's pipeline: a
/// [`Client`] and the hub `hf://` names resolve against.
#[derive(Clone, Debug)]
pub struct Opener {
    client: Client,
    endpoint: Option<String>,
}

impl Opener {
    /// An opener with `client`, resolving `hf://` against `endpoint`
    /// (`HF_ENDPOINT`; huggingface.co when `None`).
    pub fn new(client: Client, endpoint: Option<String>) -> Opener {
        Opener { client, endpoint }
    }

    /// The opener a front end builds for a run: `opts` with the
    /// certificates of the PEM files `ca_certs` trusted too, `hf://` names
    /// resolved against `HF_ENDPOINT` (huggingface.co when unset), and
    /// `HF_TOKEN` sent to that hub only (unless `opts` has a token). The
    /// command line and the Python bindings both build theirs here.
    pub fn from_env(mut opts: HttpOptions, ca_certs: &[std::path::PathBuf]) -> Result<Opener, String> {
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.is_empty());
        let hub = Url::parse(endpoint.as_deref().unwrap_or(gguf_validate_core::remote::HF_DEFAULT_ENDPOINT))
            .map_err(|e| format!("HF_ENDPOINT: {e}"))?;
        if opts.token.is_none() {
            opts.token =
                std::env::var("HF_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(|t| (hub, t.trim().to_string()));
        }
        for f in ca_certs {
            let shown = gguf_validate_core::pipeline::Input::Path(f.clone()).shown();
            opts.extra_roots_pem.push(std::fs::read(f).map_err(|e| format!("--ca-cert {shown}: {e}"))?);
        }
        let client = Client::new(opts).map_err(|e| format!("--ca-cert: {e}"))?;
        Ok(Opener::new(client, endpoint))
    }

    /// The client (for [`Client::probe`] and [`Client::open_probed`]).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The URL an input names (`hf://` resolved against the hub).
    pub fn resolve(&self, input: &str) -> Result<Url, String> {
        gguf_validate_core::remote::resolve(input, self.endpoint.as_deref()).map(|t| t.url)
    }

    /// Opens a URL or `hf://` name as an [`HttpSource`].
    pub fn open_http(&self, input: &str, deadline: Option<Instant>) -> Result<HttpSource, OpenFailure> {
        let target = gguf_validate_core::remote::resolve(input, self.endpoint.as_deref())
            .map_err(|message| OpenFailure { message, not_found: false })?;
        self.client
            .open_until(&target.url, deadline)
            .map_err(|e| OpenFailure { message: e.to_string(), not_found: e.kind == RemoteErrorKind::NotFound })
    }
}

impl UrlOpener for Opener {
    fn open(&self, input: &str, deadline: Option<Instant>) -> Result<Box<dyn RemoteSource>, OpenFailure> {
        Ok(Box::new(self.open_http(input, deadline)?))
    }

    fn file_deadline(&self) -> Duration {
        self.client.options().file_deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(head: &str) -> Vec<u8> {
        format!("{head}\r\nContent-Length: 0\r\n\r\n").into_bytes()
    }

    fn url() -> Url {
        Url::parse("http://hub.test/org/model/resolve/main/m.gguf").unwrap()
    }

    #[test]
    fn a_probe_stops_at_the_redirect_to_another_origin_with_what_the_hub_said() {
        let sha = "ab".repeat(32);
        let redirect = answer(&format!(
            "HTTP/1.1 302 Found\r\nLocation: http://cdn.test/blob?sig=secret\r\nX-Repo-Commit: {}\r\nX-Linked-Etag: \"{sha}\"\r\nX-Linked-Size: 1234",
            "c".repeat(40)
        ));
        let (client, served) = scripted::client(HttpOptions::default(), vec![redirect]);
        let p = client.probe(&url(), None).unwrap();
        assert_eq!(p.sha256.as_deref(), Some(sha.as_str()));
        assert_eq!(p.size, Some(1234));
        assert_eq!(p.revision.as_deref(), Some("c".repeat(40).as_str()));
        assert_eq!(p.location.as_ref().map(|l| l.host.as_str()), Some("cdn.test"));
        assert_eq!((p.requests, served.connections.load(Ordering::Relaxed)), (1, 1));
        // A file served where it was asked for: its own length, no location.
        let (client, _) =
            scripted::client(HttpOptions::default(), vec![b"HTTP/1.1 200 OK\r\nContent-Length: 77\r\n\r\n".to_vec()]);
        let p = client.probe(&url(), None).unwrap();
        assert_eq!((p.size, p.location, p.sha256), (Some(77), None, None));
    }

    #[test]
    fn probe_failures_have_stable_classes() {
        let (client, _) = scripted::client(HttpOptions::default(), vec![answer("HTTP/1.1 404 Not Found")]);
        assert_eq!(client.probe(&url(), None).unwrap_err().class(), "not_found");
        let opts = HttpOptions { retries: 1, backoff: Duration::from_millis(1), ..HttpOptions::default() };
        let busy = answer("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0");
        let (client, served) = scripted::client(opts, vec![busy.clone(), busy]);
        assert_eq!(client.probe(&url(), None).unwrap_err().class(), "rate_limited");
        assert_eq!(served.connections.load(Ordering::Relaxed), 2, "one retry");
        // A 5xx is the server's trouble (it passes); another status is not.
        let opts = HttpOptions { retries: 0, ..HttpOptions::default() };
        let (client, _) = scripted::client(opts.clone(), vec![answer("HTTP/1.1 503 Service Unavailable")]);
        assert_eq!(client.probe(&url(), None).unwrap_err().class(), "server_error");
        let (client, _) = scripted::client(opts, vec![answer("HTTP/1.1 403 Forbidden")]);
        assert_eq!(client.probe(&url(), None).unwrap_err().class(), "http_status");
    }

    #[test]
    fn a_rate_cap_spaces_the_requests_to_a_host() {
        let ok = answer("HTTP/1.1 200 OK");
        let opts = HttpOptions { max_rate_per_host: Some(20.0), ..HttpOptions::default() };
        let (client, _) = scripted::client(opts, vec![ok; 5]);
        let t = Instant::now();
        for _ in 0..5 {
            client.probe(&url(), None).unwrap();
        }
        // Five requests at 20 a second: four gaps of 50 ms at least.
        assert!(t.elapsed() >= Duration::from_millis(195), "{:?}", t.elapsed());
    }

    #[test]
    fn a_server_out_of_requests_pauses_its_host_within_the_bound() {
        let spent = answer("HTTP/1.1 200 OK\r\nRateLimit: \"api\";r=0;t=1");
        let (client, _) = scripted::client(HttpOptions::default(), vec![spent, answer("HTTP/1.1 200 OK")]);
        client.probe(&url(), None).unwrap();
        let t = Instant::now();
        client.probe(&url(), None).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(900), "{:?}", t.elapsed());
        // A pause past the file's deadline fails at once, as a timeout.
        let long = answer("HTTP/1.1 200 OK\r\nRateLimit-Remaining: 0\r\nRateLimit-Reset: 3600");
        let (client, served) = scripted::client(HttpOptions::default(), vec![long, answer("HTTP/1.1 200 OK")]);
        client.probe(&url(), None).unwrap();
        let t = Instant::now();
        let deadline = Instant::now().checked_add(Duration::from_secs(2));
        let e = client.probe(&url(), deadline).unwrap_err();
        assert_eq!(e.class(), "timeout", "{e}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!(served.connections.load(Ordering::Relaxed), 1, "no request after the pause was asked");
    }
}
