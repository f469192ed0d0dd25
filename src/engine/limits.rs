//! Rate and usage limits are waited out. A turn whose request met a limit (a 429 or 529 whose
//! reset the provider gave, a CLI agent's `usage limit reached|<epoch>`, or a limit the
//! provider's own retries could not get past) waits in its run until the reset and asks again:
//! its run is `waiting for limit` meanwhile (`waiting_for_limit` / `limit_wait_over`), other
//! runs go on, and the time waited counts as paused (the run's time limit and durations leave it
//! out). A wait longer than the run's `rate_limit_wait_secs` (config.yaml, a preset, `huddle run
//! --max-limit-wait`; 0: never wait) is not made: the run ends with the outcome `rate_limited`
//! and stays open, to be resumed. A member with a `fallback_model:` hands the turn to it instead
//! of waiting.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::providers::{ErrorKind, ProviderError};

use super::events::EventKind;
use super::sink::Emitter;
use super::{RunControl, lock};

pub use crate::config::DEFAULT_RATE_LIMIT_WAIT_SECS;

/// The longest back-off: 4 minutes.
const MAX_BACKOFF: Duration = Duration::from_secs(240);

/// The wait after the n-th limit (from 1) that said no reset time: 15 s, 30 s, 60 s, 120 s, then
/// 240 s ([`MAX_BACKOFF`]) for every one after.
pub(crate) fn backoff(n: u32) -> Duration {
    Duration::from_secs(15u64 << n.saturating_sub(1).min(4)).min(MAX_BACKOFF)
}

/// A failure that is a limit worth waiting out (never once text was streamed: the deltas are
/// on screen). A quota with no reset time (billing) is not.
pub(crate) fn waitable(e: &ProviderError) -> bool {
    e.partial_text.is_empty()
        && match e.kind {
            ErrorKind::RateLimited | ErrorKind::Overloaded => true,
            ErrorKind::QuotaExhausted => e.retry_after.is_some(),
            _ => false,
        }
}

/// A run waiting for a limit: who, until when, why.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitWait {
    pub session: String,
    /// Whose limit (the provider's name).
    pub provider: String,
    pub until: DateTime<Utc>,
    pub reason: String,
}

/// The limit waits of one run.
pub(crate) struct LimitState {
    /// The longest a wait may be (`rate_limit_wait_secs`).
    max: Mutex<Duration>,
    /// The waits in progress, each with its number (for `huddle ps` and the panel; the time
    /// limit's watchdog does not count while there is one).
    waiting: watch::Sender<Vec<(u64, LimitWait)>>,
    /// The number the next wait gets.
    next: AtomicU64,
    /// Since when at least one turn of the run waits.
    since: Mutex<Option<tokio::time::Instant>>,
    /// Why the run ended `rate_limited`, once it did.
    gave_up: Mutex<Option<String>>,
}

impl Default for LimitState {
    fn default() -> Self {
        LimitState {
            max: Mutex::new(Duration::from_secs(DEFAULT_RATE_LIMIT_WAIT_SECS)),
            waiting: watch::channel(Vec::new()).0,
            next: AtomicU64::new(0),
            since: Mutex::new(None),
            gave_up: Mutex::new(None),
        }
    }
}

/// What a turn that met a limit does.
pub(crate) enum Verdict {
    /// Waited: ask again.
    Again,
    /// The run was stopped while it waited (why, in words, for the run left to be resumed).
    Stopped(String),
    /// The wait would pass the bound: the run ends `rate_limited` (the error says why).
    GiveUp(ProviderError),
}

impl RunControl {
    /// The longest this run waits for a limit (0: it never waits).
    pub fn set_limit_wait(&self, max: Duration) {
        *lock(&self.limits.max) = max;
    }

    pub fn limit_wait_max(&self) -> Duration {
        *lock(&self.limits.max)
    }

    /// The turns of the run waiting for a limit now (watched by the time limit: it counts while
    /// this is empty).
    pub fn limit_waiting(&self) -> watch::Receiver<Vec<(u64, LimitWait)>> {
        self.limits.waiting.subscribe()
    }

