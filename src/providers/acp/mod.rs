//! The `acp` kind: a local agent speaking the Agent Client Protocol (ACP v1: JSON-RPC 2.0, one
//! JSON object per line on the agent's stdin and stdout): Gemini CLI (`gemini --acp`), opencode
//! (`opencode acp`), Claude Code and Codex through their adapters, and any other ACP agent.
//!
//! Each turn starts the agent (in its own process group, confined by the session's sandbox),
//! `initialize`s it, continues the session's ACP session (`session/resume`, or `session/load`
//! whose replay is not shown again) or opens a new one (`session/new`, in the session's working
//! directory), and sends the prompt (`session/prompt`). While the prompt runs the agent streams
//! `session/update`s: its words become deltas, its tool calls huddle's tool cells (with their
//! diffs as results). When it asks before running a tool (`session/request_permission`), the
//! request goes to huddle's approval flow ([`super::PermissionAsker`]); the option answering
//! is picked by its kind, and no answer (no asker, a stop, no matching option) allows nothing.
//! huddle offers the agent no file system or terminal of its own: client methods are answered
//! "method not found", and the agent works with its own tools inside the sandbox. A stop sends
//! `session/cancel`, answers open permission requests `cancelled`, waits a little for the
//! agent to end its turn, then kills the group.

mod lines;
pub mod wire;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

use super::command::{keep_tail, last_lines};
use super::error::{ErrorKind, ProviderError};
use super::secrets::Secrets;
use super::{
    AgentActivity, AgentReport, DeltaSink, Finished, PermissionAsker, PermissionRequest, Provider, TextSink,
    TurnOutput, TurnRequest, conclude, render_plain_prompt,
};
use crate::config::AGENT_KEY_VARS;
use crate::config::{ProviderConfig, ProviderKind};
use crate::model::ToolCall;
use crate::process::{GroupKiller, describe_status};
use crate::sandbox::Sandbox;
use crate::tools::Decision;
use lines::{BoundedLines, Line};
use wire::{Incoming, RpcError, Update};

/// After `session/cancel`, how long the agent may take to end its turn before its group is
/// killed.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// After the turn, how long the agent may take to exit once its stdin is closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// The longest line read from an agent (a whole file's diff fits); a longer one ends the turn
/// with an error as soon as it passes this, never buffered whole.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

pub struct AcpProvider {
    name: String,
    command: super::ProgramLine,
    reads_repo_instructions: bool,
    /// `api_key_env:`: passed to the agent in its sandbox like a CLI agent's.
    key_env: Option<String>,
    /// The environment the agent starts in and whose keys its errors redact: the front end's
    /// whose profile this provider serves (a host serves several).
    env: crate::env::Env,
    /// The cost each ACP session (by its id) had reached at the end of its last turn here: ACP's
    /// `cost` is the session's cumulative cost, a turn's is the difference.
    spent: Mutex<HashMap<String, f64>>,
}

impl AcpProvider {
    pub fn new(cfg: &ProviderConfig) -> Result<AcpProvider, ProviderError> {
        let command = super::ProgramLine::new(
            &cfg.name,
            &cfg.command,
            "of kind acp needs the agent's command, e.g. command: [\"gemini\", \"--acp\"]",
        )?;
        Ok(AcpProvider {
            name: cfg.name.clone(),
            command,
            reads_repo_instructions: cfg.reads_repo_instructions(),
            key_env: cfg.api_key_env.clone().filter(|k| !k.trim().is_empty()),
            env: crate::env::Env::process(),
            spent: Mutex::new(HashMap::new()),
        })
    }

    /// The same provider starting its agent in `env` (and redacting that environment's keys).
    pub fn with_env(mut self, env: crate::env::Env) -> AcpProvider {
        self.env = env;
        self
    }

