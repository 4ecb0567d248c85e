//! Files where they live: `http://`, `https://` and `hf://` URLs.
//!
//! Two halves, both in the reading layer (ARCHITECTURE.md, layer 2: they
//! use only `io`, `limits` and `split_name`):
//! - this module (always built, no HTTP dependency) is the front end's
//!   resolution of inputs: which inputs are URLs ([`is_url`]), `hf://`
//!   names resolved to a hub's `resolve/` URL ([`resolve`]), the sibling
//!   shards of a split set named by URL ([`shard_inputs`], at most
//!   [`limits::REMOTE_MAX_SET_SHARDS`]), and redaction: a URL is only ever
//!   shown through [`redact_url`], which drops everything from the first
//!   `?` or `#` (or `%3F`, `%23`) whatever comes before it (a space, a
//!   tab, a newline), and any user name and password ([`Url::shown`],
//!   [`shown`], [`redact_text`] all use it);
//! - the `gguf-validate-http` crate (`parser/http/`) is the I/O layer: its
//!   `HttpSource` is a [`crate::io::ByteSource`] over HTTP range requests,
//!   so every layer above it (validation, split sets, data scans, hashing)
//!   works unchanged on a remote file, and counts what it cost in a
//!   [`RemoteSummary`] (which reports carry). This crate has no HTTP
//!   client.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::time::Duration;
use web_time::Instant;

use serde::Serialize;

use crate::io::ByteSource;

use crate::limits;
use crate::split_name;

/// How a remote file was read: what it cost and what the server said
/// (`gguf_validate_http::HttpSource::summary` fills it in; a report carries it in
/// `report::Summary::remote`). A plain record here, beside the source that
/// counts it, so the reading layer needs nothing from the reporting one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RemoteSummary {
    /// The URL requested, without its query (it may hold a signature) or
    /// user name and password.
    pub url: String,
    /// Bytes of response bodies read (metadata, padding, and with
    /// `--check-data` the tensor data).
    pub bytes_fetched: u64,
    /// HTTP requests sent, redirects and retries included.
    pub requests: u64,
    /// Whether the server answered range requests (else one streaming
    /// GET was read as far as needed, then dropped).
    pub range_requests: bool,
    /// The resolved revision (`X-Repo-Commit` of a Hugging Face hub).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The `ETag` of the file (every range request was conditional on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The file's SHA-256 as its hub gives it (`X-Linked-Etag` of a
    /// Hugging Face hub's LFS file), not checked against the bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A [`ByteSource`] over the network: what the pipeline asks of it beyond
/// reading (the `gguf-validate-http` crate implements it).
pub trait RemoteSource: ByteSource {
    /// Whether the server honours range requests (a data scan needs them).
    fn supports_ranges(&self) -> bool;
    /// Drops the ranges kept so far (before a data scan, whose reads are
    /// served once each).
    fn release_cache(&self);
    /// What reading it cost so far.
    fn summary(&self) -> RemoteSummary;
}

/// Opens URLs for a run (the library has no HTTP client: a front end
/// passes one in, e.g. `gguf_validate_http::Opener`).
pub trait UrlOpener: Send + Sync + std::fmt::Debug {
    /// Opens `input` (an `http(s)://` URL or `hf://` name), to be read by
    /// `deadline` when one is given (a split set's) and by the opener's own
    /// per-file deadline from now.
    fn open(&self, input: &str, deadline: Option<Instant>) -> Result<Box<dyn RemoteSource>, OpenFailure>;
    /// The time allowed for one remote file, or one split set named by URL.
    fn file_deadline(&self) -> Duration;
}

/// Why a URL could not be opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenFailure {
    /// What went wrong (no credentials, no query string).
    pub message: String,
    /// The server says the file is not there (`404`/`410`): a sibling
    /// shard that is left out of its set, like a file not in the folder.
    pub not_found: bool,
}

/// The hub `hf://` names resolve against when `HF_ENDPOINT` is not set.
pub const HF_DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// What a redacted query is shown as.
pub const REDACTED_QUERY: &str = "?[redacted]";

/// Whether an input names a remote file (`http://`, `https://`, `hf://`;
/// any case) rather than a path.
pub fn is_url(input: &str) -> bool {
    scheme_of(input).is_some()
}