    /// The waits in progress.
    pub fn limit_waits(&self) -> Vec<LimitWait> {
        self.limits
            .waiting
            .borrow()
            .iter()
            .map(|(_, w)| w.clone())
            .collect()
    }

    /// Why the run ended `rate_limited`, if it did.
    pub fn rate_limited(&self) -> Option<String> {
        lock(&self.limits.gave_up).clone()
    }

    /// Waits out the limit `error` said (or a back-off when it gave no reset), bounded by the
    /// run's `rate_limit_wait_secs`: reported, counted as paused, cut short by a stop.
    pub async fn wait_for_limit(
        &self,
        emitter: &Emitter,
        who: (&str, &str),
        error: &ProviderError,
        attempt: u32,
    ) -> Verdict {
        let (session_id, session) = who;
        let wait = error.retry_after.unwrap_or_else(|| backoff(attempt));
        let max = self.limit_wait_max();
        let reason = crate::text::first_line(&error.message, 200);
        if wait > max {
            let why = if max.is_zero() {
                format!("{session}: {reason} (rate_limit_wait_secs is 0: no waiting)")
            } else {
                format!(
                    "{session}: {reason}; it resets in {}, longer than rate_limit_wait_secs ({}s)",
                    crate::text::duration(wait.as_millis().min(u64::MAX as u128) as u64),
                    max.as_secs()
                )
            };
            self.give_up_on_limit(&why);
            let mut e = error.clone();
            e.message = why;
            return Verdict::GiveUp(e);
        }
        let until =
            Utc::now() + chrono::Duration::from_std(wait).unwrap_or_else(|_| chrono::Duration::zero());
        let entry = LimitWait {
            session: session.to_string(),
            provider: error.provider.clone(),
            until,
            reason: reason.clone(),
        };
        let number = self.begin_wait(entry);
        emitter.emit(EventKind::LimitWait {
            session_id: session_id.to_string(),
            session: session.to_string(),
            provider: error.provider.clone(),
            until,
            wait_ms: wait.as_millis().min(u64::MAX as u128) as u64,
            reason,
        });
        let started = tokio::time::Instant::now();
        let waited = self.sleep(wait).await;
        self.end_wait(number);
        emitter.emit(EventKind::LimitWaitOver {
            session_id: session_id.to_string(),
            session: session.to_string(),
            waited_ms: started.elapsed().as_millis().min(u64::MAX as u128) as u64,
        });
        if waited {
            Verdict::Again
        } else {
            Verdict::Stopped(format!(
                "stopped while {session} waited until {} UTC for the {} limit",
                until.format("%H:%M"),
                error.provider
            ))
        }
    }

    /// The run ends `rate_limited` (it stops like the stop key; it stays open to be resumed).
    fn give_up_on_limit(&self, why: &str) {
        {
            let mut gave_up = lock(&self.limits.gave_up);
            if gave_up.is_some() || self.cancelled() {
                return;
            }
            *gave_up = Some(why.to_string());
        }
        tracing::info!(why, "rate limited past the run's wait bound");
        self.cancel.cancel();
    }

