//! The engine: sessions, the modes and the reflect loops. No terminal code here; it takes
//! commands (method calls on [`Engine`]) and emits [`events::EngineEvent`]s.
//!
//! Every piece of work is a *run* with an id and a [`RunKey`] (a chat turn, a team run, a
//! session's reflection). A run is registered before its future is returned, so it can be
//! paused or stopped at once; `run_started` and `run_ended` frame its events.

mod agent_steps;
mod budget;
mod chat_history;
pub mod compaction;
mod cycle;
pub mod events;
mod executions;
pub mod guard;
mod lent_tools;
pub mod limits;
mod modes;
pub mod protocol;
mod reflect_session;
mod replay;
mod repo_context;
mod resume;
mod run;
pub mod session;
mod sink;
mod team;
mod tool_round;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::model::{CycleOutcome, Message, Mode, RunBudget, SessionId, Usage};
use crate::providers::Providers;
use crate::store::{LoadedTranscript, OrgHandle, StoreError, TranscriptWriter, Transcripts};
use crate::tools::{ApprovalPolicy, Approvals, Decision, Toolbox};

use events::{EventKind, RunId, RunKey};
pub use session::TurnResult;
use sink::Emitter;
pub use sink::{EventSink, RunObserver};

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Parallel worker turns per team.
    pub max_concurrency: usize,
    /// Wait before retrying an iteration that failed (SPEC: 2 s).
    pub error_backoff: Duration,
    /// The tool servers sessions may use.
    pub tools: Toolbox,
    /// What happens to calls whose server asks for approval.
    pub approval: ApprovalPolicy,
    /// Tool rounds per turn for sessions that set none.
    pub max_tool_rounds: u32,
    /// Bytes of a tool result sent back to the model.
    pub tool_result_max_bytes: usize,
    /// The budget of team runs whose group sets none (config.yaml `budget:`).
    pub default_budget: RunBudget,
    /// Mode `dispatch`'s guardrails where a group sets none (config.yaml `dispatch:`).
    pub default_dispatch: crate::model::DispatchLimits,
    /// Models' prices (config.yaml `prices:` over the built-in table): what each turn cost.
    pub prices: crate::model::PriceBook,
    /// The longest a run waits for a rate or usage limit where its team sets nothing (config.yaml
    /// `rate_limit_wait_secs`; zero: never).
    pub rate_limit_wait: Duration,
    /// What sessions get of their repository (`AGENTS.md`, skills) where their team says
    /// nothing (config.yaml `repo_context:`).
    pub repo_context: crate::model::RepoContextSettings,
    /// The user's own skills (`<config dir>/skills`), offered to every session.
    pub skills_dir: Option<std::path::PathBuf>,
    /// Where every session's sandbox starts: config.yaml's `sandbox:`, `huddle run --sandbox`
    /// and the machine (home and data directory).
    pub sandbox: crate::sandbox::Baseline,
    /// config.yaml's hooks (a team's and a member's run too).
    pub hooks: crate::hooks::Hooks,
    /// Secret values of the configuration (providers' keys and headers, MCP servers' `env:`
    /// and `headers_env:` values, CLI agents' keys): removed from hooks' output.
    pub secrets: crate::text::secrets::Secrets,
    /// The share of a model's context window a request may fill before the conversation is
    /// compacted (config.yaml's `compact_at`; 0: never); see `engine/compaction.rs`.
    pub compact_at: f64,
    /// Context windows in tokens by model slug (config.yaml's `context_window:`); models not
    /// in it: the table of well-known models.
    pub context_windows: std::collections::BTreeMap<String, u64>,
    /// The environment hooks run in (a front end's, in a host; this process's otherwise).
    pub env: crate::env::Env,
}

impl EngineOptions {
    /// The context window of a model slug, when configured or well known.
    pub fn context_window(&self, slug: &str) -> Option<u64> {
        self.context_windows.get(slug).copied().or_else(|| {
            let (provider, model) = slug.split_once('/')?;
            crate::model::context::known_context_window(provider, model)
        })
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_concurrency: 8,
            error_backoff: Duration::from_secs(2),
            tools: Toolbox::default(),
            approval: ApprovalPolicy::default(),
            max_tool_rounds: crate::tools::limits::DEFAULT_MAX_TOOL_ROUNDS,
            tool_result_max_bytes: crate::tools::limits::DEFAULT_RESULT_MAX_BYTES,
            default_budget: RunBudget::default(),
            default_dispatch: crate::model::DispatchLimits::default(),
            prices: crate::model::PriceBook::default(),
            rate_limit_wait: Duration::from_secs(limits::DEFAULT_RATE_LIMIT_WAIT_SECS),
            repo_context: crate::model::RepoContextSettings::default(),
            skills_dir: None,
            sandbox: crate::sandbox::Baseline::default(),
            hooks: crate::hooks::Hooks::default(),
            secrets: crate::text::secrets::Secrets::default(),
            compact_at: compaction::DEFAULT_COMPACT_AT,
            context_windows: std::collections::BTreeMap::new(),
            env: crate::env::Env::process(),
        }
    }
}

/// What a front end's configuration gives the runs it starts: its providers (keys read from its
/// environment, programs started in it) and its options (tool servers, limits). The engine's
/// own (from [`Engine::new`]) serves everything else; a host gives each front end its own
/// ([`Engine::set_scoped_profile`]).
pub struct Profile {
    pub providers: Providers,
    pub options: EngineOptions,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("providers", &self.providers)
            .field("tools", &self.options.tools)
            .finish()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EngineError {
    #[error("no group `{0}`")]
    NoSuchGroup(String),
    #[error("no session `{0}`")]
    NoSuchSession(String),
    /// What runs already: `group `X``, `this session's reflection`, or a session's id.
    #[error("{0} is already running; send messages to it instead (they are queued)")]
    AlreadyRunning(String),
    #[error("group `{group}` cannot run in {mode} mode: {reason}")]
    NotRunnable {
        group: String,
        mode: Mode,
        reason: String,
    },
    #[error("group `{0}` has no interrupted run to resume")]
    NothingToResume(String),
    /// A cost budget with models whose cost cannot be known: refused before the run starts.
    #[error(
        "`{what}` has a cost budget (max_cost_usd {budget}) but no price is known for {models}: give them a price in config.yaml's `prices:` (USD per million tokens, or 0 for a free local model), or run without the cost budget"
    )]
    UnpricedModels {
        what: String,
        budget: String,
        models: String,
    },
}

