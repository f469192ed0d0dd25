//! `huddle mcp`: huddle as an MCP server on standard input and output, for agents such as
//! Claude Code and Codex. It is a front end of the host like `huddle run`: every run it starts
//! goes on in the host (it outlives the client and this process), with this process's
//! configuration and environment.
//!
//! Tools: `list_teams`, `list_runs`, `run_team` (blocking, with progress notifications; or
//! `detach`), `run_status`, `run_result`, `cancel_run`, `answer_approval`. Tool calls of a run
//! that ask for approval are asked through MCP (elicitation) when the client can be asked,
//! else denied: never allowed by default.

mod resources;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::cli::note;
use crate::config::{Config, Paths};
use crate::engine::events::{EngineEvent, EventKind};
use crate::headless::{self, RunRequest};
use crate::host::client::{Client, ClientError, Reader, Writer};
use crate::host::protocol::{Hello, HostMessage, Reply, Request, RunInfo};
use crate::model::{CycleOutcome, Mode, Organization, RunBudget};
use crate::presets::Catalog;
use crate::store::{OrganizationFile, RunFiles};
use crate::tools::Decision;

/// The server: what it needs to reach the host.
#[derive(Clone)]
struct McpFront {
    paths: Arc<Paths>,
    repo: Arc<PathBuf>,
}

/// `huddle mcp`: serves MCP on standard input and output until the client goes. Its log goes to
/// the data dir's log file (standard output is the protocol).
pub async fn serve(paths: &Paths, repo: PathBuf) -> u8 {
    let front = McpFront {
        paths: Arc::new(paths.clone()),
        repo: Arc::new(repo),
    };
    let service = match front.serve(rmcp::transport::stdio()).await {
        Ok(s) => s,
        Err(e) => {
            note(format_args!(
                "huddle mcp: the client did not start a session: {e}"
            ));
            return 1;
        }
    };
    match service.waiting().await {
        Ok(_) => 0,
        Err(e) => {
            tracing::warn!(error = %e, "huddle mcp ended abnormally");
            1
        }
    }
}

/// A tool's input schema from its JSON.
fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

const RUN_ARG: &str = "a run id (or the start of only one), or a group's name (its team run)";

