//! The cycle skeleton (SPEC section 4) shared by a team's orchestrator_reflect loop and a
//! session's own reflection: pause checkpoints, the iteration counter, the error budget with
//! its back-off, stall tracking and the completion summary. Each loop supplies only what one
//! iteration does.

use std::time::Duration;

use crate::model::{CycleOutcome, ReflectionCycle};

use super::RunControl;
use super::events::EventKind;
use super::protocol::{SummaryInput, check_stall, completion_summary, remember_synthesis};
use super::sink::Emitter;

/// Consecutive failed iterations that end a cycle.
pub(crate) const ERROR_BUDGET: u32 = 3;
/// Consecutive stalled iterations that end a cycle.
pub(crate) const STALL_LIMIT: u32 = 2;

/// How one iteration ended.
pub(crate) enum Step {
    Continue,
    GoalMet,
    Stalled,
    Cancelled,
    /// The iteration failed; it is retried after a back-off until the error budget is spent.
    Error(String),
    /// The cycle's state could not be saved: it ends now (what is not on disk must not be
    /// reported as done).
    SaveFailed,
}

/// One kind of reflect loop.
pub(crate) trait CycleLoop {
    /// The cycle's counters and history.
    fn state(&mut self) -> &mut ReflectionCycle;

    /// Runs one iteration.
    async fn iterate(&mut self, iteration: u32) -> Step;

    /// The state changed at a step boundary: a team persists it; a session keeps it in memory.
    fn persist(&mut self) {}

    /// The run paused (true) or went on (false).
    fn paused(&mut self, _paused: bool) {}
}

/// What a loop runs with: its controls and where its events go.
pub(crate) struct CycleContext<'a> {
    pub control: &'a RunControl,
    pub emitter: &'a Emitter,
    pub backoff: Duration,
}

/// Iterates until the goal is met, the iterations run out, the answers stall, errors pile up or
/// the run is stopped.
pub(crate) async fn drive<L: CycleLoop>(cycle: &mut L, cx: &CycleContext<'_>) -> CycleOutcome {
    let outcome = drive_until_done(cycle, cx).await;
    cx.control.settle(outcome)
}

async fn drive_until_done<L: CycleLoop>(cycle: &mut L, cx: &CycleContext<'_>) -> CycleOutcome {
    loop {
        if !checkpoint(cycle, cx).await {
            return CycleOutcome::Cancelled;
        }
        let state = cycle.state();
        if state.iteration >= state.max_iterations {
            return CycleOutcome::MaxIterations;
        }
        state.iteration += 1;
        let iteration = state.iteration;
        let max_iterations = state.max_iterations;
        cycle.persist();
        cx.emitter.emit(EventKind::IterationStarted {
            iteration,
            max_iterations,
        });
        match cycle.iterate(iteration).await {
            Step::Continue => {}
            Step::GoalMet => return CycleOutcome::GoalMet,
            Step::Stalled => return CycleOutcome::Stalled,
            Step::Cancelled => return CycleOutcome::Cancelled,
            Step::SaveFailed => return CycleOutcome::SaveFailed,
            Step::Error(_) if cx.control.cancelled() => return CycleOutcome::Cancelled,
            Step::Error(message) => {
                let state = cycle.state();
                state.consecutive_errors += 1;
                // The iteration is retried: the counter goes back by one.
                state.iteration -= 1;
                let errors = state.consecutive_errors;
                cx.emitter.emit(EventKind::Error { iteration, message });
                cycle.persist();
                if errors >= ERROR_BUDGET {
                    return CycleOutcome::ErrorBudget;
                }
                if !cx.control.sleep(cx.backoff).await {
                    return CycleOutcome::Cancelled;
                }
            }
        }
    }
}

/// Waits while paused. A resume clears the stall history (SPEC section 4). Returns false when
/// the cycle was stopped.
pub(crate) async fn checkpoint<L: CycleLoop>(cycle: &mut L, cx: &CycleContext<'_>) -> bool {
    match cx.control.wait_if_paused(cx.emitter, |p| cycle.paused(p)).await {
        None => false,
        Some(resumed) => {
            if resumed {
                let state = cycle.state();
                state.recent_syntheses.clear();
                state.consecutive_stalls = 0;
                cycle.persist();
            }
            true
        }
    }
}

/// What comparing an answer with the recent ones found.
pub(crate) struct StallVerdict {
    /// The `stall_warning` to announce, when the answer stalled.
    pub warning: Option<EventKind>,
    /// The stall limit is reached: the cycle ends.
    pub limit_reached: bool,
}

/// Compares an iteration's answer with the recent ones, counts a stall and remembers the
/// answer. The caller announces the warning when its step is saved.
pub(crate) fn track_stall(state: &mut ReflectionCycle, text: &str, iteration: u32) -> StallVerdict {
    let check = check_stall(text, &state.recent_syntheses);
    let warning = if check.stalled() {
        state.consecutive_stalls += 1;
        Some(EventKind::StallWarning {
            iteration,
            consecutive: state.consecutive_stalls,
            similarity: check.similarity,
        })
    } else {
        state.consecutive_stalls = 0;
        None
    };
    remember_synthesis(&mut state.recent_syntheses, text);
    StallVerdict {
        warning,
        limit_reached: state.consecutive_stalls >= STALL_LIMIT,
    }
}

/// Marks the state finished with `outcome`.
pub(crate) fn conclude(state: &mut ReflectionCycle, outcome: CycleOutcome) {
    state.active = false;
    state.paused = false;
    state.outcome = Some(outcome);
    state.goal_met = outcome == CycleOutcome::GoalMet;
    state.stalled = outcome == CycleOutcome::Stalled;
    state.cancelled = outcome == CycleOutcome::Cancelled;
    state.completed_at = Some(chrono::Utc::now());
}

/// The completion summary of a finished cycle (SPEC section 4).
pub(crate) fn summary(state: &ReflectionCycle, outcome: CycleOutcome) -> String {
    completion_summary(&SummaryInput::from_cycle(state, outcome))
}
