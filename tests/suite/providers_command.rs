//! The `command` provider with small shell scripts as the agent: streaming, stdin prompt, cwd,
//! failures quoting stderr, and the process group killed on timeout and cancel.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::providers::{ChatMessage, ErrorKind, Provider, ProviderError, TurnOutput, TurnRequest};
use tokio_util::sync::CancellationToken;

/// A script run as `sh <path> <args>` (no exec bit needed, no "text file busy" race).
fn agent(dir: &Path, body: &str, args: &[&str]) -> Arc<dyn Provider> {
    let script = dir.join("agent.sh");
    std::fs::write(&script, body).expect("write script");
    let mut p = ProviderConfig::new("agent", ProviderKind::Command);
    p.command = vec!["sh".into(), script.display().to_string()];
    p.command.extend(args.iter().map(|a| a.to_string()));
    provider_from(p)
}

fn provider_from(p: ProviderConfig) -> Arc<dyn Provider> {
    let mut config = Config::default();
    config.providers.push(p);
    huddle::sim::providers(&config)
        .expect("providers")
        .get("agent")
        .expect("agent")
}

async fn run(p: &dyn Provider, req: TurnRequest) -> (Result<TurnOutput, ProviderError>, Vec<String>) {
    let mut deltas = Vec::new();
    let result = p
        .stream_turn(
            req,
            &mut |d: &str| deltas.push(d.to_string()),
            CancellationToken::new(),
        )
        .await;
    (result, deltas)
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
            state != Some('Z')
        }
        Err(_) => false,
    }
}

/// Waits for a process to be gone; false only when it outlives a limit that just ends a hang
/// (a killed process is gone in milliseconds, one that was not killed lingers for 300 s).
async fn gone(pid: i32) -> bool {
    let hang_guard = Instant::now() + Duration::from_secs(120);
    while Instant::now() < hang_guard {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid")
}

/// A script that leaves a long `sleep` in its group, records both pids, says hello and waits.
const LINGERING: &str =
    "sleep 300 &\necho $! > \"$1/child.pid\"\necho $$ > \"$1/agent.pid\"\nprintf 'started '\nwait\n";

#[tokio::test]
async fn streams_stdout_with_prompt_on_stdin_in_the_working_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let p = agent(
        dir.path(),
        "cat > stdin.txt\npwd > cwd.txt\nprintf 'model=%s ' \"$2\"\nsleep 0.1\nprintf 'two '\nsleep 0.1\nprintf 'three \\303\\251'\n",
        &["--model", "{model}"],
    );
    let mut req = TurnRequest::new("big-model", vec![ChatMessage::user("Hi there")]);
    req.system = Some("Be brief.".into());
    req.working_dir = Some(work.clone());
    let (result, deltas) = run(p.as_ref(), req).await;
    let out = result.expect("turn");
    assert_eq!(out.text, "model=big-model two three \u{e9}");
    assert_eq!(deltas.concat(), out.text);
    assert!(deltas.len() >= 3, "streamed in pieces: {deltas:?}");
    assert_eq!(out.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        std::fs::read_to_string(work.join("stdin.txt")).expect("stdin copy"),
        "[system]\nBe brief.\n\n[user]\nHi there\n\n"
    );
    let cwd = PathBuf::from(std::fs::read_to_string(work.join("cwd.txt")).expect("cwd").trim());
    assert_eq!(cwd.canonicalize().ok(), work.canonicalize().ok());
}

