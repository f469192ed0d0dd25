//! `huddle mcp`: huddle as an MCP server on standard input and output (or streamable HTTP on a
//! loopback address: `--http`, in `http`), for agents such as
//! Claude Code and Codex. It is a front end of the host like `huddle run`: every run it starts
//! goes on in the host (it outlives the client and this process), with this process's
//! configuration and environment.
//!
//! Tools: `list_teams`, `list_runs`, `run_team` (blocking, with progress notifications; a task
//! when the client takes MCP Tasks, see `tasks`; or `detach`), `run_status`, `run_result`,
//! `cancel_run`, `answer_approval`, `answer_draft`. Tool calls of a run that ask for approval are
//! asked through MCP (elicitation, or a task's input requests) when the client can be asked, else
//! denied: never allowed by default. Standard input closing (the client went away) ends it at
//! once: the runs it started go on in the host.

mod http;
mod peer_uid;
mod resources;
mod tasks;

pub use http::serve_http;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, ElicitRequestParams, ElicitationAction, GetTaskParams, GetTaskResult, Implementation,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cli::note;
use crate::config::{Config, Paths};
use crate::engine::events::{EngineEvent, EventKind};
use crate::headless::{self, RunRequest};
use crate::host::client::{Client, ClientError, Reader, Writer};
use crate::host::protocol::{Hello, HostMessage, Reply, Request, RunInfo};
use crate::model::{CycleOutcome, DraftAnswer, Mode, Organization, RunBudget};
use crate::presets::Catalog;
use crate::store::{OrganizationFile, RunFiles};
use crate::tools::Decision;
use tasks::{Asker, Via};

/// The server: what it needs to reach the host.
#[derive(Clone)]
struct McpFront {
    paths: Arc<Paths>,
    repo: Arc<PathBuf>,
    /// The `run_team` calls made tasks (shared by every session of `--http`).
    tasks: TaskManager,
    /// Cancelled when the client went away (standard input closed): blocking calls let go.
    gone: CancellationToken,
}

impl McpFront {
    fn new(paths: &Paths, repo: PathBuf, gone: CancellationToken) -> Self {
        Self {
            paths: Arc::new(paths.clone()),
            repo: Arc::new(repo),
            tasks: TaskManager::new(),
            gone,
        }
    }
}

/// `huddle mcp`: serves MCP on standard input and output until the client goes (its input
/// closes: the calls that follow runs let go at once, the runs go on in the host). Its log goes
/// to the data dir's log file (standard output is the protocol).
pub async fn serve(paths: &Paths, repo: PathBuf) -> u8 {
    let gone = CancellationToken::new();
    let front = McpFront::new(paths, repo, gone.clone());
    let tasks = front.tasks.clone();
    let (stdin, stdout) = rmcp::transport::stdio();
    let input = UntilClosed {
        inner: stdin,
        closed: gone,
    };
    let service = match front.serve((input, stdout)).await {
        Ok(s) => s,
        Err(e) => {
            note(format_args!(
                "huddle mcp: the client did not start a session: {e}"
            ));
            return 1;
        }
    };
    let code = match service.waiting().await {
        Ok(_) => 0,
        Err(e) => {
            tracing::warn!(error = %e, "huddle mcp ended abnormally");
            1
        }
    };
    // Tasks still going let go of their runs, which go on in the host.
    tasks.shutdown();
    code
}

