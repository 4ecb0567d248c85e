//! A small HTTP/1.1 server on 127.0.0.1 for the remote tests and the
//! remote benchmark: ranges (or not), ETags and `If-Range`, redirects,
//! failures, a file replaced after some requests, stalls, `CONNECT` (as a
//! proxy), TLS, and raw answers written slowly (a hostile server: a byte
//! at a time of headers or body, endless `1xx` interim answers). It logs every request (headers, range, status, body
//! bytes written) and the most requests in flight at once. It serves only
//! loopback clients of the test that started it, and its connection
//! threads end when the client closes or after a read timeout.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A file's bytes: in memory, or the first `len` bytes of a file on disk
/// (a truncated copy without copying).
#[derive(Clone, Debug)]
pub enum Body {
    Mem(Arc<Vec<u8>>),
    Disk { path: std::path::PathBuf, len: u64 },
}

impl Body {
    pub fn mem(bytes: Vec<u8>) -> Body {
        Body::Mem(Arc::new(bytes))
    }

    pub fn len(&self) -> u64 {
        match self {
            Body::Mem(b) => b.len() as u64,
            Body::Disk { len, .. } => *len,
        }
    }

    fn write_range(&self, out: &mut dyn Write, from: u64, to: u64) -> std::io::Result<u64> {
        match self {
            Body::Mem(b) => {
                out.write_all(&b[from as usize..to as usize])?;
                Ok(to - from)
            }
            Body::Disk { path, .. } => {
                use std::os::unix::fs::FileExt;
                let f = std::fs::File::open(path)?;
                let mut buf = vec![0u8; 1 << 20];
                let mut at = from;
                while at < to {
                    let n = ((to - at) as usize).min(buf.len());
                    f.read_exact_at(&mut buf[..n], at)?;
                    out.write_all(&buf[..n])?;
                    at += n as u64;
                }
                Ok(to - from)
            }
        }
    }
}

/// A file served at a path.
#[derive(Clone, Debug)]
pub struct File {
    pub body: Body,
    /// Honour `Range` (else `200` with the whole file).
    pub ranges: bool,
    pub etag: Option<String>,
    /// Honour `If-Range` (a server that does not answers `206` whatever).
    pub if_range: bool,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Statuses answered first, one per request, before the file.
    pub fail_first: Vec<u16>,
    /// After this many requests, serve this body and ETag instead.
    pub replaced_after: Option<(usize, Body, String)>,
    /// Sleep before answering (to make requests overlap).
    pub delay: Duration,
}

impl File {
    pub fn new(bytes: Vec<u8>) -> File {
        File::of(Body::mem(bytes))
    }

    pub fn of(body: Body) -> File {
        File {
            body,
            ranges: true,
            etag: Some("\"v1\"".into()),
            if_range: true,
            headers: Vec::new(),
            fail_first: Vec::new(),
            replaced_after: None,
            delay: Duration::ZERO,
        }
    }
}

/// What a path answers.
#[derive(Clone, Debug)]
pub enum Answer {
    File(File),
    Redirect {
        status: u16,
        location: String,
        headers: Vec<(String, String)>,
    },
    Status(u16),
    /// Read the request, then say nothing for a while.
    Stall(Duration),
    /// Write `head` at once, then `drip` (cycled) `chunk` bytes at a time,
    /// one chunk every `every`, until the client goes or `until` passed;
    /// with an empty `drip`, just `head` (the connection kept).
    Raw {
        head: Vec<u8>,
        drip: Vec<u8>,
        chunk: usize,
        every: Duration,
        until: Duration,
    },
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Logged {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub status: u16,
    pub body_bytes: u64,
    /// The connection started with `CONNECT` (the server was a proxy).
    pub via_connect: Option<String>,
}

impl Logged {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// `Range: bytes=a-b` as (a, b).
    pub fn range(&self) -> Option<(u64, u64)> {
        let r = self.header("range")?.strip_prefix("bytes=")?;
        let (a, b) = r.split_once('-')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }
}

#[derive(Default)]
struct Shared {
    routes: Mutex<HashMap<String, Answer>>,
    counts: Mutex<HashMap<String, usize>>,
    log: Mutex<Vec<Logged>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    stop: AtomicBool,
}

#[allow(missing_debug_implementations)]
pub struct Server {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    tls: bool,
}

impl Server {
    /// A plain HTTP server on 127.0.0.1.
    pub fn start() -> Server {
        Server::start_with(None)
    }

