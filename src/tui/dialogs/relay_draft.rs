//! The relay draft popup: the driver's draft waiting for you, why it waits (manual approval or
//! the review rule that fired), and four answers:
//!
//! - `y` send it as it is (never Enter: a popup can open while you type);
//! - `e` edit it (a multi-line editor opens; `Ctrl-S` sends the edited text);
//! - `n` reject it with a note (a one-line field opens; the driver drafts again with the note);
//! - `t` take over: you write the outbound messages in the composer until you hand back.
//!
//! While a relay is taken over the popup offers `h` (hand back to the driver). `Esc` closes
//! the popup and leaves the relay waiting (the relay key opens it again).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Padding, Paragraph};

use super::{DialogResult, Outcome, centered, popup_block};
use crate::model::{DraftAnswer, GroupId};
use crate::tui::markdown::wrap_line_into;

/// What the user chose in the popup.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayChoice {
    /// Answer the relay now.
    Answer(DraftAnswer),
    /// Open the editor on this draft (then send what it saves).
    Edit(String),
    /// Ask for the rejection note (then reject).
    Note,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelayDraftPopup {
    pub group_id: GroupId,
    pub group: String,
    pub turn: u32,
    /// The draft, sanitised; `None` while the relay is taken over.
    pub draft: Option<String>,
    pub review: Option<String>,
    scroll: usize,
}

impl RelayDraftPopup {
    pub fn draft(group_id: GroupId, group: String, turn: u32, text: String, review: Option<String>) -> Self {
        RelayDraftPopup {
            group_id,
            group,
            turn,
            draft: Some(text),
            review,
            scroll: 0,
        }
    }

