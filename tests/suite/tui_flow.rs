//! A flow team in the TUI: made from the built-in preset like any team, a prompt starts its
//! run, and the team timeline shows each hop (route and its message, advisors, handoff, answer)
//! with its time and tokens.

use huddle::engine::events::{EventKind, HopKind, RunKey};
use huddle::model::Mode;
use huddle::tui::command::Command;

use crossterm::event::KeyCode;

use super::tui_support::{
    app_with_team, ch, engine_event, key, render, run_ended, run_started, screen_text, session_id, type_text,
};

const FLOW: &str = "Help Desk Flow";

fn hop(
    app: &huddle::tui::App,
    from: &str,
    to: Option<&str>,
    kind: HopKind,
    message: Option<&str>,
    success: bool,
) -> EventKind {
    let id = |m: &str| session_id(app, &format!("help-desk-flow-{m}"));
    EventKind::FlowHop {
        from: from.into(),
        from_id: id(from),
        to: to.map(str::to_string),
        to_id: to.map(id),
        kind,
        message: message.map(str::to_string),
        success,
        duration_ms: 2300,
        tokens: 321,
    }
}

#[test]
fn a_flow_team_runs_from_the_composer_and_its_timeline_shows_every_hop() {
    let (mut app, gid) = app_with_team(FLOW);
    let mode = app.org.read(|o| o.group(&gid).map(|g| g.mode));
    assert_eq!(mode, Some(Mode::Flow));
    let entry = app
        .org
        .read(|o| o.group(&gid).and_then(|g| g.settings.flow.entry.clone()));
    assert_eq!(entry, Some(session_id(&app, "help-desk-flow-dispatcher")));
    // The prompt goes to the team's run, as in every mode.
    app.handle_key(ch('i'));
    type_text(&mut app, "500 errors");
    let sent: Vec<Command> = app.handle_key(key(KeyCode::Enter));
    assert!(
        sent.iter().any(|c| format!("{c:?}").contains("500 errors")),
        "the prompt starts the team's run: {sent:?}"
    );
    app.handle_key(key(KeyCode::Esc));
    let run_id = run_started(&mut app, RunKey::team(&gid));
    let run = Some(run_id.as_str());
    engine_event(
        &mut app,
        &gid,
        run,
        EventKind::CycleStarted {
            mode: Mode::Flow,
            max_iterations: 1,
        },
    );
    for event in [
        hop(
            &app,
            "dispatcher",
            Some("engineer"),
            HopKind::Route,
            Some("Looks like a bad deploy"),
            true,
        ),
        hop(&app, "security", Some("engineer"), HopKind::Advisor, None, true),
        hop(
            &app,
            "operations",
            Some("engineer"),
            HopKind::Advisor,
            Some("timed out after 600s"),
            false,
        ),
        hop(&app, "engineer", Some("approver"), HopKind::Handoff, None, true),
        hop(&app, "approver", None, HopKind::Answer, None, true),
    ] {
        engine_event(&mut app, &gid, run, event);
    }
    // Wide enough that the route line (with its message) is not wrapped next to the side panels.
    let text = screen_text(&render(&mut app, 200, 40));
    for line in [
        "dispatcher ⇒ engineer (route, 2.3s, 321 tok): Looks like a bad deploy",
        // The advisors side by side, on one line.
        "✓ security advised engineer (2.3s, 321 tok)  │  ✗ operations advised engineer",
        "engineer → approver (handoff, 2.3s, 321 tok)",
        "✓ approver answered (2.3s, 321 tok)",
    ] {
        assert!(text.contains(line), "missing `{line}`:\n{text}");
    }
    run_ended(&mut app, &run_id, RunKey::team(&gid), None);
}
