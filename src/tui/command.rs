//! What the app asks the outside world to do ([`Command`]) and what comes back
//! ([`AppEvent`]). The app itself does no I/O beyond quick `OrgHandle` updates; the runtime
//! executes commands (engine calls, file loads on a blocking thread) and feeds results back as
//! events, so tests can drive the app without a terminal or an engine.

use crate::engine::RunReport;
use crate::engine::events::EngineEvent;
use crate::model::{GroupId, SessionId};
use crate::presets::Catalog;
use crate::store::LoadedTranscript;

pub use crate::engine::session_run_key as reflection_run_key;

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A plain chat turn with one session.
    Chat {
        session_id: SessionId,
        prompt: String,
    },
    /// Run a team's mode with this prompt (a task in the background).
    RunGroup {
        group_id: GroupId,
        prompt: String,
    },
    /// Continue an interrupted reflect cycle.
    ResumeCycle {
        group_id: GroupId,
    },
    /// A message for a running cycle's next planning step.
    QueueMessage {
        group_id: GroupId,
        text: String,
    },
    Pause {
        group_id: GroupId,
    },
    Resume {
        group_id: GroupId,
    },
    Stop {
        group_id: GroupId,
    },
    /// Cancel the plain chat turns of a session (in flight and queued) now.
    StopChat {
        session_id: SessionId,
    },
    /// Read a transcript (on a blocking thread) and send it back as [`AppEvent::TranscriptLoaded`].
    LoadTranscript {
        session_id: SessionId,
    },
    /// Read the preset catalog (built-in, user, repo).
    LoadCatalog,
    /// Work out which files saving the team as a preset would create or change, and send them
    /// back as [`AppEvent::ExportPlanned`] (to be confirmed).
    PlanExport {
        group_id: GroupId,
    },
    /// Write the team as a Squad folder and a user preset. With `force`, existing files are
    /// replaced only if the user was shown them (the last plan, or the files a refused export
    /// named); any other file that would change makes the export refuse and name it.
    ExportGroup {
        group_id: GroupId,
        force: bool,
    },
    /// Delete the transcript files of removed sessions.
    RemoveTranscripts {
        session_ids: Vec<SessionId>,
    },
    /// Put text on the clipboard through the terminal (OSC 52).
    CopyToClipboard {
        text: String,
    },
    /// Mouse capture on (huddle gets clicks and the wheel) or off (the terminal selects text).
    SetMouseCapture(bool),
    /// One session improving its own answer (`Engine::reflect_session`), in the background.
    ReflectSession {
        session_id: SessionId,
        goal: String,
        max_iterations: u32,
    },
    PauseReflection {
        session_id: SessionId,
    },
    ResumeReflection {
        session_id: SessionId,
    },
    StopReflection {
        session_id: SessionId,
    },
    Quit,
}

/// Results and events delivered to the UI task.
#[derive(Debug)]
pub enum AppEvent {
    Engine(EngineEvent),
    TranscriptLoaded {
        session_id: SessionId,
        result: Result<LoadedTranscript, String>,
    },
    CatalogLoaded(Box<Catalog>),
    /// A run (team mode, resumed cycle, or chat turn) ended.
    RunEnded {
        group_id: GroupId,
        result: Result<Box<RunReport>, String>,
    },
    ChatEnded {
        session_id: SessionId,
        error: Option<String>,
    },
    /// A single-session reflection ended.
    ReflectionEnded {
        session_id: SessionId,
        result: Result<Box<RunReport>, String>,
    },
    Exported(Result<String, ExportOutcome>),
    /// The files a save as preset would touch: (path, exists already), or why it cannot.
    ExportPlanned {
        group_id: GroupId,
        result: Result<Vec<(String, bool)>, String>,
    },
}

/// Why an export did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportOutcome {
    /// These files exist with different content: ask before replacing them.
    WouldOverwrite {
        group_id: GroupId,
        files: Vec<String>,
    },
    Failed(String),
}
