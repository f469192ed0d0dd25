//! The UI state, owned by the UI task alone. Keys become [`Action`]s, actions change state and
//! produce [`Command`]s for the runtime; engine events and command results come back through
//! [`App::handle_app_event`]. The organization is read through a read-only view and changed only
//! through the application layer ([`Edits`]). No terminal and no engine here, so tests drive it
//! directly.
//!
//! The app routes: each feature's work is done by its controller (`features/`), lent a narrow
//! [`Cx`] for one call with [`with_cx!`]; what a controller asks of the app in return
//! ([`Then`]) is done here.

use std::path::PathBuf;

use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent};

use super::action::{Action, Context};
use super::command::Command;
use super::composer::Composer;
use super::cycle_view::CycleView;
use super::dialogs::{
    Choice, ChoiceAction, ChoiceOption, ConfirmAction, Dialog, DialogStack, Interruption, Routed,
};
use super::features::cards::{self, TraceRoute};
use super::features::worktrees::Worktrees;
use super::features::{Outcome, Then, control, conversation, edit, relay, team, tools};
use super::flash::{FlashTie, flash_over};
use super::keymap::Keymap;
pub use super::layout::Focus;
use super::layout::{FrameLayout, Pane};
use super::mouse::{MouseTarget, WHEEL_LINES};
use super::runs::{Pending, Runs};
use super::sidebar::{Row, Sidebar, rows_of};
use super::team_panel::{Browse, TeamPanel};
use super::transcript_pane::{Edge, TranscriptPane};
use crate::config::Config;
use crate::model::{GroupId, SessionId};
use crate::presets::Catalog;
use crate::store::OrgView;
use crate::workspace::{Edits, WhichRun};

use crate::engine::events::RunKey;

/// The title of the notice that the host went away (taken down once a host answers again).
const HOST_LOST_TITLE: &str = "The huddle host went away";

/// Lends the app's shared pieces to a feature controller for one call, as `$cx` in `$call`
/// (`with_cx!(self, cx => self.worktrees.open_diff(&mut cx))`); then does what the
/// controller asked of the app, its commands after the call's.
macro_rules! with_cx {
    ($app:ident, $cx:ident => $call:expr) => {{
        #[allow(unused_mut)]
        let mut $cx = $crate::tui::features::Cx::new(
            &$app.org,
            &$app.edits,
            &mut $app.dialogs,
            $crate::tui::flash::Flash::new(&mut $app.flash, &mut $app.flash_tie),
            &$app.keymap,
            &$app.runs,
            &$app.sidebar,
            $app.focus,
        );
        let out = $call;
        let then = $cx.into_then();
        $app.after(then, out)
    }};
}
pub(super) use with_cx;

pub struct App {
    /// The organization, read-only: every change goes through `edits`.
    pub org: OrgView,
    pub edits: Edits,
    pub(super) config: Config,
    pub repo: PathBuf,
    pub(super) keymap: Keymap,
    pub focus: Focus,
    pub sidebar: Sidebar,
    pub transcripts: TranscriptPane,
    pub team_panel: TeamPanel,
    /// Every run in progress (chats, team runs, reflections), from the engine's events.
    pub runs: Runs,
    pub composer: Composer,
    pub dialogs: DialogStack,
    pub(super) catalog: Option<Catalog>,
    /// Each preset's forecast, once worked out after the catalog is read.
    pub(super) preset_forecasts: super::command::PresetForecasts,
    /// A one-line message in the status line until the next key.
    pub flash: Option<(String, bool)>,
    /// The state a flash reports ("pausing…", "stopping", "queued…"): it goes when that ends.
    pub(super) flash_tie: Option<FlashTie>,
    pub should_quit: bool,
    /// Advanced by the runtime on each frame while something is busy (spinner phase).
    pub tick: usize,
    /// Where each pane was drawn in the last frame (set by the draw): mouse hit-tests, paging
    /// and search scroll use it.
    pub layout: FrameLayout,
    /// False while the mouse is left to the terminal (its own text selection works).
    pub(super) mouse_capture: bool,
    /// The team worktrees controller: the sidebar's statuses, whether git can be used, teams
    /// being made.
    pub worktrees: Worktrees,
    /// The trace view of a team's run, while open (drawn over the centre; takes the keys).
    pub trace_view: Option<super::trace_view::TraceView>,
    /// The runs this TUI started (by key, until they end): quitting offers to stop only these
    /// (a TUI of the host sees every run of it, other front ends' too).
    pub started: std::collections::HashSet<RunKey>,
    /// The host went away: its runs are interrupted, quitting asks nothing.
    pub host_lost: bool,
    /// Quitting stops the runs this TUI started (chosen in the quit offer).
    pub(super) quit_stops_mine: bool,
    /// The name of what the composer is for (said when another window deletes it).
    pub(super) shown_name: Option<String>,
    /// The composer's text has no target (what it was for was deleted elsewhere) until the
    /// user moves to one.
    pub held: bool,
}

