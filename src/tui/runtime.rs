//! The UI task: one loop that owns the [`App`], selecting over terminal events, engine events,
//! command results and frame requests; and the executor that turns [`Command`]s into engine
//! calls and background file work.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::app::App;
use super::command::{AppEvent, Command, ExportOutcome, reflection_run_key};
use super::frame::FrameRequester;
use super::terminal::TerminalGuard;
use crate::config::{Config, Paths};
use crate::engine::{Engine, RunOverrides};
use crate::presets::Catalog;
use crate::presets::squad::{ExportError, export_group, export_group_confirmed, plan_export};
use crate::store::Transcripts;
use crate::workspace::Workspace;

/// Frame interval while something is busy (spinner, running worker durations).
const BUSY_FRAME: Duration = Duration::from_millis(120);
/// Engine events handled before the loop looks at the terminal again.
const EVENT_BATCH: usize = 512;

/// Opens the interactive UI on `repo` and runs until the user quits.
pub async fn run(paths: &Paths, repo: PathBuf) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("the interactive UI needs a terminal; use `huddle run` in scripts");
    }
    let config = Config::load(paths)?.config;
    let Workspace {
        org,
        engine,
        events: engine_events,
        notices,
        lock: _lock,
    } = Workspace::open(paths, &config)?;
    let notices: Vec<String> = notices
        .iter()
        .filter(|n| n.is_serious())
        .map(ToString::to_string)
        .collect();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let (app, initial) = App::new(org, config.clone(), repo.clone(), notices);
    let executor = Executor {
        engine: engine.clone(),
        paths: paths.clone(),
        config,
        repo,
        app_tx: mpsc::unbounded_channel().0,
        chats: ChatTokens::default(),
        shown_changes: ShownChanges::default(),
    };
    let mut guard = TerminalGuard::enter().context("cannot set up the terminal")?;
    let result = event_loop(&mut guard, app, initial, executor, engine_events, no_color).await;
    drop(guard);
    // Everything said so far goes to disk; running cycles stay "interrupted" and resumable.
    let flushed = tokio::task::spawn_blocking(move || engine.flush()).await;
    if let Ok(Err(e)) = flushed {
        tracing::error!(error = %e, "could not save on exit");
        eprintln!("huddle: could not save on exit: {e}");
    }
    result
}

async fn event_loop(
    guard: &mut TerminalGuard,
    mut app: App,
    initial: Vec<Command>,
    mut executor: Executor,
    mut engine_events: mpsc::UnboundedReceiver<crate::engine::events::EngineEvent>,
    no_color: bool,
) -> anyhow::Result<()> {
    let (app_tx, mut app_rx) = mpsc::unbounded_channel();
    executor.app_tx = app_tx;
    let (frames, mut draws) = FrameRequester::start();
    let mut terminal_events = EventStream::new();
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
                    guard.terminal.clear()?;
                    Vec::new()
                }
                Some(Ok(_)) => Vec::new(),
                Some(Err(e)) => return Err(e).context("cannot read the terminal"),
                None => return Ok(()),
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
            Some(event) = app_rx.recv() => app.handle_app_event(event),
            Some(()) = draws.recv() => {
                let size = guard.terminal.size()?;
                app.screen = ratatui::layout::Rect::new(0, 0, size.width, size.height);
                guard.terminal.draw(|f| super::render::draw(f, &app, no_color))?;
                if app.anything_running() {
                    app.tick = app.tick.wrapping_add(1);
                    frames.schedule_frame_in(BUSY_FRAME);
                }
                continue;
            }
        };
        let commands = run_terminal_commands(guard, &mut app, commands);
        executor.execute_all(commands);
        if app.should_quit {
            return Ok(());
        }
        frames.schedule_frame();
    }
}

