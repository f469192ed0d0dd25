//! The persisted run timeline: a team's run on the real workspace (sim provider) is written to
//! `runs/<group-id>/<run-id>.jsonl` without streaming events; after a restart the TUI rebuilds
//! the same step-by-step timeline from that file, and earlier runs can be browsed.

use std::path::Path;

use huddle::config::{Config, Paths};
use huddle::engine::RunOverrides;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::presets::Catalog;
use huddle::tools::ApprovalPolicy;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::workspace::{WhichRun, Workspace, read_run};
use tokio::sync::mpsc::UnboundedReceiver;

use super::tui_support::{ch, render, screen_text};

const TEAM: &str = "Code Review Team";

pub fn config() -> Config {
    Config::parse("default_model: sim/demo\n", Path::new("config.yaml")).expect("config")
}

pub fn open(home: &Path) -> Workspace {
    Workspace::open(
        &Paths::single(home.to_path_buf()),
        &config(),
        home.join("repo"),
        ApprovalPolicy::Ask,
    )
    .expect("workspace")
}

/// Every event the engine has sent so far.
fn drain(events: &mut UnboundedReceiver<EngineEvent>) -> Vec<EngineEvent> {
    std::iter::from_fn(|| events.try_recv().ok()).collect()
}

/// The app's timeline entries for the team, as text.
fn timeline(app: &App, group_id: &str) -> Vec<String> {
    app.shown_cycle(group_id)
        .map(|c| c.timeline.iter().map(|e| e.text.clone()).collect())
        .unwrap_or_default()
}

/// Runs the team once with `prompt`; returns its events.
async fn run_team(ws: &mut Workspace, group_id: &str, prompt: &str) -> Vec<EngineEvent> {
    let overrides = RunOverrides {
        max_iterations: Some(2),
        ..RunOverrides::default()
    };
    ws.engine
        .run_group(group_id, prompt.into(), overrides)
        .await
        .expect("the run");
    ws.engine.flush().expect("flush");
    drain(&mut ws.events)
}

#[tokio::test]
async fn after_a_restart_the_last_runs_timeline_is_on_screen_and_earlier_runs_can_be_browsed() {
    let home = tempfile::tempdir().expect("home");
    let paths = Paths::single(home.path().to_path_buf());
    let preset = Catalog::load(&paths, &config(), None)
        .find(TEAM)
        .expect("built-in preset")
        .clone();

    // First life: two runs, the second watched live by an app fed the engine's events.
    let mut ws = open(home.path());
    let group_id = ws.edits.create_team(&preset);
    run_team(&mut ws, &group_id, "Review the login handler").await;
    let (mut live, _) = App::new(ws.edits.clone(), config(), home.path().join("repo"), Vec::new());
    let events = run_team(&mut ws, &group_id, "Review the logout handler").await;
    for e in &events {
        live.handle_app_event(AppEvent::Engine(e.clone()));
    }
    let live_timeline = timeline(&live, &group_id);
    assert!(
        live_timeline.iter().any(|l| l.contains("iteration 1"))
            && live_timeline.iter().any(|l| l.contains('✓')),
        "{live_timeline:?}"
    );

    // The run files: one per run, no streaming events, the run's own id on every line.
    let runs = ws.runs.list(&group_id).expect("list");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let second = read_run(&ws.runs, &group_id, &WhichRun::Newest)
        .expect("read")
        .expect("a run");
    assert_eq!(second.skipped, 0);
    assert!(second.records.iter().all(|r| !r.event.kind.is_streaming()));
    assert!(
        second
            .records
            .iter()
            .all(|r| r.event.run_id.as_deref() == Some(second.run_id.as_str()))
    );
    let kinds: Vec<&str> = second.records.iter().map(|r| r.event.kind.name()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_ended"));
    for needed in [
        "cycle_started",
        "assignment",
        "worker_finished",
        "evaluation",
        "cycle_finished",
    ] {
        assert!(kinds.contains(&needed), "{needed} in {kinds:?}");
    }
    drop(live);
    drop(ws);

    // Second life: the team is selected; its newest run file is asked for and replayed.
    let ws = open(home.path());
    let (mut app, commands) = App::new(ws.edits.clone(), config(), home.path().join("repo"), Vec::new());
    let wanted = Command::LoadRun {
        group_id: group_id.clone(),
        which: WhichRun::Newest,
    };
    let mut commands = commands;
    // Not selected at start: selecting it asks.
    while app.selected_group_id().as_deref() != Some(group_id.as_str()) {
        commands.extend(app.handle_key(ch('j')));
    }
    assert!(commands.contains(&wanted), "{commands:?}");
    let loaded = read_run(&ws.runs, &group_id, &WhichRun::Newest).expect("read");
    app.handle_app_event(AppEvent::RunLoaded {
        group_id: group_id.clone(),
        result: Ok(loaded),
    });
    assert_eq!(
        timeline(&app, &group_id),
        live_timeline,
        "the replay is the live timeline"
    );
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(screen.contains("iteration 1"), "{screen}");

    // `[` goes back to the first run, `]` returns to the newest.
    let commands = app.handle_key(ch('['));
    assert_eq!(
        commands,
        vec![Command::LoadRun {
            group_id: group_id.clone(),
            which: WhichRun::At(0),
        }]
    );
    let first = read_run(&ws.runs, &group_id, &WhichRun::At(0)).expect("read");
    app.handle_app_event(AppEvent::RunLoaded {
        group_id: group_id.clone(),
        result: Ok(first),
    });
    assert!(app.team_panel.shown_runs.contains_key(&group_id));
    assert_ne!(timeline(&app, &group_id), live_timeline, "the first run is shown");
    assert!(app.handle_key(ch('[')).is_empty(), "nothing before the first run");
    assert!(app.handle_key(ch(']')).is_empty());
    assert!(!app.team_panel.shown_runs.contains_key(&group_id));
    assert_eq!(timeline(&app, &group_id), live_timeline);
}

#[tokio::test]
async fn old_run_files_beyond_the_configured_count_are_pruned() {
    let home = tempfile::tempdir().expect("home");
    let paths = Paths::single(home.path().to_path_buf());
    let mut config = config();
    config.runs_kept = 2;
    let preset = Catalog::load(&paths, &config, None)
        .find("Research Panel")
        .expect("preset")
        .clone();
    let mut ws =
        Workspace::open(&paths, &config, home.path().join("repo"), ApprovalPolicy::Ask).expect("workspace");
    let group_id = ws.edits.create_team(&preset);
    for k in 0..4 {
        ws.engine
            .run_group(&group_id, format!("question {k}"), RunOverrides::default())
            .await
            .expect("run");
    }
    ws.engine.flush().expect("flush");
    let started: Vec<String> = drain(&mut ws.events)
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::RunStarted { .. }))
        .filter_map(|e| e.run_id.map(|r| r.to_string()))
        .collect();
    assert_eq!(started.len(), 4);
    // The two newest runs are kept, the older ones removed.
    assert_eq!(ws.runs.list(&group_id).expect("list"), started[2..]);
}
