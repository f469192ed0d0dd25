//! Text helpers shared by the TUI and the headless CLI.

pub mod sanitize;
pub mod secrets;

/// The first non-empty line, at most `max` characters (for events, progress lines and compact cells), `…` marking a cut.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

/// Keeps the last `max` characters of `s` (a live line that must not grow with the stream).
pub fn keep_last_chars(s: &mut String, max: usize) {
    let chars = s.chars().count();
    if chars > max
        && let Some((cut, _)) = s.char_indices().nth(chars - max)
    {
        s.drain(..cut);
    }
}

/// `s` cut to at most `max` characters, with `…` when cut.
pub fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => {
            let mut out = s[..cut].trim_end().to_string();
            out.push('…');
            out
        }
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
    fn keep_last_chars_keeps_the_end_on_a_character() {
        let mut s = "ab€cd".to_string();
        keep_last_chars(&mut s, 3);
        assert_eq!(s, "€cd");
        keep_last_chars(&mut s, 5);
        assert_eq!(s, "€cd");
    }

    #[test]
    fn cap_chars_respects_char_boundaries() {
        assert_eq!(cap_chars("héllo wörld", 5), "héllo…");
        assert_eq!(cap_chars("short", 10), "short");
        assert_eq!(cap_chars("äbcd", 2), "äb…");
    }

    #[test]
    fn first_line_skips_blank_lines_and_shortens() {
        assert_eq!(first_line("\n  \n hello world \nmore", 80), "hello world");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("", 3), "");
    }
}
