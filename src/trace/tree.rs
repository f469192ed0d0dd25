//! Building a run's trace tree from its events, one at a time (the TUI feeds live events; a run
//! file's records go through the same path). Pure: no I/O, no clock (every event comes with its
//! time), O(log n) work at most per event (maps by id, never a rescan).
//!
//! - Executions (`execution_started` / `execution_running` / `execution_finished`, ids in the
//!   event's `execution` tag) become nodes nested by `parent_execution_id`, children in start
//!   order. Tool calls and results carrying an execution's tag are leaf items under it; a team
//!   broadcast is an item under its sender's execution.
//! - Events without a tag (the modes that record no executions: broadcast, sequential,
//!   orchestrator, flow, pipeline, relay) give one `turn` node per member turn, keyed by session
//!   and generation, with the turn's tool calls; the answer that follows a turn gives its result.
//!   A flow's hop and a pipeline's handoff are items under the sender's turn, a pipeline's phase
//!   transition an item of the run.
//! - A node's status, time, tokens and tool calls are [`Execution`]'s fold (the TUI's cards keep
//!   the same): see `describe::executions` for the token rule.
//! - A node that never finished when the run ended, or when a file ends without `run_ended`
//!   ([`TraceBuilder::close`]), is `interrupted`: a crashed run still reads as a tree.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

pub use crate::describe::executions::{Execution, LINE_MAX_CHARS, NodeKind, TASK_MAX_CHARS};
use crate::engine::events::{EngineEvent, EventKind, RunRecord};
use crate::model::{BroadcastKind, Cost, CycleOutcome, ExecutionKind, ExecutionStatus, Mode};
use crate::text::first_line;

fn cost_usd<S: serde::Serializer>(cost: &Cost, serializer: S) -> Result<S::Ok, S::Error> {
    match cost.usd_if_any() {
        Some(usd) => serializer.serialize_f64(usd),
        None => serializer.serialize_none(),
    }
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

/// A node's index in [`Trace::nodes`].
pub type NodeId = usize;

/// A leaf under a node (or under the run, when it belongs to none): a tool call, a broadcast,
/// a move of the run (a flow hop, a pipeline's phase transition or handoff).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum TraceItem {
    ToolCall {
        call_id: String,
        name: String,
        /// `None` while the call has no result (or never got one).
        #[serde(skip_serializing_if = "Option::is_none")]
        ok: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The first line of what the model got back.
        #[serde(skip_serializing_if = "Option::is_none")]
        first_line: Option<String>,
        at: DateTime<Utc>,
    },
    Broadcast {
        from: String,
        kind: BroadcastKind,
        message: String,
        turn: u32,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        last: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        supervisor: bool,
        at: DateTime<Utc>,
    },
    /// An event kept whole: `flow_hop`, `phase_transition`, `handoff`, `handoff_rejected`,
    /// and the denials `hook_blocked`, `hook_failed`, `sandbox_refused`, `sandbox_denied`
    /// (`{"item": "event", "event": "flow_hop", …}`).
    Event {
        #[serde(flatten)]
        event: EventKind,
        at: DateTime<Utc>,
    },
}

/// One execution (or member turn) of a run: the fold of its events, when it ran, and what
/// happened under it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceNode {
    #[serde(flatten)]
    pub exec: Execution,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    /// Tool calls, broadcasts and moves, in the order they happened.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<TraceItem>,
    /// Its children's indices, in start order (JSON nests them instead).
    #[serde(skip)]
    pub children: Vec<NodeId>,
    /// A resumed run's turn that its interrupted run had finished: answered from disk, not
    /// asked again (its tokens were the interrupted run's, not counted again).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_disk: bool,
}

impl TraceNode {
    fn new(exec: Execution, at: DateTime<Utc>) -> TraceNode {
        TraceNode {
            exec,
            started: Some(at),
            ended: None,
            items: Vec::new(),
            children: Vec::new(),
            from_disk: false,
        }
    }
}

/// Where the run as a whole is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// No `run_ended` yet, and the events may still come.
    Running,
    Ended,
    /// The file ended without `run_ended`: the process ended under the run.
    Interrupted,
}

/// The run at the root of the tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub group: String,
    pub group_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    pub state: RunState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CycleOutcome>,
    /// Why the run could not do its work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    /// From its start to its end, less the time it was paused (by the user, or waiting for a
    /// rate or usage limit), as the run's own summary counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The time it was paused.
    #[serde(skip_serializing_if = "is_zero")]
    pub paused_ms: u64,
    /// The tokens the run's turns used (in a file without turn ends: its executions' tokens).
    pub tokens: u64,
    /// What the run cost: its end's total when recorded (the evaluator's calls included), else
    /// its turns' (or executions') costs summed. Written `cost_usd` (`null`: no turn had a
    /// price), with `unpriced_turns` beside it.
    #[serde(
        rename = "cost_usd",
        serialize_with = "cost_usd",
        skip_serializing_if = "Cost::is_zero"
    )]
    pub cost: Cost,
    #[serde(skip_serializing_if = "is_zero")]
    pub unpriced_turns: u32,
    /// The run's end recorded what it cost (runs ended before costs were recorded did not).
    #[serde(skip)]
    pub cost_recorded: bool,
    /// The first line of the run's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Tool calls, broadcasts and moves that belong to no node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<TraceItem>,
    /// A resumed run: the run it continues, and its interruption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interruption: Option<Interruption>,
}

/// How the run a resumed run continues was interrupted (its `run_resumed` event's data; put
/// into words by [`crate::describe::cycle::run_resumed`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interruption {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Turns the earlier runs finished, taken from disk.
    pub finished_turns: u32,
}

impl Default for RunSummary {
    fn default() -> RunSummary {
        RunSummary {
            group: String::new(),
            group_id: String::new(),
            run_id: None,
            mode: None,
            state: RunState::Running,
            outcome: None,
            failed: None,
            started: None,
            ended: None,
            duration_ms: None,
            paused_ms: 0,
            tokens: 0,
            cost: Cost::default(),
            unpriced_turns: 0,
            cost_recorded: false,
            result: None,
            items: Vec::new(),
            resumes: None,
            interruption: None,
        }
    }
}

/// A run's tree: the run, its nodes (in start order) and the top-level ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub run: RunSummary,
    pub nodes: Vec<TraceNode>,
    /// The nodes with no (known) parent, in start order (a set: a damaged file's child that
    /// came before its parent leaves it in O(log n)).
    pub roots: BTreeSet<NodeId>,
    /// Lines of the run file that could not be read (a line torn by a crash).
    pub skipped_lines: usize,
    /// How its member sessions read (by handle), for its nodes and lines.
    pub names: crate::describe::Names,
}

impl Trace {
    pub fn node(&self, id: NodeId) -> Option<&TraceNode> {
        self.nodes.get(id)
    }

