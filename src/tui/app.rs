//! The UI state, owned by the UI task alone. Keys become [`Action`]s, actions change state and
//! produce [`Command`]s for the runtime; engine events and command results come back through
//! [`App::handle_app_event`]. The organization is read through a read-only view and changed only
//! through the application layer ([`Edits`]). No terminal and no engine here, so tests drive it
//! directly.

use std::path::PathBuf;

use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent};

use super::action::{Action, Context};
use super::command::Command;
use super::composer::Composer;
use super::cycle_view::CycleView;
use super::dialogs::{ConfirmAction, Dialog, DialogStack, Routed};
use super::keymap::Keymap;
use super::layout::{FrameLayout, Pane};
use super::mouse::{MouseTarget, WHEEL_LINES};
use super::runs::{Pending, Runs};
use super::sidebar::{Row, Sidebar, rows_of};
use super::team_panel::{Browse, TeamPanel};
use super::transcript_pane::{Edge, TranscriptPane};
use super::worktree_marks::WorktreeMarks;
use crate::config::Config;
use crate::engine::events::RunKey;
use crate::model::{GroupId, SessionId};
use crate::presets::Catalog;
use crate::store::OrgView;
use crate::workspace::{Edits, WhichRun};

/// Which pane gets keys that are not global.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Sidebar,
    Transcript,
    Composer,
}

pub struct App {
    /// The organization, read-only: every change goes through `edits`.
    pub org: OrgView,
    pub edits: Edits,
    pub config: Config,
    pub repo: PathBuf,
    pub keymap: Keymap,
    pub focus: Focus,
    pub sidebar: Sidebar,
    pub transcripts: TranscriptPane,
    pub team_panel: TeamPanel,
    /// Every run in progress (chats, team runs, reflections), from the engine's events.
    pub runs: Runs,
    pub composer: Composer,
    pub dialogs: DialogStack,
    pub catalog: Option<Catalog>,
    /// A one-line message in the status line until the next key.
    pub flash: Option<(String, bool)>,
    /// The state a flash reports ("pausing…", "stopping", "queued…"): it goes when that ends.
    flash_tie: Option<FlashTie>,
    pub should_quit: bool,
    /// Advanced by the runtime on each frame while something is busy (spinner phase).
    pub tick: usize,
    /// Where each pane was drawn in the last frame (set by the draw): mouse hit-tests, paging
    /// and search scroll use it.
    pub layout: FrameLayout,
    /// False while the mouse is left to the terminal (its own text selection works).
    pub mouse_capture: bool,
    /// Worktree statuses for the sidebar, refreshes in flight, whether git can be used.
    pub worktrees: WorktreeMarks,
    /// The trace view of a team's run, while open (drawn over the centre; takes the keys).
    pub trace_view: Option<super::trace_view::TraceView>,
}

impl App {
    /// A new app over `org`. `notices` are shown as error popups first (lost data, bad config);
    /// interrupted cycles are offered for resumption.
    pub fn new(edits: Edits, config: Config, repo: PathBuf, notices: Vec<String>) -> (App, Vec<Command>) {
        let (keymap, key_errors) = Keymap::with_overrides(&config.keys);
        let org = edits.view();
        let mut app = App {
            team_panel: org.read(TeamPanel::from_org),
            org,
            edits,
            config,
            repo,
            keymap,
            focus: Focus::Sidebar,
            sidebar: Sidebar::default(),
            transcripts: TranscriptPane::default(),
            runs: Runs::default(),
            composer: Composer::default(),
            dialogs: DialogStack::default(),
            catalog: None,
            flash: None,
            flash_tie: None,
            should_quit: false,
            tick: 0,
            layout: FrameLayout::default(),
            mouse_capture: true,
            worktrees: WorktreeMarks::default(),
            trace_view: None,
        };
        let interrupted: Vec<(GroupId, String, u32, u32)> = app.org.read(|o| {
            o.groups
                .iter()
                .filter_map(|g| {
                    let r = g
                        .state
                        .orchestrator_reflect
                        .as_ref()
                        .filter(|r| r.is_interrupted())?;
                    Some((
                        g.id.clone(),
                        g.name.clone(),
                        r.completed_iterations,
                        r.max_iterations,
                    ))
                })
                .collect()
        });
        for (id, name, done, max) in interrupted {
            app.dialogs.confirm(
                "Interrupted cycle",
                format!(
                    "The cycle of `{name}` was interrupted after iteration {done}/{max}.\nResume it now? (Later: select the team and press the pause key.)"
                ),
                ConfirmAction::ResumeCycle(id),
            );
        }
        for e in key_errors {
            app.dialogs.error("Key configuration", e.to_string());
        }
        for n in notices {
            app.dialogs.error("Data", n);
        }
        // Restore the last selection.
        app.org.read(|o| app.sidebar.restore(o));
        let mut commands = vec![Command::LoadCatalog, Command::LoadInputs, Command::ListRepoFiles];
        commands.extend(app.worktree_startup());
        commands.extend(app.on_selection_changed());
        app.refresh_placeholder();
        (app, commands)
    }

