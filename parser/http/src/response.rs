//! What an answer's status line and headers say: one header's text,
//! whether a status is worth a retry, `Retry-After`, `Content-Range`.

use std::time::Duration;

use ureq::Body;
use ureq::http::Response;

/// The statuses that may pass on a retry: `408`, `429`, `500`, `502`,
/// `503`, `504`.
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured).
pub(crate) fn retry_after(resp: &Response<Body>) -> Option<Duration> {
    header(resp, "retry-after").and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs)
}

/// A header's value, when it is text.
pub(crate) fn header(resp: &Response<Body>, name: &str) -> Option<String> {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// A `Content-Range`: the first and last byte (`None` for `*`), and the
/// file's length (`None` for `*`).
pub(crate) type ContentRange = (Option<(u64, u64)>, Option<u64>);

/// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`), or
/// `bytes */TOTAL`.
pub(crate) fn content_range(resp: &Response<Body>) -> Option<ContentRange> {
    let v = header(resp, "content-range")?;
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (span, total) = rest.split_once('/')?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse::<u64>().ok()?),
    };
    let span = match span.trim() {
        "*" => None,
        s => {
            let (a, b) = s.split_once('-')?;
            let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
            if b < a {
                return None;
            }
            Some((a, b))
        }
    };
    Some((span, total))
}