    /// The node of an execution id (`exec-3`) or turn id (`turn-2`). Linear: for lookups from
    /// outside; the builder keeps its own map.
    pub fn find(&self, id: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.exec.id == id)
    }

    /// Every node depth-first in display order, with its depth (0 for a root).
    pub fn walk(&self) -> Vec<(usize, NodeId)> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<(usize, NodeId)> = self.roots.iter().rev().map(|&r| (0, r)).collect();
        while let Some((depth, id)) = stack.pop() {
            out.push((depth, id));
            if let Some(node) = self.nodes.get(id) {
                stack.extend(node.children.iter().rev().map(|&c| (depth + 1, c)));
            }
        }
        out
    }

    /// How many nodes have each status, in [`ExecutionStatus`] order, leaving out zeros.
    pub fn status_counts(&self) -> Vec<(ExecutionStatus, usize)> {
        const ORDER: [ExecutionStatus; 7] = [
            ExecutionStatus::Completed,
            ExecutionStatus::Running,
            ExecutionStatus::Queued,
            ExecutionStatus::Failed,
            ExecutionStatus::Cancelled,
            ExecutionStatus::TimedOut,
            ExecutionStatus::Interrupted,
        ];
        ORDER
            .iter()
            .map(|&s| (s, self.nodes.iter().filter(|n| n.exec.status == s).count()))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

/// Where a tool call or broadcast goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Node(NodeId),
    Run,
}

/// Builds a [`Trace`] event by event.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    trace: Trace,
    by_id: HashMap<String, NodeId>,
    /// Member turns in progress (modes without executions): (session id, generation).
    open_turns: HashMap<(String, u64), NodeId>,
    /// Turns a resumed run took from disk (`turn_replayed`), until they finish.
    replayed: HashSet<(String, u64)>,
    /// Each session's latest turn node (its answer follows `turn_finished`).
    last_turn: HashMap<String, NodeId>,
    /// Each session's latest execution (a broadcast without a tag goes there).
    last_execution: HashMap<String, NodeId>,
    /// Union-find over nodes (each entry a node above it, or itself at the top of its tree):
    /// what tells an adoption that would close a cycle, in near O(1).
    tree_top: Vec<NodeId>,
    /// Tool call items by owner and call id.
    tool_items: HashMap<(Owner, String), usize>,
    /// Nodes whose parent has not started (yet): parent id → children.
    orphans: HashMap<String, Vec<NodeId>>,
    /// A worker's assignment, for its next turn (orchestrator modes).
    pending_task: HashMap<String, String>,
    turns: u32,
    last_at: Option<DateTime<Utc>>,
    /// Tokens of every turn that ended (`None` before the first).
    turn_tokens: Option<u64>,
    /// Tokens of every execution that ended, a supervisor's (the sum of its team's) aside.
    execution_tokens: u64,
    /// Since when the run is paused by the user (`cycle_paused`, not yet resumed).
    paused_since: Option<DateTime<Utc>>,
    /// Turns waiting for a limit now, and since when one has been (the run waits with them).
    limit_waits: u32,
    limit_since: Option<DateTime<Utc>>,
    /// The same for costs.
    turn_cost: Option<Cost>,
    execution_cost: Cost,
    /// The run's end said what it cost in all.
    ended_cost: Option<Cost>,
}

fn capped_line(text: &str) -> Option<String> {
    let line = first_line(text, LINE_MAX_CHARS);
    (!line.is_empty()).then_some(line)
}

fn capped_text(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| crate::text::cap_chars(text, TASK_MAX_CHARS))
}

fn millis_between(from: DateTime<Utc>, to: DateTime<Utc>) -> u64 {
    u64::try_from((to - from).num_milliseconds()).unwrap_or(0)
}

impl TraceBuilder {
    pub fn new() -> TraceBuilder {
        TraceBuilder::default()
    }

    /// A builder whose turn nodes name their members as `names` has them (by handle).
    pub fn named(names: crate::describe::Names) -> TraceBuilder {
        let mut builder = TraceBuilder::default();
        builder.trace.names = names;
        builder
    }

    /// A run file's records, read to the end: what never finished is interrupted.
    pub fn from_records(records: &[RunRecord]) -> Trace {
        let mut builder = TraceBuilder::new();
        for r in records {
            builder.apply(&r.event, r.at);
        }
        builder.finish()
    }

    /// A run file's lines, read to the end; lines that are not records (torn by a crash) are
    /// skipped and counted.
    pub fn from_lines<S: AsRef<str>>(lines: &[S]) -> Trace {
        let mut builder = TraceBuilder::new();
        for line in lines {
            builder.apply_line(line.as_ref());
        }
        builder.finish()
    }

    /// A run file's lines, its members named as `names` has them. A file without its end is a
    /// run still going when `going` says so (asked only then): its nodes stay as they are; else
    /// what never finished is interrupted.
    pub fn of_run_file<S: AsRef<str>>(
        names: crate::describe::Names,
        lines: &[S],
        going: impl FnOnce() -> bool,
    ) -> Trace {
        let mut builder = TraceBuilder::named(names);
        for line in lines {
            builder.apply_line(line.as_ref());
        }
        if builder.trace().run.state == RunState::Running && going() {
            builder.into_trace()
        } else {
            builder.finish()
        }
    }

    /// Takes one line of a run file: a record, or a line that cannot be read (counted).
    pub fn apply_line(&mut self, line: &str) {
        match serde_json::from_str::<RunRecord>(line) {
            Ok(r) => self.apply(&r.event, r.at),
            Err(_) => self.skip_line(),
        }
    }

    /// The tree so far (nodes still going are `running` or `queued`).
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The node of an execution id (`exec-3`) or turn id (`turn-2`), in O(1).
    pub fn node_id(&self, id: &str) -> Option<NodeId> {
        self.by_id.get(id).copied()
    }

    /// The tree so far, leaving nodes that are still going as they are (a run in progress).
    pub fn into_trace(self) -> Trace {
        self.trace
    }

    /// The tree of a finished file: [`close`](Self::close)d.
    pub fn finish(mut self) -> Trace {
        self.close();
        self.trace
    }

    /// Counts a line that could not be read.
    pub fn skip_line(&mut self) {
        self.trace.skipped_lines += 1;
    }

    /// No more events will come: a run without `run_ended` was interrupted, and every node still
    /// going never finished.
    pub fn close(&mut self) {
        if self.trace.run.state == RunState::Running {
            self.trace.run.state = RunState::Interrupted;
        }
        self.interrupt_open();
    }

    fn interrupt_open(&mut self) {
        for node in &mut self.trace.nodes {
            node.exec.interrupt(None);
        }
        self.open_turns.clear();
    }

    /// The run's tokens: what its turns used, or, in a file without turn ends, what its
    /// executions report.
    fn total_tokens(&mut self) {
        self.trace.run.tokens = self.turn_tokens.unwrap_or(self.execution_tokens);
        let cost = self.ended_cost.or(self.turn_cost).unwrap_or(self.execution_cost);
        self.trace.run.cost = cost;
        self.trace.run.unpriced_turns = cost.unpriced;
    }

