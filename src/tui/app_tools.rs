//! Everyday tools on top of the main screen: folding groups in the sidebar, copying text out
//! (OSC 52), and `/` search in a transcript.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;
use super::app::{App, Focus};
use super::command::Command;
use super::search::{self, TranscriptSearch};
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
    pub(super) fn copy_answer(&mut self) -> Vec<Command> {
        let Some(id) = self.selected_session_id() else {
            self.flash("select a session to copy from", true);
            return Vec::new();
        };
        let text = self.views.get(&id).and_then(|v| {
            let in_view = (v.scroll_from_bottom() > 0)
                .then(|| v.top_message())
                .flatten()
                .map(|m| m.text.clone());
            in_view.or_else(|| v.last_answer().map(str::to_string))
        });
        match text.filter(|t| !t.is_empty()) {
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

    /// Opens the search line for the selected session's transcript.
    pub(super) fn start_search(&mut self) {
        let Some(id) = self.selected_session_id() else {
            self.flash("select a session to search its transcript", true);
            return;
        };
        self.focus = Focus::Transcript;
        self.search = Some(TranscriptSearch::new(id));
    }

    /// A key while the search query is typed.
    pub(super) fn search_input(&mut self, key: KeyEvent) -> Vec<Command> {
        let Some(s) = self.search.as_mut() else {
            return Vec::new();
        };
        let modified = key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => self.search = None,
            KeyCode::Enter if s.query.is_empty() => self.search = None,
            KeyCode::Enter => {
                s.editing = false;
                s.current = None;
                self.search_step(true);
            }
            KeyCode::Backspace => {
                s.query.pop();
            }
            KeyCode::Char(c) if !modified => s.query.push(c),
            _ => {}
        }
        Vec::new()
    }

    /// Jumps to the next (or previous) line with a match, wrapping round. The first jump
    /// starts from the top of the window.
    pub(super) fn search_step(&mut self, forward: bool) {
        let inner = self.layout.transcript_inner();
        let Some(s) = self.search.as_mut().filter(|s| !s.editing) else {
            return;
        };
        let Some(view) = self.views.get(&s.session_id) else {
            return;
        };
        let lines = view.all_lines(inner.width);
        let matches = search::matching_lines(&lines, &s.query);
        let height = inner.height as usize;
        let from = s.current.or_else(|| {
            // Just above the window's top line, so a match on screen is found first.
            let top = lines.len().saturating_sub(view.scroll_from_bottom() + height);
            if forward {
                top.checked_sub(1)
            } else {
                Some(top + height)
            }
        });
        let Some(target) = search::step(&matches, from, forward) else {
            s.position = None;
            let query = s.query.clone();
            self.flash(format!("no match for `{query}`"), true);
            return;
        };
        s.current = Some(target);
        let index = matches.iter().position(|&m| m == target).unwrap_or(0);
        s.position = Some((index + 1, matches.len()));
        view.set_scroll_from_bottom(search::scroll_to_show(target, lines.len(), height));
    }
}
