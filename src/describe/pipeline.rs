//! Mode `pipeline`: the conversation moving to another phase, a handoff, a handoff the
//! pipeline does not allow.

use super::{Line, Tone, colon_quote};
use crate::engine::events::EventKind;

/// `phase review → handling (handler): needs another pass`, `triage ⇒ handler: ready`, `✗
/// handler ⇒ resolver rejected: …`; None for other events.
pub fn line(event: &EventKind) -> Option<Line> {
    Some(match event {
        EventKind::PhaseTransition {
            from_phase,
            to_phase,
            to_member,
            reason,
            ..
        } => {
            let from = from_phase.as_deref().unwrap_or("start");
            let who = to_member.as_deref().unwrap_or("parked for you");
            Line::info(format!(
                "phase {from} → {to_phase} ({who}){}",
                colon_quote(reason)
            ))
        }
        EventKind::Handoff {
            from,
            to,
            reason,
            by_supervisor,
            ..
        } => {
            let by = if *by_supervisor { " (supervisor)" } else { "" };
            Line::info(format!("{from} ⇒ {to}{by}{}", colon_quote(reason)))
        }
        EventKind::HandoffRejected {
            from, target, error, ..
        } => Line::new(
            Tone::Warn,
            format!("✗ {from} ⇒ {target} rejected{}", colon_quote(error)),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_read_as_one_line() {
        let moved = EventKind::PhaseTransition {
            from_phase: None,
            to_phase: "intake".into(),
            from_member: None,
            to_member: Some("triage".into()),
            to_member_id: None,
            reason: "the first stage\nmore".into(),
            handoff_count: 0,
            back: false,
        };
        assert_eq!(
            line(&moved).map(|l| l.text),
            Some("phase start → intake (triage): the first stage".into())
        );
        let rejected = EventKind::HandoffRejected {
            from: "handler".into(),
            from_id: "s".into(),
            target: "resolver".into(),
            error: "not allowed".into(),
        };
        let l = line(&rejected).unwrap();
        assert_eq!(
            (l.text.as_str(), l.tone),
            ("✗ handler ⇒ resolver rejected: not allowed", Tone::Warn)
        );
        assert_eq!(line(&EventKind::CyclePaused), None);
    }
}
