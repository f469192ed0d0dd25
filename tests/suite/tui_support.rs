//! Shared helpers for the TUI tests: an app over an in-memory organization, key events, and a
//! render into ratatui's TestBackend.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use huddle::config::Config;
use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::model::{CycleOutcome, Message, ToolCall};
use huddle::model::{Organization, reconcile};
use huddle::presets::builtin::load_builtins;
use huddle::presets::{Catalog, create_team_group};
use huddle::store::{LoadedTranscript, OrgHandle};
use huddle::tools::Decision;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::tui::dialogs::Dialog;
use huddle::workspace::Edits;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

pub fn config() -> Config {
    Config::parse("default_model: sim/demo\n", Path::new("config.yaml")).expect("config")
}

pub fn repo() -> PathBuf {
    PathBuf::from("/work/demo-repo")
}

/// An app over `org` (edits detached: nothing runs), and its first commands.
/// Moves down the sidebar (`j`) until a session is selected; `commands` (the app's first)
/// with what the moves asked for.
pub fn select_a_session(app: &mut App, mut commands: Vec<Command>) -> Vec<Command> {
    for _ in 0..5 {
        if app.selected_session_id().is_some() {
            break;
        }
        commands.extend(app.handle_key(ch('j')));
    }
    assert!(app.selected_session_id().is_some(), "no session to select");
    commands
}

pub fn new_app(org: Organization, config: Config) -> (App, Vec<Command>) {
    let edits = Edits::detached(OrgHandle::in_memory(org), config.clone(), repo());
    App::new(edits, config, repo(), Vec::new())
}

/// An app over an organization that has only the default group.
pub fn empty_app() -> App {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    new_app(org, config()).0
}

pub fn builtin_catalog() -> Catalog {
    Catalog::from_tiers(load_builtins(&config()).0, Vec::new(), Vec::new())
}

/// An app with a team made from the built-in preset `preset`, selected (its group row).
pub fn app_with_team(preset: &str) -> (App, String) {
    app_with_team_and_config(preset, config())
}

/// [`app_with_team`] with `config` (its `keys:`, say).
pub fn app_with_team_and_config(preset: &str, config: Config) -> (App, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let catalog = builtin_catalog();
    let p = catalog.find(preset).expect("preset").clone();
    let id = create_team_group(&mut org, &p, &config, Some(&repo()));
    org.ui.selected_group = Some(id.clone());
    let (mut app, _) = new_app(org, config);
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    (app, id)
}

/// An engine event of `group_id` (its current name for display) in run `run_id`, as the engine
/// sends it.
pub fn engine_event(app: &mut App, group_id: &str, run_id: Option<&str>, kind: EventKind) -> Vec<Command> {
    tagged_event(app, group_id, run_id, None, kind)
}

/// [`engine_event`] of execution `execution` (modes `dispatch` and `team`).
pub fn tagged_event(
    app: &mut App,
    group_id: &str,
    run_id: Option<&str>,
    execution: Option<huddle::engine::events::ExecutionTag>,
    kind: EventKind,
) -> Vec<Command> {
    let group = app
        .org
        .read(|o| o.group(group_id).map(|g| g.name.clone()))
        .unwrap_or_default();
    app.handle_app_event(AppEvent::Engine(EngineEvent {
        group_id: group_id.into(),
        group: group.into(),
        run_id: run_id.map(Into::into),
        execution,
        kind,
    }))
}

/// The group a run key belongs to.
pub fn group_of(app: &App, key: &RunKey) -> String {
    match key {
        RunKey::Team { group_id } => group_id.clone(),
        RunKey::Chat { session_id } | RunKey::Reflection { session_id } => app
            .org
            .read(|o| o.session(session_id).map(|s| s.group_id.clone()))
            .unwrap_or_default(),
    }
}

/// What the engine announces when it registers a run; returns the run's id.
pub fn run_started(app: &mut App, key: RunKey) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let run_id = format!("run-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let group_id = group_of(app, &key);
    engine_event(app, &group_id, Some(&run_id), EventKind::RunStarted { key });
    run_id
}

