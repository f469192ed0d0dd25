//! ACP v1 on the wire: the JSON-RPC lines huddle writes and reads, and the pure decisions on
//! them (which line is what, which permission option a decision picks, a tool call's result in
//! words). Everything an agent sends is read leniently: an unknown `sessionUpdate`, a missing
//! field or a line that is not JSON is skipped, never an error of the turn.

use serde_json::{Value, json};

use crate::tools::{AgentOption, Decision, ServerLaunch};

/// The ACP protocol version huddle speaks (an integer on the wire).
pub const PROTOCOL_VERSION: u64 = 1;
/// JSON-RPC's "method not found": huddle's answer to a client method it does not offer
/// (`fs/*`, `terminal/*`, `elicitation/create`, ...).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// ACP's `auth_required` error code.
pub const AUTH_REQUIRED: i64 = -32000;

/// One line from the agent, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of huddle's requests.
    Response {
        id: u64,
        result: Result<Value, RpcError>,
    },
    /// The agent asks huddle something (`session/request_permission`, `fs/read_text_file`, ...).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// The agent tells huddle something (`session/update`).
    Notification { method: String, params: Value },
    /// Not a JSON-RPC message huddle can use.
    Stray,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// Classifies one line (requests and responses share no id space: a request has `method`).
pub fn classify(line: &str) -> Incoming {
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(line.trim()) else {
        return Incoming::Stray;
    };
    let method = m.get("method").and_then(Value::as_str).map(str::to_string);
    let params = m.remove("params").unwrap_or(Value::Null);
    match (method, m.remove("id")) {
        (Some(method), Some(id)) if !id.is_null() => Incoming::Request { id, method, params },
        (Some(method), _) => Incoming::Notification { method, params },
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else {
                return Incoming::Stray;
            };
            let result = match m.remove("error") {
                Some(error) => Err(RpcError {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("(no message)")
                        .to_string(),
                }),
                None => Ok(m.remove("result").unwrap_or(Value::Null)),
            };
            Incoming::Response { id, result }
        }
        (None, None) => Incoming::Stray,
    }
}

/// A request line.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification line.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// The answer to an agent's request.
pub fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error answer to an agent's request.
pub fn error_response(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// `initialize`'s parameters: huddle offers no file system or terminal of its own (the agent
/// uses its own tools, confined by the session's sandbox).
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "huddle", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// What `initialize` said the agent can do (omitted = cannot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentInfo {
    /// `session/load`: it replays the conversation, then continues it.
    pub load_session: bool,
    /// `session/resume`: it continues a session without replaying it.
    pub resume_session: bool,
    /// It reaches MCP servers over HTTP itself (`mcpCapabilities.http`); every agent takes
    /// stdio servers.
    pub mcp_http: bool,
}

impl AgentInfo {
    pub fn from_result(result: &Value) -> AgentInfo {
        let caps = &result["agentCapabilities"];
        AgentInfo {
            load_session: caps["loadSession"].as_bool().unwrap_or(false),
            resume_session: caps["sessionCapabilities"]["resume"].is_object(),
            mcp_http: caps["mcpCapabilities"]["http"].as_bool().unwrap_or(false),
        }
    }

    /// It can continue a stored session in some way.
    pub fn can_continue(&self) -> bool {
        self.load_session || self.resume_session
    }
}

/// `mcpServers` of `session/new` (and `load`/`resume`): the session's tool servers in ACP's
/// shapes (stdio: an absolute command, args, env as name/value pairs; `type: http` with
/// headers where the agent takes HTTP servers), and the names of those it cannot take.
pub fn mcp_servers(servers: &[ServerLaunch], info: &AgentInfo) -> (Value, Vec<String>) {
    let pairs = |list: &[(String, String)]| -> Vec<Value> {
        list.iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect()
    };
    let mut given = Vec::new();
    let mut left_out = Vec::new();
    for server in servers {
        match server {
            ServerLaunch::Stdio {
                name,
                command,
                args,
                env,
            } => given.push(json!({"name": name, "command": command, "args": args, "env": pairs(env)})),
            ServerLaunch::Http { name, url, headers } if info.mcp_http => {
                given.push(json!({"type": "http", "name": name, "url": url, "headers": pairs(headers)}))
            }
            ServerLaunch::Http { name, .. } => left_out.push(name.clone()),
        }
    }
    (Value::Array(given), left_out)
}

