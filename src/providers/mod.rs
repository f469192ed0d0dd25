//! Providers: one streaming turn against an LLM (OpenAI-compatible or Anthropic HTTP, a local
//! program, or the offline simulator), with retries, timeouts and cancellation.
//!
//! The simulator plays every mode, so it lives above the engine (`crate::sim`): [`Providers`]
//! is given the constructor of its `sim` providers ([`Simulator`]) and knows nothing of it.
//!
//! A turn streams text deltas through a callback, then ends with exactly one result: a
//! [`TurnOutput`] or a [`ProviderError`] that carries any text already streamed.

pub mod a2a;
pub mod acp;
pub mod agent;
pub mod anthropic;
pub mod command;
pub mod error;
mod http;
pub mod limits;
pub mod openai;
pub mod probe;
pub mod retry;
pub mod secrets;
pub mod sse;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ProviderKind, split_slug};
use crate::model::{ToolCall, ToolChoice, ToolSpec, Usage};

pub use error::{ErrorKind, ProviderError};
pub use probe::{ProbeResult, ProbeStatus, probe};
pub use retry::RetryPolicy;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRole {
    User,
    Assistant,
    /// A tool's result (OpenAI `role: tool`; Anthropic a `tool_result` block in a user turn).
    Tool,
}

impl ChatRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
            ChatRole::Tool => "tool",
        }
    }
}

/// Which call a tool message answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultRef {
    pub call_id: String,
    pub name: String,
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: ChatRole,
    /// Shared, not copied: a session's history is handed to every turn's request.
    pub content: Arc<str>,
    /// The calls an assistant message made (after its text).
    pub tool_calls: Vec<ToolCall>,
    /// On a tool message: the call it answers.
    pub result_of: Option<ToolResultRef>,
}

impl ChatMessage {
    fn plain(role: ChatRole, content: Arc<str>) -> ChatMessage {
        ChatMessage {
            role,
            content,
            tool_calls: Vec::new(),
            result_of: None,
        }
    }
    pub fn user(content: impl Into<Arc<str>>) -> ChatMessage {
        ChatMessage::plain(ChatRole::User, content.into())
    }
    pub fn assistant(content: impl Into<Arc<str>>) -> ChatMessage {
        ChatMessage::plain(ChatRole::Assistant, content.into())
    }
    /// An assistant message that called tools (its text may be empty).
    pub fn assistant_calls(content: impl Into<Arc<str>>, calls: Vec<ToolCall>) -> ChatMessage {
        ChatMessage {
            tool_calls: calls,
            ..ChatMessage::plain(ChatRole::Assistant, content.into())
        }
    }
    /// A tool's result for the call `call_id`.
    pub fn tool_result(
        call_id: &str,
        name: &str,
        is_error: bool,
        content: impl Into<Arc<str>>,
    ) -> ChatMessage {
        ChatMessage {
            result_of: Some(ToolResultRef {
                call_id: call_id.to_string(),
                name: name.to_string(),
                is_error,
            }),
            ..ChatMessage::plain(ChatRole::Tool, content.into())
        }
    }
}

/// One turn: the conversation so far, ending with the user message to answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnRequest {
    /// The model part of the slug (after `<provider>/`).
    pub model: String,
    pub system: Option<Arc<str>>,
    pub messages: Vec<ChatMessage>,
    /// Where a `command` provider's program runs.
    pub working_dir: Option<PathBuf>,
    /// The whole turn, retries included; `None` = no limit (the read timeout still applies).
    pub turn_timeout: Option<Duration>,
    /// Tools the model may call (empty: none declared).
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    /// For a `command` provider reading a CLI agent's JSON: the agent's own session id from the
    /// previous turn. The agent resumes it and gets only the new prompt.
    pub agent_session_id: Option<String>,
    /// Told of a CLI agent's steps as they happen (its tool calls and their results).
    pub agent_activity: Option<AgentActivitySink>,
    /// What the requests of one conversation share (huddle's session id): an OpenAI-compatible
    /// provider that sends `prompt_cache_key` sends this, so they meet the same cache.
    pub cache_key: Option<String>,
    /// The newest prompt's index in `messages` when the conversation's later requests send it
    /// in other words (its shorter form for the history, see `Message::compact`): a prompt
    /// cache then keeps what precedes it, not what ends with it, which nothing sends again.
    /// `None`: every message is sent again as it is.
    pub reworded_prompt: Option<usize>,
    /// What confines a `command` provider's program (the session's sandbox); `None` runs it
    /// unconfined (a caller outside the engine: a probe, a test).
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// Asked when the agent asks before running one of its own tools (an ACP agent's
    /// `session/request_permission`): huddle's approval flow. Without it every such call is
    /// refused.
    pub permission: Option<PermissionAsker>,
    /// The session's tool servers, for an agent that starts them itself
    /// (`Capabilities::takes_tool_servers`: an ACP agent's `mcpServers`).
    pub tool_servers: Vec<crate::tools::ServerLaunch>,
}

