//! The centre pane: the selected session's transcript (Markdown, streaming, scrollable), or,
//! for a selected team, its members and the timeline of its rounds and cycles.

use std::path::PathBuf;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane;
use crate::model::{Mode, Role};
use crate::naming;
use crate::text::sanitize;
use crate::tui::cycle_view::CycleView;
use crate::tui::markdown::wrap_line_into;
use crate::tui::transcript_view::TranscriptView;

/// What the centre pane draws.
pub struct Props<'a> {
    pub subject: Subject<'a>,
    pub focused: bool,
    pub keys: Keys,
    pub default_model: String,
}

/// The keys the pane's text tells the user to press (from the keymap, which can rebind them).
pub struct Keys {
    pub new_team: String,
    pub new_session: String,
    pub help: String,
    pub send: String,
}

/// What is selected.
pub enum Subject<'a> {
    /// Nothing: the welcome text.
    Nothing,
    Session {
        name: String,
        role: Role,
        model: String,
        /// None until the transcript is asked for.
        view: Option<&'a TranscriptView>,
        /// The `/` search's query, highlighted when not empty.
        search: Option<&'a str>,
    },
    Group {
        group: GroupInfo,
        cycle: Option<&'a CycleView>,
    },
}

/// A group as the pane shows it.
pub struct GroupInfo {
    pub name: String,
    pub team: bool,
    pub mode: Mode,
    pub max_iterations: u32,
    pub repo: Option<PathBuf>,
    /// Each member's name and role.
    pub members: Vec<(String, Role)>,
}

pub fn render(frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
    let focused = props.focused;
    match &props.subject {
        Subject::Session {
            name,
            role,
            model,
            view,
            search,
        } => {
            let title = session_title(name, *role, model);
            render_session(frame, area, title, *view, *search, props);
        }
        Subject::Group { group, cycle } => render_group(frame, area, group, *cycle, props),
        Subject::Nothing => {
            let block = pane(" huddle ".into(), focused);
            let inner = block.inner(area);
            frame.render_widget(block, area);
            frame.render_widget(Paragraph::new(welcome(props)), inner);
        }
    }
}

