//! Runs as the app follows them: what is busy guards deleting (renames work while busy), a
//! chat can be stopped, and a team's cycle view follows its run (a resumed cycle keeps its
//! history, the queue count, outcome colours, workers' tokens).

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, Phase, RunKey};
use huddle::model::{CycleOutcome, Mode, Organization, Usage, reconcile};
use huddle::tui::App;
use huddle::tui::command::Command;
use huddle::tui::dialogs::Dialog;

use super::tui_support::{
    app_with_session, app_with_team, builtin_catalog, ch, config, ctrl, default_group, engine_event, key,
    new_app, notice_title, render, repo, run_ended, run_started, screen_text, start_run, type_text,
};

const TEAM: &str = "Code Review Team";

#[test]
fn renames_work_while_busy_and_the_run_stays_on_screen() {
    let (mut app, id) = app_with_team(TEAM);
    let run = start_run(&mut app, &id);
    app.handle_key(ch('r'));
    let Some(Dialog::Text(_)) = app.dialogs.last() else {
        panic!(
            "a rename dialog, not a refusal: {:?}",
            app.dialogs.last().map(|_| ())
        )
    };
    for _ in 0..40 {
        app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut app, "Renamed Crew");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.dialogs.is_empty(), "renamed");
    // A member of the running team, renamed mid-run.
    app.handle_key(ch('j'));
    let member = app.selected_session_id().expect("a member");
    app.handle_key(ch('r'));
    for _ in 0..40 {
        app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut app, "new-name");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.dialogs.is_empty(), "renamed");
    // The run's events (by id) still reach the team and the member.
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::Assignment {
            iteration: 1,
            worker: "old-worker-name".into(),
            session_id: member.clone(),
            task: "look".into(),
        },
    );
    assert!(app.team_running(&id));
    assert_eq!(app.team_panel.cycles[&id].workers.len(), 1);
    run_ended(&mut app, &run, RunKey::team(&id), None);
    assert!(!app.team_running(&id) && !app.group_busy(&id));
}

#[test]
fn deleting_is_refused_while_a_session_has_a_turn_in_flight() {
    let (mut app, id) = app_with_session(Vec::new());
    let group = default_group(&app);
    let run = run_started(&mut app, RunKey::chat(&id));
    engine_event(
        &mut app,
        &group,
        Some(&run),
        EventKind::TurnStarted {
            session_id: id.as_str().into(),
            session: "scratch".into(),
            generation: 1,
            prompt: None,
        },
    );
    app.handle_key(ch('d'));
    assert_eq!(notice_title(&app).as_deref(), Some("Cannot delete now"));
    app.handle_key(key(KeyCode::Enter));
    run_ended(&mut app, &run, RunKey::chat(&id), None);
    app.handle_key(ch('d'));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
}

#[test]
fn a_plain_chat_can_be_stopped_and_is_not_deleted_mid_turn() {
    let (mut app, id) = app_with_session(Vec::new());
    app.handle_key(ch('i'));
    type_text(&mut app, "hello?");
    assert!(matches!(
        app.handle_key(key(KeyCode::Enter)).as_slice(),
        [Command::Chat { .. }]
    ));
    let run = run_started(&mut app, RunKey::chat(&id));
    assert!(app.session_busy(&id));
    let stop = vec![Command::StopSession {
        session_id: id.clone(),
    }];
    // Ctrl-X from the composer stops this session's turn.
    assert_eq!(app.handle_key(ctrl('x')), stop);
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(app.handle_key(ch('x')), stop);
    // On the group row, `x` stops the chats of its sessions.
    app.handle_key(ch('k'));
    assert_eq!(app.handle_key(ch('x')), stop);
    app.handle_key(ch('j'));
    app.handle_key(ch('d'));
    assert_eq!(notice_title(&app).as_deref(), Some("Cannot delete now"));
    app.handle_key(key(KeyCode::Enter));
    run_ended(&mut app, &run, RunKey::chat(&id), Some("the provider said no"));
    assert!(!app.session_busy(&id));
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, e)| *e && t.contains("the provider said no")),
        "{:?}",
        app.flash
    );
    app.handle_key(ch('d'));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
}