    /// The sidebar tree: each group (by sort order, the default group first), then its sessions
    /// unless the group is folded.
    pub fn rows(&self) -> Vec<Row> {
        self.org.read(rows_of)
    }

    pub fn selected_row(&self) -> Option<Row> {
        self.org.read(|o| self.sidebar.selected_row(o))
    }

    /// The group of the selected row.
    pub fn selected_group_id(&self) -> Option<GroupId> {
        self.org.read(|o| self.sidebar.selected_group_id(o))
    }

    pub fn selected_session_id(&self) -> Option<SessionId> {
        self.org.read(|o| self.sidebar.selected_session_id(o))
    }

    pub fn is_team(&self, group_id: &str) -> bool {
        self.org.read(|o| o.group(group_id).is_some_and(|g| g.is_team()))
    }

    /// True while any run is going.
    pub fn anything_running(&self) -> bool {
        !self.runs.is_empty()
    }

    /// How many runs are going.
    pub fn running_count(&self) -> usize {
        self.runs.iter().count()
    }

    /// Runs the engine confirmed paused.
    pub fn paused_count(&self) -> usize {
        self.runs.iter().filter(|r| r.paused).count()
    }

    /// The session's reflection is paused (confirmed by the engine).
    pub fn reflection_paused(&self, session_id: &str) -> bool {
        self.runs.reflection(session_id).is_some_and(|r| r.paused)
    }

    /// True while a turn of this session is in flight or queued (a chat, a reflection or a
    /// run's turn).
    pub fn session_busy(&self, session_id: &str) -> bool {
        self.runs.session_busy(session_id)
    }

    /// True while the group runs or any of its sessions has a run or turn going.
    pub fn group_busy(&self, group_id: &str) -> bool {
        self.runs.group_busy(group_id)
    }

    /// True while the team's mode runs.
    pub fn team_running(&self, group_id: &str) -> bool {
        self.runs.team(group_id).is_some()
    }

    /// The pause or stop the user asked of the group's team run and the engine has not
    /// confirmed yet.
    pub fn team_pending(&self, group_id: &str) -> Option<Pending> {
        self.runs.team(group_id).and_then(|r| r.pending)
    }

    /// True while the session reflects (paused or not).
    pub fn reflecting(&self, session_id: &str) -> bool {
        self.runs.reflection(session_id).is_some()
    }

    /// Moves the selected team's timeline to an earlier (`-1`) or later (`1`) run on disk; the
    /// newest is the live one.
    fn browse_runs(&mut self, step: isize) -> Vec<Command> {
        let Some(group_id) = self.selected_group_id().filter(|g| self.is_team(g)) else {
            self.flash("select a team to browse its runs", true);
            return Vec::new();
        };
        match self.team_panel.browse(&group_id, step) {
            Browse::Load(at) => {
                return vec![Command::LoadRun {
                    group_id,
                    which: WhichRun::At(at),
                }];
            }
            Browse::Newest => {}
            Browse::NoRuns => self.flash("this team has no earlier runs on disk", true),
            Browse::AtEnd { newest: false } => self.flash("this is the team's first run on disk", false),
            Browse::AtEnd { newest: true } => self.flash("this is the team's newest run", false),
        }
        Vec::new()
    }

