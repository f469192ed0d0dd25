//! Reading a CLI coding agent's structured output: Claude Code's `stream-json`, Codex's
//! `exec --json` and Gemini CLI's `stream-json`, all NDJSON (one JSON object a line).
//!
//! Each format has a small line parser turning one JSON line into [`Event`]s; [`AgentTurn`]
//! keeps the state of a turn: the text written since the agent's last tool step (streamed as
//! deltas), the steps (a call and its result), usage, cost, the agent's session id and the
//! terminal result line. Parsing is lenient: unknown event types and fields are ignored, a line
//! that is not JSON is logged and skipped, and a line cut off at the end of the stream is
//! reported by [`AgentTurn::finish`] so the caller can call the output truncated.

mod claude;
mod codex;
pub mod control;
mod gemini;

use serde_json::Value;

use super::{AgentActivity, AgentActivitySink, AgentReport, AgentStep, TextSink};
use crate::model::{AgentFormat, ToolCall, Usage};

/// What one line of an agent's output says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// The agent's session (thread) id.
    Session(String),
    /// A new block of text starts: separate it from text before it.
    Break,
    /// A piece of text, appended to what came before.
    Text(String),
    /// A whole block of text.
    Block(String),
    /// The agent called a tool (`input` is its arguments as JSON text).
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
    /// A call's result.
    ToolResult {
        id: String,
        output: String,
        is_error: bool,
    },
    /// Token usage of the whole turn.
    Usage(Usage),
    Cost(f64),
    /// A non-fatal problem the agent reported (logged).
    Warning(String),
    /// An error line that does not end the stream by itself (used if no result line follows).
    Failure(String),
    /// A `control_request` line (Claude Code asks before running a tool): the whole line.
    Control(Value),
    /// The terminal result line: success, or the error it reports. `result_text` is the final
    /// answer as the result line repeats it (used only when no text was streamed).
    Done {
        error: Option<String>,
        result_text: Option<String>,
    },
}

/// Turns one parsed JSON line into events.
pub(crate) trait LineParser: Send {
    fn line(&mut self, v: &Value, out: &mut Vec<Event>);
}

/// The parser of a structured format (`None` for plain text).
pub(crate) fn parser(format: AgentFormat) -> Option<Box<dyn LineParser>> {
    match format {
        AgentFormat::Text => None,
        AgentFormat::ClaudeStreamJson => Some(Box::<claude::Claude>::default()),
        AgentFormat::CodexJson => Some(Box::new(codex::Codex::new())),
        AgentFormat::GeminiStreamJson => Some(Box::<gemini::Gemini>::default()),
    }
}

/// The arguments of a run that resumes the agent's session `id`: Claude Code and Gemini CLI
/// take `--resume <id>` at the end; Codex `exec … resume <id> -`, before the `-` that reads the
/// prompt from stdin (added when the command has none).
pub fn resume_args(format: AgentFormat, args: &[String], id: &str) -> Vec<String> {
    let mut out = args.to_vec();
    match format {
        AgentFormat::Text => {}
        AgentFormat::ClaudeStreamJson | AgentFormat::GeminiStreamJson => {
            out.push("--resume".into());
            out.push(id.into());
        }
        AgentFormat::CodexJson => match out.iter().rposition(|a| a == "-") {
            Some(dash) => {
                out.insert(dash, id.into());
                out.insert(dash, "resume".into());
            }
            None => out.extend(["resume".to_string(), id.to_string(), "-".to_string()]),
        },
    }
    out
}

