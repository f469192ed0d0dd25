//! The `command` kind: a local program run once per turn, without a shell.
//!
//! The conversation goes to stdin as labelled plain text; stdout is read as the answer: as
//! plain text (`format: text`), or as a CLI agent's JSON events (`claude-stream-json`,
//! `codex-json`, `gemini-stream-json`: text deltas, the agent's own tool steps, usage, cost and
//! its session id, see [`super::agent`]). With a stored agent session the agent is run with its
//! resume flag and gets only the new prompt; if it no longer knows the session, the turn runs
//! again fresh with the whole conversation. `{model}` in an argument is replaced by the slug's
//! model part. The program runs in its own process group, and the whole group is killed when
//! the turn is cancelled or times out, so helpers it started die with it. A non-zero exit is an
//! error quoting the end of stderr. Claude Code (`agent: claude`) in a turn with huddle's
//! approval flow speaks its control protocol instead ([`super::agent::control`]): the prompt as
//! a JSON line, its permission requests answered on stdin as the flow decides.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::agent::control;
use super::agent::{AgentTurn, Control, looks_like_auth_failure, looks_like_unknown_session, resume_args};
use super::error::{ErrorKind, ProviderError};
use super::secrets::Secrets;
use super::{
    AgentActivity, DeltaSink, Finished, Provider, SANDBOX_DENIALS_PER_TURN, TextSink, TurnOutput,
    TurnRequest, conclude, guarded, render_plain_prompt,
};
use crate::config::{AGENT_KEY_VARS, ProviderConfig, ProviderKind};
use crate::model::{AgentFormat, AgentKind, ToolCall};
use crate::process::{GroupKiller, describe_status};
use crate::sandbox::{Sandbox, SandboxSettings};

/// How much of stderr is kept for the error message.
const STDERR_KEEP_BYTES: usize = 64 * 1024;
/// Lines of stderr quoted in the error message.
const STDERR_QUOTED_LINES: usize = 12;
/// After the program exits, how long its stdout/stderr may stay open (held by a child it left
/// behind) before the group is killed and reading stops.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Gemini CLI's exit code for an authentication error (its headless reference).
const GEMINI_AUTH_EXIT: i32 = 41;

pub struct CommandProvider {
    name: String,
    command: super::ProgramLine,
    format: AgentFormat,
    agent: Option<AgentKind>,
    /// The program's environment: the front end's it works for.
    env: crate::env::Env,
    /// `api_key_env:`: the one variable of huddle's environment passed to a sandboxed program
    /// besides the usual ones (a ready-made agent gets its own too).
    key_env: Option<String>,
    /// The agent reads the repository's `AGENTS.md` itself.
    reads_repo_instructions: bool,
}

/// How the program ended.
struct Exit {
    status: ExitStatus,
    /// The last lines of stderr.
    stderr: String,
    /// Lines of its stderr (and of its stdout, when that was scanned too) that say its sandbox
    /// stopped something; empty when it ran unconfined.
    denials: Vec<String>,
}

impl CommandProvider {
    pub fn new(cfg: &ProviderConfig) -> Result<CommandProvider, ProviderError> {
        let command = if cfg.command.is_empty() {
            cfg.agent.map(AgentKind::command).unwrap_or_default()
        } else {
            cfg.command.clone()
        };
        let command = super::ProgramLine::new(
            &cfg.name,
            &command,
            "of kind command needs a program, e.g. command: [\"my-agent\"], or agent: claude | codex | gemini",
        )?;
        Ok(CommandProvider {
            name: cfg.name.clone(),
            command,
            format: cfg.output_format(),
            agent: cfg.agent,
            env: crate::env::Env::process(),
            key_env: cfg.api_key_env.clone().filter(|k| !k.trim().is_empty()),
            reads_repo_instructions: cfg.reads_repo_instructions(),
        })
    }

    /// The program runs with exactly these variables (a front end's, on the host).
    pub fn with_env(mut self, env: crate::env::Env) -> CommandProvider {
        self.env = env;
        self
    }

    /// How stdout is read.
    pub fn format(&self) -> AgentFormat {
        self.format
    }

