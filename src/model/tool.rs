//! Tool use as data: what a model may call, the calls it made and what came back. Stored in
//! transcripts (assistant messages carry their calls, `tool` messages their results) so a
//! restarted session sends the model exactly what it saw.

use serde::{Deserialize, Serialize};

/// A tool offered to a model. `name` is what the model sees (`<server>__<tool>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub input_schema: serde_json::Value,
}

pub fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// One call a model asked for, as it streamed it: `arguments` is the raw JSON text (it may be
/// invalid; the engine answers that with a tool error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (`call_…`, `toolu_…`), echoed with the result.
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: String,
}

/// What a `tool` transcript message records besides the text sent back to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultInfo {
    pub call_id: String,
    pub name: String,
    /// The result is an error (bad arguments, unknown tool, denied, the tool failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    #[serde(default)]
    pub duration_ms: u64,
    /// Bytes the tool returned, before the cap.
    #[serde(default)]
    pub size: u64,
}

/// Whether the model may, must not, or decides itself to call tools in this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    /// Tools stay declared (the history refers to them) but none may be called: the final
    /// answer after `max_tool_rounds`.
    None,
}
