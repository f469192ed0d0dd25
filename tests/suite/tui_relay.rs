//! A relay in the TUI, driven by keys: a waiting draft opens its popup; `y` approves, `e`
//! edits (the editor's text is sent), `n` rejects with a note, `t` takes over (the composer
//! then writes to the counterpart) and `v` … `h` hands back; Enter never sends a draft.

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, RunKey};
use huddle::model::{DraftAnswer, RelayPhase, SentAs};
use huddle::tui::App;
use huddle::tui::command::Command;
use huddle::tui::dialogs::Dialog;

use super::tui_support::{
    app_with_team, ch, ctrl, engine_event, key, render, screen_text, start_run, type_text,
};

const PRESET: &str = "Negotiator";

fn draft(app: &mut App, gid: &str, run: &str, turn: u32, text: &str) {
    engine_event(
        app,
        gid,
        Some(run),
        EventKind::RelayState {
            state: RelayPhase::ReadyToSend,
            turn: turn - 1,
            max_turns: 8,
            reason: None,
        },
    );
    engine_event(
        app,
        gid,
        Some(run),
        EventKind::RelayDraft {
            session_id: "driver".into(),
            turn,
            text: text.into(),
            waiting: true,
            review: Some("manual approval".into()),
        },
    );
}

fn answers(commands: &[Command]) -> Vec<DraftAnswer> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::AnswerRelay { answer, .. } => Some(answer.clone()),
            _ => None,
        })
        .collect()
}

fn popup_open(app: &App) -> bool {
    matches!(app.dialogs.last(), Some(Dialog::RelayDraft(_)))
}

#[test]
fn a_waiting_draft_opens_the_popup_and_y_approves_never_enter() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    draft(&mut app, &gid, &run, 1, "Offer 400");
    assert!(popup_open(&app));
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(
        screen.contains("Offer 400") && screen.contains("y send as is"),
        "{screen}"
    );
    assert!(
        answers(&app.handle_key(key(KeyCode::Enter))).is_empty(),
        "Enter never sends"
    );
    assert!(popup_open(&app));
    assert_eq!(answers(&app.handle_key(ch('y'))), vec![DraftAnswer::Approve]);
    assert!(!popup_open(&app));
}

#[test]
fn e_edits_the_draft_and_sends_the_edited_text() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    draft(&mut app, &gid, &run, 1, "Offer 400");
    assert!(answers(&app.handle_key(ch('e'))).is_empty());
    assert!(matches!(app.dialogs.last(), Some(Dialog::Text(_))), "the editor");
    app.handle_key(key(KeyCode::End));
    type_text(&mut app, " and not a cent more");
    let sent = answers(&app.handle_key(ctrl('s')));
    assert_eq!(
        sent,
        vec![DraftAnswer::Edit("Offer 400 and not a cent more".into())]
    );
}

#[test]
fn n_rejects_with_a_note() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    draft(&mut app, &gid, &run, 1, "Offer 900");
    app.handle_key(ch('n'));
    type_text(&mut app, "far too high");
    let sent = answers(&app.handle_key(key(KeyCode::Enter)));
    assert_eq!(sent, vec![DraftAnswer::Reject("far too high".into())]);
}

#[test]
fn esc_leaves_the_draft_waiting_and_v_opens_it_again() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    draft(&mut app, &gid, &run, 2, "Offer 410");
    assert!(answers(&app.handle_key(key(KeyCode::Esc))).is_empty());
    assert!(!popup_open(&app));
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(screen.contains("draft 2 waits"), "{screen}");
    app.handle_key(ch('v'));
    assert!(popup_open(&app));
}

#[test]
fn take_over_sends_the_composer_text_as_yours_until_handed_back() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    draft(&mut app, &gid, &run, 1, "Offer 400");
    assert_eq!(answers(&app.handle_key(ch('t'))), vec![DraftAnswer::TakeOver]);
    engine_event(
        &mut app,
        &gid,
        Some(&run),
        EventKind::RelayTakeOver {
            turn: 0,
            active: true,
        },
    );
    app.handle_key(ch('i'));
    type_text(&mut app, "My own offer: 420");
    let sent = answers(&app.handle_key(key(KeyCode::Enter)));
    assert_eq!(sent, vec![DraftAnswer::Yours("My own offer: 420".into())]);
    engine_event(
        &mut app,
        &gid,
        Some(&run),
        EventKind::RelaySent {
            turn: 1,
            sent_as: SentAs::Yours,
            trace_id: "t".into(),
            hop: 1,
            text: "My own offer: 420".into(),
        },
    );
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(screen.contains("[yours] My own offer: 420"), "{screen}");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('v'));
    assert!(popup_open(&app), "the take-over popup");
    assert_eq!(answers(&app.handle_key(ch('h'))), vec![DraftAnswer::HandBack]);
    engine_event(
        &mut app,
        &gid,
        Some(&run),
        EventKind::RelayTakeOver {
            turn: 1,
            active: false,
        },
    );
    // Handed back: the composer no longer writes to the counterpart.
    app.handle_key(ch('i'));
    type_text(&mut app, "hello?");
    assert!(answers(&app.handle_key(key(KeyCode::Enter))).is_empty());
}

#[test]
fn the_banner_names_the_limit_that_ended_the_relay() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    draft(&mut app, &gid, &run, 1, "Offer 400");
    engine_event(
        &mut app,
        &gid,
        Some(&run),
        EventKind::RelayState {
            state: RelayPhase::Stopped,
            turn: 8,
            max_turns: 8,
            reason: Some("limit reached: max_turns (8)".into()),
        },
    );
    assert!(!popup_open(&app), "a settled draft's popup closes");
    super::tui_support::run_ended(&mut app, &run, RunKey::team(&gid), None);
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(
        screen.contains("■ relay stopped after 8 turn(s): limit reached:"),
        "{screen}"
    );
}

#[test]
fn a_draft_arriving_while_a_dialog_is_open_waits_under_it() {
    let (mut app, gid) = app_with_team(PRESET);
    let run = start_run(&mut app, &gid);
    app.handle_key(ch('r'));
    assert!(
        matches!(app.dialogs.last(), Some(Dialog::Text(_))),
        "the rename field"
    );
    draft(&mut app, &gid, &run, 1, "Offer 400");
    assert!(
        matches!(app.dialogs.last(), Some(Dialog::Text(_))),
        "still on top"
    );
    // `y` is typed into the field, not taken as an approval.
    assert!(answers(&type_text(&mut app, "y")).is_empty());
    app.handle_key(key(KeyCode::Esc));
    assert!(popup_open(&app), "the draft shows once the field closes");
}