fn reflect_team_with_history() -> (App, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let catalog = builtin_catalog();
    let p = catalog.find(TEAM).expect("preset").clone();
    let id = huddle::presets::create_team_group(&mut org, &p, &config(), Some(&repo()));
    let reflection: huddle::model::ReflectionCycle = serde_json::from_value(serde_json::json!({
        "goal": "review the login flow",
        "max_iterations": 4,
        "iteration": 3,
        "completed_iterations": 2,
        "active": true,
        "evaluations": [
            {"iteration": 1, "score": 0.4, "rationale": "thin"},
            {"iteration": 2, "score": 0.6, "rationale": "better", "trend": "improving"}
        ],
        "last_evaluation": {"iteration": 2, "score": 0.6, "rationale": "better", "trend": "improving"},
        "usage": {"input_tokens": 1000, "output_tokens": 234}
    }))
    .expect("reflection state");
    org.group_mut(&id).expect("team").state.orchestrator_reflect = Some(reflection);
    org.ui.selected_group = Some(id.clone());
    let (mut app, _) = new_app(org, config());
    app.dialogs.clear();
    (app, id)
}

#[test]
fn a_resumed_cycle_keeps_its_scores_and_tokens() {
    let (mut app, id) = reflect_team_with_history();
    assert_eq!(
        app.team_panel.cycles[&id].scores,
        vec![0.4, 0.6],
        "seeded after a restart"
    );
    assert_eq!(app.team_panel.cycles[&id].usage.total(), 1234);
    engine_event(
        &mut app,
        &id,
        Some("r1"),
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 4,
        },
    );
    // The resumed run says where its cycle was left; the panel takes the earlier iterations
    // from the saved state then (not on every cycle_started: review 23 finding 1).
    engine_event(
        &mut app,
        &id,
        Some("r1"),
        EventKind::RunResumed {
            resumes: "r0".into(),
            interrupted_at: None,
            reason: None,
            finished_turns: 4,
            cycle: Some(huddle::engine::events::ResumedCycle {
                after: 2,
                usage: Usage::new(1000, 234),
            }),
        },
    );
    let cycle = &app.team_panel.cycles[&id];
    assert_eq!(cycle.scores, vec![0.4, 0.6]);
    assert_eq!(cycle.usage.total(), 1234);
    assert_eq!(cycle.iteration, 2);
    let text = screen_text(&render(&mut app, 120, 32));
    assert!(text.contains("1,234 tok"), "{text}");
}

#[test]
fn a_fresh_cycle_starts_with_no_scores() {
    let (mut app, id) = app_with_team(TEAM);
    engine_event(
        &mut app,
        &id,
        Some("r2"),
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 4,
        },
    );
    assert!(app.team_panel.cycles[&id].scores.is_empty());
}

#[test]
fn the_queue_count_clears_when_the_plan_takes_it_and_kept_messages_show() {
    let (mut app, id) = app_with_team(TEAM);
    let run = start_run(&mut app, &id);
    app.handle_key(ch('i'));
    type_text(&mut app, "also check cost");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.team_panel.cycles[&id].queued.len(), 1);
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::Phase {
            iteration: 2,
            phase: Phase::Plan,
        },
    );
    assert!(app.team_panel.cycles[&id].queued.is_empty());

    // Messages the engine kept for the next run (it writes them into the group).
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let p = builtin_catalog().find(TEAM).expect("preset").clone();
    let id = huddle::presets::create_team_group(&mut org, &p, &config(), Some(&repo()));
    org.group_mut(&id).expect("team").pending_messages = vec!["late one".into(), "late two".into()];
    org.ui.selected_group = Some(id);
    let (mut app, _) = new_app(org, config());
    let text = screen_text(&render(&mut app, 120, 32));
    assert!(text.contains("kept for the next run: 2"), "{text}");
}