    async fn turn(
        &self,
        req: TurnRequest,
        deltas: DeltaSink<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnOutput, ProviderError> {
        let started = Instant::now();
        let mut sink = TextSink::new(deltas);
        let deadline = req.turn_timeout.map(|d| tokio::time::Instant::now() + d);
        let result = self.run(&req, &mut sink, &cancel, deadline).await;
        // The words after a tool call continue the agent's prose (" Done."): the answer they
        // make does not begin with its space.
        let text = match sink.text.trim_start() {
            trimmed if trimmed.len() < sink.text.len() => trimmed.to_string(),
            _ => sink.text,
        };
        conclude(result, text, started, false)
    }

    async fn run(
        &self,
        req: &TurnRequest,
        sink: &mut TextSink<'_>,
        cancel: &CancellationToken,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Finished, ProviderError> {
        let cwd = match &req.working_dir {
            Some(dir) if dir.is_absolute() => dir.clone(),
            Some(dir) => std::env::current_dir()
                .map(|c| c.join(dir))
                .unwrap_or_else(|_| dir.clone()),
            None => std::env::current_dir()
                .map_err(|e| self.error(ErrorKind::Config, format!("no working directory: {e}")))?,
        };
        if !cwd.is_dir() {
            return Err(self.error(
                ErrorKind::Config,
                format!("working directory {} does not exist", cwd.display()),
            ));
        }
        let mut agent = self.spawn(&req.model, &cwd, req.sandbox.as_ref()).await?;
        let mut turn = Turn {
            sink,
            activity: req.agent_activity.clone(),
            permission: req.permission.clone(),
            calls: HashMap::new(),
            replaying: false,
            provider: &self.name,
            spent: None,
            stray: 0,
            lossy: 0,
        };
        let mut rpc = Rpc {
            provider: self,
            agent: &mut agent,
            cancel,
            deadline,
            limit: req.turn_timeout,
        };
        let result = rpc.session(req, &cwd, &mut turn).await;
        if turn.stray > 0 {
            tracing::debug!(provider = %self.name, lines = turn.stray, "agent output lines that were not JSON-RPC");
        }
        if turn.lossy > 0 {
            tracing::warn!(provider = %self.name, lines = turn.lossy, "agent output lines that were not UTF-8 (read with U+FFFD in place of the bad bytes)");
        }
        turn.close_open(if cancel.is_cancelled() {
            "cancelled"
        } else {
            "no result: the agent's turn ended first"
        });
        agent.close().await;
        result
    }

    async fn spawn(
        &self,
        model: &str,
        cwd: &Path,
        sandbox: Option<&Sandbox>,
    ) -> Result<Agent, ProviderError> {
        let (program, args) = self.command.argv(model);
        let mut cmd = match sandbox {
            None => {
                let mut cmd = tokio::process::Command::new(&program);
                cmd.args(&args).current_dir(cwd);
                self.env.apply_async(&mut cmd);
                cmd
            }
            // Confined, it gets only what a sandboxed process gets of the environment.
            Some(sandbox) => super::command::confined(sandbox, self.key_env.as_deref(), None)
                .command_in(
                    &self.env,
                    &program,
                    &args,
                    Some(cwd),
                    &self.command.needed_paths(),
                )
                .await
                .map_err(|e| match e {
                    crate::sandbox::SandboxError::NoProgram(_) => self.not_installed(&program),
                    other => self.error(ErrorKind::Config, other.to_string()),
                })?,
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => self.not_installed(&program),
            _ => self.error(ErrorKind::Config, format!("cannot start `{program}`: {e}")),
        })?;
        let group = GroupKiller::of(&child);
        let stderr = Arc::new(Mutex::new(Vec::<u8>::new()));
        if let Some(err) = child.stderr.take() {
            tokio::spawn(keep_tail(err, Arc::clone(&stderr)));
        }
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(self.error(
                ErrorKind::Process,
                "the agent's stdin/stdout were not captured".into(),
            ));
        };
        Ok(Agent {
            child,
            group,
            stdin: Some(stdin),
            lines: BoundedLines::new(BufReader::new(stdout), MAX_LINE_BYTES),
            stderr,
            next_id: 0,
        })
    }

    fn not_installed(&self, program: &str) -> ProviderError {
        ProviderError::new(
            ErrorKind::Config,
            &self.name,
            format!(
                "`{program}` is not installed or not on PATH (provider `{}`): install the agent or fix `command` for this provider in config.yaml",
                self.name
            ),
        )
    }

    /// An error in huddle's words; the agent's own words in it (its stderr, its error
    /// messages) have the key values huddle knows (the agents' key variables, this provider's
    /// `api_key_env`) and what looks like a secret redacted.
    fn error(&self, kind: ErrorKind, message: String) -> ProviderError {
        let message = format!("provider `{}`: {message}", self.name);
        let keys = AGENT_KEY_VARS
            .iter()
            .copied()
            .chain(self.key_env.as_deref())
            .filter_map(|v| self.env.var(v));
        let message = crate::text::secrets::redact_secrets(&Secrets::new(keys).redact(&message));
        ProviderError::new(kind, &self.name, message)
    }

