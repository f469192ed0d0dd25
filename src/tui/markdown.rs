//! Markdown to styled, wrapped lines for the transcript (pulldown-cmark). Input must already be
//! sanitised. Styles follow the house rules: default foreground, bold/italic for emphasis, one
//! accent (cyan) for code, dim for secondary marks. A link keeps its URL (`text (url)`), a
//! fenced code block shows both its fences (an indented one neither), and a table is drawn as
//! a table: aligned columns between rules, cut to the width.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// Renders `src` as lines no wider than `width` columns.
pub fn render(src: &str, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in logical_lines(src, width.max(1) as usize) {
        wrap_line_into(line, width.max(1) as usize, &mut out);
    }
    out
}

/// Splits Markdown into independent pieces of at least `target` bytes, so a long message can be
/// laid out piece by piece (only what is on screen). A piece ends at a blank line that ends a
/// top-level block: outside a fenced code block, followed by a line that is not indented and does
/// not start a list item (so lists, their loose items and indented code stay whole). Rendering
/// the pieces one by one, with a blank line between them, gives the lines of the whole.
pub fn split_blocks(src: &str, target: usize) -> Vec<std::ops::Range<usize>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut fence: Option<(u8, usize)> = None;
    let mut after_blank = false;
    let mut pos = 0;
    for line in src.split_inclusive('\n') {
        let here = pos;
        pos += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start_matches(' ');
        let indent = content.len() - trimmed.len();
        if let Some(marker) = fence_marker(trimmed).filter(|_| indent < 4) {
            match fence {
                None => fence = Some(marker),
                Some((c, n)) if marker.0 == c && marker.1 >= n && trimmed[marker.1..].trim().is_empty() => {
                    fence = None
                }
                Some(_) => {}
            }
            after_blank = false;
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if content.trim().is_empty() {
            after_blank = true;
            continue;
        }
        if after_blank
            && here - start >= target
            && indent == 0
            && !content.starts_with('\t')
            && !starts_list_item(content)
        {
            pieces.push(start..here);
            start = here;
        }
        after_blank = false;
    }
    pieces.push(start..src.len());
    pieces
}

/// A code fence's character and length (three or more backticks or tildes).
fn fence_marker(line: &str) -> Option<(u8, usize)> {
    let c = *line.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = line.bytes().take_while(|b| *b == c).count();
    (n >= 3).then_some((c, n))
}

fn starts_list_item(line: &str) -> bool {
    let b = line.as_bytes();
    match b.first() {
        Some(b'-' | b'*' | b'+') => matches!(b.get(1), Some(b' ' | b'\t') | None),
        Some(b'0'..=b'9') => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            matches!(b.get(digits), Some(b'.' | b')'))
                && matches!(b.get(digits + 1), Some(b' ' | b'\t') | None)
        }
        _ => false,
    }
}

/// Wraps one styled line at word boundaries (a word wider than the line is cut).
pub fn wrap_line_into(line: Line<'static>, width: usize, out: &mut Vec<Line<'static>>) {
    if line.width() <= width {
        out.push(line);
        return;
    }
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    // Leading spaces are indentation on the first row; at a break they are dropped.
    let mut broke = false;
    for span in line.spans {
        let style = span.style;
        for token in tokens(&span.content) {
            let is_space = token.starts_with(char::is_whitespace);
            let w = token.width();
            if used + w > width && used > 0 {
                out.push(finish(std::mem::take(&mut current)));
                used = 0;
                broke = true;
            }
            if is_space && used == 0 && broke {
                continue;
            }
            if w > width {
                // A word wider than the line: cut it on character boundaries.
                let mut piece = String::new();
                for c in token.chars() {
                    let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                    if used + cw > width && used > 0 {
                        current.push(Span::styled(std::mem::take(&mut piece), style));
                        out.push(Line::from(std::mem::take(&mut current)));
                        used = 0;
                        broke = true;
                    }
                    piece.push(c);
                    used += cw;
                }
                if !piece.is_empty() {
                    current.push(Span::styled(piece, style));
                }
                continue;
            }
            current.push(Span::styled(token.to_string(), style));
            used += w;
        }
    }
    if !current.is_empty() {
        out.push(Line::from(current));
    }
}

