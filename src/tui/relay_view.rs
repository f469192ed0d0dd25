//! A relay's run as the UI shows it: its state, turn, the draft waiting for you, whether you
//! took it over, and the banner saying why it ended. Kept in the group's cycle view from the
//! relay events; pure state, the timeline lines each event adds, and the panel lines.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use crate::engine::events::EventKind;
use crate::model::{RelayPhase, RelayRecord};
use crate::text::sanitize;

use super::timeline_kind::TimelineKind;

/// A draft waiting for the user's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingDraft {
    pub turn: u32,
    pub text: String,
    /// Why it waits (manual approval, a review rule).
    pub review: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RelayView {
    pub state: RelayPhase,
    pub turn: u32,
    pub max_turns: u32,
    pub reason: Option<String>,
    pub taken_over: bool,
    pub draft: Option<WaitingDraft>,
}

impl RelayView {
    /// The view of the relay state saved with a group.
    /// A run that never reached an end (huddle was killed) is shown stopped, as interrupted.
    /// A team's saved relay run.
    pub fn saved(g: &crate::model::Group) -> Option<RelayView> {
        g.state.relay.as_ref().map(RelayView::from_record)
    }

    pub fn from_record(r: &RelayRecord) -> RelayView {
        let (state, reason) = if r.state.is_final() {
            (r.state, r.reason.clone())
        } else {
            (
                RelayPhase::Stopped,
                Some(format!("interrupted in {} (huddle ended)", r.state)),
            )
        };
        RelayView {
            state,
            turn: r.turn,
            max_turns: r.max_turns,
            reason,
            taken_over: false,
            draft: None,
        }
    }

    /// The user is asked something: a draft to approve, or (taken over) their own message.
    pub fn waits_for_you(&self) -> bool {
        !self.state.is_final() && (self.draft.is_some() || self.taken_over)
    }
}

/// A relay read back from its run file that never reached an end (huddle was killed or quit
/// mid-run) is shown stopped, as interrupted; the timeline line that says so.
pub fn settle_replayed(relay: &mut Option<RelayView>) -> Option<String> {
    let relay = relay.as_mut().filter(|r| !r.state.is_final())?;
    let reason = format!("interrupted in {} (huddle ended)", relay.state);
    relay.state = RelayPhase::Stopped;
    relay.reason = Some(reason.clone());
    relay.draft = None;
    relay.taken_over = false;
    Some(format!("■ relay stopped: {reason}"))
}

/// What a relay event changes beyond the relay's own state.
#[derive(Debug, Default)]
pub struct RelayUpdate {
    /// The panel's iteration counter follows the turns.
    pub iteration: Option<u32>,
    /// Lines for the timeline, in order.
    pub lines: Vec<(TimelineKind, String)>,
}

/// Applies a relay event to the group's relay state (other events are ignored).
pub fn apply(relay_slot: &mut Option<RelayView>, kind: &EventKind) -> RelayUpdate {
    let clean = |t: &str| sanitize::display(&crate::text::first_line(t, 120)).into_owned();
    let mut update = RelayUpdate::default();
    match kind {
        EventKind::RelayState {
            state,
            turn,
            max_turns,
            reason,
        } => {
            update.iteration = Some(*turn);
            let relay = relay_slot.get_or_insert_with(RelayView::default);
            relay.state = *state;
            relay.turn = *turn;
            relay.max_turns = *max_turns;
            relay.reason = reason.clone();
            if *state != RelayPhase::ReadyToSend {
                relay.draft = None;
            }
            if state.is_final() {
                relay.taken_over = false;
                let kind = match state {
                    RelayPhase::Completed => TimelineKind::Good,
                    RelayPhase::Error => TimelineKind::Bad,
                    _ => TimelineKind::Warn,
                };
                let why = reason
                    .as_deref()
                    .map(|r| format!(": {}", clean(r)))
                    .unwrap_or_default();
                update.lines.push((kind, format!("■ relay {state}{why}")));
            }
        }
        EventKind::RelayDraft {
            turn,
            text,
            waiting,
            review,
            ..
        } => {
            let relay = relay_slot.get_or_insert_with(RelayView::default);
            if *waiting {
                relay.draft = Some(WaitingDraft {
                    turn: *turn,
                    text: sanitize::display(text).into_owned(),
                    review: review.clone(),
                });
                let why = review
                    .as_deref()
                    .map(|r| format!(" ({})", clean(r)))
                    .unwrap_or_default();
                update
                    .lines
                    .push((TimelineKind::Warn, format!("  ? draft {turn} waits for you{why}")));
            }
        }
        EventKind::RelayTakeOver { active, .. } => {
            let relay = relay_slot.get_or_insert_with(RelayView::default);
            relay.taken_over = *active;
            relay.draft = None;
            let text = if *active {
                "  ✍ you took over: your messages go to the counterpart"
            } else {
                "  ↺ handed back to the driver"
            };
            update.lines.push((TimelineKind::Info, text.into()));
        }
        EventKind::RelaySent {
            turn, sent_as, text, ..
        } => {
            if let Some(relay) = relay_slot.as_mut() {
                relay.draft = None;
            }
            update.lines.push((
                TimelineKind::Info,
                format!("  → turn {turn} [{}] {}", sent_as.as_str(), clean(text)),
            ));
        }
        EventKind::RelayReply { turn, text, .. } => {
            update
                .lines
                .push((TimelineKind::Good, format!("  ← turn {turn} {}", clean(text))));
        }
        EventKind::RelayAudit {
            turn,
            status,
            failure,
            ..
        } if status != "ok" => {
            let why = failure
                .as_deref()
                .map(|f| format!(": {}", clean(f)))
                .unwrap_or_default();
            let text = match status.as_str() {
                "rejected" => format!("  ✗ draft {turn} rejected: the driver drafts again"),
                other => format!("  ✗ turn {turn} {}{why}", other.replace('_', " ")),
            };
            update.lines.push((TimelineKind::Bad, text));
        }
        _ => {}
    }
    update
}