    /// An error the agent answered a request with.
    fn rpc_error(&self, method: &str, e: &RpcError) -> ProviderError {
        if e.code == wire::AUTH_REQUIRED {
            return self.error(
                ErrorKind::Auth,
                format!(
                    "the agent needs you to log in ({method}: {}). Log in to it once in a terminal (e.g. `opencode auth login`, or run `gemini` once) or set its API key, then try again",
                    e.message
                ),
            );
        }
        self.error(
            ErrorKind::Process,
            format!("the agent refused {method} (error {}): {}", e.code, e.message),
        )
    }
}

/// The running agent of one turn.
struct Agent {
    child: Child,
    /// Armed until the agent has exited: dropping it (a stop, a timeout) kills the group.
    group: GroupKiller,
    stdin: Option<ChildStdin>,
    lines: BoundedLines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: u64,
}

impl Agent {
    async fn write(&mut self, line: String) -> std::io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        };
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    }

    fn stderr_tail(&self) -> String {
        self.stderr.lock().map(|t| last_lines(&t)).unwrap_or_default()
    }

    /// Closes stdin (an ACP agent ends when it does), waits a little for the exit, then kills
    /// the group.
    async fn close(&mut self) {
        self.stdin = None;
        if let Ok(Ok(_)) = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
            // The agent is gone; helpers it left behind in its group go too.
            self.group.kill();
            self.group.disarm();
        } else {
            self.group.kill();
        }
    }
}

/// What a turn has seen so far.
struct Turn<'s, 'd, 'p> {
    sink: &'s mut TextSink<'d>,
    activity: Option<super::AgentActivitySink>,
    permission: Option<PermissionAsker>,
    /// Tool calls by id: what the agent said of each, and whether it was shown and finished.
    calls: HashMap<String, CallState>,
    /// A `session/load` is replaying the conversation: its updates are not shown again.
    replaying: bool,
    /// The provider's name (for the log).
    provider: &'p str,
    /// The session's cumulative cost as the agent last reported it (checked:
    /// [`super::reported_cost`]).
    spent: Option<f64>,
    stray: usize,
    /// Lines that were not UTF-8.
    lossy: usize,
}

#[derive(Default)]
struct CallState {
    title: Option<String>,
    kind: Option<String>,
    raw_input: Option<Value>,
    output: Option<String>,
    shown: bool,
    done: bool,
    /// huddle refused its permission request without asking anyone: why (its result then).
    refused: Option<String>,
}

/// A permission request's answer to send back (its id and outcome), and the call huddle
/// refused without asking anyone, with why.
type Answered = (Value, Value, Option<(String, String)>);