    /// A stop of the run itself (the stop key, `huddle stop`) that came during a limit wait:
    /// the run ends as interrupted, to be resumed once the limit has reset, not thrown away;
    /// `why` is kept unless something else already said how it ends.
    pub(crate) fn stopped_in_wait(&self, why: &str) {
        if self.interrupted() || lock(&self.limits.gave_up).is_some() {
            return;
        }
        let mut reason = lock(&self.interrupt_reason);
        if reason.is_none() {
            *reason = Some(why.to_string());
        }
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// A wait begins; returns its number (to end it by).
    fn begin_wait(&self, wait: LimitWait) -> u64 {
        let number = self.limits.next.fetch_add(1, Ordering::Relaxed);
        let mut since = lock(&self.limits.since);
        self.limits.waiting.send_modify(|waits| {
            if waits.is_empty() {
                *since = Some(tokio::time::Instant::now());
            }
            waits.push((number, wait));
        });
        number
    }

    /// A wait ended: with none left, the time waited counts as paused.
    fn end_wait(&self, number: u64) {
        let mut since = lock(&self.limits.since);
        self.limits.waiting.send_modify(|waits| {
            waits.retain(|(n, _)| *n != number);
            if waits.is_empty()
                && let Some(at) = since.take()
            {
                self.add_paused(at.elapsed());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sink::EventSink;

    #[test]
    fn backoff_doubles_to_four_minutes_and_stays() {
        let secs: Vec<u64> = (0..8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [15, 15, 30, 60, 120, 240, 240, 240]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn only_limits_are_waited_out() {
        let e = |kind| ProviderError::new(kind, "p", "m");
        assert!(waitable(&e(ErrorKind::RateLimited)));
        assert!(waitable(&e(ErrorKind::Overloaded)));
        assert!(!waitable(&e(ErrorKind::QuotaExhausted)), "billing");
        assert!(waitable(
            &e(ErrorKind::QuotaExhausted).with_retry_after(Some(Duration::from_secs(60)))
        ));
        assert!(!waitable(&e(ErrorKind::Server)));
        let mut streamed = e(ErrorKind::RateLimited);
        streamed.partial_text = "half".into();
        assert!(!waitable(&streamed));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_is_reported_counted_as_paused_and_bounded() {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let control = RunControl::new(&shutdown);
        let (sink, mut events) = EventSink::channel();
        let emitter = Emitter {
            sink,
            group_id: "g".into(),
            group: "G".into(),
            run_id: Some("r".into()),
        };
        control.set_limit_wait(Duration::from_secs(10));
        let limited = ProviderError::new(ErrorKind::RateLimited, "p", "429: slow down")
            .with_retry_after(Some(Duration::from_secs(3)));
        let verdict = control
            .wait_for_limit(&emitter, ("s1", "alpha"), &limited, 1)
            .await;
        assert!(matches!(verdict, Verdict::Again));
        assert_eq!(control.paused_for(), Duration::from_secs(3));
        let names: Vec<&str> = std::iter::from_fn(|| events.try_recv().ok())
            .map(|e| e.kind.name())
            .collect();
        assert_eq!(names, ["waiting_for_limit", "limit_wait_over"]);
        assert!(control.limit_waits().is_empty());
        // Past the bound: no wait, the run ends rate_limited.
        let far = ProviderError::new(ErrorKind::RateLimited, "p", "429")
            .with_retry_after(Some(Duration::from_secs(60)));
        let verdict = control.wait_for_limit(&emitter, ("s1", "alpha"), &far, 1).await;
        assert!(matches!(verdict, Verdict::GiveUp(_)));
        assert!(control.cancelled());
        assert!(
            control
                .rate_limited()
                .is_some_and(|w| w.contains("rate_limit_wait_secs (10s)"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn overlapping_waits_are_listed_each_and_count_as_paused_once() {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let control = std::sync::Arc::new(RunControl::new(&shutdown));
        let (sink, _events) = EventSink::channel();
        let emitter = Emitter {
            sink,
            group_id: "g".into(),
            group: "G".into(),
            run_id: Some("r".into()),
        };
        // The same words from the same provider for two members: two waits all the same.
        let limited = |secs| {
            ProviderError::new(ErrorKind::RateLimited, "p", "429")
                .with_retry_after(Some(Duration::from_secs(secs)))
        };
        let waits = control.limit_waiting();
        let (c, e) = (control.clone(), emitter.clone());
        let first = tokio::spawn(async move { c.wait_for_limit(&e, ("s", "alpha"), &limited(3), 1).await });
        let (c, e) = (control.clone(), emitter.clone());
        let second = tokio::spawn(async move { c.wait_for_limit(&e, ("s", "alpha"), &limited(5), 1).await });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(control.limit_waits().len(), 2);
        assert_eq!(waits.borrow().len(), 2);
        assert!(matches!(first.await, Ok(Verdict::Again)));
        assert_eq!(control.limit_waits().len(), 1, "the other one still waits");
        assert_eq!(control.paused_for(), Duration::ZERO, "not yet: one waits");
        assert!(matches!(second.await, Ok(Verdict::Again)));
        assert!(control.limit_waits().is_empty() && waits.borrow().is_empty());
        assert_eq!(control.paused_for(), Duration::from_secs(5));
    }
}
