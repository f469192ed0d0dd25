//! The A2A v1.0 JSON-RPC wire (ProtoJSON names, `A2A-Version: 1.0`), as far as huddle speaks
//! it: the Agent Card, `SendMessage`, `SendStreamingMessage` (SSE, one JSON-RPC response per
//! event), `CancelTask`. Everything read is untrusted: every field is optional, unknown fields
//! and unknown task states are kept as they are, never a parse failure.

use serde::Deserialize;
use serde_json::{Value, json};

/// Where a v1.0 agent serves its card, below its base URL.
pub const CARD_PATH: &str = ".well-known/agent-card.json";
/// The protocol version huddle speaks (the `A2A-Version` header, the card's interface).
pub const VERSION: &str = "1.0";

/// JSON-RPC error codes of A2A (spec §5.4) huddle words differently.
pub const TASK_NOT_FOUND: i64 = -32001;
pub const TASK_NOT_CANCELABLE: i64 = -32002;
pub const VERSION_NOT_SUPPORTED: i64 = -32009;

/// The Agent Card: who the agent is and where it listens.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    pub version: String,
    pub supported_interfaces: Vec<AgentInterface>,
    pub capabilities: AgentCapabilities,
    pub skills: Vec<AgentSkill>,
    pub provider: Option<AgentProvider>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    pub protocol_version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCapabilities {
    pub streaming: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentProvider {
    pub organization: String,
    pub url: String,
}

impl AgentCard {
    /// The first JSON-RPC interface speaking v1.0 (the card lists the preferred first).
    pub fn jsonrpc_url(&self) -> Option<&str> {
        self.supported_interfaces
            .iter()
            .find(|i| {
                i.protocol_binding.eq_ignore_ascii_case("JSONRPC")
                    && (i.protocol_version.is_empty() || i.protocol_version.starts_with("1."))
            })
            .map(|i| i.url.as_str())
            .filter(|u| !u.is_empty())
    }

    /// The card in one line: name, version, skills.
    pub fn summary(&self) -> String {
        let mut out = if self.name.is_empty() {
            "(unnamed agent)".to_string()
        } else {
            self.name.clone()
        };
        if !self.version.is_empty() {
            out.push_str(&format!(" {}", self.version));
        }
        if let Some(p) = self.provider.as_ref().filter(|p| !p.organization.is_empty()) {
            out.push_str(&format!(" by {}", p.organization));
        }
        let skills = self.skill_names();
        if !skills.is_empty() {
            out.push_str(&format!("; skills: {}", skills.join(", ")));
        }
        if self.capabilities.streaming {
            out.push_str("; streams");
        }
        crate::text::first_line(&crate::text::sanitize::display(&out), 300)
    }
}

impl AgentCard {
    /// Each skill's name (its id when it has none), in the card's order.
    fn skill_names(&self) -> Vec<&str> {
        self.skills
            .iter()
            .map(|s| {
                if s.name.is_empty() {
                    s.id.as_str()
                } else {
                    s.name.as_str()
                }
            })
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The card as a session's header says it: name, description, skills (`Travel — Books
    /// trips · skills: Flights, Hotels`), on one line, sanitised, at most 160 characters.
    pub fn header(&self) -> String {
        let mut out = if self.name.is_empty() {
            "(unnamed agent)".to_string()
        } else {
            self.name.clone()
        };
        let description = crate::text::first_line(&crate::text::sanitize::display(&self.description), 80);
        if !description.is_empty() {
            out.push_str(&format!(" — {description}"));
        }
        let skills = self.skill_names();
        if !skills.is_empty() {
            out.push_str(&format!(" · skills: {}", skills.join(", ")));
        }
        crate::text::first_line(&crate::text::sanitize::display(&out), 160)
    }
}

/// A message part: exactly one of text, raw bytes (base64), a URL or JSON data.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Part {
    pub text: Option<String>,
    pub raw: Option<String>,
    pub url: Option<String>,
    pub data: Option<Value>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    /// The part as text for the transcript: text as it is, data as JSON, a file by its name (its
    /// bytes are never decoded).
    pub fn as_text(&self) -> String {
        if let Some(text) = &self.text {
            return text.clone();
        }
        if let Some(data) = &self.data {
            return format!("\n```json\n{data}\n```\n");
        }
        let name = self.filename.as_deref().unwrap_or("file");
        let kind = self.media_type.as_deref().unwrap_or("unknown type");
        if let Some(url) = &self.url {
            return format!("[{name} ({kind}): {url}]");
        }
        if let Some(raw) = &self.raw {
            return format!("[{name} ({kind}), {} bytes, not shown]", raw.len() / 4 * 3);
        }
        String::new()
    }
}

/// The text of `parts`, joined.
pub fn parts_text(parts: &[Part]) -> String {
    parts.iter().map(Part::as_text).collect()
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Message {
    pub message_id: String,
    pub context_id: Option<String>,
    pub task_id: Option<String>,
    pub role: String,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatus {
    pub state: String,
    pub message: Option<Message>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Artifact {
    pub artifact_id: String,
    pub name: Option<String>,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    pub artifacts: Vec<Artifact>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatusUpdate {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ArtifactUpdate {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    pub append: bool,
    pub last_chunk: bool,
}

/// A `SendMessage` result or one streamed event: one of the four is set.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StreamResponse {
    pub task: Option<Task>,
    pub message: Option<Message>,
    pub status_update: Option<StatusUpdate>,
    pub artifact_update: Option<ArtifactUpdate>,
}

/// A task's state, as huddle acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Submitted or working: more to come.
    Running,
    Completed,
    /// The agent asks for more input; the next message to the same task answers.
    InputRequired,
    /// The agent wants credentials huddle does not have.
    AuthRequired,
    Failed,
    Rejected,
    Canceled,
    /// A state this version does not know: treated as still running.
    Unknown,
}

impl State {
    pub fn parse(state: &str) -> State {
        // ProtoJSON names (v1.0); the v0.3 lower-case names too, for a lenient server.
        match state
            .trim_start_matches("TASK_STATE_")
            .to_ascii_lowercase()
            .replace('_', "-")
            .as_str()
        {
            "submitted" | "working" => State::Running,
            "completed" => State::Completed,
            "input-required" => State::InputRequired,
            "auth-required" => State::AuthRequired,
            "failed" => State::Failed,
            "rejected" => State::Rejected,
            "canceled" | "cancelled" => State::Canceled,
            _ => State::Unknown,
        }
    }

    /// The task stops here for this turn (finished, or waiting for the other side).
    pub fn ends_turn(self) -> bool {
        !matches!(self, State::Running | State::Unknown)
    }

    /// As a turn's finish reason.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "working",
            State::Completed => "completed",
            State::InputRequired => "input_required",
            State::AuthRequired => "auth_required",
            State::Failed => "failed",
            State::Rejected => "rejected",
            State::Canceled => "canceled",
            State::Unknown => "unknown",
        }
    }
}

/// A JSON-RPC request.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `SendMessage`/`SendStreamingMessage` params: one user message with one text part, in the
/// given context (and task, answering its `input-required`).
pub fn send_params(message_id: &str, text: &str, context_id: Option<&str>, task_id: Option<&str>) -> Value {
    let mut message = json!({
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "messageId": message_id,
    });
    if let Some(c) = context_id {
        message["contextId"] = json!(c);
    }
    if let Some(t) = task_id {
        message["taskId"] = json!(t);
    }
    json!({ "message": message })
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// A JSON-RPC response: its result, or its error. `None`: not a response at all.
pub fn response(body: &Value) -> Option<Result<Value, RpcError>> {
    if let Some(e) = body.get("error") {
        return Some(Err(RpcError {
            code: e["code"].as_i64().unwrap_or(0),
            message: e["message"].as_str().unwrap_or("(no message)").to_string(),
        }));
    }
    body.get("result").cloned().map(Ok)
}

/// An id the remote chose (a context or task id) is kept only when it is plainly an id: it is
/// stored in huddle's session and sent back.
pub fn plain_id(id: &str) -> Option<&str> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    ok.then_some(id)
}

/// What huddle keeps between turns (the session's agent session id): the A2A context, and the
/// task when it waits for input. Stored as `<context>` or `<context> <task>`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Continuation {
    pub context_id: Option<String>,
    pub task_id: Option<String>,
}

impl Continuation {
    pub fn parse(stored: Option<&str>) -> Continuation {
        let mut words = stored.unwrap_or("").split_whitespace();
        let context_id = words.next().and_then(plain_id).map(str::to_string);
        let task_id = context_id
            .as_ref()
            .and(words.next())
            .and_then(plain_id)
            .map(str::to_string);
        Continuation { context_id, task_id }
    }

    pub fn store(&self) -> Option<String> {
        let context = self.context_id.as_deref()?;
        Some(match &self.task_id {
            Some(task) => format!("{context} {task}"),
            None => context.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cards_header_is_one_clean_line_of_name_description_and_skills() {
        let card: AgentCard = serde_json::from_value(serde_json::json!({
            "name": "Travel\u{1b}[2J",
            "description": "Books trips.\nAsks before paying.",
            "skills": [{"id": "flights", "name": "Flights"}, {"id": "hotels"}, {"id": ""}]
        }))
        .expect("a card");
        assert_eq!(card.header(), "Travel — Books trips. · skills: Flights, hotels");
        let long = AgentCard {
            name: "x".repeat(400),
            ..AgentCard::default()
        };
        assert!(long.header().chars().count() <= 161, "{}", long.header());
        assert_eq!(AgentCard::default().header(), "(unnamed agent)");
    }

    #[test]
    fn a_card_of_the_reference_sdk_is_read_and_unknown_fields_are_ignored() {
        let card: AgentCard = serde_json::from_str(
            r#"{"name":"huddle test counterpart","description":"d","version":"1.0.0",
            "supportedInterfaces":[{"url":"http://127.0.0.1:9/g","protocolBinding":"GRPC","protocolVersion":"1.0"},
              {"url":"http://127.0.0.1:9/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
            "capabilities":{"streaming":true,"pushNotifications":false},"signatures":[{"x":1}],
            "skills":[{"id":"echo","name":"Echo","description":"Echo the message","tags":["test"]}]}"#,
        )
        .unwrap();
        assert_eq!(card.jsonrpc_url(), Some("http://127.0.0.1:9/"));
        assert_eq!(
            card.summary(),
            "huddle test counterpart 1.0.0; skills: Echo; streams"
        );
        let old: AgentCard = serde_json::from_str(
            r#"{"name":"x","supportedInterfaces":[{"url":"http://h/","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}"#,
        )
        .unwrap();
        assert_eq!(old.jsonrpc_url(), None, "a 0.3-only agent is not spoken to");
    }

    #[test]
    fn results_and_stream_events_parse_with_any_state() {
        let r: StreamResponse = serde_json::from_value(json!({"task": {"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"role": "ROLE_AGENT",
            "parts": [{"text": "Which city?"}]}}, "history": [{"parts": [{"text": "ask me"}]}]}}))
        .unwrap();
        let task = r.task.unwrap();
        assert_eq!(State::parse(&task.status.state), State::InputRequired);
        assert_eq!(parts_text(&task.status.message.unwrap().parts), "Which city?");
        for (s, want) in [
            ("TASK_STATE_COMPLETED", State::Completed),
            ("TASK_STATE_WORKING", State::Running),
            ("input-required", State::InputRequired),
            ("TASK_STATE_AUTH_REQUIRED", State::AuthRequired),
            ("TASK_STATE_REJECTED", State::Rejected),
            ("TASK_STATE_SOMETHING_NEW", State::Unknown),
        ] {
            assert_eq!(State::parse(s), want, "{s}");
        }
        let u: StreamResponse = serde_json::from_value(json!({"artifactUpdate": {"taskId": "t",
            "artifact": {"artifactId": "a1", "parts": [{"text": "chunk 1 "}, {"data": {"k": 1}}]},
            "append": true, "lastChunk": false}}))
        .unwrap();
        let a = u.artifact_update.unwrap();
        assert!(a.append);
        assert_eq!(
            parts_text(&a.artifact.parts),
            "chunk 1 \n```json\n{\"k\":1}\n```\n"
        );
    }

    #[test]
    fn only_plain_ids_are_kept_between_turns() {
        let c = Continuation::parse(Some("ctx-1 task.2"));
        assert_eq!(c.context_id.as_deref(), Some("ctx-1"));
        assert_eq!(c.task_id.as_deref(), Some("task.2"));
        assert_eq!(c.store().as_deref(), Some("ctx-1 task.2"));
        assert_eq!(
            Continuation::parse(Some("../etc\u{1b}[2J")),
            Continuation::default()
        );
        assert_eq!(Continuation::parse(None).store(), None);
        assert_eq!(plain_id(&"x".repeat(201)), None);
    }

    #[test]
    fn responses_are_results_or_errors() {
        assert_eq!(
            response(&json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}})),
            Some(Err(RpcError {
                code: TASK_NOT_FOUND,
                message: "gone".into()
            }))
        );
        assert_eq!(response(&json!({"result": 1})), Some(Ok(json!(1))));
        assert_eq!(response(&json!({"id": 1})), None);
        let p = send_params("m1", "hi", Some("c"), Some("t"));
        assert_eq!(p["message"]["role"], "ROLE_USER");
        assert_eq!(
            (
                p["message"]["contextId"].as_str(),
                p["message"]["taskId"].as_str()
            ),
            (Some("c"), Some("t"))
        );
        assert!(
            send_params("m", "x", None, None)["message"]
                .get("contextId")
                .is_none()
        );
    }
}
