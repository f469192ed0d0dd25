//! Reading `organization.json` text: what counts as an organization at all, which format
//! versions this build may touch, and repairing one bad number instead of discarding the file.
//!
//! A file is read in two steps: JSON into a `serde_json::Value` (syntax errors, trailing data),
//! then the typed organization from that value. When the typed step fails on a number that does
//! not fit its field (a negative token count, `max_iterations: 2^40`), the number is clamped into
//! the field's range (every value of that field, in one pass) and the step retried: one bad field
//! never discards the rest.

use serde_json::Value;

use crate::model::Organization;
use crate::text::json_kind;

/// The newest `organization.json` format this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// At most this many distinct fields are repaired; a file needing more is treated as corrupt.
const MAX_REPAIRS: usize = 64;

/// An organization file that parsed, and the fields that had to be repaired to read it.
#[derive(Debug)]
pub struct ParsedOrganization {
    pub org: Organization,
    /// One line per repaired field: where, what it was, what it became.
    pub repairs: Vec<String>,
}

/// Why a file's content cannot be used as an organization.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    /// Not JSON, or not a plausible organization: moved aside, the backup tried.
    #[error("{0}")]
    Corrupt(String),
    /// Written by a newer huddle: never rewritten by this one.
    #[error(
        "written by a newer huddle (format version {found}; this build reads version {FORMAT_VERSION} and older); it is left untouched: use the newer huddle, or move the file away to start over"
    )]
    TooNew { found: u64 },
}

/// Parses organization JSON; errors say where and which field.
pub fn parse(bytes: &[u8]) -> Result<ParsedOrganization, Unreadable> {
    // A BOM is what some editors put in front of UTF-8; it says nothing about the content.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| Unreadable::Corrupt(e.to_string()))?;
    check_shape(&value)?;
    let mut repairs = Vec::new();
    loop {
        let err = match serde_path_to_error::deserialize::<_, Organization>(&value) {
            Ok(org) => return Ok(ParsedOrganization { org, repairs }),
            Err(e) => e,
        };
        let at = err.path().to_string();
        let inner = err.into_inner().to_string();
        let repaired = (repairs.len() < MAX_REPAIRS)
            .then(|| repair_numbers(&mut value, &at, &inner))
            .flatten();
        match repaired {
            Some(what) => repairs.push(what),
            None if at.is_empty() || at == "." => return Err(Unreadable::Corrupt(inner)),
            None => return Err(Unreadable::Corrupt(format!("{at}: {inner}"))),
        }
    }
}

/// An organization is an object with a format version and lists of groups and sessions (as
/// every huddle has written it); `{}`, `[]` or `{"groups": []}` are not, however valid the JSON.
fn check_shape(value: &Value) -> Result<(), Unreadable> {
    let corrupt = |what: &str| Err(Unreadable::Corrupt(format!("not an organization: {what}")));
    let Some(top) = value.as_object() else {
        return corrupt(&format!("expected a JSON object, found {}", json_kind(value)));
    };
    match top.get("version") {
        None => return corrupt("no `version`"),
        Some(v) => match v.as_u64() {
            Some(found) if found > FORMAT_VERSION => return Err(Unreadable::TooNew { found }),
            Some(found) if found >= 1 => {}
            _ => return corrupt(&format!("`version` is {v}, expected a whole number from 1")),
        },
    }
    for list in ["groups", "sessions"] {
        match top.get(list) {
            Some(Value::Array(_)) => {}
            Some(other) => return corrupt(&format!("`{list}` is {}, expected a list", json_kind(other))),
            None => return corrupt(&format!("no `{list}`")),
        }
    }
    Ok(())
}

/// The integer types of the model's fields, as serde names them in "expected u32".
#[derive(Debug, Clone, Copy)]
enum IntType {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
}

impl IntType {
    /// The type serde's message says it expected (`invalid value: integer `-5`, expected u64`).
    fn from_message(message: &str) -> Option<IntType> {
        let expected = message.rsplit_once("expected ")?.1.trim();
        Some(match expected {
            "u8" => IntType::U8,
            "u16" => IntType::U16,
            "u32" => IntType::U32,
            "u64" | "usize" => IntType::U64,
            "i32" => IntType::I32,
            "i64" | "isize" => IntType::I64,
            _ => return None,
        })
    }

    fn range(self) -> (i128, i128) {
        match self {
            IntType::U8 => (0, u8::MAX.into()),
            IntType::U16 => (0, u16::MAX.into()),
            IntType::U32 => (0, u32::MAX.into()),
            IntType::U64 => (0, u64::MAX.into()),
            IntType::I32 => (i32::MIN.into(), i32::MAX.into()),
            IntType::I64 => (i64::MIN.into(), i64::MAX.into()),
        }
    }

