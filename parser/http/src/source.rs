//! [`HttpSource`], a remote file read with range requests (the crate docs
//! tell how), and the [`Client`] methods that open one: the first request,
//! reads served from the kept ranges or fetched, a server that ignores
//! `Range` read as one forward stream, a file replaced meanwhile detected.

use std::fmt;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use ureq::Body;
use ureq::http::Response;

use gguf_validate_core::io::{ByteSource, ReadError};
use gguf_validate_core::limits;
use gguf_validate_core::remote::{RemoteSource, RemoteSummary, Url};

use crate::cache::Cache;
use crate::client::{Client, Req, Stats};
use crate::error::{RemoteError, RemoteErrorKind, body_error, io_error, is_timeout};
use crate::hub::{Probe, sha256_of_etag};
use crate::response::{content_range, header};

/// The one response of a server that ignores `Range`, read forward.
struct Stream {
    reader: Box<dyn Read + Send>,
    pos: u64,
}

/// What the reads of a source change: where range requests go, the kept
/// ranges, the forward stream.
struct State {
    /// Where range requests go (the end of the last redirect chain).
    location: Url,
    /// Whether `location` was already resolved again after it failed.
    re_resolved: bool,
    cache: Cache,
    stream: Option<Stream>,
}

/// A remote file read with HTTP range requests (see the crate docs).
pub struct HttpSource {
    client: Client,
    url: Url,
    len: u64,
    etag: Option<String>,
    last_modified: Option<String>,
    revision: Option<String>,
    sha256: Option<String>,
    ranges: bool,
    state: Mutex<State>,
    stats: Stats,
    optional_left: AtomicU32,
    /// No request, retry or sleep for this source goes past it.
    deadline: Instant,
}

impl fmt::Debug for HttpSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSource")
            .field("url", &self.url.shown())
            .field("len", &self.len)
            .field("ranges", &self.ranges)
            .finish()
    }
}

impl Client {
    /// Opens a remote file: one request for its first bytes, which tells
    /// its length. `404`/`410` are [`RemoteErrorKind::NotFound`]. Every
    /// read of it ends by [`HttpOptions::file_deadline`](crate::HttpOptions::file_deadline) from now.
    pub fn open(&self, url: &Url) -> Result<HttpSource, RemoteError> {
        self.open_until(url, None)
    }

    /// [`Client::open`] with a deadline that may be earlier than the
    /// file's own (the one of a split set, shared by its shards).
    pub fn open_until(&self, url: &Url, deadline: Option<Instant>) -> Result<HttpSource, RemoteError> {
        let now = Instant::now();
        let own = now.checked_add(self.inner.opts.file_deadline).unwrap_or(now);
        let deadline = deadline.map_or(own, |d| d.min(own));
        HttpSource::open(self.clone(), url.clone(), None, deadline)
    }

    /// [`Client::open_until`] for a file already [probed](Client::probe):
    /// its first request goes straight to where the probe's redirect
    /// pointed (one round trip less), and what the hub said is kept.
    pub fn open_probed(&self, url: &Url, probe: &Probe, deadline: Option<Instant>) -> Result<HttpSource, RemoteError> {
        let now = Instant::now();
        let own = now.checked_add(self.inner.opts.file_deadline).unwrap_or(now);
        let deadline = deadline.map_or(own, |d| d.min(own));
        HttpSource::open(self.clone(), url.clone(), Some(probe), deadline)
    }
}

