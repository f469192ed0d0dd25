//! The sub-agent card keys on a team (modes `dispatch` and `team`): walk the cards of the run
//! shown and expand or collapse one.

use super::app::{App, Focus};

impl App {
    /// The team whose timeline is on screen (a team row selected, not one of its sessions).
    fn team_on_screen(&self) -> Option<String> {
        if self.selected_session_id().is_some() {
            return None;
        }
        self.selected_group_id().filter(|g| self.is_team(g))
    }

    /// Moves the card selection of the team on screen up or down; false when no team's
    /// timeline is on screen (the key then goes through a session's tool calls).
    pub(super) fn select_card(&mut self, up: bool) -> bool {
        let Some(group_id) = self.team_on_screen() else {
            return false;
        };
        let moved = self
            .team_panel
            .shown_cycle_mut(&group_id)
            .is_some_and(|c| c.cards.select_step(up));
        if moved {
            self.focus = Focus::Transcript;
        } else {
            self.flash("no sub-agent cards in this run", true);
        }
        true
    }

    /// Expands or collapses the selected card of the team on screen (none selected: the
    /// newest).
    pub(super) fn toggle_card(&mut self) {
        let Some(group_id) = self.team_on_screen() else {
            self.flash("select a team to open its sub-agent cards", true);
            return;
        };
        let toggled = self
            .team_panel
            .shown_cycle_mut(&group_id)
            .and_then(|c| c.cards.toggle_selected());
        if toggled.is_none() {
            self.flash("no sub-agent cards in this run", true);
        }
    }
}
