//! The sub-agent card keys on a team (modes `dispatch` and `team`): walk the cards of the run
//! shown and expand or collapse one; the trace view of the run shown.

use crossterm::event::KeyEvent;

use super::action::Action;
use super::app::{App, Focus};
use super::command::Command;
use super::trace_view::{TraceKey, TraceView};

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
        let selected = self.team_panel.shown_cycle_mut(&group_id).and_then(|c| {
            c.cards
                .select_step(up)
                .then(|| c.cards.selected.clone())
                .flatten()
        });
        if let Some(card) = selected {
            self.focus = Focus::Transcript;
            self.transcripts.reveal_card = Some((group_id, card));
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
        match toggled {
            Some(card) => self.transcripts.reveal_card = Some((group_id, card)),
            None => self.flash("no sub-agent cards in this run", true),
        }
    }

    /// Opens the trace view of the selected team's run shown (its newest, or the earlier one
    /// browsed).
    pub(super) fn open_trace(&mut self) {
        match self.selected_group_id().filter(|g| self.is_team(g)) {
            Some(group_id) => self.trace_view = Some(TraceView::new(group_id)),
            None => self.flash("select a team to see the trace of its run", true),
        }
    }

    /// A key while the trace view is open: it scrolls or closes the view (global keys still
    /// work: the view stays open over them). None when the view is not open.
    pub(super) fn trace_view_key(&mut self, key: &KeyEvent, global: Option<Action>) -> Option<Vec<Command>> {
        let view = self.trace_view.as_mut()?;
        if let Some(action) = global {
            if action == Action::Quit {
                self.trace_view = None;
                return Some(Vec::new());
            }
            return Some(self.perform(action));
        }
        if view.handle_key(key) == TraceKey::Close {
            self.trace_view = None;
        }
        Some(Vec::new())
    }

    /// The mouse while the trace view is open: the wheel scrolls it, nothing under it is
    /// clicked. False when it is not open.
    pub(super) fn trace_view_mouse(&mut self, ev: &crossterm::event::MouseEvent) -> bool {
        use super::mouse::{MouseTarget, WHEEL_LINES};
        let Some(view) = self.trace_view.as_mut() else {
            return false;
        };
        let lines = WHEEL_LINES.unsigned_abs();
        match super::mouse::hit_test(&self.layout, ev) {
            Some(MouseTarget::ScrollUp(_)) => view.scroll = view.scroll.saturating_sub(lines),
            Some(MouseTarget::ScrollDown(_)) => view.scroll = view.scroll.saturating_add(lines),
            _ => {}
        }
        true
    }
}
