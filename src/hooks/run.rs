//! Running hooks: each a process (no shell) in the sandbox of the session it runs for, the
//! event as JSON on stdin, its own process group killed when it times out or its caller gives
//! up. Exit 0: go on (stdout read as JSON when it is an object); exit 2: block, stderr is the
//! reason; anything else (a timeout too): a hook error that is reported and blocks nothing.
//! Matching hooks of one event run at once.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::config::Hook;
use super::input::HookInput;
use crate::sandbox::{Sandbox, needed_paths};

/// Bytes of a hook's stdout and stderr kept (the end is kept: a test run's summary is last).
const OUTPUT_KEEP_BYTES: usize = 64 * 1024;

/// Where hooks run: the sandbox of the session (or team) they run for, its working directory
/// and the project directory they are told (`HUDDLE_PROJECT_DIR`, also `CLAUDE_PROJECT_DIR`
/// so Claude Code scripts find it).
#[derive(Debug, Clone, Default)]
pub struct HookContext {
    pub sandbox: Sandbox,
    pub workdir: Option<PathBuf>,
    pub project_dir: Option<PathBuf>,
}

/// What one hook came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The hook's command, for people.
    pub label: String,
    pub outcome: Outcome,
    /// Its standard output (the end of it).
    pub stdout: String,
    /// Its standard error (the end of it).
    pub stderr: String,
    pub duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0, with the JSON it printed when it printed an object.
    Ok(Option<HookOutput>),
    /// Exit 2: the reason is its stderr.
    Blocked { reason: String },
    /// Any other exit, or it could not be started: reported, blocks nothing.
    Failed { message: String },
    /// Killed after its time limit: reported, blocks nothing.
    TimedOut { after: Duration },
}

impl HookRun {
    /// The error to report, for a hook that failed or timed out.
    pub fn error(&self) -> Option<String> {
        match &self.outcome {
            Outcome::Failed { message } => Some(format!("hook `{}` failed: {message}", self.label)),
            Outcome::TimedOut { after } => Some(format!(
                "hook `{}` timed out after {}s and was stopped",
                self.label,
                after.as_secs()
            )),
            _ => None,
        }
    }
}

/// What a hook may print on stdout (exit 0), as Claude Code reads it. Unknown fields are
/// ignored; anything that is not such an object is plain output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct HookOutput {
    /// `false`: stop (as a deny for a tool call).
    #[serde(default, rename = "continue")]
    pub continue_: Option<bool>,
    #[serde(default, rename = "stopReason")]
    pub stop_reason: Option<String>,
    /// A note for the user.
    #[serde(default, rename = "systemMessage")]
    pub system_message: Option<String>,
    /// `block` (post_tool_use and the finished events: the reason goes to the model or the
    /// report), or the older pre_tool_use words `approve` / `block`.
    #[serde(default)]
    pub decision: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default, rename = "hookSpecificOutput")]
    pub specific: Option<SpecificOutput>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SpecificOutput {
    /// pre_tool_use: `allow`, `deny` or `ask`.
    #[serde(default, rename = "permissionDecision")]
    pub permission_decision: Option<String>,
    #[serde(default, rename = "permissionDecisionReason")]
    pub permission_decision_reason: Option<String>,
    /// pre_tool_use: arguments to call the tool with instead.
    #[serde(default, rename = "updatedInput")]
    pub updated_input: Option<serde_json::Value>,
    /// Text added for the model (post_tool_use) or the evaluator (iteration_finished).
    #[serde(default, rename = "additionalContext")]
    pub additional_context: Option<String>,
}

impl HookOutput {
    /// The JSON object in `stdout`, if that is what it is.
    pub fn parse(stdout: &str) -> Option<HookOutput> {
        let text = stdout.trim();
        if !text.starts_with('{') {
            return None;
        }
        serde_json::from_str(text).ok()
    }
}