/// The tools, as `tools/list` shows them.
fn tools() -> Vec<Tool> {
    let read_only = || ToolAnnotations::new().read_only(true).open_world(false);
    vec![
        Tool::new(
            "list_teams",
            "The team presets a run can start from, and the groups (teams and session groups) that exist, with their mode.",
            schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
        .with_annotations(read_only()),
        Tool::new(
            "list_runs",
            "The runs going now (in huddle's host): id, group, mode, state (running, paused, waiting, stopping), tokens, what each waits for, who started it.",
            schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
        .with_annotations(read_only()),
        Tool::new(
            "run_team",
            "Run a huddle team on a prompt: a new team from a preset (`preset`), an existing group (`group`), or neither for a one-shot session. Blocks until the run ends, with progress notifications, and returns the team's answer and outcome. The run goes on in huddle's host if this call is cancelled or the client goes away: follow it with run_status/run_result, stop it with cancel_run. With `detach` it returns the run id at once. Tool calls that need approval are asked through the client (elicitation) when it can be asked, otherwise denied.",
            schema(json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "the task or question"},
                    "preset": {"type": "string", "description": "a preset's name (list_teams): a new team made from it"},
                    "group": {"type": "string", "description": "an existing group's name (list_teams)"},
                    "mode": {"type": "string", "description": "run the team in this mode instead of its own"},
                    "model": {"type": "string", "description": "a model for every member (provider/model)"},
                    "max_iterations": {"type": "integer", "minimum": 1},
                    "max_duration_secs": {"type": "integer", "minimum": 1, "description": "wall time limit of this run"},
                    "token_budget": {"type": "integer", "minimum": 1, "description": "tokens this run may use"},
                    "max_cost_usd": {"type": "number", "exclusiveMinimum": 0, "description": "dollars this run may spend (refused over a model with no price)"},
                    "repo": {"type": "string", "description": "the repository a new team or session works in (default: huddle mcp's working directory)"},
                    "detach": {"type": "boolean", "description": "return the run id at once; the run goes on"}
                },
                "required": ["prompt"],
                "additionalProperties": false
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(true)),
        Tool::new(
            "run_status",
            "Where a run is: running (state, tokens, what it waits for) or ended (its outcome).",
            schema(json!({
                "type": "object",
                "properties": {"run": {"type": "string", "description": RUN_ARG}},
                "required": ["run"],
                "additionalProperties": false
            })),
        )
        .with_annotations(read_only()),
        Tool::new(
            "run_result",
            "A run's answer and outcome once it ended (or that it still runs).",
            schema(json!({
                "type": "object",
                "properties": {"run": {"type": "string", "description": RUN_ARG}},
                "required": ["run"],
                "additionalProperties": false
            })),
        )
        .with_annotations(read_only()),
        Tool::new(
            "cancel_run",
            "Stop a run (or every run of a group); it ends cancelled, a reflect cycle stays resumable.",
            schema(json!({
                "type": "object",
                "properties": {"run": {"type": "string", "description": RUN_ARG}},
                "required": ["run"],
                "additionalProperties": false
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(true).open_world(false)),
        Tool::new(
            "answer_approval",
            "Answer a tool call of a run that waits for approval (list_runs says `approval #N ...`).",
            schema(json!({
                "type": "object",
                "properties": {
                    "approval_id": {"type": "integer", "minimum": 0},
                    "decision": {"type": "string", "enum": DECISIONS}
                },
                "required": ["approval_id", "decision"],
                "additionalProperties": false
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(false)),
    ]
}

/// The answers to an approval, as a client gives them.
const DECISIONS: [&str; 4] = ["allow", "allow_for_session", "deny", "deny_and_stop"];

fn decision(word: &str) -> Option<Decision> {
    match word {
        "allow" => Some(Decision::ApproveOnce),
        "allow_for_session" => Some(Decision::ApproveForSession),
        "deny" => Some(Decision::Deny),
        "deny_and_stop" => Some(Decision::DenyAndStop),
        _ => None,
    }
}

fn text_result(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

fn error_result(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}

/// A result in words for the model, and as JSON beside them.
fn json_result(text: String, value: Value, is_error: bool) -> CallToolResponse {
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(value);
    result.into()
}

fn arg_str<'a>(args: &'a JsonObject, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn arg_u64(args: &JsonObject, key: &str) -> Result<Option<u64>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => Ok(Some(n)),
            None => Err(format!("`{key}` must be a positive whole number")),
        },
    }
}

fn arg_f64(args: &JsonObject, key: &str) -> Result<Option<f64>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n > 0.0) {
            Some(n) => Ok(Some(n)),
            None => Err(format!("`{key}` must be a positive number")),
        },
    }
}

impl ServerHandler for McpFront {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
            .with_server_info(Implementation::new("huddle", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Run huddle teams of LLM agents. list_teams shows presets and groups; run_team runs one on a prompt and returns its answer (runs go on in huddle's host even if the call is cancelled: run_status, run_result and cancel_run take the run id it reports).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let paths = Arc::clone(&self.paths);
        let org = self.organization();
        let listed = tokio::task::spawn_blocking(move || resources::list(&paths, &org)).await;
        listed
            .map(ListResourcesResult::with_all_items)
            .map_err(|e| McpError::internal_error(format!("could not list the resources: {e}"), None))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        // A run the host has now has no result yet, and its trace is still going.
        let going = match self.call(Request::Ps).await {
            Ok(Some(Reply::Runs { runs })) => runs,
            _ => Vec::new(),
        };
        let paths = Arc::clone(&self.paths);
        let org = self.organization();
        let uri = request.uri;
        let read = tokio::task::spawn_blocking(move || resources::read(&paths, &org, &going, &uri)).await;
        match read {
            Ok(result) => result.map(ReadResourceResponse::from),
            Err(e) => Err(McpError::internal_error(
                format!("could not read the resource: {e}"),
                None,
            )),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        let run_arg = || arg_str(&args, "run").map(str::to_string);
        Ok(match request.name.as_ref() {
            "list_teams" => self.list_teams(),
            "list_runs" => self.list_runs().await,
            "run_team" => self.run_team(&args, &context).await,
            "run_status" | "run_result" => match run_arg() {
                Some(run) => self.status(&run, request.name == "run_result").await,
                None => error_result("`run` is required"),
            },
            "cancel_run" => match run_arg() {
                Some(run) => self.cancel(&run).await,
                None => error_result("`run` is required"),
            },
            "answer_approval" => self.answer_approval(&args).await,
            other => {
                return Err(McpError::invalid_params(format!("no tool named `{other}`"), None));
            }
        })
    }
}

impl McpFront {
    /// A connection to the host; with `start`, one is started if none runs (None: none runs).
    async fn connect(&self, hello: &Hello, start: bool) -> Result<Option<Client>, String> {
        match Client::connect(&self.paths, hello, start).await {
            Ok(client) => Ok(Some(client)),
            Err(ClientError::NotRunning) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// One request to a running host (None: no host runs).
    async fn call(&self, request: Request) -> Result<Option<Reply>, String> {
        let Some(mut client) = self.connect(&Hello::new("mcp", &self.repo), false).await? else {
            return Ok(None);
        };
        client
            .call(request)
            .await
            .map(Some)
            .map_err(|(_, message)| message)
    }

    fn organization(&self) -> Organization {
        OrganizationFile::new(self.paths.organization_file())
            .inspect()
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn list_teams(&self) -> CallToolResponse {
        let config = match Config::load(&self.paths) {
            Ok(loaded) => loaded.config,
            Err(e) => return error_result(format!("huddle's configuration: {e}")),
        };
        let catalog = Catalog::load(&self.paths, &config, Some(&self.repo));
        let presets: Vec<Value> = catalog
            .presets
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "mode": p.mode.to_string(),
                    "description": p.description,
                    "members": p.workers.len(),
                })
            })
            .collect();
        let org = self.organization();
        let groups: Vec<Value> = org
            .groups
            .iter()
            .map(|g| {
                json!({
                    "name": g.name,
                    "mode": g.mode.to_string(),
                    "description": g.description,
                    "repo": g.repo,
                })
            })
            .collect();
        let mut text = String::from("Presets (run_team with `preset`):\n");
        for p in &catalog.presets {
            text.push_str(&format!("- {} ({})", p.name, p.mode));
            if let Some(d) = &p.description {
                text.push_str(&format!(": {}", crate::text::first_line(d, 100)));
            }
            text.push('\n');
        }
        text.push_str("Groups (run_team with `group`):\n");
        if org.groups.is_empty() {
            text.push_str("(none yet)\n");
        }
        for g in &org.groups {
            text.push_str(&format!("- {} ({})\n", g.name, g.mode));
        }
        json_result(text, json!({"presets": presets, "groups": groups}), false)
    }

    async fn list_runs(&self) -> CallToolResponse {
        let runs = match self.call(Request::Ps).await {
            Ok(Some(Reply::Runs { runs })) => runs,
            Ok(None) => Vec::new(),
            Ok(Some(other)) => return error_result(format!("the huddle host answered {other:?}")),
            Err(e) => return error_result(e),
        };
        let text = if runs.is_empty() {
            "nothing runs".to_string()
        } else {
            crate::host_cli::ps_table(&runs, chrono::Utc::now())
        };
        json_result(text, json!({ "runs": runs }), false)
    }

    async fn cancel(&self, target: &str) -> CallToolResponse {
        match self
            .call(Request::Stop {
                target: target.to_string(),
            })
            .await
        {
            Ok(Some(Reply::Stopped { runs })) if runs.is_empty() => {
                error_result(format!("nothing of `{target}` runs"))
            }
            Ok(Some(Reply::Stopped { runs })) => json_result(
                format!("stopping {} (they end cancelled)", runs.join(", ")),
                json!({ "stopped": runs }),
                false,
            ),
            Ok(None) => error_result("nothing runs"),
            Ok(Some(other)) => error_result(format!("the huddle host answered {other:?}")),
            Err(e) => error_result(e),
        }
    }

    async fn answer_approval(&self, args: &JsonObject) -> CallToolResponse {
        let Some(approval_id) = args.get("approval_id").and_then(Value::as_u64) else {
            return error_result("`approval_id` is required (a whole number)");
        };
        let Some(decision) = arg_str(args, "decision").and_then(decision) else {
            return error_result(format!("`decision` must be one of {}", DECISIONS.join(", ")));
        };
        match self
            .call(Request::AnswerApproval {
                approval_id,
                decision,
            })
            .await
        {
            Ok(Some(Reply::Done)) => text_result(format!("approval #{approval_id}: {}", decision.label())),
            Ok(None) => error_result("nothing runs"),
            Ok(Some(other)) => error_result(format!("the huddle host answered {other:?}")),
            Err(e) => error_result(e),
        }
    }

    /// `run_status` / `run_result`: from the host while the run goes, else from its run file.
    async fn status(&self, target: &str, result: bool) -> CallToolResponse {
        let going = match self.call(Request::Ps).await {
            Ok(Some(Reply::Runs { runs })) => runs,
            Ok(_) => Vec::new(),
            Err(e) => return error_result(e),
        };
        let org = self.organization();
        if let Some(run) = going_run(&going, &org, target) {
            let mut text = format!("run {} of `{}` is {}", run.run_id, run.group, run.state.as_str());
            if let Some(w) = &run.waiting_for {
                text.push_str(&format!(", waiting for {w}"));
            }
            text.push_str(&format!(" ({} tokens so far)", run.tokens));
            if result {
                text.push_str(": no result yet");
            }
            return json_result(text, json!({ "state": run.state.as_str(), "run": run }), false);
        }
        let paths = Arc::clone(&self.paths);
        let target = target.to_string();
        let found = tokio::task::spawn_blocking(move || ended_run(&paths, &org, &target)).await;
        let ended = match found {
            Ok(Ok(ended)) => ended,
            Ok(Err(why)) => return error_result(why),
            Err(_) => return error_result("could not read the run"),
        };
        let outcome = ended.outcome_word();
        let mut text = format!("run {} of `{}` ended: {outcome}", ended.run_id, ended.group);
        if let Some(why) = &ended.failed {
            text.push_str(&format!(" ({why})"));
        }
        if result {
            text = match &ended.answer {
                Some(answer) => format!("{answer}\n\n({text})"),
                None => format!("{text}; it gave no answer"),
            };
        }
        json_result(
            text,
            json!({
                "state": "ended",
                "run_id": ended.run_id,
                "group": ended.group,
                "outcome": outcome,
                "failed": ended.failed,
                "answer": ended.answer,
            }),
            false,
        )
    }

    /// `run_team`: starts the run in the host and follows it to its end.
    async fn run_team(&self, args: &JsonObject, context: &RequestContext<RoleServer>) -> CallToolResponse {
        let request = match run_request(args, &self.repo) {
            Ok(r) => r,
            Err(why) => return error_result(why),
        };
        let detach = args.get("detach").and_then(Value::as_bool).unwrap_or(false);
        // Asked through the client when it can be (elicitation on a session that allows the
        // server to ask), else denied; never allowed by default.
        let ask = !detach && can_elicit(context);
        let request = RunRequest {
            ask_tools: ask,
            ..request
        };
        let config = match Config::load(&self.paths) {
            Ok(loaded) => loaded.config,
            Err(e) => return error_result(format!("huddle's configuration: {e}")),
        };
        let hello = Hello::new("mcp", &request.repo).with_work(config, false);
        let client = match self.connect(&hello, true).await {
            Ok(Some(c)) => c,
            Ok(None) => return error_result("the huddle host could not be started"),
            Err(e) => return error_result(e),
        };
        let (mut reader, mut writer) = client.split();
        let sent = writer
            .send(Request::Run {
                request,
                detach,
                keep: true,
            })
            .await;
        if let Err(e) = sent {
            return error_result(e.to_string());
        }
        let progress = Progress {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token(),
            count: 0,
        };
        tokio::select! {
            result = follow(&mut reader, &mut writer, progress, ask, detach) => result,
            // The client cancelled the call: the run goes on in the host.
            _ = context.ct.cancelled() => text_result("the call was cancelled; the run goes on in huddle's host (list_runs, cancel_run)"),
        }
    }
}

/// Whether a tool approval can be asked of this client: it takes form elicitations on a
/// session where the server may send requests (before protocol 2026-07-28).
fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .is_some_and(|v| v == ProtocolVersion::V_2026_07_28);
    !modern
        && context
            .peer
            .supported_elicitation_modes()
            .contains(&rmcp::service::ElicitationMode::Form)
}

/// The run a client asked for, as `huddle run` would take it.
fn run_request(args: &JsonObject, default_repo: &std::path::Path) -> Result<RunRequest, String> {
    let prompt = arg_str(args, "prompt").ok_or("`prompt` is required")?.to_string();
    let preset = arg_str(args, "preset").map(str::to_string);
    let group = arg_str(args, "group").map(str::to_string);
    if preset.is_some() && group.is_some() {
        return Err("give `preset` (a new team) or `group` (an existing one), not both".into());
    }
    let mode = match arg_str(args, "mode") {
        Some(word) => Some(
            word.parse::<Mode>()
                .map_err(|_| format!("`mode`: no mode `{word}`"))?,
        ),
        None => None,
    };
    let max_iterations = arg_u64(args, "max_iterations")?
        .map(|n| u32::try_from(n).map_err(|_| "`max_iterations` is too large".to_string()))
        .transpose()?;
    let budget = RunBudget {
        max_duration_secs: arg_u64(args, "max_duration_secs")?,
        token_budget: arg_u64(args, "token_budget")?,
        max_cost_usd: arg_f64(args, "max_cost_usd")?,
    };
    let repo = match arg_str(args, "repo") {
        Some(r) => {
            let path = PathBuf::from(r);
            if !path.is_dir() {
                return Err(format!("`repo`: {r} is not a directory"));
            }
            path
        }
        None => default_repo.to_path_buf(),
    };
    let request = RunRequest {
        preset,
        group,
        mode,
        max_iterations,
        model: arg_str(args, "model").map(str::to_string),
        budget,
        // Events come back as JSON lines: progress, approvals and the answer are read there.
        events: true,
        prompt,
        repo,
        ..RunRequest::default()
    };
    headless::prepare(request).map_err(|f| f.message)
}

/// Progress notifications of one call (when the client asked for them with a token).
struct Progress {
    peer: Peer<RoleServer>,
    token: Option<rmcp::model::ProgressToken>,
    count: u32,
}

impl Progress {
    async fn say(&mut self, message: String) {
        let Some(token) = &self.token else { return };
        self.count += 1;
        let param =
            ProgressNotificationParam::new(token.clone(), f64::from(self.count)).with_message(message);
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "a progress notification was not sent");
        }
    }
}

/// What a followed run said.
#[derive(Default)]
struct Followed {
    run_id: Option<String>,
    group: Option<String>,
    answer: Option<String>,
    outcome: Option<CycleOutcome>,
    failed: Option<String>,
    notes: Vec<String>,
}

/// Follows a run started with `keep` to its end: its events as progress, its approvals asked
/// of the client, its answer and outcome as the result.
async fn follow(
    reader: &mut Reader,
    writer: &mut Writer,
    mut progress: Progress,
    ask: bool,
    detach: bool,
) -> CallToolResponse {
    let mut seen = Followed::default();
    let (answer_tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<(u64, Decision)>();
    loop {
        let message = tokio::select! {
            message = reader.next() => message,
            Some((approval_id, decision)) = answers.recv() => {
                let _ = writer.send(Request::AnswerApproval { approval_id, decision }).await;
                continue;
            }
        };
        match message {
            Ok(Some(HostMessage::Started { run_id, group, .. })) => {
                if detach {
                    return json_result(
                        format!(
                            "run {run_id} of `{group}` started and goes on in huddle's host: run_status and run_result follow it, cancel_run stops it"
                        ),
                        json!({"run_id": run_id, "group": group, "state": "running"}),
                        false,
                    );
                }
                progress.say(format!("run {run_id} of `{group}` started")).await;
                seen.run_id = Some(run_id);
                seen.group = Some(group);
            }
            Ok(Some(HostMessage::Output { out, err, .. })) => {
                for line in out.as_deref().unwrap_or_default().lines() {
                    let Ok(event) = serde_json::from_str::<EngineEvent>(line) else {
                        continue;
                    };
                    if let Some(text) = headless::progress_line(&event) {
                        progress.say(text).await;
                    }
                    take(&mut seen, &event);
                    if let EventKind::ToolApprovalRequested { .. } = &event.kind
                        && ask
                    {
                        let peer = progress.peer.clone();
                        let tx = answer_tx.clone();
                        tokio::spawn(async move {
                            let (id, decision) = elicit(&peer, &event).await;
                            let _ = tx.send((id, decision));
                        });
                    }
                }
                if let Some(text) = err {
                    let text = text.trim().to_string();
                    if !text.is_empty() {
                        progress.say(text.clone()).await;
                        seen.notes.push(text);
                    }
                }
            }
            Ok(Some(HostMessage::Exit { code, .. })) => return finished(seen, code),
            Ok(Some(HostMessage::Failed { message, .. })) => return error_result(message),
            Ok(Some(_)) => {}
            Ok(None) => {
                return error_result(
                    "the huddle host went away before the run ended (what was done is saved; a reflect cycle resumes with run_team and the group)",
                );
            }
            Err(e) => return error_result(e.to_string()),
        }
    }
}

/// Keeps what the result needs from one event.
fn take(seen: &mut Followed, event: &EngineEvent) {
    match &event.kind {
        EventKind::RunResult { text } => seen.answer = Some(text.clone()),
        EventKind::RunEnded { outcome, failed, .. } if event.run_id == seen.run_id => {
            seen.outcome = *outcome;
            seen.failed.clone_from(failed);
        }
        EventKind::ToolApprovalDecided {
            decision,
            reason: Some(reason),
            session,
            ..
        } if !decision.approves() => {
            seen.notes.push(format!("a tool call of {session}: {reason}"));
        }
        _ => {}
    }
}

/// The result of a run that ended with exit code `code`.
fn finished(seen: Followed, code: u8) -> CallToolResponse {
    let outcome = seen.outcome.map_or_else(
        || {
            if code == 0 {
                "completed".to_string()
            } else {
                "failed".to_string()
            }
        },
        |o| outcome_word(o, seen.failed.is_some()),
    );
    let mut text = seen.answer.clone().unwrap_or_default().trim_end().to_string();
    let mut footer = match (&seen.run_id, &seen.group) {
        (Some(id), Some(group)) => format!("run {id} of `{group}`: {outcome}"),
        _ => format!("the run: {outcome}"),
    };
    if let Some(why) = &seen.failed {
        footer.push_str(&format!(" ({why})"));
    }
    for note in &seen.notes {
        footer.push_str(&format!("\n{note}"));
    }
    if text.is_empty() {
        text = footer.clone();
    } else {
        text.push_str(&format!("\n\n({footer})"));
    }
    // Usage errors, failures, a save that failed and a stop are errors; a team that ran out of
    // iterations or budget still answered.
    let is_error = matches!(code, 1 | 2 | 7) || code >= 128 || seen.failed.is_some();
    json_result(
        text,
        json!({
            "run_id": seen.run_id,
            "group": seen.group,
            "outcome": outcome,
            "exit_code": code,
            "answer": seen.answer,
            "failed": seen.failed,
            "notes": seen.notes,
        }),
        is_error,
    )
}

fn outcome_word(outcome: CycleOutcome, failed: bool) -> String {
    if failed {
        return "failed".into();
    }
    serde_json::to_value(outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{outcome:?}"))
}

/// Asks the client about a tool call that waits for approval; anything but an explicit allow
/// (a decline, a cancel, an error, an answer it cannot read) denies it.
async fn elicit(peer: &Peer<RoleServer>, event: &EngineEvent) -> (u64, Decision) {
    let EventKind::ToolApprovalRequested {
        approval_id,
        session,
        server,
        tool,
        arguments,
        reason,
        ..
    } = &event.kind
    else {
        return (0, Decision::Deny);
    };
    let mut message = format!(
        "huddle team `{}`: {session} wants to call {server}/{tool} with {}",
        event.group,
        crate::text::first_line(arguments, 400)
    );
    if let Some(why) = reason {
        message.push_str(&format!(" ({why})"));
    }
    message.push_str(". Allow it?");
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": DECISIONS,
                "description": "allow once, allow this tool for the session, deny, or deny and stop the run"
            }
        },
        "required": ["decision"]
    });
    let Ok(requested_schema) = serde_json::from_value(schema) else {
        return (*approval_id, Decision::Deny);
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    let decided = match peer.create_elicitation(params).await {
        Ok(result) if result.action == ElicitationAction::Accept => result
            .content
            .as_ref()
            .and_then(|c| c.get("decision"))
            .and_then(Value::as_str)
            .and_then(decision)
            .unwrap_or(Decision::Deny),
        Ok(_) => Decision::Deny,
        Err(e) => {
            tracing::info!(error = %e, "an approval could not be asked: denied");
            Decision::Deny
        }
    };
    (*approval_id, decided)
}

