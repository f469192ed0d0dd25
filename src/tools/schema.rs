//! Checking a model's tool arguments before the tool sees them: valid JSON, an object, the
//! required properties present and of the declared types. A mismatch goes back to the model as
//! a tool error it can correct; it never reaches the tool.
//!
//! Deliberately the common subset of JSON Schema (`type`, `properties`, `required`, `enum`,
//! `items`): tools validate the rest themselves.

use serde_json::{Map, Value};

/// The arguments as an object, or what is wrong with them (for the model).
pub fn parse_arguments(raw: &str, schema: &Value) -> Result<Map<String, Value>, String> {
    let raw = raw.trim();
    // Some models send no arguments at all for a tool without parameters.
    let value: Value = if raw.is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(raw)
            .map_err(|e| format!("the arguments are not valid JSON ({e}); send one JSON object"))?
    };
    if !value.is_object() {
        return Err(format!(
            "the arguments must be a JSON object, not {}",
            type_name(&value)
        ));
    }
    check(&value, schema, "arguments")?;
    match value {
        Value::Object(args) => Ok(args),
        _ => Ok(Map::new()),
    }
}

/// Checks `value` against `schema` at `path`; the first problem found.
pub fn check(value: &Value, schema: &Value, path: &str) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Ok(());
    };
    if let Some(expected) = schema.get("type")
        && !type_matches(value, expected)
    {
        return Err(format!(
            "{path} must be {}, not {}",
            describe_type(expected),
            type_name(value)
        ));
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(format!("{path} must be one of {}", list.join(", ")));
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(name) {
                        return Err(format!("{path} is missing the required property `{name}`"));
                    }
                }
            }
            if let Some(Value::Object(properties)) = schema.get("properties") {
                for (name, sub) in properties {
                    if let Some(v) = map.get(name) {
                        check(v, sub, &format!("{path}.{name}"))?;
                    }
                }
                if schema.get("additionalProperties") == Some(&Value::Bool(false))
                    && let Some(extra) = map.keys().find(|k| !properties.contains_key(*k))
                {
                    return Err(format!("{path} has an unknown property `{extra}`"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{path}[{i}]"))?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn type_matches(value: &Value, expected: &Value) -> bool {
    match expected {
        Value::String(t) => is_type(value, t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| is_type(value, t)),
        _ => true,
    }
}

fn is_type(value: &Value, t: &str) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        // An unknown type name is the schema's problem, not the model's.
        _ => true,
    }
}

fn describe_type(expected: &Value) -> String {
    match expected {
        Value::String(t) => format!("{} {t}", article(t)),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.to_string(),
    }
}

fn article(t: &str) -> &'static str {
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "repo_path": {"type": "string"},
                "max_count": {"type": "integer"},
                "mode": {"enum": ["short", "long"]},
                "paths": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["repo_path"]
        })
    }

    #[test]
    fn good_arguments_pass_and_come_back_as_an_object() {
        let args = parse_arguments(
            r#"{"repo_path": "/r", "max_count": 3, "paths": ["a"]}"#,
            &schema(),
        )
        .unwrap();
        assert_eq!(args["max_count"], json!(3));
        assert!(
            parse_arguments("", &json!({"type": "object"}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn each_mismatch_is_named_for_the_model() {
        let s = schema();
        let err = |raw: &str| parse_arguments(raw, &s).unwrap_err();
        assert!(err(r#"{"repo_path": "/r"#).contains("not valid JSON"));
        assert!(err("[1]").contains("must be a JSON object, not an array"));
        assert!(err("{}").contains("missing the required property `repo_path`"));
        assert!(err(r#"{"repo_path": 5}"#).contains("arguments.repo_path must be a string, not a number"));
        assert!(err(r#"{"repo_path": "r", "max_count": 1.5}"#).contains("must be an integer"));
        assert!(err(r#"{"repo_path": "r", "mode": "x"}"#).contains("one of \"short\", \"long\""));
        assert!(err(r#"{"repo_path": "r", "paths": [1]}"#).contains("arguments.paths[0] must be a string"));
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert!(
            parse_arguments(r#"{"x": 1}"#, &closed)
                .unwrap_err()
                .contains("unknown property `x`")
        );
    }
}
