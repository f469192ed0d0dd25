//! Running hooks: each a process (no shell) in the sandbox of the session it runs for, the
//! event as JSON on stdin, its own process group killed when it times out or its caller gives
//! up. Exit 0: go on (stdout read as JSON when it is an object); exit 2: block, stderr is the
//! reason; anything else (a timeout too): a hook error that is reported and blocks nothing. So
//! is an exit 0 whose stdout starts like a JSON object but cannot be read as one (broken, cut
//! at [`OUTPUT_KEEP_BYTES`], an unknown decision word): what it meant to say is not guessed.
//! Matching hooks of one event run at once.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::config::Hook;
use super::input::HookInput;
use crate::env::Env;
use crate::process::{GroupKiller, describe_status};
use crate::sandbox::{Sandbox, SandboxMode, SandboxSettings, needed_paths};
use crate::text::secrets::Secrets;

/// Bytes of a hook's stdout and stderr kept: the end of each (a test run's summary is last),
/// and the start of stdout too (its JSON answer is read from there).
pub const OUTPUT_KEEP_BYTES: usize = 64 * 1024;

/// Where hooks run: the sandbox of the session (or team) they run for, its working directory
/// and the project directory they are told (`HUDDLE_PROJECT_DIR`, also `CLAUDE_PROJECT_DIR`
/// so Claude Code scripts find it).
#[derive(Debug, Clone, Default)]
pub struct HookContext {
    pub sandbox: Sandbox,
    /// The command line's mode (`huddle run --sandbox`) already in `sandbox`: it stays over a
    /// hook's own `sandbox:` too.
    pub cli: Option<SandboxMode>,
    pub workdir: Option<PathBuf>,
    pub project_dir: Option<PathBuf>,
    /// Values removed from what a hook prints (configured keys, header and server values)
    /// before it is stored, reported or sent to a model.
    pub secrets: Secrets,
    /// The environment the hook runs in (of the front end whose run it is): all of it
    /// unconfined, what a sandboxed process gets of it confined.
    pub env: Env,
}

impl HookContext {
    /// The sandbox `hook` runs in: its session's, with the hook's own `sandbox:` over it and
    /// the command line's mode over both (as for every other level).
    pub fn sandbox_of(&self, hook: &Hook) -> Sandbox {
        if hook.sandbox.is_empty() {
            return self.sandbox.clone();
        }
        let home = self.sandbox.host.home.as_deref();
        let mut policy = self.sandbox.policy.clone().with("the hook", &hook.sandbox, home);
        if let Some(cli) = self.cli {
            policy = policy.with("--sandbox", &SandboxSettings::mode(cli), home);
        }
        Sandbox::new(policy, self.sandbox.host.clone())
    }
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
    /// `on_error: deny`: a failure or timeout denies the call.
    pub fails_closed: bool,
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
    /// The JSON object in `stdout` (`None`: plain output), or why stdout that starts like one
    /// cannot be read as one: broken JSON, or a decision word huddle does not know.
    pub fn read(stdout: &str) -> Result<Option<HookOutput>, String> {
        let text = stdout.trim();
        if !text.starts_with('{') {
            return Ok(None);
        }
        let out: HookOutput = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let specific = out.specific.as_ref();
        let words = [
            (
                "hookSpecificOutput.permissionDecision",
                specific.and_then(|s| s.permission_decision.as_deref()),
                &["allow", "deny", "ask"][..],
            ),
            ("decision", out.decision.as_deref(), &["block", "approve"][..]),
        ];
        for (field, word, known) in words {
            if let Some(word) = word.filter(|w| !known.contains(w)) {
                return Err(format!(
                    "{field} is `{}`, not one of {}",
                    crate::text::cap_chars(word, 40),
                    known.join(", ")
                ));
            }
        }
        Ok(Some(out))
    }
}

/// Runs every hook at once with `input`; results in the hooks' order.
pub async fn run_all(hooks: &[&Hook], input: &HookInput, ctx: &HookContext) -> Vec<HookRun> {
    let json = input.to_json();
    futures::future::join_all(hooks.iter().map(|hook| run_one(hook, &json, ctx))).await
}

