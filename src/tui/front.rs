//! The TUI as a front end of the data dir's host: the host owns the organization, the engine
//! and every run; this TUI holds a copy of the organization (kept current by the host's
//! snapshots), makes every edit through the host's application layer and every engine call
//! as a request, and shows the events the host pushes (first those of the runs going when it
//! opened). Any number of TUIs do so at once, each with its own focus, drafts and scroll.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;

use super::command::{AppEvent, Command, Reconnected};
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
    /// Starts the task that reads and writes the connection, once the UI's channels exist.
    pub start: Starter,
}

pub(super) struct Starter {
    conn: Conn,
    requests: mpsc::UnboundedReceiver<(Request, Then)>,
    remote: Arc<RemoteEdits>,
    again: Again,
}

/// What connecting again takes: the front end's data dir, configuration and repository.
struct Again {
    paths: Paths,
    config: Config,
    repo: PathBuf,
}

/// The first connection, subscribed: what it read before the answer comes first.
struct Conn {
    reader: Reader,
    writer: Writer,
    early: Vec<HostMessage>,
    /// The host's.
    pid: u32,
}

/// The task of a started link; [`Running::close`] lets the last requests go out.
pub(super) struct Running {
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    pub async fn close(self, link: HostLink) {
        drop(link);
        let mut task = self.task;
        if tokio::time::timeout(DRAIN, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// A host connected to and subscribed to: the organization it sent, a second connection for
/// edits, the runs going.
struct Linked {
    conn: Conn,
    edit_client: crate::host::client::BlockingClient,
    org: crate::model::Organization,
    version: u64,
    live: Vec<RunInfo>,
    notices: Vec<String>,
}

/// Connects to the data dir's host (starting it when none runs, as every front end does),
/// asks the runs going, subscribes to the organization and to the events (the runs going
/// first, as far as they got) and opens a second connection for edits.
async fn link(paths: &Paths, config: &Config, repo: &Path) -> anyhow::Result<Linked> {
    let hello = Hello::new("tui", repo).with_work(config.clone(), true);
    let mut client = Client::connect(paths, &hello, true)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let notices = client.welcome.notices.clone();
    let pid = client.welcome.pid;
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
        let next = tokio::time::timeout(crate::host::client::ANSWER_DEADLINE, reader.next())
            .await
            .map_err(|_| anyhow::anyhow!("the huddle host (pid {pid}) does not answer"))?;
        match next.map_err(|e| anyhow::anyhow!("{e}"))? {
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
    Ok(Linked {
        conn: Conn {
            reader,
            writer,
            early,
            pid,
        },
        edit_client,
        org,
        version,
        live,
        notices,
    })
}

/// Connects to the data dir's host (starting it when none runs), follows its organization
/// and events (the runs going first, as far as they got) and opens a second connection for
/// edits.
pub(super) async fn open(paths: &Paths, config: &Config, repo: &Path) -> anyhow::Result<Opened> {
    let Linked {
        conn,
        edit_client,
        org,
        version,
        live,
        notices,
    } = link(paths, config, repo).await?;
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
            conn,
            requests,
            remote,
            again: Again {
                paths: paths.clone(),
                config: config.clone(),
                repo: repo.to_path_buf(),
            },
        },
    })
}

/// Why a connection ended.
enum Lost {
    /// The TUI closed its link (it quits).
    Closed,
    /// The host closed it: having cut it off (why), or gone.
    Host { cut_off: Option<String> },
}

/// How long the link waits before trying the host again, at first and at most.
const RETRY_FIRST: Duration = Duration::from_millis(250);
const RETRY_MOST: Duration = Duration::from_secs(5);

impl Starter {
    /// Starts reading (events to `events`, answers and the organization's changes to `app`)
    /// and writing; when the host cuts the connection off or goes, connects again in the
    /// background (starting a new host when none answers) and tells the UI.
    pub fn start(
        self,
        events: mpsc::UnboundedSender<EngineEvent>,
        app: mpsc::UnboundedSender<AppEvent>,
    ) -> Running {
        let task = tokio::spawn(serve(self, events, app));
        Running { task }
    }
}

/// The link's life: one connection after another until the TUI closes it.
async fn serve(
    starter: Starter,
    events: mpsc::UnboundedSender<EngineEvent>,
    app: mpsc::UnboundedSender<AppEvent>,
) {
    let Starter {
        mut conn,
        mut requests,
        remote,
        again,
    } = starter;
    loop {
        let previous = conn.pid;
        let cut_off = match follow(conn, &mut requests, &remote, &events, &app).await {
            Lost::Closed => return,
            Lost::Host { cut_off } => cut_off,
        };
        tracing::info!(cut_off = ?cut_off, "the link to the huddle host was lost; connecting again");
        let Some(linked) = relink(&again, &mut requests, &app).await else {
            return;
        };
        remote.reconnect(Box::new(linked.edit_client), linked.org, linked.version);
        let (ack, acked) = tokio::sync::oneshot::channel();
        let reconnected = Reconnected {
            pid: linked.conn.pid,
            new_host: linked.conn.pid != previous,
            cut_off,
            live: linked.live.iter().map(|r| r.key.clone()).collect(),
        };
        if app.send(AppEvent::Reconnected(reconnected, ack)).is_err() {
            return;
        }
        // The UI has set its runs aside before the new connection's events (the runs going,
        // from their start) reach it.
        let _ = acked.await;
        conn = linked.conn;
    }
}

/// Connects again until a host answers (one is started when none runs), or the TUI closes
/// the link meanwhile (`None`). The first failure is told to the UI.
async fn relink(
    again: &Again,
    requests: &mut mpsc::UnboundedReceiver<(Request, Then)>,
    app: &mpsc::UnboundedSender<AppEvent>,
) -> Option<Linked> {
    let mut wait = RETRY_FIRST;
    let mut told = false;
    loop {
        match link(&again.paths, &again.config, &again.repo).await {
            Ok(linked) => return Some(linked),
            Err(e) => {
                tracing::warn!(error = %e, "cannot reach a huddle host again");
                if !told {
                    told = true;
                    let _ = app.send(AppEvent::HostLost { why: e.to_string() });
                }
            }
        }
        tokio::time::sleep(wait).await;
        if requests.is_closed() && requests.is_empty() {
            return None;
        }
        wait = (wait * 2).min(RETRY_MOST);
    }
}

/// One connection: requests out, messages in, until it is lost or the TUI closes the link.
async fn follow(
    conn: Conn,
    requests: &mut mpsc::UnboundedReceiver<(Request, Then)>,
    remote: &Arc<RemoteEdits>,
    events: &mpsc::UnboundedSender<EngineEvent>,
    app: &mpsc::UnboundedSender<AppEvent>,
) -> Lost {
    let Conn {
        mut reader,
        mut writer,
        early,
        ..
    } = conn;
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let mut reading = {
        let (pending, remote, events, app) = (
            Arc::clone(&pending),
            Arc::clone(remote),
            events.clone(),
            app.clone(),
        );
        tokio::spawn(async move {
            for message in early {
                take(message, &events, &app, &pending, &remote);
            }
            loop {
                match reader.next().await {
                    Ok(Some(HostMessage::CutOff { reason })) => return Some(reason),
                    Ok(Some(message)) => take(message, &events, &app, &pending, &remote),
                    Ok(None) | Err(_) => return None,
                }
            }
        })
    };
    loop {
        tokio::select! {
            cut_off = &mut reading => return Lost::Host { cut_off: cut_off.ok().flatten() },
            request = requests.recv() => {
                let Some((request, then)) = request else {
                    reading.abort();
                    return Lost::Closed;
                };
                let id = writer.next_id();
                lock(&pending).insert(id, then);
                if writer.send(request).await.is_err() {
                    if let Some(Then::Refused(title)) = lock(&pending).remove(&id) {
                        let _ = app.send(AppEvent::Refused {
                            title: title.into(),
                            error: "the connection to the huddle host was lost; huddle connects again: try once more"
                                .into(),
                        });
                    }
                    let said = tokio::time::timeout(DRAIN, &mut reading).await;
                    reading.abort();
                    return Lost::Host { cut_off: said.ok().and_then(Result::ok).flatten() };
                }
            }
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
            if let Some(run_id) = event.run_id.as_deref() {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncWriteExt, BufReader};
    use tokio::net::UnixListener;

    use super::*;
    use crate::host::protocol::{ClientMessage, PROTOCOL, encode, read_line};

    /// A host that greets every connection as pid 4242, answers `ps` and `subscribe` (with the
    /// organization), and cuts the first subscribed connection off, saying why.
    async fn fake_host(listener: UnixListener) {
        let subscribed = Arc::new(AtomicUsize::new(0));
        while let Ok((stream, _)) = listener.accept().await {
            let subscribed = Arc::clone(&subscribed);
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                while let Ok(Some(line)) = read_line(&mut read).await {
                    let said = match serde_json::from_str::<ClientMessage>(&line) {
                        Ok(ClientMessage::Hello(_)) => vec![HostMessage::Welcome {
                            protocol: PROTOCOL,
                            version: "test".into(),
                            pid: 4242,
                            notices: Vec::new(),
                        }],
                        Ok(ClientMessage::Request { id, request }) => match *request {
                            Request::Ps => vec![HostMessage::Reply {
                                id,
                                reply: Reply::Runs { runs: Vec::new() },
                            }],
                            Request::Subscribe { .. } => vec![
                                HostMessage::Org {
                                    org: Box::default(),
                                    version: 1,
                                },
                                HostMessage::Reply {
                                    id,
                                    reply: Reply::Done,
                                },
                            ],
                            _ => Vec::new(),
                        },
                        Err(_) => Vec::new(),
                    };
                    for message in said {
                        let _ = write.write_all(encode(&message).as_bytes()).await;
                    }
                    if line.contains("\"subscribe\"") && subscribed.fetch_add(1, Ordering::SeqCst) == 0 {
                        let cut = HostMessage::CutOff {
                            reason: "it did not read".into(),
                        };
                        let _ = write.write_all(encode(&cut).as_bytes()).await;
                        return;
                    }
                }
            });
        }
    }

    /// Review 23-2 finding C: a TUI the host cut off (the host and its runs go on) connects
    /// again by itself and is told it was cut off, not that the host went away.
    #[tokio::test]
    async fn a_tui_cut_off_by_its_host_connects_again_and_says_so() {
        let dir = tempfile::tempdir().expect("dir");
        let paths = Paths::single(dir.path().to_path_buf());
        let listener = UnixListener::bind(paths.run_socket()).expect("bind");
        let host = tokio::spawn(fake_host(listener));
        let opened = open(&paths, &Config::default(), dir.path())
            .await
            .expect("opened");
        let (events, _events_rx) = mpsc::unbounded_channel();
        let (app, mut app_rx) = mpsc::unbounded_channel();
        let running = opened.start.start(events, app);
        let told = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match app_rx.recv().await {
                    Some(AppEvent::Reconnected(r, ack)) => {
                        let _ = ack.send(());
                        return Ok(r);
                    }
                    Some(AppEvent::HostLost { why }) => return Err(why),
                    Some(_) => {}
                    None => return Err("the link ended".into()),
                }
            }
        })
        .await
        .expect("told in time")
        .expect("connected again, not lost");
        assert_eq!(told.pid, 4242);
        assert!(!told.new_host, "the same host");
        assert_eq!(told.cut_off.as_deref(), Some("it did not read"));
        running.close(opened.link).await;
        host.abort();
    }
}
