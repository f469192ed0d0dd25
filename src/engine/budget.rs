//! Enforcing a run's budget (see [`crate::model::RunBudget`]): the tokens and the cost of every
//! finished turn are counted as they arrive, and a watchdog ends the run when its time (not
//! counting pauses) is up. A spent budget stops the run like the stop key does (in-flight requests are
//! cancelled, partial answers kept); the run then ends with `budget_exhausted` instead of
//! `cancelled`.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::model::{BudgetExceeded, BudgetLimit, Cost, CycleOutcome, RunBudget, Usage};

use super::events::EventKind;
use super::sink::Emitter;
use super::{RunControl, lock};

/// A run's budget and what it has used so far.
#[derive(Default)]
pub(crate) struct BudgetState {
    limits: Mutex<RunBudget>,
    /// The tokens the run's mode counted against the token budget.
    tokens: AtomicU64,
    /// Every turn of the run (and of runs it started), as they finished.
    spent: Mutex<Spent>,
    exhausted: Mutex<Option<BudgetExceeded>>,
}

/// What a run used: the tokens and money of its turns (a linked run's included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub usage: Usage,
    pub cost: Cost,
}

impl Spent {
    pub fn add(&mut self, other: Spent) {
        self.usage.add(other.usage);
        self.cost.add(other.cost);
    }
}

impl RunControl {
    /// Sets the limits of this run (once, when its team is read).
    pub fn set_budget(&self, budget: RunBudget) {
        *lock(&self.budget.limits) = budget;
    }

    pub fn budget(&self) -> RunBudget {
        *lock(&self.budget.limits)
    }

    /// Counts a finished turn's tokens; a spent token budget ends the run.
    pub fn count_tokens(&self, usage: Usage, emitter: &Emitter) {
        self.budget.tokens.fetch_add(usage.total(), Ordering::SeqCst);
        self.check_budget(emitter);
    }

    /// Adds what a turn of the run (or a run it started) used to the run's total; a spent cost
    /// budget ends the run.
    pub fn count_spent(&self, spent: Spent, emitter: &Emitter) {
        lock(&self.budget.spent).add(spent);
        self.check_budget(emitter);
    }

    /// What the run used so far.
    pub fn spent(&self) -> Spent {
        *lock(&self.budget.spent)
    }

    fn check_budget(&self, emitter: &Emitter) {
        let tokens = self.budget.tokens.load(Ordering::SeqCst);
        let cost = self.spent().cost.usd;
        if let Some(spent) = self.budget().exceeded(Duration::ZERO, tokens, cost) {
            self.exhaust(spent, emitter);
        }
    }

    /// Ends the run because of `spent` (the first limit reached is the one reported).
    pub fn exhaust(&self, spent: BudgetExceeded, emitter: &Emitter) {
        {
            let mut exhausted = lock(&self.budget.exhausted);
            if exhausted.is_some() || self.cancelled() {
                return;
            }
            *exhausted = Some(spent);
        }
        tracing::info!(%spent, "run budget exhausted");
        emitter.emit(EventKind::Warning {
            message: spent.to_string(),
        });
        self.cancel.cancel();
    }

    /// Which limit ended the run, if one did.
    pub fn budget_exhausted(&self) -> Option<BudgetExceeded> {
        *lock(&self.budget.exhausted)
    }

    /// The outcome of a run that ended with `outcome`: a run stopped by its budget was not
    /// cancelled by anyone, it ran out.
    pub fn settle(&self, outcome: CycleOutcome) -> CycleOutcome {
        if outcome == CycleOutcome::Cancelled && self.budget_exhausted().is_some() {
            CycleOutcome::BudgetExhausted
        } else if outcome == CycleOutcome::Cancelled && self.rate_limited().is_some() {
            // A limit that would not reset in time stopped it (see `engine/limits.rs`).
            CycleOutcome::RateLimited
        } else {
            outcome
        }
    }