/// A wrapped line without the spaces at its break.
fn finish(mut spans: Vec<Span<'static>>) -> Line<'static> {
    while spans.last().is_some_and(|s| s.content.trim().is_empty()) {
        spans.pop();
    }
    Line::from(spans)
}

/// Runs of whitespace and runs of everything else.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first.is_whitespace();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() != space)
            .map_or(rest.len(), |(i, _)| i);
        let (token, tail) = rest.split_at(end);
        rest = tail;
        Some(token)
    })
}

struct Writer {
    out: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    code_block: bool,
    /// For each open code block: whether it is fenced (its fences are shown).
    fenced: Vec<bool>,
    /// The marker (`- `, `3. `) waiting for the first line of a list item.
    marker: Option<String>,
    /// Each open link's URL and where its text starts in `spans`.
    links: Vec<(String, usize)>,
    /// The table being read (rows of cells), drawn when it ends.
    table: Option<Table>,
    /// The width lines are laid out for (a table is cut to it).
    width: usize,
}

/// A table's cells as read, and its columns' alignments.
struct Table {
    alignments: Vec<pulldown_cmark::Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
}

impl Writer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, add: Style) {
        let s = self.style().patch(add);
        self.styles.push(s);
    }

    fn prefix(&mut self) -> Vec<Span<'static>> {
        let mut p = Vec::new();
        if self.quote_depth > 0 {
            p.push(Span::styled(
                "│ ".repeat(self.quote_depth),
                Style::default().add_modifier(Modifier::DIM),
            ));
        }
        let indent = self.lists.len().saturating_sub(1) * 2;
        match self.marker.take() {
            Some(m) => {
                p.push(Span::raw(" ".repeat(indent)));
                p.push(Span::styled(m, Style::default().add_modifier(Modifier::DIM)));
            }
            None if !self.lists.is_empty() => p.push(Span::raw(" ".repeat(indent + 2))),
            None => {}
        }
        p
    }

    fn flush(&mut self) {
        if self.spans.is_empty() && self.marker.is_none() {
            return;
        }
        let mut line = self.prefix();
        line.append(&mut self.spans);
        self.out.push(Line::from(line));
    }

    fn blank(&mut self) {
        self.flush();
        if self.lists.is_empty() && self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::default());
        }
    }

    fn text(&mut self, text: &str) {
        if self.code_block {
            let code = Style::default().fg(Color::Cyan);
            for (i, part) in text.split('\n').enumerate() {
                if i > 0 {
                    self.flush_code_line();
                }
                if !part.is_empty() {
                    self.spans.push(Span::styled(part.to_string(), code));
                }
            }
            return;
        }
        let style = self.style();
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.flush();
            }
            if !part.is_empty() {
                self.spans.push(Span::styled(part.to_string(), style));
            }
        }
    }

    /// A code fence line, dim.
    fn fence_line(&mut self, fence: String) {
        let mut line = self.prefix();
        line.push(Span::styled(fence, Style::default().add_modifier(Modifier::DIM)));
        self.out.push(Line::from(line));
    }

    /// The end of a link: its URL after its text, unless the text is the URL already.
    fn end_link(&mut self) {
        let Some((url, start)) = self.links.pop() else {
            return;
        };
        let text: String = self
            .spans
            .get(start..)
            .unwrap_or_default()
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        let bare = |u: &str| u.trim_start_matches("mailto:").to_string();
        if url.is_empty() || text == url || bare(&text) == bare(&url) {
            return;
        }
        self.spans.push(Span::styled(
            format!(" ({url})"),
            Style::default().add_modifier(Modifier::DIM),
        ));
    }

    fn flush_code_line(&mut self) {
        let mut line = self.prefix();
        line.push(Span::raw("  "));
        line.append(&mut self.spans);
        self.out.push(Line::from(line));
    }
}