    pub fn taken_over(group_id: GroupId, group: String, turn: u32) -> Self {
        RelayDraftPopup {
            group_id,
            group,
            turn,
            draft: None,
            review: None,
            scroll: 0,
        }
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Outcome::Stay;
        }
        let choice = match (&self.draft, key.code) {
            (_, KeyCode::Esc) => return Outcome::Close,
            (Some(_), KeyCode::Char('y' | 'Y')) => RelayChoice::Answer(DraftAnswer::Approve),
            (Some(d), KeyCode::Char('e' | 'E')) => RelayChoice::Edit(d.clone()),
            (Some(_), KeyCode::Char('n' | 'N')) => RelayChoice::Note,
            (Some(_), KeyCode::Char('t' | 'T')) => RelayChoice::Answer(DraftAnswer::TakeOver),
            (None, KeyCode::Char('h' | 'H')) => RelayChoice::Answer(DraftAnswer::HandBack),
            (_, KeyCode::Down | KeyCode::Char('j')) => return self.scroll_by(1),
            (_, KeyCode::Up | KeyCode::Char('k')) => return self.scroll_by(-1),
            (_, KeyCode::PageDown) => return self.scroll_by(10),
            (_, KeyCode::PageUp) => return self.scroll_by(-10),
            _ => return Outcome::Stay,
        };
        Outcome::Done(DialogResult::Relay {
            group_id: self.group_id.clone(),
            choice,
        })
    }

    fn scroll_by(&mut self, lines: isize) -> Outcome {
        self.scroll = self.scroll.saturating_add_signed(lines);
        Outcome::Stay
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let dim = Style::default().add_modifier(Modifier::DIM);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let width = 84u16.min(area.width);
        let inner = width.saturating_sub(4).max(1) as usize;
        let mut head = Vec::new();
        let mut body = Vec::new();
        let keys: Vec<Line<'static>> = match &self.draft {
            Some(text) => {
                let why = self.review.as_deref().unwrap_or("manual approval");
                wrap_line_into(
                    Line::styled(
                        format!("{} · draft for turn {} · waits: {why}", self.group, self.turn),
                        bold,
                    ),
                    inner,
                    &mut head,
                );
                for line in text.lines() {
                    wrap_line_into(Line::raw(format!("  {line}")), inner, &mut body);
                }
                vec![
                    Line::raw("y send as is · e edit, then send · n reject with a note"),
                    Line::raw("t take over (you write) · Esc later (it keeps waiting)"),
                ]
            }
            None => {
                wrap_line_into(
                    Line::styled(
                        format!("{} · taken over: you write the messages", self.group),
                        bold,
                    ),
                    inner,
                    &mut head,
                );
                body.push(Line::styled(
                    "Type the next message in the composer; Enter sends it to the counterpart.",
                    dim,
                ));
                vec![Line::raw("h hand back to the driver · Esc close")]
            }
        };
        let fixed = head.len() + 1 + keys.len() + 2;
        let room = (area.height as usize).saturating_sub(fixed).max(1);
        let total = body.len();
        let shown = total.min(room);
        let scroll = self.scroll.min(total - shown);
        let mut lines = head;
        lines.extend(body.into_iter().skip(scroll).take(shown));
        if shown < total {
            lines.push(Line::styled(
                format!("lines {}–{} of {total} · ↑/↓ scroll", scroll + 1, scroll + shown),
                Style::default().fg(Color::Yellow),
            ));
        }
        lines.push(Line::default());
        lines.extend(keys);
        let rect = centered(area, width, (lines.len() as u16).saturating_add(2));
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(
                popup_block("Relay draft")
                    .border_style(Style::default().fg(Color::Yellow))
                    .padding(Padding::horizontal(1)),
            ),
            rect,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    /// A draft that a review rule holds, and a relay taken over, at 80 and 120 columns.
    #[test]
    fn snapshot_the_popup() {
        use crate::tui::test_screen::{WIDTHS, draw};
        let draft = RelayDraftPopup::draft(
            "g".into(),
            "Negotiator".into(),
            3,
            "Thank you for the revised offer.\n\nWe can accept delivery on 14 March if the price stays at 41,500 EUR and the penalty clause covers each day of delay.\nPlease confirm by Friday.".into(),
            Some("it matches the review pattern `[0-9,]+ EUR`".into()),
        );
        let taken = RelayDraftPopup::taken_over("g".into(), "Negotiator".into(), 4);
        for width in WIDTHS {
            let screen = draw(width, 20, |f| draft.render(f, f.area()));
            insta::assert_snapshot!(format!("relay_draft_{width}"), screen);
            let screen = draw(width, 12, |f| taken.render(f, f.area()));
            insta::assert_snapshot!(format!("relay_taken_over_{width}"), screen);
        }
    }

    #[test]
    fn keys_answer_and_enter_never_sends() {
        let mut p = RelayDraftPopup::draft("g".into(), "G".into(), 1, "hi".into(), None);
        assert_eq!(p.handle_key(&key(KeyCode::Enter)), Outcome::Stay);
        let answer = |o: Outcome| match o {
            Outcome::Done(DialogResult::Relay { choice, .. }) => Some(choice),
            _ => None,
        };
        assert_eq!(
            answer(p.handle_key(&key(KeyCode::Char('y')))),
            Some(RelayChoice::Answer(DraftAnswer::Approve))
        );
        assert_eq!(
            answer(p.handle_key(&key(KeyCode::Char('e')))),
            Some(RelayChoice::Edit("hi".into()))
        );
        assert_eq!(
            answer(p.handle_key(&key(KeyCode::Char('n')))),
            Some(RelayChoice::Note)
        );
        assert_eq!(
            answer(p.handle_key(&key(KeyCode::Char('t')))),
            Some(RelayChoice::Answer(DraftAnswer::TakeOver))
        );
        assert_eq!(p.handle_key(&key(KeyCode::Char('h'))), Outcome::Stay);
        assert_eq!(p.handle_key(&key(KeyCode::Esc)), Outcome::Close);
        let mut t = RelayDraftPopup::taken_over("g".into(), "G".into(), 2);
        assert_eq!(t.handle_key(&key(KeyCode::Char('y'))), Outcome::Stay);
        assert_eq!(
            answer(t.handle_key(&key(KeyCode::Char('h')))),
            Some(RelayChoice::Answer(DraftAnswer::HandBack))
        );
    }
}
