//! The UI state, owned by the UI task alone. Keys become [`Action`]s, actions change state and
//! produce [`Command`]s for the runtime; engine events and command results come back through
//! [`App::handle_app_event`]. No terminal and no engine here, so tests drive it directly.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent};
use ratatui::layout::Rect;

use super::action::{Action, Context};
use super::command::Command;
use super::composer::Composer;
use super::cycle_view::CycleView;
use super::dialogs::{ConfirmAction, Dialog, Notice, Outcome};
use super::history::PromptHistory;
use super::keymap::Keymap;
use super::layout::{FrameLayout, Pane};
use super::mouse::{MouseTarget, WHEEL_LINES};
use super::search::TranscriptSearch;
use super::transcript_view::TranscriptView;
use crate::config::Config;
use crate::model::{GroupId, GroupKind, Organization, SessionId};
use crate::presets::Catalog;
use crate::store::OrgHandle;

/// Which pane gets keys that are not global.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Sidebar,
    Transcript,
    Composer,
}

/// A row of the sidebar tree (defined with the sidebar, which draws it).
pub use super::widgets::sidebar::Row;

pub struct App {
    pub org: OrgHandle,
    pub config: Config,
    pub repo: PathBuf,
    pub keymap: Keymap,
    pub focus: Focus,
    /// Index into [`App::rows`].
    pub cursor: usize,
    pub views: HashMap<SessionId, TranscriptView>,
    pub cycles: HashMap<GroupId, CycleView>,
    /// Sessions with a turn in flight (from engine events), by id: a rename must not detach
    /// them.
    pub busy: HashSet<SessionId>,
    /// Plain chat turns this UI started and that have not ended, per session (stoppable).
    pub chats: HashMap<SessionId, usize>,
    pub unread: HashSet<SessionId>,
    /// Groups whose run (mode, cycle) is in progress in this process.
    pub running: HashSet<GroupId>,
    pub pause_requested: HashSet<GroupId>,
    pub composer: Composer,
    pub dialogs: Vec<Dialog>,
    pub catalog: Option<Catalog>,
    /// A one-line message in the status line until the next key.
    pub flash: Option<(String, bool)>,
    pub should_quit: bool,
    /// Advanced by the runtime on each frame while something is busy (spinner phase).
    pub tick: usize,
    /// The terminal's size at the last frame. Nothing reads it: the geometry is [`App::layout`].
    pub screen: Rect,
    /// Where each pane was drawn in the last frame (set by the draw, which only reads the
    /// rest of the app): mouse hit-tests, paging and search scroll use it.
    pub layout: Cell<FrameLayout>,
    /// False while the mouse is left to the terminal (its own text selection works).
    pub mouse_capture: bool,
    /// Prompts sent from this run, recalled with Up/Down in the composer.
    pub history: PromptHistory,
    /// The `/` search in the selected session's transcript, while active.
    pub search: Option<TranscriptSearch>,
    /// Single-session reflections this UI started and that have not ended: paused or not.
    pub reflecting: HashMap<SessionId, bool>,
}

