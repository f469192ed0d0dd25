//! One session's transcript as the UI holds it: the messages loaded from disk, the answer
//! streaming in now, and the scroll position with the layouts of its cells (see
//! [`super::cells`]), so a frame lays out only what changed.
//!
//! Messages become cells one by one, live or read back alike: an assistant step that called
//! tools is its text (if any) then one tool cell per call; a `tool` message is no cell of its
//! own but the result of its call's cell. While a call has no result, the events of the turn
//! say whether it runs or waits for approval ([`LiveCalls`]). The tool cursor (`selected`)
//! picks a tool cell to expand.

use std::collections::HashMap;

use ratatui::text::Line;

use super::cells::{Cell, CellScroll, Cells};
use super::tool_cell::{ToolCell, ToolLive};
use crate::model::{Message, MessageRole};

/// What the events said of the calls of the turn going that have no result yet, by call id.
#[derive(Debug, Default, Clone)]
pub struct LiveCalls(HashMap<String, ToolLive>);

impl LiveCalls {
    /// Call `call_id` runs, waits, or (None) is over.
    pub fn apply(&mut self, call_id: &str, state: Option<ToolLive>) {
        match state {
            Some(s) => {
                self.0.insert(call_id.to_string(), s);
            }
            None => {
                self.0.remove(call_id);
            }
        }
    }

    /// Call `call_id` waits for the user's approval (`true`) or was answered (it runs, or
    /// its result is on the way). True when that changed something.
    pub fn approval(&mut self, call_id: &str, waiting: bool) -> bool {
        if !waiting && !self.0.contains_key(call_id) {
            return false;
        }
        let state = if waiting {
            ToolLive::Waiting
        } else {
            ToolLive::Running
        };
        self.0.insert(call_id.to_string(), state) != Some(state)
    }

    pub fn get(&self, call_id: &str) -> Option<ToolLive> {
        self.0.get(call_id).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One cell of the transcript, by index into its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A message drawn as it is.
    Message(usize),
    /// Call `call` of the assistant step `step`, answered by the `tool` message `result`.
    Tool {
        step: usize,
        call: usize,
        result: Option<usize>,
        expanded: bool,
    },
}

#[derive(Debug, Default)]
pub struct TranscriptView {
    /// Changed only through the view's methods (its cells are kept in step).
    pub messages: Vec<Message>,
    /// The cells the messages make, in order.
    entries: Vec<Entry>,
    /// Calls of the turn going without a result yet.
    live: LiveCalls,
    /// The tool cell under the tool cursor (an index into `entries`).
    selected: Option<usize>,
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
    /// The conversations before the current one (each begins at a conversation mark, except
    /// perhaps the first): read-only, kept to browse. `messages` holds the current one.
    pub earlier: Vec<Message>,
}

/// The transcript's cells: its messages and tool calls, and the answer streaming in below them.
struct Transcript<'a> {
    messages: &'a [Message],
    entries: &'a [Entry],
    live: &'a LiveCalls,
    selected: Option<usize>,
    streaming: Option<&'a (u64, String)>,
}

impl Cells for Transcript<'_> {
    fn count(&self) -> usize {
        self.entries.len()
    }

    fn get(&self, i: usize) -> Cell<'_> {
        match self.entries[i] {
            Entry::Message(m) => Cell::Message(&self.messages[m]),
            Entry::Tool {
                step,
                call,
                result,
                expanded,
            } => {
                let calls = &self.messages[step].tool_calls;
                let c = &calls[call];
                Cell::Tool(ToolCell {
                    call: c,
                    result: result.map(|r| &self.messages[r]),
                    live: self.live.get(&c.id),
                    expanded,
                    selected: self.selected == Some(i),
                    last: call + 1 == calls.len(),
                })
            }
        }
    }

    fn open(&self) -> Option<Cell<'_>> {
        // While tools run, the next round's text has not begun: no empty "streaming" cell
        // below them.
        self.streaming
            .filter(|(_, text)| !text.is_empty() || self.live.is_empty())
            .map(|(generation, text)| Cell::Streaming {
                generation: *generation,
                text,
            })
    }
}

/// The cells of a view's fields (a macro, so the scroll can be borrowed beside them).
macro_rules! cells {
    ($view:expr) => {
        Transcript {
            messages: &$view.messages,
            entries: &$view.entries,
            live: &$view.live,
            selected: $view.selected,
            streaming: $view.streaming.as_ref(),
        }
    };
}

/// How far back from the end a message arriving by event is looked for among the loaded
/// ones: events race only with the newest lines of the file.
const DEDUP_WINDOW: usize = 256;

