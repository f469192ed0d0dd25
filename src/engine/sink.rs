//! Where events go: the front end's channel, and the run log for everything but streaming.
//!
//! Events emitted while the engine's own futures are polled ([`batched`]) are handed to the
//! front end's channel together when the poll ends, in the order they were emitted: a front
//! end waiting on another thread is then woken once per step of a run, not once per event (a
//! wake-up across threads costs more than the work that makes the event). Their run-log lines
//! go to the run log's writer together too.

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use std::collections::HashMap;

use crate::model::{GroupId, SessionId};
use crate::store::{RunLine, RunLog, RunOwner};

use super::events::{EngineEvent, EventKind, RunId, RunKey, RunRecord, SharedStr};

/// Sees every event of a run but the streamed text pieces as it is emitted (what the run log
/// gets, and each turn's start), e.g. to export it as telemetry. `observe` runs on the emitting task: it must return at once
/// (hand the event on, never wait).
pub trait RunObserver: Send + Sync {
    fn observe(&self, event: &EngineEvent);
    /// Hands on what was observed so far (a bounded wait), when the engine flushes.
    fn flush(&self) {}
}

/// The front end's receiving end plus, when set, the run log that persists each run's timeline.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<EngineEvent>,
    log: Option<Arc<RunLog<RunRecord>>>,
    observer: Option<Arc<dyn RunObserver>>,
    watchers: Arc<Watchers>,
    chats: Arc<ChatRuns>,
}

/// The chats going on (run id → session): a direct chat's run file is its session's, not its
/// group's (a team member's chats are never the team's runs; see [`RunOwner`]).
#[derive(Default)]
struct ChatRuns {
    /// How many are going, read without the lock: a team run's events (with no chat going)
    /// cost one atomic load.
    count: AtomicUsize,
    list: Mutex<HashMap<RunId, SessionId>>,
}

impl ChatRuns {
    /// Whose run file the event of `run_id` goes to, following chats from their
    /// `run_started` to their `run_ended`.
    fn owner(&self, event: &EngineEvent, run_id: &str) -> RunOwner {
        let chat = match &event.kind {
            EventKind::RunStarted {
                key: RunKey::Chat { session_id },
            } => {
                let mut list = self
                    .list
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                list.insert(run_id.to_string(), session_id.clone());
                self.count.store(list.len(), Ordering::Release);
                Some(session_id.clone())
            }
            EventKind::RunEnded {
                key: RunKey::Chat { session_id },
                ..
            } => {
                let mut list = self
                    .list
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                list.remove(run_id);
                self.count.store(list.len(), Ordering::Release);
                Some(session_id.clone())
            }
            _ if self.count.load(Ordering::Acquire) == 0 => None,
            _ => self
                .list
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(run_id)
                .cloned(),
        };
        match chat {
            Some(session_id) => RunOwner::Session(session_id),
            None => RunOwner::Group(event.group_id.to_string()),
        }
    }
}

/// Second consumers of some groups' events besides the front end: a `huddle run` whose run the
/// host drives streams them to its own terminal.
#[derive(Default)]
struct Watchers {
    /// How many are registered, read without the lock: no watcher (the usual case) costs one
    /// atomic load per event.
    count: AtomicUsize,
    list: Mutex<Vec<(Vec<GroupId>, mpsc::UnboundedSender<EngineEvent>)>>,
}

impl Watchers {
    /// True when a watcher may want `event` (there are watchers; not a streamed piece).
    fn watched(&self, event: &EngineEvent) -> bool {
        self.count.load(Ordering::Acquire) > 0 && !matches!(event.kind, EventKind::Delta { .. })
    }

    /// Hands `event` to the watchers of its group. Not the streamed text pieces (`delta`):
    /// a watcher prints lines, and pieces are most of a run's events (a copy of each, queued
    /// for a watcher that is a step behind, held a long run's memory).
    fn deliver(&self, event: &EngineEvent) {
        if !self.watched(event) {
            return;
        }
        let mut list = self
            .list
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A watcher that went away is dropped here.
        list.retain(|(group_ids, tx)| {
            if group_ids.iter().any(|g| **g == *event.group_id) {
                tx.send(event.clone()).is_ok()
            } else {
                !tx.is_closed()
            }
        });
        self.count.store(list.len(), Ordering::Release);
    }

