//! The HTTP client ([`Client`]): the agent (pool, TLS roots, proxy), one
//! request with its redirects and retries (`Client::get`), and the
//! `HEAD` of a hub file ([`Client::probe`]). Opening a file is in
//! `source.rs` ([`Client::open`]), the pacing per host in `rate_limit.rs`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ureq::Agent;
use ureq::Body;
use ureq::http::Response;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};

use gguf_validate_core::limits;
use gguf_validate_core::remote::Url;

use crate::error::{RemoteError, RemoteErrorKind, reason, transport_error};
use crate::hub::{Hub, Probe, sha256_of_etag};
use crate::options::HttpOptions;
use crate::rate_limit::Pacer;
use crate::response::{header, retry_after, retryable_status};

/// An HTTP client for remote files: one connection pool, the TLS roots and
/// the options, shared (cheaply cloned) by every [`HttpSource`](crate::HttpSource) of a run.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

/// What the clones of a [`Client`] share.
pub(crate) struct ClientInner {
    pub(crate) agent: Agent,
    pub(crate) opts: HttpOptions,
    /// How many root certificates are trusted (none: `https` is refused).
    pub(crate) roots: usize,
    /// When each host may next be sent a request.
    pub(crate) pacer: Pacer,
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
        let pacer = Pacer::default();
        Ok(Client { inner: Arc::new(ClientInner { agent: config.new_agent(), opts, roots: n_roots, pacer }) })
    }

    /// The options.
    pub fn options(&self) -> &HttpOptions {
        &self.inner.opts
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

    /// Sends the request (following redirects, retrying what may pass) and
    /// returns the final answer, where it came from, and what the hub said
    /// on the way.
    pub(crate) fn get(&self, req: &Req<'_>, stats: &Stats) -> Result<(Response<Body>, Url, Hub), RemoteError> {
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
            self.inner.pacer.pace(&at, until, opts).map_err(|wait| {
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
            self.inner.pacer.note(&at, &resp, opts);
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

/// Requests and bytes of one source.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) requests: AtomicU64,
    pub(crate) bytes: AtomicU64,
}

/// The agent's settings besides TLS and proxy: no redirects followed by
/// ureq (they are followed here), statuses as answers, the per-read
/// timeout, the header size limit, the pool.
pub(crate) fn agent_config(
    opts: &HttpOptions,
    proxy: Option<ureq::Proxy>,
    tls: Option<TlsConfig>,
) -> ureq::config::Config {
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
pub(crate) struct Req<'a> {
    pub(crate) url: &'a Url,
    /// The origin `--header` values are for (the input's).
    pub(crate) origin: &'a Url,
    pub(crate) range: Option<(u64, u64)>,
    pub(crate) if_range: Option<&'a str>,
    /// The source's deadline: no request, retry or sleep goes past it.
    pub(crate) deadline: Instant,
    /// A `HEAD` rather than a `GET`.
    pub(crate) head: bool,
    /// Stop at a redirect to another origin (and return it).
    pub(crate) same_origin_only: bool,
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use crate::options::HttpOptions;
    use crate::scripted;

    use crate::scripted::tests::{answer, url};

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
}
