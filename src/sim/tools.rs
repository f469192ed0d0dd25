//! How the sim plays tool use, deterministically: offered tools and nothing called yet in this
//! turn → it calls one of them (picked by a hash of the prompt) with arguments made up from
//! the tool's schema; once results are in, its answer opens with what they said.

use serde_json::{Map, Value, json};

use super::prompt::stable_hash;
use crate::engine::protocol::{flow, pipeline, team_talk};
use crate::model::{ToolCall, ToolChoice, ToolSpec};
use crate::providers::{ChatRole, TurnRequest};
use crate::tools::limits::result_line;

/// The call the sim makes now, if any, and what it says before it.
pub fn call_for(req: &TurnRequest) -> Option<(ToolCall, String)> {
    if req.tools.is_empty() || req.tool_choice == ToolChoice::None {
        return None;
    }
    // Only the turn's first round calls: after a tool result, the sim answers.
    if req.messages.last().map(|m| m.role) != Some(ChatRole::User) {
        return None;
    }
    let prompt = req.last_user_text();
    let hash = stable_hash(&[prompt]);
    let call = |name: &str, arguments: String| ToolCall {
        id: format!("sim_call_{:08x}", hash as u32),
        name: name.to_string(),
        arguments,
    };
    let offered = |name: &str| req.tools.iter().find(|t| t.name == name);
    // A pipeline member hands the conversation on, or answers: it calls nothing else.
    if offered(pipeline::CONVERSATION_HANDOFF_TOOL).is_some() {
        return super::pipeline::choice(prompt).map(|h| {
            let preamble = format!("Passing this on to {}.", h.target);
            let arguments = pipeline::conversation_handoff_arguments(&h);
            (call(pipeline::CONVERSATION_HANDOFF_TOOL, arguments), preamble)
        });
    }
    // A team member broadcasts (its only way to share); the supervisor broadcasts back or
    // answers.
    if offered(team_talk::BROADCAST_TOOL).is_some() {
        return super::team::call_arguments(req).map(|arguments| {
            let preamble = "Sharing this with the team.".to_string();
            (call(team_talk::BROADCAST_TOOL, arguments), preamble)
        });
    }
    // A flow router passes the request on at once.
    if let Some((arguments, preamble)) =
        offered(flow::HANDOFF_TOOL).and_then(|spec| super::flow::call(spec, prompt))
    {
        return Some((call(flow::HANDOFF_TOOL, arguments), preamble));
    }
    // What only looks is played before what changes things: a tool whose name says it
    // changes something (`git_create_branch`) only when nothing else is offered.
    let looking: Vec<&ToolSpec> = req.tools.iter().filter(|t| !changes_things(&t.name)).collect();
    let candidates = match looking.is_empty() {
        true => req.tools.iter().collect(),
        false => looking,
    };
    let spec = candidates[(hash % candidates.len() as u64) as usize];
    let arguments = plausible_arguments(&spec.input_schema, prompt);
    let preamble = format!("Let me check with `{}` first.", spec.name);
    Some((call(&spec.name, arguments.to_string()), preamble))
}

/// The words of a tool's name that say it changes something (files, a repository, a service).
const CHANGING: &[&str] = &[
    "add", "apply", "checkout", "clone", "commit", "create", "delete", "drop", "edit", "exec", "execute",
    "init", "insert", "install", "kill", "merge", "move", "patch", "post", "push", "put", "remove", "rename",
    "replace", "reset", "restore", "revert", "rm", "run", "send", "set", "stage", "unstage", "update",
    "upload", "write",
];

/// Whether tool `name` (`git__git_create_branch`, `writeFile`) reads as one that changes
/// something: one of its words (split at `_`, `-`, `.` and lower-to-upper case) is a
/// changing verb.
fn changes_things(name: &str) -> bool {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut lower_before = false;
    for c in name.chars() {
        let boundary = !c.is_alphanumeric() || (c.is_uppercase() && lower_before);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        lower_before = c.is_lowercase() || c.is_ascii_digit();
    }
    words.push(word);
    words.iter().any(|w| CHANGING.contains(&w.as_str()))
}

/// One line per tool result of this turn (after the last user message), to open the answer.
pub fn results_note(req: &TurnRequest) -> Option<String> {
    let start = req
        .messages
        .iter()
        .rposition(|m| m.role == ChatRole::User)
        .map_or(0, |i| i + 1);
    let lines: Vec<String> = req.messages[start..]
        .iter()
        .filter_map(|m| {
            let r = m.result_of.as_ref()?;
            let what = if r.is_error { "failed" } else { "said" };
            Some(format!("`{}` {what}: {}", r.name, result_line(&m.content, 100)))
        })
        .collect();
    (!lines.is_empty()).then(|| format!("From my tools: {}", lines.join("; ")))
}

/// Arguments matching `schema`: every required property (all of them when none are marked
/// required), each a plausible value for its type and name.
pub fn plausible_arguments(schema: &Value, prompt: &str) -> Value {
    let mut args = Map::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Object(args);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        if !required.is_empty() && !required.contains(&name.as_str()) {
            continue;
        }
        args.insert(name.clone(), value_for(name, property, prompt));
    }
    Value::Object(args)
}

fn value_for(name: &str, property: &Value, prompt: &str) -> Value {
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    let kind = match property.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match kind {
        "integer" | "number" => json!(
            property
                .get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(1)
        ),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        "null" => Value::Null,
        _ => Value::String(string_for(name, prompt)),
    }
}