impl Turn<'_, '_, '_> {
    fn tell(&self, activity: AgentActivity) {
        if let Some(sink) = &self.activity {
            sink.send(activity);
        }
    }

    fn update(&mut self, update: Update) {
        if let Update::Usage {
            cost_usd: Some(usd), ..
        } = update
        {
            // Also while a `session/load` replays: the cost so far is where this turn starts.
            if let Some(usd) = super::reported_cost(self.provider, usd) {
                self.spent = Some(usd);
            }
            return;
        }
        if self.replaying {
            return;
        }
        match update {
            Update::Message(text) => self.sink.push(&text),
            Update::Tool(t) => self.tool(t),
            Update::Usage { .. } => {}
            Update::Plan(entries) => {
                let plan: Vec<String> = entries
                    .iter()
                    .map(|e| format!("[{}] {}", e.status, e.content))
                    .collect();
                tracing::debug!(plan = %plan.join("; "), "an ACP agent's plan");
            }
            Update::Thought(_) | Update::Other => {}
        }
    }

    fn tool(&mut self, t: wire::ToolUpdate) {
        let state = self.calls.entry(t.id.clone()).or_default();
        if t.title.is_some() {
            state.title = t.title.clone();
        }
        if t.kind.is_some() {
            state.kind = t.kind.clone();
        }
        if t.raw_input.is_some() {
            state.raw_input = t.raw_input.clone();
        }
        if t.output.as_ref().is_some_and(|o| !o.is_empty()) {
            state.output = t.output.clone();
        }
        let announce = !state.shown;
        state.shown = true;
        let call = ToolCall {
            id: t.id.clone(),
            name: state
                .title
                .clone()
                .or_else(|| state.kind.clone())
                .unwrap_or_else(|| "tool".into()),
            arguments: state
                .raw_input
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_else(|| "{}".into()),
        };
        let finished = (!state.done).then(|| t.finished()).flatten();
        let output = state.output.clone();
        let refused = state.refused.clone();
        if finished.is_some() {
            state.done = true;
        }
        if announce {
            let text = std::mem::take(&mut self.sink.text);
            self.tell(AgentActivity::Call {
                text,
                call: call.clone(),
            });
        }
        if let Some(ok) = finished {
            self.tell(AgentActivity::Result {
                call_id: call.id,
                name: call.name,
                output: match refused.filter(|_| !ok) {
                    Some(why) => why,
                    None => output.unwrap_or_else(|| if ok { "done".into() } else { "failed".into() }),
                },
                is_error: !ok,
            });
        }
    }

    /// Calls the agent never finished get `why` as their result.
    fn close_open(&mut self, why: &str) {
        let open: Vec<(String, String)> = self
            .calls
            .iter_mut()
            .filter(|(_, s)| s.shown && !s.done)
            .map(|(id, s)| {
                s.done = true;
                (
                    id.clone(),
                    s.title
                        .clone()
                        .or_else(|| s.kind.clone())
                        .unwrap_or_else(|| "tool".into()),
                )
            })
            .collect();
        for (call_id, name) in open {
            self.tell(AgentActivity::Result {
                call_id,
                name,
                output: why.to_string(),
                is_error: true,
            });
        }
    }

    /// The decision on a permission request, as the outcome to send back with its id.
    fn permission(&mut self, id: Value, params: &Value) -> BoxFuture<'static, Answered> {
        let ask = wire::parse_permission(params);
        let known = self.calls.get(&ask.call.id);
        let title = ask
            .call
            .title
            .clone()
            .or_else(|| known.and_then(|k| k.title.clone()));
        let kind = ask
            .call
            .kind
            .clone()
            .or_else(|| known.and_then(|k| k.kind.clone()))
            .unwrap_or_else(|| "other".into());
        let input = ask
            .call
            .raw_input
            .clone()
            .or_else(|| known.and_then(|k| k.raw_input.clone()));
        let request = PermissionRequest {
            call: ToolCall {
                id: ask.call.id.clone(),
                name: kind,
                arguments: json!({"title": title, "input": input}).to_string(),
            },
            options: ask.options.clone(),
        };
        let options = ask.options;
        match &self.permission {
            // Nobody to ask: nothing is allowed.
            None => {
                let outcome = wire::permission_outcome(Some(Decision::Deny), &options);
                Box::pin(async move { (id, outcome, None) })
            }
            Some(asker) => {
                let call_id = ask.call.id;
                let decided = asker.ask(request);
                Box::pin(async move {
                    let answer = decided.await;
                    let outcome = wire::permission_outcome(Some(answer.decision), &options);
                    (id, outcome, answer.refused.map(|why| (call_id, why)))
                })
            }
        }
    }
}

/// One turn's conversation with the agent.
struct Rpc<'a> {
    provider: &'a AcpProvider,
    agent: &'a mut Agent,
    cancel: &'a CancellationToken,
    deadline: Option<tokio::time::Instant>,
    /// The turn's time limit (for the message when it is reached).
    limit: Option<Duration>,
}

