//! Sub-agent cards in a team's timeline (modes `dispatch` and `team`), driven by synthetic
//! events as the engine sends them: a card per dispatched execution anchored where it started,
//! kept current by `execution_*` events, expanded and walked with the card keys, streaming the
//! sub-agent's own transcript; pushed results and team broadcasts as timeline lines; a pushed
//! result in the orchestrator's transcript.

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, ExecutionTag};
use huddle::model::{BroadcastKind, ExecutionKind, ExecutionStatus, Message, Mode, Role, Usage};
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};

use super::tui_support::{app_with_team, ch, key, render, screen_text, start_cycle, tagged_event};
use crate::tui_snapshot;

const TEAM: &str = "Code Review Team";

/// An event of the team's run tagged with execution `exec` (child of `parent`).
fn tagged(
    app: &mut App,
    gid: &str,
    run: &str,
    exec: Option<(&str, Option<&str>)>,
    kind: EventKind,
) -> Vec<Command> {
    let tag = exec.map(|(id, parent)| ExecutionTag {
        execution_id: id.into(),
        parent_execution_id: parent.map(str::to_string),
    });
    tagged_event(app, gid, Some(run), tag, kind)
}

/// The id and name of the team's member with `role`, or named `…-<name>`.
fn member(app: &App, gid: &str, pick: impl Fn(&str, Role) -> bool) -> (String, String) {
    app.org
        .read(|o| {
            o.sessions_in(gid)
                .into_iter()
                .find(|s| pick(&s.name, s.role))
                .map(|s| (s.id.clone(), s.name.clone()))
        })
        .expect("a member")
}

fn started(kind: ExecutionKind, member: &str, session_id: &str, task: &str, queued: bool) -> EventKind {
    EventKind::ExecutionStarted {
        kind,
        member: member.into(),
        session_id: session_id.into(),
        task: task.into(),
        queued,
    }
}

fn finished(
    status: ExecutionStatus,
    ms: u64,
    tokens: u64,
    result: Option<&str>,
    error: Option<&str>,
) -> EventKind {
    EventKind::ExecutionFinished {
        kind: ExecutionKind::SubAgent,
        member: String::new(),
        status,
        duration_ms: ms,
        tokens,
        tool_calls: 1,
        result: result.map(str::to_string),
        error: error.map(str::to_string),
        cost_usd: None,
    }
}

/// A dispatch run: the orchestrator (exec-1) dispatches the security reviewer (exec-2, which
/// streams, calls a tool and completes), the correctness reviewer (exec-3, which fails) and
/// the maintainability reviewer (exec-4, queued). Returns the run's id.
fn dispatch_run(app: &mut App, gid: &str) -> String {
    let run = start_cycle(app, gid, Mode::Dispatch);
    let (orch, _) = member(app, gid, |_, r| r == Role::Orchestrator);
    let (sec, sec_name) = member(app, gid, |n, _| n.ends_with("-security"));
    let (cor, _) = member(app, gid, |n, _| n.ends_with("-correctness"));
    let (mnt, _) = member(app, gid, |n, _| n.ends_with("-maintainability"));
    let root = Some(("exec-1", None));
    let under = |id| Some((id, Some("exec-1")));
    tagged(
        app,
        gid,
        &run,
        root,
        started(ExecutionKind::Orchestrator, "lead", &orch, "review", false),
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-2"),
        started(
            ExecutionKind::SubAgent,
            "security",
            &sec,
            "Check the auth code\nin detail",
            false,
        ),
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-3"),
        started(
            ExecutionKind::SubAgent,
            "correctness",
            &cor,
            "Check the \u{1b}[31mmath",
            false,
        ),
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-4"),
        started(
            ExecutionKind::SubAgent,
            "maintainability",
            &mnt,
            "Style pass",
            true,
        ),
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-2"),
        EventKind::Delta {
            session_id: sec.as_str().into(),
            session: sec_name.as_str().into(),
            generation: 1,
            text: "Looking at login.rs\n".into(),
        },
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-2"),
        EventKind::ToolCall {
            session_id: sec.clone(),
            session: sec_name.clone(),
            generation: 1,
            call_id: "c1".into(),
            name: "git__git_grep".into(),
            arguments: "{\"pattern\":\"password\"}".into(),
            step: None,
        },
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-2"),
        EventKind::ToolResult {
            session_id: sec.clone(),
            session: sec_name.clone(),
            generation: 1,
            call_id: "c1".into(),
            name: "git__git_grep".into(),
            ok: true,
            duration_ms: 300,
            size: 40,
            first_line: "login.rs:12: password".into(),
            message: None,
        },
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-2"),
        EventKind::TurnFinished {
            session_id: sec.as_str().into(),
            session: sec_name.into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 2100,
            usage: Some(Usage::new(500, 300)),
            error: None,
            message: Some(std::sync::Arc::new(Message::assistant(
                "Passwords are hashed.\nNo issue found.",
            ))),
            // As the engine prices the simulator: free.
            cost_usd: Some(0.0),
        },
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-2"),
        finished(
            ExecutionStatus::Completed,
            3100,
            800,
            Some("Passwords are hashed."),
            None,
        ),
    );
    tagged(
        app,
        gid,
        &run,
        under("exec-3"),
        finished(ExecutionStatus::Failed, 1200, 90, None, Some("the model refused")),
    );
    let (_, orch_name) = member(app, gid, |_, r| r == Role::Orchestrator);
    let text = "[Sub-agent completed] security (exec-2):\n> Passwords are hashed.";
    tagged(
        app,
        gid,
        &run,
        root,
        EventKind::TurnInput {
            session_id: orch.clone(),
            session: orch_name,
            generation: 1,
            text: text.into(),
            message: Some(std::sync::Arc::new(Message::user(text))),
        },
    );
    run
}

