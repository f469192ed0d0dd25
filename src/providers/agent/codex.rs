//! Codex: `codex exec --json` (codex-rs `exec/src/exec_events.rs`).
//!
//! Lines: `thread.started` (`thread_id`), `turn.started`, `item.started` / `item.updated` /
//! `item.completed` with an `item` (`agent_message` text, `reasoning`, `command_execution`,
//! `file_change`, `mcp_tool_call`, `web_search`, `todo_list`, `error`), then `turn.completed`
//! (`usage`) or `turn.failed` (`error.message`); a top-level `error` line is an error the stream
//! reports. Tool items become calls (when started) and results (when completed); item ids
//! (`item_0`, …) restart with every run, so they are made unique per run.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{Event, LineParser, arguments, count, str_field};
use crate::model::Usage;

pub(super) struct Codex {
    /// Makes the run's item ids unique in a transcript.
    run: String,
    /// Tool items whose call was already announced.
    started: HashSet<String>,
}

impl Codex {
    pub fn new() -> Codex {
        Codex {
            run: format!("{:08x}", fastrand::u32(..)),
            started: HashSet::new(),
        }
    }

    fn call_id(&self, item: &Value) -> String {
        format!("{}-{}", str_field(item, "id"), self.run)
    }

    fn item_started(&mut self, item: &Value, out: &mut Vec<Event>) {
        if let Some((name, input)) = call_of(item)
            && str_field(item, "type") != "web_search"
        {
            self.started.insert(str_field(item, "id").to_string());
            out.push(Event::ToolUse {
                id: self.call_id(item),
                name,
                input,
            });
        }
    }

    fn item_completed(&mut self, item: &Value, out: &mut Vec<Event>) {
        match str_field(item, "type") {
            "agent_message" => out.push(Event::Block(str_field(item, "text").to_string())),
            "error" => out.push(Event::Warning(str_field(item, "message").to_string())),
            _ => {
                let Some((name, input)) = call_of(item) else {
                    return;
                };
                if !self.started.remove(str_field(item, "id")) {
                    out.push(Event::ToolUse {
                        id: self.call_id(item),
                        name,
                        input,
                    });
                }
                let (output, is_error) = result_of(item);
                out.push(Event::ToolResult {
                    id: self.call_id(item),
                    output,
                    is_error,
                });
            }
        }
    }
}

impl LineParser for Codex {
    fn line(&mut self, v: &Value, out: &mut Vec<Event>) {
        let item = v.get("item").unwrap_or(&Value::Null);
        match str_field(v, "type") {
            "thread.started" => out.push(Event::Session(str_field(v, "thread_id").to_string())),
            "item.started" => self.item_started(item, out),
            "item.completed" => self.item_completed(item, out),
            "turn.completed" => {
                if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
                    // `input_tokens` counts the cached ones too (OpenAI's way).
                    let input = count(usage, "input_tokens");
                    out.push(Event::Usage(Usage {
                        cache_read_tokens: count(usage, "cached_input_tokens").min(input),
                        ..Usage::new(input, count(usage, "output_tokens"))
                    }));
                }
                out.push(Event::Done {
                    error: None,
                    result_text: None,
                });
            }
            "turn.failed" => {
                let error = v.get("error").unwrap_or(&Value::Null);
                out.push(Event::Done {
                    error: Some(message_or(error, "the turn failed")),
                    result_text: None,
                });
            }
            "error" => out.push(Event::Failure(message_or(v, "the agent reported an error"))),
            _ => {}
        }
    }
}

fn message_or(v: &Value, fallback: &str) -> String {
    let m = str_field(v, "message");
    if m.trim().is_empty() {
        fallback.to_string()
    } else {
        m.to_string()
    }
}

/// The call a tool item stands for: its name and arguments.
fn call_of(item: &Value) -> Option<(String, String)> {
    let call = match str_field(item, "type") {
        "command_execution" => (
            "shell".to_string(),
            json!({ "command": str_field(item, "command") }).to_string(),
        ),
        "file_change" => (
            "apply_patch".to_string(),
            json!({ "changes": item.get("changes").cloned().unwrap_or(Value::Null) }).to_string(),
        ),
        "mcp_tool_call" => (
            format!("{}__{}", str_field(item, "server"), str_field(item, "tool")),
            arguments(item.get("arguments")),
        ),
        "web_search" => (
            "web_search".to_string(),
            json!({ "query": str_field(item, "query") }).to_string(),
        ),
        _ => return None,
    };
    Some(call)
}

/// A completed tool item's result text and whether it failed.
fn result_of(item: &Value) -> (String, bool) {
    let status = str_field(item, "status");
    match str_field(item, "type") {
        "command_execution" => {
            let exit = item.get("exit_code").and_then(Value::as_i64);
            let output = str_field(item, "aggregated_output").to_string();
            let failed = matches!(status, "failed" | "declined") || exit.is_some_and(|c| c != 0);
            let output = match (output.is_empty(), status, exit) {
                (true, "declined", _) => "declined".to_string(),
                (true, _, Some(code)) if code != 0 => format!("exit code {code}"),
                _ => output,
            };
            (output, failed)
        }
        "file_change" => {
            let lines: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .map(|changes| {
                    changes
                        .iter()
                        .map(|c| format!("{} {}", str_field(c, "kind"), str_field(c, "path")))
                        .collect()
                })
                .unwrap_or_default();
            (lines.join("\n"), status == "failed")
        }
        "mcp_tool_call" => {
            if let Some(error) = item.get("error").filter(|e| !e.is_null()) {
                return (message_or(error, "the tool failed"), true);
            }
            let result = item.get("result").unwrap_or(&Value::Null);
            let texts: Vec<&str> = result
                .get("content")
                .and_then(Value::as_array)
                .map(|blocks| blocks.iter().map(|b| str_field(b, "text")).collect())
                .unwrap_or_default();
            let text = if texts.iter().any(|t| !t.is_empty()) {
                texts.join("\n")
            } else {
                result
                    .get("structured_content")
                    .filter(|s| !s.is_null())
                    .map(Value::to_string)
                    .unwrap_or_default()
            };
            (text, status == "failed")
        }
        _ => (str_field(item, "query").to_string(), status == "failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_a_call_then_its_result() {
        let mut p = Codex::new();
        let mut out = Vec::new();
        for l in [
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"","exit_code":2,"status":"failed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"completed"}}"#,
        ] {
            p.line(&serde_json::from_str(l).unwrap(), &mut out);
        }
        let id1 = format!("item_1-{}", p.run);
        let id2 = format!("item_2-{}", p.run);
        assert_eq!(
            out,
            [
                Event::ToolUse {
                    id: id1.clone(),
                    name: "shell".into(),
                    input: r#"{"command":"ls"}"#.into()
                },
                Event::ToolResult {
                    id: id1,
                    output: "exit code 2".into(),
                    is_error: true
                },
                Event::ToolUse {
                    id: id2.clone(),
                    name: "apply_patch".into(),
                    input: r#"{"changes":[{"kind":"add","path":"a.txt"}]}"#.into()
                },
                Event::ToolResult {
                    id: id2,
                    output: "add a.txt".into(),
                    is_error: false
                },
            ]
        );
    }
}
