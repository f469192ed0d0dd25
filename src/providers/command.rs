//! The `command` kind: a local program run once per turn, without a shell.
//!
//! The conversation goes to stdin as labelled plain text; stdout is streamed back as the answer.
//! `{model}` in an argument is replaced by the slug's model part. The program runs in its own
//! process group, and the whole group is killed when the turn is cancelled or times out, so
//! helpers it started die with it. A non-zero exit is an error quoting the end of stderr.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::error::{ErrorKind, ProviderError};
use super::{
    DeltaSink, Finished, Provider, TextSink, TurnOutput, TurnRequest, conclude, guarded, render_plain_prompt,
};
use crate::config::{ProviderConfig, ProviderKind};

/// How much of stderr is kept for the error message.
const STDERR_KEEP_BYTES: usize = 64 * 1024;
/// Lines of stderr quoted in the error message.
const STDERR_QUOTED_LINES: usize = 12;
/// After the program exits, how long its stdout/stderr may stay open (held by a child it left
/// behind) before the group is killed and reading stops.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub struct CommandProvider {
    name: String,
    program: String,
    args: Vec<String>,
}

impl CommandProvider {
    pub fn new(cfg: &ProviderConfig) -> Result<CommandProvider, ProviderError> {
        let Some((program, args)) = cfg.command.split_first() else {
            return Err(ProviderError::new(
                ErrorKind::Config,
                &cfg.name,
                format!(
                    "provider `{}` of kind command needs a program, e.g. command: [\"claude\", \"-p\"]",
                    cfg.name
                ),
            ));
        };
        Ok(CommandProvider {
            name: cfg.name.clone(),
            program: program.clone(),
            args: args.to_vec(),
        })
    }

    /// The program and arguments for one turn, `{model}` filled in.
    pub fn argv(&self, model: &str) -> (String, Vec<String>) {
        let args = self.args.iter().map(|a| a.replace("{model}", model)).collect();
        (self.program.clone(), args)
    }

