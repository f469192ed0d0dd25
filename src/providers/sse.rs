//! An incremental Server-Sent Events parser (WHATWG event-stream framing) over raw bytes.
//!
//! Push bytes as they arrive, then pull complete events. Lines may end in `\n`, `\r\n` or `\r`,
//! even when a chunk boundary splits the pair; UTF-8 characters split across chunks are fine
//! because a line is decoded only once complete. Comment lines (`: ping`) are counted, never
//! returned. One deliberate leniency: at end of input, an event whose lines are all complete but
//! that lacks the final blank line is still delivered (some servers end `data: [DONE]\n`).

use std::collections::VecDeque;

/// The longest line, and the most data of one event, a parser holds: past it the stream is
/// given up ([`SseParser::overflowed`]), so a server that never ends a line or an event cannot
/// take the memory.
pub const MAX_PENDING_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, `message` when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    /// Bytes of `buf` already known to hold no line end.
    scanned: usize,
    /// The previous chunk ended in `\r`: a leading `\n` belongs to that line end.
    skip_lf: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    ready: VecDeque<SseEvent>,
    comments: u64,
    /// A line or an event passed [`MAX_PENDING_BYTES`]: what was held of it is dropped.
    overflowed: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Adds bytes from the wire; complete events become available from [`Self::next_event`].
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.skip_lf && !bytes.is_empty() {
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.skip_lf = false;
        }
        self.buf.extend_from_slice(bytes);
        self.split_lines();
        if self.buf.len() > MAX_PENDING_BYTES || self.data.len() > MAX_PENDING_BYTES {
            self.overflowed = true;
            self.buf = Vec::new();
            self.scanned = 0;
            self.data = String::new();
            self.has_data = false;
        }
    }

    /// A line without its end, or an event without its blank line, grew past
    /// [`MAX_PENDING_BYTES`]: the stream cannot be read on (checked after each push).
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// The next complete event, if any.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Marks the end of input: an unterminated last line is dropped, a pending event with
    /// complete lines is delivered.
    pub fn finish(&mut self) {
        self.buf.clear();
        self.scanned = 0;
        self.dispatch();
    }

    /// Comment lines seen so far (keep-alives such as `: ping`).
    pub fn comments_seen(&self) -> u64 {
        self.comments
    }

    fn split_lines(&mut self) {
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                let line_end = i;
                i += 1;
                if b == b'\r' {
                    if i < self.buf.len() {
                        if self.buf[i] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                }
                let line = std::mem::take(&mut self.buf);
                self.process_line(&line[start..line_end]);
                self.buf = line;
                start = i;
            } else {
                i += 1;
            }
        }
        if start > 0 {
            self.buf.drain(..start);
        }
        self.scanned = self.buf.len();
    }

    fn process_line(&mut self, line: &[u8]) {
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                let value = value.strip_prefix(b" ").unwrap_or(value);
                (&line[..colon], value)
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // `id` and `retry` matter to browsers reconnecting, not to one POST per turn.
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        self.ready.push_back(SseEvent {
            event: event.unwrap_or_else(|| "message".to_string()),
            data: std::mem::take(&mut self.data),
        });
    }
}

