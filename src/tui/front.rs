//! The TUI as a front end of the data dir's host: the host owns the organization, the engine
//! and every run; this TUI holds a copy of the organization (kept current by the host's
//! snapshots), makes every edit through the host's application layer and every engine call
//! as a request, and shows the events the host pushes (first those of the runs going when it
//! opened). Any number of TUIs do so at once, each with its own focus, drafts and scroll.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;

use super::command::{AppEvent, Command};
use crate::config::{Config, Paths};
use crate::engine::events::EngineEvent;
use crate::host::client::{Client, Reader, Writer};
use crate::host::protocol::{EngineCall, Hello, HostMessage, Reply, Request, RunInfo, restore_event};
use crate::store::OrgHandle;
use crate::workspace::{Edits, RemoteEdits};

/// How long a quitting TUI waits for its last requests (a stop) to reach the host.
const DRAIN: Duration = Duration::from_secs(2);

/// True when the TUI opens as a front end of the host (the default); `HUDDLE_TUI_OWNS_DIR=1`
/// keeps the earlier way, the TUI owning the data dir itself.
pub fn as_front_end() -> bool {
    std::env::var_os("HUDDLE_TUI_OWNS_DIR").is_none_or(|v| v.is_empty() || v == "0")
}

/// What the TUI does with the answer to a request.
enum Then {
    /// A refusal is shown under this title.
    Refused(&'static str),
    Transcript(String),
    /// An edit not waited for: the organization after it is taken; a sandbox label asked for
    /// this session is kept for the header.
    Edit {
        label_of: Option<String>,
    },
}

type Pending = Arc<Mutex<HashMap<u64, Then>>>;

/// The TUI's link to the host for engine calls: requests go out in order, answers come back as
/// app events.
#[derive(Clone)]
pub(super) struct HostLink {
    requests: mpsc::UnboundedSender<(Request, Then)>,
}

/// A TUI opened on the host.
pub(super) struct Opened {
    pub edits: Edits,
    pub link: HostLink,
    pub notices: Vec<String>,
    /// The runs going when it opened (not offered for resumption: they run).
    pub live: Vec<RunInfo>,
    /// Starts the tasks that read and write the connection, once the UI's channels exist.
    pub start: Starter,
}

pub(super) struct Starter {
    reader: Reader,
    writer: Writer,
    requests: mpsc::UnboundedReceiver<(Request, Then)>,
    remote: Arc<RemoteEdits>,
    early: Vec<HostMessage>,
}

/// The tasks of a started link; [`Running::close`] lets the last requests go out.
pub(super) struct Running {
    writer: tokio::task::JoinHandle<()>,
    reader: tokio::task::JoinHandle<()>,
}

impl Running {
    pub async fn close(self, link: HostLink) {
        drop(link);
        let _ = tokio::time::timeout(DRAIN, self.writer).await;
        self.reader.abort();
    }
}

/// Connects to the data dir's host (starting it when none runs), follows its organization
/// and events (the runs going first, as far as they got) and opens a second connection for
/// edits.
pub(super) async fn open(paths: &Paths, config: &Config, repo: &Path) -> anyhow::Result<Opened> {
    let hello = Hello::new("tui", repo).with_work(config.clone(), true);
    let mut client = Client::connect(paths, &hello, true)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let notices = client.welcome.notices.clone();
    let live = match client.call(Request::Ps).await {
        Ok(Reply::Runs { runs }) => runs,
        _ => Vec::new(),
    };
    let edit_hello = Hello::new("tui-edits", repo).with_work(config.clone(), true);
    let edit_client = Client::connect(paths, &edit_hello, true)
        .await
        .and_then(Client::into_blocking)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let (mut reader, mut writer) = client.split();
    let id = writer
        .send(Request::Subscribe {
            events: true,
            org: true,
            replay: true,
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut org = None;
    let mut early = Vec::new();
    loop {
        match reader.next().await.map_err(|e| anyhow::anyhow!("{e}"))? {
            Some(HostMessage::Org { org: o, version }) => org = Some((*o, version)),
            Some(HostMessage::Reply { id: got, .. }) if got == id => break,
            Some(HostMessage::Failed { id: got, message, .. }) if got == id => anyhow::bail!("{message}"),
            Some(other) => early.push(other),
            None => anyhow::bail!("the huddle host went away"),
        }
    }
    let Some((org, version)) = org else {
        anyhow::bail!("the huddle host sent no organization");
    };
    let mirror = OrgHandle::in_memory(org);
    let remote = Arc::new(RemoteEdits::new(Box::new(edit_client), mirror.clone(), version));
    let edits = Edits::remote(mirror, config.clone(), repo.to_path_buf(), Arc::clone(&remote));
    let (requests_tx, requests) = mpsc::unbounded_channel();
    // Edits nobody waits for (folds, sandbox labels, the selection kept on the way out) go
    // out on the link; a weak sender, so the link still closes when the TUI drops it.
    let posts = requests_tx.downgrade();
    remote.set_post(Box::new(move |call| {
        let label_of = match &call {
            crate::workspace::EditCall::SandboxLabel { session_id } => Some(session_id.clone()),
            _ => None,
        };
        if let Some(requests) = posts.upgrade() {
            let _ = requests.send((Request::Edit { call }, Then::Edit { label_of }));
        }
    }));
    Ok(Opened {
        edits,
        link: HostLink {
            requests: requests_tx,
        },
        notices,
        live,
        start: Starter {
            reader,
            writer,
            requests,
            remote,
            early,
        },
    })
}

impl Starter {
    /// Starts reading (events to `events`, answers and the organization's changes to `app`)
    /// and writing.
    pub fn start(
        self,
        events: mpsc::UnboundedSender<EngineEvent>,
        app: mpsc::UnboundedSender<AppEvent>,
    ) -> Running {
        let Starter {
            mut reader,
            mut writer,
            mut requests,
            remote,
            early,
        } = self;
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let writer_task = {
            let pending = Arc::clone(&pending);
            let app = app.clone();
            tokio::spawn(async move {
                while let Some((request, then)) = requests.recv().await {
                    lock(&pending).insert(writer.next_id(), then);
                    if let Err(e) = writer.send(request).await {
                        let _ = app.send(AppEvent::Refused {
                            title: "Not sent".into(),
                            error: e.to_string(),
                        });
                        return;
                    }
                }
            })
        };
        let reader_task = tokio::spawn(async move {
            for message in early {
                take(message, &events, &app, &pending, &remote);
            }
            loop {
                match reader.next().await {
                    Ok(Some(message)) => take(message, &events, &app, &pending, &remote),
                    Ok(None) | Err(_) => {
                        let _ = app.send(AppEvent::HostLost);
                        return;
                    }
                }
            }
        });
        Running {
            writer: writer_task,
            reader: reader_task,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One message from the host.
fn take(
    message: HostMessage,
    events: &mpsc::UnboundedSender<EngineEvent>,
    app: &mpsc::UnboundedSender<AppEvent>,
    pending: &Pending,
    remote: &RemoteEdits,
) {
    match message {
        HostMessage::Event {
            event,
            stored,
            asked_elsewhere,
        } => {
            if let Some(run_id) = &event.run_id {
                if let Some(front) = &asked_elsewhere {
                    remote.asked_elsewhere(run_id, &event.group_id, front);
                } else if matches!(event.kind, crate::engine::events::EventKind::RunEnded { .. }) {
                    remote.run_ended(run_id);
                }
            }
            let _ = events.send(restore_event(*event, stored));
        }
        HostMessage::Org { org, version } => {
            let taken = remote.install(*org, version);
            if taken {
                let _ = app.send(AppEvent::OrgChanged);
            }
        }
        HostMessage::Reply { id, reply } => match (lock(pending).remove(&id), reply) {
            (Some(Then::Transcript(session_id)), Reply::Transcript { messages, warnings }) => {
                let _ = app.send(AppEvent::TranscriptLoaded {
                    session_id,
                    result: Ok(crate::store::LoadedTranscript { messages, warnings }),
                });
            }
            (Some(Then::Edit { label_of }), Reply::Edited { result, org, version }) => {
                if let Some(session_id) = label_of {
                    remote.take_label(&session_id, result);
                }
                if remote.install(*org, version) {
                    let _ = app.send(AppEvent::OrgChanged);
                }
            }
            _ => {}
        },
        HostMessage::Failed { id, message, .. } => match lock(pending).remove(&id) {
            Some(Then::Refused(title)) => {
                let _ = app.send(AppEvent::Refused {
                    title: title.into(),
                    error: message,
                });
            }
            Some(Then::Transcript(session_id)) => {
                let _ = app.send(AppEvent::TranscriptLoaded {
                    session_id,
                    result: Err(message),
                });
            }
            Some(Then::Edit { .. }) => tracing::debug!("an edit not waited for was refused: {message}"),
            None => {}
        },
        _ => {}
    }
}

impl HostLink {
    fn send(&self, request: Request, then: Then) {
        if self.requests.send((request, then)).is_err() {
            tracing::debug!("the link to the huddle host is closed; a request was dropped");
        }
    }

    fn engine(&self, title: &'static str, call: EngineCall) {
        self.send(Request::Engine { call }, Then::Refused(title));
    }

    /// Sends an engine command to the host; any other command is given back.
    pub fn carry(&self, command: Command) -> Option<Command> {
        let (title, call) = match command {
            Command::Chat { session_id, prompt } => (
                "Not sent",
                EngineCall::Chat {
                    session_id,
                    prompt,
                    attachments: Vec::new(),
                },
            ),
            Command::RunGroup { group_id, prompt } => (
                "Run not started",
                EngineCall::RunGroup {
                    group_id,
                    prompt,
                    attachments: Vec::new(),
                },
            ),
            Command::Attached { attachments, send } => match *send {
                Command::Chat { session_id, prompt } => (
                    "Not sent",
                    EngineCall::Chat {
                        session_id,
                        prompt,
                        attachments,
                    },
                ),
                Command::RunGroup { group_id, prompt } => (
                    "Run not started",
                    EngineCall::RunGroup {
                        group_id,
                        prompt,
                        attachments,
                    },
                ),
                other => return self.carry(other),
            },
            Command::ResumeCycle { group_id } => ("Not resumed", EngineCall::ResumeCycle { group_id }),
            Command::ResumeReflection { session_id } => {
                ("Not resumed", EngineCall::ResumeReflection { session_id })
            }
            Command::NoteMember { session_id, text } => {
                ("Note not left", EngineCall::NoteMember { session_id, text })
            }
            Command::QueueMessage { group_id, text } => {
                ("Run not started", EngineCall::QueueMessage { group_id, text })
            }
            Command::Pause { key } => ("Not paused", EngineCall::Pause { key }),
            Command::Resume { key } => ("Not resumed", EngineCall::Resume { key }),
            Command::Stop { key } => ("Not stopped", EngineCall::Stop { key }),
            Command::StopSession { session_id } => ("Not stopped", EngineCall::StopSession { session_id }),
            Command::AnswerApproval {
                approval_id,
                decision,
            } => (
                "Not answered",
                EngineCall::AnswerApproval {
                    approval_id,
                    decision,
                },
            ),
            Command::AnswerRelay { group_id, answer } => {
                ("Not answered", EngineCall::AnswerRelay { group_id, answer })
            }
            Command::ReflectSession {
                session_id,
                goal,
                max_iterations,
            } => (
                "Reflection not started",
                EngineCall::Reflect {
                    session_id,
                    goal,
                    max_iterations,
                },
            ),
            Command::LoadTranscript { session_id } => {
                self.send(
                    Request::Transcript {
                        session_id: session_id.clone(),
                    },
                    Then::Transcript(session_id),
                );
                return None;
            }
            other => return Some(other),
        };
        self.engine(title, call);
        None
    }
}
