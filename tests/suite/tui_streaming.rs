//! Streaming answers: a reader scrolled up keeps the text they read while an answer streams
//! in below, is told that new text arrived, and follows it again at the bottom.

use crossterm::event::KeyCode;
use huddle::engine::events::EventKind;
use huddle::model::Message;

use super::tui_support::{app_with_session, default_group, engine_event, key, render, screen_text};

#[test]
fn a_reader_scrolled_up_keeps_the_same_text_while_an_answer_streams() {
    let messages = (0..60)
        .map(|i| Message::assistant(format!("old line {i}")))
        .collect();
    let (mut app, _) = app_with_session(messages);
    let group = default_group(&app);
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
            session_id: sid.as_str().into(),
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
                session_id: sid.as_str().into(),
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
            session_id: sid.into(),
            session: "scratch".into(),
            generation: 1,
            text: "the very latest\n".into(),
        },
    );
    assert!(screen_text(&render(&mut app, 100, 30)).contains("the very latest"));
}
