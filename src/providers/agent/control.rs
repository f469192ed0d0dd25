//! Claude Code's control protocol (what its Agent SDKs speak): with `--input-format stream-json
//! --permission-prompt-tool stdio`, the prompt goes to stdin as a `user` message line and stdin
//! stays open; before running a tool it would ask the user about (Bash, Edit, Write, ...) Claude
//! Code writes a `control_request` line (`subtype: can_use_tool`, `tool_name`, `input`,
//! `tool_use_id`) on stdout and waits for the `control_response` line on stdin: `behavior:
//! allow` with `updatedInput`, or `behavior: deny` with a `message` its model reads as the
//! call's result. A request huddle does not serve gets an `error` response. Like the SDKs,
//! huddle sends `initialize` first (no hooks, no agents) and closes stdin once the `result`
//! line has come. Tools Claude Code runs without asking (reading in its working directory)
//! send no request.

use serde_json::{Value, json};

use super::str_field;
use crate::tools::Decision;

/// The arguments that turn the protocol on (each added unless the command has it already).
const ARGS: [(&str, &str); 2] = [
    ("--input-format", "stream-json"),
    ("--permission-prompt-tool", "stdio"),
];

/// `args` with the protocol's flags.
pub fn with_control_args(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    for (flag, value) in ARGS {
        if !args
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        {
            out.push(flag.to_string());
            out.push(value.to_string());
        }
    }
    out
}

/// The `initialize` request the SDKs send before the prompt (its answer is not waited for).
pub fn initialize_line() -> String {
    line(json!({
        "type": "control_request",
        "request_id": "huddle_init",
        "request": {"subtype": "initialize", "hooks": null},
    }))
}

/// The prompt as the SDKs write it.
pub fn user_line(prompt: &str) -> String {
    line(json!({
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": null,
    }))
}

/// What a `control_request` line asks.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// May the tool run with this input?
    CanUseTool {
        request_id: Value,
        tool: String,
        input: Value,
        /// The model's call id (the request's id when the agent gave none).
        call_id: String,
    },
    /// Something huddle does not serve (`hook_callback`, `mcp_message`, ...): answered with an
    /// error.
    Unsupported { request_id: Value, subtype: String },
    /// No request id to answer, or not a request at all.
    Malformed(String),
}

/// Reads a `control_request` line.
pub fn request(v: &Value) -> Request {
    let request_id = match v.get("request_id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => return Request::Malformed("a control request without a request_id".into()),
    };
    let body = v.get("request").unwrap_or(&Value::Null);
    let subtype = str_field(body, "subtype");
    if subtype != "can_use_tool" {
        let subtype = if subtype.is_empty() { "(none)" } else { subtype };
        return Request::Unsupported {
            request_id,
            subtype: subtype.chars().take(100).collect(),
        };
    }
    let tool = str_field(body, "tool_name");
    let input = body.get("input").filter(|i| i.is_object());
    let (false, Some(input)) = (tool.is_empty(), input) else {
        return Request::Unsupported {
            request_id,
            subtype: "can_use_tool without a tool_name and an input object".into(),
        };
    };
    let call_id = match str_field(body, "tool_use_id") {
        "" => id_text(&request_id),
        id => id.to_string(),
    };
    Request::CanUseTool {
        request_id,
        tool: tool.to_string(),
        input: input.clone(),
        call_id,
    }
}

fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The answer to a `can_use_tool` request: allowed with its input as it was, or denied with
/// `reason` for the model (a denial that stops the run also interrupts the agent).
pub fn answer(request_id: &Value, decision: Decision, reason: Option<&str>, input: &Value) -> String {
    let response = match decision {
        Decision::ApproveOnce | Decision::ApproveForSession => {
            json!({"behavior": "allow", "updatedInput": input})
        }
        Decision::Deny | Decision::DenyAndStop => {
            let mut deny = json!({
                "behavior": "deny",
                "message": reason.unwrap_or(crate::tools::approval::DENIED_BY_USER),
            });
            if decision == Decision::DenyAndStop {
                deny["interrupt"] = json!(true);
            }
            deny
        }
    };
    line(json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }))
}

/// The answer to a request huddle does not serve.
pub fn error(request_id: &Value, message: &str) -> String {
    line(json!({
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": message},
    }))
}

