//! The one cell type of the transcript pane: a stored message, the answer streaming in, a tool
//! call (see [`super::tool_cell`]) or a line of a team's timeline. Every cell is cut into
//! pieces (a head, its body's blocks, a foot) that are laid out one by one, so a long answer
//! is laid out only where it is seen. A
//! [`CellScroll`] holds a pane's scroll position and its layouts per width: it walks back
//! from the newest cell and lays out only the pieces that reach into the window.

use std::borrow::Cow;
use std::ops::Range;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;
use super::tool_cell::{self, ToolCell};
use crate::model::{Message, MessageRole};
use crate::text::sanitize;

/// One unit of the transcript pane.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    /// A stored message: who said it (model, duration, marks), its Markdown, its error.
    Message(&'a Message),
    /// The answer of turn `generation` streaming in: Markdown up to its last newline, the rest
    /// as it comes.
    Streaming { generation: u64, text: &'a str },
    /// A line of a team's timeline (or of the notes above it), wrapped, in `style`.
    Timeline { text: &'a str, style: Style },
    /// A tool call of an assistant step, with its result.
    Tool(ToolCell<'a>),
    /// Markdown with no header (a team run's result under its timeline).
    Markdown(&'a str),
    /// Lines laid out already (a broadcast's answers side by side), at the pane's width.
    Lines(&'a [Line<'static>]),
}

/// The cells of a pane, oldest first.
pub trait Cells {
    /// How many cells no longer change (laid out once per width and kept).
    fn count(&self) -> usize;
    fn get(&self, i: usize) -> Cell<'_>;
    /// The cell still changing below them (the streaming answer), if any.
    fn open(&self) -> Option<Cell<'_>>;
}

impl Cells for [Cell<'_>] {
    fn count(&self) -> usize {
        self.len()
    }

    fn get(&self, i: usize) -> Cell<'_> {
        self[i]
    }

    fn open(&self) -> Option<Cell<'_>> {
        None
    }
}

/// A body longer than this is laid out in pieces of about this size.
const PIECE_BYTES: usize = 4096;

/// A cell's layout: its body's blocks and the lines of each piece (index 0 the head, then each
/// block, then the foot), made when first needed.
#[derive(Debug, Default)]
struct Layout {
    /// The sanitised body, when sanitising changed it (else the cell's own text is used).
    clean: Option<String>,
    /// Byte ranges of the body's blocks.
    blocks: Vec<Range<usize>>,
    pieces: Vec<Option<Vec<Line<'static>>>>,
    /// For a streaming cell: the turn and the committed length its blocks were cut for.
    stream: Option<(u64, usize)>,
}

impl Layout {
    fn new(cell: &Cell<'_>) -> Layout {
        let clean = match sanitize::display(body(cell)) {
            Cow::Borrowed(_) => None,
            Cow::Owned(s) => Some(s),
        };
        let blocks = cut(cell, clean.as_deref().unwrap_or(body(cell)));
        let pieces = vec![None; blocks.len() + 2];
        Layout {
            clean,
            blocks,
            pieces,
            stream: None,
        }
    }

    /// The lines of piece `i` of `cell`, laid out now if they were not.
    fn piece(&mut self, cell: &Cell<'_>, i: usize, width: u16) -> &[Line<'static>] {
        if self.pieces[i].is_none() {
            let n = self.blocks.len();
            let lines = if i == 0 {
                head(cell, width)
            } else if i <= n {
                let text = self.clean.as_deref().unwrap_or(body(cell));
                block_lines(cell, &text[self.blocks[i - 1].clone()], i < n, width)
            } else {
                foot(cell, width)
            };
            self.pieces[i] = Some(lines);
        }
        self.pieces[i].as_deref().unwrap_or_default()
    }

    /// The lines of piece `i` as laid out (none if it was not).
    fn laid_out(&self, i: usize) -> &[Line<'static>] {
        self.pieces[i].as_deref().unwrap_or_default()
    }

    /// Every line count, laying out the pieces not laid out yet.
    fn line_count(&mut self, cell: &Cell<'_>, width: u16) -> usize {
        (0..self.pieces.len())
            .map(|i| self.piece(cell, i, width).len())
            .sum()
    }

    /// Lays out an open cell whole. A streaming answer is cut again only when a line was
    /// committed (its finished blocks are kept); the rest after its last newline is laid out
    /// on every call.
    fn lay_out_open(&mut self, cell: &Cell<'_>, width: u16) {
        let Cell::Streaming { generation, text } = *cell else {
            *self = Layout::new(cell);
            self.line_count(cell, width);
            return;
        };
        let clean = sanitize::display(text);
        let committed = clean.rfind('\n').map_or(0, |i| i + 1);
        if self.stream != Some((generation, committed)) {
            let same_turn = self.stream.is_some_and(|(g, _)| g == generation);
            let blocks = cut(cell, &clean[..committed]);
            let mut pieces = vec![None; blocks.len() + 2];
            pieces[0] = Some(head(cell, width));
            // Finished blocks (all but the last) of the same turn are laid out once.
            let finished = if same_turn {
                self.blocks.len().saturating_sub(1)
            } else {
                0
            };
            let n = blocks.len();
            let mut j = 0;
            for (i, r) in blocks.iter().enumerate() {
                let is_finished = i + 1 < n;
                // Both lists are in text order: the old block at this one's start, if any.
                while j < finished && self.blocks[j].start < r.start {
                    j += 1;
                }
                let reused = (is_finished && j < finished && self.blocks[j] == *r)
                    .then(|| self.pieces[j + 1].take())
                    .flatten();
                pieces[i + 1] =
                    Some(reused.unwrap_or_else(|| block_lines(cell, &clean[r.clone()], is_finished, width)));
            }
            self.blocks = blocks;
            self.pieces = pieces;
            self.stream = Some((generation, committed));
        }
        let mut rest = Vec::new();
        if committed < clean.len() {
            markdown::wrap_line_into(
                Line::raw(clean[committed..].to_string()),
                width.max(1) as usize,
                &mut rest,
            );
        }
        if let Some(last) = self.pieces.last_mut() {
            *last = Some(rest);
        }
    }
}

/// The text a cell's blocks are cut from.
fn body<'a>(cell: &Cell<'a>) -> &'a str {
    match *cell {
        Cell::Message(m) => &m.text,
        Cell::Streaming { .. } => "",
        Cell::Timeline { text, .. } | Cell::Markdown(text) => text,
        Cell::Lines(_) => "",
        Cell::Tool(t) => t.body(),
    }
}

