//! What a hub says of a file: [`Probe`] (what a `HEAD` said,
//! [`Client::probe`](crate::Client::probe)), `Hub` (the hub's headers noted
//! on the way to a file: revision, linked `ETag` and size) and the SHA-256
//! an `ETag` holds.

use ureq::Body;
use ureq::http::Response;

use gguf_validate_core::remote::Url;

use crate::response::header;

/// What a `HEAD` said of a file ([`Client::probe`](crate::Client::probe)).
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
pub(crate) fn sha256_of_etag(etag: &str) -> Option<String> {
    let v = etag.trim().trim_start_matches("W/").trim_matches('"');
    (v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())).then(|| v.to_ascii_lowercase())
}

/// What a hub says on the way to a file (the first of each in a chain).
#[derive(Clone, Debug, Default)]
pub(crate) struct Hub {
    pub(crate) revision: Option<String>,
    pub(crate) linked_etag: Option<String>,
    pub(crate) linked_size: Option<u64>,
    /// A redirect to another origin not followed (a probe's).
    pub(crate) location: Option<Url>,
}

impl Hub {
    /// Keeps what `resp` says that no earlier answer of the chain said.
    pub(crate) fn note(&mut self, resp: &Response<Body>) {
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
