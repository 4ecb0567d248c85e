//! Remote response handling on arbitrary server answers: the real
//! [`HttpSource`](gguf_validate_http::HttpSource) path (ureq's parser, redirects, retries with
//! `Retry-After`, deadlines, `Content-Range` / `Content-Length`, the range
//! cache, validation over it) against a scripted in-memory server
//! ([`scripted::client`]) that answers each connection with the next raw
//! response of the input (any status lines, headers, bodies).
//!
//! Input: responses separated by [`SEPARATOR`], at most [`MAX_RESPONSES`].
//! Properties:
//! - no panic;
//! - bounded: connections at most the responses given, requests at most
//!   [`MAX_REQUESTS`], bytes fetched at most the bytes served, and the
//!   whole run well inside the source's deadline (no sleep for a
//!   `Retry-After` past it);
//! - no secret in any message: the URL's query and the `--header` value
//!   never appear in an error.
//!
//! The seeded test builds plausible answers (ranges of a small GGUF file,
//! whole-file `200`s, `416`, redirects, `429` with `Retry-After`, `1xx`
//! floods, truncations) and replays `fuzz/regressions/remote_response/`.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use gguf_validate_core::io::ByteSource;
use gguf_validate_core::remote::Url;
use gguf_validate_http::{HttpOptions, scripted};

/// Between two responses of the input.
pub const SEPARATOR: &[u8] = b"\n~~~\n";

/// Responses taken from one input (one per connection).
pub const MAX_RESPONSES: usize = 16;

/// Requests one input may cause: every connection after the script ran
/// out fails and is retried at most `RETRIES` times per read, and the
/// validator's reads are bounded by the responses that succeed.
pub const MAX_REQUESTS: u64 = 256;

const RETRIES: u32 = 2;
const FILE_DEADLINE: Duration = Duration::from_secs(3);
const SECRETS: [&str; 2] = ["QUERYSECRET", "HEADERSECRET"];

/// The responses of an input.
pub fn responses(data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() < MAX_RESPONSES {
        match rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            Some(i) => {
                out.push(rest.get(..i).unwrap_or_default().to_vec());
                rest = rest.get(i.saturating_add(SEPARATOR.len())..).unwrap_or_default();
            }
            None => {
                out.push(rest.to_vec());
                break;
            }
        }
    }
    out
}