/// The agent's words mean it is not logged in or its key was refused (Claude Code's `Invalid
/// API key · Please run /login`, an HTTP 401 relayed by Codex, Gemini's `API_KEY_INVALID`...).
pub fn looks_like_auth_failure(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "invalid api key",
        "invalid_api_key",
        "api key not valid",
        "api_key_invalid",
        "please run /login",
        "not logged in",
        "login required",
        "please log in",
        "unauthorized",
        "status 401",
        "authentication_error",
        "authentication_failed",
        "authentication failed",
        "oauth token has expired",
        "please set an auth method",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// The agent does not know the session it was asked to resume (Claude Code: `No conversation
/// found with session ID`, Codex: `No saved session found with ID`, Gemini CLI: `Invalid session
/// identifier`).
pub fn looks_like_unknown_session(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "no conversation found",
        "no saved session found",
        "invalid session identifier",
        "no previous sessions found",
        "session not found",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// Longest line kept while waiting for its end; past it the line is dropped (and logged).
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One agent turn being read.
pub(crate) struct AgentTurn {
    parser: Box<dyn LineParser>,
    activity: Option<AgentActivitySink>,
    /// Bytes of a line whose end has not arrived.
    pending: Vec<u8>,
    /// The rest of a line dropped for its length is skipped up to its newline.
    skipping_line: bool,
    scratch: Vec<Event>,
    pub report: AgentReport,
    pub usage: Option<Usage>,
    /// Calls waiting for their result, with the text written before each.
    open: Vec<(ToolCall, String)>,
    /// From the terminal line: success or the error it reported.
    pub outcome: Option<Result<(), String>>,
    /// The last error line that did not end the stream.
    pub failure: Option<String>,
    break_pending: bool,
    /// Lines that were not JSON objects.
    pub stray_lines: usize,
    /// Where the agent's control requests go, and the end of its run is told (see
    /// [`AgentTurn::answering`]).
    control: Option<tokio::sync::mpsc::UnboundedSender<Control>>,
}

/// What an agent that speaks a control protocol needs answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Control {
    /// A control request line.
    Request(Value),
    /// The result line came: no more requests this turn.
    Ended,
}

impl AgentTurn {
    /// `None` for the plain-text format.
    pub fn new(format: AgentFormat, activity: Option<AgentActivitySink>) -> Option<AgentTurn> {
        Some(AgentTurn {
            parser: parser(format)?,
            activity,
            pending: Vec::new(),
            skipping_line: false,
            scratch: Vec::new(),
            report: AgentReport::default(),
            usage: None,
            open: Vec::new(),
            outcome: None,
            failure: None,
            break_pending: false,
            stray_lines: 0,
            control: None,
        })
    }

    /// The agent's control requests (and the end of its run) are sent to `to`.
    pub fn answering(mut self, to: tokio::sync::mpsc::UnboundedSender<Control>) -> AgentTurn {
        self.control = Some(to);
        self
    }

    /// The run resumes the agent's stored session.
    pub fn resuming(mut self) -> AgentTurn {
        self.report.resumed = true;
        self
    }

    /// Nothing was shown yet: no text, no call.
    pub fn is_blank(&self, sink: &TextSink<'_>) -> bool {
        sink.text.is_empty() && self.open.is_empty() && self.report.steps.is_empty()
    }

    fn tell(&self, activity: AgentActivity) {
        if let Some(a) = &self.activity {
            a.send(activity);
        }
    }

    /// Bytes of stdout as they arrive: every complete line is handled now.
    pub fn push_bytes(&mut self, bytes: &[u8], sink: &mut TextSink<'_>) {
        let mut rest = bytes;
        if self.skipping_line {
            match rest.iter().position(|&b| b == b'\n') {
                Some(nl) => {
                    self.skipping_line = false;
                    rest = &rest[nl + 1..];
                }
                None => return,
            }
        }
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            if self.pending.is_empty() {
                self.line(&rest[..nl], sink);
            } else {
                self.pending.extend_from_slice(&rest[..nl]);
                let line = std::mem::take(&mut self.pending);
                self.line(&line, sink);
            }
            rest = &rest[nl + 1..];
        }
        if self.pending.len() + rest.len() > MAX_LINE_BYTES {
            tracing::warn!(
                bytes = self.pending.len() + rest.len(),
                "an agent output line is too long; dropped"
            );
            self.pending.clear();
            self.stray_lines += 1;
            self.skipping_line = true;
            return;
        }
        self.pending.extend_from_slice(rest);
    }

    /// End of stdout. A last line without its newline is used when it is a whole JSON object;
    /// otherwise it was cut off: it is dropped and its size returned.
    pub fn finish(&mut self, sink: &mut TextSink<'_>) -> Option<usize> {
        let rest = std::mem::take(&mut self.pending);
        let text = String::from_utf8_lossy(&rest);
        if text.trim().is_empty() {
            return None;
        }
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(v) if v.is_object() => {
                self.value(&v, sink);
                None
            }
            _ => Some(rest.len()),
        }
    }

    fn line(&mut self, raw: &[u8], sink: &mut TextSink<'_>) {
        let text = String::from_utf8_lossy(raw);
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(v) if v.is_object() => self.value(&v, sink),
            _ => {
                self.stray_lines += 1;
                let shown: String = trimmed.chars().take(200).collect();
                tracing::warn!(line = %shown, "agent output line is not a JSON event; ignored");
            }
        }
    }

    fn value(&mut self, v: &Value, sink: &mut TextSink<'_>) {
        let mut events = std::mem::take(&mut self.scratch);
        self.parser.line(v, &mut events);
        for event in events.drain(..) {
            self.apply(event, sink);
        }
        self.scratch = events;
    }

    fn apply(&mut self, event: Event, sink: &mut TextSink<'_>) {
        match event {
            Event::Session(id) => {
                if id.is_empty() || self.report.session_id.as_deref() == Some(id.as_str()) {
                    return;
                }
                self.report.session_id = Some(id.clone());
                self.tell(AgentActivity::Session(id));
            }
            Event::Break => self.break_pending = true,
            Event::Text(text) => self.text(&text, sink),
            Event::Block(text) => {
                self.break_pending = true;
                self.text(&text, sink);
            }
            Event::ToolUse { id, name, input } => {
                let text = std::mem::take(&mut sink.text);
                self.break_pending = false;
                let call = ToolCall {
                    id,
                    name,
                    arguments: input,
                };
                self.tell(AgentActivity::Call {
                    text: text.clone(),
                    call: call.clone(),
                });
                self.open.push((call, text));
            }
            Event::ToolResult { id, output, is_error } => {
                let Some(i) = self.open.iter().position(|(c, _)| c.id == id) else {
                    tracing::debug!(call = %id, "result of a call the agent did not announce; ignored");
                    return;
                };
                let (call, text) = self.open.remove(i);
                self.complete(call, text, output, is_error);
            }
            Event::Usage(u) => self.usage = Some(u),
            Event::Cost(c) => self.report.cost_usd = Some(c),
            Event::Warning(m) => tracing::info!(message = %m, "the agent reported a problem"),
            Event::Failure(m) => self.failure = Some(m),
            Event::Done { error, result_text } => {
                if error.is_none()
                    && sink.text.trim().is_empty()
                    && let Some(t) = result_text.filter(|t| !t.trim().is_empty())
                {
                    sink.push(&t);
                }
                self.outcome = Some(match error {
                    Some(e) => Err(e),
                    None => Ok(()),
                });
                if let Some(control) = &self.control {
                    let _ = control.send(Control::Ended);
                }
            }
            Event::Control(line) => match &self.control {
                Some(control) => {
                    let _ = control.send(Control::Request(line));
                }
                None => tracing::debug!("a control request from an agent nobody answers; ignored"),
            },
        }
    }

    fn text(&mut self, text: &str, sink: &mut TextSink<'_>) {
        if text.is_empty() {
            return;
        }
        if self.break_pending && !sink.text.trim().is_empty() && !sink.text.ends_with("\n\n") {
            sink.push(if sink.text.ends_with('\n') { "\n" } else { "\n\n" });
        }
        self.break_pending = false;
        sink.push(text);
    }

    fn complete(&mut self, call: ToolCall, text: String, output: String, is_error: bool) {
        self.tell(AgentActivity::Result {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: output.clone(),
            is_error,
        });
        self.report.steps.push(AgentStep {
            text,
            call,
            result: output,
            is_error,
        });
    }

    /// Calls still waiting when the agent ended get `why` as their (error) result, so every
    /// call shown has one.
    pub fn close_open(&mut self, why: &str) {
        for (call, text) in std::mem::take(&mut self.open) {
            self.complete(call, text, why.to_string(), true);
        }
    }
}

