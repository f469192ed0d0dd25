//! Everyday tools on top of the main screen: folding groups in the sidebar, copying text out
//! (OSC 52), `/` search in a transcript and its tool cursor; each asks its pane and says how
//! it went.

use super::action::Action;
use super::app::{App, Focus};
use super::command::Command;
use super::sidebar::Row;

impl App {
    /// Folds (`Some(true)`), unfolds (`Some(false)`) or toggles the selected group, or the
    /// group of the selected session; the cursor lands on the group. Saved in `ui`.
    pub(super) fn fold(&mut self, collapse: Option<bool>) -> Vec<Command> {
        if self.focus != Focus::Sidebar {
            let key = self.keymap.key_label(Action::FocusNext);
            self.flash(format!("folding works in the sidebar ({key} to it)"), true);
            return Vec::new();
        }
        let Some(fold) = self.org.read(|o| self.sidebar.fold(o, collapse)) else {
            return Vec::new();
        };
        self.edits.set_folded(&fold.group_id, fold.fold);
        self.select_row(&Row::Group(fold.group_id));
        if fold.from_session {
            return self.on_selection_changed();
        }
        Vec::new()
    }

    /// Copies the selected session's last answer, or, scrolled up, the message at the top of
    /// the window: its raw transcript text, to the clipboard through the terminal (OSC 52).
    /// On a team, copies the result of the run shown.
    pub(super) fn copy_answer(&mut self) -> Vec<Command> {
        let text = match (self.selected_session_id(), self.selected_group_id()) {
            (Some(id), _) => self.transcripts.copy_text(&id),
            (None, Some(group_id)) if self.is_team(&group_id) => self
                .team_panel
                .shown_cycle(&group_id)
                .and_then(|c| c.result.clone()),
            _ => {
                self.flash("select a session or a team to copy from", true);
                return Vec::new();
            }
        };
        match text {
            None => {
                self.flash("no answer to copy yet", true);
                Vec::new()
            }
            Some(text) => {
                self.flash(
                    format!(
                        "copied {} line(s), {} characters (OSC 52: the terminal must allow it)",
                        text.lines().count(),
                        text.chars().count()
                    ),
                    false,
                );
                vec![Command::CopyToClipboard { text }]
            }
        }
    }

    /// Moves the selected session's tool cursor to the call above (`up`) or below; focus goes
    /// to the transcript, where Enter expands the call.
    pub(super) fn select_tool_call(&mut self, up: bool) {
        let Some(id) = self.selected_session_id() else {
            self.flash("select a session to go through its tool calls", true);
            return;
        };
        let height = self.layout.transcript_inner().height as usize;
        if self.transcripts.select_tool(&id, up, height) {
            self.focus = Focus::Transcript;
        } else {
            self.flash("no tool calls in this transcript", true);
        }
    }

    /// Expands or collapses the tool call under the selected session's tool cursor; false
    /// when there is none.
    pub(super) fn toggle_tool_call(&mut self) -> bool {
        let height = self.layout.transcript_inner().height as usize;
        self.selected_session_id()
            .is_some_and(|id| self.transcripts.toggle_tool(&id, height))
    }

    /// Opens the search line for the selected session's transcript.
    pub(super) fn start_search(&mut self) {
        let Some(id) = self.selected_session_id() else {
            self.flash("select a session to search its transcript", true);
            return;
        };
        self.focus = Focus::Transcript;
        self.transcripts.start_search(id);
    }

    /// Jumps to the next (or previous) match in the window drawn last.
    pub(super) fn search_step(&mut self, forward: bool) {
        if let Err(query) = self
            .transcripts
            .search_step(forward, self.layout.transcript_inner())
        {
            self.flash(format!("no match for `{query}`"), true);
        }
    }
}
