//! A message to acknowledge: an error, a warning list, a result. Any of Enter, Esc, q closes.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{Outcome, centered, popup_block};
use crate::text::sanitize;

pub struct Notice {
    pub title: String,
    pub text: String,
    pub error: bool,
}

impl Notice {
    pub fn info(title: impl Into<String>, text: impl Into<String>) -> Notice {
        Notice {
            title: title.into(),
            text: text.into(),
            error: false,
        }
    }

    pub fn error(title: impl Into<String>, text: impl Into<String>) -> Notice {
        Notice {
            title: title.into(),
            text: text.into(),
            error: true,
        }
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Enter | KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char(' ') => Outcome::Close,
            _ => Outcome::Stay,
        }
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let text = sanitize::display(&self.text).into_owned();
        let width = 72u16.min(area.width);
        let inner = width.saturating_sub(4).max(1) as usize;
        let body: usize = text.lines().map(|l| l.chars().count() / inner + 1).sum();
        let rect = centered(area, width, (body as u16).saturating_add(4));
        frame.render_widget(Clear, rect);
        let mut block = popup_block(&self.title).padding(ratatui::widgets::Padding::horizontal(1));
        if self.error {
            block = block.border_style(Style::default().fg(Color::Red));
        }
        let mut lines: Vec<Line<'static>> = text.lines().map(|l| Line::raw(l.to_string())).collect();
        lines.push(Line::default());
        lines.push(Line::styled(
            "Enter to close",
            Style::default().add_modifier(ratatui::style::Modifier::DIM),
        ));
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(block),
            rect,
        );
    }
}