    /// The program and arguments for one turn, `{model}` filled in.
    pub fn argv(&self, model: &str) -> (String, Vec<String>) {
        self.command.argv(model)
    }

    async fn turn(
        &self,
        req: TurnRequest,
        deltas: DeltaSink<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnOutput, ProviderError> {
        let started = Instant::now();
        let mut sink = TextSink::new(deltas);
        let result = if self.format.is_structured() {
            guarded(
                &self.name,
                &cancel,
                req.turn_timeout,
                self.run_agent(&req, &mut sink),
            )
            .await
        } else {
            guarded(
                &self.name,
                &cancel,
                req.turn_timeout,
                self.run_text(&req, &mut sink),
            )
            .await
        };
        limit_reached(conclude(result, sink.text, started, false), &self.name)
    }

    /// Plain text: stdout is the answer.
    async fn run_text(&self, req: &TurnRequest, sink: &mut TextSink<'_>) -> Result<Finished, ProviderError> {
        let (program, args) = self.argv(&req.model);
        let mut utf8 = Utf8Decoder::default();
        // Plain text: what the program says of its sandbox may be in its answer too.
        let mut said = DenialLines::default();
        let scan = confines(req.sandbox.as_ref());
        let exit = self
            .run_process(
                &program,
                &args,
                Stdin::Text(render_plain_prompt(req)),
                req.working_dir.as_deref(),
                req.sandbox.as_ref(),
                &mut |bytes: &[u8]| {
                    if scan {
                        said.push(bytes);
                    }
                    sink.push(&utf8.push(bytes))
                },
            )
            .await;
        sink.push(&utf8.finish());
        let exit = exit?;
        if exit.status.success() {
            return Ok(Finished {
                usage: None,
                finish_reason: Some("stop".to_string()),
                sandbox_denials: joined(self.redacted(said.finish()), exit.denials),
                ..Finished::default()
            });
        }
        Err(self.exit_error(ErrorKind::Process, &program, &args, &exit))
    }

    /// A CLI agent's JSON events; with a stored session, resumed (and run fresh if the agent no
    /// longer knows it).
    async fn run_agent(&self, req: &TurnRequest, sink: &mut TextSink<'_>) -> Result<Finished, ProviderError> {
        let resume = req
            .agent_session_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty());
        let Some(id) = resume else {
            return self.run_agent_once(req, sink, None).await.map_err(|(e, _)| e);
        };
        let result = match self.run_agent_once(req, sink, Some(id)).await {
            Err((e, true)) => e,
            other => return other.map_err(|(e, _)| e),
        };
        let why = result.message.lines().next().unwrap_or_default().to_string();
        if let Some(activity) = &req.agent_activity {
            activity.send(AgentActivity::ResumeFailed(format!(
                "{}: the agent's session {id} could not be resumed; started a new one with the conversation so far",
                self.name
            )));
        }
        let mut finished = self.run_agent_once(req, sink, None).await.map_err(|(e, _)| e)?;
        if let Some(report) = &mut finished.agent {
            report.resume_failed = Some(why);
        }
        Ok(finished)
    }