impl App {
    /// A new app over `org`. `notices` are shown as error popups first (lost data, bad config);
    /// interrupted cycles are offered for resumption.
    pub fn new(edits: Edits, config: Config, repo: PathBuf, notices: Vec<String>) -> (App, Vec<Command>) {
        App::new_beside(edits, config, repo, notices, &[])
    }

    /// [`App::new`] beside the runs going (`live`, in the host): those are not offered for
    /// resumption.
    pub fn new_beside(
        edits: Edits,
        config: Config,
        repo: PathBuf,
        notices: Vec<String>,
        live: &[RunKey],
    ) -> (App, Vec<Command>) {
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
            preset_forecasts: Default::default(),
            flash: None,
            flash_tie: None,
            should_quit: false,
            tick: 0,
            layout: FrameLayout::default(),
            mouse_capture: true,
            worktrees: Worktrees::default(),
            trace_view: None,
            started: std::collections::HashSet::new(),
            host_lost: false,
            quit_stops_mine: false,
            shown_name: None,
            held: false,
        };
        app.offer_interrupted(live);
        for e in key_errors {
            app.dialogs.error("Key configuration", e.to_string());
        }
        for n in notices {
            app.dialogs.error("Data", n);
        }
        // Restore the last selection.
        app.org.read(|o| app.sidebar.restore(o));
        let mut commands = vec![Command::LoadCatalog, Command::LoadInputs, Command::ListRepoFiles];
        commands.extend(with_cx!(app, cx => app.worktrees.startup(&mut cx)));
        commands.extend(app.on_selection_changed());
        app.refresh_placeholder();
        (app, commands)
    }

    /// Runs the process left (a crash, a signal, a quit, a host that went), but those going
    /// (`live`): each is offered for resumption (or to be discarded); `n` leaves it for later
    /// (the pause key resumes a team's). How many were offered.
    fn offer_interrupted(&mut self, live: &[RunKey]) -> usize {
        let interrupted: Vec<(Interruption, String, crate::model::Interrupted)> = self.org.read(|o| {
            let groups = o.groups.iter().filter_map(|g| {
                if live.contains(&RunKey::team(&g.id)) {
                    return None;
                }
                let i = g.state.interrupted(g.mode)?;
                Some((Interruption::Group(g.id.clone()), g.name.clone(), i))
            });
            let sessions = o.sessions.iter().filter_map(|s| {
                if live.contains(&RunKey::Reflection {
                    session_id: s.id.clone(),
                }) {
                    return None;
                }
                let r = s.reflection.as_ref()?;
                Some((
                    Interruption::Session(s.id.clone()),
                    s.name.clone(),
                    r.interrupted(),
                ))
            });
            groups.chain(sessions).collect()
        });
        let offered = interrupted.len();
        for (target, name, i) in interrupted {
            self.dialogs
                .push(Dialog::Choice(Box::new(control::resume_offer(target, &name, &i))));
        }
        offered
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
        match cards::trace_key(&mut self.trace_view, &key, global) {
            TraceRoute::NotOpen => {}
            TraceRoute::Taken => return Vec::new(),
            TraceRoute::Perform(action) => return self.perform(action),
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
                let window = self.layout.transcript_inner();
                if !(self.focus == Focus::Transcript
                    && with_cx!(self, cx => tools::toggle_tool_call(&mut cx, &mut self.transcripts, window)))
                {
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
            Action::TogglePauseCycle => {
                return with_cx!(self, cx => control::toggle_pause(&mut cx, &mut self.team_panel));
            }
            Action::StopCycle => return with_cx!(self, cx => control::stop(&mut cx)),
            Action::NewGroupFromPreset => return self.open_preset_picker(),
            Action::NewSession => with_cx!(self, cx => edit::open_new_session(&mut cx)),
            Action::AddMember => with_cx!(self, cx => edit::open_add_member(&mut cx)),
            Action::Rename => with_cx!(self, cx => edit::open_rename(&mut cx)),
            Action::SetModel => with_cx!(self, cx => edit::open_model_picker(&mut cx, &self.config)),
            Action::SetTools => {
                with_cx!(self, cx => super::features::tool_servers::open(&mut cx, &self.config))
            }
            Action::EditSystemPrompt => with_cx!(self, cx => edit::open_system_prompt(&mut cx)),
            Action::SetMode => with_cx!(self, cx => edit::open_mode_picker(&mut cx)),
            Action::SetMaxIterations => with_cx!(self, cx => edit::open_max_iterations(&mut cx)),
            Action::ToggleEvaluator => return with_cx!(self, cx => team::toggle_evaluator(&mut cx)),
            Action::Delete => return with_cx!(self, cx => edit::open_delete(&mut cx, &mut self.worktrees)),
            Action::SaveGroupAsPreset => return with_cx!(self, cx => team::save_as_preset(&mut cx)),
            Action::ToggleCollapse => return self.fold(None),
            Action::CollapseGroup => return self.fold(Some(true)),
            Action::ExpandGroup => return self.fold(Some(false)),
            Action::CopyAnswer => {
                return with_cx!(self, cx => tools::copy_answer(&mut cx, &self.transcripts, &self.team_panel));
            }
            Action::ToggleMouse => {
                self.mouse_capture = !self.mouse_capture;
                return vec![Command::SetMouseCapture(self.mouse_capture)];
            }
            Action::Search => with_cx!(self, cx => tools::start_search(&mut cx, &mut self.transcripts)),
            Action::SearchNext => self.search_step(true),
            Action::SearchPrev => self.search_step(false),
            Action::LeaveSearch => self.transcripts.search = None,
            Action::HistoryPrev => self.composer.recall_older(),
            Action::HistoryNext => self.composer.recall_newer(),
            Action::OpenEditor => return self.open_editor_for_composer(),
            Action::ReflectSession => {
                with_cx!(self, cx => control::open_reflect(&mut cx, &self.composer, &self.transcripts))
            }
            Action::OlderRun | Action::NewerRun => {
                let step = if action == Action::OlderRun { -1 } else { 1 };
                if !with_cx!(self, cx => conversation::browse(&mut cx, &mut self.transcripts, step)) {
                    return self.browse_runs(step);
                }
            }
            Action::PrevToolCall | Action::NextToolCall => {
                let up = action == Action::PrevToolCall;
                if !with_cx!(self, cx => cards::select(&mut cx, &mut self.team_panel, up)) {
                    let window = self.layout.transcript_inner();
                    with_cx!(self, cx => tools::select_tool_call(&mut cx, &mut self.transcripts, window, up));
                }
            }
            Action::ViewDiff => return with_cx!(self, cx => self.worktrees.open_diff(&mut cx)),
            Action::MergeWorktree => return with_cx!(self, cx => self.worktrees.merge_selected(&mut cx)),
            Action::PruneHeadless => with_cx!(self, cx => super::features::prune::open(&mut cx)),
            Action::RelayDraft => with_cx!(self, cx => relay::open(&mut cx, &mut self.team_panel)),
            Action::NewConversation => return with_cx!(self, cx => conversation::new_conversation(&mut cx)),
            Action::ToggleMemory => return with_cx!(self, cx => conversation::toggle_memory(&mut cx)),
            Action::Regenerate => {
                return with_cx!(self, cx => conversation::regenerate(&mut cx, &mut self.transcripts));
            }
            Action::EditResend => {
                with_cx!(self, cx => conversation::edit_resend(&mut cx, &mut self.transcripts))
            }
            Action::ForkSession => return with_cx!(self, cx => conversation::fork(&mut cx)),
            Action::ToggleCard => with_cx!(self, cx => cards::toggle(&mut cx, &mut self.team_panel)),
            Action::TraceView => with_cx!(self, cx => cards::open_trace(&mut cx, &mut self.trace_view)),
        }
        Vec::new()
    }

    /// Notes the runs `commands` start (a chat, a team run, a resume, a reflection) as this
    /// TUI's; a run already going under that key (another front end's) stays not ours.
    pub fn note_sent(&mut self, commands: &[Command]) {
        for command in commands {
            if let Some(key) = command.starts_run()
                && self.runs.get(&key).is_none()
            {
                self.started.insert(key);
            }
        }
    }

    /// How many runs go on in the host once this TUI has quit (those it stops on its way out
    /// not counted; none in a TUI that owns the data dir or lost its host).
    pub fn left_going(&self) -> usize {
        if !self.edits.is_remote() || self.host_lost {
            return 0;
        }
        self.runs
            .iter()
            .filter(|r| !(self.quit_stops_mine && self.started.contains(&r.key)))
            .count()
    }

    /// The runs this TUI started that go on.
    fn mine(&self) -> Vec<&super::runs::RunState> {
        self.runs
            .iter()
            .filter(|r| self.started.contains(&r.key))
            .collect()
    }

    /// The host went away and none could be reached again yet (`why`; the link goes on
    /// trying): the runs it had are taken as interrupted, and quitting asks nothing.
    pub fn on_host_lost(&mut self, why: &str) {
        self.host_lost = true;
        for run in self.runs.iter() {
            if let Some(c) = self
                .team_panel
                .cycles
                .get_mut(&run.group_id)
                .filter(|c| c.running)
            {
                c.running = false;
                c.interrupted = true;
            }
        }
        self.runs = super::runs::Runs::default();
        // What it started is kept: the same host reached again still runs them (a new host
        // does not: only the runs it lists stay this TUI's).
        self.dialogs.error(
            HOST_LOST_TITLE,
            format!(
                "huddle could not start a new one yet ({why}); it tries again every few seconds. \
                 Runs and edits need it. The runs that were going are interrupted: once a host \
                 runs, they are offered for resumption."
            ),
        );
    }

    /// The link reached a host again: the same one, after it cut this TUI off or could not be
    /// reached for a while (its runs go on and come again from their start, as a TUI opening
    /// next to them gets them), or a new one after the host went (the runs that were going are
    /// interrupted, offered for resumption).
    /// This TUI's focus, drafts and scroll stay; what it knew of runs is set aside first.
    pub fn on_reconnected(&mut self, r: super::command::Reconnected) -> Vec<Command> {
        self.host_lost = false;
        let mut groups: std::collections::HashSet<GroupId> =
            self.runs.iter().map(|run| run.group_id.clone()).collect();
        groups.extend(r.live.iter().filter_map(|key| match key {
            RunKey::Team { group_id } => Some(group_id.clone()),
            _ => None,
        }));
        for group_id in &groups {
            self.team_panel.forget(group_id);
        }
        self.runs = super::runs::Runs::default();
        // Calls that wait are asked again by the replay (those of a host that went, never).
        self.dialogs.settle_approvals(|_| true);
        // A new host runs nothing this TUI started (a run under the same key there is another
        // front end's); the same host still runs those it lists.
        if r.new_host {
            self.started.clear();
        } else {
            self.started.retain(|key| r.live.contains(key));
        }
        // What the loss said (runs interrupted) is taken back by what follows.
        self.dialogs
            .retain(|d| !matches!(d, Dialog::Notice(n) if n.title == HOST_LOST_TITLE));
        let text = if r.new_host {
            let offered = self.offer_interrupted(&r.live);
            let interrupted = match offered {
                0 => String::new(),
                1 => " 1 run was interrupted: y resumes it.".to_string(),
                n => format!(" {n} runs were interrupted: y resumes each."),
            };
            format!(
                "The huddle host stopped; a new one is running (pid {}).{interrupted}",
                r.pid
            )
        } else if let Some(why) = r.cut_off {
            format!("The huddle host cut this window off ({why}); it is connected again and the runs go on.")
        } else {
            // The same host, after this TUI could not reach it for a while (it was busy, say):
            // its runs went on, nothing is interrupted.
            format!(
                "The huddle host (pid {}) answers again; the runs it had go on.",
                r.pid
            )
        };
        self.flash(text, false);
        self.on_selection_changed()
    }

    fn request_quit(&mut self) -> Vec<Command> {
        if self.edits.is_remote() && !self.mine().is_empty() {
            self.dialogs.push(Dialog::Choice(Box::new(self.quit_offer())));
            Vec::new()
        } else if self.anything_running() && !self.edits.is_remote() {
            let text = self.quit_words();
            self.dialogs.confirm("Quit", text, ConfirmAction::Quit);
            Vec::new()
        } else {
            self.should_quit = true;
            vec![Command::Quit]
        }
    }

    /// The answer to the offer of an interrupted run: resume it now, or discard it.
    pub(super) fn on_interrupted(&mut self, target: Interruption, resume: bool) -> Vec<Command> {
        match (target, resume) {
            (Interruption::Group(group_id), true) => {
                // The run resumed is the one shown.
                self.select_row(&Row::Group(group_id.clone()));
                let mut commands = self.on_selection_changed();
                self.team_panel.show_newest(&group_id);
                commands.push(Command::ResumeCycle { group_id });
                commands
            }
            (Interruption::Session(session_id), true) => {
                self.select_row(&Row::Session(session_id.clone()));
                let mut commands = self.on_selection_changed();
                commands.push(Command::ResumeReflection { session_id });
                commands
            }
            (Interruption::Group(group_id), false) => {
                match self.edits.discard_interrupted(&group_id) {
                    Ok(()) => self.flash("the interrupted run was discarded", false),
                    Err(e) => self.dialogs.error("Not discarded", e.to_string()),
                }
                Vec::new()
            }
            (Interruption::Session(session_id), false) => {
                match self.edits.discard_reflection(&session_id) {
                    Ok(()) => self.flash("the interrupted reflection was discarded", false),
                    Err(e) => self.dialogs.error("Not discarded", e.to_string()),
                }
                Vec::new()
            }
        }
    }

    /// Quitting a TUI of the host while runs it started go: leave them running (the default,
    /// unless one of them waits for you now: then stop them) or stop them. Runs other front
    /// ends started are left alone, only counted.
    pub fn quit_offer(&self) -> Choice {
        let mine = self.mine();
        let mut lines = vec!["Runs you started here are going:".to_string()];
        let mut waiting = false;
        for run in &mine {
            let line = self.org.read(|o| match &run.key {
                RunKey::Team { group_id } => o
                    .group(group_id)
                    .map(|g| format!("- `{}` ({} run)", g.name, g.mode)),
                RunKey::Reflection { session_id } => crate::describe::Names::of_session(o, session_id)
                    .map(|name| format!("- the reflection of `{name}`")),
                RunKey::Chat { session_id } => crate::describe::Names::of_session(o, session_id)
                    .map(|name| format!("- a chat turn of `{name}`")),
            });
            let waits = self.waits_for_you(run);
            waiting |= waits.is_some();
            lines.extend(line.map(|l| match waits {
                Some(what) => {
                    format!("{l}: waits for you ({what}), left running it waits until a TUI answers")
                }
                None => l,
            }));
        }
        let others = self.runs.iter().count() - mine.len();
        if others > 0 {
            lines.push(format!(
                "{others} other run(s) go on in the host (started elsewhere; quitting leaves them alone)."
            ));
        }
        lines.push(
            "Left running, they go on in the huddle host: open huddle again to see them where they are \
             (`huddle ps` lists them, `huddle attach` follows one)."
                .into(),
        );
        lines.push("Stopped, they end as the stop key ends them.".into());
        Choice {
            title: "Quit".into(),
            message: lines.join("\n"),
            options: vec![
                ChoiceOption {
                    key: 'l',
                    label: "leave them running".into(),
                    disabled: None,
                },
                ChoiceOption {
                    key: 's',
                    label: "stop them".into(),
                    disabled: None,
                },
            ],
            chosen: usize::from(waiting),
            verb: "quit".into(),
            action: ChoiceAction::Quit,
        }
    }

    /// What a run of this TUI waits for from a person now: a tool approval, a relay draft.
    fn waits_for_you(&self, run: &super::runs::RunState) -> Option<String> {
        let approval = self.dialogs.approvals().and_then(|a| {
            a.waiting()
                .find(|r| {
                    self.org.read(|o| {
                        o.session(&r.session_id)
                            .is_some_and(|s| s.group_id == run.group_id)
                    })
                })
                .map(|r| format!("approval of {}/{}", r.server, r.tool))
        });
        approval.or_else(|| {
            matches!(run.key, RunKey::Team { .. })
                .then(|| self.team_panel.cycles.get(&run.group_id))
                .flatten()
                .and_then(|c| c.relay.as_ref())
                .filter(|r| r.waits_for_you())
                .map(|_| "a relay draft".to_string())
        })
    }

    /// What quitting now does to the runs in progress: each team run (and a session's
    /// reflection) is kept as interrupted and resumes, after a restart, where its mode says; a
    /// chat turn is cut short.
    pub fn quit_words(&self) -> String {
        let mut lines = vec!["A run is in progress. Quit anyway?".to_string()];
        let mut chats = 0;
        for run in self.runs.iter() {
            match &run.key {
                crate::engine::events::RunKey::Team { group_id } => {
                    let line = self.org.read(|o| {
                        o.group(group_id).map(|g| {
                            format!(
                                "- `{}` ({} run) is kept as interrupted; after a restart it resumes {}.",
                                g.name,
                                g.mode,
                                g.mode.spec().resume
                            )
                        })
                    });
                    lines.extend(line);
                }
                crate::engine::events::RunKey::Reflection { session_id } => {
                    let name = self
                        .org
                        .read(|o| o.session(session_id).map(|s| s.name.clone()))
                        .unwrap_or_default();
                    lines.push(format!(
                        "- the reflection of `{name}` is kept as interrupted; after a restart it resumes {}.",
                        crate::model::Mode::OrchestratorReflect.spec().resume
                    ));
                }
                crate::engine::events::RunKey::Chat { .. } => chats += 1,
            }
        }
        if chats > 0 {
            lines.push(format!(
                "- {chats} chat turn(s) in flight are cut short (what arrived is kept; not resumed)."
            ));
        }
        lines.join("\n")
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
        self.selection_changed(true)
    }

    /// After the organization changed elsewhere: the cursor stays on what the composer is for
    /// (rows above it may have come or gone); when that was deleted (in another window), a
    /// notice says so, the focus goes to the sidebar, and the composer keeps its text for no
    /// target (never sent where the user did not choose).
    pub(super) fn follow_selection(&mut self) -> Vec<Command> {
        let Some(target) = self.composer.target().map(str::to_string) else {
            return Vec::new();
        };
        let row = self.org.read(|o| {
            if o.session(&target).is_some() {
                Some(Row::Session(target.clone()))
            } else {
                o.group(&target).map(|g| Row::Group(g.id.clone()))
            }
        });
        match row {
            Some(row) => {
                if self.org.read(|o| self.sidebar.selected_row(o)) != Some(row.clone()) {
                    self.select_row(&row);
                }
                Vec::new()
            }
            None => {
                let what = self
                    .shown_name
                    .take()
                    .unwrap_or_else(|| "what this window showed".into());
                self.flash(format!("`{what}` was deleted in another huddle window"), true);
                self.focus = Focus::Sidebar;
                self.composer.drop_target();
                self.held = true;
                self.selection_changed(false)
            }
        }
    }

    fn selection_changed(&mut self, retarget: bool) -> Vec<Command> {
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
        if retarget {
            self.held = false;
            self.composer
                .switch_target(session.clone().or_else(|| group.clone()));
        }
        self.shown_name = self.org.read(|o| match (&session, &group) {
            (Some(s), _) => crate::describe::Names::of_session(o, s),
            (None, Some(g)) => o.group(g).map(|g| g.name.clone()),
            _ => None,
        });
        self.edits.select(group.as_deref(), session.as_deref());
        if let Some(session_id) = session.filter(|_| load) {
            commands.push(Command::LoadTranscript { session_id });
        }
        commands.extend(with_cx!(self, cx => self.worktrees.on_selection(&mut cx)));
        commands.extend(self.find_repo_files(false));
        commands.extend(self.read_agent_card());
        commands
    }

    /// Folds, unfolds or toggles the selected group (the tools controller).
    fn fold(&mut self, collapse: Option<bool>) -> Vec<Command> {
        with_cx!(self, cx => tools::fold(&mut cx, &self.sidebar, collapse))
    }

    /// Jumps to the next (or previous) search match in the window drawn last.
    fn search_step(&mut self, forward: bool) {
        let window = self.layout.transcript_inner();
        with_cx!(self, cx => tools::search_step(&mut cx, &mut self.transcripts, window, forward));
    }

    /// Does what a controller asked of the app (see [`Then`]); `out` is what its call
    /// returned, the commands of these steps after its own.
    pub(super) fn after<T: Outcome>(&mut self, then: Vec<Then>, out: T) -> T {
        if then.is_empty() {
            return out;
        }
        let mut commands = Vec::new();
        for step in then {
            match step {
                Then::Cursor(row) => self.select_row(&row),
                Then::SelectionChanged => commands.extend(self.on_selection_changed()),
                Then::Focus(focus) => self.focus = focus,
                Then::Forget { group, sessions } => {
                    if let Some(group) = group {
                        self.team_panel.forget(&group);
                    }
                    self.transcripts.forget(&sessions);
                }
                Then::ComposerSent => {
                    self.composer.send();
                }
                Then::ComposerText(text) => self.composer.set_text(&text),
                Then::Deleted(removal) => {
                    if let Some(group) = &removal.group {
                        self.team_panel.forget(group);
                    }
                    self.transcripts.forget(&removal.sessions);
                    // The selection moves on, then the files go (in the runtime).
                    commands.extend(self.on_selection_changed());
                    commands.push(Command::RemoveFiles(removal));
                }
                Then::RevealCard { group, card } => self.transcripts.reveal_card = Some((group, card)),
                Then::Request(key, pending) => self.runs.request(&key, pending),
            }
        }
        out.and_then(commands)
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
        // Text typed for a target that went away is sent nowhere until one is chosen.
        if self.held {
            self.flash(
                "this text is for no one (what it was for was deleted): move to where it goes",
                true,
            );
            return Vec::new();
        }
        if self.is_team(&group_id)
            && let Some(commands) =
                with_cx!(self, cx => relay::send(&mut cx, &self.team_panel, &group_id, &text))
        {
            return commands;
        }
        if self.is_team(&group_id) && self.selected_session_id().is_none() {
            if let Some(commands) =
                with_cx!(self, cx => conversation::note_for_member(&mut cx, &group_id, &text))
            {
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
        if let Some(commands) = with_cx!(self, cx => conversation::send_resend(&mut cx, &mut self.transcripts, &session_id, &text))
        {
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

    /// A flash that stays until the state it reports changes (see [`App::settle_flash`]).
    pub(super) fn flash_until(&mut self, text: &str, tie: FlashTie) {
        super::flash::Flash::new(&mut self.flash, &mut self.flash_tie).until(text, tie);
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
        super::flash::Flash::new(&mut self.flash, &mut self.flash_tie).say(text, error);
    }

    /// The composer's placeholder says where the text goes.
    pub fn refresh_placeholder(&mut self) {
        self.composer.title = None;
        let text = match self.selected_group_id() {
            None => format!(
                "Create a team with {}, or select a session",
                self.keymap.key_label(Action::NewGroupFromPreset)
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
                        .read(|o| crate::describe::Names::of_session(o, sid))
                        .unwrap_or_default();
                    format!(
                        " Direct chat with {} (not a team run) ",
                        crate::text::sanitize::display(&name)
                    )
                });
                if let Some(title) = with_cx!(self, cx => conversation::resend_title(&cx, &self.transcripts))
                {
                    self.composer.title = Some(title);
                }
                if let Some(text) = with_cx!(self, cx => relay::placeholder(&cx, &self.team_panel, &gid)) {
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
                        self.keymap.key_label(Action::NewSession)
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
        if cards::trace_mouse(&mut self.trace_view, &self.layout, &ev) {
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
