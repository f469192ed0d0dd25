//! The everyday tools controller, on top of the main screen: folding groups in the sidebar,
//! copying text out (OSC 52), `/` search in a transcript and its tool cursor; each asks its
//! pane and says how it went.

use ratatui::layout::Rect;

use super::{Cx, Then};
use crate::tui::action::Action;
use crate::tui::command::Command;
use crate::tui::layout::Focus;
use crate::tui::sidebar::{Row, Sidebar};
use crate::tui::team_panel::TeamPanel;
use crate::tui::transcript_pane::TranscriptPane;

/// Folds (`Some(true)`), unfolds (`Some(false)`) or toggles the selected group, or the
/// group of the selected session; the cursor lands on the group. Saved in `ui`.
pub fn fold(cx: &mut Cx, sidebar: &Sidebar, collapse: Option<bool>) -> Vec<Command> {
    if cx.focus != Focus::Sidebar {
        let key = cx.keymap.key_label(Action::FocusNext);
        cx.flash
            .say(format!("folding works in the sidebar ({key} to it)"), true);
        return Vec::new();
    }
    let Some(fold) = cx.org.read(|o| sidebar.fold(o, collapse)) else {
        return Vec::new();
    };
    cx.edits.set_folded(&fold.group_id, fold.fold);
    cx.then(Then::Cursor(Row::Group(fold.group_id)));
    if fold.from_session {
        cx.then(Then::SelectionChanged);
    }
    Vec::new()
}

/// Copies the selected session's last answer, or, scrolled up, the message at the top of
/// the window: its raw transcript text, to the clipboard through the terminal (OSC 52).
/// On a team, copies the result of the run shown.
pub fn copy_answer(cx: &mut Cx, transcripts: &TranscriptPane, panel: &TeamPanel) -> Vec<Command> {
    let text = match (&cx.selection().session, &cx.selection().group) {
        (Some(id), _) => transcripts.copy_text(id),
        (None, Some(group_id)) if cx.is_team(group_id) => {
            panel.shown_cycle(group_id).and_then(|c| c.result.clone())
        }
        _ => {
            cx.flash.say("select a session or a team to copy from", true);
            return Vec::new();
        }
    };
    match text {
        None => {
            cx.flash.say("no answer to copy yet", true);
            Vec::new()
        }
        Some(text) => {
            cx.flash.say(
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
/// to the transcript, where Enter expands the call. `window` is the transcript's text area.
pub fn select_tool_call(cx: &mut Cx, transcripts: &mut TranscriptPane, window: Rect, up: bool) {
    let Some(id) = cx.selection().session.clone() else {
        cx.flash
            .say("select a session to go through its tool calls", true);
        return;
    };
    if transcripts.select_tool(&id, up, window.height as usize) {
        cx.then(Then::Focus(Focus::Transcript));
    } else {
        cx.flash.say("no tool calls in this transcript", true);
    }
}

/// Expands or collapses the tool call under the selected session's tool cursor; false
/// when there is none.
pub fn toggle_tool_call(cx: &mut Cx, transcripts: &mut TranscriptPane, window: Rect) -> bool {
    cx.selection()
        .session
        .as_ref()
        .is_some_and(|id| transcripts.toggle_tool(id, window.height as usize))
}

/// Opens the search line for the selected session's transcript.
pub fn start_search(cx: &mut Cx, transcripts: &mut TranscriptPane) {
    let Some(id) = cx.selection().session.clone() else {
        cx.flash.say("select a session to search its transcript", true);
        return;
    };
    cx.then(Then::Focus(Focus::Transcript));
    transcripts.start_search(id);
}

/// Jumps to the next (or previous) match in the window drawn last.
pub fn search_step(cx: &mut Cx, transcripts: &mut TranscriptPane, window: Rect, forward: bool) {
    if let Err(query) = transcripts.search_step(forward, window) {
        cx.flash.say(format!("no match for `{query}`"), true);
    }
}