/// Carries out the commands that talk to the terminal itself; returns the others.
fn run_terminal_commands(guard: &mut TerminalGuard, app: &mut App, commands: Vec<Command>) -> Vec<Command> {
    let mut rest = Vec::with_capacity(commands.len());
    for command in commands {
        let result = match &command {
            Command::CopyToClipboard { text } => {
                super::terminal::copy_to_clipboard(guard.terminal.backend_mut(), text)
            }
            Command::SetMouseCapture(on) => {
                super::terminal::set_mouse_capture(guard.terminal.backend_mut(), *on)
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

/// The cancellation tokens of the plain chat turns in flight, per session (a turn id each).
#[derive(Clone, Default)]
struct ChatTokens(Arc<Mutex<TokensBySession>>);

type TokensBySession = HashMap<String, Vec<(u64, CancellationToken)>>;

impl ChatTokens {
    fn with<R>(&self, f: impl FnOnce(&mut TokensBySession) -> R) -> R {
        let mut map = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut map)
    }

    fn start(&self, session_id: &str) -> (u64, CancellationToken) {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = CancellationToken::new();
        self.with(|m| {
            m.entry(session_id.to_string())
                .or_default()
                .push((id, token.clone()))
        });
        (id, token)
    }

    fn end(&self, session_id: &str, id: u64) {
        self.with(|m| {
            if let Some(list) = m.get_mut(session_id) {
                list.retain(|(i, _)| *i != id);
                if list.is_empty() {
                    m.remove(session_id);
                }
            }
        });
    }

    /// Cancels every chat turn of the session, running or queued.
    fn stop(&self, session_id: &str) {
        self.with(|m| {
            for (_, token) in m.get(session_id).into_iter().flatten() {
                token.cancel();
            }
        });
    }
}

/// Per group, the existing files a save as preset showed the user as replaced (the plan, or the
/// files a refused export named): a confirmed export may replace those and no others, so a file
/// that changed while the dialog was open is never replaced unseen.
#[derive(Clone, Default)]
struct ShownChanges(Arc<Mutex<HashMap<String, Vec<PathBuf>>>>);

impl ShownChanges {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Vec<PathBuf>>) -> R) -> R {
        let mut map = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut map)
    }

    /// Records that these files of the group were shown as replaced.
    fn add(&self, group_id: &str, files: &[PathBuf]) {
        self.with(|m| {
            let shown = m.entry(group_id.to_string()).or_default();
            for f in files {
                if !shown.contains(f) {
                    shown.push(f.clone());
                }
            }
        });
    }

    /// The files shown for the group, forgotten (a confirmation is used once).
    fn take(&self, group_id: &str) -> Vec<PathBuf> {
        self.with(|m| m.remove(group_id).unwrap_or_default())
    }
}

/// Carries out commands: engine calls now, slow work in tasks that report back.
struct Executor {
    engine: Engine,
    paths: Paths,
    config: Config,
    repo: PathBuf,
    app_tx: mpsc::UnboundedSender<AppEvent>,
    chats: ChatTokens,
    shown_changes: ShownChanges,
}

impl Executor {
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

