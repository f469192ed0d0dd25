//! Mode `flow`: a hop passing work on (a route and its message, an advisor's report, a
//! handoff) or a member giving the run its answer.

use super::{Line, Tone, colon_quote, duration};
use crate::engine::events::{EventKind, HopKind};

/// A hop kind's name, as the event writes it.
pub fn hop_kind_name(kind: HopKind) -> &'static str {
    match kind {
        HopKind::Handoff => "handoff",
        HopKind::Route => "route",
        HopKind::Advisor => "advisor",
        HopKind::Answer => "answer",
    }
}

/// One line for a `flow_hop` event: `triage ⇒ tech (route, 1.2s, 56 tok): disk full`, `✓
/// security advised engineer (2.3s, 321 tok)`, `engineer → approver (handoff, …)`, `✓ approver
/// answered (…)`; None for other events.
pub fn hop(event: &EventKind) -> Option<Line> {
    let EventKind::FlowHop {
        from,
        to,
        kind,
        message,
        success,
        duration_ms,
        tokens,
        ..
    } = event
    else {
        return None;
    };
    let cost = format!(
        "{}, {} tok",
        duration(*duration_ms),
        crate::text::thousands(*tokens)
    );
    let note = message.as_deref().map(colon_quote).unwrap_or_default();
    let mark = if *success { "✓" } else { "✗" };
    let text = match (kind, to) {
        (HopKind::Route, Some(to)) => format!("{from} ⇒ {to} (route, {cost}){note}"),
        (HopKind::Route, None) => format!("✗ {from}: no such destination{note}; asked again ({cost})"),
        (HopKind::Handoff, Some(to)) => format!("{from} → {to} (handoff, {cost})"),
        (HopKind::Advisor, Some(to)) => format!("{mark} {from} advised {to} ({cost}){note}"),
        (HopKind::Answer, _) if *success => format!("✓ {from} answered ({cost})"),
        (kind, _) => format!("{mark} {from} ({}, {cost}){note}", hop_kind_name(*kind)),
    };
    let tone = if *success { Tone::Info } else { Tone::Bad };
    Some(Line::new(tone, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hops_read_as_one_line() {
        let hop_event = |kind, to: Option<&str>, message: Option<&str>, success| EventKind::FlowHop {
            from: "triage".into(),
            from_id: "s1".into(),
            to: to.map(str::to_string),
            to_id: None,
            kind,
            message: message.map(str::to_string),
            success,
            duration_ms: 1234,
            tokens: 56,
        };
        let line = |e| hop(&e).unwrap().text;
        assert_eq!(
            line(hop_event(HopKind::Route, Some("tech"), Some("disk\nfull"), true)),
            "triage ⇒ tech (route, 1.2s, 56 tok): disk"
        );
        assert_eq!(
            line(hop_event(HopKind::Handoff, Some("tech"), None, true)),
            "triage → tech (handoff, 1.2s, 56 tok)"
        );
        assert_eq!(
            line(hop_event(
                HopKind::Advisor,
                Some("tech"),
                Some("timed out"),
                false
            )),
            "✗ triage advised tech (1.2s, 56 tok): timed out"
        );
        assert_eq!(
            line(hop_event(HopKind::Answer, None, None, true)),
            "✓ triage answered (1.2s, 56 tok)"
        );
        assert_eq!(
            line(hop_event(HopKind::Answer, None, Some("Boom"), false)),
            "✗ triage (answer, 1.2s, 56 tok): Boom"
        );
        assert!(hop(&EventKind::CyclePaused).is_none());
    }
}