impl HttpSource {
    fn open(client: Client, url: Url, probe: Option<&Probe>, deadline: Instant) -> Result<HttpSource, RemoteError> {
        if url.scheme == "https" && client.inner.roots == 0 {
            return Err(RemoteError::new(
                RemoteErrorKind::Refused,
                "no trusted root certificates: install the system's CA bundle (ca-certificates), set SSL_CERT_FILE, or pass --ca-cert FILE",
            ));
        }
        let stats = Stats::default();
        let first = client.inner.opts.first_read.max(1);
        let start = probe.and_then(|p| p.location.clone()).unwrap_or_else(|| url.clone());
        let req = Req {
            url: &start,
            origin: &url,
            range: Some((0, first.saturating_sub(1))),
            if_range: None,
            deadline,
            head: false,
            same_origin_only: false,
        };
        let (resp, location, mut hub) = client.get(&req, &stats)?;
        if let Some(p) = probe {
            hub.revision = hub.revision.or_else(|| p.revision.clone());
            hub.linked_etag = hub.linked_etag.or_else(|| p.sha256.clone());
        }
        let (revision, sha256) = (hub.revision, hub.linked_etag.as_deref().and_then(sha256_of_etag));
        let status = resp.status().as_u16();
        let etag = header(&resp, "etag");
        let last_modified = header(&resp, "last-modified");
        let protocol = |m: String| RemoteError::new(RemoteErrorKind::Protocol, m);
        let mut cache = Cache::default();
        let (len, ranges, stream) = match status {
            206 => {
                let (Some((a, b)), Some(total)) = content_range(&resp).unwrap_or((None, None)) else {
                    return Err(protocol("HTTP 206 without a Content-Range that gives the file's length".into()));
                };
                if a != 0 || b >= total || b >= first {
                    return Err(protocol(format!(
                        "HTTP 206 with bytes {a}-{b}/{total} for a request of 0-{}",
                        first.saturating_sub(1)
                    )));
                }
                let n = b.saturating_add(1);
                let mut buf = vec![0u8; usize::try_from(n).map_err(|_| protocol("a range too large".into()))?];
                let mut reader = resp.into_body().into_reader();
                read_body(&mut reader, &mut buf, &stats).map_err(|(_, e)| body_error(&location, &e, deadline))?;
                cache.insert(0, &buf);
                (total, true, None)
            }
            200 => {
                let Some(len) = header(&resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok()) else {
                    return Err(protocol(
                        "the server ignores range requests and gives no Content-Length: the file's size is unknown"
                            .into(),
                    ));
                };
                let reader: Box<dyn Read + Send> = Box::new(resp.into_body().into_reader());
                (len, false, Some(Stream { reader, pos: 0 }))
            }
            416 => match content_range(&resp) {
                Some((None, Some(0))) => (0, true, None),
                _ => return Err(protocol("HTTP 416 for the first bytes of a file that is not empty".into())),
            },
            s => return Err(RemoteError::status(s, &location, &url)),
        };
        let optional = client.inner.opts.optional_requests;
        let state = State { location, re_resolved: false, cache, stream };
        let src = HttpSource {
            client,
            url,
            len,
            etag,
            last_modified,
            revision,
            sha256,
            ranges,
            state: Mutex::new(state),
            stats,
            optional_left: AtomicU32::new(optional),
            deadline,
        };
        if !ranges {
            // Read the first bytes now, as a range server would have sent.
            let n = first.min(len);
            let mut buf = vec![0u8; usize::try_from(n).unwrap_or(0)];
            src.read_exact_at(0, &mut buf)
                .map_err(|e| RemoteError::new(RemoteErrorKind::Network, format!("{}: {e}", src.url.authority())))?;
        }
        Ok(src)
    }

    /// Whether the server answers range requests (else only a forward
    /// read of one response is possible: no data scan, no hashing).
    pub fn supports_ranges(&self) -> bool {
        self.ranges
    }

    /// What reading cost so far, and what the server said.
    pub fn summary(&self) -> RemoteSummary {
        RemoteSummary {
            url: self.url.shown(),
            bytes_fetched: self.stats.bytes.load(Ordering::Relaxed),
            requests: self.stats.requests.load(Ordering::Relaxed),
            range_requests: self.ranges,
            revision: self.revision.clone(),
            etag: self.etag.clone(),
            sha256: self.sha256.clone(),
        }
    }

