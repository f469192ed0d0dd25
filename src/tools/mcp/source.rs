//! One configured MCP server as a [`ToolSource`]: started on first use, shared by every session
//! of the workspace, its tool list cached until the server says it changed, restarted once if
//! it dies, every start and call bounded by its `timeout_secs`. A stdio server with
//! `cwd: session` runs once per distinct working directory of the sessions that use it (each
//! session's worktree), each instance with its own start and restart budget.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientInitializeError, NotificationContext, RoleClient, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer};
use tokio_util::sync::CancellationToken;

use super::config::{McpServerConfig, resolve_cwd, resolve_headers};
use super::{convert, stderr};
use crate::model::ToolSpec;
use crate::sandbox::{Sandbox, needed_paths};
use crate::text::secrets::Secrets;
use crate::tools::{Approval, ServerLaunch, ToolError, ToolOutput, ToolSource};

/// Starts per source: the first, and one restart after the server died.
const MAX_STARTS: u32 = 2;
/// How long [`McpSource::shutdown`] waits for a server to end before leaving it to be killed.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// An MCP server reached over stdio (a program huddle starts) or streamable HTTP.
pub struct McpSource {
    name: String,
    config: McpServerConfig,
    repo: PathBuf,
    timeout: Duration,
    /// One instance per working directory for `cwd: session`, else one (keyed `None`).
    slots: Mutex<Vec<(Option<PathBuf>, Arc<Slot>)>>,
    /// Set by a shutdown: every later use fails.
    shut_down: std::sync::atomic::AtomicBool,
    /// The program's environment and where `headers_env:` values are read: the front end's.
    env: crate::env::Env,
    /// The values of its `env:` and `headers_env:`: removed from whatever the server hands back
    /// (tool lists, results, errors, stderr), so an echo never reaches the model or a file.
    secrets: Secrets,
    /// What confines a stdio server's process.
    sandbox: Sandbox,
    /// What its stderr said the sandbox stopped, not yet reported.
    denials: stderr::Denials,
}

/// One instance of the server: where it runs and its state.
struct Slot {
    /// Its working directory (`None`: huddle's own).
    dir: Option<PathBuf>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    live: Option<Arc<Connection>>,
    /// Starts that ended (connected, failed or timed out).
    starts: u32,
    /// Why the last start failed, if it did.
    start_failure: Option<String>,
    /// Why the server is no longer started; every later use fails with it.
    given_up: Option<String>,
}

/// The values of a server's `env:` and `headers_env:` (read in `env`): never handed on.
fn secrets_of(config: &McpServerConfig, env: &crate::env::Env) -> Secrets {
    let headers = config.headers_env.values().filter_map(|var| env.var(var));
    Secrets::new(config.env.values().cloned().chain(headers))
}

impl McpSource {
    /// The source for `mcp_servers.<name>`; nothing starts until the first `list` or `call`.
    /// `repo` is the repository huddle was opened in (`cwd: repo`, relative `cwd:`s).
    pub fn new(name: impl Into<String>, config: McpServerConfig, repo: &Path) -> McpSource {
        let env = crate::env::Env::process();
        McpSource {
            secrets: secrets_of(&config, &env),
            name: name.into(),
            timeout: Duration::from_secs(config.timeout_secs.max(1)),
            config,
            repo: repo.to_path_buf(),
            slots: Mutex::new(Vec::new()),
            shut_down: std::sync::atomic::AtomicBool::new(false),
            env,
            sandbox: Sandbox::off(),
            denials: Default::default(),
        }
    }

    /// The server runs with exactly these variables, and its headers are read from them (and
    /// their values redacted).
    pub fn with_env(mut self, env: crate::env::Env) -> McpSource {
        self.secrets = secrets_of(&self.config, &env);
        self.env = env;
        self
    }