#[test]
fn cards_are_anchored_where_dispatched_and_follow_their_executions() {
    let (mut app, gid) = app_with_team(TEAM);
    dispatch_run(&mut app, &gid);
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(
        screen.contains("▸ exec-2 security · ✓ completed 3.1s · 800 tok · 1 call — Passwords are hashed."),
        "{screen}"
    );
    assert!(
        screen.contains("▸ exec-3 correctness · ✗ failed 1.2s · 90 tok · 1 call — the model refused"),
        "{screen}"
    );
    assert!(!screen.contains("[31m"), "sanitised: {screen}");
    assert!(
        screen.contains("▸ exec-4 maintainability · queued — task: Style pass"),
        "{screen}"
    );
    assert!(screen.contains("⇠ result from security (exec-2)"), "{screen}");
    assert!(
        !screen.contains("▸ exec-1"),
        "the orchestrator is the timeline, not a card"
    );
    assert!(!screen.contains("No issue found"), "collapsed: {screen}");
    // The orchestrator's stream does not show as the security reviewer writing.
    let cycle = app.team_panel.shown_cycle(&gid).expect("a cycle");
    assert!(cycle.lead_live.is_none(), "{:?}", cycle.lead_live);
}

#[test]
fn the_card_keys_expand_the_newest_then_walk_to_others() {
    let (mut app, gid) = app_with_team(TEAM);
    dispatch_run(&mut app, &gid);
    app.handle_key(ch('o'));
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(
        screen.contains("▾ exec-4 maintainability"),
        "the newest opened: {screen}"
    );
    assert!(screen.contains("task: Style pass"), "{screen}");
    app.handle_key(ch('t'));
    app.handle_key(ch('t'));
    app.handle_key(ch('o'));
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(screen.contains("▾ exec-2 security"), "{screen}");
    for line in [
        "task: Check the auth code in detail",
        "Looking at login.rs",
        "⚙ git__git_grep({\"pattern\":\"password\"})",
        "↳ ✓ git__git_grep 300ms: login.rs:12: password",
        "Passwords are hashed.",
        "No issue found.",
    ] {
        assert!(screen.contains(line), "expanded card shows `{line}`: {screen}");
    }
    app.handle_key(ch('o'));
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(screen.contains("▸ exec-2 security"), "collapsed again: {screen}");
    assert!(!screen.contains("No issue found."), "{screen}");
}

#[test]
fn an_expanded_card_streams_its_sub_agent_live() {
    let (mut app, gid) = app_with_team(TEAM);
    let run = start_cycle(&mut app, &gid, Mode::Dispatch);
    let (sec, sec_name) = member(&app, &gid, |n, _| n.ends_with("-security"));
    let under = Some(("exec-2", Some("exec-1")));
    tagged(
        &mut app,
        &gid,
        &run,
        under,
        started(ExecutionKind::SubAgent, "security", &sec, "audit", false),
    );
    app.handle_key(ch('o'));
    let delta = |text: &str| EventKind::Delta {
        session_id: sec.as_str().into(),
        session: sec_name.as_str().into(),
        generation: 1,
        text: text.into(),
    };
    tagged(&mut app, &gid, &run, under, delta("first \u{1b}[2Jline\nsecond"));
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(screen.contains("▾ exec-2 security · running"), "{screen}");
    assert!(
        screen.contains("first line") && screen.contains("second"),
        "{screen}"
    );
    tagged(&mut app, &gid, &run, under, delta(" half"));
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(screen.contains("second half"), "{screen}");
}

