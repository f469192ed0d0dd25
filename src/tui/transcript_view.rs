//! One session's transcript as the UI holds it: the messages loaded from disk, the answer
//! streaming in now, the scroll position, and a cache of rendered lines per width so a frame
//! lays out only what changed.

use std::cell::{Cell, RefCell};

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;
use crate::model::{Message, MessageRole};
use crate::text::sanitize;

#[derive(Debug, Default)]
pub struct TranscriptView {
    pub messages: Vec<Message>,
    pub loaded: bool,
    pub load_error: Option<String>,
    /// The turn in flight: its generation and the text so far.
    pub streaming: Option<(u64, String)>,
    /// The newest generation known to be finished (its message is in `messages`).
    pub finished_generation: u64,
    /// Messages whose events came while the transcript was being read from disk: added, minus
    /// those the file already had, once it is loaded.
    pending: Vec<Message>,
    /// Lines scrolled up from the bottom; 0 follows the newest text. A cell because a frame
    /// (which sees `&self`) moves it up by the lines appended below a reader scrolled up.
    scroll_from_bottom: Cell<usize>,
    /// Text arrived below the window while scrolled up (the "↓ new" marker).
    new_below: Cell<bool>,
    /// What was below the window at the last frame, to tell how much was appended since.
    anchor: Cell<Option<Anchor>>,
    /// The largest useful scroll at the last frame (scrolling further up does nothing).
    max_scroll: Cell<usize>,
    /// The message whose line was at the top of the window at the last frame (None: the
    /// streaming tail, or nothing drawn yet).
    top_message: Cell<Option<usize>>,
    cache: RefCell<RenderCache>,
}

/// The bottom of the content at a frame: its width, message count and streaming-tail lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Anchor {
    width: u16,
    messages: usize,
    tail: usize,
}

#[derive(Debug, Default)]
struct RenderCache {
    width: u16,
    /// Each message's layout at `width`, made the first time it comes into view.
    messages: Vec<Option<MessageLayout>>,
    /// The streaming text's committed (up to the last newline) part, rendered.
    stream_key: Option<(u64, usize)>,
    stream_lines: Vec<Line<'static>>,
    /// The committed streaming text's finished pieces (all but the last), rendered, by range.
    stream_pieces: Vec<(std::ops::Range<usize>, Vec<Line<'static>>)>,
}

/// A message cut into pieces laid out one by one: the header, the body's Markdown blocks (a long
/// answer has many), the footer (error, blank line). A frame lays out only the pieces it shows.
#[derive(Debug, Default)]
struct MessageLayout {
    /// The sanitised body, when sanitising changed it (else the message text is used).
    clean: Option<String>,
    /// Byte ranges of the body's pieces.
    blocks: Vec<std::ops::Range<usize>>,
    /// Lines per piece: index 0 the header, then each block, then the footer.
    pieces: Vec<Option<Vec<Line<'static>>>>,
}

/// A body longer than this is laid out in pieces of about this size.
const PIECE_BYTES: usize = 4096;

impl MessageLayout {
    fn new(m: &Message) -> MessageLayout {
        let clean = match sanitize::display(&m.text) {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(s) => Some(s),
        };
        let body = clean.as_deref().unwrap_or(&m.text);
        let blocks = if body.len() > 2 * PIECE_BYTES {
            markdown::split_blocks(body, PIECE_BYTES)
        } else {
            std::iter::once(0..body.len()).collect()
        };
        let pieces = vec![None; blocks.len() + 2];
        MessageLayout {
            clean,
            blocks,
            pieces,
        }
    }

    /// The lines of piece `i`, laid out now if they were not.
    fn piece(&mut self, m: &Message, i: usize, width: u16) -> &[Line<'static>] {
        if self.pieces[i].is_none() {
            let mut lines = Vec::new();
            let blocks = self.blocks.len();
            if i == 0 {
                lines.push(message_header(m));
            } else if i <= blocks {
                let body = self.clean.as_deref().unwrap_or(&m.text);
                lines = markdown::render(&body[self.blocks[i - 1].clone()], width);
                if i < blocks && !lines.is_empty() {
                    lines.push(Line::default());
                }
            } else {
                message_footer(m, width, &mut lines);
            }
            self.pieces[i] = Some(lines);
        }
        self.pieces[i].as_deref().unwrap_or_default()
    }

