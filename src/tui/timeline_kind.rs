//! The kinds of line in a team's timeline (shared by the cycle view and the views that feed it).

/// One line of a team's round or cycle history.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineKind {
    Heading,
    Info,
    Good,
    Bad,
    Warn,
}

impl TimelineKind {
    /// The colour of a line of this kind (dropped under `NO_COLOR` by the renderer).
    pub fn style(&self) -> ratatui::style::Style {
        use ratatui::style::{Color, Modifier, Style};
        match self {
            TimelineKind::Heading => Style::default().add_modifier(Modifier::BOLD),
            TimelineKind::Info => Style::default(),
            TimelineKind::Good => Style::default().fg(Color::Green),
            TimelineKind::Bad => Style::default().fg(Color::Red),
            TimelineKind::Warn => Style::default().fg(Color::Yellow),
        }
    }
}
