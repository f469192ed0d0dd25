//! Everyday tools: folding groups, copying text out, mouse capture, prompt history, `/` search
//! and single-session reflection, driven through keys like a user.

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, RunKey};
use huddle::model::{Message, Mode};
use huddle::tui::App;
use huddle::tui::app::Focus;
use huddle::tui::command::Command;
use huddle::tui::dialogs::Dialog;
use huddle::tui::sidebar::Row;
use ratatui::style::Modifier;

use super::tui_support::{
    alt, app_with_session, app_with_team, ch, config, ctrl, empty_app, engine_event, key, new_app, render,
    run_ended, run_started, screen_text, type_text,
};

fn sidebar_line(app: &mut App, needle: &str) -> String {
    let t = render(app, 120, 32);
    // The sidebar is the left 30 columns at 120 wide.
    screen_text(&t)
        .lines()
        .map(|l| l.chars().take(30).collect::<String>())
        .find(|l| l.contains(needle))
        .unwrap_or_default()
}

#[test]
fn groups_fold_and_unfold_and_stay_folded_after_a_restart() {
    let (mut app, id) = app_with_team("Research Panel");
    let members = app.org.read(|o| o.sessions_in(&id).len());
    assert!(members > 1);
    let all_rows = app.rows().len();
    assert_eq!(app.selected_row(), Some(Row::Group(id.clone())));
    assert!(sidebar_line(&mut app, "Research Panel").contains('▾'));

    app.handle_key(ch(' '));
    assert!(app.org.read(|o| o.ui.collapsed_groups.contains(&id)));
    assert_eq!(app.rows().len(), all_rows - members);
    let line = sidebar_line(&mut app, "Research Panel");
    assert!(
        line.contains("▸ Research Panel") && line.contains(&format!("({members})")),
        "{line}"
    );

    // Right unfolds; `h` on a member folds its group and selects the group.
    app.handle_key(key(KeyCode::Right));
    assert_eq!(app.rows().len(), all_rows);
    app.handle_key(ch('j'));
    assert!(matches!(app.selected_row(), Some(Row::Session(_))));
    app.handle_key(ch('h'));
    assert_eq!(app.selected_row(), Some(Row::Group(id.clone())));
    assert!(app.org.read(|o| o.ui.collapsed_groups.contains(&id)));

    // A busy member of a folded group makes the group row spin.
    let (member_id, member) = app
        .org
        .read(|o| o.sessions_in(&id).first().map(|s| (s.id.clone(), s.name.clone())))
        .expect("a member");
    let run = run_started(&mut app, RunKey::team(&id));
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::TurnStarted {
            session_id: member_id.into(),
            session: member.into(),
            generation: 1,
            prompt: None,
        },
    );
    let line = sidebar_line(&mut app, "Research Panel");
    assert!(
        !line.contains('▸') && !line.contains('▾'),
        "spins instead: {line}"
    );

    // A new app over the saved organization starts folded, on the group.
    let saved = app.org.snapshot();
    let (restarted, _) = new_app(saved, config());
    assert_eq!(restarted.rows().len(), all_rows - members);
    assert_eq!(restarted.selected_row(), Some(Row::Group(id.clone())));

    // Folding is a sidebar key: elsewhere it says so and changes nothing.
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.focus, Focus::Transcript);
    app.handle_key(key(KeyCode::Left));
    assert!(app.flash.as_ref().is_some_and(|(t, _)| t.contains("sidebar")));
    app.handle_key(key(KeyCode::BackTab));
    app.handle_key(ch('l'));
    assert!(!app.org.read(|o| o.ui.collapsed_groups.contains(&id)));
}

#[test]
fn the_selected_session_restores_its_folded_group() {
    let (mut app, id) = app_with_team("Research Panel");
    app.handle_key(ch('j'));
    let session = app.selected_session_id().expect("a member");
    app.handle_key(ch(' '));
    // The stored selection still names the hidden session: the group is selected instead.
    let mut saved = app.org.snapshot();
    saved.ui.selected_session = Some(session);
    let (restarted, _) = new_app(saved, config());
    assert_eq!(restarted.selected_row(), Some(Row::Group(id)));
}

