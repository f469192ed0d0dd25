//! Untrusted text is sanitised before it is drawn: escape sequences leave no residue, bidi
//! overrides and zero-width characters vanish.

use huddle::model::Message;
use huddle::tui::command::{AppEvent, Command};

use super::tui_support::{app_with_team, ch, render, screen_text};

#[test]
fn hostile_model_text_is_drawn_clean() {
    let (mut app, _) = app_with_team("Research Panel");
    let commands = app.handle_key(ch('j'));
    let Some(Command::LoadTranscript { session_id }) = commands.first().cloned() else {
        panic!("{commands:?}")
    };
    let hostile = "safe\x1b]0;pwned\x07 start \x1b[2Jcleared \u{202e}desrever\u{202c} zero\u{200b}width \x1b[31mred\x1b[0m end";
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id,
        result: Ok(huddle::store::LoadedTranscript {
            messages: vec![Message::assistant(hostile)],
            warnings: Vec::new(),
        }),
    });
    let t = render(&mut app, 120, 30);
    let text = screen_text(&t);
    assert!(
        text.contains("safe start cleared desrever zerowidth red end"),
        "{text}"
    );
    for residue in ["0;pwned", "pwned", "[2J", "[31m", "[0m"] {
        assert!(!text.contains(residue), "`{residue}` reached the screen:\n{text}");
    }
    for c in text.chars() {
        assert!(
            !huddle::text::sanitize::is_invisible_or_control(c) || c == '\n',
            "U+{:04X} reached the screen",
            c as u32
        );
    }
}
