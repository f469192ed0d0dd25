//! The state of a team's current or last reflect cycle, persisted with its group so that an
//! interrupted cycle can be shown and resumed after a restart.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Usage;

macro_rules! simple_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

simple_enum!(
    /// Direction of the last two scores (SPEC section 5).
    Trend {
        Improving => "improving",
        Stable => "stable",
        Degrading => "degrading",
    }
);

simple_enum!(
    /// How a cycle (or a one-pass mode) ended (SPEC section 9, `cycle_finished`).
    CycleOutcome {
        GoalMet => "goal_met",
        MaxIterations => "max_iterations",
        Stalled => "stalled",
        ErrorBudget => "error_budget",
        Cancelled => "cancelled",
        Completed => "completed",
        SaveFailed => "save_failed",
        BudgetExhausted => "budget_exhausted",
        // The run could not do its work: every member failed, or the turn that leads it did.
        Failed => "failed",
        // A rate or usage limit would not reset within `rate_limit_wait_secs`: the run stopped,
        // and can be resumed.
        RateLimited => "rate_limited",
    }
);

/// One scored iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub iteration: u32,
    pub score: f64,
    #[serde(default)]
    pub rationale: String,
    /// The evaluator's model slug; `None` for a self-evaluation by the orchestrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_model: Option<String>,
    #[serde(default = "Utc::now")]
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<Trend>,
    /// Tokens the iteration used (every turn of its successful attempt).
    #[serde(default)]
    pub usage: Usage,
    /// Wall time of the iteration.
    #[serde(default)]
    pub duration_ms: u64,
    /// The workers the iteration's plan gave a task (by name): with the score, what a later
    /// plan is told of the iteration once its own messages are no longer sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assigned: Vec<String>,
}

/// A reflect cycle's state. Every field has a default so older files keep loading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReflectionCycle {
    pub goal: String,
    pub max_iterations: u32,
    /// The last iteration that was started (1-based; 0 before the first).
    pub iteration: u32,
    /// The last iteration that completed fully; a resumed cycle continues after it.
    pub completed_iterations: u32,
    pub active: bool,
    pub paused: bool,
    pub goal_met: bool,
    pub stalled: bool,
    pub cancelled: bool,
    pub outcome: Option<CycleOutcome>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    /// Evaluator session name, `None` when the orchestrator evaluates itself.
    pub evaluator: Option<String>,
    pub last_evaluation: Option<Evaluation>,
    /// Every iteration's evaluation, its rationale cut to [`EARLIER_RATIONALE_CHARS`] (see
    /// [`ReflectionCycle::record_evaluation`]).
    pub evaluations: Vec<Evaluation>,
    pub pending_adjustments: Vec<String>,
    /// The last syntheses (at most 5), for stall detection across a restart.
    pub recent_syntheses: Vec<String>,
    pub last_synthesis: Option<String>,
    pub consecutive_stalls: u32,
    pub consecutive_errors: u32,
    /// User messages sent while the cycle ran, handed to the orchestrator at the next plan.
    pub queued_messages: Vec<String>,
    pub usage: Usage,
    pub duration_ms: u64,
    /// What the group's earlier runs were asked, oldest first (a team with `memory:
    /// conversation`: its members' conversations go on from them, so the run's briefs say
    /// them; the newest few, each shortened).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_goals: Vec<String>,
    /// How many runs the conversation had before this one (`earlier_goals` are the newest of
    /// them); 0 for the first, or with `memory: run`.
    #[serde(skip_serializing_if = "is_zero")]
    pub earlier_runs: u32,
}

/// How much of an iteration's rationale the list of evaluations keeps: its first line, cut to
/// this many characters (what a later plan's ledger says of an earlier iteration). The whole
/// rationale is in the run's file and, for the newest iteration, in `last_evaluation`. Kept
/// whole, a self-evaluation's rationale (a synthesis) made the organization file, written
/// again at every save, grow by a synthesis per iteration.
pub const EARLIER_RATIONALE_CHARS: usize = 160;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Default for ReflectionCycle {
    fn default() -> Self {
        ReflectionCycle {
            goal: String::new(),
            max_iterations: super::DEFAULT_MAX_ITERATIONS,
            iteration: 0,
            completed_iterations: 0,
            active: false,
            paused: false,
            goal_met: false,
            stalled: false,
            cancelled: false,
            outcome: None,
            started_at: None,
            completed_at: None,
            evaluator: None,
            last_evaluation: None,
            evaluations: Vec::new(),
            pending_adjustments: Vec::new(),
            recent_syntheses: Vec::new(),
            last_synthesis: None,
            consecutive_stalls: 0,
            consecutive_errors: 0,
            queued_messages: Vec::new(),
            usage: Usage::default(),
            duration_ms: 0,
            earlier_goals: Vec::new(),
            earlier_runs: 0,
        }
    }
}

impl ReflectionCycle {
    /// Records an iteration's evaluation: whole as the last one, with its rationale's first
    /// line (see [`EARLIER_RATIONALE_CHARS`]) in the list of every iteration's.
    pub fn record_evaluation(&mut self, evaluation: Evaluation) {
        let mut kept = evaluation.clone();
        kept.rationale = crate::text::first_line(&evaluation.rationale, EARLIER_RATIONALE_CHARS);
        self.evaluations.push(kept);
        self.last_evaluation = Some(evaluation);
    }

