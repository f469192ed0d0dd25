//! Status lines follow the state (issue 15 item 13): "pausing…", "stopping" and "queued…" go
//! when what they report is over; a paused reflection shows paused and stops spinning.

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, Phase, RunKey};
use huddle::model::{CycleOutcome, Message, Mode};

use super::tui_support::{
    app_with_session, app_with_team, ch, engine_event, key, render, run_ended, run_started, screen_text,
    start_cycle, type_text,
};

fn flash(app: &huddle::tui::App) -> Option<String> {
    app.flash.as_ref().map(|(t, _)| t.clone())
}

#[test]
fn pausing_goes_when_the_engine_has_paused_and_resuming_when_it_resumed() {
    let (mut app, team) = app_with_team("Code Review Team");
    let run = start_cycle(&mut app, &team, Mode::OrchestratorReflect);
    app.handle_key(ch('p'));
    assert!(flash(&app).is_some_and(|f| f.starts_with("pausing")));
    // An unrelated event leaves it.
    engine_event(
        &mut app,
        &team,
        Some(&run),
        EventKind::Phase {
            iteration: 1,
            phase: Phase::Dispatch,
        },
    );
    assert!(flash(&app).is_some_and(|f| f.starts_with("pausing")));
    engine_event(&mut app, &team, Some(&run), EventKind::CyclePaused);
    assert_eq!(flash(&app), None, "paused: the panel says so");
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(text.contains("⏸ paused") && !text.contains("pausing"), "{text}");

    app.handle_key(ch('p'));
    assert_eq!(flash(&app).as_deref(), Some("resuming"));
    engine_event(&mut app, &team, Some(&run), EventKind::CycleResumed);
    assert_eq!(flash(&app), None);
}

#[test]
fn stopping_goes_when_the_run_has_ended() {
    let (mut app, team) = app_with_team("Code Review Team");
    let run = start_cycle(&mut app, &team, Mode::OrchestratorReflect);
    app.handle_key(ch('x'));
    assert_eq!(flash(&app).as_deref(), Some("stopping"));
    engine_event(
        &mut app,
        &team,
        Some(&run),
        EventKind::CycleFinished {
            outcome: CycleOutcome::Cancelled,
            iterations: 1,
            max_iterations: 4,
            mode: Some(Mode::OrchestratorReflect),
            summary: String::new(),
        },
    );
    run_ended(&mut app, &run, RunKey::team(&team), None);
    assert_eq!(flash(&app), None);
}

#[test]
fn queued_goes_when_the_plan_takes_the_message() {
    let (mut app, team) = app_with_team("Code Review Team");
    let run = start_cycle(&mut app, &team, Mode::OrchestratorReflect);
    app.handle_key(ch('i'));
    type_text(&mut app, "also check cost");
    app.handle_key(key(KeyCode::Enter));
    assert!(flash(&app).is_some_and(|f| f.starts_with("queued")));
    engine_event(
        &mut app,
        &team,
        Some(&run),
        EventKind::Phase {
            iteration: 2,
            phase: Phase::Plan,
        },
    );
    assert_eq!(flash(&app), None);
}

#[test]
fn a_paused_reflection_says_paused_and_stops_spinning() {
    let (mut app, session) = app_with_session(vec![Message::user("q"), Message::assistant("a")]);
    let run = run_started(&mut app, RunKey::reflection(&session));
    let group = app
        .org
        .read(|o| o.session(&session).map(|s| s.group_id.clone()))
        .expect("group");
    let spinning = |app: &mut huddle::tui::App| {
        let first = screen_text(&render(app, 100, 30));
        app.tick += 1;
        let second = screen_text(&render(app, 100, 30));
        first != second
    };
    assert!(spinning(&mut app), "a reflecting session spins");
    app.handle_key(ch('p'));
    assert!(flash(&app).is_some_and(|f| f.starts_with("pausing the reflection")));
    engine_event(&mut app, &group, Some(&run), EventKind::CyclePaused);
    assert_eq!(flash(&app), None);
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("⏸ scratch"), "{text}");
    assert!(text.contains("Ctrl-P resume"), "{text}");
    let wide = screen_text(&render(&mut app, 200, 30));
    assert!(wide.contains("1 paused") && !wide.contains("running"), "{wide}");
    assert!(!spinning(&mut app), "paused: no spinner");
    engine_event(&mut app, &group, Some(&run), EventKind::CycleResumed);
    assert!(spinning(&mut app));
}

#[test]
fn a_finished_run_notifies_unless_notify_is_off() {
    use huddle::tui::command::Command;
    let finish = |app: &mut huddle::tui::App, team: &str| {
        let run = start_cycle(app, team, Mode::Broadcast);
        run_ended(app, &run, RunKey::team(team), None)
    };
    let (mut app, team) = app_with_team("Research Panel");
    let commands = finish(&mut app, &team);
    assert!(
        commands
            .iter()
            .any(|c| matches!(c, Command::Notify(n) if n.title.contains("finished"))),
        "{commands:?}"
    );
    let config = huddle::config::Config::parse(
        "default_model: sim/demo\nnotify: off\n",
        std::path::Path::new("config.yaml"),
    )
    .expect("config");
    let (mut quiet, team) = super::tui_support::app_with_team_and_config("Research Panel", config);
    let commands = finish(&mut quiet, &team);
    assert!(
        !commands.iter().any(|c| matches!(c, Command::Notify(_))),
        "{commands:?}"
    );
}

/// A chat turn waiting for a rate limit: its session's row shows `⏳` instead of a spinner, the
/// status line says who waits, until when and how long is left, with the key that stops the
/// wait, and counts it on the right; the wait's end takes it all away.
#[test]
fn a_limit_wait_is_shown_with_its_countdown_and_the_stop_key() {
    let (mut app, session) = app_with_session(Vec::new());
    let group = super::tui_support::default_group(&app);
    let run = run_started(&mut app, RunKey::chat(&session));
    let until = chrono::DateTime::parse_from_rfc3339("2026-11-28T14:05:00Z")
        .expect("a time")
        .with_timezone(&chrono::Utc);
    engine_event(
        &mut app,
        &group,
        Some(&run),
        EventKind::LimitWait {
            session_id: session.clone(),
            session: "scratch".into(),
            provider: "openai".into(),
            until,
            wait_ms: 1_200_000,
            reason: "429".into(),
        },
    );
    let text = screen_text(&render(&mut app, 160, 30));
    let status = text.lines().last().unwrap_or_default();
    assert!(
        // (A test screen gives the wide ⏳ a cell of its own.)
        status.starts_with('⏳')
            && status.contains("scratch: waiting until 14:05 UTC for openai limit, ")
            && status.contains(" left · Ctrl-X stop the wait (resumable)")
            && status.contains("1 waiting for limit"),
        "{status}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("│  ⏳") && l.contains("scratch")),
        "the row: {text}"
    );
    engine_event(
        &mut app,
        &group,
        Some(&run),
        EventKind::LimitWaitOver {
            session_id: session.clone(),
            session: "scratch".into(),
            waited_ms: 1_200_000,
        },
    );
    let text = screen_text(&render(&mut app, 160, 30));
    assert!(!text.contains("waiting until") && !text.contains("⏳"), "{text}");
}
