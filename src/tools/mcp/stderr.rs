//! A stdio server's stderr goes to huddle's log (the TUI owns the terminal), line by line,
//! capped: long lines are cut and, past a total, further output is only counted. The pipe is
//! read to its end either way, so a chatty server never blocks on a full pipe.

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

use crate::text::secrets::Secrets;

/// Bytes of one line logged; the rest of the line is dropped.
const MAX_LINE: usize = 2_000;
/// Bytes of a server's stderr logged per connection; after that only a final count.
const MAX_TOTAL: usize = 64 * 1024;

/// Lines of a sandboxed server's stderr that say the sandbox stopped something, waiting to be
/// reported with the next tool call's result (at most [`DENIALS_KEPT`]).
pub type Denials = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Denial lines kept between two calls.
const DENIALS_KEPT: usize = 8;

/// Reads `stderr` to its end in a task, logging under the server's name, with `secrets` (its
/// environment's values) removed; lines that say the sandbox stopped something also go to
/// `denials`.
pub fn forward(server: String, mut stderr: ChildStderr, secrets: Secrets, denials: Option<Denials>) {
    tokio::spawn(async move {
        let mut lines = Lines::default();
        let mut buf = vec![0u8; 8 * 1024];
        let log = |line: &str| {
            let line = secrets.redact(line);
            tracing::info!(server = %server, "mcp server stderr: {line}");
            if let Some(denials) = &denials
                && let Some(denial) = crate::sandbox::denial_in(&line)
            {
                let mut kept = denials.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if kept.len() < DENIALS_KEPT {
                    kept.push(denial);
                }
            }
        };
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => lines.feed(&buf[..n], log),
            }
        }
        lines.finish(log);
        if lines.dropped > 0 {
            tracing::info!(
                server = %server,
                "mcp server stderr: {} more bytes not logged",
                lines.dropped
            );
        }
    });
}

/// Splits bytes into capped lines.
#[derive(Default)]
struct Lines {
    line: Vec<u8>,
    cut: bool,
    logged: usize,
    /// Bytes not logged because of the total cap.
    dropped: usize,
}

impl Lines {
    fn feed(&mut self, mut bytes: &[u8], log: impl Fn(&str)) {
        while !bytes.is_empty() {
            let (chunk, rest, end) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            let room = MAX_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.cut |= chunk.len() > room;
            if end {
                self.emit(&log);
            }
            bytes = rest;
        }
    }

    fn finish(&mut self, log: impl Fn(&str)) {
        if !self.line.is_empty() {
            self.emit(&log);
        }
    }

    fn emit(&mut self, log: &impl Fn(&str)) {
        let line = std::mem::take(&mut self.line);
        let cut = std::mem::take(&mut self.cut);
        if self.logged >= MAX_TOTAL {
            self.dropped += line.len() + 1;
            return;
        }
        self.logged += line.len() + 1;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\r');
        if cut {
            log(&format!("{text} [line cut]"));
        } else {
            log(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn run(chunks: &[&[u8]]) -> (Vec<String>, Lines) {
        let seen = RefCell::new(Vec::new());
        let log = |l: &str| seen.borrow_mut().push(l.to_string());
        let mut lines = Lines::default();
        for c in chunks {
            lines.feed(c, log);
        }
        lines.finish(log);
        (seen.into_inner(), lines)
    }

    #[test]
    fn lines_split_across_reads_and_the_last_without_newline() {
        let (seen, _) = run(&[b"one\ntw", b"o\r\n", b"\xffbad\nlast"]);
        assert_eq!(seen, ["one", "two", "\u{fffd}bad", "last"]);
    }

    #[test]
    fn long_lines_are_cut_and_the_total_is_capped() {
        let long = vec![b'x'; MAX_LINE + 10];
        let (seen, _) = run(&[&long, b"\nnext\n"]);
        assert_eq!(seen.len(), 2);
        assert!(seen[0].ends_with("[line cut]") && seen[0].len() == MAX_LINE + 11);
        assert_eq!(seen[1], "next");

        let line = [vec![b'y'; 999], vec![b'\n']].concat();
        let flood: Vec<&[u8]> = (0..100).map(|_| line.as_slice()).collect();
        let (seen, lines) = run(&flood);
        assert_eq!(seen.len(), MAX_TOTAL / 1000 + 1);
        assert_eq!(lines.dropped, (100 - seen.len()) * 1000);
    }
}