    /// Drops the kept ranges and keeps no more: before a data scan or
    /// hashing, whose reads are served once each (memory stays that of
    /// the reads in flight).
    pub fn release_cache(&self) {
        let mut st = self.lock();
        st.cache = Cache::released();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held cannot leave the state torn (it
        // is only ever replaced whole or appended to).
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The validator `If-Range` sends: a strong `ETag`, else `Last-Modified`.
    fn if_range(&self) -> Option<&str> {
        match &self.etag {
            Some(e) if !e.starts_with("W/") => Some(e),
            _ => self.last_modified.as_deref(),
        }
    }

    /// Fetches `[from, from + out.len())` with range requests.
    fn fetch(&self, from: u64, out: &mut [u8]) -> Result<(), ReadError> {
        let to = from.saturating_add(u64::try_from(out.len()).unwrap_or(u64::MAX));
        let mut done = 0usize;
        let mut tries = 0u32;
        let mut timeouts = 0u32;
        while done < out.len() {
            let at = from.saturating_add(u64::try_from(done).unwrap_or(u64::MAX));
            let location = self.lock().location.clone();
            let req = Req {
                url: &location,
                origin: &self.url,
                range: Some((at, to.saturating_sub(1))),
                if_range: self.if_range(),
                deadline: self.deadline,
                head: false,
                same_origin_only: false,
            };
            let (resp, final_url, _) = self.client.get(&req, &self.stats).map_err(|e| io_error(at, &e.to_string()))?;
            if final_url != location {
                self.lock().location = final_url.clone();
            }
            let status = resp.status().as_u16();
            match status {
                206 => {}
                200 => {
                    return Err(self.changed_or(at, &resp, "the server answered a range request with the whole file"));
                }
                416 => {
                    return Err(ReadError::Changed {
                        offset: at,
                        detail: format!("bytes {at}-{} are not in the file any more (HTTP 416)", to.saturating_sub(1)),
                    });
                }
                401 | 403 | 410 if final_url != self.url => {
                    // A signed redirect target that expired: resolve again, once.
                    let mut st = self.lock();
                    if st.re_resolved {
                        return Err(io_error(at, &RemoteError::status(status, &final_url, &self.url).to_string()));
                    }
                    st.re_resolved = true;
                    st.location = self.url.clone();
                    continue;
                }
                404 => {
                    return Err(ReadError::Changed { offset: at, detail: "the file is gone (HTTP 404)".into() });
                }
                s => return Err(io_error(at, &RemoteError::status(s, &final_url, &self.url).to_string())),
            }
            let etag = header(&resp, "etag");
            if let (Some(was), Some(now)) = (&self.etag, &etag)
                && was != now
            {
                return Err(ReadError::Changed { offset: at, detail: format!("its ETag was {was}, it is now {now}") });
            }
            match content_range(&resp) {
                Some((Some((a, b)), total))
                    if a == at && b == to.saturating_sub(1) && total.is_none_or(|t| t == self.len) => {}
                Some((_, Some(total))) if total != self.len => {
                    return Err(ReadError::Changed {
                        offset: at,
                        detail: format!("it had {} bytes, it has {total}", self.len),
                    });
                }
                _ => return Err(io_error(at, "HTTP 206 with another range than the one asked for")),
            }
            let mut reader = resp.into_body().into_reader();
            let part = out.get_mut(done..).unwrap_or_default();
            match read_body(&mut reader, part, &self.stats) {
                Ok(()) => done = out.len(),
                Err((n, e)) => {
                    // The connection broke mid-body: ask for the rest.
                    done = done.saturating_add(n);
                    tries = tries.saturating_add(1);
                    // A body that ran out of the request's time is asked
                    // for again at most REMOTE_TIMEOUT_RETRIES times.
                    let timed_out = is_timeout(&e);
                    timeouts = timeouts.saturating_add(u32::from(timed_out));
                    if tries > self.client.inner.opts.retries
                        || timeouts > limits::REMOTE_TIMEOUT_RETRIES
                        || Instant::now() >= self.deadline
                    {
                        return Err(io_error(at, &body_error(&final_url, &e, self.deadline).to_string()));
                    }
                }
            }
        }
        Ok(())
    }

    /// A `200` to a conditional range request: the file changed when its
    /// validators or length did, else the server stopped honouring ranges.
    fn changed_or(&self, at: u64, resp: &Response<Body>, otherwise: &str) -> ReadError {
        let etag = header(resp, "etag");
        let len = header(resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
        if let (Some(was), Some(now)) = (&self.etag, &etag)
            && was != now
        {
            return ReadError::Changed { offset: at, detail: format!("its ETag was {was}, it is now {now}") };
        }
        if let Some(n) = len.filter(|n| *n != self.len) {
            return ReadError::Changed { offset: at, detail: format!("it had {} bytes, it has {n}", self.len) };
        }
        if self.if_range().is_some() && etag.is_none() {
            return ReadError::Changed { offset: at, detail: "the server no longer matches If-Range".into() };
        }
        io_error(at, otherwise)
    }

    /// Reads `[from, from + out.len())` from the one response of a server
    /// that ignores `Range`: forward only.
    fn read_stream(&self, st: &mut State, from: u64, out: &mut [u8]) -> Result<(), ReadError> {
        let keep = st.cache.keeps();
        let State { stream, cache, .. } = st;
        let Some(s) = stream.as_mut() else {
            return Err(io_error(from, "the response of a server that ignores range requests broke off"));
        };
        if s.pos > from {
            return Err(io_error(
                from,
                "the server ignores range requests and these bytes were passed already; download the file to read them",
            ));
        }
        // Skip ahead (keeping what is skipped, within the budget).
        let mut skip = vec![0u8; usize::try_from(limits::SCAN_READ_CHUNK).unwrap_or(1 << 16)];
        while s.pos < from {
            let n = usize::try_from(from.saturating_sub(s.pos)).unwrap_or(usize::MAX).min(skip.len());
            let buf = skip.get_mut(..n).unwrap_or_default();
            if let Err((_, e)) = read_body(&mut s.reader, buf, &self.stats) {
                *stream = None;
                return Err(io_error(from, &body_error(&self.url, &e, self.deadline).to_string()));
            }
            if keep {
                cache.insert(s.pos, buf);
            }
            s.pos = s.pos.saturating_add(u64::try_from(n).unwrap_or(0));
        }
        if let Err((_, e)) = read_body(&mut s.reader, out, &self.stats) {
            *stream = None;
            return Err(io_error(from, &body_error(&self.url, &e, self.deadline).to_string()));
        }
        if keep {
            cache.insert(from, out);
        }
        s.pos = from.saturating_add(u64::try_from(out.len()).unwrap_or(0));
        Ok(())
    }

    /// Fills `buf` from the cache where it can, fetching the rest; `fetch`
    /// says how (a `false` answer declines the read).
    fn read_with(&self, offset: u64, buf: &mut [u8], optional: bool) -> Result<bool, ReadError> {
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let end = offset.checked_add(len).filter(|e| *e <= self.len);
        let Some(end) = end else {
            return Err(ReadError::Shrunk { offset, len, opened_len: self.len });
        };
        let mut at = offset;
        while at < end {
            let i = usize::try_from(at.saturating_sub(offset)).unwrap_or(usize::MAX);
            let rest = buf.get_mut(i..).unwrap_or_default();
            let mut st = self.lock();
            let n = st.cache.copy(at, rest);
            if n > 0 {
                at = at.saturating_add(u64::try_from(n).unwrap_or(0));
                continue;
            }
            let gap_end = st.cache.next_start(at).map_or(end, |s| s.min(end));
            let gap = usize::try_from(gap_end.saturating_sub(at)).unwrap_or(usize::MAX);
            let part = rest.get_mut(..gap).unwrap_or_default();
            if !self.ranges {
                if optional {
                    let next = st.stream.as_ref().map_or(u64::MAX, |s| s.pos);
                    if next > at || gap_end.saturating_sub(next) > limits::SCAN_READ_CHUNK {
                        return Ok(false);
                    }
                }
                self.read_stream(&mut st, at, part)?;
            } else {
                drop(st);
                if optional
                    && self
                        .optional_left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_err()
                {
                    return Ok(false);
                }
                self.fetch(at, part)?;
                self.lock().cache.insert(at, part);
            }
            at = gap_end;
        }
        Ok(true)
    }
}

impl ByteSource for HttpSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.read_with(offset, buf, false).map(|_| ())
    }

    fn first_read(&self) -> u64 {
        self.client.inner.opts.first_read.max(1)
    }

    fn round_trips(&self) -> bool {
        true
    }

    fn read_optional_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, ReadError> {
        self.read_with(offset, buf, true)
    }
}

impl RemoteSource for HttpSource {
    fn supports_ranges(&self) -> bool {
        HttpSource::supports_ranges(self)
    }

    fn release_cache(&self) {
        HttpSource::release_cache(self);
    }

    fn summary(&self) -> RemoteSummary {
        HttpSource::summary(self)
    }
}

/// Reads exactly `out.len()` bytes of a body, counting them; on failure,
/// how many were read.
fn read_body(reader: &mut impl Read, out: &mut [u8], stats: &Stats) -> Result<(), (usize, io::Error)> {
    let mut done = 0usize;
    while done < out.len() {
        let rest = out.get_mut(done..).unwrap_or_default();
        match reader.read(rest) {
            Ok(0) => return Err((done, io::Error::new(io::ErrorKind::UnexpectedEof, "the response ended early"))),
            Ok(n) => {
                done = done.saturating_add(n);
                stats.bytes.fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(())
}
