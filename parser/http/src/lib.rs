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
//!
//! One module per concern, each depending only on those listed above it:
//!
//! - `options`: [`HttpOptions`], how remote files are fetched;
//! - `error`: [`RemoteError`] and how failures become one;
//! - `response`: what an answer's status and headers say (`Retry-After`,
//!   `Content-Range`);
//! - `hub`: what a hub says of a file ([`Probe`]);
//! - `rate_limit`: the pacing of requests per host (the rate cap, and the
//!   pauses servers ask for);
//! - `client`: [`Client`], one request with its redirects and retries, and
//!   [`Client::probe`];
//! - `cache`: the fetched ranges a source keeps;
//! - `source`: [`HttpSource`] and [`Client::open`];
//! - `scripted`: a client answered by a script, for the fuzz target and
//!   tests;
//! - `opener`: [`Opener`], the library's [`UrlOpener`].
//!
//! [`ByteSource`]: gguf_validate_core::io::ByteSource
//! [`ByteSource::first_read`]: gguf_validate_core::io::ByteSource::first_read
//! [`ReadError::Changed`]: gguf_validate_core::io::ReadError::Changed
//! [`UrlOpener`]: gguf_validate_core::remote::UrlOpener
//! [`redact_text`]: gguf_validate_core::remote::redact_text
//! [`limits::REMOTE_CACHE_BYTES`]: gguf_validate_core::limits::REMOTE_CACHE_BYTES
//! [`limits::REMOTE_MAX_REDIRECTS`]: gguf_validate_core::limits::REMOTE_MAX_REDIRECTS
//! [`limits::REMOTE_MAX_RETRY_AFTER_SECS`]: gguf_validate_core::limits::REMOTE_MAX_RETRY_AFTER_SECS
#![forbid(unsafe_code)]

mod cache;
mod client;
mod error;
mod hub;
mod opener;
mod options;
mod rate_limit;
mod response;
#[doc(hidden)]
pub mod scripted;
mod source;

pub use client::Client;
pub use error::{RemoteError, RemoteErrorKind};
pub use hub::Probe;
pub use opener::Opener;
pub use options::HttpOptions;
pub use source::HttpSource;