#[test]
fn y_copies_the_raw_last_answer_or_the_message_in_view() {
    let mut messages = vec![
        Message::user("question"),
        Message::assistant("FIRST **answer**\n\n- a\n- b"),
    ];
    for i in 0..40 {
        messages.push(Message::user(format!("more {i}")));
    }
    messages.push(Message::assistant("The *last* answer\n```rust\nfn x() {}\n```"));
    let (mut app, _) = app_with_session(messages);
    render(&mut app, 100, 30);
    assert_eq!(
        app.handle_key(ch('y')),
        vec![Command::CopyToClipboard {
            text: "The *last* answer\n```rust\nfn x() {}\n```".into()
        }]
    );
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, e)| t.contains("copied 4 line") && !e)
    );
    // Scrolled to the top: the message at the top of the window.
    for _ in 0..40 {
        app.handle_key(key(KeyCode::PageUp));
        render(&mut app, 100, 30);
    }
    assert_eq!(
        app.handle_key(ch('y')),
        vec![Command::CopyToClipboard {
            text: "question".into()
        }]
    );
    // Nothing to copy on a group row.
    app.handle_key(ch('k'));
    assert!(app.handle_key(ch('y')).is_empty());
    assert!(app.flash.as_ref().is_some_and(|(_, e)| *e));
}

#[test]
fn c_toggles_mouse_capture_and_the_status_line_says_so() {
    let mut app = empty_app();
    assert_eq!(app.handle_key(ch('c')), vec![Command::SetMouseCapture(false)]);
    let t = render(&mut app, 100, 30);
    let status = screen_text(&t).lines().last().unwrap_or_default().to_string();
    assert!(status.contains("mouse: off"), "{status}");
    assert_eq!(app.handle_key(ch('c')), vec![Command::SetMouseCapture(true)]);
    let t = render(&mut app, 100, 30);
    assert!(!screen_text(&t).contains("mouse: off"));
}

#[test]
fn up_and_down_recall_sent_prompts_without_breaking_multiline_editing() {
    let (mut app, _) = app_with_session(Vec::new());
    app.handle_key(ch('i'));
    type_text(&mut app, "first");
    assert!(matches!(
        app.handle_key(key(KeyCode::Enter)).as_slice(),
        [Command::Chat { .. }]
    ));
    type_text(&mut app, "second");
    app.handle_key(alt(KeyCode::Enter));
    type_text(&mut app, "line");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.composer.is_empty());

    let up = || key(KeyCode::Up);
    let down = || key(KeyCode::Down);
    app.handle_key(up());
    assert_eq!(app.composer.text(), "second\nline");
    // The cursor is on the recalled prompt's last line: Up first moves it to the first line.
    app.handle_key(up());
    assert_eq!(app.composer.text(), "second\nline");
    app.handle_key(up());
    assert_eq!(app.composer.text(), "first");
    app.handle_key(up());
    assert_eq!(app.composer.text(), "first", "stays on the oldest");
    app.handle_key(down());
    assert_eq!(app.composer.text(), "second\nline");
    app.handle_key(down());
    assert_eq!(app.composer.text(), "", "past the newest: empty again");

    // An edited recall is text like any other: Up moves the cursor, nothing is replaced.
    app.handle_key(up());
    app.handle_key(up());
    app.handle_key(up());
    type_text(&mut app, "!");
    assert_eq!(app.composer.text(), "first!");
    app.handle_key(up());
    assert_eq!(app.composer.text(), "first!");
    // Multi-line text typed by hand: Up and Down move between its lines.
    app.composer.take();
    type_text(&mut app, "a");
    app.handle_key(alt(KeyCode::Enter));
    type_text(&mut app, "b");
    app.handle_key(up());
    type_text(&mut app, "X");
    assert_eq!(app.composer.text(), "aX\nb");
    app.handle_key(down());
    type_text(&mut app, "Y");
    assert_eq!(app.composer.text(), "aX\nbY");
    // Sending a recalled prompt to a team records it once more; history is for the whole run.
    let (mut team, _) = app_with_team("Research Panel");
    team.composer.history = app.composer.history.clone();
    team.handle_key(ch('i'));
    team.handle_key(up());
    assert_eq!(team.composer.text(), "second\nline");
}

