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