#[tokio::test]
async fn non_zero_exit_quotes_the_end_of_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = agent(
        dir.path(),
        "echo 'warming up' >&2\necho 'fatal: no credits left' >&2\nprintf 'partial'\nexit 3\n",
        &[],
    );
    let (result, _) = run(p.as_ref(), TurnRequest::new("m", vec![ChatMessage::user("x")])).await;
    let err = result.expect_err("exit 3");
    assert_eq!(err.kind, ErrorKind::Process);
    assert!(err.message.contains("exited with status 3"), "{err}");
    assert!(err.message.contains("fatal: no credits left"), "{err}");
    assert!(err.message.starts_with("provider `agent`"), "{err}");
    assert_eq!(err.partial_text, "partial");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let arg = dir.path().display().to_string();
    let p = agent(dir.path(), LINGERING, &[&arg]);
    let mut req = TurnRequest::new("m", vec![ChatMessage::user("x")]);
    req.turn_timeout = Some(Duration::from_secs(2));
    let (result, _) = run(p.as_ref(), req).await;
    let err = result.expect_err("timeout");
    assert_eq!(err.kind, ErrorKind::TurnTimeout);
    assert_eq!(err.partial_text, "started ");
    assert!(
        gone(read_pid(&dir.path().join("agent.pid"))).await,
        "agent still running"
    );
    assert!(
        gone(read_pid(&dir.path().join("child.pid"))).await,
        "its child still running"
    );
}

#[tokio::test]
async fn cancel_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let arg = dir.path().display().to_string();
    let p = agent(dir.path(), LINGERING, &[&arg]);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let started = Instant::now();
    let result = p
        .stream_turn(
            TurnRequest::new("m", vec![ChatMessage::user("x")]),
            &mut |_: &str| trigger.cancel(),
            cancel,
        )
        .await;
    let err = result.expect_err("cancelled");
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert_eq!(err.partial_text, "started ");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "returned without waiting for the agent"
    );
    assert!(
        gone(read_pid(&dir.path().join("agent.pid"))).await,
        "agent still running"
    );
    assert!(
        gone(read_pid(&dir.path().join("child.pid"))).await,
        "its child still running"
    );
}

#[tokio::test]
async fn leftover_child_holding_stdout_does_not_hang_the_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let arg = dir.path().display().to_string();
    let p = agent(
        dir.path(),
        "sleep 300 &\necho $! > \"$1/child.pid\"\nprintf done\n",
        &[&arg],
    );
    let (result, _) = run(p.as_ref(), TurnRequest::new("m", vec![ChatMessage::user("x")])).await;
    assert_eq!(result.expect("finishes").text, "done");
    assert!(
        gone(read_pid(&dir.path().join("child.pid"))).await,
        "leftover child killed"
    );
}

#[tokio::test]
async fn program_that_ignores_stdin_gets_a_large_prompt_safely() {
    let mut p = ProviderConfig::new("agent", ProviderKind::Command);
    p.command = vec!["echo".into(), "ignored your".into(), "{model}".into()];
    let big = "word ".repeat(400_000);
    let (result, _) = run(
        provider_from(p).as_ref(),
        TurnRequest::new("prompt", vec![ChatMessage::user(big)]),
    )
    .await;
    assert_eq!(result.expect("echo").text, "ignored your prompt\n");
}

#[tokio::test]
async fn missing_program_and_missing_directory_are_named() {
    let mut p = ProviderConfig::new("agent", ProviderKind::Command);
    p.command = vec!["huddle-no-such-agent-xyz".into(), "-p".into()];
    let provider = provider_from(p.clone());
    let (result, _) = run(
        provider.as_ref(),
        TurnRequest::new("m", vec![ChatMessage::user("x")]),
    )
    .await;
    let err = result.expect_err("missing");
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(
        err.message
            .contains("`huddle-no-such-agent-xyz` is not installed or not on PATH (provider `agent`)"),
        "{err}"
    );

    p.command = vec!["sh".into(), "-c".into(), "true".into()];
    let mut req = TurnRequest::new("m", vec![ChatMessage::user("x")]);
    req.working_dir = Some(PathBuf::from("/nonexistent/huddle/dir"));
    let err = run(provider_from(p).as_ref(), req).await.0.expect_err("no dir");
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(err.message.contains("/nonexistent/huddle/dir"), "{err}");
}