impl TranscriptView {
    /// The transcript as read from disk; messages that arrived by event meanwhile follow,
    /// those the file already had skipped.
    pub fn set_messages(&mut self, mut messages: Vec<Message>) {
        // Only the current conversation is shown; the ones before it are kept to browse.
        let start = messages.iter().rposition(|m| m.conversation_start).unwrap_or(0);
        let current = messages.split_off(start);
        self.earlier = messages;
        self.messages = current;
        mark_superseded(&mut self.messages);
        self.loaded = true;
        self.reindex();
        for m in std::mem::take(&mut self.pending) {
            self.add(m);
        }
    }

    /// Makes every cell again.
    fn reindex(&mut self) {
        self.scroll.clear();
        self.entries.clear();
        self.selected = None;
        for i in 0..self.messages.len() {
            self.index(i);
        }
    }

    /// How many conversations came before the current one.
    pub fn earlier_count(&self) -> usize {
        conversation_ranges(&self.earlier).len()
    }

    /// A view of earlier conversation `index` (0: the first), read-only.
    pub fn earlier_view(&self, index: usize) -> Option<TranscriptView> {
        let range = conversation_ranges(&self.earlier).get(index)?.clone();
        let mut view = TranscriptView::default();
        view.set_messages(self.earlier[range].to_vec());
        Some(view)
    }

    /// Makes the cells of message `at` (just appended).
    fn index(&mut self, at: usize) {
        let m = &self.messages[at];
        match m.role {
            MessageRole::Tool => {
                if let Some(info) = &m.tool_result
                    && let Some(i) = self.open_call(&info.call_id)
                {
                    if let Entry::Tool { result, .. } = &mut self.entries[i] {
                        *result = Some(at);
                    }
                    self.scroll.invalidate(i);
                    return;
                }
                // A result whose call is not in sight: drawn as a message.
                self.entries.push(Entry::Message(at));
            }
            MessageRole::Assistant if !m.tool_calls.is_empty() => {
                if !m.text.trim().is_empty() || m.error.is_some() {
                    self.entries.push(Entry::Message(at));
                }
                self.entries
                    .extend((0..m.tool_calls.len()).map(|call| Entry::Tool {
                        step: at,
                        call,
                        result: None,
                        expanded: false,
                    }));
            }
            _ => self.entries.push(Entry::Message(at)),
        }
    }

    /// The newest cell of call `call_id` that has no result yet (among the newest cells: a
    /// result follows its call within its turn).
    fn open_call(&self, call_id: &str) -> Option<usize> {
        let from = self.entries.len().saturating_sub(DEDUP_WINDOW);
        (from..self.entries.len()).rev().find(|&i| match self.entries[i] {
            Entry::Tool {
                step,
                call,
                result: None,
                ..
            } => self.messages[step].tool_calls[call].id == call_id,
            _ => false,
        })
    }

    /// What the events say of call `call_id` (None: it has a result, or the turn ended).
    fn set_live(&mut self, call_id: &str, state: Option<ToolLive>) {
        self.live.apply(call_id, state);
        if let Some(i) = self.open_call(call_id) {
            self.scroll.invalidate(i);
        }
    }

    /// A model called a tool in turn `generation`. The round's first call carries its step
    /// (the stored assistant message, whose text is what streamed so far): the step becomes
    /// cells, and the streaming tail starts again for the next round's text.
    pub fn tool_call(&mut self, generation: u64, call_id: &str, step: Option<Message>) {
        if let Some(step) = step {
            if let Some((g, text)) = &mut self.streaming
                && *g == generation
            {
                text.clear();
                self.scroll.restart_open();
            }
            for c in &step.tool_calls {
                self.live.apply(&c.id, Some(ToolLive::Running));
            }
            self.add(step);
        }
        self.set_live(call_id, Some(ToolLive::Running));
    }

    /// A call waits for the user's approval (`true`) or was answered.
    pub fn tool_approval(&mut self, call_id: &str, waiting: bool) {
        if self.live.approval(call_id, waiting)
            && let Some(i) = self.open_call(call_id)
        {
            self.scroll.invalidate(i);
        }
    }

    /// A view made for a session whose turn had calls in flight before it was shown.
    pub fn with_live(live: LiveCalls) -> TranscriptView {
        TranscriptView {
            live,
            ..TranscriptView::default()
        }
    }

    /// A call's stored result.
    pub fn tool_result(&mut self, call_id: &str, message: Message) {
        self.live.apply(call_id, None);
        self.add(message);
    }