    /// One run of the agent. On failure, whether it failed because it does not know the session
    /// it was asked to resume (nothing was shown then).
    async fn run_agent_once(
        &self,
        req: &TurnRequest,
        sink: &mut TextSink<'_>,
        resume: Option<&str>,
    ) -> Result<Finished, (ProviderError, bool)> {
        let (program, mut args) = self.argv(&req.model);
        let Some(mut turn) = AgentTurn::new(self.format, req.agent_activity.clone()) else {
            return Err((
                self.error(ErrorKind::Config, "no parser for this format".into()),
                false,
            ));
        };
        let asker = self.asks_before_tools(req);
        if asker.is_some() {
            args = control::with_control_args(&args);
        }
        let prompt = match resume {
            Some(id) => {
                args = resume_args(self.format, &args, id);
                turn = turn.resuming();
                req.last_user_text().to_string()
            }
            None => render_plain_prompt(req),
        };
        let (stdin, answering) = match asker {
            None => (Stdin::Text(prompt), None),
            Some(asker) => {
                let (lines, to_stdin) = tokio::sync::mpsc::unbounded_channel();
                let (requests, asked) = tokio::sync::mpsc::unbounded_channel();
                turn = turn.answering(requests);
                let _ = lines.send(control::initialize_line());
                let _ = lines.send(control::user_line(&prompt));
                (Stdin::Lines(to_stdin), Some(answer_requests(asker, asked, lines)))
            }
        };
        let mut read = |bytes: &[u8]| turn.push_bytes(bytes, sink);
        let process = self.run_process(
            &program,
            &args,
            stdin,
            req.working_dir.as_deref(),
            req.sandbox.as_ref(),
            &mut read,
        );
        let exit = match answering {
            None => process.await,
            Some(answering) => {
                tokio::pin!(answering);
                tokio::select! {
                    exit = process => exit,
                    never = &mut answering => match never {},
                }
            }
        }
        .map_err(|e| (e, false))?;
        let cut = turn.finish(sink);
        let blank = turn.is_blank(sink);
        turn.close_open("the agent ended without reporting this call's result");
        if turn.stray_lines > 0 {
            tracing::debug!(provider = %self.name, lines = turn.stray_lines, "agent output lines that were not JSON events");
        }
        // A resume the agent refused is tried again fresh only if nothing was shown yet.
        self.agent_outcome(turn, &program, &args, exit, cut, resume.is_some())
            .map_err(|(e, unknown)| (e, unknown && blank))
    }

    fn agent_outcome(
        &self,
        turn: AgentTurn,
        program: &str,
        args: &[String],
        exit: Exit,
        cut: Option<usize>,
        resuming: bool,
    ) -> Result<Finished, (ProviderError, bool)> {
        let agent = self.agent_name(program);
        let how = describe_status(&exit.status);
        let gemini_auth =
            self.format == AgentFormat::GeminiStreamJson && exit.status.code() == Some(GEMINI_AUTH_EXIT);
        let unknown = |text: &str| resuming && looks_like_unknown_session(text);
        match (&turn.outcome, exit.status.success()) {
            (Some(Ok(())), true) => {
                let mut report = turn.report;
                report.cost_usd = report
                    .cost_usd
                    .and_then(|usd| super::reported_cost(&self.name, usd));
                Ok(Finished {
                    usage: turn.usage,
                    finish_reason: Some("stop".to_string()),
                    tool_calls: Vec::new(),
                    agent: Some(report),
                    sandbox_denials: exit.denials,
                })
            }
            (Some(Ok(())), false) => Err((
                self.exit_error(ErrorKind::Process, program, args, &exit),
                unknown(&exit.stderr),
            )),
            (Some(Err(said)), _) => {
                let both = format!("{said}\n{}", exit.stderr);
                Err((
                    self.reported_error(&agent, said, &how, gemini_auth || looks_like_auth_failure(said)),
                    unknown(&both),
                ))
            }
            (None, _) if cut.is_some() => {
                let mut message = format!(
                    "truncated output: `{agent}`'s output stopped in the middle of a JSON line ({} bytes discarded) before its result line; it {how}",
                    cut.unwrap_or_default()
                );
                if !exit.status.success() && !exit.stderr.is_empty() {
                    message.push_str(&format!("; stderr ends with:\n{}", exit.stderr));
                }
                Err((self.error(ErrorKind::Truncated, message), false))
            }
            (None, true) => {
                let mut message = format!("truncated output: `{agent}` exited without its result line");
                if let Some(failure) = &turn.failure {
                    message.push_str(&format!("; it reported: {failure}"));
                }
                Err((self.error(ErrorKind::Truncated, message), false))
            }
            (None, false) => {
                let said = turn.failure.clone().unwrap_or_default();
                let both = format!("{said}\n{}", exit.stderr);
                if gemini_auth || looks_like_auth_failure(&both) {
                    let reason = if said.is_empty() {
                        exit.stderr.clone()
                    } else {
                        said
                    };
                    return Err((self.reported_error(&agent, &reason, &how, true), false));
                }
                if !said.is_empty() {
                    return Err((self.reported_error(&agent, &said, &how, false), unknown(&both)));
                }
                Err((
                    self.exit_error(ErrorKind::Process, program, args, &exit),
                    unknown(&both),
                ))
            }
        }
    }

