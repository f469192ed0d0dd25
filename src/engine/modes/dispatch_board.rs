//! The board of a dispatch run: every execution the orchestrator asked for, the queue behind
//! the concurrency cap (and behind a member that is busy: a member is one session, one task at a
//! time), results waiting to be pushed into the orchestrator's conversation, and whether the
//! orchestrator must conclude. The orchestrator's tools act on it; the mode's loop starts what
//! it schedules and reports what finished. No I/O and no waiting here, so the rules are tested
//! directly.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::model::{DispatchLimits, ExecutionKind, ExecutionStatus, ToolCall, ToolSpec};
use crate::tools::limits::cap_result;

use super::super::events::ExecutionTag;
use super::super::executions::{Executions, Finish, Start};
use super::super::lent_tools::{BeforeCall, LentAnswer, TurnTools};
use super::super::protocol::StepPrompt;
use super::super::protocol::dispatch::{
    CANCELLED, DispatchCall, clarification_prompt, conclude_note, dispatch_result, parse_call, pushed_result,
    task_prompt, tool_specs,
};
use super::super::session::TurnResult;

/// A member the orchestrator may dispatch.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub handle: String,
    pub session_id: String,
}

/// The longest line of a sub-agent's answer in [`Board::findings`].
const FINDING_MAX_CHARS: usize = 300;

/// One execution the orchestrator asked for.
#[derive(Debug)]
struct Entry {
    tag: ExecutionTag,
    kind: ExecutionKind,
    member: usize,
    task: String,
    prompt: StepPrompt,
    status: ExecutionStatus,
    cancel: CancellationToken,
    /// Why it was cancelled, if it was.
    cancelled_by: Option<CancelledBy>,
    started: Option<Instant>,
    duration: Duration,
    /// The start of what it answered (or why it failed), once it ended.
    said: Option<String>,
}

/// Who cancelled an execution: the orchestrator's own `cancel_agent` (its end is not pushed),
/// or a conclusion or stop (its partial answer is pushed, for the conclusion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CancelledBy {
    Orchestrator,
    Conclusion,
}

/// A sub-agent turn the mode's loop is to start now.
pub(super) struct Job {
    pub index: usize,
    pub tag: ExecutionTag,
    pub session_id: String,
    pub prompt: StepPrompt,
    pub cancel: CancellationToken,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    queue: VecDeque<usize>,
    to_start: Vec<usize>,
    /// Executions holding a place (running, or about to start).
    running: usize,
    /// The same per member (a member is one session: one task at a time).
    member_running: Vec<u32>,
    /// Messages for the orchestrator's next model call, in arrival order.
    inputs: VecDeque<String>,
    /// The orchestrator's model calls so far, less those that only waited ([`Board::refund_wait`]).
    calls: u32,
    /// Why the orchestrator must conclude, once it must.
    conclude: Option<String>,
    /// What ran or waited was cancelled for the conclusion (the time budget is spent): the
    /// order to conclude does not wait for results any more.
    cut_off: bool,
    /// The orchestrator was told to conclude.
    told_to_conclude: bool,
    /// Sub-agents a resumed run's interrupted part dispatched that ended before the
    /// interruption (their results come from disk; not on the board).
    before: usize,
}

pub(super) struct Board {
    state: Mutex<State>,
    /// Something changed the loop must look at (a dispatch to start, an input).
    pub changed: Notify,
    /// An execution holding a place ended (a conclusion waits for all of them).
    settled: Notify,
    executions: Arc<Executions>,
    candidates: Vec<Candidate>,
    limits: DispatchLimits,
    orchestrator: String,
    orchestrator_tag: ExecutionTag,
    max_calls: u32,
    result_max_bytes: usize,
    run_cancel: CancellationToken,
    specs: Vec<ToolSpec>,
}

/// What a board is made with.
pub(super) struct BoardSetup {
    pub executions: Arc<Executions>,
    pub candidates: Vec<Candidate>,
    pub limits: DispatchLimits,
    pub orchestrator: String,
    pub orchestrator_tag: ExecutionTag,
    pub max_calls: u32,
    pub result_max_bytes: usize,
    /// The run's token: every sub-agent's is its child (a stop cascades).
    pub run_cancel: CancellationToken,
}

