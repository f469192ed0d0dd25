//! A team's live cycle as the UI shows it: built from the persisted cycle state at start, then
//! kept current by engine events. Pure state; the cycle panel and the timeline draw it.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::describe::{self, Line};
use crate::engine::events::{EngineEvent, EventKind, HopKind, Phase, ResumedCycle};
use crate::model::{Cost, CycleOutcome, Mode, ReflectionCycle, Trend, Usage};

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
    /// The member's session: rows are matched by it, so a rename mid-run keeps one row.
    pub session_id: String,
    pub name: String,
    pub state: WorkerState,
    pub started: Option<Instant>,
    pub duration_ms: Option<u64>,
    pub tokens: u64,
    /// The member's tool calls in flight.
    pub tools: Vec<ToolInFlight>,
    /// While its turn streams: the end of what it is writing (its last line, bounded).
    pub live: String,
}

/// A tool call a member's turn is running (or waiting to run).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInFlight {
    pub call_id: String,
    /// As the model sees it (`git__git_status`).
    pub name: String,
    /// Waits for the user's approval.
    pub waiting: bool,
}

/// A member's turn waiting for a rate or usage limit to reset (the run waits with it).
#[derive(Debug, Clone, PartialEq)]
pub struct LimitWaitRow {
    pub session_id: String,
    pub session: String,
    pub provider: String,
    pub until: DateTime<Utc>,
    /// When the wait ends on this viewer's clock: when its event came, plus the wait it
    /// announced (the countdown counts down to this, whatever the two machines' clocks say).
    pub ends: Instant,
}

impl LimitWaitRow {
    /// The row of a `waiting_for_limit` event that came at `now` (its session named as the
    /// event names it).
    pub fn of(kind: &EventKind, now: Instant) -> Option<LimitWaitRow> {
        let EventKind::LimitWait {
            session_id,
            session,
            provider,
            until,
            wait_ms,
            ..
        } = kind
        else {
            return None;
        };
        Some(LimitWaitRow {
            session_id: session_id.clone(),
            session: session.clone(),
            provider: provider.clone(),
            until: *until,
            ends: now + Duration::from_millis(*wait_ms),
        })
    }

    /// What is left of the wait at `now` (zero once it is over).
    pub fn left(&self, now: Instant) -> Duration {
        self.ends.saturating_duration_since(now)
    }
}

/// A call of this run waiting for the user's approval.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingApproval {
    pub approval_id: u64,
    pub session_id: String,
    pub session: String,
    pub tool: String,
}

pub use super::timeline_kind::TimelineKind;

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    pub kind: TimelineKind,
    pub text: String,
    /// The sub-agent card anchored here (its execution id): the line is drawn from the card.
    pub card: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CycleView {
    /// The timeline line that gathers a flow member's advisors side by side (the member's
    /// session id and the line's index), while it is the last line.
    advisors_line: Option<(String, usize)>,
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
    /// What the run's turns cost so far (its end's total once it ended).
    pub cost: Cost,
    /// The run's end said what it cost (a run file written before costs were recorded has
    /// turns without a cost that were not unpriced, only unrecorded).
    pub cost_recorded: bool,
    pub started: Option<Instant>,
    /// Since when the run is paused (while it is), and how long earlier pauses lasted: a
    /// run's duration leaves its pauses out.
    pub paused_since: Option<Instant>,
    pub paused_total: Duration,
    /// When the run finished (its duration stops there).
    pub ended: Option<Instant>,
    pub timeline: Vec<TimelineEntry>,
    /// Calls of the run waiting for the user's approval: the run waits with them.
    pub approvals: Vec<WaitingApproval>,
    /// Turns of the run waiting for a limit to reset (time that counts as paused).
    pub limit_waits: Vec<LimitWaitRow>,
    /// The worker list still shows the previous iteration until the first new assignment.
    workers_stale: bool,
    /// How the team's members read (their handles; else without `<team-slug>-`), set by the
    /// app once per run.
    pub names: describe::Names,
    /// When the run shown was recorded (a run read back from its file).
    pub recorded_at: Option<DateTime<Utc>>,
    /// The run's result (`run_result`): drawn as Markdown under the timeline, copied by `y`.
    pub result: Option<String>,
    /// A member without a worker row (the orchestrator planning or synthesizing, the
    /// evaluator) streaming: its session, short name and the end of its line.
    pub lead_live: Option<(String, String, String)>,
    /// A relay's state (mode `relay`).
    pub relay: Option<super::relay_view::RelayView>,
    /// A pipeline team's conversation: phase strip, active member, last moves.
    pub pipeline: Option<super::pipeline_view::PipelineView>,
    /// Modes `dispatch` and `team`: a card per sub-agent execution or member turn.
    pub cards: super::execution_cards::ExecutionCards,
    /// The run shown was cut short (huddle stopped during it; read back from its file).
    pub cut_short: bool,
}