    /// The run of a team to show: an earlier one being browsed, else the newest.
    pub fn shown_cycle(&self, group_id: &str) -> Option<&CycleView> {
        self.team_panel.shown_cycle(group_id)
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Command> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.flash = None;
        let global = self.keymap.lookup(Context::Global, &key);
        if let Some(commands) = self.open_editor_for_dialog(&key) {
            return commands;
        }
        match self.dialogs.handle_key(&key, global == Some(Action::Quit)) {
            Routed::NotOpen => {}
            routed => {
                let commands = match routed {
                    Routed::Done(result) => self.on_dialog_result(result),
                    _ => Vec::new(),
                };
                self.refresh_placeholder();
                return commands;
            }
        }
        if let Some(commands) = self.trace_view_key(&key, global) {
            return commands;
        }
        if self.transcripts.typing_search() {
            // Ctrl-C leaves the search line, as it closes a dialog.
            let commands = match global {
                Some(Action::Quit) => {
                    self.transcripts.search = None;
                    Vec::new()
                }
                Some(action) => self.perform(action),
                None => {
                    if self.transcripts.search_input(key) {
                        self.search_step(true);
                    }
                    Vec::new()
                }
            };
            self.refresh_placeholder();
            return commands;
        }
        let commands = if global == Some(Action::Quit) && self.clear_composer_instead_of_quitting() {
            Vec::new()
        } else if let Some(action) = global {
            self.perform(action)
        } else if self.focus == Focus::Composer
            && let Some(commands) = self.completion_key(&key)
        {
            commands
        } else if self.focus == Focus::Composer {
            match self.keymap.lookup(Context::Composer, &key) {
                Some(action) => self.perform(action),
                None => {
                    self.composer.input(key);
                    Vec::new()
                }
            }
        } else {
            let search = self
                .transcripts
                .search
                .as_ref()
                .and_then(|_| self.keymap.lookup(Context::Search, &key));
            match search.or_else(|| self.keymap.lookup(Context::Navigation, &key)) {
                Some(action) => self.perform(action),
                None => Vec::new(),
            }
        };
        self.refresh_placeholder();
        let mut commands = commands;
        commands.extend(self.sync_attachments());
        commands
    }

    pub fn handle_paste(&mut self, text: &str) {
        if !self.dialogs.paste(text) {
            self.focus = Focus::Composer;
            self.composer.paste(text);
        }
    }