    async fn turn(
        &self,
        req: TurnRequest,
        deltas: DeltaSink<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnOutput, ProviderError> {
        let started = Instant::now();
        let mut sink = TextSink::new(deltas);
        let result = guarded(&self.name, &cancel, req.turn_timeout, self.run(&req, &mut sink)).await;
        conclude(result, sink.text, started, false)
    }

    async fn run(&self, req: &TurnRequest, sink: &mut TextSink<'_>) -> Result<Finished, ProviderError> {
        let (program, args) = self.argv(&req.model);
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(dir) = &req.working_dir {
            if !dir.is_dir() {
                return Err(self.error(
                    ErrorKind::Config,
                    format!("working directory {} does not exist", dir.display()),
                ));
            }
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().map_err(|e| self.spawn_error(&program, &e))?;
        // Armed until the program has been waited for: dropping this (cancel, timeout, panic)
        // kills the whole group.
        let mut group = GroupKiller(child.id().and_then(|id| i32::try_from(id).ok()));

        if let Some(mut stdin) = child.stdin.take() {
            let prompt = render_plain_prompt(req);
            // A program that never reads stdin closes it early: a broken pipe is fine.
            tokio::spawn(async move {
                let _ = stdin.write_all(prompt.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
        let stderr_tail = Arc::new(Mutex::new(Vec::<u8>::new()));
        let stderr_task = child.stderr.take().map(|stderr| {
            let tail = stderr_tail.clone();
            tokio::spawn(keep_tail(stderr, tail))
        });
        let Some(stdout) = child.stdout.take() else {
            return Err(self.error(
                ErrorKind::Process,
                "stdout of the program was not captured".into(),
            ));
        };

        let read_out = stream_stdout(stdout, sink);
        tokio::pin!(read_out);
        let status = tokio::select! {
            read = &mut read_out => {
                read.map_err(|e| self.error(ErrorKind::Process, format!("reading the program's output failed: {e}")))?;
                child.wait().await
            }
            status = child.wait() => {
                // Exited; its output may still be in the pipe, or held open by a leftover child.
                if tokio::time::timeout(DRAIN_GRACE, &mut read_out).await.is_err() {
                    group.kill();
                }
                status
            }
        };
        let status = status
            .map_err(|e| self.error(ErrorKind::Process, format!("waiting for the program failed: {e}")))?;
        group.disarm();
        if let Some(task) = stderr_task
            && tokio::time::timeout(DRAIN_GRACE, task).await.is_err()
        {
            tracing::debug!(provider = %self.name, "stderr still open after exit; quoting what arrived");
        }

        if status.success() {
            return Ok(Finished {
                usage: None,
                finish_reason: Some("stop".to_string()),
                ..Finished::default()
            });
        }
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => {
                use std::os::unix::process::ExitStatusExt;
                match status.signal() {
                    Some(sig) => format!("was killed by signal {sig}"),
                    None => "failed".to_string(),
                }
            }
        };
        let tail = stderr_tail.lock().map(|t| last_lines(&t)).unwrap_or_default();
        let quoted = if tail.is_empty() {
            "(nothing on stderr)".to_string()
        } else {
            format!("stderr ends with:\n{tail}")
        };
        Err(self.error(
            ErrorKind::Process,
            format!("`{}` {how}; {quoted}", display_command(&program, &args)),
        ))
    }

    fn error(&self, kind: ErrorKind, message: String) -> ProviderError {
        ProviderError::new(kind, &self.name, format!("provider `{}`: {message}", self.name))
    }

    fn spawn_error(&self, program: &str, e: &std::io::Error) -> ProviderError {
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "program `{program}` not found: install it or fix `command` for this provider in config.yaml"
            ),
            std::io::ErrorKind::PermissionDenied => {
                format!("program `{program}` is not executable (permission denied)")
            }
            _ => format!("cannot start `{program}`: {e}"),
        };
        self.error(ErrorKind::Config, message)
    }
}

impl Provider for CommandProvider {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        deltas: DeltaSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(self.turn(req, deltas, cancel))
    }
}

/// Kills a process group when dropped, unless disarmed.
struct GroupKiller(Option<i32>);

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.filter(|&p| p > 0) {
            // SAFETY: killpg only sends a signal; the group id is our child's pid, which cannot
            // be reused while the child is not yet waited for.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn stream_stdout(mut stdout: impl AsyncRead + Unpin, sink: &mut TextSink<'_>) -> std::io::Result<()> {
    let mut buf = vec![0u8; 8192];
    let mut utf8 = Utf8Decoder::default();
    loop {
        let n = stdout.read(&mut buf).await?;
        if n == 0 {
            sink.push(&utf8.finish());
            return Ok(());
        }
        sink.push(&utf8.push(&buf[..n]));
    }
}

async fn keep_tail(mut stderr: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Ok(mut t) = tail.lock() {
            t.extend_from_slice(&buf[..n]);
            if t.len() > STDERR_KEEP_BYTES {
                let cut = t.len() - STDERR_KEEP_BYTES;
                t.drain(..cut);
            }
        }
    }
}

/// The last non-empty lines of captured stderr.
pub fn last_lines(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(STDERR_QUOTED_LINES);
    lines[start..].join("\n")
}

fn display_command(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Decodes UTF-8 arriving in arbitrary pieces: a character split across reads is held back
/// until complete; invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // Incomplete character at the end: wait for the rest.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// End of input: whatever is left, lossily.
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_anywhere_decodes_whole() {
        let text = "h\u{e9}llo \u{1F600} w\u{f6}rld";
        let bytes = text.as_bytes();
        for split in 0..bytes.len() {
            let mut d = Utf8Decoder::default();
            let mut out = d.push(&bytes[..split]);
            out.push_str(&d.push(&bytes[split..]));
            out.push_str(&d.finish());
            assert_eq!(out, text, "split at {split}");
        }
        let mut d = Utf8Decoder::default();
        assert_eq!(d.push(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(d.push(b"\xe2\x82"), "");
        assert_eq!(d.finish(), "\u{fffd}");
    }

    #[test]
    fn stderr_tail_keeps_last_nonempty_lines() {
        let text: String = (1..=20).map(|i| format!("line {i}\n\n")).collect();
        let tail = last_lines(text.as_bytes());
        assert!(tail.starts_with("line 9\n"), "{tail}");
        assert!(tail.ends_with("line 20"), "{tail}");
        assert_eq!(tail.lines().count(), STDERR_QUOTED_LINES);
    }

    #[test]
    fn model_placeholder_is_filled() {
        let mut cfg = ProviderConfig::new("c", ProviderKind::Command);
        cfg.command = vec!["agent".into(), "--model".into(), "{model}".into()];
        let p = CommandProvider::new(&cfg).unwrap();
        assert_eq!(
            p.argv("m1"),
            ("agent".to_string(), vec!["--model".to_string(), "m1".to_string()])
        );
        cfg.command.clear();
        assert_eq!(
            CommandProvider::new(&cfg).err().map(|e| e.kind),
            Some(ErrorKind::Config)
        );
    }
}
