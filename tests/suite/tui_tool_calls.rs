//! Tool calls in the TUI: each call is a compact cell of the transcript (name, arguments,
//! status, duration) that expands to its arguments and result; a restarted TUI draws the same
//! cells from the transcript as the live one drew from events; a call that needs approval
//! opens a modal popup (queued, settled elsewhere, one command per answer); the cycle panel
//! shows what each member's tool is doing. Driven through the app like the other TUI tests.

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, Phase, RunKey};
use huddle::model::{Message, Mode, ToolCall, ToolResultInfo};
use huddle::tools::Decision;
use huddle::tools::approval::DENIED_BY_USER;
use huddle::tui::App;
use huddle::tui::command::Command;
use huddle::tui::dialogs::Dialog;

use super::tui_support::{
    app_with_session, app_with_team, approval_decided, approval_requested, ch, ctrl, key, render, run_ended,
    run_started, screen_text, session_event, session_id, tool_call, tool_result,
};

const TEAM: &str = "Code Review Team";

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn result(call: &ToolCall, text: &str, is_error: bool, duration_ms: u64) -> Message {
    Message::tool(
        text,
        ToolResultInfo {
            call_id: call.id.clone(),
            name: call.name.clone(),
            is_error,
            duration_ms,
            size: text.len() as u64,
        },
    )
}

/// One turn of a session that called three tools in one round: one ok, one failed, one the
/// user denied; then answered.
struct ToolTurn {
    calls: Vec<ToolCall>,
    user: Message,
    step: Message,
    results: Vec<Message>,
    answer: Message,
}