#[test]
fn outcomes_are_coloured_by_how_the_cycle_ended() {
    use ratatui::style::Color;
    for (outcome, colour) in [
        (CycleOutcome::GoalMet, Color::Green),
        (CycleOutcome::MaxIterations, Color::Yellow),
        (CycleOutcome::Stalled, Color::Yellow),
        (CycleOutcome::ErrorBudget, Color::Red),
        (CycleOutcome::Cancelled, Color::Red),
    ] {
        let (mut app, id) = app_with_team(TEAM);
        let run = run_started(&mut app, RunKey::team(&id));
        engine_event(
            &mut app,
            &id,
            Some(&run),
            EventKind::CycleStarted {
                mode: Mode::OrchestratorReflect,
                max_iterations: 4,
            },
        );
        engine_event(
            &mut app,
            &id,
            Some(&run),
            EventKind::CycleFinished {
                outcome,
                iterations: 2,
                max_iterations: 4,
                mode: Some(Mode::OrchestratorReflect),
                summary: String::new(),
            },
        );
        run_ended(&mut app, &run, RunKey::team(&id), None);
        let t = render(&mut app, 120, 32);
        let buffer = t.backend().buffer();
        let needle = format!("finished: {outcome}");
        let text = screen_text(&t);
        let (row, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(&needle) && !l.contains(" after "))
            .unwrap_or_else(|| panic!("{needle} in the panel:\n{text}"));
        let column = line[..line.find(&needle).unwrap()].chars().count() as u16;
        assert_eq!(buffer[(column, row as u16)].fg, colour, "{outcome}");
    }
}

#[test]
fn broadcast_workers_get_their_token_counts() {
    let (mut app, id) = app_with_team(TEAM);
    let security = app
        .org
        .read(|o| {
            o.session_by_name("code-review-team-security")
                .map(|s| s.id.clone())
        })
        .expect("member");
    engine_event(
        &mut app,
        &id,
        Some("r"),
        EventKind::CycleStarted {
            mode: Mode::Broadcast,
            max_iterations: 1,
        },
    );
    engine_event(
        &mut app,
        &id,
        Some("r"),
        EventKind::TurnFinished {
            session_id: security.into(),
            session: "code-review-team-security".into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 10,
            usage: Some(Usage::new(100, 23)),
            error: None,
            message: None,
            cost_usd: None,
        },
    );
    let workers = &app.team_panel.cycles[&id].workers;
    assert_eq!(workers.len(), 1, "{workers:?}");
    assert_eq!((workers[0].name.as_str(), workers[0].tokens), ("security", 123));
}

#[test]
fn a_direct_chat_with_a_member_leaves_the_teams_finished_run_alone() {
    let (mut app, id) = app_with_team(TEAM);
    let security = app
        .org
        .read(|o| {
            o.session_by_name("code-review-team-security")
                .map(|s| s.id.clone())
        })
        .expect("member");
    let finished = |session_id: &str, tokens: u64| EventKind::TurnFinished {
        session_id: session_id.into(),
        session: "code-review-team-security".into(),
        generation: 1,
        success: true,
        interrupted: false,
        duration_ms: 10,
        usage: Some(Usage::new(tokens, 0)),
        error: None,
        message: None,
        cost_usd: Some(0.0),
    };
    let team_run = run_started(&mut app, RunKey::team(&id));
    engine_event(
        &mut app,
        &id,
        Some(&team_run),
        EventKind::CycleStarted {
            mode: Mode::Broadcast,
            max_iterations: 1,
        },
    );
    engine_event(&mut app, &id, Some(&team_run), finished(&security, 100));
    run_ended(&mut app, &team_run, RunKey::team(&id), None);
    let before = app.team_panel.cycles[&id].clone();
    assert_eq!(before.usage.total(), 100);

    // The user chats with the member (or asks again with `u`): its own run.
    let chat = run_started(&mut app, RunKey::chat(&security));
    engine_event(
        &mut app,
        &id,
        Some(&chat),
        EventKind::TurnStarted {
            session_id: security.as_str().into(),
            session: "code-review-team-security".into(),
            generation: 2,
            prompt: None,
        },
    );
    let cycle = &app.team_panel.cycles[&id];
    assert!(
        cycle
            .workers
            .iter()
            .all(|w| w.state != huddle::tui::cycle_view::WorkerState::Running),
        "no spinner in the finished run: {:?}",
        cycle.workers
    );
    engine_event(&mut app, &id, Some(&chat), finished(&security, 383));
    run_ended(&mut app, &chat, RunKey::chat(&security), None);
    let after = &app.team_panel.cycles[&id];
    assert_eq!(
        after.usage.total(),
        100,
        "the chat's tokens are not the team run's"
    );
    assert_eq!(after.workers, before.workers);
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(!text.contains("383"), "{text}");
}