    /// A cycle that was running when the process ended: shown as interrupted, resumable.
    pub fn is_interrupted(&self) -> bool {
        self.active && self.outcome.is_none()
    }

    /// Makes `target` equal to `self` at a cost that does not grow with the cycle's length:
    /// the lists that only grow (evaluations, adjustments) get their new tail, everything else
    /// is small and copied. `target` is the copy saved with the group, `self` the loop's own.
    pub fn sync_into(&self, target: &mut ReflectionCycle) {
        fn sync_list<T: Clone + PartialEq>(from: &[T], to: &mut Vec<T>) {
            let grown = to.len() <= from.len() && to.last() == from.get(to.len().wrapping_sub(1));
            if grown {
                to.extend_from_slice(&from[to.len()..]);
            } else {
                *to = from.to_vec();
            }
        }
        let ReflectionCycle {
            goal,
            max_iterations,
            iteration,
            completed_iterations,
            active,
            paused,
            goal_met,
            stalled,
            cancelled,
            outcome,
            started_at,
            completed_at,
            evaluator,
            last_evaluation,
            evaluations,
            pending_adjustments,
            recent_syntheses,
            last_synthesis,
            consecutive_stalls,
            consecutive_errors,
            queued_messages,
            usage,
            duration_ms,
            earlier_goals,
            earlier_runs,
        } = self;
        if target.goal != *goal {
            target.goal.clone_from(goal);
        }
        target.max_iterations = *max_iterations;
        target.iteration = *iteration;
        target.completed_iterations = *completed_iterations;
        target.active = *active;
        target.paused = *paused;
        target.goal_met = *goal_met;
        target.stalled = *stalled;
        target.cancelled = *cancelled;
        target.outcome = *outcome;
        target.started_at = *started_at;
        target.completed_at = *completed_at;
        target.evaluator.clone_from(evaluator);
        target.last_evaluation.clone_from(last_evaluation);
        sync_list(evaluations, &mut target.evaluations);
        sync_list(pending_adjustments, &mut target.pending_adjustments);
        // At most five entries (older ones are dropped).
        target.recent_syntheses.clone_from(recent_syntheses);
        if target.last_synthesis != *last_synthesis {
            target.last_synthesis.clone_from(last_synthesis);
        }
        target.consecutive_stalls = *consecutive_stalls;
        target.consecutive_errors = *consecutive_errors;
        target.queued_messages.clone_from(queued_messages);
        target.usage = *usage;
        target.duration_ms = *duration_ms;
        if target.earlier_goals != *earlier_goals {
            target.earlier_goals.clone_from(earlier_goals);
        }
        target.earlier_runs = *earlier_runs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluation(iteration: u32) -> Evaluation {
        Evaluation {
            iteration,
            score: 0.5,
            rationale: format!("r{iteration}"),
            evaluator_model: None,
            at: Utc::now(),
            trend: None,
            usage: Usage::default(),
            duration_ms: 0,
            assigned: Vec::new(),
        }
    }

    #[test]
    fn sync_into_makes_an_equal_copy_whatever_the_copy_held() {
        let mut state = ReflectionCycle {
            goal: "g".into(),
            evaluations: vec![evaluation(1), evaluation(2)],
            pending_adjustments: vec!["a".into()],
            last_synthesis: Some("s".into()),
            ..ReflectionCycle::default()
        };
        let mut saved = ReflectionCycle::default();
        state.sync_into(&mut saved);
        assert_eq!(saved, state);
        // Grown lists: only the tail is added.
        state.evaluations.push(evaluation(3));
        state.iteration = 3;
        state.outcome = Some(CycleOutcome::GoalMet);
        state.sync_into(&mut saved);
        assert_eq!(saved, state);
        // A copy that diverged (another cycle's state) is replaced, not appended to.
        saved.evaluations = vec![evaluation(9), evaluation(8), evaluation(7), evaluation(6)];
        state.sync_into(&mut saved);
        assert_eq!(saved, state);
        saved.evaluations.truncate(1);
        saved.evaluations[0].score = 0.1;
        state.sync_into(&mut saved);
        assert_eq!(saved, state);
    }

    #[test]
    fn an_evaluation_is_kept_whole_as_the_last_and_by_its_first_line_in_the_list() {
        let mut state = ReflectionCycle::default();
        let long = format!("\n{}\nthe rest of the synthesis\n", "x".repeat(500));
        for iteration in 1..=3 {
            state.record_evaluation(Evaluation {
                rationale: long.clone(),
                ..evaluation(iteration)
            });
        }
        let cut = format!("{}…", "x".repeat(EARLIER_RATIONALE_CHARS));
        assert_eq!(state.evaluations.len(), 3);
        assert!(state.evaluations.iter().all(|e| e.rationale == cut));
        assert_eq!(state.evaluations[2].iteration, 3);
        let last = state
            .last_evaluation
            .as_ref()
            .map(|e| (e.iteration, e.rationale.as_str()));
        assert_eq!(last, Some((3, long.as_str())));
        // What the file holds grows by a line per iteration, not by a rationale.
        let size = |c: &ReflectionCycle| serde_json::to_string(c).map_or(0, |t| t.len());
        let before = size(&state);
        state.record_evaluation(Evaluation {
            rationale: long.clone(),
            ..evaluation(4)
        });
        assert!(
            size(&state) - before < long.len(),
            "{} bytes more",
            size(&state) - before
        );
    }
}