impl Rpc<'_> {
    async fn session(
        &mut self,
        req: &TurnRequest,
        cwd: &Path,
        turn: &mut Turn<'_, '_, '_>,
    ) -> Result<Finished, ProviderError> {
        let init = self
            .call_ok("initialize", wire::initialize_params(), turn, None)
            .await?;
        let info = wire::AgentInfo::from_result(&init);
        let (mcp_servers, left_out) = wire::mcp_servers(&req.tool_servers, &info);
        if !left_out.is_empty() {
            tracing::warn!(
                agent = %self.provider.name,
                "MCP servers not given to the agent (it does not take HTTP servers): {}",
                left_out.join(", ")
            );
        }
        let mut report = AgentReport::default();
        let stored = req
            .agent_session_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty() && info.can_continue());
        let mut session_id = None;
        if let Some(id) = stored {
            let params = json!({"sessionId": id, "cwd": cwd, "mcpServers": mcp_servers});
            let (method, replay) = if info.resume_session {
                ("session/resume", false)
            } else {
                ("session/load", true)
            };
            turn.replaying = replay;
            let answer = self.call(method, params, turn, None).await?;
            turn.replaying = false;
            match answer {
                Ok(_) => {
                    session_id = Some(id.to_string());
                    report.resumed = true;
                }
                Err(e) if e.code == wire::AUTH_REQUIRED => return Err(self.provider.rpc_error(method, &e)),
                Err(e) => {
                    turn.tell(AgentActivity::ResumeFailed(format!(
                        "{}: the agent's session {id} could not be continued ({}); started a new one with the conversation so far",
                        self.provider.name, e.message
                    )));
                    report.resume_failed = Some(e.message);
                }
            }
        }
        let session_id = match session_id {
            Some(id) => id,
            None => {
                let params = json!({"cwd": cwd, "mcpServers": mcp_servers});
                let created = self.call_ok("session/new", params, turn, None).await?;
                created["sessionId"].as_str().map(str::to_string).ok_or_else(|| {
                    self.provider.error(
                        ErrorKind::Protocol,
                        "session/new answered without a sessionId".into(),
                    )
                })?
            }
        };
        if info.can_continue() {
            turn.tell(AgentActivity::Session(session_id.clone()));
            report.session_id = Some(session_id.clone());
        }
        // Where the session's cumulative cost stands before the prompt: what the agent said
        // while the session was loaded, else what it said at the end of its last turn here; a
        // new session starts at $0.
        let spent_before = turn.spent.or_else(|| {
            if report.resumed {
                self.provider.spent.lock().ok()?.get(&session_id).copied()
            } else {
                Some(0.0)
            }
        });
        let prompt = if report.resumed {
            req.last_user_text().to_string()
        } else {
            render_plain_prompt(req)
        };
        let answer = self
            .call_ok(
                "session/prompt",
                wire::prompt_params(&session_id, &prompt),
                turn,
                Some(&session_id),
            )
            .await?;
        if self.cancel.is_cancelled() {
            return Err(ProviderError::cancelled(&self.provider.name));
        }
        let stop = answer["stopReason"].as_str().unwrap_or("end_turn").to_string();
        report.cost_usd = turn.spent.map(|now| turn_cost(spent_before, now));
        if let (Some(now), Ok(mut spent)) = (turn.spent, self.provider.spent.lock()) {
            spent.insert(session_id, now);
        }
        Ok(Finished {
            usage: None,
            finish_reason: Some(stop),
            tool_calls: Vec::new(),
            agent: Some(report),
        })
    }

    async fn call_ok(
        &mut self,
        method: &str,
        params: Value,
        turn: &mut Turn<'_, '_, '_>,
        cancellable: Option<&str>,
    ) -> Result<Value, ProviderError> {
        self.call(method, params, turn, cancellable)
            .await?
            .map_err(|e| self.provider.rpc_error(method, &e))
    }

    /// Sends a request and reads the agent's lines until its answer, answering the agent's own
    /// requests meanwhile. `cancellable`: the ACP session a stop cancels (`session/cancel`, then
    /// a grace period); without it a stop ends the call at once.
    async fn call(
        &mut self,
        method: &str,
        params: Value,
        turn: &mut Turn<'_, '_, '_>,
        cancellable: Option<&str>,
    ) -> Result<Result<Value, RpcError>, ProviderError> {
        let id = self.agent.next_id;
        self.agent.next_id += 1;
        self.write(wire::request(id, method, params)).await?;
        let mut asks: FuturesUnordered<BoxFuture<'static, Answered>> = FuturesUnordered::new();
        let mut open_asks: Vec<Value> = Vec::new();
        let mut grace: Option<tokio::time::Instant> = None;
        loop {
            let stop = self.cancel.cancelled();
            let timeout = sleep_until(self.deadline);
            let graced = sleep_until(grace);
            tokio::select! {
                line = self.agent.lines.next_line() => {
                    let line = match line {
                        Ok(Some(Line::Text { text, lossy })) => {
                            turn.lossy += usize::from(lossy);
                            text
                        }
                        Ok(Some(Line::TooLong { .. })) => {
                            return Err(self.provider.error(ErrorKind::Protocol, format!(
                                "the agent wrote a line longer than {} MiB during {method}; huddle read no more of it and ended the turn (the next turn starts the agent anew)",
                                MAX_LINE_BYTES / (1024 * 1024)
                            )));
                        }
                        Ok(None) => return Err(self.ended(method).await),
                        Err(e) => {
                            return Err(self.provider.error(ErrorKind::Protocol, format!("reading the agent's output failed: {e}")));
                        }
                    };
                    match wire::classify(&line) {
                        Incoming::Response { id: got, result } if got == id => return Ok(result),
                        Incoming::Response { .. } => {}
                        Incoming::Request { id: asked, method, params } => {
                            if method == "session/request_permission" && grace.is_none() {
                                open_asks.push(asked.clone());
                                asks.push(turn.permission(asked, &params));
                            } else if method == "session/request_permission" {
                                let outcome = wire::permission_outcome(None, &[]);
                                self.write(wire::response(&asked, outcome)).await?;
                            } else {
                                let line = wire::error_response(&asked, wire::METHOD_NOT_FOUND, &format!("huddle does not offer {method}"));
                                self.write(line).await?;
                            }
                        }
                        Incoming::Notification { method, params } => {
                            if method == "session/update" {
                                turn.update(wire::parse_update(&params));
                            }
                        }
                        Incoming::Stray => turn.stray += 1,
                    }
                }
                Some((asked, outcome, refused)) = asks.next(), if !asks.is_empty() => {
                    open_asks.retain(|a| *a != asked);
                    if let Some((call, why)) = refused {
                        turn.calls.entry(call).or_default().refused = Some(why);
                    }
                    self.write(wire::response(&asked, outcome)).await?;
                }
                _ = stop, if grace.is_none() => {
                    let Some(session_id) = cancellable else {
                        return Err(ProviderError::cancelled(&self.provider.name));
                    };
                    grace = Some(tokio::time::Instant::now() + CANCEL_GRACE);
                    self.write(wire::notification("session/cancel", json!({"sessionId": session_id}))).await?;
                    asks = FuturesUnordered::new();
                    for asked in std::mem::take(&mut open_asks) {
                        let outcome = wire::permission_outcome(None, &[]);
                        self.write(wire::response(&asked, outcome)).await?;
                    }
                }
                _ = graced => return Err(ProviderError::cancelled(&self.provider.name)),
                _ = timeout => {
                    return Err(ProviderError::turn_timeout(&self.provider.name, self.limit.unwrap_or_default()));
                }
            }
        }
    }

    async fn write(&mut self, line: String) -> Result<(), ProviderError> {
        match self.agent.write(line).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.ended("writing to it").await),
        }
    }

    /// The agent closed its output or its input: how it ended, quoting the end of stderr.
    async fn ended(&mut self, during: &str) -> ProviderError {
        let status = tokio::time::timeout(EXIT_GRACE, self.agent.child.wait()).await;
        let how = match status {
            Ok(Ok(status)) => describe_status(&status),
            _ => "closed its output".to_string(),
        };
        // Give stderr's reader a moment to take the last lines.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let tail = self.agent.stderr_tail();
        let quoted = if tail.is_empty() {
            "(nothing on stderr)".to_string()
        } else {
            format!("stderr ends with:\n{tail}")
        };
        let kind = if super::agent::looks_like_auth_failure(&tail) {
            ErrorKind::Auth
        } else {
            ErrorKind::Process
        };
        self.provider.error(
            kind,
            format!(
                "the agent `{}` {how} during {during}; {quoted}",
                self.provider.command.program()
            ),
        )
    }
}

/// A turn's cost from the session's cumulative cost before it (`None`: not known) and after
/// it. A cumulative cost that went down (an agent that counts from its start, not the
/// session's) is taken as the turn's; an unknown start counts the whole figure (more, never
/// less, than was spent).
fn turn_cost(before: Option<f64>, now: f64) -> f64 {
    match before {
        Some(before) if now >= before => now - before,
        _ => now,
    }
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Provider for AcpProvider {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Acp
    }
    fn capabilities(&self) -> super::Capabilities {
        super::Capabilities {
            reads_repo_instructions: self.reads_repo_instructions,
            takes_tool_servers: true,
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