    /// Moves the tool cursor to the tool cell above (`up`) or below the one selected; the
    /// first time, to the newest. The cell is scrolled into a window `height` lines high.
    /// False when the transcript has no tool calls.
    pub fn select_tool(&mut self, up: bool, height: usize) -> bool {
        let is_tool = |e: &Entry| matches!(e, Entry::Tool { .. });
        let next = match self.selected {
            None => self.entries.iter().rposition(is_tool),
            Some(at) if up => self.entries[..at].iter().rposition(is_tool).or(Some(at)),
            Some(at) => self.entries[at + 1..]
                .iter()
                .position(is_tool)
                .map(|i| at + 1 + i)
                .or(Some(at)),
        };
        let Some(next) = next else {
            return false;
        };
        if let Some(old) = self.selected.replace(next) {
            self.scroll.invalidate(old);
        }
        self.scroll.invalidate(next);
        self.scroll_to_selected(height);
        true
    }

    /// Expands or collapses the tool cell under the cursor; false when none is selected.
    pub fn toggle_selected(&mut self, height: usize) -> bool {
        let Some(Entry::Tool { expanded, .. }) = self.selected.and_then(|i| self.entries.get_mut(i)) else {
            return false;
        };
        *expanded = !*expanded;
        if let Some(i) = self.selected {
            self.scroll.invalidate(i);
        }
        self.scroll_to_selected(height);
        true
    }

    fn scroll_to_selected(&mut self, height: usize) {
        let Some(i) = self.selected else {
            return;
        };
        let cells = cells!(self);
        self.scroll.scroll_to_cell(&cells, i, height);
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
        if known {
            return;
        }
        if let Some(from) = &message.supersedes
            && let Some(at) = self.messages.iter().rposition(|m| m.id.as_deref() == Some(from))
        {
            for m in &mut self.messages[at..] {
                m.superseded = true;
            }
            self.messages.push(message);
            self.reindex();
            return;
        }
        if message.conversation_start {
            // A new conversation begins: the current one joins the earlier ones.
            self.earlier.append(&mut self.messages);
            self.messages.push(message);
            self.reindex();
            return;
        }
        self.messages.push(message);
        self.index(self.messages.len() - 1);
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
        // Whatever has no result now gets none.
        let unanswered: Vec<String> = self.live.0.keys().cloned().collect();
        for call_id in unanswered {
            self.set_live(&call_id, None);
        }
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

    /// The message at the top of the window at the last frame (of a tool cell: its result,
    /// else its step).
    pub fn top_message(&self) -> Option<&Message> {
        let at = match *self.entries.get(self.scroll.top_cell()?)? {
            Entry::Message(m) => m,
            Entry::Tool { step, result, .. } => result.unwrap_or(step),
        };
        self.messages.get(at)
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
        let cells = cells!(self);
        self.scroll.all_lines(&cells, width)
    }

    /// The lines visible in a `width` x `height` window at the current scroll position, and the
    /// scroll position clamped to the content. Only the messages that reach into the window
    /// are laid out (once per width); older ones wait until they are scrolled to.
    pub fn visible_lines(&mut self, width: u16, height: usize) -> (Vec<Line<'static>>, usize) {
        let cells = cells!(self);
        self.scroll.visible_lines(&cells, width, height)
    }
}

/// Marks the messages each `supersedes` notice takes back (from its user message to it).
fn mark_superseded(messages: &mut [Message]) {
    for end in 0..messages.len() {
        let Some(from) = messages[end].supersedes.clone() else {
            continue;
        };
        if let Some(start) = messages[..end]
            .iter()
            .rposition(|m| m.id.as_deref() == Some(&from))
        {
            for m in &mut messages[start..end] {
                m.superseded = true;
            }
        }
    }
}

/// The conversations of a transcript: from each conversation mark to the next (the messages
/// before the first mark, if any, are the first conversation).
fn conversation_ranges(messages: &[Message]) -> Vec<std::ops::Range<usize>> {
    let mut starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(i, m)| m.conversation_start || *i == 0)
        .map(|(i, _)| i)
        .collect();
    starts.dedup();
    let ends = starts
        .iter()
        .skip(1)
        .copied()
        .chain(std::iter::once(messages.len()));
    starts.iter().zip(ends).map(|(&s, e)| s..e).collect()
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
    fn only_the_current_conversation_is_shown_and_earlier_ones_are_kept() {
        let mut v = TranscriptView::default();
        v.set_messages(vec![
            Message::user("one"),
            Message::conversation_start(),
            Message::user("two"),
            Message::conversation_start(),
            Message::user("three"),
        ]);
        let texts = |v: &TranscriptView| v.messages.iter().map(|m| m.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&v)[1..], ["three"]);
        assert_eq!(v.earlier_count(), 2);
        assert_eq!(texts(&v.earlier_view(0).unwrap()), ["one"]);
        assert_eq!(texts(&v.earlier_view(1).unwrap())[1..], ["two"]);
        assert!(v.earlier_view(2).is_none());
        // A mark arriving by event starts a new one live.
        v.add(Message::conversation_start());
        v.add(Message::user("four"));
        assert_eq!(texts(&v)[1..], ["four"]);
        assert_eq!(v.earlier_count(), 3);
        assert_eq!(texts(&v.earlier_view(2).unwrap())[1..], ["three"]);
        // A transcript that starts with a mark has no empty conversation before it.
        v.set_messages(vec![Message::conversation_start(), Message::user("x")]);
        assert_eq!(v.earlier_count(), 0);
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