/// Markdown to unwrapped lines (a table is laid out for `width` already).
fn logical_lines(src: &str, width: usize) -> Vec<Line<'static>> {
    let mut w = Writer {
        out: Vec::new(),
        spans: Vec::new(),
        styles: Vec::new(),
        lists: Vec::new(),
        quote_depth: 0,
        code_block: false,
        fenced: Vec::new(),
        marker: None,
        links: Vec::new(),
        table: None,
        width,
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(src, options) {
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph => {}
                Tag::Heading { level, .. } => {
                    w.flush();
                    w.push_style(Style::default().add_modifier(Modifier::BOLD));
                    let hashes = match level {
                        HeadingLevel::H1 => 1,
                        HeadingLevel::H2 => 2,
                        HeadingLevel::H3 => 3,
                        HeadingLevel::H4 => 4,
                        HeadingLevel::H5 => 5,
                        HeadingLevel::H6 => 6,
                    };
                    let style = w.style();
                    w.spans
                        .push(Span::styled(format!("{} ", "#".repeat(hashes)), style));
                }
                Tag::BlockQuote(_) => {
                    w.flush();
                    w.quote_depth += 1;
                }
                Tag::CodeBlock(kind) => {
                    w.flush();
                    w.code_block = true;
                    // A fenced block shows both fences (the closing one at its end), so where
                    // the code starts and stops is plain; an indented block shows neither.
                    if let CodeBlockKind::Fenced(lang) = kind {
                        w.fence_line(format!("```{lang}"));
                        w.fenced.push(true);
                    } else {
                        w.fenced.push(false);
                    }
                }
                Tag::List(start) => {
                    w.flush();
                    w.lists.push(start);
                }
                Tag::Item => {
                    w.flush();
                    let marker = match w.lists.last_mut() {
                        Some(Some(n)) => {
                            let m = format!("{n}. ");
                            *n += 1;
                            m
                        }
                        _ => "• ".to_string(),
                    };
                    w.marker = Some(marker);
                }
                Tag::Emphasis => w.push_style(Style::default().add_modifier(Modifier::ITALIC)),
                Tag::Strong => w.push_style(Style::default().add_modifier(Modifier::BOLD)),
                Tag::Strikethrough => w.push_style(Style::default().add_modifier(Modifier::CROSSED_OUT)),
                Tag::Link { dest_url, .. } => {
                    w.links.push((dest_url.into_string(), w.spans.len()));
                    w.push_style(Style::default().add_modifier(Modifier::UNDERLINED));
                }
                Tag::Image { .. } => w.push_style(Style::default().add_modifier(Modifier::DIM)),
                Tag::Table(alignments) => {
                    w.flush();
                    w.table = Some(Table {
                        alignments,
                        rows: Vec::new(),
                        row: Vec::new(),
                    });
                }
                Tag::TableHead | Tag::TableRow | Tag::TableCell => w.spans.clear(),
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Paragraph => w.blank(),
                TagEnd::Heading(_) => {
                    w.styles.pop();
                    w.blank();
                }
                TagEnd::BlockQuote(_) => {
                    w.flush();
                    w.quote_depth = w.quote_depth.saturating_sub(1);
                    w.blank();
                }
                TagEnd::CodeBlock => {
                    if !w.spans.is_empty() {
                        w.flush_code_line();
                    }
                    w.code_block = false;
                    if w.fenced.pop() == Some(true) {
                        w.fence_line("```".to_string());
                    }
                    w.blank();
                }
                TagEnd::List(_) => {
                    w.flush();
                    w.lists.pop();
                    w.blank();
                }
                TagEnd::Item => w.flush(),
                TagEnd::Link => {
                    w.styles.pop();
                    w.end_link();
                }
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Image => {
                    w.styles.pop();
                }
                TagEnd::TableCell => {
                    let cell = std::mem::take(&mut w.spans);
                    if let Some(t) = w.table.as_mut() {
                        t.row.push(cell);
                    }
                }
                TagEnd::TableHead | TagEnd::TableRow => {
                    if let Some(t) = w.table.as_mut() {
                        let row = std::mem::take(&mut t.row);
                        t.rows.push(row);
                    }
                }
                TagEnd::Table => {
                    if let Some(t) = w.table.take() {
                        let prefix = w.prefix();
                        for line in
                            table_lines(&t, w.width.saturating_sub(Line::from(prefix.clone()).width()))
                        {
                            let mut spans = prefix.clone();
                            spans.extend(line.spans);
                            w.out.push(Line::from(spans));
                        }
                    }
                    w.blank();
                }
                _ => {}
            },
            Event::Text(t) => w.text(&t),
            Event::Code(t) => w
                .spans
                .push(Span::styled(t.into_string(), Style::default().fg(Color::Cyan))),
            Event::Html(t) | Event::InlineHtml(t) => w.text(&t),
            Event::SoftBreak | Event::HardBreak => w.flush(),
            Event::Rule => {
                w.flush();
                w.out
                    .push(Line::styled("───", Style::default().add_modifier(Modifier::DIM)));
                w.blank();
            }
            Event::TaskListMarker(done) => w.spans.push(Span::raw(if done { "[x] " } else { "[ ] " })),
            Event::FootnoteReference(t) | Event::InlineMath(t) | Event::DisplayMath(t) => w.text(&t),
        }
    }
    w.flush();
    while w.out.last().is_some_and(|l| l.width() == 0) {
        w.out.pop();
    }
    w.out
}

