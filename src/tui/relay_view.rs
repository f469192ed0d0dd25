//! A relay's run as the UI shows it: its state, turn, the draft waiting for you, whether you
//! took it over, and the banner saying why it ended. Kept in the group's cycle view from the
//! relay events; pure state and the panel lines (the timeline's lines are `describe::relay`'s).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use crate::engine::events::EventKind;
use crate::model::{RelayPhase, RelayRecord};
use crate::text::sanitize;

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
pub fn settle_replayed(relay: &mut Option<RelayView>) -> Option<crate::describe::Line> {
    let relay = relay.as_mut().filter(|r| !r.state.is_final())?;
    let reason = format!("interrupted in {} (huddle ended)", relay.state);
    relay.state = RelayPhase::Stopped;
    relay.draft = None;
    relay.taken_over = false;
    let line = crate::describe::relay::ended(relay.state, relay.turn, Some(&reason));
    relay.reason = Some(reason);
    Some(line)
}

/// Applies a relay event to the group's relay state (other events are ignored). Returns the
/// relay's turn when the event says it (the panel's iteration counter follows the turns).
pub fn apply(relay_slot: &mut Option<RelayView>, kind: &EventKind) -> Option<u32> {
    let mut turn_now = None;
    match kind {
        EventKind::RelayState {
            state,
            turn,
            max_turns,
            reason,
        } => {
            turn_now = Some(*turn);
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
            }
        }
        EventKind::RelayTakeOver { active, .. } => {
            let relay = relay_slot.get_or_insert_with(RelayView::default);
            relay.taken_over = *active;
            relay.draft = None;
        }
        EventKind::RelaySent { .. } => {
            if let Some(relay) = relay_slot.as_mut() {
                relay.draft = None;
            }
        }
        _ => {}
    }
    turn_now
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

    #[test]
    fn events_build_the_view_and_the_banner() {
        let mut v: Option<RelayView> = None;
        apply(
            &mut v,
            &EventKind::RelayDraft {
                session_id: "s".into(),
                turn: 1,
                text: "offer 400\x1b[31m".into(),
                waiting: true,
                review: Some("manual approval".into()),
            },
        );
        let relay = v.clone().unwrap();
        assert_eq!(relay.draft.as_ref().unwrap().text, "offer 400");
        apply(
            &mut v,
            &EventKind::RelaySent {
                turn: 1,
                sent_as: SentAs::Edited,
                trace_id: "t".into(),
                hop: 1,
                text: "offer 420".into(),
            },
        );
        assert!(v.as_ref().unwrap().draft.is_none());
        let turn = apply(
            &mut v,
            &EventKind::RelayState {
                state: RelayPhase::Stopped,
                turn: 8,
                max_turns: 8,
                reason: Some("limit reached: max_turns (8)".into()),
            },
        );
        assert_eq!(turn, Some(8));
        let lines = panel_lines(v.as_ref(), "a", 80);
        assert!(lines.iter().any(|l| l.to_string().contains("max_turns (8)")));
        // Read back without an end: stopped, and the timeline says so.
        let mut replayed = Some(RelayView {
            state: RelayPhase::WaitingRemote,
            turn: 2,
            ..RelayView::default()
        });
        let said = settle_replayed(&mut replayed).map(|l| l.text);
        assert_eq!(
            said.as_deref(),
            Some("■ relay stopped after 2 turn(s): interrupted in waiting_remote (huddle ended)")
        );
    }
}
