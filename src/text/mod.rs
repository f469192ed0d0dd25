//! Text helpers shared by the TUI and the headless CLI.

pub mod sanitize;

/// The first non-empty line, at most `max` characters (for events, progress lines and compact cells), `…` marking a cut.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

/// At most `max` characters of `text`, `…` marking a cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_short_text_and_cuts_long_text_on_a_character() {
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("äbcd", 2), "äb…");
    }

    #[test]
    fn first_line_skips_blank_lines_and_shortens() {
        assert_eq!(first_line("\n  \n hello world \nmore", 80), "hello world");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("", 3), "");
    }
}
