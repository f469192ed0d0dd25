//! The UI task: one loop that owns the [`App`], selecting over terminal events, engine events,
//! command results and frame requests; and the executor that turns [`Command`]s into engine
//! calls and background file work.

use std::future::Future;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use tokio::sync::mpsc;

use super::app::App;
use super::command::{AppEvent, Command};
use super::frame::FrameRequester;
use super::terminal::TerminalGuard;
use crate::config::{Config, Paths};
use crate::engine::{Engine, EngineError, ReflectionRequest, RunOverrides};
use crate::presets::Catalog;
use crate::store::RunFiles;
use crate::tools::ApprovalPolicy;
use crate::workspace::{Edits, Exporter, Workspace, forecast_runs, read_run};

/// Frame interval while something is busy (spinner, running worker durations).
const BUSY_FRAME: Duration = Duration::from_millis(120);
/// How often the selected team's worktree statuses are refreshed without a reason to.
const WORKTREE_REFRESH: Duration = Duration::from_secs(5);
/// Engine events handled before the loop looks at the terminal again.
const EVENT_BATCH: usize = 512;

/// Opens the interactive UI on `repo` and runs until the user quits.
pub async fn run(paths: &Paths, repo: PathBuf) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("the interactive UI needs a terminal; use `huddle run` in scripts");
    }
    let config = Config::load(paths)?.config;
    if super::front::as_front_end() {
        return run_on_host(paths, config, repo).await;
    }
    let Workspace {
        edits,
        engine,
        events: engine_events,
        runs,
        notices,
        lock: _lock,
        ..
    } = open_owning(paths, &config, &repo).await?;
    let notices: Vec<String> = notices
        .iter()
        .filter(|n| n.is_serious())
        .map(ToString::to_string)
        .collect();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let exporter = Exporter::new(edits.view(), paths.clone(), repo.clone());
    // The other front ends (`huddle run`, `ps`, `attach`, `stop`, `mcp`) reach this workspace
    // through the host's socket while the TUI owns it; the TUI sees every event too.
    let (_host, engine_events) = match crate::host::server::bind(&paths.run_socket()) {
        Ok(listener) => {
            let (local, events) = mpsc::unbounded_channel();
            let parts = crate::host::server::HostParts {
                paths: paths.clone(),
                config: config.clone(),
                repo: repo.clone(),
                edits: edits.clone(),
                engine: engine.clone(),
                runs: runs.clone(),
                notices: Vec::new(),
                embedded: true,
            };
            let server = crate::host::server::serve_on(listener, parts, engine_events, Some(local));
            (Some(server), events)
        }
        Err(e) => {
            tracing::warn!(error = %e, "other front ends cannot reach this huddle");
            (None, engine_events)
        }
    };
    // Headers show the sandbox once bwrap was probed (once, off the UI thread).
    tokio::spawn({
        let engine = engine.clone();
        async move { engine.probe_sandbox().await }
    });
    let (app, initial) = App::new(edits.clone(), config.clone(), repo.clone(), notices);
    let (app_tx, app_rx) = mpsc::unbounded_channel();
    let executor = Executor::new(
        Backend::Local(engine.clone()),
        edits,
        exporter,
        runs,
        paths,
        config,
        repo,
        app_tx,
    );
    let result = in_terminal(app, initial, executor, engine_events, app_rx, no_color)
        .await
        .map(|_| ());
    // Everything said so far goes to disk; running cycles stay "interrupted" and resumable.
    let flushing = engine.clone();
    let flushed = tokio::task::spawn_blocking(move || flushing.flush()).await;
    if let Ok(Err(e)) = flushed {
        tracing::error!(error = %e, "could not save on exit");
        crate::cli::note(format_args!("huddle: could not save on exit: {e}"));
    }
    // MCP server processes end with huddle (bounded: one that will not stop is killed when the
    // runtime goes).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), engine.shutdown_tools()).await;
    result
}

