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
        }
    }
}

impl ReflectionCycle {
    /// A cycle that was running when the process ended: shown as interrupted, resumable.
    pub fn is_interrupted(&self) -> bool {
        self.active && self.outcome.is_none()
    }
}
