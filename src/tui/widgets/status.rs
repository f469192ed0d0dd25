//! The status line: a flash message, or key hints generated from the keymap for the focused
//! pane, or the `/` search line; on the right, what is running and whether the mouse is off.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::text::sanitize;
use crate::tui::action::{Action, Context};
use crate::tui::keymap::Keymap;
use crate::tui::search::TranscriptSearch;

/// What the status line draws.
pub struct Props<'a> {
    pub keymap: &'a Keymap,
    /// The composer has focus: its keys are hinted, not the panes'.
    pub composer_focused: bool,
    /// The selection's run or reflection is going: pause and stop are hinted first.
    pub run_controls: bool,
    /// That run is paused: the pause key is hinted as resume.
    pub selection_paused: bool,
    pub search: Option<&'a TranscriptSearch>,
    /// A one-line message (and whether it is an error), shown instead of the hints.
    pub flash: Option<&'a (String, bool)>,
    pub mouse_capture: bool,
    /// Runs and reflections going in this process (not paused).
    pub running: usize,
    /// Runs and reflections paused (confirmed by the engine).
    pub paused: usize,
    /// Tool calls waiting for the user's approval (the popup may be under another dialog).
    pub approvals: usize,
    /// The selection works in git worktrees: the diff and merge keys are hinted.
    pub worktrees: bool,
    /// Teams whose worktrees are being made.
    pub creating: usize,
    /// The selection's turn waiting for a rate or usage limit, in words (who, until when, how
    /// long is left): said before the hints, with the key that stops the wait.
    pub limit_wait: Option<String>,
    /// Turns waiting for a limit, in every run.
    pub limit_waiting: usize,
}

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
        Action::ViewDiff => "diff",
        Action::MergeWorktree => "bring back",
        _ => a.name(),
    }
}

/// The hints for the focused pane, as (keys, label) pairs, from the keymap.
pub fn hints(props: &Props<'_>) -> Vec<(String, &'static str)> {
    let (context, actions): (Context, &[Action]) = if props.composer_focused {
        (
            Context::Composer,
            &[Action::Send, Action::Newline, Action::LeaveComposer],
        )
    } else {
        (
            Context::Navigation,
            &[
                Action::Help,
                Action::NewGroupFromPreset,
                Action::NewSession,
                Action::FocusComposer,
                Action::FocusNext,
                Action::Quit,
            ],
        )
    };
    let keymap = props.keymap;
    let run_controls: &[Action] = if props.run_controls {
        &[Action::TogglePauseCycle, Action::StopCycle]
    } else {
        &[]
    };
    let global = run_controls.iter().map(|a| (Context::Global, *a));
    let worktree_keys: &[Action] = if props.worktrees && !props.composer_focused {
        &[Action::ViewDiff, Action::MergeWorktree]
    } else {
        &[]
    };
    let worktree = worktree_keys.iter().map(|a| (Context::Navigation, *a));
    let local = actions.iter().map(|a| (context, *a));
    global
        .chain(worktree)
        .chain(local)
        .filter_map(|(c, a)| {
            let what = match a {
                Action::TogglePauseCycle if props.selection_paused => "resume",
                _ => label(a),
            };
            Some((keymap.first_key(c, a)?, what))
        })
        .collect()
}

pub fn render(frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut spans: Vec<Span<'static>> = Vec::new();
    let search = props.search;
    if let Some(s) = search.filter(|s| s.editing) {
        // The search line: what is typed, then how to finish (fixed keys, see `search_input`).
        spans.push(Span::styled("/", Style::default().fg(Color::Cyan)));
        spans.push(Span::raw(sanitize::display(&s.query).into_owned()));
        spans.push(Span::styled("▏", Style::default().fg(Color::Cyan)));
        spans.push(Span::styled("  Enter find · Esc cancel", dim));
    } else if let (Some(s), None) = (search, props.flash) {
        spans.push(Span::styled(
            format!("/{}", sanitize::display(&s.query)),
            Style::default().fg(Color::Cyan),
        ));
        if let Some((i, n)) = s.position {
            spans.push(Span::raw(format!(" match {i}/{n}")));
        }
        for (a, keys) in props.keymap.bindings(Context::Search) {
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
        flash_or_hints(props, &mut spans);
    }
    let left = Line::from(spans);
    let left_width = left.width() as u16;
    frame.render_widget(Paragraph::new(left), area);
    let mut right = String::new();
    if !props.mouse_capture {
        right.push_str("mouse: off ");
    }
    if props.creating > 0 {
        right.push_str("making worktrees… ");
    }
    let running = props.running;
    if running > 0 {
        right.push_str(&format!("{running} running "));
    }
    if props.paused > 0 {
        right.push_str(&format!("{} paused ", props.paused));
    }
    if props.limit_waiting > 0 {
        right.push_str(&format!("{} waiting for limit ", props.limit_waiting));
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

fn flash_or_hints(props: &Props<'_>, spans: &mut Vec<Span<'static>>) {
    let dim = Style::default().add_modifier(Modifier::DIM);
    if props.approvals > 0 && props.flash.is_none() {
        // Said even while another dialog hides the approval popup.
        spans.push(Span::styled(
            format!("? {} tool call(s) wait for your approval", props.approvals),
            Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
        return;
    }
    if let (Some(wait), None) = (&props.limit_wait, props.flash) {
        let warn = Style::default().fg(Color::Yellow);
        spans.push(Span::styled(sanitize::display(wait).into_owned(), warn));
        if let Some(key) = props.keymap.first_key(Context::Global, Action::StopCycle) {
            spans.push(Span::styled(" · ", dim));
            spans.push(Span::styled(key, Style::default().fg(Color::Cyan)));
            spans.push(Span::styled(" stop the wait (resumable)", dim));
        }
        return;
    }
    match props.flash {
        Some((text, error)) => {
            let style = if *error {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            };
            spans.push(Span::styled(sanitize::display(text).into_owned(), style));
        }
        None => {
            for (i, (keys, what)) in hints(props).into_iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" · ", dim));
                }
                spans.push(Span::styled(keys, Style::default().fg(Color::Cyan)));
                spans.push(Span::styled(format!(" {what}"), dim));
            }
        }
    }
}
