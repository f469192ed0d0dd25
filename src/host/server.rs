//! The host's side of the socket: who may connect, what each front end asks, the runs it drives
//! for them and what it pushes to them.
//!
//! Every front end gets its own view of the workspace: the same organization and engine, with
//! its repository (new teams and sessions work there) and its configuration and environment
//! (a [`Profile`] of providers and tool servers for the runs it starts, kept while anyone uses
//! it).

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::cli::{OutputLine, RunOutput};
use crate::config::{Config, Paths};
use crate::engine::events::{EngineEvent, EventKind, RunKey, RunRecord};
use crate::engine::{Engine, Profile};
use crate::env::Env;
use crate::headless::{self, Host, Remote, RunRequest};
use crate::store::RunFiles;
use crate::tools::ApprovalPolicy;
use crate::workspace::Edits;

use super::outbox::{self, Outbox};
use super::protocol::{
    self, ClientMessage, Hello, HostMessage, PROTOCOL, Reply, Request, RunInfo, read_line,
};
use super::table::{self, Table};

/// How long a connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a cut-off front end's writer may take to say why before the connection closes.
const CUT_OFF_SAID: Duration = Duration::from_secs(1);
/// How long a run of a group waits for the group's previous run to finish stopping.
const STOPPING_WAIT: Duration = Duration::from_secs(60);
/// Organization snapshots are pushed at most this often.
const ORG_DEBOUNCE: Duration = Duration::from_millis(50);
/// How long a stop's answer waits for the runs it stopped to end (below a front end's
/// deadline for an answer).
const STOP_ANSWER_WAIT: Duration = Duration::from_secs(5);
/// How long a front end's news of its run's start waits for the table of runs to list it.
const LISTED_WAIT: Duration = Duration::from_secs(2);
/// How long a host nobody has connected to yet waits for its first front end.
const FIRST_FRONT_WAIT: Duration = Duration::from_secs(10);
/// How long a stopping host gives its front ends to read their runs' last words once all are
/// queued (a `huddle run` goes as soon as it has; a TUI stays).
const ANSWER_FLUSH: Duration = Duration::from_millis(300);

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("{0} exists and is not a socket; huddle leaves it alone (move it away)")]
    NotASocket(PathBuf),
    #[error("another process listens on {0}")]
    InUse(PathBuf),
    #[error("cannot listen on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What the host serves: the data dir's open workspace.
pub struct HostParts {
    pub paths: Paths,
    /// The host's own configuration (the first front end's), for front ends that send none.
    pub config: Config,
    /// The repository of the front end that started the host.
    pub repo: PathBuf,
    pub edits: Edits,
    pub engine: Engine,
    pub runs: RunFiles,
    /// What opening the data dir found: told to the first front end.
    pub notices: Vec<String>,
    /// Another process (a TUI) owns the workspace: the host never quits on request.
    pub embedded: bool,
}