    /// Runs one action: the single path keys, mouse and tests go through.
    pub fn perform(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::Help => self.dialogs.push(Dialog::Help(Default::default())),
            Action::Quit => return self.request_quit(),
            Action::FocusNext => {
                self.focus = match self.focus {
                    Focus::Sidebar => Focus::Transcript,
                    Focus::Transcript => Focus::Composer,
                    Focus::Composer => Focus::Sidebar,
                }
            }
            Action::FocusPrev => {
                self.focus = match self.focus {
                    Focus::Sidebar => Focus::Composer,
                    Focus::Transcript => Focus::Sidebar,
                    Focus::Composer => Focus::Transcript,
                }
            }
            Action::MoveUp | Action::MoveDown => {
                let down = action == Action::MoveDown;
                if self.focus == Focus::Transcript {
                    self.scroll(if down { -1 } else { 1 });
                } else {
                    return self.move_cursor(if down { 1 } else { -1 });
                }
            }
            Action::Select => {
                if !(self.focus == Focus::Transcript && self.toggle_tool_call()) {
                    self.focus = Focus::Composer;
                }
            }
            Action::FocusComposer => self.focus = Focus::Composer,
            Action::LeaveComposer => self.focus = Focus::Sidebar,
            Action::Newline => self.composer.insert_newline(),
            Action::Send => return self.send(),
            Action::PageUp => self.scroll(self.page() as isize),
            Action::PageDown => self.scroll(-(self.page() as isize)),
            Action::ScrollTop | Action::ScrollBottom => self.scroll_to_edge(action == Action::ScrollTop),
            Action::TogglePauseCycle => return self.toggle_pause(),
            Action::StopCycle => return self.stop(),
            Action::NewGroupFromPreset => return self.open_preset_picker(),
            Action::NewSession => self.open_new_session(),
            Action::AddMember => self.open_add_member(),
            Action::Rename => self.open_rename(),
            Action::SetModel => self.open_model_picker(),
            Action::EditSystemPrompt => self.open_system_prompt(),
            Action::SetMode => self.open_mode_picker(),
            Action::SetMaxIterations => self.open_max_iterations(),
            Action::ToggleEvaluator => return self.toggle_evaluator(),
            Action::Delete => return self.open_delete(),
            Action::SaveGroupAsPreset => return self.save_as_preset(),
            Action::ToggleCollapse => return self.fold(None),
            Action::CollapseGroup => return self.fold(Some(true)),
            Action::ExpandGroup => return self.fold(Some(false)),
            Action::CopyAnswer => return self.copy_answer(),
            Action::ToggleMouse => {
                self.mouse_capture = !self.mouse_capture;
                return vec![Command::SetMouseCapture(self.mouse_capture)];
            }
            Action::Search => self.start_search(),
            Action::SearchNext => self.search_step(true),
            Action::SearchPrev => self.search_step(false),
            Action::LeaveSearch => self.transcripts.search = None,
            Action::HistoryPrev => self.composer.recall_older(),
            Action::HistoryNext => self.composer.recall_newer(),
            Action::OpenEditor => return self.open_editor_for_composer(),
            Action::ReflectSession => self.open_reflect(),
            Action::OlderRun if self.browse_conversations(-1) => {}
            Action::NewerRun if self.browse_conversations(1) => {}
            Action::OlderRun => return self.browse_runs(-1),
            Action::NewerRun => return self.browse_runs(1),
            Action::PrevToolCall if self.select_card(true) => {}
            Action::NextToolCall if self.select_card(false) => {}
            Action::PrevToolCall => self.select_tool_call(true),
            Action::NextToolCall => self.select_tool_call(false),
            Action::ViewDiff => return self.open_diff(),
            Action::MergeWorktree => return self.merge_selected(),
            Action::PruneHeadless => self.open_prune(),
            Action::RelayDraft => self.open_relay_draft(),
            Action::NewConversation => return self.new_conversation(),
            Action::ToggleMemory => return self.toggle_memory(),
            Action::Regenerate => return self.regenerate(),
            Action::EditResend => self.edit_resend(),
            Action::ForkSession => return self.fork_session(),
            Action::ToggleCard => self.toggle_card(),
            Action::TraceView => self.open_trace(),
        }
        Vec::new()
    }

    fn request_quit(&mut self) -> Vec<Command> {
        if self.anything_running() {
            self.dialogs.confirm(
                "Quit",
                "A run is in progress. Quit anyway? A reflect cycle is kept as interrupted and can be resumed after a restart.",
                ConfirmAction::Quit,
            );
            Vec::new()
        } else {
            self.should_quit = true;
            vec![Command::Quit]
        }
    }

    pub fn move_cursor(&mut self, delta: isize) -> Vec<Command> {
        if self.org.read(|o| self.sidebar.move_by(o, delta)) {
            self.on_selection_changed()
        } else {
            Vec::new()
        }
    }

    /// Puts the sidebar's cursor on `row` (if it is listed).
    pub(super) fn select_row(&mut self, row: &Row) {
        self.org.read(|o| self.sidebar.select(o, row));
    }

    /// Remembers the selection and loads the transcript now on screen.
    pub fn on_selection_changed(&mut self) -> Vec<Command> {
        self.org.read(|o| self.sidebar.clamp(o));
        let group = self.selected_group_id();
        let session = self.selected_session_id();
        let mut commands = Vec::new();
        if let Some(g) = group.as_ref() {
            commands.extend(self.org.read(|o| {
                o.group(g)
                    .map(|g| self.team_panel.on_selected_all(g))
                    .unwrap_or_default()
            }));
        }
        let load = self.transcripts.show(session.as_deref());
        self.composer
            .switch_target(session.clone().or_else(|| group.clone()));
        self.edits.select(group.as_deref(), session.as_deref());
        if let Some(session_id) = session.filter(|_| load) {
            commands.push(Command::LoadTranscript { session_id });
        }
        commands.extend(self.worktrees_on_selection(group.as_ref()));
        commands
    }

    /// Lines a page scrolls: the transcript's height on screen, less one line kept for context.
    fn page(&self) -> usize {
        let height = self.layout.transcript_inner().height as usize;
        height.saturating_sub(1).max(1)
    }

    /// Scrolls the transcript on screen; positive is up (older text).
    fn scroll(&mut self, lines: isize) {
        if let Some(id) = self.selected_session_id() {
            self.transcripts.scroll(&id, lines);
        } else if let Some(id) = self.selected_group_id().filter(|g| self.is_team(g)) {
            self.transcripts.scroll_timeline(&id, lines);
        }
    }

    /// To the top or the bottom of the selected transcript or team timeline.
    fn scroll_to_edge(&mut self, top: bool) {
        if let Some(id) = self.selected_session_id() {
            self.transcripts.to_edge(Edge::Session(&id), top);
        } else if let Some(id) = self.selected_group_id().filter(|g| self.is_team(g)) {
            self.transcripts.to_edge(Edge::Timeline(&id), top);
        }
    }

    /// The composer's text to its target: a team runs (or queues while running), a session
    /// chats.
    pub(super) fn send_text(&mut self) -> Vec<Command> {
        let text = self.composer.text();
        if text.trim().is_empty() {
            return Vec::new();
        }
        let Some(group_id) = self.selected_group_id() else {
            self.flash("nothing selected: create a team with the new-team key", true);
            return Vec::new();
        };
        if self.is_team(&group_id)
            && let Some(commands) = self.relay_send(&group_id, &text)
        {
            return commands;
        }
        if self.is_team(&group_id) && self.selected_session_id().is_none() {
            if let Some(commands) = self.note_for_member(&group_id, &text) {
                return commands;
            }
            self.composer.send();
            if self.team_running(&group_id) {
                self.team_panel.queue(&group_id, text.clone());
                let mode = self
                    .org
                    .read(|o| o.group(&group_id).map(|g| g.mode))
                    .unwrap_or_default();
                self.flash_until(
                    &format!("queued for {}", mode.spec().queued_target),
                    FlashTie::Queued(group_id.clone()),
                );
                return vec![Command::QueueMessage { group_id, text }];
            }
            // Back to the newest run: the new one appears there.
            self.team_panel.show_newest(&group_id);
            return vec![Command::RunGroup {
                group_id,
                prompt: text,
            }];
        }
        let Some(session_id) = self.selected_session_id() else {
            self.flash("select a session (or create one with the new-session key)", true);
            return Vec::new();
        };
        if let Some(commands) = self.send_resend(&session_id, &text) {
            return commands;
        }
        self.composer.send();
        self.transcripts.follow(&session_id);
        if self.session_busy(&session_id) {
            self.flash(
                "queued: the session answers when its turn in flight is done",
                false,
            );
        }
        vec![Command::Chat {
            session_id,
            prompt: text,
        }]
    }

    fn toggle_pause(&mut self) -> Vec<Command> {
        if let Some(session_id) = self.selected_reflection() {
            return self.toggle_pause_reflection(session_id);
        }
        let Some(group_id) = self.selected_group_id() else {
            return Vec::new();
        };
        let key = RunKey::team(&group_id);
        if let Some(run) = self.runs.team(&group_id) {
            let paused = run.paused_as_shown();
            if paused {
                self.runs.request(&key, Pending::Resuming);
                self.flash_until("resuming", FlashTie::Pending(key.clone()));
                return vec![Command::Resume { key }];
            }
            self.runs.request(&key, Pending::Pausing);
            self.flash_until(
                "pausing after the step in flight…",
                FlashTie::Pending(key.clone()),
            );
            return vec![Command::Pause { key }];
        }
        if self.team_panel.interrupted(&group_id) {
            self.team_panel.show_newest(&group_id);
            return vec![Command::ResumeCycle { group_id }];
        }
        self.flash("no cycle is running in this group", true);
        Vec::new()
    }

    /// Stops the selected group's run, or else the selected session's chat turns and
    /// reflection (or those of every session of the selected group).
    fn stop(&mut self) -> Vec<Command> {
        let Some(group_id) = self.selected_group_id() else {
            return Vec::new();
        };
        if self.selected_session_id().is_none() && self.team_running(&group_id) {
            let key = RunKey::team(&group_id);
            self.runs.request(&key, Pending::Stopping);
            self.flash_until("stopping", FlashTie::Pending(key.clone()));
            return vec![Command::Stop { key }];
        }
        let busy: Vec<SessionId> = match self.selected_session_id() {
            Some(id) => {
                let own_run = self.runs.chatting(&id) || self.reflecting(&id);
                if !own_run && self.team_running(&group_id) {
                    // A team member's turn belongs to the team's run.
                    let key = RunKey::team(&group_id);
                    self.runs.request(&key, Pending::Stopping);
                    self.flash_until("stopping the team's run", FlashTie::Pending(key.clone()));
                    return vec![Command::Stop { key }];
                }
                own_run.then_some(id).into_iter().collect()
            }
            None => self.org.read(|o| {
                o.sessions_in(&group_id)
                    .iter()
                    .filter(|s| self.runs.chatting(&s.id) || self.reflecting(&s.id))
                    .map(|s| s.id.clone())
                    .collect()
            }),
        };
        if busy.is_empty() {
            self.flash("nothing is running here", true);
            return Vec::new();
        }
        self.flash_until("stopping", FlashTie::Busy(busy.clone()));
        busy.into_iter()
            .map(|session_id| {
                self.runs
                    .request(&RunKey::reflection(&session_id), Pending::Stopping);
                Command::StopSession { session_id }
            })
            .collect()
    }

    /// A flash that stays until the state it reports changes (see [`App::settle_flash`]).
    pub(super) fn flash_until(&mut self, text: &str, tie: FlashTie) {
        self.flash(text, false);
        self.flash_tie = Some(tie);
    }

    /// Clears a flash whose state is over: the pause or stop the engine confirmed (or the
    /// run ended), the queued messages a plan took, the sessions no longer busy.
    pub(super) fn settle_flash(&mut self) {
        let over = match &self.flash_tie {
            None => return,
            Some(tie) => flash_over(
                tie,
                |key| self.runs.get(key).and_then(|r| r.pending),
                |group_id| {
                    self.team_running(group_id)
                        && self
                            .team_panel
                            .cycles
                            .get(group_id)
                            .is_some_and(|c| !c.queued.is_empty())
                },
                |session_id| self.session_busy(session_id),
            ),
        };
        if over {
            self.flash = None;
            self.flash_tie = None;
        }
    }

    pub fn flash(&mut self, text: impl Into<String>, error: bool) {
        self.flash_tie = None;
        self.flash = Some((text.into(), error));
    }

    /// The composer's placeholder says where the text goes.
    pub fn refresh_placeholder(&mut self) {
        self.composer.title = None;
        let key = |a| self.keymap.key_label(a);
        let text = match self.selected_group_id() {
            None => format!(
                "Create a team with {}, or select a session",
                key(Action::NewGroupFromPreset)
            ),
            Some(gid) => {
                let (team, name, mode) = self.org.read(|o| {
                    o.group(&gid)
                        .map(|g| (g.is_team(), g.name.clone(), g.mode))
                        .unwrap_or((false, String::new(), Default::default()))
                });
                let member = self.selected_session_id().filter(|_| team);
                self.composer.title = member.as_ref().map(|sid| {
                    let name = self
                        .org
                        .read(|o| o.session(sid).map(|s| s.name.clone()))
                        .unwrap_or_default();
                    format!(
                        " Direct chat with {} (not a team run) ",
                        crate::text::sanitize::display(&name)
                    )
                });
                if let Some(title) = self.resend_title() {
                    self.composer.title = Some(title);
                }
                if let Some(text) = self.relay_placeholder(&gid) {
                    text
                } else if member.is_some() {
                    "Message this member alone (its own conversation; select the team to run it)…".to_string()
                } else if team && self.team_running(&gid) {
                    format!("Queue a message for {}…", mode.spec().queued_target)
                } else if team {
                    format!("Prompt for {} ({mode})…", crate::text::sanitize::display(&name))
                } else if let Some(sid) = self.selected_session_id() {
                    let name = self
                        .org
                        .read(|o| o.session(&sid).map(|s| s.name.clone()))
                        .unwrap_or_default();
                    format!("Message {}…", crate::text::sanitize::display(&name))
                } else {
                    format!(
                        "Select a session to chat, or press {} for a new one",
                        key(Action::NewSession)
                    )
                }
            }
        };
        self.composer.set_placeholder(&text);
    }

    /// A mouse event on the last frame drawn.
    pub fn handle_mouse(&mut self, ev: MouseEvent) -> Vec<Command> {
        if !self.dialogs.is_empty() {
            return Vec::new();
        }
        if self.trace_view_mouse(&ev) {
            return Vec::new();
        }
        match super::mouse::hit_test(&self.layout, &ev) {
            Some(MouseTarget::ScrollUp(Pane::Sidebar)) => return self.move_cursor(-1),
            Some(MouseTarget::ScrollDown(Pane::Sidebar)) => return self.move_cursor(1),
            Some(MouseTarget::ScrollUp(Pane::Transcript)) => self.scroll(WHEEL_LINES),
            Some(MouseTarget::ScrollDown(Pane::Transcript)) => self.scroll(-WHEEL_LINES),
            Some(MouseTarget::SidebarRow(i)) => {
                self.focus = Focus::Sidebar;
                if self.org.read(|o| self.sidebar.click(o, i)) {
                    let mut commands = self.on_selection_changed();
                    self.refresh_placeholder();
                    // Another target's draft: its `@` files.
                    commands.extend(self.sync_attachments());
                    return commands;
                }
            }
            Some(MouseTarget::Click(Pane::Sidebar)) => self.focus = Focus::Sidebar,
            Some(MouseTarget::Click(Pane::Transcript)) => self.focus = Focus::Transcript,
            Some(MouseTarget::Click(Pane::Composer)) => self.focus = Focus::Composer,
            _ => {}
        }
        Vec::new()
    }
}

