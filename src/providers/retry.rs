//! When and how long to wait before another attempt at a turn.
//!
//! Transient failures (connect errors, 429, 5xx, 529, a stream cut or stalled before any text)
//! get up to `max_attempts` tries in all. The wait is the server's `Retry-After` when it gave one
//! (capped), else exponential back-off from `base_delay`, capped at `max_delay`, minus up to 25 %
//! jitter so that many sessions failing together do not come back together. A server that asks
//! for a longer wait than `max_retry_after` is not tried again here: the error carries the whole
//! wait, and the engine waits it out (see `engine/limits.rs`).

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::error::ProviderError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The first back-off; doubled on each further attempt.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured as given; longer requests are cut to this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// Whether a failed attempt number `attempt` (1-based) should be followed by another.
    /// Never once text was streamed: the deltas are already on screen.
    /// A limit that resets later than `max_retry_after` is not tried again here: the engine
    /// waits it out, where the wait is seen and bounded (`rate_limit_wait_secs`).
    pub fn should_retry(&self, attempt: u32, error: &ProviderError, streamed_text: bool) -> bool {
        let long_wait = error.retry_after.is_some_and(|w| w > self.max_retry_after);
        attempt < self.max_attempts && error.kind.is_transient() && !streamed_text && !long_wait
    }

    /// The wait after failed attempt number `attempt` (1-based).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_retry_after);
        }
        let exponent = attempt.saturating_sub(1).min(16);
        let full = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        // Up to 25 % less, never more: the cap stays a cap.
        full.mul_f64(1.0 - 0.25 * fastrand::f64())
    }
}

/// The server's requested wait: `retry-after-ms` (OpenAI/Azure), else `retry-after` in seconds
/// or as an HTTP date, else a limit's reset header (see [`super::limits::wait_from_headers`]).
pub fn retry_after_from_headers(headers: &HeaderMap) -> Option<Duration> {
    super::limits::wait_from_headers(headers, chrono::Utc::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::limits::parse_retry_after;

    #[test]
    fn absurd_retry_after_values_are_long_waits_not_panics() {
        let now = chrono::Utc::now();
        assert_eq!(parse_retry_after("1e20", now), Some(Duration::MAX));
        assert_eq!(parse_retry_after("-3", now), None);
        let mut headers = HeaderMap::new();
        headers.insert("retry-after-ms", "1e300".parse().unwrap());
        assert_eq!(retry_after_from_headers(&headers), Some(Duration::MAX));
    }
    use crate::providers::error::ErrorKind;
    use chrono::TimeZone;

    #[test]
    fn backoff_doubles_is_capped_and_only_shrinks_with_jitter() {
        let p = RetryPolicy::default();
        for _ in 0..50 {
            let d1 = p.delay(1, None);
            assert!(
                d1 <= Duration::from_millis(500) && d1 >= Duration::from_millis(375),
                "{d1:?}"
            );
            let d2 = p.delay(2, None);
            assert!(
                d2 <= Duration::from_millis(1000) && d2 >= Duration::from_millis(750),
                "{d2:?}"
            );
            let d9 = p.delay(9, None);
            assert!(
                d9 <= Duration::from_secs(8) && d9 >= Duration::from_secs(6),
                "{d9:?}"
            );
        }
        assert!(p.delay(40, None) <= Duration::from_secs(8));
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn retry_only_transient_errors_before_any_text_within_the_budget() {
        let p = RetryPolicy::default();
        let e = |kind| ProviderError::new(kind, "p", "m");
        assert!(p.should_retry(1, &e(ErrorKind::RateLimited), false));
        assert!(p.should_retry(2, &e(ErrorKind::Server), false));
        assert!(
            !p.should_retry(3, &e(ErrorKind::Server), false),
            "three attempts at most"
        );
        assert!(
            !p.should_retry(1, &e(ErrorKind::Connection), true),
            "text already streamed"
        );
        assert!(!p.should_retry(1, &e(ErrorKind::Auth), false));
        assert!(!RetryPolicy::none().should_retry(1, &e(ErrorKind::Server), false));
    }

    #[test]
    fn retry_after_header_forms() {
        let now = chrono::Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 1.5 ", now), Some(Duration::from_millis(1500)));
        assert_eq!(
            parse_retry_after("Sat, 21 Nov 2026 12:00:07 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sat, 21 Nov 2026 11:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("soon", now), None);

        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after_from_headers(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after_from_headers(&h), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after_from_headers(&HeaderMap::new()), None);
    }
}