struct Shared {
    parts: HostParts,
    table: Mutex<Table>,
    org_followers: Mutex<Vec<Outbox>>,
    /// Front ends' profiles by their configuration, environment and repository.
    profiles: Mutex<HashMap<u64, Arc<Profile>>>,
    /// The key of the host's own configuration: front ends with it use the engine's own.
    own_profile: u64,
    notices: Mutex<Vec<String>>,
    connections: AtomicUsize,
    /// Run requests not answered yet (their exit code not yet handed to their connection's
    /// writer): a stopping host waits for them, else a `huddle run` would hear only that the
    /// host went away.
    answering: AtomicUsize,
    /// A front end has connected since the host started.
    served: AtomicBool,
    /// Connections came or went, a run ended, a quit was asked.
    activity: Notify,
    /// The table saw a run start.
    run_listed: Notify,
    /// The runs TUIs started, per group or session.
    tui_scopes: Arc<super::tui_calls::Scopes>,
    /// Teams whose `worktree_created` hooks still go (made and answered; not run until they
    /// end).
    preparing: Arc<Preparations>,
    quit: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Listening; the socket file goes when this is dropped.
pub struct Server {
    shared: Arc<Shared>,
    path: PathBuf,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Server {
    /// Returns once no front end has been attached and nothing has run for `grace` (or a
    /// front end asked the host to quit and it is idle), or the socket file was removed.
    pub async fn idle(&self, grace: Duration) {
        self.until_idle(grace).await;
        // No one new from here on; one that came a moment ago (still in the listen queue) is
        // served to its end.
        let _ = std::fs::remove_file(&self.path);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let shared = &self.shared;
        loop {
            let notified = shared.activity.notified();
            if shared.connections.load(Ordering::SeqCst) == 0 && lock(&shared.table).is_empty() {
                return;
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }

    async fn until_idle(&self, grace: Duration) {
        let shared = &self.shared;
        // The front end that started the host connects first, however short the grace.
        let started = tokio::time::Instant::now();
        while !shared.served.load(Ordering::SeqCst) && started.elapsed() < FIRST_FRONT_WAIT {
            let notified = shared.activity.notified();
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        loop {
            let notified = shared.activity.notified();
            if !self.path.exists() {
                tracing::info!("the host's socket was removed; it exits");
                return;
            }
            let idle = shared.connections.load(Ordering::SeqCst) == 0 && lock(&shared.table).is_empty();
            if idle && shared.quit.load(Ordering::SeqCst) {
                return;
            }
            let wait = if idle { grace } else { Duration::from_secs(1) };
            tokio::select! {
                _ = notified => continue,
                _ = tokio::time::sleep(wait) => {
                    let still = shared.connections.load(Ordering::SeqCst) == 0
                        && lock(&shared.table).is_empty();
                    if idle && still {
                        return;
                    }
                }
            }
        }
    }

    /// Waits, until `deadline` at most, for every run to end and every run request to be
    /// answered (its exit code written to its front end, which then goes, or a moment given to
    /// the writer to send it); true when they were.
    pub async fn runs_answered(&self, deadline: tokio::time::Instant) -> bool {
        let shared = &self.shared;
        let answered = || lock(&shared.table).is_empty() && shared.answering.load(Ordering::SeqCst) == 0;
        if !until(&shared.activity, Some(deadline), answered).await {
            return false;
        }
        // The answers are queued; their front ends go once they have read them.
        let flushed = (tokio::time::Instant::now() + ANSWER_FLUSH).min(deadline);
        until(&shared.activity, Some(flushed), || {
            shared.connections.load(Ordering::SeqCst) == 0
        })
        .await;
        true
    }
}

/// Starts serving the workspace on `parts.paths.run_socket()` (inside a tokio runtime): the
/// engine's events come from `events`; each is also handed to `local` when given (a TUI that
/// owns the workspace shows them).
pub fn listen(
    parts: HostParts,
    events: mpsc::UnboundedReceiver<EngineEvent>,
    local: Option<mpsc::UnboundedSender<EngineEvent>>,
) -> Result<Server, ListenError> {
    let listener = bind(&parts.paths.run_socket())?;
    Ok(serve_on(listener, parts, events, local))
}

/// [`listen`] on a socket bound already ([`bind`]).
pub fn serve_on(
    listener: UnixListener,
    parts: HostParts,
    events: mpsc::UnboundedReceiver<EngineEvent>,
    local: Option<mpsc::UnboundedSender<EngineEvent>>,
) -> Server {
    let path = parts.paths.run_socket();
    let own_profile = profile_key(&parts.config, &Env::of(Env::capture()), &parts.repo, None);
    let notices = parts.notices.clone();
    let shared = Arc::new(Shared {
        parts,
        table: Mutex::new(Table::default()),
        org_followers: Mutex::new(Vec::new()),
        profiles: Mutex::new(HashMap::new()),
        own_profile,
        notices: Mutex::new(notices),
        connections: AtomicUsize::new(0),
        answering: AtomicUsize::new(0),
        served: AtomicBool::new(false),
        activity: Notify::new(),
        run_listed: Notify::new(),
        tui_scopes: Arc::default(),
        preparing: Arc::default(),
        quit: AtomicBool::new(false),
    });
    let accept = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(serve(stream, Arc::clone(&shared)));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "host socket: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        })
    };
    let dispatch = tokio::spawn(dispatch(Arc::clone(&shared), events, local));
    let org = tokio::spawn(push_org(Arc::clone(&shared)));
    tracing::info!(path = %path.display(), pid = std::process::id(), "the host listens");
    Server {
        shared,
        path,
        tasks: vec![accept, dispatch, org],
    }
}

/// Binds the socket: a file left by a host that died is replaced; anything else at that path is
/// left alone and reported. The data dir is owner-only; the socket is made so too.
pub fn bind(path: &Path) -> Result<UnixListener, ListenError> {
    let io_error = |source| ListenError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => return Err(ListenError::NotASocket(path.to_path_buf())),
        Ok(_) => {
            // We hold the data dir's lock, so a listener there would be a stranger; a dead one
            // is a crashed host's leftover.
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(ListenError::InUse(path.to_path_buf()));
            }
            std::fs::remove_file(path).map_err(io_error)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(e)),
    }
    let listener = UnixListener::bind(path).map_err(io_error)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io_error)?;
    Ok(listener)
}

/// The newest run on disk of a group (what `huddle stop GROUP` names when nothing of it runs).
fn last_run_on_disk(shared: &Shared, group_id: &str) -> Option<String> {
    shared.parts.runs.list(group_id).ok()?.pop()
}

/// Every engine event: into the table of runs (and to their followers), then to `local`.
async fn dispatch(
    shared: Arc<Shared>,
    mut events: mpsc::UnboundedReceiver<EngineEvent>,
    local: Option<mpsc::UnboundedSender<EngineEvent>>,
) {
    // Taken as they wait (see `async_runtime::RECEIVE_BATCH`).
    let mut batch = Vec::new();
    while events
        .recv_many(&mut batch, crate::async_runtime::RECEIVE_BATCH)
        .await
        > 0
    {
        // A run is reported ended (to `ps`, its followers, a front end that then reads its
        // file) only once its file has its end; the ends' lines were queued before the events.
        // A disk that hangs holds this up a few seconds at most, then it goes on without.
        if batch.iter().any(|e| matches!(e.kind, EventKind::RunEnded { .. }))
            && tokio::time::timeout(
                crate::store::WRITTEN_WAIT,
                shared.parts.engine.run_files_written(),
            )
            .await
            .is_err()
        {
            tracing::warn!(
                "a run's file was not written within {} s; its end is reported all the same",
                crate::store::WRITTEN_WAIT.as_secs()
            );
        }
        for event in batch.drain(..) {
            dispatch_one(&shared, event, local.as_ref());
        }
    }
}

/// One engine event: into the table of runs (and to their followers), then to `local`.
fn dispatch_one(shared: &Shared, event: EngineEvent, local: Option<&mpsc::UnboundedSender<EngineEvent>>) {
    // A team run's mode is listed from its start (its cycle says it a moment later).
    let mode = match &event.kind {
        EventKind::RunStarted {
            key: RunKey::Team { group_id },
        } => shared
            .parts
            .engine
            .org()
            .read(|o| o.group(group_id).map(|g| g.mode)),
        _ => None,
    };
    let ended = {
        let mut table = lock(&shared.table);
        let ended = table.apply(&event);
        if let (Some(mode), Some(run_id)) = (mode, &event.run_id) {
            table.note_mode(run_id, mode);
        }
        ended
    };
    if matches!(event.kind, EventKind::RunStarted { .. }) {
        shared.run_listed.notify_waiters();
    }
    if ended {
        shared.activity.notify_waiters();
        sweep_profiles(shared);
    }
    if let Some(local) = local {
        let _ = local.send(event);
    }
}

/// Sends the organization to the front ends that follow it, shortly after it changes.
async fn push_org(shared: Arc<Shared>) {
    let mut changes = shared.parts.engine.org().changes();
    while changes.changed().await.is_ok() {
        tokio::time::sleep(ORG_DEBOUNCE).await;
        changes.borrow_and_update();
        if lock(&shared.org_followers).is_empty() {
            continue;
        }
        // Copied and encoded once for every follower (each keeps only the newest waiting), on
        // the blocking pool: a big organization takes milliseconds the one worker owes to
        // every run and front end.
        let handle = shared.parts.engine.org().clone();
        let encoded = tokio::task::spawn_blocking(move || {
            let (org, version) = handle.versioned();
            protocol::encode(&HostMessage::Org {
                org: Box::new(org),
                version,
            })
        })
        .await;
        let line = match encoded {
            Ok(line) => line,
            Err(e) => {
                tracing::error!(error = %e, "the organization could not be encoded for the front ends");
                continue;
            }
        };
        lock(&shared.org_followers).retain(|tx| tx.send_org_line(line.clone()));
    }
}

/// True when a peer of `uid` may use the host: only its own user.
pub fn same_user(uid: u32) -> bool {
    uid == own_uid()
}

pub(crate) fn own_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// What the host keeps of one front end.
struct FrontContext {
    /// `huddle run (pid N)`: who started a run, in `huddle ps`.
    label: String,
    edits: Edits,
    config: Config,
    env: Env,
    repo: PathBuf,
    /// It sent its configuration and environment (else the host's own serve it).
    own_config: bool,
    terminal: bool,
    color: bool,
}

/// The attached runs of one connection: their stop (dropped when it goes) and their id once
/// known.
#[derive(Default)]
struct Attached {
    runs: HashMap<u64, (Option<oneshot::Sender<u8>>, Option<String>)>,
}

/// One front end's connection, counted while it lasts.
async fn serve(stream: UnixStream, shared: Arc<Shared>) {
    let counted = Counted::new(shared);
    converse(stream, &counted.0).await;
}

/// A run request counted until it is answered, also when its task panics.
struct Answering(Arc<Shared>);

impl Answering {
    fn new(shared: Arc<Shared>) -> Answering {
        shared.answering.fetch_add(1, Ordering::SeqCst);
        Answering(shared)
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.answering.fetch_sub(1, Ordering::SeqCst);
        self.0.activity.notify_waiters();
    }
}

/// A connection counted while it lasts, also when its task panics (else the host would never
/// be idle again).
struct Counted(Arc<Shared>);

impl Counted {
    fn new(shared: Arc<Shared>) -> Counted {
        shared.connections.fetch_add(1, Ordering::SeqCst);
        shared.served.store(true, Ordering::SeqCst);
        shared.activity.notify_waiters();
        Counted(shared)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
        self.0.activity.notify_waiters();
    }
}

/// One connection: hello, then requests until it goes.
async fn converse(stream: UnixStream, shared: &Arc<Shared>) {
    match stream.peer_cred() {
        Ok(cred) if same_user(cred.uid()) => {}
        Ok(cred) => {
            tracing::warn!(uid = cred.uid(), "host socket: refused a peer of another user");
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "host socket: cannot tell who connected");
            return;
        }
    }
    let (read, write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let (tx, rx) = outbox::outbox();
    let mut writer = tokio::spawn(write_all(write, rx));
    // A greeting is short: a connection says who it is before it may send long lines.
    let hello = match tokio::time::timeout(
        HELLO_TIMEOUT,
        protocol::read_line_of_at_most(&mut reader, protocol::MAX_HELLO),
    )
    .await
    {
        Ok(Ok(Some(line))) => match protocol::decode::<ClientMessage>(&line) {
            Ok(ClientMessage::Hello(hello)) => *hello,
            _ => {
                let _ = tx.send(HostMessage::Refused {
                    message: format!(
                        "the huddle host (version {}, protocol {PROTOCOL}) did not understand the greeting: is this front end of another version?",
                        env!("CARGO_PKG_VERSION")
                    ),
                });
                drop(tx);
                let _ = writer.await;
                return;
            }
        },
        _ => return,
    };
    if hello.protocol != PROTOCOL {
        let _ = tx.send(HostMessage::Refused {
            message: format!(
                "the huddle host on this data dir (pid {}) is version {} and cannot serve this huddle (version {}): it exits once idle (`huddle ps` lists what it runs; `huddle stop` stops it)",
                std::process::id(),
                env!("CARGO_PKG_VERSION"),
                hello.version
            ),
        });
        drop(tx);
        let _ = writer.await;
        return;
    }
    tracing::info!(front = %hello.front, pid = hello.pid, repo = %hello.repo.display(), "a front end attached");
    let front = Arc::new(front_context(shared, hello));
    let notices = std::mem::take(&mut *lock(&shared.notices));
    let _ = tx.send(HostMessage::Welcome {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        notices,
    });
    let attached = Arc::new(Mutex::new(Attached::default()));
    loop {
        let read = tokio::select! {
            read = read_line(&mut reader) => read,
            // It does not read what it is sent: it is cut off (a bounded host), told so if the
            // line still goes through (its writer says why last, then closes).
            _ = tx.overflowed() => {
                if tokio::time::timeout(CUT_OFF_SAID, &mut writer).await.is_err() {
                    writer.abort();
                }
                break;
            }
        };
        let line = match read {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(error = %e, "host socket: unreadable line; closing the connection");
                break;
            }
        };
        match protocol::decode::<ClientMessage>(&line) {
            Ok(ClientMessage::Request { id, request }) => {
                handle(shared, &front, &attached, &tx, id, *request).await;
            }
            Ok(ClientMessage::Hello(_)) => {}
            Err(e) => {
                tracing::warn!("host socket: {e}");
                // A request of a newer front end, say: it gets an answer, not a silence.
                if let Some(id) = request_id(&line) {
                    failed(
                        &tx,
                        id,
                        2,
                        format!(
                            "the huddle host (version {}) did not understand this request ({e})",
                            env!("CARGO_PKG_VERSION")
                        ),
                    );
                }
            }
        }
    }
    // Gone: the runs it started and did not detach stop as on a hang-up (resumable).
    let gone = std::mem::take(&mut lock(&attached).runs);
    for (stop, run_id) in gone.into_values() {
        if let (Some(_), Some(run_id)) = (&stop, &run_id) {
            lock(&shared.table).mark_stopping(run_id);
        }
        drop(stop);
    }
    drop(tx);
    drop(front);
    sweep_profiles(shared);
    tracing::info!("a front end went");
}

