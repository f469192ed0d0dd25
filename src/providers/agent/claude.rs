//! Claude Code: `claude -p --output-format stream-json --verbose [--include-partial-messages]`.
//!
//! Lines: `system` (`init` carries `session_id`), `assistant` (a whole Anthropic message: `text`
//! and `tool_use` blocks), `user` (the `tool_result` blocks of the agent's tools),
//! `stream_event` (with `--include-partial-messages`: the raw Anthropic stream events, text as
//! `content_block_delta`/`text_delta`), and the last line `result` (`subtype`, `is_error`,
//! `result`, `session_id`, `total_cost_usd`, `usage`, `errors`). Lines of a sub-agent
//! (`parent_tool_use_id` set) are not the answer and are skipped. Text streamed as deltas is not
//! repeated when the whole message arrives. A `control_request` line (the agent asks before
//! running a tool, see [`super::control`]) is handed on whole.

use std::collections::HashSet;

use serde_json::Value;

use super::{Event, LineParser, arguments, count, str_field};
use crate::model::Usage;

#[derive(Default)]
pub(super) struct Claude {
    /// Ids of messages whose text arrived as deltas.
    streamed: HashSet<String>,
    /// The message the stream events are about.
    current: Option<String>,
    /// Deltas arrived for a message without an id.
    streamed_anonymous: bool,
}

impl LineParser for Claude {
    fn line(&mut self, v: &Value, out: &mut Vec<Event>) {
        let sub_agent = v.get("parent_tool_use_id").is_some_and(|p| !p.is_null());
        match str_field(v, "type") {
            "system" if str_field(v, "subtype") == "init" => {
                out.push(Event::Session(str_field(v, "session_id").to_string()));
            }
            "stream_event" if !sub_agent => self.stream_event(v.get("event").unwrap_or(&Value::Null), out),
            "assistant" if !sub_agent => self.assistant(v.get("message").unwrap_or(&Value::Null), out),
            "user" if !sub_agent => tool_results(v.get("message").unwrap_or(&Value::Null), out),
            "result" => result(v, out),
            // It asks before running a tool (with `--permission-prompt-tool stdio`).
            "control_request" => out.push(Event::Control(v.clone())),
            // A usage limit the agent hit: its reset time, for the engine to wait out (the
            // result line that follows, if any, says the same in words).
            "rate_limit_event" => {
                let info = v.get("rate_limit_info").unwrap_or(&Value::Null);
                if str_field(info, "status") == "rejected" {
                    let resets = info.get("resetsAt").and_then(Value::as_f64).unwrap_or(0.0);
                    out.push(Event::Failure(format!(
                        "usage limit reached|{} ({} limit, rate_limit_event)",
                        resets as u64,
                        str_field(info, "rateLimitType")
                    )));
                }
            }
            _ => {}
        }
    }
}

impl Claude {
    fn stream_event(&mut self, ev: &Value, out: &mut Vec<Event>) {
        match str_field(ev, "type") {
            "message_start" => {
                self.current = ev
                    .get("message")
                    .map(|m| str_field(m, "id"))
                    .filter(|id| !id.is_empty())
                    .map(str::to_string);
                out.push(Event::Break);
            }
            "content_block_start" => {
                let block = ev.get("content_block").unwrap_or(&Value::Null);
                if str_field(block, "type") == "text" {
                    out.push(Event::Break);
                }
            }
            "content_block_delta" => {
                let delta = ev.get("delta").unwrap_or(&Value::Null);
                if str_field(delta, "type") == "text_delta" {
                    match &self.current {
                        Some(id) => {
                            self.streamed.insert(id.clone());
                        }
                        None => self.streamed_anonymous = true,
                    }
                    out.push(Event::Text(str_field(delta, "text").to_string()));
                }
            }
            _ => {}
        }
    }

