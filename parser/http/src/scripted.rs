//! A [`Client`] whose server is a script: each connection it opens is
//! answered with the next of a list of raw responses (status lines,
//! headers, bodies: any bytes), then closed. The real request path runs
//! over it (ureq's parser, redirects, retries, deadlines, `Content-Range`,
//! the cache), without a socket: for the fuzz target and tests.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, Transport};

use crate::client::{Client, ClientInner, agent_config};
use crate::options::HttpOptions;
use crate::rate_limit::Pacer;

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
    (Client { inner: Arc::new(ClientInner { agent, opts, roots: 0, pacer: Pacer::default() }) }, served)
}

/// What the crate's unit tests script a server with.
#[cfg(test)]
pub(crate) mod tests {
    use gguf_validate_core::remote::Url;

    /// An answer of `head` (the status line and headers), with no body.
    pub(crate) fn answer(head: &str) -> Vec<u8> {
        format!("{head}\r\nContent-Length: 0\r\n\r\n").into_bytes()
    }

    /// A hub file's URL.
    pub(crate) fn url() -> Url {
        Url::parse("http://hub.test/org/model/resolve/main/m.gguf").unwrap()
    }
}
