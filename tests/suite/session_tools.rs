//! Choosing the tool servers a session sees in the TUI (`a`): a checklist of config.yaml's
//! `mcp_servers:`, saved through the application layer, refused while the session is busy; the
//! session's header and its empty transcript say what it has. End to end: a plain session
//! given `time` this way calls the reference `mcp-server-time` on the sim, after the approval.

use std::path::Path;
use std::time::Duration;

use crossterm::event::KeyCode;
use huddle::config::{Config, Paths};
use huddle::engine::events::{EventKind, RunKey};
use huddle::tools::{ApprovalPolicy, Decision};
use huddle::tui::App;
use huddle::tui::dialogs::Dialog;
use huddle::workspace::Workspace;

use super::mcp_servers::reference_server;
use super::tui_support::{
    app_with_named_session, app_with_team_and_config, ch, key, notice_title, render, run_started, screen_text,
};

const SERVERS: &str = "default_model: sim/demo\nmcp_servers:\n  git: { command: [mcp-server-git], approval: auto }\n  time: { command: [mcp-server-time], approval: ask }\n";

fn config(text: &str) -> Config {
    Config::parse(text, Path::new("config.yaml")).expect("config")
}

/// A new plain session `clock` made with `N`, selected, its (empty) transcript loaded.
fn app_with_new_session(config: Config) -> (App, String) {
    app_with_named_session(config, "clock", Vec::new())
}

fn tools_of(app: &App, id: &str) -> Vec<String> {
    app.org
        .read(|o| o.session(id).map(|s| s.tools.clone()))
        .unwrap_or_default()
}

#[test]
fn a_new_session_is_told_it_has_no_tools_and_a_chooses_them() {
    let (mut app, id) = app_with_new_session(config(SERVERS));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(
        text.contains("It has no tool servers: a chooses which of config.yaml's it sees."),
        "{text}"
    );

    app.handle_key(ch('a'));
    let Some(Dialog::Checklist(list)) = app.dialogs.last() else {
        panic!("a checklist")
    };
    assert_eq!(list.items.len(), 2);
    let text = screen_text(&render(&mut app, 120, 30));
    for line in ["[ ] git   auto", "[ ] time  ask", "The tool servers `clock` sees"] {
        assert!(text.contains(line), "{line}: {text}");
    }

    // time (the second entry) on, saved.
    app.handle_key(ch('j'));
    app.handle_key(ch(' '));
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(app.dialogs.is_empty());
    assert_eq!(tools_of(&app, &id), ["time"]);
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("· tools: time "), "the header: {text}");
    assert!(!text.contains("It has no tool servers"), "{text}");

    // Esc changes nothing; the checklist opens with what the session has.
    app.handle_key(ch('a'));
    app.handle_key(ch(' '));
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(tools_of(&app, &id), ["time"]);
    app.handle_key(ch('a'));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("[x] time"), "{text}");
    app.handle_key(ch('j'));
    app.handle_key(ch(' '));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(tools_of(&app, &id), Vec::<String>::new());
}

#[test]
fn a_busy_session_keeps_its_tools_and_without_servers_the_key_says_how_to_add_them() {
    let (mut app, id) = app_with_new_session(config(SERVERS));
    run_started(&mut app, RunKey::chat(&id));
    app.handle_key(ch('a'));
    assert!(app.dialogs.is_empty(), "no checklist while busy");
    let flash = app.flash.clone().map(|(t, _)| t).unwrap_or_default();
    assert!(flash.contains("`clock` is busy"), "{flash}");

    let (mut app, _) = app_with_new_session(config("default_model: sim/demo\n"));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(!text.contains("tool servers"), "no hint without servers: {text}");
    app.handle_key(ch('a'));
    assert_eq!(notice_title(&app).as_deref(), Some("Tool servers"));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(
        text.contains("Add them under mcp_servers: in config.yaml"),
        "{text}"
    );
}

