//! `huddle run`: the engine without the terminal UI. Progress goes to stderr (sanitised), the
//! final answer to stdout, or NDJSON events to stdout with `--events`. Exit codes follow SPEC
//! section 9.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::mpsc;

use crate::cli::{OutputError, RunOutput};
use crate::config::{Config, Paths};
use crate::describe::{Line, Names, Tone, describe_as};
use crate::engine::events::{EngineEvent, EventKind, Phase, RunKey};
use crate::engine::{Engine, EngineError, ReflectionRequest, RunOverrides, RunReport};
use crate::model::{CycleOutcome, Mode, RunBudget, WorktreeStrategy};
use crate::presets::Catalog;
use crate::text::first_line;
use crate::text::sanitize;
use crate::tools::ApprovalPolicy;
use crate::workspace::Edits;

/// What `huddle run` was asked to do (also what it hands to a huddle that is already open, so
/// fields added later need a default).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RunRequest {
    pub preset: Option<String>,
    pub group: Option<String>,
    /// An existing session to run on (`--session`): asked, reflecting, or its reflection
    /// resumed.
    pub session: Option<String>,
    pub mode: Option<Mode>,
    pub max_iterations: Option<u32>,
    pub model: Option<String>,
    /// Limits of this run over the team's (`--max-duration`, `--token-budget`, `--max-cost`).
    pub budget: RunBudget,
    /// The longest this run waits for a rate or usage limit (`--max-limit-wait`).
    pub rate_limit_wait_secs: Option<u64>,
    pub events: bool,
    /// Approve tool calls that ask (`--approve-tools`); otherwise they are denied.
    pub approve_tools: bool,
    /// Tool calls that ask wait for an answer (`answer_approval`) instead of being denied: the
    /// front end asks someone (`huddle mcp` with a client that can be asked).
    pub ask_tools: bool,
    /// Started by `huddle mcp`: a call that asks and cannot be asked is denied with what an MCP
    /// client can do about it (not `--approve-tools`).
    pub over_mcp: bool,
    /// A relay asks about each draft on the terminal (`--approve`).
    pub approve: bool,
    /// A relay's approval mode for this run (`--approval`).
    pub approval: Option<crate::model::ApprovalMode>,
    /// Empty with `resume`.
    pub prompt: String,
    /// Continue the group's interrupted run (or the session's reflection) instead of starting
    /// one.
    pub resume: bool,
    /// Record the group's interrupted run (or the session's reflection) as cancelled and start
    /// over.
    pub discard_interrupted: bool,
    pub repo: PathBuf,
    /// With `preset`: the worktree strategy instead of the preset's `worktrees:`.
    pub worktrees: Option<WorktreeStrategy>,
    /// `--sandbox`: the sandbox mode over every level, for this run.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
}

/// A failure before or around the run, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RunFailure {
    pub code: u8,
    pub message: String,
}

fn usage(message: impl Into<String>) -> RunFailure {
    RunFailure {
        code: 2,
        message: message.into(),
    }
}

fn other(message: impl Into<String>) -> RunFailure {
    RunFailure {
        code: 1,
        message: message.into(),
    }
}

/// Exit code of a run whose state could not be saved.
pub const EXIT_SAVE_FAILED: u8 = 7;

/// Exit code of a run stopped by a rate or usage limit that would not reset within its
/// `rate_limit_wait_secs` (resumable with `--resume`).
pub const EXIT_RATE_LIMITED: u8 = 8;

/// The exit code of a finished run (SPEC section 9, with issue 14's `budget_exhausted` = 6 and
/// `save_failed` moved to 7).
pub fn exit_code(report: &RunReport) -> u8 {
    outcome_code(report.outcome, report.failed.is_some())
}

/// [`exit_code`] from a run's outcome and whether it failed (what `run_ended` says: how
/// `huddle attach` ends like the `huddle run` it follows).
pub fn outcome_code(outcome: CycleOutcome, failed: bool) -> u8 {
    if outcome == CycleOutcome::SaveFailed {
        return EXIT_SAVE_FAILED;
    }
    if outcome == CycleOutcome::RateLimited {
        return EXIT_RATE_LIMITED;
    }
    if failed {
        return 1;
    }
    match outcome {
        CycleOutcome::GoalMet | CycleOutcome::Completed => 0,
        CycleOutcome::MaxIterations => 3,
        CycleOutcome::Stalled => 4,
        CycleOutcome::ErrorBudget => 5,
        CycleOutcome::BudgetExhausted => 6,
        CycleOutcome::SaveFailed => EXIT_SAVE_FAILED,
        CycleOutcome::Cancelled => 130,
        CycleOutcome::Failed => 1,
        CycleOutcome::RateLimited => EXIT_RATE_LIMITED,
    }
}