/// The TUI as a front end of the data dir's host (started when none runs): the runs are the
/// host's and go on when the TUI quits (unless it is asked to stop them).
async fn run_on_host(paths: &Paths, config: Config, repo: PathBuf) -> anyhow::Result<()> {
    let opened = super::front::open(paths, &config, &repo).await?;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let exporter = Exporter::new(opened.edits.view(), paths.clone(), repo.clone());
    let live: Vec<crate::engine::events::RunKey> = opened.live.iter().map(|r| r.key.clone()).collect();
    let (app, initial) = App::new_beside(
        opened.edits.clone(),
        config.clone(),
        repo.clone(),
        opened.notices,
        &live,
    );
    let (app_tx, app_rx) = mpsc::unbounded_channel();
    let (events_tx, engine_events) = mpsc::unbounded_channel();
    let running = opened.start.start(events_tx, app_tx.clone());
    let link = opened.link;
    let keeper = opened.edits.clone();
    let runs = RunFiles::new(paths.runs_dir());
    let executor = Executor::new(
        Backend::Host(link.clone()),
        opened.edits,
        exporter,
        runs,
        paths,
        config,
        repo,
        app_tx,
    );
    let result = in_terminal(app, initial, executor, engine_events, app_rx, no_color).await;
    // A stop asked on the way out, and what this TUI showed (for the next start), reach the
    // host before the TUI goes.
    keeper.keep_ui();
    running.close(link).await;
    // Runs that go on in the background are said, once the terminal is the shell's again.
    if let Ok(going) = &result
        && let Some(line) = going_on(*going)
    {
        crate::cli::note(format_args!("{line}"));
    }
    result.map(|_| ())
}

/// The line a TUI of the host leaves on the terminal when runs go on after it quit.
pub(super) fn going_on(runs: usize) -> Option<String> {
    match runs {
        0 => None,
        1 => Some("huddle: 1 run goes on in the huddle host (`huddle ps` lists it)".into()),
        n => Some(format!(
            "huddle: {n} runs go on in the huddle host (`huddle ps` lists them)"
        )),
    }
}

/// Opens the data dir for this TUI to own. A host serving it (started by `huddle run`, say) is
/// asked to exit once idle, and its lock waited for; with runs going there, the TUI says so.
async fn open_owning(paths: &Paths, config: &Config, repo: &Path) -> anyhow::Result<Workspace> {
    use crate::store::StoreError;
    use crate::workspace::OpenError;
    match Workspace::open(paths, config, repo.to_path_buf(), ApprovalPolicy::Ask) {
        Err(OpenError::Store(StoreError::AlreadyRunning { .. })) => {}
        other => return Ok(other?),
    }
    let busy = crate::host_cli::ask_host_to_quit(paths, repo)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !busy.is_empty() {
        anyhow::bail!(
            "the huddle host in the background still runs: {}. Follow them with `huddle attach`, stop them with `huddle stop`, or wait until they end (`huddle ps`)",
            busy.join(", ")
        );
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match Workspace::open(paths, config, repo.to_path_buf(), ApprovalPolicy::Ask) {
            Err(OpenError::Store(StoreError::AlreadyRunning { .. }))
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            other => return Ok(other?),
        }
    }
}

/// Takes the terminal, runs the event loop, gives the terminal back (also on an error). How
/// many runs go on in the host after the TUI quit.
async fn in_terminal(
    app: App,
    initial: Vec<Command>,
    executor: Executor,
    engine_events: mpsc::UnboundedReceiver<crate::engine::events::EngineEvent>,
    app_rx: mpsc::UnboundedReceiver<AppEvent>,
    no_color: bool,
) -> anyhow::Result<usize> {
    let mut guard = TerminalGuard::enter().context("cannot set up the terminal")?;
    let result = event_loop(
        &mut guard,
        app,
        initial,
        executor,
        engine_events,
        app_rx,
        no_color,
    )
    .await;
    drop(guard);
    result
}

