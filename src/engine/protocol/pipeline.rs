//! The text of a pipeline (issue 12), as pure functions: the built-in `handoff_conversation`
//! tool, reading a handoff from a tool call or from a member's text (an
//! `@handoff_conversation:<target>` line, for sessions without native tools), what a member and
//! the supervisor are given. (A pipeline's events in words for people are `describe::pipeline`'s.)

use serde_json::{Value, json};

use crate::model::ToolSpec;
use crate::model::pipeline::{HUMAN, text_field};

pub use crate::model::pipeline::{
    CONVERSATION_HANDOFF_TOOL, HandoffRequest, TARGETS_LINE, TEXT_HANDOFF, call_target,
};

/// The `handoff_conversation` tool. `target` is a free string (not an enum) so that a target
/// the pipeline does not allow comes back as a tool error the model can learn from.
pub fn conversation_handoff_tool(targets: &[String]) -> ToolSpec {
    ToolSpec {
        name: CONVERSATION_HANDOFF_TOOL.to_string(),
        description: format!(
            "Hand this conversation to another agent (it answers the user's request at once, with \
             your summary), or to `{HUMAN}` to wait for the user. Allowed targets now: {}.",
            targets.join(", ")
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "target": { "type": "string", "description": "The agent (or `human`)" },
                "reason": { "type": "string", "description": "Why you hand it on" },
                "summary": { "type": "string", "description": "What the next agent needs to know" },
                "next_phase": { "type": "string", "description": "Optional: the phase to move to" }
            },
            "required": ["target", "reason", "summary"]
        }),
    }
}

/// `target` in its canonical spelling when it is one of `allowed` (ignoring case and
/// backticks); else the error the model gets back.
pub fn check_target(target: &str, allowed: &[String]) -> Result<String, String> {
    let wanted = target.trim().trim_matches('`');
    allowed
        .iter()
        .find(|a| a.eq_ignore_ascii_case(wanted))
        .cloned()
        .ok_or_else(|| {
            format!(
                "`{wanted}` is not an allowed handoff target from this phase; allowed: {}",
                allowed.join(", ")
            )
        })
}

/// Reads a `handoff_conversation` call; `Err` is the tool error the model gets back.
pub fn parse_conversation_call(arguments: &str, allowed: &[String]) -> Result<HandoffRequest, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("{CONVERSATION_HANDOFF_TOOL}: the arguments are not a JSON object ({e})"))?;
    let Some(target) = text_field(&value, "target") else {
        return Err(format!(
            "{CONVERSATION_HANDOFF_TOOL}: `target` is required; allowed: {}",
            allowed.join(", ")
        ));
    };
    Ok(HandoffRequest {
        target: check_target(&target, allowed)?,
        reason: text_field(&value, "reason").unwrap_or_default(),
        summary: text_field(&value, "summary").unwrap_or_default(),
        next_phase: text_field(&value, "next_phase"),
    })
}

/// The text form: a `@handoff_conversation:<target>` line, then optional `reason:` and
/// `next_phase:` lines, then the summary. The target is not checked here.
pub fn parse_text_handoff(text: &str) -> Option<HandoffRequest> {
    let mut lines = text.lines();
    let target = lines.find_map(|l| l.trim().strip_prefix(TEXT_HANDOFF))?;
    let mut request = HandoffRequest {
        target: target.trim().trim_matches('`').to_string(),
        ..HandoffRequest::default()
    };
    let mut summary = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if let Some(reason) = trimmed.strip_prefix("reason:") {
            request.reason = reason.trim().to_string();
        } else if let Some(phase) = trimmed.strip_prefix("next_phase:") {
            request.next_phase = Some(phase.trim().to_string()).filter(|p| !p.is_empty());
        } else {
            summary.push(line);
        }
    }
    request.summary = summary.join("\n").trim().to_string();
    Some(request)
}

/// A member's text without its handoff block (what the user is shown of it).
pub fn without_text_handoff(text: &str) -> String {
    let cut = text
        .lines()
        .position(|l| l.trim().starts_with(TEXT_HANDOFF))
        .map_or(text.len(), |i| text.lines().take(i).map(|l| l.len() + 1).sum());
    text[..cut.min(text.len())].trim().to_string()
}

/// The handoff note a receiving member sees before the request.
pub fn context_line(from: &str, summary: &str) -> String {
    format!("[Context from previous agent ({from})]: {}", summary.trim())
}

/// What a member is given: the context from the member that handed over (if any), the user's
/// message, and how to hand the conversation on.
pub fn member_prompt(request: &str, context: Option<&str>, phase: &str, targets: &[String]) -> String {
    let mut out = String::new();
    if let Some(context) = context {
        out.push_str(context);
        out.push_str("\n\n");
    }
    out.push_str(request.trim());
    out.push_str(&format!(
        "\n\n## PIPELINE\nPhase: {phase}\n{TARGETS_LINE}{}\nAnswer the user. When the conversation \
         belongs with another agent (or should wait for the user: `{HUMAN}`), call the \
         `{CONVERSATION_HANDOFF_TOOL}` tool with target, reason and summary. Without tools, end \
         your reply with a line `{TEXT_HANDOFF}<target>`, then `reason: ...` and the summary.",
        targets.join(", ")
    ));
    out
}