/// An agent asks to run one of its own tools.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    /// The call as huddle shows it: the agent's call id, the tool's kind as its name (`edit`,
    /// `execute`, ... `other`), and as arguments a JSON object with the agent's `title` and its
    /// `input`.
    pub call: ToolCall,
    /// The answers the agent offers, in its order (the popup shows them).
    pub options: Vec<crate::tools::AgentOption>,
}

/// The answer to a [`PermissionRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAnswer {
    pub decision: crate::tools::Decision,
    /// Why huddle refused without asking anyone (a `pre_tool_use` hook's reason, `huddle run`
    /// without `--approve-tools`, a run over MCP nobody can be asked in, a stopped run): the
    /// call's result says this, not what the agent makes of a denial ("denied by user" when no
    /// user was asked). Claude Code's model reads it as the refusal's message.
    pub refused: Option<String>,
}

impl From<crate::tools::Decision> for PermissionAnswer {
    fn from(decision: crate::tools::Decision) -> Self {
        PermissionAnswer {
            decision,
            refused: None,
        }
    }
}

/// Puts a [`PermissionRequest`] to huddle's approval flow (the TUI's popup, `huddle run
/// --approve-tools` or its refusal, hooks) and resolves to the answer.
#[derive(Clone)]
pub struct PermissionAsker(
    pub Arc<dyn Fn(PermissionRequest) -> BoxFuture<'static, PermissionAnswer> + Send + Sync>,
);

impl PermissionAsker {
    pub fn new(
        f: impl Fn(PermissionRequest) -> BoxFuture<'static, PermissionAnswer> + Send + Sync + 'static,
    ) -> PermissionAsker {
        PermissionAsker(Arc::new(f))
    }
    pub fn ask(&self, request: PermissionRequest) -> BoxFuture<'static, PermissionAnswer> {
        (self.0)(request)
    }
}

impl std::fmt::Debug for PermissionAsker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PermissionAsker")
    }
}

impl PartialEq for PermissionAsker {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What a CLI agent did, reported while its turn runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentActivity {
    /// The agent's own session (or thread) id.
    Session(String),
    /// The agent called one of its tools; `text` is what it wrote since its previous step.
    Call { text: String, call: ToolCall },
    /// A call ended.
    Result {
        call_id: String,
        name: String,
        output: String,
        is_error: bool,
    },
    /// The stored session could not be resumed (the agent no longer knows it); the turn runs
    /// again fresh with the whole conversation. The text says so, for the user.
    ResumeFailed(String),
}

/// Receives [`AgentActivity`] as it happens (called on the turn's task: keep it quick).
#[derive(Clone)]
pub struct AgentActivitySink(pub Arc<dyn Fn(AgentActivity) + Send + Sync>);

impl AgentActivitySink {
    pub fn new(f: impl Fn(AgentActivity) + Send + Sync + 'static) -> AgentActivitySink {
        AgentActivitySink(Arc::new(f))
    }
    pub fn send(&self, activity: AgentActivity) {
        (self.0)(activity)
    }
}

impl std::fmt::Debug for AgentActivitySink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentActivitySink")
    }
}

impl PartialEq for AgentActivitySink {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One tool call a CLI agent made and finished during a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStep {
    /// What the agent wrote before the call (since its previous step).
    pub text: String,
    pub call: ToolCall,
    pub result: String,
    pub is_error: bool,
}

/// What a CLI agent's structured output said besides its answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentReport {
    /// The agent's own session (thread) id: resume it next turn.
    pub session_id: Option<String>,
    /// Its tool calls, in order, each with its result.
    pub steps: Vec<AgentStep>,
    pub cost_usd: Option<f64>,
    /// The turn continued the stored session (only the new prompt was sent).
    pub resumed: bool,
    /// The stored session could not be resumed (why); the turn ran fresh with the transcript.
    pub resume_failed: Option<String>,
}