async fn event_loop(
    guard: &mut TerminalGuard,
    mut app: App,
    initial: Vec<Command>,
    mut executor: Executor,
    mut engine_events: mpsc::UnboundedReceiver<crate::engine::events::EngineEvent>,
    mut app_rx: mpsc::UnboundedReceiver<AppEvent>,
    no_color: bool,
) -> anyhow::Result<usize> {
    let app_tx = executor.app_tx.clone();
    let saver = super::input_saver::InputSaver::start(executor.input_files.clone(), move |error| {
        Executor::send(
            &app_tx,
            AppEvent::Refused {
                title: "Drafts not saved".into(),
                error,
            },
        )
    });
    executor.input_saver = Some(saver.clone());
    let (frames, mut draws) = FrameRequester::start();
    let terminal_kind = super::notify::TerminalKind::detect(|k| std::env::var(k).ok());
    let mut terminal_events = EventStream::new();
    // The selected team's worktrees are looked at again every few seconds (not on frames).
    let mut worktree_ticks = tokio::time::interval(WORKTREE_REFRESH);
    worktree_ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    worktree_ticks.tick().await;
    executor.execute_all(initial);
    frames.schedule_frame();
    loop {
        let commands = tokio::select! {
            event = terminal_events.next() => match event {
                Some(Ok(Event::Key(key))) => app.handle_key(key),
                Some(Ok(Event::Paste(text))) => {
                    app.handle_paste(&text);
                    Vec::new()
                }
                Some(Ok(Event::Mouse(m))) => app.handle_mouse(m),
                Some(Ok(Event::FocusGained)) => {
                    // Another program may have drawn over us: repaint every cell.
                    super::terminal::repaint(&mut guard.terminal)?;
                    Vec::new()
                }
                Some(Ok(_)) => Vec::new(),
                Some(Err(e)) => return Err(e).context("cannot read the terminal"),
                None => return Ok(app.left_going()),
            },
            Some(event) = engine_events.recv() => {
                let mut commands = app.handle_app_event(AppEvent::Engine(event));
                for _ in 0..EVENT_BATCH {
                    match engine_events.try_recv() {
                        Ok(event) => commands.extend(app.handle_app_event(AppEvent::Engine(event))),
                        Err(_) => break,
                    }
                }
                commands
            },
            Some(event) = app_rx.recv() => {
                let mut commands = Vec::new();
                // The link reached a host again: what the connection before sent is taken
                // before the runs are set aside (the new one's come after).
                if matches!(event, AppEvent::Reconnected(..)) {
                    while let Ok(event) = engine_events.try_recv() {
                        commands.extend(app.handle_app_event(AppEvent::Engine(event)));
                    }
                }
                commands.extend(app.handle_app_event(event));
                commands
            },
            _ = worktree_ticks.tick() => {
                let commands = app.handle_app_event(AppEvent::WorktreeTick);
                if commands.is_empty() {
                    continue;
                }
                commands
            },
            Some(()) = draws.recv() => {
                guard.terminal.draw(|f| super::render::draw(f, &mut app, no_color))?;
                if app.anything_running() {
                    app.tick = app.tick.wrapping_add(1);
                    frames.schedule_frame_in(BUSY_FRAME);
                }
                continue;
            }
        };
        let mut commands = run_terminal_commands(guard, &mut app, commands, &terminal_kind);
        while let Some(i) = commands
            .iter()
            .position(|c| matches!(c, Command::OpenEditor { .. }))
        {
            if let Command::OpenEditor { target, text } = commands.remove(i) {
                let result = run_editor(guard, &mut terminal_events, app.mouse_capture, text).await;
                commands.extend(app.handle_app_event(AppEvent::Edited { target, result }));
            }
        }
        if let Some((drafts, history)) = app.composer.unsaved() {
            commands.push(Command::SaveInputs { drafts, history });
        }
        app.note_sent(&commands);
        executor.execute_all(commands);
        if app.should_quit {
            // What was typed and not sent is on disk before huddle goes.
            if let Some((drafts, history)) = app.composer.all_inputs() {
                saver.flush(drafts, history).await;
            }
            return Ok(app.left_going());
        }
        frames.schedule_frame();
    }
}