    /// `n` as the nearest value of this type; `None` when it already is one.
    fn clamp(self, n: &serde_json::Number) -> Option<Value> {
        let (lo, hi) = self.range();
        let exact: Option<i128> = n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
        let wanted = match exact {
            Some(i) if (lo..=hi).contains(&i) => return None,
            Some(i) => i.clamp(lo, hi),
            // A fraction or an exponent: the whole part, clamped (`as` saturates).
            None => (n.as_f64()?.trunc() as i128).clamp(lo, hi),
        };
        Some(match u64::try_from(wanted) {
            Ok(u) => Value::from(u),
            Err(_) => Value::from(i64::try_from(wanted).ok()?),
        })
    }
}

/// One step of a path as serde_path_to_error prints it: `groups[3].usage.input_tokens`.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Step::Key(key.to_string()));
        }
        while let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            out.push(Step::Index(after[..close].parse::<usize>().ok()?));
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

/// Clamps the number at `at` (and every other value of the same field, `groups[*]...`) into the
/// type serde expected there. `None` when the error is not about a number that does not fit.
fn repair_numbers(value: &mut Value, at: &str, message: &str) -> Option<String> {
    let int = IntType::from_message(message)?;
    if !(message.starts_with("invalid value: integer") || message.starts_with("invalid type: floating point"))
    {
        return None;
    }
    let mut at = at.to_string();
    let mut examples = Vec::new();
    clamp_all(value, &steps(&at)?, int, &mut examples);
    if examples.is_empty() {
        // The path stops at the struct holding a flattened one (a group's mode settings): the
        // number is below it.
        let below = path_to_number(node_at(value, &steps(&at)?)?, message.split('`').nth(1)?, int)?;
        at = join_path(&at, &below);
        clamp_all(value, &steps(&at)?, int, &mut examples);
    }
    let (first_from, first_to) = examples.first()?.clone();
    let more = match examples.len() {
        1 => String::new(),
        n => format!(" ({} more values of this field were out of range too)", n - 1),
    };
    let text = format!(
        "{at}: {first_from} does not fit (expected {message_type}); read as {first_to}{more}",
        message_type = message.rsplit_once("expected ").map_or("", |(_, t)| t.trim())
    );
    tracing::warn!("{text}");
    Some(text)
}

/// The value at `steps` (indexes as written).
fn node_at<'a>(value: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps.iter().try_fold(value, |v, step| match step {
        Step::Key(key) => v.get(key.as_str()),
        Step::Index(i) => v.get(*i),
    })
}

/// True when `n` is the number `text` (as a serde message writes it: `-5`, `1.5`).
fn same_number(n: &serde_json::Number, text: &str) -> bool {
    if let Ok(i) = text.parse::<i128>() {
        return n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)) == Some(i);
    }
    text.parse::<f64>().is_ok_and(|f| n.as_f64() == Some(f))
}

/// The path below `value` of the first number that is `text` and does not fit `int`.
fn path_to_number(value: &Value, text: &str, int: IntType) -> Option<String> {
    match value {
        Value::Number(n) => (same_number(n, text) && int.clamp(n).is_some()).then(String::new),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| path_to_number(v, text, int).map(|rest| join_path(k, &rest))),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| path_to_number(v, text, int).map(|rest| join_path(&format!("[{i}]"), &rest))),
        _ => None,
    }
}

/// `a` then `b` as one path (`groups[0]` and `dispatch.x`: `groups[0].dispatch.x`).
fn join_path(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty() || b.starts_with('[')) {
        (true, _) => b.to_string(),
        (false, true) => format!("{a}{b}"),
        (false, false) => format!("{a}.{b}"),
    }
}