/// The cost an agent reported for its turn (`usd`), as huddle counts it
/// ([`crate::model::ReportedCost`]): a negative or NaN figure is dropped, one above
/// [`crate::model::MAX_REPORTED_TURN_USD`] is clipped, each with a warning in the log that names
/// the provider and the figure (a number, nothing of the agent's words).
pub fn reported_cost(provider: &str, usd: f64) -> Option<f64> {
    use crate::model::{MAX_REPORTED_TURN_USD, ReportedCost};
    let checked = ReportedCost::check(usd);
    match checked {
        ReportedCost::Taken(_) => {}
        ReportedCost::Clipped(_) => tracing::warn!(
            provider,
            reported = %format_args!("{usd:.3e}"),
            "an agent reported a turn cost above ${MAX_REPORTED_TURN_USD}; counted as ${MAX_REPORTED_TURN_USD}"
        ),
        ReportedCost::Dropped => tracing::warn!(
            provider,
            reported = %format_args!("{usd:.3e}"),
            "an agent reported a negative or invalid turn cost; dropped (the turn counts as unpriced)"
        ),
    }
    checked.usd()
}

impl TurnRequest {
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> TurnRequest {
        TurnRequest {
            model: model.into(),
            messages,
            ..TurnRequest::default()
        }
    }

    /// The text of the last user message (what this turn answers).
    pub fn last_user_text(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == ChatRole::User)
            .map(|m| &*m.content)
            .unwrap_or("")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutput {
    pub text: String,
    /// Token counts when the provider reported them (the sim estimates them in words).
    pub usage: Option<Usage>,
    /// The provider's own words: `stop`, `end_turn`, `length`, `max_tokens`, `exit 0`...
    pub finish_reason: Option<String>,
    pub duration: Duration,
    /// Produced by the offline simulator, not a real model.
    pub simulated: bool,
    /// The tools the model asked to call, in the order it asked (empty for a final answer).
    pub tool_calls: Vec<ToolCall>,
    /// From a CLI agent's structured output: its session id, the steps it took, its cost.
    /// `text` is then what it wrote after its last step.
    pub agent: Option<AgentReport>,
    /// Lines of a sandboxed program's own output that say its sandbox stopped something (a
    /// write to a read-only place, no network): its stderr, and stdout when that is plain text.
    /// At most [`SANDBOX_DENIALS_PER_TURN`], each once.
    pub sandbox_denials: Vec<String>,
}

/// `sandbox_denied` reports of one turn of a CLI agent, at most (the rest are the same story).
pub const SANDBOX_DENIALS_PER_TURN: usize = 5;

/// Receives each text delta as it arrives.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// What a provider can do, as the engine asks it (never by testing its kind). A field added
/// later (prompt caching, streaming, ...) gets its value for HTTP model APIs in
/// [`Capabilities::HTTP`]; a provider that differs says so in its [`Provider::capabilities`],
/// starting from `..Capabilities::HTTP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// It runs its own tools (a CLI agent): huddle's tool servers are not declared to it, its
    /// steps are reported as they happen (`TurnRequest::agent_activity`) and it keeps its own
    /// conversation between turns (`TurnRequest::agent_session_id`).
    pub runs_own_tools: bool,
    /// No tool is declared to it natively: the tools a mode lends a turn are not declared
    /// either, the mode offers their text form instead (written into the prompt, read back from
    /// the answer by the mode).
    pub text_tools: bool,
    /// It says what each turn cost (Claude Code's `total_cost_usd`): its model needs no price.
    pub reports_cost: bool,
    /// It reads the repository's `AGENTS.md` (or `CLAUDE.md`) itself (Claude Code, Codex, most
    /// ACP agents): huddle leaves them out of its system prompt, so it does not get them twice.
    pub reads_repo_instructions: bool,
    /// It starts a program on this machine for each turn: the program runs confined by the
    /// session's sandbox (`TurnRequest::sandbox`), and a sandbox that is required but missing
    /// means the turn does not start.
    pub local_process: bool,
    /// It starts (or reaches) the session's tool servers itself when told how
    /// (`TurnRequest::tool_servers`; an ACP agent), and asks before it calls them.
    pub takes_tool_servers: bool,
    /// It redacts what looks like a secret from the message it sends (an A2A counterpart, a
    /// party outside this machine): a relay shows and records its draft redacted the same way,
    /// so what it says was sent is what was sent.
    pub redacts_what_it_sends: bool,
}