    /// Takes one event that happened at `at`.
    pub fn apply(&mut self, event: &EngineEvent, at: DateTime<Utc>) {
        self.note_run(event, at);
        if let EventKind::TurnReplayed {
            session_id,
            generation,
            ..
        } = &event.kind
        {
            self.replayed.insert((session_id.clone(), *generation));
        }
        let from_disk = match &event.kind {
            EventKind::TurnFinished {
                session_id,
                generation,
                ..
            } => self.replayed.remove(&(session_id.to_string(), *generation)),
            _ => false,
        };
        if let EventKind::TurnFinished {
            usage,
            cost_usd,
            success,
            ..
        } = &event.kind
        {
            // A turn from disk used its tokens in the run it was finished in.
            let used = if from_disk {
                0
            } else {
                usage.map_or(0, |u| u.total())
            };
            self.turn_tokens = Some(self.turn_tokens.unwrap_or(0).saturating_add(used));
            // As the engine counts it: a failed turn without usage was not billed.
            let mut cost = self.turn_cost.unwrap_or_default();
            // A turn from disk was paid for in the run it was finished in.
            if (*success || usage.is_some()) && !from_disk {
                cost.add(Cost::of_turn(*cost_usd));
            }
            self.turn_cost = Some(cost);
            self.total_tokens();
        }
        let tag = event.execution.as_ref();
        // An event of an execution: its fold follows it (its end, its turns' tokens and calls).
        let tagged = tag.and_then(|t| self.by_id.get(&t.execution_id)).copied();
        if let Some(id) = tagged {
            let node = &mut self.trace.nodes[id];
            let was_ended = node.ended.is_some();
            node.exec.follow(&event.kind);
            if let EventKind::ExecutionFinished { tokens, .. } = &event.kind
                && !was_ended
            {
                node.ended = Some(at);
                // A supervisor's execution sums its team's turns: not counted again.
                if node.exec.kind != NodeKind::Execution(ExecutionKind::Supervisor) {
                    self.execution_tokens = self.execution_tokens.saturating_add(*tokens);
                    self.execution_cost.add(node.exec.cost);
                    self.total_tokens();
                }
            }
        }
        match &event.kind {
            EventKind::RunStarted { .. } => self.trace.run.started = Some(at),
            EventKind::RunResumed {
                resumes,
                interrupted_at,
                reason,
                finished_turns,
                ..
            } => {
                self.trace.run.resumes = Some(resumes.clone());
                self.trace.run.interruption = Some(Interruption {
                    interrupted_at: *interrupted_at,
                    reason: reason.as_deref().and_then(capped_line),
                    finished_turns: *finished_turns,
                });
            }
            EventKind::CyclePaused => {
                self.paused_since.get_or_insert(at);
            }
            EventKind::CycleResumed => self.pause_over(at),
            EventKind::LimitWait { .. } => {
                if self.limit_waits == 0 {
                    self.limit_since = Some(at);
                }
                self.limit_waits = self.limit_waits.saturating_add(1);
            }
            EventKind::LimitWaitOver { .. } => {
                self.limit_waits = self.limit_waits.saturating_sub(1);
                if self.limit_waits == 0 {
                    self.limit_wait_over(at);
                }
            }
            EventKind::CycleStarted { mode, .. } => self.trace.run.mode = Some(*mode),
            EventKind::CycleFinished { outcome, .. } => self.trace.run.outcome = Some(*outcome),
            EventKind::RunResult { text } => self.trace.run.result = capped_line(text),
            EventKind::RunEnded {
                outcome,
                failed,
                totals,
                ..
            } => {
                if self.trace.run.state == RunState::Ended {
                    return;
                }
                if let Some(t) = totals {
                    self.trace.run.cost_recorded = true;
                    self.ended_cost = Some(Cost {
                        usd: t.cost_usd.unwrap_or(0.0),
                        priced: u32::from(t.cost_usd.is_some()),
                        unpriced: t.unpriced_turns,
                    });
                    self.total_tokens();
                }
                let run = &mut self.trace.run;
                run.state = RunState::Ended;
                run.ended = Some(at);
                run.outcome = outcome.or(run.outcome);
                run.failed = failed.as_deref().and_then(capped_line);
                self.pause_over(at);
                self.limit_waits = 0;
                self.limit_wait_over(at);
                let run = &mut self.trace.run;
                run.duration_ms = run
                    .started
                    .map(|s| millis_between(s, at).saturating_sub(run.paused_ms));
                self.interrupt_open();
            }
            EventKind::Assignment { session_id, task, .. } => {
                if let Some(task) = capped_text(task) {
                    self.pending_task.insert(session_id.clone(), task);
                }
            }
            EventKind::ExecutionStarted { session_id, .. } => {
                let Some(tag) = tag else { return };
                if tagged.is_some() {
                    return;
                }
                let Some(exec) = Execution::started(tag, &event.kind) else {
                    return;
                };
                let id = self.add_node(exec, at);
                self.last_execution.insert(session_id.clone(), id);
            }
            EventKind::ExecutionFinished {
                duration_ms,
                tokens,
                kind,
                ..
            } if tagged.is_none() => {
                // An end whose start is not in the file still shows, started `duration` earlier.
                let Some(exec) = tag.and_then(|t| Execution::ended(t, &event.kind)) else {
                    return;
                };
                let started = at - chrono::Duration::milliseconds(*duration_ms as i64);
                let cost = exec.cost;
                let id = self.add_node(exec, started);
                self.trace.nodes[id].ended = Some(at);
                if *kind != ExecutionKind::Supervisor {
                    self.execution_tokens = self.execution_tokens.saturating_add(*tokens);
                    self.execution_cost.add(cost);
                    self.total_tokens();
                }
            }
            EventKind::TurnStarted {
                session_id,
                session,
                generation,
                ..
            } if tag.is_none() => {
                self.turn(session_id, session, *generation, at);
            }
            EventKind::TurnFinished {
                session_id,
                session,
                generation,
                duration_ms,
                ..
            } if tag.is_none() => {
                let id = match self.open_turns.remove(&(session_id.to_string(), *generation)) {
                    Some(id) => id,
                    None => self.new_turn(session_id, session, at),
                };
                let node = &mut self.trace.nodes[id];
                node.exec.follow(&event.kind);
                node.from_disk = from_disk;
                node.started = Some(at - chrono::Duration::milliseconds(*duration_ms as i64));
                node.ended = Some(at);
            }
            EventKind::Message { session_id, text, .. } if tag.is_none() => {
                // The answer of the session's turn that just finished.
                if let Some(&id) = self.last_turn.get(&**session_id) {
                    self.trace.nodes[id].exec.answered(text);
                }
            }
            EventKind::ToolCall {
                session_id,
                session,
                generation,
                call_id,
                name,
                ..
            } => {
                let owner = self.tool_owner(tag, session_id, session, *generation, at);
                let item = TraceItem::ToolCall {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    ok: None,
                    duration_ms: None,
                    first_line: None,
                    at,
                };
                let index = self.push_item(owner, item);
                self.tool_items.insert((owner, call_id.clone()), index);
                if let (Owner::Node(id), None) = (owner, tag) {
                    self.trace.nodes[id].exec.follow(&event.kind);
                }
            }
            EventKind::ToolResult {
                session_id,
                session,
                generation,
                call_id,
                name,
                ok,
                duration_ms,
                first_line: line,
                ..
            } => {
                let owner = self.tool_owner(tag, session_id, session, *generation, at);
                let index = match self.tool_items.get(&(owner, call_id.clone())) {
                    Some(&i) => i,
                    None => {
                        let item = TraceItem::ToolCall {
                            call_id: call_id.clone(),
                            name: name.clone(),
                            ok: None,
                            duration_ms: None,
                            first_line: None,
                            at,
                        };
                        self.push_item(owner, item)
                    }
                };
                if let Some(TraceItem::ToolCall {
                    ok: o,
                    duration_ms: d,
                    first_line: f,
                    ..
                }) = self.items_mut(owner).get_mut(index)
                {
                    *o = Some(*ok);
                    *d = Some(*duration_ms);
                    *f = capped_line(line);
                }
            }
            EventKind::TeamBroadcast {
                from,
                from_id,
                kind,
                message,
                turn,
                last,
                supervisor,
                sent_at: sent,
            } => {
                let owner = tagged
                    .or_else(|| self.last_execution.get(from_id).copied())
                    .or_else(|| self.last_turn.get(from_id).copied())
                    .map_or(Owner::Run, Owner::Node);
                let item = TraceItem::Broadcast {
                    from: from.clone(),
                    kind: *kind,
                    message: capped_text(message).unwrap_or_default(),
                    turn: *turn,
                    last: *last,
                    supervisor: *supervisor,
                    at: *sent,
                };
                self.push_item(owner, item);
            }
            // A hop or a handoff goes under the sender's turn; a phase transition is the run's.
            EventKind::FlowHop { from_id, .. }
            | EventKind::Handoff { from_id, .. }
            | EventKind::HandoffRejected { from_id, .. } => {
                let owner = self
                    .last_turn
                    .get(from_id)
                    .map_or(Owner::Run, |&id| Owner::Node(id));
                self.push_event(owner, &event.kind, at);
            }
            EventKind::PhaseTransition { .. } => self.push_event(Owner::Run, &event.kind, at),
            // A denial under the execution or turn it happened in, else the run's.
            EventKind::HookBlocked { session_id, .. }
            | EventKind::HookFailed { session_id, .. }
            | EventKind::SandboxRefused { session_id, .. }
            | EventKind::SandboxDenied { session_id, .. } => {
                let owner = self.denial_owner(tag, session_id.as_deref());
                self.push_event(owner, &event.kind, at);
            }
            _ => {}
        }
    }