    /// An HTTPS server on 127.0.0.1 with this certificate and key.
    pub fn start_tls(
        cert: rustls::pki_types::CertificateDer<'static>,
        key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Server {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        Server::start_with(Some(Arc::new(config)))
    }

    fn start_with(tls: Option<Arc<rustls::ServerConfig>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let is_tls = tls.is_some();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                let tls = tls.clone();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(Duration::from_secs(30))).ok();
                    match tls {
                        Some(config) => {
                            let Ok(tls) = rustls::ServerConnection::new(config) else { return };
                            let mut stream = rustls::StreamOwned::new(tls, conn);
                            serve(&s, &mut stream);
                        }
                        None => {
                            let mut conn = conn;
                            serve(&s, &mut conn);
                        }
                    }
                });
            }
        });
        Server { addr, shared, tls: is_tls }
    }

    pub fn route(&self, path: &str, answer: Answer) {
        self.shared.routes.lock().unwrap().insert(path.to_string(), answer);
    }

    pub fn file(&self, path: &str, file: File) {
        self.route(path, Answer::File(file));
    }

    /// `http://127.0.0.1:PORT{path}` (or https).
    pub fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{path}", if self.tls { "https" } else { "http" }, self.addr.port())
    }

    /// The same server under another host name (`localhost`): another
    /// origin for the client.
    pub fn url_as_localhost(&self, path: &str) -> String {
        format!("{}://localhost:{}{path}", if self.tls { "https" } else { "http" }, self.addr.port())
    }

    /// The log of the requests answered so far. A client may have its
    /// answer (and exit) before the writer of that answer returns, so this
    /// waits, at most ten seconds, until no request is being answered.
    pub fn log(&self) -> Vec<Logged> {
        self.log_when_idle(Duration::from_secs(10))
    }

    pub fn clear_log(&self) {
        self.shared.log.lock().unwrap().clear();
        self.shared.max_in_flight.store(0, Ordering::Relaxed);
    }

    /// The log once no request is being answered (a slow answer is
    /// logged when its writer notices the client left), waiting at most `most`.
    pub fn log_when_idle(&self, most: Duration) -> Vec<Logged> {
        let start = std::time::Instant::now();
        while self.shared.in_flight.load(Ordering::SeqCst) > 0 && start.elapsed() < most {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.shared.log.lock().unwrap().clone()
    }

    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::Relaxed)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// Reads a request head (up to the blank line); `None` when the client
/// closed. GET requests have no body.
fn read_head(s: &mut dyn Read, pending: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).into_owned();
            pending.drain(..end + 4);
            return Some(head);
        }
        if pending.len() > 64 << 10 {
            return None;
        }
        let mut buf = [0u8; 4096];
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

fn serve<S: Read + Write>(shared: &Shared, s: &mut S) {
    let mut pending = Vec::new();
    let mut via_connect = None;
    while let Some(head) = read_head(s, &mut pending) {
        let mut lines = head.split("\r\n");
        let request = lines.next().unwrap_or_default().to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut parts = request.split(' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
        if method == "CONNECT" {
            // A proxy tunnel: the requests that follow are served here.
            via_connect = Some(target.to_string());
            if s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").is_err() {
                return;
            }
            continue;
        }
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let mut logged =
            Logged { path: target.to_string(), headers, status: 0, body_bytes: 0, via_connect: via_connect.clone() };
        let keep = answer(shared, s, &mut logged);
        // Logged before it stops counting as in flight: `log` then never
        // misses an answer that is done.
        shared.log.lock().unwrap().push(logged);
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !keep {
            return;
        }
    }
}