/// An organization with a team made from `preset` whose run of its mode was interrupted (its
/// open run kept, no run going), the default group selected; the team's id.
fn interrupted_team(preset: &str, prompt: &str) -> (App, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let p = builtin_catalog().find(preset).expect("preset").clone();
    let id = huddle::presets::create_team_group(&mut org, &p, &config(), Some(&repo()));
    let g = org.group_mut(&id).expect("team");
    g.state.run = Some(huddle::model::OpenRun {
        runs: vec!["20261128T050000000Z-aaaaaaaa".into()],
        mode: g.mode,
        prompt: prompt.into(),
        reason: Some("SIGTERM".into()),
        ..Default::default()
    });
    org.ui.selected_group = org.default_group().map(|d| d.id.clone());
    let (app, _) = new_app(org, config());
    (app, id)
}

/// At start, an interrupted run of any mode (not only a reflect cycle) is offered in its mode's
/// words; resuming it shows that team and asks the engine to resume it.
#[test]
fn an_interrupted_run_of_every_mode_is_offered_and_resumes_there() {
    for (preset, mode) in [
        ("Incident Investigation", Mode::Dispatch),
        ("Support Desk", Mode::Pipeline),
        ("Help Desk Flow", Mode::Flow),
        ("Research Panel", Mode::Broadcast),
        ("Draft, Critique, Edit", Mode::Sequential),
        ("Planning Team", Mode::Orchestrator),
        ("Negotiator", Mode::Relay),
        ("Deliberation Panel", Mode::Team),
    ] {
        let (mut app, id) = interrupted_team(preset, "Disk full on db-1");
        let Some(Dialog::Choice(offer)) = app.dialogs.last() else {
            panic!("{preset}: no offer");
        };
        assert_eq!(offer.title, "Interrupted run", "{preset}");
        let words = &offer.message;
        assert!(
            words.starts_with(&format!("The {} run of `{preset}", mode.spec().label)),
            "{preset}: {words}"
        );
        assert!(
            words.contains("(SIGTERM)") && words.contains("Goal: Disk full on db-1"),
            "{words}"
        );
        assert!(words.contains(mode.spec().resume), "{preset}: {words}");
        assert!(!words.contains("reflect cycle"), "{preset}: {words}");
        assert_ne!(app.selected_group_id().as_deref(), Some(id.as_str()));
        let commands = app.handle_key(ch('y'));
        assert!(
            commands.contains(&Command::ResumeCycle { group_id: id.clone() }),
            "{preset}: {commands:?}"
        );
        assert_eq!(
            app.selected_group_id().as_deref(),
            Some(id.as_str()),
            "{preset}: the resumed team is shown"
        );
    }
}

/// `d` discards it instead: nothing is resumed, nothing is offered again.
#[test]
fn an_interrupted_pipeline_can_be_discarded_from_the_offer() {
    let (mut app, id) = interrupted_team("Support Desk", "My printer jams");
    app.handle_key(ch('d'));
    let commands = app.handle_key(ch('y'));
    assert!(
        !commands.iter().any(|c| matches!(c, Command::ResumeCycle { .. })),
        "{commands:?}"
    );
    assert!(
        app.org
            .read(|o| o.group(&id).is_some_and(|g| g.state.run.is_none()))
    );
    let (again, _) = new_app(app.org.snapshot(), config());
    assert!(again.dialogs.is_empty(), "nothing offered again");
}

/// Quitting during a pipeline or dispatch run says what will resume, in the mode's words, not a
/// reflect cycle's.
#[test]
fn the_quit_words_say_what_each_mode_resumes() {
    for preset in ["Incident Investigation", "Support Desk"] {
        let (mut app, id) = super::tui_support::app_with_team(preset);
        start_run(&mut app, &id);
        let mode = app.org.read(|o| o.group(&id).map(|g| g.mode)).expect("team");
        let words = app.quit_words();
        assert!(
            words.contains(&format!("({} run) is kept as interrupted", mode.spec().label))
                && words.contains(mode.spec().resume),
            "{words}"
        );
        assert!(!words.contains("reflect cycle"), "{words}");
    }
}