fn welcome(props: &Props<'_>) -> Vec<Line<'static>> {
    let keys = &props.keys;
    let dim = Style::default().add_modifier(Modifier::DIM);
    vec![
        Line::styled(
            "Welcome to huddle.",
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::default(),
        Line::raw(format!("  {:<6} new team from a preset", keys.new_team)),
        Line::raw(format!(
            "  {:<6} new plain session (chat with one model)",
            keys.new_session
        )),
        Line::raw(format!("  {:<6} all keys", keys.help)),
        Line::default(),
        Line::styled(
            format!("Default model: {}", sanitize::display(&props.default_model)),
            dim,
        ),
    ]
}

fn session_title(name: &str, role: Role, model: &str) -> String {
    let sim = if model.starts_with("sim/") {
        " (simulated)"
    } else {
        ""
    };
    format!(
        " {} · {} · {}{sim} ",
        sanitize::display(name),
        role,
        sanitize::display(model)
    )
}

fn render_session(
    frame: &mut Frame<'_>,
    area: Rect,
    title: String,
    view: Option<&TranscriptView>,
    search: Option<&str>,
    props: &Props<'_>,
) {
    let block = pane(title, props.focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let Some(view) = view else {
        frame.render_widget(Paragraph::new(Line::styled("loading…", dim)), inner);
        return;
    };
    if let Some(e) = &view.load_error {
        frame.render_widget(
            Paragraph::new(Line::styled(
                format!("cannot read the transcript: {}", sanitize::display(e)),
                Style::default().fg(Color::Red),
            )),
            inner,
        );
        return;
    }
    if !view.loaded && view.messages.is_empty() && view.streaming.is_none() {
        frame.render_widget(Paragraph::new(Line::styled("loading…", dim)), inner);
        return;
    }
    if view.messages.is_empty() && view.streaming.is_none() {
        frame.render_widget(
            Paragraph::new(Line::styled(
                format!(
                    "No messages yet. Write in the composer below and press {}.",
                    props.keys.send
                ),
                dim,
            ))
            .wrap(Wrap { trim: true }),
            inner,
        );
        return;
    }
    let (mut lines, scroll) = view.visible_lines(inner.width, inner.height as usize);
    if let Some(query) = search.filter(|q| !q.is_empty()) {
        let mark = Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::REVERSED);
        lines = lines
            .into_iter()
            .map(|l| crate::tui::search::highlight(l, query, mark))
            .collect();
    }
    frame.render_widget(Paragraph::new(lines), inner);
    if scroll > 0 && inner.width > 12 {
        let tag = format!(" ↑{scroll} ");
        let x = inner.right().saturating_sub(tag.chars().count() as u16);
        frame.render_widget(
            Paragraph::new(Line::styled(tag, dim)),
            Rect::new(x, area.y, inner.right() - x, 1),
        );
        if view.new_below() && area.height > 1 {
            // New text arrived below while the reader looks further up; PgDn/End gets there.
            let tag = " ↓ new ";
            let x = inner.right().saturating_sub(tag.chars().count() as u16);
            frame.render_widget(
                Paragraph::new(Line::styled(
                    tag,
                    Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                )),
                Rect::new(x, area.bottom() - 1, inner.right() - x, 1),
            );
        }
    }
}

fn render_group(
    frame: &mut Frame<'_>,
    area: Rect,
    group: &GroupInfo,
    cycle: Option<&CycleView>,
    props: &Props<'_>,
) {
    let GroupInfo {
        name,
        team,
        mode,
        max_iterations,
        repo,
        members,
    } = group;
    let (team, mode) = (*team, *mode);
    let title = if team {
        format!(" {} · {mode} · timeline ", sanitize::display(name))
    } else {
        format!(" {} ", sanitize::display(name))
    };
    let block = pane(title, props.focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut lines: Vec<Line<'static>> = Vec::new();
    if !team {
        if members.is_empty() {
            lines = welcome(props);
        } else {
            lines.push(Line::raw(format!(
                "{} session(s). Select one to see its transcript.",
                members.len()
            )));
        }
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    }
    let mut header = format!("{} member(s)", members.len());
    if mode == Mode::OrchestratorReflect {
        header.push_str(&format!(" · max {max_iterations} iterations"));
    }
    if let Some(r) = repo {
        header.push_str(&format!(" · {}", sanitize::display(&r.display().to_string())));
    }
    lines.push(Line::styled(header, dim));
    let team = naming::team_slug(name);
    let members_line = members
        .iter()
        .map(|(n, r)| {
            let n = naming::strip_team_prefix(n, &team);
            match r {
                Role::Worker => sanitize::display(n).into_owned(),
                other => format!("{} ({other})", sanitize::display(n)),
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    wrap_line_into(
        Line::styled(members_line, dim),
        inner.width.max(1) as usize,
        &mut lines,
    );
    lines.push(Line::default());
    match cycle.filter(|c| !c.timeline.is_empty()) {
        // Wrapped: a rebound key's name can be long.
        None => wrap_line_into(
            Line::raw(format!(
                "No runs yet. Write a prompt below and press {} to run the team ({mode}).",
                props.keys.send
            )),
            inner.width.max(1) as usize,
            &mut lines,
        ),
        Some(cycle) => {
            for entry in &cycle.timeline {
                let style = crate::tui::team_panel::kind_style(&entry.kind);
                let text = sanitize::display(&entry.text).into_owned();
                wrap_line_into(
                    Line::from(Span::styled(text, style)),
                    inner.width.max(1) as usize,
                    &mut lines,
                );
            }
        }
    }
    // Follow the newest entries.
    let skip = lines.len().saturating_sub(inner.height as usize);
    let lines: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
