//! The text of mode `team` (a deliberation), as pure functions: the `team_broadcast` tool and
//! reading its calls, the text form for sessions without native tools (a member's whole answer
//! is its broadcast, `[final]` on its last line; the supervisor broadcasts back with an
//! `@broadcast:` line), the markdown block of broadcasts a turn is given (with a broadcast that
//! would overflow the reader's context replaced by a diagnostic), every prompt, and one line
//! per `team_broadcast` event.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::model::context::tokens_of_text;
use crate::model::deliberation::{
    BroadcastHeading, CONCLUDE_LINE, CYCLE_LINE, SUPERVISION_HEADING, TEAM_HEADING, TEXT_BROADCAST,
    TEXT_FINAL, TURN_LINE, YOU_ARE, heading_line, kind_label,
};
use crate::model::dispatch::{BROADCAST_TOOL, BROADCASTS_HEADING};
use crate::model::{BroadcastKind, ToolSpec};

use super::super::events::EventKind;

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
         turn ends with the broadcast; the others' broadcasts come in your next turn. Set \
         `final` when you have nothing more to add."
    } else {
        "Send guidance to every member still in the team: they continue, and their next \
         broadcasts come to you. Answer without this tool to give the team's final answer."
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

/// What a member's first turn is given besides the request.
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

/// A member's first turn: the request (and shared context), then how the team works.
pub fn member_first_prompt(request: &str, shared_context: Option<&str>, intro: &MemberIntro<'_>) -> String {
    let mut out = request_with_context(request, shared_context);
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
    out.push_str(&format!(
        "\n\n{TEAM_HEADING}\n{YOU_ARE}{}`{role} of a team deliberating on the request above with \
         {others}. `{}` supervises: it reads every broadcast and writes the team's final answer.\n",
        intro.name, intro.supervisor
    ));
    if intro.text_form {
        out.push_str(&format!(
            "- Your whole answer is your broadcast: the only way to share with the team. The \
             others' broadcasts come to you in your next turn, under \"{BROADCASTS_HEADING}\".\n\
             - End your answer with a line `{TEXT_FINAL}` when you have nothing more to add: you \
             then leave the team.\n"
        ));
    } else {
        out.push_str(&format!(
            "- Call `{BROADCAST_TOOL}` with your contribution as `message`: it is the only way to \
             share with the team. Each broadcast ends your turn; the others' broadcasts come to \
             you in your next turn, under \"{BROADCASTS_HEADING}\".\n\
             - Set `final: true` when you have nothing more to add: you then leave the team.\n"
        ));
    }
    out.push_str(&format!(
        "- Keep broadcasts short and specific to your perspective; say where you disagree.\n\
         - You have at most {} turns.\n{}",
        intro.max_turns,
        turn_line(1, intro.max_turns)
    ));
    out
}

/// A member's later turn: the broadcasts it has not seen (if any), a reminder when its last
/// turn ended without a broadcast, and its turn count.
pub fn member_next_prompt(
    block: Option<&str>,
    reminder: bool,
    turn: u32,
    max: u32,
    text_form: bool,
) -> String {
    let mut out = String::new();
    if let Some(block) = block {
        out.push_str(block.trim_end());
        out.push_str("\n\n");
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
    } else if text_form {
        out.push_str(&format!(
            "Answer with your next broadcast (a last line `{TEXT_FINAL}` when you have nothing more \
             to add).\n"
        ));
    } else {
        out.push_str(&format!(
            "Broadcast what you add (`{BROADCAST_TOOL}`, `final: true` when you have nothing more \
             to add).\n"
        ));
    }
    out.push_str(&turn_line(turn, max));
    out
}

/// Heads the messages the user sent while the team deliberated (the supervisor gets them).
pub const USER_HEADING: &str = "## From the user (sent while the team was deliberating)";

/// What the supervisor's turn is given.
#[derive(Debug, Clone)]
pub struct SupervisorTurn<'a> {
    /// The request and the team, on its first turn only.
    pub first: Option<(&'a str, Option<&'a str>, &'a [Peer])>,
    pub block: Option<&'a str>,
    /// The members still in the team.
    pub active: &'a [String],
    pub cycle: u32,
    pub max_cycles: u32,
    /// It must answer now: its last turn, or every member has left.
    pub conclude: bool,
    pub text_form: bool,
    /// Messages the user sent to the running team since its last turn.
    pub from_user: &'a [String],
}

pub fn supervisor_prompt(t: &SupervisorTurn<'_>) -> String {
    let mut out = String::new();
    if let Some((request, context, _)) = t.first {
        out.push_str(&request_with_context(request, context));
        out.push_str("\n\n");
    }
    if let Some(block) = t.block {
        out.push_str(block.trim_end());
        out.push_str("\n\n");
    }
    if !t.from_user.is_empty() {
        out.push_str(USER_HEADING);
        out.push('\n');
        for m in t.from_user {
            out.push_str("- ");
            out.push_str(m.trim());
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(SUPERVISION_HEADING);
    out.push('\n');
    if let Some((_, _, members)) = t.first {
        out.push_str(&format!(
            "You supervise a team deliberating on the request above: {}. Members share their \
             findings only through broadcasts; each cycle you get all of them.\n",
            peer_list(members)
        ));
    }
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
        let how = if t.text_form {
            format!(
                "To send the members guidance, start a line with `{TEXT_BROADCAST}` and write it \
                 after that; they continue and their next broadcasts come to you. An answer \
                 without such a line is the team's final answer and ends the deliberation."
            )
        } else {
            format!(
                "Either call `{BROADCAST_TOOL}` with guidance for the members (they continue, and \
                 their next broadcasts come to you), or answer without the tool: that answer is \
                 the team's final answer and ends the deliberation."
            )
        };
        out.push_str(&how);
        out.push('\n');
        out.push_str(&format!("Members still in the team: {}.\n", t.active.join(", ")));
    }
    out.push_str(&format!("{CYCLE_LINE}{} of {}", t.cycle, t.max_cycles));
    out
}

/// What a lent `team_broadcast` call answers.
pub fn acknowledgement(said: &Said, supervisor: bool, readers: usize) -> String {
    if supervisor {
        format!("Broadcast sent to {readers} member(s). Their next broadcasts come in your next turn.")
    } else if said.last {
        "Final broadcast sent. You have left the team.".to_string()
    } else {
        format!(
            "Broadcast sent to the team ({readers} reader(s)). Your turn ends here; the others' \
             broadcasts come in your next turn."
        )
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

/// One line for a `team_broadcast` event (headless progress); `None` for other events. The
/// message comes from a model: callers sanitise for display.
pub fn broadcast_line(event: &EventKind) -> Option<String> {
    let EventKind::TeamBroadcast {
        from,
        kind,
        message,
        turn,
        last,
        supervisor,
        ..
    } = event
    else {
        return None;
    };
    let mut labels = Vec::new();
    if *supervisor {
        labels.push("supervisor".to_string());
    }
    labels.push(format!("turn {turn}"));
    labels.push(kind_label(*kind).to_string());
    if *last && *kind != BroadcastKind::Failure {
        labels.push("final".to_string());
    }
    let mark = if *kind == BroadcastKind::Failure {
        "✗"
    } else {
        "📣"
    };
    Some(format!(
        "{mark} {from} ({}): {}",
        labels.join(", "),
        crate::text::first_line(message, 100)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::deliberation::parse_heading_line;

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
        let p = member_first_prompt("Should we move?", Some("We are 5 people."), &intro);
        assert!(p.starts_with("Should we move?\n\n## Shared context\nWe are 5 people.\n\n## How this team works\nYou are member `skeptic` (Worst case)"), "{p}");
        assert!(
            p.contains("`optimist` (Best case)") && p.contains("`team_broadcast`"),
            "{p}"
        );
        assert!(p.ends_with("Your turn: 1 of 3"), "{p}");
        let text = member_first_prompt(
            "q",
            None,
            &MemberIntro {
                text_form: true,
                ..intro
            },
        );
        assert!(
            text.contains("line `[final]`") && !text.contains("`team_broadcast`"),
            "{text}"
        );
        let next = member_next_prompt(Some("## Team broadcasts\n\nx\n"), true, 3, 3, false);
        assert!(
            next.starts_with("## Team broadcasts\n\nx\n\nYour last turn ended without a broadcast"),
            "{next}"
        );
        assert!(
            next.ends_with("Your turn: 3 of 3\nThis is your last turn: make this broadcast your final one."),
            "{next}"
        );
        let peers = [Peer {
            name: "a".into(),
            role: None,
        }];
        let active = vec!["a".to_string()];
        let s = supervisor_prompt(&SupervisorTurn {
            first: Some(("Should we move?", None, &peers)),
            block: Some("## Team broadcasts\n\nx"),
            active: &active,
            cycle: 1,
            max_cycles: 4,
            conclude: false,
            text_form: false,
            from_user: &[],
        });
        assert!(
            s.starts_with("Should we move?\n\n## Team broadcasts\n\nx\n\n## Team supervision\nYou supervise"),
            "{s}"
        );
        let told = supervisor_prompt(&SupervisorTurn {
            first: None,
            block: None,
            active: &active,
            cycle: 2,
            max_cycles: 4,
            conclude: false,
            text_form: false,
            from_user: &["Keep it cheap ".to_string()],
        });
        assert!(
            told.starts_with("## From the user (sent while the team was deliberating)\n- Keep it cheap\n\n## Team supervision\n"),
            "{told}"
        );
        assert!(s.ends_with("Members still in the team: a.\nCycle: 1 of 4"), "{s}");
        let last = supervisor_prompt(&SupervisorTurn {
            first: None,
            block: None,
            active: &[],
            cycle: 2,
            max_cycles: 4,
            conclude: true,
            text_form: true,
            from_user: &[],
        });
        assert!(
            last.starts_with("## Team supervision\nConclude now: every member has left"),
            "{last}"
        );
        assert!(!last.contains("@broadcast:"), "{last}");
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

    #[test]
    fn broadcast_lines_mark_the_supervisor_finals_and_failures() {
        let mut x = b("skeptic", "Costs are unknown.\nmore", 1);
        assert_eq!(
            broadcast_line(&x.event()).unwrap(),
            "📣 skeptic (turn 1, update): Costs are unknown."
        );
        x.last = true;
        assert_eq!(
            broadcast_line(&x.event()).unwrap(),
            "📣 skeptic (turn 1, update, final): Costs are unknown."
        );
        x.kind = BroadcastKind::Failure;
        assert!(
            broadcast_line(&x.event())
                .unwrap()
                .starts_with("✗ skeptic (turn 1, failure):")
        );
        x.supervisor = true;
        x.kind = BroadcastKind::Update;
        x.last = false;
        assert!(
            broadcast_line(&x.event())
                .unwrap()
                .starts_with("📣 skeptic (supervisor, turn 1, update):")
        );
        assert_eq!(broadcast_line(&EventKind::CyclePaused), None);
    }
}

/// The sim's side of a deliberation, read against the prompts built here.
#[cfg(test)]
mod sim_tests {
    use super::*;
    use crate::providers::sim_team::{Move, call_arguments, decide, text};
    use crate::providers::{ChatMessage, TurnRequest};

    fn request(prompts: &[&str], tools: bool) -> TurnRequest {
        let mut req = TurnRequest::new("m", prompts.iter().map(|p| ChatMessage::user(*p)).collect());
        if tools {
            req.tools = vec![broadcast_tool(true)];
        }
        req
    }

    fn first(name: &str) -> String {
        let others = [Peer {
            name: "other".into(),
            role: None,
        }];
        member_first_prompt(
            "Should we move the office?",
            None,
            &MemberIntro {
                name,
                role: None,
                others: &others,
                supervisor: "chair",
                max_turns: 4,
                text_form: false,
            },
        )
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
        let one = first("skeptic");
        let Some(Move::Broadcast { message, last }) = decide(&request(&[&one], true)) else {
            panic!("a first turn broadcasts")
        };
        assert!(
            message.starts_with("As skeptic, on \"Should we move the office?\":"),
            "{message}"
        );
        assert!(!last);
        let args = call_arguments(&request(&[&one], true)).unwrap();
        assert!(parse_broadcast_call(&args, true).is_ok());
        let peers = peer_says("optimist", "Moving is cheap.");
        let block = broadcasts_block(&deliveries(&[&peers], 0, None));
        let two = member_next_prompt(Some(&block), false, 2, 4, false);
        let Some(Move::Broadcast { message, last }) = decide(&request(&[&one, &two], true)) else {
            panic!()
        };
        assert!(message.starts_with("Having read optimist:") && !last, "{message}");
        let three = member_next_prompt(Some(&block), false, 3, 4, false);
        assert!(matches!(
            decide(&request(&[&one, &two, &three], true)),
            Some(Move::Broadcast { last: true, .. })
        ));
        let chair = chair_says("Focus on cost.");
        let block = broadcasts_block(&deliveries(&[&peers, &chair], 0, None));
        let two = member_next_prompt(Some(&block), false, 2, 4, false);
        let Some(Move::Broadcast { message, last }) = decide(&request(&[&one, &two], true)) else {
            panic!()
        };
        assert!(
            message.contains("Taking chair's point (\"Focus on cost.\")") && last,
            "{message}"
        );
        let written = text(&request(&[&one, &two], false)).unwrap();
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
                first: first.then_some(("Should we move the office?", None, peers.as_slice())),
                block: Some(&block),
                active: &active,
                cycle,
                max_cycles: 5,
                conclude,
                text_form: false,
                from_user: &[],
            })
        };
        let one = turn(1, false, true);
        let Some(Move::Broadcast { message, .. }) = decide(&request(&[&one], true)) else {
            panic!("the first cycle broadcasts back")
        };
        assert!(message.contains("Focus on"), "{message}");
        let text_form = text(&request(&[&one], false)).unwrap();
        assert!(
            parse_supervisor_text(&text_form).unwrap().contains("Focus on"),
            "{text_form}"
        );
        let two = turn(2, false, false);
        let Some(Move::Answer(answer)) = decide(&request(&[&one, &two], true)) else {
            panic!("the second cycle answers")
        };
        assert!(answer.contains("On \"Should we move the office?\""), "{answer}");
        assert!(answer.contains("- **skeptic**: Costs are unknown."), "{answer}");
        assert_eq!(call_arguments(&request(&[&one, &two], true)), None);
        let forced = turn(1, true, true);
        assert!(
            matches!(decide(&request(&[&forced], true)), Some(Move::Answer(_))),
            "told to conclude"
        );
    }
}
