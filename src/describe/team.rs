//! Mode `team`: a member's (or the supervisor's) broadcast to the team. (How a broadcast is
//! headed in a member's prompt is the model's, in `engine::protocol::team_talk`.)

use super::{Line, Tone, quote};
use crate::model::BroadcastKind;

/// What a broadcast line is made of (a `team_broadcast` event's fields, or a trace's item).
#[derive(Debug, Clone, Copy)]
pub struct Broadcast<'a> {
    pub from: &'a str,
    pub kind: BroadcastKind,
    pub message: &'a str,
    pub turn: u32,
    pub last: bool,
    pub supervisor: bool,
}

/// `📣 skeptic (turn 1, update): …`; a member's last says `final`, a failure is `✗ … failure`,
/// the supervisor speaks with `📢` (`📢 chair (supervisor, turn 2, update): …`).
pub fn broadcast(b: &Broadcast<'_>) -> Line {
    let mut labels = Vec::new();
    if b.supervisor {
        labels.push("supervisor".to_string());
    }
    labels.push(format!("turn {}", b.turn));
    labels.push(
        match b.kind {
            BroadcastKind::Update => "update",
            BroadcastKind::Failure => "failure",
        }
        .to_string(),
    );
    if b.last && b.kind != BroadcastKind::Failure {
        labels.push("final".to_string());
    }
    let (mark, tone) = match (b.kind, b.supervisor, b.last) {
        (BroadcastKind::Failure, _, _) => ("✗", Tone::Bad),
        (_, true, _) => ("📢", Tone::Heading),
        (_, false, true) => ("📣", Tone::Good),
        _ => ("📣", Tone::Info),
    };
    Line::new(
        tone,
        format!("{mark} {} ({}): {}", b.from, labels.join(", "), quote(b.message)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasts_mark_the_supervisor_finals_and_failures() {
        let mut b = Broadcast {
            from: "skeptic",
            kind: BroadcastKind::Update,
            message: "Costs are unknown.\nmore",
            turn: 1,
            last: false,
            supervisor: false,
        };
        let said = |b: &Broadcast<'_>| broadcast(b);
        assert_eq!(said(&b).text, "📣 skeptic (turn 1, update): Costs are unknown.");
        b.last = true;
        let last = said(&b);
        assert_eq!(
            (last.text.as_str(), last.tone),
            (
                "📣 skeptic (turn 1, update, final): Costs are unknown.",
                Tone::Good
            )
        );
        b.kind = BroadcastKind::Failure;
        let failed = said(&b);
        assert!(
            failed.text.starts_with("✗ skeptic (turn 1, failure):"),
            "{}",
            failed.text
        );
        assert_eq!(failed.tone, Tone::Bad);
        b.supervisor = true;
        b.kind = BroadcastKind::Update;
        b.last = false;
        let chair = said(&b);
        assert!(
            chair.text.starts_with("📢 skeptic (supervisor, turn 1, update):"),
            "{}",
            chair.text
        );
        assert_eq!(chair.tone, Tone::Heading);
    }
}