/// What the run will drive.
enum Target {
    Group(String),
    Session(String),
}

/// Reads a prompt of `-` from standard input and checks the request is complete: before it is
/// run here or handed to a huddle that is already open.
pub fn prepare(mut request: RunRequest) -> Result<RunRequest, RunFailure> {
    if request.prompt == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| usage(format!("cannot read the prompt from standard input: {e}")))?;
        request.prompt = text;
    }
    if request.prompt.trim().is_empty() && !request.resume {
        return Err(usage("the prompt is empty"));
    }
    if request.preset.is_none() && request.group.is_none() && !request.budget.is_empty() {
        return Err(usage(
            "--max-duration, --token-budget and --max-cost limit team runs: add --preset or --group (a single session's reflection uses its group's or config.yaml's budget)",
        ));
    }
    Ok(request)
}

/// What a run does with tool calls that ask: `huddle run` has nobody to answer, so they are
/// denied unless `--approve-tools` said to run them; a front end that asks someone (`huddle
/// mcp` with a client that can be asked) has them wait for the answer. Never allowed by default.
fn tool_policy(request: &RunRequest) -> ApprovalPolicy {
    if request.approve_tools {
        ApprovalPolicy::ApproveAll
    } else if request.ask_tools {
        ApprovalPolicy::Ask
    } else if request.over_mcp {
        ApprovalPolicy::DenyOverMcp
    } else {
        ApprovalPolicy::DenyAll
    }
}

/// What a run is driven with: the data dir's open workspace, in this process or in the host
/// (with the asking front end's configuration and repository: `edits` is its view).
pub struct Host<'a> {
    pub paths: &'a Paths,
    pub config: &'a Config,
    pub edits: &'a Edits,
    pub engine: &'a Engine,
}

/// A front end of the host, as a run sees it.
pub struct Remote {
    pub output: RunOutput,
    pub stop: tokio::sync::oneshot::Receiver<u8>,
    /// Its standard input and error are a terminal (where `--approve` asks about drafts).
    pub terminal: bool,
    /// Its progress lines are coloured (its standard error is a terminal, `NO_COLOR` unset).
    pub color: bool,
    /// Its configuration's providers and tool servers, for this run's turns.
    pub profile: Option<Arc<crate::engine::Profile>>,
    /// Its environment: git runs in it when the run makes worktrees.
    pub env: crate::env::Env,
}

