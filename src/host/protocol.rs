//! The host's wire protocol: one JSON object per line each way over the data dir's socket.
//!
//! A front end opens a connection and says [`Hello`] (the protocol version, what it is, its
//! repository and, when it starts work, its configuration and environment); the host answers
//! [`HostMessage::Welcome`] or [`HostMessage::Refused`]. Then the front end sends requests,
//! each with an id of its choosing; the host answers each with a [`HostMessage::Reply`] or a
//! [`HostMessage::Failed`], a `run` request with its output, then [`HostMessage::Exit`].
//! Engine events ([`HostMessage::Event`]) and organization snapshots ([`HostMessage::Org`])
//! are pushed to connections that asked for them.
//!
//! Fields may be added (with defaults); a change of meaning bumps [`PROTOCOL`].

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

use crate::config::Config;
use crate::engine::events::{EngineEvent, RunKey};
use crate::headless::RunRequest;
use crate::model::{DraftAnswer, Message, Mode, Organization};
use crate::tools::Decision;

/// Bumped when a message changes meaning; both ends must agree. (1 was the TUI's hand-over
/// socket of earlier versions.)
pub const PROTOCOL: u32 = 2;

/// The longest line either end accepts (an organization snapshot, a prompt read from a file).
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// The longest greeting the host reads (a front end's configuration and environment): a
/// connection says who it is before it may send long lines.
pub const MAX_HELLO: usize = 1024 * 1024;

/// What a front end says first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    /// The front end's version, for the message when the protocols differ.
    pub version: String,
    /// What it is (`run`, `attach`, `ps`, `mcp`, `tui`...), for the log and `huddle ps`.
    pub front: String,
    pub pid: u32,
    /// Its repository: new teams and sessions it makes work there.
    pub repo: PathBuf,
    /// Its configuration (read by the front end, so that a mistake in it is reported there).
    /// Without one, the host's own serves (a front end that starts no work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Config>,
    /// Its environment, with its configuration: provider keys are read there, and the
    /// programs started for its work (CLI agents, MCP servers, git) get exactly it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Its standard input and error are a terminal (`--approve` asks there).
    #[serde(default)]
    pub terminal: bool,
    /// Its standard error is a terminal that takes colours (`NO_COLOR` unset).
    #[serde(default)]
    pub color: bool,
}

/// From a front end to the host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    Hello(Box<Hello>),
    // Boxed: a run's request is far larger than a hello.
    Request { id: u64, request: Box<Request> },
}

/// What a front end asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// `huddle run`: its output comes back as `output` messages, then `exit`. With `detach`,
    /// `started` says the run's id and nothing else follows; the run goes on. With `keep`, the
    /// output comes as without `detach`, but the run goes on when this connection goes (`huddle
    /// mcp`: runs outlive the client).
    Run {
        request: RunRequest,
        #[serde(default)]
        detach: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep: bool,
    },
    /// Stop the run this connection started (`huddle run` got this signal: 2 Ctrl-C, 15
    /// SIGTERM, 1 SIGHUP): it ends as a local run would, a reflect cycle resumable.
    Signal { run: u64, signal: u8 },
    /// The answer to a relay draft sent with `draft` (`None`: nobody answered; the relay stops).
    AnswerDraft {
        group_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<DraftAnswer>,
    },
    /// The runs going (`huddle ps`).
    Ps,
    /// Stop a run (by id or the start of one) or every run of a group (by name).
    Stop { target: String },
    /// Follow a run: what it did so far, then live, until it ends (`huddle attach`).
    Attach { target: String },
    /// Answer a tool call that waits for approval.
    AnswerApproval { approval_id: u64, decision: Decision },
    /// Push engine events (every group's) and organization snapshots to this connection. With
    /// `replay`, the events so far of every run going come first (a TUI opening shows them).
    Subscribe {
        #[serde(default)]
        events: bool,
        #[serde(default)]
        org: bool,
        #[serde(default)]
        replay: bool,
    },
    /// An organization edit through the application layer (a TUI): answered by `edited`.
    Edit { call: crate::workspace::EditCall },
    /// Start, steer or answer a run (a TUI): answered by `done`, or `failed` with why.
    Engine { call: EngineCall },
    /// A session's transcript as the engine has it (a TUI showing it).
    Transcript { session_id: String },
    /// `huddle runs prune`.
    Prune { older_than_secs: i64, dry_run: bool },
    /// `huddle worktrees remove`.
    RemoveWorktrees {
        #[serde(default)]
        group: Option<String>,
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        path: Option<PathBuf>,
        #[serde(default)]
        force: bool,
    },
    /// Exit once nothing runs and no other front end is attached (a TUI that must own the
    /// data dir itself); the reply says whether it will.
    Quit,
}