/// The scheme an input starts with (`http`, `https`, `hf`), lowercased.
fn scheme_of(input: &str) -> Option<&'static str> {
    ["https", "http", "hf"].into_iter().find(|s| {
        input.len() > s.len().saturating_add(3)
            && input.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s))
            && input.get(s.len()..s.len().saturating_add(3)) == Some("://")
    })
}

/// An absolute `http` or `https` URL, taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: String,
    /// The host as written (lowercased; an IPv6 literal keeps its brackets).
    pub host: String,
    /// The port, when one is written.
    pub port: Option<u16>,
    /// The path, starting with `/`.
    pub path: String,
    /// The query, without its `?`.
    pub query: Option<String>,
}

impl Url {
    /// Parses an absolute `http(s)://host[:port]/path[?query][#fragment]`
    /// (the fragment is dropped). URLs with a user name or password are
    /// refused: credentials go in `--header`, never in a URL that reports
    /// would have to hide.
    pub fn parse(s: &str) -> Result<Url, String> {
        let scheme = match scheme_of(s) {
            Some(sc @ ("http" | "https")) => sc,
            _ => return Err("not an http:// or https:// URL".into()),
        };
        if s.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err("the URL has a space or a control character (percent-encode it)".into());
        }
        let rest = s.get(scheme.len().saturating_add(3)..).unwrap_or_default();
        let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
        let cut = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(cut);
        if authority.contains('@') {
            return Err("URLs with a user name or password are refused; pass credentials in a request header".into());
        }
        let (host, port) = split_authority(authority)?;
        let (path, query) = match tail.split_once('?') {
            Some((p, q)) => (p, Some(q.to_string())),
            None => (tail, None),
        };
        let path = if path.is_empty() { "/".to_string() } else { path.to_string() };
        Ok(Url { scheme: scheme.to_string(), host, port, path, query })
    }

    /// The port in effect (the scheme's default when none is written).
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(if self.scheme == "https" { 443 } else { 80 })
    }

    /// `host` or `host:port` as written.
    pub fn authority(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.host),
            None => self.host.clone(),
        }
    }

    /// Whether `other` has the same origin (scheme, host, port): the test
    /// for sending credentials to it.
    pub fn same_origin(&self, other: &Url) -> bool {
        self.scheme == other.scheme && self.host == other.host && self.port_or_default() == other.port_or_default()
    }

    /// The URL to request (query included, fragment dropped).
    pub fn as_request(&self) -> String {
        match &self.query {
            Some(q) => format!("{}://{}{}?{q}", self.scheme, self.authority(), self.path),
            None => format!("{}://{}{}", self.scheme, self.authority(), self.path),
        }
    }

    /// The URL as reports show it: [`redact_url`] of it (the query
    /// replaced by [`REDACTED_QUERY`]).
    pub fn shown(&self) -> String {
        redact_url(&self.as_request())
    }

    /// The URL a `Location` header points to, relative to this one.
    pub fn join(&self, location: &str) -> Result<Url, String> {
        let location = location.trim();
        let first = location.find(['/', '?', '#']).unwrap_or(location.len());
        if location.get(..first).is_some_and(|head| head.contains(':')) {
            // An absolute URL: only http(s) is followed.
            return Url::parse(location);
        }
        if let Some(rest) = location.strip_prefix("//") {
            return Url::parse(&format!("{}://{rest}", self.scheme));
        }
        let base = format!("{}://{}", self.scheme, self.authority());
        if location.starts_with('/') {
            return Url::parse(&format!("{base}{location}"));
        }
        if location.starts_with('?') {
            return Url::parse(&format!("{base}{}{location}", self.path));
        }
        let dir = self.path.rsplit_once('/').map_or("", |(d, _)| d);
        Url::parse(&format!("{base}{dir}/{location}"))
    }
}

/// `host[:port]` of an authority, the host lowercased.
fn split_authority(authority: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or("an IPv6 host without its closing `]`")?;
        let host = format!("[{v6}]");
        match after.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if after.is_empty() => (host, None),
            None => return Err("text after an IPv6 host".into()),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("the URL has no host".into());
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(p.parse::<u16>().map_err(|_| "the URL's port is not a number from 0 to 65535".to_string())?),
    };
    Ok((host.to_ascii_lowercase(), port))
}

/// An input resolved to the URL to request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// What to request.
    pub url: Url,
    /// Whether it came from an `hf://` name.
    pub hub: bool,
}