/// Carries out a TUI's engine call (a run it starts is expected to ask that front end) and
/// answers it.
fn carry_out_engine_call(
    shared: &Arc<Shared>,
    front: &Arc<FrontContext>,
    tx: &Outbox,
    id: u64,
    call: super::protocol::EngineCall,
    starts: Option<RunKey>,
) {
    if let Some(key) = &starts {
        lock(&shared.table).expect_front(key, front.label.clone());
    }
    let engine = &shared.parts.engine;
    match super::tui_calls::carry_out(engine, &shared.tui_scopes, shared_profile(shared, front), call) {
        Ok(()) => reply(tx, id, Reply::Done),
        Err(why) => {
            if let Some(key) = &starts {
                lock(&shared.table).forget_front(key);
            }
            failed(tx, id, 2, why)
        }
    }
}

/// The teams whose `worktree_created` hooks go, and a bell rung when one's end.
#[derive(Default)]
struct Preparations {
    teams: Mutex<std::collections::HashSet<String>>,
    ended: Notify,
}

/// A team whose worktree hooks run: its runs wait until this is dropped, also when the
/// hooks' task panics or is cancelled (the team would otherwise be "preparing" for ever).
struct Preparing {
    preparations: Arc<Preparations>,
    group_id: String,
}

impl Preparing {
    fn new(preparations: &Arc<Preparations>, group_id: &str) -> Preparing {
        lock(&preparations.teams).insert(group_id.to_string());
        Preparing {
            preparations: Arc::clone(preparations),
            group_id: group_id.to_string(),
        }
    }
}

