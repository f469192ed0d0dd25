//! The cycle panel: iteration i/N and phase, each worker's state, duration and tokens, the score
//! sparkline and trend, stall warnings, pending adjustments, paused or interrupted.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{pane, spinner};
use crate::text::sanitize;
use crate::tui::cycle_view::{CycleView, TimelineKind, WorkerState, outcome_kind, phase_name, seconds};

/// The colour of a timeline entry or an outcome (dropped under `NO_COLOR` by the renderer).
pub fn kind_style(kind: &TimelineKind) -> Style {
    match kind {
        TimelineKind::Heading => Style::default().add_modifier(Modifier::BOLD),
        TimelineKind::Info => Style::default(),
        TimelineKind::Good => Style::default().fg(Color::Green),
        TimelineKind::Bad => Style::default().fg(Color::Red),
        TimelineKind::Warn => Style::default().fg(Color::Yellow),
    }
}

/// Scores 0..1 as block characters.
pub fn sparkline(scores: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    scores
        .iter()
        .map(|s| BARS[((s.clamp(0.0, 1.0) * 7.0).round() as usize).min(7)])
        .collect()
}

/// What the cycle panel draws: one team's cycle.
pub struct Props<'a> {
    pub cycle: &'a CycleView,
    /// The team's run is in progress in this process.
    pub running: bool,
    /// A pause was asked for and the step in flight has not ended.
    pub pause_requested: bool,
    /// Messages kept for the team's next run.
    pub kept: usize,
    pub tick: usize,
    /// The key that pauses and resumes (from the keymap).
    pub pause_key: String,
}

pub fn render(frame: &mut Frame<'_>, area: Rect, props: &Props<'_>) {
    let (cycle, running) = (props.cycle, props.running);
    let state = if running && cycle.paused {
        "paused"
    } else if running {
        "running"
    } else {
        cycle.state_label()
    };
    let block = pane(format!(" Cycle · {state} "), false);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines = lines(props, inner.width as usize);
    frame.render_widget(Paragraph::new(lines), inner);
}

fn lines(props: &Props<'_>, width: usize) -> Vec<Line<'static>> {
    let (c, running, pause_key) = (props.cycle, props.running, &props.pause_key);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let warn = Style::default().fg(Color::Yellow);
    let mut out = Vec::new();
    let mut head = if c.iteration == 0 && c.mode.is_none() {
        "not run yet".to_string()
    } else {
        format!("iteration {}/{}", c.iteration, c.max_iterations.max(c.iteration))
    };
    if let Some(p) = c.phase.filter(|_| running) {
        head.push_str(&format!(" · {}", phase_name(p)));
    }
    if c.usage.total() > 0 {
        head.push_str(&format!(" · {} tok", c.usage.total()));
    }
    out.push(Line::styled(head, Style::default().add_modifier(Modifier::BOLD)));
    if running && c.paused {
        out.push(Line::styled(format!("⏸ paused — {pause_key} resumes"), warn));
    } else if running && props.pause_requested {
        out.push(Line::styled("pausing after the step in flight…", warn));
    } else if !running && c.interrupted {
        out.push(Line::styled(format!("! interrupted — {pause_key} resumes"), warn));
    } else if let (false, Some(o)) = (running, c.outcome) {
        out.push(Line::styled(
            format!("finished: {o}"),
            kind_style(&outcome_kind(o)),
        ));
    }
    if !c.scores.is_empty() {
        let last = c.scores.last().copied().unwrap_or_default();
        let trend = c.trend.map(|t| format!(" {t}")).unwrap_or_default();
        out.push(Line::from(vec![
            Span::raw("score "),
            Span::styled(sparkline(&c.scores), Style::default().fg(Color::Cyan)),
            Span::raw(format!(" {last:.2}{trend}")),
        ]));
    }
    if !c.queued.is_empty() {
        out.push(Line::styled(
            format!("queued: {} message(s)", c.queued.len()),
            dim,
        ));
    }
    let kept = props.kept;
    if kept > 0 {
        out.push(Line::styled(format!("kept for the next run: {kept}"), dim));
    }
    let now = Instant::now();
    for w in &c.workers {
        let (mark, style) = match w.state {
            WorkerState::Assigned => ("·".to_string(), dim),
            WorkerState::Running => (spinner(props.tick).to_string(), Style::default()),
            WorkerState::Done => ("✓".to_string(), Style::default().fg(Color::Green)),
            WorkerState::Failed => ("✗".to_string(), Style::default().fg(Color::Red)),
        };
        let duration = match (w.duration_ms, w.started) {
            (Some(ms), _) => seconds(ms),
            (None, Some(t)) if w.state == WorkerState::Running => {
                seconds(now.saturating_duration_since(t).as_millis() as u64)
            }
            _ => String::new(),
        };
        let tokens = if w.tokens > 0 {
            format!(" {}t", w.tokens)
        } else {
            String::new()
        };
        out.push(Line::from(vec![
            Span::styled(format!("{mark} "), style),
            Span::raw(sanitize::display(&w.name).into_owned()),
            Span::styled(format!(" {duration}{tokens}"), dim),
        ]));
    }
    for s in c.stall_warnings.iter().rev().take(2) {
        out.push(Line::styled(format!("⚠ {s}"), warn));
    }
    for a in c.adjustments.iter().rev().take(3) {
        let text: String = sanitize::display(a)
            .chars()
            .take(width.saturating_sub(2).max(1))
            .collect();
        out.push(Line::styled(format!("→ {text}"), warn));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn sparkline_maps_scores_to_bars() {
        assert_eq!(super::sparkline(&[0.0, 0.5, 1.0, 7.0]), "▁▅██");
    }
}
