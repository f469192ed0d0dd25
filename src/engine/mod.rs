//! The engine: sessions, the four modes and the reflect loop. No terminal code here; it takes
//! commands (method calls on [`Engine`]) and emits [`events::EngineEvent`]s.

pub mod events;
mod modes;
pub mod protocol;
mod reflect;
pub mod session;
mod single;
mod team;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::model::{CycleOutcome, Mode, Usage};
use crate::providers::Providers;
use crate::store::{OrgHandle, TranscriptWriter, Transcripts};

use events::EngineEvent;
pub use session::{TurnJob, TurnResult};

/// The key under which a single-session reflection runs: pass it to [`Engine::pause`],
/// [`Engine::resume`] and [`Engine::stop`] in place of a group id.
pub fn session_run_key(session_id: &str) -> String {
    format!("session:{session_id}")
}

/// Where events go: the TUI's channel or the headless printer.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<EngineEvent>,
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<EngineEvent>) -> EventSink {
        EventSink { tx }
    }

    /// A sink plus the receiving end.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<EngineEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink { tx }, rx)
    }

    pub fn emit(&self, event: EngineEvent) {
        // A consumer that went away (the UI quitting) must not stop the engine.
        let _ = self.tx.send(event);
    }
}

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Parallel worker turns per team.
    pub max_concurrency: usize,
    /// Wait before retrying an iteration that failed (SPEC: 2 s).
    pub error_backoff: Duration,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_concurrency: 8,
            error_backoff: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EngineError {
    #[error("no group `{0}`")]
    NoSuchGroup(String),
    #[error("no session `{0}`")]
    NoSuchSession(String),
    #[error("group `{0}` is already running; send messages to it instead (they are queued)")]
    AlreadyRunning(String),
    #[error("group `{group}` cannot run in {mode} mode: {reason}")]
    NotRunnable {
        group: String,
        mode: Mode,
        reason: String,
    },
    #[error("group `{0}` has no interrupted cycle to resume")]
    NothingToResume(String),
}

/// Per-run settings that do not change the group itself.
#[derive(Debug, Clone, Default)]
pub struct RunOverrides {
    pub mode: Option<Mode>,
    pub max_iterations: Option<u32>,
    /// A model slug used by every session of this run.
    pub model: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub outcome: CycleOutcome,
    pub iterations: u32,
    /// The final answer (synthesis, last sequential answer, or each broadcast answer labelled).
    pub final_text: String,
    pub summary: String,
    pub usage: Usage,
    pub duration: Duration,
    /// Some answer came from the offline simulator.
    pub simulated: bool,
    /// The run could not do its work (every session failed, the orchestrator failed): why.
    pub failed: Option<String>,
}

/// Controls of one running group: stop, pause, queued user messages.
pub(crate) struct RunControl {
    pub cancel: CancellationToken,
    pub paused: watch::Sender<bool>,
    pub queued: Mutex<Vec<String>>,
}

impl RunControl {
    fn new(shutdown: &CancellationToken) -> RunControl {
        RunControl {
            cancel: shutdown.child_token(),
            paused: watch::channel(false).0,
            queued: Mutex::new(Vec::new()),
        }
    }

    pub fn take_queued(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.queued))
    }

    pub fn peek_queued(&self) -> Vec<String> {
        lock(&self.queued).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) struct EngineShared {
    pub providers: Providers,
    pub org: OrgHandle,
    pub transcripts: Transcripts,
    pub writer: TranscriptWriter,
    pub events: EventSink,
    pub options: EngineOptions,
    actors: Mutex<HashMap<String, session::SessionQueue>>,
    runs: Mutex<HashMap<String, Arc<RunControl>>>,
    /// Cancelled by [`Engine::shutdown`]: every run and turn, present and future, stops.
    shutdown: CancellationToken,
}

/// The engine. Cheap to clone; every clone drives the same sessions.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<EngineShared>,
}

