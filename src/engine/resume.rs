//! Resuming an interrupted team run (or a session's reflection) from what is on disk.
//!
//! A resumed run is its mode run again on the same request, with one difference: every turn
//! the interrupted run (or an earlier resumption) had *finished* is answered from the
//! transcript instead of the model ([`Replay`]). A turn's prompt and final answer carry their
//! run id in the transcript, and the answer is written before anything reports the turn
//! ended (`TranscriptWriter::append_written`), so what was reported is there. A mode that runs
//! its turns from the same state asks the same prompts in the same order: the finished ones
//! come back at once (the tools lent to them hear their calls again, so a handoff or a
//! broadcast they made counts again) and the model is asked only what never finished. What each
//! mode continues from, and what it keeps besides its turns (a relay's answers to its drafts, a
//! pipeline's state at the start, a deliberation's broadcast log, a dispatch run's sub-agents),
//! is said in its file and in its row's `resume` words.
//!
//! A prompt that was sent but never answered is taken back (a `supersedes` mark) when it is
//! asked again, so a model is not sent it twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::Utc;

use crate::model::{CycleOutcome, Message, MessageRole, Mode, OpenRun, SessionId};

use super::events::{EventKind, RunId};
use super::run::{Resumed, Run};
use super::team::Team;
use super::{ActiveRun, EngineError, EngineShared, RunOverrides, RunReport, lock};

/// Opens the run on its group ([`OpenRun`]). With `resume` (or, for a relay's counterpart
/// group, `nested` and the same request as its open run), the group's open run is continued:
/// its earlier runs' finished turns are read from the transcripts of the team's sessions, a
/// pipeline's state goes back to where the run began, and the sessions read their conversations
/// again (with the marks a resumption writes). The caller writes the group through.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn open(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    team: &Team,
    prompt: &str,
    overrides: &RunOverrides,
    resume: bool,
    nested: bool,
) -> Option<Resumed> {
    let run_id = active.run_id();
    let gid = team.group_id.clone();
    let (previous, pipeline_now) = shared.org.read(|o| {
        let g = o.group(&gid);
        (
            g.and_then(|g| g.state.run.clone()),
            g.and_then(|g| g.state.pipeline.clone()),
        )
    });
    let previous = previous
        .filter(|p| p.mode == team.mode && !p.runs.is_empty() && (resume || (nested && p.prompt == prompt)));
    let mut open = match &previous {
        Some(p) => p.clone(),
        None => OpenRun {
            mode: team.mode,
            prompt: prompt.to_string(),
            max_iterations: overrides.max_iterations,
            model: overrides.model.clone(),
            relay_approval: overrides.relay_approval,
            budget: overrides.budget,
            rate_limit_wait_secs: overrides.rate_limit_wait_secs,
            started_at: Some(Utc::now()),
            pipeline_at_start: (team.mode == Mode::Pipeline).then(|| pipeline_now.unwrap_or_default()),
            ..OpenRun::default()
        },
    };
    open.runs.push(run_id);
    open.interrupted_at = None;
    open.reason = None;
    let back_to = previous.as_ref().and_then(|p| p.pipeline_at_start.clone());
    shared.org.update(|o| {
        if let Some(g) = o.group_mut(&gid) {
            g.state.run = Some(open);
            if let Some(state) = back_to {
                g.state.pipeline = Some(state);
            }
        }
    });
    let previous = previous?;
    let mut ids: Vec<SessionId> = Vec::new();
    let members = team
        .orchestrator
        .iter()
        .chain(&team.workers)
        .chain(&team.evaluator)
        .chain(&team.participants);
    for m in members {
        if !ids.contains(&m.id) {
            ids.push(m.id.clone());
        }
    }
    let replay = read(shared, &ids, previous.runs.clone()).await;
    shared.forget_sessions(&ids);
    Some(Resumed {
        open: previous,
        replay: Arc::new(replay),
        announced: Default::default(),
    })
}

