//! The text of a pipeline (issue 12), as pure functions: the built-in `handoff_conversation`
//! tool, reading a handoff from a tool call or from a member's text (an
//! `@handoff_conversation:<target>` line, for sessions without native tools), what a member and
//! the supervisor are given. (A pipeline's events in words for people are `describe::pipeline`'s.)

use serde_json::{Value, json};

use crate::model::ToolSpec;

use super::prompts::StepPrompt;

/// The target of a handoff that parks the conversation for the user.
pub const HUMAN: &str = "human";

/// The text form's line prefix (`@handoff_conversation:<target>`).
pub const TEXT_HANDOFF: &str = "@handoff_conversation:";

/// The line of a member's prompt that lists where it may hand off (the sim reads it too).
pub const TARGETS_LINE: &str = "Handoff targets: ";

/// The text form's lines after the handoff line: `reason: ...`, `next_phase: ...`.
pub const TEXT_REASON: &str = "reason:";
pub const TEXT_NEXT_PHASE: &str = "next_phase:";

/// Heads how a member hands the conversation on (after the context line and the request).
pub const PIPELINE_HEADING: &str = "## PIPELINE";
/// Heads the supervisor's instructions.
pub const SUPERVISION_HEADING: &str = "## SUPERVISION";
/// Opens the note a receiving member sees before the request: `[Context from previous agent
/// (<from>)]: <summary>`.
pub const CONTEXT_PREFIX: &str = "[Context from previous agent (";
/// What the supervisor answers when it does not redirect.
pub const NO_REDIRECT: &str = "OK";

/// A `handoff_conversation` call's arguments.
pub fn conversation_handoff_arguments(h: &HandoffRequest) -> String {
    let mut args = json!({ "target": h.target, "reason": h.reason, "summary": h.summary });
    if let Some(phase) = &h.next_phase {
        args["next_phase"] = json!(phase);
    }
    args.to_string()
}

/// A handoff a member asked for (its target not yet checked against the pipeline).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandoffRequest {
    pub target: String,
    pub reason: String,
    pub summary: String,
    pub next_phase: Option<String>,
}

/// The built-in tool a pipeline member hands the conversation on with (the engine offers it,
/// the sim calls it).
pub const CONVERSATION_HANDOFF_TOOL: &str = "handoff_conversation";

/// The target a `handoff_conversation` call's arguments name (`(none)` when they name none),
/// for reporting a rejected one.
pub fn call_target(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| text_field(&v, "target"))
        .unwrap_or_else(|| "(none)".into())
}

/// A call argument's text, trimmed; `None` when missing, not a string or blank.
pub fn text_field(value: &serde_json::Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The `handoff_conversation` tool. `target` is a free string (not an enum) so that a target
/// the pipeline does not allow comes back as a tool error the model can learn from. The
/// targets allowed now are in the member's message ([`TARGETS_LINE`]), said once there: not
/// here, where they would also change the tools block a prompt cache keeps.
pub fn conversation_handoff_tool() -> ToolSpec {
    ToolSpec {
        name: CONVERSATION_HANDOFF_TOOL.to_string(),
        description: format!(
            "Hand this conversation to another agent (it answers the user's request at once, with \
             your summary), or to `{HUMAN}` to wait for the user."
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
        if let Some(reason) = trimmed.strip_prefix(TEXT_REASON) {
            request.reason = reason.trim().to_string();
        } else if let Some(phase) = trimmed.strip_prefix(TEXT_NEXT_PHASE) {
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
    format!("{CONTEXT_PREFIX}{from})]: {}", summary.trim())
}

/// Heads how a member hands the conversation on, in its system prompt.
pub const HANDING_ON_HEADING: &str = "## Handing the conversation on";
/// Heads how the supervisor redirects, in its system prompt.
pub const SUPERVISING_HEADING: &str = "## Supervising";

/// What every member of a pipeline is told once, in its system prompt: how to hand the
/// conversation on, in both forms.
pub fn member_brief() -> String {
    format!(
        "{HANDING_ON_HEADING}\nYou are a member of a pipeline: answer the user. When the \
         conversation belongs with another agent (or should wait for the user: `{HUMAN}`), call \
         the `{CONVERSATION_HANDOFF_TOOL}` tool with target, reason and summary; each message \
         says your phase and the targets allowed from it. Without tools, end your reply with a \
         line `{TEXT_HANDOFF}<target>`, then `{TEXT_REASON} ...` and the summary."
    )
}

/// What a member is given: the context from the member that handed over (if any), the user's
/// message, and its phase and where it may hand the conversation (how: in [`member_brief`]).
/// The conversation keeps the context and the message.
pub fn member_prompt(request: &str, context: Option<&str>, phase: &str, targets: &[String]) -> StepPrompt {
    let mut kept = String::new();
    if let Some(context) = context {
        kept.push_str(context);
        kept.push_str("\n\n");
    }
    kept.push_str(request.trim());
    let out = format!(
        "{kept}\n\n{PIPELINE_HEADING}\nPhase: {phase}\n{TARGETS_LINE}{}\n",
        targets.join(", ")
    );
    StepPrompt::compacted(out, kept)
}

/// What the supervisor is told once, in its system prompt: how to redirect, or not.
pub fn supervisor_brief() -> String {
    format!(
        "{SUPERVISING_HEADING}\nYou supervise a pipeline's conversation: each message gives you \
         the exchanges since your last look. To redirect the conversation, call \
         `{CONVERSATION_HANDOFF_TOOL}` with one of the targets the message names (or end with a \
         line `{TEXT_HANDOFF}<target>`, then `{TEXT_REASON} ...` and a summary). Otherwise reply \
         `{NO_REDIRECT}`."
    )
}

/// What the supervisor is given: the exchanges since it last looked, what is happening now
/// (who answered, who hands on to whom) and where it may redirect. The conversation keeps the
/// exchanges.
pub fn supervisor_prompt(exchanges: &[String], now: &str, targets: &[String]) -> StepPrompt {
    let exchanges = exchanges.join("\n\n");
    let out = format!(
        "## PIPELINE EXCHANGES\n\n{exchanges}\n\n{}\n\n{SUPERVISION_HEADING}\n{TARGETS_LINE}{}\n",
        now.trim(),
        targets.join(", ")
    );
    StepPrompt::compacted(out, exchanges)
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
            p.text
                .starts_with("[Context from previous agent (triage)]: billing\n\nhelp"),
            "{}",
            p.text
        );
        assert!(p.text.contains("Handoff targets: reviewer, human"), "{}", p.text);
        assert_eq!(
            p.compact.as_deref(),
            Some("[Context from previous agent (triage)]: billing\n\nhelp")
        );
        assert!(member_brief().contains("`handoff_conversation`"));
        let s = supervisor_prompt(&["a".into(), "b".into()], "b answered.", &allowed());
        assert!(
            s.text.contains("a\n\nb\n\nb answered.") && s.text.contains(TARGETS_LINE),
            "{}",
            s.text
        );
        assert_eq!(s.compact.as_deref(), Some("a\n\nb"));
        assert!(supervisor_brief().contains("reply `OK`"));
    }
}