impl CycleView {
    /// The view of a group's last run as `organization.json` keeps it (its mode's saved state),
    /// if it keeps one.
    pub fn saved(g: &crate::model::Group) -> Option<CycleView> {
        let mut view = if let Some(r) = &g.state.orchestrator_reflect {
            CycleView::from_persisted(r, g.mode)
        } else if let Some(pipeline) = super::pipeline_view::PipelineView::saved(g) {
            CycleView {
                pipeline: Some(pipeline),
                ..CycleView::default()
            }
        } else {
            CycleView {
                relay: Some(super::relay_view::RelayView::saved(g)?),
                ..CycleView::default()
            }
        };
        view.mode = Some(g.mode);
        view.names = describe::Names::team(g.members_slug());
        Some(view)
    }

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
            let line = describe::cycle::finished(
                o,
                r.completed_iterations,
                Some(r.max_iterations),
                mode.spec().counts,
            );
            v.push(line.tone, line.text);
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
    /// trend and tokens of the iterations completed before it resumed (`resumed`, as its
    /// `run_resumed` says), and the adjustments pending then. `r` is the cycle as saved now,
    /// which may already hold iterations of the resumed run (a view opened next to it): those
    /// come from its own events.
    pub fn seed_history(&mut self, r: &ReflectionCycle, resumed: &ResumedCycle) {
        let before: Vec<_> = r
            .evaluations
            .iter()
            .filter(|e| e.iteration <= resumed.after)
            .collect();
        self.scores = before.iter().map(|e| e.score).collect();
        self.trend = before.last().and_then(|e| e.trend);
        if r.completed_iterations == resumed.after {
            self.adjustments = r.pending_adjustments.clone();
        }
        self.usage = resumed.usage;
        self.iteration = self.iteration.max(resumed.after);
        let line = describe::cycle::resumed_after(resumed.after, r.max_iterations, &self.scores);
        self.push(line.tone, format!("  {}", line.text));
    }

    /// Runs without assignments (broadcast, sequential, ...): their rows come from the turns.
    fn rows_from_turns(&self) -> bool {
        self.mode.is_some_and(|m| m.spec().rows_from_turns)
    }

    /// Mode `flow`: the member's row gets its hop's time and state.
    fn flow_hop(&mut self, hop: &EventKind) {
        let EventKind::FlowHop {
            from_id,
            from,
            success,
            duration_ms,
            ..
        } = hop
        else {
            return;
        };
        let row = self.worker(from_id, from);
        row.duration_ms = Some(*duration_ms);
        row.state = if *success {
            WorkerState::Done
        } else {
            WorkerState::Failed
        };
    }

    /// An advisor's report: on one line with the other advisors' reports to the same member,
    /// side by side (`✓ security advised engineer (…)  │  ✗ operations advised engineer (…): why`).
    fn advisor_hop(&mut self, member_id: &str, line: Line) {
        let last = self.timeline.len().checked_sub(1);
        match &self.advisors_line {
            Some((id, at)) if id == member_id && Some(*at) == last => {
                let entry = &mut self.timeline[*at];
                entry.text.push_str("  │  ");
                entry.text.push_str(&line.text);
                if line.tone == TimelineKind::Bad {
                    entry.kind = TimelineKind::Bad;
                }
            }
            _ => {
                self.push(line.tone, format!("  {}", line.text));
                self.advisors_line = Some((member_id.to_string(), self.timeline.len() - 1));
            }
        }
    }

    pub(super) fn push(&mut self, kind: TimelineKind, text: String) {
        self.push_entry(kind, text, None);
    }

    fn push_entry(&mut self, kind: TimelineKind, text: String, card: Option<String>) {
        self.timeline.push(TimelineEntry { kind, text, card });
        if self.timeline.len() > TIMELINE_MAX {
            let excess = self.timeline.len() - TIMELINE_MAX;
            self.timeline.drain(..excess);
        }
    }

    /// A member's name as people read it: its handle, else without the team prefix every
    /// session name starts with.
    pub fn short<'a>(&'a self, name: &'a str) -> &'a str {
        self.names.short(name)
    }

    fn worker(&mut self, session_id: &str, name: &str) -> &mut WorkerRow {
        let name = self.short(name).to_string();
        let i = match self.workers.iter().position(|w| w.session_id == session_id) {
            Some(i) => {
                // The newest name (a member renamed mid-run).
                self.workers[i].name = name;
                i
            }
            None => {
                self.workers.push(WorkerRow {
                    session_id: session_id.to_string(),
                    name,
                    state: WorkerState::Assigned,
                    started: None,
                    duration_ms: None,
                    tokens: 0,
                    tools: Vec::new(),
                    live: String::new(),
                });
                self.workers.len() - 1
            }
        };
        &mut self.workers[i]
    }

