//! The text of mode `team` (a deliberation), as pure functions: the `team_broadcast` tool and
//! reading its calls, the text form for sessions without native tools (a member's whole answer
//! is its broadcast, `[final]` on its last line; the supervisor broadcasts back with an
//! `@broadcast:` line), the markdown block of broadcasts a turn is given (with a broadcast that
//! would overflow the reader's context replaced by a diagnostic), and every prompt. (A broadcast
//! in words for people is `describe::team`'s.)

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::model::context::tokens_of_text;
use crate::model::{BroadcastKind, ToolSpec};

use super::super::events::EventKind;
use super::prompts::StepPrompt;

/// A team member's (and the supervisor's) one tool.
pub const BROADCAST_TOOL: &str = "team_broadcast";
/// The heading of the broadcasts injected into a member's or the supervisor's next turn.
pub const BROADCASTS_HEADING: &str = "## Team broadcasts";
/// Heads the block a member's first turn gets: how the team works.
pub const TEAM_HEADING: &str = "## How this team works";
/// Heads every supervisor turn's instructions.
pub const SUPERVISION_HEADING: &str = "## Team supervision";
/// Names the member in its first turn: ``You are member `skeptic` ``.
pub const YOU_ARE: &str = "You are member `";
/// A member's turn count, on a line of its own: `Your turn: 2 of 6`.
pub const TURN_LINE: &str = "Your turn: ";
/// The supervisor's cycle count, on a line of its own: `Cycle: 1 of 12`.
pub const CYCLE_LINE: &str = "Cycle: ";
/// The supervisor's last turn (or every member has left): it must answer now.
pub const CONCLUDE_LINE: &str = "Conclude now:";
/// The text form (sessions without native tools): the supervisor broadcasts back with a line
/// starting with this.
pub const TEXT_BROADCAST: &str = "@broadcast:";
/// The text form: a member's answer whose last line is this is its final broadcast.
pub const TEXT_FINAL: &str = "[final]";
/// The label of the supervisor's broadcasts in a broadcast's heading.
pub const SUPERVISOR_LABEL: &str = "supervisor";
/// The label of a member's final broadcast in its heading.
pub const FINAL_LABEL: &str = "final";
/// Opens a broadcast's heading inside the block.
pub const HEADING_PREFIX: &str = "### ";
/// Separates the parts of a broadcast's heading.
const SEPARATOR: &str = " · ";

/// What a broadcast's heading says: who, its type, its turn and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroadcastHeading {
    pub from: String,
    pub kind: BroadcastKind,
    pub turn: u32,
    /// A member's final broadcast (it has left the team).
    pub last: bool,
    pub supervisor: bool,
    /// When it was made, as shown (`06:13:47 UTC`).
    pub at: String,
}

/// A broadcast's type as its heading (and a headless line) spells it.
pub fn kind_label(kind: BroadcastKind) -> &'static str {
    match kind {
        BroadcastKind::Update => "update",
        BroadcastKind::Failure => "failure",
    }
}

/// `### skeptic · update · final · turn 2 · 06:13:47 UTC` (the supervisor's carry
/// `supervisor`).
pub fn heading_line(h: &BroadcastHeading) -> String {
    let mut parts = vec![h.from.clone(), kind_label(h.kind).to_string()];
    if h.supervisor {
        parts.push(SUPERVISOR_LABEL.to_string());
    }
    if h.last {
        parts.push(FINAL_LABEL.to_string());
    }
    parts.push(format!("turn {}", h.turn));
    parts.push(h.at.clone());
    format!("{HEADING_PREFIX}{}", parts.join(SEPARATOR))
}

/// Reads a line written by [`heading_line`]; `None` for any other line.
pub fn parse_heading_line(line: &str) -> Option<BroadcastHeading> {
    let rest = line.trim().strip_prefix(HEADING_PREFIX)?;
    let parts: Vec<&str> = rest.split(SEPARATOR).collect();
    let (from, kind) = (parts.first()?, parts.get(1)?);
    let kind = match *kind {
        "update" => BroadcastKind::Update,
        "failure" => BroadcastKind::Failure,
        _ => return None,
    };
    let turn_at = parts.iter().position(|p| p.starts_with("turn "))?;
    let turn = parts[turn_at].strip_prefix("turn ")?.parse().ok()?;
    let labels = &parts[2..turn_at];
    Some(BroadcastHeading {
        from: from.to_string(),
        kind,
        turn,
        last: labels.contains(&FINAL_LABEL),
        supervisor: labels.contains(&SUPERVISOR_LABEL),
        at: parts[turn_at + 1..].join(SEPARATOR),
    })
}