    fn assistant(&mut self, message: &Value, out: &mut Vec<Event>) {
        let streamed = match message.get("id").and_then(Value::as_str) {
            Some(id) => self.streamed.contains(id),
            None => std::mem::take(&mut self.streamed_anonymous),
        };
        let Some(blocks) = message.get("content").and_then(Value::as_array) else {
            return;
        };
        for block in blocks {
            match str_field(block, "type") {
                "text" if !streamed => out.push(Event::Block(str_field(block, "text").to_string())),
                "tool_use" => out.push(Event::ToolUse {
                    id: str_field(block, "id").to_string(),
                    name: str_field(block, "name").to_string(),
                    input: arguments(block.get("input")),
                }),
                _ => {}
            }
        }
    }
}

fn tool_results(message: &Value, out: &mut Vec<Event>) {
    let Some(blocks) = message.get("content").and_then(Value::as_array) else {
        return;
    };
    for block in blocks.iter().filter(|b| str_field(b, "type") == "tool_result") {
        out.push(Event::ToolResult {
            id: str_field(block, "tool_use_id").to_string(),
            output: content_text(block.get("content")),
            is_error: block.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        });
    }
}

/// A tool result's content: a string, or blocks (their text; other kinds named).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match str_field(b, "type") {
                "text" => str_field(b, "text").to_string(),
                other => format!("[{}]", if other.is_empty() { "content" } else { other }),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn result(v: &Value, out: &mut Vec<Event>) {
    out.push(Event::Session(str_field(v, "session_id").to_string()));
    if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
        // Input counts what the model read: new tokens plus cache writes and reads.
        let read = count(usage, "cache_read_input_tokens");
        let write = count(usage, "cache_creation_input_tokens");
        out.push(Event::Usage(Usage {
            input_tokens: count(usage, "input_tokens")
                .saturating_add(write)
                .saturating_add(read),
            output_tokens: count(usage, "output_tokens"),
            cache_read_tokens: read,
            cache_write_tokens: write,
        }));
    }
    if let Some(cost) = v.get("total_cost_usd").and_then(Value::as_f64) {
        out.push(Event::Cost(cost));
    }
    let subtype = str_field(v, "subtype");
    let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false)
        || (!subtype.is_empty() && subtype != "success");
    let text = str_field(v, "result");
    let error = is_error.then(|| {
        let errors: Vec<&str> = v
            .get("errors")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !errors.is_empty() {
            errors.join("; ")
        } else if !text.trim().is_empty() {
            text.to_string()
        } else {
            format!(
                "the agent stopped ({})",
                if subtype.is_empty() { "error" } else { subtype }
            )
        }
    });
    out.push(Event::Done {
        error,
        result_text: (!is_error).then(|| text.to_string()),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &[&str]) -> Vec<Event> {
        let mut p = Claude::default();
        let mut out = Vec::new();
        for l in lines {
            p.line(&serde_json::from_str(l).unwrap(), &mut out);
        }
        out
    }

    #[test]
    fn streamed_text_is_not_repeated_by_the_whole_message() {
        let out = events(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]}}"#,
            r#"{"type":"assistant","parent_tool_use_id":"t9","message":{"id":"msg_2","content":[{"type":"text","text":"sub-agent"}]}}"#,
        ]);
        let texts: Vec<&Event> = out
            .iter()
            .filter(|e| matches!(e, Event::Text(_) | Event::Block(_)))
            .collect();
        assert_eq!(texts, [&Event::Text("Hi".into())]);
        assert!(out.contains(&Event::ToolUse {
            id: "t1".into(),
            name: "Read".into(),
            input: r#"{"file_path":"a"}"#.into()
        }));
    }

    #[test]
    fn error_results_say_why() {
        let out = events(&[
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: x"]}"#,
            r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#,
        ]);
        let errors: Vec<Option<String>> = out
            .into_iter()
            .filter_map(|e| match e {
                Event::Done { error, .. } => Some(error),
                _ => None,
            })
            .collect();
        assert_eq!(
            errors,
            [
                Some("No conversation found with session ID: x".to_string()),
                Some("the agent stopped (error_max_turns)".to_string())
            ]
        );
    }
}
