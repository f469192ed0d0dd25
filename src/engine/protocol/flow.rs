//! The text of a flow (issue 12), as pure functions: what a routed member, an advised member and
//! a router are given, the built-in `handoff_to` tool, and reading a router's choice from a
//! tool call or from its text (`@handoff:<agent>` line, for sessions without native tools).

use serde_json::{Value, json};

use crate::model::ToolSpec;

use super::prompts::StepPrompt;

/// The built-in tool a router ends with (the engine offers it, the sim calls it).
pub const HANDOFF_TOOL: &str = "handoff_to";

/// The line of a router's prompt that lists its destinations (the sim reads it too).
pub const DESTINATIONS_LINE: &str = "Destinations: ";

/// Heads what a router is told besides the request (its destinations and how to pass it on).
pub const ROUTING_HEADING: &str = "## ROUTING";

/// The text form of a router's choice: a line `@handoff:<agent>`, the message after it.
pub const TEXT_ROUTE: &str = "@handoff:";

/// Opens a routed or advised member's input: the request under this heading.
pub const ORIGINAL_REQUEST: &str = "## ORIGINAL USER REQUEST";

/// Heads one advisor's report in an advised member's input: `### From <advisor>`.
pub const REPORT_HEADING: &str = "### From ";

/// The destinations a `handoff_to` spec offers (its `agent` enum).
pub fn destinations(spec: &ToolSpec) -> Vec<String> {
    spec.input_schema["properties"]["agent"]["enum"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// A `handoff_to` call's arguments.
pub fn handoff_arguments(agent: &str, message: &str) -> String {
    json!({ "agent": agent, "message": message }).to_string()
}

/// A router's choice: the destination and its optional note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteChoice {
    pub agent: String,
    pub message: Option<String>,
}

/// The `handoff_to` tool, its `agent` an enum of the router's destinations.
pub fn handoff_tool(destinations: &[String]) -> ToolSpec {
    ToolSpec {
        name: HANDOFF_TOOL.to_string(),
        description: "Send the user's request, and an optional note, to the selected agent. \
                      Call it once, at the end: the selected agent answers the user."
            .to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "agent": { "type": "string", "enum": destinations },
                "message": { "type": "string", "description": "Optional context for the next agent" }
            },
            "required": ["agent"]
        }),
    }
}

/// The destination named (ignoring case) among `destinations`, in its canonical spelling.
fn destination<'a>(agent: &str, destinations: &'a [String]) -> Option<&'a String> {
    let wanted = agent.trim().trim_matches('`');
    destinations.iter().find(|d| d.eq_ignore_ascii_case(wanted))
}

fn unknown_destination(agent: &str, destinations: &[String]) -> String {
    format!(
        "`{}` is not a destination; choose one of: {}",
        agent.trim(),
        destinations.join(", ")
    )
}

/// Reads a `handoff_to` call's arguments; `Err` is the tool error the model gets back.
pub fn parse_handoff_call(arguments: &str, destinations: &[String]) -> Result<RouteChoice, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("handoff_to: the arguments are not a JSON object ({e})"))?;
    let Some(agent) = value.get("agent").and_then(Value::as_str) else {
        return Err(format!(
            "handoff_to: `agent` is required; choose one of: {}",
            destinations.join(", ")
        ));
    };
    let agent = destination(agent, destinations).ok_or_else(|| unknown_destination(agent, destinations))?;
    let message = value
        .get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    Ok(RouteChoice {
        agent: agent.clone(),
        message,
    })
}

/// What a router's text says: no `@handoff:` line (it answered itself), a valid choice (the
/// lines after it are the message), or an unknown destination (the error for a retry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextRoute {
    Answer,
    Route(RouteChoice),
    Invalid(String),
}

pub fn parse_text_route(text: &str, destinations: &[String]) -> TextRoute {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(agent) = line.trim().strip_prefix(TEXT_ROUTE) else {
            continue;
        };
        let Some(agent) = destination(agent, destinations) else {
            return TextRoute::Invalid(unknown_destination(agent, destinations));
        };
        let rest: Vec<&str> = lines.collect();
        let message = rest.join("\n").trim().to_string();
        return TextRoute::Route(RouteChoice {
            agent: agent.clone(),
            message: (!message.is_empty()).then_some(message),
        });
    }
    TextRoute::Answer
}

/// What a router is told besides the request, in its system prompt for the run: where it can
/// pass the request and how, in both forms. Its message is the request itself.
pub fn router_brief(destinations: &[String]) -> String {
    format!(
        "{ROUTING_HEADING}\n{DESTINATIONS_LINE}{}\nYou route the user's request to the agent best \
         placed to answer it. When you know which, call the `{HANDOFF_TOOL}` tool with that agent \
         and, if useful, a message for it. Without tools, end your reply with a line \
         `{TEXT_ROUTE}<agent>` followed by the optional message. If you answer the request yourself \
         instead, your answer is final.",
        destinations.join(", ")
    )
}

/// A routed member's input: the original request and, when given, the router's message. The
/// conversation keeps the request with a note of the route.
pub fn routed_prompt(input: &StepPrompt, router: &str, message: Option<&str>) -> StepPrompt {
    let mut out = format!("{ORIGINAL_REQUEST}\n\n{}\n", input.text.trim());
    let message = message.map(str::trim).filter(|m| !m.is_empty());
    if let Some(message) = message {
        out.push_str(&format!(
            "\n## MESSAGE FROM AGENT `{router}` WHO ROUTED THIS REQUEST TO YOU\n\n{message}\n"
        ));
    }
    let kept = match message {
        Some(message) => format!("{} (routed here by `{router}`: {message})", input.kept().trim()),
        None => format!("{} (routed here by `{router}`)", input.kept().trim()),
    };
    StepPrompt::compacted(out, kept)
}