/// Hands the terminal to `$VISUAL` / `$EDITOR` for `text` and takes it back. The event stream is
/// replaced first, so that its reader thread stops and never takes the editor's keys.
async fn run_editor(
    guard: &mut TerminalGuard,
    events: &mut EventStream,
    mouse_capture: bool,
    text: String,
) -> Result<String, String> {
    let editor = super::editor::editor_command(|name| std::env::var(name).ok())?;
    *events = EventStream::new();
    super::terminal::restore();
    let result = tokio::task::spawn_blocking(move || super::editor::edit_blocking(&editor, &text))
        .await
        .unwrap_or_else(|e| Err(format!("the editor task failed: {e}; the text is kept")));
    if let Err(e) = super::terminal::resume(&mut guard.terminal, mouse_capture) {
        tracing::warn!(error = %e, "cannot take the terminal back after the editor");
    }
    result
}

/// Carries out the commands that talk to the terminal itself; returns the others.
fn run_terminal_commands(
    guard: &mut TerminalGuard,
    app: &mut App,
    commands: Vec<Command>,
    terminal_kind: &super::notify::TerminalKind,
) -> Vec<Command> {
    let mut rest = Vec::with_capacity(commands.len());
    for command in commands {
        let result = match &command {
            Command::CopyToClipboard { text } => {
                super::terminal::copy_to_clipboard(guard.terminal.backend_mut(), text)
            }
            Command::SetMouseCapture(on) => {
                super::terminal::set_mouse_capture(guard.terminal.backend_mut(), *on)
            }
            Command::Notify(n) => {
                let bytes = super::notify::sequence(app.config.notify, n, *terminal_kind);
                let out = guard.terminal.backend_mut();
                std::io::Write::write_all(out, bytes.as_bytes()).and_then(|()| std::io::Write::flush(out))
            }
            _ => {
                rest.push(command);
                continue;
            }
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "cannot write to the terminal");
            app.flash(format!("cannot write to the terminal: {e}"), true);
        }
    }
    rest
}

/// Where engine calls go: this process's engine (the TUI owns the data dir), or the host.
enum Backend {
    Local(Engine),
    Host(super::front::HostLink),
}

/// Carries out commands: engine calls now, slow work in tasks that report back.
struct Executor {
    backend: Backend,
    edits: Edits,
    exporter: Exporter,
    runs: RunFiles,
    paths: Paths,
    config: Config,
    repo: PathBuf,
    app_tx: mpsc::UnboundedSender<AppEvent>,
    input_files: crate::store::InputFiles,
    /// Started with the event loop.
    input_saver: Option<super::input_saver::InputSaver>,
}

impl Executor {
    #[allow(clippy::too_many_arguments)]
    fn new(
        backend: Backend,
        edits: Edits,
        exporter: Exporter,
        runs: RunFiles,
        paths: &Paths,
        config: Config,
        repo: PathBuf,
        app_tx: mpsc::UnboundedSender<AppEvent>,
    ) -> Executor {
        Executor {
            backend,
            edits,
            exporter,
            runs,
            paths: paths.clone(),
            config,
            repo,
            app_tx,
            input_files: crate::store::InputFiles::new(&paths.data_dir),
            input_saver: None,
        }
    }

    fn execute_all(&self, commands: Vec<Command>) {
        for c in commands {
            self.execute(c);
        }
    }

    fn send(tx: &mpsc::UnboundedSender<AppEvent>, event: AppEvent) {
        if tx.send(event).is_err() {
            tracing::debug!("the UI is gone; dropping a result");
        }
    }

    /// Reports a command the engine refused to start.
    fn refused(&self, title: &str, error: impl ToString) {
        Self::send(
            &self.app_tx,
            AppEvent::Refused {
                title: title.to_string(),
                error: error.to_string(),
            },
        );
    }