/// Drives one request to its end on `host` and returns the exit code.
pub async fn execute(host: &Host<'_>, request: &RunRequest, front: Remote) -> Result<u8, RunFailure> {
    let Host {
        paths,
        config,
        edits,
        engine,
    } = *host;
    let out = front.output.clone();
    if let Some(model) = &request.model {
        config
            .resolve(model)
            .map_err(|e| usage(format!("--model: {e}")))?;
    }
    // Relay drafts are asked about on the asking terminal (`--approve`), if it is one.
    let (on_terminal, env) = (front.terminal, front.env.clone());
    // Off the runtime's one worker (`crate::async_runtime`): a preset's team is made here, a
    // worktree per member with git and the organization saved, which takes seconds in a large
    // repository; every other front end of the host would wait meanwhile.
    let target = {
        let (paths, config, edits) = (paths.clone(), config.clone(), edits.clone());
        let (engine, request, out) = (engine.clone(), request.clone(), out.clone());
        let (profile, env) = (front.profile.clone(), env.clone());
        tokio::task::spawn_blocking(move || {
            let asked = Asked {
                out: &out,
                on_terminal,
                profile: profile.as_deref(),
            };
            env.scope(|| choose_target(&paths, &config, &edits, &engine, &request, &asked))
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "choosing a run's team or session failed");
            other(format!("the run's team or session could not be chosen: {e}"))
        })??
    };
    if let Target::Group(id) = &target {
        refuse_running(engine, id)?;
    }
    if let (Some(_), Target::Group(id)) = (&request.preset, &target) {
        // A team made now: its worktrees' hooks (copy .env, install dependencies) run first.
        // What they report comes before the run (its events are followed from its start): it
        // is printed here (the run's file keeps it too).
        let said = engine.worktree_created_hooks(id, front.profile.clone()).await;
        let names = engine.org().read(|o| Names::for_group(o, id, ""));
        for event in &said {
            // Standard output gone: the run that follows finds out again and says so.
            let _ = print_event(event, &names, request.events, front.color, &out);
        }
    }
    let resume = match &target {
        Target::Group(id) => interrupted_cycle(edits, id, request)?,
        Target::Session(id) => interrupted_reflection(edits, id, request)?,
    };
    // A session's reflection is a run of its own (stopped by a signal, it is left to be
    // resumed); a question to it is a chat.
    let reflects = resume || request.max_iterations.is_some_and(|n| n > 1);
    // A relay whose drafts wait for a person runs only with someone at the terminal.
    let relay = match &target {
        Target::Group(id) => engine.org().read(|o| {
            // A resumed run keeps the approval it was started with (`--approval` again wins):
            // the engine resumes it so (review 23-2 nit E6).
            let started_with = o
                .group(id)
                .and_then(|g| g.state.run.as_ref())
                .and_then(|r| r.relay_approval)
                .filter(|_| resume);
            crate::headless_relay::relay_approval(o, id, request.mode, request.approval.or(started_with))
        }),
        Target::Session(_) => None,
    };
    if let Some((name, approval)) = &relay {
        crate::headless_relay::check_approval(name, *approval, request.approve, on_terminal)
            .map_err(usage)?;
    }
    // Drafts that wait (this relay's, or one behind it as its counterpart) are asked about with
    // --approve; without it nobody can answer them.
    let approver = crate::headless_relay::Approver {
        engine: engine.clone(),
        ask: request.approve && on_terminal,
        out: out.clone(),
    };
    // What is reported from here on refers to a group that is on disk.
    let flushed = {
        let engine = engine.clone();
        tokio::task::spawn_blocking(move || engine.flush()).await
    };
    match flushed {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(RunFailure {
                code: EXIT_SAVE_FAILED,
                message: e.to_string(),
            });
        }
        Err(e) => {
            tracing::error!(error = %e, "saving before a run failed on the blocking pool");
            return Err(RunFailure {
                code: EXIT_SAVE_FAILED,
                message: "the organization could not be saved before the run (see the log)".into(),
            });
        }
    }

    let Remote {
        stop, profile, color, ..
    } = front;
    // Its events, as other front ends see them too; tool calls that ask are treated as the
    // front end asked (denied, approved, or asked through it), not asked in a TUI.
    let (scope, run_key, group_id) = match &target {
        Target::Group(id) => (id.clone(), RunKey::team(id), id.clone()),
        Target::Session(id) => {
            let group_id = edits
                .view()
                .read(|o| o.session(id).map(|s| s.group_id.clone()))
                .unwrap_or_default();
            let key = if reflects {
                RunKey::reflection(id)
            } else {
                RunKey::chat(id)
            };
            (id.clone(), key, group_id)
        }
    };
    // A relay's counterparts too (their drafts may wait), as a run alone showed them.
    let groups = engine
        .org()
        .read(|o| crate::headless_relay::with_counterparts(o, &group_id));
    let events = engine.watch_groups(groups);
    engine.set_scoped_approval(&scope, Some(tool_policy(request)));
    if profile.is_some() {
        engine.set_scoped_profile(&scope, profile);
    }
    // Its `--sandbox` applies to its members' processes and hooks (the host's own MCP servers
    // keep theirs).
    engine.set_scoped_sandbox(&scope, request.sandbox);
    let signalled = Arc::new(AtomicU8::new(0));
    let stopper = tokio::spawn(stop_on_request(
        engine.clone(),
        run_key.clone(),
        stop,
        Arc::clone(&signalled),
    ));
    let announce = Some(run_key);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let printer = tokio::spawn(print_events(
        events,
        done_rx,
        Printing {
            ndjson: request.events,
            out: out.clone(),
            approver,
            announce,
            color: Some(color),
        },
    ));

    let overrides = RunOverrides {
        mode: request.mode,
        max_iterations: request.max_iterations,
        model: request.model.clone(),
        relay_approval: request.approval,
        budget: request.budget,
        rate_limit_wait_secs: request.rate_limit_wait_secs,
        ..RunOverrides::default()
    };
    let result = match &target {
        Target::Group(id) if resume => engine.resume_cycle(id, overrides).await,
        Target::Group(id) => engine.run_group(id, request.prompt.clone(), overrides).await,
        Target::Session(id) if resume => match engine.start_reflection_resume(id) {
            Ok(run) => run.await,
            Err(e) => Err(e),
        },
        Target::Session(id) => match request.max_iterations {
            Some(n) if n > 1 => {
                let reflection = ReflectionRequest {
                    goal: request.prompt.clone(),
                    max_iterations: n,
                    evaluator_model: None,
                    model_override: request.model.clone(),
                };
                engine.reflect_session(id, reflection).await
            }
            _ => one_shot(engine, id, request).await,
        },
    };
    stopper.abort();
    let resumable = match &target {
        Target::Group(id) => edits.view().read(|o| {
            o.group(id)
                .filter(|g| g.state.interrupted(g.mode).is_some())
                .map(|g| format!("--group \"{}\"", sanitize::display(&g.name)))
        }),
        Target::Session(id) => edits.view().read(|o| {
            o.session(id)
                .filter(|s| s.reflection.is_some())
                .map(|s| format!("--session \"{}\"", sanitize::display(&s.name)))
        }),
    };
    engine.set_scoped_approval(&scope, None);
    engine.set_scoped_profile(&scope, None);
    engine.set_scoped_sandbox(&scope, None);
    // Off the worker: a flush waits for the syncs, the organization's save and telemetry's
    // export (seconds when a collector does not answer).
    let flushed = {
        let engine = engine.clone();
        match tokio::task::spawn_blocking(move || engine.flush()).await {
            Ok(flushed) => flushed.map_err(|e| e.to_string()),
            Err(e) => Err(format!("the final save did not finish: {e}")),
        }
    };
    // Every event of the run was sent before it returned: let the printer write them all.
    let _ = done_tx.send(());
    // Standard output gone (closed pipe, full disk): the run finished and saved; the exit code
    // says the output was lost.
    let stdout_lost = printer.await.unwrap_or(None);
    // After its last lines: how to go on with what was left.
    if let Some(which) = resumable.filter(|_| result.is_ok()) {
        out.note(format_args!(
            "huddle: the run is kept to be resumed: `huddle run {which} --resume` (or start over with `--discard-interrupted`)"
        ));
    }
    if let Err(e) = flushed {
        out.note(format_args!("huddle: could not save: {e}"));
    }
    let report = result.map_err(|e| match e {
        // A --mode the team cannot run in is a usage error.
        EngineError::NotRunnable { .. } if request.mode.is_some() => usage(e.to_string()),
        // Refused before it started: the run's settings are at fault.
        EngineError::UnpricedModels { .. } => usage(e.to_string()),
        e => other(e.to_string()),
    })?;
    if report.simulated {
        out.note(format_args!(
            "huddle: note: these answers are SIMULATED by the offline sim provider, not a real model"
        ));
    }
    // Said once: a run whose summary (printed as progress) already names the failure is not
    // reported twice.
    if let Some(why) = report
        .failed
        .as_ref()
        .filter(|why| request.events || !report.summary.contains(why.as_str()))
    {
        out.note(format_args!("huddle: the run failed: {}", sanitize::display(why)));
    }
    if !request.events
        && !report.final_text.is_empty()
        && let Err(e) = out.print(&format!("{}\n", sanitize::display(report.final_text.trim_end())))
    {
        if let OutputError::Failed(_) = e {
            out.note(format_args!("huddle: {e} (the run's result is saved)"));
        }
        return Ok(e.exit_code());
    }
    if let Some(e) = stdout_lost {
        // A closed pipe is not worth a message (as for every command); a full disk is.
        if let OutputError::Failed(_) = e {
            out.note(format_args!("huddle: {e} (the run's result is saved)"));
        }
        return Ok(e.exit_code());
    }
    match signalled.load(Ordering::SeqCst) {
        0 => match host_signal(engine.interrupt_reason())
            .filter(|_| report.outcome == CycleOutcome::Cancelled)
        {
            // The host it ran in was stopped by a signal: as that signal ends a run.
            Some((signal, name)) => {
                out.note(format_args!("huddle: the huddle host was stopped ({name})"));
                Ok(128 + signal)
            }
            None => Ok(exit_code(&report)),
        },
        // Stopped from outside: 128 + the signal, as shells report it.
        signal => Ok(128 + signal),
    }
}