    /// A completion summary with the budget's figures added when the budget ended the run.
    pub fn annotate_summary(&self, summary: String) -> String {
        // Its duration leaves out time paused and waiting for a rate or usage limit: said so,
        // with how long (review 24 finding 4: a run stopped during a wait read "518ms").
        let paused = self.paused_for();
        let summary = if paused.is_zero() {
            summary
        } else {
            format!(
                "{}\nPaused or waiting for a limit: {} (not in its duration)",
                summary.trim_end(),
                super::protocol::types::format_duration(paused)
            )
        };
        match (self.budget_exhausted(), self.rate_limited()) {
            (Some(mut spent), _) => {
                // The run's whole total, as the summary's `spent` line says it: turns that were
                // running when the budget stopped the run may have added to it since (review
                // 25-B: two totals read as a contradiction).
                let total = match spent.limit {
                    BudgetLimit::Cost => crate::model::micro_usd(self.spent().cost.usd),
                    BudgetLimit::Tokens => self.budget.tokens.load(Ordering::SeqCst),
                    BudgetLimit::Duration => spent.used,
                };
                spent.used = spent.used.max(total);
                format!("{summary}\n{}", crate::text::capitalised(&spent.to_string()))
            }
            (None, Some(why)) => format!("{summary}\nRate limited: {why} (resume it later)"),
            (None, None) => summary,
        }
    }
}

/// Runs `work` under the run's time limit: when the limit is reached the run is stopped (the
/// work then ends on its own, keeping what it has). Time spent paused does not count.
pub(crate) async fn within_time_limit<T>(
    control: &RunControl,
    emitter: &Emitter,
    work: impl Future<Output = T>,
) -> T {
    let Some(limit) = control.budget().max_duration() else {
        return work.await;
    };
    let work = std::pin::pin!(work);
    let mut work = work;
    tokio::select! {
        out = &mut work => return out,
        used = time_limit(control, limit) => {
            control.exhaust(
                BudgetExceeded {
                    limit: crate::model::BudgetLimit::Duration,
                    allowed: limit.as_secs(),
                    used: used.as_secs(),
                },
                emitter,
            );
        }
    }
    work.await
}