/// What a flash reports, to clear it when that is over.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FlashTie {
    /// A pause, resume or stop of this run the engine has not confirmed yet.
    Pending(RunKey),
    /// Messages queued for this team's next plan.
    Queued(GroupId),
    /// These sessions are being stopped.
    Busy(Vec<SessionId>),
}

/// True when the state `tie` reports is over: `pending` is a run's unconfirmed request (None:
/// confirmed, or the run is gone), `queued` whether the team still has messages waiting for a
/// plan, `busy` whether a session still works.
pub(super) fn flash_over(
    tie: &FlashTie,
    pending: impl Fn(&RunKey) -> Option<Pending>,
    queued: impl Fn(&str) -> bool,
    busy: impl Fn(&str) -> bool,
) -> bool {
    match tie {
        FlashTie::Pending(key) => pending(key).is_none(),
        FlashTie::Queued(group_id) => !queued(group_id),
        FlashTie::Busy(sessions) => !sessions.iter().any(|s| busy(s)),
    }
}

#[cfg(test)]
mod flash_tests {
    use super::*;

    #[test]
    fn a_flash_ends_with_the_state_it_reports() {
        let key = RunKey::team("g");
        let pending = |p: Option<Pending>| move |_: &RunKey| p;
        let tie = FlashTie::Pending(key);
        assert!(!flash_over(
            &tie,
            pending(Some(Pending::Pausing)),
            |_| true,
            |_| true
        ));
        assert!(
            flash_over(&tie, pending(None), |_| true, |_| true),
            "confirmed or ended"
        );
        let queued = FlashTie::Queued("g".into());
        assert!(!flash_over(&queued, pending(None), |_| true, |_| false));
        assert!(
            flash_over(&queued, pending(None), |_| false, |_| false),
            "the plan took them"
        );
        let busy = FlashTie::Busy(vec!["a".into(), "b".into()]);
        assert!(!flash_over(&busy, pending(None), |_| false, |s| s == "b"));
        assert!(flash_over(&busy, pending(None), |_| false, |_| false));
    }
}
