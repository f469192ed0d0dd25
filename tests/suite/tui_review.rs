//! Review fixes: busy runs and chats guard rename and delete, plain keys stay text, a chat can
//! be stopped, the transcript holds still under a reader, resumed cycles keep their history,
//! and the smaller items (queue count, sanitised dialogs, catalog errors, safe defaults,
//! outcome colours, evaluator switch, model picker, save-as-preset listing, worker tokens).

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, Phase, RunKey};
use huddle::model::{CycleOutcome, Message, Mode, Organization, Role, Tier, Usage, reconcile};
use huddle::presets::CatalogError;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::tui::dialogs::Dialog;

use super::tui_support::{
    app_with_team, builtin_catalog, ch, config, ctrl, empty_app, engine_event, key, new_app, render, repo,
    run_ended, run_started, screen_text, type_text,
};

const TEAM: &str = "Code Review Team";

/// Sends a prompt to the selected team and announces its run, as the engine would; returns
/// the run's id.
fn start_run(app: &mut App, group_id: &str) -> String {
    app.handle_key(ch('i'));
    type_text(app, "review this");
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(key(KeyCode::Esc));
    run_started(app, RunKey::team(group_id))
}

fn notice_title(app: &App) -> Option<String> {
    match app.dialogs.last() {
        Some(Dialog::Notice(n)) => Some(n.title.clone()),
        _ => None,
    }
}

/// An app with one plain session `scratch` selected and its (empty) transcript loaded.
fn app_with_session() -> (App, String) {
    let mut app = empty_app();
    app.handle_key(ch('N'));
    for _ in 0..20 {
        app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut app, "scratch");
    app.handle_key(key(KeyCode::Enter));
    let id = app.selected_session_id().expect("the new session is selected");
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: id.clone(),
        result: Ok(Default::default()),
    });
    app.handle_key(key(KeyCode::Esc));
    (app, id)
}

fn default_group(app: &App) -> String {
    app.org
        .read(|o| o.default_group().map(|g| g.id.clone()))
        .unwrap_or_default()
}

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
    let (mut app, id) = app_with_session();
    let group = default_group(&app);
    let run = run_started(&mut app, RunKey::chat(&id));
    engine_event(
        &mut app,
        &group,
        Some(&run),
        EventKind::TurnStarted {
            session_id: id.clone(),
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
fn a_plain_key_given_to_a_global_action_is_still_text_in_the_composer() {
    let mut config = config();
    config.keys.insert(
        "toggle_pause_cycle".into(),
        huddle::config::KeyList::One("p".into()),
    );
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let (mut app, _) = new_app(org, config.clone());
    assert!(app.dialogs.is_empty(), "no key configuration error");
    app.handle_key(ch('i'));
    type_text(&mut app, "please pause");
    assert_eq!(app.composer.text(), "please pause");
}

#[test]
fn a_plain_chat_can_be_stopped_and_is_not_deleted_mid_turn() {
    let (mut app, id) = app_with_session();
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

#[test]
fn a_reader_scrolled_up_keeps_the_same_text_while_an_answer_streams() {
    let (mut app, id) = app_with_session();
    let group = default_group(&app);
    let messages = (0..60)
        .map(|i| Message::assistant(format!("old line {i}")))
        .collect();
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: id,
        result: Ok(huddle::store::LoadedTranscript {
            messages,
            warnings: Vec::new(),
        }),
    });
    app.handle_key(key(KeyCode::Esc));
    let _ = render(&mut app, 100, 30);
    app.handle_key(key(KeyCode::PageUp));
    let before = screen_text(&render(&mut app, 100, 30));
    // The transcript pane's text (the sidebar shows a spinner meanwhile).
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .take(24)
            .map(|l| l.chars().skip(25).take(70).collect())
            .collect()
    };
    let sid = app.selected_session_id().expect("session");
    engine_event(
        &mut app,
        &group,
        Some("r"),
        EventKind::TurnStarted {
            session_id: sid.clone(),
            session: "scratch".into(),
            generation: 1,
            prompt: None,
        },
    );
    for i in 0..8 {
        engine_event(
            &mut app,
            &group,
            Some("r"),
            EventKind::Delta {
                session_id: sid.clone(),
                session: "scratch".into(),
                generation: 1,
                text: format!("new paragraph {i}\n\n"),
            },
        );
        let after = screen_text(&render(&mut app, 100, 30));
        assert_eq!(lines(&before), lines(&after), "the view moved:\n{after}");
        assert!(after.contains("↓ new"), "{after}");
    }
    // Back at the bottom the view follows again.
    for _ in 0..10 {
        app.handle_key(key(KeyCode::PageDown));
    }
    let bottom = screen_text(&render(&mut app, 100, 30));
    assert!(
        bottom.contains("new paragraph 7") && !bottom.contains("↓ new"),
        "{bottom}"
    );
    engine_event(
        &mut app,
        &group,
        Some("r"),
        EventKind::Delta {
            session_id: sid,
            session: "scratch".into(),
            generation: 1,
            text: "the very latest\n".into(),
        },
    );
    assert!(screen_text(&render(&mut app, 100, 30)).contains("the very latest"));
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
    org.group_mut(&id).expect("team").reflection = Some(reflection);
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
    let cycle = &app.team_panel.cycles[&id];
    assert_eq!(cycle.scores, vec![0.4, 0.6]);
    assert_eq!(cycle.usage.total(), 1234);
    assert_eq!(cycle.iteration, 2);
    let text = screen_text(&render(&mut app, 120, 32));
    assert!(text.contains("1234 tok"), "{text}");
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
fn dialogs_never_load_control_sequences_into_a_textarea() {
    // A hostile name and prompt, as an edited organization file could hold them.
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group = org.default_group().expect("default").id.clone();
    let mut s = huddle::model::Session::new("evil\x1b]0;pwned\x07name\u{202E}", &group, "sim/demo");
    s.system_prompt = Some("be \x1b[31mred\x1b[0m\tand\r\nnice".into());
    org.ui.selected_session = Some(s.id.clone());
    org.sessions.push(s);
    let (mut app, _) = new_app(org, config());
    app.handle_key(ch('r'));
    let Some(Dialog::Text(t)) = app.dialogs.last() else {
        panic!("a rename dialog")
    };
    assert_eq!(t.text(), "evilname");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('e'));
    let Some(Dialog::Text(t)) = app.dialogs.last() else {
        panic!("a system prompt dialog")
    };
    assert_eq!(t.text(), "be red\tand\nnice");
}

