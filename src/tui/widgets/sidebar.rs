//! The tree of groups and sessions: mode, role, model, busy spinner, repo-preset marker,
//! unread marker, cycle state; a folded group (▸) shows its session count and spins while any
//! of its sessions is busy. The sidebar also says which row a screen line shows.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{pane, spinner};
use crate::model::{GroupId, GroupKind, Mode, Organization, Role, SessionId};
use crate::naming;
use crate::text::sanitize;
use crate::tui::cycle_view::CycleView;

/// A row of the sidebar tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    Group(GroupId),
    Session(SessionId),
}

/// What is going on right now, per group and session, as the sidebar marks it. The app
/// answers from its run state; the sidebar never sees the app. Answers must not lock the
/// organization: the sidebar asks while it reads it.
pub trait Activity {
    fn group_running(&self, group_id: &str) -> bool;
    fn cycle(&self, group_id: &str) -> Option<&CycleView>;
    fn session_busy(&self, session_id: &str) -> bool;
    fn unread(&self, session_id: &str) -> bool;
}

/// What the sidebar draws.
pub struct Props<'a> {
    pub org: &'a Organization,
    pub rows: &'a [Row],
    /// Index into `rows` of the selected row.
    pub cursor: usize,
    /// The first row on screen (from the frame's layout).
    pub offset: usize,
    pub focused: bool,
    pub tick: usize,
    pub activity: &'a dyn Activity,
}

/// The first row shown so that `cursor` is visible in `height` rows.
pub fn first_row(cursor: usize, height: usize) -> usize {
    (cursor + 1).saturating_sub(height.max(1))
}

/// The index of the row drawn on screen line `y` of the sidebar at `area` (inside its border),
/// or None on the border. The index may be past the last row (empty space below the tree).
pub fn row_at(area: Rect, offset: usize, y: u16) -> Option<usize> {
    let inner = super::inner(area);
    (y >= inner.y && y < inner.bottom()).then(|| offset + (y - inner.y) as usize)
}

pub fn mode_short(mode: Mode) -> &'static str {
    match mode {
        Mode::Broadcast => "broadcast",
        Mode::Sequential => "sequential",
        Mode::Orchestrator => "orch",
        Mode::OrchestratorReflect => "reflect",
    }
}

pub fn render(frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
    if area.width == 0 {
        return;
    }
    let block = pane(" Groups ".into(), props.focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines: Vec<Line<'static>> = props
        .rows
        .iter()
        .enumerate()
        .skip(props.offset)
        .take(inner.height as usize)
        .map(|(i, row)| {
            let line = row_line(props, row);
            match (i == props.cursor, props.focused) {
                (false, _) => line,
                (true, true) => line.style(Style::default().add_modifier(Modifier::REVERSED)),
                (true, false) => line.style(Style::default().add_modifier(Modifier::UNDERLINED)),
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// One row of the tree.
fn row_line(props: &Props<'_>, row: &Row) -> Line<'static> {
    let Props {
        org: o,
        tick,
        activity,
        ..
    } = *props;
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut spans: Vec<Span<'static>> = Vec::new();
    match row {
        Row::Group(id) => {
            let Some(g) = o.group(id) else {
                return Line::default();
            };
            let cycle = activity.cycle(id);
            let folded = o.ui.collapsed_groups.contains(id);
            let members: Vec<&str> = o
                .sessions
                .iter()
                .filter(|s| s.group_id == *id)
                .map(|s| s.id.as_str())
                .collect();
            let state = if activity.group_running(id) {
                if cycle.is_some_and(|c| c.paused) {
                    "⏸ ".to_string()
                } else {
                    format!("{} ", spinner(tick))
                }
            } else if cycle.is_some_and(|c| c.interrupted) {
                "! ".to_string()
            } else if folded && members.iter().any(|s| activity.session_busy(s)) {
                // The busy sessions are hidden: the group spins for them.
                format!("{} ", spinner(tick))
            } else if folded {
                "▸ ".to_string()
            } else {
                "▾ ".to_string()
            };
            spans.push(Span::raw(state));
            let name = sanitize::display(&g.name).into_owned();
            spans.push(Span::styled(name, Style::default().add_modifier(Modifier::BOLD)));
            if g.source_preset.as_deref().is_some_and(|p| p.starts_with("repo:")) {
                spans.push(Span::styled(" ◈", Style::default().fg(Color::Cyan)));
            }
            if folded {
                spans.push(Span::styled(format!(" ({})", members.len()), dim));
                if members.iter().any(|s| activity.unread(s)) {
                    spans.push(Span::styled(" ●", Style::default().fg(Color::Cyan)));
                }
            }
            if g.is_team() {
                spans.push(Span::styled(format!(" {}", mode_short(g.mode)), dim));
            } else if g.kind == GroupKind::Repo {
                spans.push(Span::styled(" repo", dim));
            }
        }
        Row::Session(id) => {
            let Some(s) = o.session(id) else {
                return Line::default();
            };
            let busy = activity.session_busy(id);
            spans.push(Span::raw(if busy {
                format!("  {} ", spinner(tick))
            } else {
                "  · ".to_string()
            }));
            // Team members' names repeat the team's; show the distinct part.
            let team = o
                .group(&s.group_id)
                .filter(|g| g.is_team())
                .map(|g| naming::team_slug(&g.name))
                .unwrap_or_default();
            let shown = naming::strip_team_prefix(&s.name, &team);
            spans.push(Span::raw(sanitize::display(shown).into_owned()));
            // The role, unless the name already says it.
            match s.role {
                Role::Orchestrator if shown != "orchestrator" => {
                    spans.push(Span::styled(" orch", Style::default().fg(Color::Cyan)))
                }
                Role::Evaluator if shown != "evaluator" => {
                    spans.push(Span::styled(" eval", Style::default().fg(Color::Cyan)))
                }
                _ => {}
            }
            if activity.unread(id) {
                spans.push(Span::styled(" ●", Style::default().fg(Color::Cyan)));
            }
            spans.push(Span::styled(format!(" {}", sanitize::display(&s.model)), dim));
        }
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_row_keeps_the_cursor_visible() {
        assert_eq!(first_row(0, 10), 0);
        assert_eq!(first_row(9, 10), 0);
        assert_eq!(first_row(10, 10), 1);
    }

    #[test]
    fn row_at_skips_the_border_and_counts_from_the_offset() {
        let area = Rect::new(0, 2, 20, 6);
        assert_eq!(row_at(area, 0, 2), None, "top border");
        assert_eq!(row_at(area, 0, 3), Some(0));
        assert_eq!(row_at(area, 5, 6), Some(8));
        assert_eq!(row_at(area, 0, 7), None, "bottom border");
    }
}