/// A reader that cancels `closed` when its input ends (or fails): the client went away.
struct UntilClosed<R> {
    inner: R,
    closed: CancellationToken,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for UntilClosed<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            std::task::Poll::Ready(Ok(())) if room && buf.filled().len() == before => self.closed.cancel(),
            std::task::Poll::Ready(Err(_)) => self.closed.cancel(),
            _ => {}
        }
        polled
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
            "Run a huddle team on a prompt: a new team from a preset (`preset`), an existing group (`group`), or neither for a one-shot session; a group's interrupted run is resumed with `group` and `resume` (no prompt), or dropped with `discard_interrupted`. Blocks until the run ends, with progress notifications, and returns the team's answer and outcome. The run goes on in huddle's host if this call is cancelled or the client goes away: follow it with run_status/run_result, stop it with cancel_run. With `detach` it returns the run id at once. Tool calls that need approval are asked through the client (elicitation) when it can be asked, otherwise denied.",
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
                    "approval": {"type": "string", "enum": ["manual", "semi_auto", "full_auto"], "description": "a relay's approval mode for this run: which drafts wait for a person (asked through the client)"},
                    "repo": {"type": "string", "description": "the repository a new team or session works in (default: huddle mcp's working directory)"},
                    "detach": {"type": "boolean", "description": "return the run id at once; the run goes on"},
                    "resume": {"type": "boolean", "description": "with `group` and no `prompt`: go on with the group's interrupted run (its host went away), its finished turns not asked again"},
                    "discard_interrupted": {"type": "boolean", "description": "with `group` and a `prompt`: record the group's interrupted run as cancelled and start over"}
                },
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
            "Stop a run (or every run of a group); it ends cancelled and cannot be resumed (what it finished is kept in its group's history).",
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
        Tool::new(
            "answer_draft",
            "Answer a relay's draft that waits for a person (list_runs says `its relay draft of turn N`; run_status shows the draft): `send` it, `edit` (send `text` instead), `reject` (the driver drafts again, told `text`), or `stop` the relay.",
            schema(json!({
                "type": "object",
                "properties": {
                    "run": {"type": "string", "description": RUN_ARG},
                    "answer": {"type": "string", "enum": DRAFT_ANSWERS},
                    "text": {"type": "string", "description": "with `edit`: the message to send instead; with `reject`: a note for the driver"}
                },
                "required": ["run", "answer"],
                "additionalProperties": false
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(true)),
    ]
}

/// The answers to a relay draft, as a client gives them.
const DRAFT_ANSWERS: [&str; 4] = ["send", "edit", "reject", "stop"];

/// A draft answer from its word and text (`None`: stop the relay).
fn draft_answer(word: &str, text: Option<&str>) -> Result<Option<DraftAnswer>, String> {
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    match (word, text) {
        ("send", _) => Ok(Some(DraftAnswer::Approve)),
        ("edit", Some(t)) => Ok(Some(DraftAnswer::Edit(t.to_string()))),
        ("edit", None) => Err("`edit` needs the message to send instead as `text`".into()),
        ("reject", t) => Ok(Some(DraftAnswer::Reject(t.unwrap_or_default().to_string()))),
        ("stop", _) => Ok(None),
        _ => Err(format!("`answer` must be one of {}", DRAFT_ANSWERS.join(", "))),
    }
}

/// A relay draft that waits for a person, as its run's events say.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WaitingDraft {
    turn: u32,
    text: String,
    review: Option<String>,
}

/// The draft a run's file says waits now, if one does (a later send, take-over or state ends
/// the wait).
fn waiting_draft(lines: &[String]) -> Option<WaitingDraft> {
    let mut waiting = None;
    for line in lines {
        let Ok(record) = serde_json::from_str::<crate::engine::events::RunRecord>(line) else {
            continue;
        };
        match record.event.kind {
            EventKind::RelayDraft {
                turn,
                text,
                waiting: true,
                review,
                ..
            } => waiting = Some(WaitingDraft { turn, text, review }),
            EventKind::RelayDraft { .. } | EventKind::RelaySent { .. } | EventKind::RelayTakeOver { .. } => {
                waiting = None;
            }
            EventKind::RelayState { state, .. } if state != crate::model::RelayPhase::ReadyToSend => {
                waiting = None;
            }
            _ => {}
        }
    }
    waiting
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
    json_call_result(text, value, is_error).into()
}

