//! A team's live cycle as the UI shows it: built from the persisted cycle state at start, then
//! kept current by engine events. Pure state; the cycle panel and the timeline draw it.

use std::time::Instant;

use crate::engine::events::{EngineEvent, Phase};
use crate::model::{CycleOutcome, Mode, ReflectionCycle, Trend, Usage};

/// Timeline entries kept per group (older ones are dropped).
const TIMELINE_MAX: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    Assigned,
    Running,
    Done,
    Failed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkerRow {
    pub name: String,
    pub state: WorkerState,
    pub started: Option<Instant>,
    pub duration_ms: Option<u64>,
    pub tokens: u64,
}

/// One line of a team's round or cycle history.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineKind {
    Heading,
    Info,
    Good,
    Bad,
    Warn,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    pub kind: TimelineKind,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CycleView {
    pub mode: Option<Mode>,
    pub max_iterations: u32,
    pub iteration: u32,
    pub phase: Option<Phase>,
    pub workers: Vec<WorkerRow>,
    pub scores: Vec<f64>,
    pub trend: Option<Trend>,
    pub stall_warnings: Vec<String>,
    pub adjustments: Vec<String>,
    pub running: bool,
    pub paused: bool,
    /// Persisted as running but no process drives it: offer resume.
    pub interrupted: bool,
    pub outcome: Option<CycleOutcome>,
    pub queued: Vec<String>,
    pub usage: Usage,
    pub started: Option<Instant>,
    pub timeline: Vec<TimelineEntry>,
    /// The worker list still shows the previous iteration until the first new assignment.
    workers_stale: bool,
    /// `<team-slug>-`: removed from session names for display (set by the app).
    pub name_prefix: String,
}

impl CycleView {
    /// The view of a cycle read from `organization.json` (nothing is running yet).
    pub fn from_persisted(r: &ReflectionCycle, mode: Mode) -> CycleView {
        let mut v = CycleView {
            mode: Some(mode),
            max_iterations: r.max_iterations,
            iteration: r.iteration,
            scores: r.evaluations.iter().map(|e| e.score).collect(),
            trend: r.last_evaluation.as_ref().and_then(|e| e.trend),
            adjustments: r.pending_adjustments.clone(),
            paused: r.paused,
            interrupted: r.is_interrupted(),
            outcome: r.outcome,
            queued: r.queued_messages.clone(),
            usage: r.usage,
            ..CycleView::default()
        };
        if !r.goal.is_empty() {
            v.push(TimelineKind::Heading, format!("goal: {}", first_line(&r.goal)));
        }
        for e in &r.evaluations {
            v.push(
                TimelineKind::Info,
                format!("iteration {}: score {:.2}", e.iteration, e.score),
            );
        }
        if let Some(o) = r.outcome {
            v.push(
                outcome_kind(o),
                format!(
                    "finished: {o} after {}/{}",
                    r.completed_iterations, r.max_iterations
                ),
            );
        } else if v.interrupted {
            v.push(
                TimelineKind::Warn,
                format!(
                    "interrupted after iteration {}/{}: resume with the pause key",
                    r.completed_iterations, r.max_iterations
                ),
            );
        }
        v
    }