impl Drop for Preparing {
    fn drop(&mut self) {
        lock(&self.preparations.teams).remove(&self.group_id);
        self.preparations.ended.notify_waiters();
    }
}

/// Waits until the team `key` runs in has no `worktree_created` hooks going.
async fn prepared(shared: &Shared, key: &RunKey) {
    until(&shared.preparing.ended, None, || !preparing(shared, key)).await;
}

/// Waits until `done` says yes, looking again each time `bell` rings, until `deadline` at
/// most; whether `done` said yes.
async fn until(bell: &Notify, deadline: Option<tokio::time::Instant>, done: impl Fn() -> bool) -> bool {
    loop {
        // Listening before looking: a ring between the two is not missed.
        let rung = bell.notified();
        tokio::pin!(rung);
        rung.as_mut().enable();
        if done() {
            return true;
        }
        match deadline {
            Some(at) if tokio::time::Instant::now() >= at => return false,
            Some(at) => {
                tokio::select! {
                    _ = rung => {}
                    _ = tokio::time::sleep_until(at) => {}
                }
            }
            None => rung.await,
        }
    }
}

/// True while the team `key` runs in (or its member's) has `worktree_created` hooks going.
fn preparing(shared: &Shared, key: &RunKey) -> bool {
    let preparing = lock(&shared.preparing.teams);
    if preparing.is_empty() {
        return false;
    }
    let group = match key {
        RunKey::Team { group_id } => Some(group_id.clone()),
        RunKey::Chat { session_id } | RunKey::Reflection { session_id } => shared
            .parts
            .engine
            .org()
            .read(|o| o.session(session_id).map(|s| s.group_id.clone())),
    };
    group.is_some_and(|g| preparing.contains(&g))
}

/// The id of a request the host could not read, when its line says one.
fn request_id(line: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()?
        .get("id")?
        .as_u64()
}

/// Bytes a front end's writer sends in one `write` at most (more when one line is longer).
const WRITE_CHUNK: usize = 64 * 1024;

async fn write_all(mut write: tokio::net::unix::OwnedWriteHalf, mut rx: outbox::Receiver) {
    // The lines waiting go out together (see `outbox::Receiver::recv_into`).
    let mut chunk = String::new();
    while rx.recv_into(&mut chunk, WRITE_CHUNK).await {
        if write.write_all(chunk.as_bytes()).await.is_err() {
            return;
        }
        chunk.clear();
        // A very long line (an organization, a transcript) is not held on to after it went
        // (a batch ends a line past the chunk's size: that much is kept, not reallocated).
        if chunk.capacity() > 4 * WRITE_CHUNK {
            chunk.shrink_to(WRITE_CHUNK);
        }
    }
    if rx.overflowed() {
        let line = protocol::encode(&HostMessage::CutOff {
            reason: format!(
                "more than {} MiB waited to go to it (it did not read)",
                outbox::LIMIT / (1024 * 1024)
            ),
        });
        let _ = write.write_all(line.as_bytes()).await;
    }
    let _ = write.shutdown().await;
}

