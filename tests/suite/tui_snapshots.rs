//! Whole-screen snapshots of the TUI on ratatui's TestBackend (tests/snapshots/*.snap).

use crate::tui_snapshot;
use huddle::engine::events::{EventKind, Phase, RunKey};
use huddle::model::{CycleOutcome, Message, Mode, Trend, Usage};
use huddle::tui::App;
use huddle::tui::action::Action;
use huddle::tui::command::AppEvent;

use super::tui_support::{app_with_team, empty_app, engine_event, render, screen_text};

const TEAM: &str = "Code Review Team";

/// Feeds events of the team's run `run` (announced first) to the app.
fn feed(app: &mut App, group_id: &str, kinds: Vec<EventKind>) {
    for kind in kinds {
        engine_event(app, group_id, Some("run-1"), kind);
    }
}

/// A member's session id by name.
fn sid(app: &App, name: &str) -> String {
    app.org
        .read(|o| o.session_by_name(name).map(|s| s.id.clone()))
        .unwrap_or_else(|| panic!("no session {name}"))
}

fn first_iteration(app: &App, group_id: &str) -> Vec<EventKind> {
    let w = |n: &str| format!("code-review-team-{n}");
    let id = |n: &str| sid(app, &w(n));
    vec![
        EventKind::RunStarted {
            key: RunKey::team(group_id),
        },
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 4,
        },
        EventKind::IterationStarted {
            iteration: 1,
            max_iterations: 4,
        },
        EventKind::Phase {
            iteration: 1,
            phase: Phase::Plan,
        },
        EventKind::Phase {
            iteration: 1,
            phase: Phase::Dispatch,
        },
        EventKind::Assignment {
            iteration: 1,
            worker: w("correctness"),
            session_id: id("correctness"),
            task: "Check the edge cases".into(),
        },
        EventKind::Assignment {
            iteration: 1,
            worker: w("security"),
            session_id: id("security"),
            task: "Look for injection".into(),
        },
        EventKind::Assignment {
            iteration: 1,
            worker: w("maintainability"),
            session_id: id("maintainability"),
            task: "Judge the structure".into(),
        },
        EventKind::Phase {
            iteration: 1,
            phase: Phase::Collect,
        },
        EventKind::TurnFinished {
            session_id: id("correctness").into(),
            session: w("correctness").into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 1200,
            usage: Some(Usage::new(300, 120)),
            error: None,
            message: None,
            // As the engine prices the simulator: free.
            cost_usd: Some(0.0),
        },
        EventKind::WorkerFinished {
            iteration: 1,
            worker: w("correctness"),
            session_id: id("correctness"),
            success: true,
            duration_ms: 1200,
        },
        EventKind::WorkerFinished {
            iteration: 1,
            worker: w("security"),
            session_id: id("security"),
            success: false,
            duration_ms: 600_000,
        },
    ]
}

#[test]
fn empty_main_screen_80x24() {
    let mut app = empty_app();
    let t = render(&mut app, 80, 24);
    tui_snapshot!("empty_main_screen_80x24", screen_text(&t));
}

#[test]
fn team_mid_cycle() {
    let (mut app, id) = app_with_team(TEAM);
    let events = first_iteration(&app, &id);
    feed(&mut app, &id, events);
    feed(
        &mut app,
        &id,
        vec![EventKind::Adjustment {
            text: "code-review-team-security failed while others succeeded".into(),
        }],
    );
    let t = render(&mut app, 120, 32);
    tui_snapshot!("team_mid_cycle_120x32", screen_text(&t));
}

/// Wide terminals are used: the sidebar and the panel grow, a long task wraps, and after a
/// rename the members' rows still show their roles.
#[test]
fn team_on_wide_screens_after_a_rename() {
    let (mut app, id) = app_with_team(TEAM);
    let mut events = first_iteration(&app, &id);
    let long_task = "Check every edge case of the login handler: empty passwords, unicode user names, expired tokens, clock skew between servers, replayed requests and what the handler logs when any of them fails";
    if let Some(EventKind::Assignment { task, .. }) = events
        .iter_mut()
        .find(|e| matches!(e, EventKind::Assignment { .. }))
    {
        *task = long_task.into();
    }
    feed(&mut app, &id, events);
    app.perform(Action::Rename);
    for _ in 0..30 {
        app.handle_key(super::tui_support::key(crossterm::event::KeyCode::Backspace));
    }
    super::tui_support::type_text(&mut app, "Reviewers");
    app.handle_key(super::tui_support::key(crossterm::event::KeyCode::Enter));
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let t = render(&mut app, w, h);
        let text = screen_text(&t);
        assert!(text.contains("Reviewers"), "{text}");
        if w == 200 {
            assert!(
                text.contains("· security") && text.contains("· correctness"),
                "{text}"
            );
            assert!(
                text.contains("logs when any of them fails"),
                "the task wraps: {text}"
            );
        }
        tui_snapshot!(format!("team_renamed_{w}x{h}"), text);
    }
}