/// A table as lines no wider than `width`: the header, a rule, the rows; columns aligned as the
/// Markdown says, separated by `│`. Too wide, the widest columns give way (to 3 columns each at
/// least) and cut cells end in `…`.
fn table_lines(table: &Table, width: usize) -> Vec<Line<'static>> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let cell_width = |c: &Vec<Span<'static>>| c.iter().map(Span::width).sum::<usize>();
    let mut widths: Vec<usize> = (0..columns)
        .map(|i| {
            table
                .rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(cell_width)
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    // Each column is padded by one space either side; columns are separated by `│`.
    let total = |w: &[usize]| w.iter().sum::<usize>() + columns * 2 + columns.saturating_sub(1);
    while total(&widths) > width {
        let Some((i, widest)) = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w) else {
            break;
        };
        if widest <= 3 {
            break;
        }
        widths[i] -= 1;
    }
    let dim = Style::default().add_modifier(Modifier::DIM);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    for (r, row) in table.rows.iter().enumerate() {
        let mut spans: Vec<Span<'static>> = Vec::new();
        for (i, w) in widths.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled("│", dim));
            }
            let empty = Vec::new();
            let cell = row.get(i).unwrap_or(&empty);
            let mut content = cut_spans(cell, *w);
            if r == 0 {
                for s in &mut content {
                    s.style = s.style.patch(bold);
                }
            }
            let used: usize = content.iter().map(Span::width).sum();
            let pad = w - used.min(*w);
            let (left, right) = match table.alignments.get(i) {
                Some(pulldown_cmark::Alignment::Right) => (pad, 0),
                Some(pulldown_cmark::Alignment::Center) => (pad / 2, pad - pad / 2),
                _ => (0, pad),
            };
            spans.push(Span::raw(" ".repeat(left + 1)));
            spans.extend(content);
            spans.push(Span::raw(" ".repeat(right + 1)));
        }
        lines.push(Line::from(spans));
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            lines.push(Line::styled(rule.join("┼"), dim));
        }
    }
    lines
}

