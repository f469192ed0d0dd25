//! Dialogs: what they load is sanitised, Enter answers no to what destroys or overwrites, and
//! the pickers and confirmations list what they should (an unusable Squad folder, configured
//! models, the files a save as preset touches, the evaluator switch).

use crossterm::event::KeyCode;
use huddle::model::{Mode, Organization, Role, Tier, reconcile};
use huddle::presets::CatalogError;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::tui::dialogs::Dialog;

use super::tui_support::{
    app_with_team, builtin_catalog, ch, config, empty_app, key, new_app, render, screen_text, type_text,
};

const TEAM: &str = "Code Review Team";

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
