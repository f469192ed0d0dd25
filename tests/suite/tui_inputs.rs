//! Input that never loses work: Ctrl-C clears a composer before it quits, each session and team
//! keeps its draft, drafts and history come back from the files, readline keys in every text
//! field, and `$EDITOR` (Ctrl-O) for the composer and the system prompt editor.

use std::collections::BTreeMap;

use crossterm::event::KeyCode;
use huddle::engine::events::RunKey;
use huddle::store::Inputs;
use huddle::tui::app::Focus;
use huddle::tui::command::{AppEvent, Command, EditorTarget};
use huddle::tui::dialogs::{Dialog, TextPurpose};

use super::tui_support::{app_with_session, app_with_team, ch, ctrl, key, run_started, type_text};

const TEAM: &str = "Research Panel";

#[test]
fn ctrl_c_clears_a_non_empty_composer_then_quits_and_asks_while_running() {
    let (mut app, id) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "half a thought");
    assert!(app.handle_key(ctrl('c')).is_empty(), "the first Ctrl-C clears");
    assert!(app.composer.is_empty());
    assert!(!app.should_quit);
    let (flash, _) = app.flash.clone().expect("says what happened");
    assert!(flash.contains("Ctrl-Y brings it back"), "{flash}");
    // The text is not lost: yank brings it back.
    app.handle_key(ctrl('y'));
    assert_eq!(app.composer.text(), "half a thought");
    app.handle_key(ctrl('c'));
    // While a run is in progress the second Ctrl-C asks.
    run_started(&mut app, RunKey::team(&id));
    assert!(app.handle_key(ctrl('c')).is_empty());
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
    app.handle_key(key(KeyCode::Esc));
    // Idle, an empty composer quits at once.
    let (mut idle, _) = app_with_team(TEAM);
    idle.handle_key(ch('i'));
    assert_eq!(idle.handle_key(ctrl('c')), vec![Command::Quit]);
}

#[test]
fn each_session_and_team_keeps_its_draft() {
    let (mut app, team) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "for the team");
    app.handle_key(key(KeyCode::Esc));
    // Down to the first member: its own (empty) draft.
    app.handle_key(ch('j'));
    assert!(app.selected_session_id().is_some());
    assert!(app.composer.is_empty(), "{}", app.composer.text());
    app.handle_key(ch('i'));
    type_text(&mut app, "for a member");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('k'));
    assert_eq!(app.selected_group_id(), Some(team.clone()));
    assert_eq!(app.composer.text(), "for the team");
    let drafts = app.composer.drafts_snapshot();
    assert_eq!(drafts.len(), 2, "{drafts:?}");
    assert_eq!(drafts[&team], "for the team");
}

#[test]
fn drafts_and_history_of_earlier_runs_come_back() {
    let (mut app, team) = app_with_team(TEAM);
    let mut drafts = BTreeMap::new();
    drafts.insert(team.clone(), "unsent yesterday".to_string());
    drafts.insert("a-deleted-session".to_string(), "gone".to_string());
    app.handle_app_event(AppEvent::InputsLoaded(Inputs {
        drafts,
        history: vec!["an old prompt".into()],
        problems: Vec::new(),
    }));
    assert_eq!(app.composer.text(), "unsent yesterday");
    app.handle_key(ch('i'));
    app.handle_key(ctrl('c'));
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "an old prompt");
    // Something to save now: the draft (the recalled prompt), and the history as loaded.
    let (drafts, history) = app.composer.unsaved().expect("changes to save");
    let drafts = drafts.expect("drafts");
    assert_eq!(drafts[&team], "an old prompt");
    assert!(!drafts.contains_key("a-deleted-session"), "{drafts:?}");
    assert_eq!(history.expect("history"), vec!["an old prompt".to_string()]);
}

#[test]
fn readline_keys_in_the_composer_and_in_dialog_fields() {
    let (mut app, _) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "one two three");
    app.handle_key(ctrl('w'));
    assert_eq!(app.composer.text(), "one two ");
    app.handle_key(ctrl('a'));
    app.handle_key(ctrl('k'));
    assert!(app.composer.is_empty());
    app.handle_key(ctrl('z'));
    assert_eq!(app.composer.text(), "one two ", "Ctrl-Z undoes");
    app.handle_key(ctrl('u'));
    assert!(app.composer.is_empty(), "Ctrl-U deletes to the line's start");
    // A dialog's one-line field (rename).
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('r'));
    app.handle_key(key(KeyCode::End));
    type_text(&mut app, " two");
    app.handle_key(ctrl('w'));
    app.handle_key(ctrl('u'));
    type_text(&mut app, "Renamed");
    app.handle_key(key(KeyCode::Enter));
    let name = app
        .org
        .read(|o| o.groups.iter().find(|g| g.is_team()).map(|g| g.name.clone()));
    assert_eq!(name.as_deref(), Some("Renamed"));
}