    /// Applies one engine event of this group: the view's state follows it, and the timeline
    /// gets its line. `now` is passed in so tests control time.
    pub fn apply(&mut self, event: &EngineEvent, now: Instant) {
        let denied = self.fold(event, now);
        self.tell(event, denied);
        let names = &self.names;
        let short = |name: &str| names.short(name).to_string();
        for line in self.cards.apply(event, now, short) {
            self.push_entry(line.kind, line.text, line.card);
        }
    }

    /// The state an event changes. Returns the line of a denied tool call (it names the tool
    /// the request named, which only this view remembers).
    fn fold(&mut self, event: &EngineEvent, now: Instant) -> Option<Line> {
        match &event.kind {
            EventKind::CycleStarted { mode, max_iterations } => {
                // Each run has its own timeline (earlier runs are browsed from their files).
                let names = std::mem::take(&mut self.names);
                let recorded_at = self.recorded_at.take();
                // A pipeline's conversation goes on across runs.
                let pipeline = self.pipeline.take();
                *self = CycleView {
                    names,
                    recorded_at,
                    pipeline,
                    mode: Some(*mode),
                    max_iterations: *max_iterations,
                    running: true,
                    started: Some(now),
                    ..CycleView::default()
                };
            }
            EventKind::IterationStarted { iteration, .. } => {
                self.iteration = *iteration;
                self.running = true;
                self.interrupted = false;
                self.workers_stale = true;
            }
            EventKind::Phase { phase, .. } => {
                self.phase = Some(*phase);
                if *phase == Phase::Plan {
                    // The orchestrator takes the queued messages into this plan.
                    self.queued.clear();
                }
            }
            EventKind::Assignment {
                worker, session_id, ..
            } => {
                if std::mem::take(&mut self.workers_stale) {
                    self.workers.clear();
                }
                self.worker(session_id, worker).state = WorkerState::Assigned;
            }
            EventKind::TurnStarted {
                session_id, session, ..
            } => {
                if self.rows_from_turns() {
                    self.worker(session_id, session);
                }
                if let Some(w) = self.workers.iter_mut().find(|w| w.session_id == **session_id) {
                    w.state = WorkerState::Running;
                    w.started = Some(now);
                }
            }
            EventKind::TurnFinished {
                session_id,
                session,
                usage,
                cost_usd,
                success,
                duration_ms,
                ..
            } => {
                self.turn_over(session_id);
                // As the engine counts it: a failed turn without usage was not billed.
                if *success || usage.is_some() {
                    self.cost.add(Cost::of_turn(*cost_usd));
                }
                if self.mode.is_some_and(|m| m.spec().row_done_with_turn) {
                    // No worker results come (a pipeline): a member's row is done with its turn
                    // (it may run again later in the same message).
                    let w = self.worker(session_id, session);
                    w.state = if *success {
                        WorkerState::Done
                    } else {
                        WorkerState::Failed
                    };
                    w.duration_ms = Some(w.duration_ms.unwrap_or(0).saturating_add(*duration_ms));
                }
                if let Some(u) = usage {
                    self.usage.add(*u);
                    // The usage can come before the worker's row (broadcast, sequential).
                    if self.rows_from_turns() {
                        self.worker(session_id, session);
                    }
                    if let Some(w) = self.workers.iter_mut().find(|w| w.session_id == **session_id) {
                        w.tokens = w.tokens.saturating_add(u.total());
                    }
                }
            }
            EventKind::WorkerFinished {
                worker,
                session_id,
                success,
                duration_ms,
                ..
            } => {
                let w = self.worker(session_id, worker);
                w.state = if *success {
                    WorkerState::Done
                } else {
                    WorkerState::Failed
                };
                w.duration_ms = Some(*duration_ms);
            }
            EventKind::Evaluation { score, trend, .. } => {
                self.scores.push(*score);
                self.trend = *trend;
            }
            EventKind::StallWarning {
                iteration,
                consecutive,
                similarity,
            } => {
                let line = describe::cycle::stall(*iteration, *consecutive, *similarity);
                self.stall_warnings.push(line.text);
            }
            EventKind::Adjustment { text, .. } => self.adjustments.push(text.clone()),
            EventKind::FlowHop { .. } => self.flow_hop(&event.kind),
            EventKind::PhaseTransition { .. } => {
                self.pipeline
                    .get_or_insert_with(Default::default)
                    .apply(&event.kind);
            }
            EventKind::CyclePaused => {
                self.paused = true;
                self.paused_since.get_or_insert(now);
            }
            EventKind::CycleResumed => {
                self.paused = false;
                self.end_pause(now);
                self.stall_warnings.clear();
            }
            EventKind::CycleFinished { outcome, .. } => {
                self.no_tools_in_flight();
                self.running = false;
                self.paused = false;
                self.end_pause(now);
                self.ended = Some(now);
                self.interrupted = false;
                self.phase = None;
                self.outcome = Some(*outcome);
                self.queued.clear();
            }
            EventKind::RunEnded {
                outcome: None,
                failed: Some(_),
                ..
            } => {
                self.no_tools_in_flight();
                self.running = false;
            }
            EventKind::RunEnded { totals, .. } => {
                self.no_tools_in_flight();
                // The run's own total (its evaluator's calls, a relay's other team included).
                if let Some(t) = totals {
                    self.cost_recorded = true;
                    self.cost = Cost {
                        usd: t.cost_usd.unwrap_or(0.0),
                        priced: u32::from(t.cost_usd.is_some()),
                        unpriced: t.unpriced_turns,
                    };
                }
                // A run that ended without finishing its cycle (its task was dropped).
                if self.running {
                    self.running = false;
                    self.paused = false;
                    self.phase = None;
                }
                self.end_pause(now);
                self.ended.get_or_insert(now);
            }
            EventKind::ToolCall {
                session_id,
                call_id,
                name,
                ..
            } => {
                // The text streamed before a call is that model call's: the next call's text
                // starts a line of its own (not `…sub-agent(s).Waiting`).
                for live in self
                    .workers
                    .iter_mut()
                    .filter(|w| w.session_id == *session_id)
                    .map(|w| &mut w.live)
                    .chain(
                        self.lead_live
                            .as_mut()
                            .filter(|l| l.0 == *session_id)
                            .map(|l| &mut l.2),
                    )
                {
                    end_line(live);
                }
                if let Some(w) = self.workers.iter_mut().find(|w| w.session_id == *session_id) {
                    w.tools.push(ToolInFlight {
                        call_id: call_id.clone(),
                        name: name.clone(),
                        waiting: false,
                    });
                }
            }
            EventKind::ToolApprovalRequested {
                session_id,
                session,
                approval_id,
                call_id,
                server,
                tool,
                ..
            } => {
                self.set_waiting(session_id, call_id, true);
                self.approvals.push(WaitingApproval {
                    approval_id: *approval_id,
                    session_id: session_id.clone(),
                    session: self.short(session).to_string(),
                    tool: crate::tools::qualified_name(server, tool),
                });
            }
            EventKind::ToolApprovalDecided {
                session_id,
                session,
                approval_id,
                call_id,
                decision,
                reason,
            } => {
                self.set_waiting(session_id, call_id, false);
                let asked = self.approvals.iter().position(|a| a.approval_id == *approval_id);
                let tool = asked.map(|i| self.approvals.remove(i).tool);
                return describe::tools::decided(
                    self.short(session),
                    tool.as_deref(),
                    *decision,
                    reason.as_deref(),
                );
            }
            EventKind::ToolResult {
                session_id, call_id, ..
            } => {
                if let Some(w) = self.workers.iter_mut().find(|w| w.session_id == *session_id) {
                    w.tools.retain(|t| t.call_id != *call_id);
                }
            }
            EventKind::RunResult { text } => {
                self.result = Some(text.clone());
            }
            EventKind::RelayState { .. }
            | EventKind::RelayDraft { .. }
            | EventKind::RelayTakeOver { .. }
            | EventKind::RelaySent { .. }
            | EventKind::RelayReply { .. }
            | EventKind::RelayAudit { .. } => {
                if let Some(turn) = super::relay_view::apply(&mut self.relay, &event.kind) {
                    self.iteration = turn;
                }
            }
            EventKind::RunStarted { .. }
            | EventKind::AssignmentDropped { .. }
            | EventKind::EvaluationUnparsed { .. }
            | EventKind::Warning { .. }
            | EventKind::Error { .. }
            | EventKind::MemberNote { .. }
            | EventKind::Message { .. }
            | EventKind::Notice { .. }
            | EventKind::Delta { .. }
            | EventKind::Handoff { .. }
            | EventKind::HandoffRejected { .. }
            | EventKind::ExecutionStarted { .. }
            | EventKind::ExecutionRunning
            | EventKind::ExecutionFinished { .. }
            | EventKind::TeamBroadcast { .. }
            | EventKind::TurnReplayed { .. }
            | EventKind::ContextCompacted { .. }
            | EventKind::RunResumed { .. }
            | EventKind::TurnInput { .. }
            | EventKind::HookBlocked { .. }
            | EventKind::HookFailed { .. }
            | EventKind::SandboxRefused { .. }
            | EventKind::SandboxDenied { .. } => {}
            EventKind::LimitWait { session_id, .. } => {
                self.limit_waits.retain(|w| w.session_id != *session_id);
                if let Some(mut row) = LimitWaitRow::of(&event.kind, now) {
                    row.session = self.short(&row.session).to_string();
                    self.limit_waits.push(row);
                }
                // Waiting counts as paused: the run's time leaves it out.
                self.paused_since.get_or_insert(now);
            }
            EventKind::LimitWaitOver { session_id, .. } => {
                self.limit_waits.retain(|w| w.session_id != *session_id);
                if self.limit_waits.is_empty() && !self.paused {
                    self.end_pause(now);
                }
            }
        }
        None
    }

