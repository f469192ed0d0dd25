//! One session's transcript as the UI holds it: the messages loaded from disk, the answer
//! streaming in now, and the scroll position with the layouts of its cells (see
//! [`super::cells`]), so a frame lays out only what changed.

use ratatui::text::Line;

use super::cells::{Cell, CellScroll, Cells};
use crate::model::{Message, MessageRole};

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
    scroll: CellScroll,
}

/// The transcript's cells: its messages, and the answer streaming in below them.
struct Transcript<'a> {
    messages: &'a [Message],
    streaming: Option<&'a (u64, String)>,
}

impl Cells for Transcript<'_> {
    fn count(&self) -> usize {
        self.messages.len()
    }

    fn get(&self, i: usize) -> Cell<'_> {
        Cell::Message(&self.messages[i])
    }

    fn open(&self) -> Option<Cell<'_>> {
        self.streaming.map(|(generation, text)| Cell::Streaming {
            generation: *generation,
            text,
        })
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
        self.scroll.clear();
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
        self.scroll.scroll_up(lines);
    }

    pub fn scroll_down(&mut self, lines: usize) {
        self.scroll.scroll_down(lines);
    }

    /// Back to the bottom, following the newest text.
    pub fn follow(&mut self) {
        self.scroll.set_scroll_from_bottom(0);
    }

    /// Lines scrolled up from the bottom (0: following the newest text).
    pub fn scroll_from_bottom(&self) -> usize {
        self.scroll.scroll_from_bottom()
    }

    /// Sets the scroll (lines up from the bottom), e.g. to show a search match.
    pub fn set_scroll_from_bottom(&mut self, lines: usize) {
        self.scroll.set_scroll_from_bottom(lines);
    }

    /// The message at the top of the window at the last frame.
    pub fn top_message(&self) -> Option<&Message> {
        self.messages.get(self.scroll.top_cell()?)
    }

    /// The raw text of the newest assistant answer.
    pub fn last_answer(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == MessageRole::Assistant && !m.text.trim().is_empty())
            .map(|m| m.text.as_str())
    }

    /// True when text arrived below the window since the reader scrolled up.
    pub fn new_below(&self) -> bool {
        self.scroll.new_below()
    }

    /// Every line of the transcript at `width`, the streaming tail included (for search). Lays
    /// out every message once; the scroll position is kept.
    pub fn all_lines(&mut self, width: u16) -> Vec<Line<'static>> {
        let cells = Transcript {
            messages: &self.messages,
            streaming: self.streaming.as_ref(),
        };
        self.scroll.all_lines(&cells, width)
    }

    /// The lines visible in a `width` x `height` window at the current scroll position, and the
    /// scroll position clamped to the content. Only the messages that reach into the window
    /// are laid out (once per width); older ones wait until they are scrolled to.
    pub fn visible_lines(&mut self, width: u16, height: usize) -> (Vec<Line<'static>>, usize) {
        let cells = Transcript {
            messages: &self.messages,
            streaming: self.streaming.as_ref(),
        };
        self.scroll.visible_lines(&cells, width, height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::markdown;

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
        let (laid_out, pieces) = v.scroll.laid_out(1).expect("the answer is in view");
        assert!(pieces > 20, "{pieces} pieces");
        assert!(laid_out <= 3, "{laid_out} pieces laid out for a 10-line window");
        // Scrolled to the very top, the lines are those of the whole message laid out at once.
        v.scroll_up(usize::MAX / 2);
        let mut all = Vec::new();
        for _ in 0..200 {
            let (_, scroll) = v.visible_lines(60, 10);
            v.scroll_up(10_000);
            if scroll == v.scroll.max_scroll() {
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
        assert!(v.scroll.open_blocks() > 3);
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
        let laid_out = v.scroll.cells_laid_out();
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
