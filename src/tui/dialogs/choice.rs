//! A question with options and a safe default: the message, then the options (one chosen, `←/→`,
//! `Tab` or an option's letter change it); only `y` goes ahead with the chosen option, and
//! Enter, Esc, `n` and `q` cancel. Used to bring a worktree's work back (merge or cherry-pick)
//! and to delete a team whose worktrees hold work (keep them or remove them).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{DialogResult, Outcome, centered, popup_block};
use crate::model::GroupId;
use crate::text::sanitize;
use crate::worktrees::MergePlan;

/// What the chosen option is for.
#[derive(Debug, Clone, PartialEq)]
pub enum ChoiceAction {
    /// Bring the plan's commits back: option 0 merge, 1 cherry-pick.
    Merge(Box<MergePlan>),
    /// Delete the team: option 0 keeps the worktrees holding work, 1 removes them.
    DeleteGroup(GroupId),
    /// An interrupted run: option 0 resumes it, 1 discards it.
    Interrupted(super::Interruption),
    /// Quitting a TUI of the host while runs go: option 0 leaves them running, 1 stops them.
    Quit,
}

/// One option: its letter (which also picks it) and what it does.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceOption {
    pub key: char,
    pub label: String,
    /// Shown greyed with this reason; cannot be chosen.
    pub disabled: Option<String>,
}

pub struct Choice {
    pub title: String,
    pub message: String,
    pub options: Vec<ChoiceOption>,
    pub chosen: usize,
    /// What `y` does, e.g. "delete" ("y delete").
    pub verb: String,
    pub action: ChoiceAction,
}

impl Choice {
    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y')
                if self
                    .options
                    .get(self.chosen)
                    .is_some_and(|o| o.disabled.is_none()) =>
            {
                return Outcome::Done(DialogResult::Chose(self.action.clone(), self.chosen));
            }
            KeyCode::Char('y') | KeyCode::Char('Y') => {}
            KeyCode::Enter | KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Char('q') => {
                return Outcome::Close;
            }
            KeyCode::Tab | KeyCode::Right | KeyCode::Char('l') => self.step(1),
            KeyCode::BackTab | KeyCode::Left | KeyCode::Char('h') => self.step(-1),
            KeyCode::Char(c) => {
                if let Some(i) = self
                    .options
                    .iter()
                    .position(|o| o.key == c && o.disabled.is_none())
                {
                    self.chosen = i;
                }
            }
            _ => {}
        }
        Outcome::Stay
    }

    /// The next option that can be chosen, `delta` away (wrapping).
    fn step(&mut self, delta: isize) {
        let n = self.options.len() as isize;
        for k in 1..=n {
            let i = (self.chosen as isize + delta * k).rem_euclid(n.max(1)) as usize;
            if self.options.get(i).is_some_and(|o| o.disabled.is_none()) {
                self.chosen = i;
                return;
            }
        }
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let text = sanitize::display(&self.message).into_owned();
        let width = 76u16.min(area.width);
        let inner = width.saturating_sub(4).max(1) as usize;
        // Word wrapping can take a line more than the count says (a long path): room for it.
        let body: usize = text
            .lines()
            .map(|l| l.chars().count() / inner + 1 + usize::from(l.chars().count() > inner))
            .sum();
        let height = (body as u16).saturating_add(4 + self.options.len() as u16);
        let rect = centered(area, width, height);
        frame.render_widget(Clear, rect);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().add_modifier(Modifier::DIM);
        let mut lines: Vec<Line<'static>> = text.lines().map(|l| Line::raw(l.to_string())).collect();
        lines.push(Line::default());
        for (i, o) in self.options.iter().enumerate() {
            let chosen = i == self.chosen;
            let mut spans = vec![
                Span::raw(if chosen { "› (•) " } else { "  ( ) " }),
                Span::styled(format!("{} ", o.key), Style::default().fg(Color::Cyan)),
                Span::styled(
                    sanitize::display(&o.label).into_owned(),
                    if chosen { bold } else { Style::default() },
                ),
            ];
            if let Some(why) = &o.disabled {
                spans.push(Span::styled(format!("  ({})", sanitize::display(why)), dim));
            }
            lines.push(Line::from(spans));
        }
        lines.push(Line::from(vec![
            Span::styled("y", bold),
            Span::raw(format!(" {}   ", self.verb)),
            Span::styled("n/Enter/Esc", bold),
            Span::raw(" cancel   "),
            Span::styled("←/→", bold),
            Span::raw(" choose"),
        ]));
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(popup_block(&self.title).padding(ratatui::widgets::Padding::horizontal(1))),
            rect,
        );
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn choice() -> Choice {
        Choice {
            title: "Delete".into(),
            message: "sure?".into(),
            options: vec![
                ChoiceOption {
                    key: 'k',
                    label: "keep".into(),
                    disabled: None,
                },
                ChoiceOption {
                    key: 'r',
                    label: "remove".into(),
                    disabled: None,
                },
            ],
            chosen: 0,
            verb: "delete".into(),
            action: ChoiceAction::DeleteGroup("g".into()),
        }
    }

    #[test]
    fn only_y_goes_ahead_and_with_the_chosen_option() {
        let mut c = choice();
        assert_eq!(c.handle_key(&key(KeyCode::Enter)), Outcome::Close);
        assert_eq!(c.handle_key(&key(KeyCode::Char('r'))), Outcome::Stay);
        assert_eq!(c.chosen, 1);
        assert_eq!(c.handle_key(&key(KeyCode::Tab)), Outcome::Stay);
        assert_eq!(c.chosen, 0, "wraps");
        c.options[1].disabled = Some("no".into());
        c.handle_key(&key(KeyCode::Char('r')));
        c.handle_key(&key(KeyCode::Right));
        assert_eq!(c.chosen, 0, "a disabled option cannot be chosen");
        assert_eq!(
            c.handle_key(&key(KeyCode::Char('y'))),
            Outcome::Done(DialogResult::Chose(ChoiceAction::DeleteGroup("g".into()), 0))
        );
    }
}
