//! Yes/no: `y` confirms, `n` or Esc cancels; Enter confirms only what deletes or overwrites
//! nothing (for those, Enter is no).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{ConfirmAction, DialogResult, Outcome, centered, popup_block};
use crate::text::sanitize;

pub struct Confirm {
    pub title: String,
    pub message: String,
    pub action: ConfirmAction,
}

impl Confirm {
    pub fn new(title: impl Into<String>, message: impl Into<String>, action: ConfirmAction) -> Confirm {
        Confirm {
            title: title.into(),
            message: message.into(),
            action,
        }
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Enter if self.action.is_destructive() => Outcome::Close,
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                Outcome::Done(DialogResult::Confirmed(self.action.clone()))
            }
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => Outcome::Close,
            _ => Outcome::Stay,
        }
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let text = sanitize::display(&self.message).into_owned();
        let width = 64u16;
        let inner = width.saturating_sub(4).max(1) as usize;
        let body_lines: usize = text.lines().map(|l| l.chars().count() / inner + 1).sum();
        let height = (body_lines as u16).saturating_add(4);
        let rect = centered(area, width, height);
        frame.render_widget(Clear, rect);
        let mut lines: Vec<Line<'static>> = text.lines().map(|l| Line::raw(l.to_string())).collect();
        lines.push(Line::default());
        let (yes, no) = if self.action.is_destructive() {
            ("y", "n/Enter")
        } else {
            ("y/Enter", "n")
        };
        lines.push(Line::from(vec![
            Span::styled(yes, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(" yes   "),
            Span::styled(no, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(" no"),
        ]));
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(popup_block(&self.title).padding(ratatui::widgets::Padding::horizontal(1))),
            rect,
        );
    }
}