/// `spans` cut to `width` columns, `…` marking a cut.
fn cut_spans(spans: &[Span<'static>], width: usize) -> Vec<Span<'static>> {
    let total: usize = spans.iter().map(Span::width).sum();
    if total <= width {
        return spans.to_vec();
    }
    let mut out = Vec::new();
    let mut used = 0;
    let room = width.saturating_sub(1);
    'spans: for s in spans {
        let mut piece = String::new();
        for c in s.content.chars() {
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + cw > room {
                out.push(Span::styled(piece, s.style));
                break 'spans;
            }
            piece.push(c);
            used += cw;
        }
        out.push(Span::styled(piece, s.style));
    }
    out.push(Span::raw("…"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn renders_the_common_blocks() {
        let src = "# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n> quoted\n\n```rust\nfn main() {}\n```\n";
        let lines = render(src, 80);
        assert_eq!(
            texts(&lines),
            vec![
                "# Title",
                "",
                "Some bold and code.",
                "",
                "• one",
                "• two",
                "",
                "1. first",
                "2. second",
                "",
                "│ quoted",
                "",
                "```rust",
                "  fn main() {}",
                "```",
            ]
        );
        assert!(
            lines[2]
                .spans
                .iter()
                .any(|s| s.content == "bold" && s.style.add_modifier.contains(Modifier::BOLD))
        );
    }

    #[test]
    fn split_pieces_render_like_the_whole() {
        let block = "## Findings\n\nThe handler **trusts** the `user_id` field.\n\n- tokens\n- errors\n\n1. first\n\n2. loose second\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n    indented code\n\n    more of it\n\n> Fix the check first.\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nA paragraph\nthat goes on.\n";
        let src = block.repeat(40);
        let pieces = split_blocks(&src, 300);
        assert!(pieces.len() > 20, "{} pieces", pieces.len());
        assert_eq!(pieces.first().map(|r| r.start), Some(0));
        assert_eq!(pieces.last().map(|r| r.end), Some(src.len()));
        assert!(pieces.windows(2).all(|w| w[0].end == w[1].start));
        for width in [30, 80] {
            let mut joined = Vec::new();
            for (i, r) in pieces.iter().enumerate() {
                let lines = render(&src[r.clone()], width);
                let last = i + 1 == pieces.len();
                let any = !lines.is_empty();
                joined.extend(lines);
                if any && !last {
                    joined.push(Line::default());
                }
            }
            assert_eq!(texts(&joined), texts(&render(&src, width)), "width {width}");
        }
        // A fence is never split, however long.
        let code = format!("```\n{}```\n", "x\n\ny\n".repeat(500));
        assert_eq!(split_blocks(&code, 10).len(), 1);
    }

    #[test]
    fn links_keep_their_url_and_fences_show_both_or_neither() {
        let lines = render("See [the docs](https://example.org/d) or <https://x.org>.", 80);
        assert_eq!(
            texts(&lines),
            vec!["See the docs (https://example.org/d) or https://x.org."]
        );
        assert_eq!(
            texts(&render("```\nplain\n```", 40)),
            vec!["```", "  plain", "```"]
        );
        assert_eq!(
            texts(&render("```py\nx = 1\n```", 40)),
            vec!["```py", "  x = 1", "```"]
        );
        assert_eq!(texts(&render("    indented", 40)), vec!["  indented"]);
    }

    #[test]
    fn tables_are_aligned_ruled_and_cut_to_the_width() {
        let src = "| name | score | note |\n|:---|---:|:---:|\n| alpha | 1 | ok |\n| b | 100 | fine |\n";
        let lines = render(src, 80);
        assert_eq!(
            texts(&lines),
            vec![
                " name  │ score │ note ",
                "───────┼───────┼──────",
                " alpha │     1 │  ok  ",
                " b     │   100 │ fine ",
            ]
        );
        let narrow = render(
            "| a long header | b |\n|---|---|\n| a very long cell indeed | x |\n",
            20,
        );
        for l in &narrow {
            assert!(l.width() <= 20, "{l:?}");
        }
        assert!(texts(&narrow)[2].contains('…'), "{:?}", texts(&narrow));
    }

    #[test]
    fn wraps_at_words_and_cuts_long_words() {
        let lines = render("alpha beta gamma delta", 11);
        assert_eq!(texts(&lines), vec!["alpha beta", "gamma delta"]);
        let lines = render("abcdefghijklmnop", 5);
        assert_eq!(texts(&lines), vec!["abcde", "fghij", "klmno", "p"]);
        for l in render("a fairly long line with many words in it to wrap around", 7) {
            assert!(l.width() <= 7, "{l:?}");
        }
    }
}
