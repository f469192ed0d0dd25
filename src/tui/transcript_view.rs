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
    /// The newest generation known to be finished (its text is on disk).
    pub finished_generation: u64,
    /// Lines scrolled up from the bottom; 0 follows the newest text. A cell because a frame
    /// (which sees `&self`) moves it up by the lines appended below a reader scrolled up.
    scroll_from_bottom: Cell<usize>,
    /// Text arrived below the window while scrolled up (the "↓ new" marker).
    new_below: Cell<bool>,
    /// What was below the window at the last frame, to tell how much was appended since.
    anchor: Cell<Option<Anchor>>,
    /// The largest useful scroll at the last frame (scrolling further up does nothing).
    max_scroll: Cell<usize>,
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
    /// Each message's lines at `width`, rendered the first time it comes into view.
    messages: Vec<Option<Vec<Line<'static>>>>,
    /// The streaming text's committed (up to the last newline) part, rendered.
    stream_key: Option<(u64, usize)>,
    stream_lines: Vec<Line<'static>>,
}

impl TranscriptView {
    pub fn set_messages(&mut self, messages: Vec<Message>) {
        self.messages = messages;
        self.loaded = true;
        self.cache.borrow_mut().messages.clear();
    }

    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// A delta of the turn `generation`; pieces of an older turn are dropped.
    pub fn delta(&mut self, generation: u64, text: &str) {
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
            cache.messages.clear();
            cache.stream_key = None;
        }
        cache.messages.resize(self.messages.len(), None);

        let mut tail: Vec<Line<'static>> = Vec::new();
        if let Some((generation, text)) = &self.streaming {
            let clean = sanitize::display(text);
            let committed = clean.rfind('\n').map_or(0, |i| i + 1);
            let key = (*generation, committed);
            if cache.stream_key != Some(key) {
                cache.stream_lines = markdown::render(&clean[..committed], width);
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
                if cache.messages[i].is_none() {
                    let mut lines = Vec::new();
                    render_message(&self.messages[i], width, &mut lines);
                    cache.messages[i] = Some(lines);
                }
                added += cache.messages[i].as_ref().map_or(0, Vec::len) as isize;
            }
            if added != 0 {
                self.scroll_from_bottom
                    .set(scrolled.saturating_add_signed(added).max(1));
            }
            if added > 0 {
                self.new_below.set(true);
            }
        }

        // Walk back from the newest message until the window (plus the scroll) is covered.
        let need = height.saturating_add(self.scroll_from_bottom.get());
        let mut count = tail.len();
        let mut first = self.messages.len();
        while first > 0 && count < need {
            first -= 1;
            if cache.messages[first].is_none() {
                let mut lines = Vec::new();
                render_message(&self.messages[first], width, &mut lines);
                cache.messages[first] = Some(lines);
            }
            count += cache.messages[first].as_ref().map_or(0, Vec::len);
        }
        let max_scroll = if first == 0 {
            count.saturating_sub(height)
        } else {
            usize::MAX
        };
        self.max_scroll.set(max_scroll);
        let scroll = self.scroll_from_bottom.get().min(max_scroll);
        let end = count - scroll;
        let start = end.saturating_sub(height);
        let lines = cache.messages[first..]
            .iter()
            .flat_map(|m| m.iter().flatten())
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

/// A message as lines: a header (who, model, duration, marks), the body, a blank line.
fn render_message(m: &Message, width: u16, out: &mut Vec<Line<'static>>) {
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
    out.push(header(who, bold, &extra.join(" · ")));
    let text = sanitize::display(&m.text);
    out.extend(markdown::render(&text, width));
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