/// The signal that stopped the whole engine, by its number and name, from why it was
/// interrupted (`SIGTERM to the huddle host`): the host got it (a logout, `systemctl stop`).
fn host_signal(reason: Option<String>) -> Option<(u8, &'static str)> {
    let reason = reason?;
    [(15, "SIGTERM"), (2, "SIGINT"), (1, "SIGHUP")]
        .into_iter()
        .find(|(_, name)| reason.starts_with(name))
}

/// A team that runs now (in the huddle the run was handed to) is neither run again, nor resumed,
/// nor its cycle discarded: `huddle run` says it runs, and how to follow or stop it.
fn refuse_running(engine: &Engine, group_id: &str) -> Result<(), RunFailure> {
    if !engine.is_running(&RunKey::team(group_id)) {
        return Ok(());
    }
    let name = engine
        .org()
        .read(|o| o.group(group_id).map(|g| g.name.clone()))
        .unwrap_or_default();
    Err(other(running_message(&name)))
}

/// What `huddle run --group X` says when X runs already (started by another front end of the
/// host, or in the TUI): exit 1.
pub fn running_message(group: &str) -> String {
    let g = sanitize::display(group);
    format!(
        "group `{g}` is running: follow it with `huddle attach \"{g}\"` (or select it in the TUI, where a message sent to it is queued for the run), or stop it with `huddle stop \"{g}\"` (in the TUI: the stop key, Ctrl-X unless `keys:` says otherwise) and run it again"
    )
}