    /// Confines the server's process (a stdio server) by `sandbox`: its working directory is
    /// writable in `workspace-write` (the repository, or each session's worktree for `cwd:
    /// session`). Without it the server runs unconfined; [`super::toolbox`] always gives one.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> McpSource {
        self.sandbox = sandbox;
        self
    }

    /// True for a stdio server with `cwd: session` (one instance per working directory).
    pub fn per_session(&self) -> bool {
        self.config.url.is_none() && self.config.cwd.as_deref().map(str::trim) == Some("session")
    }

    /// The instance for a caller working in `workdir`: its own for `cwd: session` (the repo
    /// when the caller has none), else the one shared by everyone.
    fn slot(&self, workdir: Option<&Path>) -> Arc<Slot> {
        let (key, dir) = if self.per_session() {
            let dir = workdir.map_or_else(|| self.repo.clone(), Path::to_path_buf);
            (Some(dir.clone()), Some(dir))
        } else {
            (None, resolve_cwd(self.config.cwd.as_deref(), &self.repo))
        };
        let mut slots = lock(&self.slots);
        if let Some((_, slot)) = slots.iter().find(|(k, _)| *k == key) {
            return Arc::clone(slot);
        }
        let state = State {
            given_up: self
                .shut_down
                .load(Ordering::SeqCst)
                .then(|| "it was shut down".to_string()),
            ..State::default()
        };
        let slot = Arc::new(Slot {
            dir,
            state: tokio::sync::Mutex::new(state),
        });
        slots.push((key, Arc::clone(&slot)));
        slot
    }

    /// How the server is reached, for people (`stdio mcp-server-git`, `http https://…`).
    pub fn describe(&self) -> String {
        match (&self.config.url, self.config.command.first()) {
            (Some(url), _) => format!("http {url}"),
            (None, Some(program)) => format!("stdio {program}"),
            (None, None) => "not configured".into(),
        }
    }

    fn failed(&self, message: impl Into<String>) -> ToolError {
        ToolError::Failed {
            server: self.name.clone(),
            message: message.into(),
        }
    }

    fn timed_out(&self) -> ToolError {
        ToolError::Timeout {
            server: self.name.clone(),
            after: self.timeout,
        }
    }

    /// The running connection, started (or restarted once) if need be. Concurrent first uses
    /// wait for one start.
    async fn connection(&self, slot: &Slot) -> Result<Arc<Connection>, ToolError> {
        let mut state = slot.state.lock().await;
        if let Some(live) = &state.live {
            if live.is_alive() {
                return Ok(Arc::clone(live));
            }
            tracing::warn!(server = %self.name, "mcp server stopped (exited or closed its connection)");
            state.live = None;
        }
        if let Some(why) = &state.given_up {
            return Err(self.failed(why.clone()));
        }
        if state.starts >= MAX_STARTS {
            let why = match &state.start_failure {
                Some(last) => format!(
                    "it failed to start {MAX_STARTS} times and is not tried again (restart huddle to try again); last time: {last}"
                ),
                None => "it stopped again after a restart and is not restarted again (restart huddle to try again)".into(),
            };
            state.given_up = Some(why.clone());
            return Err(self.failed(why));
        }
        // A start abandoned half-way (the caller cancelled) is not counted.
        let started = tokio::time::timeout(self.timeout, self.start(slot.dir.as_deref())).await;
        state.starts += 1;
        let (failure, reason) = match started {
            Ok(Ok(connection)) => {
                let connection = Arc::new(connection);
                state.live = Some(Arc::clone(&connection));
                state.start_failure = None;
                return Ok(connection);
            }
            Ok(Err(message)) => {
                let message = self.secrets.redact(&message).into_owned();
                (
                    ToolError::Start {
                        server: self.name.clone(),
                        message: message.clone(),
                    },
                    message,
                )
            }
            Err(_) => (
                self.timed_out(),
                format!("it did not answer within {}s", self.timeout.as_secs()),
            ),
        };
        tracing::warn!(server = %self.name, "mcp server could not start: {reason}");
        state.start_failure = Some(reason);
        Err(failure)
    }

    /// Connects (the MCP handshake) and fetches the tool list.
    async fn start(&self, dir: Option<&Path>) -> Result<Connection, String> {
        let changes = Arc::new(AtomicU64::new(0));
        let handler = Handler {
            server: self.name.clone(),
            changes: Arc::clone(&changes),
        };
        let stop = CancellationToken::new();
        let running = match &self.config.url {
            Some(url) => {
                let headers = resolve_headers(&self.name, &self.config.headers_env, |var| self.env.var(var))?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.into_iter().collect());
                ensure_crypto_provider();
                let transport = StreamableHttpClientTransport::from_config(config);
                rmcp::service::serve_client_with_ct(handler, transport, stop.clone()).await
            }
            None => {
                let transport = self.spawn(dir).await?;
                rmcp::service::serve_client_with_ct(handler, transport, stop.clone()).await
            }
        }
        .map_err(|e| describe_init_error(&e))?;
        let peer = running.peer().clone();
        let closed = CancellationToken::new();
        let server = self.name.clone();
        let ended = closed.clone();
        let monitor = tokio::spawn(async move {
            let reason = running.waiting().await;
            ended.cancel();
            tracing::info!(server = %server, "mcp server connection ended: {reason:?}");
        });
        let connection = Connection {
            peer,
            changes,
            tools: Mutex::new(None),
            closed,
            stop,
            monitor: Mutex::new(Some(monitor)),
        };
        connection.fetch_tools().await.map_err(|e| match e {
            ServiceError::McpError(e) => format!("it could not list its tools: {}", e.message),
            other => format!("it could not list its tools: {}", describe_service_error(&other)),
        })?;
        tracing::info!(server = %self.name, via = %self.describe(), dir = ?dir, "mcp server started");
        Ok(connection)
    }

    /// Starts the program (no shell) with its environment and directory, in its sandbox;
    /// stderr to the log.
    async fn spawn(&self, dir: Option<&Path>) -> Result<TokioChildProcess, String> {
        let Some((program, args)) = self.config.command.split_first() else {
            return Err("no command: configured".into());
        };
        if let Some(dir) = dir
            && !dir.is_dir()
        {
            return Err(format!(
                "its directory {} (mcp_servers.{}.cwd) does not exist",
                dir.display(),
                self.name
            ));
        }
        let mut command = self
            .sandbox
            .command_in(&self.env, program, args, dir, &needed_paths(program, args))
            .await
            .map_err(|e| e.to_string())?;
        command.envs(&self.config.env).kill_on_drop(true);
        let (process, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run `{program}`: {e}"))?;
        if let Some(stderr) = stderr {
            let denials = self.confined().then(|| self.denials.clone());
            stderr::forward(self.name.clone(), stderr, self.secrets.clone(), denials);
        }
        Ok(process)
    }

    async fn list_tools(&self, workdir: Option<&Path>) -> Result<Vec<ToolSpec>, ToolError> {
        let connection = self.connection(&self.slot(workdir)).await?;
        if let Some(tools) = connection.cached_tools() {
            return Ok(tools);
        }
        match tokio::time::timeout(self.timeout, connection.fetch_tools()).await {
            Err(_) => Err(self.timed_out()),
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(self.service_failure(&connection, &e)),
        }
    }

    async fn call_tool(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        workdir: Option<&Path>,
    ) -> Result<ToolOutput, ToolError> {
        let connection = self.connection(&self.slot(workdir)).await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        // Dropping the call (timeout, cancellation) sends the server `notifications/cancelled`.
        match tokio::time::timeout(self.timeout, connection.peer.call_tool(params)).await {
            Err(_) => Err(self.timed_out()),
            Ok(Ok(result)) => Ok(convert::output(result)),
            Ok(Err(e)) => Err(self.service_failure(&connection, &e)),
        }
    }

    /// The error for a failed request; a closed connection is marked dead at once (the next
    /// use restarts the server, once). A failed send alone (one HTTP request) is not a death.
    fn service_failure(&self, connection: &Connection, e: &ServiceError) -> ToolError {
        if matches!(e, ServiceError::TransportClosed) {
            connection.closed.cancel();
        }
        match e {
            ServiceError::Timeout { .. } => self.timed_out(),
            other => self.failed(describe_service_error(other)),
        }
    }

    /// An error with the server's secret values removed (a JSON-RPC error or a 401 body may
    /// echo them).
    fn redact_error(&self, e: ToolError) -> ToolError {
        match e {
            ToolError::Start { server, mut message } => {
                self.secrets.redact_in_place(&mut message);
                ToolError::Start { server, message }
            }
            ToolError::Failed { server, mut message } => {
                self.secrets.redact_in_place(&mut message);
                ToolError::Failed { server, message }
            }
            other => other,
        }
    }

    /// A listed tool with the server's secret values removed from what a model reads of it.
    fn redact_spec(&self, mut spec: ToolSpec) -> ToolSpec {
        if self.secrets.is_empty() {
            return spec;
        }
        self.secrets.redact_in_place(&mut spec.name);
        self.secrets.redact_in_place(&mut spec.description);
        let schema = spec.input_schema.to_string();
        if let std::borrow::Cow::Owned(clean) = self.secrets.redact(&schema) {
            spec.input_schema =
                serde_json::from_str(&clean).unwrap_or_else(|_| serde_json::json!({"type": "object"}));
        }
        spec
    }

    /// Stops every instance of the server and waits (a bounded while) for them to end; later
    /// uses fail.
    async fn stop(&self) {
        let slots: Vec<Arc<Slot>> = {
            let slots = lock(&self.slots);
            // Under the lock: an instance for a directory not seen yet is born shut down.
            self.shut_down.store(true, Ordering::SeqCst);
            slots.iter().map(|(_, s)| Arc::clone(s)).collect()
        };
        futures::future::join_all(slots.iter().map(|slot| self.stop_slot(slot))).await;
    }

    async fn stop_slot(&self, slot: &Slot) {
        let live = {
            let mut state = slot.state.lock().await;
            state.given_up = Some("it was shut down".into());
            state.live.take()
        };
        if let Some(connection) = live {
            connection.stop.cancel();
            let monitor = lock(&connection.monitor).take();
            if let Some(monitor) = monitor
                && tokio::time::timeout(SHUTDOWN_WAIT, monitor).await.is_err()
            {
                tracing::warn!(server = %self.name, "mcp server did not stop within {SHUTDOWN_WAIT:?}; it is killed");
            }
        }
    }
}

