//! The status line: a flash message, or key hints generated from the keymap for the focused
//! pane; on the right, what is running.

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
    if app.selected_group_id().is_some_and(|g| app.running.contains(&g)) {
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
    let left = Line::from(spans);
    let left_width = left.width() as u16;
    frame.render_widget(Paragraph::new(left), area);
    let running = app.running.len();
    if running > 0 {
        let text = format!("{running} running ");
        let w = text.chars().count() as u16;
        if area.width > left_width + w {
            frame.render_widget(
                Paragraph::new(Line::styled(text, Style::default().fg(Color::Cyan))),
                Rect::new(area.right() - w, area.y, w, 1),
            );
        }
    }
}
