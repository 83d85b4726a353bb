//! When a failed request to the provider is worth another try, and how long to wait first.
//!
//! Transient failures — a refused or dropped connection, a timeout, `429 Too Many Requests`,
//! `503 Service Unavailable` and the other gateway errors — are retried a bounded number of
//! times with exponential backoff and jitter (so that a hundred kubectl processes that failed
//! together do not come back together), honouring the server's `Retry-After` up to a cap.
//! Permanent answers (every other 4xx, among them the OAuth errors `invalid_grant`,
//! `invalid_client`, `invalid_request`, `unauthorized_client`) are never retried: the same request
//! would get the same answer. So are a host name that does not resolve and a refused TLS
//! certificate (`NetworkFailure::may_pass_later`).
//!
//! Some requests must not be sent twice blindly: a token request that spends a one-time
//! credential (an authorization code, or a refresh token at a provider that rotates them). If
//! such a request reached the provider and only its answer was lost (a timeout or a reset after
//! sending, a 500 from a server that may have half-done the work, a 502/504 from a gateway whose
//! upstream may have answered), the credential may already be spent, and presenting it again is
//! at best an `invalid_grant` and at worst — with refresh-token reuse detection — the revocation of
//! the user's whole grant. Those requests are retried only when the provider surely did not
//! process them: the connection was never made, or the server said so (429, 503, 408).

use reqwest::StatusCode;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

/// Retries after the first attempt, at most.
pub const MAX_RETRIES: u32 = 3;
/// The first backoff; each further one doubles (before jitter).
const BASE_DELAY: Duration = Duration::from_millis(500);
/// No backoff of our own is longer than this.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// The longest `Retry-After` kubecred waits for. A server asking for more is treated as down
/// for now: waiting less than it asked would only be refused again, and waiting longer holds
/// every parallel kubectl on the entry's lock.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// A retry is started only if at least this long is left before the deadline for it to work in.
pub const MIN_ATTEMPT_TIME: Duration = Duration::from_secs(1);

/// Whether sending a request twice is harmless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// GETs, client credentials, the device authorization request and device polling: a
    /// duplicate costs the provider a little work and nothing else.
    Safe,
    /// The request spends a one-time credential (an authorization code, a refresh token that may
    /// rotate): resent only when the provider surely did not process it (see the module comment).
    OnlyIfUnprocessed,
}

/// Whether an HTTP status is worth a retry for a request of this kind.
pub fn status_is_transient(status: StatusCode, replay: Replay) -> bool {
    match status.as_u16() {
        // The server says it did not process the request: always safe to resend.
        408 | 429 | 503 => true,
        // The server (or a gateway's upstream) may have processed it.
        500 | 502 | 504 => replay == Replay::Safe,
        _ => false,
    }
}

/// The backoff before retry number `retry` (1-based): 0.5 s, 1 s, 2 s, … capped at 8 s, each
/// with "equal jitter" (a random point in its upper half), from `random`.
pub fn backoff(retry: u32, random: u64) -> Duration {
    let exponent = retry.saturating_sub(1).min(16);
    let full = BASE_DELAY.saturating_mul(1 << exponent).min(MAX_BACKOFF);
    let half = full / 2;
    let half_ms = half.as_millis().max(1) as u64;
    half + Duration::from_millis(random % half_ms)
}

/// A random number for jitter, from the standard library's per-process random hash keys (no
/// random-number crate for this one use).
pub fn jitter_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

/// A `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, as a wait from
/// `now`. `None` when it cannot be parsed; a date in the past is no wait.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A huge number of seconds is still "too long", not unparsable.
        return Some(Duration::from_secs(
            value.parse::<u64>().unwrap_or(u64::MAX),
        ));
    }
    // IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") is RFC 2822 with "GMT".
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let when = SystemTime::UNIX_EPOCH
        + Duration::from_secs(u64::try_from(date.timestamp()).ok()?)
        + Duration::from_nanos(u64::from(date.timestamp_subsec_nanos()));
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_a_cap() {
        for random in [0, 1, 12345, u64::MAX] {
            let first = backoff(1, random);
            assert!(
                first >= Duration::from_millis(250) && first < Duration::from_millis(500),
                "{first:?}"
            );
            let second = backoff(2, random);
            assert!(second >= Duration::from_millis(500) && second < Duration::from_secs(1));
            let third = backoff(3, random);
            assert!(third >= Duration::from_secs(1) && third < Duration::from_secs(2));
            let late = backoff(40, random);
            assert!(
                late >= Duration::from_secs(4) && late < MAX_BACKOFF,
                "{late:?}"
            );
        }
        // Jitter: different random numbers, different waits.
        assert_ne!(backoff(3, 1), backoff(3, 700));
        assert_ne!(jitter_seed(), jitter_seed());
    }

    #[test]
    fn retry_after_in_seconds_and_as_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:42 GMT", now),
            Some(Duration::from_secs(5))
        );
        // In the past: retry now.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        for junk in ["", "-1", "1.5", "soon", "Sun, 06 Nov"] {
            assert_eq!(parse_retry_after(junk, now), None, "{junk:?}");
        }
    }

    #[test]
    fn which_statuses_are_retried() {
        let status = |code| StatusCode::from_u16(code).unwrap();
        for code in [408, 429, 503] {
            assert!(status_is_transient(status(code), Replay::Safe));
            assert!(status_is_transient(status(code), Replay::OnlyIfUnprocessed));
        }
        for code in [500, 502, 504] {
            assert!(status_is_transient(status(code), Replay::Safe));
            assert!(!status_is_transient(
                status(code),
                Replay::OnlyIfUnprocessed
            ));
        }
        for code in [200, 302, 400, 401, 403, 404, 501, 505] {
            assert!(!status_is_transient(status(code), Replay::Safe), "{code}");
        }
    }
}
