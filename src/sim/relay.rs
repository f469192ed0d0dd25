//! How the sim plays mode `relay`: the driver drafts toward its objective and closes the relay
//! at its third turn (or the last one allowed); a negotiation's counterpart counters each offer
//! it hears. Deterministic from the prompt (`protocol::relay`'s headings).

use super::prompt::{SimPrompt, stable_hash, summary};
use crate::engine::protocol::relay::{
    LATEST_REPLY_HEADING, OBJECTIVE_HEADING, REJECTION_HEADING, RELAY_COMPLETE, parse_turn_line,
};

/// How the sim's relay driver signs its drafts; a message that ends with it is a relay's draft,
/// which the sim answers as the counterpart.
const DRAFT_MARK: &str = "(Simulated relay draft.)";

/// Whether `message` is a draft of the sim's relay driver (what a counterpart is sent).
pub(super) fn is_draft(message: &str) -> bool {
    message.trim_end().ends_with(DRAFT_MARK)
}

/// The turn a relay driver drafts: third turn (or the last allowed) closes the relay.
const SIM_RELAY_TURNS: u32 = 3;

/// A relay driver's draft: deterministic from the turn, the objective, the counterpart's last
/// message and a rejection note; from turn 3 (or the last turn allowed) it closes the relay.
pub(super) fn draft(p: &SimPrompt) -> String {
    let objective = summary(&p.section(OBJECTIVE_HEADING).unwrap_or_default(), 80);
    let (turn, max) = parse_turn_line(p.user).unwrap_or((1, u32::MAX));
    let latest = p.section(LATEST_REPLY_HEADING).map(|t| summary(&t, 60));
    let note = p
        .section(REJECTION_HEADING)
        .map(|t| summary(t.lines().next().unwrap_or(""), 60));
    if turn > SIM_RELAY_TURNS.min(max) {
        return format!(
            "Report: after {} turns toward \"{objective}\" the counterpart's last word was \"{}\". \
             (Simulated by huddle's offline simulator.)\n{}\n",
            turn - 1,
            latest.unwrap_or_default(),
            RELAY_COMPLETE
        );
    }
    let mut text = match (turn, &latest) {
        (1, _) | (_, None) => format!("Hello. On behalf of my user: {objective}. What can you offer?"),
        (_, Some(said)) => {
            format!(
                "You said: \"{said}\". We can offer {} for it; can you meet us there?",
                300 + 50 * turn
            )
        }
    };
    if let Some(note) = note {
        text = format!("(revised: {note}) {text}");
    }
    format!("{text} {DRAFT_MARK}\n")
}

/// The other side of a negotiation (a relay's counterpart, sent the sim driver's drafts): a
/// counter-offer that comes down as the offers it hears go up, deterministic from the message.
pub(super) fn counterparty(p: &SimPrompt) -> String {
    let offered: Vec<u32> = p
        .user
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .filter(|n| (10..100_000).contains(n))
        .collect();
    let step = (stable_hash(&[p.user]) % 4) as u32 * 10;
    let text = match offered.last() {
        Some(n) => format!(
            "{n} is too low for me. I can do {}, and delivery is included.",
            n + 50 + step
        ),
        None => format!(
            "Thanks for reaching out. My asking price is {}; what do you have in mind?",
            480 + step
        ),
    };
    format!("{text} (Simulated counterparty.)\n")
}