/// Resolves an input: an `http(s)://` URL as it is; `hf://ORG/REPO/FILE[@REVISION]`
/// (or `hf://ORG/REPO@REVISION/FILE`, as `huggingface_hub` writes it;
/// `hf://datasets/...` for a dataset) to
/// `{endpoint}/ORG/REPO/resolve/{REVISION or main}/FILE`, with the
/// revision percent-encoded (`refs/pr/1` is `refs%2Fpr%2F1`). `endpoint`
/// is `HF_ENDPOINT`, else [`HF_DEFAULT_ENDPOINT`].
pub fn resolve(input: &str, endpoint: Option<&str>) -> Result<Target, String> {
    match scheme_of(input) {
        Some("hf") => {}
        Some(_) => return Url::parse(input).map(|url| Target { url, hub: false }),
        None => return Err("not a URL".into()),
    }
    let rest = input.get(5..).unwrap_or_default();
    let (kind, rest) = match rest.split_once('/') {
        Some((k @ ("datasets" | "spaces"), r)) => (Some(k), r),
        _ => (None, rest),
    };
    let mut parts = rest.splitn(3, '/');
    let (Some(org), Some(repo), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("an hf:// name is hf://ORG/REPO/FILE[@REVISION]".into());
    };
    let (repo, file, revision) = match repo.split_once('@') {
        Some((r, rev)) => (r, file, Some(rev)),
        None => match file.rsplit_once('@') {
            Some((f, rev)) => (repo, f, Some(rev)),
            None => (repo, file, None),
        },
    };
    if org.is_empty() || repo.is_empty() || file.is_empty() || revision == Some("") {
        return Err("an hf:// name is hf://ORG/REPO/FILE[@REVISION]".into());
    }
    let endpoint = endpoint.filter(|e| !e.is_empty()).unwrap_or(HF_DEFAULT_ENDPOINT).trim_end_matches('/');
    let kind = kind.map(|k| format!("{k}/")).unwrap_or_default();
    let revision = percent_encode(revision.unwrap_or("main"), false);
    let (org, repo, file) = (percent_encode(org, false), percent_encode(repo, false), percent_encode(file, true));
    let url = Url::parse(&format!("{endpoint}/{kind}{org}/{repo}/resolve/{revision}/{file}"))
        .map_err(|e| format!("HF_ENDPOINT: {e}"))?;
    Ok(Target { url, hub: true })
}

/// Percent-encodes all but unreserved characters (and `/` when `keep_slash`).
fn percent_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An input as reports show it: a URL or `hf://` name through
/// [`redact_url`]; anything else unchanged.
pub fn shown(input: &str) -> String {
    match scheme_of(input) {
        None => input.to_string(),
        Some(_) => redact_url(input),
    }
}

/// Where what must not be shown starts: the first `?` or `#`, or their
/// percent-encoded forms `%3F` and `%23` (any case), wherever they are.
fn secret_start(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    (0..b.len()).find(|&i| match b.get(i) {
        Some(b'?' | b'#') => true,
        Some(b'%') => {
            matches!(b.get(i.saturating_add(1)..i.saturating_add(3)), Some([b'3', b'f' | b'F'] | [b'2', b'3']))
        }
        _ => false,
    })
}