impl Engine {
    pub fn new(
        providers: Providers,
        org: OrgHandle,
        transcripts: Transcripts,
        events: EventSink,
        options: EngineOptions,
    ) -> Engine {
        Engine {
            shared: Arc::new(EngineShared {
                providers,
                org,
                writer: TranscriptWriter::new(transcripts.clone()),
                transcripts,
                events,
                options,
                actors: Mutex::new(HashMap::new()),
                runs: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    pub fn org(&self) -> &OrgHandle {
        &self.shared.org
    }

    /// Queues a turn for a session; the receiver gets its single result.
    pub fn turn(
        &self,
        session_id: &str,
        prompt: String,
        cancel: CancellationToken,
        model_override: Option<String>,
    ) -> oneshot::Receiver<TurnResult> {
        self.shared
            .submit(session_id, prompt, None, cancel, None, model_override)
    }

    /// A plain chat turn with one session.
    pub async fn ask(&self, session_id: &str, prompt: String, model_override: Option<String>) -> TurnResult {
        let rx = self.turn(
            session_id,
            prompt,
            self.shared.shutdown.child_token(),
            model_override,
        );
        rx.await
            .unwrap_or_else(|_| TurnResult::failed(session_id, "the session stopped".into(), None))
    }

    /// Runs a group's mode to its end (a reflect cycle may take many iterations).
    pub async fn run_group(
        &self,
        group_id: &str,
        prompt: String,
        overrides: RunOverrides,
    ) -> Result<RunReport, EngineError> {
        self.run_team(group_id, prompt, &overrides, false).await
    }

    /// Continues an interrupted reflect cycle from its last completed iteration.
    pub async fn resume_cycle(
        &self,
        group_id: &str,
        overrides: RunOverrides,
    ) -> Result<RunReport, EngineError> {
        let goal = self.shared.org.read(|o| {
            o.group(group_id)
                .and_then(|g| g.reflection.as_ref())
                .filter(|r| r.is_interrupted())
                .map(|r| r.goal.clone())
        });
        let Some(goal) = goal else {
            return Err(EngineError::NothingToResume(group_id.to_string()));
        };
        self.run_team(group_id, goal, &overrides, true).await
    }

    async fn run_team(
        &self,
        group_id: &str,
        prompt: String,
        overrides: &RunOverrides,
        resume: bool,
    ) -> Result<RunReport, EngineError> {
        let control = self.shared.begin_run(group_id)?;
        let result = team::run(&self.shared, &control, group_id, prompt, overrides, resume).await;
        self.shared.end_run(group_id, &control);
        result
    }

    /// One session improving its own answer until it says it is done (SPEC section 4).
    pub async fn reflect_session(
        &self,
        session_id: &str,
        goal: String,
        max_iterations: u32,
        evaluator_model: Option<String>,
        model_override: Option<String>,
    ) -> Result<RunReport, EngineError> {
        let group_id = self
            .shared
            .org
            .read(|o| o.session(session_id).map(|s| s.group_id.clone()))
            .ok_or_else(|| EngineError::NoSuchSession(session_id.to_string()))?;
        let key = session_run_key(session_id);
        let control = self.shared.begin_run(&key)?;
        let result = single::run(
            &self.shared,
            &control,
            &group_id,
            session_id,
            goal,
            max_iterations,
            evaluator_model,
            model_override,
        )
        .await;
        self.shared.end_run(&key, &control);
        result
    }

    pub fn is_running(&self, group_id: &str) -> bool {
        lock(&self.shared.runs).contains_key(group_id)
    }

    /// Pauses a running cycle after the step in flight. Returns false when nothing runs.
    pub fn pause(&self, group_id: &str) -> bool {
        self.with_run(group_id, |c| {
            c.paused.send_replace(true);
        })
    }

    pub fn resume(&self, group_id: &str) -> bool {
        self.with_run(group_id, |c| {
            c.paused.send_replace(false);
        })
    }

    /// Stops a run now: in-flight requests are cancelled, partial text is kept.
    pub fn stop(&self, group_id: &str) -> bool {
        self.with_run(group_id, |c| c.cancel.cancel())
    }

    pub fn stop_all(&self) {
        for control in lock(&self.shared.runs).values() {
            control.cancel.cancel();
        }
    }

    /// Stops everything for good (Ctrl-C in `huddle run`, quitting the TUI): running and
    /// queued turns are cancelled, and runs started afterwards end at once as cancelled.
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Queues a user message for the orchestrator's next planning step. Returns false when the
    /// group is not running (send it as a new prompt instead).
    pub fn queue_message(&self, group_id: &str, text: String) -> bool {
        let queued = self.with_run(group_id, |c| lock(&c.queued).push(text.clone()));
        if queued {
            self.shared.org.update(|o| {
                if let Some(r) = o.group_mut(group_id).and_then(|g| g.reflection.as_mut()) {
                    r.queued_messages.push(text);
                }
            });
        }
        queued
    }

    fn with_run(&self, group_id: &str, f: impl FnOnce(&RunControl)) -> bool {
        match lock(&self.shared.runs).get(group_id) {
            Some(control) => {
                f(control);
                true
            }
            None => false,
        }
    }

    /// Writes every queued transcript line and organization change to disk.
    pub fn flush(&self) -> Result<(), crate::store::StoreError> {
        self.shared.writer.flush();
        self.shared.org.flush()
    }
}

impl EngineShared {
    fn begin_run(&self, key: &str) -> Result<Arc<RunControl>, EngineError> {
        let mut runs = lock(&self.runs);
        if runs.contains_key(key) {
            return Err(EngineError::AlreadyRunning(key.to_string()));
        }
        let control = Arc::new(RunControl::new(&self.shutdown));
        runs.insert(key.to_string(), Arc::clone(&control));
        Ok(control)
    }

    /// Unregisters a run; messages queued too late for it wait for the group's next run.
    fn end_run(&self, key: &str, control: &RunControl) {
        lock(&self.runs).remove(key);
        let leftovers = control.take_queued();
        if !leftovers.is_empty() {
            self.org.update(|o| {
                if let Some(g) = o.group_mut(key) {
                    g.pending_messages.extend(leftovers);
                }
            });
        }
    }

    /// Queues a turn on the session's actor (started on first use).
    pub fn submit(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
        iteration: Option<u32>,
        cancel: CancellationToken,
        timeout: Option<Duration>,
        model_override: Option<String>,
    ) -> oneshot::Receiver<TurnResult> {
        let (reply, rx) = oneshot::channel();
        let job = TurnJob {
            prompt,
            iteration,
            cancel,
            timeout,
            model_override,
            reply,
        };
        let mut actors = lock(&self.actors);
        let queue = actors
            .entry(session_id.to_string())
            .or_insert_with(|| session::spawn(Arc::clone(self), session_id.to_string()));
        if let Err(mpsc::error::SendError(job)) = queue.send(job) {
            // The actor ended (it never should); start a fresh one and hand it the job.
            let fresh = session::spawn(Arc::clone(self), session_id.to_string());
            let _ = fresh.send(job);
            actors.insert(session_id.to_string(), fresh);
        }
        rx
    }

    /// Runs a turn and waits for it; a vanished actor becomes a failed result.
    pub async fn turn(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
        iteration: Option<u32>,
        cancel: CancellationToken,
        timeout: Option<Duration>,
        model_override: Option<String>,
    ) -> TurnResult {
        let rx = self.submit(session_id, prompt, iteration, cancel, timeout, model_override);
        rx.await
            .unwrap_or_else(|_| TurnResult::failed(session_id, "the session stopped".into(), None))
    }
}
