//! Key handling without a terminal: keys in, commands and state out.

use crossterm::event::KeyCode;
use huddle::engine::events::RunKey;
use huddle::model::{Message, Organization, Role, reconcile};
use huddle::tui::app::Focus;
use huddle::tui::command::{AppEvent, Command};
use huddle::tui::dialogs::Dialog;
use huddle::tui::sidebar::Row;

use super::tui_support::{
    alt, app_with_team, app_with_team_and_config, ch, config, ctrl, empty_app, key, new_app, render,
    run_started, screen_text, turn, type_text,
};

const TEAM: &str = "Research Panel";

#[test]
fn enter_in_the_composer_runs_a_team_and_alt_enter_inserts_a_newline() {
    let (mut app, id) = app_with_team(TEAM);
    assert!(app.handle_key(ch('i')).is_empty());
    assert_eq!(app.focus, Focus::Composer);
    type_text(&mut app, "first");
    assert!(app.handle_key(alt(KeyCode::Enter)).is_empty());
    type_text(&mut app, "second");
    assert_eq!(app.composer.text(), "first\nsecond");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::RunGroup {
            group_id: id.clone(),
            prompt: "first\nsecond".into()
        }]
    );
    assert!(app.composer.is_empty(), "sending empties the composer");
    // The engine registers the run and says so; from then on the team counts as running.
    assert!(!app.team_running(&id));
    run_started(&mut app, RunKey::team(&id));
    assert!(app.team_running(&id));
}

#[test]
fn global_keys_win_over_the_composer() {
    let (mut app, id) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "go");
    app.handle_key(key(KeyCode::Enter));
    run_started(&mut app, RunKey::team(&id));
    type_text(&mut app, "draft");
    let key_of = RunKey::team(&id);
    // Ctrl-P and Ctrl-X reach the app, not the textarea (which would move the cursor / cut).
    assert_eq!(
        app.handle_key(ctrl('p')),
        vec![Command::Pause { key: key_of.clone() }]
    );
    assert_eq!(
        app.handle_key(ctrl('p')),
        vec![Command::Resume { key: key_of.clone() }]
    );
    assert_eq!(
        app.handle_key(ctrl('x')),
        vec![Command::Stop { key: key_of.clone() }]
    );
    assert_eq!(app.composer.text(), "draft");
    assert_eq!(app.focus, Focus::Composer);
    // Plain `p` and `x` are text in the composer...
    type_text(&mut app, "px");
    assert_eq!(app.composer.text(), "draftpx");
    // ...and actions outside it.
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(app.focus, Focus::Sidebar);
    assert_eq!(app.handle_key(ch('p')), vec![Command::Pause { key: key_of }]);
}

#[test]
fn sending_while_a_cycle_runs_queues_the_message() {
    let (mut app, id) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "start");
    app.handle_key(key(KeyCode::Enter));
    run_started(&mut app, RunKey::team(&id));
    type_text(&mut app, "also consider cost");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::QueueMessage {
            group_id: id.clone(),
            text: "also consider cost".into()
        }]
    );
    assert_eq!(
        app.team_panel.cycles[&id].queued,
        vec!["also consider cost".to_string()]
    );
    let t = render(&mut app, 100, 30);
    assert!(
        screen_text(&t).contains("queued: 1 message"),
        "{}",
        screen_text(&t)
    );
}

#[test]
fn quit_asks_while_a_cycle_runs() {
    let (mut app, id) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "start");
    app.handle_key(key(KeyCode::Enter));
    run_started(&mut app, RunKey::team(&id));
    app.handle_key(key(KeyCode::Esc));
    assert!(app.handle_key(ch('q')).is_empty());
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
    assert!(!app.should_quit);
    assert_eq!(app.handle_key(ch('y')), vec![Command::Quit]);
    assert!(app.should_quit);

    let mut idle = empty_app();
    assert_eq!(idle.handle_key(ctrl('c')), vec![Command::Quit]);
}