#[test]
fn slash_searches_the_transcript_and_n_moves_between_matches() {
    let mut messages = vec![Message::user("where is the NEEDLE?")];
    for i in 0..60 {
        messages.push(Message::assistant(format!("filler paragraph {i}")));
    }
    messages.push(Message::assistant("a needle in the middle"));
    for i in 0..60 {
        messages.push(Message::assistant(format!("more filler {i}")));
    }
    let (mut app, _) = app_with_session(messages);
    render(&mut app, 100, 30);
    app.handle_key(ch('/'));
    assert_eq!(app.focus, Focus::Transcript);
    type_text(&mut app, "needle");
    // While typing, `n` and `q` are text, not keys.
    assert!(!app.should_quit);
    let t = render(&mut app, 100, 30);
    assert!(
        screen_text(&t)
            .lines()
            .last()
            .unwrap_or_default()
            .contains("/needle")
    );
    app.handle_key(key(KeyCode::Enter));
    let search = app.transcripts.search.clone().expect("search is active");
    assert!(!search.editing);
    // From the window (the end of the transcript) the search wraps round to the first match.
    assert_eq!(search.position, Some((1, 2)));
    let t = render(&mut app, 100, 30);
    let text = screen_text(&t);
    assert!(text.contains("where is the NEEDLE?"), "{text}");
    assert!(text.contains("match 1/2"), "{text}");
    // The match is highlighted (reversed), the rest of the line is not.
    let buffer = t.backend().buffer();
    let (x, y) = find(&text, "NEEDLE?").expect("on screen");
    assert!(buffer[(x, y)].modifier.contains(Modifier::REVERSED));
    assert!(!buffer[(x + 6, y)].modifier.contains(Modifier::REVERSED));

    app.handle_key(ch('n'));
    assert_eq!(
        app.transcripts.search.as_ref().and_then(|s| s.position),
        Some((2, 2))
    );
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("a needle in the middle"), "{text}");
    assert!(!text.contains("where is the NEEDLE?"), "{text}");
    app.handle_key(ch('n'));
    assert_eq!(
        app.transcripts.search.as_ref().and_then(|s| s.position),
        Some((1, 2))
    );
    app.handle_key(ch('N'));
    assert_eq!(
        app.transcripts.search.as_ref().and_then(|s| s.position),
        Some((2, 2))
    );
    // Esc leaves the search; `n` is the new-team key again.
    app.handle_key(key(KeyCode::Esc));
    assert!(app.transcripts.search.is_none());
    assert_eq!(app.handle_key(ch('n')), vec![Command::LoadCatalog]);

    // No match: said in the status line.
    app.dialogs.clear();
    app.handle_key(ch('/'));
    type_text(&mut app, "zebra");
    app.handle_key(key(KeyCode::Enter));
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, e)| t.contains("no match") && *e)
    );
    // Ctrl-C while typing leaves the search, not huddle.
    app.handle_key(ch('/'));
    app.handle_key(ctrl('c'));
    assert!(app.transcripts.search.is_none() && !app.should_quit);
}

/// The (column, row) of `needle` in a screen dump (ASCII-only lines before it are assumed).
fn find(text: &str, needle: &str) -> Option<(u16, u16)> {
    text.lines().enumerate().find_map(|(y, l)| {
        let byte = l.find(needle)?;
        Some((l[..byte].chars().count() as u16, y as u16))
    })
}