/// Runs every hook at once with `input`; results in the hooks' order.
pub async fn run_all(hooks: &[&Hook], input: &HookInput, ctx: &HookContext) -> Vec<HookRun> {
    let json = input.to_json();
    futures::future::join_all(hooks.iter().map(|hook| run_one(hook, &json, ctx))).await
}

/// Runs one hook with `stdin_json` on its stdin.
pub async fn run_one(hook: &Hook, stdin_json: &str, ctx: &HookContext) -> HookRun {
    let started = Instant::now();
    let label = hook.label();
    let done = |outcome: Outcome, stdout: String, stderr: String| HookRun {
        label: label.clone(),
        outcome,
        stdout,
        stderr,
        duration: started.elapsed(),
    };
    let Some((program, args)) = hook.command.split_first() else {
        return done(
            Outcome::Failed {
                message: "it has no command".into(),
            },
            String::new(),
            String::new(),
        );
    };
    let sandbox = if hook.sandbox.is_empty() {
        ctx.sandbox.clone()
    } else {
        Sandbox::new(
            ctx.sandbox
                .policy
                .clone()
                .with("the hook", &hook.sandbox, ctx.sandbox.host.home.as_deref()),
            ctx.sandbox.host.clone(),
        )
    };
    let workdir = ctx.workdir.as_deref().filter(|d| d.is_dir());
    let mut cmd = match sandbox
        .command(program, args, workdir, &needed_paths(program, args))
        .await
    {
        Ok(cmd) => cmd,
        Err(e) => {
            return done(
                Outcome::Failed {
                    message: e.to_string(),
                },
                String::new(),
                String::new(),
            );
        }
    };
    if let Some(dir) = &ctx.project_dir {
        cmd.env("HUDDLE_PROJECT_DIR", dir).env("CLAUDE_PROJECT_DIR", dir);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return done(
                Outcome::Failed {
                    message: format!("cannot run `{program}`: {e}"),
                },
                String::new(),
                String::new(),
            );
        }
    };
    // Armed until the hook has been waited for: a timeout or a caller giving up (the turn was
    // stopped) kills its whole group.
    let mut group = GroupKiller(child.id().and_then(|id| i32::try_from(id).ok()));
    if let Some(mut stdin) = child.stdin.take() {
        let json = stdin_json.to_string();
        // A hook that never reads its input closes the pipe: that is fine.
        tokio::spawn(async move {
            let _ = stdin.write_all(json.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stdout = child.stdout.take().map(|s| tokio::spawn(read_tail(s)));
    let stderr = child.stderr.take().map(|s| tokio::spawn(read_tail(s)));
    let status = match tokio::time::timeout(hook.timeout(), child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            group.kill();
            let _ = child.wait().await;
            return done(
                Outcome::TimedOut {
                    after: hook.timeout(),
                },
                String::new(),
                String::new(),
            );
        }
    };
    group.disarm();
    // What it left running in its group keeps no pipe open past a short wait.
    let collect = |task: Option<tokio::task::JoinHandle<String>>| async move {
        match task {
            Some(t) => tokio::time::timeout(Duration::from_secs(2), t)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        }
    };
    let (stdout, stderr) = futures::join!(collect(stdout), collect(stderr));
    let outcome = match status {
        Err(e) => Outcome::Failed {
            message: format!("waiting for it failed: {e}"),
        },
        Ok(s) if s.code() == Some(0) => Outcome::Ok(HookOutput::parse(&stdout)),
        Ok(s) if s.code() == Some(2) => Outcome::Blocked {
            reason: reason_from(&stderr),
        },
        Ok(s) => Outcome::Failed {
            message: describe_exit(s, &stderr),
        },
    };
    done(outcome, stdout, stderr)
}

/// The reason of an exit 2: its stderr, trimmed (a hook that said nothing gets a default).
fn reason_from(stderr: &str) -> String {
    let text = stderr.trim();
    if text.is_empty() {
        "blocked by a hook (it gave no reason)".into()
    } else {
        text.to_string()
    }
}

fn describe_exit(status: std::process::ExitStatus, stderr: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let how = match (status.code(), status.signal()) {
        (Some(code), _) => format!("it exited with status {code}"),
        (None, Some(sig)) => format!("it was killed by signal {sig}"),
        _ => "it failed".into(),
    };
    let last = crate::sandbox::probe::last_lines(stderr, 3);
    if last.is_empty() {
        how
    } else {
        format!("{how}: {last}")
    }
}

async fn read_tail(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > OUTPUT_KEEP_BYTES * 2 {
            kept.drain(..kept.len() - OUTPUT_KEEP_BYTES);
        }
    }
    if kept.len() > OUTPUT_KEEP_BYTES {
        kept.drain(..kept.len() - OUTPUT_KEEP_BYTES);
    }
    String::from_utf8_lossy(&kept).into_owned()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::HookEvent;

    fn sh(script: &str) -> Hook {
        Hook {
            command: vec!["sh".into(), "-c".into(), script.into()],
            ..Hook::default()
        }
    }

    fn unconfined() -> HookContext {
        HookContext {
            sandbox: Sandbox::off(),
            ..HookContext::default()
        }
    }

    async fn once(hook: Hook) -> HookRun {
        let input = HookInput::new(HookEvent::PreToolUse).with_call("t__x", "{}", "c1");
        run_all(&[&hook], &input, &unconfined()).await.remove(0)
    }

    #[tokio::test]
    async fn exit_codes_mean_go_on_block_or_a_reported_error() {
        let ok = once(sh("cat > /dev/null; echo fine")).await;
        assert_eq!(ok.outcome, Outcome::Ok(None));
        assert_eq!(ok.stdout, "fine\n");
        let blocked = once(sh("echo 'no rm -rf here' >&2; exit 2")).await;
        assert_eq!(
            blocked.outcome,
            Outcome::Blocked {
                reason: "no rm -rf here".into()
            }
        );
        let failed = once(sh("echo oops >&2; exit 7")).await;
        assert_eq!(
            failed.error().as_deref(),
            Some("hook `sh -c echo oops >&2; exit 7` failed: it exited with status 7: oops")
        );
        let missing = once(Hook {
            command: vec!["huddle-no-such-hook-xyz".into()],
            ..Hook::default()
        })
        .await;
        assert!(matches!(missing.outcome, Outcome::Failed { .. }), "{missing:?}");
    }

    #[tokio::test]
    async fn the_event_arrives_on_stdin_and_json_output_is_read() {
        let run = once(sh(
            "read line; case \"$line\" in *'\"tool_name\":\"t__x\"'*) echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"saw t__x\"}}';; *) echo \"$line\";; esac",
        ))
        .await;
        let Outcome::Ok(Some(output)) = run.outcome else {
            panic!("{run:?}")
        };
        let specific = output.specific.unwrap();
        assert_eq!(specific.permission_decision.as_deref(), Some("deny"));
        assert_eq!(specific.permission_decision_reason.as_deref(), Some("saw t__x"));
        assert_eq!(HookOutput::parse("not json"), None);
        assert_eq!(HookOutput::parse("{broken"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_hook_times_out_and_its_group_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let hook = Hook {
            timeout_secs: Some(30),
            ..sh(&format!("sleep 1000 & echo $! > {}; wait", pid_file.display()))
        };
        let run = once(hook).await;
        assert_eq!(
            run.outcome,
            Outcome::TimedOut {
                after: Duration::from_secs(30)
            }
        );
        assert_eq!(
            run.error().as_deref(),
            Some(
                format!(
                    "hook `sh -c sleep 1000 & echo $! > {}; wait` timed out after 30s and was stopped",
                    pid_file.display()
                )
                .as_str()
            )
        );
        // The sleep it left behind went with its group.
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            let stat = format!("/proc/{}/stat", pid.trim());
            for _ in 0..200 {
                let alive = std::fs::read_to_string(&stat)
                    .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
                    .unwrap_or(false);
                if !alive {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            panic!("the hook's child outlived the timeout");
        }
    }
}