/// An advised member's input: the request and every advisor's report, raw, in advisor order.
/// An input that already has its `## ORIGINAL USER REQUEST` section (a routed one) keeps it
/// rather than nesting it under another. The conversation keeps the input with the advisors'
/// names (the member's answer says what it made of their reports).
pub fn advised_prompt(input: &StepPrompt, reports: &[(String, String)]) -> StepPrompt {
    let request = input.text.trim();
    let mut out = if request.starts_with(ORIGINAL_REQUEST) {
        format!("{request}\n\n## ANALYSIS GATHERED\n")
    } else {
        format!("{ORIGINAL_REQUEST}\n\n{request}\n\n## ANALYSIS GATHERED\n")
    };
    for (name, report) in reports {
        out.push_str(&format!("\n{REPORT_HEADING}{name}\n\n{}\n", report.trim()));
    }
    let names: Vec<&str> = reports.iter().map(|(n, _)| n.as_str()).collect();
    let kept = format!(
        "{} (with the reports of {})",
        input.kept().trim(),
        names.join(", ")
    );
    StepPrompt::compacted(out, kept)
}

/// What stands in for an advisor that failed or timed out.
pub fn advisor_failure_report(advisor: &str, error: &str) -> String {
    format!(
        "[advisor `{advisor}` failed: {}; no analysis from it. Decide without it.]",
        error.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dests() -> Vec<String> {
        vec!["billing".into(), "tech".into()]
    }

    #[test]
    fn the_tool_offers_an_enum_of_destinations() {
        let spec = handoff_tool(&dests());
        assert_eq!(spec.name, "handoff_to");
        assert_eq!(
            spec.input_schema["properties"]["agent"]["enum"],
            json!(["billing", "tech"])
        );
        assert_eq!(spec.input_schema["required"], json!(["agent"]));
    }

    #[test]
    fn a_call_names_a_destination_or_is_a_tool_error() {
        assert_eq!(
            parse_handoff_call(r#"{"agent":"Tech","message":" disk full "}"#, &dests()),
            Ok(RouteChoice {
                agent: "tech".into(),
                message: Some("disk full".into())
            })
        );
        assert_eq!(
            parse_handoff_call(r#"{"agent":"billing","message":""}"#, &dests())
                .unwrap()
                .message,
            None
        );
        let err = parse_handoff_call(r#"{"agent":"legal"}"#, &dests()).unwrap_err();
        assert_eq!(err, "`legal` is not a destination; choose one of: billing, tech");
        assert!(
            parse_handoff_call("{}", &dests())
                .unwrap_err()
                .contains("required")
        );
        assert!(parse_handoff_call("not json", &dests()).is_err());
    }

    #[test]
    fn the_text_form_reads_a_handoff_line_and_its_message() {
        assert_eq!(
            parse_text_route(
                "Looks like a bug.\n@handoff:tech\nThe user's disk\nis full.\n",
                &dests()
            ),
            TextRoute::Route(RouteChoice {
                agent: "tech".into(),
                message: Some("The user's disk\nis full.".into())
            })
        );
        assert_eq!(
            parse_text_route("@handoff: billing", &dests()),
            TextRoute::Route(RouteChoice {
                agent: "billing".into(),
                message: None
            })
        );
        assert_eq!(parse_text_route("I can answer: 42.", &dests()), TextRoute::Answer);
        assert!(matches!(
            parse_text_route("@handoff:legal", &dests()),
            TextRoute::Invalid(_)
        ));
    }

    #[test]
    fn routed_and_advised_prompts_have_their_sections() {
        let plain = |t: &str| StepPrompt::plain(t.to_string());
        assert_eq!(
            routed_prompt(&plain(" hi "), "triage", None).text,
            "## ORIGINAL USER REQUEST\n\nhi\n"
        );
        let p = routed_prompt(&plain("hi"), "triage", Some("be brief"));
        assert!(
            p.text
                .contains("## MESSAGE FROM AGENT `triage` WHO ROUTED THIS REQUEST TO YOU\n\nbe brief")
        );
        assert_eq!(
            p.compact.as_deref(),
            Some("hi (routed here by `triage`: be brief)")
        );
        let p = advised_prompt(
            &plain("q"),
            &[("a".into(), "A says".into()), ("b".into(), "B says".into())],
        );
        assert_eq!(
            p.text,
            "## ORIGINAL USER REQUEST\n\nq\n\n## ANALYSIS GATHERED\n\n### From a\n\nA says\n\n### From b\n\nB says\n"
        );
        assert_eq!(p.compact.as_deref(), Some("q (with the reports of a, b)"));
        let routed = routed_prompt(&plain("q"), "r", Some("m"));
        let nested = advised_prompt(&routed, &[("a".into(), "A".into())]);
        assert_eq!(
            nested.text.matches("## ORIGINAL USER REQUEST").count(),
            1,
            "{}",
            nested.text
        );
        assert!(
            nested.text.starts_with(routed.text.trim()) && nested.text.ends_with("### From a\n\nA\n"),
            "{}",
            nested.text
        );
        assert_eq!(
            nested.compact.as_deref(),
            Some("q (routed here by `r`: m) (with the reports of a)")
        );
        assert!(advisor_failure_report("a", "timed out after 5s").contains("`a` failed: timed out"));
        let brief = router_brief(&dests());
        assert!(brief.contains("Destinations: billing, tech") && brief.starts_with(ROUTING_HEADING));
    }
}