#[test]
fn preset_picker_creates_a_team_from_the_keyboard() {
    let mut app = empty_app();
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(
        super::tui_support::builtin_catalog(),
    )));
    let commands = app.handle_key(ch('n'));
    assert_eq!(commands, vec![Command::LoadCatalog]);
    type_text(&mut app, "planning");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.dialogs.is_empty());
    let (name, team) = app.org.read(|o| {
        let g = o.groups.iter().find(|g| g.is_team()).expect("a team was created");
        (
            g.name.clone(),
            o.sessions_in(&g.id).iter().map(|s| s.role).collect::<Vec<_>>(),
        )
    });
    assert_eq!(name, "Planning Team");
    assert!(team.contains(&Role::Orchestrator));
    assert_eq!(app.focus, Focus::Composer, "ready to write the first prompt");
    assert!(matches!(app.selected_row(), Some(Row::Group(_))));
}

#[test]
fn a_plain_session_chats_and_streams_live() {
    let mut app = empty_app();
    app.handle_key(ch('N'));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Text(_))));
    // Replace the suggested name.
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
    type_text(&mut app, "hello?");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        vec![Command::Chat {
            session_id: id.clone(),
            prompt: "hello?".into()
        }]
    );
    let run = run_started(&mut app, RunKey::chat(&id));
    turn(&mut app, &run, &id, 1, "hello?", "Hi **there**\npartial");
    let text = screen_text(&render(&mut app, 80, 24));
    assert!(
        text.contains("hello?") && text.contains("Hi there") && text.contains("partial"),
        "{text}"
    );
    // The finished turn's event carried the stored answer: nothing is read from disk again.
    let view = app.transcripts.views.get(&id).expect("view");
    assert_eq!(view.messages.len(), 2);
    assert!(view.streaming.is_none());
}

/// A new session is shown like any other: its (empty) transcript is read, never left
/// "loading".
#[test]
fn a_new_session_asks_for_its_transcript() {
    let mut app = empty_app();
    app.handle_key(ch('N'));
    let commands = app.handle_key(key(KeyCode::Enter));
    let id = app.selected_session_id().expect("the new session is selected");
    // And its repository's AGENTS.md and skills are looked for, for its header.
    assert_eq!(
        commands,
        vec![
            Command::LoadTranscript {
                session_id: id.clone()
            },
            Command::FindRepoFiles {
                working_dir: super::tui_support::repo()
            }
        ]
    );
    assert!(
        !app.transcripts.views[&id].loaded,
        "loading until the read comes back"
    );
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: id.clone(),
        result: Ok(Default::default()),
    });
    assert!(app.transcripts.views[&id].loaded);
    assert!(!screen_text(&render(&mut app, 80, 24)).contains("loading"));
}

#[test]
fn delete_says_what_will_be_removed() {
    let (mut app, _) = app_with_team(TEAM);
    app.handle_key(ch('d'));
    let Some(Dialog::Confirm(c)) = app.dialogs.last() else {
        panic!("a confirmation")
    };
    assert!(
        c.message.contains("Research Panel") && c.message.contains("transcripts"),
        "{}",
        c.message
    );
    let commands = app.handle_key(ch('y'));
    assert!(
        matches!(commands.last(), Some(Command::RemoveFiles(removal)) if !removal.sessions.is_empty() && removal.group.is_some()),
        "{commands:?}"
    );
    assert!(app.org.read(|o| o.groups.iter().all(|g| !g.is_team())));
}

#[test]
fn help_is_generated_from_the_keymap_with_overrides() {
    let mut config = super::tui_support::config();
    config.keys.insert(
        "toggle_pause_cycle".into(),
        huddle::config::KeyList::One("ctrl-g".into()),
    );
    let mut org = huddle::model::Organization::default();
    huddle::model::reconcile::reconcile(&mut org);
    let (mut app, _) = super::tui_support::new_app(org, config);
    app.handle_key(ch('?'));
    let text = screen_text(&render(&mut app, 100, 40));
    assert!(text.contains("Ctrl-G") && !text.contains("Ctrl-P "), "{text}");
}

#[test]
fn transcript_pages_and_mouse_wheel_scroll() {
    let (mut app, _) = app_with_team(TEAM);
    let commands = app.handle_key(ch('j'));
    let Some(Command::LoadTranscript { session_id }) = commands.first().cloned() else {
        panic!("{commands:?}")
    };
    let messages = (0..200)
        .map(|i| Message::assistant(format!("answer number {i}")))
        .collect();
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: session_id.clone(),
        result: Ok(huddle::store::LoadedTranscript {
            messages,
            warnings: Vec::new(),
        }),
    });
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("answer number 199"), "{text}");
    app.handle_key(key(KeyCode::PageUp));
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(!text.contains("answer number 199"), "{text}");
    app.handle_key(key(KeyCode::PageDown));
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("answer number 199"), "{text}");
}