fn json_call_result(text: String, value: Value, is_error: bool) -> CallToolResult {
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(value);
    result
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
                .enable_tasks()
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
            "answer_draft" => self.answer_draft(&args).await,
            other => {
                return Err(McpError::invalid_params(format!("no tool named `{other}`"), None));
            }
        })
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.tasks.get_task(&request.task_id).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.update_task(&request.task_id, request.input_responses)
    }

    /// Stops the task's run (it ends `cancelled`, a reflect cycle resumable); the task says
    /// `cancelled` once the run has ended.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
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
            Ok(Some(Reply::Stopped { runs, .. })) if runs.is_empty() => {
                error_result(format!("nothing of `{target}` runs"))
            }
            Ok(Some(Reply::Stopped { runs, stopping })) => {
                // An older host answers before the runs end (`None`): all still stopping.
                let stopping = stopping.unwrap_or_else(|| runs.clone());
                let text = if stopping.is_empty() {
                    format!("stopped {} (cancelled)", runs.join(", "))
                } else {
                    format!(
                        "stopping {}: {} ends once its current step lets go (run_status follows it)",
                        runs.join(", "),
                        stopping.join(", ")
                    )
                };
                json_result(text, json!({ "stopped": runs, "stopping": stopping }), false)
            }
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

    /// The relay draft a going run waits on, from its run file.
    async fn draft_of(&self, run: &RunInfo) -> Option<WaitingDraft> {
        run.waiting_for.as_ref()?;
        let files = RunFiles::new(self.paths.runs_dir());
        let owner = run.owner();
        let run_id = run.run_id.clone();
        tokio::task::spawn_blocking(move || files.read_lines_of(&owner, &run_id).ok())
            .await
            .ok()
            .flatten()
            .and_then(|lines| waiting_draft(&lines))
    }

    /// `answer_draft`: answers the draft a going relay run waits on.
    async fn answer_draft(&self, args: &JsonObject) -> CallToolResponse {
        let Some(target) = arg_str(args, "run") else {
            return error_result("`run` is required");
        };
        let answer = match draft_answer(arg_str(args, "answer").unwrap_or_default(), arg_str(args, "text")) {
            Ok(a) => a,
            Err(why) => return error_result(why),
        };
        let going = match self.call(Request::Ps).await {
            Ok(Some(Reply::Runs { runs })) => runs,
            Ok(_) => Vec::new(),
            Err(e) => return error_result(e),
        };
        let org = self.organization();
        let Some(run) = going_run(&going, &org, target) else {
            return error_result(format!("no run `{target}` is going (list_runs shows them)"));
        };
        let Some(draft) = self.draft_of(run).await else {
            return error_result(format!(
                "run {} of `{}` does not wait for a relay draft",
                run.run_id, run.group
            ));
        };
        let said = match &answer {
            Some(DraftAnswer::Approve) => "sent",
            Some(DraftAnswer::Edit(_)) => "sent as edited",
            Some(DraftAnswer::Reject(_)) => "rejected (the driver drafts again)",
            _ => "not sent: the relay stops",
        };
        let request = Request::AnswerDraft {
            group_id: run.group_id.clone(),
            answer,
        };
        match self.call(request).await {
            Ok(Some(Reply::Done)) => json_result(
                format!("the draft of turn {} of `{}`: {said}", draft.turn, run.group),
                json!({"run_id": run.run_id, "turn": draft.turn, "answered": said}),
                false,
            ),
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
            let draft = self.draft_of(run).await;
            if let Some(d) = &draft {
                text.push_str(&format!(
                    "\nIts relay draft of turn {} waits (answer_draft):\n{}",
                    d.turn,
                    crate::text::sanitize::display(&d.text)
                ));
                if let Some(review) = &d.review {
                    text.push_str(&format!("\n(review: {})", crate::text::sanitize::display(review)));
                }
            }
            let mut value = json!({ "state": run.state.as_str(), "run": run });
            if let Some(d) = draft {
                value["draft"] = json!({"turn": d.turn, "text": d.text, "review": d.review});
                resources::clean(&mut value["draft"]);
            }
            return json_result(text, value, false);
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

    /// `run_team`: starts the run in the host and follows it to its end (as a task when the
    /// client takes tasks: answered at once, followed by `tasks/get`).
    async fn run_team(&self, args: &JsonObject, context: &RequestContext<RoleServer>) -> CallToolResponse {
        let request = match run_request(args, &self.repo) {
            Ok(r) => r,
            Err(why) => return error_result(why),
        };
        let detach = args.get("detach").and_then(Value::as_bool).unwrap_or(false);
        let tasked = !detach && tasks::tasked(context);
        // Asked through the client when it can be (a task's input requests; elicitation on a
        // session that allows the server to ask), else denied; never allowed by default.
        let ask = !detach
            && if tasked {
                tasks::asks_in_task(context)
            } else {
                can_elicit(context)
            };
        let request = RunRequest {
            ask_tools: ask,
            // A relay's drafts that wait are asked through the client too.
            approve: ask,
            over_mcp: true,
            ..request
        };
        let config = match Config::load(&self.paths) {
            Ok(loaded) => loaded.config,
            Err(e) => return error_result(format!("huddle's configuration: {e}")),
        };
        if tasked {
            let front = self.clone();
            let task = self.tasks.spawn(tasks::options(), move |task| {
                Box::pin(async move { front.run_as_task(request, config, ask, task).await })
            });
            return CreateTaskResult::new(task).into();
        }
        let (mut reader, mut writer, run) = match self.start(request, config, ask, detach).await {
            Ok(started) => started,
            Err(result) => return result.into(),
        };
        let via = Via::call(context.peer.clone(), context.meta.get_progress_token());
        tokio::select! {
            end = follow(&mut reader, &mut writer, via, ask, detach, run) => end.result.into(),
            // The client cancelled the call: the run goes on in the host.
            _ = context.ct.cancelled() => text_result("the call was cancelled; the run goes on in huddle's host (list_runs, cancel_run)"),
            // The client went away (nobody reads this): the run goes on in the host.
            _ = self.gone.cancelled() => text_result("the client went away; the run goes on in huddle's host"),
        }
    }

    /// A task's run: started, followed to its end (its status message the last progress line,
    /// its questions input requests), stopped when the task is cancelled.
    async fn run_as_task(
        self,
        request: RunRequest,
        config: Config,
        ask: bool,
        task: TaskContext,
    ) -> Result<CallToolResult, TaskExit> {
        let (mut reader, mut writer, run) = match self.start(request, config, ask, false).await {
            Ok(started) => started,
            Err(result) => return Ok(result),
        };
        let end = follow(&mut reader, &mut writer, Via::task(task.clone()), ask, false, run).await;
        // A summary for `completed` (the last progress line was said while it ran).
        if let Some(Value::Object(value)) = &end.result.structured_content
            && let (Some(run_id), Some(group), Some(outcome)) = (
                value.get("run_id").and_then(Value::as_str),
                value.get("group").and_then(Value::as_str),
                value.get("outcome").and_then(Value::as_str),
            )
        {
            task.set_status_message(format!("run {run_id} of `{group}`: {outcome}"));
        }
        if end.cancelled {
            Err(TaskExit::Cancelled)
        } else {
            Ok(end.result)
        }
    }

    /// Starts a run in the host (starting the host if none runs): the connection that follows
    /// it and the id of its request, or the result that says why it could not start.
    async fn start(
        &self,
        request: RunRequest,
        config: Config,
        ask: bool,
        detach: bool,
    ) -> Result<(Reader, Writer, u64), CallToolResult> {
        let failed = |text: String| CallToolResult::error(vec![ContentBlock::text(text)]);
        // `terminal`: someone answers drafts through this front end (the client, when asked).
        let hello = Hello::new("mcp", &request.repo).with_work(config, ask);
        let client = match self.connect(&hello, true).await {
            Ok(Some(c)) => c,
            Ok(None) => return Err(failed("the huddle host could not be started".into())),
            Err(e) => return Err(failed(e)),
        };
        let (reader, mut writer) = client.split();
        let sent = writer
            .send(Request::Run {
                request,
                detach,
                keep: true,
            })
            .await;
        match sent {
            Ok(run) => Ok((reader, writer, run)),
            Err(e) => Err(failed(e.to_string())),
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
    let flag = |name: &str| args.get(name).and_then(Value::as_bool).unwrap_or(false);
    let (resume, discard_interrupted) = (flag("resume"), flag("discard_interrupted"));
    let preset = arg_str(args, "preset").map(str::to_string);
    let group = arg_str(args, "group").map(str::to_string);
    if preset.is_some() && group.is_some() {
        return Err("give `preset` (a new team) or `group` (an existing one), not both".into());
    }
    if (resume || discard_interrupted) && group.is_none() {
        return Err(
            "`resume` and `discard_interrupted` go with `group` (the team whose run was interrupted)".into(),
        );
    }
    if resume && discard_interrupted {
        return Err(
            "give `resume` (go on with the interrupted run) or `discard_interrupted` (start over), not both"
                .into(),
        );
    }
    let prompt = match arg_str(args, "prompt") {
        Some(_) if resume => {
            return Err("`resume` goes on with the interrupted run's own prompt: leave `prompt` out".into());
        }
        Some(p) => p.to_string(),
        None if resume => String::new(),
        None => return Err("`prompt` is required".into()),
    };
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
    let approval = match arg_str(args, "approval") {
        Some(word) => Some(
            serde_json::from_value::<crate::model::ApprovalMode>(json!(word)).map_err(|_| {
                format!("`approval`: no approval mode `{word}` (manual, semi_auto, full_auto)")
            })?,
        ),
        None => None,
    };
    let request = RunRequest {
        preset,
        group,
        mode,
        approval,
        max_iterations,
        model: arg_str(args, "model").map(str::to_string),
        budget,
        // Events come back as JSON lines: progress, approvals and the answer are read there.
        events: true,
        prompt,
        resume,
        discard_interrupted,
        repo,
        ..RunRequest::default()
    };
    headless::prepare(request).map_err(|f| f.message)
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

/// How a followed run ended: the call's result, and whether the task's cancel stopped it.
struct End {
    result: CallToolResult,
    cancelled: bool,
}

impl From<CallToolResult> for End {
    fn from(result: CallToolResult) -> Self {
        Self {
            result,
            cancelled: false,
        }
    }
}

/// How long a followed call may say nothing before a heartbeat says it still runs
/// (`HUDDLE_MCP_HEARTBEAT_MS`, default 30 s: well inside the idle timeouts clients use).
fn heartbeat_after() -> std::time::Duration {
    std::env::var(HEARTBEAT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(DEFAULT_HEARTBEAT, std::time::Duration::from_millis)
}

/// The variable that sets the heartbeat's interval in milliseconds.
pub const HEARTBEAT_VAR: &str = "HUDDLE_MCP_HEARTBEAT_MS";
const DEFAULT_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(30);

/// Follows a run started with `keep` (request `run` of this connection) to its end: its events
/// as progress, its approvals and drafts asked of the client, its answer and outcome as the
/// result. A cancelled task stops the run (as `cancel_run` does) and waits for its end.
async fn follow(
    reader: &mut Reader,
    writer: &mut Writer,
    mut via: Via,
    ask: bool,
    detach: bool,
    run: u64,
) -> End {
    let mut seen = Followed::default();
    let quiet = heartbeat_after();
    // The answers the client gave (approvals, drafts), to send to the host.
    let (answer_tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<Request>();
    let asker = via.asker();
    // Questions asked in a task, each under its own key.
    let mut asked = 0u64;
    // The task was cancelled / its run was told to stop (once its id is known).
    let (mut cancelled, mut signalled) = (false, false);
    loop {
        let message = tokio::select! {
            message = reader.next() => message,
            Some(answer) = answers.recv() => {
                // A cancelled task's run is stopped, not answered (the stop withdraws what waits).
                if !via.cancel_requested() {
                    let _ = writer.send(answer).await;
                }
                continue;
            }
            () = via.quiet(quiet) => {
                via.heartbeat(quiet).await;
                continue;
            }
            () = via.cancelled(), if !cancelled => {
                cancelled = true;
                via.say("cancelled: the run stops".into()).await;
                if let Some(target) = seen.run_id.clone() {
                    signalled = true;
                    let _ = writer.send(Request::Stop { target }).await;
                }
                continue;
            }
        };
        match message {
            Ok(Some(HostMessage::Started { run_id, group, .. })) => {
                if detach {
                    return json_call_result(
                        format!(
                            "run {run_id} of `{group}` started and goes on in huddle's host: run_status and run_result follow it, cancel_run stops it"
                        ),
                        json!({"run_id": run_id, "group": group, "state": "running"}),
                        false,
                    )
                    .into();
                }
                via.started(&run_id, &group).await;
                seen.run_id = Some(run_id.clone());
                seen.group = Some(group);
                if cancelled && !signalled {
                    signalled = true;
                    let _ = writer.send(Request::Stop { target: run_id }).await;
                }
            }
            Ok(Some(HostMessage::Output { out, err, .. })) => {
                for line in out.as_deref().unwrap_or_default().lines() {
                    let Ok(event) = serde_json::from_str::<EngineEvent>(line) else {
                        continue;
                    };
                    if let Some(text) = headless::progress_line(&event) {
                        via.say(text).await;
                    }
                    take(&mut seen, &event);
                    if let EventKind::ToolApprovalRequested { approval_id, .. } = &event.kind
                        && ask
                    {
                        let asker = asker.clone();
                        let tx = answer_tx.clone();
                        let key = format!("approval-{approval_id}");
                        tokio::spawn(async move {
                            let (approval_id, decision) = elicit(&asker, key, &event).await;
                            let _ = tx.send(Request::AnswerApproval {
                                approval_id,
                                decision,
                            });
                        });
                    }
                }
                if let Some(text) = err {
                    let text = text.trim().to_string();
                    if !text.is_empty() {
                        via.say(text.clone()).await;
                        seen.notes.push(text);
                    }
                }
            }
            Ok(Some(HostMessage::Draft {
                group_id,
                turn,
                text,
                review,
                ..
            })) if ask => {
                let asker = asker.clone();
                let tx = answer_tx.clone();
                let group = seen.group.clone().unwrap_or_default();
                let draft = WaitingDraft { turn, text, review };
                asked += 1;
                let key = format!("draft-{asked}");
                tokio::spawn(async move {
                    // No answer (a cancel, an error): the draft waits for answer_draft or the TUI.
                    if let Some(answer) = elicit_draft(&asker, key, &group, &draft).await {
                        let _ = tx.send(Request::AnswerDraft { group_id, answer });
                    }
                });
            }
            Ok(Some(HostMessage::Exit { code, .. })) => {
                let stopped = cancelled && seen.outcome.map_or(code >= 128, |o| o == CycleOutcome::Cancelled);
                return End {
                    result: finished(seen, code),
                    cancelled: stopped,
                };
            }
            Ok(Some(HostMessage::Failed { id, message, .. })) if id == run => {
                return CallToolResult::error(vec![ContentBlock::text(message)]).into();
            }
            // An answer the run no longer waits for (its approval was withdrawn as it stopped).
            Ok(Some(HostMessage::Failed { message, .. })) => {
                tracing::info!(%message, "an answer sent to the host was refused");
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                let gone = host_gone(seen.group.as_deref());
                // A task's status message says so too (not the last progress line).
                via.say(gone.clone()).await;
                return CallToolResult::error(vec![ContentBlock::text(gone)]).into();
            }
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into(),
        }
    }
}

/// What a followed run's call says when the host went away: how an MCP client resumes it.
fn host_gone(group: Option<&str>) -> String {
    match group {
        Some(group) => format!(
            "the huddle host went away before the run ended (what was done is saved): call run_team with group \"{}\" and resume: true to go on with it (or discard_interrupted: true and a prompt to start over)",
            crate::text::sanitize::display(group)
        ),
        None => "the huddle host went away before the run ended (what was done is saved): call run_team with the group (list_teams) and resume: true to go on with it".into(),
    }
}

/// Keeps what the result needs from one event.
fn take(seen: &mut Followed, event: &EngineEvent) {
    match &event.kind {
        EventKind::RunResult { text } => seen.answer = Some(text.clone()),
        EventKind::RunEnded { outcome, failed, .. } if event.run_id.as_deref() == seen.run_id.as_deref() => {
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
fn finished(seen: Followed, code: u8) -> CallToolResult {
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
    json_call_result(
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
async fn elicit(asker: &Asker, key: String, event: &EngineEvent) -> (u64, Decision) {
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
    let schema = decision_schema(
        &DECISIONS,
        "allow once, allow this tool for the session, deny, or deny and stop the run",
    );
    let Ok(requested_schema) = serde_json::from_value(schema) else {
        return (*approval_id, Decision::Deny);
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    let decided = match asker.elicit(key, params).await {
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

/// The form of a question answered by choosing one of `choices` (a `decision`).
fn decision_schema(choices: &[&str], description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": choices,
                "description": description
            }
        },
        "required": ["decision"]
    })
}

/// Asks the client about a relay draft that waits. An accepted answer is given (`stop`, or an
/// `edit` without its text, stops the relay); a decline stops the relay; a cancel or an error
/// leaves the draft waiting (`None`), for `answer_draft` or the TUI.
async fn elicit_draft(
    asker: &Asker,
    key: String,
    group: &str,
    draft: &WaitingDraft,
) -> Option<Option<DraftAnswer>> {
    let mut message = format!(
        "huddle relay `{group}`: the draft of turn {} is\n\n{}\n",
        draft.turn,
        crate::text::sanitize::display(&draft.text)
    );
    if let Some(review) = &draft.review {
        message.push_str(&format!(
            "\n(review: {})\n",
            crate::text::sanitize::display(review)
        ));
    }
    message.push_str("\nSend it?");
    let mut schema = decision_schema(
        &DRAFT_ANSWERS,
        "send the draft, send your edit instead, reject it (the driver drafts again), or stop the relay",
    );
    schema["properties"]["text"] = json!({
        "type": "string",
        "title": "Text",
        "description": "with edit: the message to send; with reject: a note for the driver"
    });
    let requested_schema = serde_json::from_value(schema).ok()?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    match asker.elicit(key, params).await {
        Ok(result) if result.action == ElicitationAction::Accept => {
            let content = result.content.unwrap_or_default();
            let word = content
                .get("decision")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let text = content.get("text").and_then(Value::as_str);
            Some(draft_answer(word, text).unwrap_or(None))
        }
        Ok(result) if result.action == ElicitationAction::Decline => Some(None),
        Ok(_) => None,
        Err(e) => {
            tracing::info!(error = %e, "a relay draft could not be asked: it waits");
            None
        }
    }
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

    #[tokio::test]
    async fn the_client_is_gone_when_its_input_ends_not_before() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(64);
        let closed = CancellationToken::new();
        let mut input = UntilClosed {
            inner: server,
            closed: closed.clone(),
        };
        client.write_all(b"{}\n").await.unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(input.read(&mut buf).await.unwrap(), 3);
        assert!(!closed.is_cancelled(), "a line is not the end");
        assert_eq!(input.read(&mut buf[..0]).await.unwrap(), 0);
        assert!(!closed.is_cancelled(), "a read with no room is not the end");
        drop(client);
        assert_eq!(input.read(&mut buf).await.unwrap(), 0);
        assert!(
            closed.is_cancelled(),
            "the end of the input: the client went away"
        );
    }

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
    fn a_draft_answer_is_only_what_was_said() {
        assert_eq!(draft_answer("send", None), Ok(Some(DraftAnswer::Approve)));
        assert_eq!(
            draft_answer("edit", Some(" new ")),
            Ok(Some(DraftAnswer::Edit("new".into())))
        );
        assert!(draft_answer("edit", Some("  ")).is_err());
        assert_eq!(
            draft_answer("reject", None),
            Ok(Some(DraftAnswer::Reject(String::new())))
        );
        assert_eq!(draft_answer("stop", Some("x")), Ok(None));
        assert!(draft_answer("yes", None).is_err());
    }

    #[test]
    fn a_draft_waits_until_it_is_sent_or_the_relay_moves_on() {
        use crate::engine::events::RunRecord;
        let line = |kind: EventKind| {
            let event = crate::trace::tree::tests::ev(kind, None);
            serde_json::to_string(&RunRecord::now(event)).unwrap()
        };
        let draft = |turn: u32, waiting: bool| EventKind::RelayDraft {
            session_id: "s".into(),
            turn,
            text: format!("draft {turn}"),
            waiting,
            review: None,
        };
        let mut lines = vec![line(draft(1, true))];
        assert_eq!(waiting_draft(&lines).map(|d| d.turn), Some(1));
        lines.push(line(EventKind::RelayTakeOver {
            turn: 1,
            active: true,
        }));
        assert_eq!(waiting_draft(&lines), None);
        lines.push(line(draft(2, true)));
        lines.push("torn".into());
        assert_eq!(waiting_draft(&lines).map(|d| d.text), Some("draft 2".to_string()));
        lines.push(line(draft(3, false)));
        assert_eq!(waiting_draft(&lines), None);
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