/// The property.
pub fn run(data: &[u8]) {
    let responses = responses(data);
    let served_total: u64 = responses.iter().map(|r| r.len() as u64).sum();
    let n_responses = responses.len() as u64;
    let opts = HttpOptions {
        headers: vec![("X-Key".into(), "HEADERSECRET".into())],
        retries: RETRIES,
        backoff: Duration::ZERO,
        timeout: Duration::from_secs(1),
        request_deadline: Duration::from_secs(2),
        file_deadline: FILE_DEADLINE,
        first_read: 64,
        optional_requests: 2,
        retry_after_cap: Duration::ZERO,
        ..HttpOptions::default()
    };
    let start = Instant::now();
    let (client, served) = scripted::client(opts, responses);
    let url = Url::parse("http://127.0.0.1:1/m.gguf?sig=QUERYSECRET").expect("a valid URL");
    let mut messages = Vec::new();
    match client.open(&url) {
        Ok(src) => {
            let len = src.len();
            match gguf_validate_core::Validator::default().validate(&src) {
                Ok(v) => assert!(v.metadata.len() as u64 <= len.max(64)),
                Err(e) => messages.push(e.to_string()),
            }
            // A read far on (a data scan's) and an optional one (padding).
            let mut buf = vec![0u8; len.min(512) as usize];
            if let Err(e) = src.read_exact_at(len.saturating_sub(buf.len() as u64) / 2, &mut buf) {
                messages.push(e.to_string());
            }
            src.release_cache();
            if let Err(e) = src.read_optional_at(len.saturating_sub(buf.len() as u64), &mut buf) {
                messages.push(e.to_string());
            }
            let s = src.summary();
            assert!(s.requests <= MAX_REQUESTS, "{} requests", s.requests);
            assert!(s.bytes_fetched <= served_total, "{} bytes fetched of {served_total} served", s.bytes_fetched);
            assert!(!s.url.contains("QUERYSECRET"), "{}", s.url);
            messages.extend(s.etag);
        }
        Err(e) => messages.push(e.to_string()),
    }
    let connections = served.connections.load(std::sync::atomic::Ordering::Relaxed);
    assert!(connections <= n_responses, "{connections} connections for {n_responses} responses");
    let took = start.elapsed();
    assert!(took < FILE_DEADLINE + Duration::from_secs(2), "took {took:?}");
    for m in &messages {
        for secret in SECRETS {
            assert!(!m.contains(secret), "{secret} in {m:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;

    /// A small valid GGUF file.
    fn file() -> Vec<u8> {
        use gguf_validate_core::types::GgmlType;
        use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("plain"));
        for i in 0..8 {
            m.kv(&format!("plain.k{i}"), OwnedValue::U32(i));
        }
        m.tensor(OwnedTensor::zeroed("w", &[64], GgmlType::F32).unwrap());
        m.canonical();
        m.to_bytes()
    }

    /// One plausible (or broken) answer.
    fn answer(rng: &mut SplitMix64, file: &[u8]) -> Vec<u8> {
        let len = file.len() as u64;
        let a = rng.below(len);
        let b = (a + rng.below(1 << 12)).min(len - 1);
        let etag = if rng.below(2) == 0 { "ETag: \"v1\"\r\n" } else { "" };
        let mut r = match rng.below(12) {
            0..=3 => {
                let mut h = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{len}\r\nContent-Length: {}\r\n{etag}\r\n",
                    b - a + 1
                )
                .into_bytes();
                h.extend_from_slice(&file[a as usize..=b as usize]);
                h
            }
            4 => {
                let mut h = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n{etag}\r\n").into_bytes();
                h.extend_from_slice(file);
                h
            }
            5 => format!("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\n\r\n", rng.below(3))
                .into_bytes(),
            6 => {
                let to = ["/other.gguf", "http://localhost:2/x?sig=QUERYSECRET", "https://cdn/x", "", "//h/y"];
                let to = to[rng.below(to.len() as u64) as usize];
                format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n").into_bytes()
            }
            7 => format!(
                "HTTP/1.1 429 Too Many Requests\r\nRetry-After: {}\r\nContent-Length: 0\r\n\r\n",
                [0, 1, 2, 100_000, u64::MAX][rng.below(5) as usize]
            )
            .into_bytes(),
            8 => "HTTP/1.1 102 Processing\r\n\r\n".repeat(1 + rng.below(50) as usize).into_bytes(),
            9 => format!("HTTP/1.1 {} X\r\nContent-Length: 0\r\n\r\n", 100 + rng.below(500)).into_bytes(),
            10 => format!("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {b}-{a}/{}\r\n\r\n", rng.next_u64())
                .into_bytes(),
            _ => rng.bytes_below(256),
        };
        // Sometimes cut short.
        if rng.below(4) == 0 {
            r.truncate(rng.below(r.len() as u64 + 1) as usize);
        }
        r
    }

    #[test]
    fn smoke() {
        let file = file();
        let mut rng = SplitMix64::new(crate::smoke_seed() ^ 0x4e77);
        for _ in 0..300 {
            let n = 1 + rng.below(MAX_RESPONSES as u64 + 2);
            let parts: Vec<Vec<u8>> = (0..n).map(|_| answer(&mut rng, &file)).collect();
            run(&parts.join(SEPARATOR));
        }
    }

    #[test]
    fn the_whole_file_in_ranges_validates() {
        let file = file();
        let len = file.len();
        let mut first =
            format!("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-63/{len}\r\nContent-Length: 64\r\n\r\n")
                .into_bytes();
        first.extend_from_slice(&file[..64]);
        run(&first);
    }

    #[test]
    fn regressions() {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/regressions/remote_response"));
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            run(&std::fs::read(e.path()).unwrap());
        }
    }

    /// The corpus of an 11-minute campaign (7,975,633 runs, no finding),
    /// minimised with `-merge=1 -use_counters=0`.
    #[test]
    fn minimised_corpus() {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/seeds/remote_response/min"));
        let files = crate::config_file::read_dir(dir);
        assert!(files.len() >= 100, "{} files in {}", files.len(), dir.display());
        for (_, data) in files {
            run(&data);
        }
    }
}