/// The finished turns of `runs` in the transcripts of `ids` (read off the runtime's threads,
/// through the writer: lines still queued are in them).
pub(crate) async fn read(shared: &Arc<EngineShared>, ids: &[SessionId], runs: Vec<RunId>) -> Replay {
    let shared = Arc::clone(shared);
    let ids = ids.to_vec();
    let read = tokio::task::spawn_blocking(move || {
        let loaded: Vec<(SessionId, Vec<Message>)> = ids
            .into_iter()
            .map(|id| {
                let messages = match shared.writer.load(&shared.transcripts, &id) {
                    Ok(loaded) => loaded.messages,
                    Err(e) => {
                        tracing::warn!(session = %id, error = %e, "cannot read a transcript to resume from");
                        Vec::new()
                    }
                };
                (id, messages)
            })
            .collect();
        Replay::read(&runs, loaded.iter().map(|(id, m)| (id.clone(), m.as_slice())))
    })
    .await;
    read.unwrap_or_default()
}

/// Says the run resumes another: which, when and why it was left, how many finished turns
/// come from disk.
pub(crate) fn announce(run: &Run<'_>, resumed: &Resumed) {
    run.emitter().emit(EventKind::RunResumed {
        resumes: resumed.open.current().unwrap_or_default().to_string(),
        interrupted_at: resumed.open.interrupted_at,
        reason: resumed.open.reason.clone(),
        finished_turns: u32::try_from(resumed.replay.counts().1).unwrap_or(u32::MAX),
    });
}

/// A run that ended with this result is left open, to be resumed: it was stopped from outside
/// (a signal, a quit), or a limit would not reset within its bound (`rate_limited`).
pub(crate) fn left_open(
    shared: &EngineShared,
    active: &ActiveRun,
    result: &Result<RunReport, EngineError>,
) -> bool {
    let stopped_from_outside = shared.interrupting() || active.control.interrupted();
    let Ok(report) = result else { return false };
    (report.outcome == CycleOutcome::Cancelled && stopped_from_outside)
        || report.outcome == CycleOutcome::RateLimited
}

/// The run ended: its open run goes (on disk before the end is reported), or, left to be
/// resumed, says when and why it was left.
pub(crate) async fn close(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    group_id: &str,
    result: &Result<RunReport, EngineError>,
) {
    if left_open(shared, active, result) {
        let reason = active
            .control
            .rate_limited()
            .map(|why| format!("rate limited: {why}"))
            .or_else(|| active.control.interrupt_reason())
            .or_else(|| shared.interrupt_reason());
        let run_id = active.run_id();
        shared.org.update(|o| {
            if let Some(open) = o
                .group_mut(group_id)
                .and_then(|g| g.state.run.as_mut())
                .filter(|r| r.current() == Some(run_id.as_str()))
            {
                open.interrupted_at = Some(Utc::now());
                open.reason = reason;
            }
        });
    } else {
        forget(shared, active, group_id);
    }
    if let Err(e) = shared.checkpoint().await {
        tracing::error!(error = %e, "cannot save the end of a run");
    }
}

/// Removes the run's open run from its group (it ended; nothing to resume).
pub(crate) fn forget(shared: &EngineShared, active: &ActiveRun, group_id: &str) {
    let run_id = active.run_id();
    shared.org.update(|o| {
        if let Some(g) = o.group_mut(group_id)
            && g.state.run.as_ref().and_then(OpenRun::current) == Some(run_id.as_str())
        {
            g.state.run = None;
        }
    });
}

/// Said when a prompt the interrupted run never got an answer to is asked again.
pub(crate) const ASKED_AGAIN: &str = "interrupted before its answer; asked again when the run was resumed";

/// One turn of an interrupted run as its transcript has it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredTurn {
    pub prompt: Message,
    /// The messages of the turn between its prompt and its answer (model steps with their tool
    /// calls, tool results, inputs added to it).
    pub steps: Vec<Message>,
    /// Its final answer; `None` when the process ended before it.
    pub answer: Option<Message>,
}

impl StoredTurn {
    /// It ended with an answer that counts (not failed, not cut short).
    pub fn finished(&self) -> bool {
        self.answer
            .as_ref()
            .is_some_and(|a| a.error.is_none() && !a.interrupted)
    }
}

/// What a session's earlier turns in the interrupted runs are.
#[derive(Debug, Default)]
struct Stored {
    turns: Vec<StoredTurn>,
    /// Which of them a resumed turn took already.
    taken: Vec<bool>,
    /// Where, in the conversation a model is sent (`chat_history` of the transcript), the first
    /// of the runs began: turns that see only their run see from there.
    history_start: usize,
}

