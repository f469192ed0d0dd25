//! The `?` screen, generated from the keymap so it always tells the truth.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{Outcome, centered, popup_block};
use crate::tui::action::Context;
use crate::tui::keymap::Keymap;

/// What the sidebar's marks mean (drawn in `sidebar.rs`).
pub const SIDEBAR_MARKS: &[(&str, &str)] = &[
    ("●", "new output you have not seen yet"),
    ("?", "a tool call waits for your approval"),
    ("◈", "a team made from the repo's Squad folder (.squad/)"),
    ("▾ / ▸", "group unfolded / folded (with its session count)"),
    ("⠋ / ⏸ / !", "running / paused / cycle interrupted (resumable)"),
    ("± ↑N ✗ ⎇", "worktree: changes, unmerged commits, gone, branch"),
];

#[derive(Default)]
pub struct Help {
    pub scroll: u16,
}

impl Help {
    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            _ => return Outcome::Close,
        }
        Outcome::Stay
    }

    /// The help text, one line per binding, grouped by context.
    pub fn lines(keymap: &Keymap) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for context in [
            Context::Global,
            Context::Navigation,
            Context::Composer,
            Context::Search,
        ] {
            lines.push(Line::styled(
                context.title().to_string(),
                Style::default().add_modifier(Modifier::BOLD),
            ));
            for (action, keys) in keymap.bindings(context) {
                // Keys come from config.yaml: a stray control character is not drawn.
                let keys: Vec<String> = keys
                    .iter()
                    .map(|k| crate::text::sanitize::display(&k.to_string()).into_owned())
                    .collect();
                lines.push(Line::from(vec![
                    Span::styled(
                        format!("  {:<18} ", keys.join(" ")),
                        Style::default().fg(Color::Cyan),
                    ),
                    Span::raw(action.help().to_string()),
                ]));
            }
            lines.push(Line::default());
        }
        lines.push(Line::styled(
            "Text fields (the composer, dialogs)",
            Style::default().add_modifier(Modifier::BOLD),
        ));
        let quit = keymap.key_label(crate::tui::action::Action::Quit);
        let clear = format!("{quit} (with text)");
        for (keys, what) in crate::tui::widgets::text_edit::HELP
            .iter()
            .copied()
            .chain([(clear.as_str(), "clear the composer (Ctrl-Y: back); again: quit")])
        {
            lines.push(Line::from(vec![
                Span::styled(format!("  {keys:<18} "), Style::default().fg(Color::Cyan)),
                Span::raw(what.to_string()),
            ]));
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            "Sidebar marks",
            Style::default().add_modifier(Modifier::BOLD),
        ));
        for (mark, what) in SIDEBAR_MARKS {
            lines.push(Line::from(vec![
                Span::styled(format!("  {mark:<18} "), Style::default().fg(Color::Cyan)),
                Span::raw(*what),
            ]));
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            "Dialogs: ↑/↓ move · type to search · Enter accept · Esc cancel",
            Style::default().add_modifier(Modifier::DIM),
        ));
        lines.push(Line::styled(
            "Keys can be changed in config.yaml, e.g.  keys: { toggle_pause_cycle: ctrl-g }",
            Style::default().add_modifier(Modifier::DIM),
        ));
        lines
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, keymap: &Keymap) {
        let lines = Self::lines(keymap);
        let rect = centered(area, 72, (lines.len() as u16).saturating_add(2));
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .scroll((self.scroll, 0))
                .block(popup_block("Keys (j/k scroll · any other key closes)")),
            rect,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_explains_the_sidebar_marks_and_the_text_keys() {
        let text: String = Help::lines(&Keymap::default())
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>() + "\n")
            .collect();
        for needle in [
            "● ",
            "new output",
            "◈ ",
            "Squad folder",
            "Ctrl-Z / Ctrl-R",
            "Ctrl-C (with text)",
        ] {
            assert!(text.contains(needle), "{needle}:\n{text}");
        }
    }
}
