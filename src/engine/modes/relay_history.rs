//! A relay's conversation as the driver sees it: bounded before every driver turn (older
//! exchanges folded into a deterministic `history_summary`, the latest counterpart message
//! always verbatim) and the driver's prompt built from it. Pure functions.

use super::super::protocol::relay::{
    LATEST_REPLY_HEADING, OBJECTIVE_HEADING, REJECTION_HEADING, RELAY_COMPLETE, turn_line,
};
use crate::model::SentAs;

/// One exchange: what went out and what came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exchange {
    pub turn: u32,
    pub outbound: String,
    pub sent_as: SentAs,
    /// The counterpart's answer, or why there was none.
    pub inbound: Option<String>,
}

/// The history as one driver turn gets it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Folded {
    /// The exchanges that did not fit, folded into short lines.
    pub summary: Option<String>,
    /// The newest exchanges that fit, verbatim (the last one without its answer: that is
    /// `latest_reply`).
    pub recent: Vec<Exchange>,
    /// The counterpart's latest message, verbatim whatever its size.
    pub latest_reply: Option<String>,
}

/// Characters of a message kept on a summary line.
const SUMMARY_SNIPPET: usize = 160;

/// Folds `history` so that at most `max_turns` exchanges and `max_chars` characters stay
/// verbatim (the latest reply is not counted: it is always kept). The same input gives the same
/// output.
pub(crate) fn fold(history: &[Exchange], max_turns: usize, max_chars: usize) -> Folded {
    let latest_reply = history.last().and_then(|e| e.inbound.clone());
    let mut recent: Vec<Exchange> = Vec::new();
    let mut used = 0usize;
    let mut cut = history.len();
    for (i, exchange) in history.iter().enumerate().rev() {
        let mut kept = exchange.clone();
        if i + 1 == history.len() {
            kept.inbound = None;
        }
        let size = kept.outbound.chars().count() + kept.inbound.as_deref().map_or(0, |t| t.chars().count());
        if recent.len() >= max_turns || used + size > max_chars {
            break;
        }
        used += size;
        recent.push(kept);
        cut = i;
    }
    recent.reverse();
    let folded = &history[..cut];
    let summary = (!folded.is_empty()).then(|| summary_of(folded, max_chars / 4));
    Folded {
        summary,
        recent,
        latest_reply,
    }
}

/// One line per folded exchange, the oldest dropped first when the lines exceed `budget`.
fn summary_of(folded: &[Exchange], budget: usize) -> String {
    let lines: Vec<String> = folded
        .iter()
        .map(|e| {
            format!(
                "- turn {} ({}): sent \"{}\"; reply \"{}\"",
                e.turn,
                e.sent_as.as_str(),
                snippet(&e.outbound),
                e.inbound.as_deref().map_or_else(|| "(none)".to_string(), snippet)
            )
        })
        .collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0usize;
    for line in lines.iter().rev() {
        let size = line.chars().count() + 1;
        if used + size > budget.max(SUMMARY_SNIPPET) && !kept.is_empty() {
            break;
        }
        used += size;
        kept.push(line);
    }
    kept.reverse();
    let omitted = lines.len() - kept.len();
    let mut out = String::new();
    if omitted > 0 {
        out.push_str(&format!("({omitted} earlier turns omitted)\n"));
    }
    out.push_str(&kept.join("\n"));
    out
}

/// The first `SUMMARY_SNIPPET` characters of a text on one line, the cut marked.
fn snippet(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= SUMMARY_SNIPPET {
        return flat;
    }
    let mut cut: String = flat.chars().take(SUMMARY_SNIPPET).collect();
    cut.push('…');
    cut
}

/// What one driver turn is asked.
pub(crate) struct DriverTurn<'a> {
    pub objective: &'a str,
    pub counterpart: &'a str,
    /// The turn being drafted (1-based) and the limit.
    pub turn: u32,
    pub max_turns: u32,
    pub history: &'a Folded,
    /// The user's note on a rejected draft.
    pub rejection: Option<&'a str>,
}

/// The driver's prompt. Its headings are the protocol's (`protocol::relay`): the sim reads them.
pub(crate) fn driver_prompt(t: &DriverTurn<'_>) -> String {
    let mut out = format!(
        "{OBJECTIVE_HEADING}\n{}\n\n## Your part\nYou speak for the user with `{}` (the counterpart), \
         one message at a time. Write only the next message to send to them, nothing else. When the \
         objective is met, or cannot be met, write your closing report to the user instead and end \
         it with {RELAY_COMPLETE} on its own line (that message is not sent).\n",
        t.objective.trim(),
        t.counterpart,
    );
    if let Some(summary) = &t.history.summary {
        out.push_str(&format!("\n## History summary\n{summary}\n"));
    }
    if !t.history.recent.is_empty() {
        out.push_str("\n## Conversation so far\n");
        for e in &t.history.recent {
            out.push_str(&format!(
                "### You (turn {}, {})\n{}\n",
                e.turn,
                e.sent_as.as_str(),
                e.outbound.trim()
            ));
            if let Some(reply) = &e.inbound {
                out.push_str(&format!("### Counterpart (turn {})\n{}\n", e.turn, reply.trim()));
            }
        }
    }
    if let Some(reply) = &t.history.latest_reply {
        out.push_str(&format!("\n{LATEST_REPLY_HEADING}\n{reply}\n"));
    }
    if let Some(note) = t.rejection {
        out.push_str(&format!(
            "\n{REJECTION_HEADING}\n{}\nDraft the message again with this in mind.\n",
            note.trim()
        ));
    }
    // Last: what changes every turn comes after what the previous turn's message also began
    // with, so a prompt cache keeps the objective, the part and the history before it.
    out.push_str(&format!("\n{}\n", turn_line(t.turn, t.max_turns)));
    out
}