/// What a resumed turn finds on disk for its prompt.
#[derive(Debug, PartialEq)]
pub(crate) enum Found {
    /// The interrupted run finished this turn: its answer, not the model's.
    Answered(Box<StoredTurn>),
    /// It was asked and never answered: the id of its prompt (to take back before asking again).
    Unfinished(String),
    /// Never asked: a new turn.
    New,
}

/// The finished turns of a run's earlier runs, per session, taken once each.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    sessions: Mutex<HashMap<SessionId, Stored>>,
    /// The highest `exec-<n>` an execution of the runs had: a resumed run numbers on from it.
    last_execution: u32,
}

impl Replay {
    /// The turns of `runs` in each session's messages (its transcript, in order).
    pub fn read<'a>(
        runs: &[RunId],
        transcripts: impl IntoIterator<Item = (SessionId, &'a [Message])>,
    ) -> Replay {
        let mut sessions = HashMap::new();
        let mut last_execution = 0;
        for (session_id, messages) in transcripts {
            let stored = turns_of(runs, messages);
            let numbers = stored
                .turns
                .iter()
                .flat_map(|t| std::iter::once(&t.prompt).chain(&t.steps).chain(&t.answer))
                .filter_map(|m| {
                    m.execution_id
                        .as_deref()?
                        .strip_prefix("exec-")?
                        .parse::<u32>()
                        .ok()
                });
            last_execution = numbers.fold(last_execution, u32::max);
            if !stored.turns.is_empty() {
                sessions.insert(session_id, stored);
            }
        }
        Replay {
            sessions: Mutex::new(sessions),
            last_execution,
        }
    }

    /// The highest execution number the runs gave out (0: none).
    pub fn last_execution(&self) -> u32 {
        self.last_execution
    }

    /// How many finished turns it holds that no resumed turn took yet (and how many in all).
    pub fn counts(&self) -> (usize, usize) {
        let sessions = lock(&self.sessions);
        let mut left = 0;
        let mut all = 0;
        for s in sessions.values() {
            for (turn, taken) in s.turns.iter().zip(&s.taken) {
                if turn.finished() {
                    all += 1;
                    left += usize::from(!taken);
                }
            }
        }
        (left, all)
    }

    /// The first turn of the session not taken yet whose prompt was `prompt` (as the mode builds
    /// it: a note the user left, or attached files' references, may be around it on disk). The
    /// i-th ask of one prompt gets the i-th stored turn with it.
    pub fn find(&self, session_id: &str, prompt: &str) -> Found {
        let mut sessions = lock(&self.sessions);
        let Some(stored) = sessions.get_mut(session_id) else {
            return Found::New;
        };
        let at = stored
            .turns
            .iter()
            .zip(&stored.taken)
            .position(|(t, taken)| !taken && same_prompt(&t.prompt.text, prompt));
        let Some(at) = at else {
            return Found::New;
        };
        stored.taken[at] = true;
        let turn = &stored.turns[at];
        if turn.finished() {
            Found::Answered(Box::new(turn.clone()))
        } else {
            match &turn.prompt.id {
                Some(id) => Found::Unfinished(id.clone()),
                None => Found::New,
            }
        }
    }

    /// Where the session's conversation (as sent to a model) was when the first run began.
    pub fn history_start(&self, session_id: &str) -> Option<usize> {
        lock(&self.sessions).get(session_id).map(|s| s.history_start)
    }

    /// The session's turns in the runs, in order (a mode that continues a conversation reads
    /// them: a dispatch run's orchestrator and sub-agents).
    pub fn turns(&self, session_id: &str) -> Vec<StoredTurn> {
        lock(&self.sessions)
            .get(session_id)
            .map(|s| s.turns.clone())
            .unwrap_or_default()
    }

    /// Marks the session's turns taken (the mode continues them itself).
    pub fn take_all(&self, session_id: &str) {
        if let Some(s) = lock(&self.sessions).get_mut(session_id) {
            s.taken.iter_mut().for_each(|t| *t = true);
        }
    }
}

/// True when `stored` (a prompt as saved) is `asked`: the same, or with a user's note before it
/// or attached files' references after it.
fn same_prompt(stored: &str, asked: &str) -> bool {
    let body = match stored.strip_prefix(super::protocol::prompts::NOTES_HEADING) {
        // `<heading>\n- note\n...\n\n<prompt>`
        Some(rest) => rest.split_once("\n\n").map_or(stored, |(_, prompt)| prompt),
        None => stored,
    };
    body == asked
        || body
            .strip_prefix(asked)
            .is_some_and(|refs| refs.starts_with("\n\n"))
}

