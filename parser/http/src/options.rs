//! The options of a client ([`HttpOptions`]): headers and token, extra
//! roots, retries, timeouts and deadlines, the pool, the first read, the
//! rate cap.

use std::fmt;
use std::time::Duration;

use gguf_validate_core::limits;
use gguf_validate_core::remote::Url;

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