    /// The timeline's line for an event, in [`describe`]'s words: a run's start, iterations
    /// and end head the timeline, the rest is indented under them. Tool calls and turns show in
    /// the transcripts, executions on their cards.
    fn tell(&mut self, event: &EngineEvent, denied: Option<Line>) {
        let names = self.names.clone();
        let line = match &event.kind {
            EventKind::ToolCall { .. }
            | EventKind::ToolResult { .. }
            | EventKind::TurnFinished { .. }
            | EventKind::ExecutionStarted { .. }
            | EventKind::ExecutionRunning
            | EventKind::ExecutionFinished { .. } => return,
            EventKind::ToolApprovalDecided { .. } => denied,
            EventKind::FlowHop {
                kind: HopKind::Advisor,
                to_id: Some(to_id),
                ..
            } => {
                if let Some(line) = describe::flow::hop(&event.kind) {
                    self.advisor_hop(to_id, line);
                }
                return;
            }
            kind => describe::describe_as(kind, event.execution.as_ref(), &names),
        };
        let Some(Line { text, tone }) = line else {
            return;
        };
        let text = match &event.kind {
            EventKind::CycleStarted { .. } => format!("── {text}"),
            EventKind::IterationStarted { .. }
            | EventKind::CycleFinished { .. }
            | EventKind::RunEnded { .. }
            | EventKind::RelayState { .. } => text,
            _ => format!("  {text}"),
        };
        self.push(tone, text);
    }

