//! The engine's event vocabulary (SPEC section 9), the contract between the engine and its front
//! ends. Every event names its group by id (`group_id`) and, inside a run, the run (`run_id`);
//! events about one session carry its `session_id`. Names (`group`, `session`, `worker`) are
//! for people and may be stale after a rename; consumers key by ids.
//!
//! The TUI renders these; `huddle run --events` prints each as one NDJSON line; the run log
//! (`runs/<group-id>/<run-id>.jsonl`) stores every one but the streaming ones. Events may gain
//! variants and fields; existing ones never change meaning.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::{
    ApprovalMode, BroadcastKind, CycleOutcome, ExecutionKind, ExecutionStatus, GroupId, Message, Mode,
    RelayPhase, Role, SentAs, SessionId, Trend, Usage,
};
use crate::tools::Decision;

/// A run's id: `<UTC time to the millisecond>-<random>`, so sorting ids sorts runs by start.
pub type RunId = String;
/// An id or a name that many events carry (their group's, their run's): shared by them, not
/// copied for each (an event's envelope was three allocations, freed by the thread that
/// consumes it).
pub type SharedStr = Arc<str>;

/// What a run drives. At most one team run per group and one reflection per session at a time;
/// a session may have several chat turns queued.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunKey {
    /// A plain chat turn with one session.
    Chat { session_id: SessionId },
    /// A group's mode (broadcast, sequential, orchestrator, orchestrator_reflect).
    Team { group_id: GroupId },
    /// One session improving its own answer.
    Reflection { session_id: SessionId },
}

impl RunKey {
    pub fn chat(session_id: impl Into<SessionId>) -> RunKey {
        RunKey::Chat {
            session_id: session_id.into(),
        }
    }

    pub fn team(group_id: impl Into<GroupId>) -> RunKey {
        RunKey::Team {
            group_id: group_id.into(),
        }
    }

    pub fn reflection(session_id: impl Into<SessionId>) -> RunKey {
        RunKey::Reflection {
            session_id: session_id.into(),
        }
    }

    /// The session a chat or reflection drives.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            RunKey::Chat { session_id } | RunKey::Reflection { session_id } => Some(session_id),
            RunKey::Team { .. } => None,
        }
    }

    /// True for the keys that allow one run at a time (team runs, reflections).
    pub fn is_exclusive(&self) -> bool {
        !matches!(self, RunKey::Chat { .. })
    }
}

/// The phases of one orchestrator iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Plan,
    Dispatch,
    Collect,
    Synthesize,
    Evaluate,
}

/// One event: where it belongs (ids, plus names for display) and what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineEvent {
    pub group_id: SharedStr,
    /// The group's name when the run (or turn) started.
    pub group: SharedStr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<SharedStr>,
    /// The execution the event belongs to (modes `dispatch` and `team`): its id and its
    /// parent's, so consumers can nest a sub-agent's events under its orchestrator.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionTag>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Which execution an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExecutionTag {
    pub execution_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_execution_id: Option<String>,
}

