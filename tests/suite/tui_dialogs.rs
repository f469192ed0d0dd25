//! Dialogs: what they load is sanitised, Enter answers no to what destroys or overwrites, and
//! the pickers and confirmations list what they should (an unusable Squad folder, configured
//! models, the files a save as preset touches, the evaluator switch).

use crossterm::event::KeyCode;
use huddle::engine::events::EventKind;
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

/// What `app`'s top dialog draws at `width` x `height`: drawn alone over a screen filled with
/// `░`, the cells it touched (cleared or drawn) are `Some`; the rest `None`.
fn dialog_layer(app: &App, width: u16, height: u16) -> Vec<Vec<Option<String>>> {
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).expect("terminal");
    let keymap = huddle::tui::keymap::Keymap::default();
    terminal
        .draw(|f| {
            let area = f.area();
            for cell in f.buffer_mut().content.iter_mut() {
                cell.set_symbol("░");
            }
            app.dialogs.render(f, area, &keymap);
        })
        .expect("draw");
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| Some(buffer[(x, y)].symbol().to_string()).filter(|s| s != "░"))
                .collect()
        })
        .collect()
}

/// `app`'s top dialog clears and draws exactly its frame: the cells it touches are one
/// rectangle whose corners and sides are its border, so every cell outside it (the pane
/// borders around it) stays as the screen under it drew it. Drawn at sizes where it fits and
/// where it is clamped to the screen.
fn assert_drawn_within_its_frame(app: &mut App, what: &str) {
    let mut bordered = false;
    for (width, height) in [(100, 30), (120, 40), (70, 18), (60, 12)] {
        let layer = dialog_layer(app, width, height);
        let touched: Vec<(usize, usize)> = (0..height as usize)
            .flat_map(|y| (0..width as usize).map(move |x| (x, y)))
            .filter(|&(x, y)| layer[y][x].is_some())
            .collect();
        assert!(!touched.is_empty(), "{what} at {width}x{height}: nothing drawn");
        let x0 = touched.iter().map(|c| c.0).min().unwrap_or(0);
        let x1 = touched.iter().map(|c| c.0).max().unwrap_or(0);
        let y0 = touched.iter().map(|c| c.1).min().unwrap_or(0);
        let y1 = touched.iter().map(|c| c.1).max().unwrap_or(0);
        let screen = layer
            .iter()
            .map(|r| r.iter().map(|c| c.as_deref().unwrap_or("░")).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            touched.len(),
            (x1 - x0 + 1) * (y1 - y0 + 1),
            "{what} at {width}x{height}: not one rectangle\n{screen}"
        );
        let at = |x: usize, y: usize| layer[y][x].as_deref().unwrap_or("░");
        // A clear wider or taller than the frame would touch cells beyond its corners.
        assert_eq!(
            [at(x0, y0), at(x1, y0), at(x0, y1), at(x1, y1)],
            ["┌", "┐", "└", "┘"],
            "{what} at {width}x{height}: touched {x0}..={x1} x {y0}..={y1}, more than its frame\n{screen}"
        );
        for y in y0 + 1..y1 {
            assert_eq!(
                (at(x0, y), at(x1, y)),
                ("│", "│"),
                "{what} at {width}x{height}: row {y}\n{screen}"
            );
        }
        // Over the app's screen: pane borders run just outside the frame (at one size at
        // least), so a clear wider than it would have wiped them.
        let full = render(app, width, height);
        let buffer = full.backend().buffer();
        let border = |x: usize, y: usize| "┌┐└┘│─".contains(buffer[(x as u16, y as u16)].symbol());
        // The ring of cells around the frame (those on the screen).
        let ring = (y0.saturating_sub(1)..=y1 + 1)
            .flat_map(|y| (x0.saturating_sub(1)..=x1 + 1).map(move |x| (x, y)))
            .filter(|&(x, y)| x < width as usize && y < height as usize)
            .filter(|&(x, y)| !((x0..=x1).contains(&x) && (y0..=y1).contains(&y)));
        bordered |= ring.into_iter().any(|(x, y)| border(x, y));
    }
    assert!(bordered, "{what}: no pane border next to its frame at any size");
}

