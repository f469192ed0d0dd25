//! Where events go: the front end's channel, and the run log for everything but streaming.

use tokio::sync::mpsc;

use crate::model::GroupId;
use crate::store::RunLog;

use super::events::{EngineEvent, EventKind, RunId, RunRecord};

/// The front end's receiving end plus, when set, the run log that persists each run's timeline.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<EngineEvent>,
    log: Option<RunLog<RunRecord>>,
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<EngineEvent>) -> EventSink {
        EventSink { tx, log: None }
    }

    /// A sink plus the receiving end.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<EngineEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink::new(tx), rx)
    }

    /// Also appends every non-streaming event of a run to its run file.
    pub fn with_run_log(mut self, log: RunLog<RunRecord>) -> EventSink {
        self.log = Some(log);
        self
    }

    pub fn emit(&self, event: EngineEvent) {
        if let (Some(log), Some(run_id)) = (&self.log, &event.run_id)
            && !event.kind.is_streaming()
        {
            log.append(&event.group_id, run_id, RunRecord::now(event.clone()));
        }
        // A consumer that went away (the UI quitting) must not stop the engine.
        let _ = self.tx.send(event);
    }

    /// Writes every queued run-log line to disk.
    pub fn flush(&self) {
        if let Some(log) = &self.log {
            log.flush();
        }
    }
}

/// Builds the envelope of one group's (and run's) events.
#[derive(Clone)]
pub(crate) struct Emitter {
    pub sink: EventSink,
    pub group_id: GroupId,
    pub group: String,
    pub run_id: Option<RunId>,
}

impl Emitter {
    pub fn emit(&self, kind: EventKind) {
        self.sink.emit(EngineEvent {
            group_id: self.group_id.clone(),
            group: self.group.clone(),
            run_id: self.run_id.clone(),
            kind,
        });
    }
}
