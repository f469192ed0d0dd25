//! Mode `dispatch` (issue 13, seed 003): the orchestrator is a tool-using session that
//! dispatches members as sub-agents (`dispatch_agent`, `cancel_agent`, `list_agents`,
//! `ask_agent`). Sub-agents run concurrently under the guardrails; each result is pushed into the
//! orchestrator's conversation as a user message before its next model call. An answer without
//! tool calls while sub-agents run is a wait: the next result wakes the orchestrator. An answer
//! with nothing pending is the run's answer; a wait never is (when what it waited for ends
//! without a word, the orchestrator is asked for its answer). Stop cancels everyone and keeps
//! partial answers.
//!
//! `max_iterations` counts the orchestrator's model calls that act (dispatch, cancel, ask, list,
//! answer): a call that only waits for sub-agents is given back, so a slow sub-agent does not
//! use up the investigation.
//!
//! One task drives it all: the orchestrator's turn and the sub-agents' turns are polled
//! together here, so the run needs no task of its own per sub-agent.
//!
//! Resume point ([`continuation`]): the orchestrator's conversation goes on from its transcript
//! (its calls and the results it had). A sub-agent it dispatched that had finished has its
//! result pushed from disk; one that had not is dispatched again (same member, same task) and
//! the orchestrator is told its new id; its model calls so far count toward its limit. An
//! orchestrator that had answered with nothing outstanding has answered the run; what it
//! said before when it only waited is still a wait.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;

use crate::model::{CycleOutcome, ExecutionKind, ExecutionStatus, Mode, ToolCall, ToolSpec};

use super::super::events::{EventKind, Phase};
use super::super::executions::{Executions, Finish, Start};
use super::super::lent_tools::{LentAnswer, TurnHooks, TurnTools};
use super::super::protocol::dispatch::{CatalogEntry, focus_block, orchestrator_system, parse_text_calls};
use super::super::run::Run;
use super::super::session::{TurnOptions, TurnResult};
use super::super::{EngineError, RunReport};
use super::dispatch_board::{Board, BoardSetup, Candidate, Job};
use super::one_pass::{Steps, finish_steps, phase, with_pending};

/// Said to an orchestrator whose last answer was a wait when nothing is left to wait for.
const NOTHING_MORE: &str =
    "No sub-agent is running and no result is left to come. Give your final answer now, from what you have.";

/// The run's answer when the orchestrator's last word was a wait: what the sub-agents said.
fn no_answer(board: &Board) -> String {
    format!(
        "The orchestrator gave no final answer (its last word was a wait). What the sub-agents reported:\n\n{}",
        board.findings()
    )
}

/// A sub-agent turn in flight: its board index, its result, whether it timed out.
type Running = FuturesUnordered<BoxFuture<'static, (usize, TurnResult, bool)>>;

pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let Some(orchestrator) = run.team.orchestrator.clone() else {
        return Err(EngineError::NotRunnable {
            group: run.team.name.clone(),
            mode: Mode::Dispatch,
            reason: "it has no orchestrator session".into(),
        });
    };
    let (prompt, pending) = with_pending(run, prompt);
    run.emit(EventKind::CycleStarted {
        mode: Mode::Dispatch,
        max_iterations: run.team.max_iterations,
    });
    run.emit(EventKind::IterationStarted {
        iteration: 1,
        max_iterations: run.team.max_iterations,
    });
    phase(run, Phase::Dispatch);

    let handle = orchestrator.handle.clone();
    let text_form = matches!(
        run.shared
            .profile(&run.emitter().group_id, None)
            .providers
            .for_slug(&orchestrator.model),
        Ok((provider, _)) if provider.capabilities().text_tools
    );
    // A resumed run's executions never take an id of the run it resumes.
    let after = run.replay().map_or(0, |r| r.last_execution());
    let executions = Arc::new(Executions::numbered_after(run.emitter().clone(), after));
    let root = executions.start(Start {
        kind: ExecutionKind::Orchestrator,
        parent: None,
        member: &handle,
        session_id: &orchestrator.id,
        task: &crate::text::first_line(&prompt, 200),
        queued: false,
    });
    let candidates: Vec<Candidate> = run
        .team
        .workers
        .iter()
        .map(|w| Candidate {
            handle: w.handle.clone(),
            session_id: w.id.clone(),
        })
        .collect();
    let limits = run.team.settings.dispatch.clone();
    let catalog: Vec<CatalogEntry> = run
        .team
        .workers
        .iter()
        .zip(&candidates)
        .filter(|(_, c)| limits.allows(&c.handle))
        .map(|(w, c)| CatalogEntry {
            name: c.handle.clone(),
            description: w.role.clone().or_else(|| w.system_prompt.clone()),
            tools: w.tools.clone(),
        })
        .collect();
    let system = orchestrator_system(run.team.orchestrator_prompt.as_deref(), &catalog, text_form);
    let board = Arc::new(Board::new(BoardSetup {
        executions: Arc::clone(&executions),
        candidates,
        limits: limits.clone(),
        orchestrator: handle.clone(),
        orchestrator_tag: root.clone(),
        max_calls: run.team.max_iterations,
        result_max_bytes: run
            .shared
            .profile(&run.emitter().group_id, None)
            .options
            .tool_result_max_bytes,
        run_cancel: run.control().cancel.clone(),
    }));
    let hooks = TurnHooks(Arc::clone(&board) as Arc<dyn TurnTools>);
    // What a sub-agent is for and the team's shared context, once in its system prompt.
    let focus = focus_block(&handle, run.team.shared_context.as_deref());
    let started = Instant::now();
    // The time budget leaves paused time out: its deadline moves by every pause.
    let budget_start = tokio::time::Instant::now() + limits.max_budget();
    let active = run.active;
    let budget_at = || budget_start + active.control.paused_for();
    let budget_note = format!("The time budget of {}s is spent", limits.max_budget().as_secs());

    let mut running: Running = FuturesUnordered::new();
    let mut own = Finish::default();
    let mut next_prompt = prompt;
    let mut answer: Option<String> = None;
    let mut failure: Option<String> = None;
    // What the orchestrator said when it only waited: never its final answer.
    let mut waits: Vec<String> = Vec::new();
    let mut asked_for_answer = false;
    match continuation(run, &board, &orchestrator.id) {
        Continued::Fresh => {}
        Continued::Answered(text) => answer = Some(text),
        Continued::Prompt { prompt, waited } => {
            next_prompt = prompt;
            waits = waited;
        }
    }
    'run: loop {
        if answer.is_some() {
            break 'run;
        }
        if !pause_point(run, &board, &mut running).await {
            break 'run;
        }
        if text_form {
            // No tools to lend: the turn is one model call, counted here.
            board.count_call();
            let inputs = board.take_inputs();
            if !inputs.is_empty() {
                next_prompt = format!("{next_prompt}\n\n{}", inputs.join("\n\n"));
            }
        }
        let options = TurnOptions {
            hooks: (!text_form).then(|| hooks.clone()),
            system_extra: Some(system.clone()),
            execution: Some(root.clone()),
            ..run.turn_options(Some(1), None)
        };
        let turn = run
            .shared
            .turn(&orchestrator.id, std::mem::take(&mut next_prompt), options);
        tokio::pin!(turn);
        let result = loop {
            start_jobs(run, &board, &focus, &mut running);
            tokio::select! {
                result = &mut turn => break result,
                Some((index, result, timed_out)) = running.next(), if !running.is_empty() => {
                    sub_agent_done(run, &board, index, &result, timed_out);
                }
                _ = board.changed.notified() => {}
                _ = tokio::time::sleep_until(budget_at()), if !board.cut_off() => board.conclude(&budget_note),
            }
            forward_user_messages(run, &board);
        };
        run.account(&result);
        if let Some(u) = result.usage {
            run.control().count_tokens(u, run.emitter());
            own.tokens += u.total();
        }
        own.tool_calls += result.tool_calls;
        if run.cancelled() || result.cancelled() {
            break 'run;
        }
        if !result.success {
            failure = Some(
                result
                    .error
                    .clone()
                    .unwrap_or_else(|| "the orchestrator failed".into()),
            );
            break 'run;
        }
        let mut said = Vec::new();
        if text_form && !board.told_to_conclude() {
            for call in parse_text_calls(&result.text) {
                said.push(match board.handle(call) {
                    Ok(text) | Err(text) => format!("[huddle] {text}"),
                });
            }
        }
        let is_wait = |text: &str| text.trim().is_empty() || waits.iter().any(|w| w == text.trim());
        if board.told_to_conclude() {
            answer = Some(if is_wait(&result.text) {
                no_answer(&board)
            } else {
                result.text
            });
            break 'run;
        }
        // Its last call answered without acting while something it had not seen was still to
        // come: a wait.
        let waited = said.is_empty() && board.outstanding();
        if waited {
            board.refund_wait();
        }
        let waited = waited || (said.is_empty() && is_wait(&result.text));
        if waited {
            waits.push(result.text.trim().to_string());
        }
        // Between turns: what waits for the orchestrator opens its next turn; with nothing
        // waiting and nothing running, its answer is the run's.
        loop {
            forward_user_messages(run, &board);
            said.extend(board.take_inputs());
            if !said.is_empty() {
                next_prompt = said.join("\n\n");
                continue 'run;
            }
            if !board.pending() {
                if waited {
                    // What it waited for ended without a word (it cancelled it), or it waits
                    // again for nothing: a wait is never the answer. It is asked for one once;
                    // then huddle gives what the sub-agents said.
                    if asked_for_answer {
                        answer = Some(no_answer(&board));
                        break 'run;
                    }
                    asked_for_answer = true;
                    next_prompt = format!("[huddle] {NOTHING_MORE}");
                    continue 'run;
                }
                answer = Some(result.text);
                break 'run;
            }
            if !pause_point(run, &board, &mut running).await {
                break 'run;
            }
            start_jobs(run, &board, &focus, &mut running);
            let cancel = run.control().cancel.clone();
            tokio::select! {
                Some((index, result, timed_out)) = running.next(), if !running.is_empty() => {
                    sub_agent_done(run, &board, index, &result, timed_out);
                }
                _ = board.changed.notified() => {}
                _ = cancel.cancelled() => break 'run,
                _ = tokio::time::sleep_until(budget_at()), if !board.cut_off() => board.conclude(&budget_note),
            }
        }
    }

    // Whatever still runs is cancelled and waited for, so every execution ends reported with
    // what it had said (the cascade of a stop).
    board.cancel_all();
    start_jobs(run, &board, &focus, &mut running);
    while let Some((index, result, timed_out)) = running.next().await {
        sub_agent_done(run, &board, index, &result, timed_out);
    }
    let cancelled = run.cancelled() && answer.is_none();
    own.status = Some(if cancelled {
        ExecutionStatus::Cancelled
    } else if failure.is_some() {
        ExecutionStatus::Failed
    } else {
        ExecutionStatus::Completed
    });
    own.duration = started.elapsed().saturating_sub(run.control().paused_for());
    own.result = answer.clone();
    own.error = failure.clone();
    executions.finish(&root, own);

    if cancelled || failure.is_some() {
        run.restore_pending(pending);
    }
    let outcome = if cancelled {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    if let Some(error) = &failure {
        run.emit(EventKind::Error {
            iteration: 1,
            message: error.clone(),
        });
    }
    let steps = Steps {
        taken: board.calls().max(1),
        allowed: run.team.max_iterations,
        more: Some(board.tally()),
    };
    Ok(finish_steps(
        run,
        outcome,
        answer.unwrap_or_default(),
        Some(&orchestrator),
        failure.as_deref(),
        steps,
    ))
}