/// The draft without the completion sentinel, and whether it had one (on a line of its own,
/// or ending the text).
pub(crate) fn split_complete(text: &str) -> (String, bool) {
    if !text.contains(RELAY_COMPLETE) {
        return (text.to_string(), false);
    }
    (text.replace(RELAY_COMPLETE, "").trim().to_string(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(turn: u32, size: usize) -> Exchange {
        Exchange {
            turn,
            outbound: format!("out {turn} {}", "o".repeat(size)),
            sent_as: SentAs::AutoSent,
            inbound: Some(format!("in {turn} {}", "i".repeat(size))),
        }
    }

    #[test]
    fn short_history_stays_verbatim() {
        let h: Vec<Exchange> = (1..=3).map(|t| exchange(t, 10)).collect();
        let f = fold(&h, 6, 24_000);
        assert_eq!(f.summary, None);
        assert_eq!(f.recent.len(), 3);
        assert_eq!(f.recent[2].inbound, None, "the latest reply is not repeated");
        assert_eq!(f.latest_reply, h[2].inbound);
    }

    #[test]
    fn oversized_history_folds_deterministically_and_keeps_the_latest_reply() {
        let mut h: Vec<Exchange> = (1..=20).map(|t| exchange(t, 500)).collect();
        h.last_mut().unwrap().inbound = Some("L".repeat(50_000));
        let a = fold(&h, 6, 4_000);
        let b = fold(&h, 6, 4_000);
        assert_eq!(a, b);
        assert_eq!(a.latest_reply.as_deref(), Some("L".repeat(50_000).as_str()));
        let verbatim: usize = a
            .recent
            .iter()
            .map(|e| e.outbound.chars().count() + e.inbound.as_deref().map_or(0, |t| t.chars().count()))
            .sum();
        assert!(verbatim <= 4_000, "{verbatim}");
        assert!(a.recent.len() <= 6);
        let summary = a.summary.unwrap();
        assert!(summary.chars().count() <= 1_000 + 200, "{}", summary.len());
        assert!(summary.contains("earlier turns omitted"), "{summary}");
        // The newest folded turn is the one just before the verbatim ones.
        let first_recent = a.recent[0].turn;
        assert!(
            summary.contains(&format!("- turn {} ", first_recent - 1)),
            "{summary}"
        );
        // Turn limit alone.
        let small: Vec<Exchange> = (1..=9).map(|t| exchange(t, 5)).collect();
        let f = fold(&small, 2, 24_000);
        assert_eq!(f.recent.iter().map(|e| e.turn).collect::<Vec<_>>(), vec![8, 9]);
        assert_eq!(f.summary.unwrap().lines().count(), 7);
    }

    /// The driver's prompt for turn 2 of 8 of buying a bike from `seller`.
    fn turn_two_prompt(history: &Folded, rejection: Option<&str>) -> String {
        driver_prompt(&DriverTurn {
            objective: "buy a bike",
            counterpart: "seller",
            turn: 2,
            max_turns: 8,
            history,
            rejection,
        })
    }

    #[test]
    fn the_prompt_has_the_contract_headings() {
        let h = fold(&[exchange(1, 3)], 6, 24_000);
        let p = turn_two_prompt(&h, Some("be polite"));
        for part in [
            "## Relay objective\nbuy a bike",
            "Turn: 2 of 8",
            "## Conversation so far",
            "## Latest counterpart message\nin 1 iii",
            "## The user rejected your last draft\nbe polite",
        ] {
            assert!(p.contains(part), "{part}\n{p}");
        }
        // What changes every turn comes last, after what the last turn's prompt also began with.
        assert!(p.trim_end().ends_with("Turn: 2 of 8"), "{p}");
    }

    #[test]
    fn the_turn_is_read_from_the_prompt_s_last_turn_line_not_from_quoted_history() {
        let mut quoted = exchange(1, 3);
        quoted.inbound = Some("Turn: 8 of 8\nso take it or leave it".into());
        let h = fold(&[quoted], 6, 24_000);
        let p = turn_two_prompt(&h, None);
        assert_eq!(
            crate::engine::protocol::relay::parse_turn_line(&p),
            Some((2, 8)),
            "{p}"
        );
    }

    #[test]
    fn the_sentinel_is_split_off() {
        assert_eq!(
            split_complete("done\n[[RELAY_COMPLETE]]"),
            ("done".to_string(), true)
        );
        assert_eq!(split_complete("go on"), ("go on".to_string(), false));
    }
}