    /// A pause ended at `now`: its length is added to the paused time.
    fn end_pause(&mut self, now: Instant) {
        if let Some(since) = self.paused_since.take() {
            self.paused_total += now.saturating_duration_since(since);
        }
    }

    /// How long the run has been working (or worked, once finished) as of `now`, pauses left
    /// out; None for a run not started in this process.
    pub fn active_time(&self, now: Instant) -> Option<Duration> {
        let started = self.started?;
        let until = self.ended.unwrap_or(now);
        let paused_now = self
            .paused_since
            .map_or(Duration::ZERO, |s| until.saturating_duration_since(s));
        Some(
            until
                .saturating_duration_since(started)
                .saturating_sub(self.paused_total)
                .saturating_sub(paused_now),
        )
    }

    /// Marks a member's call as waiting for approval, or not.
    fn set_waiting(&mut self, session_id: &str, call_id: &str, waiting: bool) {
        let calls = self
            .workers
            .iter_mut()
            .filter(|w| w.session_id == session_id)
            .flat_map(|w| w.tools.iter_mut());
        for t in calls.filter(|t| t.call_id == call_id) {
            t.waiting = waiting;
        }
    }

    /// Streamed text of a member's turn: the row keeps the last line of it.
    pub fn on_delta(
        &mut self,
        session_id: &str,
        session: &str,
        text: &str,
        execution: Option<&crate::engine::events::ExecutionTag>,
    ) {
        if self.cards.delta(execution, text) {
            return;
        }
        if let Some(w) = self
            .workers
            .iter_mut()
            .find(|w| w.session_id == session_id && w.state == WorkerState::Running)
        {
            keep_last_line(&mut w.live, text);
            return;
        }
        if !self.running || self.workers.iter().any(|w| w.session_id == session_id) {
            return;
        }
        let name = self.short(session).to_string();
        let live = self.lead_live.get_or_insert_with(Default::default);
        if live.0 != session_id {
            *live = (session_id.to_string(), name, String::new());
        }
        keep_last_line(&mut live.2, text);
    }

    /// A member's turn ended: none of its calls is in flight.
    fn turn_over(&mut self, session_id: &str) {
        for w in self.workers.iter_mut().filter(|w| w.session_id == session_id) {
            w.tools.clear();
            w.live.clear();
        }
        if self.lead_live.as_ref().is_some_and(|l| l.0 == session_id) {
            self.lead_live = None;
        }
        self.approvals.retain(|a| a.session_id != session_id);
    }

    /// The run is over (or was cut short): no call is in flight or waits.
    fn no_tools_in_flight(&mut self) {
        self.lead_live = None;
        self.limit_waits.clear();
        for w in &mut self.workers {
            w.tools.clear();
        }
        self.approvals.clear();
    }