/// Whether an authority (after any user information is dropped) is
/// `host` or `host:port` with a port of digits: anything else may be part
/// of a password and is not shown.
fn plain_authority(authority: &str) -> bool {
    let port = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((_, "")) => return true,
            Some((_, after)) => after.strip_prefix(':'),
            None => return false,
        },
        None => authority.rsplit_once(':').map(|(_, p)| p),
    };
    port.is_none_or(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// The one redaction every URL goes through before it is shown: all from
/// the first `?` or `#` (or `%3F`, `%23`) on is replaced by
/// [`REDACTED_QUERY`] (or dropped, for a fragment), whatever precedes it
/// (a space, a tab, a newline: the query of a URL that is not even valid
/// is still a query); for `http(s)`, everything up to the last `@` before
/// it is dropped (a user name and password, even with a `/` in it), and an
/// authority that is not `host[:digits]` is shown as `[redacted]`. An
/// `hf://` name keeps its `@REVISION`.
pub fn redact_url(url: &str) -> String {
    let cut = secret_start(url);
    let (head, tail) = url.split_at(cut.unwrap_or(url.len()));
    let mut out = String::with_capacity(head.len().saturating_add(REDACTED_QUERY.len()));
    match (scheme_of(head), head.find("://")) {
        (Some("http" | "https"), Some(sep)) => {
            let (scheme, body) = head.split_at(sep.saturating_add(3));
            out.push_str(scheme);
            let body = body.rsplit_once('@').map_or(body, |(_, after)| after);
            let end = body.find(['/', '\\']).unwrap_or(body.len());
            let (authority, path) = body.split_at(end);
            out.push_str(if plain_authority(authority) { authority } else { "[redacted]" });
            out.push_str(path);
        }
        _ => out.push_str(head),
    }
    if tail.starts_with('#') {
        return out;
    }
    if !tail.is_empty() {
        out.push_str(REDACTED_QUERY);
    }
    out
}

/// `text` with every `http://`, `https://` or `hf://` URL in it through [`redact_url`]: stripped of its
/// query and of any user name and password: what error messages that may
/// quote a URL (a library's, a server's) go through before anyone sees
/// them.
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let lower = rest.to_ascii_lowercase();
        let Some(at) = [lower.find("http://"), lower.find("https://"), lower.find("hf://")].into_iter().flatten().min()
        else {
            out.push_str(rest);
            return out;
        };
        let (before, url) = rest.split_at(at);
        out.push_str(before);
        let stop = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`');
        let mut end = url.find(stop).unwrap_or(url.len());
        // A query after white space is still this URL's query.
        loop {
            let after = url.get(end..).unwrap_or_default();
            let next = after.trim_start();
            if next.len() == after.len() || secret_start(next) != Some(0) {
                break;
            }
            let skip = after.len().saturating_sub(next.len());
            end = end.saturating_add(skip).saturating_add(next.find(stop).unwrap_or(next.len()));
        }
        let (token, after) = url.split_at(end);
        out.push_str(&redact_url(token));
        rest = after;
    }
}

/// A split set named by URL with more shards than are read for one
/// ([`limits::REMOTE_MAX_SET_SHARDS`]): no sibling is requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyShards {
    /// The count the name gives.
    pub count: u32,
}

impl std::fmt::Display for TooManyShards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the name says the split set has {} shards, more than the {} read for a set named by URL; no other shard was requested",
            self.count,
            limits::REMOTE_MAX_SET_SHARDS
        )
    }
}

/// The shards of the split set a remote input names, in position order,
/// or `None` when its file name is not `NAME-0000k-of-0000n.gguf` with
/// `n` of at least 2. Names are made from the count in the name (a remote
/// folder cannot be listed); a count above
/// [`limits::REMOTE_MAX_SET_SHARDS`] is [`TooManyShards`] (each name would
/// be a request). Each name keeps the input's query (`?download=true`) or
/// `@REVISION`.
pub fn shard_inputs(input: &str) -> Option<Result<Vec<String>, TooManyShards>> {
    let (base, suffix) = match scheme_of(input)? {
        "hf" => match input.rsplit_once('@') {
            // `@REVISION` after the file name (not `REPO@REVISION/...`).
            Some((b, _)) if b.ends_with(".gguf") => input.split_at(b.len()),
            _ => (input, ""),
        },
        _ => match input.find(['?', '#']) {
            Some(q) => input.split_at(q),
            None => (input, ""),
        },
    };
    let name = split_name::parse(base)?;
    if name.count < 2 {
        return None;
    }
    if usize::try_from(name.count).is_ok_and(|n| n > limits::REMOTE_MAX_SET_SHARDS.min(limits::MAX_SPLIT_SHARDS)) {
        return Some(Err(TooManyShards { count: name.count }));
    }
    Some(Ok((0..name.count)
        .map(|k| format!("{}{suffix}", split_name::shard_name(name.prefix, k, name.count)))
        .collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        for u in ["http://h/x.gguf", "HTTPS://h/x", "hf://org/repo/x.gguf"] {
            assert!(is_url(u), "{u}");
        }
        for p in ["model.gguf", "./https://x", "http:/x", "ftp://h/x", "hf://", "https://"] {
            assert!(!is_url(p), "{p}");
        }
    }

    #[test]
    fn a_url_is_taken_apart_and_shown_without_its_query() {
        let u = Url::parse("https://CDN.example:8443/a/b.gguf?X-Amz-Signature=abc#frag").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("cdn.example", Some(8443), "/a/b.gguf"));
        assert_eq!(u.as_request(), "https://cdn.example:8443/a/b.gguf?X-Amz-Signature=abc");
        assert_eq!(u.shown(), "https://cdn.example:8443/a/b.gguf?[redacted]");
        let v6 = Url::parse("http://[::1]:80/x").unwrap();
        assert_eq!((v6.host.as_str(), v6.port_or_default()), ("[::1]", 80));
        assert_eq!(Url::parse("http://h").unwrap().path, "/");
        assert!(Url::parse("https://user:pw@h/x").unwrap_err().contains("request header"));
        assert!(Url::parse("http://h:99999/x").is_err());
        assert!(Url::parse("http://h/a b").is_err());
        assert!(Url::parse("http:///x").is_err());
    }

    #[test]
    fn origins_decide_where_credentials_go() {
        let a = Url::parse("http://127.0.0.1:8000/x").unwrap();
        assert!(a.same_origin(&Url::parse("http://127.0.0.1:8000/y?z").unwrap()));
        assert!(!a.same_origin(&Url::parse("http://localhost:8000/x").unwrap()), "another host");
        assert!(!a.same_origin(&Url::parse("http://127.0.0.1:8001/x").unwrap()), "another port");
        assert!(!a.same_origin(&Url::parse("https://127.0.0.1:8000/x").unwrap()), "another scheme");
        assert!(Url::parse("https://h/x").unwrap().same_origin(&Url::parse("https://h:443/y").unwrap()));
    }

    #[test]
    fn locations_join_like_a_browser() {
        let base = Url::parse("https://hub.example/org/repo/resolve/main/m.gguf?x=1").unwrap();
        let j = |l: &str| base.join(l).unwrap().as_request();
        assert_eq!(j("https://cdn.example/blob?sig=1"), "https://cdn.example/blob?sig=1");
        assert_eq!(j("//cdn.example/b"), "https://cdn.example/b");
        assert_eq!(j("/api/x"), "https://hub.example/api/x");
        assert_eq!(j("other.gguf"), "https://hub.example/org/repo/resolve/main/other.gguf");
        assert_eq!(j("?y=2"), "https://hub.example/org/repo/resolve/main/m.gguf?y=2");
        assert!(base.join("hf://x/y/z").is_err());
        assert!(base.join("ftp://x/y").is_err());
    }

    #[test]
    fn hf_names_resolve_to_the_hub() {
        let r = |s: &str, e: Option<&str>| resolve(s, e).unwrap().url.as_request();
        assert_eq!(
            r("hf://google/gemma-3-270m-GGUF/gemma.gguf", None),
            "https://huggingface.co/google/gemma-3-270m-GGUF/resolve/main/gemma.gguf"
        );
        assert_eq!(
            r("hf://o/r/dir/m.gguf@v1.0", Some("http://127.0.0.1:9/")),
            "http://127.0.0.1:9/o/r/resolve/v1.0/dir/m.gguf"
        );
        assert_eq!(r("hf://o/r/m.gguf@refs/pr/1", None), "https://huggingface.co/o/r/resolve/refs%2Fpr%2F1/m.gguf");
        assert_eq!(r("hf://o/r@v2/m.gguf", None), "https://huggingface.co/o/r/resolve/v2/m.gguf");
        assert_eq!(
            r("hf://datasets/o/r/a b.gguf", None),
            "https://huggingface.co/datasets/o/r/resolve/main/a%20b.gguf"
        );
        assert!(resolve("hf://o/r/m.gguf", None).unwrap().hub);
        assert!(!resolve("http://h/m.gguf", None).unwrap().hub);
        for bad in ["hf://o/r", "hf://o//m.gguf", "hf://o/r/m.gguf@"] {
            assert!(resolve(bad, None).is_err(), "{bad}");
        }
        assert!(resolve("hf://o/r/m.gguf", Some("ftp://x")).is_err());
    }

    #[test]
    fn redaction_removes_queries_and_credentials_wherever_they_are() {
        let t = "GET https://u:p@cdn.example/x.gguf?X-Amz-Signature=SECRET&e=1 failed; see http://h/p#frag and \"https://h/q?a=SECRET\".";
        let r = redact_text(t);
        assert!(!r.contains("SECRET") && !r.contains("u:p"), "{r}");
        assert_eq!(
            r,
            "GET https://cdn.example/x.gguf?[redacted] failed; see http://h/p and \"https://h/q?[redacted]\"."
        );
        assert_eq!(shown("hf://o/r/m.gguf@v1"), "hf://o/r/m.gguf@v1");
        assert_eq!(shown("model.gguf"), "model.gguf");
    }

    #[test]
    fn nothing_before_a_query_lets_it_escape_redaction() {
        let cases = [
            ("http://127.0.0.1:9/m.gguf ?X-Amz-Signature=SECRET", "http://127.0.0.1:9/m.gguf ?[redacted]"),
            ("http://127.0.0.1:9/m.gguf\t?X-Amz-Signature=SECRET", "http://127.0.0.1:9/m.gguf\t?[redacted]"),
            ("http://127.0.0.1:9/m.gguf\n?SECRET", "http://127.0.0.1:9/m.gguf\n?[redacted]"),
            ("http://127.0.0.1:9/m.gguf%20?sig=SECRET", "http://127.0.0.1:9/m.gguf%20?[redacted]"),
            ("http://127.0.0.1:9/m.gguf%3Fsig=SECRET", "http://127.0.0.1:9/m.gguf?[redacted]"),
            ("http://127.0.0.1:9/m.gguf%23SECRET", "http://127.0.0.1:9/m.gguf?[redacted]"),
            ("http://h/m.gguf #SECRET?x", "http://h/m.gguf "),
            ("https://user:SECRET@h/m.gguf", "https://h/m.gguf"),
            ("https://user:SE/CRET@h/m.gguf", "https://h/m.gguf"),
            ("https://user:SECRET?x@h/m.gguf", "https://[redacted]?[redacted]"),
            ("https://us er:SE CRET@h/m.gguf?q", "https://h/m.gguf?[redacted]"),
            ("hf://o/r/m.gguf@v1?token=SECRET", "hf://o/r/m.gguf@v1?[redacted]"),
            ("HTTPS://h:8443/m.gguf", "HTTPS://h:8443/m.gguf"),
            ("http://[::1]:80/m.gguf?SECRET", "http://[::1]:80/m.gguf?[redacted]"),
        ];
        for (input, want) in cases {
            assert_eq!(shown(input), want, "{input:?}");
            assert!(!redact_text(input).contains("SECRET"), "{input:?}");
        }
    }

    #[test]
    fn sibling_shards_keep_the_query_or_revision() {
        assert_eq!(
            shard_inputs("https://h/d/m-00002-of-00003.gguf?download=true").unwrap().unwrap(),
            [
                "https://h/d/m-00001-of-00003.gguf?download=true",
                "https://h/d/m-00002-of-00003.gguf?download=true",
                "https://h/d/m-00003-of-00003.gguf?download=true"
            ]
        );
        assert_eq!(
            shard_inputs("hf://o/r/m-00001-of-00002.gguf@abc").unwrap().unwrap(),
            ["hf://o/r/m-00001-of-00002.gguf@abc", "hf://o/r/m-00002-of-00002.gguf@abc"]
        );
        assert_eq!(shard_inputs("hf://o/r@v1/m-00001-of-00002.gguf").unwrap().unwrap().len(), 2);
        assert_eq!(
            shard_inputs("hf://o/r/m-00001-of-00002.gguf@refs/pr/1").unwrap().unwrap()[1],
            "hf://o/r/m-00002-of-00002.gguf@refs/pr/1"
        );
        assert_eq!(shard_inputs("https://h/m-00001-of-65535.gguf"), Some(Err(TooManyShards { count: 65535 })));
        let most = format!("https://h/m-00001-of-{:05}.gguf", limits::REMOTE_MAX_SET_SHARDS);
        assert_eq!(shard_inputs(&most).unwrap().unwrap().len(), limits::REMOTE_MAX_SET_SHARDS);
        let over = format!("https://h/m-00001-of-{:05}.gguf", limits::REMOTE_MAX_SET_SHARDS + 1);
        assert!(shard_inputs(&over).unwrap().is_err());
        assert_eq!(shard_inputs("https://h/m.gguf"), None);
        assert_eq!(shard_inputs("https://h/m-00001-of-00001.gguf"), None);
        assert_eq!(shard_inputs("dir/m-00001-of-00002.gguf"), None, "paths are listed, not named");
    }
}