/// Whether to resume the group's interrupted run; refuses to start a new run over one (that
/// would throw away what it did) unless told to discard it.
fn interrupted_cycle(edits: &Edits, group_id: &str, request: &RunRequest) -> Result<bool, RunFailure> {
    let (name, interrupted) = edits.view().read(|o| {
        let g = o.group(group_id);
        let name = g.map(|g| g.name.clone()).unwrap_or_default();
        (name, g.and_then(|g| g.state.interrupted(g.mode)))
    });
    let target = Interrupting {
        flag: "group",
        name: &name,
        kind: "run",
    };
    decide_resume(request, target, interrupted, || {
        edits.discard_interrupted(group_id)
    })
}

/// [`interrupted_cycle`] for a session's reflection.
fn interrupted_reflection(edits: &Edits, session_id: &str, request: &RunRequest) -> Result<bool, RunFailure> {
    let (name, interrupted) = edits.view().read(|o| {
        let s = o.session(session_id);
        let name = s.map(|s| s.name.clone()).unwrap_or_default();
        (
            name,
            s.and_then(|s| s.reflection.as_ref().map(|r| r.interrupted())),
        )
    });
    let target = Interrupting {
        flag: "session",
        name: &name,
        kind: "reflection",
    };
    decide_resume(request, target, interrupted, || {
        edits.discard_reflection(session_id)
    })
}

/// What may have an interrupted run: a group (`--group`, a run) or a session (`--session`, a
/// reflection), by name.
struct Interrupting<'a> {
    flag: &'static str,
    name: &'a str,
    kind: &'static str,
}

/// Resume (`--resume`), start over (`--discard-interrupted`: `discard` drops it), or refuse to
/// start over what was interrupted, saying how to resume it.
fn decide_resume(
    request: &RunRequest,
    target: Interrupting<'_>,
    interrupted: Option<crate::model::Interrupted>,
    discard: impl FnOnce() -> Result<(), crate::workspace::EditError>,
) -> Result<bool, RunFailure> {
    let Interrupting { flag, name, kind } = target;
    let name = sanitize::display(name);
    match (interrupted, request.resume, request.discard_interrupted) {
        (None, true, _) => Err(usage(format!(
            "{flag} `{name}` has no interrupted {kind} to resume"
        ))),
        (Some(_), true, _) => Ok(true),
        (Some(i), false, false) if request.over_mcp => Err(usage(format!(
            "{flag} `{name}` has an interrupted {kind}: {what} on \"{goal}\"; resume it by calling run_team with {flag} \"{name}\" and resume: true (it goes on {resumes}), or start over with discard_interrupted: true",
            what = i.what(),
            goal = first_line(&i.goal, 80),
            resumes = i.resumes(),
        ))),
        (Some(i), false, false) => Err(usage(format!(
            "{flag} `{name}` has an interrupted {kind}: {what} on \"{goal}\"; resume it with `huddle run --{flag} \"{name}\" --resume` (it goes on {resumes}), or start over with `--discard-interrupted`",
            what = i.what(),
            goal = first_line(&i.goal, 80),
            resumes = i.resumes(),
        ))),
        (Some(_), false, true) => {
            discard().map_err(|e| other(e.to_string()))?;
            Ok(false)
        }
        (None, false, _) => Ok(false),
    }
}

/// Stops the run when the front end that started it asks (its Ctrl-C, SIGTERM, SIGHUP) or goes
/// away: the run belongs to the command that started it.
async fn stop_on_request(
    engine: Engine,
    run_key: RunKey,
    stop: tokio::sync::oneshot::Receiver<u8>,
    signalled: Arc<AtomicU8>,
) {
    // Gone without a word (killed): as a hang-up.
    let signal = stop.await.unwrap_or(1);
    signalled.store(signal, Ordering::SeqCst);
    // As a signal ends a local run: a reflect cycle stays resumable.
    match &run_key {
        RunKey::Chat { session_id } => {
            engine.stop_session(session_id);
        }
        key => {
            let why = match signal {
                2 => "Ctrl-C in the huddle run that started it",
                15 => "SIGTERM to the huddle run that started it",
                _ => "the front end that started it went away",
            };
            engine.interrupt_run_because(key, Some(why));
        }
    }
}