/// Where a resumed reflect cycle's earlier runs left it: the iterations they completed and
/// the tokens they used (what a view opened on the resumed run counts from).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ResumedCycle {
    pub after: u32,
    #[serde(default)]
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// A run was registered: from now on it can be paused or stopped.
    RunStarted {
        key: RunKey,
    },
    /// A run is over. `outcome` is absent when it never got to work (e.g. the team had no
    /// workers); `failed` says why it could not do its work.
    RunEnded {
        key: RunKey,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<CycleOutcome>,
        #[serde(default)]
        iterations: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<String>,
        /// What the run used in all (its `duration_ms`, `usage` and `cost_usd`): absent in
        /// run files written before they were recorded.
        #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
        totals: Option<RunTotals>,
    },
    CycleStarted {
        mode: Mode,
        max_iterations: u32,
    },
    IterationStarted {
        iteration: u32,
        /// The run's limit, as its `cycle_started` said it (0 in logs written before it was
        /// carried here: the words then leave the limit out).
        #[serde(default)]
        max_iterations: u32,
    },
    Phase {
        iteration: u32,
        phase: Phase,
    },
    Assignment {
        iteration: u32,
        worker: String,
        session_id: SessionId,
        task: String,
    },
    AssignmentDropped {
        iteration: u32,
        name: String,
        reason: String,
    },
    WorkerFinished {
        iteration: u32,
        worker: String,
        session_id: SessionId,
        success: bool,
        duration_ms: u64,
    },
    /// A complete answer added to a session's transcript.
    Message {
        session_id: SharedStr,
        session: SharedStr,
        role: Role,
        text: String,
    },
    /// A piece of a streamed answer; `generation` identifies the turn so late pieces of a
    /// cancelled turn can be dropped. The most frequent event by far (a piece every few
    /// tokens), so its session's id and name are shared, not copied into each.
    Delta {
        session_id: SharedStr,
        session: SharedStr,
        generation: u64,
        text: String,
    },
    /// A session started a turn. `prompt` is the stored user message (in memory only: the
    /// transcript has it).
    TurnStarted {
        session_id: SharedStr,
        session: SharedStr,
        generation: u64,
        #[serde(skip)]
        prompt: Option<Arc<Message>>,
    },
    /// A session's request met a rate or usage limit of `provider`: its run waits until `until`
    /// (`wait_ms` from now; time that counts as paused), then asks again. `reason` is the
    /// provider's word.
    #[serde(rename = "waiting_for_limit")]
    LimitWait {
        session_id: SessionId,
        session: String,
        provider: String,
        until: DateTime<Utc>,
        wait_ms: u64,
        reason: String,
    },
    /// A limit wait ended (`waited_ms`): the turn asks again (or the run was stopped meanwhile).
    LimitWaitOver {
        session_id: SessionId,
        session: String,
        waited_ms: u64,
    },
    /// A session's conversation was compacted (issue 24): `folded` messages were summarised
    /// by its model, so its next request estimates `after` tokens instead of `before`.
    ContextCompacted {
        session_id: SessionId,
        session: String,
        folded: usize,
        before: u64,
        after: u64,
    },
    /// A resumed run's turn that its interrupted run had finished: answered from the transcript,
    /// not asked again (its `turn_finished` follows, with the stored answer).
    TurnReplayed {
        session_id: SessionId,
        session: String,
        generation: u64,
    },
    /// A resumed run began: it continues `resumes` (the run that was interrupted, `interrupted_at`
    /// when that is known, `reason` why). Turns that run finished come back from disk
    /// (`turn_replayed`).
    RunResumed {
        resumes: RunId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interrupted_at: Option<DateTime<Utc>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Turns the earlier runs finished, which this one takes from disk as it meets them.
        finished_turns: u32,
        /// A reflect cycle that goes on: where its earlier runs left it (absent for other modes
        /// and in run files written before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cycle: Option<ResumedCycle>,
    },
    /// A session's turn ended (successfully or not). `message` is the stored answer, as the
    /// transcript has it (in memory only).
    TurnFinished {
        session_id: SharedStr,
        session: SharedStr,
        generation: u64,
        success: bool,
        interrupted: bool,
        duration_ms: u64,
        usage: Option<Usage>,
        /// What the turn cost in US dollars (absent: unknown, its model has no price).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        error: Option<String>,
        #[serde(skip)]
        message: Option<Arc<Message>>,
    },
    /// A note the user left for a member's next turn (`delivered: false`), or given to it
    /// with that turn's prompt (`delivered: true`).
    MemberNote {
        session_id: SessionId,
        session: String,
        text: String,
        delivered: bool,
    },
    /// A notice written into a session's transcript (e.g. a cycle's completion summary).
    Notice {
        session_id: SessionId,
        session: String,
        text: String,
        #[serde(skip)]
        message: Option<Arc<Message>>,
    },
    /// A session's model called a tool. `step` (in memory only) is the stored assistant
    /// message that made this round's calls; it rides on the round's first call.
    ToolCall {
        session_id: SessionId,
        session: String,
        generation: u64,
        call_id: String,
        name: String,
        arguments: String,
        #[serde(skip)]
        step: Option<Arc<Message>>,
    },
    /// A call waits for the user's approval (answer with `Engine::answer_approval`).
    ToolApprovalRequested {
        session_id: SessionId,
        session: String,
        approval_id: u64,
        call_id: String,
        server: String,
        tool: String,
        arguments: String,
        /// Why a hook asks for this call (a `pre_tool_use` hook's `ask`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The answers an agent that runs its own tools offers (an ACP agent's permission
        /// options); empty for huddle's own tools.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        options: Vec<crate::tools::AgentOption>,
    },
    /// How an approval was settled: by the user, or by `huddle run`'s rule (`reason`).
    ToolApprovalDecided {
        session_id: SessionId,
        session: String,
        approval_id: u64,
        call_id: String,
        decision: Decision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A tool call ended. `first_line` is the start of what the model got back; `message`
    /// (in memory only) the stored `tool` message.
    ToolResult {
        session_id: SessionId,
        session: String,
        generation: u64,
        call_id: String,
        name: String,
        ok: bool,
        duration_ms: u64,
        size: u64,
        first_line: String,
        #[serde(skip)]
        message: Option<Arc<Message>>,
    },
    Evaluation {
        iteration: u32,
        score: f64,
        rationale: String,
        trend: Option<Trend>,
        /// Tokens and wall time of this iteration.
        usage: Usage,
        duration_ms: u64,
    },
    EvaluationUnparsed {
        iteration: u32,
    },
    StallWarning {
        iteration: u32,
        consecutive: u32,
        similarity: f64,
    },
    Adjustment {
        text: String,
    },
    Warning {
        message: String,
    },
    Error {
        iteration: u32,
        message: String,
    },
    CyclePaused,
    CycleResumed,
    CycleFinished {
        outcome: CycleOutcome,
        /// Iterations done, or turns taken in a mode that counts turns (`mode`).
        iterations: u32,
        /// The run's limit (0 in logs written before it was carried here).
        #[serde(default)]
        max_iterations: u32,
        /// The run's mode, for the unit of `iterations` (absent in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<Mode>,
        summary: String,
    },
    /// A team run's result, as `huddle run` prints it: the final synthesis, the sequential
    /// final answer, or each broadcast answer under its member's name. Sent before `run_ended`
    /// when the run has one.
    RunResult {
        text: String,
    },
    /// A relay changed state; `reason` says why it ended, paused or waits (a limit, an error).
    RelayState {
        state: RelayPhase,
        turn: u32,
        max_turns: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The driver drafted the next outbound message. `waiting`: it waits for the user
    /// (`Engine::answer_relay`); `review` says why, when a review rule fired.
    RelayDraft {
        session_id: SessionId,
        turn: u32,
        text: String,
        waiting: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review: Option<String>,
    },
    /// The user took the relay over (`active`: they write the outbound messages) or handed it
    /// back to the driver.
    RelayTakeOver {
        turn: u32,
        active: bool,
    },
    /// A message went to the counterpart, with its trace id and hop count.
    RelaySent {
        turn: u32,
        sent_as: SentAs,
        trace_id: String,
        hop: u32,
        text: String,
    },
    /// The counterpart answered.
    RelayReply {
        turn: u32,
        trace_id: String,
        hop: u32,
        text: String,
    },
    /// One audit line per relay turn (never any message text or key).
    RelayAudit {
        turn: u32,
        approval: ApprovalMode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sent_as: Option<SentAs>,
        trace_id: String,
        hop: u32,
        draft_ms: u64,
        remote_ms: u64,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<String>,
    },
    /// Mode `flow`: a member's turn is done and passed work on (`to`), or, with kind `answer`,
    /// gave the run its answer. `duration_ms` and `tokens` are that turn's.
    FlowHop {
        from: String,
        from_id: SessionId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_id: Option<SessionId>,
        kind: HopKind,
        /// A router's note to its destination, or why an advisor failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        success: bool,
        duration_ms: u64,
        tokens: u64,
    },
    /// Mode `pipeline`: the conversation moved to another phase (a message routed to it, or a
    /// handoff). `to_member` `None`: parked for the user. `handoff_count` is the total so far.
    PhaseTransition {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_phase: Option<String>,
        to_phase: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_member: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_member: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_member_id: Option<SessionId>,
        reason: String,
        handoff_count: u32,
        /// The move goes back to an earlier stage (a return edge).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        back: bool,
    },
    /// Mode `pipeline`: a member (or the supervisor) handed the conversation to `to` (a member,
    /// or `human`).
    Handoff {
        from: String,
        from_id: SessionId,
        to: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_id: Option<SessionId>,
        reason: String,
        summary: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        by_supervisor: bool,
    },
    /// Mode `pipeline`: a handoff to a target the pipeline does not allow from here (the model
    /// got `error` back as a tool error).
    HandoffRejected {
        from: String,
        from_id: SessionId,
        target: String,
        error: String,
    },
    /// Modes `dispatch` and `team`: an execution (the event's `execution_id`) began: a
    /// dispatched sub-agent (`queued` when it waits for a place), a clarification, the
    /// orchestrator or supervisor itself, a member's turn.
    ExecutionStarted {
        kind: ExecutionKind,
        /// Its member's handle (the preset name).
        member: String,
        session_id: SessionId,
        task: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        queued: bool,
    },
    /// A queued execution got its place and runs now.
    ExecutionRunning,
    /// An execution is over. `result` is its answer (capped), `error` why it failed; `kind`
    /// and `member` repeat its start's, so a consumer without state can print it.
    ExecutionFinished {
        kind: ExecutionKind,
        member: String,
        status: ExecutionStatus,
        duration_ms: u64,
        tokens: u64,
        /// US dollars the execution's turns cost (absent: unknown).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        tool_calls: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Mode `team`: a member (or the supervisor) broadcast to the team. `turn` is the sender's
    /// turn; `last` marks a member's final broadcast (it has left the team).
    TeamBroadcast {
        from: String,
        from_id: SessionId,
        kind: BroadcastKind,
        message: String,
        turn: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        last: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        supervisor: bool,
        /// When it was sent (named apart from a run file line's own `at`).
        sent_at: DateTime<Utc>,
    },
    /// A message added to a turn in progress before its next model call (a sub-agent's pushed
    /// result, a note that the orchestrator must conclude).
    TurnInput {
        session_id: SessionId,
        session: String,
        generation: u64,
        text: String,
        #[serde(skip)]
        message: Option<Arc<Message>>,
    },
    /// A hook said no: a `pre_tool_use` hook denied a tool call (the reason was the call's
    /// result), or a hook of a later event objected (exit 2, `decision: block`).
    HookBlocked {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// `pre_tool_use`, `post_tool_use`, `turn_finished`, …
        hook_event: String,
        /// The hook's command, for people.
        hook: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        reason: String,
    },
    /// A hook failed or timed out: reported, it blocked nothing.
    HookFailed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        hook_event: String,
        hook: String,
        message: String,
    },
    /// A process was not started: its sandbox is required and none works here (`what`: `agent
    /// claude`, `mcp server git`, `hook guard.sh`).
    SandboxRefused {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        what: String,
        reason: String,
    },
    /// A confined process was stopped by its sandbox: what it said (a write to a read-only
    /// place, a network it cannot reach).
    SandboxDenied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        what: String,
        detail: String,
    },
}