/// What a TUI asks of the engine, as its own commands say it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum EngineCall {
    Chat {
        session_id: String,
        prompt: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<crate::attachments::Attachment>,
    },
    RunGroup {
        group_id: String,
        prompt: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<crate::attachments::Attachment>,
    },
    /// Into the group's run going, else it starts one.
    QueueMessage {
        group_id: String,
        text: String,
    },
    ResumeCycle {
        group_id: String,
    },
    ResumeReflection {
        session_id: String,
    },
    Reflect {
        session_id: String,
        goal: String,
        max_iterations: u32,
    },
    NoteMember {
        session_id: String,
        text: String,
    },
    Pause {
        key: RunKey,
    },
    Resume {
        key: RunKey,
    },
    Stop {
        key: RunKey,
    },
    StopSession {
        session_id: String,
    },
    AnswerApproval {
        approval_id: u64,
        decision: Decision,
    },
    AnswerRelay {
        group_id: String,
        answer: DraftAnswer,
    },
}

/// A run as `huddle ps` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub run_id: String,
    pub key: RunKey,
    pub group_id: String,
    pub group: String,
    /// The session of a chat or reflection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    pub started_at: DateTime<Utc>,
    pub tokens: u64,
    pub state: RunState,
    /// What it waits for (a tool approval, a relay draft), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// Who started it (`huddle run (pid N)`, `detached`, `mcp`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front: Option<String>,
}

impl RunInfo {
    /// Whose run files hold it: a chat's are its session's (`runs/sessions/<session>/`), the
    /// rest its group's.
    pub fn owner(&self) -> crate::store::RunOwner {
        match &self.key {
            RunKey::Chat { session_id } => crate::store::RunOwner::Session(session_id.clone()),
            _ => crate::store::RunOwner::Group(self.group_id.clone()),
        }
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Paused,
    /// Waiting for a person (a tool approval, a relay draft) or for a rate or usage limit to
    /// reset.
    Waiting,
    /// Asked to stop; not over yet.
    Stopping,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Paused => "paused",
            RunState::Waiting => "waiting",
            RunState::Stopping => "stopping",
        }
    }
}

/// A successful answer to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Done,
    Runs {
        runs: Vec<RunInfo>,
    },
    /// The runs a stop reached; those of them not ended yet when it was answered (the host
    /// waits a few seconds for them to end).
    Stopped {
        runs: Vec<String>,
        /// `None` from a host that answers without waiting (an older one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopping: Option<Vec<String>>,
    },
    /// What a command prints: `out` for standard output, `err` for standard error, and its exit
    /// code.
    Printed {
        out: String,
        err: String,
        code: u8,
    },
    /// Attached to this run: its events follow (the ones so far first), the last `run_ended`.
    Attached {
        run: RunInfo,
    },
    /// An edit's result (as `Edits` returns it) and the organization after it.
    Edited {
        result: serde_json::Value,
        org: Box<Organization>,
        version: u64,
    },
    Transcript {
        messages: Vec<Message>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// Whether the host exits once idle (`Quit`); `busy` lists what keeps it.
    Quitting {
        busy: Vec<String>,
    },
}

/// From the host to a front end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostMessage {
    Welcome {
        protocol: u32,
        version: String,
        pid: u32,
        /// What opening the data dir found (repairs, lost worktrees): told to the first front
        /// end only.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notices: Vec<String>,
    },
    /// The hello is not taken (another protocol): why.
    Refused {
        message: String,
    },
    Reply {
        id: u64,
        reply: Reply,
    },
    /// A request failed, with the exit code a command ends with.
    Failed {
        id: u64,
        code: u8,
        message: String,
    },
    /// Output of a run: text for standard output as is, or one line for standard error.
    Output {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        out: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        err: Option<String>,
    },
    /// The run of request `id` started under this id.
    Started {
        id: u64,
        run_id: String,
        group_id: String,
        group: String,
    },
    /// A relay draft of request `id`'s run waits for the person at the front end's terminal.
    Draft {
        id: u64,
        group_id: String,
        turn: u32,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review: Option<String>,
    },
    /// The run of request `id` is over; a command ends with `code`.
    Exit {
        id: u64,
        code: u8,
    },
    /// An engine event; `stored` is the message it carries in memory (a turn's prompt or
    /// answer, a tool result), which its JSON form leaves out.
    Event {
        event: Box<EngineEvent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stored: Option<Arc<Message>>,
        /// On a tool approval or relay draft that waits: the front end that is asked (the one
        /// that started the run, e.g. `huddle mcp (pid N)`) when it is not the TUIs. A TUI
        /// does not put it to its user.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked_elsewhere: Option<String>,
    },
    /// The whole organization as it is now (sent on subscribing, then after changes).
    Org {
        org: Box<Organization>,
        /// Counts the host's changes: a copy never takes an older one than it holds.
        #[serde(default)]
        version: u64,
    },
    /// The last line before the host closes a connection it cut off (the host and its runs go
    /// on): why. The front end may connect again.
    CutOff {
        reason: String,
    },
}

impl HostMessage {
    /// An engine event as it travels: its in-memory message beside it.
    pub fn event(mut event: EngineEvent) -> HostMessage {
        let stored = event.kind.in_memory().and_then(Option::take);
        HostMessage::Event {
            event: Box::new(event),
            stored,
            asked_elsewhere: None,
        }
    }

