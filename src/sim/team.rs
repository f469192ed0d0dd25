//! How the sim plays mode `team` (a deliberation), deterministically, from the words of
//! `protocol::team_talk` in its prompts. A member: its first turn broadcasts a short view in
//! its role; a turn that sees the supervisor's broadcast broadcasts its final word; a second
//! turn that sees only the others' broadcasts answers them once, a later one has nothing more
//! to add (final). The supervisor: its first cycle broadcasts back "focus on …"; later (or
//! when it must conclude) it answers with a summary of the broadcasts, the final answer. The
//! same choices drive the `team_broadcast` call and the text form.

use super::prompt::stable_hash;
use crate::engine::protocol::team_talk::{
    CONCLUDE_LINE, CYCLE_LINE, HEADING_PREFIX, SUPERVISION_HEADING, TEXT_BROADCAST, TEXT_FINAL, TURN_LINE,
    broadcast_arguments, count_after, member_name, read_block,
};
use crate::providers::{ChatRole, TurnRequest};

/// What a member's views are about, picked by its name.
const ANGLES: &[&str] = &[
    "the first thing to settle is what success looks like and how we will measure it",
    "the biggest risk is the cost nobody has counted yet",
    "the quickest win is a small, reversible trial before any commitment",
    "the people affected need a say before we decide",
    "the evidence so far is thin; two independent sources would settle it",
    "the simplest option that meets the need is usually the right first step",
];

/// One broadcast read back from a block: who, whether the supervisor sent it, its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Heard {
    from: String,
    supervisor: bool,
    message: String,
}

/// The broadcasts of the block in `prompt`, in order.
fn heard(prompt: &str) -> Vec<Heard> {
    read_block(prompt)
        .into_iter()
        .map(|(h, message)| Heard {
            from: h.from,
            supervisor: h.supervisor,
            message: message
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_string(),
        })
        .collect()
}

/// The text of the user messages of the conversation, newest first.
fn user_texts(req: &TurnRequest) -> impl Iterator<Item = &str> {
    req.messages
        .iter()
        .rev()
        .filter(|m| m.role == ChatRole::User)
        .map(|m| &*m.content)
}

/// The request as a first prompt carries it (before its first heading or broadcast, without
/// the turn's or the cycle's count).
fn request_in(text: &str) -> String {
    let body: String = text
        .lines()
        .take_while(|l| !l.starts_with("## ") && !l.starts_with(HEADING_PREFIX))
        .filter(|l| !l.starts_with(TURN_LINE) && !l.starts_with(CYCLE_LINE))
        .collect::<Vec<_>>()
        .join("\n");
    let words: Vec<&str> = body.split_whitespace().take(12).collect();
    let mut out = words.join(" ").replace('"', "'");
    if body.split_whitespace().count() > 12 {
        out.push('…');
    }
    out
}

fn first_words(text: &str, n: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = words[..words.len().min(n)].join(" ");
    if words.len() > n {
        out.push('…');
    }
    out
}

/// What the sim does in a team turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// Broadcast `message` (`last`: a member's final one).
    Broadcast { message: String, last: bool },
    /// Answer: the supervisor's final answer.
    Answer(String),
}

/// The sim's move for this request, when it is a team turn.
pub fn decide(req: &TurnRequest) -> Option<Move> {
    let prompt = req.last_user_text();
    if prompt.contains(SUPERVISION_HEADING) {
        return Some(supervise(req, prompt));
    }
    let turn = count_after(prompt, TURN_LINE)?;
    Some(member(req, prompt, turn))
}

fn member(req: &TurnRequest, prompt: &str, turn: u32) -> Move {
    // Its name is in its system prompt (how the team works).
    let name = req
        .system
        .as_deref()
        .and_then(member_name)
        .or_else(|| user_texts(req).find_map(member_name))
        .unwrap_or("member")
        .to_string();
    let angle = ANGLES[(stable_hash(&[&name]) % ANGLES.len() as u64) as usize];
    let heard = heard(prompt);
    let (message, last) = if let Some(chair) = heard.iter().find(|h| h.supervisor) {
        (
            format!(
                "Taking {}'s point (\"{}\"): my final word as {name} is that {angle}.",
                chair.from,
                first_words(&chair.message, 10)
            ),
            true,
        )
    } else if turn == 1 {
        let request = request_in(prompt);
        (format!("As {name}, on \"{request}\": {angle}."), false)
    } else if turn == 2 && !heard.is_empty() {
        let names: Vec<&str> = heard.iter().map(|h| h.from.as_str()).collect();
        (
            format!("Having read {}: I still hold that {angle}.", names.join(" and ")),
            false,
        )
    } else {
        (format!("Nothing more to add from {name}: {angle}."), true)
    };
    Move::Broadcast { message, last }
}