/// Waits until the run has been running (not paused, not waiting for a limit) for `limit`;
/// returns the time counted.
async fn time_limit(control: &RunControl, limit: Duration) -> Duration {
    let mut paused = control.paused.subscribe();
    let mut waiting = control.limit_waiting();
    let mut used = Duration::ZERO;
    loop {
        let stopped = *paused.borrow_and_update() || !waiting.borrow_and_update().is_empty();
        if stopped {
            let changed = tokio::select! {
                c = paused.changed() => c,
                c = waiting.changed() => c,
            };
            if changed.is_err() {
                // The senders live as long as the run: nothing will resume it.
                std::future::pending::<()>().await;
            }
            continue;
        }
        let since = Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(limit.saturating_sub(used)) => return limit.max(used + since.elapsed()),
            changed = paused.changed() => {
                used += since.elapsed();
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            changed = waiting.changed() => {
                used += since.elapsed();
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sink::EventSink;

    fn control() -> (RunControl, Emitter) {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let (sink, _events) = EventSink::channel();
        let emitter = Emitter {
            sink,
            group_id: "g".into(),
            group: "G".into(),
            run_id: Some("r".into()),
        };
        (RunControl::new(&shutdown), emitter)
    }

    fn tokens(n: u64) -> Usage {
        Usage::new(n, 0)
    }

    fn dollars(usd: f64) -> Spent {
        Spent {
            usage: Usage::new(1000, 10),
            cost: Cost::of_turn(Some(usd)),
        }
    }

    #[test]
    fn money_over_the_budget_stops_the_run_naming_the_cost_budget() {
        let (control, emitter) = control();
        control.set_budget(RunBudget {
            max_cost_usd: Some(0.10),
            ..RunBudget::default()
        });
        control.count_spent(dollars(0.06), &emitter);
        control.count_spent(
            Spent {
                usage: Usage::default(),
                cost: Cost::of_turn(None),
            },
            &emitter,
        );
        assert!(!control.cancelled());
        control.count_spent(dollars(0.05), &emitter);
        assert!(control.cancelled());
        assert_eq!(
            control.settle(CycleOutcome::Cancelled),
            CycleOutcome::BudgetExhausted
        );
        let spent = control.spent();
        assert_eq!(spent.usage.input_tokens, 2000);
        assert!((spent.cost.usd - 0.11).abs() < 1e-12);
        assert_eq!(spent.cost.unpriced, 1);
        assert!(
            control.annotate_summary("Cycle finished.".into()).ends_with(
                "\nBudget exhausted: the run spent $0.110 of its cost budget of $0.100 (max_cost_usd)"
            ),
            "{}",
            control.annotate_summary(String::new())
        );
        // A turn that was running when the budget stopped the run ends after it: the summary
        // says the one total the run ended with.
        control.count_spent(dollars(0.02), &emitter);
        assert!(
            control.annotate_summary(String::new()).ends_with(
                "\nBudget exhausted: the run spent $0.130 of its cost budget of $0.100 (max_cost_usd)"
            ),
            "{}",
            control.annotate_summary(String::new())
        );
    }

    #[test]
    fn tokens_over_the_budget_stop_the_run_and_settle_as_exhausted() {
        let (control, emitter) = control();
        control.set_budget(RunBudget {
            token_budget: Some(100),
            ..RunBudget::default()
        });
        control.count_tokens(tokens(60), &emitter);
        assert!(!control.cancelled());
        assert_eq!(control.settle(CycleOutcome::Completed), CycleOutcome::Completed);
        control.count_tokens(tokens(50), &emitter);
        assert!(control.cancelled());
        assert_eq!(
            control.settle(CycleOutcome::Cancelled),
            CycleOutcome::BudgetExhausted
        );
        assert_eq!(control.budget_exhausted().map(|s| s.used), Some(110));
        assert!(
            control
                .annotate_summary("Cycle finished.".into())
                .ends_with("\nBudget exhausted: the run used 110 tokens of its token budget of 100")
        );
    }

    #[test]
    fn a_stop_is_not_a_spent_budget() {
        let (control, emitter) = control();
        control.set_budget(RunBudget {
            token_budget: Some(10),
            ..RunBudget::default()
        });
        control.cancel.cancel();
        control.count_tokens(tokens(50), &emitter);
        assert_eq!(control.settle(CycleOutcome::Cancelled), CycleOutcome::Cancelled);
    }

    #[tokio::test(start_paused = true)]
    async fn the_time_limit_stops_the_work_and_skips_paused_time() {
        let (control, emitter) = control();
        control.set_budget(RunBudget {
            max_duration_secs: Some(10),
            ..RunBudget::default()
        });
        let started = Instant::now();
        let work = async {
            // Paused from 2 s to 7 s: 5 s that do not count.
            tokio::time::sleep(Duration::from_secs(2)).await;
            control.paused.send_replace(true);
            tokio::time::sleep(Duration::from_secs(5)).await;
            control.paused.send_replace(false);
            control.cancel.cancelled().await;
            started.elapsed()
        };
        let ended_after = within_time_limit(&control, &emitter, work).await;
        assert_eq!(ended_after.as_secs(), 15);
        assert_eq!(
            control.settle(CycleOutcome::Cancelled),
            CycleOutcome::BudgetExhausted
        );
        assert_eq!(control.budget_exhausted().map(|s| s.allowed), Some(10));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_limit_does_not_count_against_the_time_limit() {
        let (control, emitter) = control();
        control.set_budget(RunBudget {
            max_duration_secs: Some(5),
            token_budget: None,
            max_cost_usd: None,
        });
        let limited = crate::providers::ProviderError::new(
            crate::providers::ErrorKind::RateLimited,
            "p",
            "429: slow down",
        )
        .with_retry_after(Some(Duration::from_secs(3)));
        let started = Instant::now();
        let work = async {
            // 1 s of work, three waits of 3 s, 1 s of work: 2 s counted of 11.
            tokio::time::sleep(Duration::from_secs(1)).await;
            for _ in 0..3 {
                let verdict = control
                    .wait_for_limit(&emitter, ("s", "alpha"), &limited, 1)
                    .await;
                assert!(matches!(verdict, crate::engine::limits::Verdict::Again));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            started.elapsed()
        };
        let took = within_time_limit(&control, &emitter, work).await;
        assert_eq!(took.as_secs(), 11);
        assert!(control.budget_exhausted().is_none());
        assert_eq!(control.paused_for(), Duration::from_secs(9));
        // The summary says that its duration leaves the waits out, and how long they were.
        assert_eq!(
            control.annotate_summary("Duration: 2.0s\n".into()),
            "Duration: 2.0s\nPaused or waiting for a limit: 9.0s (not in its duration)"
        );
        // Past the limit in counted time, it still stops the run.
        let work = async {
            tokio::time::sleep(Duration::from_secs(4)).await;
            control.cancel.cancelled().await;
        };
        within_time_limit(&control, &emitter, work).await;
        assert_eq!(
            control.settle(CycleOutcome::Cancelled),
            CycleOutcome::BudgetExhausted
        );
    }

    #[tokio::test(start_paused = true)]
    async fn work_done_in_time_is_untouched() {
        let (control, emitter) = control();
        control.set_budget(RunBudget {
            max_duration_secs: Some(10),
            ..RunBudget::default()
        });
        let out = within_time_limit(&control, &emitter, async { 7 }).await;
        assert_eq!(out, 7);
        assert!(!control.cancelled());
    }
}
