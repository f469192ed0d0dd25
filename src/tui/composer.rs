//! The composer: a soft-wrapping tui-textarea, and the prompts sent from this run, recalled in
//! it with Up/Down. The app routes huddle's keys (send, newline, pause, stop, quit) before a
//! key ever reaches the textarea, whose own defaults would take them.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Paragraph, Wrap};
use tui_textarea::{CursorMove, TextArea, WrapMode};

use super::history::PromptHistory;

/// Text made safe for a textarea: [`crate::text::sanitize::display`] (no escape sequences,
/// control, bidi or invisible characters; `\r\n` to `\n`), except that tabs are kept, since
/// the textarea draws them itself and what is typed or loaded there may be sent or saved.
pub fn for_textarea(text: &str) -> String {
    text.split('\t')
        .map(|piece| crate::text::sanitize::display(piece))
        .collect::<Vec<_>>()
        .join("\t")
}

pub struct Composer {
    pub area: TextArea<'static>,
    /// Prompts sent from this run (to any session or team), for recall.
    pub history: PromptHistory,
    /// The box's title when it is not " Message " (a direct chat with a team member).
    pub title: Option<String>,
}

impl Default for Composer {
    fn default() -> Self {
        let mut area = TextArea::default();
        area.set_wrap_mode(WrapMode::WordOrGlyph);
        area.set_cursor_line_style(Style::default());
        area.set_placeholder_style(Style::default().add_modifier(Modifier::DIM));
        Composer {
            area,
            history: PromptHistory::default(),
            title: None,
        }
    }
}

impl Composer {
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// Takes the text out, leaving the composer empty.
    pub fn take(&mut self) -> String {
        let text = self.text();
        self.area.select_all();
        self.area.cut();
        self.area.clear();
        text
    }

    /// Takes the text out to send it; it is remembered for recall.
    pub fn send(&mut self) -> String {
        let text = self.take();
        self.history.record(&text);
        text
    }

    /// Remembers a prompt sent from elsewhere (a reflection's goal) for recall.
    pub fn record(&mut self, prompt: &str) {
        self.history.record(prompt);
    }

    /// Replaces the text (a recalled prompt); the cursor goes to its end.
    pub fn set_text(&mut self, text: &str) {
        self.take();
        self.area.insert_str(for_textarea(text));
    }

    /// The cursor's line and whether it is the first and the last line of the text.
    pub fn cursor_on_edges(&self) -> (bool, bool) {
        let row = self.area.cursor().0;
        (row == 0, row + 1 >= self.area.lines().len())
    }

    pub fn move_cursor(&mut self, m: CursorMove) {
        self.area.move_cursor(m);
    }

    pub fn insert_newline(&mut self) {
        self.area.insert_newline();
    }

    pub fn input(&mut self, key: KeyEvent) {
        self.area.input(key);
    }

    pub fn paste(&mut self, text: &str) {
        self.area.insert_str(for_textarea(text));
    }

    pub fn set_placeholder(&mut self, text: &str) {
        if self.area.placeholder_text() != text {
            self.area.set_placeholder_text(text);
        }
    }

    /// Rows the text needs at `width` (soft-wrapped), between 1 and `max`. A line exactly as
    /// wide as the box takes one row (the cursor after it stays on that row).
    pub fn rows(&self, width: u16, max: u16) -> u16 {
        let w = width.max(1) as usize;
        let rows: usize = self
            .area
            .lines()
            .iter()
            .map(|l| {
                unicode_width::UnicodeWidthStr::width(l.as_str())
                    .div_ceil(w)
                    .max(1)
            })
            .sum();
        rows.clamp(1, max as usize) as u16
    }

    /// Up: on the first line, with nothing typed (or a recalled prompt left as it was), the
    /// prompt sent before; otherwise the cursor moves up.
    pub fn recall_older(&mut self) {
        let (first, _) = self.cursor_on_edges();
        let text = self.text();
        if first && self.history.may_browse(&text) {
            if let Some(text) = self.history.older().map(str::to_string) {
                self.set_text(&text);
            }
            return;
        }
        self.move_cursor(CursorMove::Up);
    }

    /// Down: on the last line of a recalled prompt, the next one (after the newest, an empty
    /// composer); otherwise the cursor moves down.
    pub fn recall_newer(&mut self) {
        let (_, last) = self.cursor_on_edges();
        let text = self.text();
        if last && self.history.browsing() && self.history.may_browse(&text) {
            if let Some(next) = self.history.newer().map(str::to_string) {
                self.set_text(&next);
            }
            return;
        }
        self.move_cursor(CursorMove::Down);
    }

    /// Draws the composer in its box: the textarea with its cursor while focused, else the text
    /// (or the dim placeholder saying where it goes).
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, focused: bool) {
        let title = self.title.as_deref().unwrap_or(" Message ");
        let block = super::widgets::pane(title.to_string(), focused);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if focused {
            frame.render_widget(&self.area, inner);
        } else if self.is_empty() {
            frame.render_widget(
                Paragraph::new(self.area.placeholder_text().to_string())
                    .style(Style::default().add_modifier(Modifier::DIM)),
                inner,
            );
        } else {
            frame.render_widget(Paragraph::new(self.text()).wrap(Wrap { trim: false }), inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textarea_text_is_sanitised_but_keeps_tabs() {
        let text = for_textarea("a\tb\x1b[31mred\x1b[0m\u{202E}x\r\ny\x07");
        assert_eq!(text, "a\tbredx\ny");
    }

    #[test]
    fn sent_text_is_recalled_and_a_draft_is_not_replaced() {
        let mut c = Composer::default();
        c.set_text("first");
        assert_eq!(c.send(), "first");
        assert!(c.is_empty());
        c.record("a goal");
        c.recall_older();
        assert_eq!(c.text(), "a goal");
        c.recall_older();
        assert_eq!(c.text(), "first");
        c.recall_newer();
        c.recall_newer();
        assert_eq!(c.text(), "", "past the newest");
        c.set_text("draft");
        c.recall_older();
        assert_eq!(c.text(), "draft", "typed text stays");
    }
}