fn front_context(shared: &Shared, hello: Hello) -> FrontContext {
    let label = match hello.front.as_str() {
        "run" | "mcp" => format!("huddle {} (pid {})", hello.front, hello.pid),
        other => format!("{other} (pid {})", hello.pid),
    };
    let (config, env, own_config) = match hello.config {
        Some(config) => (config, Env::of(hello.env), true),
        None => (shared.parts.config.clone(), Env::process(), false),
    };
    FrontContext {
        label,
        edits: shared.parts.edits.for_front(config.clone(), hello.repo.clone()),
        config,
        env,
        repo: hello.repo,
        own_config,
        terminal: hello.terminal,
        color: hello.color,
    }
}

fn profile_key(config: &Config, env: &Env, repo: &Path, sandbox: Option<crate::sandbox::SandboxMode>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(config).unwrap_or_default().hash(&mut h);
    env.fingerprint().hash(&mut h);
    repo.hash(&mut h);
    format!("{sandbox:?}").hash(&mut h);
    h.finish()
}

/// The profile of a front end's run (its configuration, environment and repository, and the
/// run's `--sandbox`): the host's own (`None`) when they are the host's, else one made for
/// them (shared with every run with the same).
fn profile_for(
    shared: &Shared,
    front: &FrontContext,
    sandbox: Option<crate::sandbox::SandboxMode>,
) -> Result<Option<Arc<Profile>>, String> {
    if !front.own_config && sandbox.is_none() {
        return Ok(None);
    }
    let (config, env, repo) = (&front.config, &front.env, &front.repo);
    let key = profile_key(config, env, repo, sandbox);
    if key == shared.own_profile {
        return Ok(None);
    }
    let mut profiles = lock(&shared.profiles);
    if let Some(p) = profiles.get(&key) {
        return Ok(Some(Arc::clone(p)));
    }
    let providers = crate::sim::providers_in(config, env).map_err(|e| e.to_string())?;
    let profile = Arc::new(Profile {
        providers,
        options: crate::workspace::engine_options(
            &shared.parts.paths,
            config,
            repo,
            env,
            ApprovalPolicy::DenyAll,
            crate::workspace::baseline(&shared.parts.paths, config, sandbox, env),
        ),
    });
    profiles.insert(key, Arc::clone(&profile));
    Ok(Some(profile))
}

/// Forgets the profiles nobody uses any more, stopping their tool servers.
fn sweep_profiles(shared: &Shared) {
    let unused: Vec<Arc<Profile>> = {
        let mut profiles = lock(&shared.profiles);
        let keys: Vec<u64> = profiles
            .iter()
            .filter(|(_, p)| Arc::strong_count(p) == 1)
            .map(|(k, _)| *k)
            .collect();
        keys.iter().filter_map(|k| profiles.remove(k)).collect()
    };
    for profile in unused {
        tokio::spawn(async move { profile.options.tools.shutdown().await });
    }
}

fn reply(tx: &Outbox, id: u64, reply: Reply) {
    let _ = tx.send(HostMessage::Reply { id, reply });
}

fn failed(tx: &Outbox, id: u64, code: u8, message: impl Into<String>) {
    let _ = tx.send(HostMessage::Failed {
        id,
        code,
        message: message.into(),
    });
}