impl ToolSource for McpSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn launch(&self) -> Result<ServerLaunch, String> {
        if let Some(url) = &self.config.url {
            let headers = resolve_headers(&self.name, &self.config.headers_env, |var| self.env.var(var))?;
            let headers = headers
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
                .collect();
            return Ok(ServerLaunch::Http {
                name: self.name.clone(),
                url: url.clone(),
                headers,
            });
        }
        let Some((program, args)) = self.config.command.split_first() else {
            return Err(format!("mcp_servers.{}: no command", self.name));
        };
        // Found as the front end whose session it is would find it.
        let path = self.env.var("PATH");
        let command = crate::process::find_program_in(program, path.as_deref().map(std::ffi::OsStr::new))
            .ok_or_else(|| format!("mcp_servers.{}: `{program}` was not found", self.name))?;
        Ok(ServerLaunch::Stdio {
            name: self.name.clone(),
            command,
            args: args.to_vec(),
            env: self
                .config
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }

    fn confined(&self) -> bool {
        !self.config.command.is_empty() && !self.sandbox.policy.is_off()
    }

    fn take_denials(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .denials
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn approval(&self) -> Approval {
        self.config.approval
    }

    fn list<'a>(&'a self, workdir: Option<&'a Path>) -> BoxFuture<'a, Result<Vec<ToolSpec>, ToolError>> {
        Box::pin(async move {
            match self.list_tools(workdir).await {
                Ok(tools) => Ok(tools.into_iter().map(|t| self.redact_spec(t)).collect()),
                Err(e) => Err(self.redact_error(e)),
            }
        })
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: serde_json::Map<String, serde_json::Value>,
        workdir: Option<&'a Path>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ToolError::Cancelled),
                result = self.call_tool(tool, arguments, workdir) => result,
            };
            match result {
                Ok(mut output) => {
                    self.secrets.redact_in_place(&mut output.text);
                    Ok(output)
                }
                Err(e) => Err(self.redact_error(e)),
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.stop())
    }

    fn max_tools(&self) -> usize {
        self.config.max_tools
    }
}

/// One started server.
struct Connection {
    peer: Peer<RoleClient>,
    /// Bumped by each `notifications/tools/list_changed`.
    changes: Arc<AtomicU64>,
    /// The tool list and the `changes` count it was fetched at.
    tools: Mutex<Option<(u64, Vec<ToolSpec>)>>,
    /// Cancelled once the connection ended (the server exited, closed it, or was stopped).
    closed: CancellationToken,
    /// Cancelling it ends the connection (the server process is stopped).
    stop: CancellationToken,
    /// Waits for the connection's end; awaited by a shutdown.
    monitor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Connection {
    fn is_alive(&self) -> bool {
        !self.closed.is_cancelled() && !self.peer.is_transport_closed()
    }

    /// The cached list unless the server said it changed since.
    fn cached_tools(&self) -> Option<Vec<ToolSpec>> {
        let changes = self.changes.load(Ordering::SeqCst);
        lock(&self.tools)
            .as_ref()
            .filter(|(at, _)| *at == changes)
            .map(|(_, tools)| tools.clone())
    }

    async fn fetch_tools(&self) -> Result<Vec<ToolSpec>, ServiceError> {
        // Read before asking: a change announced during the fetch leaves the cache stale.
        let changes = self.changes.load(Ordering::SeqCst);
        let tools: Vec<ToolSpec> = self
            .peer
            .list_all_tools()
            .await?
            .into_iter()
            .map(convert::spec)
            .collect();
        *lock(&self.tools) = Some((changes, tools.clone()));
        Ok(tools)
    }
}

impl Drop for Connection {
    /// A connection nobody holds any more ends its server (kill on drop, whatever the caller
    /// forgot): the service stops, which closes the server's stdin and then kills it.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Receives the server's notifications: a changed tool list marks the cache stale.
struct Handler {
    server: String,
    changes: Arc<AtomicU64>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "mcp server's tool list changed");
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("huddle", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

fn describe_init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) => {
            "it closed the connection during the MCP handshake (did it exit? see huddle's log for its stderr)"
                .into()
        }
        ClientInitializeError::JsonRpcError(e) => {
            format!("it refused the MCP handshake: {}", e.message)
        }
        other => format!("the MCP handshake failed: {other}"),
    }
}

fn describe_service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::TransportClosed => {
            "the server stopped or closed its connection (see huddle's log for its stderr)".into()
        }
        ServiceError::TransportSend(e) => format!("the request could not be sent: {e}"),
        ServiceError::McpError(e) => format!("{} (error {})", e.message, e.code.0),
        ServiceError::UnexpectedResponse => "the server sent an answer of the wrong kind".into(),
        other => other.to_string(),
    }
}

/// rmcp's HTTP client (reqwest 0.13) is built without a TLS crypto provider of its own, which
/// would be a second one in the binary (aws-lc, megabytes of code resident in every huddle
/// process: docs/benchmarks.md, "Memory"); it takes the process's default, which this installs:
/// ring, the provider huddle's own HTTP clients use. Without one, building that client panics.
fn ensure_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // An error means a provider was installed already: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