    /// Runs a registered run's future in the background; its end arrives as `run_ended`.
    fn spawn<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) {
        tokio::spawn(async move {
            future.await;
        });
    }

    /// Carries out an engine command with this process's engine; any other is given back.
    fn local(&self, engine: &Engine, command: Command) -> Option<Command> {
        let tx = self.app_tx.clone();
        match command {
            Command::Chat { session_id, prompt } => match engine.start_chat(&session_id, prompt, None) {
                Ok(turn) => Self::spawn(turn),
                Err(e) => self.refused("Not sent", e),
            },
            Command::RunGroup { group_id, prompt } => {
                match engine.start_group(&group_id, prompt.clone(), RunOverrides::default()) {
                    Ok(run) => Self::spawn(run),
                    // Started meanwhile (two sends before the first run was announced): the
                    // text goes to the run in progress.
                    Err(EngineError::AlreadyRunning(_))
                        if engine.queue_message(&group_id, prompt.clone()) => {}
                    Err(e) => self.refused("Run not started", e),
                }
            }
            Command::ResumeCycle { group_id } => {
                match engine.start_resume(&group_id, RunOverrides::default()) {
                    Ok(run) => Self::spawn(run),
                    Err(e) => self.refused("Not resumed", e),
                }
            }
            Command::ResumeReflection { session_id } => match engine.start_reflection_resume(&session_id) {
                Ok(run) => Self::spawn(run),
                Err(e) => self.refused("Not resumed", e),
            },
            Command::NoteMember { session_id, text } => {
                if let Err(e) = engine.note_member(&session_id, text) {
                    self.refused("Note not left", e);
                }
            }
            Command::QueueMessage { group_id, text } => {
                if !engine.queue_message(&group_id, text.clone()) {
                    // The run ended in between: the message starts a new one.
                    return self.local(
                        engine,
                        Command::RunGroup {
                            group_id,
                            prompt: text,
                        },
                    );
                }
            }
            Command::Pause { key } => {
                engine.pause(&key);
            }
            Command::Resume { key } => {
                engine.resume(&key);
            }
            Command::Stop { key } => {
                engine.stop(&key);
            }
            Command::StopSession { session_id } => {
                engine.stop_session(&session_id);
            }
            Command::AnswerApproval {
                approval_id,
                decision,
            } => {
                if !engine.answer_approval(approval_id, decision) {
                    // Settled meanwhile (its run stopped): its decided event says so.
                    tracing::debug!(approval_id, "approval answered after it was settled");
                }
            }
            Command::AnswerRelay { group_id, answer } => {
                if !engine.answer_relay(&group_id, answer) {
                    // Its run stopped, or it was answered already: its events say so.
                    tracing::debug!(group = %group_id, "relay answered while it waited for nothing");
                }
            }
            Command::ReflectSession {
                session_id,
                goal,
                max_iterations,
            } => {
                let request = ReflectionRequest {
                    goal,
                    max_iterations,
                    evaluator_model: None,
                    model_override: None,
                };
                match engine.start_reflection(&session_id, request) {
                    Ok(run) => Self::spawn(run),
                    Err(e) => self.refused("Reflection not started", e),
                }
            }
            Command::LoadTranscript { session_id } => {
                let engine = engine.clone();
                tokio::task::spawn_blocking(move || {
                    let result = engine.load_transcript(&session_id).map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::TranscriptLoaded { session_id, result });
                });
            }
            Command::Attached { attachments, send } => match *send {
                Command::Chat { session_id, prompt } => {
                    match engine.start_chat_with(&session_id, prompt, None, attachments) {
                        Ok(turn) => Self::spawn(turn),
                        Err(e) => self.refused("Not sent", e),
                    }
                }
                Command::RunGroup { group_id, prompt } => {
                    let overrides = RunOverrides {
                        attachments,
                        ..RunOverrides::default()
                    };
                    match engine.start_group(&group_id, prompt, overrides) {
                        Ok(run) => Self::spawn(run),
                        Err(e) => self.refused("Run not started", e),
                    }
                }
                other => return self.local(engine, other),
            },
            other => return Some(other),
        }
        None
    }

    fn execute(&self, command: Command) {
        let command = match &self.backend {
            Backend::Local(engine) => self.local(engine, command),
            Backend::Host(link) => link.carry(command),
        };
        let Some(command) = command else { return };
        let tx = self.app_tx.clone();
        match command {
            Command::LoadRun { group_id, which } => {
                let runs = self.runs.clone();
                tokio::task::spawn_blocking(move || {
                    let result = read_run(&runs, &group_id, &which);
                    Self::send(&tx, AppEvent::RunLoaded { group_id, result });
                });
            }
            Command::LoadForecast { group_id } => {
                let (runs, org) = (self.runs.clone(), self.edits.view());
                tokio::task::spawn_blocking(move || {
                    let org = org.snapshot();
                    let (forecast, basis) = forecast_runs(&runs, &org, Some(&group_id), None);
                    Self::send(
                        &tx,
                        AppEvent::ForecastLoaded {
                            group_id,
                            forecast,
                            basis,
                        },
                    );
                });
            }
            Command::LoadCatalog => {
                let (paths, config, repo) = (self.paths.clone(), self.config.clone(), self.repo.clone());
                let (runs, org) = (self.runs.clone(), self.edits.view());
                tokio::task::spawn_blocking(move || {
                    let catalog = Catalog::load(&paths, &config, Some(&repo));
                    let keys: Vec<String> = catalog
                        .presets
                        .iter()
                        .map(crate::presets::instantiate::source_preset_of)
                        .collect();
                    Self::send(&tx, AppEvent::CatalogLoaded(Box::new(catalog)));
                    // Then what each preset's runs cost so far (the picker shows it once here).
                    let org = org.snapshot();
                    let forecasts = keys
                        .into_iter()
                        .map(|key| {
                            let forecast = forecast_runs(&runs, &org, None, Some(&key));
                            (key, forecast)
                        })
                        .collect();
                    Self::send(&tx, AppEvent::PresetForecasts(forecasts));
                });
            }
            Command::FindRepoFiles { working_dir } => {
                tokio::task::spawn_blocking(move || {
                    let found = crate::repo_context::found(&working_dir);
                    Self::send(&tx, AppEvent::RepoFilesFound { working_dir, found });
                });
            }
            Command::ReadAgentCard { provider } => {
                let Some(cfg) = self.config.providers.iter().find(|p| p.name == provider).cloned() else {
                    return;
                };
                let options = crate::providers::ProviderOptions {
                    read_timeout: std::time::Duration::from_secs(10),
                    ..crate::providers::ProviderOptions::from_config(&self.config)
                };
                tokio::spawn(async move {
                    let card = crate::providers::a2a::card_header(&cfg, options).await;
                    Self::send(&tx, AppEvent::AgentCardRead { provider, card });
                });
            }
            Command::PlanExport { group_id } => {
                let exporter = self.exporter.clone();
                tokio::task::spawn_blocking(move || {
                    let result = exporter.plan(&group_id);
                    Self::send(&tx, AppEvent::ExportPlanned { group_id, result });
                });
            }
            Command::ExportGroup { group_id, confirmed } => {
                let exporter = self.exporter.clone();
                tokio::task::spawn_blocking(move || {
                    let result = exporter.export(&group_id, confirmed);
                    Self::send(&tx, AppEvent::Exported { group_id, result });
                });
            }
            command @ (Command::RemoveFiles(_)
            | Command::CheckGit
            | Command::CreateTeam { .. }
            | Command::RefreshWorktrees { .. }
            | Command::LoadDiff { .. }
            | Command::PlanMerge { .. }
            | Command::Merge { .. }
            | Command::CheckDeleteRisk { .. }
            | Command::ForkSession { .. }) => {
                let (edits, repo) = (self.edits.clone(), self.repo.clone());
                let engine = match &self.backend {
                    Backend::Local(engine) => Some(engine.clone()),
                    // The host runs the hooks before it answers the edit.
                    Backend::Host(_) => None,
                };
                tokio::spawn(async move {
                    let done =
                        tokio::task::spawn_blocking(move || run_blocking(&edits, &repo, command)).await;
                    let Ok(Some(event)) = done else { return };
                    // A team made with worktrees: their hooks run before it is shown ready.
                    if let (AppEvent::TeamCreated { result: Ok(id), .. }, Some(engine)) = (&event, &engine) {
                        engine.worktree_created_hooks(id, None).await;
                    }
                    Self::send(&tx, event);
                });
            }
            Command::ListRepoFiles => {
                let repo = self.repo.clone();
                tokio::task::spawn_blocking(move || {
                    Self::send(&tx, AppEvent::RepoFiles(crate::attachments::list_files(&repo)));
                });
            }
            Command::ReadAttachment { name } => {
                let repo = self.repo.clone();
                tokio::task::spawn_blocking(move || {
                    let result = crate::attachments::read_file(&repo, &name).map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::AttachmentRead { name, result });
                });
            }
            Command::LoadInputs => {
                let files = self.input_files.clone();
                tokio::task::spawn_blocking(move || {
                    Self::send(&tx, AppEvent::InputsLoaded(files.load()));
                });
            }
            Command::SaveInputs { drafts, history } => {
                if let Some(saver) = &self.input_saver {
                    saver.save(drafts, history);
                }
            }
            // Carried out by the event loop (which owns the terminal), or by the backend.
            Command::CopyToClipboard { .. }
            | Command::SetMouseCapture(_)
            | Command::Notify(_)
            | Command::OpenEditor { .. }
            | Command::Quit
            | Command::Chat { .. }
            | Command::RunGroup { .. }
            | Command::ResumeCycle { .. }
            | Command::ResumeReflection { .. }
            | Command::NoteMember { .. }
            | Command::QueueMessage { .. }
            | Command::Pause { .. }
            | Command::Resume { .. }
            | Command::Stop { .. }
            | Command::StopSession { .. }
            | Command::AnswerApproval { .. }
            | Command::AnswerRelay { .. }
            | Command::ReflectSession { .. }
            | Command::LoadTranscript { .. }
            | Command::Attached { .. } => {}
        }
    }
}