/// A team run of `mode` announced as the engine does (`run_started`, `cycle_started` of one
/// iteration); returns the run's id.
pub fn start_cycle(app: &mut App, group_id: &str, mode: huddle::model::Mode) -> String {
    let run = run_started(app, RunKey::team(group_id));
    engine_event(
        app,
        group_id,
        Some(&run),
        EventKind::CycleStarted {
            mode,
            max_iterations: 1,
        },
    );
    run
}

/// What the engine announces when a run ends.
pub fn run_ended(app: &mut App, run_id: &str, key: RunKey, failed: Option<&str>) -> Vec<Command> {
    let group_id = group_of(app, &key);
    engine_event(
        app,
        &group_id,
        Some(run_id),
        EventKind::RunEnded {
            key,
            outcome: Some(CycleOutcome::Completed),
            iterations: 1,
            failed: failed.map(str::to_string),
            totals: None,
        },
    )
}

/// The id of the session named `name`.
pub fn session_id(app: &App, name: &str) -> String {
    app.org
        .read(|o| o.session_by_name(name).map(|s| s.id.clone()))
        .unwrap_or_else(|| panic!("no session `{name}`"))
}

/// The group id and the name of a session (what events about it carry).
pub fn session_names(app: &App, session_id: &str) -> (String, String) {
    app.org
        .read(|o| {
            o.session(session_id)
                .map(|s| (s.group_id.clone(), s.name.clone()))
        })
        .unwrap_or_default()
}

/// An engine event about session `session_id` in run `run_id`: `kind` is made from the
/// session's name.
pub fn session_event(
    app: &mut App,
    run_id: &str,
    session_id: &str,
    kind: impl FnOnce(String) -> EventKind,
) -> Vec<Command> {
    let (group_id, session) = session_names(app, session_id);
    engine_event(app, &group_id, Some(run_id), kind(session))
}

/// A model's call of a tool in turn `generation`; `step` (the stored assistant message) rides
/// on the round's first call.
pub fn tool_call(
    app: &mut App,
    run_id: &str,
    session_id: &str,
    generation: u64,
    call: &ToolCall,
    step: Option<&Message>,
) -> Vec<Command> {
    session_event(app, run_id, session_id, |session| EventKind::ToolCall {
        session_id: session_id.into(),
        session,
        generation,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        step: step.map(|m| std::sync::Arc::new(m.clone())),
    })
}

/// A call waits for approval as request `approval_id` (its name `<server>__<tool>` split).
pub fn approval_requested(
    app: &mut App,
    run_id: &str,
    session_id: &str,
    approval_id: u64,
    call: &ToolCall,
) -> Vec<Command> {
    let (server, tool) = call.name.split_once("__").unwrap_or(("", &call.name));
    let (server, tool) = (server.to_string(), tool.to_string());
    session_event(app, run_id, session_id, |session| {
        EventKind::ToolApprovalRequested {
            session_id: session_id.into(),
            session,
            approval_id,
            call_id: call.id.clone(),
            server,
            tool,
            arguments: call.arguments.clone(),
            reason: None,
            options: Vec::new(),
        }
    })
}

/// How request `approval_id` was settled (`reason`: not by the user).
pub fn approval_decided(
    app: &mut App,
    run_id: &str,
    session_id: &str,
    approval_id: u64,
    call_id: &str,
    decision: Decision,
    reason: Option<&str>,
) -> Vec<Command> {
    session_event(app, run_id, session_id, |session| {
        EventKind::ToolApprovalDecided {
            session_id: session_id.into(),
            session,
            approval_id,
            call_id: call_id.into(),
            decision,
            reason: reason.map(str::to_string),
        }
    })
}