    fn push_event(&mut self, owner: Owner, event: &EventKind, at: DateTime<Utc>) {
        let item = TraceItem::Event {
            event: event.clone(),
            at,
        };
        self.push_item(owner, item);
    }

    /// The run's names and times, from whichever event comes first.
    fn note_run(&mut self, event: &EngineEvent, at: DateTime<Utc>) {
        let run = &mut self.trace.run;
        if run.group_id.is_empty() {
            run.group_id = event.group_id.to_string();
            run.group = event.group.to_string();
        }
        if run.run_id.is_none() {
            run.run_id = event.run_id.as_deref().map(str::to_string);
        }
        if run.started.is_none() {
            run.started = Some(at);
        }
        self.last_at = Some(at);
    }

    fn add_node(&mut self, exec: Execution, at: DateTime<Utc>) -> NodeId {
        let index = self.trace.nodes.len();
        let (id, parent) = (exec.id.clone(), exec.parent.clone());
        self.trace.nodes.push(TraceNode::new(exec, at));
        self.tree_top.push(index);
        match parent.as_ref().and_then(|p| self.by_id.get(p)) {
            Some(&p) => {
                self.trace.nodes[p].children.push(index);
                self.tree_top[index] = p;
            }
            None => {
                self.trace.roots.insert(index);
                if let Some(p) = parent {
                    self.orphans.entry(p).or_default().push(index);
                }
            }
        }
        // Children that started before this node did (out of order in a file) move under it.
        // One that is this node's own ancestor (ids naming each other in a damaged file) stays a
        // root: every node stays reachable and the tree stays a tree.
        if let Some(mut adopted) = self.orphans.remove(&id) {
            // An orphan is the top of its own tree: it is this node's ancestor only if it is
            // the top of this node's tree.
            let top = self.top_of(index);
            adopted.retain(|&a| a != top);
            for &a in &adopted {
                self.trace.roots.remove(&a);
                self.tree_top[a] = index;
            }
            let children = &mut self.trace.nodes[index].children;
            children.extend(adopted);
            children.sort_unstable();
        }
        self.by_id.insert(id, index);
        index
    }

    /// The top of the tree a node is in (path halving keeps the chains short).
    fn top_of(&mut self, mut index: NodeId) -> NodeId {
        while self.tree_top[index] != index {
            let above = self.tree_top[self.tree_top[index]];
            self.tree_top[index] = above;
            index = above;
        }
        index
    }

    /// A pause by the user ended (resumed, or the run ended while paused): it counts as paused.
    fn pause_over(&mut self, at: DateTime<Utc>) {
        if let Some(since) = self.paused_since.take() {
            self.trace.run.paused_ms = self.trace.run.paused_ms.saturating_add(millis_between(since, at));
        }
    }

    /// No turn waits for a limit any more: the time since the first began counts as paused.
    fn limit_wait_over(&mut self, at: DateTime<Utc>) {
        if let Some(since) = self.limit_since.take() {
            self.trace.run.paused_ms = self.trace.run.paused_ms.saturating_add(millis_between(since, at));
        }
    }

    /// The turn node of a session's turn (modes without executions), made when first seen.
    fn turn(&mut self, session_id: &str, session: &str, generation: u64, at: DateTime<Utc>) -> NodeId {
        if let Some(&id) = self.open_turns.get(&(session_id.to_string(), generation)) {
            return id;
        }
        let id = self.new_turn(session_id, session, at);
        self.open_turns.insert((session_id.to_string(), generation), id);
        id
    }

    fn new_turn(&mut self, session_id: &str, session: &str, at: DateTime<Utc>) -> NodeId {
        self.turns += 1;
        let task = self.pending_task.remove(session_id);
        let member = self.trace.names.short(session).to_string();
        let exec = Execution::turn(format!("turn-{}", self.turns), &member, session_id, task);
        let id = self.add_node(exec, at);
        self.last_turn.insert(session_id.to_string(), id);
        id
    }

    /// Where a denial goes: its execution, else its session's open turn (or latest), else
    /// the run.
    fn denial_owner(
        &self,
        tag: Option<&crate::engine::events::ExecutionTag>,
        session_id: Option<&str>,
    ) -> Owner {
        if let Some(t) = tag {
            return self
                .by_id
                .get(&t.execution_id)
                .map_or(Owner::Run, |&id| Owner::Node(id));
        }
        let Some(session_id) = session_id else {
            return Owner::Run;
        };
        self.open_turns
            .iter()
            .filter(|((sid, _), _)| sid == session_id)
            .max_by_key(|((_, generation), _)| *generation)
            .map(|(_, &id)| id)
            .or_else(|| self.last_turn.get(session_id).copied())
            .map_or(Owner::Run, Owner::Node)
    }