/// `n` of `Your turn: n of m` (or `Cycle: n of m`) in `text` after `prefix`.
pub fn count_after(text: &str, prefix: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(prefix)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The member named by [`YOU_ARE`] in a first turn.
pub fn member_name(text: &str) -> Option<&str> {
    let start = text.find(YOU_ARE)? + YOU_ARE.len();
    let rest = &text[start..];
    Some(&rest[..rest.find('`')?])
}

/// One broadcast, as the team's log keeps it (in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broadcast {
    /// The sender's handle (its name in the team).
    pub from: String,
    /// The sender's session id.
    pub from_id: String,
    pub kind: BroadcastKind,
    pub message: String,
    /// The sender's turn it was made in.
    pub turn: u32,
    /// A member's last broadcast: it has left the team.
    pub last: bool,
    pub supervisor: bool,
    pub at: DateTime<Utc>,
}

impl Broadcast {
    fn heading(&self) -> BroadcastHeading {
        BroadcastHeading {
            from: self.from.clone(),
            kind: self.kind,
            turn: self.turn,
            last: self.last,
            supervisor: self.supervisor,
            at: self.at.format("%H:%M:%S UTC").to_string(),
        }
    }

    /// The `team_broadcast` event of this broadcast.
    pub fn event(&self) -> EventKind {
        EventKind::TeamBroadcast {
            from: self.from.clone(),
            from_id: self.from_id.clone(),
            kind: self.kind,
            message: self.message.clone(),
            turn: self.turn,
            last: self.last,
            supervisor: self.supervisor,
            sent_at: self.at,
        }
    }
}

/// What a turn said to the team: its message, and whether it was the member's last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub message: String,
    pub last: bool,
}

/// The `team_broadcast` tool; the supervisor's has no `final` (it leaves by answering).
pub fn broadcast_tool(member: bool) -> ToolSpec {
    let mut properties = json!({
        "message": { "type": "string", "description": "What you share with the team" }
    });
    let description = if member {
        properties["final"] = json!({
            "type": "boolean",
            "description": "true when you have nothing more to add: you then leave the team"
        });
        "Share your contribution with the rest of the team (the only way to reach them). Your \
         turn ends with the broadcast."
    } else {
        "Send guidance to every member still in the team."
    };
    ToolSpec {
        name: BROADCAST_TOOL.to_string(),
        description: description.to_string(),
        input_schema: json!({
            "type": "object",
            "properties": properties,
            "required": ["message"]
        }),
    }
}

/// A `team_broadcast` call's arguments (`last`: a member's final one).
pub fn broadcast_arguments(message: &str, last: bool) -> String {
    json!({ "message": message, "final": last }).to_string()
}

/// Reads a `team_broadcast` call; `Err` is the tool error the model gets back.
pub fn parse_broadcast_call(arguments: &str, member: bool) -> Result<Said, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("{BROADCAST_TOOL}: the arguments are not a JSON object ({e})"))?;
    let message = value
        .get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    if message.is_empty() {
        return Err(format!(
            "{BROADCAST_TOOL}: `message` is required and must not be empty"
        ));
    }
    let last = member
        && match value.get("final") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.trim().eq_ignore_ascii_case("true"),
            _ => false,
        };
    Ok(Said {
        message: message.to_string(),
        last,
    })
}

/// A member's answer in the text form: all of it is its broadcast, a final one when its last
/// line is `[final]`; `None` for an empty answer (nothing was said).
pub fn parse_member_text(text: &str) -> Option<Said> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let (body, last) = match text.rsplit_once('\n') {
        Some((body, tail)) if tail.trim().eq_ignore_ascii_case(TEXT_FINAL) => (body.trim(), true),
        None if text.eq_ignore_ascii_case(TEXT_FINAL) => ("", true),
        _ => (text, false),
    };
    Some(Said {
        message: if body.is_empty() {
            "(nothing more to add)".to_string()
        } else {
            body.to_string()
        },
        last,
    })
}