    /// The agent said what went wrong.
    fn reported_error(&self, agent: &str, said: &str, how: &str, auth: bool) -> ProviderError {
        let said = said.trim();
        if auth {
            return self.error(
                ErrorKind::Auth,
                format!(
                    "`{agent}` is not logged in or its credentials were refused: {said}. Log in (run `{agent}` once in a terminal) or set its API key, then try again"
                ),
            );
        }
        self.error(
            ErrorKind::Process,
            format!("`{agent}` reported an error (it {how}): {said}"),
        )
    }

    /// What to call the agent in messages: its preset's name or the program.
    fn agent_name(&self, program: &str) -> String {
        match self.agent {
            Some(a) => a.as_str().to_string(),
            None => Path::new(program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| program.to_string()),
        }
    }

    /// Who answers the agent before it runs one of its own tools: the turn's approval flow, for
    /// Claude Code (`agent: claude` reading `claude-stream-json`), which then speaks its control
    /// protocol. Any other command keeps the prompt-on-stdin form (it may read stdin to its end).
    fn asks_before_tools(&self, req: &TurnRequest) -> Option<super::PermissionAsker> {
        (self.agent == Some(AgentKind::Claude) && self.format == AgentFormat::ClaudeStreamJson)
            .then(|| req.permission.clone())
            .flatten()
    }

