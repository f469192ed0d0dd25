//! A text field in a popup: one line (rename, new session, max iterations; Enter accepts) or
//! several (a system prompt; Enter is a newline and Ctrl-S accepts). Esc cancels.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};
use tui_textarea::{TextArea, WrapMode};

use super::{DialogResult, Outcome, TextPurpose, centered, popup_block};

pub struct TextInput {
    pub title: String,
    pub purpose: TextPurpose,
    pub multiline: bool,
    pub area: TextArea<'static>,
    pub error: Option<String>,
    /// Whether the next undo or redo is a text replaced whole (from `$EDITOR`).
    steps: crate::tui::widgets::text_edit::Steps,
}

impl TextInput {
    pub fn new(title: impl Into<String>, purpose: TextPurpose, initial: &str, multiline: bool) -> TextInput {
        // Names and prompts come from files and models: never draw their control sequences.
        let initial = crate::tui::composer::for_textarea(initial);
        let lines: Vec<String> = if initial.is_empty() {
            vec![String::new()]
        } else {
            initial.lines().map(str::to_string).collect()
        };
        let mut area = TextArea::new(lines);
        area.set_wrap_mode(WrapMode::WordOrGlyph);
        area.set_cursor_line_style(Style::default());
        area.move_cursor(tui_textarea::CursorMove::Bottom);
        area.move_cursor(tui_textarea::CursorMove::End);
        // A one-line field opens with its value selected: typing replaces it, an arrow key
        // keeps it for editing. (A system prompt is edited, not replaced.)
        if !multiline && !initial.is_empty() {
            area.set_selection_style(Style::default().add_modifier(Modifier::REVERSED));
            area.select_all();
        }
        TextInput {
            title: title.into(),
            purpose,
            multiline,
            area,
            error: None,
            steps: Default::default(),
        }
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn paste(&mut self, text: &str) {
        let text = crate::tui::composer::for_textarea(text);
        self.steps = Default::default();
        if self.multiline {
            self.area.insert_str(text);
        } else {
            self.area.insert_str(text.replace('\n', " "));
        }
    }

    /// The text from `$EDITOR` replaces the field's (undoable with Ctrl-Z).
    pub fn replace_text(&mut self, text: &str) {
        let text = crate::tui::composer::for_textarea(text.strip_suffix('\n').unwrap_or(text));
        let text = if self.multiline {
            text
        } else {
            text.replace('\n', " ")
        };
        crate::tui::widgets::text_edit::replace(&mut self.area, &mut self.steps, &text);
        self.error = None;
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Enter if !self.multiline => return self.submit(),
            KeyCode::Char('s') if ctrl => return self.submit(),
            KeyCode::Enter => {
                self.area.insert_newline();
                return Outcome::Stay;
            }
            // The textarea's own Ctrl-M/Ctrl-J would break a one-line field.
            KeyCode::Char('m') | KeyCode::Char('j') if ctrl && !self.multiline => return Outcome::Stay,
            _ => {}
        }
        crate::tui::widgets::text_edit::edit(&mut self.area, &mut self.steps, *key);
        self.error = None;
        Outcome::Stay
    }

    fn submit(&mut self) -> Outcome {
        let text = self.text();
        let value = if self.multiline {
            text
        } else {
            text.trim().to_string()
        };
        Outcome::Done(DialogResult::Text(self.purpose.clone(), value))
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let (w, h) = if self.multiline { (76, 18) } else { (60, 6) };
        let rect = centered(area, w, h);
        frame.render_widget(Clear, rect);
        let block = popup_block(&self.title);
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        let [field, hint] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        frame.render_widget(&self.area, field);
        let hint_text = match (&self.error, self.multiline) {
            (Some(e), _) => crate::text::sanitize::display(e).into_owned(),
            (None, true) => "Ctrl-S save · Enter newline · Ctrl-O $EDITOR · Esc cancel".to_string(),
            (None, false) => "Enter accept · Esc cancel".to_string(),
        };
        frame.render_widget(
            Paragraph::new(Line::styled(
                hint_text,
                Style::default().add_modifier(Modifier::DIM),
            )),
            hint,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(input: &mut TextInput, code: KeyCode) {
        input.handle_key(&KeyEvent::new(code, KeyModifiers::NONE));
    }

    #[test]
    fn a_one_line_field_opens_selected_so_typing_replaces_and_an_arrow_keeps_it() {
        let purpose = TextPurpose::RenameGroup("g".into());
        let mut replaced = TextInput::new("Rename", purpose.clone(), "old name", false);
        for c in "new".chars() {
            press(&mut replaced, KeyCode::Char(c));
        }
        assert_eq!(replaced.text(), "new");

        let mut edited = TextInput::new("Rename", purpose.clone(), "old name", false);
        press(&mut edited, KeyCode::End);
        press(&mut edited, KeyCode::Char('!'));
        assert_eq!(edited.text(), "old name!");

        let mut prompt = TextInput::new("System prompt", purpose, "line one", true);
        press(&mut prompt, KeyCode::Char('x'));
        assert_eq!(
            prompt.text(),
            "line onex",
            "a multi-line editor is never replaced wholesale"
        );
    }
}