async fn handle(
    shared: &Arc<Shared>,
    front: &Arc<FrontContext>,
    attached: &Arc<Mutex<Attached>>,
    tx: &Outbox,
    id: u64,
    request: Request,
) {
    let engine = &shared.parts.engine;
    match request {
        Request::Run {
            request,
            detach,
            keep,
        } => start_run(shared, front, attached, tx, id, request, Keep { detach, keep }),
        Request::Signal { run, signal } => {
            let taken = lock(attached)
                .runs
                .get_mut(&run)
                .map(|(stop, id)| (stop.take(), id.clone()));
            if let Some((Some(stop), run_id)) = taken {
                if let Some(run_id) = run_id {
                    lock(&shared.table).mark_stopping(&run_id);
                }
                let _ = stop.send(signal);
            }
        }
        Request::AnswerDraft { group_id, answer } => {
            match answer {
                Some(answer) => {
                    engine.answer_relay(&group_id, answer);
                }
                None => {
                    engine.stop(&RunKey::team(group_id));
                }
            }
            reply(tx, id, Reply::Done);
        }
        Request::Ps => {
            let mut runs = lock(&shared.table).infos();
            for run in &mut runs {
                run.front = run
                    .front
                    .take()
                    .map(|f| table::front_now(&f, table::process_alive));
            }
            reply(tx, id, Reply::Runs { runs })
        }
        Request::Stop { target } => {
            let org = engine.org().snapshot();
            let resolved = lock(&shared.table).resolve(&target, &org, |g| last_run_on_disk(shared, g));
            match resolved {
                Ok(runs) => {
                    for run_id in &runs {
                        lock(&shared.table).mark_stopping(run_id);
                        engine.stop_run(run_id);
                    }
                    // Answered once they ended (their files say how), as `kill` then `wait`:
                    // a script's next command finds them ended. A step that does not let go
                    // at once (a tool call, an agent ending) is not waited for long.
                    let deadline = tokio::time::Instant::now() + STOP_ANSWER_WAIT;
                    until(&shared.activity, Some(deadline), || {
                        let table = lock(&shared.table);
                        !runs.iter().any(|r| table.is_going(r))
                    })
                    .await;
                    let stopping = {
                        let table = lock(&shared.table);
                        runs.iter().filter(|r| table.is_going(r)).cloned().collect()
                    };
                    reply(
                        tx,
                        id,
                        Reply::Stopped {
                            runs,
                            stopping: Some(stopping),
                        },
                    );
                }
                Err(why) => failed(tx, id, 2, why),
            }
        }
        Request::Attach { target } => attach(shared, tx, id, &target).await,
        Request::AnswerApproval {
            approval_id,
            decision,
        } => {
            if engine.answer_approval(approval_id, decision) {
                reply(tx, id, Reply::Done);
            } else {
                failed(tx, id, 2, format!("nothing waits on approval #{approval_id}"));
            }
        }
        Request::Subscribe { events, org, replay } => {
            if org {
                let (org, version) = engine.org().versioned();
                let _ = tx.send(HostMessage::Org {
                    org: Box::new(org),
                    version,
                });
                lock(&shared.org_followers).push(tx.clone());
            }
            if events && replay {
                let (live_tx, live_rx) = outbox::outbox();
                let going = lock(&shared.table).follow_all_from_start(live_tx);
                reply(tx, id, Reply::Done);
                tokio::spawn(replay_then_live(Arc::clone(shared), going, live_rx, tx.clone()));
                return;
            }
            if events {
                lock(&shared.table).follow_all(tx.clone());
            }
            reply(tx, id, Reply::Done);
        }
        Request::Edit { call } => {
            let (front, engine, tx, shared) =
                (Arc::clone(front), engine.clone(), tx.clone(), Arc::clone(shared));
            let team = matches!(call, crate::workspace::EditCall::CreateTeamWith { .. });
            // A team's worktree hooks are those of the front end's configuration.
            let profile = if team {
                shared_profile(&shared, &front).ok().flatten()
            } else {
                None
            };
            tokio::spawn(async move {
                let done = {
                    let front = Arc::clone(&front);
                    tokio::task::spawn_blocking(move || front.env.scope(|| front.edits.apply(call))).await
                };
                let Ok(result) = done else {
                    return failed(&tx, id, 1, "the edit failed in the huddle host (see its log)");
                };
                let made = result
                    .get("Ok")
                    .and_then(|v| v.as_str())
                    .filter(|_| team)
                    .map(|group_id| Preparing::new(&shared.preparing, group_id));
                let (org, version) = engine.org().versioned();
                reply(
                    &tx,
                    id,
                    Reply::Edited {
                        result,
                        org: Box::new(org),
                        version,
                    },
                );
                // A team made with worktrees: their hooks (a dependency install, minutes long)
                // run once it is answered, their `hook_*` events showing how they go; the front
                // end does not wait for them, and the team does not run until they end.
                if let Some(preparing) = made {
                    engine.worktree_created_hooks(&preparing.group_id, profile).await;
                }
            });
        }
        Request::Engine { call } => {
            // A TUI does not answer for the front end a run asks (it started the run).
            if let Some(asker) = lock(&shared.table).asked_elsewhere_of(&call) {
                return failed(tx, id, 2, crate::describe::tools::asked_elsewhere(&asker));
            }
            let starts = super::tui_calls::run_started_by(&call);
            if let Some(key) = starts.clone()
                && preparing(shared, &key)
            {
                // Held, not refused: it starts once the hooks preparing the team's worktrees
                // end (they show how they go as `hook_*` events); answered then.
                let (shared, front, tx) = (Arc::clone(shared), Arc::clone(front), tx.clone());
                tokio::spawn(async move {
                    prepared(&shared, &key).await;
                    carry_out_engine_call(&shared, &front, &tx, id, call, Some(key));
                });
                return;
            }
            carry_out_engine_call(shared, front, tx, id, call, starts);
        }
        Request::Transcript { session_id } => {
            let (engine, tx) = (engine.clone(), tx.clone());
            tokio::task::spawn_blocking(move || match engine.load_transcript(&session_id) {
                Ok(t) => reply(
                    &tx,
                    id,
                    Reply::Transcript {
                        messages: t.messages,
                        warnings: t.warnings,
                    },
                ),
                Err(e) => failed(&tx, id, 1, e.to_string()),
            });
        }
        Request::Prune {
            older_than_secs,
            dry_run,
        } => {
            let edits = front.edits.clone();
            let engine = engine.clone();
            let tx = tx.clone();
            tokio::task::spawn_blocking(move || {
                let age = chrono::Duration::try_seconds(older_than_secs).unwrap_or_default();
                let out = crate::runs_cli::prune_text(&edits, age, dry_run);
                match engine.flush() {
                    Ok(()) => reply(
                        &tx,
                        id,
                        Reply::Printed {
                            out,
                            err: String::new(),
                            code: 0,
                        },
                    ),
                    Err(e) => reply(
                        &tx,
                        id,
                        Reply::Printed {
                            out,
                            err: format!("huddle: could not save: {e}"),
                            code: 1,
                        },
                    ),
                }
            });
        }
        Request::RemoveWorktrees {
            group,
            session,
            path,
            force,
        } => {
            let front = Arc::clone(front);
            let engine = engine.clone();
            let tx = tx.clone();
            tokio::task::spawn_blocking(move || {
                let removed = front
                    .env
                    .scope(|| crate::worktrees_cli::remove_on(&front.edits, group, session, path, force));
                match removed {
                    Ok(out) => {
                        let (err, code) = match engine.flush() {
                            Ok(()) => (String::new(), 0),
                            Err(e) => (
                                format!(
                                    "huddle: the worktrees were removed but the records could not be saved: {e}"
                                ),
                                1,
                            ),
                        };
                        reply(&tx, id, Reply::Printed { out, err, code });
                    }
                    Err((code, message)) => failed(&tx, id, code, message),
                }
            });
        }
        Request::Quit => {
            let mut busy = lock(&shared.table).busy_lines();
            if shared.parts.embedded {
                busy.push(format!(
                    "the huddle TUI (pid {}) owns the data dir",
                    std::process::id()
                ));
            }
            let others = shared.connections.load(Ordering::SeqCst).saturating_sub(1);
            if others > 0 {
                busy.push(format!("{others} other front end(s) attached"));
            }
            if busy.is_empty() {
                shared.quit.store(true, Ordering::SeqCst);
                shared.activity.notify_waiters();
            }
            reply(tx, id, Reply::Quitting { busy });
        }
    }
}