/// A call's end, with its stored `tool` message `result`.
pub fn tool_result(
    app: &mut App,
    run_id: &str,
    session_id: &str,
    generation: u64,
    result: &Message,
) -> Vec<Command> {
    let info = result.tool_result.clone().expect("a tool message");
    session_event(app, run_id, session_id, |session| EventKind::ToolResult {
        session_id: session_id.into(),
        session,
        generation,
        call_id: info.call_id.clone(),
        name: info.name.clone(),
        ok: !info.is_error,
        duration_ms: info.duration_ms,
        size: info.size,
        first_line: result.text.lines().next().unwrap_or_default().to_string(),
        message: Some(std::sync::Arc::new(result.clone())),
    })
}

/// A session's turn as the engine reports it: started (with the stored prompt), streamed,
/// finished (with the stored answer).
pub fn turn(app: &mut App, run_id: &str, session_id: &str, generation: u64, prompt: &str, answer: &str) {
    let (group_id, session) = session_names(app, session_id);
    engine_event(
        app,
        &group_id,
        Some(run_id),
        EventKind::TurnStarted {
            session_id: session_id.into(),
            session: session.as_str().into(),
            generation,
            prompt: Some(std::sync::Arc::new(Message::user(prompt))),
        },
    );
    engine_event(
        app,
        &group_id,
        Some(run_id),
        EventKind::Delta {
            session_id: session_id.into(),
            session: session.as_str().into(),
            generation,
            text: answer.into(),
        },
    );
    engine_event(
        app,
        &group_id,
        Some(run_id),
        EventKind::TurnFinished {
            session_id: session_id.into(),
            session: session.into(),
            generation,
            success: true,
            interrupted: false,
            duration_ms: 5,
            usage: None,
            error: None,
            message: Some(std::sync::Arc::new(Message::assistant(answer))),
            cost_usd: None,
        },
    );
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn ch(c: char) -> KeyEvent {
    let m = if c.is_ascii_uppercase() {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    KeyEvent::new(KeyCode::Char(c), m)
}

pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub fn alt(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::ALT)
}

/// Types text key by key; returns every command produced.
pub fn type_text(app: &mut App, text: &str) -> Vec<Command> {
    text.chars().flat_map(|c| app.handle_key(ch(c))).collect()
}

/// Sends a prompt to the selected team and announces its run, as the engine would; returns
/// the run's id.
pub fn start_run(app: &mut App, group_id: &str) -> String {
    app.handle_key(ch('i'));
    type_text(app, "review this");
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(key(KeyCode::Esc));
    run_started(app, RunKey::team(group_id))
}

/// The title of the notice on top, if a notice is on top.
pub fn notice_title(app: &App) -> Option<String> {
    match app.dialogs.last() {
        Some(Dialog::Notice(n)) => Some(n.title.clone()),
        _ => None,
    }
}

/// An app with a plain session `scratch` selected, its transcript `messages`, focus on the
/// sidebar.
pub fn app_with_session(messages: Vec<Message>) -> (App, String) {
    app_with_named_session(config(), "scratch", messages)
}

/// [`app_with_session`] with `config`, the session named `name` (made with the new-session key).
pub fn app_with_named_session(config: Config, name: &str, messages: Vec<Message>) -> (App, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let (mut app, _) = new_app(org, config);
    app.handle_key(ch('N'));
    for _ in 0..20 {
        app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut app, name);
    app.handle_key(key(KeyCode::Enter));
    let id = app.selected_session_id().expect("the new session is selected");
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: id.clone(),
        result: Ok(LoadedTranscript {
            messages,
            warnings: Vec::new(),
        }),
    });
    app.handle_key(key(KeyCode::Esc));
    (app, id)
}

/// The id of the default group.
pub fn default_group(app: &App) -> String {
    app.org
        .read(|o| o.default_group().map(|g| g.id.clone()))
        .unwrap_or_default()
}

/// Draws one frame of `app` on a `width` x `height` screen (which also records its layout).
pub fn render(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal
        .draw(|f| huddle::tui::render::draw(f, app, false))
        .expect("draw");
    terminal
}

pub fn screen_text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// Snapshots live in `tests/snapshots/`.
#[macro_export]
macro_rules! tui_snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}
