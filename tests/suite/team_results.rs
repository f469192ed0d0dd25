//! A team's answer is visible and usable (issue 15 item 1): every run ends with `run_result`,
//! the timeline shows it as Markdown, `y` on the team copies it, and a reflect cycle's
//! synthesis covers the workers its iteration did not assign.

use huddle::engine::events::{EventKind, RunKey};
use huddle::model::{CycleOutcome, Mode};
use huddle::tui::command::Command;

use super::engine_fixture::{HANG_GUARD, ORCH, team};
use super::fake_llm_server::Reply;
use super::tui_support::{app_with_team, ch, engine_event, render, run_ended, screen_text, start_cycle};

fn result_events(events: &[huddle::engine::events::EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::RunResult { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_broadcast_ends_with_its_answers_as_the_run_result() {
    let mut f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    f.server.script("w-a", vec![Reply::text("answer from a")]);
    f.server.script("w-b", vec![Reply::text("answer from b")]);
    let report = tokio::time::timeout(HANG_GUARD, f.run("Compare"))
        .await
        .expect("ends");
    let events = f.drain();
    assert_eq!(result_events(&events), vec![report.final_text.clone()]);
    assert!(
        report.final_text.contains("## a\n\nanswer from a"),
        "{}",
        report.final_text
    );
    let names: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    let at = |n: &str| names.iter().position(|x| *x == n).unwrap_or(usize::MAX);
    assert!(at("cycle_finished") < at("run_result") && at("run_result") < at("run_ended"));
    let line = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::RunResult { .. }))
        .map(|e| e.to_ndjson())
        .unwrap_or_default();
    assert!(line.contains(r#""event":"run_result""#), "{line}");
}

#[tokio::test]
async fn a_reflect_synthesis_covers_the_workers_not_assigned_in_its_iteration() {
    let f = team(Mode::OrchestratorReflect, &["alpha", "beta"], false, 2).await;
    let synthesis = |n: u32| {
        let words: Vec<String> = (0..40).map(|k| format!("r{n}w{k}")).collect();
        Reply::text(&format!("Synthesis {n}: {}", words.join(" ")))
    };
    f.server.script(
        ORCH,
        vec![
            Reply::text("@worker:alpha\nPart A.\n@end\n@worker:beta\nPart B.\n@end\n"),
            synthesis(1),
            Reply::text("@worker:alpha\nPart A again.\n@end\n"),
            synthesis(2),
        ],
    );
    f.server.script(
        "w-alpha",
        vec![Reply::text("alpha one"), Reply::text("alpha two")],
    );
    f.server
        .script("w-beta", vec![Reply::text("beta's only contribution BETA_ONE")]);
    let report = tokio::time::timeout(HANG_GUARD, f.run("Build it"))
        .await
        .expect("ends");
    assert_eq!(report.outcome, CycleOutcome::MaxIterations);
    let prompts = f.prompts(ORCH);
    assert_eq!(prompts.len(), 4);
    let second_synthesis = &prompts[3];
    assert!(second_synthesis.contains("alpha two"), "{second_synthesis}");
    assert!(
        second_synthesis.contains("## Earlier contributions")
            && second_synthesis.contains("(iteration 1)")
            && second_synthesis.contains("BETA_ONE"),
        "beta's answer from iteration 1 is given again: {second_synthesis}"
    );
    assert!(
        !second_synthesis.contains("alpha one"),
        "only each worker's latest answer"
    );
    assert!(
        !prompts[1].contains("## Earlier contributions"),
        "nothing earlier in iteration 1"
    );
}

#[test]
fn the_team_view_ends_with_the_result_as_markdown_and_y_copies_it() {
    let (mut app, id) = app_with_team("Research Panel");
    let run = start_cycle(&mut app, &id, Mode::Broadcast);
    let result = "## analyst\n\nUse **retries** with `backoff`.\n\n## skeptic\n\n- measure first";
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::CycleFinished {
            outcome: CycleOutcome::Completed,
            iterations: 1,
            max_iterations: 1,
            mode: Some(Mode::Broadcast),
            summary: "done".into(),
        },
    );
    engine_event(
        &mut app,
        &id,
        Some(&run),
        EventKind::RunResult { text: result.into() },
    );
    run_ended(&mut app, &run, RunKey::team(&id), None);
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(text.contains("── result ──"), "{text}");
    // Rendered, not raw: no `**` and no backticks.
    assert!(text.contains("Use retries with backoff."), "{text}");
    assert!(!text.contains("**retries**"), "{text}");
    assert!(text.contains("measure first"), "{text}");
    assert_eq!(
        app.handle_key(ch('y')),
        vec![Command::CopyToClipboard { text: result.into() }]
    );
    // Wide enough: the broadcast's answers side by side, each rendered in its column.
    let wide = screen_text(&render(&mut app, 240, 50));
    assert!(
        wide.lines()
            .any(|l| l.contains("analyst") && l.contains("│ skeptic")),
        "{wide}"
    );
    assert!(
        wide.lines()
            .any(|l| l.contains("Use retries with backoff.") && l.contains("measure first")),
        "{wide}"
    );
}

#[test]
fn y_on_a_team_without_a_result_says_so() {
    let (mut app, _) = app_with_team("Research Panel");
    assert!(app.handle_key(ch('y')).is_empty());
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, e)| t.contains("no answer to copy yet") && *e)
    );
}
