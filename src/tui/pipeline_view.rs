//! A pipeline team's conversation as the UI shows it: the phase strip (`intake → handling →
//! review ↩ handling`), the active member or "parked for you", and the last moves with their
//! reasons. Kept in the group's cycle view (seeded from the saved state, moved by
//! `phase_transition` events); pure state plus the panel lines.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use crate::engine::events::EventKind;
use crate::model::pipeline::{StripStep, strip};
use crate::model::{ConversationState, Mode, PipelineSpec};
use crate::text::sanitize;

/// The moves a view keeps (the strip shows the last [`STRIP_STEPS`]).
const KEPT: usize = 100;
const STRIP_STEPS: usize = 12;
/// The moves listed with their reasons under the strip.
const RECENT: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Move {
    from: Option<String>,
    step: StripStep,
    reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineView {
    moves: Vec<Move>,
    phase: Option<String>,
    active: Option<String>,
    parked: bool,
    /// Every kept move is listed (toggled by the user), not only the last few.
    pub expanded: bool,
}

impl PipelineView {
    /// The view of the state saved with a group.
    /// A pipeline team's saved conversation (the state of another mode's run is not its own).
    pub fn saved(g: &crate::model::Group) -> Option<PipelineView> {
        let state = g.state.pipeline.as_ref().filter(|_| g.mode == Mode::Pipeline)?;
        Some(PipelineView::from_state(state, g.settings.pipeline.as_ref()))
    }

    pub fn from_state(state: &ConversationState, spec: Option<&PipelineSpec>) -> PipelineView {
        let moves = state
            .history
            .iter()
            .map(|t| Move {
                from: t.from_phase.clone(),
                step: StripStep {
                    to: t.to_phase.clone(),
                    back: spec.is_some_and(|s| s.is_return(t.from_phase.as_deref(), &t.to_phase)),
                    parked: t.to_member.is_none(),
                },
                reason: t.reason.clone(),
            })
            .collect();
        let mut view = PipelineView {
            moves,
            phase: state.phase.clone(),
            active: state.active_name.clone(),
            parked: state.parked,
            expanded: false,
        };
        view.trim();
        view
    }

    fn trim(&mut self) {
        let excess = self.moves.len().saturating_sub(KEPT);
        self.moves.drain(..excess);
    }

    pub fn apply(&mut self, event: &EventKind) {
        let EventKind::PhaseTransition {
            from_phase,
            to_phase,
            to_member,
            reason,
            back,
            ..
        } = event
        else {
            return;
        };
        self.moves.push(Move {
            from: from_phase.clone(),
            step: StripStep {
                to: to_phase.clone(),
                back: *back,
                parked: to_member.is_none(),
            },
            reason: reason.clone(),
        });
        self.trim();
        self.phase = Some(to_phase.clone());
        self.active = to_member.clone();
        self.parked = to_member.is_none();
    }

    /// The strip of the last moves (`… → ` when older ones are left out).
    pub fn strip(&self) -> String {
        let start = self.moves.len().saturating_sub(STRIP_STEPS);
        let steps: Vec<StripStep> = self.moves[start..].iter().map(|m| m.step.clone()).collect();
        let first = self.moves.get(start).and_then(|m| m.from.as_deref());
        let text = strip(first, &steps);
        if start > 0 { format!("… {text}") } else { text }
    }

    /// `phase review · reviewer` or `phase handling · parked for you`.
    pub fn head(&self) -> String {
        let phase = self.phase.as_deref().unwrap_or("not started");
        match (&self.active, self.parked) {
            (_, true) => format!("pipeline · {phase} · parked for you (your message resumes it)"),
            (Some(active), false) => format!("pipeline · {phase} · {active}"),
            (None, false) => format!("pipeline · {phase}"),
        }
    }
}

/// The panel lines of a pipeline's view (nothing for other teams).
pub fn panel_lines(pipeline: Option<&PipelineView>, history_key: &str, width: usize) -> Vec<Line<'static>> {
    let Some(p) = pipeline else {
        return Vec::new();
    };
    let width = width.max(1);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let head_style = if p.parked {
        Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::BOLD)
    };
    let mut out = Vec::new();
    let wrap = |text: String, style: Style, out: &mut Vec<Line<'static>>| {
        let text = sanitize::display(&text).into_owned();
        crate::tui::markdown::wrap_line_into(Line::styled(text, style), width, out);
    };
    wrap(p.head(), head_style, &mut out);
    if !p.moves.is_empty() {
        wrap(p.strip(), Style::default().fg(Color::Cyan), &mut out);
    }
    let start = if p.expanded {
        0
    } else {
        p.moves.len().saturating_sub(RECENT)
    };
    for m in &p.moves[start..] {
        let from = m.from.as_deref().unwrap_or("start");
        let reason = crate::text::first_line(&m.reason, 120);
        wrap(format!("  {from} → {}: {reason}", m.step.to), dim, &mut out);
    }
    if p.moves.len() > RECENT {
        let hint = if p.expanded {
            format!("{history_key} shows the last {RECENT} moves")
        } else {
            format!("{history_key} shows all {} moves", p.moves.len())
        };
        wrap(hint, dim, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(from: Option<&str>, to: &str, member: Option<&str>, back: bool) -> EventKind {
        EventKind::PhaseTransition {
            from_phase: from.map(str::to_string),
            to_phase: to.into(),
            from_member: None,
            to_member: member.map(str::to_string),
            to_member_id: None,
            reason: format!("to {to}"),
            handoff_count: 0,
            back,
        }
    }

    /// The strip of a Support Desk run (recorded on the sim: sent back from review once),
    /// with its last moves and with all of them, then parked for the user, at 80 and 120
    /// columns.
    #[test]
    fn snapshot_the_strip() {
        use crate::tui::test_screen::{WIDTHS, draw, events, panel_keys};
        let mut v = PipelineView::default();
        for e in events(include_str!("../../tests/fixtures/runs/pipeline.ndjson")) {
            v.apply(&e.kind);
        }
        let key = panel_keys().relay_review;
        let mut parked = v.clone();
        parked.apply(&EventKind::PhaseTransition {
            from_phase: Some("resolution".into()),
            to_phase: "resolution".into(),
            from_member: Some("resolver".into()),
            to_member: None,
            to_member_id: None,
            reason: "the customer must confirm the refund account".into(),
            handoff_count: 5,
            back: false,
        });
        let mut expanded = v.clone();
        expanded.expanded = true;
        for width in WIDTHS {
            let mut screen = String::new();
            for view in [&v, &expanded, &parked] {
                screen.push_str(&draw(width, 9, |f| {
                    let lines = panel_lines(Some(view), &key, f.area().width as usize);
                    f.render_widget(ratatui::widgets::Paragraph::new(lines), f.area());
                }));
                screen.push_str(&"-".repeat(width as usize));
                screen.push('\n');
            }
            insta::assert_snapshot!(format!("strip_{width}"), screen);
        }
    }

    #[test]
    fn events_build_the_strip_and_the_state() {
        let mut v = PipelineView::default();
        v.apply(&moved(None, "intake", Some("triage"), false));
        v.apply(&moved(Some("intake"), "handling", Some("handler"), false));
        v.apply(&moved(Some("handling"), "review", Some("reviewer"), false));
        v.apply(&moved(Some("review"), "handling", Some("handler"), true));
        assert_eq!(v.strip(), "intake → handling → review ↩ handling");
        assert_eq!(v.head(), "pipeline · handling · handler");
        v.apply(&moved(Some("handling"), "handling", None, false));
        assert!(v.head().contains("parked for you"), "{}", v.head());
        for _ in 0..20 {
            v.apply(&moved(Some("handling"), "review", Some("r"), false));
        }
        assert!(v.strip().starts_with("… "), "{}", v.strip());
    }
}
