//! The executions of a run (modes `dispatch` and `team`): ids given out in order (`exec-1`,
//! `exec-2`, …), and their start, start of work and end reported as events, which the run file
//! keeps: `huddle trace` and the TUI build the tree from them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::model::{ExecutionKind, ExecutionStatus};

use super::events::{EventKind, ExecutionTag};
use super::session::TurnResult;
use super::sink::Emitter;

/// An execution's answer as its `execution_finished` event keeps it (the transcript has all).
pub const RESULT_MAX_CHARS: usize = 4000;

/// Gives out a run's execution ids and reports executions.
pub(crate) struct Executions {
    emitter: Emitter,
    next: AtomicU32,
    /// Each started execution's kind and member, for its end's event.
    started: Mutex<HashMap<String, (ExecutionKind, String)>>,
}

/// What started an execution.
pub(crate) struct Start<'a> {
    pub kind: ExecutionKind,
    pub parent: Option<&'a str>,
    pub member: &'a str,
    pub session_id: &'a str,
    pub task: &'a str,
    pub queued: bool,
}

/// How an execution ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Finish {
    pub status: Option<ExecutionStatus>,
    pub duration: Duration,
    pub tokens: u64,
    pub tool_calls: u32,
    pub result: Option<String>,
    pub error: Option<String>,
}

impl Finish {
    /// A turn's end as an execution's: completed, failed or cancelled.
    pub fn of_turn(turn: &TurnResult) -> Finish {
        let status = if turn.success {
            ExecutionStatus::Completed
        } else if turn.cancelled() {
            ExecutionStatus::Cancelled
        } else {
            ExecutionStatus::Failed
        };
        Finish {
            status: Some(status),
            duration: turn.duration,
            tokens: turn.usage.map_or(0, |u| u.total()),
            tool_calls: turn.tool_calls,
            result: (!turn.text.trim().is_empty()).then(|| turn.text.clone()),
            error: turn.error.clone(),
        }
    }
}

impl Executions {
    #[cfg(test)]
    pub fn new(emitter: Emitter) -> Executions {
        Executions::numbered_after(emitter, 0)
    }

    /// Ids from `exec-<after + 1>` on: a resumed run's never name an execution of the run it
    /// resumes (their messages are in the same transcripts).
    pub fn numbered_after(emitter: Emitter, after: u32) -> Executions {
        Executions {
            emitter,
            next: AtomicU32::new(after.saturating_add(1)),
            started: Mutex::new(HashMap::new()),
        }
    }

    /// A new execution's id and tag (its parent's id in it), reported as started.
    pub fn start(&self, start: Start<'_>) -> ExecutionTag {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let tag = ExecutionTag {
            execution_id: format!("exec-{n}"),
            parent_execution_id: start.parent.map(str::to_string),
        };
        self.started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tag.execution_id.clone(), (start.kind, start.member.to_string()));
        self.emit(
            &tag,
            EventKind::ExecutionStarted {
                kind: start.kind,
                member: start.member.to_string(),
                session_id: start.session_id.to_string(),
                task: start.task.to_string(),
                queued: start.queued,
            },
        );
        tag
    }

    /// A queued execution got its place.
    pub fn running(&self, tag: &ExecutionTag) {
        self.emit(tag, EventKind::ExecutionRunning);
    }

    pub fn finish(&self, tag: &ExecutionTag, finish: Finish) {
        let cap = |text: String| crate::text::cap_chars(&text, RESULT_MAX_CHARS);
        let (kind, member) = self
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&tag.execution_id)
            .cloned()
            .unwrap_or((ExecutionKind::SubAgent, String::new()));
        self.emit(
            tag,
            EventKind::ExecutionFinished {
                kind,
                member,
                status: finish.status.unwrap_or(ExecutionStatus::Completed),
                duration_ms: finish.duration.as_millis() as u64,
                tokens: finish.tokens,
                tool_calls: finish.tool_calls,
                result: finish.result.map(cap),
                error: finish.error,
            },
        );
    }

    /// Any event of an execution.
    pub fn emit(&self, tag: &ExecutionTag, kind: EventKind) {
        self.emitter.emit_in(Some(tag.clone()), kind);
    }
}
