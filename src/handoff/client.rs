//! `huddle run`'s side: hands the run to the huddle open on the data dir, if there is one, and
//! prints what it sends back as if the run were local.

use std::io;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::cli::{OutputError, note, print_out};
use crate::config::Paths;
use crate::headless::{RunFailure, RunRequest};

use super::protocol::{self, ClientMessage, PROTOCOL, ServerMessage, read_line};

/// What came of trying to hand a run over.
#[derive(Debug, PartialEq, Eq)]
pub enum Handover {
    /// No huddle listens on this data dir: run it here.
    NotListening,
    /// It ran there; `huddle run` exits with this code.
    Ran(u8),
}

/// True when a huddle listens on the data dir's socket.
pub async fn listening(paths: &Paths) -> bool {
    UnixStream::connect(paths.run_socket()).await.is_ok()
}

/// Hands `request` to the huddle listening on the data dir's socket and streams its output to
/// this process's standard output and error until the run ends. Ctrl-C, SIGTERM and SIGHUP are
/// passed on as a stop.
pub async fn hand_over(paths: &Paths, request: &RunRequest) -> Result<Handover, RunFailure> {
    let path = paths.run_socket();
    let stream = match UnixStream::connect(&path).await {
        Ok(s) => s,
        // Nothing there, or a crashed huddle's leftover: nobody to hand it to.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(Handover::NotListening);
        }
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "cannot reach the run socket");
            return Ok(Handover::NotListening);
        }
    };
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    let hello = ClientMessage::Run {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").to_string(),
        request: Box::new(request.clone()),
    };
    if let Err(e) = writer.write_all(protocol::encode(&hello).as_bytes()).await {
        return Err(failure(1, format!("cannot hand the run to the open huddle: {e}")));
    }
    let mut stopping = false;
    // Standard output gone: the exit code says so, as for a local run.
    let mut stdout_lost: Option<u8> = None;
    let mut signals = Signals::new();
    loop {
        let line = tokio::select! {
            line = read_line(&mut reader) => line,
            signal = signals.next(), if !stopping => {
                let (number, name) = signal;
                note(format_args!("\nhuddle: stopping ({name})..."));
                stopping = true;
                let stop = protocol::encode(&ClientMessage::Stop { signal: number });
                let _ = writer.write_all(stop.as_bytes()).await;
                continue;
            }
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => {
                return Err(failure(
                    1,
                    "the open huddle went away before the run ended (it keeps what was done)".into(),
                ));
            }
            Err(e) => return Err(failure(1, format!("cannot read from the open huddle: {e}"))),
        };
        match protocol::decode::<ServerMessage>(&line) {
            Ok(ServerMessage::Accepted { pid }) => {
                note(format_args!(
                    "huddle: handed to the huddle open on this data dir (pid {pid}); the run shows there live"
                ));
            }
            Ok(ServerMessage::Refused { code, message }) => return Err(failure(code, message)),
            Ok(ServerMessage::Out { text }) => {
                if stdout_lost.is_none()
                    && let Err(e) = print_out(&text)
                {
                    if let OutputError::Failed(_) = e {
                        note(format_args!("huddle: {e} (the run's result is saved)"));
                    }
                    stdout_lost = Some(e.exit_code());
                }
            }
            Ok(ServerMessage::Err { text }) => note(format_args!("{text}")),
            Ok(ServerMessage::Exit { code }) => {
                return Ok(Handover::Ran(stdout_lost.unwrap_or(code)));
            }
            Err(e) => return Err(failure(1, format!("the open huddle sent an {e}"))),
        }
    }
}

fn failure(code: u8, message: String) -> RunFailure {
    RunFailure { code, message }
}

/// Ctrl-C, SIGTERM and SIGHUP as (number, name).
struct Signals {
    term: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    async fn next(&mut self) -> (u8, &'static str) {
        async fn wait(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            r = tokio::signal::ctrl_c() => match r {
                Ok(()) => (2, "Ctrl-C"),
                Err(_) => std::future::pending().await,
            },
            _ = wait(&mut self.term) => (15, "SIGTERM"),
            _ = wait(&mut self.hup) => (1, "SIGHUP"),
        }
    }
}