    fn step(calls: &[(&str, &str)]) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls = calls
            .iter()
            .map(|(id, name)| crate::model::ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: "{}".into(),
            })
            .collect();
        m
    }

    fn tool_message(call_id: &str, text: &str) -> Message {
        Message::tool(
            text,
            crate::model::ToolResultInfo {
                call_id: call_id.into(),
                name: "t__x".into(),
                is_error: false,
                duration_ms: 10,
                size: text.len() as u64,
            },
        )
    }

    #[test]
    fn results_join_their_calls_and_a_reader_scrolled_up_keeps_the_same_lines() {
        let mut v = TranscriptView::default();
        let mut messages: Vec<Message> = (0..40).map(|i| Message::assistant(format!("line {i}"))).collect();
        messages.push(step(&[("c1", "t__one"), ("c2", "t__two")]));
        v.set_messages(messages);
        v.turn_started(1);
        v.tool_approval("c2", true);
        let (lines, _) = v.visible_lines(50, 8);
        let text = text_of(&lines).join("\n");
        assert!(text.contains("⚙ t__one  {} · no result"), "{text}");
        assert!(text.contains("t__two  {} · waiting for approval"), "{text}");
        // The results arrive while the reader looks at older lines: those stay put.
        v.scroll_up(12);
        let (before, _) = v.visible_lines(50, 8);
        v.tool_result("c1", tool_message("c1", "first\nsecond"));
        v.tool_approval("c2", false);
        v.tool_result("c2", tool_message("c2", "done"));
        let (after, _) = v.visible_lines(50, 8);
        assert_eq!(text_of(&before), text_of(&after));
        assert!(v.new_below());
        v.follow();
        let (lines, _) = v.visible_lines(50, 8);
        let text = text_of(&lines).join("\n");
        assert!(text.contains("t__one  {} · ok · 0.0s\n  ↳ first"), "{text}");
        assert!(text.contains("t__two  {} · ok"), "{text}");
        assert_eq!(
            v.entries.len(),
            42,
            "the tool messages made no cells of their own"
        );
        // A result whose call is not in the transcript is drawn as a message.
        v.add(tool_message("elsewhere", "orphan"));
        assert_eq!(v.entries.len(), 43);
    }

    #[test]
    fn the_next_rounds_text_streams_below_the_calls_of_the_last() {
        let mut v = TranscriptView::default();
        v.set_messages(vec![Message::user("q")]);
        v.turn_started(1);
        v.delta(1, "aaaa\n\nbbbb\n");
        let _ = v.visible_lines(40, 20);
        let mut first = step(&[("c1", "t__one")]);
        first.text = "aaaa\n\nbbbb\n".into();
        v.tool_call(1, "c1", Some(first));
        v.tool_result("c1", tool_message("c1", "ok"));
        // The same shape of text as the step's: none of the step's lines is reused for it.
        v.delta(1, "cccc\n\ndddd\n");
        let (lines, _) = v.visible_lines(40, 20);
        assert_eq!(
            text_of(&lines),
            [
                "you",
                "q",
                "",
                "assistant",
                "aaaa",
                "",
                "bbbb",
                "",
                "⚙ t__one  {} · ok · 0.0s",
                "  ↳ ok",
                "",
                "assistant  streaming…",
                "cccc",
                "",
                "dddd",
            ]
        );
    }

    #[test]
    fn a_long_result_is_laid_out_only_where_it_is_seen() {
        let result = (0..20_000).map(|i| format!("row {i}\n")).collect::<String>();
        let mut v = TranscriptView::default();
        v.set_messages(vec![step(&[("c1", "t__big")]), tool_message("c1", &result)]);
        assert!(v.select_tool(true, 10));
        let _ = v.visible_lines(60, 10);
        assert!(v.toggle_selected(10));
        // Expanding measures the cell once, to bring its head into view.
        let (lines, _) = v.visible_lines(60, 10);
        assert_eq!(
            text_of(&lines)[0],
            "▶ t__big · ok · 0.0s · 184.5 KB",
            "the head is in view"
        );
        // At the bottom (at another width: laid out again) only the pieces seen are laid out.
        v.follow();
        let (lines, _) = v.visible_lines(70, 10);
        assert_eq!(text_of(&lines)[8], "    row 19999");
        let (laid_out, pieces) = v.scroll.laid_out(0).expect("in view");
        assert!(pieces > 20, "{pieces} pieces");
        assert!(laid_out <= 3, "{laid_out} pieces laid out for a 10-line window");
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