    /// Every line count, laying out the pieces not laid out yet.
    fn line_count(&mut self, m: &Message, width: u16) -> usize {
        (0..self.pieces.len())
            .map(|i| self.piece(m, i, width).len())
            .sum()
    }
}

/// How far back from the end a message arriving by event is looked for among the loaded
/// ones: events race only with the newest lines of the file.
const DEDUP_WINDOW: usize = 256;

impl TranscriptView {
    /// The transcript as read from disk; messages that arrived by event meanwhile follow,
    /// those the file already had skipped.
    pub fn set_messages(&mut self, messages: Vec<Message>) {
        self.messages = messages;
        self.loaded = true;
        self.cache.borrow_mut().messages.clear();
        for m in std::mem::take(&mut self.pending) {
            self.add(m);
        }
    }

    /// A message stored in the transcript, as its event carries it.
    pub fn add(&mut self, message: Message) {
        if !self.loaded {
            self.pending.push(message);
            return;
        }
        let known = message.id.is_some()
            && self
                .messages
                .iter()
                .rev()
                .take(DEDUP_WINDOW)
                .any(|m| m.id == message.id);
        if !known {
            self.messages.push(message);
        }
    }

    /// A turn started: its streaming tail begins empty.
    pub fn turn_started(&mut self, generation: u64) {
        if generation > self.finished_generation {
            self.streaming = Some((generation, String::new()));
        }
    }

    /// A turn ended with its stored answer: the answer replaces the streaming tail.
    pub fn turn_finished(&mut self, generation: u64, answer: Option<Message>) {
        self.finished_generation = self.finished_generation.max(generation);
        if self.streaming.as_ref().is_some_and(|(g, _)| *g <= generation) {
            self.streaming = None;
        }
        if let Some(m) = answer {
            self.add(m);
        }
    }

    /// A delta of the turn `generation`; pieces of an older turn are dropped.
    pub fn delta(&mut self, generation: u64, text: &str) {
        if generation <= self.finished_generation {
            return;
        }
        match &mut self.streaming {
            Some((g, buf)) if *g == generation => buf.push_str(text),
            Some((g, _)) if *g > generation => {}
            _ => self.streaming = Some((generation, text.to_string())),
        }
    }

    pub fn scroll_up(&mut self, lines: usize) {
        let now = self.scroll_from_bottom.get();
        self.scroll_from_bottom
            .set(now.saturating_add(lines).min(self.max_scroll.get().max(now)));
    }

    pub fn scroll_down(&mut self, lines: usize) {
        let next = self.scroll_from_bottom.get().saturating_sub(lines);
        self.scroll_from_bottom.set(next);
        if next == 0 {
            self.new_below.set(false);
        }
    }

    /// Back to the bottom, following the newest text.
    pub fn follow(&mut self) {
        self.scroll_from_bottom.set(0);
        self.new_below.set(false);
    }

    /// Lines scrolled up from the bottom (0: following the newest text).
    pub fn scroll_from_bottom(&self) -> usize {
        self.scroll_from_bottom.get()
    }

    /// Sets the scroll (lines up from the bottom), e.g. to show a search match.
    pub fn set_scroll_from_bottom(&self, lines: usize) {
        self.scroll_from_bottom.set(lines);
        if lines == 0 {
            self.new_below.set(false);
        }
    }

    /// The message at the top of the window at the last frame.
    pub fn top_message(&self) -> Option<&Message> {
        self.messages.get(self.top_message.get()?)
    }

    /// The raw text of the newest assistant answer.
    pub fn last_answer(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == MessageRole::Assistant && !m.text.trim().is_empty())
            .map(|m| m.text.as_str())
    }