async fn one_shot(engine: &Engine, session_id: &str, request: &RunRequest) -> Result<RunReport, EngineError> {
    let started = std::time::Instant::now();
    let result = engine
        .ask(session_id, request.prompt.clone(), request.model.clone())
        .await?;
    let outcome = if result.cancelled() {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    Ok(RunReport {
        outcome,
        iterations: 1,
        final_text: result.text.clone(),
        summary: String::new(),
        usage: result.usage.unwrap_or_default(),
        cost: crate::model::Cost::of_turn(result.cost_usd),
        duration: started.elapsed(),
        simulated: result.simulated,
        failed: if result.success || result.cancelled() {
            None
        } else {
            result.error.clone()
        },
    })
}

/// The front end that asked for a run, as choosing its target needs it.
struct Asked<'a> {
    out: &'a RunOutput,
    /// Its standard input and error are a terminal.
    on_terminal: bool,
    /// Its configuration's providers and prices (`None`: the engine's own).
    profile: Option<&'a crate::engine::Profile>,
}

fn choose_target(
    paths: &Paths,
    config: &Config,
    edits: &Edits,
    engine: &Engine,
    request: &RunRequest,
    asked: &Asked<'_>,
) -> Result<Target, RunFailure> {
    let (out, on_terminal) = (asked.out, asked.on_terminal);
    if let Some(name) = &request.preset {
        let catalog = Catalog::load(paths, config, Some(&request.repo));
        for e in &catalog.errors {
            out.note(format_args!("huddle: warning: {e}"));
        }
        let Some(preset) = catalog.find(name) else {
            let known: Vec<&str> = catalog.presets.iter().map(|p| p.name.as_str()).collect();
            return Err(usage(format!(
                "no preset named `{name}` (available: {})",
                known.join(", ")
            )));
        };
        for w in &preset.warnings {
            out.note(format_args!("huddle: warning: {}", sanitize::display(w)));
        }
        // A relay that could not run here is refused before its team is made.
        crate::headless_relay::check_preset(
            preset,
            request.mode,
            request.approval,
            request.approve,
            on_terminal,
        )
        .map_err(usage)?;
        // A cost budget over models without a price is refused before the team is made.
        let budget = request.budget.or(preset.budget()).or(config.budget);
        let models = match &request.model {
            Some(model) => vec![model.clone()],
            None => crate::presets::models::preset_models(preset, config),
        };
        let models: Vec<&str> = models.iter().map(String::as_str).collect();
        engine
            .check_cost_budget(asked.profile, &preset.name, &budget, &models)
            .map_err(|e| usage(e.to_string()))?;
        let strategy = request.worktrees.unwrap_or(preset.worktrees);
        if !strategy.is_shared() {
            out.note(format_args!(
                "huddle: making the team's git worktrees ({strategy}) under {}",
                paths.worktrees_dir().display()
            ));
        }
        // Blocking (git, the organization's save): `execute` calls this on the blocking pool.
        return edits
            .create_headless_team(preset, strategy)
            .map(Target::Group)
            .map_err(|e| {
                let hint = if strategy.is_shared() {
                    String::new()
                } else {
                    " (or run it without worktrees: --worktrees shared)".to_string()
                };
                usage(format!("cannot create team `{}`: {e}{hint}", preset.name))
            });
    }
    let org = edits.view();
    if let Some(name) = &request.session {
        return org
            .read(|o| o.session_by_name(name).map(|s| s.id.clone()))
            .map(Target::Session)
            .ok_or_else(|| usage(format!("no session named `{}`", sanitize::display(name))));
    }
    if let Some(name) = &request.group {
        return org
            .read(|o| o.group_by_name(name).map(|g| g.id.clone()))
            .inspect(|id| edits.touch_headless(id))
            .map(Target::Group)
            .ok_or_else(|| {
                let known = org.read(|o| o.groups.iter().map(|g| g.name.clone()).collect::<Vec<_>>());
                usage(format!("no group named `{name}` (groups: {})", known.join(", ")))
            });
    }
    // A quick question to one plain session.
    let model = request.model.clone().unwrap_or_else(|| config.default_model());
    Ok(Target::Session(edits.create_run_session(&model)))
}