/// The supervisor's answer in the text form: the message of its `@broadcast:` line (and every
/// line after it), or `None` when it has none (the answer is the final answer).
pub fn parse_supervisor_text(text: &str) -> Option<String> {
    let mut lines = text.lines();
    let first = lines.find_map(|l| l.trim_start().strip_prefix(TEXT_BROADCAST))?;
    let mut message = first.trim().to_string();
    for line in lines {
        message.push('\n');
        message.push_str(line);
    }
    let message = message.trim().to_string();
    (!message.is_empty()).then_some(message)
}

/// A broadcast as one reader gets it: whole, or replaced because it would overflow the
/// reader's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery<'a> {
    Whole(&'a Broadcast),
    Overflow {
        broadcast: &'a Broadcast,
        tokens: u64,
        window: u64,
        in_use: u64,
    },
}

/// The broadcasts a reader is given, in order: each whole while it fits the reader's context
/// window (`in_use` tokens are taken already), else a diagnostic in its place. Without a known
/// window everything goes whole.
pub fn deliveries<'a>(broadcasts: &[&'a Broadcast], in_use: u64, window: Option<u64>) -> Vec<Delivery<'a>> {
    let mut used = in_use;
    broadcasts
        .iter()
        .map(|&b| {
            let tokens = tokens_of_text(item_text(b).len());
            match window {
                Some(window) if used.saturating_add(tokens) > window => Delivery::Overflow {
                    broadcast: b,
                    tokens,
                    window,
                    in_use: used,
                },
                _ => {
                    used = used.saturating_add(tokens);
                    Delivery::Whole(b)
                }
            }
        })
        .collect()
}

/// The diagnostic that replaces an overflowing broadcast.
pub fn overflow_note(from: &str, turn: u32, tokens: u64, window: u64, in_use: u64) -> String {
    format!(
        "[huddle] The broadcast of {from} (turn {turn}, about {tokens} tokens) was left out: it \
         would overflow your context window ({window} tokens, about {in_use} in use). Ask {from} \
         for a shorter version if you need it."
    )
}

/// One broadcast in the block: its heading, then its message quoted (so a heading inside a
/// message cannot pass for the next broadcast).
fn item_text(b: &Broadcast) -> String {
    item(&heading_line(&b.heading()), &b.message)
}

fn item(heading: &str, message: &str) -> String {
    let mut out = String::with_capacity(heading.len() + message.len() + 16);
    out.push_str(heading);
    out.push('\n');
    crate::text::quote_into(&mut out, message);
    out
}

/// The broadcasts as one markdown block under [`BROADCASTS_HEADING`], in order.
pub fn broadcasts_block(deliveries: &[Delivery<'_>]) -> String {
    let mut out = format!("{BROADCASTS_HEADING}\n");
    for d in deliveries {
        out.push('\n');
        match d {
            Delivery::Whole(b) => out.push_str(&item_text(b)),
            Delivery::Overflow {
                broadcast: b,
                tokens,
                window,
                in_use,
            } => {
                let heading = BroadcastHeading {
                    kind: BroadcastKind::Failure,
                    ..b.heading()
                };
                out.push_str(&item(
                    &heading_line(&heading),
                    &overflow_note(&b.from, b.turn, *tokens, *window, *in_use),
                ));
            }
        }
    }
    out
}

/// Reads the block of [`broadcasts_block`] in `text` back: each broadcast's heading and its
/// message (unquoted), in order. The block ends at the next `## ` heading.
pub fn read_block(text: &str) -> Vec<(BroadcastHeading, String)> {
    let Some(start) = text.find(BROADCASTS_HEADING) else {
        return Vec::new();
    };
    let mut out: Vec<(BroadcastHeading, String)> = Vec::new();
    for line in text[start..].lines() {
        if let Some(heading) = parse_heading_line(line) {
            out.push((heading, String::new()));
        } else if let (Some((_, message)), Some(quoted)) = (out.last_mut(), line.strip_prefix('>')) {
            message.push_str(quoted.strip_prefix(' ').unwrap_or(quoted));
            message.push('\n');
        } else if line.starts_with("## ") && !out.is_empty() {
            break;
        }
    }
    for (_, message) in &mut out {
        message.truncate(message.trim_end().len());
    }
    out
}

/// A member of the team as the others are told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    pub role: Option<String>,
}

