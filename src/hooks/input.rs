//! The JSON a hook reads on stdin. Claude Code's field names where it has the same thing
//! (`session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`,
//! `tool_response`, `transcript_path`, `last_assistant_message`), huddle's own under their own
//! names (`team`, `member`, `group_id`, `run_id`, `mode`, `iteration`, `results`, `outcome`,
//! `worktree`). Absent fields are left out.

use serde::Serialize;

use super::config::HookEvent;

/// One event, as a hook sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HookInput {
    pub hook_event_name: &'static str,
    /// Claude Code's permission mode; huddle has one: `default`.
    pub permission_mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The session's transcript (JSON lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// Where the session works (its worktree or repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// The member's handle in its team (`reviewer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// Tool events: the tool as the model named it (`time__get_current_time`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool events: the call's arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// `post_tool_use`: what the call returned, `{ "text": …, "is_error": … }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<serde_json::Value>,
    /// `turn_finished`: the member's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
    /// `iteration_finished`: each worker's result, `{ "member": …, "text": … }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<serde_json::Value>,
    /// `run_finished`: how the run ended (`completed`, `failed`, `cancelled`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// `worktree_created`: `{ "path": …, "branch": …, "base_commit": …, "repo": … }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<serde_json::Value>,
}

impl HookInput {
    /// An input for `event`, everything else to be filled in.
    pub fn new(event: HookEvent) -> HookInput {
        HookInput {
            hook_event_name: event.wire_name(),
            permission_mode: "default",
            ..HookInput::default()
        }
    }

    /// The tool call of a tool event: its name, arguments (parsed when they are JSON, else the
    /// text as it came) and id.
    pub fn with_call(mut self, name: &str, arguments: &str, call_id: &str) -> HookInput {
        self.tool_name = Some(name.to_string());
        self.tool_input = Some(
            serde_json::from_str(arguments).unwrap_or_else(|_| serde_json::Value::String(arguments.into())),
        );
        self.tool_use_id = Some(call_id.to_string());
        self
    }

    /// The JSON text written to the hook's stdin (one line, then a newline).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_else(|_| "{}".into());
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pre_tool_use_input_has_claude_codes_fields() {
        let mut input = HookInput::new(HookEvent::PreToolUse).with_call(
            "time__get_current_time",
            "{\"timezone\":\"UTC\"}",
            "call_1",
        );
        input.session_id = Some("s1".into());
        input.cwd = Some("/repo".into());
        input.team = Some("Team".into());
        let v: serde_json::Value = serde_json::from_str(&input.to_json()).unwrap();
        assert_eq!(v["hook_event_name"], "PreToolUse");
        assert_eq!(v["tool_name"], "time__get_current_time");
        assert_eq!(v["tool_input"]["timezone"], "UTC");
        assert_eq!(v["tool_use_id"], "call_1");
        assert_eq!(v["permission_mode"], "default");
        assert_eq!(v["team"], "Team");
        assert!(
            v.get("tool_response").is_none(),
            "absent fields are left out: {v}"
        );
        let odd = HookInput::new(HookEvent::PostToolUse).with_call("x", "not json", "c");
        assert_eq!(odd.tool_input, Some(serde_json::Value::String("not json".into())));
    }
}