    /// Every line of the transcript at `width`, the streaming tail included (for search). Lays
    /// out every message once; the scroll position is kept.
    pub fn all_lines(&self, width: u16) -> Vec<Line<'static>> {
        let max_scroll = self.max_scroll.get();
        let top = self.top_message.get();
        let (lines, _) = self.visible_lines(width, usize::MAX / 4);
        // That pass saw a window taller than the screen: keep what the last frame measured.
        self.max_scroll.set(max_scroll);
        self.top_message.set(top);
        lines
    }

    /// True when text arrived below the window since the reader scrolled up.
    pub fn new_below(&self) -> bool {
        self.new_below.get()
    }

    /// The lines visible in a `width` x `height` window at the current scroll position, and the
    /// scroll position clamped to the content. Only the messages that reach into the window
    /// are laid out (once per width); older ones wait until they are scrolled to.
    pub fn visible_lines(&self, width: u16, height: usize) -> (Vec<Line<'static>>, usize) {
        let mut cache = self.cache.borrow_mut();
        if cache.width != width {
            cache.width = width;
            // The sanitised text and its pieces stay; only the lines depend on the width.
            for layout in cache.messages.iter_mut().flatten() {
                layout.pieces.iter_mut().for_each(|p| *p = None);
            }
            cache.stream_key = None;
        }
        cache.messages.resize_with(self.messages.len(), || None);

        let mut tail: Vec<Line<'static>> = Vec::new();
        if let Some((generation, text)) = &self.streaming {
            let clean = sanitize::display(text);
            let committed = clean.rfind('\n').map_or(0, |i| i + 1);
            let key = (*generation, committed);
            if cache.stream_key != Some(key) {
                let cache = &mut *cache;
                if cache.stream_key.is_none_or(|(g, _)| g != *generation) {
                    cache.stream_pieces.clear();
                }
                // Finished pieces of a long answer are laid out once; the last one again.
                let ranges = if committed > 2 * PIECE_BYTES {
                    markdown::split_blocks(&clean[..committed], PIECE_BYTES)
                } else {
                    std::iter::once(0..committed).collect::<Vec<_>>()
                };
                let last = ranges.len() - 1;
                let mut pieces = Vec::with_capacity(last);
                let mut lines = Vec::new();
                for (i, r) in ranges.into_iter().enumerate() {
                    if i == last {
                        lines.extend(markdown::render(&clean[r], width));
                        break;
                    }
                    let reused = cache
                        .stream_pieces
                        .iter()
                        .position(|(have, _)| *have == r)
                        .map(|j| std::mem::take(&mut cache.stream_pieces[j].1));
                    let piece = reused.unwrap_or_else(|| {
                        let mut l = markdown::render(&clean[r.clone()], width);
                        if !l.is_empty() {
                            l.push(Line::default());
                        }
                        l
                    });
                    lines.extend(piece.iter().cloned());
                    pieces.push((r, piece));
                }
                cache.stream_pieces = pieces;
                cache.stream_lines = lines;
                cache.stream_key = Some(key);
            }
            tail.push(header(
                "assistant",
                Style::default().add_modifier(Modifier::BOLD),
                "streaming…",
            ));
            tail.extend(cache.stream_lines.iter().cloned());
            let rest = &clean[committed..];
            if !rest.is_empty() {
                markdown::wrap_line_into(Line::raw(rest.to_string()), width.max(1) as usize, &mut tail);
            }
        }

        // Scrolled up: whatever was appended since the last frame goes below the window, so the
        // text the reader looks at stays where it is. At the bottom the view follows.
        let previous = self.anchor.replace(Some(Anchor {
            width,
            messages: self.messages.len(),
            tail: tail.len(),
        }));
        let scrolled = self.scroll_from_bottom.get();
        if let Some(a) =
            previous.filter(|a| scrolled > 0 && a.width == width && a.messages <= self.messages.len())
        {
            let mut added = tail.len() as isize - a.tail as isize;
            for i in a.messages..self.messages.len() {
                let m = &self.messages[i];
                added += cache.messages[i]
                    .get_or_insert_with(|| MessageLayout::new(m))
                    .line_count(m, width) as isize;
            }
            if added != 0 {
                self.scroll_from_bottom
                    .set(scrolled.saturating_add_signed(added).max(1));
            }
            if added > 0 {
                self.new_below.set(true);
            }
        }

        // Walk back from the newest piece until the window (plus the scroll) is covered.
        let need = height.saturating_add(self.scroll_from_bottom.get());
        let mut count = tail.len();
        let mut shown: Vec<(usize, usize)> = Vec::new();
        let mut reached_top = true;
        'walk: for mi in (0..self.messages.len()).rev() {
            if count >= need {
                reached_top = false;
                break;
            }
            let m = &self.messages[mi];
            let layout = cache.messages[mi].get_or_insert_with(|| MessageLayout::new(m));
            for pi in (0..layout.pieces.len()).rev() {
                if count >= need {
                    reached_top = false;
                    break 'walk;
                }
                count += layout.piece(m, pi, width).len();
                shown.push((mi, pi));
            }
        }
        let max_scroll = if reached_top {
            count.saturating_sub(height)
        } else {
            usize::MAX
        };
        self.max_scroll.set(max_scroll);
        let scroll = self.scroll_from_bottom.get().min(max_scroll);
        let end = count - scroll;
        let start = end.saturating_sub(height);
        let mut seen = 0;
        let mut top = None;
        for &(mi, pi) in shown.iter().rev() {
            seen += cache.messages[mi]
                .as_ref()
                .and_then(|l| l.pieces[pi].as_deref())
                .map_or(0, <[Line<'static>]>::len);
            if seen > start {
                top = Some(mi);
                break;
            }
        }
        self.top_message.set(top);
        let lines = shown
            .iter()
            .rev()
            .flat_map(|&(mi, pi)| {
                cache.messages[mi]
                    .as_ref()
                    .and_then(|l| l.pieces[pi].as_deref())
                    .unwrap_or_default()
            })
            .chain(tail.iter())
            .skip(start)
            .take(end - start)
            .cloned()
            .collect();
        (lines, scroll)
    }
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
    let who = match m.role {
        MessageRole::User => "you",
        MessageRole::Assistant => "assistant",
        MessageRole::System => "system",
        MessageRole::Notice => "huddle",
    };
    header(who, bold, &extra.join(" · "))
}