fn supervise(req: &TurnRequest, prompt: &str) -> Move {
    let cycle = count_after(prompt, CYCLE_LINE).unwrap_or(1);
    let heard = heard(prompt);
    if cycle == 1 && !prompt.contains(CONCLUDE_LINE) {
        let names: Vec<&str> = heard.iter().map(|h| h.from.as_str()).collect();
        let who = if names.is_empty() {
            "everyone".to_string()
        } else {
            names.join(", ")
        };
        return Move::Broadcast {
            message: format!(
                "Thanks, {who}. Focus on what we should do first and what it costs; say where you still disagree."
            ),
            last: false,
        };
    }
    // The request is in the supervisor's first prompt (earlier in its conversation).
    let request = user_texts(req)
        .filter(|t| count_after(t, CYCLE_LINE) == Some(1))
        .map(request_in)
        .next()
        .unwrap_or_default();
    let mut answer = String::from("## Final answer\n\n");
    if !request.is_empty() {
        answer.push_str(&format!("On \"{request}\", the team's view:\n\n"));
    }
    for h in heard.iter().filter(|h| !h.supervisor) {
        answer.push_str(&format!("- **{}**: {}\n", h.from, first_words(&h.message, 24)));
    }
    if heard.is_empty() {
        answer.push_str("- (no new broadcasts this cycle)\n");
    }
    answer.push_str(
        "\nRecommendation: start with a small, measurable trial, count its cost, and revisit the decision with its results.",
    );
    Move::Answer(answer)
}

/// The `team_broadcast` call's arguments, when the sim broadcasts now.
pub fn call_arguments(req: &TurnRequest) -> Option<String> {
    match decide(req)? {
        Move::Broadcast { message, last } => Some(broadcast_arguments(&message, last)),
        Move::Answer(_) => None,
    }
}

/// The sim's text answer to a team turn: the supervisor's final answer, or the text form
/// (a member's broadcast with `[final]` on its last line; the supervisor's `@broadcast:` line).
pub fn text(req: &TurnRequest) -> Option<String> {
    Some(match decide(req)? {
        Move::Answer(answer) => answer,
        Move::Broadcast { message, last } => {
            let prompt = req.last_user_text();
            if prompt.contains(SUPERVISION_HEADING) {
                if !req.tools.is_empty() {
                    // Offered the tool but told to answer (its last round): it concludes.
                    return match supervise_final(req) {
                        Move::Answer(a) => Some(a),
                        Move::Broadcast { .. } => None,
                    };
                }
                format!("Thanks, all.\n{TEXT_BROADCAST} {message}")
            } else if last {
                format!("{message}\n{TEXT_FINAL}")
            } else {
                message
            }
        }
    })
}

/// The supervisor's final answer whatever its cycle.
fn supervise_final(req: &TurnRequest) -> Move {
    let prompt = format!("{}\n{CONCLUDE_LINE}", req.last_user_text());
    supervise(req, &prompt)
}

/// The sim's side of a deliberation, read against the prompts the protocol builds.
#[cfg(test)]
mod tests {
    use super::{Move, call_arguments, decide, text};
    use crate::engine::protocol::team_talk::*;
    use crate::model::BroadcastKind;
    use crate::providers::{ChatMessage, TurnRequest};
    use chrono::Utc;

    fn request(prompts: &[&str], tools: bool) -> TurnRequest {
        let mut req = TurnRequest::new("m", prompts.iter().map(|p| ChatMessage::user(*p)).collect());
        if tools {
            req.tools = vec![broadcast_tool(true)];
        }
        req
    }

    /// A member's request: its brief as the system prompt, then its conversation.
    fn member_request(name: &str, prompts: &[&str], tools: bool) -> TurnRequest {
        let others = [Peer {
            name: "other".into(),
            role: None,
        }];
        let mut req = request(prompts, tools);
        req.system = Some(
            member_brief(&MemberIntro {
                name,
                role: None,
                others: &others,
                supervisor: "chair",
                max_turns: 4,
                text_form: !tools,
            })
            .into(),
        );
        req
    }

    fn first() -> String {
        member_first_prompt("Should we move the office?", None, 4).text
    }