/// The relay's lines in the cycle panel: state and turn, what it waits for, why it ended.
pub fn panel_lines(relay: Option<&RelayView>, review_key: &str, width: usize) -> Vec<Line<'static>> {
    let Some(relay) = relay else {
        return Vec::new();
    };
    let warn = Style::default().fg(Color::Yellow);
    let mut out = vec![Line::styled(
        format!(
            "relay · {} · turn {}/{}",
            relay.state, relay.turn, relay.max_turns
        ),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if relay.state.is_final() {
        let style = match relay.state {
            RelayPhase::Completed => Style::default().fg(Color::Green),
            RelayPhase::Error => Style::default().fg(Color::Red),
            _ => warn,
        };
        if let Some(reason) = &relay.reason {
            crate::tui::markdown::wrap_line_into(
                Line::styled(
                    sanitize::display(&crate::text::first_line(reason, 300)).into_owned(),
                    style.add_modifier(Modifier::BOLD),
                ),
                width.max(1),
                &mut out,
            );
        }
    } else if relay.taken_over {
        out.push(Line::styled(
            format!("✍ you write · {review_key} hands back"),
            warn.add_modifier(Modifier::BOLD),
        ));
    } else if let Some(d) = &relay.draft {
        out.push(Line::styled(
            format!("? draft {} waits · {review_key} reviews", d.turn),
            warn.add_modifier(Modifier::BOLD),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SentAs;

    fn lines(update: RelayUpdate) -> Vec<String> {
        update.lines.into_iter().map(|(_, text)| text).collect()
    }

    #[test]
    fn events_build_the_view_and_the_banner() {
        let mut v: Option<RelayView> = None;
        let mut timeline: Vec<String> = Vec::new();
        timeline.extend(lines(apply(
            &mut v,
            &EventKind::RelayDraft {
                session_id: "s".into(),
                turn: 1,
                text: "offer 400\x1b[31m".into(),
                waiting: true,
                review: Some("manual approval".into()),
            },
        )));
        let relay = v.clone().unwrap();
        assert_eq!(relay.draft.as_ref().unwrap().text, "offer 400");
        timeline.extend(lines(apply(
            &mut v,
            &EventKind::RelaySent {
                turn: 1,
                sent_as: SentAs::Edited,
                trace_id: "t".into(),
                hop: 1,
                text: "offer 420".into(),
            },
        )));
        assert!(v.as_ref().unwrap().draft.is_none());
        assert!(timeline.iter().any(|e| e.contains("[edited] offer 420")));
        timeline.extend(lines(apply(
            &mut v,
            &EventKind::RelayState {
                state: RelayPhase::Stopped,
                turn: 8,
                max_turns: 8,
                reason: Some("limit reached: max_turns (8)".into()),
            },
        )));
        assert!(
            timeline
                .last()
                .unwrap()
                .contains("■ relay stopped: limit reached: max_turns (8)")
        );
        let lines = panel_lines(v.as_ref(), "a", 80);
        assert!(lines.iter().any(|l| l.to_string().contains("max_turns (8)")));
    }
}
