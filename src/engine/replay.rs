//! A resumed run's finished turns, read from the members' transcripts by run id and answered
//! from there when the resumed run asks them again (see `resume.rs` for how a run is opened,
//! resumed and closed). Below the session and the run, which both ask it.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::model::{Message, MessageRole, SessionId};

use super::events::RunId;
use super::lock;

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
        stored.history_start = super::chat_history::chat_history(&messages[..first]).len();
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
