//! Context control in the TUI: `C` starts a new conversation (the old one is kept and `[` / `]`
//! read it back, also after a restart), `K` switches a team's memory, and the context meter
//! warns before a conversation overflows the model's window.

use std::path::Path;

use crossterm::event::KeyCode;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::model::{Memory, Message, Usage};
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::workspace::Workspace;

use super::run_timeline::{config, open};
use super::tui_support::{
    app_with_session, app_with_team, ch, engine_event, key, notice_title, render, screen_text, session_id,
    type_text,
};

/// A workspace in `home` with a plain session `chat`.
fn workspace_with_session(home: &Path) -> (Workspace, String) {
    let ws = open(home);
    let group = ws
        .org
        .read(|o| o.default_group().map(|g| g.id.clone()))
        .expect("group");
    let id = ws.edits.create_session(&group, "chat").expect("session");
    (ws, id)
}

/// An app over the workspace with session `id` selected and its transcript read.
fn app_on(ws: &Workspace, home: &Path, id: &str) -> App {
    let (mut app, mut commands) = App::new(ws.edits.clone(), config(), home.join("repo"), Vec::new());
    for _ in 0..10 {
        if app.selected_session_id().as_deref() == Some(id) {
            break;
        }
        commands.extend(app.handle_key(ch('j')));
    }
    assert_eq!(app.selected_session_id().as_deref(), Some(id));
    let asked = commands
        .iter()
        .any(|c| matches!(c, Command::LoadTranscript { session_id } if session_id == id));
    assert!(asked, "{commands:?}");
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: id.to_string(),
        result: ws.engine.load_transcript(id).map_err(|e| e.to_string()),
    });
    app
}

/// Asserts the screen shows `present` and not `absent`; returns it.
fn shows(app: &mut App, present: &str, absent: &str) -> String {
    let screen = screen_text(&render(app, 100, 30));
    assert!(screen.contains(present) && !screen.contains(absent), "{screen}");
    screen
}

fn feed(app: &mut App, events: &mut tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) {
    while let Ok(e) = events.try_recv() {
        app.handle_app_event(AppEvent::Engine(e));
    }
}

#[tokio::test]
async fn new_conversation_keeps_the_old_one_to_browse_also_after_a_restart() {
    let home = tempfile::tempdir().expect("home");
    let (mut ws, id) = workspace_with_session(home.path());
    ws.engine
        .ask(&id, "FIRST QUESTION".into(), None)
        .await
        .expect("asked");
    let mut app = app_on(&ws, home.path(), &id);
    feed(&mut app, &mut ws.events);
    assert!(screen_text(&render(&mut app, 100, 30)).contains("FIRST QUESTION"));

    app.handle_key(ch('C'));
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, e)| !e && t.contains("new conversation")),
        "{:?}",
        app.flash
    );
    feed(&mut app, &mut ws.events);
    ws.engine
        .ask(&id, "SECOND QUESTION".into(), None)
        .await
        .expect("asked");
    feed(&mut app, &mut ws.events);
    shows(&mut app, "SECOND QUESTION", "FIRST QUESTION");

    // `[` reads the earlier conversation, `]` comes back.
    app.handle_key(ch('['));
    let screen = shows(&mut app, "FIRST QUESTION", "SECOND QUESTION");
    assert!(screen.contains("conversation 1/2 (read-only"), "{screen}");
    app.handle_key(ch('['));
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, _)| t.contains("first conversation"))
    );
    app.handle_key(ch(']'));
    shows(&mut app, "SECOND QUESTION", "(read-only");

    // After a restart: the same, read from the transcript file.
    ws.engine.flush().expect("flush");
    drop(app);
    drop(ws);
    let ws = open(home.path());
    let mut app = app_on(&ws, home.path(), &id);
    shows(&mut app, "SECOND QUESTION", "FIRST QUESTION");
    app.handle_key(ch('['));
    let screen = screen_text(&render(&mut app, 100, 30));
    assert!(screen.contains("FIRST QUESTION"), "{screen}");
}

#[tokio::test]
async fn new_conversation_is_refused_while_the_session_is_busy() {
    let home = tempfile::tempdir().expect("home");
    let (mut ws, id) = workspace_with_session(home.path());
    let mut app = app_on(&ws, home.path(), &id);
    // Registered (busy) but not run yet.
    let chat = ws.engine.start_chat(&id, "hello".into(), None).expect("chat");
    feed(&mut app, &mut ws.events);
    app.handle_key(ch('C'));
    assert_eq!(
        notice_title(&app).as_deref(),
        Some("Cannot start a new conversation now")
    );
    drop(chat);
    ws.engine.flush().expect("flush");
    let stored = ws.engine.load_transcript(&id).expect("read").messages;
    assert!(stored.iter().all(|m| !m.conversation_start), "{stored:?}");
}

