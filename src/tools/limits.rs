//! How far a tool loop may go and how much of a result goes back to the model.

use crate::text::first_line;

/// Model → tools → model rounds in one turn before the model must answer (`max_tool_rounds`).
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 25;
/// The accepted range of `max_tool_rounds`.
pub const MAX_TOOL_ROUNDS: std::ops::RangeInclusive<u32> = 1..=200;
/// Bytes of one tool result sent back to the model (`tool_result_max_bytes`).
pub const DEFAULT_RESULT_MAX_BYTES: usize = 32 * 1024;

/// The message the model gets instead of more tools once the rounds are used up.
pub fn rounds_exhausted_note(rounds: u32) -> String {
    format!(
        "You have used all {rounds} tool rounds allowed for this turn; no more tools will run. \
         Give your final answer now from what you have."
    )
}

/// `text` cut to at most `max` bytes (on a character boundary), the cut marked so the model
/// knows it did not see everything.
pub fn cap_result(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… cut: {} more bytes of {} not shown]",
        &text[..end],
        text.len() - end,
        text.len()
    )
}

/// One line that says what a tool result is: JSON compacted onto one line (its first line
/// alone is often just `{`), else the first non-empty line; at most `max` characters.
pub fn result_line(text: &str, max: usize) -> String {
    let trimmed = text.trim_start();
    if trimmed.starts_with(['{', '[']) {
        // Only the head is parsed: a result may be large, the line is short.
        let head = &trimmed[..trimmed.len().min(64 * 1024)];
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(head) {
            return first_line(&value.to_string(), max);
        }
        let folded: String = head.split_whitespace().collect::<Vec<_>>().join(" ");
        return first_line(&folded, max);
    }
    first_line(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_over_the_cap_are_cut_on_a_char_boundary_and_marked() {
        assert_eq!(cap_result("short", 10), "short");
        let cut = cap_result("ééééé", 5);
        assert!(cut.starts_with("éé\n[… cut: 6 more bytes of 10"), "{cut}");
        let big = "x".repeat(100_000);
        let cut = cap_result(&big, DEFAULT_RESULT_MAX_BYTES);
        assert!(cut.len() < DEFAULT_RESULT_MAX_BYTES + 100);
        assert!(cut.contains("67232 more bytes"), "{}", &cut[cut.len() - 60..]);
    }

    #[test]
    fn a_json_result_is_summed_up_on_one_line() {
        let pretty = "{\n  \"timezone\": \"UTC\",\n  \"datetime\": \"2026-11-24T01:00:00+00:00\"\n}";
        assert_eq!(
            result_line(pretty, 200),
            r#"{"datetime":"2026-11-24T01:00:00+00:00","timezone":"UTC"}"#
        );
        assert_eq!(result_line("[1,\n 2", 20), "[1, 2");
        assert_eq!(result_line("plain\nmore", 20), "plain");
    }
}
