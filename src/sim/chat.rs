//! How the sim answers a session outside a mode's protocol: a plain chat (it says it is
//! simulated), a session with a role (a broadcast panel member, a step of a sequential chain,
//! a flow member, a dispatched sub-agent: it answers in that role and builds on the earlier
//! answers it is shown), and a relay's counterpart sent the sim driver's drafts (see `relay`).

use super::prompt::{SimPrompt, pick, summary};
use crate::engine::protocol::prompts::ANSWER_HEADING;
use crate::engine::protocol::{dispatch, flow};

/// The answer to a prompt no mode's player claims.
pub(super) fn answer(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
    // A relay's counterpart is sent the driver's drafts: the sim's own driver signs them.
    if super::relay::is_draft(p.user) {
        return super::relay::counterparty(p);
    }
    // A flow member's input opens with the request under a heading.
    let user = p
        .user
        .trim_start()
        .strip_prefix(flow::ORIGINAL_REQUEST)
        .map_or(p.user, str::trim_start);
    // A dispatched sub-agent's input ends with its task (or a clarification) under a heading.
    let user = user
        .rsplit_once(&format!("{}\n", dispatch::TASK_HEADING))
        .map_or(user, |(_, task)| task.trim_start());
    let user = match user.trim_start().strip_prefix(dispatch::CLARIFICATION_HEADER) {
        Some(rest) => rest.split_once('\n').map_or(rest, |(_, q)| q.trim_start()),
        None => user,
    };
    // A pipeline member's input carries a context line and the pipeline's instructions.
    let user = if super::pipeline::is_member(p.user) {
        super::pipeline::request_of(user)
    } else {
        user
    };
    let said = summary(user, 80);
    let opener = pick(rng, &["Noted", "Understood", "Got it", "Thanks"]);
    // huddle's block for a dispatched sub-agent is not its role (one without a prompt of its
    // own has only that block).
    let focus = p
        .system
        .lines()
        .map(str::trim)
        .take_while(|l| *l != dispatch::FOCUS_HEADING)
        .find(|l| !l.is_empty())
        .map(|l| summary(l, 80));
    // A session with a role (a broadcast panel member, a step of a sequential chain) answers in
    // that role, and builds on the earlier answers of the round when it is shown them.
    if let Some(focus) = focus {
        let request = summary(user.split("\n## ").next().unwrap_or(user), 80);
        let earlier: Vec<String> = p
            .user
            .lines()
            .filter_map(|l| {
                l.strip_prefix(flow::REPORT_HEADING)
                    .or_else(|| l.strip_prefix(ANSWER_HEADING))
            })
            .map(|l| l.split(" (").next().unwrap_or(l).trim().to_string())
            .collect();
        let building = if earlier.is_empty() {
            "Nobody has answered before me in this round, so I set out the full answer.".to_string()
        } else {
            format!(
                "I build on what {} said before me and keep what holds up.",
                earlier.join(", ")
            )
        };
        let point = pick(
            rng,
            &[
                "name the trade-offs",
                "give one clear recommendation",
                "flag the main risk",
            ],
        );
        return format!(
            "{opener}: \"{request}\". From my role ({focus}) I {point}.\n\n{building}\n\n\
             (Simulated answer from huddle's offline simulator; no model was called.)\n"
        );
    }
    format!(
        "{opener}: \"{said}\". This is huddle's offline simulator (simulated answer, no model was called); \
         configure a real provider in config.yaml for real answers.\n"
    )
}