/// What the supervisor is given: the exchanges since it last looked, and how to redirect.
pub fn supervisor_prompt(exchanges: &[String], targets: &[String]) -> String {
    format!(
        "## PIPELINE EXCHANGES\n\n{}\n\n## SUPERVISION\n{TARGETS_LINE}{}\nYou supervise this \
         conversation. To redirect it, call `{CONVERSATION_HANDOFF_TOOL}` (or end with a line \
         `{TEXT_HANDOFF}<target>`, then `reason: ...` and a summary). Otherwise reply `OK`.",
        exchanges.join("\n\n"),
        targets.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<String> {
        vec!["reviewer".into(), HUMAN.into()]
    }

    #[test]
    fn calls_name_an_allowed_target_or_are_a_tool_error() {
        let r = parse_conversation_call(
            r#"{"target":"Reviewer","reason":"done","summary":"fixed the bug","next_phase":"review"}"#,
            &allowed(),
        )
        .unwrap();
        assert_eq!(r.target, "reviewer");
        assert_eq!(r.summary, "fixed the bug");
        assert_eq!(r.next_phase.as_deref(), Some("review"));
        let err = parse_conversation_call(r#"{"target":"resolver"}"#, &allowed()).unwrap_err();
        assert_eq!(
            err,
            "`resolver` is not an allowed handoff target from this phase; allowed: reviewer, human"
        );
        assert!(parse_conversation_call("{}", &allowed()).is_err());
        assert!(parse_conversation_call("nope", &allowed()).is_err());
        assert_eq!(call_target(r#"{"target":"x"}"#), "x");
    }

    #[test]
    fn the_text_form_reads_target_reason_phase_and_summary() {
        let text = "Fixed.\n@handoff_conversation: reviewer\nreason: ready\nnext_phase: review\nPatched the parser.\nTests pass.";
        assert_eq!(
            parse_text_handoff(text),
            Some(HandoffRequest {
                target: "reviewer".into(),
                reason: "ready".into(),
                summary: "Patched the parser.\nTests pass.".into(),
                next_phase: Some("review".into()),
            })
        );
        assert_eq!(without_text_handoff(text), "Fixed.");
        assert_eq!(parse_text_handoff("just an answer"), None);
        assert_eq!(without_text_handoff("just an answer"), "just an answer");
    }

    #[test]
    fn prompts_carry_the_context_and_the_targets() {
        let p = member_prompt(
            "help",
            Some(&context_line("triage", "billing")),
            "handling",
            &allowed(),
        );
        assert!(
            p.starts_with("[Context from previous agent (triage)]: billing\n\nhelp"),
            "{p}"
        );
        assert!(p.contains("Handoff targets: reviewer, human"), "{p}");
        let s = supervisor_prompt(&["a".into(), "b".into()], &allowed());
        assert!(s.contains("a\n\nb") && s.contains("reply `OK`"), "{s}");
    }
}

/// The sim's side of pipelines, read against the prompts built here.
#[cfg(test)]
mod sim_tests {
    use super::*;
    use crate::providers::sim_pipeline::{REVISED, choice, request_of, text_reply};

    fn prompt(context: Option<&str>, targets: &[&str]) -> String {
        let targets: Vec<String> = targets.iter().map(|s| s.to_string()).collect();
        member_prompt("My printer is on fire", context, "x", &targets)
    }

    #[test]
    fn the_sim_walks_the_desk_with_one_return() {
        let triage = choice(&prompt(None, &["handler", "human"])).unwrap();
        assert_eq!(triage.target, "handler");
        let c = context_line("triage", &triage.summary);
        let handler = choice(&prompt(Some(&c), &["reviewer", "human"])).unwrap();
        assert_eq!(handler.target, "reviewer");
        let c = context_line("handler", &handler.summary);
        let review = choice(&prompt(Some(&c), &["resolver", "handler", "human"])).unwrap();
        assert_eq!(review.target, "handler", "the first review sends it back");
        let c = context_line("reviewer", &review.summary);
        let again = choice(&prompt(Some(&c), &["reviewer", "human"])).unwrap();
        assert!(again.summary.starts_with(REVISED));
        let c = context_line("handler", &again.summary);
        let review = choice(&prompt(Some(&c), &["resolver", "handler", "human"])).unwrap();
        assert_eq!(review.target, "resolver");
        assert_eq!(choice(&prompt(None, &["human"])), None, "the last stage answers");
        assert_eq!(request_of(&prompt(Some(&c), &["x"])), "My printer is on fire");
        let text = text_reply(&prompt(None, &["handler", "human"])).unwrap();
        assert_eq!(parse_text_handoff(&text).unwrap().target, "handler");
        assert_eq!(choice("## SUPERVISION\nHandoff targets: a\n\n## PIPELINE"), None);
    }
}