#[test]
fn r_reflects_a_plain_session_and_p_and_x_control_it() {
    let (mut app, id) = app_with_session(vec![
        Message::user("Explain lifetimes"),
        Message::assistant("..."),
    ]);
    // The goal is the last prompt when the composer is empty.
    app.handle_key(ch('R'));
    let Some(Dialog::Text(input)) = app.dialogs.last() else {
        panic!("asks the max iterations");
    };
    assert_eq!(input.text(), "3");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::ReflectSession {
            session_id: id.clone(),
            goal: "Explain lifetimes".into(),
            max_iterations: 3
        }]
    );
    let key_of = RunKey::reflection(&id);
    let run = run_started(&mut app, key_of.clone());
    assert!(app.session_busy(&id) && app.anything_running());
    let group = app
        .org
        .read(|o| o.default_group().map(|g| g.id.clone()))
        .unwrap_or_default();
    // The engine's cycle events name the default group: it is not a running team.
    engine_event(
        &mut app,
        &group,
        Some(&run),
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 3,
        },
    );
    assert!(!app.team_running(&group));
    let status = screen_text(&render(&mut app, 120, 30));
    assert!(
        status.contains("1 running") && status.contains("Ctrl-P pause"),
        "{status}"
    );
    assert_eq!(
        app.handle_key(ch('p')),
        vec![Command::Pause { key: key_of.clone() }]
    );
    // Not paused until the engine says so.
    assert!(!app.runs.reflection(&id).expect("run").paused);
    engine_event(&mut app, &group, Some(&run), EventKind::CyclePaused);
    assert!(app.runs.reflection(&id).expect("run").paused);
    assert_eq!(
        app.handle_key(ctrl('p')),
        vec![Command::Resume { key: key_of.clone() }]
    );
    engine_event(&mut app, &group, Some(&run), EventKind::CycleResumed);
    assert!(!app.runs.reflection(&id).expect("run").paused);
    assert_eq!(
        app.handle_key(ch('x')),
        vec![Command::StopSession {
            session_id: id.clone()
        }]
    );
    // Busy: no second reflection.
    app.handle_key(ch('R'));
    assert!(app.dialogs.is_empty());
    run_ended(&mut app, &run, key_of, None);
    assert!(!app.session_busy(&id));
    app.dialogs.clear();

    // The composer's text is the goal, and sending it empties the composer.
    app.handle_key(ch('i'));
    type_text(&mut app, "Make it shorter");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('R'));
    app.handle_key(key(KeyCode::Backspace));
    type_text(&mut app, "250");
    app.handle_key(key(KeyCode::Enter));
    assert!(
        matches!(app.dialogs.last(), Some(Dialog::Notice(_))),
        "250 is out of range"
    );
    app.dialogs.clear();
    app.handle_key(ch('R'));
    app.handle_key(key(KeyCode::Backspace));
    type_text(&mut app, "2");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::ReflectSession {
            session_id: id,
            goal: "Make it shorter".into(),
            max_iterations: 2
        }]
    );
    assert!(app.composer.is_empty());

    // A team member is not reflected on alone.
    let (mut team, _) = app_with_team("Research Panel");
    team.handle_key(ch('j'));
    team.handle_key(ch('R'));
    assert!(team.dialogs.is_empty());
}

/// The key the UI pauses and stops a reflection by is the one the engine registers, and the
/// pause the UI shows is the one the engine confirms, in events that carry the run's id.
#[tokio::test]
async fn a_reflections_pause_is_confirmed_by_the_engine() {
    use super::engine_fixture::team;
    use super::fake_llm_server::Reply;
    use huddle::engine::ReflectionRequest;
    let mut f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script(
        "w-solo",
        vec![
            Reply::chunks(["slow ", "answer ", "still ", "coming"])
                .chunk_delay(std::time::Duration::from_millis(100)),
        ],
    );
    let id = f.session_id("t-solo");
    let request = ReflectionRequest {
        goal: "Explain".into(),
        max_iterations: 3,
        evaluator_model: None,
        model_override: None,
    };
    let run = f.engine.start_reflection(&id, request).expect("registered");
    let key = RunKey::reflection(&id);
    // Registered before it is polled: a stop or pause right away finds it.
    assert!(f.engine.is_running(&key));
    let run = tokio::spawn(run);
    f.wait_for_requests("w-solo", 1).await;
    assert!(f.engine.pause(&key));
    let mut seen = Vec::new();
    let paused = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            let event = f.events.recv().await?;
            let done = matches!(event.kind, EventKind::CyclePaused);
            seen.push(event);
            if done {
                return seen.last().cloned();
            }
        }
    })
    .await
    .expect("the pause took effect")
    .expect("events");
    let started = seen
        .iter()
        .find(|e| matches!(&e.kind, EventKind::RunStarted { key: k } if *k == key))
        .expect("run_started");
    assert_eq!(
        paused.run_id, started.run_id,
        "the pause names the reflection's run"
    );
    assert!(f.engine.resume(&key));
    assert!(f.engine.stop(&key));
    let report = run.await.expect("joins").expect("the reflection ran");
    assert_eq!(report.outcome, huddle::model::CycleOutcome::Cancelled);
    assert!(!f.engine.is_running(&key));
    let ended = std::iter::from_fn(|| f.events.try_recv().ok())
        .find(|e| matches!(&e.kind, EventKind::RunEnded { key: k, .. } if *k == key))
        .expect("run_ended");
    assert_eq!(ended.run_id, started.run_id);
}

#[test]
fn folded_team_and_mouse_off_snapshot() {
    let (mut app, _) = app_with_team("Code Review Team");
    app.handle_key(ch(' '));
    app.handle_key(ch('c'));
    let text = screen_text(&render(&mut app, 100, 30));
    crate::tui_snapshot!("sidebar_folded_mouse_off_100x30", text);
}