/// How a run's events are printed, and to whom.
struct Printing {
    ndjson: bool,
    out: RunOutput,
    approver: crate::headless_relay::Approver,
    /// A remote front end is told the id of the run under this key when it starts.
    announce: Option<RunKey>,
    /// Whether progress lines are coloured (`None`: as this process's standard error allows).
    color: Option<bool>,
}

/// Prints events as NDJSON on stdout, or as human progress on stderr, until `done` says the run
/// is over and everything queued has been printed. The first failure to write standard output,
/// if any (nothing more is written to it after one).
async fn print_events(
    mut events: mpsc::UnboundedReceiver<EngineEvent>,
    mut done: tokio::sync::oneshot::Receiver<()>,
    printing: Printing,
) -> Option<OutputError> {
    let Printing {
        ndjson,
        out,
        approver,
        mut announce,
        color,
    } = printing;
    // Colour only on a terminal that wants it (this process's, or the front end's).
    let color =
        color.unwrap_or_else(|| std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let mut lost: Option<OutputError> = None;
    // How each group names its members (`<members slug>-<member>`), read once.
    let mut named: std::collections::HashMap<String, Names> = std::collections::HashMap::new();
    let mut names = |event: &EngineEvent| -> Names {
        named
            .entry(event.group_id.to_string())
            .or_insert_with(|| {
                approver
                    .engine
                    .org()
                    .read(|o| Names::for_group(o, &event.group_id, &event.group))
            })
            .clone()
    };
    let mut print = |event: &EngineEvent, lost: &mut Option<OutputError>| {
        if lost.is_none() {
            *lost = print_event(event, &names(event), ndjson, color, &out).err();
        }
    };
    // Taken as they wait (see `async_runtime::RECEIVE_BATCH`).
    let mut batch = Vec::new();
    // What a batch still held when `done` came during a question: printed after the loop.
    let mut rest: Vec<EngineEvent> = Vec::new();
    'events: loop {
        let taken = tokio::select! {
            biased;
            taken = events.recv_many(&mut batch, crate::async_runtime::RECEIVE_BATCH) => taken,
            _ = &mut done => break,
        };
        if taken == 0 {
            break;
        }
        let mut left = batch.drain(..);
        while let Some(event) = left.next() {
            if let (EventKind::RunStarted { key }, Some(run_id)) = (&event.kind, &event.run_id)
                && announce.as_ref() == Some(key)
            {
                announce = None;
                out.tell(crate::cli::OutputLine::Started {
                    run_id: run_id.to_string(),
                    group_id: event.group_id.to_string(),
                    group: event.group.to_string(),
                });
            }
            // Whoever reads the printed end and then the run's file finds the end there (a
            // disk that hangs holds this up a few seconds at most).
            if let EventKind::RunEnded { .. } = &event.kind {
                let written = approver.engine.run_files_written();
                let _ = tokio::time::timeout(crate::store::WRITTEN_WAIT, written).await;
            }
            print(&event, &mut lost);
            // `--approve`: a draft waiting for a person is asked about here (the run ending,
            // e.g. on Ctrl-C, ends the question).
            if let EventKind::RelayDraft { waiting: true, .. } = &event.kind {
                tokio::select! {
                    _ = approver.answer(&event) => {}
                    _ = &mut done => {
                        rest.extend(left);
                        break 'events;
                    }
                }
            }
        }
    }
    // After `done`, drain without waiting.
    for event in rest {
        print(&event, &mut lost);
    }
    while let Ok(event) = events.try_recv() {
        print(&event, &mut lost);
    }
    lost
}

/// Prints one event; an error when standard output could not be written. (`huddle attach`
/// prints what it follows with it too.)
pub fn print_event(
    event: &EngineEvent,
    names: &Names,
    ndjson: bool,
    color: bool,
    out: &RunOutput,
) -> Result<(), OutputError> {
    if ndjson {
        if event.kind.is_streaming() {
            return Ok(());
        }
        // String fields are model and tool output: cleaned like the plain output.
        let raw = event.to_ndjson();
        return out.print(&format!("{}\n", sanitize::json_line(&raw)));
    }
    if let Some(line) = progress(event, names) {
        let text = sanitize::display(&line.text).into_owned();
        let colour = match line.tone {
            Tone::Heading => "\x1b[1m",
            Tone::Warn => "\x1b[33m",
            Tone::Bad => "\x1b[31m",
            Tone::Info | Tone::Good => "",
        };
        if color && !colour.is_empty() {
            out.note(format_args!("{colour}{text}\x1b[0m"));
        } else {
            out.note(format_args!("{text}"));
        }
    }
    Ok(())
}

/// One human line for an event (None for events not worth a line): [`describe`]'s words, laid
/// out for a log.
pub fn progress_line(event: &EngineEvent) -> Option<String> {
    progress(event, &Names::of_group(&event.group)).map(|l| l.text)
}