#[test]
fn a_pushed_result_shows_in_the_orchestrators_transcript() {
    let (mut app, gid) = app_with_team(TEAM);
    let (orch, _) = member(&app, &gid, |_, r| r == Role::Orchestrator);
    // Show the orchestrator's transcript (read from disk the first time: here, empty).
    let row = huddle::tui::sidebar::Row::Session(orch.clone());
    app.org.read(|o| app.sidebar.select(o, &row));
    app.on_selection_changed();
    app.handle_app_event(AppEvent::TranscriptLoaded {
        session_id: orch.clone(),
        result: Ok(huddle::store::LoadedTranscript {
            messages: Vec::new(),
            warnings: Vec::new(),
        }),
    });
    dispatch_run(&mut app, &gid);
    let screen = screen_text(&render(&mut app, 240, 40));
    assert!(
        screen.contains("[Sub-agent completed] security (exec-2):")
            && screen.contains("Passwords are hashed."),
        "{screen}"
    );
}

#[test]
fn team_broadcasts_are_timeline_lines() {
    let (mut app, gid) = app_with_team(TEAM);
    let run = start_cycle(&mut app, &gid, Mode::Team);
    let (sec, _) = member(&app, &gid, |n, _| n.ends_with("-security"));
    let (orch, orch_name) = member(&app, &gid, |_, r| r == Role::Orchestrator);
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    let sec_name = app
        .org
        .read(|o| o.session(&sec).map(|s| s.name.clone()))
        .unwrap_or_default();
    let broadcast = |from: &str, id: &str, kind, message: &str, last, supervisor| EventKind::TeamBroadcast {
        from: from.into(),
        from_id: id.into(),
        kind,
        message: message.into(),
        turn: 1,
        last,
        supervisor,
        sent_at: at,
    };
    let turn = Some(("exec-2", Some("exec-1")));
    tagged(
        &mut app,
        &gid,
        &run,
        turn,
        started(ExecutionKind::MemberTurn, "security", &sec, "turn 1", false),
    );
    for kind in [
        broadcast(
            &sec_name,
            &sec,
            BroadcastKind::Update,
            "tokens leak in logs",
            false,
            false,
        ),
        broadcast(
            &sec_name,
            &sec,
            BroadcastKind::Failure,
            "tool crashed",
            true,
            false,
        ),
        broadcast(
            &orch_name,
            &orch,
            BroadcastKind::Update,
            "focus on auth",
            false,
            true,
        ),
    ] {
        tagged(&mut app, &gid, &run, turn, kind);
    }
    tagged(
        &mut app,
        &gid,
        &run,
        turn,
        finished(ExecutionStatus::Completed, 500, 12, None, None),
    );
    let screen = screen_text(&render(&mut app, 240, 40));
    for line in [
        "▸ exec-2 security · ✓ completed 500ms · 12 tok · 1 call",
        // (a wide character is followed by an empty cell on screen)
        "📣  security (turn 1, update): tokens leak in logs",
        "✗ security (turn 1, failure): tool crashed",
        "📢  orchestrator (supervisor, turn 1, update): focus on auth",
    ] {
        assert!(screen.contains(line), "`{line}`: {screen}");
    }
}

#[test]
fn a_dispatch_run_with_cards_snapshot() {
    let (mut app, gid) = app_with_team(TEAM);
    dispatch_run(&mut app, &gid);
    app.handle_key(ch('t'));
    app.handle_key(ch('t'));
    app.handle_key(ch('o'));
    app.handle_key(key(KeyCode::Tab));
    let t = render(&mut app, 120, 36);
    tui_snapshot!("team_dispatch_cards_120x36", screen_text(&t));
}

