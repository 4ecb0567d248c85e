//! Rate limits per host: the [`HttpOptions::max_rate_per_host`] cap, and the
//! pauses a server asks for (`RateLimit` headers with no request left, a
//! `429`'s or `503`'s `Retry-After`), kept for every source of a client.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ureq::Body;
use ureq::http::Response;

use gguf_validate_core::limits;
use gguf_validate_core::remote::Url;

use crate::options::HttpOptions;
use crate::response::{header, retry_after};

/// When each host (`scheme://host:port`) may next be sent a request (the
/// rate cap, and `RateLimit`/`Retry-After` pauses); at most
/// [`limits::REMOTE_MAX_PACED_HOSTS`] hosts are remembered.
#[derive(Debug, Default)]
pub(crate) struct Pacer {
    next: Mutex<BTreeMap<String, Instant>>,
}

impl Pacer {
    /// Waits until `at`'s host may be sent a request (the rate cap and any
    /// pause a server asked for), and books the next slot. Fails with the
    /// wait when it would pass `until`.
    pub(crate) fn pace(&self, at: &Url, until: Instant, opts: &HttpOptions) -> Result<(), Duration> {
        let gap = opts
            .max_rate_per_host
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(|r| Duration::from_secs_f64((1.0 / r).min(limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS as f64)));
        let key = format!("{}://{}", at.scheme, at.authority());
        let slot = {
            let mut pacer = self.next.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = Instant::now();
            let free = pacer.get(&key).copied().filter(|t| *t > now).unwrap_or(now);
            if gap.is_some() || free > now {
                if pacer.len() >= limits::REMOTE_MAX_PACED_HOSTS && !pacer.contains_key(&key) {
                    // Forget the hosts whose slots passed; never grow past the bound.
                    pacer.retain(|_, t| *t > now);
                }
                if pacer.len() < limits::REMOTE_MAX_PACED_HOSTS || pacer.contains_key(&key) {
                    pacer.insert(key, free.checked_add(gap.unwrap_or_default()).unwrap_or(free));
                }
            }
            free
        };
        let now = Instant::now();
        if slot <= now {
            return Ok(());
        }
        if slot >= until {
            return Err(slot.saturating_duration_since(now));
        }
        std::thread::sleep(slot.saturating_duration_since(now));
        Ok(())
    }

    /// A server's word on its rate limit: `RateLimit` (`r=` requests left,
    /// `t=` seconds to the reset; the IETF draft's structured form) or
    /// `RateLimit-Remaining` with `RateLimit-Reset`, and a `429`'s or
    /// `503`'s `Retry-After`: when nothing is left, the host is paused for
    /// other requests too (at most [`limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS`]
    /// for `RateLimit`, [`HttpOptions::retry_after_cap`] for `Retry-After`).
    pub(crate) fn note(&self, at: &Url, resp: &Response<Body>, opts: &HttpOptions) {
        let status = resp.status().as_u16();
        let pause = match rate_limit(resp) {
            Some((0, reset)) => Some(reset.min(Duration::from_secs(limits::REMOTE_MAX_RATE_LIMIT_WAIT_SECS))),
            // The retry's own wait, as `Client::get` honours it.
            _ if matches!(status, 429 | 503) => retry_after(resp).map(|a| a.min(opts.retry_after_cap)),
            _ => None,
        };
        let Some(pause) = pause else { return };
        let Some(until) = Instant::now().checked_add(pause) else { return };
        let key = format!("{}://{}", at.scheme, at.authority());
        let mut pacer = self.next.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pacer.len() < limits::REMOTE_MAX_PACED_HOSTS || pacer.contains_key(&key) {
            let slot = pacer.entry(key).or_insert(until);
            *slot = (*slot).max(until);
        }
    }
}

/// `RateLimit: ...;r=REMAINING;t=RESET` (or `remaining=`/`reset=`), else
/// `RateLimit-Remaining` and `RateLimit-Reset`: requests left and seconds
/// to the reset.
fn rate_limit(resp: &Response<Body>) -> Option<(u64, Duration)> {
    let num = |v: &str| v.trim().trim_matches('"').parse::<u64>().ok();
    if let Some(v) = header(resp, "ratelimit") {
        let (mut left, mut reset) = (None, None);
        for part in v.split([';', ',']) {
            let Some((k, val)) = part.split_once('=') else { continue };
            match k.trim().to_ascii_lowercase().as_str() {
                "r" | "remaining" => left = num(val),
                "t" | "reset" => reset = num(val),
                _ => {}
            }
        }
        if let (Some(l), Some(t)) = (left, reset) {
            return Some((l, Duration::from_secs(t)));
        }
    }
    let left = header(resp, "ratelimit-remaining").and_then(|v| num(&v))?;
    let reset = header(resp, "ratelimit-reset").and_then(|v| num(&v))?;
    Some((left, Duration::from_secs(reset)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use crate::options::HttpOptions;
    use crate::scripted;

    use crate::scripted::tests::{answer, url};

    #[test]
    fn a_rate_cap_spaces_the_requests_to_a_host() {
        let ok = answer("HTTP/1.1 200 OK");
        let opts = HttpOptions { max_rate_per_host: Some(20.0), ..HttpOptions::default() };
        let (client, _) = scripted::client(opts, vec![ok; 5]);
        let t = Instant::now();
        for _ in 0..5 {
            client.probe(&url(), None).unwrap();
        }
        // Five requests at 20 a second: four gaps of 50 ms at least.
        assert!(t.elapsed() >= Duration::from_millis(195), "{:?}", t.elapsed());
    }

    #[test]
    fn a_server_out_of_requests_pauses_its_host_within_the_bound() {
        let spent = answer("HTTP/1.1 200 OK\r\nRateLimit: \"api\";r=0;t=1");
        let (client, _) = scripted::client(HttpOptions::default(), vec![spent, answer("HTTP/1.1 200 OK")]);
        client.probe(&url(), None).unwrap();
        let t = Instant::now();
        client.probe(&url(), None).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(900), "{:?}", t.elapsed());
        // A pause past the file's deadline fails at once, as a timeout.
        let long = answer("HTTP/1.1 200 OK\r\nRateLimit-Remaining: 0\r\nRateLimit-Reset: 3600");
        let (client, served) = scripted::client(HttpOptions::default(), vec![long, answer("HTTP/1.1 200 OK")]);
        client.probe(&url(), None).unwrap();
        let t = Instant::now();
        let deadline = Instant::now().checked_add(Duration::from_secs(2));
        let e = client.probe(&url(), deadline).unwrap_err();
        assert_eq!(e.class(), "timeout", "{e}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!(served.connections.load(Ordering::Relaxed), 1, "no request after the pause was asked");
    }
}