#[test]
fn team_paused() {
    let (mut app, id) = app_with_team(TEAM);
    let events = first_iteration(&app, &id);
    feed(&mut app, &id, events);
    feed(
        &mut app,
        &id,
        vec![
            EventKind::Phase {
                iteration: 1,
                phase: Phase::Synthesize,
            },
            EventKind::CyclePaused,
        ],
    );
    let t = render(&mut app, 100, 30);
    let text = screen_text(&t);
    assert!(text.contains("paused"), "{text}");
    tui_snapshot!("team_paused_100x30", text);
}

#[test]
fn team_finished_with_scores() {
    let (mut app, id) = app_with_team(TEAM);
    let events = first_iteration(&app, &id);
    feed(&mut app, &id, events);
    let mut events = Vec::new();
    for (i, score, trend) in [
        (1, 0.55, None),
        (2, 0.72, Some(Trend::Improving)),
        (3, 0.93, Some(Trend::Improving)),
    ] {
        if i > 1 {
            events.push(EventKind::IterationStarted {
                iteration: i,
                max_iterations: 4,
            });
        }
        events.push(EventKind::Evaluation {
            iteration: i,
            score,
            rationale: format!("round {i} is better"),
            trend,
            usage: Default::default(),
            duration_ms: 0,
        });
    }
    events.push(EventKind::StallWarning {
        iteration: 2,
        consecutive: 1,
        similarity: 0.93,
    });
    events.push(EventKind::CycleFinished {
        outcome: CycleOutcome::GoalMet,
        iterations: 3,
        max_iterations: 4,
        mode: Some(Mode::OrchestratorReflect),
        summary: "done".into(),
    });
    events.push(EventKind::RunEnded {
        key: RunKey::team(&id),
        outcome: Some(CycleOutcome::GoalMet),
        iterations: 3,
        failed: None,
        totals: None,
    });
    feed(&mut app, &id, events);
    let t = render(&mut app, 120, 32);
    let text = screen_text(&t);
    assert!(text.contains("goal_met"), "{text}");
    assert!(text.contains("0.93"), "{text}");
    tui_snapshot!("team_finished_120x32", text);
}

#[test]
fn team_at_80x24_keeps_every_pane() {
    let (mut app, id) = app_with_team(TEAM);
    let events = first_iteration(&app, &id);
    feed(&mut app, &id, events);
    let t = render(&mut app, 80, 24);
    let text = screen_text(&t);
    assert!(text.contains("Cycle"), "the panel shows at 80x24:\n{text}");
    tui_snapshot!("team_mid_cycle_80x24", text);
    // Below 80x24 the panel folds away.
    let t = render(&mut app, 79, 24);
    assert!(!screen_text(&t).contains("Cycle ·"));
}

#[test]
fn preset_picker() {
    let (mut app, _) = app_with_team(TEAM);
    // The first nine built-ins: a new built-in preset does not scroll the other tiers away.
    let mut builtin = huddle::presets::builtin::load_builtins(&super::tui_support::config()).0;
    builtin.truncate(9);
    let mut repo = builtin[0].clone();
    repo.name = "demo-repo squad".into();
    repo.description = Some("The repository's own Squad team".into());
    let mut mine = builtin[2].clone();
    mine.name = "My Panel".into();
    let catalog = huddle::presets::Catalog::from_tiers(builtin, vec![mine], vec![repo]);
    app.perform(Action::NewGroupFromPreset);
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    let t = render(&mut app, 100, 30);
    let text = screen_text(&t);
    for section in ["From repo (Squad)", "Built-in", "My presets", "[repo]"] {
        assert!(text.contains(section), "{section}:\n{text}");
    }
    tui_snapshot!("preset_picker_100x30", text);
}

#[test]
fn help_screen() {
    let mut app = empty_app();
    app.perform(Action::Help);
    let t = render(&mut app, 100, 40);
    let text = screen_text(&t);
    assert!(text.contains("Ctrl-P"), "{text}");
    tui_snapshot!("help_100x40", text);
}

#[test]
fn session_transcript_with_markdown() {
    let (mut app, _) = app_with_team(TEAM);
    // Select the orchestrator (first session row after the team's group row).
    let commands = app.perform(Action::MoveDown);
    let Some(huddle::tui::command::Command::LoadTranscript { session_id }) = commands.first().cloned() else {
        panic!("selecting a session loads its transcript: {commands:?}");
    };
    let mut answer =
        Message::assistant("## Plan\n\n- **security**: check the login handler\n- tests: `cargo test`\n");
    answer.model = Some("sim/demo".into());
    answer.duration_ms = Some(2300);
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id,
        result: Ok(huddle::store::LoadedTranscript {
            messages: vec![Message::user("Review the login handler"), answer],
            warnings: Vec::new(),
        }),
    });
    let t = render(&mut app, 100, 30);
    tui_snapshot!("session_transcript_100x30", screen_text(&t));
}