    fn add(&self, group_ids: Vec<GroupId>) -> mpsc::UnboundedReceiver<EngineEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut list = self
            .list
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        list.retain(|(_, tx)| !tx.is_closed());
        list.push((group_ids, tx));
        self.count.store(list.len(), Ordering::Release);
        rx
    }
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<EngineEvent>) -> EventSink {
        EventSink {
            tx,
            log: None,
            observer: None,
            watchers: Arc::default(),
            chats: Arc::default(),
        }
    }

    /// A sink plus the receiving end.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<EngineEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink::new(tx), rx)
    }

    /// Also appends every non-streaming event of a run to its run file.
    pub fn with_run_log(mut self, log: RunLog<RunRecord>) -> EventSink {
        self.log = Some(Arc::new(log));
        self
    }

    /// Also shows every run event but the streamed text pieces to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn RunObserver>) -> EventSink {
        self.observer = Some(observer);
        self
    }

    /// Every event of one group from now on but the streamed text pieces, until the receiver
    /// is dropped (in emission order).
    pub fn watch(&self, group_id: &str) -> mpsc::UnboundedReceiver<EngineEvent> {
        self.watchers.add(vec![group_id.to_string()])
    }

    /// [`EventSink::watch`] for several groups at once (in one order across them).
    pub fn watch_groups(&self, group_ids: Vec<GroupId>) -> mpsc::UnboundedReceiver<EngineEvent> {
        self.watchers.add(group_ids)
    }

    /// True for clones of one sink (the same channel and run log).
    fn same(&self, other: &EventSink) -> bool {
        let same_log = match (&self.log, &other.log) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        same_log && self.tx.same_channel(&other.tx)
    }

    pub fn emit(&self, event: EngineEvent) {
        self.send(event, true);
    }

    /// Writes a run's event to its run file (and shows it to the observer) without handing it to
    /// the front end or the watchers: what they were shown before the run had an id (a team's
    /// `worktree_created` hooks), kept with the run it came before.
    pub fn record(&self, event: EngineEvent) {
        self.send(event, false);
    }

    /// `live`: also to the front end's channel and the watchers.
    fn send(&self, event: EngineEvent, live: bool) {
        if let Some(observer) = &self.observer
            && event.run_id.is_some()
            && !matches!(event.kind, EventKind::Delta { .. })
        {
            observer.observe(&event);
        }
        let line = match (&self.log, &event.run_id) {
            (Some(_), Some(run_id)) if !event.kind.is_streaming() => Some((
                self.chats.owner(&event, run_id),
                run_id.to_string(),
                RunRecord::now(event.for_log()),
            )),
            _ => None,
        };
        // A run that ends has its file closed after its last line.
        let ended = match (&line, &event.kind) {
            (Some((owner, run_id, _)), EventKind::RunEnded { .. }) => Some((owner.clone(), run_id.clone())),
            _ => None,
        };
        let mut held_back = Some((event, line));
        // (No thread-local any more: the thread is ending, send at once.)
        let _ = HELD.try_with(|held| {
            let mut held = held.borrow_mut();
            if held.depth == 0 {
                return;
            }
            if !held.sink.as_ref().is_some_and(|sink| sink.same(self)) {
                // Another engine's events are held: they go first, in order.
                held.hand_over();
                held.sink = Some(self.clone());
            }
            if let Some((event, line)) = held_back.take() {
                if live {
                    if self.watchers.watched(&event) {
                        held.watched.push(event.clone());
                    }
                    held.events.push(event);
                }
                held.lines.extend(line);
                held.ended.extend(ended.clone());
            }
        });
        if let Some((event, line)) = held_back {
            if let (Some(log), Some(line)) = (&self.log, line) {
                log.append_all(vec![line]);
                if let Some((owner, run_id)) = &ended {
                    log.end_of(owner, run_id);
                }
            }
            // A consumer that went away (the UI quitting) must not stop the engine. Watchers
            // hear of it once its run-log line is queued (one waiting for the run's file to
            // have its end then finds it: `EventSink::written`).
            if live {
                self.watchers.deliver(&event);
                let _ = self.tx.send(event);
            }
        }
    }

    /// Ends once every run-log line queued so far is in its file (see [`RunLog::written`]).
    pub fn written(&self) -> impl Future<Output = ()> + use<> {
        let log = self.log.clone();
        async move {
            if let Some(log) = log {
                log.written().await;
            }
        }
    }

    /// Writes every queued run-log line to disk.
    pub fn flush(&self) {
        if let Some(log) = &self.log {
            log.flush();
        }
        if let Some(observer) = &self.observer {
            observer.flush();
        }
    }
}