/// A session's turns of `runs`: each prompt stamped with one of them, the messages after it,
/// and the answer stamped with it (a turn's messages are together: a session runs one turn at a
/// time). Notices between turns are no part of them.
fn turns_of(runs: &[RunId], messages: &[Message]) -> Stored {
    let ours = |m: &Message| m.run_id.as_ref().is_some_and(|r| runs.contains(r));
    let mut stored = Stored::default();
    let first = messages.iter().position(ours);
    if let Some(first) = first {
        stored.history_start = super::session::chat_history(&messages[..first]).len();
    }
    let mut open: Option<StoredTurn> = None;
    for m in &messages[first.unwrap_or(messages.len())..] {
        match m.role {
            MessageRole::User if ours(m) => {
                stored.turns.extend(open.take());
                open = Some(StoredTurn {
                    prompt: m.clone(),
                    steps: Vec::new(),
                    answer: None,
                });
            }
            MessageRole::Assistant if ours(m) => {
                if let Some(mut turn) = open.take() {
                    turn.answer = Some(m.clone());
                    stored.turns.push(turn);
                }
            }
            MessageRole::Notice => {}
            // A prompt of another run (a chat) ends the turn that was open.
            MessageRole::User if m.run_id.is_some() => stored.turns.extend(open.take()),
            _ => {
                if let Some(turn) = &mut open {
                    turn.steps.push(m.clone());
                }
            }
        }
    }
    stored.turns.extend(open);
    stored.taken = vec![false; stored.turns.len()];
    stored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(mut m: Message, run: &str) -> Message {
        m.run_id = Some(run.into());
        m
    }

    #[test]
    fn finished_turns_are_answered_once_unfinished_ones_are_named_new_ones_are_new() {
        let runs = vec!["r1".to_string()];
        let mut failed = stamped(Message::assistant(""), "r1");
        failed.error = Some("cancelled".into());
        let mut step = Message::assistant("");
        step.tool_calls = vec![crate::model::ToolCall {
            id: "c".into(),
            name: "handoff_to".into(),
            arguments: "{}".into(),
        }];
        let unfinished = stamped(Message::user("q3"), "r1");
        let messages = vec![
            Message::user("before"),
            Message::assistant("earlier answer"),
            stamped(Message::user("q1"), "r1"),
            step.clone(),
            stamped(Message::assistant("a1"), "r1"),
            Message::notice("a note between turns"),
            stamped(Message::user("q2"), "r1"),
            failed,
            stamped(Message::user("q1"), "r1"),
            stamped(Message::assistant("a1 again"), "r1"),
            stamped(Message::user("other run"), "r0"),
            Message::assistant("its answer"),
            unfinished.clone(),
        ];
        let replay = Replay::read(&runs, [("s".to_string(), &messages[..])]);
        assert_eq!(replay.history_start("s"), Some(2));
        assert_eq!(replay.counts(), (2, 2));
        let Found::Answered(turn) = replay.find("s", "q1") else {
            panic!("answered")
        };
        assert_eq!(turn.answer.unwrap().text, "a1");
        assert_eq!(turn.steps, vec![step]);
        let Found::Answered(turn) = replay.find("s", "q1") else {
            panic!("the second ask gets the second answer")
        };
        assert_eq!(turn.answer.unwrap().text, "a1 again");
        assert_eq!(replay.find("s", "q1"), Found::New);
        assert!(matches!(replay.find("s", "q2"), Found::Unfinished(_)), "failed");
        assert_eq!(replay.find("s", "q3"), Found::Unfinished(unfinished.id.unwrap()));
        assert_eq!(replay.find("s", "other run"), Found::New);
        assert_eq!(replay.find("nobody", "q1"), Found::New);
        assert_eq!(replay.counts(), (0, 2));
    }

    #[test]
    fn a_prompt_matches_with_a_note_before_it_or_files_after_it() {
        let noted = format!(
            "{}- be brief\n\nthe task",
            super::super::protocol::prompts::NOTES_HEADING
        );
        assert!(same_prompt(&noted, "the task"));
        assert!(same_prompt("the task\n\n[file a.rs]", "the task"));
        assert!(same_prompt("the task", "the task"));
        assert!(!same_prompt("the task and more", "the task"));
        assert!(!same_prompt("the", "the task"));
    }
}