    /// An event of a run started by `front`: one that asks says whom it asks when that is
    /// not the TUIs.
    pub fn event_of(event: EngineEvent, front: Option<&str>) -> HostMessage {
        let asked_elsewhere = asks(&event.kind).then(|| asked_elsewhere(front)).flatten();
        match HostMessage::event(event) {
            HostMessage::Event { event, stored, .. } => HostMessage::Event {
                event,
                stored,
                asked_elsewhere,
            },
            other => other,
        }
    }
}

/// An event that waits for a person: a tool approval, a relay draft.
fn asks(kind: &crate::engine::events::EventKind) -> bool {
    use crate::engine::events::EventKind;
    matches!(
        kind,
        EventKind::ToolApprovalRequested { .. } | EventKind::RelayDraft { waiting: true, .. }
    )
}

/// Whom a run started by `front` asks when that is not the TUIs: the front end that started
/// it (`huddle run`, `huddle mcp`). A TUI's run (`tui (pid N)`) or one nobody started asks the
/// TUIs.
pub fn asked_elsewhere(front: Option<&str>) -> Option<String> {
    front.filter(|f| !f.starts_with("tui")).map(str::to_string)
}

/// An event read back from the wire, its in-memory message put back in place.
pub fn restore_event(mut event: EngineEvent, stored: Option<Arc<Message>>) -> EngineEvent {
    if let Some(slot) = event.kind.in_memory() {
        *slot = stored;
    }
    event
}

/// One message as its line (with the newline).
pub fn encode<T: Serialize>(message: &T) -> String {
    // These types serialise (plain data); a failure is reported as a line nobody takes.
    let mut line = serde_json::to_string(message).unwrap_or_else(|e| {
        tracing::error!(error = %e, "unserialisable host message");
        "{}".to_string()
    });
    line.push('\n');
    line
}

/// A received line as a message, or what was wrong with it.
pub fn decode<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, String> {
    serde_json::from_str(line.trim_end()).map_err(|e| format!("unreadable message: {e}"))
}

/// Reads one line of at most [`MAX_LINE`] bytes; `None` at the end of the stream.
pub async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<String>> {
    read_line_of_at_most(reader, MAX_LINE).await
}

/// Reads one line of at most `most` bytes; `None` at the end of the stream.
pub async fn read_line_of_at_most<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    most: usize,
) -> io::Result<Option<String>> {
    let mut bytes = Vec::new();
    let mut limited = AsyncReadExt::take(&mut *reader, most as u64 + 1);
    let n = limited.read_until(b'\n', &mut bytes).await?;
    if n == 0 {
        return Ok(None);
    }
    if bytes.len() > most {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::EventKind;

    #[test]
    fn requests_and_replies_round_trip_one_per_line() {
        let request = RunRequest {
            preset: Some("Code Review Team".into()),
            prompt: "line one\nline two".into(),
            events: true,
            ..RunRequest::default()
        };
        let line = encode(&ClientMessage::Request {
            id: 7,
            request: Box::new(Request::Run {
                request,
                detach: true,
                keep: false,
            }),
        });
        assert_eq!(line.matches('\n').count(), 1, "one line: {line}");
        match decode::<ClientMessage>(&line).unwrap() {
            ClientMessage::Request { id: 7, request } => match *request {
                Request::Run {
                    request,
                    detach,
                    keep,
                } => {
                    assert!(detach && !keep);
                    assert_eq!(request.prompt, "line one\nline two");
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        let reply = HostMessage::Reply {
            id: 3,
            reply: Reply::Printed {
                out: "a\n".into(),
                err: String::new(),
                code: 0,
            },
        };
        assert_eq!(decode::<HostMessage>(&encode(&reply)).unwrap(), reply);
        let hello = r#"{"type":"hello","protocol":2,"version":"0","front":"ps","pid":1,"repo":"/r"}"#;
        match decode::<ClientMessage>(hello).unwrap() {
            ClientMessage::Hello(h) => assert!(h.config.is_none() && h.env.is_empty() && !h.terminal),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_event_travels_with_its_stored_message() {
        let event = EngineEvent {
            group_id: "g".into(),
            group: "team".into(),
            run_id: Some("r".into()),
            execution: None,
            kind: EventKind::TurnFinished {
                session_id: "s".into(),
                session: "alice".into(),
                generation: 1,
                success: true,
                interrupted: false,
                duration_ms: 5,
                usage: None,
                cost_usd: None,
                error: None,
                message: Some(Arc::new(Message::assistant("the answer"))),
            },
        };
        let line = encode(&HostMessage::event(event.clone()));
        // On the wire the message is the message itself, as a boxed one was.
        let wire: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
        let EventKind::TurnFinished {
            message: Some(sent), ..
        } = &event.kind
        else {
            unreachable!()
        };
        let expected = serde_json::to_value(&**sent).unwrap();
        let stored = wire.pointer("/stored").or_else(|| wire.pointer("/event/stored"));
        assert_eq!(stored, Some(&expected), "{line}");
        let HostMessage::Event {
            event: back, stored, ..
        } = decode::<HostMessage>(&line).unwrap()
        else {
            panic!("{line}")
        };
        assert_eq!(restore_event(*back, stored), event);
    }
}