#[test]
fn memory_key_switches_a_teams_memory_and_the_team_view_says_which() {
    let (mut app, gid) = app_with_team("Code Review Team");
    let memory = |app: &App| app.org.read(|o| o.group(&gid).map(|g| g.memory));
    assert_eq!(memory(&app), Some(Memory::Run), "teams start with run memory");
    assert!(screen_text(&render(&mut app, 120, 32)).contains("memory: run"));
    app.handle_key(ch('K'));
    assert_eq!(memory(&app), Some(Memory::Conversation));
    assert!(screen_text(&render(&mut app, 120, 32)).contains("memory: conversation"));
    app.handle_key(ch('K'));
    assert_eq!(memory(&app), Some(Memory::Run));
}

#[test]
fn the_context_meter_warns_before_the_window_overflows() {
    let answer = |input: u64| {
        let mut m = Message::assistant("an answer");
        m.usage = Some(Usage::new(input, 100));
        m
    };
    // sim models pretend to a 32k window.
    let (mut app, _) = app_with_session(vec![Message::user("q"), answer(10_000)]);
    let screen = screen_text(&render(&mut app, 100, 30));
    assert!(screen.contains("context 10.1k/32.0k · 31%"), "{screen}");
    assert!(!screen.contains("new conversation"), "{screen}");
    let (mut app, _) = app_with_session(vec![Message::user("q"), answer(27_000)]);
    let screen = screen_text(&render(&mut app, 100, 30));
    assert!(screen.contains("84% full · C new conversation"), "{screen}");
    let (mut app, _) = app_with_session(vec![Message::user("q"), answer(31_000)]);
    let screen = screen_text(&render(&mut app, 100, 30));
    assert!(screen.contains("about to overflow"), "{screen}");
}

#[test]
fn typing_to_a_selected_team_member_chats_with_it_alone() {
    let (mut app, gid) = app_with_team("Code Review Team");
    assert_eq!(app.selected_session_id(), None, "the team row");
    app.handle_key(ch('j'));
    let member = app.selected_session_id().expect("a member");
    let screen = screen_text(&render(&mut app, 120, 32));
    let handle = app
        .org
        .read(|o| huddle::describe::Names::of_session(o, &member))
        .expect("its name");
    assert!(
        !handle.starts_with("code-review-team-"),
        "by its handle: {handle}"
    );
    assert!(
        screen.contains(&format!("Direct chat with {handle} (not a team run)")),
        "{screen}"
    );
    app.handle_key(ch('i'));
    type_text(&mut app, "just you");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::Chat {
            session_id: member,
            prompt: "just you".into()
        }]
    );
    assert!(!app.team_running(&gid));
    // Back on the team row the composer runs the team again.
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('k'));
    let screen = screen_text(&render(&mut app, 120, 32));
    assert!(!screen.contains("Direct chat"), "{screen}");
    app.handle_key(ch('i'));
    type_text(&mut app, "everyone");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert!(
        matches!(&commands[..], [Command::RunGroup { .. }]),
        "{commands:?}"
    );
}

#[test]
fn at_member_in_the_team_composer_leaves_a_note_and_the_timeline_shows_it() {
    let (mut app, gid) = app_with_team("Code Review Team");
    let security = session_id(&app, "code-review-team-security");
    app.handle_key(ch('i'));
    type_text(&mut app, "@security check the auth path");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::NoteMember {
            session_id: security.clone(),
            text: "check the auth path".into()
        }]
    );
    assert!(app.composer.is_empty());
    // Not a member: the text goes to the team as a prompt.
    type_text(&mut app, "@nobody hello");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert!(
        matches!(&commands[..], [Command::RunGroup { .. }]),
        "{commands:?}"
    );
    engine_event(
        &mut app,
        &gid,
        None,
        EventKind::MemberNote {
            session_id: security,
            session: "code-review-team-security".into(),
            text: "check the auth path".into(),
            delivered: false,
        },
    );
    app.handle_key(key(KeyCode::Esc));
    let screen = screen_text(&render(&mut app, 120, 32));
    assert!(screen.contains("✎ note for security's next turn"), "{screen}");
}

fn home_repo() -> std::path::PathBuf {
    std::path::PathBuf::from("/nonexistent-repo")
}

/// Carries out what the app asked of the engine (chats, forks) and feeds back what came of it.
async fn carry_out(app: &mut App, ws: &mut Workspace, commands: Vec<Command>) {
    for command in commands {
        match command {
            Command::Chat { session_id, prompt } => {
                ws.engine
                    .start_chat(&session_id, prompt, None)
                    .expect("chat")
                    .await;
            }
            Command::ForkSession { .. } => {
                let event = huddle::tui::run_blocking(&ws.edits, &home_repo(), command).expect("an answer");
                let more = app.handle_app_event(event);
                Box::pin(carry_out(app, ws, more)).await;
            }
            Command::LoadTranscript { session_id } => {
                app.handle_app_event(AppEvent::TranscriptLoaded {
                    result: ws.engine.load_transcript(&session_id).map_err(|e| e.to_string()),
                    session_id,
                });
            }
            _ => {}
        }
    }
    feed(app, &mut ws.events);
}

