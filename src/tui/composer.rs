//! The composer: a soft-wrapping tui-textarea with readline keys, the prompts sent (recalled
//! with Up/Down, kept across runs) and the unsent draft of each session and team (kept across
//! selection changes and restarts). The app routes huddle's keys (send, newline, pause, stop,
//! quit) before a key ever reaches the textarea, whose own defaults would take them. Saving is
//! the runtime's: it compares [`Composer::drafts_revision`] and the history's revision after
//! each key and hands snapshots to a background saver.

use std::collections::BTreeMap;

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
    crate::text::sanitize::editable(text)
}

/// What changed since the last save: the drafts, the history (None: unchanged).
pub type Unsaved = (Option<BTreeMap<String, String>>, Option<Vec<String>>);

pub struct Composer {
    pub area: TextArea<'static>,
    /// Prompts sent (to any session or team), for recall.
    pub history: PromptHistory,
    /// The unsent text of the targets not shown, by session or group id.
    drafts: BTreeMap<String, String>,
    /// Whose draft the textarea holds (a session's or a team's id; None: nothing selected).
    target: Option<String>,
    /// Bumped on every change of the text or the drafts, so the saver knows when to save.
    revision: u64,
    /// The drafts and history of earlier runs are in (nothing is saved before: it would write
    /// over them).
    restored: bool,
    /// The revisions last handed to the saver (drafts, history).
    saved: (u64, u64),
    /// The files named with `@` in the text, and the completion of an `@word`.
    pub attach: super::composer_attachments::ComposerAttachments,
    /// The box's title when it is not " Message " (a direct chat with a team member).
    pub title: Option<String>,
    /// Whether the next undo or redo is a text replaced whole (from `$EDITOR`).
    steps: super::widgets::text_edit::Steps,
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
            drafts: BTreeMap::new(),
            target: None,
            revision: 0,
            restored: false,
            saved: (0, 0),
            attach: Default::default(),
            title: None,
            steps: Default::default(),
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
        self.changed();
        text
    }

    /// Empties the composer (Ctrl-C): the text stays in the yank buffer (Ctrl-Y brings it back)
    /// and in the undo history (Ctrl-Z).
    pub fn clear(&mut self) {
        let text = self.take();
        self.area.set_yank_text(text);
        self.history.reset();
    }

    /// Moves to `target`'s draft: the text typed so far is kept as the previous target's draft
    /// and the new target's draft (if any) comes back, cursor at its end.
    pub fn switch_target(&mut self, target: Option<String>) {
        if target == self.target {
            return;
        }
        let text = self.take();
        if let Some(old) = self.target.take() {
            self.store_draft(old, text);
        } else if !text.trim().is_empty() {
            // Typed with nothing selected: it follows the first selection rather than vanish.
            self.drafts
                .entry(target.clone().unwrap_or_default())
                .or_insert(text);
        }
        let draft = target.as_ref().and_then(|t| self.drafts.remove(t));
        self.target = target;
        self.history.reset();
        if let Some(draft) = draft {
            self.area.insert_str(for_textarea(&draft));
        }
        self.changed();
    }

    /// The session or group the text is for.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// The target went away (deleted in another window): the text stays, for no one, until
    /// a target is chosen (then it follows, as text typed with nothing selected does).
    pub fn drop_target(&mut self) {
        self.target = None;
        self.history.reset();
        self.changed();
    }

    fn store_draft(&mut self, target: String, text: String) {
        if text.trim().is_empty() {
            self.drafts.remove(&target);
        } else {
            self.drafts.insert(target, text);
        }
    }

    /// Every target's draft, the one being typed included: what the saver writes.
    pub fn drafts_snapshot(&self) -> BTreeMap<String, String> {
        let mut drafts = self.drafts.clone();
        if let Some(target) = &self.target {
            let text = self.text();
            if !text.trim().is_empty() {
                drafts.insert(target.clone(), text);
            }
        }
        drafts.remove("");
        drafts
    }

    /// The text or a draft changed other than by a key (which says itself what its undo is).
    fn changed(&mut self) {
        self.revision += 1;
        self.steps = Default::default();
    }

    /// Changes when the text or any draft changes.
    pub fn drafts_revision(&self) -> u64 {
        self.revision
    }

    /// The drafts and history read at start. What was typed meanwhile wins over a stored draft;
    /// prompts sent meanwhile stay the newest.
    pub fn restore(&mut self, drafts: BTreeMap<String, String>, history: Vec<String>) {
        for (target, text) in drafts {
            self.drafts.entry(target).or_insert(text);
        }
        self.history.restore(history);
        self.restored = true;
        // Saved once restored: what was typed before the files were read is written too.
        self.saved = (u64::MAX, u64::MAX);
        if self.is_empty()
            && let Some(draft) = self.target.as_ref().and_then(|t| self.drafts.remove(t))
        {
            self.area.insert_str(for_textarea(&draft));
            self.area.move_cursor(CursorMove::Bottom);
            self.area.move_cursor(CursorMove::End);
            self.steps = Default::default();
        }
    }

    /// What changed since the last call, for the saver: the drafts, the history, or both.
    /// Nothing until [`Composer::restore`] ran.
    pub fn unsaved(&mut self) -> Option<Unsaved> {
        if !self.restored {
            return None;
        }
        let now = (self.revision, self.history.revision());
        if now == self.saved {
            return None;
        }
        let drafts = (now.0 != self.saved.0).then(|| self.drafts_snapshot());
        let history = (now.1 != self.saved.1).then(|| self.history.entries().to_vec());
        self.saved = now;
        Some((drafts, history))
    }

    /// Everything, for the last save on quit (None before the files were read).
    pub fn all_inputs(&self) -> Option<(BTreeMap<String, String>, Vec<String>)> {
        self.restored
            .then(|| (self.drafts_snapshot(), self.history.entries().to_vec()))
    }

    /// The text from `$EDITOR` replaces the composer's (undoable with Ctrl-Z).
    pub fn replace_text(&mut self, text: &str) {
        let text = for_textarea(text.strip_suffix('\n').unwrap_or(text));
        self.history.reset();
        self.changed();
        super::widgets::text_edit::replace(&mut self.area, &mut self.steps, &text);
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
        self.changed();
    }

    /// The word before the cursor on its line (from the last space to the cursor).
    pub fn word_at_cursor(&self) -> Option<String> {
        let tui_textarea::DataCursor(row, col) = self.area.cursor();
        let line = self.area.lines().get(row)?;
        let before: String = line.chars().take(col).collect();
        let word = before.rsplit(char::is_whitespace).next().unwrap_or("");
        (!word.is_empty()).then(|| word.to_string())
    }

    /// The word being typed: the one before the cursor when the cursor ends the text.
    pub fn typing_word(&self) -> Option<String> {
        let tui_textarea::DataCursor(row, col) = self.area.cursor();
        let lines = self.area.lines();
        let at_end = row + 1 == lines.len() && lines.get(row).is_some_and(|l| l.chars().count() == col);
        if at_end { self.word_at_cursor() } else { None }
    }

    /// Replaces the word before the cursor (a completion).
    pub fn replace_word_at_cursor(&mut self, with: &str) {
        let Some(word) = self.word_at_cursor() else {
            return;
        };
        for _ in 0..word.chars().count() {
            self.area.delete_char();
        }
        self.area.insert_str(with);
        self.changed();
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
        self.changed();
    }

    /// A key for the text: readline keys ([`super::widgets::text_edit`]) and typing.
    pub fn input(&mut self, key: KeyEvent) {
        if super::widgets::text_edit::edit(&mut self.area, &mut self.steps, key) {
            self.revision += 1;
        }
    }

    pub fn paste(&mut self, text: &str) {
        self.area.insert_str(for_textarea(text));
        self.changed();
    }

    pub fn set_placeholder(&mut self, text: &str) {
        if self.area.placeholder_text() != text {
            self.area.set_placeholder_text(text);
        }
    }

    /// Rows the composer needs at `width`: the text's and one per attachment listed under it.
    pub fn rows(&self, width: u16, max: u16) -> u16 {
        self.text_rows(width, max) + self.attach.rows()
    }

    /// Rows the text needs at `width` (soft-wrapped), between 1 and `max`. A line exactly as
    /// wide as the box takes one row (the cursor after it stays on that row).
    fn text_rows(&self, width: u16, max: u16) -> u16 {
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
        let listed = self.attach.rows().min(inner.height.saturating_sub(1));
        let [inner, listed_area] = ratatui::layout::Layout::vertical([
            ratatui::layout::Constraint::Min(1),
            ratatui::layout::Constraint::Length(listed),
        ])
        .areas(inner);
        if listed > 0 {
            frame.render_widget(Paragraph::new(self.attach.lines()), listed_area);
        }
        if focused {
            self.render_completion(frame, area);
        }
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

impl Composer {
    /// The completions of an `@word`, in a box just above the composer, the current one marked.
    fn render_completion(&self, frame: &mut Frame<'_>, composer: Rect) {
        let Some(c) = &self.attach.completion else {
            return;
        };
        let height = (c.candidates.len() as u16 + 2).min(composer.y);
        if height < 3 {
            return;
        }
        let width = c
            .candidates
            .iter()
            .map(|s| unicode_width::UnicodeWidthStr::width(s.as_str()) as u16 + 4)
            .max()
            .unwrap_or(10)
            .max(24)
            .min(composer.width);
        let rect = Rect::new(composer.x, composer.y - height, width, height);
        let lines: Vec<ratatui::text::Line<'static>> = c
            .candidates
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let text = format!("@{}", crate::text::sanitize::display(s));
                if i == c.index {
                    ratatui::text::Line::styled(text, Style::default().add_modifier(Modifier::REVERSED))
                } else {
                    ratatui::text::Line::raw(text)
                }
            })
            .collect();
        frame.render_widget(ratatui::widgets::Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(super::widgets::pane(" Tab next · Esc close ".into(), true)),
            rect,
        );
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

    #[test]
    fn each_target_keeps_its_draft() {
        let mut c = Composer::default();
        c.switch_target(Some("a".into()));
        c.set_text("for a");
        c.switch_target(Some("b".into()));
        assert!(c.is_empty(), "b has no draft");
        c.set_text("for b");
        let before = c.drafts_revision();
        c.switch_target(Some("a".into()));
        assert_eq!(c.text(), "for a");
        assert!(c.drafts_revision() > before);
        let snapshot = c.drafts_snapshot();
        assert_eq!(snapshot.get("a").map(String::as_str), Some("for a"));
        assert_eq!(snapshot.get("b").map(String::as_str), Some("for b"));
        // Sending empties a's draft; b's stays.
        c.send();
        assert_eq!(c.drafts_snapshot().len(), 1);
        c.switch_target(Some("b".into()));
        assert_eq!(c.text(), "for b");
    }

    #[test]
    fn restored_drafts_do_not_replace_typed_text() {
        let mut c = Composer::default();
        c.switch_target(Some("a".into()));
        let mut stored = BTreeMap::new();
        stored.insert("a".to_string(), "stored a".to_string());
        stored.insert("b".to_string(), "stored b".to_string());
        c.restore(stored.clone(), vec!["old prompt".into()]);
        assert_eq!(c.text(), "stored a", "an empty composer takes its draft");
        c.recall_older();
        assert_eq!(c.text(), "stored a", "a draft is not replaced by history");
        let mut typed = Composer::default();
        typed.switch_target(Some("a".into()));
        typed.set_text("typed");
        typed.restore(stored, Vec::new());
        assert_eq!(typed.text(), "typed");
    }

    #[test]
    fn nothing_is_saved_before_the_files_are_read_then_only_changes() {
        let mut c = Composer::default();
        c.switch_target(Some("a".into()));
        c.set_text("early");
        assert_eq!(c.unsaved(), None, "would write over the stored files");
        c.restore(BTreeMap::new(), vec!["old".into()]);
        let (drafts, history) = c.unsaved().unwrap();
        assert_eq!(drafts.unwrap()["a"], "early");
        assert_eq!(history.unwrap(), vec!["old".to_string()]);
        assert_eq!(c.unsaved(), None, "nothing new");
        c.send();
        let (drafts, history) = c.unsaved().unwrap();
        assert!(drafts.unwrap().is_empty(), "the sent draft is gone");
        assert_eq!(history.unwrap().len(), 2);
        c.input(KeyEvent::new(
            crossterm::event::KeyCode::Char('x'),
            crossterm::event::KeyModifiers::NONE,
        ));
        let (drafts, history) = c.unsaved().unwrap();
        assert!(drafts.is_some() && history.is_none());
    }

    #[test]
    fn clearing_keeps_the_text_for_yank() {
        let mut c = Composer::default();
        c.set_text("precious");
        c.clear();
        assert!(c.is_empty());
        c.input(KeyEvent::new(
            crossterm::event::KeyCode::Char('y'),
            crossterm::event::KeyModifiers::CONTROL,
        ));
        assert_eq!(c.text(), "precious");
    }
}