    /// Runs the program with `stdin` (confined by `sandbox` when given), handing stdout to `out`
    /// as it arrives.
    async fn run_process(
        &self,
        program: &str,
        args: &[String],
        stdin: Stdin,
        working_dir: Option<&Path>,
        sandbox: Option<&Sandbox>,
        out: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Result<Exit, ProviderError> {
        if let Some(dir) = working_dir
            && !dir.is_dir()
        {
            return Err(self.error(
                ErrorKind::Config,
                format!("working directory {} does not exist", dir.display()),
            ));
        }
        let mut cmd = match sandbox {
            None => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                if let Some(dir) = working_dir {
                    cmd.current_dir(dir);
                }
                self.env.apply_async(&mut cmd);
                cmd
            }
            // Confined, it gets only what a sandboxed process gets of the environment.
            Some(sandbox) => confined(sandbox, self.key_env.as_deref(), self.agent)
                .command_in(
                    &self.env,
                    program,
                    args,
                    working_dir,
                    // What the configured command names (not the model a preset put in it).
                    &self.command.needed_paths(),
                )
                .await
                .map_err(|e| match e {
                    crate::sandbox::SandboxError::NoProgram(_) => {
                        self.spawn_error(program, &std::io::Error::from(std::io::ErrorKind::NotFound))
                    }
                    other => self.error(ErrorKind::Config, other.to_string()),
                })?,
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| self.spawn_error(program, &e))?;
        // Armed until the program has been waited for: dropping this (cancel, timeout, panic)
        // kills the whole group.
        let mut group = GroupKiller::of(&child);

        if let Some(mut pipe) = child.stdin.take() {
            // A program that never reads stdin closes it early: a broken pipe is fine.
            tokio::spawn(async move {
                match stdin {
                    Stdin::Text(text) => {
                        let _ = pipe.write_all(text.as_bytes()).await;
                    }
                    Stdin::Lines(mut lines) => {
                        while let Some(line) = lines.recv().await {
                            if pipe.write_all(line.as_bytes()).await.is_err() || pipe.flush().await.is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = pipe.shutdown().await;
            });
        }
        let stderr_tail = Arc::new(Mutex::new(Vec::<u8>::new()));
        // Confined, its stderr is read for what its sandbox stopped (the whole of it: the tail
        // kept for an error message may have lost an early denial).
        let denials = confines(sandbox).then(|| Arc::new(Mutex::new(DenialLines::default())));
        let stderr_task = child.stderr.take().map(|stderr| {
            let tail = stderr_tail.clone();
            tokio::spawn(keep_tail(stderr, tail, denials.clone()))
        });
        let Some(stdout) = child.stdout.take() else {
            return Err(self.error(
                ErrorKind::Process,
                "stdout of the program was not captured".into(),
            ));
        };

        let read_out = read_stdout(stdout, out);
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
        let stderr = stderr_tail.lock().map(|t| last_lines(&t)).unwrap_or_default();
        let denials = denials
            .and_then(|d| d.lock().ok().map(|mut d| std::mem::take(&mut *d).finish()))
            .unwrap_or_default();
        Ok(Exit {
            status,
            stderr,
            denials: self.redacted(denials),
        })
    }

    /// A non-zero exit, quoting the end of stderr.
    fn exit_error(&self, kind: ErrorKind, program: &str, args: &[String], exit: &Exit) -> ProviderError {
        let quoted = if exit.stderr.is_empty() {
            "(nothing on stderr)".to_string()
        } else {
            format!("stderr ends with:\n{}", exit.stderr)
        };
        self.error(
            kind,
            format!(
                "`{}` {}; {quoted}",
                display_command(program, args),
                describe_status(&exit.status)
            ),
        )
    }

    fn error(&self, kind: ErrorKind, message: String) -> ProviderError {
        // (A limit notice in the message is read by `limit_reached`.)
        let message = format!("provider `{}`: {message}", self.name);
        ProviderError::new(kind, &self.name, self.secrets().redact(&message).into_owned())
    }

    /// The agents' keys of the program's environment, never repeated in what huddle reports.
    fn secrets(&self) -> Secrets {
        Secrets::new(AGENT_KEY_VARS.iter().filter_map(|v| self.env.var(v)))
    }

    fn redacted(&self, lines: Vec<String>) -> Vec<String> {
        if lines.is_empty() {
            return lines;
        }
        let secrets = self.secrets();
        lines
            .into_iter()
            .map(|l| secrets.redact(&l).into_owned())
            .collect()
    }

    fn spawn_error(&self, program: &str, e: &std::io::Error) -> ProviderError {
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => {
                return ProviderError::new(
                    ErrorKind::Config,
                    &self.name,
                    format!(
                        "`{program}` is not installed or not on PATH (provider `{}`): install it or fix `command` for this provider in config.yaml",
                        self.name
                    ),
                );
            }
            std::io::ErrorKind::PermissionDenied => {
                format!("program `{program}` is not executable (permission denied)")
            }
            _ => format!("cannot start `{program}`: {e}"),
        };
        self.error(ErrorKind::Config, message)
    }
}

/// What the program reads on stdin.
enum Stdin {
    /// This text, then the end.
    Text(String),
    /// Each line as it is sent; the end once every sender is gone.
    Lines(tokio::sync::mpsc::UnboundedReceiver<String>),
}

/// Answers the agent's control requests (see [`control`]) through `asker`, several at once,
/// writing the answers to stdin (`lines`); stdin is closed once the result line came. Never
/// ends by itself: the turn ends when the program does.
async fn answer_requests(
    asker: super::PermissionAsker,
    mut asked: tokio::sync::mpsc::UnboundedReceiver<Control>,
    lines: tokio::sync::mpsc::UnboundedSender<String>,
) -> std::convert::Infallible {
    use futures::StreamExt;
    let mut lines = Some(lines);
    let mut answering = futures::stream::FuturesUnordered::new();
    loop {
        tokio::select! {
            next = asked.recv() => match next {
                Some(Control::Request(v)) => match control::request(&v) {
                    control::Request::CanUseTool { request_id, tool, input, call_id } => {
                        let request = super::PermissionRequest {
                            call: ToolCall {
                                id: call_id,
                                name: tool,
                                arguments: serde_json::to_string(&input).unwrap_or_else(|_| "{}".into()),
                            },
                            options: Vec::new(),
                        };
                        let decided = asker.ask(request);
                        answering.push(async move {
                            let answer = decided.await;
                            control::answer(&request_id, answer.decision, answer.refused.as_deref(), &input)
                        });
                    }
                    control::Request::Unsupported { request_id, subtype } => {
                        tracing::debug!(%subtype, "a control request huddle does not serve; answered with an error");
                        if let Some(lines) = &lines {
                            let _ = lines.send(control::error(&request_id, &format!("huddle does not serve {subtype}")));
                        }
                    }
                    control::Request::Malformed(why) => tracing::warn!(%why, "a control request that cannot be answered; ignored"),
                },
                // The result line: nothing more to answer; closing stdin lets the agent end.
                Some(Control::Ended) => lines = None,
                None => return std::future::pending().await,
            },
            Some(line) = answering.next(), if !answering.is_empty() => {
                if let Some(lines) = &lines {
                    let _ = lines.send(line);
                }
            }
        }
    }
}

/// The session's sandbox with a ready-made agent's own state writable (its sessions and
/// login live under the home directory) but its settings and hooks read-only, and its own
/// environment variables (or `api_key_env:`) passed.
pub(super) fn confined(sandbox: &Sandbox, key_env: Option<&str>, agent: Option<AgentKind>) -> Sandbox {
    let mut sandbox = sandbox.clone();
    sandbox.policy.allow_env.extend(key_env.map(str::to_string));
    let Some(agent) = agent else {
        return sandbox;
    };
    sandbox
        .policy
        .allow_env
        .extend(agent.env_vars().iter().map(|v| v.to_string()));
    let state = SandboxSettings {
        allow_write: agent.state_paths().iter().map(|p| p.to_string()).collect(),
        ..SandboxSettings::default()
    };
    let home = sandbox.host.home.as_deref();
    let mut policy = sandbox.policy.clone().with("the agent's own files", &state, home);
    policy.keep_read_only.extend(
        agent
            .protected_state()
            .iter()
            .filter_map(|p| crate::sandbox::settings::expand_keeping_slash(p, home)),
    );
    Sandbox::new(policy, sandbox.host.clone())
}

impl Provider for CommandProvider {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }
    fn capabilities(&self) -> super::Capabilities {
        super::Capabilities {
            reports_cost: self.format == AgentFormat::ClaudeStreamJson,
            reads_repo_instructions: self.reads_repo_instructions,
            ..super::Capabilities::CLI_AGENT
        }
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

async fn read_stdout(
    mut stdout: impl AsyncRead + Unpin,
    out: &mut (dyn FnMut(&[u8]) + Send),
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 8192];
    loop {
        let n = stdout.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        out(&buf[..n]);
    }
}

/// Keeps the last [`STDERR_KEEP_BYTES`] of `stderr` in `tail`, handing all of it to
/// `denials` when given.
pub(super) async fn keep_tail(
    mut stderr: impl AsyncRead + Unpin,
    tail: Arc<Mutex<Vec<u8>>>,
    denials: Option<Arc<Mutex<DenialLines>>>,
) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Some(Ok(mut d)) = denials.as_ref().map(|d| d.lock()) {
            d.push(&buf[..n]);
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

/// True when `sandbox` confines the program: what it says of its sandbox is worth reading.
fn confines(sandbox: Option<&Sandbox>) -> bool {
    sandbox.is_some_and(|s| !s.policy.is_off())
}

/// The longest line [`DenialLines`] reads; the rest of a longer one is passed over.
const DENIAL_LINE_MAX: usize = 4096;

/// The lines of a program's output that say its sandbox stopped something (a write to a
/// read-only place, no network), read as the output arrives in pieces: each once, at most
/// [`SANDBOX_DENIALS_PER_TURN`].
#[derive(Debug, Default)]
pub(super) struct DenialLines {
    line: Vec<u8>,
    found: Vec<String>,
}

impl DenialLines {
    pub fn push(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            if self.found.len() >= SANDBOX_DENIALS_PER_TURN {
                return;
            }
            let room = DENIAL_LINE_MAX.saturating_sub(self.line.len());
            self.line.extend_from_slice(&piece[..piece.len().min(room)]);
            if piece.ends_with(b"\n") {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        if let Some(found) = crate::sandbox::denial_in(&String::from_utf8_lossy(&line))
            && !self.found.contains(&found)
            && self.found.len() < SANDBOX_DENIALS_PER_TURN
        {
            self.found.push(found);
        }
    }

    /// What was found, the last line read too when it had no newline.
    pub fn finish(mut self) -> Vec<String> {
        if !self.line.is_empty() {
            self.end_line();
        }
        self.found
    }
}

/// `first`, then what of `then` it does not have, at most [`SANDBOX_DENIALS_PER_TURN`].
fn joined(mut first: Vec<String>, then: Vec<String>) -> Vec<String> {
    for line in then {
        if !first.contains(&line) {
            first.push(line);
        }
    }
    first.truncate(SANDBOX_DENIALS_PER_TURN);
    first
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

/// A turn that hit a usage or rate limit, said in the agent's words (`usage limit reached|<epoch>`,
/// `try again in 2 hours`, a `rate_limit_event` it rejected with): a `rate_limited` error with
/// the wait until the reset, which the engine waits out. An answer that is nothing but such a
/// notice is one too.
fn limit_reached(
    result: Result<TurnOutput, ProviderError>,
    provider: &str,
) -> Result<TurnOutput, ProviderError> {
    let now = chrono::Utc::now();
    match result {
        Err(mut e) if !matches!(e.kind, ErrorKind::Cancelled | ErrorKind::Config | ErrorKind::Auth) => {
            let said = format!("{}\n{}", e.message, e.partial_text);
            if let Some(wait) = super::limits::limit_notice(&said, now) {
                e.kind = ErrorKind::RateLimited;
                e.retry_after = Some(wait);
                // The notice on stdout is no answer: it goes into the error's words, and the
                // turn may be asked again once the limit resets.
                let notice = crate::text::first_line(e.partial_text.trim(), 200);
                if !notice.is_empty() && !e.message.contains(&notice) {
                    e.message = format!("{}: {notice}", e.message);
                }
                e.partial_text.clear();
            }
            Err(e)
        }
        // Only Claude Code's own form: an answer about rate limits is not a limit.
        Ok(out) if out.text.trim().len() <= 300 && out.text.contains("limit reached|") => {
            match super::limits::limit_notice(out.text.trim(), now) {
                Some(wait) => Err(ProviderError::new(
                    ErrorKind::RateLimited,
                    provider,
                    format!(
                        "provider `{provider}`: the agent's usage limit is reached: {}",
                        out.text.trim()
                    ),
                )
                .with_retry_after(Some(wait))),
                None => Ok(out),
            }
        }
        other => other,
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

    /// Review 26-2, finding 1: a program's output is read for its sandbox's refusals as it
    /// arrives, a line split across reads too; each once, five at most, the last line without
    /// its newline too.
    #[test]
    fn denial_lines_are_found_across_reads_once_and_five_at_most() {
        let mut d = DenialLines::default();
        d.push(b"fine\nsh: can't create /h/x: Read-on");
        d.push(b"ly file system\nsh: can't create /h/x: Read-only file system\n");
        assert_eq!(d.finish(), ["sh: can't create /h/x: Read-only file system"]);
        let mut d = DenialLines::default();
        for i in 0..9 {
            d.push(format!("curl: ({i}) Network is unreachable\n").as_bytes());
        }
        d.push(b"last: Read-only file system");
        let found = d.finish();
        assert_eq!(found.len(), SANDBOX_DENIALS_PER_TURN, "{found:?}");
        assert_eq!(found[4], "curl: (4) Network is unreachable");
        let mut d = DenialLines::default();
        d.push(b"tail: Read-only file system");
        assert_eq!(d.finish(), ["tail: Read-only file system"]);
        // A line longer than what is read of it: its start is read.
        let mut d = DenialLines::default();
        d.push(&[b'a'; DENIAL_LINE_MAX + 10]);
        d.push(b" Read-only file system\nok\n");
        assert!(d.finish().is_empty());
        assert_eq!(joined(vec!["a".into()], vec!["a".into(), "b".into()]), ["a", "b"]);
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
