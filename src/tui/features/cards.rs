//! The sub-agent cards controller (modes `dispatch` and `team`): walk the cards of the run
//! shown and expand or collapse one; the trace view of the run shown, its keys and its wheel.
//! The cards are the run's view in the team panel (`execution_cards.rs`), changed here.

use crossterm::event::{KeyEvent, MouseEvent};

use super::{Cx, Then};
use crate::tui::action::Action;
use crate::tui::layout::{Focus, FrameLayout};
use crate::tui::mouse::{self, MouseTarget, WHEEL_LINES};
use crate::tui::team_panel::TeamPanel;
use crate::tui::trace_view::{TraceKey, TraceView};

/// Moves the card selection of the team on screen up or down; false when no team's
/// timeline is on screen (the key then goes through a session's tool calls).
pub fn select(cx: &mut Cx, panel: &mut TeamPanel, up: bool) -> bool {
    let Some(group_id) = cx.team_on_screen() else {
        return false;
    };
    let selected = panel.shown_cycle_mut(&group_id).and_then(|c| {
        c.cards
            .select_step(up)
            .then(|| c.cards.selected.clone())
            .flatten()
    });
    if let Some(card) = selected {
        cx.then(Then::Focus(Focus::Transcript));
        cx.then(Then::RevealCard {
            group: group_id,
            card,
        });
    } else {
        cx.flash.say("no sub-agent cards in this run", true);
    }
    true
}

/// Expands or collapses the selected card of the team on screen (none selected: the
/// newest).
pub fn toggle(cx: &mut Cx, panel: &mut TeamPanel) {
    let Some(group_id) = cx.team_on_screen() else {
        cx.flash.say("select a team to open its sub-agent cards", true);
        return;
    };
    let toggled = panel
        .shown_cycle_mut(&group_id)
        .and_then(|c| c.cards.toggle_selected());
    match toggled {
        Some(card) => cx.then(Then::RevealCard {
            group: group_id,
            card,
        }),
        None => cx.flash.say("no sub-agent cards in this run", true),
    }
}

/// Opens the trace view of the selected team's run shown (its newest, or the earlier one
/// browsed).
pub fn open_trace(cx: &mut Cx, trace: &mut Option<TraceView>) {
    match cx.selected_team() {
        Some(group_id) => *trace = Some(TraceView::new(group_id)),
        None => cx.flash.say("select a team to see the trace of its run", true),
    }
}

/// What the trace view did with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceRoute {
    /// It is not open: the key goes on.
    NotOpen,
    /// It took the key (scrolled, or closed).
    Taken,
    /// A global key: the app performs it, the view stays open over it.
    Perform(Action),
}

/// A key while the trace view is open: it scrolls or closes the view (the quit key closes
/// it; other global keys still work).
pub fn trace_key(trace: &mut Option<TraceView>, key: &KeyEvent, global: Option<Action>) -> TraceRoute {
    let Some(view) = trace.as_mut() else {
        return TraceRoute::NotOpen;
    };
    match global {
        Some(Action::Quit) => *trace = None,
        Some(action) => return TraceRoute::Perform(action),
        None => {
            if view.handle_key(key) == TraceKey::Close {
                *trace = None;
            }
        }
    }
    TraceRoute::Taken
}

/// The mouse while the trace view is open: the wheel scrolls it, nothing under it is
/// clicked. False when it is not open.
pub fn trace_mouse(trace: &mut Option<TraceView>, layout: &FrameLayout, ev: &MouseEvent) -> bool {
    let Some(view) = trace.as_mut() else {
        return false;
    };
    let lines = WHEEL_LINES.unsigned_abs();
    match mouse::hit_test(layout, ev) {
        Some(MouseTarget::ScrollUp(_)) => view.scroll = view.scroll.saturating_sub(lines),
        Some(MouseTarget::ScrollDown(_)) => view.scroll = view.scroll.saturating_add(lines),
        _ => {}
    }
    true
}