fn string_for(name: &str, prompt: &str) -> String {
    let name = name.to_ascii_lowercase();
    if name.contains("path") || name.contains("repo") || name.contains("dir") {
        ".".to_string()
    } else if name.contains("timezone") || name == "tz" {
        "UTC".to_string()
    } else if name.contains("time") {
        "12:00".to_string()
    } else if name.contains("url") {
        "https://example.com".to_string()
    } else {
        prompt.split_whitespace().take(6).collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ChatMessage;

    fn request(tools: Vec<ToolSpec>, messages: Vec<ChatMessage>) -> TurnRequest {
        TurnRequest {
            tools,
            ..TurnRequest::new("default", messages)
        }
    }

    fn git_status() -> ToolSpec {
        ToolSpec {
            name: "git__git_status".into(),
            description: "status".into(),
            input_schema: json!({"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}),
        }
    }

    fn time() -> ToolSpec {
        ToolSpec {
            name: "time__get_current_time".into(),
            description: "now".into(),
            input_schema: json!({"type": "object", "properties": {"timezone": {"type": "string"}, "verbose": {"type": "boolean"}}, "required": ["timezone"]}),
        }
    }

    #[test]
    fn calls_one_offered_tool_with_arguments_that_fit_its_schema() {
        let req = request(
            vec![git_status(), time()],
            vec![ChatMessage::user("what changed?")],
        );
        let (call, preamble) = call_for(&req).unwrap();
        assert_eq!(call_for(&req), Some((call.clone(), preamble)), "deterministic");
        let spec = req.tools.iter().find(|t| t.name == call.name).unwrap();
        let args = crate::tools::schema::parse_arguments(&call.arguments, &spec.input_schema).unwrap();
        assert!(
            args.contains_key("repo_path") || args["timezone"] == json!("UTC"),
            "{args:?}"
        );
        assert!(!args.contains_key("verbose"), "only required properties");
        // Other prompts pick the other tool sometimes: every tool gets played.
        let names: std::collections::BTreeSet<String> = (0..20)
            .filter_map(|i| {
                call_for(&request(
                    vec![git_status(), time()],
                    vec![ChatMessage::user(format!("q{i}"))],
                ))
            })
            .map(|(c, _)| c.name)
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {}}),
        }
    }

    /// The reference git server offers `git_create_branch`, `git_commit`, `git_reset`… beside
    /// `git_status` and `git_log`: whatever the prompt, the sim looks before it changes anything
    /// (issue 28 item 18); with only changing tools offered it still plays one.
    #[test]
    fn looking_tools_are_played_before_changing_ones() {
        let changing = [
            "git__git_create_branch",
            "git__git_commit",
            "git__git_reset",
            "git__git_add",
            "git__git_checkout",
            "fs__write_file",
            "fs__editFile",
            "fs__move-file",
        ];
        let looking = [
            "git__git_status",
            "git__git_log",
            "git__git_diff_unstaged",
            "fs__read_file",
        ];
        let tools: Vec<ToolSpec> = changing.iter().chain(&looking).map(|n| tool(n)).collect();
        let picked: std::collections::BTreeSet<String> = (0..40)
            .filter_map(|i| call_for(&request(tools.clone(), vec![ChatMessage::user(format!("q{i}"))])))
            .map(|(c, _)| c.name)
            .collect();
        assert!(picked.iter().all(|n| looking.contains(&n.as_str())), "{picked:?}");
        assert!(picked.len() > 1, "every looking tool gets played: {picked:?}");
        let only = vec![tool("git__git_commit")];
        let (call, _) = call_for(&request(only, vec![ChatMessage::user("x")])).expect("a call");
        assert_eq!(call.name, "git__git_commit");
        for name in [
            "time__get_current_time",
            "git__git_branch",
            "search_issues",
            "getStatus",
        ] {
            assert!(!changes_things(name), "{name}");
        }
    }

    #[test]
    fn answers_instead_of_calling_after_results_or_when_told_not_to() {
        let call = ToolCall {
            id: "c1".into(),
            name: "git__git_status".into(),
            arguments: "{}".into(),
        };
        let messages = vec![
            ChatMessage::user("status?"),
            ChatMessage::assistant_calls("", vec![call]),
            ChatMessage::tool_result("c1", "git__git_status", false, "On branch main\nclean"),
        ];
        let req = request(vec![git_status()], messages);
        assert_eq!(call_for(&req), None);
        assert_eq!(
            results_note(&req).as_deref(),
            Some("From my tools: `git__git_status` said: On branch main")
        );
        let mut told = request(vec![git_status()], vec![ChatMessage::user("x")]);
        told.tool_choice = ToolChoice::None;
        assert_eq!(call_for(&told), None);
        assert_eq!(call_for(&request(vec![], vec![ChatMessage::user("x")])), None);
        assert_eq!(results_note(&told), None);
    }

    #[test]
    fn made_up_values_follow_type_enum_and_name() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 3},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"type": "array"},
            "url": {"type": ["string", "null"]},
            "topic": {"type": "string"}
        }});
        let args = plausible_arguments(&schema, "tell me about rust async");
        assert_eq!(args["n"], json!(3));
        assert_eq!(args["mode"], json!("fast"));
        assert_eq!(args["tags"], json!([]));
        assert_eq!(args["url"], json!("https://example.com"));
        assert_eq!(args["topic"], json!("tell me about rust async"));
        assert_eq!(plausible_arguments(&json!({}), "x"), json!({}));
    }
}
