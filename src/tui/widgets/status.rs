//! The status line: a flash message, or key hints generated from the keymap for the focused
//! pane, or the `/` search line; on the right, what is running and whether the mouse is off.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::text::sanitize;
use crate::tui::action::{Action, Context};
use crate::tui::app::{App, Focus};

fn label(a: Action) -> &'static str {
    match a {
        Action::Help => "help",
        Action::NewGroupFromPreset => "new team",
        Action::FocusComposer => "write",
        Action::FocusNext => "focus",
        Action::TogglePauseCycle => "pause",
        Action::StopCycle => "stop",
        Action::Quit => "quit",
        Action::Send => "send",
        Action::Newline => "newline",
        Action::LeaveComposer => "leave",
        Action::NewSession => "new session",
        Action::SearchNext => "next",
        Action::SearchPrev => "previous",
        Action::LeaveSearch => "leave search",
        _ => a.name(),
    }
}

/// The hints for the focused pane, as (keys, label) pairs, from the keymap.
pub fn hints(app: &App) -> Vec<(String, &'static str)> {
    let (context, actions): (Context, &[Action]) = match app.focus {
        Focus::Composer => (
            Context::Composer,
            &[Action::Send, Action::Newline, Action::LeaveComposer],
        ),
        _ => (
            Context::Navigation,
            &[
                Action::Help,
                Action::NewGroupFromPreset,
                Action::NewSession,
                Action::FocusComposer,
                Action::FocusNext,
                Action::Quit,
            ],
        ),
    };
    let mut out: Vec<(String, &'static str)> = Vec::new();
    let reflecting = app.selected_session_id().is_some_and(|s| app.reflecting(&s));
    if reflecting || app.selected_group_id().is_some_and(|g| app.team_running(&g)) {
        for a in [Action::TogglePauseCycle, Action::StopCycle] {
            if let Some((_, keys)) = app.keymap.bindings(Context::Global).iter().find(|(x, _)| *x == a)
                && let Some(k) = keys.first()
            {
                out.push((k.to_string(), label(a)));
            }
        }
    }
    out.extend(actions.iter().filter_map(|a| {
        let keys = app.keymap.bindings(context).iter().find(|(x, _)| x == a)?;
        Some((keys.1.first()?.to_string(), label(*a)))
    }));
    out
}

pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut spans: Vec<Span<'static>> = Vec::new();
    let search = app.search.as_ref();
    if let Some(s) = search.filter(|s| s.editing) {
        // The search line: what is typed, then how to finish.
        spans.push(Span::styled("/", Style::default().fg(Color::Cyan)));
        spans.push(Span::raw(sanitize::display(&s.query).into_owned()));
        spans.push(Span::styled("▏", Style::default().fg(Color::Cyan)));
        spans.push(Span::styled("  Enter find · Esc cancel", dim));
    } else if let (Some(s), None) = (search, &app.flash) {
        spans.push(Span::styled(
            format!("/{}", sanitize::display(&s.query)),
            Style::default().fg(Color::Cyan),
        ));
        if let Some((i, n)) = s.position {
            spans.push(Span::raw(format!(" match {i}/{n}")));
        }
        for (a, keys) in app.keymap.bindings(Context::Search) {
            if let Some(k) = keys.first() {
                spans.push(Span::styled(" · ", dim));
                spans.push(Span::styled(
                    sanitize::display(&k.to_string()).into_owned(),
                    Style::default().fg(Color::Cyan),
                ));
                spans.push(Span::styled(format!(" {}", label(*a)), dim));
            }
        }
    } else {
        flash_or_hints(app, &mut spans);
    }
    let left = Line::from(spans);
    let left_width = left.width() as u16;
    frame.render_widget(Paragraph::new(left), area);
    let mut right = String::new();
    if !app.mouse_capture {
        right.push_str("mouse: off ");
    }
    let running = app.running_count();
    if running > 0 {
        right.push_str(&format!("{running} running "));
    }
    if !right.is_empty() {
        let w = right.chars().count() as u16;
        if area.width > left_width + w {
            frame.render_widget(
                Paragraph::new(Line::styled(right, Style::default().fg(Color::Cyan))),
                Rect::new(area.right() - w, area.y, w, 1),
            );
        }
    }
}

fn flash_or_hints(app: &App, spans: &mut Vec<Span<'static>>) {
    let dim = Style::default().add_modifier(Modifier::DIM);
    match &app.flash {
        Some((text, error)) => {
            let style = if *error {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            };
            spans.push(Span::styled(sanitize::display(text).into_owned(), style));
        }
        None => {
            for (i, (keys, what)) in hints(app).into_iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" · ", dim));
                }
                spans.push(Span::styled(
                    sanitize::display(&keys).into_owned(),
                    Style::default().fg(Color::Cyan),
                ));
                spans.push(Span::styled(format!(" {what}"), dim));
            }
        }
    }
}