/// Whether a run goes on without the connection that started it: `detach` (and tells it only
/// its start) or `keep` (and tells it everything).
struct Keep {
    detach: bool,
    keep: bool,
}

/// Drives a `huddle run` for a front end: its output back as it comes, then its exit code.
fn start_run(
    shared: &Arc<Shared>,
    front: &Arc<FrontContext>,
    attached: &Arc<Mutex<Attached>>,
    tx: &Outbox,
    id: u64,
    request: RunRequest,
    Keep { detach, keep }: Keep,
) {
    let profile = match profile_for(shared, front, request.sandbox) {
        Ok(p) => p,
        Err(why) => {
            failed(tx, id, 1, why);
            return;
        }
    };
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<OutputLine>();
    let (stop_tx, stop_rx) = oneshot::channel::<u8>();
    // Detached or kept: the run owns its stop (nobody's going stops it); else the connection
    // does.
    let mut kept_stop = None;
    if detach || keep {
        kept_stop = Some(stop_tx);
    } else {
        lock(attached).runs.insert(id, (Some(stop_tx), None));
    }
    let remote = Remote {
        output: RunOutput::Remote(out_tx),
        stop: stop_rx,
        terminal: front.terminal,
        color: front.color,
        profile,
        env: front.env.clone(),
    };
    let answering = Answering::new(Arc::clone(shared));
    let (shared, front, attached, tx) = (
        Arc::clone(shared),
        Arc::clone(front),
        Arc::clone(attached),
        tx.clone(),
    );
    tokio::spawn(async move {
        let _answering = answering;
        wait_for_stopping_group(&shared, &request).await;
        let mut run = {
            let (shared, front) = (Arc::clone(&shared), Arc::clone(&front));
            tokio::spawn(async move {
                let host = Host {
                    paths: &shared.parts.paths,
                    config: &front.config,
                    edits: &front.edits,
                    engine: &shared.parts.engine,
                };
                headless::execute(&host, &request, remote).await
            })
        };
        let mut announced = false;
        let forward = |line: OutputLine, announced: &mut bool| {
            if *announced && detach {
                return;
            }
            let message = match line {
                OutputLine::Out(text) => HostMessage::Output {
                    id,
                    out: Some(text),
                    err: None,
                },
                OutputLine::Err(text) => HostMessage::Output {
                    id,
                    out: None,
                    err: Some(text),
                },
                OutputLine::Started {
                    run_id,
                    group_id,
                    group,
                } => {
                    *announced = true;
                    let label = if detach {
                        format!("detached from {}", front.label)
                    } else {
                        front.label.clone()
                    };
                    lock(&shared.table).set_front(&run_id, label);
                    if let Some((_, known)) = lock(&attached).runs.get_mut(&id) {
                        *known = Some(run_id.clone());
                    }
                    HostMessage::Started {
                        id,
                        run_id,
                        group_id,
                        group,
                    }
                }
                OutputLine::Draft {
                    group_id,
                    turn,
                    text,
                    review,
                } => HostMessage::Draft {
                    id,
                    group_id,
                    turn,
                    text,
                    review,
                },
            };
            let _ = tx.send(message);
        };
        // Taken as they wait (see `async_runtime::RECEIVE_BATCH`).
        let mut lines = Vec::new();
        let result = loop {
            tokio::select! {
                1.. = out_rx.recv_many(&mut lines, crate::async_runtime::RECEIVE_BATCH) => {
                    for line in lines.drain(..) {
                        until_listed(&shared, &line).await;
                        forward(line, &mut announced);
                    }
                }
                result = &mut run => break result,
            }
        };
        while let Ok(line) = out_rx.try_recv() {
            until_listed(&shared, &line).await;
            forward(line, &mut announced);
        }
        drop(kept_stop);
        lock(&attached).runs.remove(&id);
        let code = match result {
            Ok(Ok(code)) => code,
            Ok(Err(failure)) => {
                if !(detach && announced) {
                    let _ = tx.send(HostMessage::Output {
                        id,
                        out: None,
                        err: Some(format!("huddle: {failure}")),
                    });
                }
                failure.code
            }
            Err(e) => {
                tracing::error!(error = %e, "a run ended abnormally in the host");
                let _ = tx.send(HostMessage::Output {
                    id,
                    out: None,
                    err: Some("huddle: the run ended abnormally in the huddle host (see its log)".into()),
                });
                1
            }
        };
        if !(detach && announced) {
            let _ = tx.send(HostMessage::Exit { id, code });
        }
    });
}

/// Before a front end hears that its run started, the table of runs has seen it start: a
/// `huddle ps` or `list_runs` right after lists it. (The table hears of the start on another
/// task; it is a moment at most, bounded in case the event never comes.)
async fn until_listed(shared: &Shared, line: &OutputLine) {
    let OutputLine::Started { run_id, .. } = line else {
        return;
    };
    let listed = async {
        loop {
            let notified = shared.run_listed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if lock(&shared.table).has_seen(run_id) {
                return;
            }
            notified.await;
        }
    };
    let _ = tokio::time::timeout(LISTED_WAIT, listed).await;
}

