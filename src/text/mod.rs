//! Text helpers shared by the TUI and the headless CLI.

pub mod sanitize;

/// What kind of JSON value this is, as a message names it (`a string`, `a number`...).
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