impl ToolTurn {
    fn new() -> ToolTurn {
        let calls = vec![
            call("call_1", "git__git_status", r#"{"repo": "."}"#),
            call("call_2", "fs__read_file", r#"{"path": "README.md"}"#),
            call("call_3", "shell__run", r#"{"cmd": "rm -rf /tmp/x"}"#),
        ];
        let mut step = Message::assistant("Let me look at the repository.");
        step.model = Some("sim/demo".into());
        step.tool_calls = calls.clone();
        let results = vec![
            result(
                &calls[0],
                "On branch main\nnothing to commit, working tree clean",
                false,
                1200,
            ),
            result(&calls[1], "no such file: README.md", true, 3),
            result(&calls[2], DENIED_BY_USER, true, 0),
        ];
        let mut answer = Message::assistant("The tree is clean and there is no README.");
        answer.model = Some("sim/demo".into());
        answer.duration_ms = Some(2500);
        ToolTurn {
            calls,
            user: Message::user("what changed?"),
            step,
            results,
            answer,
        }
    }

    /// The transcript on disk after the turn: what the events carried, in order.
    fn messages(&self) -> Vec<Message> {
        let mut all = vec![self.user.clone(), self.step.clone()];
        all.extend(self.results.iter().cloned());
        all.push(self.answer.clone());
        all
    }

    /// The turn's events up to the approval request of the third call (request 1).
    fn start(&self, app: &mut App, session_id: &str) -> String {
        let run = run_started(app, RunKey::chat(session_id));
        session_event(app, &run, session_id, |session| EventKind::TurnStarted {
            session_id: session_id.into(),
            session: session.into(),
            generation: 1,
            prompt: Some(std::sync::Arc::new(self.user.clone())),
        });
        delta(app, &run, session_id, &self.step.text);
        tool_call(app, &run, session_id, 1, &self.calls[0], Some(&self.step));
        tool_call(app, &run, session_id, 1, &self.calls[1], None);
        tool_call(app, &run, session_id, 1, &self.calls[2], None);
        approval_requested(app, &run, session_id, 1, &self.calls[2]);
        run
    }

    /// The rest of the turn: the denial, the results, the answer, the run's end.
    fn finish(&self, app: &mut App, run: &str, session_id: &str) {
        approval_decided(app, run, session_id, 1, "call_3", Decision::Deny, None);
        for r in &self.results {
            tool_result(app, run, session_id, 1, r);
        }
        delta(app, run, session_id, &self.answer.text);
        session_event(app, run, session_id, |session| EventKind::TurnFinished {
            session_id: session_id.into(),
            session: session.into(),
            generation: 1,
            success: true,
            interrupted: false,
            duration_ms: 2500,
            usage: None,
            error: None,
            message: Some(std::sync::Arc::new(self.answer.clone())),
            cost_usd: None,
        });
        run_ended(app, run, RunKey::chat(session_id), None);
    }
}

fn delta(app: &mut App, run: &str, session_id: &str, text: &str) {
    session_event(app, run, session_id, |session| EventKind::Delta {
        session_id: session_id.into(),
        session: session.into(),
        generation: 1,
        text: text.into(),
    });
}

fn screen(app: &mut App) -> String {
    screen_text(&render(app, 120, 40))
}

/// The screen line containing `needle`.
fn line_with<'a>(screen: &'a str, needle: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is not on the screen:\n{screen}"))
}

fn row_of(screen: &str, needle: &str) -> usize {
    screen
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is not on the screen:\n{screen}"))
}

#[test]
fn tool_cells_show_name_arguments_status_and_duration() {
    let turn = ToolTurn::new();
    let (mut app, sid) = app_with_session(Vec::new());
    let run = turn.start(&mut app, &sid);
    // The popup is modal: answered first (its own tests are below), the cells seen after.
    let on_top = screen(&mut app);
    assert!(on_top.contains("Tool approval"), "{on_top}");
    app.dialogs.clear();
    let live = screen(&mut app);
    assert!(
        line_with(&live, "git__git_status").contains(r#"{"repo":"."} · running…"#),
        "{live}"
    );
    assert!(line_with(&live, "fs__read_file").contains("running…"), "{live}");
    assert!(
        line_with(&live, "shell__run").contains("waiting for approval"),
        "{live}"
    );
    // The step's text is an assistant cell above its calls; no empty "streaming" cell below
    // them while they run.
    assert!(row_of(&live, "Let me look at the repository.") < row_of(&live, "git__git_status"));
    assert!(!live.contains("streaming…"), "{live}");

    turn.finish(&mut app, &run, &sid);
    let done = screen(&mut app);
    let status = line_with(&done, "⚙ git__git_status");
    assert!(status.contains(r#"{"repo":"."} · ok · 1.2s"#), "{status}");
    assert!(done.contains("↳ On branch main"), "{done}");
    assert!(
        line_with(&done, "fs__read_file").contains("· error · 0.0s"),
        "{done}"
    );
    assert!(done.contains("↳ no such file: README.md"), "{done}");
    assert!(line_with(&done, "shell__run").contains("· denied"), "{done}");
    assert!(!line_with(&done, "shell__run").contains("waiting"), "{done}");
    assert!(
        row_of(&done, "shell__run") < row_of(&done, "The tree is clean"),
        "the answer follows the calls:\n{done}"
    );
}

#[test]
fn the_tool_cursor_expands_a_call_to_its_arguments_and_result() {
    let turn = ToolTurn::new();
    let (mut app, _) = app_with_session(turn.messages());
    let _ = screen(&mut app);
    let collapsed = screen(&mut app);
    assert!(!collapsed.contains("arguments:"), "{collapsed}");
    // `t` selects the newest call (and focuses the transcript), `t` again the one above.
    app.handle_key(ch('t'));
    assert_eq!(app.focus, huddle::tui::app::Focus::Transcript);
    assert!(line_with(&screen(&mut app), "shell__run").contains("▶ shell__run"));
    app.handle_key(ch('t'));
    app.handle_key(ch('t'));
    let at_first = screen(&mut app);
    assert!(line_with(&at_first, "git__git_status").contains("▶ git__git_status"));
    assert!(line_with(&at_first, "shell__run").contains("⚙ shell__run"));
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    let open = screen(&mut app);
    assert!(
        line_with(&open, "git__git_status").contains("git__git_status · ok · 1.2s"),
        "{open}"
    );
    let args = row_of(&open, "arguments:");
    assert!(
        open.lines().nth(args + 1).is_some_and(|l| l.contains("    {")),
        "{open}"
    );
    assert!(
        line_with(&open, r#""repo": ".""#).contains(r#"      "repo": ".""#),
        "{open}"
    );
    let result = row_of(&open, "result:");
    assert!(result > args, "{open}");
    assert!(line_with(&open, "nothing to commit").contains("    nothing to commit, working tree clean"));
    assert_eq!(
        app.focus,
        huddle::tui::app::Focus::Transcript,
        "Enter expanded, did not leave"
    );
    // `T` moves down; Enter there opens that one; Enter again closes it.
    app.handle_key(ch('T'));
    app.handle_key(key(KeyCode::Enter));
    let two = screen(&mut app);
    assert_eq!(two.matches("arguments:").count(), 2, "{two}");
    assert!(two.contains(r#""path": "README.md""#), "{two}");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(screen(&mut app).matches("arguments:").count(), 1);
    // Without a tool cell under the cursor, Enter goes to the composer as before.
    let (mut plain, _) = app_with_session(vec![Message::user("hi"), Message::assistant("hello")]);
    plain.handle_key(ch('t'));
    assert_eq!(
        plain.flash.as_ref().map(|f| f.0.as_str()),
        Some("no tool calls in this transcript")
    );
    plain.handle_key(key(KeyCode::Tab));
    plain.handle_key(key(KeyCode::Enter));
    assert_eq!(plain.focus, huddle::tui::app::Focus::Composer);
}

#[test]
fn escape_sequences_in_arguments_and_results_are_neutralised() {
    // Invalid JSON (a raw ESC in a string) is shown as it came, cleaned; valid JSON with
    // escaped control characters is re-escaped by the pretty printer.
    let hostile = "{\"cmd\": \"\x1b]0;pwned\x07ls \x1b[2J\u{202e}txt.exe\"}";
    let escaped = r#"{"cmd": "\u001b[31mred \u202egnp.exe"}"#;
    let calls = [
        call("c1", "shell__run", hostile),
        call("c2", "shell__run2", escaped),
    ];
    let mut step = Message::assistant("");
    step.tool_calls = calls.to_vec();
    let messages = vec![
        Message::user("go"),
        step,
        result(
            &calls[0],
            "out\x1b]0;pwned\x07put \x1b[31mred\x1b[0m \u{200b}end",
            false,
            1,
        ),
        result(&calls[1], "\x1b[2Jcleared", true, 1),
    ];
    let (mut app, sid) = app_with_session(messages);
    let check = |text: &str| {
        for residue in ["pwned", "[2J", "[0m"] {
            assert!(!text.contains(residue), "`{residue}` reached the screen:\n{text}");
        }
        // `\u001b[31m` in valid JSON is text (the pretty printer escapes it), drawn as such.
        assert_eq!(
            text.matches("[31m").count(),
            text.matches(r"\u001b[31m").count(),
            "{text}"
        );
        for c in text.chars() {
            assert!(
                !huddle::text::sanitize::is_invisible_or_control(c) || c == '\n',
                "U+{:04X} reached the screen:\n{text}",
                c as u32
            );
        }
    };
    let compact = screen(&mut app);
    check(&compact);
    assert!(compact.contains("↳ output red end"), "{compact}");
    for _ in 0..2 {
        app.handle_key(ch('t'));
        app.handle_key(key(KeyCode::Enter));
    }
    let open = screen(&mut app);
    check(&open);
    assert!(open.contains("ls txt.exe"), "{open}");
    assert!(open.contains(r#""cmd": "\u001b[31mred gnp.exe""#), "{open}");
    // The approval popup draws the same arguments.
    let run = run_started(&mut app, RunKey::chat(&sid));
    approval_requested(&mut app, &run, &sid, 3, &calls[0]);
    let popup = screen(&mut app);
    check(&popup);
    assert!(popup.contains("ls txt.exe"), "{popup}");
}

#[test]
fn a_restart_draws_the_same_tool_cells_as_the_live_view() {
    let turn = ToolTurn::new();
    let (mut live, sid) = app_with_session(Vec::new());
    let run = turn.start(&mut live, &sid);
    let answer = live.handle_key(ch('n'));
    assert_eq!(
        answer,
        vec![Command::AnswerApproval {
            approval_id: 1,
            decision: Decision::Deny
        }]
    );
    turn.finish(&mut live, &run, &sid);
    let (mut restarted, _) = app_with_session(turn.messages());
    let live_screen = screen(&mut live);
    assert!(live_screen.contains("⚙ git__git_status"), "{live_screen}");
    assert_eq!(
        live_screen,
        screen(&mut restarted),
        "the restart draws what the live view drew"
    );
    // Expanded alike, too.
    for app in [&mut live, &mut restarted] {
        app.handle_key(ch('t'));
        app.handle_key(ch('t'));
        app.handle_key(key(KeyCode::Enter));
    }
    let live_open = screen(&mut live);
    assert!(live_open.contains("no such file: README.md"), "{live_open}");
    assert_eq!(live_open, screen(&mut restarted));
}

#[test]
fn each_answer_in_the_approval_popup_sends_exactly_its_decision() {
    let answers = [
        (ch('y'), Decision::ApproveOnce),
        (ch('a'), Decision::ApproveForSession),
        (ch('n'), Decision::Deny),
        (key(KeyCode::Esc), Decision::Deny),
        (ch('s'), Decision::DenyAndStop),
        // The quit key closes any popup; this one it answers no.
        (ctrl('c'), Decision::Deny),
    ];
    for (pressed, decision) in answers {
        let (mut app, sid) = app_with_session(Vec::new());
        let run = run_started(&mut app, RunKey::chat(&sid));
        let commands = approval_requested(
            &mut app,
            &run,
            &sid,
            7,
            &call("c1", "git__git_status", r#"{"repo":"."}"#),
        );
        // Only the bell (the user is waiting on): nothing runs before the answer.
        assert!(
            commands.iter().all(|c| matches!(c, Command::Notify(_))),
            "{commands:?}"
        );
        assert!(matches!(app.dialogs.last(), Some(Dialog::Approval(_))));
        let popup = screen(&mut app);
        for needed in [
            "Tool approval",
            "scratch (Sessions) wants to run a tool",
            "server  git",
            "tool    git_status",
            r#""repo": ".""#,
            "y approve once",
            "a approve this tool for this session",
            "n/Esc deny",
            "s deny and stop the run",
        ] {
            assert!(popup.contains(needed), "`{needed}` in\n{popup}");
        }
        // Modal: other keys reach neither the composer nor the app.
        // Enter too: a popup can open while you type, and Enter must not run a tool.
        for other in [
            ch('i'),
            ch('x'),
            ch('q'),
            ctrl('x'),
            key(KeyCode::Tab),
            key(KeyCode::Enter),
        ] {
            assert!(app.handle_key(other).is_empty());
        }
        assert!(app.composer.text().is_empty());
        assert!(matches!(app.dialogs.last(), Some(Dialog::Approval(_))));
        assert_eq!(
            app.handle_key(pressed),
            vec![Command::AnswerApproval {
                approval_id: 7,
                decision
            }],
            "{pressed:?}"
        );
        assert!(app.dialogs.is_empty(), "{pressed:?} closed the popup");
        assert!(!app.should_quit);
    }
}

#[test]
fn requests_queue_in_one_popup_and_leave_it_when_settled_elsewhere() {
    let (mut app, id) = app_with_team(TEAM);
    let security = session_id(&app, "code-review-team-security");
    let correctness = session_id(&app, "code-review-team-correctness");
    let run = run_started(&mut app, RunKey::team(&id));
    let status = call("c1", "git__git_status", "{}");
    let diff = call("c2", "git__git_diff", r#"{"staged":true}"#);
    let log = call("c3", "git__git_log", "{}");
    approval_requested(&mut app, &run, &security, 1, &status);
    approval_requested(&mut app, &run, &correctness, 2, &diff);
    let first = screen(&mut app);
    assert!(first.contains("Tool approval · 1 of 2"), "{first}");
    assert!(
        first.contains("code-review-team-security (Code Review Team) wants"),
        "{first}"
    );
    assert!(
        first.contains("? 2 tool call(s) wait for your approval"),
        "{first}"
    );
    assert_eq!(
        app.handle_key(ch('y')),
        vec![Command::AnswerApproval {
            approval_id: 1,
            decision: Decision::ApproveOnce
        }]
    );
    let second = screen(&mut app);
    assert!(second.contains("Tool approval · 2 of 2"), "{second}");
    assert!(second.contains("code-review-team-correctness"), "{second}");
    assert!(second.contains("git_diff"), "{second}");
    // A third arrives while the second is shown; then the run stops: the engine settles the
    // one shown, and its popup moves on to the next.
    approval_requested(&mut app, &run, &security, 3, &log);
    assert!(screen(&mut app).contains("Tool approval · 2 of 3"));
    approval_decided(
        &mut app,
        &run,
        &correctness,
        2,
        "c2",
        Decision::Deny,
        Some("the run was stopped"),
    );
    let third = screen(&mut app);
    assert!(third.contains("Tool approval · 2 of 2"), "{third}");
    assert!(third.contains("git_log"), "{third}");
    approval_decided(
        &mut app,
        &run,
        &security,
        3,
        "c3",
        Decision::Deny,
        Some("the run was stopped"),
    );
    assert!(app.dialogs.is_empty(), "nothing left to answer");
    assert!(!screen(&mut app).contains("wait for your approval"));
    // A run that ends takes its requests with it.
    approval_requested(&mut app, &run, &security, 4, &log);
    assert!(!app.dialogs.is_empty());
    run_ended(&mut app, &run, RunKey::team(&id), None);
    assert!(app.dialogs.is_empty());
}

#[test]
fn a_request_waits_under_the_dialog_in_use() {
    let (mut app, sid) = app_with_session(Vec::new());
    app.handle_key(ch('r'));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Text(_))));
    let run = run_started(&mut app, RunKey::chat(&sid));
    approval_requested(&mut app, &run, &sid, 5, &call("c1", "git__git_status", "{}"));
    // The rename keeps its keys: `y` is text there, not an approval.
    assert!(app.handle_key(ch('y')).is_empty());
    assert!(matches!(app.dialogs.last(), Some(Dialog::Text(_))));
    let below = screen(&mut app);
    assert!(
        below.contains("? 1 tool call(s) wait for your approval"),
        "{below}"
    );
    app.handle_key(key(KeyCode::Esc));
    assert!(matches!(app.dialogs.last(), Some(Dialog::Approval(_))));
    assert_eq!(
        app.handle_key(ch('s')),
        vec![Command::AnswerApproval {
            approval_id: 5,
            decision: Decision::DenyAndStop
        }]
    );
}

#[test]
fn the_cycle_panel_shows_running_tools_and_waits_for_approvals() {
    let (mut app, id) = app_with_team(TEAM);
    let security = session_id(&app, "code-review-team-security");
    let run = run_started(&mut app, RunKey::team(&id));
    let team_event = |app: &mut App, kind: EventKind| {
        super::tui_support::engine_event(app, &id, Some(&run), kind);
    };
    team_event(
        &mut app,
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 2,
        },
    );
    team_event(
        &mut app,
        EventKind::IterationStarted {
            iteration: 1,
            max_iterations: 2,
        },
    );
    team_event(
        &mut app,
        EventKind::Phase {
            iteration: 1,
            phase: Phase::Dispatch,
        },
    );
    team_event(
        &mut app,
        EventKind::Assignment {
            iteration: 1,
            worker: "code-review-team-security".into(),
            session_id: security.clone(),
            task: "check the handler".into(),
        },
    );
    session_event(&mut app, &run, &security, |session| EventKind::TurnStarted {
        session_id: security.as_str().into(),
        session: session.into(),
        generation: 1,
        prompt: None,
    });
    let status = call("c1", "git__git_status", "{}");
    let mut step = Message::assistant("");
    step.tool_calls = vec![status.clone()];
    tool_call(&mut app, &run, &security, 1, &status, Some(&step));
    // The cycle panel is the right-hand column.
    let panel = |app: &mut App| -> Vec<String> {
        screen(app)
            .lines()
            .map(|l| l.chars().skip(84).collect::<String>())
            .collect()
    };
    let panel_line = |app: &mut App, needle: &str| panel(app).into_iter().find(|l| l.contains(needle));
    // A member's row (below the status lines) and the line under it.
    let member_rows = |app: &mut App, name: &str| -> String {
        let lines = panel(app);
        let at = lines
            .iter()
            .rposition(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} in the panel:\n{}", lines.join("\n")));
        lines[at..=at + 1].join("\n")
    };
    let running = member_rows(&mut app, "security");
    assert!(running.contains("⚙ git__git_status"), "{running}");

    approval_requested(&mut app, &run, &security, 9, &status);
    // The popup (drawn lower, in the middle) is open; the panel says the run waits.
    assert!(matches!(app.dialogs.last(), Some(Dialog::Approval(_))));
    let waiting = member_rows(&mut app, "security");
    assert!(waiting.contains("waiting for approval"), "{waiting}");
    assert!(
        panel_line(&mut app, "waits for your approval").is_some(),
        "{}",
        screen(&mut app)
    );
    // The sidebar marks the session that asks.
    let s = screen(&mut app);
    let sidebar_row = s
        .lines()
        .map(|l| l.chars().take(30).collect::<String>())
        .find(|l| l.contains("security"))
        .expect("the member in the sidebar");
    assert!(sidebar_row.contains(" ?"), "{sidebar_row}");

    assert_eq!(
        app.handle_key(ch('n')),
        vec![Command::AnswerApproval {
            approval_id: 9,
            decision: Decision::Deny
        }]
    );
    approval_decided(&mut app, &run, &security, 9, "c1", Decision::Deny, None);
    assert!(!screen(&mut app).contains("wait for your approval"));
    assert!(panel_line(&mut app, "waits for your approval").is_none());
    let denied = member_rows(&mut app, "security");
    assert!(denied.contains("⚙ git__git_status"), "{denied}");
    assert!(
        app.team_panel.cycles[&id]
            .timeline
            .iter()
            .any(|e| e.text.contains("✋ security: git__git_status denied")),
        "{:?}",
        app.team_panel.cycles[&id].timeline
    );
    tool_result(
        &mut app,
        &run,
        &security,
        1,
        &result(&status, DENIED_BY_USER, true, 0),
    );
    let after = member_rows(&mut app, "security");
    assert!(!after.contains('⚙') && !after.contains("waiting"), "{after}");

    // A new call, then the run ends: nothing is left in flight.
    tool_call(&mut app, &run, &security, 1, &status, None);
    approval_requested(&mut app, &run, &security, 10, &status);
    run_ended(&mut app, &run, RunKey::team(&id), None);
    let ended = member_rows(&mut app, "security");
    assert!(!ended.contains('⚙') && !ended.contains("waiting"), "{ended}");
    assert!(app.team_panel.cycles[&id].approvals.is_empty());
}