impl Board {
    pub fn new(setup: BoardSetup) -> Board {
        let allowed: Vec<String> = setup
            .candidates
            .iter()
            .map(|c| c.handle.clone())
            .filter(|h| setup.limits.allows(h))
            .collect();
        Board {
            state: Mutex::new(State {
                member_running: vec![0; setup.candidates.len()],
                ..State::default()
            }),
            changed: Notify::new(),
            settled: Notify::new(),
            specs: tool_specs(&allowed),
            executions: setup.executions,
            candidates: setup.candidates,
            limits: setup.limits,
            orchestrator: setup.orchestrator,
            orchestrator_tag: setup.orchestrator_tag,
            max_calls: setup.max_calls.max(1),
            result_max_bytes: setup.result_max_bytes,
            run_cancel: setup.run_cancel,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The members the orchestrator may dispatch.
    pub fn allowed(&self) -> impl Iterator<Item = &Candidate> {
        self.candidates.iter().filter(|c| self.limits.allows(&c.handle))
    }

    /// Carries out one orchestration request; `Err` is a tool error for the model.
    pub fn handle(&self, call: DispatchCall) -> Result<String, String> {
        match call {
            DispatchCall::Dispatch { name, task } => self.dispatch(&name, &task),
            DispatchCall::Cancel { execution_id } => Ok(self.cancel(&execution_id).to_string()),
            DispatchCall::List => Ok(self.list()),
            DispatchCall::Ask {
                execution_id,
                question,
            } => self.ask(&execution_id, &question),
        }
    }

    fn dispatch(&self, name: &str, task: &str) -> Result<String, String> {
        let wanted = name.trim().trim_matches('`');
        let Some(member) = self.member_named(wanted) else {
            let allowed: Vec<&str> = self.allowed().map(|c| c.handle.as_str()).collect();
            return Err(format!(
                "`{wanted}` is not a sub-agent you may dispatch; choose one of: {}",
                allowed.join(", ")
            ));
        };
        let prompt = task_prompt(task);
        self.add(ExecutionKind::SubAgent, member, task, prompt)
    }

    /// A clarification the interrupted run asked `name` and that never got its answer, asked
    /// again (the sub-agent it asked about is not on this run's board).
    pub fn ask_again(&self, name: &str, question: &str) -> Result<String, String> {
        let Some(member) = self.member_named(name) else {
            return Err(format!("`{name}` is not a sub-agent of this run"));
        };
        let prompt = clarification_prompt(&self.orchestrator, question);
        self.add(ExecutionKind::Clarification, member, question, prompt)
    }

    /// The sub-agent the orchestrator may dispatch that goes by `handle`.
    fn member_named(&self, handle: &str) -> Option<usize> {
        self.candidates
            .iter()
            .position(|c| c.handle.eq_ignore_ascii_case(handle) && self.limits.allows(&c.handle))
    }

    fn ask(&self, execution_id: &str, question: &str) -> Result<String, String> {
        let member = {
            let state = self.lock();
            let Some(entry) = find(&state, execution_id) else {
                return Err(format!("not_found: no sub-agent `{execution_id}` in this run"));
            };
            if !entry.status.is_finished() {
                return Err(format!(
                    "`{execution_id}` is still {}: its result arrives by itself",
                    entry.status
                ));
            }
            entry.member
        };
        let prompt = clarification_prompt(&self.orchestrator, question);
        self.add(ExecutionKind::Clarification, member, question, prompt)
    }

    /// A new execution: it starts now if there is a place and its member is free, else waits.
    fn add(
        &self,
        kind: ExecutionKind,
        member: usize,
        task: &str,
        prompt: StepPrompt,
    ) -> Result<String, String> {
        let mut state = self.lock();
        if let Some(why) = &state.conclude {
            return Err(format!("nothing more can be dispatched: {why}"));
        }
        let now = self.has_place(&state, member);
        let candidate = &self.candidates[member];
        let tag = self.executions.start(Start {
            kind,
            parent: Some(&self.orchestrator_tag.execution_id),
            member: &candidate.handle,
            session_id: &candidate.session_id,
            task,
            queued: !now,
        });
        let index = state.entries.len();
        state.entries.push(Entry {
            tag: tag.clone(),
            kind,
            member,
            task: task.to_string(),
            prompt,
            status: ExecutionStatus::Queued,
            cancel: self.run_cancel.child_token(),
            cancelled_by: None,
            started: None,
            duration: Duration::ZERO,
            said: None,
        });
        let status = if now {
            self.begin(&mut state, index);
            "accepted"
        } else {
            state.queue.push_back(index);
            "queued"
        };
        drop(state);
        self.changed.notify_one();
        Ok(dispatch_result(&tag.execution_id, status))
    }

    fn has_place(&self, state: &State, member: usize) -> bool {
        state.running < self.limits.max_concurrent() && !busy(state, member)
    }

    fn begin(&self, state: &mut State, index: usize) {
        state.running += 1;
        let member = state.entries[index].member;
        if let Some(n) = state.member_running.get_mut(member) {
            *n += 1;
        }
        let entry = &mut state.entries[index];
        entry.status = ExecutionStatus::Running;
        entry.started = Some(Instant::now());
        state.to_start.push(index);
    }

    /// Moves queued executions whose member is free into free places, in dispatch order.
    fn schedule(&self, state: &mut State) {
        let mut i = 0;
        while i < state.queue.len() && state.running < self.limits.max_concurrent() {
            let index = state.queue[i];
            if busy(state, state.entries[index].member) {
                i += 1;
                continue;
            }
            state.queue.remove(i);
            self.begin(state, index);
            self.executions.running(&state.entries[index].tag);
        }
    }

    /// `cancelled`, `already_completed` or `not_found`.
    pub fn cancel(&self, execution_id: &str) -> &'static str {
        let mut state = self.lock();
        let Some(index) = state
            .entries
            .iter()
            .position(|e| e.tag.execution_id == execution_id.trim().trim_matches('`'))
        else {
            return "not_found";
        };
        if let Some(pos) = state.to_start.iter().position(|&i| i == index) {
            // Scheduled but not started yet: it never runs.
            state.to_start.remove(pos);
            release(&mut state, index);
            self.end_unstarted(&mut state, index);
            self.schedule(&mut state);
            return CANCELLED;
        }
        match state.entries[index].status {
            ExecutionStatus::Running => {
                let entry = &mut state.entries[index];
                entry.cancelled_by = Some(CancelledBy::Orchestrator);
                entry.cancel.cancel();
                CANCELLED
            }
            ExecutionStatus::Queued => {
                state.queue.retain(|&i| i != index);
                self.end_unstarted(&mut state, index);
                CANCELLED
            }
            _ => "already_completed",
        }
    }

    /// A queued execution that never ran ends cancelled.
    fn end_unstarted(&self, state: &mut State, index: usize) {
        let entry = &mut state.entries[index];
        entry.status = ExecutionStatus::Cancelled;
        entry.cancelled_by.get_or_insert(CancelledBy::Conclusion);
        self.executions.finish(
            &entry.tag,
            Finish {
                status: Some(ExecutionStatus::Cancelled),
                error: Some("cancelled before it started".into()),
                ..Finish::default()
            },
        );
    }

    /// Every dispatched execution with its status, one line each.
    pub fn list(&self) -> String {
        let state = self.lock();
        if state.entries.is_empty() {
            return "No sub-agents dispatched yet.".into();
        }
        state
            .entries
            .iter()
            .map(|e| {
                let took = match (e.status, e.started) {
                    (ExecutionStatus::Running, Some(at)) => format!(" {:.1}s", at.elapsed().as_secs_f64()),
                    (s, _) if s.is_finished() && !e.duration.is_zero() => {
                        format!(" {:.1}s", e.duration.as_secs_f64())
                    }
                    _ => String::new(),
                };
                let kind = if e.kind == ExecutionKind::Clarification {
                    " (clarification)"
                } else {
                    ""
                };
                format!(
                    "{} {}{kind}: {}{took} — {}",
                    e.tag.execution_id,
                    self.candidates[e.member].handle,
                    e.status,
                    crate::text::first_line(&e.task, 100)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The sub-agent turns to start now.
    pub fn take_jobs(&self) -> Vec<Job> {
        let mut state = self.lock();
        let starts = std::mem::take(&mut state.to_start);
        starts
            .into_iter()
            .map(|index| {
                let e = &state.entries[index];
                Job {
                    index,
                    tag: e.tag.clone(),
                    session_id: self.candidates[e.member].session_id.clone(),
                    prompt: e.prompt.clone(),
                    cancel: e.cancel.clone(),
                }
            })
            .collect()
    }

    /// A sub-agent's turn ended: its execution is reported, its result pushed (unless it was
    /// cancelled on purpose) and the next queued one gets its place.
    pub fn complete(&self, index: usize, turn: &TurnResult, timed_out: bool) {
        let mut state = self.lock();
        let conclusion = state.conclude.clone();
        let Some(entry) = state.entries.get_mut(index) else {
            return;
        };
        let mut finish = Finish::of_turn(turn);
        if timed_out {
            finish.status = Some(ExecutionStatus::TimedOut);
        } else if entry.cancelled_by.is_some() && !turn.success {
            finish.status = Some(ExecutionStatus::Cancelled);
        }
        let status = finish.status.unwrap_or(ExecutionStatus::Completed);
        entry.status = status;
        entry.duration = entry.started.map_or(turn.duration, |at| at.elapsed());
        finish.duration = entry.duration;
        self.executions.finish(&entry.tag, finish);
        let handle = &self.candidates[entry.member].handle;
        entry.said = Some(match (&turn.error, turn.text.trim()) {
            (_, text) if !text.is_empty() => crate::text::first_line(text, FINDING_MAX_CHARS),
            (Some(error), _) => crate::text::first_line(error, FINDING_MAX_CHARS),
            (None, _) => String::new(),
        });
        let pushed = match status {
            ExecutionStatus::Completed => Some(pushed_result(
                handle,
                &entry.tag.execution_id,
                Ok(&cap_result(&turn.text, self.result_max_bytes)),
            )),
            ExecutionStatus::Cancelled if entry.cancelled_by == Some(CancelledBy::Orchestrator) => None,
            // Ended otherwise while the run itself stops (a stop, an interruption, a limit it
            // gave up waiting for; cut by that stop, or timed out or concluded in the same
            // moment): the orchestrator stops too. Pushed, it would reach the orchestrator's
            // last turn and be taken on resume for a result told; its end is on disk, where a
            // resumed run reads it (and dispatches again what did not finish).
            _ if self.run_cancel.is_cancelled() => None,
            _ => {
                let mut error = turn.error.clone().unwrap_or_else(|| "it failed".into());
                if timed_out {
                    error = format!("timed out after {}s", self.limits.agent_timeout().as_secs());
                } else if status == ExecutionStatus::Cancelled
                    && let Some(why) = &conclusion
                {
                    error = format!("cancelled: {why}");
                }
                if !turn.text.trim().is_empty() {
                    error.push_str("; partial answer: ");
                    error.push_str(&cap_result(&turn.text, self.result_max_bytes));
                }
                Some(pushed_result(handle, &entry.tag.execution_id, Err(&error)))
            }
        };
        release(&mut state, index);
        state.inputs.extend(pushed);
        self.schedule(&mut state);
        drop(state);
        self.changed.notify_one();
        self.settled.notify_waiters();
    }

    /// A message for the orchestrator's next model call (a message from the user).
    pub fn push_input(&self, text: String) {
        self.lock().inputs.push_back(text);
        self.changed.notify_one();
    }

    /// The orchestrator must conclude now (`why`: the time budget is spent): nothing more is
    /// dispatched, what is running or queued is cancelled (partial answers stay in its
    /// transcript and execution, and are pushed with the order).
    pub fn conclude(&self, why: &str) {
        let mut state = self.lock();
        if state.cut_off {
            return;
        }
        state.cut_off = true;
        if !state.told_to_conclude {
            state.conclude = Some(why.to_string());
        }
        self.cancel_outstanding(&mut state);
        drop(state);
        self.changed.notify_one();
    }

    /// The orchestrator's last step (`why`: `max_iterations`): nothing more is dispatched; what
    /// runs or waits goes on, and the order to conclude comes with its results (a slow
    /// sub-agent is waited for, not cut off).
    fn last_step(&self, why: &str) {
        let mut state = self.lock();
        if state.conclude.is_some() {
            return;
        }
        state.conclude = Some(why.to_string());
        drop(state);
        self.changed.notify_one();
    }

    /// True once what ran was cancelled for a conclusion ([`Board::conclude`]).
    pub fn cut_off(&self) -> bool {
        self.lock().cut_off
    }

    /// Cancels every running and queued execution (a stop, or the end of the run).
    pub fn cancel_all(&self) {
        let mut state = self.lock();
        self.cancel_outstanding(&mut state);
    }

    fn cancel_outstanding(&self, state: &mut State) {
        let unstarted: Vec<usize> = state.to_start.drain(..).collect();
        for index in unstarted {
            release(state, index);
            self.end_unstarted(state, index);
        }
        for entry in state
            .entries
            .iter_mut()
            .filter(|e| e.status == ExecutionStatus::Running)
        {
            entry.cancelled_by.get_or_insert(CancelledBy::Conclusion);
            entry.cancel.cancel();
        }
        let queued: Vec<usize> = state.queue.drain(..).collect();
        for index in queued {
            self.end_unstarted(state, index);
        }
    }

    /// True while something runs or waits.
    pub fn pending(&self) -> bool {
        let state = self.lock();
        state.running > 0 || !state.queue.is_empty()
    }

    /// True while something the orchestrator has not seen yet is to come: a result (or a
    /// message) waits for its next call, or a sub-agent that will report runs or waits (one it
    /// cancelled itself reports nothing). An answer it gives then is a wait, not its final
    /// answer.
    pub fn outstanding(&self) -> bool {
        let state = self.lock();
        !state.inputs.is_empty()
            || state
                .entries
                .iter()
                .any(|e| !e.status.is_finished() && e.cancelled_by != Some(CancelledBy::Orchestrator))
    }

    /// The orchestrator's last call only waited for sub-agents: it does not count against
    /// `max_iterations` (waiting for a slow sub-agent costs no step of the investigation).
    pub fn refund_wait(&self) {
        let mut state = self.lock();
        if state.conclude.is_none() {
            state.calls = state.calls.saturating_sub(1);
        }
    }

    /// True once the orchestrator was told to conclude.
    pub fn told_to_conclude(&self) -> bool {
        self.lock().told_to_conclude
    }

    /// What waits for the orchestrator (pushed results, the note to conclude), taken.
    pub fn take_inputs(&self) -> Vec<String> {
        let mut state = self.lock();
        let mut inputs: Vec<String> = state.inputs.drain(..).collect();
        // The order to conclude comes once nothing runs or waits any more (what was cancelled
        // has stopped), with what they said.
        if let Some(why) = state.conclude.clone()
            && !state.told_to_conclude
            && settled(&state)
        {
            state.told_to_conclude = true;
            inputs.push(conclude_note(&why));
        }
        inputs
    }

    /// Counts one model call of the orchestrator; the one that reaches `max_calls` is its last
    /// step: it concludes, once what it dispatched has reported.
    pub fn count_call(&self) {
        let reached = {
            let mut state = self.lock();
            state.calls += 1;
            state.calls >= self.max_calls
        };
        if reached {
            self.last_step(&format!(
                "This is your last step (max_iterations {})",
                self.max_calls
            ));
        }
    }

    /// A resumed run's orchestrator made `calls` model calls before the interruption: they
    /// count toward its limit.
    pub fn counted_before(&self, calls: u32) {
        self.lock().calls = calls.min(self.max_calls.saturating_sub(1));
    }

    pub fn calls(&self) -> u32 {
        self.lock().calls
    }

    /// A resumed run: `n` sub-agents it dispatched ended before the interruption (the tally
    /// counts them).
    pub fn ended_before(&self, n: usize) {
        self.lock().before = n;
    }

    /// What the sub-agents said, one line each (`- **logs** (exec-2, completed): …`): the
    /// run's answer when the orchestrator gave none.
    pub fn findings(&self) -> String {
        let state = self.lock();
        let lines: Vec<String> = state
            .entries
            .iter()
            .filter_map(|e| {
                let said = e.said.as_deref()?;
                Some(format!(
                    "- **{}** ({}, {}): {}",
                    self.candidates[e.member].handle,
                    e.tag.execution_id,
                    e.status,
                    if said.is_empty() { "(no answer)" } else { said }
                ))
            })
            .collect();
        if lines.is_empty() {
            "No sub-agent reported back.".into()
        } else {
            lines.join("\n")
        }
    }

    /// `Sub-agents: 4 dispatched — 2 completed, 1 failed, 1 cancelled` for the summary; a
    /// resumed run adds those that ended before the interruption (`; 3 more before the
    /// interruption`), and says "none dispatched" only when there were none at all.
    pub fn tally(&self) -> String {
        let state = self.lock();
        let before = match state.before {
            0 => String::new(),
            n => format!("{n} ended before the interruption"),
        };
        if state.entries.is_empty() {
            return if before.is_empty() {
                "Sub-agents: none dispatched".into()
            } else {
                format!("Sub-agents: {before}, none dispatched since")
            };
        }
        let before = if before.is_empty() {
            before
        } else {
            format!("; {before}")
        };
        let mut counts: Vec<(ExecutionStatus, usize)> = Vec::new();
        for e in &state.entries {
            match counts.iter_mut().find(|(s, _)| *s == e.status) {
                Some((_, n)) => *n += 1,
                None => counts.push((e.status, 1)),
            }
        }
        let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        format!(
            "Sub-agents: {} dispatched — {}{before}",
            state.entries.len(),
            parts.join(", ")
        )
    }
}

fn busy(state: &State, member: usize) -> bool {
    state.member_running.get(member).is_some_and(|n| *n > 0)
}

/// An execution gives its place back.
fn release(state: &mut State, index: usize) {
    state.running = state.running.saturating_sub(1);
    let member = state.entries[index].member;
    if let Some(n) = state.member_running.get_mut(member) {
        *n = n.saturating_sub(1);
    }
}

/// Nothing runs, is about to start or waits for a place.
fn settled(state: &State) -> bool {
    state.running == 0 && state.queue.is_empty()
}

fn find<'s>(state: &'s State, execution_id: &str) -> Option<&'s Entry> {
    let id = execution_id.trim().trim_matches('`');
    state.entries.iter().find(|e| e.tag.execution_id == id)
}

impl TurnTools for Board {
    fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer> {
        let answer = match parse_call(&call.name, &call.arguments).and_then(|c| self.handle(c)) {
            Ok(text) => LentAnswer {
                text,
                ..LentAnswer::default()
            },
            Err(text) => LentAnswer::error(text),
        };
        Box::pin(async move { answer })
    }

    fn before_call(&self) -> BoxFuture<'_, BeforeCall> {
        Box::pin(async move {
            self.count_call();
            // Told to conclude: first what runs finishes (or, cut off, stops; the run's loop
            // reports each end meanwhile), so what it said comes with the order.
            loop {
                let ended = self.settled.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                {
                    let state = self.lock();
                    if state.conclude.is_none() || state.told_to_conclude || settled(&state) {
                        break;
                    }
                }
                ended.await;
            }
            let inputs = self.take_inputs();
            BeforeCall {
                inputs,
                conclude: self.told_to_conclude(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::EngineEvent;
    use crate::engine::sink::{Emitter, EventSink};

    fn board(
        max_concurrent: u32,
        members: &[&str],
    ) -> (Board, tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) {
        let (sink, rx) = EventSink::channel();
        let emitter = Emitter {
            sink,
            group_id: "g".into(),
            group: "team".into(),
            run_id: Some("r".into()),
        };
        let executions = Arc::new(Executions::new(emitter));
        let root = executions.start(Start {
            kind: ExecutionKind::Orchestrator,
            parent: None,
            member: "lead",
            session_id: "s0",
            task: "the request",
            queued: false,
        });
        let board = Board::new(BoardSetup {
            executions,
            candidates: members
                .iter()
                .enumerate()
                .map(|(i, m)| Candidate {
                    handle: m.to_string(),
                    session_id: format!("s{}", i + 1),
                })
                .collect(),
            limits: DispatchLimits {
                max_concurrent_agents: Some(max_concurrent),
                ..DispatchLimits::default()
            },
            orchestrator: "lead".into(),
            orchestrator_tag: root,
            max_calls: 3,
            result_max_bytes: 10_000,
            run_cancel: CancellationToken::new(),
        });
        (board, rx)
    }

    fn dispatch(board: &Board, name: &str) -> Result<String, String> {
        board.handle(DispatchCall::Dispatch {
            name: name.into(),
            task: format!("task for {name}"),
        })
    }

    fn ok(text: &str) -> TurnResult {
        TurnResult {
            text: text.into(),
            success: true,
            error: None,
            ..TurnResult::failed("x", String::new(), None)
        }
    }

    fn kinds(rx: &mut tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(e) = rx.try_recv() {
            let id = e.execution.map(|t| t.execution_id).unwrap_or_default();
            out.push(format!("{} {id}", e.kind.name()));
        }
        out
    }

    #[test]
    fn dispatches_past_the_cap_queue_and_start_in_order_as_places_free() {
        let (board, mut rx) = board(2, &["a", "b", "c", "d"]);
        assert!(dispatch(&board, "a").unwrap().contains("\"accepted\""));
        assert!(dispatch(&board, "b").unwrap().contains("\"accepted\""));
        assert!(dispatch(&board, "c").unwrap().contains("\"queued\""));
        assert!(dispatch(&board, "d").unwrap().contains("\"queued\""));
        let jobs = board.take_jobs();
        assert_eq!(
            jobs.iter()
                .map(|j| j.tag.execution_id.as_str())
                .collect::<Vec<_>>(),
            ["exec-2", "exec-3"]
        );
        board.complete(jobs[0].index, &ok("found"), false);
        let next = board.take_jobs();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].tag.execution_id, "exec-4", "the first queued one");
        assert_eq!(
            board.take_inputs(),
            vec!["[Sub-agent completed] a (exec-2):\n> found".to_string()]
        );
        let events = kinds(&mut rx);
        assert!(
            events.contains(&"execution_running exec-4".to_string()),
            "{events:?}"
        );
        assert!(events.contains(&"execution_finished exec-2".to_string()));
    }

    /// A resumed run's summary counts the sub-agents that ended before the interruption
    /// (review 24 finding 3: it said "none dispatched" over results restored from disk).
    #[test]
    fn the_tally_counts_sub_agents_that_ended_before_an_interruption() {
        let (board, _rx) = board(2, &["a", "b"]);
        assert_eq!(board.tally(), "Sub-agents: none dispatched");
        board.ended_before(3);
        assert_eq!(
            board.tally(),
            "Sub-agents: 3 ended before the interruption, none dispatched since"
        );
        dispatch(&board, "a").unwrap();
        let jobs = board.take_jobs();
        board.complete(jobs[0].index, &ok("found"), false);
        assert_eq!(
            board.tally(),
            "Sub-agents: 1 dispatched — 1 completed; 3 ended before the interruption"
        );
    }

    #[test]
    fn a_busy_member_waits_for_itself_even_with_places_free() {
        let (board, _rx) = board(5, &["a"]);
        dispatch(&board, "a").unwrap();
        assert!(
            dispatch(&board, "A").unwrap().contains("\"queued\""),
            "one session, one task at a time"
        );
        let first = board.take_jobs();
        assert_eq!(first.len(), 1);
        board.complete(first[0].index, &ok("one"), false);
        assert_eq!(board.take_jobs().len(), 1);
    }

    #[test]
    fn cancel_answers_cancelled_already_completed_or_not_found() {
        let (board, _rx) = board(1, &["a", "b"]);
        dispatch(&board, "a").unwrap();
        dispatch(&board, "b").unwrap();
        let jobs = board.take_jobs();
        assert_eq!(board.cancel("exec-3"), "cancelled", "queued");
        assert_eq!(board.cancel("exec-2"), "cancelled", "running");
        assert!(jobs[0].cancel.is_cancelled());
        let mut cancelled = TurnResult::failed(
            "a",
            "cancelled".into(),
            Some(crate::providers::ErrorKind::Cancelled),
        );
        cancelled.text = "partial".into();
        board.complete(jobs[0].index, &cancelled, false);
        assert!(
            board.take_inputs().is_empty(),
            "a cancelled sub-agent's end is not pushed"
        );
        assert_eq!(board.cancel("exec-2"), "already_completed");
        assert_eq!(board.cancel("exec-9"), "not_found");
        assert!(!board.pending());
        assert!(board.take_jobs().is_empty(), "the queued one never starts");
    }

    /// A sub-agent cut short by the run's stop (the front end went away) is not pushed as
    /// failed: the orchestrator's interrupted turn took it in, and the resumed run took it for a
    /// result and never dispatched the sub-agent again (its final answer was a wait).
    #[test]
    fn a_sub_agent_cut_short_by_the_runs_stop_is_not_pushed_as_failed() {
        let (mut board, _rx) = board(2, &["a", "b"]);
        let run_cancel = CancellationToken::new();
        board.run_cancel = run_cancel.clone();
        dispatch(&board, "a").unwrap();
        dispatch(&board, "b").unwrap();
        let jobs = board.take_jobs();
        let cancelled = || {
            let mut t = TurnResult::failed(
                "b",
                "turn was cancelled".into(),
                Some(crate::providers::ErrorKind::Cancelled),
            );
            t.text = "B ".into();
            t
        };
        // Before the stop, a cancelled turn (a provider that said so) is pushed as failed.
        board.complete(jobs[0].index, &cancelled(), false);
        assert_eq!(board.take_inputs().len(), 1, "pushed before the stop");
        run_cancel.cancel();
        assert!(
            jobs[1].cancel.is_cancelled(),
            "the run's stop reaches the sub-agent"
        );
        board.complete(jobs[1].index, &cancelled(), false);
        assert!(
            board.take_inputs().is_empty(),
            "nothing pushed once the run stops"
        );
        assert!(!board.pending());
        // Nor a turn that gave up on a limit, which is what stopped the run (review s12 F1).
        dispatch(&board, "a").unwrap();
        let limited = board.take_jobs();
        let gave_up = TurnResult::failed(
            "a",
            "rate limited; resets in 3h".into(),
            Some(crate::providers::ErrorKind::RateLimited),
        );
        board.complete(limited[0].index, &gave_up, false);
        assert!(
            board.take_inputs().is_empty(),
            "a limit given up on is not pushed"
        );
        // Nor one that timed out in the same moment (review s12 F4).
        dispatch(&board, "b").unwrap();
        let late = board.take_jobs();
        board.complete(late[0].index, &cancelled(), true);
        assert!(
            board.take_inputs().is_empty(),
            "a time-out during the stop is not pushed"
        );
        // A result that came in is still pushed (the orchestrator may take it in before it stops).
        dispatch(&board, "a").unwrap();
        let done = board.take_jobs();
        board.complete(done[0].index, &ok("A is fine"), false);
        assert_eq!(board.take_inputs().len(), 1, "a completed result is pushed");
    }

    #[test]
    fn a_dispatch_cancelled_before_its_turn_started_never_runs_and_frees_its_place() {
        let (board, _rx) = board(1, &["a", "b"]);
        dispatch(&board, "a").unwrap();
        dispatch(&board, "b").unwrap();
        assert_eq!(board.cancel("exec-2"), "cancelled");
        let jobs = board.take_jobs();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].tag.execution_id, "exec-3", "b got the place");
        board.conclude("enough");
        assert!(board.take_jobs().is_empty());
        assert!(board.pending(), "b still runs until its turn sees the cancel");
        assert!(jobs[0].cancel.is_cancelled());
    }

    #[test]
    fn list_agents_gives_every_execution_with_its_status_and_task() {
        let (board, _rx) = board(1, &["a", "b"]);
        assert_eq!(board.list(), "No sub-agents dispatched yet.");
        dispatch(&board, "a").unwrap();
        dispatch(&board, "b").unwrap();
        let listed = board.list();
        let lines: Vec<&str> = listed.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("exec-2 a: running"), "{listed}");
        assert!(lines[0].ends_with(" — task for a"), "{listed}");
        assert_eq!(lines[1], "exec-3 b: queued — task for b");
    }

    #[test]
    fn the_allow_list_and_unknown_names_are_tool_errors() {
        let (mut board, _rx) = board(2, &["a", "b"]);
        board.limits.sub_agents = vec!["a".into()];
        let err = dispatch(&board, "b").unwrap_err();
        assert_eq!(err, "`b` is not a sub-agent you may dispatch; choose one of: a");
        assert!(dispatch(&board, "ghost").is_err());
    }

    #[test]
    fn failures_and_timeouts_are_pushed_with_what_arrived() {
        let (board, _rx) = board(2, &["a", "b"]);
        dispatch(&board, "a").unwrap();
        dispatch(&board, "b").unwrap();
        let jobs = board.take_jobs();
        let mut failed = TurnResult::failed("a", "HTTP 500".into(), None);
        failed.text = "half".into();
        board.complete(jobs[0].index, &failed, false);
        board.complete(jobs[1].index, &TurnResult::failed("b", "x".into(), None), true);
        assert_eq!(
            board.take_inputs(),
            vec![
                "[Sub-agent failed] a (exec-2):\n> HTTP 500; partial answer: half".to_string(),
                "[Sub-agent failed] b (exec-3):\n> timed out after 300s".to_string(),
            ]
        );
    }

    #[test]
    fn a_clarification_needs_a_finished_sub_agent_and_runs_in_its_session() {
        let (board, _rx) = board(2, &["a"]);
        dispatch(&board, "a").unwrap();
        let ask = |id: &str| {
            board.handle(DispatchCall::Ask {
                execution_id: id.into(),
                question: "which host?".into(),
            })
        };
        assert!(ask("exec-2").unwrap_err().contains("still running"));
        assert!(ask("exec-7").unwrap_err().starts_with("not_found"));
        let jobs = board.take_jobs();
        board.complete(jobs[0].index, &ok("found"), false);
        assert!(ask("exec-2").unwrap().contains("exec-3"));
        let job = board.take_jobs().pop().unwrap();
        assert_eq!(job.session_id, "s1");
        assert_eq!(
            job.prompt.text,
            "## CLARIFICATION REQUEST FROM lead\n\nwhich host?"
        );
    }

    #[tokio::test]
    async fn the_last_call_waits_for_what_runs_and_concludes_with_what_it_said() {
        let (board, _rx) = board(2, &["a"]);
        dispatch(&board, "a").unwrap();
        let jobs = board.take_jobs();
        assert!(!board.before_call().await.conclude);
        assert!(!board.before_call().await.conclude);
        let third = board.before_call();
        tokio::pin!(third);
        assert!(
            futures::poll!(third.as_mut()).is_pending(),
            "it waits for the running sub-agent"
        );
        assert!(!jobs[0].cancel.is_cancelled(), "the last step cuts nobody off");
        let mut done = TurnResult::failed("a", String::new(), None);
        done.success = true;
        done.error = None;
        done.text = "all of it".into();
        board.complete(jobs[0].index, &done, false);
        let third = third.await;
        assert!(third.conclude);
        assert_eq!(third.inputs[0], "[Sub-agent completed] a (exec-2):\n> all of it");
        assert!(third.inputs[1].contains("This is your last step (max_iterations 3)"));
        assert!(third.inputs[1].contains("give your final answer now"));
        assert!(
            dispatch(&board, "a")
                .unwrap_err()
                .starts_with("nothing more can be dispatched")
        );
        assert!(board.before_call().await.inputs.is_empty(), "told once");
    }
}