/// [`progress_line`] with its tone (the colour on a terminal), member names read with `names`.
fn progress(event: &EngineEvent, names: &Names) -> Option<Line> {
    // Said elsewhere here: a run's end (the summary and the exit code say it; only what it
    // spent is a line), a draft that waits (asked about on the terminal); an orchestrator's
    // dispatching and collecting are its executions' lines.
    if matches!(
        event.kind,
        EventKind::RunEnded { totals: None, .. }
            | EventKind::RunEnded { outcome: None, .. }
            | EventKind::RelayDraft { .. }
            | EventKind::Phase {
                phase: Phase::Dispatch | Phase::Collect,
                ..
            }
    ) {
        return None;
    }
    let Line { text, tone } = describe_as(&event.kind, event.execution.as_ref(), names)?;
    let text = crate::text::cap_chars(&text, crate::describe::LINE_MAX);
    let text = match &event.kind {
        EventKind::CycleStarted { .. } => format!("huddle: `{}`: {text}", event.group),
        EventKind::IterationStarted { .. } | EventKind::CyclePaused | EventKind::CycleResumed => {
            format!("── {text}")
        }
        EventKind::RelayState { .. } => text,
        EventKind::CycleFinished { summary, .. } => format!("── {text}\n{}", summary.trim_end()),
        EventKind::RunEnded { .. } => format!("── {text}"),
        EventKind::ExecutionStarted { .. } | EventKind::ExecutionRunning => format!("   ⇢ {text}"),
        EventKind::ExecutionFinished { .. } => format!("   ⇠ {text}"),
        EventKind::ToolResult { .. } => format!("     {text}"),
        _ => format!("   {text}"),
    };
    Some(Line { text, tone })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;
    use std::time::Duration;

    #[test]
    fn a_run_stopped_with_its_host_ends_as_the_hosts_signal() {
        assert_eq!(
            host_signal(Some("SIGTERM to the huddle host".into())),
            Some((15, "SIGTERM"))
        );
        assert_eq!(
            host_signal(Some("SIGHUP to the huddle host".into())),
            Some((1, "SIGHUP"))
        );
        assert_eq!(host_signal(Some("something else".into())), None);
        assert_eq!(host_signal(None), None);
    }

    fn report(outcome: CycleOutcome) -> RunReport {
        RunReport {
            outcome,
            iterations: 1,
            final_text: String::new(),
            summary: String::new(),
            usage: Usage::default(),
            cost: crate::model::Cost::default(),
            duration: Duration::ZERO,
            simulated: false,
            failed: None,
        }
    }

    #[test]
    fn exit_codes_follow_the_spec() {
        let codes: Vec<u8> = [
            CycleOutcome::GoalMet,
            CycleOutcome::Completed,
            CycleOutcome::MaxIterations,
            CycleOutcome::Stalled,
            CycleOutcome::ErrorBudget,
            CycleOutcome::Cancelled,
            CycleOutcome::BudgetExhausted,
            CycleOutcome::Failed,
        ]
        .into_iter()
        .map(|o| exit_code(&report(o)))
        .collect();
        assert_eq!(codes, [0, 0, 3, 4, 5, 130, 6, 1]);
        let mut unsaved = report(CycleOutcome::SaveFailed);
        unsaved.failed = Some("could not save".into());
        assert_eq!(
            exit_code(&unsaved),
            7,
            "a save failure wins over the generic failure"
        );
        let mut failed = report(CycleOutcome::Completed);
        failed.failed = Some("x".into());
        assert_eq!(exit_code(&failed), 1);
    }

    #[test]
    fn progress_lines_are_short_and_skip_noise() {
        let event = |kind| EngineEvent {
            group_id: "gid".into(),
            group: "g".into(),
            run_id: None,
            execution: None,
            kind,
        };
        let line = progress_line(&event(EventKind::Assignment {
            iteration: 1,
            worker: "w".into(),
            session_id: "s".into(),
            task: format!("\n  {}\nsecond", "x".repeat(300)),
        }))
        .unwrap();
        assert!(line.starts_with("   → w: xxx"), "{line}");
        assert!(line.ends_with("xxx…"), "one line, cut: {line}");
        assert!(
            line.chars().count() <= 3 + crate::describe::LINE_MAX + 1,
            "{line}"
        );
        assert!(
            progress_line(&event(EventKind::Delta {
                session_id: "s".into(),
                session: "s".into(),
                generation: 1,
                text: "t".into()
            }))
            .is_none()
        );
    }
}