/// A JSON value's string field (`""` when absent or not a string).
pub(crate) fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A token count that may be absent, negative or fractional in someone else's JSON.
pub(crate) fn count(v: &Value, key: &str) -> u64 {
    match v.get(key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f > 0.0).map(|f| f as u64))
            .unwrap_or(0),
        _ => 0,
    }
}

/// Compact JSON text of a call's arguments (`{}` when absent).
pub(crate) fn arguments(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "{}".to_string(),
        Some(v) => serde_json::to_string(v).unwrap_or_else(|_| "{}".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(format: AgentFormat, input: &str, chunk: usize) -> (AgentTurn, String, Vec<String>) {
        let mut deltas = Vec::new();
        let mut forward = |d: &str| deltas.push(d.to_string());
        let mut sink = TextSink::new(&mut forward);
        let mut turn = AgentTurn::new(format, None).unwrap();
        for piece in input.as_bytes().chunks(chunk.max(1)) {
            turn.push_bytes(piece, &mut sink);
        }
        let cut = turn.finish(&mut sink);
        assert_eq!(cut, None, "nothing cut");
        let text = sink.text;
        (turn, text, deltas)
    }

    #[test]
    fn lines_split_anywhere_parse_the_same() {
        let input = concat!(
            "{\"type\":\"init\",\"session_id\":\"s-1\"}\n",
            "not json at all\n",
            "\n",
            "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"h\u{e9}llo \",\"delta\":true}\r\n",
            "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"world\",\"delta\":true}\n",
            "{\"type\":\"result\",\"status\":\"success\",\"stats\":{\"input_tokens\":5,\"output_tokens\":2}}"
        );
        for chunk in [1, 2, 3, 7, 1000] {
            let (turn, text, _) = run(AgentFormat::GeminiStreamJson, input, chunk);
            assert_eq!(text, "h\u{e9}llo world", "chunk {chunk}");
            assert_eq!(turn.report.session_id.as_deref(), Some("s-1"));
            assert_eq!(turn.outcome, Some(Ok(())));
            assert_eq!(turn.stray_lines, 1);
            assert_eq!(turn.usage, Some(Usage::new(5, 2)));
        }
    }

    #[test]
    fn an_over_long_line_is_dropped_whole_and_counted_once() {
        let mut forward = |_: &str| {};
        let mut sink = TextSink::new(&mut forward);
        let mut turn = AgentTurn::new(AgentFormat::GeminiStreamJson, None).unwrap();
        turn.push_bytes(&vec![b'x'; MAX_LINE_BYTES + 1], &mut sink);
        // The same line goes on in the next read, then a real event follows.
        turn.push_bytes(
            b"\"tail\":1}\n{\"type\":\"init\",\"session_id\":\"s-2\"}\n",
            &mut sink,
        );
        assert_eq!(turn.stray_lines, 1, "the line's rest is not a second stray line");
        assert_eq!(turn.report.session_id.as_deref(), Some("s-2"));
    }

    #[test]
    fn a_cut_last_line_is_reported_not_parsed() {
        let mut forward = |_: &str| {};
        let mut sink = TextSink::new(&mut forward);
        let mut turn = AgentTurn::new(AgentFormat::CodexJson, None).unwrap();
        turn.push_bytes(
            b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"item.comp",
            &mut sink,
        );
        assert_eq!(turn.finish(&mut sink), Some(18));
        assert_eq!(turn.report.session_id.as_deref(), Some("t"));
        assert_eq!(turn.outcome, None);
    }

    #[test]
    fn resume_flags_per_format() {
        let args: Vec<String> = ["exec", "--json", "-m", "m", "-"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            resume_args(AgentFormat::CodexJson, &args, "T"),
            ["exec", "--json", "-m", "m", "resume", "T", "-"]
        );
        assert_eq!(
            resume_args(AgentFormat::CodexJson, &args[..4], "T"),
            ["exec", "--json", "-m", "m", "resume", "T", "-"]
        );
        assert_eq!(
            resume_args(AgentFormat::ClaudeStreamJson, &args[..1], "S"),
            ["exec", "--resume", "S"]
        );
        assert_eq!(resume_args(AgentFormat::Text, &args[..1], "S"), ["exec"]);
    }

    #[test]
    fn auth_and_unknown_session_wording() {
        assert!(looks_like_auth_failure("Invalid API key · Please run /login"));
        assert!(looks_like_auth_failure("unexpected status 401 Unauthorized"));
        assert!(looks_like_auth_failure("request failed with status 401"));
        assert!(!looks_like_auth_failure("test failed at line 401 of parser.rs"));
        assert!(looks_like_auth_failure("[API Error: API_KEY_INVALID]"));
        assert!(!looks_like_auth_failure("tests failed"));
        assert!(looks_like_unknown_session(
            "No conversation found with session ID: 280b366b"
        ));
        assert!(looks_like_unknown_session(
            "Error: No saved session found with ID x"
        ));
        assert!(looks_like_unknown_session(
            "Error resuming session: Invalid session identifier \"x\"."
        ));
        assert!(!looks_like_unknown_session("Invalid API key"));
    }
}