/// Parses a whole body at once (tests and benchmarks).
pub fn parse_all(bytes: &[u8]) -> Vec<SseEvent> {
    let mut p = SseParser::new();
    p.push(bytes);
    p.finish();
    std::iter::from_fn(|| p.next_event()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_or_an_event_that_never_ends_is_given_up_at_the_bound() {
        let mut p = SseParser::new();
        let block = vec![b'x'; 64 * 1024];
        p.push(b"data: ");
        let mut pushed = 0;
        while !p.overflowed() {
            p.push(&block);
            pushed += block.len();
            assert!(pushed <= MAX_PENDING_BYTES + block.len(), "not given up");
        }
        assert!(p.buf.capacity() == 0 && p.next_event().is_none());
        // Data lines of one event that never gets its blank line.
        let mut p = SseParser::new();
        let line = format!("data: {}\n", "y".repeat(64 * 1024));
        while !p.overflowed() {
            p.push(line.as_bytes());
            assert!(p.data.len() <= MAX_PENDING_BYTES + line.len(), "not given up");
        }
        // Lines and events within the bound are fine.
        let mut p = SseParser::new();
        p.push(line.as_bytes());
        p.push(b"\n");
        assert!(!p.overflowed());
        assert_eq!(p.next_event().map(|e| e.data.len()), Some(64 * 1024));
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    fn byte_by_byte(bytes: &[u8]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for b in bytes {
            p.push(std::slice::from_ref(b));
            out.extend(std::iter::from_fn(|| p.next_event()));
        }
        p.finish();
        out.extend(std::iter::from_fn(|| p.next_event()));
        out
    }

    #[test]
    fn basic_events_names_and_multiline_data() {
        let text = b"event: a\ndata: one\ndata:two\n\ndata: x\n\n";
        let want = vec![ev("a", "one\ntwo"), ev("message", "x")];
        assert_eq!(parse_all(text), want);
        assert_eq!(byte_by_byte(text), want);
    }

    #[test]
    fn every_line_ending_works_even_split() {
        for text in [
            &b"data: a\r\n\r\ndata: b\r\n\r\n"[..],
            b"data: a\r\rdata: b\r\r",
            b"data: a\n\ndata: b\n\n",
            b"data: a\r\n\ndata: b\n\r\n",
        ] {
            assert_eq!(parse_all(text), vec![ev("message", "a"), ev("message", "b")]);
            assert_eq!(byte_by_byte(text), vec![ev("message", "a"), ev("message", "b")]);
        }
    }

    #[test]
    fn comments_are_counted_not_returned() {
        let mut p = SseParser::new();
        p.push(b": ping\n\n: ping\r\ndata: x\n\n");
        assert_eq!(p.next_event(), Some(ev("message", "x")));
        assert_eq!(p.next_event(), None);
        assert_eq!(p.comments_seen(), 2);
    }

    #[test]
    fn split_utf8_survives() {
        let text = "data: h\u{e9}llo \u{1F600}\n\n".as_bytes();
        assert_eq!(byte_by_byte(text), vec![ev("message", "h\u{e9}llo \u{1F600}")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_name_resets() {
        assert_eq!(parse_all(b"event: ping\n\ndata: x\n\n"), vec![ev("message", "x")]);
    }

    #[test]
    fn incomplete_tail_is_dropped_but_complete_lines_are_kept() {
        assert_eq!(parse_all(b"data: [DONE]\n"), vec![ev("message", "[DONE]")]);
        assert_eq!(parse_all(b"data: a\n\ndata: {\"cut"), vec![ev("message", "a")]);
    }

    #[test]
    fn field_without_colon_and_no_space() {
        assert_eq!(parse_all(b"data\n\n"), vec![ev("message", "")]);
        assert_eq!(parse_all(b"data:x\n\n"), vec![ev("message", "x")]);
        assert_eq!(parse_all(b"data:  two\n\n"), vec![ev("message", " two")]);
    }

    #[test]
    fn captures_parse_the_same_at_any_chunking() {
        let captures: [&[u8]; 4] = [
            include_bytes!("testdata/litellm-openai-stream-include-usage.sse"),
            include_bytes!("testdata/llmock-anthropic-stream.sse"),
            include_bytes!("testdata/llmock-anthropic-malformed.sse"),
            include_bytes!("testdata/litellm-anthropic-midstream-error.sse"),
        ];
        for capture in captures {
            let whole = parse_all(capture);
            assert!(whole.len() > 3);
            assert_eq!(byte_by_byte(capture), whole);
            let mut rng = fastrand::Rng::with_seed(7);
            for _ in 0..20 {
                let mut p = SseParser::new();
                let mut out = Vec::new();
                let mut rest = capture;
                while !rest.is_empty() {
                    let n = rng.usize(1..=rest.len().min(64));
                    p.push(&rest[..n]);
                    rest = &rest[n..];
                    out.extend(std::iter::from_fn(|| p.next_event()));
                }
                p.finish();
                out.extend(std::iter::from_fn(|| p.next_event()));
                assert_eq!(out, whole);
            }
        }
        let litellm = parse_all(include_bytes!("testdata/litellm-openai-stream-include-usage.sse"));
        assert_eq!(litellm.last().map(|e| e.data.as_str()), Some("[DONE]"));
    }
}
