//! What the owner of a data dir opens before it starts (the host, or the TUI while it still owns
//! it): the data-dir lock, the organization (loaded, recovered and reconciled, then saved in the
//! background), an engine over the configured providers whose run timelines go to run files,
//! and the application layer ([`Edits`]) through which a front end changes the organization.
//! Front ends differ only in how they show the engine's events.

mod edits;
mod export;
mod history;
mod prune;
mod remote;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::config::{Config, Paths};
use crate::engine::events::EngineEvent;
use crate::engine::{Engine, EngineOptions, EventSink};
use crate::providers::ProviderError;
use crate::store::{
    DataDirLock, OrgHandle, OrgView, OrganizationFile, RunFiles, RunLog, StoreError, StoreNotice, Transcripts,
};
use crate::tools::ApprovalPolicy;

pub use edits::{
    AtRisk, EditError, Edits, EvaluatorSwitch, Removal, RemovalReport, ToolChange, WorktreeChoice,
};
pub use export::{ExportOutcome, Exporter};
pub use history::{LoadedRun, WhichRun, forecast_runs, read_run, run_sample};
pub use prune::{Leftover, PruneReport, headless_leftovers, prune};
pub use remote::{EditCall, EditTransport, RemoteEdits};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

pub struct Workspace {
    /// The organization, read-only: changes go through `edits`.
    pub org: OrgView,
    pub edits: Edits,
    pub engine: Engine,
    /// The engine's events, for the one front end that shows them.
    pub events: UnboundedReceiver<EngineEvent>,
    /// Where run timelines are stored (to show earlier runs).
    pub runs: RunFiles,
    /// What loading the organization had to repair or recover, and worktrees that vanished or
    /// that no session records; the user is told.
    pub notices: Vec<StoreNotice>,
    /// Held for as long as the workspace is open.
    pub lock: DataDirLock,
}

/// The engine's options a configuration gives, for work in `repo` whose programs (tool
/// servers) run in `env`: a workspace's own, and a host's for each front end.
pub fn engine_options(
    paths: &Paths,
    config: &Config,
    repo: &std::path::Path,
    env: &crate::env::Env,
    approval: ApprovalPolicy,
    baseline: crate::sandbox::Baseline,
) -> EngineOptions {
    EngineOptions {
        max_concurrency: config.max_concurrency,
        tools: crate::tools::mcp::toolbox_in(&config.mcp_servers, repo, &baseline, env),
        approval,
        max_tool_rounds: config.max_tool_rounds,
        tool_result_max_bytes: config.tool_result_max_bytes,
        default_budget: config.budget,
        default_dispatch: config.dispatch.clone(),
        prices: config.price_book(),
        rate_limit_wait: std::time::Duration::from_secs(config.rate_limit_wait_secs),
        repo_context: config.repo_context,
        skills_dir: Some(paths.config_dir.join("skills")),
        sandbox: baseline,
        hooks: config.hooks.clone(),
        secrets: config.secrets_in(env),
        compact_at: config.compact_at,
        context_windows: config.context_windows(),
        env: env.clone(),
        ..EngineOptions::default()
    }
}

/// Where every sandbox of a configuration starts: config.yaml's `sandbox:`, `huddle run
/// --sandbox` (`cli`) and this machine (home, the data dir) as the front end with environment
/// `env` sees it (where its `bwrap` is).
pub fn baseline(
    paths: &Paths,
    config: &Config,
    cli: Option<crate::sandbox::SandboxMode>,
    env: &crate::env::Env,
) -> crate::sandbox::Baseline {
    crate::sandbox::Baseline {
        config: config.sandbox.clone(),
        cli,
        host: Arc::new(crate::sandbox::Host::in_env(
            Some(paths.data_dir.clone()),
            Some(paths.config_dir.clone()),
            env.clone(),
        )),
    }
}

impl Workspace {
    /// Takes the lock (a second instance gets "already running (pid N)"), loads the
    /// organization and starts the engine. `repo` is where new sessions work.
    /// `approval` is what the front end does with tool calls that ask (the TUI asks the user,
    /// `huddle run` denies or, with `--approve-tools`, approves).
    pub fn open(
        paths: &Paths,
        config: &Config,
        repo: PathBuf,
        approval: ApprovalPolicy,
    ) -> Result<Workspace, OpenError> {
        Workspace::open_sandboxed(paths, config, repo, approval, None)
    }

    /// As [`Workspace::open`], with the sandbox mode of `huddle run --sandbox` over every level
    /// (config.yaml, teams, members, MCP servers).
    pub fn open_sandboxed(
        paths: &Paths,
        config: &Config,
        repo: PathBuf,
        approval: ApprovalPolicy,
        sandbox_cli: Option<crate::sandbox::SandboxMode>,
    ) -> Result<Workspace, OpenError> {
        let lock = DataDirLock::acquire(&paths.lock_file())?;
        Workspace::open_locked(lock, paths, config, repo, approval, sandbox_cli)
    }

    /// [`Workspace::open_sandboxed`] with the lock taken already (the host waits for it).
    pub fn open_locked(
        lock: DataDirLock,
        paths: &Paths,
        config: &Config,
        repo: PathBuf,
        approval: ApprovalPolicy,
        sandbox_cli: Option<crate::sandbox::SandboxMode>,
    ) -> Result<Workspace, OpenError> {
        let loaded = OrganizationFile::new(paths.organization_file()).load()?;
        let providers = crate::sim::providers(config)?;
        let org = OrgHandle::persistent(loaded.org, OrganizationFile::new(paths.organization_file()));
        let runs = RunFiles::new(paths.runs_dir());
        let (sink, events) = EventSink::channel();
        let mut sink = sink.with_run_log(RunLog::start(runs.clone(), config.runs_kept));
        match crate::telemetry::Telemetry::start(&config.telemetry) {
            Ok(Some(telemetry)) => sink = sink.with_observer(telemetry),
            Ok(None) => {}
            Err(e) => tracing::warn!("{e}; runs are not exported"),
        }
        let transcripts = Transcripts::new(paths.sessions_dir());
        let baseline = baseline(paths, config, sandbox_cli, &crate::env::Env::process());
        let engine = Engine::new(
            providers,
            org.clone(),
            transcripts.clone(),
            sink,
            engine_options(
                paths,
                config,
                &repo,
                &crate::env::Env::process(),
                approval,
                baseline,
            ),
        );
        // Worktrees vanished or not recorded (a crash between `git worktree add` and the save)
        // are reported, never deleted. No git runs when no team ever had a worktree.
        let mut notices = loaded.notices;
        let found = crate::worktrees::reconcile(
            &paths.worktrees_dir(),
            &org.snapshot(),
            std::slice::from_ref(&repo),
        );
        notices.extend(found.lines().into_iter().map(StoreNotice::Worktree));
        let edits = Edits::new(
            org.clone(),
            engine.clone(),
            config.clone(),
            repo,
            transcripts,
            runs.clone(),
        )
        .with_worktrees_root(paths.worktrees_dir());
        Ok(Workspace {
            org: org.view(),
            edits,
            engine,
            events,
            runs,
            notices,
            lock,
        })
    }
}