/// Writes the answer; whether the connection may serve another request.
fn answer<S: Read + Write>(shared: &Shared, s: &mut S, req: &mut Logged) -> bool {
    let path = req.path.split('?').next().unwrap_or("").to_string();
    let route = shared.routes.lock().unwrap().get(&path).cloned();
    let n = {
        let mut counts = shared.counts.lock().unwrap();
        let c = counts.entry(path.clone()).or_default();
        *c += 1;
        *c
    };
    let head = |status: u16, headers: &[(String, String)], len: u64| {
        let mut h = format!("HTTP/1.1 {status} {}\r\nContent-Length: {len}\r\n", reason(status));
        for (k, v) in headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str("\r\n");
        h
    };
    match route {
        None | Some(Answer::Status(_)) => {
            let status = match route {
                Some(Answer::Status(s)) => s,
                _ => 404,
            };
            req.status = status;
            s.write_all(head(status, &[], 0).as_bytes()).is_ok()
        }
        Some(Answer::Stall(d)) => {
            std::thread::sleep(d);
            false
        }
        Some(Answer::Raw { head, drip, chunk, every, until }) => {
            req.status = std::str::from_utf8(&head)
                .ok()
                .and_then(|h| h.split(' ').nth(1))
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            if s.write_all(&head).and_then(|()| s.flush()).is_err() {
                return false;
            }
            req.body_bytes = head.len() as u64;
            if drip.is_empty() {
                return true;
            }
            let start = std::time::Instant::now();
            let mut at = 0usize;
            while start.elapsed() < until {
                std::thread::sleep(every);
                let piece: Vec<u8> = (0..chunk.max(1)).map(|i| drip[(at + i) % drip.len()]).collect();
                at = (at + piece.len()) % drip.len();
                if s.write_all(&piece).and_then(|()| s.flush()).is_err() {
                    break;
                }
                req.body_bytes += piece.len() as u64;
            }
            false
        }
        Some(Answer::Redirect { status, location, headers }) => {
            req.status = status;
            let mut h = headers.clone();
            h.push(("Location".into(), location));
            s.write_all(head(status, &h, 0).as_bytes()).is_ok()
        }
        Some(Answer::File(f)) => {
            std::thread::sleep(f.delay);
            if let Some(status) = f.fail_first.get(n - 1) {
                req.status = *status;
                return s.write_all(head(*status, &[], 0).as_bytes()).is_ok();
            }
            let (body, etag) = match &f.replaced_after {
                Some((after, body, etag)) if n > *after => (body.clone(), Some(etag.clone())),
                _ => (f.body.clone(), f.etag.clone()),
            };
            let len = body.len();
            let mut headers = f.headers.clone();
            if let Some(e) = &etag {
                headers.push(("ETag".into(), e.clone()));
            }
            let range = if f.ranges { req.range_or_open() } else { None };
            let if_range_ok = !f.if_range || req.header("if-range").is_none_or(|v| etag.as_deref() == Some(v));
            let (status, from, to) = match range {
                Some((a, b)) if if_range_ok => {
                    if a >= len {
                        req.status = 416;
                        headers.push(("Content-Range".into(), format!("bytes */{len}")));
                        return s.write_all(head(416, &headers, 0).as_bytes()).is_ok();
                    }
                    let b = b.unwrap_or(u64::MAX).min(len - 1);
                    headers.push(("Content-Range".into(), format!("bytes {a}-{b}/{len}")));
                    (206, a, b + 1)
                }
                _ => (200, 0, len),
            };
            if f.ranges {
                headers.push(("Accept-Ranges".into(), "bytes".into()));
            }
            req.status = status;
            if s.write_all(head(status, &headers, to - from).as_bytes()).is_err() {
                return false;
            }
            match body.write_range(s, from, to) {
                Ok(n) => {
                    req.body_bytes = n;
                    s.flush().is_ok()
                }
                Err(_) => false,
            }
        }
    }
}

impl Logged {
    /// `bytes=a-b` or `bytes=a-` (b open).
    fn range_or_open(&self) -> Option<(u64, Option<u64>)> {
        let r = self.header("range")?.strip_prefix("bytes=")?;
        let (a, b) = r.split_once('-')?;
        let a = a.parse().ok()?;
        let b = if b.is_empty() { None } else { Some(b.parse().ok()?) };
        Some((a, b))
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        403 => "Forbidden",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
