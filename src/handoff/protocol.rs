//! The socket's messages: one JSON object per line each way.

use std::io;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

use crate::cli::OutputLine;
use crate::headless::RunRequest;

/// Bumped when a message changes meaning; both ends must agree.
pub const PROTOCOL: u32 = 1;

/// The longest line either end accepts (a prompt read from a file can be long).
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// From `huddle run` to the open huddle.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// The first line: what to run.
    Run {
        protocol: u32,
        /// The asking binary's version, for the message when the protocols differ.
        version: String,
        /// Boxed: it is much larger than a stop (the same JSON).
        request: Box<RunRequest>,
    },
    /// Stop the run: `huddle run` got this signal (2 Ctrl-C, 15 SIGTERM, 1 SIGHUP).
    Stop { signal: u8 },
}

/// From the open huddle back to `huddle run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// The run is taken; `pid` is the process running it.
    Accepted { pid: u32 },
    /// Not taken, with the exit code `huddle run` ends with.
    Refused { code: u8, message: String },
    /// Text for standard output, as is.
    Out { text: String },
    /// One line for standard error.
    Err { text: String },
    /// The run is over.
    Exit { code: u8 },
}

impl From<OutputLine> for ServerMessage {
    fn from(line: OutputLine) -> Self {
        match line {
            OutputLine::Out(text) => ServerMessage::Out { text },
            OutputLine::Err(text) => ServerMessage::Err { text },
        }
    }
}

/// One message as its line (with the newline).
pub fn encode<T: Serialize>(message: &T) -> String {
    // These types always serialise (plain strings, numbers and enums).
    let mut line = serde_json::to_string(message).unwrap_or_else(|_| "{}".to_string());
    line.push('\n');
    line
}

/// A received line as a message, or what was wrong with it.
pub fn decode<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, String> {
    serde_json::from_str(line.trim_end()).map_err(|e| format!("unreadable message: {e}"))
}

/// Reads one line of at most [`MAX_LINE`] bytes; `None` at the end of the stream.
pub async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<String>> {
    let mut bytes = Vec::new();
    let mut limited = AsyncReadExt::take(&mut *reader, MAX_LINE as u64 + 1);
    let n = limited.read_until(b'\n', &mut bytes).await?;
    if n == 0 {
        return Ok(None);
    }
    if bytes.len() > MAX_LINE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_one_per_line() {
        let request = RunRequest {
            preset: Some("Code Review Team".into()),
            prompt: "line one\nline two".into(),
            events: true,
            ..RunRequest::default()
        };
        let line = encode(&ClientMessage::Run {
            protocol: PROTOCOL,
            version: "1.2.3".into(),
            request: Box::new(request),
        });
        assert_eq!(line.matches('\n').count(), 1, "one line: {line}");
        match decode::<ClientMessage>(&line).unwrap() {
            ClientMessage::Run {
                protocol, request, ..
            } => {
                assert_eq!(protocol, PROTOCOL);
                assert_eq!(request.prompt, "line one\nline two");
                assert_eq!(request.preset.as_deref(), Some("Code Review Team"));
                assert!(request.events);
            }
            other => panic!("{other:?}"),
        }
        let exit = encode(&ServerMessage::Exit { code: 3 });
        assert_eq!(
            decode::<ServerMessage>(&exit).unwrap(),
            ServerMessage::Exit { code: 3 }
        );
    }

    #[test]
    fn a_request_from_an_older_client_fills_in_defaults() {
        let line = r#"{"type":"run","protocol":1,"version":"0","request":{"prompt":"hi"}}"#;
        match decode::<ClientMessage>(line).unwrap() {
            ClientMessage::Run { request, .. } => {
                assert_eq!(request.prompt, "hi");
                assert!(request.preset.is_none() && !request.approve_tools);
            }
            other => panic!("{other:?}"),
        }
        assert!(decode::<ClientMessage>("{\"type\":\"launch\"}").is_err());
    }
}