#[test]
fn on_a_team_every_member_gets_the_server() {
    let (mut app, team) = app_with_team_and_config("Code Review Team", config(SERVERS));
    let members: Vec<String> = app
        .org
        .read(|o| o.sessions_in(&team).iter().map(|s| s.id.clone()).collect());
    assert!(members.len() > 1);
    app.handle_key(ch('a'));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("every member of team `Code Review Team`"), "{text}");
    app.handle_key(ch(' '));
    app.handle_key(key(KeyCode::Enter));
    for m in &members {
        assert_eq!(tools_of(&app, m), ["git"], "{m}");
    }
    // One member without it: the team's entry is "some", and left so it stays as each has it.
    app.handle_key(ch('j'));
    let member = app.selected_session_id().expect("a member");
    app.handle_key(ch('a'));
    app.handle_key(ch(' '));
    app.handle_key(key(KeyCode::Enter));
    assert!(tools_of(&app, &member).is_empty());
    app.handle_key(ch('k'));
    app.handle_key(ch('a'));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("[-] git"), "{text}");
    app.handle_key(ch('j'));
    app.handle_key(ch(' '));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(tools_of(&app, &member), ["time"]);
    let other = members.iter().find(|m| **m != member).expect("another member");
    assert_eq!(tools_of(&app, other), ["git", "time"]);
}

#[tokio::test]
async fn a_session_given_time_with_the_key_calls_the_reference_server() {
    let Some(program) = reference_server("HUDDLE_MCP_TIME", "mcp-server-time") else {
        return;
    };
    let home = tempfile::tempdir().expect("home");
    let repo = home.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    let config = config(&format!(
        "default_model: sim/default\nmcp_servers:\n  time: {{ command: [\"{}\"], approval: ask }}\n",
        program.display()
    ));
    let mut ws = Workspace::open(
        &Paths::single(home.path().to_path_buf()),
        &config,
        repo.clone(),
        ApprovalPolicy::Ask,
    )
    .expect("workspace");
    let group = ws
        .org
        .read(|o| o.default_group().map(|g| g.id.clone()))
        .expect("default group");
    let id = ws.edits.create_session(&group, "clock").expect("session");
    ws.edits.select(Some(&group), Some(&id));

    // Without tools, the sim only answers.
    let first = ws
        .engine
        .start_chat(&id, "What time is it?".into(), None)
        .expect("a turn");
    assert!(first.await.success);
    let mut calls = 0;
    while let Ok(e) = ws.events.try_recv() {
        calls += usize::from(matches!(e.kind, EventKind::ToolCall { .. }));
    }
    assert_eq!(calls, 0, "no tools, no calls");

    // `a`, Space, Enter in the TUI over this workspace.
    let (mut app, _) = App::new(ws.edits.clone(), config.clone(), repo, Vec::new());
    assert_eq!(app.selected_session_id().as_deref(), Some(id.as_str()));
    app.handle_key(ch('a'));
    app.handle_key(ch(' '));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(tools_of(&app, &id), ["time"]);

    let turn = tokio::spawn(
        ws.engine
            .start_chat(&id, "What time is it?".into(), None)
            .expect("a turn"),
    );
    let mut asked = false;
    let result = loop {
        let event = tokio::time::timeout(Duration::from_secs(60), ws.events.recv())
            .await
            .expect("an event within a minute")
            .expect("the engine runs");
        match event.kind {
            EventKind::ToolApprovalRequested {
                approval_id, server, ..
            } => {
                assert_eq!(server, "time");
                asked = true;
                assert!(ws.engine.answer_approval(approval_id, Decision::ApproveOnce));
            }
            EventKind::ToolResult {
                name, ok, first_line, ..
            } => break (name, ok, first_line),
            _ => {}
        }
    };
    assert!(asked, "`approval: ask` asked first");
    assert!(result.0.starts_with("time__"), "{result:?}");
    assert!(result.1 && result.2.contains("timezone"), "{result:?}");
    let answer = turn.await.expect("the turn");
    assert!(answer.success, "{answer:?}");
    ws.engine.shutdown_tools().await;
}
