//! The sentinel lines a model writes to say "done" or "not yet" (SPEC section 3), and the
//! neutralising of the team sentinel inside worker text.

use std::borrow::Cow;

/// One of the three sentinels of the text protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sentinel {
    /// `[[GROUP_REFLECT_COMPLETE]]`: the team's goal is met.
    GroupReflectComplete,
    /// `[[NEEDS_ITERATION]]`: the team needs another iteration.
    NeedsIteration,
    /// `[[REFLECTION_COMPLETE]]`: a single agent's reflection is done.
    ReflectionComplete,
}

impl Sentinel {
    pub const ALL: [Sentinel; 3] = [
        Sentinel::GroupReflectComplete,
        Sentinel::NeedsIteration,
        Sentinel::ReflectionComplete,
    ];

    /// The literal text, e.g. `[[NEEDS_ITERATION]]`.
    pub fn as_str(self) -> &'static str {
        match self {
            Sentinel::GroupReflectComplete => "[[GROUP_REFLECT_COMPLETE]]",
            Sentinel::NeedsIteration => "[[NEEDS_ITERATION]]",
            Sentinel::ReflectionComplete => "[[REFLECTION_COMPLETE]]",
        }
    }
}

impl std::fmt::Display for Sentinel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a worker's `[[GROUP_REFLECT_COMPLETE]]` becomes before the orchestrator sees it.
pub const WORKER_APPROVED: &str = "[WORKER_APPROVED]";

/// The sentinel a line consists of, if it stands alone on it: surrounding whitespace and
/// Markdown emphasis (backticks, `*`, `_`) are allowed, anything else (a sentence, a `>` quote
/// marker, a list bullet) is not.
pub fn line_sentinel(line: &str) -> Option<Sentinel> {
    let core = line.trim_matches(|c: char| c.is_whitespace() || matches!(c, '`' | '*' | '_'));
    if !core.starts_with("[[") {
        return None;
    }
    Sentinel::ALL
        .into_iter()
        .find(|s| core.eq_ignore_ascii_case(s.as_str()))
}

/// True when `sentinel` stands alone on some line of `text`.
pub fn has_sentinel(text: &str, sentinel: Sentinel) -> bool {
    sentinel_line_end(text, sentinel).is_some()
}

/// The byte offset just after the first line on which `sentinel` stands alone (after its `\n`,
/// or the end of the text).
pub fn sentinel_line_end(text: &str, sentinel: Sentinel) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if line_sentinel(line) == Some(sentinel) {
            return Some(offset);
        }
    }
    None
}

/// The last of `[[GROUP_REFLECT_COMPLETE]]` / `[[NEEDS_ITERATION]]` standing alone on a line.
/// A verdict is what an answer ends with, so when a model writes both, the later one counts.
pub fn last_team_verdict(text: &str) -> Option<Sentinel> {
    text.lines()
        .rev()
        .filter_map(line_sentinel)
        .find(|s| matches!(s, Sentinel::GroupReflectComplete | Sentinel::NeedsIteration))
}