/// What a whole run used: every turn of it (and of the runs it started, a relay's other
/// team), the evaluator's calls included.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunTotals {
    /// Its time, not counting pauses.
    pub duration_ms: u64,
    #[serde(default)]
    pub usage: Usage,
    /// US dollars of the turns whose cost is known; absent when none is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Turns whose model has no price (then the run cost more than `cost_usd`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_turns: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl RunTotals {
    /// The run's cost when every turn of it had a price.
    pub fn known_cost(&self) -> Option<f64> {
        self.cost_usd.filter(|_| self.unpriced_turns == 0)
    }
}

/// How a flow hop passed work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HopKind {
    /// The member's answer became the next member's input.
    Handoff,
    /// A router chose the next member.
    Route,
    /// An advisor's analysis went to the member it advises.
    Advisor,
    /// The member owns the run's answer.
    Answer,
}

impl EventKind {
    /// The event's name as NDJSON writes it (`"event"`).
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::RunEnded { .. } => "run_ended",
            EventKind::CycleStarted { .. } => "cycle_started",
            EventKind::IterationStarted { .. } => "iteration_started",
            EventKind::Phase { .. } => "phase",
            EventKind::Assignment { .. } => "assignment",
            EventKind::AssignmentDropped { .. } => "assignment_dropped",
            EventKind::WorkerFinished { .. } => "worker_finished",
            EventKind::Message { .. } => "message",
            EventKind::Delta { .. } => "delta",
            EventKind::TurnStarted { .. } => "turn_started",
            EventKind::TurnFinished { .. } => "turn_finished",
            EventKind::TurnReplayed { .. } => "turn_replayed",
            EventKind::LimitWait { .. } => "waiting_for_limit",
            EventKind::LimitWaitOver { .. } => "limit_wait_over",
            EventKind::ContextCompacted { .. } => "context_compacted",
            EventKind::RunResumed { .. } => "run_resumed",
            EventKind::Notice { .. } => "notice",
            EventKind::MemberNote { .. } => "member_note",
            EventKind::ToolCall { .. } => "tool_call",
            EventKind::ToolApprovalRequested { .. } => "tool_approval_requested",
            EventKind::ToolApprovalDecided { .. } => "tool_approval_decided",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::Evaluation { .. } => "evaluation",
            EventKind::EvaluationUnparsed { .. } => "evaluation_unparsed",
            EventKind::StallWarning { .. } => "stall_warning",
            EventKind::Adjustment { .. } => "adjustment",
            EventKind::Warning { .. } => "warning",
            EventKind::Error { .. } => "error",
            EventKind::CyclePaused => "cycle_paused",
            EventKind::CycleResumed => "cycle_resumed",
            EventKind::CycleFinished { .. } => "cycle_finished",
            EventKind::FlowHop { .. } => "flow_hop",
            EventKind::PhaseTransition { .. } => "phase_transition",
            EventKind::Handoff { .. } => "handoff",
            EventKind::HandoffRejected { .. } => "handoff_rejected",
            EventKind::RunResult { .. } => "run_result",
            EventKind::RelayState { .. } => "relay_state",
            EventKind::RelayDraft { .. } => "relay_draft",
            EventKind::RelayTakeOver { .. } => "relay_take_over",
            EventKind::RelaySent { .. } => "relay_sent",
            EventKind::RelayReply { .. } => "relay_reply",
            EventKind::RelayAudit { .. } => "relay_audit",
            EventKind::ExecutionStarted { .. } => "execution_started",
            EventKind::ExecutionRunning => "execution_running",
            EventKind::ExecutionFinished { .. } => "execution_finished",
            EventKind::TeamBroadcast { .. } => "team_broadcast",
            EventKind::TurnInput { .. } => "turn_input",
            EventKind::HookBlocked { .. } => "hook_blocked",
            EventKind::HookFailed { .. } => "hook_failed",
            EventKind::SandboxRefused { .. } => "sandbox_refused",
            EventKind::SandboxDenied { .. } => "sandbox_denied",
        }
    }

    /// `sandbox_denied`: the sandbox of session `session_id` (named `session`) stopped `what`
    /// (`tool x`, `agent y`) doing what `detail` says.
    pub fn sandbox_denied(session_id: &str, session: &str, what: String, detail: String) -> EventKind {
        EventKind::SandboxDenied {
            session_id: Some(session_id.to_string()),
            session: Some(session.to_string()),
            what,
            detail,
        }
    }

    /// Streaming events: many per turn, shown live, never stored in a run log.
    pub fn is_streaming(&self) -> bool {
        matches!(self, EventKind::Delta { .. } | EventKind::TurnStarted { .. })
    }

    /// The stored message an event carries in memory only (never serialised), if any: a host
    /// sends it beside the event to front ends that show transcripts.
    pub fn in_memory(&mut self) -> Option<&mut Option<Arc<Message>>> {
        match self {
            EventKind::TurnStarted { prompt: m, .. }
            | EventKind::TurnFinished { message: m, .. }
            | EventKind::Notice { message: m, .. }
            | EventKind::ToolCall { step: m, .. }
            | EventKind::ToolResult { message: m, .. }
            | EventKind::TurnInput { message: m, .. } => Some(m),
            _ => None,
        }
    }
}