    fn execute(&self, command: Command) {
        let tx = self.app_tx.clone();
        let engine = self.engine.clone();
        match command {
            Command::Chat { session_id, prompt } => {
                let chats = self.chats.clone();
                let (turn_id, cancel) = chats.start(&session_id);
                let reply = engine.turn(&session_id, prompt, cancel, None);
                tokio::spawn(async move {
                    let error = match reply.await {
                        Ok(result) if result.success || result.cancelled() => None,
                        Ok(result) => Some(result.error.unwrap_or_default()),
                        Err(_) => Some("the session stopped".to_string()),
                    };
                    chats.end(&session_id, turn_id);
                    Self::send(&tx, AppEvent::ChatEnded { session_id, error });
                });
            }
            Command::StopChat { session_id } => self.chats.stop(&session_id),
            Command::RunGroup { group_id, prompt } => {
                tokio::spawn(async move {
                    let result = engine.run_group(&group_id, prompt, RunOverrides::default()).await;
                    let result = result.map(Box::new).map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::RunEnded { group_id, result });
                });
            }
            Command::ResumeCycle { group_id } => {
                tokio::spawn(async move {
                    let result = engine.resume_cycle(&group_id, RunOverrides::default()).await;
                    let result = result.map(Box::new).map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::RunEnded { group_id, result });
                });
            }
            Command::QueueMessage { group_id, text } => {
                if !engine.queue_message(&group_id, text.clone()) {
                    // The run ended in between: the message starts a new one.
                    self.execute(Command::RunGroup {
                        group_id,
                        prompt: text,
                    });
                }
            }
            Command::Pause { group_id } => {
                engine.pause(&group_id);
            }
            Command::Resume { group_id } => {
                engine.resume(&group_id);
            }
            Command::Stop { group_id } => {
                engine.stop(&group_id);
            }
            Command::LoadTranscript { session_id } => {
                let transcripts = Transcripts::new(self.paths.sessions_dir());
                tokio::task::spawn_blocking(move || {
                    // Lines the engine queued must be on disk before reading.
                    let _ = engine.flush();
                    let result = transcripts.load(&session_id).map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::TranscriptLoaded { session_id, result });
                });
            }
            Command::LoadCatalog => {
                let (paths, config, repo) = (self.paths.clone(), self.config.clone(), self.repo.clone());
                tokio::task::spawn_blocking(move || {
                    let catalog = Catalog::load(&paths, &config, Some(&repo));
                    Self::send(&tx, AppEvent::CatalogLoaded(Box::new(catalog)));
                });
            }
            Command::PlanExport { group_id } => {
                let (paths, default_repo) = (self.paths.clone(), self.repo.clone());
                let shown = self.shown_changes.clone();
                tokio::task::spawn_blocking(move || {
                    let org = engine.org().snapshot();
                    let repo = org
                        .group(&group_id)
                        .and_then(|g| g.repo.clone())
                        .unwrap_or(default_repo);
                    // The same plan the export carries out: new files, and existing ones it changes.
                    let result = plan_export(&org, &group_id, &repo, &paths)
                        .map(|plan| {
                            // A new plan replaces what an earlier dialog showed.
                            shown.take(&group_id);
                            shown.add(&group_id, &plan.change);
                            let create = plan.create.iter().map(|f| (f.display().to_string(), false));
                            let change = plan.change.iter().map(|f| (f.display().to_string(), true));
                            create.chain(change).collect()
                        })
                        .map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::ExportPlanned { group_id, result });
                });
            }
            Command::ExportGroup { group_id, force } => {
                let (paths, default_repo) = (self.paths.clone(), self.repo.clone());
                let shown = self.shown_changes.clone();
                tokio::task::spawn_blocking(move || {
                    let org = engine.org().snapshot();
                    let repo = org
                        .group(&group_id)
                        .and_then(|g| g.repo.clone())
                        .unwrap_or(default_repo);
                    // Force means "as confirmed": only the files the user was shown are replaced.
                    let confirmed = if force { shown.take(&group_id) } else { Vec::new() };
                    let exported = if force {
                        export_group_confirmed(&org, &group_id, &repo, &paths, &confirmed)
                    } else {
                        export_group(&org, &group_id, &repo, &paths, false)
                    };
                    let result = match exported {
                        Ok(report) => {
                            let mut lines = report.lines();
                            lines.push(format!("preset {}", report.preset_file.display()));
                            Ok(lines.join("\n"))
                        }
                        Err(ExportError::WouldOverwrite { files } | ExportError::Unconfirmed { files }) => {
                            // The dialog that follows shows these; confirming it allows them
                            // (and still the ones confirmed before).
                            shown.add(&group_id, &confirmed);
                            shown.add(&group_id, &files);
                            Err(ExportOutcome::WouldOverwrite {
                                group_id,
                                files: files.iter().map(|f| f.display().to_string()).collect(),
                            })
                        }
                        Err(e) => Err(ExportOutcome::Failed(e.to_string())),
                    };
                    Self::send(&tx, AppEvent::Exported(result));
                });
            }
            Command::RemoveTranscripts { session_ids } => {
                let transcripts = Transcripts::new(self.paths.sessions_dir());
                tokio::task::spawn_blocking(move || {
                    for id in session_ids {
                        if let Err(e) = transcripts.remove(&id) {
                            tracing::warn!(session = %id, error = %e, "cannot delete a transcript");
                        }
                    }
                });
            }
            Command::ReflectSession {
                session_id,
                goal,
                max_iterations,
            } => {
                tokio::spawn(async move {
                    let result = engine
                        .reflect_session(&session_id, goal, max_iterations, None, None)
                        .await
                        .map(Box::new)
                        .map_err(|e| e.to_string());
                    Self::send(&tx, AppEvent::ReflectionEnded { session_id, result });
                });
            }
            Command::PauseReflection { session_id } => {
                engine.pause(&reflection_run_key(&session_id));
            }
            Command::ResumeReflection { session_id } => {
                engine.resume(&reflection_run_key(&session_id));
            }
            Command::StopReflection { session_id } => {
                engine.stop(&reflection_run_key(&session_id));
            }
            // Carried out by the event loop, which owns the terminal.
            Command::CopyToClipboard { .. } | Command::SetMouseCapture(_) | Command::Quit => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_changes_are_per_group_and_used_once() {
        let shown = ShownChanges::default();
        shown.add("g", &[PathBuf::from("a"), PathBuf::from("b")]);
        shown.add("g", &[PathBuf::from("b"), PathBuf::from("c")]);
        shown.add("h", &[PathBuf::from("x")]);
        assert_eq!(
            shown.take("g"),
            [PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("c")]
        );
        assert!(shown.take("g").is_empty());
        assert_eq!(shown.take("h"), [PathBuf::from("x")]);
    }
}