/// Builds the envelope of one group's (and run's) events.
#[derive(Clone)]
pub(crate) struct Emitter {
    pub sink: EventSink,
    pub group_id: SharedStr,
    pub group: SharedStr,
    pub run_id: Option<SharedStr>,
}

impl Emitter {
    pub fn emit(&self, kind: EventKind) {
        self.emit_in(None, kind);
    }

    /// An event of the run written to its file only (see [`EventSink::record`]).
    pub fn record(&self, kind: EventKind) {
        self.sink.record(EngineEvent {
            group_id: self.group_id.clone(),
            group: self.group.clone(),
            run_id: self.run_id.clone(),
            execution: None,
            kind,
        });
    }

    /// An event of one execution of the run.
    pub fn emit_in(&self, execution: Option<super::events::ExecutionTag>, kind: EventKind) {
        self.sink.emit(EngineEvent {
            group_id: self.group_id.clone(),
            group: self.group.clone(),
            run_id: self.run_id.clone(),
            execution,
            kind,
        });
    }
}

/// Events emitted on this thread during a poll of [`batched`] futures, not yet handed over.
struct Held {
    /// Nested polls under way.
    depth: usize,
    /// Where the held events go.
    sink: Option<EventSink>,
    events: Vec<EngineEvent>,
    /// Copies of the events for the watchers, when there are any.
    watched: Vec<EngineEvent>,
    lines: Vec<RunLine<RunRecord>>,
    /// Runs that ended among the held lines (owner, run): their files are closed after them.
    ended: Vec<(RunOwner, RunId)>,
}

impl Held {
    fn hand_over(&mut self) {
        let Some(sink) = &self.sink else { return };
        if let Some(log) = &sink.log {
            log.append_all(std::mem::take(&mut self.lines));
            for (owner, run_id) in self.ended.drain(..) {
                log.end_of(&owner, &run_id);
            }
        }
        self.ended.clear();
        for event in self.watched.drain(..) {
            sink.watchers.deliver(&event);
        }
        for event in self.events.drain(..) {
            // A consumer that went away (the UI quitting) must not stop the engine.
            let _ = sink.tx.send(event);
        }
    }
}

thread_local! {
    static HELD: RefCell<Held> = const {
        RefCell::new(Held {
            depth: 0,
            sink: None,
            events: Vec::new(),
            watched: Vec::new(),
            lines: Vec::new(),
            ended: Vec::new(),
        })
    };
}

/// One poll's hold on this thread's events: the outermost hands them over when it ends (also
/// when the poll panics).
struct Hold;

impl Hold {
    fn new() -> Hold {
        HELD.with(|held| held.borrow_mut().depth += 1);
        Hold
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            held.depth -= 1;
            if held.depth == 0 {
                held.hand_over();
                // Not kept past the poll: a sink (and its channel) may be dropped meanwhile.
                held.sink = None;
            }
        });
    }
}

