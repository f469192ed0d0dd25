//! A pipeline team in the TUI: made from the built-in Support Desk like any team, a prompt
//! starts its run, and the cycle panel shows the phase strip, the active member (or "parked for
//! you") and the last moves; the timeline has a line per move and handoff.

use huddle::engine::events::{EventKind, RunKey};
use huddle::model::Mode;
use huddle::tui::command::Command;

use crossterm::event::KeyCode;

use super::tui_support::{
    app_with_team, ch, engine_event, key, render, run_ended, run_started, screen_text, session_id, type_text,
};

const DESK: &str = "Support Desk";

fn moved(
    app: &huddle::tui::App,
    from: Option<&str>,
    to: &str,
    member: Option<&str>,
    back: bool,
) -> EventKind {
    EventKind::PhaseTransition {
        from_phase: from.map(str::to_string),
        to_phase: to.into(),
        from_member: None,
        to_member: member.map(str::to_string),
        to_member_id: member.map(|m| session_id(app, &format!("support-desk-{m}"))),
        reason: format!("ready for {to}"),
        handoff_count: 0,
        back,
    }
}

#[test]
fn a_pipeline_team_shows_its_phase_strip_and_who_holds_the_conversation() {
    let (mut app, gid) = app_with_team(DESK);
    let (mode, stages) = app.org.read(|o| {
        let g = o.group(&gid).unwrap();
        (g.mode, g.settings.pipeline.as_ref().map(|p| p.stages.len()))
    });
    assert_eq!(mode, Mode::Pipeline);
    assert_eq!(stages, Some(4));
    app.handle_key(ch('i'));
    type_text(&mut app, "printer on fire");
    let sent: Vec<Command> = app.handle_key(key(KeyCode::Enter));
    assert!(
        sent.iter().any(|c| format!("{c:?}").contains("printer on fire")),
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
            mode: Mode::Pipeline,
            max_iterations: 1,
        },
    );
    for event in [
        moved(&app, None, "intake", Some("triage"), false),
        moved(&app, Some("intake"), "handling", Some("handler"), false),
        moved(&app, Some("handling"), "review", Some("reviewer"), false),
        moved(&app, Some("review"), "handling", Some("handler"), true),
        EventKind::HandoffRejected {
            from: "handler".into(),
            from_id: session_id(&app, "support-desk-handler"),
            target: "resolver".into(),
            error: "`resolver` is not an allowed handoff target".into(),
        },
    ] {
        engine_event(&mut app, &gid, run, event);
    }
    let triage = session_id(&app, "support-desk-triage");
    let turn = |finished: bool| {
        if finished {
            EventKind::TurnFinished {
                session_id: triage.as_str().into(),
                session: "support-desk-triage".into(),
                generation: 1,
                success: true,
                interrupted: false,
                duration_ms: 1200,
                usage: None,
                error: None,
                message: None,
                cost_usd: None,
            }
        } else {
            EventKind::TurnStarted {
                session_id: triage.as_str().into(),
                session: "support-desk-triage".into(),
                generation: 1,
                prompt: None,
            }
        }
    };
    engine_event(&mut app, &gid, run, turn(false));
    engine_event(&mut app, &gid, run, turn(true));
    let text = screen_text(&render(&mut app, 200, 50));
    assert!(
        text.contains("✓ triage 1.2s"),
        "a member's row is done with its turn:\n{text}"
    );
    for line in [
        "pipeline · handling · handler",
        "intake → handling → review ↩ handling",
        "review → handling: ready for handling",
        "✗ handler ⇒ resolver rejected",
    ] {
        assert!(text.contains(line), "missing `{line}`:\n{text}");
    }
    assert!(text.contains("v shows all 4 moves"), "{text}");
    // A pipeline's members keep their conversation whatever `memory:` says: not shown.
    assert!(text.contains("member(s)") && !text.contains("memory:"), "{text}");
    assert!(!text.contains("start → intake: ready for intake"), "{text}");
    app.handle_key(ch('v'));
    let text = screen_text(&render(&mut app, 200, 50));
    assert!(
        text.contains("start → intake: ready for intake") && text.contains("v shows the last 3 moves"),
        "v lists the whole history:\n{text}"
    );
    let park = moved(&app, Some("handling"), "handling", None, false);
    engine_event(&mut app, &gid, run, park);
    let text = screen_text(&render(&mut app, 200, 50));
    assert!(text.contains("pipeline · handling · parked for you"), "{text}");
    run_ended(&mut app, &run_id, RunKey::team(&gid), None);
}
