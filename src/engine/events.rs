//! The engine's event vocabulary (SPEC section 9). The TUI renders these; `huddle run --events`
//! prints each as one NDJSON line with `"event"` and `"group"`. Events may gain variants and
//! fields; existing ones never change meaning.

use serde::Serialize;

use crate::model::{CycleOutcome, Mode, Role, Trend, Usage};

/// The phases of one orchestrator iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Plan,
    Dispatch,
    Collect,
    Synthesize,
    Evaluate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EngineEvent {
    CycleStarted {
        group: String,
        mode: Mode,
        max_iterations: u32,
    },
    IterationStarted {
        group: String,
        iteration: u32,
    },
    Phase {
        group: String,
        iteration: u32,
        phase: Phase,
    },
    Assignment {
        group: String,
        iteration: u32,
        worker: String,
        task: String,
    },
    AssignmentDropped {
        group: String,
        iteration: u32,
        name: String,
        reason: String,
    },
    WorkerFinished {
        group: String,
        iteration: u32,
        worker: String,
        success: bool,
        duration_ms: u64,
    },
    /// A complete message added to a session's transcript.
    Message {
        group: String,
        session: String,
        role: Role,
        text: String,
    },
    /// A piece of a streaming answer; `generation` identifies the turn so late pieces of a
    /// cancelled turn can be dropped.
    Delta {
        group: String,
        session: String,
        generation: u64,
        text: String,
    },
    /// A session started a turn.
    TurnStarted {
        group: String,
        session: String,
        generation: u64,
    },
    /// A session's turn ended (successfully or not).
    TurnFinished {
        group: String,
        session: String,
        generation: u64,
        success: bool,
        interrupted: bool,
        duration_ms: u64,
        usage: Option<Usage>,
        error: Option<String>,
    },
    Evaluation {
        group: String,
        iteration: u32,
        score: f64,
        rationale: String,
        trend: Option<Trend>,
        /// Tokens and wall time of this iteration.
        usage: Usage,
        duration_ms: u64,
    },
    EvaluationUnparsed {
        group: String,
        iteration: u32,
    },
    StallWarning {
        group: String,
        iteration: u32,
        consecutive: u32,
        similarity: f64,
    },
    Adjustment {
        group: String,
        text: String,
    },
    Warning {
        group: String,
        message: String,
    },
    Error {
        group: String,
        iteration: u32,
        message: String,
    },
    CyclePaused {
        group: String,
    },
    CycleResumed {
        group: String,
    },
    CycleFinished {
        group: String,
        outcome: CycleOutcome,
        iterations: u32,
        summary: String,
    },
}

impl EngineEvent {
    /// The group this event belongs to.
    pub fn group(&self) -> &str {
        match self {
            EngineEvent::CycleStarted { group, .. }
            | EngineEvent::IterationStarted { group, .. }
            | EngineEvent::Phase { group, .. }
            | EngineEvent::Assignment { group, .. }
            | EngineEvent::AssignmentDropped { group, .. }
            | EngineEvent::WorkerFinished { group, .. }
            | EngineEvent::Message { group, .. }
            | EngineEvent::Delta { group, .. }
            | EngineEvent::TurnStarted { group, .. }
            | EngineEvent::TurnFinished { group, .. }
            | EngineEvent::Evaluation { group, .. }
            | EngineEvent::EvaluationUnparsed { group, .. }
            | EngineEvent::StallWarning { group, .. }
            | EngineEvent::Adjustment { group, .. }
            | EngineEvent::Warning { group, .. }
            | EngineEvent::Error { group, .. }
            | EngineEvent::CyclePaused { group }
            | EngineEvent::CycleResumed { group }
            | EngineEvent::CycleFinished { group, .. } => group,
        }
    }

    /// One NDJSON line (no trailing newline).
    pub fn to_ndjson(&self) -> String {
        // Serialising these plain structs cannot fail; fall back to an error object regardless.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                r#"{{"event":"error","group":{:?},"message":"unserialisable event: {e}"}}"#,
                self.group()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_has_event_and_group() {
        let line = EngineEvent::CycleStarted {
            group: "g".into(),
            mode: Mode::OrchestratorReflect,
            max_iterations: 5,
        }
        .to_ndjson();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "cycle_started");
        assert_eq!(v["group"], "g");
        assert_eq!(v["mode"], "orchestrator_reflect");

        let line = EngineEvent::CycleFinished {
            group: "g".into(),
            outcome: CycleOutcome::GoalMet,
            iterations: 2,
            summary: "s".into(),
        }
        .to_ndjson();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["outcome"], "goal_met");
        let line = EngineEvent::Phase {
            group: "g".into(),
            iteration: 1,
            phase: Phase::Synthesize,
        }
        .to_ndjson();
        assert!(line.contains(r#""phase":"synthesize""#), "{line}");
    }
}