impl App {
    /// A new app over `org`. `notices` are shown as error popups first (lost data, bad config);
    /// interrupted cycles are offered for resumption.
    pub fn new(org: OrgHandle, config: Config, repo: PathBuf, notices: Vec<String>) -> (App, Vec<Command>) {
        let (keymap, key_errors) = Keymap::with_overrides(&config.keys);
        let mut app = App {
            org,
            config,
            repo,
            keymap,
            focus: Focus::Sidebar,
            cursor: 0,
            views: HashMap::new(),
            cycles: HashMap::new(),
            busy: HashSet::new(),
            chats: HashMap::new(),
            unread: HashSet::new(),
            running: HashSet::new(),
            pause_requested: HashSet::new(),
            composer: Composer::default(),
            dialogs: Vec::new(),
            catalog: None,
            flash: None,
            should_quit: false,
            tick: 0,
            screen: Rect::new(0, 0, 80, 24),
            layout: Cell::default(),
            mouse_capture: true,
            history: PromptHistory::default(),
            search: None,
            reflecting: HashMap::new(),
        };
        let interrupted: Vec<(GroupId, String, u32, u32)> = app.org.read(|o| {
            for g in &o.groups {
                if let Some(r) = &g.reflection {
                    let mut view = CycleView::from_persisted(r, g.mode);
                    view.name_prefix = format!("{}-", crate::presets::instantiate::team_slug(&g.name));
                    app.cycles.insert(g.id.clone(), view);
                }
            }
            o.groups
                .iter()
                .filter_map(|g| {
                    let r = g.reflection.as_ref().filter(|r| r.is_interrupted())?;
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
            app.dialogs.push(Dialog::Confirm(super::dialogs::Confirm::new(
                "Interrupted cycle",
                format!(
                    "The cycle of `{name}` was interrupted after iteration {done}/{max}.\nResume it now? (Later: select the team and press the pause key.)"
                ),
                ConfirmAction::ResumeCycle(id),
            )));
        }
        for e in key_errors {
            app.dialogs
                .push(Dialog::Notice(Notice::error("Key configuration", e.to_string())));
        }
        for n in notices {
            app.dialogs.push(Dialog::Notice(Notice::error("Data", n)));
        }
        // Restore the last selection.
        let (group, session) = app
            .org
            .read(|o| (o.ui.selected_group.clone(), o.ui.selected_session.clone()));
        let rows = app.rows();
        // The session, or its group when that is folded.
        let wanted = [session.map(Row::Session), group.map(Row::Group)];
        if let Some(i) = wanted
            .into_iter()
            .flatten()
            .find_map(|w| rows.iter().position(|r| *r == w))
        {
            app.cursor = i;
        }
        let mut commands = vec![Command::LoadCatalog];
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
        self.rows().get(self.cursor).cloned()
    }

    /// The group of the selected row.
    pub fn selected_group_id(&self) -> Option<GroupId> {
        match self.selected_row()? {
            Row::Group(id) => Some(id),
            Row::Session(id) => self.org.read(|o| o.session(&id).map(|s| s.group_id.clone())),
        }
    }

    pub fn selected_session_id(&self) -> Option<SessionId> {
        match self.selected_row()? {
            Row::Session(id) => Some(id),
            Row::Group(_) => None,
        }
    }

    pub fn is_team(&self, group_id: &str) -> bool {
        self.org.read(|o| o.group(group_id).is_some_and(|g| g.is_team()))
    }

    /// True while any run this process started is going.
    pub fn anything_running(&self) -> bool {
        !self.running.is_empty()
            || !self.busy.is_empty()
            || !self.chats.is_empty()
            || !self.reflecting.is_empty()
    }

    /// True while a turn of this session is in flight or queued (a chat, a reflection or a
    /// run's turn).
    pub fn session_busy(&self, session_id: &str) -> bool {
        self.busy.contains(session_id)
            || self.chats.contains_key(session_id)
            || self.reflecting.contains_key(session_id)
    }

    /// True while the group runs or any of its sessions has a turn in flight.
    pub fn group_busy(&self, group_id: &str) -> bool {
        self.running.contains(group_id)
            || self.org.read(|o| {
                o.sessions
                    .iter()
                    .any(|s| s.group_id == group_id && self.session_busy(&s.id))
            })
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Command> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.flash = None;
        let global = self.keymap.lookup(Context::Global, &key);
        if let Some(dialog) = self.dialogs.last_mut() {
            if global == Some(Action::Quit) {
                self.dialogs.pop();
                return Vec::new();
            }
            let outcome = dialog.handle_key(&key);
            let commands = match outcome {
                Outcome::Stay => Vec::new(),
                Outcome::Close => {
                    self.dialogs.pop();
                    Vec::new()
                }
                Outcome::Done(result) => {
                    self.dialogs.pop();
                    self.on_dialog_result(result)
                }
            };
            self.refresh_placeholder();
            return commands;
        }
        if self.search.as_ref().is_some_and(|s| s.editing) {
            // Ctrl-C leaves the search line, as it closes a dialog.
            let commands = match global {
                Some(Action::Quit) => {
                    self.search = None;
                    Vec::new()
                }
                Some(action) => self.perform(action),
                None => self.search_input(key),
            };
            self.refresh_placeholder();
            return commands;
        }
        let commands = if let Some(action) = global {
            self.perform(action)
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
                .search
                .as_ref()
                .and_then(|_| self.keymap.lookup(Context::Search, &key));
            match search.or_else(|| self.keymap.lookup(Context::Navigation, &key)) {
                Some(action) => self.perform(action),
                None => Vec::new(),
            }
        };
        self.refresh_placeholder();
        commands
    }

    pub fn handle_paste(&mut self, text: &str) {
        if let Some(d) = self.dialogs.last_mut() {
            d.handle_paste(text);
        } else {
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
            Action::Select | Action::FocusComposer => self.focus = Focus::Composer,
            Action::LeaveComposer => self.focus = Focus::Sidebar,
            Action::Newline => self.composer.insert_newline(),
            Action::Send => return self.send(),
            Action::PageUp => self.scroll(self.page() as isize),
            Action::PageDown => self.scroll(-(self.page() as isize)),
            Action::TogglePauseCycle => return self.toggle_pause(),
            Action::StopCycle => return self.stop(),
            Action::NewGroupFromPreset => return self.open_preset_picker(),
            Action::NewSession => self.open_new_session(),
            Action::Rename => self.open_rename(),
            Action::SetModel => self.open_model_picker(),
            Action::EditSystemPrompt => self.open_system_prompt(),
            Action::SetMode => self.open_mode_picker(),
            Action::SetMaxIterations => self.open_max_iterations(),
            Action::ToggleEvaluator => return self.toggle_evaluator(),
            Action::Delete => self.open_delete(),
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
            Action::LeaveSearch => self.search = None,
            Action::HistoryPrev => self.composer.recall_older(&mut self.history),
            Action::HistoryNext => self.composer.recall_newer(&mut self.history),
            Action::ReflectSession => self.open_reflect(),
        }
        Vec::new()
    }

    fn request_quit(&mut self) -> Vec<Command> {
        if self.anything_running() {
            self.dialogs.push(Dialog::Confirm(super::dialogs::Confirm::new(
                "Quit",
                "A run is in progress. Quit anyway? A reflect cycle is kept as interrupted and can be resumed after a restart.",
                ConfirmAction::Quit,
            )));
            Vec::new()
        } else {
            self.should_quit = true;
            vec![Command::Quit]
        }
    }

    pub fn move_cursor(&mut self, delta: isize) -> Vec<Command> {
        let n = self.rows().len();
        if n == 0 {
            return Vec::new();
        }
        let next = (self.cursor as isize + delta).clamp(0, n as isize - 1) as usize;
        if next == self.cursor {
            return Vec::new();
        }
        self.cursor = next;
        self.on_selection_changed()
    }

    /// Remembers the selection and loads the transcript now on screen.
    pub fn on_selection_changed(&mut self) -> Vec<Command> {
        let n = self.rows().len();
        self.cursor = self.cursor.min(n.saturating_sub(1));
        let group = self.selected_group_id();
        let session = self.selected_session_id();
        if let Some(g) = group.as_ref().filter(|g| !self.cycles.contains_key(*g)) {
            // A team's saved cycle (after a restart): its scores and tokens, before any event.
            let saved = self.org.read(|o| {
                o.group(g).and_then(|g| {
                    g.reflection
                        .as_ref()
                        .map(|r| (CycleView::from_persisted(r, g.mode), g.name.clone()))
                })
            });
            if let Some((mut view, name)) = saved {
                view.name_prefix = format!("{}-", crate::presets::instantiate::team_slug(&name));
                self.cycles.insert(g.clone(), view);
            }
        }
        if self
            .search
            .as_ref()
            .is_some_and(|s| Some(&s.session_id) != session.as_ref())
        {
            self.search = None;
        }
        self.org.update(|o| {
            o.ui.selected_group = group.clone();
            o.ui.selected_session = session.clone();
        });
        let Some(id) = session else {
            return Vec::new();
        };
        self.unread.remove(&id);
        if self.views.get(&id).is_some_and(|v| v.loaded) {
            return Vec::new();
        }
        self.views.entry(id.clone()).or_default();
        vec![Command::LoadTranscript { session_id: id }]
    }

    /// Lines a page scrolls: the transcript's height on screen, less one line kept for context.
    fn page(&self) -> usize {
        let height = self.layout.get().transcript_inner().height as usize;
        height.saturating_sub(1).max(1)
    }

    /// Scrolls the transcript on screen; positive is up (older text).
    fn scroll(&mut self, lines: isize) {
        if let Some(v) = self.selected_session_id().and_then(|id| self.views.get_mut(&id)) {
            if lines > 0 {
                v.scroll_up(lines as usize);
            } else {
                v.scroll_down(lines.unsigned_abs());
            }
        }
    }

    /// The composer's text to its target: a team runs (or queues while running), a session
    /// chats.
    fn send(&mut self) -> Vec<Command> {
        let text = self.composer.text();
        if text.trim().is_empty() {
            return Vec::new();
        }
        let Some(group_id) = self.selected_group_id() else {
            self.flash("nothing selected: create a team with the new-team key", true);
            return Vec::new();
        };
        if self.is_team(&group_id) {
            self.composer.take();
            self.history.record(&text);
            if self.running.contains(&group_id) {
                let cycle = self.cycles.entry(group_id.clone()).or_default();
                cycle.queued.push(text.clone());
                self.flash("queued for the orchestrator's next plan", false);
                return vec![Command::QueueMessage { group_id, text }];
            }
            self.running.insert(group_id.clone());
            return vec![Command::RunGroup {
                group_id,
                prompt: text,
            }];
        }
        let Some(session_id) = self.selected_session_id() else {
            self.flash("select a session (or create one with the new-session key)", true);
            return Vec::new();
        };
        self.composer.take();
        self.history.record(&text);
        let view = self.views.entry(session_id.clone()).or_default();
        view.push(crate::model::Message::user(text.clone()));
        view.follow();
        *self.chats.entry(session_id.clone()).or_default() += 1;
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
        if self.running.contains(&group_id) {
            let paused = self.pause_requested.contains(&group_id)
                || self.cycles.get(&group_id).is_some_and(|c| c.paused);
            if paused {
                self.pause_requested.remove(&group_id);
                self.flash("resuming", false);
                return vec![Command::Resume { group_id }];
            }
            self.pause_requested.insert(group_id.clone());
            self.flash("pausing after the step in flight…", false);
            return vec![Command::Pause { group_id }];
        }
        if self.cycles.get(&group_id).is_some_and(|c| c.interrupted) {
            self.running.insert(group_id.clone());
            return vec![Command::ResumeCycle { group_id }];
        }
        self.flash("no cycle is running in this group", true);
        Vec::new()
    }

    /// Stops the selected group's run, or else the chat turns of the selected session (or of
    /// every session of the selected group).
    fn stop(&mut self) -> Vec<Command> {
        if let Some(session_id) = self.selected_reflection() {
            self.flash("stopping the reflection", false);
            return vec![Command::StopReflection { session_id }];
        }
        let Some(group_id) = self.selected_group_id() else {
            return Vec::new();
        };
        if self.running.contains(&group_id) {
            self.flash("stopping", false);
            return vec![Command::Stop { group_id }];
        }
        let chatting: Vec<SessionId> = match self.selected_session_id() {
            Some(id) => self.chats.contains_key(&id).then_some(id).into_iter().collect(),
            None => self.org.read(|o| {
                o.sessions_in(&group_id)
                    .iter()
                    .filter(|s| self.chats.contains_key(&s.id))
                    .map(|s| s.id.clone())
                    .collect()
            }),
        };
        if chatting.is_empty() {
            self.flash("nothing is running here", true);
            return Vec::new();
        }
        self.flash("stopping", false);
        chatting
            .into_iter()
            .map(|session_id| Command::StopChat { session_id })
            .collect()
    }

    pub fn flash(&mut self, text: impl Into<String>, error: bool) {
        self.flash = Some((text.into(), error));
    }

    /// The composer's placeholder says where the text goes.
    pub fn refresh_placeholder(&mut self) {
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
                if team && self.running.contains(&gid) {
                    "Queue a message for the orchestrator's next plan…".to_string()
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
        match super::mouse::hit_test(&self.layout.get(), &ev) {
            Some(MouseTarget::ScrollUp(Pane::Sidebar)) => return self.move_cursor(-1),
            Some(MouseTarget::ScrollDown(Pane::Sidebar)) => return self.move_cursor(1),
            Some(MouseTarget::ScrollUp(Pane::Transcript)) => self.scroll(WHEEL_LINES),
            Some(MouseTarget::ScrollDown(Pane::Transcript)) => self.scroll(-WHEEL_LINES),
            Some(MouseTarget::SidebarRow(i)) => {
                self.focus = Focus::Sidebar;
                if i != self.cursor && i < self.rows().len() {
                    self.cursor = i;
                    let commands = self.on_selection_changed();
                    self.refresh_placeholder();
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

/// The sidebar rows of an organization (a folded group's sessions are not listed).
pub fn rows_of(o: &Organization) -> Vec<Row> {
    let mut groups: Vec<&crate::model::Group> = o.groups.iter().collect();
    groups.sort_by_key(|g| (g.kind != GroupKind::Default, g.sort_order));
    let mut by_group: HashMap<&str, Vec<&crate::model::Session>> = HashMap::new();
    for s in &o.sessions {
        by_group.entry(s.group_id.as_str()).or_default().push(s);
    }
    let mut rows = Vec::with_capacity(o.groups.len() + o.sessions.len());
    for g in groups {
        rows.push(Row::Group(g.id.clone()));
        if o.ui.collapsed_groups.contains(&g.id) {
            continue;
        }
        if let Some(list) = by_group.get_mut(g.id.as_str()) {
            list.sort_by_key(|s| s.order);
            rows.extend(list.iter().map(|s| Row::Session(s.id.clone())));
        }
    }
    rows
}