#[test]
fn transcript_links_tables_and_fences() {
    let (mut app, _) = app_with_team(TEAM);
    let commands = app.perform(Action::MoveDown);
    let Some(huddle::tui::command::Command::LoadTranscript { session_id }) = commands.first().cloned() else {
        panic!("selecting a session loads its transcript: {commands:?}");
    };
    let answer = Message::assistant(
        "See [the guide](https://example.org/guide).\n\n| check | result | time |\n|---|:---:|---:|\n| login | pass | 1.2s |\n| tokens | **fail** | 30s |\n\n```\ncargo test\n```\n",
    );
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id,
        result: Ok(huddle::store::LoadedTranscript {
            messages: vec![Message::user("Summarise"), answer],
            warnings: Vec::new(),
        }),
    });
    let t = render(&mut app, 80, 32);
    let text = screen_text(&t);
    assert!(text.contains("the guide (https://example.org/guide)"), "{text}");
    tui_snapshot!("transcript_markdown_80x32", text);
}

/// A run file of the team as `read_run` returns it: `kinds` recorded at `at`.
fn run_file(
    group_id: &str,
    index: usize,
    total: usize,
    at: chrono::DateTime<chrono::Utc>,
    kinds: Vec<EventKind>,
) -> huddle::workspace::LoadedRun {
    let run_id = format!("run-{index}");
    let records = kinds
        .into_iter()
        .map(|kind| huddle::engine::events::RunRecord {
            at,
            event: huddle::engine::events::EngineEvent {
                group_id: group_id.into(),
                group: TEAM.into(),
                run_id: Some(run_id.as_str().into()),
                execution: None,
                kind,
            },
        })
        .collect();
    huddle::workspace::LoadedRun {
        run_id,
        records,
        index,
        total,
        skipped: 0,
    }
}

#[test]
fn team_browsing_an_earlier_run() {
    let (mut app, id) = app_with_team(TEAM);
    let at = |s| chrono::DateTime::from_timestamp(s, 0).expect("a time");
    let (earlier_at, newest_at) = (at(1_795_000_000), at(1_795_090_000));
    let mut earlier = first_iteration(&app, &id);
    earlier.extend([
        EventKind::Evaluation {
            iteration: 1,
            score: 0.91,
            rationale: "the edge cases are covered".into(),
            trend: None,
            usage: Default::default(),
            duration_ms: 0,
        },
        EventKind::CycleFinished {
            outcome: CycleOutcome::GoalMet,
            iterations: 1,
            max_iterations: 4,
            mode: Some(Mode::OrchestratorReflect),
            summary: "done".into(),
        },
        EventKind::RunEnded {
            key: RunKey::team(&id),
            outcome: Some(CycleOutcome::GoalMet),
            iterations: 1,
            failed: None,
            totals: None,
        },
    ]);
    let newest = vec![
        EventKind::RunStarted {
            key: RunKey::team(&id),
        },
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 4,
        },
        EventKind::RunEnded {
            key: RunKey::team(&id),
            outcome: None,
            iterations: 0,
            failed: Some("the provider is down".into()),
            totals: None,
        },
    ];
    // The newest of seven runs, read when the team was first shown.
    app.handle_app_event(AppEvent::RunLoaded {
        group_id: id.clone(),
        result: Ok(Some(run_file(&id, 6, 7, newest_at, newest))),
    });
    let text = screen_text(&render(&mut app, 120, 32));
    assert_eq!(
        text.matches("run 7 of 7 · [ older").count(),
        2,
        "the panel and the timeline say which run:\n{text}"
    );
    assert_eq!(
        app.handle_key(super::tui_support::ch('[')),
        vec![huddle::tui::command::Command::LoadRun {
            group_id: id.clone(),
            which: huddle::workspace::WhichRun::At(5),
        }]
    );
    app.handle_app_event(AppEvent::RunLoaded {
        group_id: id.clone(),
        result: Ok(Some(run_file(&id, 5, 7, earlier_at, earlier))),
    });
    let text = screen_text(&render(&mut app, 120, 32));
    // Recorded at, in the local time zone: replaced so the snapshot holds in any zone.
    let when = huddle::tui::team_panel::local_time(earlier_at);
    let label = format!("run 6 of 7 · {when} · [ older · ] newer");
    assert!(text.contains(&label), "{label}:\n{text}");
    assert!(text.contains("score 0.91"), "the earlier run's timeline:\n{text}");
    tui_snapshot!("team_earlier_run_120x32", text.replace(&when, "YYYY-MM-DD HH:MM"));
    // `]` goes back to the newest run: nothing to read.
    assert!(app.handle_key(super::tui_support::ch(']')).is_empty());
    assert!(screen_text(&render(&mut app, 120, 32)).contains("run 7 of 7 · [ older"));
}
