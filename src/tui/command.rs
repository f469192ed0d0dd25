//! What the app asks the outside world to do ([`Command`]) and what comes back
//! ([`AppEvent`]). The app does no I/O: organization edits go through the application layer
//! (`workspace::Edits`, quick in-memory changes saved in the background); the runtime executes
//! commands (engine calls, file work on a blocking thread) and feeds results back as events, so
//! tests can drive the app without a terminal or an engine.

use crate::engine::events::{EngineEvent, RunKey};
use crate::model::{GroupId, Preset, SessionId, Worktree, WorktreeStrategy};
use crate::presets::Catalog;
use crate::store::LoadedTranscript;
use crate::tools::Decision;
use crate::workspace::{AtRisk, ExportOutcome, LoadedRun, Removal, RemovalReport, WhichRun};
use crate::worktrees::{MergeMethod, MergeOutcome, MergePlan, SessionWorktree, WorktreeDiff, WorktreeError};

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Get the user's attention (bell / desktop notification), written by the event loop
    /// between frames.
    Notify(super::notify::Notification),
    /// A plain chat turn with one session.
    Chat {
        session_id: SessionId,
        prompt: String,
    },
    /// Run a team's mode with this prompt; queued for the orchestrator if the team is running
    /// by the time the command is carried out.
    RunGroup {
        group_id: GroupId,
        prompt: String,
    },
    /// Continue a team's interrupted run (any mode).
    ResumeCycle {
        group_id: GroupId,
    },
    /// Continue a session's interrupted reflection.
    ResumeReflection {
        session_id: SessionId,
    },
    /// A message for a running cycle's next planning step (a new run if it ended meanwhile).
    QueueMessage {
        group_id: GroupId,
        text: String,
    },
    /// A copy of a session under a new name (blocking: reads and writes its transcript);
    /// answered by [`AppEvent::Forked`].
    ForkSession {
        session_id: SessionId,
    },
    /// A note for a team member's next turn (`@member text` in the team's composer).
    NoteMember {
        session_id: SessionId,
        text: String,
    },
    /// Pause a run after the step in flight (confirmed by a `cycle_paused` event).
    Pause {
        key: RunKey,
    },
    Resume {
        key: RunKey,
    },
    /// Stop the runs under the key now (partial text is kept).
    Stop {
        key: RunKey,
    },
    /// Stop a session's chat turns (in flight and queued) and its reflection.
    StopSession {
        session_id: SessionId,
    },
    /// Read a transcript (on a blocking thread) and send it back as [`AppEvent::TranscriptLoaded`].
    LoadTranscript {
        session_id: SessionId,
    },
    /// Read a run file of the group and send it back as [`AppEvent::RunLoaded`].
    LoadRun {
        group_id: GroupId,
        which: WhichRun,
    },
    /// Work out the forecast of the team's next run from its earlier runs (and those of teams
    /// made from its preset) and send it back as [`AppEvent::ForecastLoaded`].
    LoadForecast {
        group_id: GroupId,
    },
    /// Read the preset catalog (built-in, user, repo).
    LoadCatalog,
    /// Look for a working directory's `AGENTS.md` files and skills (`repo_context::found`), for
    /// its sessions' header; answered by [`AppEvent::RepoFilesFound`].
    FindRepoFiles {
        working_dir: std::path::PathBuf,
    },
    /// Read the Agent Card of an `a2a` provider (by name), for the header of its sessions;
    /// answered by [`AppEvent::AgentCardRead`].
    ReadAgentCard {
        provider: String,
    },
    /// Work out which files saving the team as a preset would create or change, and send them
    /// back as [`AppEvent::ExportPlanned`] (to be confirmed).
    PlanExport {
        group_id: GroupId,
    },
    /// Write the team as a Squad folder and a user preset. Confirmed: existing files are
    /// replaced only if the user was shown them.
    ExportGroup {
        group_id: GroupId,
        confirmed: bool,
    },
    /// Delete the files of deleted sessions and groups (transcripts, run files, worktrees);
    /// when worktrees were among them, what became of them comes back as
    /// [`AppEvent::FilesRemoved`].
    RemoveFiles(Removal),
    /// Is the repository a git repository with a commit (`worktrees::repo_head`)? Answered by
    /// [`AppEvent::GitChecked`]; the new-team dialog offers worktree strategies only then.
    CheckGit,
    /// A team from a preset whose members work in git worktrees (`Edits::create_team_with`,
    /// blocking: `git worktree add` per worktree); answered by [`AppEvent::TeamCreated`].
    CreateTeam {
        preset: Box<Preset>,
        strategy: WorktreeStrategy,
    },
    /// The worktree statuses of a group's sessions (or every session's), for the sidebar;
    /// answered by [`AppEvent::WorktreeStatuses`].
    RefreshWorktrees {
        group_id: Option<GroupId>,
    },
    /// Each worktree against its base commit, for the diff view `request`; answered by
    /// [`AppEvent::DiffLoaded`].
    LoadDiff {
        request: u64,
        worktrees: Vec<Worktree>,
    },
    /// What merging the worktree's branch would bring (`worktrees::merge_plan`); answered by
    /// [`AppEvent::MergePlanned`].
    PlanMerge {
        worktree: Worktree,
    },
    /// Merge or cherry-pick exactly what the confirmed plan listed; answered by
    /// [`AppEvent::Merged`].
    Merge {
        plan: Box<MergePlan>,
        method: MergeMethod,
    },
    /// Which of the group's worktrees hold work deleting it would lose
    /// (`Edits::worktrees_at_risk`); answered by [`AppEvent::DeleteRiskChecked`].
    CheckDeleteRisk {
        group_id: GroupId,
    },
    /// Put text on the clipboard through the terminal (OSC 52).
    CopyToClipboard {
        text: String,
    },
    /// Mouse capture on (huddle gets clicks and the wheel) or off (the terminal selects text).
    SetMouseCapture(bool),
    /// The user's answer to a tool call waiting for approval (`Engine::answer_approval`).
    AnswerApproval {
        approval_id: u64,
        decision: Decision,
    },
    /// The user's answer to a relay waiting on them (`Engine::answer_relay`).
    AnswerRelay {
        group_id: GroupId,
        answer: crate::model::DraftAnswer,
    },
    /// One session improving its own answer, in the background.
    ReflectSession {
        session_id: SessionId,
        goal: String,
        max_iterations: u32,
    },
    /// Edit text in `$VISUAL` / `$EDITOR`, the TUI suspended meanwhile (carried out by the event
    /// loop, which owns the terminal); answered by [`AppEvent::Edited`].
    OpenEditor {
        target: EditorTarget,
        text: String,
    },
    /// The repository's files, for `@` completion; answered by [`AppEvent::RepoFiles`].
    ListRepoFiles,
    /// Read a file named with `@` in the composer (or `@diff`); answered by
    /// [`AppEvent::AttachmentRead`].
    ReadAttachment {
        name: String,
    },
    /// A `Chat` or `RunGroup` with files attached (the content to the model, path and hash to
    /// the transcript).
    Attached {
        attachments: Vec<crate::attachments::Attachment>,
        send: Box<Command>,
    },
    /// Read the drafts and prompt history saved by earlier runs; answered by
    /// [`AppEvent::InputsLoaded`].
    LoadInputs,
    /// Write the composer's drafts (`drafts.json`) and prompt history (`history.jsonl`) in the
    /// background, debounced; the newest snapshot wins.
    SaveInputs {
        drafts: Option<std::collections::BTreeMap<String, String>>,
        history: Option<Vec<String>>,
    },
    Quit,
}