    /// A run read back from its file that ended but was left open: it can be resumed.
    pub fn mark_left_open(&mut self) {
        self.interrupted = true;
        self.push(
            TimelineKind::Warn,
            "interrupted here: resume with the pause key".into(),
        );
    }

    /// A run read back from its file that has no end: the process stopped during it.
    pub fn mark_cut_short(&mut self, resumable: bool, at: Instant) {
        self.no_tools_in_flight();
        self.cards.cut_short(at);
        self.cut_short = true;
        self.running = false;
        self.paused = false;
        self.phase = None;
        for w in &mut self.workers {
            if matches!(w.state, WorkerState::Running | WorkerState::Assigned) {
                w.state = WorkerState::Failed;
                w.started = None;
            }
        }
        if resumable {
            self.mark_left_open();
        } else {
            self.push(
                TimelineKind::Warn,
                "cut short here (huddle stopped during this run)".into(),
            );
        }
    }

    /// Says that lines of the run file could not be read.
    pub fn note_skipped(&mut self, lines: usize) {
        self.push(
            TimelineKind::Warn,
            format!("{lines} unreadable line(s) of the run file skipped"),
        );
    }

    /// One word for the state shown in the panel title and the sidebar.
    pub fn state_label(&self) -> &'static str {
        self.state_while(self.running)
    }

    /// The state as shown while the run is `running` as the viewer sees it (a run browsed
    /// back is not running there): paused, waiting for a limit, running, else how it ended.
    pub fn state_while(&self, running: bool) -> &'static str {
        if running && self.paused {
            "paused"
        } else if running && !self.limit_waits.is_empty() {
            "waiting for limit"
        } else if running {
            "running"
        } else if self.running {
            // Running, seen from an earlier run's page.
            self.state_while(true)
        } else if self.interrupted {
            "interrupted"
        } else if self.outcome.is_some() {
            "finished"
        } else if self.cut_short {
            "cut short"
        } else {
            "idle"
        }
    }
}

/// Characters of a streaming line a worker row keeps (its end).
const LIVE_MAX_CHARS: usize = 240;

/// Ends a live line: the next text streamed replaces it instead of running on after it.
fn end_line(live: &mut String) {
    if !live.is_empty() && !live.ends_with('\n') {
        live.push('\n');
    }
}

/// Appends `text` to `live` and keeps only the last line with text in it (at most
/// [`LIVE_MAX_CHARS`] of its end): the cost per delta does not grow with the answer.
pub fn keep_last_line(live: &mut String, text: &str) {
    live.push_str(text);
    let body = live.trim_end_matches(['\n', '\r']);
    if let Some(i) = body.rfind('\n') {
        live.drain(..=i);
    }
    crate::text::keep_last_chars(live, LIVE_MAX_CHARS);
}