/// A run of an existing group waits while the group's previous run is stopping (its front end
/// went away a moment ago): as when that front end's own process had ended it.
async fn wait_for_stopping_group(shared: &Shared, request: &RunRequest) {
    let Some(name) = &request.group else { return };
    let Some(group_id) = shared
        .parts
        .engine
        .org()
        .read(|o| o.group_by_name(name).map(|g| g.id.clone()))
    else {
        return;
    };
    let deadline = tokio::time::Instant::now() + STOPPING_WAIT;
    while lock(&shared.table).team_stopping(&group_id) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// What a front end's runs use: its profile (`None`: the engine's own), or why there is none.
fn shared_profile(shared: &Arc<Shared>, front: &Arc<FrontContext>) -> Result<Option<Arc<Profile>>, String> {
    profile_for(shared, front, None)
}

/// A subscriber that asked for the runs so far: each run's events from its run file, then
/// everything live (queued meanwhile, so nothing is missed or doubled).
async fn replay_then_live(
    shared: Arc<Shared>,
    going: Vec<(RunInfo, usize)>,
    live_rx: outbox::Receiver,
    tx: Outbox,
) {
    if !going.is_empty() {
        let engine = shared.parts.engine.clone();
        let runs = shared.parts.runs.clone();
        let read = tokio::task::spawn_blocking(move || {
            let _ = engine.flush();
            going
                .into_iter()
                .map(|(run, logged)| {
                    let lines = runs.read_lines_of(&run.owner(), &run.run_id).unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "cannot read a run file back for a front end");
                        Vec::new()
                    });
                    (lines, logged, run.front)
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for (lines, logged, front) in read {
            for line in lines.iter().take(logged) {
                if let Ok(record) = serde_json::from_str::<RunRecord>(line)
                    && !tx
                        .send_paced(HostMessage::event_of(record.event, front.as_deref()))
                        .await
                {
                    return;
                }
            }
        }
    }
    forward_live(live_rx, &tx).await;
}

/// Hands what a follower inside the host got to the front end's connection; cuts the front end
/// off when the follower overflowed (it could not keep up).
async fn forward_live(mut live_rx: outbox::Receiver, tx: &Outbox) {
    while let Some(line) = live_rx.recv().await {
        if !tx.send_line(line) {
            return;
        }
    }
    if live_rx.overflowed() {
        tx.cut_off();
    }
}

/// `huddle attach`: the run's events so far (read back from its run file), then live until it
/// ends.
async fn attach(shared: &Arc<Shared>, tx: &Outbox, id: u64, target: &str) {
    let org = shared.parts.engine.org().snapshot();
    let resolved = lock(&shared.table).resolve(target, &org, |g| last_run_on_disk(shared, g));
    let run_id = match resolved {
        Ok(runs) => runs.into_iter().next().unwrap_or_default(),
        Err(why) => return failed(tx, id, 2, why),
    };
    let (live_tx, live_rx) = outbox::outbox();
    let followed = lock(&shared.table).follow_run(&run_id, live_tx);
    let Some((run, logged)) = followed else {
        return failed(tx, id, 2, format!("run {run_id} has ended"));
    };
    reply(tx, id, Reply::Attached { run: run.clone() });
    let (shared, tx) = (Arc::clone(shared), tx.clone());
    tokio::spawn(async move {
        let engine = shared.parts.engine.clone();
        let runs = shared.parts.runs.clone();
        let owner = run.owner();
        let run_id = run.run_id.clone();
        // Every line queued so far is in the file once it is flushed.
        let lines = tokio::task::spawn_blocking(move || {
            let _ = engine.flush();
            runs.read_lines_of(&owner, &run_id)
        })
        .await;
        let lines = match lines {
            Ok(Ok(lines)) => lines,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read a run file back for a front end");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        for line in lines.iter().take(logged) {
            if let Ok(record) = serde_json::from_str::<RunRecord>(line)
                && !tx.send_paced(HostMessage::event(record.event)).await
            {
                return;
            }
        }
        forward_live(live_rx, &tx).await;
    });
}

#[cfg(test)]
mod tests {
    use tokio::io::BufReader;

    use super::*;

    /// Review 23-2 finding C: a front end cut off for not reading is told so last (the host and
    /// its runs go on), rather than seeing the connection just close as when the host dies.
    #[tokio::test]
    async fn a_front_end_cut_off_is_told_why_before_the_connection_closes() {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let (_, write) = ours.into_split();
        let (tx, rx) = outbox::with_limit(8);
        assert!(!tx.send_line("a line longer than the limit\n".into()));
        let writer = tokio::spawn(write_all(write, rx));
        writer.await.expect("the writer ended");
        let mut reader = BufReader::new(theirs);
        let line = read_line(&mut reader).await.expect("read").expect("a line");
        match protocol::decode::<HostMessage>(&line) {
            Ok(HostMessage::CutOff { reason }) => assert!(reason.contains("did not read"), "{reason}"),
            other => panic!("not a cut_off line: {other:?}"),
        }
        assert_eq!(read_line(&mut reader).await.expect("read"), None, "then closed");
    }

    /// A team whose worktree hooks' task panicked is not "preparing" for ever (it would refuse
    /// every run until the host stopped).
    #[tokio::test]
    async fn a_team_is_ready_again_when_its_hooks_task_panics() {
        let teams = Arc::new(Preparations::default());
        let hooks = {
            let preparing = Preparing::new(&teams, "g-1");
            assert!(lock(&teams.teams).contains("g-1"));
            tokio::spawn(async move {
                let _held = preparing;
                panic!("a hook task panicked");
            })
        };
        assert!(hooks.await.is_err_and(|e| e.is_panic()));
        assert!(
            lock(&teams.teams).is_empty(),
            "still preparing: {:?}",
            lock(&teams.teams)
        );
    }

    /// Review 23-2 nit E2: a connection's first line is short; a longer one is not read.
    #[tokio::test]
    async fn a_greeting_longer_than_its_limit_is_not_read() {
        let long = format!("{}\n", "x".repeat(protocol::MAX_HELLO + 1));
        let mut reader = BufReader::new(long.as_bytes());
        let read = protocol::read_line_of_at_most(&mut reader, protocol::MAX_HELLO).await;
        assert!(read.is_err(), "{:?}", read.map(|l| l.map(|l| l.len())));
    }
}
