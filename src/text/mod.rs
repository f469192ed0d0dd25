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

/// `text` with its first letter upper-case (`budget spent` → `Budget spent`), to begin a
/// sentence with words made to stand inside one.
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
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

/// `12,345`: a count with thousands separated.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A line cut to `width` columns (`…` where cut).
pub fn clip(line: &str, width: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if line.width() <= width {
        return line.to_string();
    }
    let mut used = 0;
    let mut out = String::new();
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// A Markdown file's YAML front matter (between a first line `---` and the next line `---`,
/// after a byte order mark, with `\n` or `\r\n` line ends) and the body after it; no front
/// matter (none, or never closed): the whole text as the body.
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let t = text.trim_start_matches('\u{feff}');
    let Some(rest) = t.strip_prefix("---\n").or_else(|| t.strip_prefix("---\r\n")) else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..offset]), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, text)
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

/// `text` (trimmed) as a Markdown block quote, appended to `out`: every line starts with `> `
/// (a blank one is `>`) and ends with a newline. Any line break a reader could take for one
/// (`\r`, a vertical tab, a form feed, NEL, U+2028, U+2029) starts a quoted line, so nothing in
/// `text` can begin a line of its own: how huddle hands on words of a model (a broadcast, a
/// sub-agent's answer) so that they never pass for huddle's own lines.
pub fn quote_into(out: &mut String, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let breaks = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    let mut rest = text;
    loop {
        let (line, next) = match rest.find(breaks) {
            Some(at) => {
                let c = rest[at..].chars().next().unwrap_or('\n');
                let mut after = at + c.len_utf8();
                // `\r\n` is one break.
                if c == '\r' && rest[after..].starts_with('\n') {
                    after += 1;
                }
                (&rest[..at], Some(&rest[after..]))
            }
            None => (rest, None),
        };
        let line = line.trim_end();
        out.push_str(if line.is_empty() { ">" } else { "> " });
        out.push_str(line);
        out.push('\n');
        match next {
            Some(next) => rest = next,
            None => return,
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

/// `850ms`, `3.2s`, `2m05s`, `1h02m`: how every line says a duration.
pub fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms}ms"),
        1000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_off_after_a_bom_and_with_crlf_line_ends() {
        assert_eq!(
            split_front_matter("---\nname: a\n---\nbody\n"),
            (Some("name: a\n"), "body\n")
        );
        assert_eq!(
            split_front_matter("\u{feff}---\r\nname: a\r\n---\r\nbody\r\n"),
            (Some("name: a\r\n"), "body\r\n")
        );
        assert_eq!(split_front_matter("no front\n"), (None, "no front\n"));
        assert_eq!(split_front_matter("---\nunclosed"), (None, "---\nunclosed"));
    }

    #[test]
    fn capitalised_uppercases_only_the_first_letter() {
        assert_eq!(capitalised("the run of `a`"), "The run of `a`");
        assert_eq!(capitalised("éclair"), "Éclair");
        assert_eq!(capitalised("ß"), "SS");
        assert_eq!(capitalised(""), "");
    }

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
    fn every_line_of_a_quote_starts_with_the_mark_whatever_breaks_it() {
        let mut out = String::new();
        quote_into(&mut out, " one\n\ntwo  \r\nthree\rfour\u{2028}five\u{85}six\n");
        assert_eq!(out, "> one\n>\n> two\n> three\n> four\n> five\n> six\n");
        let mut empty = String::new();
        quote_into(&mut empty, " \n ");
        assert_eq!(empty, "");
    }

    #[test]
    fn first_line_skips_blank_lines_and_shortens() {
        assert_eq!(first_line("\n  \n hello world \nmore", 80), "hello world");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("", 3), "");
    }
}