/// Presets' forecasts by `<tier>:<name>` (see [`crate::presets::instantiate::source_preset_of`]).
pub type PresetForecasts = std::collections::HashMap<
    String,
    (
        Option<crate::model::forecast::Forecast>,
        crate::model::forecast::Basis,
    ),
>;

/// Whose text `$EDITOR` edits.
#[derive(Debug, Clone, PartialEq)]
pub enum EditorTarget {
    Composer,
    /// The text dialog open for this purpose (the system prompt editor).
    Dialog(crate::tui::dialogs::TextPurpose),
}

/// What the UI is told once its link reaches a host again.
#[derive(Debug)]
pub struct Reconnected {
    /// The host's.
    pub pid: u32,
    /// Another host than before: the one before went (its runs are interrupted).
    pub new_host: bool,
    /// The host had cut this TUI off, saying why.
    pub cut_off: Option<String>,
    /// The runs going now (their events come again from their start).
    pub live: Vec<crate::engine::events::RunKey>,
}

/// Results and events delivered to the UI task.
#[derive(Debug)]
pub enum AppEvent {
    Engine(EngineEvent),
    /// The host's organization changed (a TUI front end's copy took it).
    OrgChanged,
    TranscriptLoaded {
        session_id: SessionId,
        result: Result<LoadedTranscript, String>,
    },
    /// A run file of the group (`Ok(None)`: the group has no runs on disk).
    RunLoaded {
        group_id: GroupId,
        result: Result<Option<LoadedRun>, String>,
    },
    /// What the team's next run will probably cost (`None`: no earlier run to go by).
    ForecastLoaded {
        group_id: GroupId,
        forecast: Option<crate::model::forecast::Forecast>,
        basis: crate::model::forecast::Basis,
    },
    CatalogLoaded(Box<Catalog>),
    /// Each preset's forecast (by `<tier>:<name>`) from the earlier runs of teams made from it.
    PresetForecasts(PresetForecasts),
    /// The host of a TUI front end went away (its connection closed) and none could be reached
    /// again yet (why); the link goes on trying.
    HostLost {
        why: String,
    },
    /// The link reached a host again (after it cut this TUI off, or a new one after the host
    /// went): the UI sets its runs aside, then answers, and the runs going come again.
    Reconnected(Reconnected, tokio::sync::oneshot::Sender<()>),
    /// A command the engine refused to start (e.g. the session was deleted meanwhile).
    Refused {
        title: String,
        error: String,
    },
    Exported {
        group_id: GroupId,
        result: Result<String, ExportOutcome>,
    },
    /// The files a save as preset would touch: (path, exists already), or why it cannot.
    ExportPlanned {
        group_id: GroupId,
        result: Result<Vec<(String, bool)>, String>,
    },
    /// Whether the repository can have worktrees (`Err`: why not, e.g. not a git repository).
    GitChecked(Result<(), String>),
    /// A team with worktrees was made (or nothing was: why).
    TeamCreated {
        preset: String,
        warnings: Vec<String>,
        result: Result<GroupId, String>,
    },
    /// Worktree statuses of a group's sessions (`None`: of every session).
    WorktreeStatuses {
        group_id: Option<GroupId>,
        statuses: Vec<SessionWorktree>,
    },
    /// Time to look at the selected team's worktrees again (sent every few seconds).
    WorktreeTick,
    /// The diffs of a diff view's worktrees, in the order asked.
    DiffLoaded {
        request: u64,
        diffs: Vec<Result<WorktreeDiff, String>>,
    },
    MergePlanned {
        result: Result<MergePlan, String>,
    },
    Merged {
        branch: String,
        result: Result<MergeOutcome, WorktreeError>,
    },
    DeleteRiskChecked {
        group_id: GroupId,
        at_risk: Vec<AtRisk>,
    },
    /// What removing a deletion's worktrees did (removed, kept with work, failed).
    FilesRemoved(RemovalReport),
    /// The text back from `$EDITOR`, or why not (the text shown before is kept then).
    Edited {
        target: EditorTarget,
        result: Result<String, String>,
    },
    /// The repository's files (for `@` completion).
    RepoFiles(Vec<String>),
    /// A working directory's instruction files and skills, as found now.
    RepoFilesFound {
        working_dir: std::path::PathBuf,
        found: crate::repo_context::Found,
    },
    /// An `a2a` provider's card in the header's words ([`crate::providers::a2a::card_header`]),
    /// or why it could not be read.
    AgentCardRead {
        provider: String,
        card: Result<String, String>,
    },
    /// A file named with `@` was read (or why it cannot be attached).
    AttachmentRead {
        name: String,
        result: Result<crate::attachments::Attachment, String>,
    },
    /// The drafts and prompt history saved by earlier runs (read at start).
    InputsLoaded(crate::store::Inputs),
    /// A fork was made (its id) or why not.
    Forked {
        result: Result<SessionId, String>,
    },
}

impl Command {
    /// The key of the run this command starts (or queues into), if it starts one.
    pub fn starts_run(&self) -> Option<crate::engine::events::RunKey> {
        use crate::engine::events::RunKey;
        match self {
            Command::Chat { session_id, .. } => Some(RunKey::chat(session_id.as_str())),
            Command::RunGroup { group_id, .. }
            | Command::QueueMessage { group_id, .. }
            | Command::ResumeCycle { group_id } => Some(RunKey::team(group_id.as_str())),
            Command::ResumeReflection { session_id } | Command::ReflectSession { session_id, .. } => {
                Some(RunKey::reflection(session_id.as_str()))
            }
            Command::Attached { send, .. } => send.starts_run(),
            _ => None,
        }
    }
}