/// Runs an engine future whose events are handed over at the end of each of its polls (see
/// the module's doc): still in order and before the future yields, so nothing waits on them.
/// The run's state lives on the heap: a whole mode's future is large, and whoever awaits it
/// (a test's thread, a front end's task) keeps only a pointer on its stack.
/// (Boxed when called, not at the first poll: an `async fn` would hold `future` itself until
/// then, and be as large.)
pub(crate) fn batched<F: Future>(future: F) -> impl Future<Output = F::Output> {
    let mut future = Box::pin(future);
    std::future::poll_fn(move |cx| {
        let _hold = Hold::new();
        future.as_mut().poll(cx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(iteration: u32) -> EngineEvent {
        EngineEvent {
            group_id: "g".into(),
            group: "team".into(),
            run_id: Some("r".into()),
            execution: None,
            kind: EventKind::IterationStarted {
                iteration,
                max_iterations: 0,
            },
        }
    }

    fn iterations(rx: &mut mpsc::UnboundedReceiver<EngineEvent>) -> Vec<u32> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| match e.kind {
                EventKind::IterationStarted { iteration, .. } => iteration,
                _ => 0,
            })
            .collect()
    }

    /// A watcher (a `huddle run` the host drives) is a step behind the engine: a copy of
    /// every streamed piece queued for it held a 6,000-message run's memory (issue 28 item 6).
    #[test]
    fn a_watcher_gets_every_event_but_the_streamed_pieces() {
        let (sink, mut rx) = EventSink::channel();
        let mut watcher = sink.watch("g");
        let delta = EngineEvent {
            kind: EventKind::Delta {
                session_id: "s".into(),
                session: "w".into(),
                generation: 1,
                text: "a piece".into(),
            },
            ..event(0)
        };
        sink.emit(event(1));
        for _ in 0..3 {
            sink.emit(delta.clone());
        }
        sink.emit(event(2));
        assert_eq!(iterations(&mut watcher), [1, 2]);
        // The front end's channel (a TUI shows the pieces) gets them all.
        assert_eq!(iterations(&mut rx), [1, 0, 0, 0, 2]);
    }

    #[tokio::test]
    async fn events_of_a_poll_are_handed_over_in_order_when_it_ends() {
        let (sink, rx) = EventSink::channel();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let (other, mut other_rx) = EventSink::channel();
        let (tx, wait) = tokio::sync::oneshot::channel::<()>();
        let probe = std::sync::Arc::clone(&rx);
        let task = tokio::spawn(batched(async move {
            sink.emit(event(1));
            sink.emit(event(2));
            assert!(probe.lock().unwrap().is_empty(), "held while the poll runs");
            // Another engine's event: what was held goes first.
            other.emit(event(10));
            assert_eq!(probe.lock().unwrap().len(), 2);
            sink.emit(event(3));
            // Yields here: what was emitted so far is handed over first.
            let _ = wait.await;
            sink.emit(event(4));
            // Nested: handed over by the outermost poll only.
            batched(async { sink.emit(event(5)) }).await;
        }));
        while rx.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(iterations(&mut rx.lock().unwrap()), [1, 2, 3]);
        assert_eq!(iterations(&mut other_rx), [10]);
        tx.send(()).unwrap();
        task.await.unwrap();
        assert_eq!(iterations(&mut rx.lock().unwrap()), [4, 5]);
        // Outside a batched future an event goes out at once.
        let (sink, mut rx) = EventSink::channel();
        sink.emit(event(7));
        assert_eq!(iterations(&mut rx), [7]);
    }

    #[tokio::test]
    async fn held_events_reach_the_run_log_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::store::RunFiles::new(dir.path());
        let log = RunLog::start(files.clone(), 10);
        let (sink, mut rx) = EventSink::channel();
        let sink = sink.with_run_log(log.clone());
        batched(async {
            for k in 1..=3 {
                sink.emit(event(k));
            }
        })
        .await;
        sink.emit(event(4));
        log.flush();
        let lines = files.read_lines("g", "r").unwrap();
        let logged: Vec<u32> = lines
            .iter()
            .map(|l| serde_json::from_str::<RunRecord>(l).unwrap())
            .map(|r| match r.event.kind {
                EventKind::IterationStarted { iteration, .. } => iteration,
                _ => 0,
            })
            .collect();
        assert_eq!(logged, [1, 2, 3, 4]);
        assert_eq!(iterations(&mut rx), [1, 2, 3, 4]);
    }

    /// A watcher (`huddle run` printing a run's end) hears of an event only once its run-log
    /// line is queued, so waiting for the run log then finds the line in the file (the watcher
    /// may read on another thread while the poll that emitted it still runs).
    #[tokio::test(flavor = "current_thread")]
    async fn a_watcher_hears_of_an_event_once_its_line_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::store::RunFiles::new(dir.path());
        let (sink, _rx) = EventSink::channel();
        let sink = sink.with_run_log(RunLog::start(files.clone(), 10));
        let mut watcher = sink.watch("g");
        batched(async {
            sink.emit(event(1));
            assert!(watcher.try_recv().is_err(), "held with its line");
        })
        .await;
        assert_eq!(iterations(&mut watcher), [1]);
        sink.written().await;
        assert_eq!(files.read_lines("g", "r").unwrap().len(), 1);
        // Outside a poll: the line is queued before the watcher hears.
        sink.emit(event(2));
        assert_eq!(iterations(&mut watcher), [2]);
        sink.written().await;
        assert_eq!(files.read_lines("g", "r").unwrap().len(), 2);
    }
}