impl Capabilities {
    /// An HTTP model API's (and the simulator's): tools declared natively, huddle runs them.
    pub const HTTP: Capabilities = Capabilities {
        runs_own_tools: false,
        text_tools: false,
        reports_cost: false,
        reads_repo_instructions: false,
        local_process: false,
        takes_tool_servers: false,
        redacts_what_it_sends: false,
    };

    /// A CLI agent's: it runs its own tools and takes a mode's tools in their text form.
    pub const CLI_AGENT: Capabilities = Capabilities {
        runs_own_tools: true,
        text_tools: true,
        reports_cost: false,
        reads_repo_instructions: false,
        local_process: true,
        takes_tool_servers: false,
        redacts_what_it_sends: false,
    };

    /// huddle's tool servers are declared to it and run by huddle.
    pub fn takes_huddle_tools(&self) -> bool {
        !self.runs_own_tools && !self.text_tools
    }
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities::HTTP
    }
}

/// A configured provider. Object-safe: the engine holds `Arc<dyn Provider>`.
pub trait Provider: Send + Sync {
    /// The configured name (the part of a slug before `/`).
    fn name(&self) -> &str;
    fn kind(&self) -> ProviderKind;
    /// What it can do (see [`Capabilities`]); an HTTP model API's unless it says otherwise.
    fn capabilities(&self) -> Capabilities {
        Capabilities::HTTP
    }
    /// Runs one turn: deltas go to `deltas` as they arrive; the result comes once. Cancelling
    /// `cancel` ends the turn at once with [`ErrorKind::Cancelled`] (HTTP request dropped,
    /// process group killed).
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        deltas: DeltaSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>>;
}

impl std::fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Provider({} {})", self.name(), self.kind().as_str())
    }
}

/// Knobs shared by the HTTP providers; [`ProviderOptions::from_config`] reads config.yaml's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderOptions {
    /// Longest silence allowed while waiting for the response or its next chunk.
    pub read_timeout: Duration,
    pub connect_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            read_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }
}

impl ProviderOptions {
    pub fn from_config(config: &Config) -> ProviderOptions {
        ProviderOptions {
            read_timeout: Duration::from_secs(config.read_timeout_secs.max(1)),
            connect_timeout: Duration::from_secs(config.connect_timeout_secs.max(1)),
            retry: RetryPolicy::default(),
        }
    }
}