#[test]
fn ctrl_o_edits_the_composer_in_the_editor_and_a_failure_keeps_the_text() {
    let (mut app, _) = app_with_team(TEAM);
    app.handle_key(ch('i'));
    type_text(&mut app, "draft");
    assert_eq!(
        app.handle_key(ctrl('o')),
        vec![Command::OpenEditor {
            target: EditorTarget::Composer,
            text: "draft".into()
        }]
    );
    app.handle_app_event(AppEvent::Edited {
        target: EditorTarget::Composer,
        result: Err("the editor `false` exited with status 1; the text is kept".into()),
    });
    assert_eq!(app.composer.text(), "draft");
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(f, error)| *error && f.contains("status 1"))
    );
    app.handle_app_event(AppEvent::Edited {
        target: EditorTarget::Composer,
        result: Ok("edited\nin vim\n".into()),
    });
    assert_eq!(app.composer.text(), "edited\nin vim");
    assert_eq!(app.focus, Focus::Composer);
    // The editor's text is one edit: one Ctrl-Z brings the draft back, one Ctrl-R the edit.
    app.handle_key(ctrl('z'));
    assert_eq!(app.composer.text(), "draft");
    app.handle_key(ctrl('r'));
    assert_eq!(app.composer.text(), "edited\nin vim");
}

#[test]
fn ctrl_o_edits_the_system_prompt() {
    let (mut app, session) = app_with_session(Vec::new());
    app.handle_key(ch('e'));
    type_text(&mut app, "be brief");
    let purpose = TextPurpose::SystemPrompt(session.clone());
    assert_eq!(
        app.handle_key(ctrl('o')),
        vec![Command::OpenEditor {
            target: EditorTarget::Dialog(purpose.clone()),
            text: "be brief".into()
        }]
    );
    app.handle_app_event(AppEvent::Edited {
        target: EditorTarget::Dialog(purpose.clone()),
        result: Ok("be terse\n".into()),
    });
    app.handle_key(ctrl('z'));
    assert_eq!(
        app.dialogs.text_input(&purpose).map(|t| t.text()).as_deref(),
        Some("be brief"),
        "one Ctrl-Z undoes the editor's text"
    );
    app.handle_app_event(AppEvent::Edited {
        target: EditorTarget::Dialog(purpose),
        result: Ok("be very brief\n".into()),
    });
    app.handle_key(ctrl('s'));
    let prompt = app
        .org
        .read(|o| o.session(&session).and_then(|s| s.system_prompt.clone()));
    assert_eq!(prompt.as_deref(), Some("be very brief"));
}

#[test]
fn at_files_are_completed_read_off_the_ui_thread_and_sent_attached() {
    let (mut app, session) = app_with_session(Vec::new());
    app.handle_app_event(AppEvent::RepoFiles(vec!["src/a.rs".into(), "README.md".into()]));
    app.handle_key(ch('i'));
    type_text(&mut app, "see @sr");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.text(), "see @src/a.rs", "Tab completes");
    assert_eq!(app.focus, Focus::Composer, "Tab on an @word does not move focus");
    let reads = type_text(&mut app, " and @bad.bin");
    assert_eq!(
        reads,
        vec![Command::ReadAttachment {
            name: "src/a.rs".into()
        }]
    );
    // Enter: the last word is read first; the text stays until everything is read.
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::ReadAttachment {
            name: "bad.bin".into()
        }]
    );
    assert!(!app.composer.is_empty());
    let a = huddle::attachments::Attachment::new("src/a.rs", "fn a() {}".into());
    app.handle_app_event(AppEvent::AttachmentRead {
        name: "src/a.rs".into(),
        result: Ok(a.clone()),
    });
    app.handle_app_event(AppEvent::AttachmentRead {
        name: "bad.bin".into(),
        result: Err("@bad.bin: a binary file, refused".into()),
    });
    assert!(!app.composer.is_empty(), "a refused file keeps the text");
    let (flash, error) = app.flash.clone().expect("says why");
    assert!(error && flash.contains("binary"), "{flash}");
    let t = super::tui_support::render(&mut app, 100, 30);
    let screen = super::tui_support::screen_text(&t);
    assert!(
        screen.contains("⊕ src/a.rs") && screen.contains("✗ @bad.bin: a binary file"),
        "{screen}"
    );
    // Without the bad file it goes, attached.
    for _ in 0.." and @bad.bin".len() {
        app.handle_key(key(KeyCode::Backspace));
    }
    let sent = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        sent,
        vec![Command::Attached {
            attachments: vec![a],
            send: Box::new(Command::Chat {
                session_id: session,
                prompt: "see @src/a.rs".into()
            }),
        }]
    );
}

#[test]
fn the_completion_list_draws_on_any_screen() {
    let (mut app, _) = app_with_session(Vec::new());
    app.handle_app_event(AppEvent::RepoFiles(vec!["a.rs".into(), "b.rs".into()]));
    app.handle_key(ch('i'));
    type_text(&mut app, "@");
    app.handle_key(key(KeyCode::Tab));
    assert!(app.composer.attach.completion.is_some());
    for (w, h) in [(12, 8), (20, 10), (80, 24)] {
        super::tui_support::render(&mut app, w, h);
    }
    let t = super::tui_support::render(&mut app, 80, 24);
    assert!(super::tui_support::screen_text(&t).contains("@b.rs"));
}