impl EngineEvent {
    /// A copy for a run file: what serialises is the same, the in-memory message is left out
    /// (the copy does not hold it: a run log's queue keeps no message alive).
    pub(crate) fn for_log(&self) -> EngineEvent {
        let mut copy = self.clone();
        if let Some(slot) = copy.kind.in_memory() {
            *slot = None;
        }
        copy
    }
}

/// One line of a run file: the event and when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    #[serde(serialize_with = "crate::model::timestamp::serialize")]
    pub at: DateTime<Utc>,
    #[serde(flatten)]
    pub event: EngineEvent,
}

impl RunRecord {
    pub fn now(event: EngineEvent) -> RunRecord {
        RunRecord {
            at: Utc::now(),
            event,
        }
    }
}

impl EngineEvent {
    /// One NDJSON line (no trailing newline).
    pub fn to_ndjson(&self) -> String {
        // Serialising these plain structs cannot fail; fall back to an error object regardless.
        serde_json::to_string(self).unwrap_or_else(|e| {
            serde_json::json!({
                "event": "error",
                "group_id": self.group_id,
                "group": self.group,
                "message": format!("unserialisable event: {e}"),
            })
            .to_string()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_copy_serialises_the_same_without_the_in_memory_message() {
        let e = event(EventKind::TurnFinished {
            session_id: "s".into(),
            session: "a".into(),
            generation: 3,
            success: true,
            interrupted: false,
            duration_ms: 7,
            usage: None,
            error: None,
            message: Some(Arc::new(Message::assistant("the answer"))),
            cost_usd: None,
        });
        let copy = e.for_log();
        assert!(matches!(
            &copy.kind,
            EventKind::TurnFinished { message: None, .. }
        ));
        assert!(
            matches!(&e.kind, EventKind::TurnFinished { message: Some(m), .. } if m.text == "the answer")
        );
        assert_eq!(copy.to_ndjson(), e.to_ndjson());
        let plain = event(EventKind::Warning { message: "w".into() });
        assert_eq!(plain.for_log(), plain);
    }

    fn event(kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "gid".into(),
            group: "g".into(),
            run_id: Some("r1".into()),
            execution: None,
            kind,
        }
    }

    #[test]
    fn ndjson_has_event_names_and_ids() {
        let line = event(EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 5,
        })
        .to_ndjson();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "cycle_started");
        assert_eq!(v["group"], "g");
        assert_eq!(v["group_id"], "gid");
        assert_eq!(v["run_id"], "r1");
        assert_eq!(v["mode"], "orchestrator_reflect");

        let line = event(EventKind::CycleFinished {
            outcome: CycleOutcome::GoalMet,
            iterations: 2,
            max_iterations: 4,
            mode: Some(Mode::OrchestratorReflect),
            summary: "s".into(),
        })
        .to_ndjson();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["outcome"], "goal_met");
        let line = event(EventKind::Phase {
            iteration: 1,
            phase: Phase::Synthesize,
        })
        .to_ndjson();
        assert!(line.contains(r#""phase":"synthesize""#), "{line}");
        let line = event(EventKind::RunStarted {
            key: RunKey::reflection("sid"),
        })
        .to_ndjson();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["key"]["kind"], "reflection");
        assert_eq!(v["key"]["session_id"], "sid");
    }