/// A prompt of one text block.
pub fn prompt_params(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// One `session/update`, as far as huddle uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// A piece of the agent's answer.
    Message(String),
    /// A piece of its thinking (not part of the answer).
    Thought(String),
    /// A tool call began, or one changed (only changed fields are set).
    Tool(ToolUpdate),
    /// The agent's plan, whole (each update replaces the last).
    Plan(Vec<PlanEntry>),
    /// Context use (tokens) and, when known, the agent's own cost.
    Usage {
        used: u64,
        size: u64,
        cost_usd: Option<f64>,
    },
    /// Anything else (replayed user messages, commands, modes, ...).
    Other,
}

/// A tool call's fields as one update reported them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolUpdate {
    pub id: String,
    pub title: Option<String>,
    pub kind: Option<String>,
    /// `pending`, `in_progress`, `completed` or `failed`.
    pub status: Option<String>,
    pub raw_input: Option<Value>,
    /// The call's output in words (text blocks, diffs), when this update carried content.
    pub output: Option<String>,
}

impl ToolUpdate {
    pub fn finished(&self) -> Option<bool> {
        match self.status.as_deref() {
            Some("completed") => Some(true),
            Some("failed") => Some(false),
            _ => None,
        }
    }
}

/// One entry of an agent's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanEntry {
    pub content: String,
    pub status: String,
}

