//! `/` search in a session's transcript: the state, the matching (ASCII case-insensitive, over
//! the rendered lines, so a jump lands on what is drawn) and the highlighting of matches.

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::model::SessionId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptSearch {
    pub session_id: SessionId,
    pub query: String,
    /// The query is being typed (keys are text); after Enter, `n`/`N` move between matches.
    pub editing: bool,
    /// The line (from the top of the whole laid-out transcript) of the match jumped to last.
    pub current: Option<usize>,
    /// 1-based number of the current match and the number of matching lines, for the status.
    pub position: Option<(usize, usize)>,
}

impl TranscriptSearch {
    pub fn new(session_id: SessionId) -> TranscriptSearch {
        TranscriptSearch {
            session_id,
            query: String::new(),
            editing: true,
            current: None,
            position: None,
        }
    }
}

/// Byte ranges of `query` in `text`, ignoring ASCII case, not overlapping.
pub fn match_ranges(text: &str, query: &str) -> Vec<Range<usize>> {
    let (t, q) = (text.as_bytes(), query.as_bytes());
    let mut out = Vec::new();
    if q.is_empty() || q.len() > t.len() {
        return out;
    }
    let mut i = 0;
    while i + q.len() <= t.len() {
        // A match starts where the query's first byte does, so on a char boundary (ASCII case
        // folding never touches the bytes of a multi-byte character).
        if t[i..i + q.len()].eq_ignore_ascii_case(q) && text.is_char_boundary(i) {
            out.push(i..i + q.len());
            i += q.len();
        } else {
            i += 1;
        }
    }
    out
}

/// The indices of the lines that contain `query`.
pub fn matching_lines(lines: &[Line<'_>], query: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !match_ranges(&line_text(l), query).is_empty())
        .map(|(i, _)| i)
        .collect()
}

/// The match after (or before) `current`, wrapping round; the first (or last) without one.
pub fn step(matches: &[usize], current: Option<usize>, forward: bool) -> Option<usize> {
    let (first, last) = (*matches.first()?, *matches.last()?);
    Some(match (current, forward) {
        (None, true) => first,
        (None, false) => last,
        (Some(c), true) => matches.iter().copied().find(|&m| m > c).unwrap_or(first),
        (Some(c), false) => matches.iter().rev().copied().find(|&m| m < c).unwrap_or(last),
    })
}

/// The scroll (lines up from the bottom) that shows line `target` of `total` a third of the
/// way down a `height`-line window.
pub fn scroll_to_show(target: usize, total: usize, height: usize) -> usize {
    let height = height.max(1);
    let start = target.saturating_sub(height / 3);
    let end = (start + height).min(total);
    let start = end.saturating_sub(height);
    let end = start + height.min(total);
    total.saturating_sub(end)
}

pub fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// The line with every match of `query` drawn in `style` (over the span's own style).
pub fn highlight(line: Line<'static>, query: &str, style: Style) -> Line<'static> {
    let text = line_text(&line);
    let ranges = match_ranges(&text, query);
    if ranges.is_empty() {
        return line;
    }
    let mut spans: Vec<Span<'static>> = Vec::with_capacity(line.spans.len() + 2 * ranges.len());
    let mut offset = 0;
    for span in line.spans {
        let content = span.content.as_ref();
        let span_range = offset..offset + content.len();
        // Cut points inside this span: the starts and ends of the matches.
        let mut cuts: Vec<usize> = vec![span_range.start, span_range.end];
        for r in &ranges {
            for p in [r.start, r.end] {
                if p > span_range.start && p < span_range.end {
                    cuts.push(p);
                }
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let (a, b) = (w[0], w[1]);
            let piece = content[a - offset..b - offset].to_string();
            let inside = ranges.iter().any(|r| r.start <= a && b <= r.end);
            let s = if inside {
                span.style.patch(style)
            } else {
                span.style
            };
            spans.push(Span::styled(piece, s));
        }
        offset = span_range.end;
    }
    Line {
        spans,
        style: line.style,
        alignment: line.alignment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    #[test]
    fn matches_ignore_ascii_case_and_respect_characters() {
        assert_eq!(match_ranges("Foo foo FOO", "foo"), vec![0..3, 4..7, 8..11]);
        assert_eq!(match_ranges("aaaa", "aa"), vec![0..2, 2..4]);
        assert_eq!(match_ranges("é café", "é"), vec![0..2, 6..8]);
        assert!(match_ranges("abc", "").is_empty());
        assert!(match_ranges("ab", "abc").is_empty());
    }

    #[test]
    fn steps_wrap_round() {
        let m = [3, 10, 20];
        assert_eq!(step(&m, None, true), Some(3));
        assert_eq!(step(&m, None, false), Some(20));
        assert_eq!(step(&m, Some(3), true), Some(10));
        assert_eq!(step(&m, Some(20), true), Some(3));
        assert_eq!(step(&m, Some(3), false), Some(20));
        assert_eq!(step(&m, Some(15), false), Some(10));
        assert_eq!(step(&[], None, true), None);
    }

    #[test]
    fn the_target_line_lands_in_the_window() {
        // 100 lines, a 10-line window: line 50 shows on row 3.
        let scroll = scroll_to_show(50, 100, 10);
        let end = 100 - scroll;
        assert_eq!(end - 10, 47);
        // Near the top and the bottom the window is clamped.
        assert_eq!(scroll_to_show(0, 100, 10), 90);
        assert_eq!(scroll_to_show(99, 100, 10), 0);
        // Shorter than the window: no scroll.
        assert_eq!(scroll_to_show(2, 5, 10), 0);
    }

    #[test]
    fn highlight_splits_spans_across_styles() {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let line = Line::from(vec![Span::raw("say hel"), Span::styled("lo world", bold)]);
        let mark = Style::default().bg(Color::Yellow);
        let out = highlight(line, "HELLO", mark);
        let pieces: Vec<(String, Style)> = out
            .spans
            .iter()
            .map(|s| (s.content.to_string(), s.style))
            .collect();
        assert_eq!(
            pieces,
            vec![
                ("say ".to_string(), Style::default()),
                ("hel".to_string(), mark),
                ("lo".to_string(), bold.patch(mark)),
                (" world".to_string(), bold),
            ]
        );
        let plain = Line::raw("nothing here");
        assert_eq!(highlight(plain.clone(), "zzz", mark), plain);
    }
}