impl EngineShared {
    /// Refuses a cost budget over models whose cost cannot be known (no price, and not a CLI
    /// agent that reports its own): such a budget could never be enforced. Prices and providers
    /// are the run's profile's (its front end's config), not those the host started with.
    pub(crate) fn check_priced(
        &self,
        profile: &Profile,
        what: &str,
        budget: &RunBudget,
        slugs: &[&str],
    ) -> Result<(), EngineError> {
        let Some(max) = budget.max_cost_usd else {
            return Ok(());
        };
        let mut unpriced: Vec<&str> = slugs
            .iter()
            .copied()
            .filter(|slug| profile.options.prices.rate(slug).is_none())
            .filter(|slug| {
                !profile
                    .providers
                    .for_slug(slug)
                    .is_ok_and(|(p, _)| p.capabilities().reports_cost)
            })
            .collect();
        unpriced.sort_unstable();
        unpriced.dedup();
        if unpriced.is_empty() {
            return Ok(());
        }
        let quoted: Vec<String> = unpriced.iter().map(|s| format!("`{s}`")).collect();
        Err(EngineError::UnpricedModels {
            what: what.to_string(),
            budget: crate::model::usd_text(max),
            models: format!(
                "{} {}",
                if quoted.len() == 1 { "model" } else { "models" },
                quoted.join(", ")
            ),
        })
    }
}

/// Per-run settings that do not change the group itself.
#[derive(Debug, Clone, Default)]
pub struct RunOverrides {
    pub mode: Option<Mode>,
    pub max_iterations: Option<u32>,
    /// A model slug used by every session of this run.
    pub model: Option<String>,
    /// Files attached to the prompt, sent to every member as shared context for this run.
    pub attachments: Vec<crate::attachments::Attachment>,
    /// A relay's approval mode for this run (`huddle run --approval`).
    pub relay_approval: Option<crate::model::ApprovalMode>,
    /// Limits of this run, each over the group's (`huddle run --max-duration/--token-budget`).
    pub budget: RunBudget,
    /// The longest this run waits for a limit (`huddle run --max-limit-wait`), over the team's.
    pub rate_limit_wait_secs: Option<u64>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub outcome: CycleOutcome,
    pub iterations: u32,
    /// The final answer (synthesis, last sequential answer, or each broadcast answer labelled).
    pub final_text: String,
    pub summary: String,
    pub usage: Usage,
    /// What every turn of the run cost (the evaluator's, a linked run's included).
    pub cost: crate::model::Cost,
    pub duration: Duration,
    /// Some answer came from the offline simulator.
    pub simulated: bool,
    /// The run could not do its work (every session failed, the orchestrator failed): why.
    pub failed: Option<String>,
}

/// What a single-session reflection is asked to do.
#[derive(Debug, Clone)]
pub struct ReflectionRequest {
    pub goal: String,
    pub max_iterations: u32,
    /// A model that judges each answer PASS/FAIL; without one the session judges itself.
    pub evaluator_model: Option<String>,
    pub model_override: Option<String>,
}

/// Controls of one run: stop, pause, queued user messages.
pub(crate) struct RunControl {
    pub cancel: CancellationToken,
    pub paused: watch::Sender<bool>,
    pub queued: Mutex<Vec<String>>,
    /// Stopped by [`Engine::interrupt_run`]: a reflect cycle is saved as interrupted.
    pub interrupted: std::sync::atomic::AtomicBool,
    /// A relay waiting for the user's answer to a draft (see [`Engine::answer_relay`]).
    pub relay_answer: Mutex<Option<tokio::sync::oneshot::Sender<crate::model::DraftAnswer>>>,
    pub budget: budget::BudgetState,
    /// Time spent paused so far (durations leave it out).
    paused_for: Mutex<Duration>,
    /// Why it was stopped as interrupted, when that was said.
    interrupt_reason: Mutex<Option<String>>,
    /// Its waits for rate and usage limits (see [`limits`]).
    pub limits: limits::LimitState,
}

impl RunControl {
    fn new(shutdown: &CancellationToken) -> RunControl {
        RunControl {
            cancel: shutdown.child_token(),
            paused: watch::channel(false).0,
            queued: Mutex::new(Vec::new()),
            interrupted: std::sync::atomic::AtomicBool::new(false),
            relay_answer: Mutex::new(None),
            budget: budget::BudgetState::default(),
            paused_for: Mutex::new(Duration::ZERO),
            interrupt_reason: Mutex::new(None),
            limits: limits::LimitState::default(),
        }
    }

    /// Counts `d` as time the run was paused (a limit wait).
    pub fn add_paused(&self, d: Duration) {
        *lock(&self.paused_for) += d;
    }

    /// Why the run was stopped as interrupted, when that was said.
    pub fn interrupt_reason(&self) -> Option<String> {
        lock(&self.interrupt_reason).clone()
    }