/// Carries out a command that touches files or runs git (blocking: the runtime calls it on a
/// blocking thread) and returns what the app is told, if anything. Public so that tests run
/// exactly what the runtime runs, against a real repository.
pub fn run_blocking(edits: &Edits, repo: &Path, command: Command) -> Option<AppEvent> {
    Some(match command {
        Command::RemoveFiles(removal) => {
            let report = edits.remove_files(&removal);
            if removal.worktrees.is_empty() && report.unanswered.is_none() {
                return None;
            }
            AppEvent::FilesRemoved(report)
        }
        Command::CheckGit => AppEvent::GitChecked(
            crate::worktrees::repo_head(repo)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        ),
        Command::CreateTeam { preset, strategy } => AppEvent::TeamCreated {
            result: edits.create_team_with(&preset, strategy).map_err(|e| match e {
                // The host may still make it (its hooks may be slow): not said to be undone.
                crate::workspace::EditError::Unanswered(why) => {
                    format!("{why}\n{}", super::features::worktrees::MAY_APPEAR)
                }
                e => format!("{e}\nNothing was made."),
            }),
            preset: preset.name,
            warnings: preset.warnings,
        },
        Command::RefreshWorktrees { group_id } => AppEvent::WorktreeStatuses {
            statuses: edits.worktree_statuses(group_id.as_deref()),
            group_id,
        },
        Command::LoadDiff { request, worktrees } => AppEvent::DiffLoaded {
            request,
            diffs: worktrees
                .iter()
                .map(|w| crate::worktrees::diff(w).map_err(|e| e.to_string()))
                .collect(),
        },
        Command::PlanMerge { worktree } => AppEvent::MergePlanned {
            result: crate::worktrees::merge_plan(&worktree).map_err(|e| e.to_string()),
        },
        Command::Merge { plan, method } => AppEvent::Merged {
            branch: plan.worktree.branch.clone(),
            result: crate::worktrees::merge(&plan, method),
        },
        Command::CheckDeleteRisk { group_id } => AppEvent::DeleteRiskChecked {
            at_risk: edits.worktrees_at_risk(&group_id),
            group_id,
        },
        Command::ForkSession { session_id } => AppEvent::Forked {
            result: edits.fork_session(&session_id).map_err(|e| e.to_string()),
        },
        _ => return None,
    })
}
