//! Mode `relay`: what went to the counterpart and came back, a draft waiting for you, a
//! take-over, a turn that failed, and how the relay ended.

use super::{Line, Tone, colon_quote, quote};
use crate::engine::events::EventKind;
use crate::model::RelayPhase;

/// `■ relay completed after 3 turn(s)`, `■ relay stopped after 8 turn(s): limit reached: …`.
pub fn ended(state: RelayPhase, turn: u32, reason: Option<&str>) -> Line {
    let tone = match state {
        RelayPhase::Completed => Tone::Good,
        RelayPhase::Error => Tone::Bad,
        _ => Tone::Warn,
    };
    Line::new(
        tone,
        format!(
            "■ relay {state} after {turn} turn(s){}",
            reason.map(colon_quote).unwrap_or_default()
        ),
    )
}

/// One line for a relay event (None for the states on the way and drafts nobody waits for).
pub fn line(event: &EventKind) -> Option<Line> {
    Some(match event {
        EventKind::RelayState {
            state, turn, reason, ..
        } if state.is_final() => ended(*state, *turn, reason.as_deref()),
        EventKind::RelayDraft {
            turn,
            waiting: true,
            review,
            ..
        } => {
            let why = review
                .as_deref()
                .map(|r| format!(" ({})", quote(r)))
                .unwrap_or_default();
            Line::new(Tone::Warn, format!("? draft {turn} waits for you{why}"))
        }
        EventKind::RelayTakeOver { active: true, .. } => {
            Line::info("✍ you took over: your messages go to the counterpart")
        }
        EventKind::RelayTakeOver { active: false, .. } => Line::info("↺ handed back to the driver"),
        EventKind::RelaySent {
            turn, sent_as, text, ..
        } => Line::info(format!("→ turn {turn} [{}] {}", sent_as.as_str(), quote(text))),
        EventKind::RelayReply { turn, text, .. } => {
            Line::new(Tone::Good, format!("← turn {turn} {}", quote(text)))
        }
        EventKind::RelayAudit {
            turn,
            status,
            failure,
            ..
        } if status != "ok" => Line::new(
            Tone::Bad,
            match status.as_str() {
                "rejected" => format!("✗ draft {turn} rejected: the driver drafts again"),
                other => format!(
                    "✗ turn {turn} {}{}",
                    other.replace('_', " "),
                    failure.as_deref().map(colon_quote).unwrap_or_default()
                ),
            },
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SentAs;

    #[test]
    fn a_relays_turns_and_end_read_as_lines() {
        let sent = EventKind::RelaySent {
            turn: 1,
            sent_as: SentAs::Edited,
            trace_id: "t".into(),
            hop: 1,
            text: "offer 420\nmore".into(),
        };
        assert_eq!(
            line(&sent).map(|l| l.text),
            Some("→ turn 1 [edited] offer 420".into())
        );
        let stopped = EventKind::RelayState {
            state: RelayPhase::Stopped,
            turn: 8,
            max_turns: 8,
            reason: Some("limit reached: max_turns (8)".into()),
        };
        let l = line(&stopped).unwrap();
        assert_eq!(
            (l.text.as_str(), l.tone),
            (
                "■ relay stopped after 8 turn(s): limit reached: max_turns (8)",
                Tone::Warn
            )
        );
        let running = EventKind::RelayState {
            state: RelayPhase::WaitingRemote,
            turn: 2,
            max_turns: 8,
            reason: None,
        };
        assert_eq!(line(&running), None);
    }
}