    fn tool_owner(
        &mut self,
        tag: Option<&crate::engine::events::ExecutionTag>,
        session_id: &str,
        session: &str,
        generation: u64,
        at: DateTime<Utc>,
    ) -> Owner {
        match tag {
            Some(t) => self
                .by_id
                .get(&t.execution_id)
                .map_or(Owner::Run, |&id| Owner::Node(id)),
            None => Owner::Node(self.turn(session_id, session, generation, at)),
        }
    }

    fn items_mut(&mut self, owner: Owner) -> &mut Vec<TraceItem> {
        match owner {
            Owner::Node(id) => &mut self.trace.nodes[id].items,
            Owner::Run => &mut self.trace.run.items,
        }
    }

    fn push_item(&mut self, owner: Owner, item: TraceItem) -> usize {
        let items = self.items_mut(owner);
        items.push(item);
        items.len() - 1
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::events::{ExecutionTag, RunKey};
    use crate::model::Usage;

    pub(crate) fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    pub(crate) fn ev(kind: EventKind, exec: Option<(&str, Option<&str>)>) -> EngineEvent {
        EngineEvent {
            group_id: "gid".into(),
            group: "Incidents".into(),
            run_id: Some("run-1".into()),
            execution: exec.map(|(id, parent)| ExecutionTag {
                execution_id: id.into(),
                parent_execution_id: parent.map(str::to_string),
            }),
            kind,
        }
    }

    /// `b` sees execution `exec` (its id and parent) start at second `secs`.
    fn start(
        b: &mut TraceBuilder,
        kind: ExecutionKind,
        member: &str,
        task: &str,
        exec: (&str, Option<&str>),
        secs: i64,
    ) {
        b.apply(&ev(started(kind, member, task, false), Some(exec)), t(secs));
    }

    pub(crate) fn started(kind: ExecutionKind, member: &str, task: &str, queued: bool) -> EventKind {
        EventKind::ExecutionStarted {
            kind,
            member: member.into(),
            session_id: format!("sid-{member}"),
            task: task.into(),
            queued,
        }
    }

    pub(crate) fn finished(status: ExecutionStatus, ms: u64, tokens: u64, result: &str) -> EventKind {
        EventKind::ExecutionFinished {
            kind: ExecutionKind::SubAgent,
            member: "m".into(),
            status,
            duration_ms: ms,
            tokens,
            tool_calls: 0,
            result: (!result.is_empty()).then(|| result.to_string()),
            error: None,
            cost_usd: None,
        }
    }

    fn tool_call(member: &str, call: &str, name: &str) -> EventKind {
        EventKind::ToolCall {
            session_id: format!("sid-{member}"),
            session: member.into(),
            generation: 1,
            call_id: call.into(),
            name: name.into(),
            arguments: "{}".into(),
            step: None,
        }
    }

    fn tool_result(member: &str, call: &str, name: &str, ok: bool) -> EventKind {
        EventKind::ToolResult {
            session_id: format!("sid-{member}"),
            session: member.into(),
            generation: 1,
            call_id: call.into(),
            name: name.into(),
            ok,
            duration_ms: 12,
            size: 3,
            first_line: "found 3 errors\nmore".into(),
            message: None,
        }
    }

    fn run_ended() -> EventKind {
        EventKind::RunEnded {
            key: RunKey::team("gid"),
            outcome: Some(CycleOutcome::Completed),
            iterations: 1,
            failed: None,
            totals: None,
        }
    }

    /// A dispatch run: orchestrator exec-1 with sub-agents exec-2 (tools), exec-3 (cancelled),
    /// exec-4 (queued, then ran) and a clarification exec-5 of exec-2.
    pub(crate) fn dispatch_records(ended: bool) -> Vec<RunRecord> {
        use ExecutionKind::*;
        use ExecutionStatus::*;
        let o = Some(("exec-1", None));
        let mut r = vec![
            (
                0,
                ev(
                    EventKind::RunStarted {
                        key: RunKey::team("gid"),
                    },
                    None,
                ),
            ),
            (
                0,
                ev(
                    EventKind::CycleStarted {
                        mode: Mode::Dispatch,
                        max_iterations: 5,
                    },
                    None,
                ),
            ),
            (
                0,
                ev(started(Orchestrator, "lead", "Why is checkout slow?", false), o),
            ),
            (
                1,
                ev(
                    started(SubAgent, "logs", "Read the logs", false),
                    Some(("exec-2", Some("exec-1"))),
                ),
            ),
            (
                1,
                ev(
                    started(SubAgent, "metrics", "Check latency", false),
                    Some(("exec-3", Some("exec-1"))),
                ),
            ),
            (
                1,
                ev(
                    started(SubAgent, "deploys", "List deploys", true),
                    Some(("exec-4", Some("exec-1"))),
                ),
            ),
            (
                2,
                ev(tool_call("logs", "c1", "grep"), Some(("exec-2", Some("exec-1")))),
            ),
            (
                3,
                ev(
                    tool_result("logs", "c1", "grep", true),
                    Some(("exec-2", Some("exec-1"))),
                ),
            ),
            (
                4,
                ev(
                    finished(Completed, 3000, 120, "DB pool exhausted\nat 10:02"),
                    Some(("exec-2", Some("exec-1"))),
                ),
            ),
            (
                4,
                ev(EventKind::ExecutionRunning, Some(("exec-4", Some("exec-1")))),
            ),
            (
                5,
                ev(
                    finished(Cancelled, 4000, 30, ""),
                    Some(("exec-3", Some("exec-1"))),
                ),
            ),
            (
                6,
                ev(
                    started(Clarification, "logs", "Which pool?", false),
                    Some(("exec-5", Some("exec-2"))),
                ),
            ),
        ];
        if ended {
            r.extend([
                (
                    7,
                    ev(
                        finished(Completed, 1000, 10, "the orders pool"),
                        Some(("exec-5", Some("exec-2"))),
                    ),
                ),
                (8, ev(finished(Completed, 8000, 200, "Root cause: pool"), o)),
                (
                    8,
                    ev(
                        EventKind::RunResult {
                            text: "Root cause: pool".into(),
                        },
                        None,
                    ),
                ),
                (9, ev(run_ended(), None)),
            ]);
        }
        r.into_iter()
            .map(|(s, event)| RunRecord { at: t(s), event })
            .collect()
    }

    #[test]
    fn executions_nest_by_parent_with_statuses_times_and_tool_calls() {
        let trace = TraceBuilder::from_records(&dispatch_records(true));
        assert_eq!(trace.run.mode, Some(Mode::Dispatch));
        assert_eq!(trace.run.state, RunState::Ended);
        assert_eq!(trace.run.duration_ms, Some(9000));
        assert_eq!(trace.run.tokens, 120 + 30 + 10 + 200);
        assert_eq!(trace.run.result.as_deref(), Some("Root cause: pool"));
        assert_eq!(trace.roots, BTreeSet::from([0]));
        let walk: Vec<(usize, &str)> = trace
            .walk()
            .into_iter()
            .map(|(d, i)| (d, trace.nodes[i].exec.id.as_str()))
            .collect();
        assert_eq!(
            walk,
            [
                (0, "exec-1"),
                (1, "exec-2"),
                (2, "exec-5"),
                (1, "exec-3"),
                (1, "exec-4")
            ]
        );
        let logs = &trace.nodes[trace.find("exec-2").unwrap()];
        assert_eq!(logs.exec.status, ExecutionStatus::Completed);
        assert_eq!(logs.exec.result.as_deref(), Some("DB pool exhausted"));
        assert_eq!(
            (logs.started, logs.ended, logs.exec.duration_ms),
            (Some(t(1)), Some(t(4)), Some(3000))
        );
        assert!(matches!(
            &logs.items[..],
            [TraceItem::ToolCall { name, ok: Some(true), duration_ms: Some(12), first_line: Some(f), .. }]
                if name == "grep" && f == "found 3 errors"
        ));
        assert_eq!(
            trace.nodes[trace.find("exec-3").unwrap()].exec.status,
            ExecutionStatus::Cancelled
        );
        // exec-4 queued, ran, and the run ended without its finish.
        let deploys = &trace.nodes[trace.find("exec-4").unwrap()];
        assert!(deploys.exec.queued);
        assert_eq!(deploys.exec.status, ExecutionStatus::Interrupted);
        assert_eq!(
            trace.nodes[trace.find("exec-5").unwrap()].exec.kind,
            NodeKind::Execution(ExecutionKind::Clarification)
        );
    }

    #[test]
    fn a_live_tree_keeps_running_nodes_and_a_closed_one_interrupts_them() {
        let records = dispatch_records(false);
        let mut b = TraceBuilder::new();
        for r in &records[..6] {
            b.apply(&r.event, r.at);
        }
        let deploys = b.trace().find("exec-4").unwrap();
        assert_eq!(b.trace().nodes[deploys].exec.status, ExecutionStatus::Queued);
        for r in &records[6..] {
            b.apply(&r.event, r.at);
        }
        assert_eq!(b.trace().nodes[deploys].exec.status, ExecutionStatus::Running);
        assert_eq!(b.trace().run.state, RunState::Running);
        let trace = b.finish();
        assert_eq!(trace.run.state, RunState::Interrupted);
        let statuses: Vec<(&str, ExecutionStatus)> = trace
            .walk()
            .into_iter()
            .map(|(_, i)| (trace.nodes[i].exec.id.as_str(), trace.nodes[i].exec.status))
            .collect();
        use ExecutionStatus::*;
        assert_eq!(
            statuses,
            [
                ("exec-1", Interrupted),
                ("exec-2", Completed),
                ("exec-5", Interrupted),
                ("exec-3", Cancelled),
                ("exec-4", Interrupted)
            ]
        );
        assert_eq!(
            trace.status_counts(),
            [(Completed, 1), (Cancelled, 1), (Interrupted, 3)]
        );
    }

    #[test]
    fn torn_lines_are_skipped_and_counted() {
        let mut lines: Vec<String> = dispatch_records(false)
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        lines.insert(3, "not json".into());
        lines.push("{\"at\":\"2026-".into());
        let trace = TraceBuilder::from_lines(&lines);
        assert_eq!(trace.skipped_lines, 2);
        assert_eq!(trace.nodes.len(), 5);
        assert_eq!(trace.run.state, RunState::Interrupted);
    }

    #[test]
    fn a_child_seen_before_its_parent_moves_under_it_in_start_order() {
        let mut b = TraceBuilder::new();
        start(
            &mut b,
            ExecutionKind::SubAgent,
            "a",
            "x",
            ("exec-2", Some("exec-1")),
            1,
        );
        start(
            &mut b,
            ExecutionKind::SubAgent,
            "b",
            "y",
            ("exec-3", Some("exec-1")),
            2,
        );
        start(&mut b, ExecutionKind::Orchestrator, "o", "z", ("exec-1", None), 3);
        let trace = b.into_trace();
        assert_eq!(trace.roots, BTreeSet::from([2]));
        assert_eq!(trace.nodes[2].children, vec![0, 1]);
        // Ids that name each other (a damaged file) leave every node reachable.
        let mut b = TraceBuilder::new();
        start(
            &mut b,
            ExecutionKind::SubAgent,
            "a",
            "x",
            ("exec-1", Some("exec-1")),
            1,
        );
        start(
            &mut b,
            ExecutionKind::SubAgent,
            "b",
            "y",
            ("exec-2", Some("exec-3")),
            2,
        );
        start(
            &mut b,
            ExecutionKind::SubAgent,
            "c",
            "z",
            ("exec-3", Some("exec-2")),
            3,
        );
        let trace = b.into_trace();
        assert_eq!(trace.walk().len(), 3, "{:?}", trace.roots);
        // A finish for an execution whose start is lost still shows.
        let mut b = TraceBuilder::new();
        b.apply(
            &ev(
                finished(ExecutionStatus::Failed, 500, 1, ""),
                Some(("exec-9", None)),
            ),
            t(5),
        );
        let trace = b.finish();
        assert_eq!(
            trace.nodes[0].exec.kind,
            NodeKind::Execution(ExecutionKind::SubAgent)
        );
        assert_eq!(trace.nodes[0].exec.member, "m");
        assert_eq!(trace.nodes[0].exec.status, ExecutionStatus::Failed);
        assert_eq!(
            trace.nodes[0].started,
            Some(t(5) - chrono::Duration::milliseconds(500))
        );
    }

    /// Sub-agents `exec-i`, each the child of `exec-(i-1)`, started in the order given.
    pub(crate) fn chain(order: impl Iterator<Item = u32>) -> Vec<(i64, EngineEvent)> {
        order
            .enumerate()
            .map(|(k, i)| {
                let id = format!("exec-{i}");
                let parent = (i > 1).then(|| format!("exec-{}", i - 1));
                let event = ev(
                    started(ExecutionKind::SubAgent, "a", "x", false),
                    Some((&id, parent.as_deref())),
                );
                (k as i64, event)
            })
            .collect()
    }

    #[test]
    fn children_before_their_parents_by_the_thousand_still_make_one_chain() {
        let n = 20_000u32;
        let mut b = TraceBuilder::new();
        for (at, event) in chain((1..=n).rev()) {
            b.apply(&event, t(at));
        }
        assert_eq!(b.node_id("exec-1"), Some(n as usize - 1));
        let trace = b.finish();
        assert_eq!(trace.roots.len(), 1);
        let walk = trace.walk();
        assert_eq!(walk.len(), n as usize);
        assert_eq!(walk.last().map(|&(depth, _)| depth), Some(n as usize - 1));
        // Many orphans at once, then their parents: each leaves the roots in O(log n).
        let mut b = TraceBuilder::new();
        let sub = |id: &str, parent: Option<&str>| {
            ev(
                started(ExecutionKind::SubAgent, "a", "x", false),
                Some((id, parent)),
            )
        };
        for i in 0..n {
            b.apply(&sub(&format!("child-{i}"), Some(&format!("parent-{i}"))), t(0));
        }
        for i in 0..n {
            b.apply(&sub(&format!("parent-{i}"), None), t(1));
        }
        let trace = b.finish();
        assert_eq!(trace.roots.len(), n as usize);
        assert!(
            trace
                .roots
                .iter()
                .all(|&r| trace.nodes[r].exec.id.starts_with("parent-") && trace.nodes[r].children.len() == 1)
        );
    }

    #[test]
    fn run_tokens_are_the_turns_or_else_the_executions_without_a_supervisors_sum() {
        let mut b = TraceBuilder::new();
        let supervisor = Some(("exec-1", None));
        let member = Some(("exec-2", Some("exec-1")));
        b.apply(
            &ev(
                started(ExecutionKind::Supervisor, "chair", "decide", false),
                supervisor,
            ),
            t(0),
        );
        b.apply(
            &ev(started(ExecutionKind::MemberTurn, "a", "turn 1", false), member),
            t(0),
        );
        b.apply(
            &ev(finished(ExecutionStatus::Completed, 10, 15, "x"), member),
            t(1),
        );
        assert_eq!(b.trace().run.tokens, 15);
        let mut sum = finished(ExecutionStatus::Completed, 10, 15, "x");
        if let EventKind::ExecutionFinished { kind, .. } = &mut sum {
            *kind = ExecutionKind::Supervisor;
        }
        b.apply(&ev(sum, supervisor), t(2));
        assert_eq!(
            b.trace().run.tokens,
            15,
            "the supervisor's sum is not added again"
        );
        assert_eq!(b.trace().nodes[0].exec.tokens, 15);
        // Once turns report their usage, they count.
        b.apply(&ev(turn_finished("a", 1, 10, None), member), t(1));
        b.apply(&ev(turn_finished("chair", 1, 10, None), supervisor), t(1));
        assert_eq!(b.trace().run.tokens, 30);
    }

    /// A team run's start: supervisor `exec-1` and its member `a`'s turn `exec-2`.
    pub(crate) fn supervisor_and_member() -> TraceBuilder {
        let mut b = TraceBuilder::new();
        let supervisor = started(ExecutionKind::Supervisor, "chair", "decide", false);
        b.apply(&ev(supervisor, Some(("exec-1", None))), t(0));
        let member = started(ExecutionKind::MemberTurn, "a", "turn 1", false);
        b.apply(&ev(member, Some(("exec-2", Some("exec-1")))), t(1));
        b
    }

    #[test]
    fn broadcasts_go_under_the_senders_execution_also_read_from_a_line() {
        let mut b = supervisor_and_member();
        let broadcast = |tagged: bool, kind: BroadcastKind| {
            ev(
                EventKind::TeamBroadcast {
                    from: "a".into(),
                    from_id: "sid-a".into(),
                    kind,
                    message: "found it".into(),
                    turn: 1,
                    last: !tagged,
                    supervisor: false,
                    sent_at: t(2),
                },
                tagged.then_some(("exec-2", Some("exec-1"))),
            )
        };
        b.apply(&broadcast(true, BroadcastKind::Update), t(2));
        b.apply(&broadcast(false, BroadcastKind::Update), t(3));
        // As the run log writes it: the event's own `at` and the record's are one key.
        let line = serde_json::to_string(&RunRecord {
            at: t(4),
            event: broadcast(true, BroadcastKind::Failure),
        })
        .unwrap();
        b.apply_line(&line);
        let trace = b.into_trace();
        assert_eq!(trace.skipped_lines, 0, "{line}");
        assert_eq!(trace.nodes[1].items.len(), 3);
        assert!(matches!(
            trace.nodes[1].items[2],
            TraceItem::Broadcast {
                kind: BroadcastKind::Failure,
                turn: 1,
                ..
            }
        ));
        assert!(trace.run.items.is_empty());
    }

    fn turn_finished(member: &str, generation: u64, ms: u64, error: Option<&str>) -> EventKind {
        EventKind::TurnFinished {
            session_id: format!("sid-{member}").into(),
            session: member.into(),
            generation,
            success: error.is_none(),
            interrupted: false,
            duration_ms: ms,
            usage: Some(Usage::new(10, 5)),
            error: error.map(str::to_string),
            message: None,
            cost_usd: None,
        }
    }

    /// A resumed run's turn taken from disk is marked so and its tokens (the interrupted
    /// run's) are not counted for this run; the turn asked again is an ordinary turn.
    #[test]
    fn a_turn_from_disk_is_marked_and_not_counted_again() {
        let mut b = TraceBuilder::new();
        let e = |k| ev(k, None);
        b.apply(
            &e(EventKind::TurnReplayed {
                session_id: "sid-a".into(),
                session: "a".into(),
                generation: 1,
            }),
            t(0),
        );
        b.apply(&e(turn_finished("a", 1, 1000, None)), t(0));
        b.apply(&e(turn_finished("b", 1, 1000, None)), t(1));
        let trace = b.finish();
        assert_eq!(trace.run.tokens, 15, "only b's turn was this run's");
        assert!(trace.nodes[0].from_disk && !trace.nodes[1].from_disk);
        let text = crate::trace::render::text(&trace);
        assert!(text.contains("turn-1 a (from disk) · ✓ completed"), "{text}");
        assert!(text.contains("turn-2 b · ✓ completed"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&crate::trace::render::json(&trace)).unwrap();
        assert_eq!(json["children"][0]["from_disk"], true);
        assert!(json["children"][1].get("from_disk").is_none());
    }

    #[test]
    fn a_hop_goes_under_its_senders_turn_and_a_phase_transition_is_the_runs() {
        let mut b = TraceBuilder::new();
        let e = |k| ev(k, None);
        b.apply(&e(turn_finished("triage", 1, 1000, None)), t(1));
        let hop = EventKind::FlowHop {
            from: "triage".into(),
            from_id: "sid-triage".into(),
            to: Some("tech".into()),
            to_id: None,
            kind: crate::engine::events::HopKind::Route,
            message: None,
            success: true,
            duration_ms: 1000,
            tokens: 15,
        };
        b.apply(&e(hop.clone()), t(1));
        let moved = EventKind::PhaseTransition {
            from_phase: None,
            to_phase: "intake".into(),
            from_member: None,
            to_member: None,
            to_member_id: None,
            reason: "parked".into(),
            handoff_count: 0,
            back: false,
        };
        b.apply(&e(moved), t(2));
        let trace = b.finish();
        assert!(matches!(&trace.nodes[0].items[..], [TraceItem::Event { event, .. }] if *event == hop));
        assert!(matches!(&trace.run.items[..], [TraceItem::Event { .. }]));
        let json = serde_json::to_value(&trace.run.items[0]).unwrap();
        assert_eq!(json["item"], "event");
        assert_eq!(json["event"], "phase_transition");
        assert_eq!(json["to_phase"], "intake");
        assert!(json["at"].is_string(), "{json}");
    }

    #[test]
    fn a_denial_goes_under_its_turn_and_reads_as_everywhere_else() {
        let mut b = TraceBuilder::new();
        let e = |k| ev(k, None);
        b.apply(&e(tool_call("dev", "c1", "time__now")), t(1));
        let blocked = EventKind::HookBlocked {
            session_id: Some("sid-dev".into()),
            session: Some("dev".into()),
            hook_event: "pre_tool_use".into(),
            hook: "guard.sh".into(),
            tool: Some("time__now".into()),
            call_id: Some("c1".into()),
            reason: "no clocks".into(),
        };
        b.apply(&e(blocked.clone()), t(1));
        let refused = EventKind::SandboxRefused {
            session_id: None,
            session: None,
            what: "hook notify".into(),
            reason: "the sandbox is required (read-only) but not available: bwrap not found".into(),
        };
        b.apply(&e(refused), t(2));
        let trace = b.finish();
        assert!(matches!(
            &trace.nodes[0].items[..],
            [TraceItem::ToolCall { .. }, TraceItem::Event { event, .. }] if *event == blocked
        ));
        assert!(matches!(&trace.run.items[..], [TraceItem::Event { .. }]));
        let text = crate::trace::render::text(&trace);
        assert!(
            text.contains("⛔ dev: hook `guard.sh` denied `time__now`: no clocks"),
            "{text}"
        );
        assert!(text.contains("⛔ hook notify not started"), "{text}");
    }

    #[test]
    fn runs_without_executions_get_one_node_per_member_turn() {
        let mut b = TraceBuilder::new();
        let e = |k| ev(k, None);
        b.apply(
            &e(EventKind::CycleStarted {
                mode: Mode::Orchestrator,
                max_iterations: 1,
            }),
            t(0),
        );
        b.apply(
            &e(EventKind::Assignment {
                iteration: 1,
                worker: "logs".into(),
                session_id: "sid-logs".into(),
                task: "Read the logs".into(),
            }),
            t(0),
        );
        b.apply(&e(tool_call("logs", "c1", "grep")), t(1));
        b.apply(&e(tool_result("logs", "c1", "grep", false)), t(2));
        b.apply(&e(turn_finished("logs", 1, 3000, None)), t(3));
        b.apply(
            &e(EventKind::Message {
                session_id: "sid-logs".into(),
                session: "logs".into(),
                role: crate::model::Role::Worker,
                text: "\nAll quiet\nsecond".into(),
            }),
            t(3),
        );
        b.apply(
            &e(turn_finished(
                "metrics",
                4,
                1000,
                Some("turn on provider `sim` was cancelled"),
            )),
            t(4),
        );
        b.apply(&e(tool_call("lead", "c9", "read")), t(5));
        let trace = b.finish();
        assert_eq!(trace.run.mode, Some(Mode::Orchestrator));
        assert_eq!(trace.roots, BTreeSet::from([0, 1, 2]));
        let logs = &trace.nodes[0];
        assert_eq!(
            (logs.exec.id.as_str(), logs.exec.kind),
            ("turn-1", NodeKind::Turn)
        );
        assert_eq!(logs.exec.task.as_deref(), Some("Read the logs"));
        assert_eq!(logs.exec.status, ExecutionStatus::Completed);
        assert_eq!(
            (
                logs.started,
                logs.exec.duration_ms,
                logs.exec.tokens,
                logs.exec.tool_calls
            ),
            (Some(t(0)), Some(3000), 15, 1)
        );
        assert_eq!(logs.exec.result.as_deref(), Some("All quiet"));
        assert!(matches!(
            &logs.items[..],
            [TraceItem::ToolCall { ok: Some(false), .. }]
        ));
        assert_eq!(trace.nodes[1].exec.status, ExecutionStatus::Cancelled);
        assert_eq!(trace.nodes[2].exec.status, ExecutionStatus::Interrupted);
        assert_eq!(trace.run.tokens, 30);
    }

    /// Issue 28 item 16: the run's duration leaves out the time it was paused (by the user and
    /// waiting for a limit, overlapping waits once), as its own summary does.
    #[test]
    fn the_run_s_duration_leaves_out_its_pauses_and_limit_waits() {
        let wait = |who: &str| EventKind::LimitWait {
            session_id: format!("sid-{who}"),
            session: who.into(),
            provider: "anthropic".into(),
            until: t(100),
            wait_ms: 1000,
            reason: "429".into(),
        };
        let over = |who: &str| EventKind::LimitWaitOver {
            session_id: format!("sid-{who}"),
            session: who.into(),
            waited_ms: 1000,
        };
        let started = EventKind::RunStarted {
            key: RunKey::team("gid"),
        };
        let mut b = TraceBuilder::new();
        for (secs, kind) in [
            (0, started),
            (10, EventKind::CyclePaused),
            (40, EventKind::CycleResumed),
            (50, wait("a")),
            (55, wait("b")),
            (60, over("a")),
            (70, over("b")),
            (90, EventKind::CyclePaused),
            (100, run_ended()),
        ] {
            b.apply(&ev(kind, None), t(secs));
        }
        let trace = b.finish();
        assert_eq!(trace.run.paused_ms, (30 + 20 + 10) * 1000);
        assert_eq!(trace.run.duration_ms, Some(40_000), "100s less 60s paused");
    }

    /// A resumed run keeps its interruption as data (the words are describe's).
    #[test]
    fn a_resumed_run_keeps_its_interruption_as_data() {
        let mut b = TraceBuilder::new();
        b.apply(
            &ev(
                EventKind::RunResumed {
                    resumes: "run-0".into(),
                    interrupted_at: Some(t(5)),
                    reason: Some("SIGTERM".into()),
                    finished_turns: 3,
                    cycle: None,
                },
                None,
            ),
            t(9),
        );
        let trace = b.finish();
        assert_eq!(trace.run.resumes.as_deref(), Some("run-0"));
        assert_eq!(
            trace.run.interruption,
            Some(Interruption {
                interrupted_at: Some(t(5)),
                reason: Some("SIGTERM".into()),
                finished_turns: 3,
            })
        );
    }

    /// A member's turn node goes by its handle when the names are known (issue 28 item 3).
    #[test]
    fn turn_nodes_name_their_members_by_handle() {
        let mut b = TraceBuilder::named(crate::describe::Names::team("help-desk"));
        let turn = EventKind::TurnStarted {
            session_id: "sid-d".into(),
            session: "help-desk-dispatcher".into(),
            generation: 1,
            prompt: None,
        };
        b.apply(&ev(turn, None), t(0));
        assert_eq!(b.finish().nodes[0].exec.member, "dispatcher");
    }
}
