//! Gemini CLI: `gemini --output-format stream-json` (`packages/core/src/output/types.ts`).
//!
//! Lines: `init` (`session_id`, `model`), `message` (`role` user or assistant, `content`,
//! `delta: true` for streamed pieces), `tool_use` (`tool_name`, `tool_id`, `parameters`),
//! `tool_result` (`tool_id`, `status` success or error, `output`, `error.message`), `error`
//! (non-fatal: `severity`, `message`) and the last line `result` (`status`, `error`, `stats`
//! with `input_tokens` and `output_tokens`).

use serde_json::Value;

use super::{Event, LineParser, arguments, count, str_field};
use crate::model::Usage;

#[derive(Default)]
pub(super) struct Gemini;

impl LineParser for Gemini {
    fn line(&mut self, v: &Value, out: &mut Vec<Event>) {
        match str_field(v, "type") {
            "init" => out.push(Event::Session(str_field(v, "session_id").to_string())),
            "message" if str_field(v, "role") == "assistant" => {
                let text = str_field(v, "content").to_string();
                if v.get("delta").and_then(Value::as_bool).unwrap_or(false) {
                    out.push(Event::Text(text));
                } else {
                    out.push(Event::Block(text));
                }
            }
            "tool_use" => out.push(Event::ToolUse {
                id: str_field(v, "tool_id").to_string(),
                name: str_field(v, "tool_name").to_string(),
                input: arguments(v.get("parameters")),
            }),
            "tool_result" => {
                let failed = str_field(v, "status") != "success";
                let error = v.get("error").map(|e| str_field(e, "message")).unwrap_or("");
                let output = match (str_field(v, "output"), failed) {
                    ("", true) => error.to_string(),
                    (o, _) => o.to_string(),
                };
                out.push(Event::ToolResult {
                    id: str_field(v, "tool_id").to_string(),
                    output,
                    is_error: failed,
                });
            }
            "error" => out.push(Event::Warning(str_field(v, "message").to_string())),
            "result" => {
                if let Some(stats) = v.get("stats").filter(|s| s.is_object()) {
                    // `cached` (when given) is a part of `input_tokens`, as in Gemini's own usage.
                    let input = count(stats, "input_tokens");
                    out.push(Event::Usage(Usage {
                        cache_read_tokens: count(stats, "cached").min(input),
                        ..Usage::new(input, count(stats, "output_tokens"))
                    }));
                }
                let error = (str_field(v, "status") == "error").then(|| {
                    let m = v.get("error").map(|e| str_field(e, "message")).unwrap_or("");
                    if m.trim().is_empty() {
                        "the agent reported an error".to_string()
                    } else {
                        m.to_string()
                    }
                });
                out.push(Event::Done {
                    error,
                    result_text: None,
                });
            }
            _ => {}
        }
    }
}