    /// Carries a resumed cycle's history into the fresh view `CycleStarted` made: the scores,
    /// trend, pending adjustments and tokens of the iterations completed before.
    pub fn seed_history(&mut self, r: &ReflectionCycle) {
        self.scores = r.evaluations.iter().map(|e| e.score).collect();
        self.trend = r.last_evaluation.as_ref().and_then(|e| e.trend);
        self.adjustments = r.pending_adjustments.clone();
        self.usage = r.usage;
        self.iteration = self.iteration.max(r.completed_iterations);
        self.push(
            TimelineKind::Info,
            format!(
                "  resumed after iteration {}/{} (scores so far: {})",
                r.completed_iterations,
                r.max_iterations,
                self.scores
                    .iter()
                    .map(|s| format!("{s:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }

    /// Broadcast and sequential runs have no assignments: their rows come from the turns.
    fn rows_from_turns(&self) -> bool {
        matches!(self.mode, Some(Mode::Broadcast | Mode::Sequential))
    }

    fn push(&mut self, kind: TimelineKind, text: String) {
        self.timeline.push(TimelineEntry { kind, text });
        if self.timeline.len() > TIMELINE_MAX {
            let excess = self.timeline.len() - TIMELINE_MAX;
            self.timeline.drain(..excess);
        }
    }

    /// A member's name without the team prefix every session name starts with.
    pub fn short<'a>(&self, name: &'a str) -> &'a str {
        match name.strip_prefix(self.name_prefix.as_str()) {
            Some(rest) if !rest.is_empty() && !self.name_prefix.is_empty() => rest,
            _ => name,
        }
    }

    fn worker(&mut self, name: &str) -> &mut WorkerRow {
        let name = self.short(name).to_string();
        let name = name.as_str();
        let i = match self.workers.iter().position(|w| w.name == name) {
            Some(i) => i,
            None => {
                self.workers.push(WorkerRow {
                    name: name.to_string(),
                    state: WorkerState::Assigned,
                    started: None,
                    duration_ms: None,
                    tokens: 0,
                });
                self.workers.len() - 1
            }
        };
        &mut self.workers[i]
    }

    /// Applies one engine event of this group. `now` is passed in so tests control time.
    pub fn apply(&mut self, event: &EngineEvent, now: Instant) {
        match event {
            EngineEvent::CycleStarted {
                mode, max_iterations, ..
            } => {
                let timeline = std::mem::take(&mut self.timeline);
                let name_prefix = std::mem::take(&mut self.name_prefix);
                *self = CycleView {
                    name_prefix,
                    mode: Some(*mode),
                    max_iterations: *max_iterations,
                    running: true,
                    started: Some(now),
                    timeline,
                    ..CycleView::default()
                };
                self.push(TimelineKind::Heading, format!("── {mode} run ──"));
            }
            EngineEvent::IterationStarted { iteration, .. } => {
                self.iteration = *iteration;
                self.running = true;
                self.interrupted = false;
                self.workers_stale = true;
                self.push(
                    TimelineKind::Heading,
                    format!("iteration {iteration}/{}", self.max_iterations.max(*iteration)),
                );
            }
            EngineEvent::Phase { phase, .. } => {
                self.phase = Some(*phase);
                if *phase == Phase::Plan {
                    // The orchestrator takes the queued messages into this plan.
                    self.queued.clear();
                }
                self.push(TimelineKind::Info, format!("  {}", phase_name(*phase)));
            }
            EngineEvent::Assignment { worker, task, .. } => {
                if std::mem::take(&mut self.workers_stale) {
                    self.workers.clear();
                }
                self.worker(worker).state = WorkerState::Assigned;
                let worker = self.short(worker).to_string();
                self.push(TimelineKind::Info, format!("  → {worker}: {}", first_line(task)));
            }
            EngineEvent::AssignmentDropped { name, reason, .. } => {
                self.push(
                    TimelineKind::Warn,
                    format!("  dropped assignment for {name}: {reason}"),
                );
            }
            EngineEvent::TurnStarted { session, .. } => {
                if self.rows_from_turns() {
                    self.worker(session);
                }
                let session = self.short(session).to_string();
                if let Some(w) = self.workers.iter_mut().find(|w| w.name == session) {
                    w.state = WorkerState::Running;
                    w.started = Some(now);
                }
            }
            EngineEvent::TurnFinished { session, usage, .. } => {
                if let Some(u) = usage {
                    self.usage.add(*u);
                    // The usage can come before the worker's row (broadcast, sequential).
                    if self.rows_from_turns() {
                        self.worker(session);
                    }
                    let session = self.short(session).to_string();
                    if let Some(w) = self.workers.iter_mut().find(|w| w.name == session) {
                        w.tokens = w.tokens.saturating_add(u.total());
                    }
                }
            }
            EngineEvent::WorkerFinished {
                worker,
                success,
                duration_ms,
                ..
            } => {
                let w = self.worker(worker);
                w.state = if *success {
                    WorkerState::Done
                } else {
                    WorkerState::Failed
                };
                w.duration_ms = Some(*duration_ms);
                let (kind, mark) = if *success {
                    (TimelineKind::Good, "✓")
                } else {
                    (TimelineKind::Bad, "✗")
                };
                let worker = self.short(worker).to_string();
                self.push(kind, format!("  {mark} {worker} {}", seconds(*duration_ms)));
            }
            EngineEvent::Evaluation {
                score,
                trend,
                rationale,
                ..
            } => {
                self.scores.push(*score);
                self.trend = *trend;
                let trend = trend.map(|t| format!(" ({t})")).unwrap_or_default();
                self.push(
                    TimelineKind::Info,
                    format!("  score {score:.2}{trend} — {}", first_line(rationale)),
                );
            }
            EngineEvent::EvaluationUnparsed { iteration, .. } => {
                self.push(
                    TimelineKind::Warn,
                    format!("  iteration {iteration}: evaluation unreadable, counted as 0.5"),
                );
            }
            EngineEvent::StallWarning {
                iteration,
                consecutive,
                similarity,
                ..
            } => {
                let text = format!("iteration {iteration}: stall {consecutive} (similarity {similarity:.2})");
                self.push(TimelineKind::Warn, format!("  ⚠ {text}"));
                self.stall_warnings.push(text);
            }
            EngineEvent::Adjustment { text, .. } => {
                self.adjustments.push(text.clone());
                self.push(TimelineKind::Warn, format!("  adjustment: {}", first_line(text)));
            }
            EngineEvent::Warning { message, .. } => {
                self.push(TimelineKind::Warn, format!("  warning: {}", first_line(message)));
            }
            EngineEvent::Error {
                iteration, message, ..
            } => {
                self.push(
                    TimelineKind::Bad,
                    format!("  error in iteration {iteration}: {}", first_line(message)),
                );
            }
            EngineEvent::CyclePaused { .. } => {
                self.paused = true;
                self.push(TimelineKind::Warn, "  paused".into());
            }
            EngineEvent::CycleResumed { .. } => {
                self.paused = false;
                self.stall_warnings.clear();
                self.push(TimelineKind::Info, "  resumed".into());
            }
            EngineEvent::CycleFinished {
                outcome, iterations, ..
            } => {
                self.running = false;
                self.paused = false;
                self.interrupted = false;
                self.phase = None;
                self.outcome = Some(*outcome);
                self.queued.clear();
                self.push(
                    outcome_kind(*outcome),
                    format!(
                        "finished: {outcome} after {iterations}/{}",
                        self.max_iterations.max(*iterations)
                    ),
                );
            }
            EngineEvent::Message { .. } | EngineEvent::Delta { .. } => {}
        }
    }

    /// One word for the state shown in the panel title and the sidebar.
    pub fn state_label(&self) -> &'static str {
        if self.running && self.paused {
            "paused"
        } else if self.running {
            "running"
        } else if self.interrupted {
            "interrupted"
        } else if self.outcome.is_some() {
            "finished"
        } else {
            "idle"
        }
    }
}

/// Good (green), warning (yellow) or bad (red): the colour of an outcome everywhere.
pub fn outcome_kind(o: CycleOutcome) -> TimelineKind {
    match o {
        CycleOutcome::GoalMet | CycleOutcome::Completed => TimelineKind::Good,
        CycleOutcome::MaxIterations | CycleOutcome::Stalled => TimelineKind::Warn,
        CycleOutcome::ErrorBudget | CycleOutcome::Cancelled => TimelineKind::Bad,
    }
}

pub fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Plan => "plan",
        Phase::Dispatch => "dispatch",
        Phase::Collect => "collect",
        Phase::Synthesize => "synthesize",
        Phase::Evaluate => "evaluate",
    }
}