    fn chair_says(text: &str) -> Broadcast {
        Broadcast {
            from: "chair".into(),
            from_id: "c".into(),
            kind: BroadcastKind::Update,
            message: text.into(),
            turn: 1,
            last: false,
            supervisor: true,
            at: Utc::now(),
        }
    }

    fn peer_says(from: &str, text: &str) -> Broadcast {
        Broadcast {
            supervisor: false,
            from: from.into(),
            ..chair_says(text)
        }
    }

    #[test]
    fn a_member_gives_its_view_answers_peers_once_and_ends_on_the_supervisors_word() {
        let one = first();
        let asked = |prompts: &[&str]| member_request("skeptic", prompts, true);
        let Some(Move::Broadcast { message, last }) = decide(&asked(&[&one])) else {
            panic!("a first turn broadcasts")
        };
        assert!(
            message.starts_with("As skeptic, on \"Should we move the office?\":"),
            "{message}"
        );
        assert!(!last);
        let args = call_arguments(&asked(&[&one])).unwrap();
        assert!(parse_broadcast_call(&args, true).is_ok());
        let peers = peer_says("optimist", "Moving is cheap.");
        let block = broadcasts_block(&deliveries(&[&peers], 0, None));
        let two = member_next_prompt(Some(&block), false, 2, 4, false).text;
        let Some(Move::Broadcast { message, last }) = decide(&asked(&[&one, &two])) else {
            panic!()
        };
        assert!(message.starts_with("Having read optimist:") && !last, "{message}");
        let three = member_next_prompt(Some(&block), false, 3, 4, false).text;
        assert!(matches!(
            decide(&asked(&[&one, &two, &three])),
            Some(Move::Broadcast { last: true, .. })
        ));
        let chair = chair_says("Focus on cost.");
        let block = broadcasts_block(&deliveries(&[&peers, &chair], 0, None));
        let two = member_next_prompt(Some(&block), false, 2, 4, false).text;
        let Some(Move::Broadcast { message, last }) = decide(&asked(&[&one, &two])) else {
            panic!()
        };
        assert!(
            message.contains("Taking chair's point (\"Focus on cost.\")") && last,
            "{message}"
        );
        let written = text(&member_request("skeptic", &[&one, &two], false)).unwrap();
        assert_eq!(
            parse_member_text(&written).map(|s| s.last),
            Some(true),
            "{written}"
        );
        assert_eq!(decide(&request(&["just a chat"], true)), None);
    }

    #[test]
    fn the_supervisor_broadcasts_back_once_then_answers_with_a_summary() {
        let peers = [Peer {
            name: "skeptic".into(),
            role: None,
        }];
        let active = vec!["skeptic".to_string()];
        let said = peer_says("skeptic", "Costs are unknown.");
        let block = broadcasts_block(&deliveries(&[&said], 0, None));
        let turn = |cycle: u32, conclude: bool, first: bool| {
            supervisor_prompt(&SupervisorTurn {
                first: first.then_some(("Should we move the office?", None)),
                block: Some(&block),
                active: &active,
                cycle,
                max_cycles: 5,
                conclude,
                from_user: &[],
            })
        };
        let supervisor = |prompts: &[&str], tools: bool| {
            let mut req = request(prompts, tools);
            req.system = Some(supervisor_brief(&peers, !tools).into());
            req
        };
        let one = turn(1, false, true);
        let Some(Move::Broadcast { message, .. }) = decide(&supervisor(&[&one.text], true)) else {
            panic!("the first cycle broadcasts back")
        };
        assert!(message.contains("Focus on"), "{message}");
        let text_form = text(&supervisor(&[&one.text], false)).unwrap();
        assert!(
            parse_supervisor_text(&text_form).unwrap().contains("Focus on"),
            "{text_form}"
        );
        // A later request carries the first one as the conversation keeps it.
        let two = turn(2, false, false).text;
        let later = supervisor(&[one.kept(), &two], true);
        let Some(Move::Answer(answer)) = decide(&later) else {
            panic!("the second cycle answers")
        };
        assert!(answer.contains("On \"Should we move the office?\""), "{answer}");
        assert!(answer.contains("- **skeptic**: Costs are unknown."), "{answer}");
        assert_eq!(call_arguments(&later), None);
        let forced = turn(1, true, true).text;
        assert!(
            matches!(decide(&supervisor(&[&forced], true)), Some(Move::Answer(_))),
            "told to conclude"
        );
    }
}