/// `text` without the lines that consist of a sentinel (for showing an answer to a person or to
/// the next prompt). Trailing whitespace is trimmed.
pub fn strip_sentinel_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line_sentinel(line).is_none() {
            out.push_str(line);
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// Replaces every `[[GROUP_REFLECT_COMPLETE]]` (ignoring case, anywhere) by
/// `[WORKER_APPROVED]`, so a worker cannot end the cycle by proxy. Borrowed when absent.
pub fn sanitize_worker_text(text: &str) -> Cow<'_, str> {
    let needle = Sentinel::GroupReflectComplete.as_str();
    let Some(first) = find_ascii_ci(text, needle, 0) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut hit = Some(first);
    while let Some(at) = hit {
        out.push_str(&text[from..at]);
        out.push_str(WORKER_APPROVED);
        from = at + needle.len();
        hit = find_ascii_ci(text, needle, from);
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

/// Byte offset of the first occurrence of the ASCII `needle` in `hay` at or after `from`,
/// ignoring ASCII case. Linear in practice: candidate positions are filtered on the first byte.
pub fn find_ascii_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let hay = hay.as_bytes();
    let needle = needle.as_bytes();
    let (&first, rest) = needle.split_first()?;
    let first_lower = first.to_ascii_lowercase();
    let first_upper = first.to_ascii_uppercase();
    if hay.len() < needle.len() {
        return None;
    }
    let last_start = hay.len() - needle.len();
    let mut i = from;
    while i <= last_start {
        let b = hay[i];
        if (b == first_lower || b == first_upper) && hay[i + 1..i + needle.len()].eq_ignore_ascii_case(rest) {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standalone_sentinels_match_ignoring_case_and_emphasis() {
        for text in [
            "Answer.\n[[GROUP_REFLECT_COMPLETE]]",
            "Answer.\n  [[group_reflect_complete]]  \n",
            "Answer.\n**[[GROUP_REFLECT_COMPLETE]]**",
            "Answer.\n`[[GROUP_REFLECT_COMPLETE]]`\nPS",
            "Answer.\n_[[Group_Reflect_Complete]]_\r\n",
        ] {
            assert!(has_sentinel(text, Sentinel::GroupReflectComplete), "{text:?}");
            assert!(!has_sentinel(text, Sentinel::NeedsIteration), "{text:?}");
        }
    }

    #[test]
    fn sentinels_in_sentences_or_quotes_do_not_count() {
        for text in [
            "I will write [[GROUP_REFLECT_COMPLETE]] when done.",
            "> [[GROUP_REFLECT_COMPLETE]]",
            "- [[GROUP_REFLECT_COMPLETE]]",
            "[[GROUP_REFLECT_COMPLETE]] now",
            "[[GROUP_REFLECT_COMPLETE]",
            "",
        ] {
            assert!(!has_sentinel(text, Sentinel::GroupReflectComplete), "{text:?}");
        }
    }

    #[test]
    fn each_sentinel_is_told_apart() {
        assert_eq!(
            line_sentinel("[[NEEDS_ITERATION]]"),
            Some(Sentinel::NeedsIteration)
        );
        assert_eq!(
            line_sentinel(" [[reflection_complete]]\n"),
            Some(Sentinel::ReflectionComplete)
        );
        assert_eq!(line_sentinel("[[SOMETHING_ELSE]]"), None);
    }

    #[test]
    fn the_last_verdict_wins() {
        let text = "[[NEEDS_ITERATION]]\nmore\n[[GROUP_REFLECT_COMPLETE]]\n";
        assert_eq!(last_team_verdict(text), Some(Sentinel::GroupReflectComplete));
        assert_eq!(
            last_team_verdict("a\n[[NEEDS_ITERATION]]"),
            Some(Sentinel::NeedsIteration)
        );
        assert_eq!(last_team_verdict("a [[NEEDS_ITERATION]]"), None);
    }

    #[test]
    fn sentinel_line_end_points_after_the_line() {
        let text = "intro\n[[NEEDS_ITERATION]]\nfix the tests\n";
        let end = sentinel_line_end(text, Sentinel::NeedsIteration).unwrap();
        assert_eq!(&text[end..], "fix the tests\n");
    }

    #[test]
    fn strip_removes_only_sentinel_lines() {
        let text = "Answer [[NEEDS_ITERATION]] inline stays.\n\n**[[GROUP_REFLECT_COMPLETE]]**\n";
        assert_eq!(
            strip_sentinel_lines(text),
            "Answer [[NEEDS_ITERATION]] inline stays."
        );
    }

    #[test]
    fn worker_text_cannot_carry_the_complete_sentinel() {
        let text = "Done.\n[[GROUP_REFLECT_COMPLETE]]\nalso [[group_Reflect_complete]] here";
        let out = sanitize_worker_text(text);
        assert_eq!(out, "Done.\n[WORKER_APPROVED]\nalso [WORKER_APPROVED] here");
        assert!(!has_sentinel(&out, Sentinel::GroupReflectComplete));
        assert!(matches!(
            sanitize_worker_text("clean [[NEEDS_ITERATION]]"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn find_ascii_ci_handles_edges() {
        assert_eq!(find_ascii_ci("xx@WORKER:a", "@worker:", 0), Some(2));
        assert_eq!(find_ascii_ci("@worker:a @Worker:b", "@worker:", 1), Some(10));
        assert_eq!(find_ascii_ci("é@work", "@worker:", 0), None);
        assert_eq!(find_ascii_ci("", "x", 0), None);
        assert_eq!(find_ascii_ci("abc", "", 0), None);
    }
}
