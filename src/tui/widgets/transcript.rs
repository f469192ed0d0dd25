//! The centre pane: the selected session's transcript (Markdown, streaming, scrollable), or,
//! for a selected team, its members and the timeline of its rounds and cycles.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane;
use crate::model::Role;
use crate::text::sanitize;
use crate::tui::app::{App, Focus, Row};
use crate::tui::markdown::wrap_line_into;

pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let focused = app.focus == Focus::Transcript;
    match app.selected_row() {
        Some(Row::Session(id)) => render_session(frame, area, app, &id, focused),
        Some(Row::Group(id)) => render_group(frame, area, app, &id, focused),
        None => {
            let block = pane(" huddle ".into(), focused);
            let inner = block.inner(area);
            frame.render_widget(block, area);
            frame.render_widget(Paragraph::new(welcome(app)), inner);
        }
    }
}

fn welcome(app: &App) -> Vec<Line<'static>> {
    use crate::tui::action::{Action, Context};
    let key = |a| app.keymap.keys_text(Context::Navigation, a).unwrap_or_default();
    let dim = Style::default().add_modifier(Modifier::DIM);
    vec![
        Line::styled(
            "Welcome to huddle.",
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::default(),
        Line::raw(format!(
            "  {:<6} new team from a preset",
            key(Action::NewGroupFromPreset)
        )),
        Line::raw(format!(
            "  {:<6} new plain session (chat with one model)",
            key(Action::NewSession)
        )),
        Line::raw(format!("  {:<6} all keys", key(Action::Help))),
        Line::default(),
        Line::styled(
            format!(
                "Default model: {}",
                sanitize::display(&app.config.default_model())
            ),
            dim,
        ),
    ]
}

fn render_session(frame: &mut Frame<'_>, area: Rect, app: &App, id: &str, focused: bool) {
    let (name, role, model) = app
        .org
        .read(|o| o.session(id).map(|s| (s.name.clone(), s.role, s.model.clone())))
        .unwrap_or_default();
    let sim = if model.starts_with("sim/") {
        " (simulated)"
    } else {
        ""
    };
    let title = format!(
        " {} · {} · {}{sim} ",
        sanitize::display(&name),
        role,
        sanitize::display(&model)
    );
    let block = pane(title, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let Some(view) = app.views.get(id) else {
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
                "No messages yet. Write in the composer below and press Enter.",
                dim,
            )),
            inner,
        );
        return;
    }
    let (mut lines, scroll) = view.visible_lines(inner.width, inner.height as usize);
    if let Some(s) = app
        .search
        .as_ref()
        .filter(|s| s.session_id == id && !s.query.is_empty())
    {
        let mark = Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::REVERSED);
        lines = lines
            .into_iter()
            .map(|l| crate::tui::search::highlight(l, &s.query, mark))
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

fn render_group(frame: &mut Frame<'_>, area: Rect, app: &App, id: &str, focused: bool) {
    let info = app.org.read(|o| {
        o.group(id).map(|g| {
            let members: Vec<(String, Role, String)> = o
                .sessions_in(id)
                .iter()
                .map(|s| (s.name.clone(), s.role, s.model.clone()))
                .collect();
            (
                g.name.clone(),
                g.is_team(),
                g.mode,
                g.max_iterations,
                g.repo.clone(),
                members,
            )
        })
    });
    let Some((name, team, mode, max_iterations, repo, members)) = info else {
        return;
    };
    let title = if team {
        format!(" {} · {mode} · timeline ", sanitize::display(&name))
    } else {
        format!(" {} ", sanitize::display(&name))
    };
    let block = pane(title, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut lines: Vec<Line<'static>> = Vec::new();
    if !team {
        if members.is_empty() {
            lines = welcome(app);
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
    if mode == crate::model::Mode::OrchestratorReflect {
        header.push_str(&format!(" · max {max_iterations} iterations"));
    }
    if let Some(r) = repo {
        header.push_str(&format!(" · {}", sanitize::display(&r.display().to_string())));
    }
    lines.push(Line::styled(header, dim));
    let prefix = format!("{}-", crate::presets::instantiate::team_slug(&name));
    let members_line = members
        .iter()
        .map(|(n, r, _)| {
            let n = n
                .strip_prefix(prefix.as_str())
                .filter(|s| !s.is_empty())
                .unwrap_or(n);
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
    match app.shown_cycle(id).filter(|c| !c.timeline.is_empty()) {
        None => lines.push(Line::raw(format!(
            "No runs yet. Write a prompt below and press Enter to run the team ({mode})."
        ))),
        Some(cycle) => {
            for entry in &cycle.timeline {
                let style = super::cycle_panel::kind_style(&entry.kind);
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