/// Review 28 item 18: "dialogs clearing a rectangle wider than their frame (wiping pane
/// borders)". Every kind of popup, over a team's screen (sidebar, timeline, cycle panel).
#[test]
fn every_popup_clears_only_its_own_frame() {
    use huddle::tui::dialogs::{Choice, ChoiceAction, ChoiceOption, Help, Notice};

    let (mut app, id) = app_with_team(TEAM);
    let check = |app: &mut App, what: &str, keys: &[char]| {
        for &k in keys {
            app.handle_key(ch(k));
        }
        assert!(!app.dialogs.is_empty(), "{what}: no dialog opened");
        assert_drawn_within_its_frame(app, what);
        app.dialogs.clear();
    };
    check(&mut app, "mode picker", &['M']);
    check(&mut app, "model picker", &['m']);
    check(&mut app, "max iterations", &['I']);
    check(&mut app, "rename", &['r']);
    check(&mut app, "delete", &['d']);
    check(&mut app, "preset picker", &['n']);
    check(&mut app, "help", &['?']);
    app.dialogs.error(
        "Team not created",
        "Code Review Team: ".to_string() + &"a long reason ".repeat(40),
    );
    check(&mut app, "a long error notice", &[]);
    app.dialogs.push(Dialog::Help(Help::default()));
    check(&mut app, "help pushed", &[]);
    app.dialogs.push(Dialog::Notice(Notice::info("Saved", "short")));
    check(&mut app, "a short notice", &[]);
    app.dialogs.push(Dialog::Choice(Box::new(Choice {
        title: "Quit".into(),
        message: "Runs you started here are going:\n".to_string() + &"- a run\n".repeat(30),
        options: ["leave them running", "stop them"]
            .iter()
            .enumerate()
            .map(|(i, label)| ChoiceOption {
                key: char::from(b'1' + i as u8),
                label: label.to_string(),
                disabled: None,
            })
            .collect(),
        chosen: 1,
        verb: "quit".into(),
        action: ChoiceAction::Quit,
    })));
    check(&mut app, "the quit dialog", &[]);

    // The tool approval popup, a long call.
    let member = app
        .org
        .read(|o| o.sessions.iter().find(|s| s.group_id == id).map(|s| s.id.clone()))
        .expect("a member");
    let run = super::tui_support::start_run(&mut app, &id);
    let call = huddle::model::ToolCall {
        id: "c1".into(),
        name: "fs__write_file".into(),
        arguments: serde_json::json!({"path": "a.txt", "content": "line\n".repeat(80)}).to_string(),
    };
    super::tui_support::approval_requested(&mut app, &run, &member, 1, &call);
    assert!(matches!(app.dialogs.last(), Some(Dialog::Approval(_))));
    check(&mut app, "the tool approval popup", &[]);
    // A system prompt's multi-line editor.
    app.dialogs
        .push(Dialog::Text(Box::new(huddle::tui::dialogs::TextInput::new(
            "System prompt",
            huddle::tui::dialogs::TextPurpose::SystemPrompt(member),
            &"You review code.\n".repeat(30),
            true,
        ))));
    check(&mut app, "the system prompt editor", &[]);

    // A relay's draft, waiting to be approved.
    let (mut app, gid) = app_with_team("Negotiator");
    let run = super::tui_support::start_run(&mut app, &gid);
    for kind in [
        EventKind::RelayState {
            state: huddle::model::RelayPhase::ReadyToSend,
            turn: 0,
            max_turns: 8,
            reason: None,
        },
        EventKind::RelayDraft {
            session_id: "driver".into(),
            turn: 1,
            text: "Offer 400, ".repeat(60),
            waiting: true,
            review: Some("manual approval".into()),
        },
    ] {
        super::tui_support::engine_event(&mut app, &gid, Some(&run), kind);
    }
    assert!(matches!(app.dialogs.last(), Some(Dialog::RelayDraft(_))));
    check(&mut app, "the relay draft popup", &[]);
}