/// A body's blocks: one, or pieces of about [`PIECE_BYTES`] cut between Markdown blocks (a
/// tool's result, plain text, between lines).
fn cut(cell: &Cell<'_>, body: &str) -> Vec<Range<usize>> {
    if let Cell::Tool(_) = cell {
        tool_cell::cut_lines(body, PIECE_BYTES)
    } else if body.len() > 2 * PIECE_BYTES {
        markdown::split_blocks(body, PIECE_BYTES)
    } else {
        std::iter::once(0..body.len()).collect()
    }
}

fn head(cell: &Cell<'_>, width: u16) -> Vec<Line<'static>> {
    match cell {
        Cell::Message(m) => vec![message_header(m)],
        Cell::Streaming { .. } => vec![header(
            "assistant",
            Style::default().add_modifier(Modifier::BOLD),
            "streaming…",
        )],
        Cell::Timeline { .. } | Cell::Markdown(_) => Vec::new(),
        Cell::Lines(lines) => lines.to_vec(),
        Cell::Tool(t) => t.head(width),
    }
}

/// One block of a body; a block that is not the last is followed by a blank line.
fn block_lines(cell: &Cell<'_>, text: &str, more: bool, width: u16) -> Vec<Line<'static>> {
    if let Cell::Tool(_) = cell {
        return tool_cell::body_lines(text, width);
    }
    if let Cell::Timeline { style, .. } = cell {
        let mut lines = Vec::new();
        markdown::wrap_line_into(
            Line::from(Span::styled(text.to_string(), *style)),
            width.max(1) as usize,
            &mut lines,
        );
        return lines;
    }
    let mut lines = markdown::render(text, width);
    if more && !lines.is_empty() {
        lines.push(Line::default());
    }
    lines
}

/// After a message's body: its error, if any, and a blank line. A streaming cell's foot (the
/// text after its last newline) is laid out by [`Layout::lay_out_open`].
fn foot(cell: &Cell<'_>, width: u16) -> Vec<Line<'static>> {
    let m = match cell {
        Cell::Message(m) => m,
        Cell::Tool(t) => return t.foot(),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    if let Some(e) = &m.error {
        let e = sanitize::display(e);
        markdown::wrap_line_into(
            Line::styled(format!("error: {e}"), Style::default().fg(Color::Red)),
            width.max(1) as usize,
            &mut out,
        );
    }
    out.push(Line::default());
    out
}

fn header(who: &str, style: Style, extra: &str) -> Line<'static> {
    let mut spans = vec![Span::styled(who.to_string(), style)];
    if !extra.is_empty() {
        spans.push(Span::styled(
            format!("  {extra}"),
            Style::default().add_modifier(Modifier::DIM),
        ));
    }
    Line::from(spans)
}

/// A message's first line: who, model, duration, marks.
fn message_header(m: &Message) -> Line<'static> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut extra = Vec::new();
    if let Some(model) = &m.model {
        extra.push(sanitize::display(model).into_owned());
        if model.starts_with("sim/") {
            extra.push("(simulated)".into());
        }
    }
    if let Some(i) = m.iteration {
        extra.push(format!("iteration {i}"));
    }
    if let Some(ms) = m.duration_ms {
        extra.push(super::cycle_view::seconds(ms));
    }
    if m.interrupted {
        extra.push("interrupted".into());
    }
    if let Some(r) = &m.relay {
        // A relayed message says how it was sent (auto-sent, approved, edited, yours).
        extra.push(format!(
            "relay turn {}{}",
            r.turn,
            r.sent_as
                .map(|s| format!(" · {}", s.as_str()))
                .unwrap_or_default()
        ));
    }
    if m.direct {
        extra.push("direct chat (not a team run)".into());
    }
    if m.superseded {
        extra.push("superseded (not sent again)".into());
    }
    let who = match m.role {
        MessageRole::User => "you",
        MessageRole::Assistant => "assistant",
        MessageRole::System => "system",
        MessageRole::Tool => "tool",
        MessageRole::Notice => "huddle",
    };
    header(who, bold, &extra.join(" · "))
}

/// The bottom of the content at a frame: its width, closed cells and open-cell lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Anchor {
    width: u16,
    closed: usize,
    open_lines: usize,
}

/// A pane's scroll position and its cells' layouts at the width last drawn.
#[derive(Debug, Default)]
pub struct CellScroll {
    width: u16,
    /// Each closed cell's layout, made the first time it comes into view.
    closed: Vec<Option<Layout>>,
    /// The open cell's layout.
    open: Option<Layout>,
    /// Lines scrolled up from the bottom; 0 follows the newest text.
    scroll_from_bottom: usize,
    /// Text arrived below the window while scrolled up (the "↓ new" marker).
    new_below: bool,
    /// What was below the window at the last frame, to tell how much was appended since.
    anchor: Option<Anchor>,
    /// The largest useful scroll at the last frame (scrolling further up does nothing).
    max_scroll: usize,
    /// The closed cell whose line was at the top of the window at the last frame (None: the
    /// open cell, or nothing drawn yet).
    top_cell: Option<usize>,
    /// Closed cells changed in place since the last frame (a tool call's result arrived, a cell
    /// was expanded), with their line count before, when it was known.
    changed: Vec<(usize, Option<usize>)>,
}

impl CellScroll {
    /// Forgets every layout (the cells were replaced).
    pub fn clear(&mut self) {
        self.closed.clear();
        self.open = None;
        self.changed.clear();
    }

    /// The open cell's text started again (a streaming answer only grows, except when a tool
    /// round took what it had): its layout is made anew.
    pub fn restart_open(&mut self) {
        self.open = None;
    }

    /// Closed cell `i` changed: it is laid out again when next seen. Scrolled up, a change at
    /// or below the window's top line moves the text below it, not the text read.
    pub fn invalidate(&mut self, i: usize) {
        let Some(slot) = self.closed.get_mut(i) else {
            return;
        };
        let before = slot.take().and_then(|l| {
            l.pieces
                .iter()
                .map(|p| p.as_ref().map(Vec::len))
                .sum::<Option<usize>>()
        });
        if !self.changed.iter().any(|(j, _)| *j == i) {
            self.changed.push((i, before));
        }
    }

    /// Scrolls (at the width last drawn, in a window `height` lines high) the least that shows
    /// closed cell `i` whole, or its top when it is taller than the window.
    pub fn scroll_to_cell(&mut self, cells: &(impl Cells + ?Sized), i: usize, height: usize) {
        let (width, count) = (self.width, cells.count());
        if width == 0 || height == 0 || i >= count {
            return;
        }
        self.closed.resize_with(count, || None);
        let open_lines: usize = self
            .open
            .as_ref()
            .map_or(0, |l| l.pieces.iter().flatten().map(Vec::len).sum());
        let mut lines = |j: usize| {
            let cell = cells.get(j);
            self.closed[j]
                .get_or_insert_with(|| Layout::new(&cell))
                .line_count(&cell, width)
        };
        // Lines below the cell, and the cell's own.
        let below = open_lines + (i + 1..count).map(&mut lines).sum::<usize>();
        let own = lines(i);
        let top_at_top = (below + own).saturating_sub(height);
        let target = if own >= height {
            top_at_top
        } else {
            self.scroll_from_bottom.clamp(top_at_top, below)
        };
        self.set_scroll_from_bottom(target);
        // Measured against the cells as they are now: nothing is appended since.
        self.changed.clear();
        self.anchor = Some(Anchor {
            width,
            closed: count,
            open_lines,
        });
    }

    pub fn scroll_up(&mut self, lines: usize) {
        let now = self.scroll_from_bottom;
        self.scroll_from_bottom = now.saturating_add(lines).min(self.max_scroll.max(now));
    }

    pub fn scroll_down(&mut self, lines: usize) {
        self.set_scroll_from_bottom(self.scroll_from_bottom.saturating_sub(lines));
    }

    /// Lines scrolled up from the bottom (0: following the newest text).
    pub fn scroll_from_bottom(&self) -> usize {
        self.scroll_from_bottom
    }

    /// Sets the scroll (lines up from the bottom); at 0 the view follows the newest text.
    pub fn set_scroll_from_bottom(&mut self, lines: usize) {
        self.scroll_from_bottom = lines;
        if lines == 0 {
            self.new_below = false;
        }
    }

    /// True when text arrived below the window since the reader scrolled up.
    pub fn new_below(&self) -> bool {
        self.new_below
    }

    /// The closed cell at the top of the window at the last frame.
    pub fn top_cell(&self) -> Option<usize> {
        self.top_cell
    }

    /// Every line of `cells` at `width` (for search). Lays out every cell once; the scroll
    /// position is kept.
    pub fn all_lines(&mut self, cells: &(impl Cells + ?Sized), width: u16) -> Vec<Line<'static>> {
        let (max_scroll, top) = (self.max_scroll, self.top_cell);
        let (lines, _) = self.visible_lines(cells, width, usize::MAX / 4);
        // That pass saw a window taller than the screen: keep what the last frame measured.
        self.max_scroll = max_scroll;
        self.top_cell = top;
        lines
    }

    /// The lines of `cells` visible in a `width` x `height` window at the scroll position, and
    /// the scroll position clamped to the content. Only the pieces that reach into the window
    /// are laid out (once per width); older ones wait until they are scrolled to.
    pub fn visible_lines(
        &mut self,
        cells: &(impl Cells + ?Sized),
        width: u16,
        height: usize,
    ) -> (Vec<Line<'static>>, usize) {
        if self.width != width {
            self.width = width;
            // The sanitised text and its blocks stay; only the lines depend on the width.
            for layout in self.closed.iter_mut().flatten() {
                layout.pieces.iter_mut().for_each(|p| *p = None);
            }
            self.open = None;
        }
        let closed = cells.count();
        self.closed.resize_with(closed, || None);
        let open_lines = match cells.open() {
            Some(cell) => {
                let layout = self.open.get_or_insert_with(Layout::default);
                layout.lay_out_open(&cell, width);
                layout.pieces.iter().flatten().map(Vec::len).sum()
            }
            None => {
                self.open = None;
                0
            }
        };

        // Scrolled up: whatever was appended since the last frame goes below the window, so the
        // text the reader looks at stays where it is. At the bottom the view follows.
        let previous = self.anchor.replace(Anchor {
            width,
            closed,
            open_lines,
        });
        let scrolled = self.scroll_from_bottom;
        let changed = std::mem::take(&mut self.changed);
        if let Some(a) = previous.filter(|a| scrolled > 0 && a.width == width && a.closed <= closed) {
            let mut added = open_lines as isize - a.open_lines as isize;
            for i in a.closed..closed {
                let cell = cells.get(i);
                added += self.closed[i]
                    .get_or_insert_with(|| Layout::new(&cell))
                    .line_count(&cell, width) as isize;
            }
            let top = self.top_cell;
            for (i, before) in changed {
                let Some(before) = before.filter(|_| i < a.closed && top.is_some_and(|t| i >= t)) else {
                    continue;
                };
                let cell = cells.get(i);
                let now = self.closed[i]
                    .get_or_insert_with(|| Layout::new(&cell))
                    .line_count(&cell, width);
                added += now as isize - before as isize;
            }
            if added != 0 {
                self.scroll_from_bottom = scrolled.saturating_add_signed(added).max(1);
            }
            if added > 0 {
                self.new_below = true;
            }
        }

        // Walk back from the newest piece until the window (plus the scroll) is covered.
        let need = height.saturating_add(self.scroll_from_bottom);
        let mut count = open_lines;
        let mut shown: Vec<(usize, usize)> = Vec::new();
        let mut reached_top = true;
        'walk: for ci in (0..closed).rev() {
            if count >= need {
                reached_top = false;
                break;
            }
            let cell = cells.get(ci);
            let layout = self.closed[ci].get_or_insert_with(|| Layout::new(&cell));
            for pi in (0..layout.pieces.len()).rev() {
                if count >= need {
                    reached_top = false;
                    break 'walk;
                }
                count += layout.piece(&cell, pi, width).len();
                shown.push((ci, pi));
            }
        }
        self.max_scroll = if reached_top {
            count.saturating_sub(height)
        } else {
            usize::MAX
        };
        let scroll = self.scroll_from_bottom.min(self.max_scroll);
        // Kept clamped, so that scrolling down from "the top" (a jump by usize::MAX) moves at
        // once.
        self.scroll_from_bottom = scroll;
        let end = count - scroll;
        let start = end.saturating_sub(height);
        let piece = |(ci, pi): (usize, usize)| -> &[Line<'static>] {
            self.closed[ci].as_ref().map_or(&[], |l| l.laid_out(pi))
        };
        let mut seen = 0;
        self.top_cell = shown.iter().rev().find_map(|&at| {
            seen += piece(at).len();
            (seen > start).then_some(at.0)
        });
        let open = self.open.iter().flat_map(|l| l.pieces.iter().flatten().flatten());
        let lines = shown
            .iter()
            .rev()
            .flat_map(|&at| piece(at))
            .chain(open)
            .skip(start)
            .take(end - start)
            .cloned()
            .collect();
        (lines, scroll)
    }

    /// Of closed cell `i`: its pieces laid out, and all its pieces (None: not in view yet).
    #[cfg(test)]
    pub(super) fn laid_out(&self, i: usize) -> Option<(usize, usize)> {
        let layout = self.closed.get(i)?.as_ref()?;
        let done = layout.pieces.iter().filter(|p| p.is_some()).count();
        Some((done, layout.pieces.len()))
    }

    /// How many closed cells are laid out (in part or whole).
    #[cfg(test)]
    pub(super) fn cells_laid_out(&self) -> usize {
        self.closed.iter().filter(|l| l.is_some()).count()
    }

    /// The open cell's body blocks.
    #[cfg(test)]
    pub(super) fn open_blocks(&self) -> usize {
        self.open.as_ref().map_or(0, |l| l.blocks.len())
    }

    #[cfg(test)]
    pub(super) fn max_scroll(&self) -> usize {
        self.max_scroll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn timeline_lines_wrap_in_their_style_and_only_those_in_view_are_laid_out() {
        let texts: Vec<String> = (0..300).map(|i| format!("  step {i} of the run")).collect();
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let cells: Vec<Cell<'_>> = texts
            .iter()
            .map(|t| Cell::Timeline { text: t, style: bold })
            .collect();
        let mut scroll = CellScroll::default();
        // 12 columns: each entry wraps to two lines.
        let (lines, at) = scroll.visible_lines(&cells[..], 12, 6);
        assert_eq!(at, 0);
        assert_eq!(
            text_of(&lines),
            [
                "  step 297",
                "of the run",
                "  step 298",
                "of the run",
                "  step 299",
                "of the run"
            ]
        );
        assert!(lines.iter().all(|l| l.spans.iter().all(|s| s.style == bold)));
        assert!(
            scroll.cells_laid_out() <= 4,
            "{} laid out",
            scroll.cells_laid_out()
        );
        assert_eq!(scroll.top_cell(), Some(297));
        // A blank line is a line.
        let blank = [Cell::Timeline {
            text: "",
            style: Style::default(),
        }];
        assert_eq!(CellScroll::default().visible_lines(&blank[..], 10, 5).0.len(), 1);
    }

    #[test]
    fn messages_and_timeline_lines_lay_out_through_the_same_walk() {
        let q = Message::user("the question");
        let mut a = Message::assistant("**bold** answer");
        a.error = Some("cut".into());
        let cells = [
            Cell::Timeline {
                text: "── run ──",
                style: Style::default(),
            },
            Cell::Message(&q),
            Cell::Message(&a),
        ];
        let (lines, _) = CellScroll::default().visible_lines(&cells[..], 40, 20);
        assert_eq!(
            text_of(&lines),
            [
                "── run ──",
                "you",
                "the question",
                "",
                "assistant",
                "bold answer",
                "error: cut",
                ""
            ]
        );
    }
}