#[tokio::test]
async fn regenerate_edit_and_resend_and_fork_keep_every_answer() {
    let home = tempfile::tempdir().expect("home");
    let (mut ws, id) = workspace_with_session(home.path());
    let mut app = app_on(&ws, home.path(), &id);
    app.handle_key(ch('i'));
    type_text(&mut app, "FIRST PROMPT");
    let commands = app.handle_key(key(KeyCode::Enter));
    carry_out(&mut app, &mut ws, commands).await;
    app.handle_key(key(KeyCode::Esc));

    // `u`: the same prompt again; the old exchange is kept, marked superseded.
    let commands = app.handle_key(ch('u'));
    assert_eq!(
        commands,
        vec![Command::Chat {
            session_id: id.clone(),
            prompt: "FIRST PROMPT".into()
        }]
    );
    carry_out(&mut app, &mut ws, commands).await;
    let screen = screen_text(&render(&mut app, 120, 40));
    assert_eq!(screen.matches("FIRST PROMPT").count(), 4, "{screen}");
    assert!(screen.contains("superseded (not sent again)"), "{screen}");

    // `U`: the last prompt in the composer; Enter sends the edited text in its place.
    app.handle_key(ch('U'));
    assert_eq!(app.composer.text(), "FIRST PROMPT");
    assert!(screen_text(&render(&mut app, 120, 40)).contains("Edit and resend"));
    type_text(&mut app, " EDITED");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        commands,
        vec![Command::Chat {
            session_id: id.clone(),
            prompt: "FIRST PROMPT EDITED".into()
        }]
    );
    carry_out(&mut app, &mut ws, commands).await;
    app.handle_key(key(KeyCode::Esc));
    ws.engine.flush().expect("flush");
    let stored = ws.engine.load_transcript(&id).expect("read").messages;
    let prompts = stored
        .iter()
        .filter(|m| m.role == huddle::model::MessageRole::User)
        .count();
    let answers = stored
        .iter()
        .filter(|m| m.role == huddle::model::MessageRole::Assistant)
        .count();
    assert_eq!((prompts, answers), (3, 3), "nothing lost");
    assert_eq!(stored.iter().filter(|m| m.supersedes.is_some()).count(), 2);

    // `F`: a copy with the whole transcript, selected; the original is unchanged.
    let commands = app.handle_key(ch('F'));
    assert_eq!(
        commands,
        vec![Command::ForkSession {
            session_id: id.clone()
        }]
    );
    carry_out(&mut app, &mut ws, commands).await;
    let fork = app.selected_session_id().expect("the fork is selected");
    assert_ne!(fork, id);
    let name = app.org.read(|o| o.session(&fork).map(|s| s.name.clone()));
    assert_eq!(name.as_deref(), Some("chat-fork"));
    let copied = ws.engine.load_transcript(&fork).expect("read").messages;
    assert_eq!(copied, stored);
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(screen.contains("FIRST PROMPT EDITED"), "{screen}");
    // The fork goes its own way: a question there is not in the original.
    app.handle_key(ch('i'));
    type_text(&mut app, "ONLY IN THE FORK");
    let commands = app.handle_key(key(KeyCode::Enter));
    carry_out(&mut app, &mut ws, commands).await;
    ws.engine.flush().expect("flush");
    let original = ws.engine.load_transcript(&id).expect("read").messages;
    assert!(original.iter().all(|m| !m.text.contains("ONLY IN THE FORK")));
}

#[tokio::test]
async fn regenerate_and_fork_are_refused_while_the_session_is_busy() {
    let home = tempfile::tempdir().expect("home");
    let (mut ws, id) = workspace_with_session(home.path());
    ws.engine
        .ask(&id, "a question".into(), None)
        .await
        .expect("asked");
    let mut app = app_on(&ws, home.path(), &id);
    let chat = ws.engine.start_chat(&id, "another".into(), None).expect("chat");
    feed(&mut app, &mut ws.events);
    assert!(app.handle_key(ch('u')).is_empty());
    assert_eq!(notice_title(&app).as_deref(), Some("Cannot ask again now"));
    app.handle_key(key(KeyCode::Esc));
    assert!(app.handle_key(ch('F')).is_empty());
    assert_eq!(notice_title(&app).as_deref(), Some("Cannot fork now"));
    drop(chat);
}

#[test]
fn the_team_view_shows_the_context_of_each_member_read_so_far() {
    let (mut app, _) = app_with_team("Code Review Team");
    assert!(!screen_text(&render(&mut app, 120, 32)).contains("context:"));
    app.handle_key(ch('j'));
    let member = app.selected_session_id().expect("a member");
    let mut answer = Message::assistant("an answer");
    answer.usage = Some(Usage::new(27_000, 100));
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: member,
        result: Ok(huddle::store::LoadedTranscript {
            messages: vec![Message::user("q"), answer],
            warnings: Vec::new(),
        }),
    });
    app.handle_key(ch('k'));
    let screen = screen_text(&render(&mut app, 120, 32));
    assert!(
        screen.contains("context: orchestrator 27.1k/32.0k 84%"),
        "{screen}"
    );
}