/// Runs one hook with `stdin_json` on its stdin.
pub async fn run_one(hook: &Hook, stdin_json: &str, ctx: &HookContext) -> HookRun {
    let label = hook.label();
    let done = |outcome: Outcome, stdout: String, stderr: String| HookRun {
        label: label.clone(),
        outcome,
        stdout,
        stderr,
        fails_closed: hook.fails_closed(),
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
    let sandbox = ctx.sandbox_of(hook);
    let workdir = ctx.workdir.as_deref().filter(|d| d.is_dir());
    let mut cmd = match sandbox
        .command_in(&ctx.env, program, args, workdir, &needed_paths(program, args))
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
    let mut group = GroupKiller::of(&child);
    if let Some(mut stdin) = child.stdin.take() {
        let json = stdin_json.to_string();
        // A hook that never reads its input closes the pipe: that is fine.
        tokio::spawn(async move {
            let _ = stdin.write_all(json.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stdout = child.stdout.take().map(|s| tokio::spawn(read_ends(s)));
    let stderr = child.stderr.take().map(|s| tokio::spawn(read_ends(s)));
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
    // What it left running in its group keeps no pipe open past a short wait (`None`: the
    // pipe was still open then).
    let collect = |task: Option<tokio::task::JoinHandle<Captured>>| async move {
        match task {
            Some(t) => tokio::time::timeout(Duration::from_secs(2), t)
                .await
                .ok()
                .map(|r| r.unwrap_or_default()),
            None => Some(Captured::default()),
        }
    };
    let (stdout, stderr) = futures::join!(collect(stdout), collect(stderr));
    let drained = stdout.is_some();
    let (stdout, stderr) = (stdout.unwrap_or_default(), stderr.unwrap_or_default());
    let cut = stdout.cut();
    // A hook may print a key it read (a failing `curl -v`, an env dump): never further.
    let (mut head, mut stdout, mut stderr) = (stdout.head(), stdout.tail(), stderr.tail());
    for text in [&mut head, &mut stdout, &mut stderr] {
        ctx.secrets.redact_in_place(text);
    }
    let outcome = match status {
        Err(e) => Outcome::Failed {
            message: format!("waiting for it failed: {e}"),
        },
        // Its answer (a JSON deny, say) may be in what could not be read: not a silent go-on.
        Ok(s) if s.code() == Some(0) && !drained => Outcome::Failed {
            message: "it exited, but a process it started still held its output open, so its answer could not be read (redirect the output of what it leaves running)".into(),
        },
        Ok(s) if s.code() == Some(0) => answer(&head, cut),
        Ok(s) if s.code() == Some(2) => Outcome::Blocked {
            reason: reason_from(&stderr),
        },
        Ok(s) => Outcome::Failed {
            message: describe_exit(s, &stderr),
        },
    };
    done(outcome, stdout, stderr)
}

/// An exit 0's answer: the JSON object its stdout is (`head`: the start of stdout; `cut`: there
/// was more), none for plain output, or a hook error for stdout that starts like a JSON object
/// but cannot be read as one.
fn answer(head: &str, cut: bool) -> Outcome {
    let unread = |why: String| Outcome::Failed {
        message: format!("its JSON could not be read: {why}"),
    };
    if cut && head.trim_start().starts_with('{') {
        return unread(format!(
            "its output was longer than {} KiB",
            OUTPUT_KEEP_BYTES / 1024
        ));
    }
    match HookOutput::read(head) {
        Ok(out) => Outcome::Ok(out),
        Err(why) => unread(why),
    }
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
    let how = format!("it {}", describe_status(&status));
    let last = crate::sandbox::probe::last_lines(stderr, 3);
    if last.is_empty() {
        how
    } else {
        format!("{how}: {last}")
    }
}

/// What was read of a pipe: its first and its last [`OUTPUT_KEEP_BYTES`], and how long it was.
#[derive(Debug, Default)]
struct Captured {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: usize,
}

impl Captured {
    /// More was written than is kept.
    fn cut(&self) -> bool {
        self.total > OUTPUT_KEEP_BYTES
    }

    fn head(&self) -> String {
        String::from_utf8_lossy(&self.head).into_owned()
    }

    fn tail(&self) -> String {
        String::from_utf8_lossy(&self.tail).into_owned()
    }
}

async fn read_ends(mut pipe: impl AsyncRead + Unpin) -> Captured {
    let mut kept = Captured::default();
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let read = &buf[..n];
        kept.total = kept.total.saturating_add(n);
        let room = OUTPUT_KEEP_BYTES.saturating_sub(kept.head.len());
        kept.head.extend_from_slice(&read[..n.min(room)]);
        kept.tail.extend_from_slice(read);
        if kept.tail.len() > OUTPUT_KEEP_BYTES * 2 {
            kept.tail.drain(..kept.tail.len() - OUTPUT_KEEP_BYTES);
        }
    }
    if kept.tail.len() > OUTPUT_KEEP_BYTES {
        kept.tail.drain(..kept.tail.len() - OUTPUT_KEEP_BYTES);
    }
    kept
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

    /// Review of issue 26, finding 7: `huddle run --sandbox` wins over a hook's own
    /// `sandbox:` as over every other level (paths still add up).
    #[test]
    fn the_command_lines_mode_wins_over_a_hooks_own_sandbox() {
        use crate::sandbox::{Baseline, SandboxSettings};
        let base = Baseline {
            cli: Some(SandboxMode::ReadOnly),
            ..Baseline::default()
        };
        let ctx = HookContext {
            sandbox: base.sandbox(&[], None),
            cli: base.cli,
            ..HookContext::default()
        };
        let mut hook = sh("true");
        hook.sandbox = serde_yaml::from_str("mode: workspace-write\nallow_write: [/var/tmp/x]").unwrap();
        let sandbox = ctx.sandbox_of(&hook);
        assert_eq!(sandbox.policy.mode, SandboxMode::ReadOnly);
        assert_eq!(sandbox.policy.decided_by.as_deref(), Some("--sandbox"));
        assert_eq!(sandbox.policy.allow_write, vec![PathBuf::from("/var/tmp/x")]);
        // Without --sandbox the hook's own mode applies.
        let ctx = HookContext {
            sandbox: Baseline::default()
                .sandbox(&[("team", &SandboxSettings::mode(SandboxMode::ReadOnly))], None),
            ..HookContext::default()
        };
        assert_eq!(ctx.sandbox_of(&hook).policy.mode, SandboxMode::WorkspaceWrite);
    }

    /// Review of issue 26, finding 8: a key a hook prints never goes further (not in its
    /// reason, its error, nor its output).
    #[tokio::test]
    async fn secrets_in_a_hooks_output_are_redacted() {
        let ctx = HookContext {
            sandbox: Sandbox::off(),
            secrets: Secrets::new(["sk-live-0123456789"]),
            ..HookContext::default()
        };
        let input = HookInput::new(HookEvent::PreToolUse).with_call("t__x", "{}", "c1");
        let run = |script: &'static str| {
            let ctx = ctx.clone();
            let input = input.clone();
            async move { run_all(&[&sh(script)], &input, &ctx).await.remove(0) }
        };
        let blocked = run("echo 'key sk-live-0123456789 refused' >&2; exit 2").await;
        assert_eq!(
            blocked.outcome,
            Outcome::Blocked {
                reason: "key [redacted] refused".into()
            }
        );
        // (The key is put together at run time: the hook's label is its command.)
        let failed = run("echo auth sk-live-$(echo 0123456789) >&2; exit 3").await;
        let error = failed.error().unwrap_or_default();
        assert!(
            error.ends_with("auth [redacted]") && !error.contains("sk-live-0123456789"),
            "{error}"
        );
        let ok = run(r#"echo '{"hookSpecificOutput":{"additionalContext":"sk-live-0123456789"}}'"#).await;
        assert!(!ok.stdout.contains("sk-live"), "{}", ok.stdout);
        let Outcome::Ok(Some(out)) = ok.outcome else {
            panic!("json output");
        };
        assert_eq!(
            out.specific.and_then(|s| s.additional_context).as_deref(),
            Some("[redacted]")
        );
    }

    /// Review of issue 26, finding 13: a hook that exits 0 while a process it started holds
    /// its stdout is a hook error, not a silent go-on (its JSON deny could be in there).
    #[tokio::test]
    async fn an_exit_0_whose_output_stays_open_is_a_hook_error() {
        let run = once(sh(
            r#"sleep 4 & echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'"#,
        ))
        .await;
        let error = run.error().unwrap_or_default();
        assert!(error.contains("still held its output open"), "{:?}", run.outcome);
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
        assert_eq!(HookOutput::read("not json"), Ok(None));
        assert!(HookOutput::read("{broken").is_err());
    }

    /// Review 26-2, finding 5: an exit 0 whose stdout starts like a JSON object but cannot be
    /// read as one (a raw newline in a string, cut at 64 KiB, an unknown decision word) is a
    /// hook error, not a silent go-on; long plain output keeps its end.
    #[tokio::test]
    async fn json_that_cannot_be_read_is_a_hook_error() {
        let unread = |run: &HookRun| match &run.outcome {
            Outcome::Failed { message } => message
                .strip_prefix("its JSON could not be read: ")
                .map(str::to_string),
            _ => None,
        };
        let raw_newline = once(sh(
            "printf '{\"hookSpecificOutput\":{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"a\\nb\"}}'",
        ))
        .await;
        assert!(unread(&raw_newline).is_some(), "{:?}", raw_newline.outcome);
        let huge = once(sh(
            "printf '{\"hookSpecificOutput\":{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"'; head -c 70000 /dev/zero | tr '\\0' x; printf '\"}}'",
        ))
        .await;
        assert_eq!(
            unread(&huge).as_deref(),
            Some("its output was longer than 64 KiB"),
            "{:?}",
            huge.outcome
        );
        let shouted = once(sh(
            r#"echo '{"hookSpecificOutput":{"permissionDecision":"DENY"}}'"#,
        ))
        .await;
        assert_eq!(
            unread(&shouted).as_deref(),
            Some("hookSpecificOutput.permissionDecision is `DENY`, not one of allow, deny, ask")
        );
        assert_eq!(
            HookOutput::read(r#"{"decision": "continue"}"#),
            Err("decision is `continue`, not one of block, approve".into())
        );
        // Plain output over the limit: its end is kept, and it is no error.
        let long = once(sh("head -c 70000 /dev/zero | tr '\\0' y; echo; echo '12 passed'")).await;
        assert_eq!(long.outcome, Outcome::Ok(None));
        assert!(
            long.stdout.ends_with("y\n12 passed\n"),
            "{}",
            &long.stdout[long.stdout.len() - 20..]
        );
        assert_eq!(long.stdout.len(), OUTPUT_KEEP_BYTES);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_hook_times_out_and_its_group_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let hook = Hook {
            timeout_secs: Some(30),
            ..sh(&format!("sleep 1000 & echo $! > {}; wait", pid_file.display()))
        };
        // The paused clock does not jump while a blocking task runs: this one holds it until
        // the hook has written its child's pid (so the timeout always finds the child there).
        let watched = pid_file.clone();
        let pid = tokio::task::spawn_blocking(move || {
            for _ in 0..6000 {
                // (Whole once its newline is there.)
                if let Ok(pid) = std::fs::read_to_string(&watched)
                    && pid.ends_with('\n')
                {
                    return pid.trim().to_string();
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            panic!("the hook never wrote its child's pid");
        });
        let (run, pid) = tokio::join!(once(hook), pid);
        let pid = pid.expect("the pid");
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
        let stat = format!("/proc/{pid}/stat");
        for _ in 0..2000 {
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
