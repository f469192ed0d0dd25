//! Reading long work (issue 15 item 10): Home/End and g/G jump to the top and bottom of a
//! transcript or a team's timeline, the timeline scrolls (PgUp/PgDn, j/k when focused, the
//! wheel), and a running member's row shows what it is writing.

use crossterm::event::{KeyCode, KeyModifiers, MouseEvent, MouseEventKind};
use huddle::engine::events::EventKind;
use huddle::model::{Message, Mode};

use super::tui_support::{
    app_with_session, app_with_team, ch, engine_event, key, render, screen_text, session_id, start_cycle,
    type_text,
};

const W: u16 = 80;
const H: u16 = 24;

/// A team with a broadcast run whose timeline has `n` numbered warning lines.
fn team_with_long_timeline(n: usize) -> (huddle::tui::App, String, String) {
    let (mut app, id) = app_with_team("Research Panel");
    let run = start_cycle(&mut app, &id, Mode::Broadcast);
    for i in 1..=n {
        engine_event(
            &mut app,
            &id,
            Some(&run),
            EventKind::Warning {
                message: format!("entry {i:03}"),
            },
        );
    }
    (app, id, run)
}

fn wheel(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn the_team_timeline_scrolls_and_g_and_home_jump_to_its_ends() {
    let (mut app, _, _) = team_with_long_timeline(80);
    let text = screen_text(&render(&mut app, W, H));
    assert!(
        text.contains("entry 080") && !text.contains("entry 001"),
        "{text}"
    );

    app.handle_key(ch('g'));
    let text = screen_text(&render(&mut app, W, H));
    assert!(
        text.contains("broadcast run") && !text.contains("entry 080"),
        "{text}"
    );

    app.handle_key(ch('G'));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("entry 080"), "{text}");

    app.handle_key(key(KeyCode::Home));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("broadcast run"), "{text}");
    app.handle_key(key(KeyCode::PageDown));
    let text = screen_text(&render(&mut app, W, H));
    assert!(
        !text.contains("broadcast run"),
        "a page down from the top: {text}"
    );
    app.handle_key(key(KeyCode::End));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("entry 080"), "{text}");

    app.handle_key(key(KeyCode::PageUp));
    let text = screen_text(&render(&mut app, W, H));
    assert!(!text.contains("entry 080") && text.contains("entry 0"), "{text}");
    app.handle_key(key(KeyCode::PageDown));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("entry 080"), "{text}");
}

#[test]
fn j_and_k_scroll_the_focused_timeline_and_the_wheel_too() {
    let (mut app, _, _) = team_with_long_timeline(80);
    render(&mut app, W, H);
    // Focus on the timeline.
    app.handle_key(key(KeyCode::Tab));
    app.handle_key(ch('k'));
    let text = screen_text(&render(&mut app, W, H));
    assert!(
        !text.contains("entry 080") && text.contains("entry 079"),
        "{text}"
    );
    app.handle_key(ch('j'));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("entry 080"), "{text}");

    let inner = app.layout.transcript_inner();
    for _ in 0..10 {
        app.handle_mouse(wheel(MouseEventKind::ScrollUp, inner.x + 2, inner.y + 2));
    }
    let text = screen_text(&render(&mut app, W, H));
    assert!(!text.contains("entry 080"), "{text}");
}

#[test]
fn a_scrolled_up_timeline_stays_put_as_entries_arrive() {
    let (mut app, id, run) = team_with_long_timeline(80);
    render(&mut app, W, H);
    app.handle_key(key(KeyCode::PageUp));
    let before = screen_text(&render(&mut app, W, H));
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::Warning {
            message: "entry 081".into(),
        },
    );
    let after = screen_text(&render(&mut app, W, H));
    assert!(!after.contains("entry 081"));
    assert_eq!(before, after, "the text read does not move");
}

#[test]
fn home_and_end_jump_through_a_session_transcript_but_not_in_the_composer() {
    let mut messages = vec![Message::user("the very first question")];
    for i in 0..60 {
        messages.push(Message::assistant(format!("answer {i}")));
    }
    let (mut app, _) = app_with_session(messages);
    let text = screen_text(&render(&mut app, W, H));
    assert!(!text.contains("the very first question"));
    app.handle_key(key(KeyCode::Home));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("the very first question"), "{text}");
    app.handle_key(ch('G'));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("answer 59") && !text.contains("the very first question"));
    app.handle_key(ch('g'));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("the very first question"));
    app.handle_key(key(KeyCode::PageDown));
    let text = screen_text(&render(&mut app, W, H));
    assert!(
        !text.contains("the very first question"),
        "a page down from the top: {text}"
    );
    app.handle_key(key(KeyCode::End));
    let text = screen_text(&render(&mut app, W, H));
    assert!(text.contains("answer 59"));

    // In the composer Home/End and g/G are text editing.
    app.handle_key(ch('i'));
    type_text(&mut app, "bc");
    app.handle_key(key(KeyCode::Home));
    type_text(&mut app, "a");
    app.handle_key(key(KeyCode::End));
    type_text(&mut app, "gG");
    assert_eq!(app.composer.text(), "abcgG");
}

#[test]
fn a_running_members_row_shows_what_it_is_writing() {
    let (mut app, id) = app_with_team("Research Panel");
    let run = start_cycle(&mut app, &id, Mode::Broadcast);
    let analyst = session_id(&app, "research-panel-analyst");
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::TurnStarted {
            session_id: analyst.as_str().into(),
            session: "research-panel-analyst".into(),
            generation: 1,
            prompt: None,
        },
    );
    for piece in ["First para", "graph done.\nNow weighing ", "the options"] {
        engine_event(
            &mut app,
            &id,
            Some(&run),
            EventKind::Delta {
                session_id: analyst.as_str().into(),
                session: "research-panel-analyst".into(),
                generation: 1,
                text: piece.into(),
            },
        );
    }
    let text = screen_text(&render(&mut app, 200, 60));
    assert!(text.contains("› Now weighing the options"), "{text}");
    assert!(!text.contains("First paragraph"), "only the last line: {text}");
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::TurnFinished {
            session_id: analyst.as_str().into(),
            session: "research-panel-analyst".into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 10,
            usage: None,
            error: None,
            message: None,
            cost_usd: None,
        },
    );
    let text = screen_text(&render(&mut app, 200, 60));
    assert!(
        !text.contains("› Now weighing"),
        "gone when the turn ends: {text}"
    );
}

#[test]
fn the_orchestrator_writing_shows_in_the_panel_until_its_turn_ends() {
    let (mut app, id) = app_with_team("Code Review Team");
    let run = start_cycle(&mut app, &id, Mode::OrchestratorReflect);
    let lead = session_id(&app, "code-review-team-orchestrator");
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::Delta {
            session_id: lead.as_str().into(),
            session: "code-review-team-orchestrator".into(),
            generation: 1,
            text: "Plan:\n@worker:security check the".into(),
        },
    );
    let text = screen_text(&render(&mut app, 200, 60));
    assert!(
        text.lines()
            .any(|l| l.contains("✎ orchestrator › ") && l.contains("security check the")),
        "the end of the line it writes: {text}"
    );
    assert!(!text.contains("Plan:"), "only its last line");
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::TurnFinished {
            session_id: lead.into(),
            session: "code-review-team-orchestrator".into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 5,
            usage: None,
            error: None,
            message: None,
            cost_usd: None,
        },
    );
    let text = screen_text(&render(&mut app, 200, 60));
    assert!(!text.contains("✎ orchestrator"), "{text}");
}