/// The update a `session/update` notification's parameters carry.
pub fn parse_update(params: &Value) -> Update {
    let update = &params["update"];
    let text = |v: &Value| v["content"]["text"].as_str().unwrap_or_default().to_string();
    match update["sessionUpdate"].as_str().unwrap_or_default() {
        "agent_message_chunk" => Update::Message(text(update)),
        "agent_thought_chunk" => Update::Thought(text(update)),
        "tool_call" | "tool_call_update" => {
            let Some(id) = update["toolCallId"].as_str() else {
                return Update::Other;
            };
            let s = |key: &str| update[key].as_str().map(str::to_string);
            Update::Tool(ToolUpdate {
                id: id.to_string(),
                title: s("title"),
                kind: s("kind"),
                status: s("status"),
                raw_input: update.get("rawInput").filter(|v| !v.is_null()).cloned(),
                output: update["content"].as_array().map(|items| tool_output(items)),
            })
        }
        "plan" => Update::Plan(
            update["entries"]
                .as_array()
                .map(|entries| {
                    entries
                        .iter()
                        .map(|e| PlanEntry {
                            content: e["content"].as_str().unwrap_or_default().to_string(),
                            status: e["status"].as_str().unwrap_or("pending").to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "usage_update" => Update::Usage {
            used: update["used"].as_u64().unwrap_or(0),
            size: update["size"].as_u64().unwrap_or(0),
            cost_usd: update["cost"]
                .as_object()
                .filter(|c| c.get("currency").and_then(Value::as_str) == Some("USD"))
                .and_then(|c| c.get("amount"))
                .and_then(Value::as_f64),
        },
        _ => Update::Other,
    }
}

/// A tool call's `content` items in words: text blocks as they are, a diff as a unified-style
/// listing of the file's old and new lines, a terminal by its id.
pub fn tool_output(items: &[Value]) -> String {
    let mut out = Vec::new();
    for item in items {
        match item["type"].as_str().unwrap_or_default() {
            "content" => {
                if let Some(t) = item["content"]["text"].as_str() {
                    out.push(t.to_string());
                } else if let Some(uri) = item["content"]["uri"].as_str() {
                    out.push(uri.to_string());
                }
            }
            "diff" => {
                let path = item["path"].as_str().unwrap_or("(a file)");
                let old = item["oldText"].as_str();
                let new = item["newText"].as_str().unwrap_or_default();
                let mut d = match old {
                    Some(_) => format!("--- {path}\n+++ {path}\n"),
                    None => format!("--- /dev/null\n+++ {path} (new file)\n"),
                };
                for line in old.unwrap_or_default().lines() {
                    d.push_str(&format!("-{line}\n"));
                }
                for line in new.lines() {
                    d.push_str(&format!("+{line}\n"));
                }
                out.push(d.trim_end().to_string());
            }
            "terminal" => out.push(format!(
                "(terminal {})",
                item["terminalId"].as_str().unwrap_or("?")
            )),
            _ => {}
        }
    }
    out.join("\n")
}

/// What `session/request_permission` asks: the call (merged with what earlier updates said of
/// it) and the options offered.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAsk {
    pub call: ToolUpdate,
    /// The agent's options in its order (an option without an id or a kind is left out).
    pub options: Vec<AgentOption>,
}

pub fn parse_permission(params: &Value) -> PermissionAsk {
    let call = match parse_update(&json!({"update": {
        "sessionUpdate": "tool_call_update",
        "toolCallId": params["toolCall"]["toolCallId"].as_str().unwrap_or("?"),
        "title": params["toolCall"]["title"],
        "kind": params["toolCall"]["kind"],
        "rawInput": params["toolCall"]["rawInput"],
    }})) {
        Update::Tool(t) => t,
        _ => ToolUpdate::default(),
    };
    PermissionAsk {
        call,
        options: params["options"]
            .as_array()
            .map(|options| {
                options
                    .iter()
                    .filter_map(|o| {
                        let id = o["optionId"].as_str()?.to_string();
                        Some(AgentOption {
                            name: o["name"].as_str().unwrap_or(&id).to_string(),
                            kind: o["kind"].as_str()?.to_string(),
                            id,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The outcome answering a permission request: the option [`AgentOption::answering`] the
/// decision; with no such option (or `None`: the turn is being cancelled) the answer is
/// `cancelled`, which allows nothing.
pub fn permission_outcome(decision: Option<Decision>, options: &[AgentOption]) -> Value {
    match decision.and_then(|d| AgentOption::answering(d, options)) {
        Some(option) => json!({"outcome": {"outcome": "selected", "optionId": option.id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart_by_method_and_id() {
        // The agent's own requests reuse ids huddle used: `method` decides.
        let r =
            classify(r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"x":1}}"#);
        assert!(matches!(r, Incoming::Request { ref method, .. } if method == "session/request_permission"));
        let n = classify(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#);
        assert!(matches!(n, Incoming::Notification { .. }));
        let ok = classify(r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#);
        assert_eq!(
            ok,
            Incoming::Response {
                id: 2,
                result: Ok(json!({"stopReason": "end_turn"}))
            }
        );
        let err = classify(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"auth"}}"#);
        assert!(matches!(
            err,
            Incoming::Response {
                id: 3,
                result: Err(RpcError {
                    code: AUTH_REQUIRED,
                    ..
                })
            }
        ));
        for stray in ["", "not json", "[1]", r#"{"id":"x"}"#, r#"{"jsonrpc":"2.0"}"#] {
            assert_eq!(classify(stray), Incoming::Stray, "{stray}");
        }
    }

    #[test]
    fn updates_read_as_the_reference_agent_sends_them() {
        let p = |u: Value| parse_update(&json!({"sessionId": "s", "update": u}));
        assert_eq!(
            p(json!({"content":{"text":"Hello","type":"text"},"sessionUpdate":"agent_message_chunk"})),
            Update::Message("Hello".into())
        );
        let Update::Tool(t) = p(
            json!({"toolCallId":"call_1","title":"Edit config.json","kind":"edit","status":"pending","rawInput":{"path":"config.json"},"sessionUpdate":"tool_call"}),
        ) else {
            panic!("not a tool call");
        };
        assert!(t.finished().is_none());
        assert_eq!(t.raw_input, Some(json!({"path": "config.json"})));
        let Update::Tool(t) = p(
            json!({"toolCallId":"call_1","status":"completed","content":[{"path":"/tmp/x/config.json","oldText":"{\"debug\": false}\n","newText":"{\"debug\": true}\n","type":"diff"}],"sessionUpdate":"tool_call_update"}),
        ) else {
            panic!("not a tool call");
        };
        assert_eq!(t.finished(), Some(true));
        assert_eq!(
            t.output.as_deref(),
            Some("--- /tmp/x/config.json\n+++ /tmp/x/config.json\n-{\"debug\": false}\n+{\"debug\": true}")
        );
        assert_eq!(
            p(
                json!({"entries":[{"content":"edit config","priority":"high","status":"pending"}],"sessionUpdate":"plan"})
            ),
            Update::Plan(vec![PlanEntry {
                content: "edit config".into(),
                status: "pending".into()
            }])
        );
        assert_eq!(
            p(
                json!({"sessionUpdate":"usage_update","used":53000,"size":200000,"cost":{"amount":0.045,"currency":"USD"}})
            ),
            Update::Usage {
                used: 53000,
                size: 200000,
                cost_usd: Some(0.045)
            }
        );
        assert_eq!(
            p(json!({"sessionUpdate":"available_commands_update"})),
            Update::Other
        );
        assert_eq!(p(json!({"sessionUpdate":"tool_call"})), Update::Other, "no id");
        assert_eq!(p(json!(null)), Update::Other);
    }

    #[test]
    fn a_permission_is_answered_by_option_kind_never_allowing_by_default() {
        let ask = parse_permission(
            &json!({"sessionId":"s","toolCall":{"toolCallId":"call_1","kind":"edit","title":"Edit config.json"},
            "options":[{"optionId":"reject-once","name":"Reject","kind":"reject_once"},
                       {"optionId":"ok","name":"Allow once","kind":"allow_once"},
                       {"optionId":"always","name":"Always allow","kind":"allow_always"}]}),
        );
        assert_eq!(ask.call.id, "call_1");
        assert_eq!(ask.call.kind.as_deref(), Some("edit"));
        assert_eq!(ask.options[2].name, "Always allow");
        let picked = |d| permission_outcome(d, &ask.options)["outcome"]["optionId"].clone();
        assert_eq!(picked(Some(Decision::ApproveOnce)), json!("ok"));
        assert_eq!(picked(Some(Decision::ApproveForSession)), json!("always"));
        assert_eq!(picked(Some(Decision::Deny)), json!("reject-once"));
        assert_eq!(picked(Some(Decision::DenyAndStop)), json!("reject-once"));
        let cancelled = json!({"outcome": {"outcome": "cancelled"}});
        assert_eq!(permission_outcome(None, &ask.options), cancelled);
        // Only allow options offered: a denial allows nothing.
        let allow_only = vec![AgentOption {
            id: "a".into(),
            name: "Allow".into(),
            kind: "allow_once".into(),
        }];
        assert_eq!(permission_outcome(Some(Decision::Deny), &allow_only), cancelled);
        assert_eq!(
            permission_outcome(Some(Decision::ApproveForSession), &allow_only)["outcome"]["optionId"],
            json!("a")
        );
    }

    #[test]
    fn initialize_says_what_the_agent_can_do() {
        let info = AgentInfo::from_result(
            &json!({"protocolVersion":1,"agentCapabilities":{"loadSession":true},"agentInfo":{"name":"huddle-test-agent","version":"0.1.0"}}),
        );
        assert!(info.load_session && !info.resume_session);
        let info = AgentInfo::from_result(
            &json!({"agentCapabilities":{"sessionCapabilities":{"resume":{}}},"authMethods":[{"id":"x"}]}),
        );
        assert!(info.resume_session && info.can_continue());
        assert!(!AgentInfo::from_result(&json!({})).can_continue());
    }

    #[test]
    fn stdio_servers_always_and_http_ones_only_to_an_agent_that_takes_them() {
        let servers = [
            ServerLaunch::Stdio {
                name: "git".into(),
                command: "/usr/bin/mcp-git".into(),
                args: vec!["--repo".into(), ".".into()],
                env: vec![("GIT_PAGER".into(), "cat".into())],
            },
            ServerLaunch::Http {
                name: "tracker".into(),
                url: "https://t.example/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer x".into())],
            },
        ];
        let plain = AgentInfo::from_result(&json!({"agentCapabilities": {}}));
        let (given, left_out) = mcp_servers(&servers, &plain);
        assert_eq!(
            given,
            json!([{"name": "git", "command": "/usr/bin/mcp-git", "args": ["--repo", "."],
                    "env": [{"name": "GIT_PAGER", "value": "cat"}]}])
        );
        assert_eq!(left_out, ["tracker"]);
        let http = AgentInfo::from_result(&json!({"agentCapabilities": {"mcpCapabilities": {"http": true}}}));
        let (given, left_out) = mcp_servers(&servers, &http);
        assert_eq!(given[1]["type"], "http");
        assert_eq!(
            given[1]["headers"],
            json!([{"name": "Authorization", "value": "Bearer x"}])
        );
        assert!(left_out.is_empty());
        // Debug output names variables, never their values.
        assert!(!format!("{servers:?}").contains("Bearer x"));
    }
}
