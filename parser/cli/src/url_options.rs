//! Remote inputs on the command line: the options of URLs, and the run's
//! [`UrlOpener`] (the `gguf-validate-http` crate's) built from `--header`,
//! `--ca-cert`, `--retries`, `--http-timeout`, `--http-deadline`,
//! `HF_TOKEN` and `HF_ENDPOINT`. Without the
//! `remote` feature a URL is refused with a message saying so. A
//! malformed `--header` is refused by [`RemoteArgs::check`] with what is
//! wrong, never with its value (clap would echo it).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use clap::builder::TypedValueParser;
use gguf_validate_core::pipeline::Input;
use gguf_validate_core::remote::UrlOpener;

/// Options for files given as URLs (validation and `hash`).
#[derive(Clone, Args)]
pub struct RemoteArgs {
    /// For URLs: send this request header (`'Name: value'`, repeatable) to
    /// the URL's own host; it is never sent after a redirect to another
    /// host, and never printed.
    #[arg(long = "header", value_name = "NAME: VALUE",
          value_parser = clap::builder::OsStringValueParser::new().map(parse_header))]
    pub headers: Vec<HeaderArg>,
    /// For https URLs: also trust the certificates in this PEM file
    /// (repeatable), beside the system's roots.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// For URLs: retries of a request that failed in a way that may pass
    /// (connection errors, timeouts, HTTP 408, 429, 5xx gateway errors),
    /// with exponential backoff.
    #[arg(long, value_name = "N", default_value_t = gguf_validate_core::limits::REMOTE_RETRIES,
          value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// For URLs: seconds for one request, connecting, headers and body
    /// together (and for any one read). A request that runs out of it is
    /// tried again once at most, whatever --retries says: a server that
    /// never answers in time costs a read at most 2 x this (and backoff),
    /// a file at most --http-deadline.
    #[arg(long, value_name = "DURATION", default_value_t = gguf_validate_core::limits::REMOTE_TIMEOUT_SECS as f64,
          value_parser = parse_secs)]
    pub http_timeout: f64,
    /// For URLs: give up on a remote file after this many seconds in all
    /// (requests, retries, waits), however slowly the server sends; a
    /// split set named by URL shares one such deadline for all its shards.
    /// Raise it for --check-data or hash of large files.
    #[arg(long, value_name = "DURATION", default_value_t = gguf_validate_core::limits::REMOTE_FILE_DEADLINE_SECS as f64,
          value_parser = parse_secs)]
    pub http_deadline: f64,
}

/// A `--header` as given: the name and value, or what is wrong with it
/// (never the value: it may be a credential).
#[derive(Clone)]
pub struct HeaderArg(Result<(String, String), &'static str>);

/// The name only: the value may be a credential.
impl std::fmt::Debug for HeaderArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Ok((name, _)) => write!(f, "HeaderArg({name}: [redacted])"),
            Err(why) => write!(f, "HeaderArg(invalid: {why})"),
        }
    }
}

impl HeaderArg {
    fn name(&self) -> Option<&str> {
        self.0.as_ref().ok().map(|(k, _)| k.as_str())
    }
}

impl RemoteArgs {
    /// Refuses a malformed `--header`, saying what is wrong and which one
    /// (by position), never its value.
    pub fn check(&self) -> Result<(), String> {
        for (i, h) in self.headers.iter().enumerate() {
            if let Err(why) = &h.0 {
                return Err(format!("--header number {}: {why}; the value given is not shown", i.saturating_add(1)));
            }
        }
        Ok(())
    }

    /// The headers, when all are well formed.
    #[cfg(feature = "remote")]
    fn header_pairs(&self) -> Result<Vec<(String, String)>, String> {
        self.check()?;
        Ok(self.headers.iter().filter_map(|h| h.0.clone().ok()).collect())
    }
}

/// Header names only: values may be credentials.
impl std::fmt::Debug for RemoteArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteArgs")
            .field("headers", &self.headers.iter().map(HeaderArg::name).collect::<Vec<_>>())
            .field("ca_certs", &self.ca_certs)
            .field("retries", &self.retries)
            .field("http_timeout", &self.http_timeout)
            .field("http_deadline", &self.http_deadline)
            .finish()
    }
}

/// Never fails (a failure would have clap echo the value): what is wrong
/// is kept and reported by [`RemoteArgs::check`].
fn parse_header(s: OsString) -> HeaderArg {
    HeaderArg(header_of(s))
}

fn header_of(s: OsString) -> Result<(String, String), &'static str> {
    let s = s.into_string().map_err(|_| "a --header is text (UTF-8)")?;
    let (name, value) = s.split_once(':').ok_or("a --header needs `Name: value` (no colon was given)")?;
    let (name, value) = (name.trim(), value.trim());
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err("a --header name is letters, digits and !#$%&'*+-.^_`|~ before the colon");
    }
    if value.bytes().any(|b| b < b' ' && b != b'\t' || b == 0x7f) {
        return Err("a --header value has no control characters (newline, NUL, ...)");
    }
    Ok((name.to_string(), value.to_string()))
}

/// A duration of at most 10^6 seconds (`30`, `500ms`, `2m`).
fn parse_secs(s: &str) -> Result<f64, String> {
    crate::units::parse_duration(s, 1e6)
}

/// The run's URL opener when an input is a URL (`None` otherwise: no
/// client is built for local files).
pub fn opener_for(
    args: &RemoteArgs,
    inputs: &[Input],
    connections: usize,
) -> Result<Option<Arc<dyn UrlOpener>>, String> {
    if inputs.iter().any(|i| i.url().is_some()) { opener(args, connections).map(Some) } else { Ok(None) }
}

/// The run's URL opener: the HTTP client with `--header`, `--ca-cert`,
/// `--retries`, `--http-timeout`, `--http-deadline`, `HF_TOKEN` for the hub
/// (`HF_ENDPOINT`, else huggingface.co) only, `connections` per host.
#[cfg(feature = "remote")]
pub fn opener(args: &RemoteArgs, connections: usize) -> Result<Arc<dyn UrlOpener>, String> {
    use std::time::Duration;

    use gguf_validate_http::{HttpOptions, Opener};

    let opts = HttpOptions {
        headers: args.header_pairs()?,
        retries: args.retries,
        timeout: Duration::from_secs_f64(args.http_timeout),
        request_deadline: Duration::from_secs_f64(args.http_timeout),
        file_deadline: Duration::from_secs_f64(args.http_deadline),
        connections,
        ..HttpOptions::default()
    };
    Ok(Arc::new(Opener::from_env(opts, &args.ca_certs)?))
}

/// Without the `remote` feature there is no HTTP client: URLs are refused.
#[cfg(not(feature = "remote"))]
pub fn opener(_: &RemoteArgs, _: usize) -> Result<Arc<dyn UrlOpener>, String> {
    Err("this gguf-validate was built without the `remote` feature: URLs cannot be read".into())
}