pub fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn first_line(text: &str) -> String {
    crate::text::first_line(text, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "gid".into(),
            group: "t".into(),
            run_id: Some("r".into()),
            execution: None,
            kind,
        }
    }

    #[test]
    fn a_limit_wait_is_the_run_s_state_and_counts_as_paused() {
        use chrono::TimeZone;
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut v = CycleView {
            names: describe::Names::team("team"),
            ..CycleView::default()
        };
        v.apply(
            &ev(EventKind::CycleStarted {
                mode: Mode::Sequential,
                max_iterations: 1,
            }),
            at(0),
        );
        let until = Utc.with_ymd_and_hms(2026, 3, 7, 14, 5, 0).unwrap();
        v.apply(
            &ev(EventKind::LimitWait {
                session_id: "sa".into(),
                session: "team-alpha".into(),
                provider: "anthropic".into(),
                until,
                wait_ms: 1_200_000,
                reason: "429 from provider `anthropic`: rate limited".into(),
            }),
            at(10),
        );
        assert_eq!(v.state_label(), "waiting for limit");
        assert_eq!(v.limit_waits[0].session, "alpha");
        let line = v.timeline.last().map(|e| e.text.clone()).unwrap_or_default();
        assert!(
            line.contains("⏳ alpha: waiting until 14:05 UTC for anthropic limit (20m"),
            "{line}"
        );
        v.apply(
            &ev(EventKind::LimitWaitOver {
                session_id: "sa".into(),
                session: "team-alpha".into(),
                waited_ms: 20_000,
            }),
            at(30),
        );
        assert_eq!(v.state_label(), "running");
        assert!(v.limit_waits.is_empty());
        assert_eq!(
            v.active_time(at(40)),
            Some(Duration::from_secs(20)),
            "the wait left out"
        );
    }

    #[test]
    fn a_flow_hop_is_a_timeline_line_and_times_its_member() {
        let now = Instant::now();
        let mut v = CycleView::default();
        v.apply(
            &ev(EventKind::CycleStarted {
                mode: Mode::Flow,
                max_iterations: 1,
            }),
            now,
        );
        let hop = |from: &str, kind, message: Option<&str>, success| EventKind::FlowHop {
            from: from.into(),
            from_id: format!("s-{from}"),
            to: Some("tech".into()),
            to_id: Some("s-tech".into()),
            kind,
            message: message.map(str::to_string),
            success,
            duration_ms: 1500,
            tokens: 42,
        };
        use crate::engine::events::HopKind;
        v.apply(
            &ev(hop("triage", HopKind::Route, Some("disk \u{1b}[31mfull"), true)),
            now,
        );
        v.apply(&ev(hop("ops", HopKind::Advisor, None, true)), now);
        v.apply(&ev(hop("sec", HopKind::Advisor, Some("timed out"), false)), now);
        let lines: Vec<&str> = v.timeline.iter().map(|e| e.text.as_str()).collect();
        assert!(
            lines.contains(&"  triage ⇒ tech (route, 1.5s, 42 tok): disk full"),
            "{lines:?}"
        );
        assert!(
            lines.contains(
                &"  ✓ ops advised tech (1.5s, 42 tok)  │  ✗ sec advised tech (1.5s, 42 tok): timed out"
            ),
            "{lines:?}"
        );
        assert_eq!(v.timeline.last().map(|e| e.kind), Some(TimelineKind::Bad));
        let sec = v.workers.iter().find(|w| w.session_id == "s-sec").unwrap();
        assert_eq!((sec.state, sec.duration_ms), (WorkerState::Failed, Some(1500)));
    }

    #[test]
    fn broadcasts_are_timeline_lines_marked_by_kind() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let b = |kind, last, supervisor| {
            ev(EventKind::TeamBroadcast {
                from: "team-skeptic".into(),
                from_id: "s".into(),
                kind,
                message: "I doubt \u{1b}[2Jit\nsecond".into(),
                turn: 1,
                last,
                supervisor,
                sent_at: at,
            })
        };
        use crate::model::BroadcastKind;
        let mut v = CycleView {
            names: describe::Names::team("team"),
            ..CycleView::default()
        };
        let now = Instant::now();
        let mut said = |kind, last, supervisor| {
            v.apply(&b(kind, last, supervisor), now);
            let e = v.timeline.last().cloned().unwrap();
            (e.kind, e.text)
        };
        assert_eq!(
            said(BroadcastKind::Update, false, false),
            (
                TimelineKind::Info,
                "  📣 skeptic (turn 1, update): I doubt it".into()
            )
        );
        let (kind, text) = said(BroadcastKind::Failure, true, false);
        assert!(kind == TimelineKind::Bad && text.contains("failure):"), "{text}");
        let (kind, text) = said(BroadcastKind::Update, true, false);
        assert!(kind == TimelineKind::Good && text.contains(", final):"), "{text}");
        let (kind, text) = said(BroadcastKind::Update, false, true);
        assert!(
            kind == TimelineKind::Heading && text.starts_with("  📢 skeptic (supervisor,"),
            "{text}"
        );
    }

    /// The orchestrator's text before its tool calls and after them are two model calls: the
    /// live line shows the newer alone, not `…sub-agent(s).Waiting` (issue 28 item 18).
    #[test]
    fn a_tool_call_ends_the_live_line_of_its_model_call() {
        let now = Instant::now();
        let mut v = CycleView::default();
        v.apply(
            &ev(EventKind::CycleStarted {
                mode: Mode::Dispatch,
                max_iterations: 5,
            }),
            now,
        );
        v.on_delta("s-lead", "lead", "Dispatching 2 sub-agent(s).", None);
        v.apply(
            &ev(EventKind::ToolCall {
                session_id: "s-lead".into(),
                session: "lead".into(),
                generation: 1,
                call_id: "c1".into(),
                name: "dispatch_agent".into(),
                arguments: "{}".into(),
                step: None,
            }),
            now,
        );
        v.on_delta("s-lead", "lead", "Waiting for the others.", None);
        let live = v.lead_live.as_ref().map(|l| l.2.trim().to_string());
        assert_eq!(live.as_deref(), Some("Waiting for the others."));
    }

    #[test]
    fn a_live_line_keeps_the_last_line_of_the_stream_bounded() {
        let mut live = String::new();
        keep_last_line(&mut live, "first line\nsecond ");
        assert_eq!(live, "second ");
        keep_last_line(&mut live, "half\n");
        assert_eq!(live.trim(), "second half", "a line just ended is still shown");
        keep_last_line(&mut live, "third");
        assert_eq!(live, "third");
        keep_last_line(&mut live, &"é".repeat(1000));
        assert_eq!(live.chars().count(), LIVE_MAX_CHARS);
        assert!(live.chars().all(|c| c == 'é'));
    }

    #[test]
    fn the_run_time_leaves_pauses_out_and_stops_at_the_end() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut v = CycleView::default();
        assert_eq!(v.active_time(at(5)), None, "not started here");
        v.apply(
            &ev(EventKind::CycleStarted {
                mode: Mode::Broadcast,
                max_iterations: 1,
            }),
            t0,
        );
        assert_eq!(v.active_time(at(10)), Some(Duration::from_secs(10)));
        v.apply(&ev(EventKind::CyclePaused), at(10));
        assert_eq!(v.active_time(at(40)), Some(Duration::from_secs(10)), "paused");
        v.apply(&ev(EventKind::CycleResumed), at(40));
        assert_eq!(v.active_time(at(45)), Some(Duration::from_secs(15)));
        v.apply(
            &ev(EventKind::CycleFinished {
                outcome: CycleOutcome::Completed,
                iterations: 1,
                max_iterations: 1,
                mode: None,
                summary: String::new(),
            }),
            at(50),
        );
        assert_eq!(
            v.active_time(at(500)),
            Some(Duration::from_secs(20)),
            "stopped at the end"
        );
    }

    #[test]
    fn events_drive_the_view_to_finished() {
        let now = Instant::now();
        let mut v = CycleView::default();
        v.apply(
            &ev(EventKind::CycleStarted {
                mode: Mode::OrchestratorReflect,
                max_iterations: 3,
            }),
            now,
        );
        v.apply(
            &ev(EventKind::IterationStarted {
                iteration: 1,
                max_iterations: 3,
            }),
            now,
        );
        v.apply(
            &ev(EventKind::Phase {
                iteration: 1,
                phase: Phase::Dispatch,
            }),
            now,
        );
        v.apply(
            &ev(EventKind::Assignment {
                iteration: 1,
                worker: "a".into(),
                session_id: "sa".into(),
                task: "do".into(),
            }),
            now,
        );
        v.apply(
            &ev(EventKind::TurnStarted {
                session_id: "sa".into(),
                session: "a".into(),
                generation: 1,
                prompt: None,
            }),
            now,
        );
        assert_eq!(v.workers[0].state, WorkerState::Running);
        v.apply(
            &ev(EventKind::WorkerFinished {
                iteration: 1,
                worker: "a".into(),
                session_id: "sa".into(),
                success: false,
                duration_ms: 1500,
            }),
            now,
        );
        assert_eq!(v.workers[0].state, WorkerState::Failed);
        v.apply(
            &ev(EventKind::Evaluation {
                iteration: 1,
                score: 0.4,
                rationale: "r".into(),
                trend: None,
                usage: Default::default(),
                duration_ms: 0,
            }),
            now,
        );
        v.apply(&ev(EventKind::CyclePaused), now);
        assert_eq!(v.state_label(), "paused");
        v.apply(&ev(EventKind::CycleResumed), now);
        assert_eq!(v.state_label(), "running");
        v.apply(
            &ev(EventKind::CycleFinished {
                outcome: CycleOutcome::GoalMet,
                iterations: 1,
                max_iterations: 1,
                mode: None,
                summary: String::new(),
            }),
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
    fn a_member_renamed_mid_run_keeps_one_row() {
        let now = Instant::now();
        let mut v = CycleView::default();
        v.apply(
            &ev(EventKind::Assignment {
                iteration: 1,
                worker: "old".into(),
                session_id: "s1".into(),
                task: "t".into(),
            }),
            now,
        );
        v.apply(
            &ev(EventKind::WorkerFinished {
                iteration: 1,
                worker: "new".into(),
                session_id: "s1".into(),
                success: true,
                duration_ms: 10,
            }),
            now,
        );
        assert_eq!(v.workers.len(), 1, "{:?}", v.workers);
        assert_eq!(v.workers[0].name, "new");
        assert_eq!(v.workers[0].state, WorkerState::Done);
    }

    #[test]
    fn a_run_cut_short_says_so_and_stops_its_spinners() {
        let now = Instant::now();
        let mut v = CycleView::default();
        v.apply(
            &ev(EventKind::CycleStarted {
                mode: Mode::Orchestrator,
                max_iterations: 1,
            }),
            now,
        );
        v.apply(
            &ev(EventKind::Assignment {
                iteration: 1,
                worker: "w".into(),
                session_id: "s1".into(),
                task: "t".into(),
            }),
            now,
        );
        v.mark_cut_short(true, Instant::now());
        assert!(!v.running && v.interrupted);
        assert_eq!(v.workers[0].state, WorkerState::Failed);
        assert!(
            v.timeline.last().unwrap().text.contains("interrupted"),
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