    pub fn take_queued(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.queued))
    }

    pub fn peek_queued(&self) -> Vec<String> {
        lock(&self.queued).clone()
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// How long the run has been paused so far.
    pub fn paused_for(&self) -> Duration {
        *lock(&self.paused_for)
    }

    /// True when the run was stopped as interrupted ([`Engine::interrupt_run`]).
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sleeps, waking early (false) if the run is stopped.
    pub async fn sleep(&self, d: Duration) -> bool {
        tokio::select! {
            _ = self.cancel.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    /// Waits while the run is paused, announcing the pause and the resume. `None` when the run
    /// was stopped; else whether a pause ended in a resume. `on_pause` hears true when the
    /// pause takes effect and false when it ends (to persist it).
    pub async fn wait_if_paused(&self, emitter: &Emitter, mut on_pause: impl FnMut(bool)) -> Option<bool> {
        let mut paused = self.paused.subscribe();
        if !*paused.borrow_and_update() {
            return (!self.cancelled()).then_some(false);
        }
        on_pause(true);
        emitter.emit(EventKind::CyclePaused);
        let since = tokio::time::Instant::now();
        let count_pause = || *lock(&self.paused_for) += since.elapsed();
        loop {
            tokio::select! {
                _ = self.cancel.cancelled() => {
                    count_pause();
                    on_pause(false);
                    return None;
                }
                changed = paused.changed() => {
                    if changed.is_err() || !*paused.borrow_and_update() {
                        break;
                    }
                }
            }
        }
        count_pause();
        on_pause(false);
        emitter.emit(EventKind::CycleResumed);
        (!self.cancelled()).then_some(true)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A registered run.
pub(crate) struct ActiveRun {
    pub key: RunKey,
    pub control: RunControl,
    pub emitter: Emitter,
    pub started: std::time::Instant,
}

impl ActiveRun {
    pub fn run_id(&self) -> RunId {
        self.emitter.run_id.as_deref().unwrap_or_default().to_string()
    }

    /// What the run used so far: its time (less pauses), tokens and money.
    pub fn totals(&self) -> events::RunTotals {
        let spent = self.control.spent();
        events::RunTotals {
            duration_ms: self
                .started
                .elapsed()
                .saturating_sub(self.control.paused_for())
                .as_millis() as u64,
            usage: spent.usage,
            cost_usd: spent.cost.usd_if_any(),
            unpriced_turns: spent.cost.unpriced,
        }
    }
}

/// A new run id: sortable by start time, unique: `<UTC time to the millisecond>-<32 random
/// bits>` (from the per-thread generator: no system call, no format string parsed per run).
fn new_run_id() -> RunId {
    run_id_at(chrono::Utc::now(), fastrand::u32(..))
}

fn run_id_at(now: chrono::DateTime<chrono::Utc>, random: u32) -> RunId {
    use chrono::{Datelike, Timelike};
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}{:03}Z-{random:08x}",
        now.year(),
        now.month(),
        now.day(),
        now.hour(),
        now.minute(),
        // As chrono's `%S%3f` writes a leap second: 60.
        now.second() + now.nanosecond() / 1_000_000_000,
        now.nanosecond() % 1_000_000_000 / 1_000_000,
    )
}

pub(crate) struct EngineShared {
    pub org: OrgHandle,
    pub transcripts: Transcripts,
    pub writer: TranscriptWriter,
    pub events: EventSink,
    pub approvals: Approvals,
    /// Each session's state between turns (see [`session::run_turn`]).
    sessions: Mutex<HashMap<SessionId, session::SessionSlot>>,
    runs: Mutex<HashMap<RunId, Arc<ActiveRun>>>,
    /// Turns queued or in flight, per session.
    turns: Mutex<HashMap<SessionId, usize>>,
    /// Cancelled by [`Engine::shutdown`]: every run and turn, present and future, stops.
    shutdown: CancellationToken,
    /// Set by [`Engine::interrupt`]: stopped cycles stay resumable instead of ending cancelled.
    interrupted: std::sync::atomic::AtomicBool,
    /// The engine's own providers and options: what runs get without a scoped profile.
    default_profile: Arc<Profile>,
    /// Profiles of the runs of one group or session (by id): a front end's configuration.
    profiles: Mutex<HashMap<String, Arc<Profile>>>,
    /// Why, when the caller said ([`Engine::interrupt_because`]).
    interrupt_reason: Mutex<Option<String>>,
    /// `huddle run --sandbox` of runs handed over to this engine, by group or session id.
    sandbox_scoped: Mutex<HashMap<String, crate::sandbox::SandboxMode>>,
    /// What a team's `worktree_created` hooks reported (shown when it happened, before any run),
    /// by group id: written into the run file of the team's next run when it starts.
    before_run: Mutex<HashMap<crate::model::GroupId, Vec<EventKind>>>,
}

/// The engine. Cheap to clone; every clone drives the same sessions.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<EngineShared>,
}

impl Engine {
    pub fn new(
        providers: Providers,
        org: OrgHandle,
        transcripts: Transcripts,
        events: EventSink,
        options: EngineOptions,
    ) -> Engine {
        let default_profile = Arc::new(Profile { providers, options });
        Engine {
            shared: Arc::new(EngineShared {
                default_profile,
                profiles: Mutex::new(HashMap::new()),
                org,
                writer: TranscriptWriter::new(transcripts.clone()),
                transcripts,
                events,
                approvals: Approvals::default(),
                sessions: Mutex::new(HashMap::new()),
                runs: Mutex::new(HashMap::new()),
                turns: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
                interrupted: std::sync::atomic::AtomicBool::new(false),
                interrupt_reason: Mutex::new(None),
                sandbox_scoped: Mutex::new(HashMap::new()),
                before_run: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn org(&self) -> &OrgHandle {
        &self.shared.org
    }

    /// Refuses (as a run would) a cost budget over models whose cost cannot be known: for a
    /// front end that checks before it makes a team.
    pub fn check_cost_budget(
        &self,
        profile: Option<&Profile>,
        what: &str,
        budget: &RunBudget,
        models: &[&str],
    ) -> Result<(), EngineError> {
        let profile = profile.unwrap_or(&self.shared.default_profile);
        self.shared.check_priced(profile, what, budget, models)
    }

    /// What tool calls that ask get in the runs of one group or session (`None`: the engine's
    /// policy again).
    pub fn set_scoped_approval(&self, scope_id: &str, policy: Option<ApprovalPolicy>) {
        self.shared.approvals.set_scoped(scope_id, policy);
    }

    /// The profile (providers, options) the runs of one group or session use from now on, over
    /// the engine's own (`None`: the engine's own again). A turn reads it when it starts.
    pub fn set_scoped_profile(&self, scope_id: &str, profile: Option<Arc<Profile>>) {
        let mut profiles = lock(&self.shared.profiles);
        match profile {
            Some(p) => profiles.insert(scope_id.to_string(), p),
            None => profiles.remove(scope_id),
        };
    }

    /// The sandbox mode the runs of one group or session get over every level (`huddle run
    /// --sandbox` of a run handed over to this engine); `None` clears it.
    pub fn set_scoped_sandbox(&self, scope_id: &str, mode: Option<crate::sandbox::SandboxMode>) {
        let mut scoped = self
            .shared
            .sandbox_scoped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match mode {
            Some(m) => scoped.insert(scope_id.to_string(), m),
            None => scoped.remove(scope_id),
        };
    }

    /// The worktree_created hooks of a team whose git worktrees were just made: per worktree,
    /// with the hooks of (the first of) the members working there, in the worktree, sandboxed
    /// as that member. Await it before the team runs (a hook may install what it needs).
    /// `profile`: of the front end that made the team (its config.yaml's hooks and sandbox);
    /// `None`: the group's, else the engine's own. What they report (a hook that failed or
    /// objected) is emitted as it happens, with no run (none has started), and returned, for a
    /// front end that is not shown the group's events yet (`huddle run`); the team's next run
    /// keeps it in its run file.
    pub async fn worktree_created_hooks(
        &self,
        group_id: &str,
        profile: Option<Arc<Profile>>,
    ) -> Vec<events::EngineEvent> {
        let shared = &self.shared;
        let profile = profile.unwrap_or_else(|| shared.profile(group_id, None));
        let jobs = shared.org.read(|org| {
            let Some(group) = org.group(group_id) else {
                return Vec::new();
            };
            let mut seen = std::collections::HashSet::new();
            org.sessions_in(group_id)
                .into_iter()
                .filter_map(|s| {
                    let w = s.worktree.as_ref()?;
                    if !seen.insert(w.path.clone()) {
                        return None;
                    }
                    let guard = guard::Guard::of_session_in(shared, &profile, org, s);
                    guard
                        .watches(crate::hooks::HookEvent::WorktreeCreated, None)
                        .then(|| (guard, w.clone(), group.name.clone()))
                })
                .collect::<Vec<_>>()
        });
        let said = Mutex::new(Vec::new());
        let said_ref = &said;
        futures::future::join_all(jobs.into_iter().map(|(guard, worktree, group)| async move {
            let mut input = guard.input(crate::hooks::HookEvent::WorktreeCreated, None, None);
            input.worktree = Some(serde_json::json!({
                "path": worktree.path,
                "branch": worktree.branch,
                "base_commit": worktree.base_commit,
                "repo": worktree.repo,
            }));
            let emit = |kind| {
                let event = events::EngineEvent {
                    group_id: group_id.into(),
                    group: group.as_str().into(),
                    run_id: None,
                    execution: None,
                    kind,
                };
                lock(said_ref).push(event.clone());
                shared.events.emit(event)
            };
            guard
                .after(crate::hooks::HookEvent::WorktreeCreated, &input, &emit)
                .await;
        }))
        .await;
        let said = said
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let kept: Vec<EventKind> = said.iter().map(|e| e.kind.clone()).collect();
        let mut before_run = lock(&shared.before_run);
        if kept.is_empty() {
            before_run.remove(group_id);
        } else {
            before_run.insert(group_id.to_string(), kept);
        }
        said
    }

    /// What confines a session's processes, in words for its header (`sandbox:
    /// workspace-write, network on`, `sandbox: off`, `sandbox: none (…)`, `sandbox: REFUSED,
    /// …`); `sandbox: checking…` until bwrap was probed (see [`Engine::probe_sandbox`]). `None`
    /// for a session that starts no process (no CLI agent, no tool server, no hook) or an
    /// unknown one. Cheap: read on every frame.
    pub fn sandbox_label(&self, session_id: &str) -> Option<String> {
        let shared = &self.shared;
        let sandbox = shared.org.read(|org| {
            let s = org.session(session_id)?;
            let group = org.group(&s.group_id);
            let profile = shared.profile(&s.group_id, Some(&s.id));
            let local = profile
                .providers
                .for_slug(&s.model)
                .is_ok_and(|(p, _)| p.capabilities().local_process);
            let options = &profile.options;
            let hooks = !options.hooks.is_empty()
                || group.is_some_and(|g| !g.hooks.is_empty())
                || !s.hooks.is_empty();
            if !(local || hooks || !s.tools.is_empty()) {
                return None;
            }
            let empty = Default::default();
            let team = group.map_or(&empty, |g| &g.sandbox);
            Some(options.sandbox.sandbox(
                &[("team", team), ("member", &s.sandbox)],
                shared.sandbox_override(&s.group_id, &s.id),
            ))
        })?;
        if sandbox.policy.is_off() {
            return Some(
                sandbox
                    .status_with(&crate::sandbox::Availability::Unusable {
                        program: None,
                        reason: String::new(),
                    })
                    .label(),
            );
        }
        Some(
            match crate::sandbox::probe::known(sandbox.policy.bwrap.as_deref()) {
                Some(found) => sandbox.status_with(&found).label(),
                None => "sandbox: checking…".into(),
            },
        )
    }

    /// Probes bwrap (once: remembered) off the async runtime's threads, so headers can show
    /// the sandbox without waiting.
    pub async fn probe_sandbox(&self) {
        let baseline = &self.shared.default_profile.options.sandbox;
        crate::sandbox::probe::availability_async_in(baseline.config.bwrap.as_deref(), &baseline.host.env)
            .await;
    }

    /// Every event of one group from now on but the streamed text pieces (`delta`), besides
    /// the front end's channel, until the receiver is dropped: how a run the host drives for
    /// `huddle run` is streamed back to it.
    pub fn watch_group(&self, group_id: &str) -> tokio::sync::mpsc::UnboundedReceiver<events::EngineEvent> {
        self.shared.events.watch(group_id)
    }

    /// [`Engine::watch_group`] for several groups (a relay and the groups it talks to).
    pub fn watch_groups(
        &self,
        group_ids: Vec<crate::model::GroupId>,
    ) -> tokio::sync::mpsc::UnboundedReceiver<events::EngineEvent> {
        self.shared.events.watch_groups(group_ids)
    }

    /// A plain chat turn with one session, registered as a run now; the future runs it.
    pub fn start_chat(
        &self,
        session_id: &str,
        prompt: String,
        model_override: Option<String>,
    ) -> Result<impl Future<Output = TurnResult> + Send + 'static, EngineError> {
        self.start_chat_with(session_id, prompt, model_override, Vec::new())
    }

    /// [`Engine::start_chat`] with files attached to the prompt.
    pub fn start_chat_with(
        &self,
        session_id: &str,
        prompt: String,
        model_override: Option<String>,
        attachments: Vec<crate::attachments::Attachment>,
    ) -> Result<impl Future<Output = TurnResult> + Send + 'static, EngineError> {
        let guard = self.shared.register(RunKey::chat(session_id))?;
        let shared = Arc::clone(&self.shared);
        let session_id = session_id.to_string();
        Ok(sink::batched(async move {
            shared.wait_as_profiled(&guard.run);
            // On a team member, a chat with it alone is marked direct (not part of a team run).
            let in_team = shared.org.read(|o| {
                o.session(&session_id)
                    .and_then(|s| o.group(&s.group_id))
                    .is_some_and(|g| g.is_team())
            });
            let stamp = in_team.then(|| session::PromptStamp::new(|m| m.direct = true));
            let result = shared
                .turn(
                    &session_id,
                    prompt,
                    session::TurnOptions {
                        run_id: guard.run.emitter.run_id.clone(),
                        cancel: guard.run.control.cancel.child_token(),
                        model_override,
                        attachments,
                        stamp,
                        chat: true,
                        ..session::TurnOptions::default()
                    },
                )
                .await;
            let outcome = if result.cancelled() {
                CycleOutcome::Cancelled
            } else {
                CycleOutcome::Completed
            };
            let failed = (!result.success && !result.cancelled())
                .then(|| result.error.clone())
                .flatten();
            let said = if failed.is_some() {
                "failed".to_string()
            } else {
                outcome.to_string()
            };
            shared.run_finished_hooks(&guard.run, &said, &result.text).await;
            guard.finish(Some(outcome), 1, failed);
            result
        }))
    }

    /// A plain chat turn, waited for (`huddle run` with a session).
    pub async fn ask(
        &self,
        session_id: &str,
        prompt: String,
        model_override: Option<String>,
    ) -> Result<TurnResult, EngineError> {
        Ok(self.start_chat(session_id, prompt, model_override)?.await)
    }

    /// Registers a run of the group's mode; the future runs it to its end (a reflect cycle may
    /// take many iterations).
    pub fn start_group(
        &self,
        group_id: &str,
        prompt: String,
        overrides: RunOverrides,
    ) -> Result<impl Future<Output = Result<RunReport, EngineError>> + Send + 'static, EngineError> {
        self.start_team(group_id, prompt, overrides, false)
    }

    pub async fn run_group(
        &self,
        group_id: &str,
        prompt: String,
        overrides: RunOverrides,
    ) -> Result<RunReport, EngineError> {
        self.start_group(group_id, prompt, overrides)?.await
    }

    /// Registers the continuation of the group's interrupted run (see `engine/resume.rs`): its
    /// mode again on its request and options (`overrides` over them), the turns it finished
    /// taken from disk; a reflect cycle goes on after its last completed iteration.
    pub fn start_resume(
        &self,
        group_id: &str,
        overrides: RunOverrides,
    ) -> Result<impl Future<Output = Result<RunReport, EngineError>> + Send + 'static, EngineError> {
        let found = self.shared.org.read(|o| {
            let g = o.group(group_id)?;
            let interrupted = g.state.interrupted(g.mode)?;
            Some((interrupted, g.state.run.clone()))
        });
        let Some((interrupted, open)) = found else {
            let name = self
                .shared
                .org
                .read(|o| o.group(group_id).map(|g| g.name.clone()))
                .unwrap_or_else(|| group_id.to_string());
            return Err(EngineError::NothingToResume(name));
        };
        let overrides = match open {
            Some(open) => RunOverrides {
                mode: overrides.mode.or(Some(open.mode)),
                max_iterations: overrides.max_iterations.or(open.max_iterations),
                model: overrides.model.or(open.model),
                relay_approval: overrides.relay_approval.or(open.relay_approval),
                budget: overrides.budget.or(open.budget),
                rate_limit_wait_secs: overrides.rate_limit_wait_secs.or(open.rate_limit_wait_secs),
                ..overrides
            },
            None => overrides,
        };
        self.start_team(group_id, interrupted.goal, overrides, true)
    }

    pub async fn resume_cycle(
        &self,
        group_id: &str,
        overrides: RunOverrides,
    ) -> Result<RunReport, EngineError> {
        self.start_resume(group_id, overrides)?.await
    }

    fn start_team(
        &self,
        group_id: &str,
        prompt: String,
        overrides: RunOverrides,
        resume: bool,
    ) -> Result<impl Future<Output = Result<RunReport, EngineError>> + Send + 'static, EngineError> {
        let guard = self.shared.register(RunKey::team(group_id))?;
        let shared = Arc::clone(&self.shared);
        let group_id = group_id.to_string();
        Ok(sink::batched(async move {
            let mut result = modes::run(&shared, &guard.run, &group_id, prompt, &overrides, resume).await;
            guard.cost_into(&mut result);
            shared
                .run_finished_hooks(&guard.run, &outcome_word(&result), &answer_of(&result))
                .await;
            guard.finish_with(&result);
            result
        }))
    }

    /// Registers one session improving its own answer until it says it is done (SPEC section
    /// 4); the future runs it.
    pub fn start_reflection(
        &self,
        session_id: &str,
        request: ReflectionRequest,
    ) -> Result<impl Future<Output = Result<RunReport, EngineError>> + Send + 'static, EngineError> {
        self.start_session_reflection(session_id, request, false)
    }

    /// Registers the continuation of a session's interrupted reflection, after its last
    /// completed iteration (see `engine/reflect_session.rs`).
    pub fn start_reflection_resume(
        &self,
        session_id: &str,
    ) -> Result<impl Future<Output = Result<RunReport, EngineError>> + Send + 'static, EngineError> {
        let saved = self
            .shared
            .org
            .read(|o| o.session(session_id).and_then(|s| s.reflection.clone()));
        let Some(saved) = saved else {
            return Err(EngineError::NothingToResume(session_id.to_string()));
        };
        let request = ReflectionRequest {
            goal: saved.cycle.goal.clone(),
            max_iterations: saved.cycle.max_iterations,
            evaluator_model: saved.cycle.evaluator.clone(),
            model_override: saved.model.clone(),
        };
        self.start_session_reflection(session_id, request, true)
    }

    fn start_session_reflection(
        &self,
        session_id: &str,
        request: ReflectionRequest,
        resume: bool,
    ) -> Result<impl Future<Output = Result<RunReport, EngineError>> + Send + 'static, EngineError> {
        let guard = self.shared.register(RunKey::reflection(session_id))?;
        let shared = Arc::clone(&self.shared);
        let session_id = session_id.to_string();
        Ok(sink::batched(async move {
            shared.wait_as_profiled(&guard.run);
            let mut result = reflect_session::run(&shared, &guard.run, &session_id, request, resume).await;
            guard.cost_into(&mut result);
            shared
                .run_finished_hooks(&guard.run, &outcome_word(&result), &answer_of(&result))
                .await;
            guard.finish_with(&result);
            result
        }))
    }

    pub async fn reflect_session(
        &self,
        session_id: &str,
        request: ReflectionRequest,
    ) -> Result<RunReport, EngineError> {
        self.start_reflection(session_id, request)?.await
    }

    /// Every run waiting for a rate or usage limit now: its key, its id and each wait (who,
    /// until when, why). For `huddle ps` and front ends that list runs.
    pub fn limit_waits(&self) -> Vec<(RunKey, RunId, limits::LimitWait)> {
        let runs = lock(&self.shared.runs);
        let mut out = Vec::new();
        for (id, run) in runs.iter() {
            for wait in run.control.limit_waits() {
                out.push((run.key.clone(), id.clone(), wait));
            }
        }
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    /// True while a run with this key is registered.
    pub fn is_running(&self, key: &RunKey) -> bool {
        lock(&self.shared.runs).values().any(|r| &r.key == key)
    }

    /// True while the group runs, or a run or turn of one of its sessions is under way.
    pub fn group_busy(&self, group_id: &str) -> bool {
        if self.is_running(&RunKey::team(group_id)) {
            return true;
        }
        let sessions: Vec<SessionId> = self.shared.org.read(|o| {
            o.sessions
                .iter()
                .filter(|s| s.group_id == group_id)
                .map(|s| s.id.clone())
                .collect()
        });
        sessions.iter().any(|s| self.session_busy(s))
    }

    /// True while a turn of the session is queued or in flight, or a chat or reflection of it
    /// is registered.
    pub fn session_busy(&self, session_id: &str) -> bool {
        lock(&self.shared.turns).get(session_id).is_some_and(|n| *n > 0)
            || lock(&self.shared.runs)
                .values()
                .any(|r| r.key.session_id() == Some(session_id))
    }

    /// Pauses a running cycle after the step in flight (confirmed by `cycle_paused`). Returns
    /// false when nothing runs under the key.
    pub fn pause(&self, key: &RunKey) -> bool {
        self.with_runs(key, |r| {
            r.control.paused.send_replace(true);
        })
    }

    pub fn resume(&self, key: &RunKey) -> bool {
        self.with_runs(key, |r| {
            r.control.paused.send_replace(false);
        })
    }

    /// Stops the runs under the key now: in-flight requests are cancelled, partial text is kept.
    pub fn stop(&self, key: &RunKey) -> bool {
        self.with_runs(key, |r| r.control.cancel.cancel())
    }

    /// Stops one run (by its id) now, as [`Engine::stop`] stops a key's; false when it is not
    /// going.
    pub fn stop_run(&self, run_id: &str) -> bool {
        match lock(&self.shared.runs).get(run_id) {
            Some(run) => {
                run.control.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Answers a `tool_approval_requested` event; false when nothing waits on it any more.
    pub fn answer_approval(&self, approval_id: u64, decision: Decision) -> bool {
        self.shared.approvals.answer(approval_id, decision)
    }

    /// Answers the group's relay waiting on the user (a `relay_draft` with `waiting`, or a
    /// take-over); false when it waits for nothing.
    pub fn answer_relay(&self, group_id: &str, answer: crate::model::DraftAnswer) -> bool {
        let mut answered = false;
        self.with_runs(&RunKey::team(group_id), |r| {
            if let Some(tx) = lock(&r.control.relay_answer).take() {
                answered |= tx.send(answer.clone()).is_ok();
            }
        });
        answered
    }

    /// Stops the tool servers (their processes end), the scoped profiles' too. Call once, on
    /// exit.
    pub async fn shutdown_tools(&self) {
        let scoped: Vec<Arc<Profile>> = lock(&self.shared.profiles).values().cloned().collect();
        for profile in scoped {
            profile.options.tools.shutdown().await;
        }
        self.shared.default_profile.options.tools.shutdown().await;
    }

    /// Stops a session's chat turns (in flight and queued) and its reflection.
    pub fn stop_session(&self, session_id: &str) -> bool {
        let chats = self.stop(&RunKey::chat(session_id));
        let reflection = self.stop(&RunKey::reflection(session_id));
        chats || reflection
    }

    /// Stops everything for good (Ctrl-C in `huddle run`, quitting the TUI): running and
    /// queued turns are cancelled, and runs started afterwards end at once as cancelled.
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Stops everything like [`Engine::shutdown`], but a reflect cycle stopped this way is
    /// saved as interrupted (resumable from its last completed iteration) rather than cancelled:
    /// the process is being ended from outside (a signal), not by a decision about the cycle.
    pub fn interrupt(&self) {
        self.shared
            .interrupted
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.shared.shutdown.cancel();
    }

    /// Why [`Engine::interrupt_because`] interrupted everything, once it did.
    pub fn interrupt_reason(&self) -> Option<String> {
        self.shared.interrupt_reason()
    }

    /// [`Engine::interrupt`], saying why (`SIGTERM`): the runs left open keep the reason.
    pub fn interrupt_because(&self, reason: &str) {
        *lock(&self.shared.interrupt_reason) = Some(reason.to_string());
        self.interrupt();
    }

    /// Stops one run as [`Engine::interrupt`] stops them all: a reflect cycle is saved as
    /// interrupted (resumable). For a run handed over by a `huddle run` that got a signal.
    pub fn interrupt_run(&self, key: &RunKey) -> bool {
        self.interrupt_run_because(key, None)
    }

    /// [`Engine::interrupt_run`], saying why.
    pub fn interrupt_run_because(&self, key: &RunKey, reason: Option<&str>) -> bool {
        self.with_runs(key, |r| {
            *lock(&r.control.interrupt_reason) = reason.map(str::to_string);
            r.control
                .interrupted
                .store(true, std::sync::atomic::Ordering::SeqCst);
            r.control.cancel.cancel();
        })
    }

    /// Queues a user message for the orchestrator's next planning step. Returns false when the
    /// group is not running (send it as a new prompt instead).
    pub fn queue_message(&self, group_id: &str, text: String) -> bool {
        let queued = self.with_runs(&RunKey::team(group_id), |r| {
            lock(&r.control.queued).push(text.clone())
        });
        if queued {
            self.shared.org.update(|o| {
                if let Some(r) = o
                    .group_mut(group_id)
                    .and_then(|g| g.state.orchestrator_reflect.as_mut())
                {
                    r.queued_messages.push(text);
                }
            });
        }
        queued
    }

    fn with_runs(&self, key: &RunKey, mut f: impl FnMut(&ActiveRun)) -> bool {
        let runs = lock(&self.shared.runs);
        let mut found = false;
        for run in runs.values().filter(|r| &r.key == key) {
            f(run);
            found = true;
        }
        found
    }

    /// A session's transcript as stored, including every message queued for it so far (a
    /// blocking read: call it off the UI thread). Forces nothing else to disk.
    pub fn load_transcript(&self, session_id: &str) -> Result<LoadedTranscript, StoreError> {
        self.shared.writer.load(&self.shared.transcripts, session_id)
    }

    /// Leaves a note for a session's next turn (whichever starts it: a team run or a chat); it
    /// is kept in the organization until then. Reported as `member_note` (in the team's run,
    /// when one is going).
    pub fn note_member(&self, session_id: &str, text: String) -> Result<(), EngineError> {
        let found = self.shared.org.update(|o| {
            let s = o.session_mut(session_id)?;
            s.pending_notes.push(text.clone());
            let (name, group_id) = (s.name.clone(), s.group_id.clone());
            let group = o.group(&group_id).map(|g| g.name.clone()).unwrap_or_default();
            Some((name, group_id, group))
        });
        let Some((session, group_id, group)) = found else {
            return Err(EngineError::NoSuchSession(session_id.to_string()));
        };
        let run_id = lock(&self.shared.runs)
            .values()
            .find(|r| r.key == RunKey::team(&group_id))
            .and_then(|r| r.emitter.run_id.clone());
        self.shared.events.emit(events::EngineEvent {
            group_id: group_id.into(),
            group: group.into(),
            run_id,
            execution: None,
            kind: events::EventKind::MemberNote {
                session_id: session_id.to_string(),
                session,
                text,
                delivered: false,
            },
        });
        Ok(())
    }

    /// Starts a new conversation for each of the sessions: a mark is appended to each
    /// transcript (the earlier messages stay there, to read back) and their next turns are sent
    /// nothing from before it. Refused, changing nothing, while any of them has a turn queued or
    /// in flight. Each mark is also reported as a `notice`.
    pub fn new_conversation(&self, session_ids: &[SessionId]) -> Result<(), EngineError> {
        self.mark(session_ids, Message::conversation_start)
    }

    /// Takes back a session's last exchange, from its user message `from` on (regenerate, or
    /// edit and send again): a mark is appended to the transcript (the exchange stays there,
    /// shown as superseded) and the next turn is sent the conversation without it. Refused,
    /// changing nothing, while the session has a turn queued or in flight.
    pub fn supersede(&self, session_id: &str, from: &str, why: &str) -> Result<(), EngineError> {
        self.mark(&[session_id.to_string()], || Message::superseding(from, why))
    }

    /// Appends a mark to each session's transcript and forgets the conversation held in
    /// memory (the next turn reads it back under the mark's rule); reported as `notice`s.
    fn mark(&self, session_ids: &[SessionId], make: impl Fn() -> Message) -> Result<(), EngineError> {
        let names = self.shared.org.read(|o| {
            session_ids
                .iter()
                .map(|id| {
                    let s = o
                        .session(id)
                        .ok_or_else(|| EngineError::NoSuchSession(id.clone()))?;
                    let group = o.group(&s.group_id).map(|g| g.name.clone()).unwrap_or_default();
                    Ok((s.name.clone(), s.group_id.clone(), group))
                })
                .collect::<Result<Vec<_>, EngineError>>()
        })?;
        let slots: Vec<session::SessionSlot> = {
            let mut sessions = lock(&self.shared.sessions);
            session_ids
                .iter()
                .map(|id| Arc::clone(sessions.entry(id.clone()).or_default()))
                .collect()
        };
        // Held together, so no turn starts between the check and the marks.
        let mut states = Vec::with_capacity(slots.len());
        for (id, slot) in session_ids.iter().zip(&slots) {
            match slot.try_lock() {
                Ok(state) if !self.session_busy(id) => states.push(state),
                _ => return Err(EngineError::AlreadyRunning(id.clone())),
            }
        }
        for ((id, state), (session, group_id, group)) in session_ids.iter().zip(states.iter_mut()).zip(names)
        {
            let mark = make();
            self.shared.writer.append(id, &mark);
            state.forget();
            self.shared.events.emit(events::EngineEvent {
                group_id: group_id.into(),
                group: group.into(),
                run_id: None,
                execution: None,
                kind: events::EventKind::Notice {
                    session_id: id.clone(),
                    session,
                    text: mark.text.clone(),
                    message: Some(Arc::new(mark)),
                },
            });
        }
        Ok(())
    }

    /// Ends once every run-log line of the events emitted so far is in its file: a run's end
    /// is reported to others only after it (whoever then reads the file finds it).
    pub fn run_files_written(&self) -> impl std::future::Future<Output = ()> + use<> {
        self.shared.events.written()
    }

    /// Writes every queued transcript line, run-log line and organization change to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.shared.writer.flush();
        self.shared.events.flush();
        self.shared.org.flush()
    }
}

/// A registered run, unregistered when dropped. `run_ended` is emitted exactly once: by
/// [`RunGuard::finish`], or as cancelled when the run's future is dropped unfinished.
pub(crate) struct RunGuard {
    shared: Arc<EngineShared>,
    pub run: Arc<ActiveRun>,
    ended: bool,
}

impl RunGuard {
    fn finish(mut self, outcome: Option<CycleOutcome>, iterations: u32, failed: Option<String>) {
        self.ended = true;
        self.end(outcome, iterations, failed);
    }

    /// Puts what the run spent into its report.
    fn cost_into(&self, result: &mut Result<RunReport, EngineError>) {
        if let Ok(report) = result {
            report.cost = self.run.control.spent().cost;
        }
    }

    fn finish_with(self, result: &Result<RunReport, EngineError>) {
        if let (RunKey::Team { .. }, Ok(report)) = (&self.run.key, result)
            && !report.final_text.trim().is_empty()
        {
            self.run.emitter.emit(EventKind::RunResult {
                text: report.final_text.clone(),
            });
        }
        match result {
            Ok(report) => self.finish(Some(report.outcome), report.iterations, report.failed.clone()),
            Err(e) => self.finish(None, 0, Some(e.to_string())),
        }
    }

    fn end(&self, outcome: Option<CycleOutcome>, iterations: u32, failed: Option<String>) {
        self.shared.unregister(&self.run);
        self.run.emitter.emit(EventKind::RunEnded {
            key: self.run.key.clone(),
            outcome,
            iterations,
            failed,
            totals: Some(self.run.totals()),
        });
    }
}

/// How a run ended, in the word a run_finished hook reads (`completed`, `failed`, …).
fn outcome_word(result: &Result<RunReport, EngineError>) -> String {
    match result {
        Ok(report) if report.failed.is_some() => "failed".into(),
        Ok(report) => report.outcome.to_string(),
        Err(_) => "failed".into(),
    }
}

fn answer_of(result: &Result<RunReport, EngineError>) -> String {
    result.as_ref().map(|r| r.final_text.clone()).unwrap_or_default()
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if !self.ended {
            self.ended = true;
            self.end(Some(CycleOutcome::Cancelled), 0, None);
        }
    }
}

impl EngineShared {
    /// The profile of a session's (or, without one, a group's) runs: the session's scoped one,
    /// else its group's, else the engine's own.
    pub fn profile(&self, group_id: &str, session_id: Option<&str>) -> Arc<Profile> {
        let profiles = lock(&self.profiles);
        if profiles.is_empty() {
            return Arc::clone(&self.default_profile);
        }
        session_id
            .and_then(|s| profiles.get(s))
            .or_else(|| profiles.get(group_id))
            .map_or_else(|| Arc::clone(&self.default_profile), Arc::clone)
    }

    /// Sets the longest wait for a rate or usage limit of a chat or reflection from its profile
    /// when it starts: a front end may scope its profile once the run is registered (a team
    /// run takes its own from its team, read when it starts too).
    fn wait_as_profiled(&self, run: &ActiveRun) {
        let profile = self.profile(&run.emitter.group_id, run.key.session_id());
        run.control.set_limit_wait(profile.options.rate_limit_wait);
    }

    /// Stops the run `run_id` (a "deny and stop" answer to a tool approval).
    pub fn stop_run(&self, run_id: &str) {
        if let Some(run) = lock(&self.runs).get(run_id) {
            run.control.cancel.cancel();
        }
    }

    /// Registers a run under `key`: refused while another team run of the group or reflection
    /// of the session is registered. Emits `run_started`.
    fn register(self: &Arc<Self>, key: RunKey) -> Result<RunGuard, EngineError> {
        let (group_id, group) = self.org.read(|o| match &key {
            RunKey::Team { group_id } => o
                .group(group_id)
                .map(|g| (g.id.clone(), g.name.clone()))
                .ok_or_else(|| EngineError::NoSuchGroup(group_id.clone())),
            RunKey::Chat { session_id } | RunKey::Reflection { session_id } => {
                let s = o
                    .session(session_id)
                    .ok_or_else(|| EngineError::NoSuchSession(session_id.clone()))?;
                let name = o.group(&s.group_id).map(|g| g.name.clone()).unwrap_or_default();
                Ok((s.group_id.clone(), name))
            }
        })?;
        let run_id = new_run_id();
        let control = RunControl::new(&self.shutdown);
        control.set_limit_wait(self.profile(&group_id, key.session_id()).options.rate_limit_wait);
        let run = Arc::new(ActiveRun {
            control,
            emitter: Emitter {
                sink: self.events.clone(),
                group_id: group_id.into(),
                group: group.into(),
                run_id: Some(run_id.as_str().into()),
            },
            key,
            started: std::time::Instant::now(),
        });
        {
            let mut runs = lock(&self.runs);
            if run.key.is_exclusive() && runs.values().any(|r| r.key == run.key) {
                let what = match &run.key {
                    RunKey::Team { .. } => format!("group `{}`", run.emitter.group),
                    _ => "this session's reflection".to_string(),
                };
                return Err(EngineError::AlreadyRunning(what));
            }
            runs.insert(run_id, Arc::clone(&run));
        }
        run.emitter.emit(EventKind::RunStarted { key: run.key.clone() });
        if let RunKey::Team { group_id } = &run.key {
            let before = lock(&self.before_run).remove(group_id).unwrap_or_default();
            for kind in before {
                run.emitter.record(kind);
            }
        }
        Ok(RunGuard {
            shared: Arc::clone(self),
            run,
            ended: false,
        })
    }

    /// Unregisters a run; messages queued too late for a team run wait for the group's next run.
    fn unregister(&self, run: &ActiveRun) {
        lock(&self.runs).remove(&run.run_id());
        let leftovers = run.control.take_queued();
        if let (RunKey::Team { group_id }, false) = (&run.key, leftovers.is_empty()) {
            self.org.update(|o| {
                if let Some(g) = o.group_mut(group_id) {
                    g.pending_messages.extend(leftovers);
                }
            });
        }
    }

    /// Writes the organization through before a step is reported: what an event says is done
    /// is on disk. A failing disk is tried three times; then the error names the file and the
    /// OS error.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        if !self.org.unsaved() {
            // Everything is on disk already: no thread hop.
            return Ok(());
        }
        let org = self.org.clone();
        let written = tokio::task::spawn_blocking(move || {
            let mut result = org.flush();
            for _ in 1..3 {
                if result.is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
                // Marks it changed, so the saver writes it again.
                org.update(|_| {});
                result = org.flush();
            }
            result
        })
        .await;
        written.unwrap_or_else(|e| Err(StoreError::SaveFailed(format!("the save task ended: {e}"))))
    }

    /// True once [`Engine::interrupt`] was called.
    pub fn interrupting(&self) -> bool {
        self.interrupted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Adds what a turn used to its run's total (and budget), when the run is going.
    pub fn count_spent(&self, run_id: &str, spent: budget::Spent) {
        let run = lock(&self.runs).get(run_id).cloned();
        if let Some(run) = run {
            run.control.count_spent(spent, &run.emitter);
        }
    }

    /// Why the engine was interrupted, when that was said.
    pub fn interrupt_reason(&self) -> Option<String> {
        lock(&self.interrupt_reason).clone()
    }

    /// The sessions read their conversations from their transcripts again at their next turn
    /// (a resumption wrote marks there). A session with a turn going is left as it is.
    pub fn forget_sessions(&self, ids: &[SessionId]) {
        let sessions = lock(&self.sessions);
        for id in ids {
            if let Some(mut state) = sessions.get(id).and_then(|slot| slot.try_lock().ok()) {
                state.forget();
            }
        }
    }

    /// The run registered as `run_id`, while it runs.
    pub(crate) fn active_run(&self, run_id: Option<&str>) -> Option<Arc<ActiveRun>> {
        lock(&self.runs).get(run_id?).cloned()
    }

    /// Called when a turn is done (whatever its result).
    pub fn turn_done(&self, session_id: &str) {
        let mut turns = lock(&self.turns);
        if let Some(n) = turns.get_mut(session_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                turns.remove(session_id);
            }
        }
    }

    /// What a turn of the session with `options` would be sent of its conversation's user
    /// messages (see `session::sent_prompts`).
    pub(crate) async fn sent_prompts(
        self: &Arc<Self>,
        session_id: &str,
        options: &session::TurnOptions,
    ) -> Vec<Arc<str>> {
        let slot = self.slot(session_id);
        session::sent_prompts(Arc::clone(self), slot, session_id, options).await
    }

    /// The session's state slot (made on its first turn): found by its id without copying it.
    fn slot(&self, session_id: &str) -> session::SessionSlot {
        let mut sessions = lock(&self.sessions);
        match sessions.get(session_id) {
            Some(slot) => Arc::clone(slot),
            None => Arc::clone(sessions.entry(session_id.to_string()).or_default()),
        }
    }

    /// Runs a turn of the session once its earlier turns are done, and waits for it.
    pub async fn turn(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
        options: session::TurnOptions,
    ) -> TurnResult {
        *lock(&self.turns).entry(session_id.to_string()).or_default() += 1;
        let slot = self.slot(session_id);
        session::run_turn(Arc::clone(self), slot, session_id.to_string(), prompt, options).await
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};

    #[test]
    fn run_ids_are_the_start_time_to_the_millisecond_and_random_hex() {
        let day = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
        for time in [
            day.and_hms_milli_opt(0, 0, 0, 0).unwrap(),
            day.and_hms_milli_opt(9, 5, 7, 42).unwrap(),
            day.and_hms_nano_opt(23, 59, 59, 999_999_999).unwrap(),
            // A leap second.
            day.and_hms_milli_opt(23, 59, 59, 1_500).unwrap(),
        ] {
            let at = Utc.from_utc_datetime(&time);
            let expected = format!("{}-00c0ffee", at.format("%Y%m%dT%H%M%S%3fZ"));
            assert_eq!(super::run_id_at(at, 0xc0ffee), expected);
        }
        let (a, b) = (super::new_run_id(), super::new_run_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), "20260307T000000000Z-00c0ffee".len());
    }
}
