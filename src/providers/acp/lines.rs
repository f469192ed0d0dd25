//! An ACP agent's stdout as lines, each at most `max` bytes: the bound holds while reading (a
//! line is never buffered past it, whatever the agent writes), so one broken or hostile agent
//! cannot take the host's memory. A line that is not UTF-8 is decoded lossily (U+FFFD for each
//! bad sequence), as the ACP TypeScript SDK's `TextDecoder` does; its JSON is then read as usual
//! (the Python SDK skips such a line instead; either way the turn goes on).

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A whole line, without its `\n`. `lossy`: it was not UTF-8.
    Text { text: String, lossy: bool },
    /// A line longer than the bound: what was read of it is dropped, and the rest up to its
    /// newline is skipped by the next read. `read`: the bytes read of it when it was given up
    /// (more than the bound).
    TooLong { read: usize },
}

pub struct BoundedLines<R> {
    reader: R,
    max: usize,
    /// The line read so far (never more than `max` bytes).
    line: Vec<u8>,
    /// The rest of a line given up for its length is skipped up to its newline.
    skipping: bool,
}

impl<R: AsyncBufRead + Unpin> BoundedLines<R> {
    pub fn new(reader: R, max: usize) -> BoundedLines<R> {
        BoundedLines {
            reader,
            max,
            line: Vec::new(),
            skipping: false,
        }
    }

    /// The next line; `None` at the end of the stream (a last line without a newline is a
    /// line). Cancel safe: what was read is kept between calls, so it can be a branch of
    /// `tokio::select!`.
    pub async fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            let chunk = self.reader.fill_buf().await?;
            if chunk.is_empty() {
                self.skipping = false;
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(decode(std::mem::take(&mut self.line))));
            }
            let newline = chunk.iter().position(|&b| b == b'\n');
            let len = chunk.len();
            if self.skipping {
                match newline {
                    Some(at) => {
                        self.reader.consume(at + 1);
                        self.skipping = false;
                    }
                    None => self.reader.consume(len),
                }
                continue;
            }
            let part = newline.unwrap_or(len);
            if self.line.len() + part > self.max {
                let read = self.line.len() + part;
                // Give the memory back, not just the length.
                self.line = Vec::new();
                match newline {
                    Some(at) => self.reader.consume(at + 1),
                    None => {
                        self.reader.consume(len);
                        self.skipping = true;
                    }
                }
                return Ok(Some(Line::TooLong { read }));
            }
            self.line.extend_from_slice(&chunk[..part]);
            match newline {
                Some(at) => {
                    self.reader.consume(at + 1);
                    return Ok(Some(decode(std::mem::take(&mut self.line))));
                }
                None => self.reader.consume(len),
            }
        }
    }
}

fn decode(bytes: Vec<u8>) -> Line {
    match String::from_utf8(bytes) {
        Ok(text) => Line::Text { text, lossy: false },
        Err(e) => Line::Text {
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            lossy: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader};

    fn text(t: &str) -> Option<Line> {
        Some(Line::Text {
            text: t.into(),
            lossy: false,
        })
    }

    async fn all(input: &[u8], max: usize, buffer: usize) -> Vec<Line> {
        let mut lines = BoundedLines::new(BufReader::with_capacity(buffer, input), max);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().await.expect("read") {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_up_to_the_bound_pass_longer_ones_are_given_up_and_skipped_to_their_end() {
        // Buffers smaller and larger than a line: the bound is the same.
        for buffer in [1, 3, 8, 64] {
            let mut got = all(b"abcd\n0123456789\nxy\r\n\nlast", 4, buffer).await;
            let Line::TooLong { read } = &mut got[1] else {
                panic!("not given up: {got:?}");
            };
            assert!(*read > 4 && *read <= 10, "{read}");
            *read = 0;
            assert_eq!(
                got,
                [
                    text("abcd").unwrap(),
                    Line::TooLong { read: 0 },
                    text("xy\r").unwrap(),
                    text("").unwrap(),
                    text("last").unwrap(),
                ],
                "buffer {buffer}"
            );
        }
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_decoded_lossily() {
        let got = all(b"{\"a\":\"x\xff\xfey\"}\nok\n", 100, 8).await;
        assert_eq!(
            got[0],
            Line::Text {
                text: "{\"a\":\"x\u{fffd}\u{fffd}y\"}".into(),
                lossy: true
            }
        );
        assert_eq!(got[1], text("ok").unwrap());
    }

    /// A line that never ends is given up once it passes the bound, not when it ends: the
    /// writer is still writing (and never writes a newline) when the reader says so.
    #[tokio::test]
    async fn an_endless_line_is_given_up_at_the_bound_while_it_is_still_coming() {
        let (mut writer, reader) = tokio::io::duplex(1024);
        let feeder = tokio::spawn(async move {
            let block = vec![b'x'; 1024];
            loop {
                if writer.write_all(&block).await.is_err() {
                    break;
                }
            }
        });
        let mut lines = BoundedLines::new(BufReader::new(reader), 64 * 1024);
        let got = lines.next_line().await.expect("read");
        assert!(
            matches!(got, Some(Line::TooLong { read }) if read > 64 * 1024 && read <= 64 * 1024 + 8 * 1024),
            "{got:?}"
        );
        assert!(lines.line.capacity() == 0, "nothing of it is kept");
        drop(lines);
        feeder.await.expect("feeder");
    }

    /// Cancel safety: a read dropped mid-line (a `select!` branch that lost) loses nothing.
    #[tokio::test(start_paused = true)]
    async fn a_read_dropped_mid_line_loses_nothing() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut lines = BoundedLines::new(BufReader::new(reader), 100);
        writer.write_all(b"hel").await.expect("write");
        let first = tokio::time::timeout(std::time::Duration::from_millis(10), lines.next_line()).await;
        assert!(first.is_err(), "no whole line yet");
        writer.write_all(b"lo\n").await.expect("write");
        assert_eq!(lines.next_line().await.expect("read"), text("hello"));
    }
}