/// After the body: the error, if any, and a blank line.
fn message_footer(m: &Message, width: u16, out: &mut Vec<Line<'static>>) {
    if let Some(e) = &m.error {
        let e = sanitize::display(e);
        markdown::wrap_line_into(
            Line::styled(
                format!("error: {e}"),
                Style::default().fg(ratatui::style::Color::Red),
            ),
            width.max(1) as usize,
            out,
        );
    }
    out.push(Line::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn streaming_drops_stale_generations_and_follows_the_tail() {
        let mut v = TranscriptView::default();
        v.set_messages(vec![Message::user("hi")]);
        v.delta(2, "Hello ");
        v.delta(1, "LATE");
        v.delta(2, "world");
        let (lines, scroll) = v.visible_lines(40, 10);
        let text = text_of(&lines).join("\n");
        assert!(text.contains("Hello world"), "{text}");
        assert!(!text.contains("LATE"), "{text}");
        assert_eq!(scroll, 0);
    }

    #[test]
    fn scrolling_is_clamped_and_shows_older_lines() {
        let mut v = TranscriptView::default();
        v.set_messages((0..50).map(|i| Message::assistant(format!("line {i}"))).collect());
        let _ = v.visible_lines(40, 5);
        v.scroll_up(10_000);
        let (lines, scroll) = v.visible_lines(40, 5);
        assert_eq!(lines.len(), 5);
        assert!(
            text_of(&lines)[0].starts_with("assistant"),
            "{:?}",
            text_of(&lines)
        );
        assert!(scroll > 0);
        v.follow();
        let (lines, _) = v.visible_lines(40, 5);
        assert!(text_of(&lines).join("\n").contains("line 49"));
    }

    #[test]
    fn scrolled_up_the_view_stays_on_the_same_lines_while_text_arrives() {
        let mut v = TranscriptView::default();
        v.set_messages((0..40).map(|i| Message::assistant(format!("line {i}"))).collect());
        let _ = v.visible_lines(40, 6);
        v.scroll_up(9);
        let (before, _) = v.visible_lines(40, 6);
        assert!(!v.new_below());
        v.delta(1, "one\ntwo\nthree\n");
        let (after, _) = v.visible_lines(40, 6);
        assert_eq!(text_of(&before), text_of(&after));
        assert!(v.new_below());
        // The finished answer replaces the streamed tail: still the same lines on screen.
        v.streaming = None;
        let mut messages = v.messages.clone();
        messages.push(Message::assistant("one\ntwo\nthree\nfour"));
        v.set_messages(messages);
        let (reloaded, _) = v.visible_lines(40, 6);
        assert_eq!(text_of(&before), text_of(&reloaded));
        // Following the bottom, new text shows at once.
        v.follow();
        v.delta(2, "newest\n");
        let (lines, scroll) = v.visible_lines(40, 6);
        assert_eq!(scroll, 0);
        assert!(text_of(&lines).join("\n").contains("newest"));
        assert!(!v.new_below());
    }

    #[test]
    fn a_long_message_is_laid_out_only_where_it_is_seen() {
        let block = "A paragraph of the long answer, with **bold** words.\n\n- a list\n- of items\n\n";
        let text = block.repeat(4000);
        let mut v = TranscriptView::default();
        v.set_messages(vec![Message::user("q"), Message::assistant(text.clone())]);
        let (lines, _) = v.visible_lines(60, 10);
        assert_eq!(lines.len(), 10);
        let laid_out = {
            let cache = v.cache.borrow();
            let layout = cache.messages[1].as_ref().expect("the answer is in view");
            let done = layout.pieces.iter().filter(|p| p.is_some()).count();
            assert!(layout.pieces.len() > 20, "{} pieces", layout.pieces.len());
            done
        };
        assert!(laid_out <= 3, "{laid_out} pieces laid out for a 10-line window");
        // Scrolled to the very top, the lines are those of the whole message laid out at once.
        v.scroll_up(usize::MAX / 2);
        let mut all = Vec::new();
        for _ in 0..200 {
            let (_, scroll) = v.visible_lines(60, 10);
            v.scroll_up(10_000);
            if scroll == v.max_scroll.get() {
                break;
            }
        }
        let (top, _) = v.visible_lines(60, 10);
        all.extend(text_of(&top));
        let mut whole = vec!["assistant".to_string()];
        whole.extend(text_of(&markdown::render(&text, 60)));
        let expected: Vec<String> = ["you", "q", ""]
            .iter()
            .map(|s| s.to_string())
            .chain(whole)
            .take(10)
            .collect();
        assert_eq!(all, expected);
    }

    #[test]
    fn a_long_stream_reuses_its_finished_pieces_and_shows_the_same_lines() {
        let block = "Some streamed text with `code`.\n\n1. one\n2. two\n\n";
        let mut v = TranscriptView::default();
        v.set_messages(Vec::new());
        let mut text = String::new();
        for _ in 0..600 {
            v.delta(3, block);
            text.push_str(block);
            let _ = v.visible_lines(50, 8);
        }
        assert!(v.cache.borrow().stream_pieces.len() > 3);
        let (lines, _) = v.visible_lines(50, 8);
        let mut whole = vec!["assistant  streaming…".to_string()];
        whole.extend(text_of(&markdown::render(&text, 50)));
        let tail: Vec<String> = whole[whole.len() - 8..].to_vec();
        assert_eq!(text_of(&lines), tail);
    }

    #[test]
    fn only_messages_in_view_are_laid_out() {
        let mut v = TranscriptView::default();
        v.set_messages(
            (0..1000)
                .map(|i| Message::assistant(format!("answer {i}")))
                .collect(),
        );
        let (lines, _) = v.visible_lines(40, 10);
        assert_eq!(lines.len(), 10);
        let laid_out = v.cache.borrow().messages.iter().filter(|m| m.is_some()).count();
        assert!(laid_out <= 4, "{laid_out} messages laid out for a 10-line window");
        v.scroll_up(25);
        let (lines, scroll) = v.visible_lines(40, 10);
        assert_eq!(scroll, 25);
        assert!(
            lines.iter().any(|l| l.to_string().contains("answer 991")),
            "{lines:?}"
        );
    }
}