fn peer_list(peers: &[Peer]) -> String {
    peers
        .iter()
        .map(|p| match &p.role {
            Some(role) if !role.trim().is_empty() => format!("`{}` ({})", p.name, role.trim()),
            _ => format!("`{}`", p.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a member is told once, in its system prompt for the deliberation.
#[derive(Debug, Clone)]
pub struct MemberIntro<'a> {
    pub name: &'a str,
    pub role: Option<&'a str>,
    pub others: &'a [Peer],
    pub supervisor: &'a str,
    pub max_turns: u32,
    /// The session has no native tools: the text form.
    pub text_form: bool,
}

fn request_with_context(request: &str, shared_context: Option<&str>) -> String {
    let mut out = request.trim().to_string();
    if let Some(context) = shared_context.map(str::trim).filter(|c| !c.is_empty()) {
        out.push_str("\n\n## Shared context\n");
        out.push_str(context);
    }
    out
}

fn turn_line(turn: u32, max: u32) -> String {
    let mut out = format!("{TURN_LINE}{turn} of {max}");
    if turn >= max {
        out.push_str("\nThis is your last turn: make this broadcast your final one.");
    }
    out
}

/// How a member works in the team, said once in its system prompt: who it is, who else is
/// there, how to broadcast and leave, its turns.
pub fn member_brief(intro: &MemberIntro<'_>) -> String {
    let role = intro
        .role
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let others = if intro.others.is_empty() {
        "no other members".to_string()
    } else {
        peer_list(intro.others)
    };
    let mut out = format!(
        "{TEAM_HEADING}\n{YOU_ARE}{}`{role} of a team deliberating on the user's request (your \
         first message) with {others}. `{}` supervises: it reads every broadcast and writes the \
         team's final answer.\n",
        intro.name, intro.supervisor
    );
    if intro.text_form {
        out.push_str(&format!(
            "- Your whole answer is your broadcast: the only way to share with the team. The \
             others' broadcasts come to you in your next turn, under \"{BROADCASTS_HEADING}\".\n\
             - End your answer with a line `{TEXT_FINAL}` when you have nothing more to add: you \
             then leave the team.\n"
        ));
    } else {
        out.push_str(&format!(
            "- Call `{BROADCAST_TOOL}` with your contribution; the others' broadcasts come to you \
             in your next turn, under \"{BROADCASTS_HEADING}\".\n"
        ));
    }
    out.push_str(&format!(
        "- Keep broadcasts short and specific to your perspective; say where you disagree.\n\
         - You have at most {} turns; each message gives your turn's count.",
        intro.max_turns
    ));
    out
}

/// A member's first turn: the request (and shared context) and its turn count (how the team
/// works is in [`member_brief`]).
pub fn member_first_prompt(request: &str, shared_context: Option<&str>, max_turns: u32) -> StepPrompt {
    let request = request_with_context(request, shared_context);
    StepPrompt::compacted(
        format!("{request}\n\n{}", turn_line(1, max_turns)),
        format!("{request}\n\n{TURN_LINE}1 of {max_turns}"),
    )
}

/// The broadcasts of a block as the conversation keeps them: without the block's heading.
fn kept_block(block: &str) -> &str {
    let block = block.trim();
    block.strip_prefix(BROADCASTS_HEADING).unwrap_or(block).trim()
}

/// A member's later turn: the broadcasts it has not seen (if any), a reminder when its last
/// turn ended without a broadcast, and its turn count. The conversation keeps the broadcasts
/// and the count.
pub fn member_next_prompt(
    block: Option<&str>,
    reminder: bool,
    turn: u32,
    max: u32,
    text_form: bool,
) -> StepPrompt {
    let mut out = String::new();
    let mut kept = String::new();
    if let Some(block) = block {
        out.push_str(block.trim_end());
        out.push_str("\n\n");
        kept.push_str(kept_block(block));
        kept.push_str("\n\n");
    }
    if reminder {
        out.push_str(&if text_form {
            "Your last turn ended without a broadcast: the team did not hear from you. Answer \
             with your broadcast now."
                .to_string()
        } else {
            format!(
                "Your last turn ended without a broadcast: the team did not hear from you. Call \
                 `{BROADCAST_TOOL}` now."
            )
        });
        out.push('\n');
    } else if block.is_none() {
        out.push_str("No new broadcasts since your last turn.\n");
    }
    out.push_str(&turn_line(turn, max));
    kept.push_str(&format!("{TURN_LINE}{turn} of {max}"));
    StepPrompt::compacted(out, kept)
}

/// Heads the messages the user sent while the team deliberated (the supervisor gets them).
pub const USER_HEADING: &str = "## From the user (sent while the team was deliberating)";
/// Heads how the supervisor works, in its system prompt.
pub const HOW_YOU_SUPERVISE_HEADING: &str = "## How you supervise";

/// How the supervisor works, said once in its system prompt: the team, how broadcasts reach it,
/// how to guide the members or answer.
pub fn supervisor_brief(members: &[Peer], text_form: bool) -> String {
    let how = if text_form {
        format!(
            "To send the members guidance, start a line with `{TEXT_BROADCAST}` and write it after \
             that; they continue and their next broadcasts come to you. An answer without such a \
             line is the team's final answer and ends the deliberation."
        )
    } else {
        format!(
            "Either call `{BROADCAST_TOOL}` with guidance for the members (they continue, and their \
             next broadcasts come to you), or answer without the tool: that answer is the team's \
             final answer and ends the deliberation."
        )
    };
    format!(
        "{HOW_YOU_SUPERVISE_HEADING}\nYou supervise a team deliberating on the user's request (your \
         first message): {}. Members share their findings only through broadcasts; each cycle you \
         get all of them. {how}",
        peer_list(members)
    )
}

/// What the supervisor's turn is given.
#[derive(Debug, Clone)]
pub struct SupervisorTurn<'a> {
    /// The request (and the shared context), on its first turn only.
    pub first: Option<(&'a str, Option<&'a str>)>,
    pub block: Option<&'a str>,
    /// The members still in the team.
    pub active: &'a [String],
    pub cycle: u32,
    pub max_cycles: u32,
    /// It must answer now: its last turn, or every member has left.
    pub conclude: bool,
    /// Messages the user sent to the running team since its last turn.
    pub from_user: &'a [String],
}

/// The supervisor's turn: the request (first cycle), the broadcasts, the user's messages, who
/// is still in the team and the cycle's count (how to supervise is in [`supervisor_brief`]).
/// The conversation keeps what was said and the count.
pub fn supervisor_prompt(t: &SupervisorTurn<'_>) -> StepPrompt {
    let mut out = String::new();
    let mut kept = String::new();
    if let Some((request, context)) = t.first {
        let request = request_with_context(request, context);
        out.push_str(&request);
        out.push_str("\n\n");
        kept.push_str(&request);
        kept.push_str("\n\n");
    }
    if let Some(block) = t.block {
        out.push_str(block.trim_end());
        out.push_str("\n\n");
        kept.push_str(kept_block(block));
        kept.push_str("\n\n");
    }
    if !t.from_user.is_empty() {
        out.push_str(USER_HEADING);
        out.push('\n');
        for m in t.from_user {
            out.push_str("- ");
            out.push_str(m.trim());
            out.push('\n');
            kept.push_str(&format!("The user added: {}\n", m.trim()));
        }
        out.push('\n');
        kept.push('\n');
    }
    out.push_str(SUPERVISION_HEADING);
    out.push('\n');
    if t.conclude {
        let why = if t.active.is_empty() {
            "every member has left the team."
        } else {
            "this is your last turn."
        };
        out.push_str(&format!(
            "{CONCLUDE_LINE} {why} Write the team's final answer to the request now, drawing on \
             the broadcasts, without broadcasting.\n"
        ));
    } else {
        out.push_str(&format!("Members still in the team: {}.\n", t.active.join(", ")));
    }
    let count = format!("{CYCLE_LINE}{} of {}", t.cycle, t.max_cycles);
    out.push_str(&count);
    kept.push_str(&count);
    StepPrompt::compacted(out, kept)
}

/// What a lent `team_broadcast` call answers: the fact alone, short, since the history keeps
/// one per turn (the brief and the tool's description say what follows a broadcast).
pub fn acknowledgement(said: &Said, supervisor: bool, readers: usize) -> String {
    if supervisor {
        format!("Sent to {readers} member(s).")
    } else if said.last {
        "Final broadcast sent; you have left the team.".to_string()
    } else {
        format!("Sent to the team ({readers} reader(s)).")
    }
}

/// The automatic broadcast for a member whose turn failed.
pub fn failure_message(name: &str, reason: &str) -> String {
    format!(
        "member {name} failed and is no longer in the team. Reason: {}",
        crate::text::first_line(reason, 300)
    )
}

/// The automatic broadcast for a member that used up its turns.
pub fn turn_limit_message(name: &str, max: u32) -> String {
    format!("member {name} reached its turn limit ({max} turns) and is no longer in the team.")
}

/// The team's line in the completion summary: `Team: 3 members, 8 member turns, 2 supervisor
/// turns; 10 broadcasts (3 final, 1 failure, 1 from the supervisor)`.
pub fn team_tally(members: usize, member_turns: u32, supervisor_turns: u32, log: &[Broadcast]) -> String {
    let finals = log
        .iter()
        .filter(|b| b.last && b.kind == BroadcastKind::Update)
        .count();
    let failures = log.iter().filter(|b| b.kind == BroadcastKind::Failure).count();
    let supervisor = log.iter().filter(|b| b.supervisor).count();
    format!(
        "Team: {}, {}, {}; {} ({finals} final, {}, {supervisor} from the supervisor)",
        counted(members as u64, "member"),
        counted(u64::from(member_turns), "member turn"),
        counted(u64::from(supervisor_turns), "supervisor turn"),
        counted(log.len() as u64, "broadcast"),
        counted(failures as u64, "failure"),
    )
}

/// `1 member`, `2 members`.
fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_read_back_as_written() {
        let h = BroadcastHeading {
            from: "skeptic".into(),
            kind: BroadcastKind::Update,
            turn: 2,
            last: true,
            supervisor: false,
            at: "06:13:47 UTC".into(),
        };
        let line = heading_line(&h);
        assert_eq!(line, "### skeptic · update · final · turn 2 · 06:13:47 UTC");
        assert_eq!(parse_heading_line(&line), Some(h));
        let chair = BroadcastHeading {
            from: "chair".into(),
            kind: BroadcastKind::Update,
            turn: 1,
            last: false,
            supervisor: true,
            at: "x".into(),
        };
        assert_eq!(parse_heading_line(&heading_line(&chair)), Some(chair));
        assert_eq!(parse_heading_line("### Not a broadcast"), None);
        assert_eq!(parse_heading_line("skeptic · update · turn 1 · x"), None);
    }

    #[test]
    fn counts_and_names_are_read_from_their_lines() {
        let text = "You are member `critic` of a team.\nYour turn: 3 of 6\nCycle: 2 of 12";
        assert_eq!(count_after(text, TURN_LINE), Some(3));
        assert_eq!(count_after(text, CYCLE_LINE), Some(2));
        assert_eq!(member_name(text), Some("critic"));
        assert_eq!(count_after("nothing", TURN_LINE), None);
        assert_eq!(member_name("You are member `unclosed"), None);
    }

    fn b(from: &str, message: &str, turn: u32) -> Broadcast {
        Broadcast {
            from: from.into(),
            from_id: format!("id-{from}"),
            kind: BroadcastKind::Update,
            message: message.into(),
            turn,
            last: false,
            supervisor: false,
            at: DateTime::parse_from_rfc3339("2026-11-24T06:13:47Z")
                .unwrap()
                .with_timezone(&Utc),
        }
    }

    #[test]
    fn the_block_lists_every_broadcast_in_order_with_who_type_turn_and_time() {
        let one = b("skeptic", "Costs are unknown.\n### not a heading", 1);
        let mut two = b("chair", "Focus on cost.", 1);
        two.supervisor = true;
        let mut three = b("optimist", "member optimist failed", 2);
        three.kind = BroadcastKind::Failure;
        three.last = true;
        let block = broadcasts_block(&deliveries(&[&one, &two, &three], 0, None));
        assert_eq!(
            block,
            "## Team broadcasts\n\n\
             ### skeptic · update · turn 1 · 06:13:47 UTC\n> Costs are unknown.\n> ### not a heading\n\n\
             ### chair · update · supervisor · turn 1 · 06:13:47 UTC\n> Focus on cost.\n\n\
             ### optimist · failure · final · turn 2 · 06:13:47 UTC\n> member optimist failed\n"
        );
        let headings: Vec<_> = block.lines().filter_map(parse_heading_line).collect();
        assert_eq!(headings.len(), 3, "a quoted heading is not a broadcast");
        assert!(headings[1].supervisor && headings[2].last);
        let read = read_block(&format!(
            "{block}\n## Team supervision\n### chair · update · turn 9 · x\n"
        ));
        let messages: Vec<(&str, &str)> = read.iter().map(|(h, m)| (h.from.as_str(), m.as_str())).collect();
        assert_eq!(
            messages,
            [
                ("skeptic", "Costs are unknown.\n### not a heading"),
                ("chair", "Focus on cost."),
                ("optimist", "member optimist failed")
            ],
            "the block ends at the next heading"
        );
        assert!(read_block("no block").is_empty());
        assert!(parse_broadcast_call(&broadcast_arguments("m", true), true).is_ok_and(|s| s.last));
    }

    #[test]
    fn a_broadcast_that_would_overflow_the_window_is_replaced_for_that_reader() {
        let small = b("a", "short", 1);
        let big = b("b", &"x".repeat(40_000), 1);
        let after = b("c", "also short", 1);
        let all = [&small, &big, &after];
        let got = deliveries(&all, 1000, Some(8192));
        assert_eq!(got[0], Delivery::Whole(&small));
        assert!(
            matches!(got[1], Delivery::Overflow { tokens, window: 8192, .. } if tokens > 10_000),
            "{got:?}"
        );
        assert_eq!(got[2], Delivery::Whole(&after), "what fits still goes");
        let block = broadcasts_block(&got);
        assert!(block.contains("### b · failure · turn 1"), "{block}");
        assert!(
            block.contains("The broadcast of b (turn 1, about 10012 tokens) was left out"),
            "{block}"
        );
        assert!(block.contains("context window (8192 tokens"), "{block}");
        assert!(!block.contains("xxxx"));
        assert!(
            deliveries(&all, 0, None)
                .iter()
                .all(|d| matches!(d, Delivery::Whole(_)))
        );
    }

    #[test]
    fn calls_need_a_message_and_only_members_leave() {
        assert_eq!(
            parse_broadcast_call(r#"{"message":" cost is key ","final":true}"#, true),
            Ok(Said {
                message: "cost is key".into(),
                last: true
            })
        );
        assert!(
            !parse_broadcast_call(r#"{"message":"m","final":true}"#, false)
                .unwrap()
                .last
        );
        assert!(
            parse_broadcast_call(r#"{"message":"m","final":"true"}"#, true)
                .unwrap()
                .last
        );
        assert!(parse_broadcast_call(r#"{"final":true}"#, true).is_err());
        assert!(parse_broadcast_call(r#"{"message":"  "}"#, true).is_err());
        assert!(parse_broadcast_call("nope", true).is_err());
        assert!(broadcast_tool(true).input_schema["properties"]["final"].is_object());
        assert!(broadcast_tool(false).input_schema["properties"]["final"].is_null());
    }

    #[test]
    fn the_text_form_reads_final_lines_and_broadcast_lines() {
        assert_eq!(
            parse_member_text("I agree.\n\n[final]\n"),
            Some(Said {
                message: "I agree.".into(),
                last: true
            })
        );
        assert_eq!(
            parse_member_text("Costs first.\nThen risk."),
            Some(Said {
                message: "Costs first.\nThen risk.".into(),
                last: false
            })
        );
        assert!(parse_member_text("[FINAL]").unwrap().last);
        assert_eq!(parse_member_text("  \n"), None);
        assert_eq!(
            parse_supervisor_text("Thanks.\n@broadcast: focus on cost\nand risk"),
            Some("focus on cost\nand risk".into())
        );
        assert_eq!(parse_supervisor_text("The answer is 42."), None);
        assert_eq!(parse_supervisor_text("@broadcast:   "), None);
    }

    #[test]
    fn prompts_say_how_the_team_works_and_count_turns() {
        let others = [Peer {
            name: "optimist".into(),
            role: Some("Best case".into()),
        }];
        let intro = MemberIntro {
            name: "skeptic",
            role: Some("Worst case"),
            others: &others,
            supervisor: "chair",
            max_turns: 3,
            text_form: false,
        };
        let brief = member_brief(&intro);
        assert!(
            brief.starts_with("## How this team works\nYou are member `skeptic` (Worst case)"),
            "{brief}"
        );
        assert!(
            brief.contains("`optimist` (Best case)") && brief.contains("`team_broadcast`"),
            "{brief}"
        );
        let text = member_brief(&MemberIntro {
            text_form: true,
            ..intro
        });
        assert!(
            text.contains("line `[final]`") && !text.contains("`team_broadcast`"),
            "{text}"
        );
        let p = member_first_prompt("Should we move?", Some("We are 5 people."), 3);
        assert_eq!(
            p.text,
            "Should we move?\n\n## Shared context\nWe are 5 people.\n\nYour turn: 1 of 3"
        );
        assert_eq!(p.kept(), p.text, "a first turn is kept as it was said");
        let next = member_next_prompt(Some("## Team broadcasts\n\nx\n"), true, 3, 3, false);
        assert!(
            next.text
                .starts_with("## Team broadcasts\n\nx\n\nYour last turn ended without a broadcast"),
            "{}",
            next.text
        );
        assert!(
            next.text
                .ends_with("Your turn: 3 of 3\nThis is your last turn: make this broadcast your final one."),
            "{}",
            next.text
        );
        assert_eq!(next.kept(), "x\n\nYour turn: 3 of 3");
        assert_eq!(
            member_next_prompt(None, false, 2, 3, false).kept(),
            "Your turn: 2 of 3"
        );
        let peers = [Peer {
            name: "a".into(),
            role: None,
        }];
        assert!(supervisor_brief(&peers, false).contains("You supervise a team"));
        assert!(supervisor_brief(&peers, true).contains("@broadcast:"));
        let active = vec!["a".to_string()];
        let s = supervisor_prompt(&SupervisorTurn {
            first: Some(("Should we move?", None)),
            block: Some("## Team broadcasts\n\nx"),
            active: &active,
            cycle: 1,
            max_cycles: 4,
            conclude: false,
            from_user: &[],
        });
        assert!(
            s.text
                .starts_with("Should we move?\n\n## Team broadcasts\n\nx\n\n## Team supervision\nMembers"),
            "{}",
            s.text
        );
        assert_eq!(s.kept(), "Should we move?\n\nx\n\nCycle: 1 of 4");
        let told = supervisor_prompt(&SupervisorTurn {
            first: None,
            block: None,
            active: &active,
            cycle: 2,
            max_cycles: 4,
            conclude: false,
            from_user: &["Keep it cheap ".to_string()],
        });
        assert!(
            told.text.starts_with(
                "## From the user (sent while the team was deliberating)\n- Keep it cheap\n\n## Team supervision\n"
            ),
            "{}",
            told.text
        );
        assert_eq!(told.kept(), "The user added: Keep it cheap\n\nCycle: 2 of 4");
        assert!(
            s.text.ends_with("Members still in the team: a.\nCycle: 1 of 4"),
            "{}",
            s.text
        );
        let last = supervisor_prompt(&SupervisorTurn {
            first: None,
            block: None,
            active: &[],
            cycle: 2,
            max_cycles: 4,
            conclude: true,
            from_user: &[],
        });
        assert!(
            last.text
                .starts_with("## Team supervision\nConclude now: every member has left"),
            "{}",
            last.text
        );
    }

    #[test]
    fn the_tally_counts_turns_and_broadcasts_by_type() {
        let mut last = b("a", "done", 2);
        last.last = true;
        let mut failed = b("b", "member b failed", 1);
        failed.kind = BroadcastKind::Failure;
        failed.last = true;
        let mut chair = b("chair", "go on", 1);
        chair.supervisor = true;
        let log = [b("a", "view", 1), chair, last, failed];
        assert_eq!(
            team_tally(2, 3, 2, &log),
            "Team: 2 members, 3 member turns, 2 supervisor turns; 4 broadcasts (1 final, 1 failure, 1 from the supervisor)"
        );
        assert_eq!(
            team_tally(1, 1, 1, &log[..1]),
            "Team: 1 member, 1 member turn, 1 supervisor turn; 1 broadcast (0 final, 0 failures, 0 from the supervisor)"
        );
    }
}
