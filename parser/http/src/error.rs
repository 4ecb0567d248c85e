//! The errors: [`RemoteError`] (why a remote file could not be opened or
//! read, with a stable class for tables of many files), and how a
//! transport failure, a body that broke off or a failed read becomes one.
//! Every message goes through [`redact_text`].

use std::fmt;
use std::io;
use std::time::Instant;

use gguf_validate_core::io::ReadError;
use gguf_validate_core::remote::{Url, redact_text};

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
    pub(crate) message: String,
}

impl RemoteError {
    pub(crate) fn new(kind: RemoteErrorKind, message: impl Into<String>) -> RemoteError {
        RemoteError { kind, status: None, timed_out: false, message: redact_text(&message.into()) }
    }

    /// A request that ran out of its time.
    pub(crate) fn timeout(message: impl Into<String>) -> RemoteError {
        RemoteError { timed_out: true, ..RemoteError::new(RemoteErrorKind::Network, message) }
    }

    pub(crate) fn status(status: u16, from: &Url, requested: &Url) -> RemoteError {
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

/// The reason phrase of a status, or nothing.
pub(crate) fn reason(status: u16) -> &'static str {
    ureq::http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("")
}

/// A request that got no answer, as a [`RemoteError`] naming the host.
pub(crate) fn transport_error(e: &ureq::Error, at: &Url) -> RemoteError {
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

/// A read that ran out of the request's time or the per-read timeout.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|x| x.downcast_ref::<ureq::Error>())
            .is_some_and(|x| matches!(x, ureq::Error::Timeout(_)))
}

/// A body that could not be read: the source's deadline when it passed,
/// else what the connection said.
pub(crate) fn body_error(at: &Url, e: &io::Error, deadline: Instant) -> RemoteError {
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

/// A failed read at `offset`, its message redacted.
pub(crate) fn io_error(offset: u64, message: &str) -> ReadError {
    ReadError::Io { offset, error: io::Error::other(redact_text(message)) }
}