#[test]
fn an_unusable_squad_folder_is_listed_in_the_preset_picker() {
    let mut app = empty_app();
    let mut catalog = builtin_catalog();
    catalog.errors.push(CatalogError {
        tier: Tier::Repo,
        source: "/work/demo-repo/.squad".into(),
        message: "/work/demo-repo/.squad/team.md: no roster table".into(),
    });
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, _)| t.contains("no roster table")),
        "{:?}",
        app.flash
    );
    app.handle_key(ch('n'));
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(
        text.contains("From repo (Squad)") && text.contains(".squad (cannot be used)"),
        "{text}"
    );
    assert!(
        text.contains("no roster table"),
        "the reason is the detail: {text}"
    );
    // It cannot be picked.
    app.handle_key(key(KeyCode::Enter));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Picker(_))));
}

#[test]
fn enter_answers_no_to_delete_and_overwrite() {
    let (mut app, id) = app_with_team(TEAM);
    app.handle_key(ch('d'));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(app.dialogs.is_empty());
    assert!(app.org.read(|o| o.group(&id).is_some()), "Enter kept the team");
    app.handle_app_event(AppEvent::Exported {
        group_id: id.clone(),
        result: Err(huddle::workspace::ExportOutcome::WouldOverwrite {
            files: vec!["/work/demo-repo/.squad/team.md".into()],
        }),
    });
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(app.dialogs.is_empty());
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
fn the_evaluator_switch_removes_and_adds_the_evaluator() {
    let (mut app, id) = app_with_team(TEAM);
    let evaluators = |app: &App| {
        app.org.read(|o| {
            o.sessions_in(&id)
                .iter()
                .filter(|s| s.role == Role::Evaluator)
                .map(|s| (s.name.clone(), s.model.clone()))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(evaluators(&app).len(), 1);
    app.handle_key(ch('E'));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
    let commands = app.handle_key(ch('y'));
    assert!(
        matches!(commands.last(), Some(Command::RemoveFiles(r)) if r.sessions.len() == 1),
        "{commands:?}"
    );
    assert!(evaluators(&app).is_empty());
    assert_eq!(
        app.org
            .read(|o| o.group(&id).and_then(|g| g.evaluator_id.clone())),
        None
    );
    app.handle_key(ch('E'));
    let added = evaluators(&app);
    assert_eq!(
        added,
        vec![("code-review-team-evaluator".to_string(), "sim/demo".to_string())]
    );
    let evaluator_id = app.org.read(|o| {
        o.session_by_name("code-review-team-evaluator")
            .map(|s| s.id.clone())
    });
    assert_eq!(
        app.org
            .read(|o| o.group(&id).and_then(|g| g.evaluator_id.clone())),
        evaluator_id
    );
    // Renaming the evaluator keeps it the evaluator (the engine and the UI agree by id).
    let evaluator_id = evaluator_id.expect("evaluator");
    app.edits.rename_session(&evaluator_id, "judge").expect("rename");
    assert_eq!(
        app.edits.evaluator(&id),
        Some((evaluator_id, "judge".to_string()))
    );
    // Only reflect teams have one.
    app.edits.set_mode(&id, Mode::Broadcast).expect("mode");
    app.handle_key(ch('E'));
    assert!(app.flash.as_ref().is_some_and(|(_, error)| *error));
    app.handle_key(ch('?'));
    let help = screen_text(&render(&mut app, 100, 44));
    assert!(help.contains("evaluator on/off"), "{help}");
}

#[test]
fn the_model_picker_lists_configured_models_and_provider_prefixes() {
    let mut config = huddle::config::Config::parse(
        "default_model: sim/demo\nproviders:\n  - name: local\n    kind: openai\n    base_url: http://127.0.0.1:9/v1\n    models: [llama-3, qwen-2]\n",
        std::path::Path::new("config.yaml"),
    )
    .expect("config");
    config.keys.clear();
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let (mut app, _) = new_app(org, config.clone());
    let (mut app, _) = {
        // A session to set the model of.
        app.handle_key(ch('N'));
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Esc));
        (app, ())
    };
    app.handle_key(ch('m'));
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(
        text.contains("local/llama-3") && text.contains("local/qwen-2") && text.contains("local/…"),
        "{text}"
    );
    type_text(&mut app, "local/…");
    app.handle_key(key(KeyCode::Enter));
    let Some(Dialog::Picker(p)) = app.dialogs.last() else {
        panic!("the picker stays open")
    };
    assert_eq!(p.filter, "local/");
}

#[test]
fn save_as_preset_lists_every_file_and_enter_answers_no() {
    let (mut app, id) = app_with_team(TEAM);
    assert_eq!(
        app.handle_key(ch('S')),
        vec![Command::PlanExport { group_id: id.clone() }]
    );
    let org = app.org.snapshot();
    let paths = huddle::config::Paths::single(std::path::PathBuf::from("/tmp/huddle-home"));
    let real_repo = tempfile::tempdir().expect("repo");
    let files = huddle::presets::squad::plan_export(&org, &id, real_repo.path(), &paths)
        .expect("plan")
        .create;
    assert!(
        files.iter().any(|f| f.ends_with(".squad/team.md"))
            && files.iter().any(|f| f.ends_with("charter.md"))
            && files.iter().any(|f| f.ends_with("code-review-team.yaml")),
        "{files:?}"
    );
    let listed: Vec<(String, bool)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.display().to_string(), i == 0))
        .collect();
    app.handle_app_event(AppEvent::ExportPlanned {
        group_id: id.clone(),
        result: Ok(listed.clone()),
    });
    let Some(Dialog::Confirm(c)) = app.dialogs.last() else {
        panic!("a confirmation")
    };
    for (f, _) in &listed {
        assert!(c.message.contains(f.as_str()), "{}", c.message);
    }
    let first = format!("change  {}", listed[0].0);
    assert!(c.message.contains(&first), "{}", c.message);
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    app.handle_app_event(AppEvent::ExportPlanned {
        group_id: id.clone(),
        result: Ok(listed),
    });
    assert_eq!(
        app.handle_key(ch('y')),
        vec![Command::ExportGroup {
            group_id: id,
            confirmed: true
        }]
    );
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
            session_id: security,
            session: "code-review-team-security".into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 10,
            usage: Some(Usage {
                input_tokens: 100,
                output_tokens: 23,
            }),
            error: None,
            message: None,
        },
    );
    let workers = &app.team_panel.cycles[&id].workers;
    assert_eq!(workers.len(), 1, "{workers:?}");
    assert_eq!((workers[0].name.as_str(), workers[0].tokens), ("security", 123));
}