#[test]
fn mouse_click_selects_a_sidebar_row_and_focuses_panes() {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let (mut app, _) = app_with_team(TEAM);
    let _ = render(&mut app, 100, 30);
    let click = |column, row| MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    // Row 0 is the border; rows 1.. are default, the team, then its sessions.
    let commands = app.handle_mouse(click(3, 3));
    assert!(
        matches!(commands.first(), Some(Command::LoadTranscript { .. })),
        "{commands:?}"
    );
    assert!(matches!(app.selected_row(), Some(Row::Session(_))));
    app.handle_mouse(click(60, 5));
    assert_eq!(app.focus, Focus::Transcript);
    app.handle_mouse(click(60, 27));
    assert_eq!(app.focus, Focus::Composer);
}

#[test]
fn save_as_preset_asks_before_replacing_files() {
    use huddle::workspace::ExportOutcome;
    let (mut app, id) = app_with_team(TEAM);
    assert_eq!(
        app.handle_key(ch('S')),
        vec![Command::PlanExport { group_id: id.clone() }]
    );
    app.handle_app_event(AppEvent::Exported {
        group_id: id.clone(),
        result: Err(ExportOutcome::WouldOverwrite {
            files: vec!["/work/demo-repo/.squad/team.md".into()],
        }),
    });
    let Some(Dialog::Confirm(c)) = app.dialogs.last() else {
        panic!("a confirmation")
    };
    assert!(c.message.contains(".squad/team.md"), "{}", c.message);
    assert_eq!(
        app.handle_key(ch('y')),
        vec![Command::ExportGroup {
            group_id: id,
            confirmed: true
        }]
    );
}

#[test]
fn no_color_keeps_modifiers_and_drops_colours() {
    let (mut app, _) = app_with_team(TEAM);
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
    t.draw(|f| huddle::tui::render::draw(f, &mut app, true)).unwrap();
    let buffer = t.backend().buffer();
    assert!(
        buffer
            .content
            .iter()
            .all(|c| c.fg == ratatui::style::Color::Reset && c.bg == ratatui::style::Color::Reset)
    );
    assert!(
        buffer
            .content
            .iter()
            .any(|c| c.modifier.contains(ratatui::style::Modifier::REVERSED)),
        "the selection stays visible"
    );
}

#[test]
fn hints_name_the_keys_as_rebound_in_config() {
    use huddle::config::Config;
    use huddle::model::{Organization, reconcile};
    let config = || {
        Config::parse(
            "default_model: sim/demo\nkeys:\n  new_group_from_preset: T\n  new_session: f2\n  send: ctrl-s\n  focus_next: ctrl-n\n",
            std::path::Path::new("config.yaml"),
        )
        .expect("config")
    };
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let (mut app, _) = new_app(org, config());
    assert!(app.dialogs.is_empty(), "the keys are valid");
    assert_eq!(
        app.composer.area.placeholder_text(),
        "Select a session to chat, or press F2 for a new one"
    );
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("T      new team from a preset"), "{text}");
    assert!(text.contains("F2     new plain session"), "{text}");
    let status = text.lines().last().unwrap_or_default();
    assert!(status.contains("T new team · F2 new session"), "{status}");
    assert!(!text.contains(" N "), "no default key is named:\n{text}");
    app.focus = Focus::Transcript;
    app.handle_key(ch(' '));
    assert_eq!(
        app.flash,
        Some(("folding works in the sidebar (Ctrl-N to it)".to_string(), true))
    );

    let (mut team, _) = app_with_team_and_config(TEAM, config());
    let text = screen_text(&render(&mut team, 100, 30));
    assert!(text.contains("press Ctrl-S to run the team"), "{text}");
    team.handle_key(ch('i'));
    let text = screen_text(&render(&mut team, 100, 30));
    let status = text.lines().last().unwrap_or_default();
    assert!(status.starts_with("Ctrl-S send"), "{status}");
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