#[test]
fn the_trace_view_shows_the_runs_tree_scrolls_and_closes() {
    let (mut app, gid) = app_with_team(TEAM);
    app.handle_key(ch('O'));
    let screen = screen_text(&render(&mut app, 140, 40));
    assert!(
        screen.contains("Trace · Code Review Team · newest run"),
        "{screen}"
    );
    assert!(screen.contains("No run to trace yet"), "{screen}");
    app.handle_key(key(KeyCode::Esc));
    let run = dispatch_run(&mut app, &gid);
    app.handle_key(ch('O'));
    let screen = screen_text(&render(&mut app, 140, 40));
    for line in [
        "Code Review Team · run",
        "exec-1 lead (orchestrator) · running — task: review",
        "exec-2 security · ✓ completed 3.1s · 800 tok · 1 call — Passwords are hashed.",
        "exec-3 correctness · ✗ failed 1.2s · 90 tok · 1 call — the model refused",
        "exec-4 maintainability · queued — task: Style pass",
    ] {
        assert!(screen.contains(line), "`{line}`: {screen}");
    }
    // Live: a later event shows at the next frame.
    tagged(
        &mut app,
        &gid,
        &run,
        Some(("exec-4", Some("exec-1"))),
        finished(ExecutionStatus::Cancelled, 10, 0, None, None),
    );
    let screen = screen_text(&render(&mut app, 140, 40));
    assert!(
        screen.contains("exec-4 maintainability · ⊘ cancelled"),
        "{screen}"
    );
    // Keys scroll it and do nothing else; Esc closes it.
    let before = app.selected_group_id();
    app.handle_key(ch('j'));
    app.handle_key(ch('d'));
    assert!(app.dialogs.is_empty(), "keys stay in the view");
    assert_eq!(app.selected_group_id(), before);
    app.handle_key(key(KeyCode::Esc));
    assert!(app.trace_view.is_none());
    let screen = screen_text(&render(&mut app, 140, 40));
    assert!(!screen.contains("Trace ·"), "{screen}");
}

#[test]
fn a_trace_view_snapshot() {
    let (mut app, gid) = app_with_team(TEAM);
    dispatch_run(&mut app, &gid);
    app.handle_key(ch('O'));
    let text = screen_text(&render(&mut app, 120, 30));
    // The run's id is made per test process.
    let run = text
        .split("run run-")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .map(|n| format!("run run-{n}"))
        .unwrap_or_default();
    tui_snapshot!("team_trace_view_120x30", text.replace(&run, "run run-N"));
}

#[test]
fn a_selected_card_is_scrolled_into_view() {
    let (mut app, gid) = app_with_team(TEAM);
    let run = start_cycle(&mut app, &gid, Mode::Dispatch);
    let (sec, _) = member(&app, &gid, |n, _| n.ends_with("-security"));
    for n in 2..40 {
        let id = format!("exec-{n}");
        tagged(
            &mut app,
            &gid,
            &run,
            Some((&id, Some("exec-1"))),
            started(
                ExecutionKind::SubAgent,
                "security",
                &sec,
                &format!("task {n}"),
                true,
            ),
        );
    }
    let screen = screen_text(&render(&mut app, 140, 30));
    assert!(
        screen.contains("exec-39 security"),
        "follows the newest: {screen}"
    );
    assert!(!screen.contains("exec-2 security"), "{screen}");
    for _ in 0..40 {
        app.handle_key(ch('t'));
    }
    let screen = screen_text(&render(&mut app, 140, 30));
    assert!(
        screen.contains("▸ exec-2 security · queued — task: task 2"),
        "{screen}"
    );
    app.handle_key(ch('o'));
    let screen = screen_text(&render(&mut app, 140, 30));
    assert!(screen.contains("task: task 2"), "{screen}");
}

#[test]
fn the_mouse_scrolls_the_open_trace_view_and_clicks_nothing_under_it() {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let (mut app, gid) = app_with_team(TEAM);
    dispatch_run(&mut app, &gid);
    app.handle_key(ch('O'));
    render(&mut app, 120, 10);
    let at = |kind, column, row| MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    app.handle_mouse(at(MouseEventKind::ScrollDown, 60, 5));
    assert_eq!(app.trace_view.as_ref().map(|v| v.scroll), Some(3));
    // A click on the sidebar under the view selects nothing.
    let before = app.selected_row();
    app.handle_mouse(at(MouseEventKind::Down(MouseButton::Left), 5, 1));
    assert_eq!(app.selected_row(), before);
    let screen = screen_text(&render(&mut app, 120, 10));
    assert!(screen.contains("exec-3 correctness"), "scrolled down: {screen}");
    assert!(!screen.contains("exec-1 lead"), "{screen}");
}