/// Where a resumed dispatch run goes on.
enum Continued {
    /// Nothing of it is on disk: from the start.
    Fresh,
    /// The orchestrator had answered, with nothing outstanding: that is the run's answer.
    Answered(String),
    /// The orchestrator's conversation goes on with this prompt (the results to push are on
    /// the board); `waited`: what it said when it only waited, before the interruption.
    Prompt { prompt: String, waited: Vec<String> },
}

/// What the interrupted run left (see the module's doc): results to push go on the board,
/// unfinished sub-agents are dispatched again, the orchestrator's calls are counted.
fn continuation(run: &Run<'_>, board: &Board, orchestrator_id: &str) -> Continued {
    use super::super::protocol::dispatch::{
        ASK_TOOL, CANCEL_TOOL, COMPLETED_PREFIX, DISPATCH_TOOL, DispatchCall, FAILED_PREFIX, parse_call,
        parse_dispatch_result, parse_pushed_result, pushed_result,
    };
    let Some(replay) = run.replay() else {
        return Continued::Fresh;
    };
    let turns = replay.turns(orchestrator_id);
    if turns.is_empty() {
        return Continued::Fresh;
    }
    // Its conversation goes on: no turn of it is answered from disk.
    replay.take_all(orchestrator_id);
    // What it dispatched (and the clarifications it asked): id, member, task, and whether it
    // was a clarification.
    let mut dispatched: Vec<(String, String, String, bool)> = Vec::new();
    let mut pushed: Vec<String> = Vec::new();
    let mut calls = 0u32;
    let note_pushed = |text: &str, pushed: &mut Vec<String>| {
        for line in text.lines() {
            if (line.starts_with(COMPLETED_PREFIX) || line.starts_with(FAILED_PREFIX))
                && let Some(p) = parse_pushed_result(line)
            {
                pushed.push(p.execution_id);
            }
        }
    };
    for turn in &turns {
        note_pushed(&turn.prompt.text, &mut pushed);
        for m in &turn.steps {
            match m.role {
                crate::model::MessageRole::User => note_pushed(&m.text, &mut pushed),
                crate::model::MessageRole::Assistant if !m.tool_calls.is_empty() && !m.by_agent => {
                    calls += 1;
                    // What it cancelled itself stays cancelled.
                    for call in m.tool_calls.iter().filter(|c| c.name == CANCEL_TOOL) {
                        if let Ok(DispatchCall::Cancel { execution_id }) =
                            parse_call(&call.name, &call.arguments)
                        {
                            pushed.push(execution_id.trim().trim_matches('`').to_string());
                        }
                    }
                    for call in m
                        .tool_calls
                        .iter()
                        .filter(|c| c.name == DISPATCH_TOOL || c.name == ASK_TOOL)
                    {
                        let (name, task, asked) = match parse_call(&call.name, &call.arguments) {
                            Ok(DispatchCall::Dispatch { name, task }) => (name, task, false),
                            // A clarification goes to the member of the execution it asks about.
                            Ok(DispatchCall::Ask {
                                execution_id,
                                question,
                            }) => {
                                let about = execution_id.trim().trim_matches('`');
                                let Some(name) = dispatched
                                    .iter()
                                    .find(|(id, ..)| id == about)
                                    .map(|(_, name, ..)| name.clone())
                                else {
                                    continue;
                                };
                                (name, question, true)
                            }
                            _ => continue,
                        };
                        let id = turn
                            .steps
                            .iter()
                            .filter(|r| r.tool_result.as_ref().is_some_and(|i| i.call_id == call.id))
                            .find_map(|r| parse_dispatch_result(&r.text));
                        if let Some(id) = id {
                            dispatched.push((id, name, task, asked));
                        }
                    }
                }
                _ => {}
            }
        }
        calls += u32::from(turn.answer.is_some());
    }
    board.counted_before(calls);
    let last = turns
        .last()
        .filter(|t| t.finished())
        .and_then(|t| t.answer.clone());
    let mut told = Vec::new();
    let mut again = Vec::new();
    for (id, name, task, asked) in dispatched.iter().filter(|(id, ..)| !pushed.contains(id)) {
        let ended = run.team.workers.iter().find_map(|w| {
            replay
                .turns(&w.id)
                .into_iter()
                .find(|t| t.prompt.execution_id.as_deref() == Some(id.as_str()))
                .and_then(|t| t.answer)
        });
        match ended {
            Some(answer) if answer.error.is_none() && !answer.interrupted => {
                let max = run
                    .shared
                    .profile(&run.team.group_id, None)
                    .options
                    .tool_result_max_bytes;
                let text = crate::tools::limits::cap_result(&answer.text, max);
                board.push_input(pushed_result(name, id, Ok(&text)));
                told.push(id.clone());
            }
            // It failed (not cut short): the orchestrator hears so, as it would have.
            Some(answer) if !answer.interrupted => {
                let why = answer.error.unwrap_or_else(|| "it failed".into());
                board.push_input(pushed_result(name, id, Err(&why)));
                told.push(id.clone());
            }
            _ => {
                let redone = if *asked {
                    board.ask_again(name, task)
                } else {
                    board.handle(DispatchCall::Dispatch {
                        name: name.clone(),
                        task: task.clone(),
                    })
                };
                let new = redone.ok().and_then(|r| parse_dispatch_result(&r));
                again.push(match new {
                    Some(new) => format!("{name}: `{id}` is now `{new}`"),
                    None => format!("{name}: `{id}` could not be dispatched again"),
                });
            }
        }
    }
    // What is not dispatched again ended before the interruption: the summary counts it.
    board.ended_before(dispatched.len().saturating_sub(again.len()));
    if told.is_empty()
        && again.is_empty()
        && let Some(answer) = last
    {
        return Continued::Answered(answer.text);
    }
    // The run went on after each answer it had given (one it ended on is `Answered`): each was
    // a wait, and said again it is still one (as in a run never interrupted), not the answer.
    let waited = turns
        .iter()
        .filter(|t| t.finished())
        .filter_map(|t| t.answer.as_ref())
        .map(|a| a.text.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    Continued::Prompt {
        prompt: super::super::protocol::dispatch::resumed_note(told.len(), &again),
        waited,
    }
}

/// Holds the orchestrator while the run is paused (the sub-agents already running go on and
/// report); false when the run was stopped meanwhile.
async fn pause_point(run: &mut Run<'_>, board: &Board, running: &mut Running) -> bool {
    let active = run.active;
    let wait = active.control.wait_if_paused(&active.emitter, |_| {});
    tokio::pin!(wait);
    loop {
        tokio::select! {
            resumed = &mut wait => return resumed.is_some(),
            Some((index, result, timed_out)) = running.next(), if !running.is_empty() => {
                sub_agent_done(run, board, index, &result, timed_out);
            }
        }
    }
}

/// Starts the sub-agent turns the board scheduled.
fn start_jobs(run: &Run<'_>, board: &Board, focus: &str, running: &mut Running) {
    let timeout = run.team.settings.dispatch.agent_timeout();
    let lent = TurnHooks(Arc::new(SubAgentTools));
    for job in board.take_jobs() {
        let Job {
            index,
            tag,
            session_id,
            prompt,
            cancel,
        } = job;
        let (text, options) = TurnOptions {
            hooks: Some(lent.clone()),
            execution: Some(tag),
            cancel: cancel.clone(),
            ..run.turn_options(Some(1), None)
        }
        .with_step(prompt, Some(focus.to_string()));
        let shared = Arc::clone(run.shared);
        running.push(Box::pin(async move {
            let turn = shared.turn(&session_id, text, options);
            tokio::pin!(turn);
            tokio::select! {
                result = &mut turn => (index, result, false),
                _ = tokio::time::sleep(timeout) => {
                    // Cut off, then waited for: it stops at once and its partial answer (and
                    // its events, in order) are what it ends with.
                    cancel.cancel();
                    (index, turn.await, true)
                }
            }
        }));
    }
}

fn sub_agent_done(run: &mut Run<'_>, board: &Board, index: usize, result: &TurnResult, timed_out: bool) {
    run.account(result);
    if let Some(u) = result.usage {
        run.control().count_tokens(u, run.emitter());
    }
    board.complete(index, result, timed_out);
}

/// Messages the user sent to the running team reach the orchestrator with the next results.
fn forward_user_messages(run: &Run<'_>, board: &Board) {
    for message in run.control().take_queued() {
        board.push_input(format!("[From the user] {}", message.trim()));
    }
}

/// What a sub-agent is lent: no tool, only the word for its call of one of the orchestrator's
/// tools (a sub-agent cannot dispatch: depth 1).
struct SubAgentTools;

impl TurnTools for SubAgentTools {
    fn specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer> {
        // Never called: a call of a tool not offered is refused before it is answered.
        let answer = LentAnswer::error(self.refusal(&call.name).unwrap_or_default());
        Box::pin(std::future::ready(answer))
    }

    fn refusal(&self, name: &str) -> Option<String> {
        super::super::protocol::dispatch::is_orchestration_tool(name).then(|| {
            format!(
                "`{name}` is only for the orchestrator: a sub-agent cannot dispatch or manage sub-agents (depth 1)"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sub_agent_is_lent_no_tool_only_the_refusal_of_the_orchestrators() {
        let lent = SubAgentTools;
        assert!(lent.specs().is_empty());
        let refusal = lent.refusal("dispatch_agent").unwrap();
        assert!(refusal.contains("only for the orchestrator") && refusal.contains("depth 1"));
        assert_eq!(lent.refusal("probe__ping"), None);
    }
}