/// A going run named by `target` (its id, the start of only one, or its group's name).
fn going_run<'a>(runs: &'a [RunInfo], org: &Organization, target: &str) -> Option<&'a RunInfo> {
    if let Some(run) = runs.iter().find(|r| r.run_id == target) {
        return Some(run);
    }
    let prefixed: Vec<&RunInfo> = runs.iter().filter(|r| r.run_id.starts_with(target)).collect();
    if prefixed.len() == 1 {
        return prefixed.first().copied();
    }
    let group_id = org.group_by_name(target).map(|g| g.id.clone())?;
    runs.iter()
        .find(|r| r.group_id == group_id && r.session.is_none())
}

/// A run that ended, read back from its run file.
struct Ended {
    run_id: String,
    group: String,
    answer: Option<String>,
    outcome: Option<CycleOutcome>,
    failed: Option<String>,
}

impl Ended {
    fn outcome_word(&self) -> String {
        match self.outcome {
            Some(o) => outcome_word(o, self.failed.is_some()),
            // A file without its end: the process that ran it went away.
            None => "interrupted".into(),
        }
    }
}

/// Finds a run's file by its id (or the start of only one), or a group's last run by the
/// group's name, and reads its answer and end.
fn ended_run(paths: &Paths, org: &Organization, target: &str) -> Result<Ended, String> {
    let files = RunFiles::new(paths.runs_dir());
    let entries = resources::run_entries(&files, org);
    let prefixed: Vec<&resources::RunEntry> =
        entries.iter().filter(|e| e.run_id.starts_with(target)).collect();
    let chosen = if let Some(e) = entries.iter().find(|e| e.run_id == target) {
        e
    } else if let [one] = prefixed.as_slice() {
        one
    } else if prefixed.len() > 1 {
        return Err(format!(
            "`{target}` is the start of {} runs: give more of it",
            prefixed.len()
        ));
    } else if let Some(g) = org.group_by_name(target) {
        let owner = crate::store::RunOwner::Group(g.id.clone());
        entries
            .iter()
            .rfind(|e| e.owner == owner)
            .ok_or_else(|| format!("group `{target}` has no runs"))?
    } else {
        return Err(format!(
            "no run or group `{target}` (list_runs shows the runs going)"
        ));
    };
    let lines = files
        .read_lines_of(&chosen.owner, &chosen.run_id)
        .map_err(|e| e.to_string())?;
    let end = resources::run_end(&lines);
    Ok(Ended {
        run_id: chosen.run_id.clone(),
        group: end.group.unwrap_or_else(|| chosen.name.clone()),
        answer: end.answer,
        outcome: end.outcome,
        failed: end.failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_is_found_by_name() {
        for tool in tools() {
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                tool.name
            );
            assert_eq!(tools().iter().filter(|t| t.name == tool.name).count(), 1);
        }
    }

    #[test]
    fn a_decision_is_only_what_was_said() {
        assert_eq!(decision("allow"), Some(Decision::ApproveOnce));
        assert_eq!(decision("deny_and_stop"), Some(Decision::DenyAndStop));
        assert_eq!(decision("yes"), None);
        assert_eq!(decision(""), None);
    }

    #[test]
    fn a_run_request_is_checked_like_huddle_run() {
        let dir = std::env::temp_dir();
        let args = |v: Value| match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        };
        assert!(run_request(&args(json!({})), &dir).is_err());
        assert!(run_request(&args(json!({"prompt": "x", "preset": "a", "group": "b"})), &dir).is_err());
        assert!(
            run_request(
                &args(json!({"prompt": "x", "token_budget": 0, "preset": "a"})),
                &dir
            )
            .is_err()
        );
        assert!(run_request(&args(json!({"prompt": "x", "mode": "nope"})), &dir).is_err());
        let r = run_request(
            &args(json!({"prompt": "x", "preset": "Research Panel", "token_budget": 500})),
            &dir,
        )
        .unwrap();
        assert!(
            r.events && !r.ask_tools && !r.approve_tools,
            "never approved by default"
        );
        assert_eq!(r.budget.token_budget, Some(500));
        assert!(
            run_request(
                &args(json!({"prompt": "x", "preset": "a", "max_cost_usd": -1})),
                &dir
            )
            .is_err_and(|e| e.contains("max_cost_usd"))
        );
    }
}
