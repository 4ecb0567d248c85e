//! [`Opener`], the [`UrlOpener`] front ends pass to the library's
//! pipeline: the client a run builds from its options and the environment
//! (`HF_ENDPOINT`, `HF_TOKEN`, extra roots), and `hf://` names resolved.

use std::time::{Duration, Instant};

use gguf_validate_core::remote::{OpenFailure, RemoteSource, Url, UrlOpener};

use crate::client::Client;
use crate::error::RemoteErrorKind;
use crate::options::HttpOptions;
use crate::source::HttpSource;

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
