//! A list of things to turn on and off in a popup (the tool servers a session sees): ↑/↓ (or
//! j/k) move, Space turns the highlighted one on or off, Enter saves, Esc cancels. An entry can
//! start as "some" (on for some of the sessions the change is for); left so, saving leaves it
//! as each session has it.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{DialogResult, Outcome, centered, detail_pane, popup_block};
use crate::model::{GroupId, SessionId};
use crate::text::sanitize;

/// Whom a checklist's answer is for.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckPurpose {
    /// The tool servers of one session.
    SessionTools(SessionId),
    /// The tool servers of every session of a group (a team: every member).
    GroupTools(GroupId),
}

/// An entry's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Off,
    On,
    /// On for some of the sessions, off for the others: saving leaves it so.
    Some,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckItem {
    pub label: String,
    /// A short mark after the label (`ask`, `auto`).
    pub tag: String,
    /// Shown below the list for the highlighted entry.
    pub detail: String,
    pub check: Check,
}

pub struct Checklist {
    pub title: String,
    /// A line above the list (whom it is for).
    pub note: String,
    pub purpose: CheckPurpose,
    pub items: Vec<CheckItem>,
    pub cursor: usize,
}

impl Checklist {
    pub fn new(
        title: impl Into<String>,
        note: impl Into<String>,
        purpose: CheckPurpose,
        items: Vec<CheckItem>,
    ) -> Checklist {
        Checklist {
            title: title.into(),
            note: note.into(),
            purpose,
            items,
            cursor: 0,
        }
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        let last = self.items.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Enter => {
                let answer = self.items.iter().map(|i| (i.label.clone(), i.check)).collect();
                return Outcome::Done(DialogResult::Checked(self.purpose.clone(), answer));
            }
            KeyCode::Up | KeyCode::Char('k') => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => self.cursor = (self.cursor + 1).min(last),
            KeyCode::Char(' ') => {
                if let Some(item) = self.items.get_mut(self.cursor) {
                    item.check = match item.check {
                        Check::On => Check::Off,
                        Check::Off | Check::Some => Check::On,
                    };
                }
            }
            _ => {}
        }
        Outcome::Stay
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let height = (self.items.len() as u16).saturating_add(10).min(22);
        let rect = centered(area, 70, height);
        frame.render_widget(Clear, rect);
        let block = popup_block(&self.title);
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        let [note, list, detail, keys] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(1),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(inner);
        let dim = Style::default().add_modifier(Modifier::DIM);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        frame.render_widget(
            Paragraph::new(sanitize::display(&self.note).into_owned()).wrap(Wrap { trim: true }),
            note,
        );
        let width = self
            .items
            .iter()
            .map(|i| i.label.chars().count())
            .max()
            .unwrap_or(0);
        let height = list.height as usize;
        let offset = (self.cursor + 1).saturating_sub(height);
        let lines: Vec<Line> = self
            .items
            .iter()
            .enumerate()
            .skip(offset)
            .take(height)
            .map(|(i, item)| {
                let mark = match item.check {
                    Check::On => "[x]",
                    Check::Off => "[ ]",
                    Check::Some => "[-]",
                };
                let selected = i == self.cursor;
                let line = Line::from(vec![
                    Span::raw(format!(
                        "{} {mark} {:<width$}",
                        if selected { "›" } else { " " },
                        sanitize::display(&item.label)
                    )),
                    Span::styled(
                        format!("  {}", sanitize::display(&item.tag)),
                        Style::default().fg(Color::Cyan),
                    ),
                    Span::styled(
                        if item.check == Check::Some {
                            "  (some of them)"
                        } else {
                            ""
                        },
                        dim,
                    ),
                ]);
                if selected {
                    line.style(Style::default().add_modifier(Modifier::REVERSED))
                } else {
                    line
                }
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), list);
        let text = self
            .items
            .get(self.cursor)
            .map(|i| sanitize::display(&i.detail).into_owned())
            .unwrap_or_default();
        frame.render_widget(detail_pane(text), detail);
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("Space", bold),
                Span::raw(" on/off   "),
                Span::styled("Enter", bold),
                Span::raw(" save   "),
                Span::styled("Esc", bold),
                Span::raw(" cancel"),
            ])),
            keys,
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

    fn item(label: &str, tag: &str, check: Check) -> CheckItem {
        CheckItem {
            label: label.into(),
            tag: tag.into(),
            detail: format!("runs mcp-server-{label}"),
            check,
        }
    }

    fn servers() -> Checklist {
        Checklist::new(
            "Tool servers",
            "Which of config.yaml's tool servers every member of Clock Team sees.",
            CheckPurpose::GroupTools("g".into()),
            vec![
                item("git", "auto", Check::Some),
                item("time", "ask", Check::Off),
                item("fetch", "ask", Check::On),
            ],
        )
    }

    #[test]
    fn space_turns_an_entry_on_and_off_and_enter_saves_every_entry() {
        let mut c = servers();
        assert_eq!(c.handle_key(&key(KeyCode::Char('j'))), Outcome::Stay);
        c.handle_key(&key(KeyCode::Char(' ')));
        c.handle_key(&key(KeyCode::Down));
        c.handle_key(&key(KeyCode::Char(' ')));
        c.handle_key(&key(KeyCode::Down));
        assert_eq!(c.cursor, 2, "the cursor stays on the last entry");
        assert_eq!(
            c.handle_key(&key(KeyCode::Enter)),
            Outcome::Done(DialogResult::Checked(
                CheckPurpose::GroupTools("g".into()),
                vec![
                    ("git".into(), Check::Some),
                    ("time".into(), Check::On),
                    ("fetch".into(), Check::Off),
                ]
            ))
        );
        c.cursor = 0;
        c.handle_key(&key(KeyCode::Char(' ')));
        assert_eq!(c.items[0].check, Check::On, "some: on for all");
        assert_eq!(c.handle_key(&key(KeyCode::Esc)), Outcome::Close);
    }

    #[test]
    fn snapshot_the_popup() {
        use crate::tui::test_screen::{WIDTHS, draw};
        let c = servers();
        for width in WIDTHS {
            let screen = draw(width, 20, |f| c.render(f, f.area()));
            insta::assert_snapshot!(format!("checklist_{width}"), screen);
        }
    }
}