/// Every configured provider, by name.
#[derive(Clone, Default)]
pub struct Providers {
    by_name: BTreeMap<String, Arc<dyn Provider>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("names", &self.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Builds a `kind: sim` provider under the given name. The simulator lives above the engine
/// (`crate::sim::provider`); tests below it pass a scripted one.
pub type Simulator = fn(name: &str) -> Arc<dyn Provider>;

/// The name of the simulator every registry has, configured or not.
pub const SIM: &str = "sim";

impl Providers {
    /// Every provider of `config` (with config.yaml's timeouts), `sim` providers built by
    /// `simulator`.
    pub fn from_config(config: &Config, simulator: Simulator) -> Result<Providers, ProviderError> {
        Providers::with_options(config, ProviderOptions::from_config(config), simulator)
    }

    /// As [`Self::from_config`], with explicit timeouts and retry policy (tests use short ones).
    /// A config without a provider named `sim` still gets one.
    pub fn with_options(
        config: &Config,
        options: ProviderOptions,
        simulator: Simulator,
    ) -> Result<Providers, ProviderError> {
        Providers::with_env(config, options, &crate::env::Env::process(), simulator)
    }

    /// As [`Self::with_options`], in `env`: keys are read from it, programs get it.
    pub fn with_env(
        config: &Config,
        options: ProviderOptions,
        env: &crate::env::Env,
        simulator: Simulator,
    ) -> Result<Providers, ProviderError> {
        let mut providers = Providers::default();
        for p in &config.providers {
            let provider: Arc<dyn Provider> = match p.kind {
                ProviderKind::Openai => Arc::new(openai::OpenAiProvider::new_in(p, options, env.clone())?),
                ProviderKind::Anthropic => {
                    Arc::new(anthropic::AnthropicProvider::new_in(p, options, env.clone())?)
                }
                ProviderKind::Command => Arc::new(command::CommandProvider::new(p)?.with_env(env.clone())),
                ProviderKind::Acp => Arc::new(acp::AcpProvider::new(p)?.with_env(env.clone())),
                ProviderKind::A2a => Arc::new(a2a::A2aProvider::new(p, options)?.with_env(env.clone())),
                ProviderKind::Sim => simulator(&p.name),
            };
            providers.insert(provider);
        }
        if !providers.by_name.contains_key(SIM) {
            providers.insert(simulator(SIM));
        }
        Ok(providers)
    }

    /// Adds or replaces a provider under its own name (tests plug in scripted ones).
    pub fn insert(&mut self, provider: Arc<dyn Provider>) {
        self.by_name.insert(provider.name().to_string(), provider);
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Provider>> {
        self.by_name.get(name).cloned()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// The provider serving `slug` and the model part of it.
    pub fn for_slug(&self, slug: &str) -> Result<(Arc<dyn Provider>, String), ProviderError> {
        let (name, model) =
            split_slug(slug).map_err(|e| ProviderError::new(ErrorKind::Config, "", e.to_string()))?;
        match self.by_name.get(name) {
            Some(p) => Ok((p.clone(), model.to_string())),
            None => Err(ProviderError::new(
                ErrorKind::Config,
                name,
                format!(
                    "unknown provider `{name}` in model `{slug}` (configured: {}); add it to config.yaml or pick another model",
                    self.names().collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }
}

/// The program a local provider runs (its `command:`), with `{model}` in its arguments filled
/// in for each turn: a CLI agent's (kind command) and an ACP agent's.
#[derive(Debug, Clone)]
pub struct ProgramLine {
    program: String,
    args: Vec<String>,
}

impl ProgramLine {
    /// `command` as program and arguments; empty, an error of provider `provider` that says
    /// `needs` (`of kind acp needs the agent's command, e.g. …`).
    pub fn new(provider: &str, command: &[String], needs: &str) -> Result<ProgramLine, ProviderError> {
        match command.split_first() {
            Some((program, args)) => Ok(ProgramLine {
                program: program.clone(),
                args: args.to_vec(),
            }),
            None => Err(ProviderError::new(
                ErrorKind::Config,
                provider,
                format!("provider `{provider}` {needs}"),
            )),
        }
    }

    /// The program (as configured: a name or a path).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The paths the configured command names (its program and the files among its
    /// arguments, not the model a preset put in them): what a sandbox must let it read.
    pub fn needed_paths(&self) -> Vec<PathBuf> {
        crate::sandbox::needed_paths(&self.program, &self.args)
    }

    /// The program and arguments for a turn of `model`.
    pub fn argv(&self, model: &str) -> (String, Vec<String>) {
        let args = self.args.iter().map(|a| a.replace("{model}", model)).collect();
        (self.program.clone(), args)
    }
}

/// The conversation as plain labelled text: what a `command` provider gets on stdin and what
/// the sim reads. A single user message with no system prompt is passed through unlabelled.
pub fn render_plain_prompt(req: &TurnRequest) -> String {
    if req.system.is_none() && req.messages.len() == 1 {
        return req.messages[0].content.to_string();
    }
    let mut out = String::new();
    if let Some(system) = &req.system {
        out.push_str("[system]\n");
        out.push_str(system.trim_end());
        out.push_str("\n\n");
    }
    for m in &req.messages {
        out.push('[');
        out.push_str(m.role.as_str());
        if let Some(r) = &m.result_of {
            out.push(' ');
            out.push_str(&r.name);
            if r.is_error {
                out.push_str(" error");
            }
        }
        out.push_str("]\n");
        out.push_str(m.content.trim_end());
        for call in &m.tool_calls {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("(called {} with {})\n", call.name, call.arguments));
        }
        out.push_str("\n\n");
    }
    out
}

/// How a turn ended well: everything but the text, which the [`TextSink`] holds.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub agent: Option<AgentReport>,
    pub sandbox_denials: Vec<String>,
}

/// Sleeps for `limit`, or forever when there is none.
pub(crate) async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Runs `work` under the turn's cancellation token and timeout; whichever ends first wins, and
/// dropping `work` stops it (the HTTP request is dropped, the process group killed).
pub(crate) async fn guarded<F>(
    provider: &str,
    cancel: &CancellationToken,
    turn_timeout: Option<Duration>,
    work: F,
) -> Result<Finished, ProviderError>
where
    F: Future<Output = Result<Finished, ProviderError>>,
{
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ProviderError::cancelled(provider)),
        r = work => r,
        _ = sleep_or_never(turn_timeout) => {
            Err(ProviderError::turn_timeout(provider, turn_timeout.unwrap_or_default()))
        }
    }
}

/// The turn's single result: the output, or the error carrying the text streamed before it.
pub(crate) fn conclude(
    result: Result<Finished, ProviderError>,
    text: String,
    started: Instant,
    simulated: bool,
) -> Result<TurnOutput, ProviderError> {
    match result {
        Ok(f) => Ok(TurnOutput {
            text,
            usage: f.usage,
            finish_reason: f.finish_reason,
            duration: started.elapsed(),
            simulated,
            tool_calls: f.tool_calls,
            agent: f.agent,
            sandbox_denials: f.sandbox_denials,
        }),
        Err(mut e) => {
            e.partial_text = text;
            Err(e)
        }
    }
}

/// Accumulates the streamed text and forwards each non-empty delta.
pub(crate) struct TextSink<'a> {
    pub text: String,
    forward: DeltaSink<'a>,
}

impl<'a> TextSink<'a> {
    pub fn new(forward: DeltaSink<'a>) -> TextSink<'a> {
        TextSink {
            text: String::new(),
            forward,
        }
    }

    pub fn push(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.text.push_str(delta);
        (self.forward)(delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the simulator, which lives above this layer.
    struct Stub(String);

    impl Provider for Stub {
        fn name(&self) -> &str {
            &self.0
        }
        fn kind(&self) -> ProviderKind {
            ProviderKind::Sim
        }
        fn stream_turn<'a>(
            &'a self,
            _req: TurnRequest,
            _deltas: DeltaSink<'a>,
            _cancel: CancellationToken,
        ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
            Box::pin(async { Err(ProviderError::new(ErrorKind::Config, "stub", "a stub")) })
        }
    }

    fn stub(name: &str) -> Arc<dyn Provider> {
        Arc::new(Stub(name.to_string()))
    }

    #[test]
    fn registry_resolves_slugs_and_always_has_sim() {
        let providers = Providers::from_config(&Config::default(), stub).unwrap();
        let (p, model) = providers.for_slug("sim/slow-200ms").unwrap();
        assert_eq!(
            (p.name(), p.kind(), model.as_str()),
            ("sim", ProviderKind::Sim, "slow-200ms")
        );
        let err = providers.for_slug("nope/x").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Config);
        assert!(err.message.contains("unknown provider `nope`"), "{err}");
        assert_eq!(providers.for_slug("bad").unwrap_err().kind, ErrorKind::Config);
    }

    #[test]
    fn registry_builds_every_kind_from_config() {
        let config = Config::parse(
            "providers:\n  - { name: o, kind: openai, base_url: \"http://127.0.0.1:9/v1\" }\n  - { name: a, kind: anthropic }\n  - { name: c, kind: command, command: [\"cat\"] }\n",
            std::path::Path::new("c.yaml"),
        )
        .unwrap();
        let providers = Providers::from_config(&config, stub).unwrap();
        let kinds: Vec<_> = ["o", "a", "c", "sim"]
            .iter()
            .map(|n| providers.get(n).map(|p| p.kind()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                Some(ProviderKind::Openai),
                Some(ProviderKind::Anthropic),
                Some(ProviderKind::Command),
                Some(ProviderKind::Sim)
            ]
        );
    }

    #[test]
    fn plain_prompt_labels_roles() {
        let mut req = TurnRequest::new("m", vec![ChatMessage::user("hi")]);
        assert_eq!(render_plain_prompt(&req), "hi");
        req.system = Some("be brief".into());
        req.messages.push(ChatMessage::assistant("hello"));
        req.messages.push(ChatMessage::user("again"));
        assert_eq!(
            render_plain_prompt(&req),
            "[system]\nbe brief\n\n[user]\nhi\n\n[assistant]\nhello\n\n[user]\nagain\n\n"
        );
        assert_eq!(req.last_user_text(), "again");
    }
}
