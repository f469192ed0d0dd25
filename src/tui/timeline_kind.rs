//! The kinds of line in a team's timeline: the tone [`crate::describe`] gives each line, and
//! its colour here.

use ratatui::style::{Color, Modifier, Style};

/// One line of a team's round or cycle history: its tone.
pub use crate::describe::Tone as TimelineKind;

/// The colour of a line of this kind (dropped under `NO_COLOR` by the renderer).
pub fn style(kind: TimelineKind) -> Style {
    match kind {
        TimelineKind::Heading => Style::default().add_modifier(Modifier::BOLD),
        TimelineKind::Info => Style::default(),
        TimelineKind::Good => Style::default().fg(Color::Green),
        TimelineKind::Bad => Style::default().fg(Color::Red),
        TimelineKind::Warn => Style::default().fg(Color::Yellow),
    }
}
