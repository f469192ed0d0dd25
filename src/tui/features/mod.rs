//! Feature controllers: what the app does for one feature (team worktrees, relays, sub-agent
//! cards and the trace view, pruning, the everyday tools, conversations, team settings, the
//! organization's edits, the tool servers a session sees, run control), each behind a narrow context.
//!
//! The app routes a key, a dialog's result or an event to a controller in one line and lends
//! it a [`Cx`] for that call: the organization read-only, the edits (the one way to change
//! it), the dialog stack, the status line's flash, the keymap, the runs (read-only), the
//! sidebar's selection (worked out when first asked for) and the pane focused. A controller reaches nothing else: what else
//! it acts on (the team panel, the transcripts, the trace view) is an argument of the call, so
//! its signature says what it touches; what it asks of the app (a row selected, a pane
//! focused, a deleted group's views forgotten, the composer's text sent) it says with
//! [`Cx::then`], and the app does it when the call returns, its commands after the call's.
//!
//! A controller that keeps state is a struct the app owns ([`worktrees::Worktrees`]); one that
//! keeps none is a module of functions over a `Cx` ([`relay`], [`cards`], [`prune`],
//! [`tools`], [`conversation`], [`team`], [`edit`], [`tool_servers`], [`control`]).

pub mod cards;
pub mod control;
pub mod conversation;
pub mod edit;
pub mod presets;
pub mod prune;
pub mod relay;
pub mod team;
pub mod tool_servers;
pub mod tools;
pub mod worktrees;

use std::cell::OnceCell;

use super::command::Command;
use super::dialogs::DialogStack;
use super::flash::Flash;
use super::keymap::Keymap;
use super::layout::Focus;
use super::runs::{Pending, Runs};
use super::sidebar::{Row, Selection, Sidebar};
use crate::engine::events::RunKey;
use crate::model::{GroupId, SessionId};
use crate::store::OrgView;
use crate::workspace::{Edits, Removal};

/// What a controller is lent for one call.
pub struct Cx<'a> {
    /// The organization, read-only.
    pub org: &'a OrgView,
    /// The one way a controller changes the organization. Today the local application layer,
    /// answering at once; a host process would put its handle here (and answer with events),
    /// without another field of this context changing.
    pub edits: &'a Edits,
    pub dialogs: &'a mut DialogStack,
    pub flash: Flash<'a>,
    pub keymap: &'a Keymap,
    /// The runs in progress, read-only (is it busy, is it running).
    pub runs: &'a Runs,
    /// The sidebar, read-only: its selection is worked out when first asked for ([`Cx::selection`]).
    sidebar: &'a Sidebar,
    /// The selection, once worked out (most calls, each engine event's, never ask).
    selection: OnceCell<Selection>,
    /// The focused pane when the call began.
    pub focus: Focus,
    then: Vec<Then>,
}

/// What a controller asks of the app, done when its call returns (in order).
#[derive(Debug, Clone, PartialEq)]
pub enum Then {
    /// The sidebar's cursor on this row (if it is listed).
    Cursor(Row),
    /// The selection may have changed: remember it and load what is on screen now.
    SelectionChanged,
    /// Keys go to this pane.
    Focus(Focus),
    /// A group or sessions were deleted: their views go.
    Forget {
        group: Option<GroupId>,
        sessions: Vec<SessionId>,
    },
    /// The composer's text was sent: it is cleared and goes into the prompt history.
    ComposerSent,
    /// This text in the composer, to edit.
    ComposerText(String),
    /// Sessions (or a group) were deleted: their views go, the selection moves on, then their
    /// files go (in the runtime).
    Deleted(Removal),
    /// The team's timeline scrolls this card of the run shown into view.
    RevealCard { group: GroupId, card: String },
    /// A pause, resume or stop of this run was asked: shown as pending until the engine
    /// confirms it.
    Request(RunKey, Pending),
}

impl<'a> Cx<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        org: &'a OrgView,
        edits: &'a Edits,
        dialogs: &'a mut DialogStack,
        flash: Flash<'a>,
        keymap: &'a Keymap,
        runs: &'a Runs,
        sidebar: &'a Sidebar,
        focus: Focus,
    ) -> Cx<'a> {
        Cx {
            org,
            edits,
            dialogs,
            flash,
            keymap,
            runs,
            sidebar,
            selection: OnceCell::new(),
            focus,
            then: Vec::new(),
        }
    }

    /// The sidebar's selection (worked out once, at the first call: a controller asks for it
    /// before it changes the organization).
    pub fn selection(&self) -> &Selection {
        self.selection
            .get_or_init(|| self.org.read(|o| self.sidebar.selection(o)))
    }

    /// Asks the app for `step` once the call returns.
    pub fn then(&mut self, step: Then) {
        self.then.push(step);
    }

    /// The cursor on `row`, and what it shows loaded.
    pub fn select(&mut self, row: Row) {
        self.then(Then::Cursor(row));
        self.then(Then::SelectionChanged);
    }

    /// What the controller asked of the app.
    pub fn into_then(self) -> Vec<Then> {
        self.then
    }

    pub fn is_team(&self, group_id: &str) -> bool {
        self.org.read(|o| o.group(group_id).is_some_and(|g| g.is_team()))
    }

    /// True while the team's mode runs.
    pub fn team_running(&self, group_id: &str) -> bool {
        self.runs.team(group_id).is_some()
    }

    /// The selected team, when a team (or one of its members) is selected.
    pub fn selected_team(&self) -> Option<GroupId> {
        self.selection().group.clone().filter(|g| self.is_team(g))
    }

    /// The team whose timeline is on screen (a team row selected, not one of its members).
    pub fn team_on_screen(&self) -> Option<GroupId> {
        if self.selection().session.is_some() {
            return None;
        }
        self.selected_team()
    }

    /// The selected team; without one, the status line says to select one.
    pub fn team_or_say(&mut self) -> Option<GroupId> {
        let team = self.selected_team();
        if team.is_none() {
            self.flash.say("select a team first", true);
        }
        team
    }

    /// Says why an action is refused, in a popup.
    pub fn refuse(&mut self, title: &str, why: &str) {
        self.dialogs.error(title, why);
    }
}

/// What a controller's call returns, taking the commands of what it asked of the app after
/// its own. A call that returns no commands must ask for nothing that makes some.
pub trait Outcome {
    fn and_then(self, more: Vec<Command>) -> Self;
}

impl Outcome for Vec<Command> {
    fn and_then(mut self, more: Vec<Command>) -> Self {
        self.extend(more);
        self
    }
}

impl Outcome for Option<Vec<Command>> {
    fn and_then(self, more: Vec<Command>) -> Self {
        match self {
            Some(commands) => Some(commands.and_then(more)),
            None => {
                debug_assert!(more.is_empty(), "commands of a call that answered none");
                None
            }
        }
    }
}

impl<T> Outcome for Result<Vec<Command>, T> {
    fn and_then(self, more: Vec<Command>) -> Self {
        match self {
            Ok(commands) => Ok(commands.and_then(more)),
            Err(e) => {
                debug_assert!(more.is_empty(), "commands of a call that failed");
                Err(e)
            }
        }
    }
}

macro_rules! no_commands {
    ($($t:ty),*) => {$(
        impl Outcome for $t {
            fn and_then(self, more: Vec<Command>) -> Self {
                debug_assert!(more.is_empty(), "commands of a call that answers none");
                self
            }
        }
    )*};
}

no_commands!((), bool, Option<String>);