fn clamp_all(value: &mut Value, steps: &[Step], int: IntType, changed: &mut Vec<(String, String)>) {
    match steps.split_first() {
        None => {
            if let Value::Number(n) = value
                && let Some(fixed) = int.clamp(n)
            {
                changed.push((n.to_string(), fixed.to_string()));
                *value = fixed;
            }
        }
        Some((Step::Key(key), rest)) => {
            if let Some(inner) = value.get_mut(key.as_str()) {
                clamp_all(inner, rest, int, changed);
            }
        }
        Some((Step::Index(_), rest)) => {
            if let Value::Array(items) = value {
                for item in items {
                    clamp_all(item, rest, int, changed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GroupKind;

    fn corrupt(text: &str) -> String {
        match parse(text.as_bytes()) {
            Err(Unreadable::Corrupt(reason)) => reason,
            other => panic!("{text}: expected corrupt, got {other:?}"),
        }
    }

    #[test]
    fn valid_json_that_is_not_an_organization_is_corrupt() {
        assert!(corrupt("{}").contains("no `version`"));
        assert!(corrupt("[]").contains("expected a JSON object, found a list"));
        assert!(corrupt("null").contains("found null"));
        assert!(corrupt(r#"{"groups":[],"sessions":[]}"#).contains("no `version`"));
        assert!(corrupt(r#"{"version":1,"sessions":[]}"#).contains("no `groups`"));
        assert!(corrupt(r#"{"version":1,"groups":{},"sessions":[]}"#).contains("`groups` is an object"));
        assert!(corrupt(r#"{"version":0,"groups":[],"sessions":[]}"#).contains("`version` is 0"));
        assert!(corrupt(r#"{"version":"1","groups":[],"sessions":[]}"#).contains("`version`"));
        let empty = parse(br#"{"version":1,"groups":[],"sessions":[]}"#).unwrap();
        assert!(empty.org.groups.is_empty() && empty.repairs.is_empty());
    }

    #[test]
    fn a_newer_version_is_refused_not_read() {
        let err = parse(br#"{"version":2,"groups":[],"sessions":[],"shiny":{}}"#).unwrap_err();
        assert_eq!(err, Unreadable::TooNew { found: 2 });
        assert!(
            err.to_string().contains("newer huddle (format version 2"),
            "{err}"
        );
    }

    #[test]
    fn a_bom_is_accepted() {
        let parsed =
            parse(b"\xEF\xBB\xBF{\"version\":1,\"groups\":[{\"id\":\"g\",\"name\":\"G\"}],\"sessions\":[]}")
                .unwrap();
        assert_eq!(parsed.org.groups[0].name, "G");
    }

    #[test]
    fn out_of_range_numbers_are_clamped_for_their_field_only() {
        let text = br#"{"version":1,
            "groups":[
              {"id":"a","name":"A","kind":"team","max_iterations":1099511627776,"usage":{"input_tokens":-5,"output_tokens":7}},
              {"id":"b","name":"B","usage":{"input_tokens":-1,"output_tokens":1.5}}],
            "sessions":[{"id":"s","name":"n","order":1e30,"usage":{"input_tokens":3}}],
            "ui":{"sidebar_width":70000}}"#;
        let parsed = parse(text).unwrap();
        let org = parsed.org;
        assert_eq!(
            org.groups[0].kind,
            GroupKind::Team,
            "the rest of the group is kept"
        );
        assert_eq!(org.groups[0].max_iterations, u32::MAX);
        assert_eq!(org.groups[0].usage.input_tokens, 0);
        assert_eq!(org.groups[0].usage.output_tokens, 7);
        assert_eq!(org.groups[1].usage.input_tokens, 0);
        assert_eq!(org.groups[1].usage.output_tokens, 1);
        assert_eq!(org.sessions[0].order, i64::MAX);
        assert_eq!(org.sessions[0].usage.input_tokens, 3);
        assert_eq!(org.ui.sidebar_width, Some(u16::MAX));
        let repairs = parsed.repairs.join("\n");
        assert!(
            repairs.contains(
                "groups[0].max_iterations: 1099511627776 does not fit (expected u32); read as 4294967295"
            ),
            "{repairs}"
        );
        assert!(
            repairs.contains(
                "groups[0].usage.input_tokens: -5 does not fit (expected u64); read as 0 (1 more values"
            ),
            "{repairs}"
        );
        assert_eq!(parsed.repairs.len(), 5, "one line per field: {repairs}");
    }

    #[test]
    fn out_of_range_numbers_in_mode_settings_and_state_are_clamped_too() {
        let text = br#"{"version":1,
            "groups":[{"id":"a","name":"A","kind":"team","mode":"dispatch",
              "sort_order":-2,"dispatch":{"max_concurrent_agents":1099511627776},
              "relay_state":{"objective":"o","turn":-2}}],
            "sessions":[]}"#;
        let parsed = parse(text).unwrap();
        let group = &parsed.org.groups[0];
        assert_eq!(group.settings.dispatch.max_concurrent_agents, Some(u32::MAX));
        assert_eq!(group.state.relay.as_ref().map(|r| r.turn), Some(0));
        assert_eq!(parsed.repairs.len(), 2, "{:?}", parsed.repairs);
        assert!(
            parsed.repairs[0]
                .starts_with("groups[0].dispatch.max_concurrent_agents: 1099511627776 does not fit"),
            "{:?}",
            parsed.repairs
        );
    }

    #[test]
    fn errors_that_are_not_about_numbers_stay_errors_naming_the_field() {
        let reason =
            corrupt(r#"{"version":1,"groups":[{"id":"g","name":"G","kind":"galaxy"}],"sessions":[]}"#);
        assert!(reason.contains("groups[0].kind"), "{reason}");
        assert!(reason.contains("galaxy"), "{reason}");
        let reason = corrupt(r#"{"version":1,"groups":[{"id":"g","name":7}],"sessions":[]}"#);
        assert!(reason.contains("groups[0].name"), "{reason}");
    }

    #[test]
    fn paths_are_split_into_steps() {
        assert_eq!(
            steps("groups[3].usage.input_tokens"),
            Some(vec![
                Step::Key("groups".into()),
                Step::Index(3),
                Step::Key("usage".into()),
                Step::Key("input_tokens".into())
            ])
        );
        assert_eq!(
            steps("a[1][2]"),
            Some(vec![Step::Key("a".into()), Step::Index(1), Step::Index(2)])
        );
        assert_eq!(steps("a[x]"), None);
    }
}