pub fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut out: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev_group() -> String {
        "t".to_string()
    }

    #[test]
    fn events_drive_the_view_to_finished() {
        let now = Instant::now();
        let mut v = CycleView::default();
        let g = ev_group;
        v.apply(
            &EngineEvent::CycleStarted {
                group: g(),
                mode: Mode::OrchestratorReflect,
                max_iterations: 3,
            },
            now,
        );
        v.apply(
            &EngineEvent::IterationStarted {
                group: g(),
                iteration: 1,
            },
            now,
        );
        v.apply(
            &EngineEvent::Phase {
                group: g(),
                iteration: 1,
                phase: Phase::Dispatch,
            },
            now,
        );
        v.apply(
            &EngineEvent::Assignment {
                group: g(),
                iteration: 1,
                worker: "a".into(),
                task: "do".into(),
            },
            now,
        );
        v.apply(
            &EngineEvent::TurnStarted {
                group: g(),
                session: "a".into(),
                generation: 1,
            },
            now,
        );
        assert_eq!(v.workers[0].state, WorkerState::Running);
        v.apply(
            &EngineEvent::WorkerFinished {
                group: g(),
                iteration: 1,
                worker: "a".into(),
                success: false,
                duration_ms: 1500,
            },
            now,
        );
        assert_eq!(v.workers[0].state, WorkerState::Failed);
        v.apply(
            &EngineEvent::Evaluation {
                group: g(),
                iteration: 1,
                score: 0.4,
                rationale: "r".into(),
                trend: None,
                usage: Default::default(),
                duration_ms: 0,
            },
            now,
        );
        v.apply(&EngineEvent::CyclePaused { group: g() }, now);
        assert_eq!(v.state_label(), "paused");
        v.apply(&EngineEvent::CycleResumed { group: g() }, now);
        assert_eq!(v.state_label(), "running");
        v.apply(
            &EngineEvent::CycleFinished {
                group: g(),
                outcome: CycleOutcome::GoalMet,
                iterations: 1,
                summary: String::new(),
            },
            now,
        );
        assert_eq!(v.state_label(), "finished");
        assert_eq!(v.scores, vec![0.4]);
        assert!(
            v.timeline.iter().any(|e| e.text.contains("✗ a 1.5s")),
            "{:?}",
            v.timeline
        );
    }

    #[test]
    fn persisted_active_cycle_is_interrupted() {
        let r = ReflectionCycle {
            active: true,
            iteration: 2,
            completed_iterations: 1,
            goal: "g".into(),
            ..ReflectionCycle::default()
        };
        let v = CycleView::from_persisted(&r, Mode::OrchestratorReflect);
        assert!(v.interrupted);
        assert_eq!(v.state_label(), "interrupted");
    }
}