    #[test]
    fn every_kind_round_trips_through_ndjson_and_names_itself() {
        let kinds = vec![
            EventKind::RunStarted {
                key: RunKey::team("gid"),
            },
            EventKind::RunEnded {
                key: RunKey::chat("s"),
                outcome: Some(CycleOutcome::Completed),
                iterations: 1,
                failed: Some("x".into()),
                totals: None,
            },
            EventKind::RunEnded {
                key: RunKey::team("g"),
                outcome: Some(CycleOutcome::BudgetExhausted),
                iterations: 3,
                failed: None,
                totals: Some(RunTotals {
                    duration_ms: 1200,
                    usage: Usage {
                        cache_read_tokens: 700,
                        ..Usage::new(1000, 50)
                    },
                    cost_usd: Some(0.0125),
                    unpriced_turns: 1,
                }),
            },
            EventKind::Assignment {
                iteration: 1,
                worker: "w".into(),
                session_id: "s".into(),
                task: "t".into(),
            },
            EventKind::TurnFinished {
                session_id: "s".into(),
                session: "n".into(),
                generation: 3,
                success: false,
                interrupted: true,
                duration_ms: 5,
                usage: Some(Usage::new(1, 2)),
                error: Some("e".into()),
                message: None,
                cost_usd: None,
            },
            EventKind::Evaluation {
                iteration: 2,
                score: 0.75,
                rationale: "r".into(),
                trend: Some(Trend::Improving),
                usage: Usage::default(),
                duration_ms: 9,
            },
            EventKind::CyclePaused,
            EventKind::CycleResumed,
            EventKind::RelayState {
                state: RelayPhase::WaitingRemote,
                turn: 2,
                max_turns: 8,
                reason: None,
            },
            EventKind::RelayDraft {
                session_id: "s".into(),
                turn: 1,
                text: "hello".into(),
                waiting: true,
                review: Some("manual".into()),
            },
            EventKind::RelayTakeOver {
                turn: 1,
                active: true,
            },
            EventKind::RelaySent {
                turn: 1,
                sent_as: SentAs::Edited,
                trace_id: "t".into(),
                hop: 1,
                text: "x".into(),
            },
            EventKind::RelayReply {
                turn: 1,
                trace_id: "t".into(),
                hop: 1,
                text: "y".into(),
            },
            EventKind::RelayAudit {
                turn: 1,
                approval: ApprovalMode::SemiAuto,
                sent_as: Some(SentAs::AutoSent),
                trace_id: "t".into(),
                hop: 1,
                draft_ms: 3,
                remote_ms: 4,
                status: "ok".into(),
                failure: None,
            },
            EventKind::ExecutionStarted {
                kind: ExecutionKind::SubAgent,
                member: "logs".into(),
                session_id: "s".into(),
                task: "look".into(),
                queued: true,
            },
            EventKind::ExecutionRunning,
            EventKind::ExecutionFinished {
                kind: ExecutionKind::SubAgent,
                member: "logs".into(),
                status: ExecutionStatus::TimedOut,
                duration_ms: 5,
                tokens: 7,
                cost_usd: Some(0.002),
                tool_calls: 1,
                result: Some("half".into()),
                error: Some("timed out after 1s".into()),
            },
            EventKind::TeamBroadcast {
                from: "skeptic".into(),
                from_id: "s".into(),
                kind: BroadcastKind::Failure,
                message: "gone".into(),
                turn: 2,
                last: true,
                supervisor: false,
                sent_at: Utc::now(),
            },
            EventKind::TurnInput {
                session_id: "s".into(),
                session: "lead".into(),
                generation: 3,
                text: "[Sub-agent completed] logs (exec-2): ok".into(),
                message: None,
            },
        ];
        for kind in kinds {
            let mut e = event(kind);
            e.execution = Some(ExecutionTag {
                execution_id: "exec-2".into(),
                parent_execution_id: Some("exec-1".into()),
            });
            let line = e.to_ndjson();
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["event"], e.kind.name(), "{line}");
            assert_eq!(v["parent_execution_id"], "exec-1", "{line}");
            let back: EngineEvent = serde_json::from_str(&line).unwrap();
            assert_eq!(back, e, "{line}");
            // A run file line (the event and its time) reads back too: no field clashes.
            let record = RunRecord::now(e.clone());
            let back: RunRecord = serde_json::from_str(&serde_json::to_string(&record).unwrap())
                .unwrap_or_else(|err| panic!("{line}: {err}"));
            assert_eq!(back, record);
        }
    }

    #[test]
    fn run_records_round_trip_with_their_time() {
        let r = RunRecord::now(event(EventKind::StallWarning {
            iteration: 2,
            consecutive: 1,
            similarity: 0.97,
        }));
        let line = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "stall_warning");
        assert!(v["at"].is_string(), "{line}");
        let back: RunRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn in_memory_messages_are_not_serialised() {
        let e = event(EventKind::TurnStarted {
            session_id: "s".into(),
            session: "n".into(),
            generation: 1,
            prompt: Some(Arc::new(Message::user("secret prompt"))),
        });
        let line = e.to_ndjson();
        assert!(!line.contains("secret prompt"), "{line}");
        let back: EngineEvent = serde_json::from_str(&line).unwrap();
        assert!(matches!(back.kind, EventKind::TurnStarted { prompt: None, .. }));
    }
}
