//! A turn's tool calls and their results, approvals, and a turn that failed.

use super::{Line, Tone, colon_quote, duration, quote};
use crate::tools::Decision;

/// A TUI's answer to what a run asks another front end (the one that started it), refused by
/// the host.
pub fn asked_elsewhere(front: &str) -> String {
    format!("this is asked in {front}, which started the run: it is answered there")
}

/// A tool approval of a run another front end started, as a TUI tells it without asking
/// (`server/tool` for `session`).
pub fn approval_asked_elsewhere(session: &str, server: &str, tool: &str, front: &str) -> String {
    format!(
        "{} waits for approval of {}/{}: asked in {front}, which started the run",
        quote(session),
        quote(server),
        quote(tool)
    )
}

/// A relay draft of a run another front end started, as a TUI tells it without asking.
pub fn draft_asked_elsewhere(group: &str, front: &str) -> String {
    format!(
        "a relay draft of {} waits: asked in {front}, which started the run",
        quote(group)
    )
}

/// A member's `team_broadcast` call: a broadcast that went through is said by its broadcast.
pub fn is_broadcast(name: &str) -> bool {
    name == crate::engine::protocol::team_talk::BROADCAST_TOOL
}

/// The tools of a mode whose calls have events of their own, which say what they did: a
/// dispatch (an execution's start), a clarification (its start), a broadcast, a flow's route
/// (its hop), a pipeline's handoff. Their calls and results are not worded again.
pub fn said_by_its_own_event(name: &str) -> bool {
    use crate::engine::protocol::{dispatch, flow, pipeline};
    is_broadcast(name)
        || [
            dispatch::DISPATCH_TOOL,
            dispatch::ASK_TOOL,
            flow::HANDOFF_TOOL,
            pipeline::CONVERSATION_HANDOFF_TOOL,
        ]
        .contains(&name)
}

/// `⚙ grep({"pattern":"x"})`: a call inside a member's own view (a card).
pub fn call(name: &str, arguments: &str) -> Line {
    Line::info(format!("⚙ {name}({})", quote(arguments)))
}

/// `⚙ logs: grep({"pattern":"x"})`: a call among other members'.
pub fn called_by(session: &str, name: &str, arguments: &str) -> Line {
    Line::info(format!("⚙ {session}: {name}({})", quote(arguments)))
}

/// `⚙ coder: "I will fix the config." then Edit config.json({"path":"config.json"})`: a coding
/// agent's call with the words it wrote before it (their first line).
pub fn called_by_after(session: &str, name: &str, arguments: &str, words: &str) -> Line {
    Line::info(format!(
        "⚙ {session}: \"{}\" then {name}({})",
        quote(words.trim()),
        quote(arguments)
    ))
}

/// `✓ grep 12ms: found 3 errors`, `✗ grep 0ms: message is empty`, `… grep (no result)`.
pub fn result(name: &str, ok: Option<bool>, duration_ms: Option<u64>, first_line: Option<&str>) -> Line {
    let (tone, mark) = match ok {
        Some(true) => (Tone::Good, "✓"),
        Some(false) => (Tone::Bad, "✗"),
        None => (Tone::Warn, "…"),
    };
    let mut text = format!("{mark} {name}");
    match duration_ms {
        Some(ms) => {
            text.push(' ');
            text.push_str(&duration(ms));
        }
        None if ok.is_none() => text.push_str(" (no result)"),
        None => {}
    }
    text.push_str(&colon_quote(first_line.unwrap_or("")));
    Line::new(tone, text)
}

/// `? waits for your approval: git__git_status`.
pub fn waits_for_approval(tool: &str) -> Line {
    Line::new(Tone::Warn, format!("? waits for your approval: {tool}"))
}

/// `✋ security: git__git_status denied (why)`: a call that was not approved (approved ones
/// have no line: the call's result follows). `tool` when known (the request named it).
pub fn decided(who: &str, tool: Option<&str>, decision: Decision, reason: Option<&str>) -> Option<Line> {
    if decision.approves() {
        return None;
    }
    let reason = reason.map(|r| format!(" ({})", quote(r))).unwrap_or_default();
    Some(Line::new(
        Tone::Warn,
        format!(
            "✋ {who}: {} {}{reason}",
            tool.unwrap_or("a tool call"),
            decision.label()
        ),
    ))
}

/// `✗ security: the provider's error`.
pub fn turn_failed(session: &str, error: &str) -> Line {
    Line::new(Tone::Bad, format!("✗ {session}{}", colon_quote(error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_results_read_as_calls() {
        assert_eq!(call("grep", "{\"p\":1}\nmore").text, "⚙ grep({\"p\":1})");
        assert_eq!(
            called_by_after("coder", "Edit a", "{}", "  Hello there.\nMore words.").text,
            "⚙ coder: \"Hello there.\" then Edit a({})"
        );
        assert_eq!(
            result("grep", Some(true), Some(12), Some("found 3\nmore")).text,
            "✓ grep 12ms: found 3"
        );
        assert_eq!(result("grep", None, None, None).text, "… grep (no result)");
        assert_eq!(
            decided("sec", Some("git__status"), Decision::Deny, Some("no")).map(|l| l.text),
            Some("✋ sec: git__status denied (no)".to_string())
        );
        assert_eq!(decided("sec", None, Decision::ApproveOnce, None), None);
    }
}