fn line(v: Value) -> String {
    let mut text = v.to_string();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Value {
        let v: Value = serde_json::from_str(line.trim_end()).unwrap();
        assert!(
            line.ends_with('\n') && !line.trim_end().contains('\n'),
            "{line:?}"
        );
        v
    }

    #[test]
    fn the_flags_are_added_once() {
        let args: Vec<String> = ["-p", "--input-format", "stream-json"].map(String::from).to_vec();
        assert_eq!(
            with_control_args(&args),
            [
                "-p",
                "--input-format",
                "stream-json",
                "--permission-prompt-tool",
                "stdio"
            ]
        );
        let again = with_control_args(&with_control_args(&[]));
        assert_eq!(again.len(), 4, "{again:?}");
    }

    #[test]
    fn a_can_use_tool_request_is_read_and_answered() {
        let v: Value = serde_json::from_str(
            r#"{"type":"control_request","request_id":"r-1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"touch x"},"permission_suggestions":[],"tool_use_id":"toolu_01"}}"#,
        )
        .unwrap();
        let Request::CanUseTool {
            request_id,
            tool,
            input,
            call_id,
        } = request(&v)
        else {
            panic!("{:?}", request(&v));
        };
        assert_eq!((tool.as_str(), call_id.as_str()), ("Bash", "toolu_01"));
        let allow = parsed(&answer(&request_id, Decision::ApproveOnce, None, &input));
        assert_eq!(
            allow,
            json!({"type":"control_response","response":{"subtype":"success","request_id":"r-1",
                "response":{"behavior":"allow","updatedInput":{"command":"touch x"}}}})
        );
        let deny = parsed(&answer(
            &request_id,
            Decision::Deny,
            Some("no writes\nhere"),
            &input,
        ));
        assert_eq!(
            deny["response"]["response"],
            json!({"behavior":"deny","message":"no writes\nhere"})
        );
        let stop = parsed(&answer(&request_id, Decision::DenyAndStop, None, &input));
        assert_eq!(stop["response"]["response"]["interrupt"], json!(true));
        assert_eq!(
            stop["response"]["response"]["message"],
            json!(crate::tools::approval::DENIED_BY_USER)
        );
    }

    #[test]
    fn other_and_broken_requests_are_not_allowed() {
        let read = |text: &str| request(&serde_json::from_str(text).unwrap());
        assert_eq!(
            read(r#"{"type":"control_request","request_id":7,"request":{"subtype":"hook_callback"}}"#),
            Request::Unsupported {
                request_id: json!(7),
                subtype: "hook_callback".into()
            }
        );
        for broken in [
            r#"{"type":"control_request","request_id":"a","request":{"subtype":"can_use_tool","tool_name":"Bash"}}"#,
            r#"{"type":"control_request","request_id":"a","request":{"subtype":"can_use_tool","input":{}}}"#,
            r#"{"type":"control_request","request_id":"a","request":{"subtype":"can_use_tool","tool_name":"Bash","input":"x"}}"#,
            r#"{"type":"control_request","request_id":"a"}"#,
        ] {
            assert!(matches!(read(broken), Request::Unsupported { .. }), "{broken}");
        }
        for no_id in [
            r#"{"type":"control_request","request":{"subtype":"can_use_tool"}}"#,
            r#"{"type":"control_request","request_id":null}"#,
            r#"{"type":"control_request","request_id":{"x":1}}"#,
        ] {
            assert!(matches!(read(no_id), Request::Malformed(_)), "{no_id}");
        }
        let err = parsed(&error(&json!(7), "not served"));
        assert_eq!(
            err,
            json!({"type":"control_response","response":{"subtype":"error","request_id":7,"error":"not served"}})
        );
        // No id: the call id falls back to the request's.
        let v = read(
            r#"{"type":"control_request","request_id":3,"request":{"subtype":"can_use_tool","tool_name":"Write","input":{}}}"#,
        );
        assert!(
            matches!(v, Request::CanUseTool { ref call_id, .. } if call_id == "3"),
            "{v:?}"
        );
    }

    #[test]
    fn the_prompt_and_initialize_lines_have_the_sdk_shape() {
        let user = parsed(&user_line("line one\nline \"two\""));
        assert_eq!(
            user,
            json!({"type":"user","session_id":"","message":{"role":"user","content":"line one\nline \"two\""},"parent_tool_use_id":null})
        );
        let init = parsed(&initialize_line());
        assert_eq!(init["request"]["subtype"], "initialize");
        assert_eq!(init["type"], "control_request");
    }
}
