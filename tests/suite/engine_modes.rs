//! The one-pass modes end to end over real HTTP: broadcast, sequential, single-pass orchestrator.

use huddle::engine::events::EventKind;
use huddle::model::{CycleOutcome, Mode};

use super::engine_fixture::{ORCH, names, team};
use super::fake_llm_server::Reply;

#[tokio::test]
async fn broadcast_sends_the_prompt_to_everyone_and_survives_a_failure() {
    let mut f = team(Mode::Broadcast, &["a", "b", "c"], false, 1).await;
    f.server.script("w-a", vec![Reply::text("answer from a")]);
    f.server.script(
        "w-b",
        vec![Reply::status(400).body(r#"{"error":{"message":"bad"}}"#)],
    );
    f.server.script("w-c", vec![Reply::text("answer from c")]);
    let report = f.run("Compare X and Y").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert!(report.failed.is_none());
    for m in ["w-a", "w-b", "w-c"] {
        assert_eq!(f.prompts(m), vec!["Compare X and Y".to_string()], "{m}");
    }
    assert!(report.final_text.contains("answer from a"));
    assert!(report.final_text.contains("answer from c"));
    assert!(
        report.final_text.contains("## b\n") && report.final_text.contains("failed"),
        "{}",
        report.final_text
    );
    let events = f.drain();
    let finished: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WorkerFinished { worker, success, .. } => Some((worker.clone(), *success)),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 3);
    assert!(finished.contains(&("t-b".to_string(), false)));
    assert_eq!(names(&events).first().map(String::as_str), Some("cycle_started"));
    assert_eq!(names(&events).last().map(String::as_str), Some("cycle_finished"));
}

#[tokio::test]
async fn sequential_passes_earlier_answers_labelled_and_continues_after_a_failure() {
    let f = team(Mode::Sequential, &["draft", "critic", "editor"], false, 1).await;
    f.server.script("w-draft", vec![Reply::text("FIRST DRAFT TEXT")]);
    f.server.script("w-critic", vec![Reply::status(500)]);
    f.server.script("w-editor", vec![Reply::text("FINAL EDIT")]);
    let report = f.run("Write a haiku").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "FINAL EDIT");
    assert_eq!(f.prompts("w-draft"), vec!["Write a haiku".to_string()]);
    // Each earlier answer under its member's name without the team's prefix (issue 28 item 3).
    let critic = &f.prompts("w-critic")[0];
    assert!(
        critic.contains("Write a haiku") && critic.contains("draft\n") && critic.contains("FIRST DRAFT TEXT"),
        "{critic}"
    );
    assert!(!critic.contains("t-draft"), "{critic}");
    let editor = &f.prompts("w-editor")[0];
    assert!(editor.contains("FIRST DRAFT TEXT"), "{editor}");
    assert!(
        editor.contains("critic") && editor.contains("failed"),
        "the failure is passed on: {editor}"
    );
    assert!(
        editor.find("draft\n").unwrap() < editor.find("critic").unwrap(),
        "in order"
    );
}

#[tokio::test]
async fn orchestrator_plans_dispatches_in_parallel_and_synthesizes() {
    let mut f = team(Mode::Orchestrator, &["alpha", "beta"], false, 1).await;
    f.server.script(
        ORCH,
        vec![
            Reply::text("Plan:\n@worker:alpha\nResearch part A.\n@end\n@worker:t-beta\nResearch part B.\n@end\n@worker:ghost\nnothing\n"),
            Reply::text("COMBINED ANSWER"),
        ],
    );
    f.server.script("w-alpha", vec![Reply::text("alpha result text")]);
    f.server.script("w-beta", vec![Reply::text("beta result text")]);
    let report = f.run("Explain the thing").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "COMBINED ANSWER");

    // The request and the team are in the orchestrator's system prompt.
    let plan = &f.sent(ORCH)[0];
    assert!(
        plan.contains("Explain the thing") && plan.contains("- `alpha`") && plan.contains("- `beta`"),
        "{plan}"
    );
    assert!(
        plan.contains("You are the alpha specialist."),
        "specialization listed: {plan}"
    );
    let alpha = &f.sent("w-alpha")[0];
    assert!(
        alpha.contains("Explain the thing"),
        "worker sees the original request: {alpha}"
    );
    assert!(f.prompts("w-alpha")[0].contains("Research part A."), "{alpha}");
    assert!(!alpha.contains("Research part B."), "{alpha}");
    let synth = &f.prompts(ORCH)[1];
    assert!(
        synth.contains("alpha result text") && synth.contains("beta result text"),
        "{synth}"
    );

    let events = f.drain();
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::AssignmentDropped { name, .. } if name == "ghost"))
    );
    let phases: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Phase { phase, .. } => Some(format!("{phase:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(phases, ["Plan", "Dispatch", "Collect", "Synthesize"]);
}

#[tokio::test]
async fn a_second_team_from_a_preset_is_planned_by_handle() {
    // The second team made from a preset: its session names were made unique, its members'
    // handles (their preset names) were kept.
    let mut f = team(Mode::Orchestrator, &["alpha", "beta"], false, 1).await;
    f.org.update(|o| {
        for s in o.sessions.iter_mut() {
            if let Some(handle) = s.name.strip_prefix("t-") {
                s.handle = Some(handle.to_string());
                s.name = format!("{}-2", s.name);
            }
        }
    });
    f.server.script(
        ORCH,
        vec![
            Reply::text("@worker:alpha\nPart A.\n@end\n@worker:t-beta-2\nPart B.\n@end\n"),
            Reply::text("COMBINED"),
        ],
    );
    f.server.script("w-alpha", vec![Reply::text("alpha result text")]);
    f.server.script("w-beta", vec![Reply::text("beta result text")]);
    let report = f.run("Explain").await;
    assert_eq!(report.final_text, "COMBINED");
    // The workers are listed in the orchestrator's system prompt (said once per request).
    let plan = &f.sent(ORCH)[0];
    assert!(
        plan.contains("- `alpha`") && plan.contains("- `beta`") && !plan.contains("alpha-2"),
        "the workers are listed by handle: {plan}"
    );
    assert!(
        f.prompts("w-alpha")[0].contains("Part A."),
        "`@worker:alpha` reached the worker"
    );
    assert!(
        f.prompts("w-beta")[0].contains("Part B."),
        "a session name is still accepted"
    );
    let synth = &f.prompts(ORCH)[1];
    assert!(
        synth.contains("### alpha (") && synth.contains("### beta ("),
        "results come back under the handles: {synth}"
    );
    let events = f.drain();
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::AssignmentDropped { .. })),
        "nothing dropped"
    );
}

#[tokio::test]
async fn orchestrator_without_assignments_answers_itself() {
    let f = team(Mode::Orchestrator, &["alpha"], false, 1).await;
    f.server
        .script(ORCH, vec![Reply::text("The answer is 42, no delegation needed.")]);
    let report = f.run("What is 6*7?").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "The answer is 42, no delegation needed.");
    assert!(f.prompts("w-alpha").is_empty(), "no worker was asked");
    assert_eq!(f.prompts(ORCH).len(), 1);
}

#[tokio::test]
async fn transcripts_record_prompts_answers_and_usage() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    f.server
        .script("w-a", vec![Reply::text("hello there").usage(7, 3)]);
    f.run("hi").await;
    f.engine.flush().unwrap();
    let id = f.session_id("t-a");
    let messages = f.transcripts.load(&id).unwrap().messages;
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].text, "hi");
    assert_eq!(messages[1].text, "hello there");
    let usage = messages[1].usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (7, 3));
    let (session_usage, group_usage) = f
        .org
        .read(|o| (o.session(&id).unwrap().usage, o.group(&f.group_id).unwrap().usage));
    assert_eq!(session_usage.total(), 10);
    assert_eq!(group_usage.total(), 10, "rolled up to the group");
}

#[tokio::test]
async fn messages_are_kept_when_the_run_that_took_them_fails() {
    let f = team(Mode::Orchestrator, &["alpha"], false, 1).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().pending_messages = vec!["KEEP_ME".into()]);
    f.server
        .script(ORCH, vec![Reply::status(400), Reply::text("Answered directly.")]);
    let report = f.run("First").await;
    assert!(report.failed.is_some());
    assert!(
        f.prompts(ORCH)[0].contains("KEEP_ME"),
        "the plan was given the message"
    );
    let kept = f
        .org
        .read(|o| o.group(&f.group_id).unwrap().pending_messages.clone());
    assert_eq!(kept, vec!["KEEP_ME".to_string()], "the failed plan gave it back");
    f.run("Second").await;
    assert!(f.prompts(ORCH)[1].contains("KEEP_ME"));
    assert!(
        f.org
            .read(|o| o.group(&f.group_id).unwrap().pending_messages.is_empty())
    );
}

/// `--mode broadcast` (or sequential) on a reflect team: the workers answer; the orchestrator
/// and the evaluator, who plan and judge, do not (the evaluator's reply once became the answer).
#[tokio::test]
async fn a_reflect_team_run_as_broadcast_or_sequential_asks_only_its_workers() {
    use super::engine_fixture::EVAL;
    use huddle::engine::RunOverrides;
    for mode in [Mode::Broadcast, Mode::Sequential] {
        let f = team(Mode::OrchestratorReflect, &["a", "b"], true, 3).await;
        f.server.script("w-a", vec![Reply::text("answer from a")]);
        f.server.script("w-b", vec![Reply::text("answer from b")]);
        let overrides = RunOverrides {
            mode: Some(mode),
            ..RunOverrides::default()
        };
        let report = f
            .engine
            .run_group(&f.group_id, "Compare X and Y".into(), overrides)
            .await
            .expect("run");
        assert_eq!(report.outcome, CycleOutcome::Completed, "{mode}");
        assert_eq!(f.prompts("w-a").len(), 1, "{mode}");
        assert_eq!(f.prompts("w-b").len(), 1, "{mode}");
        assert!(f.prompts(ORCH).is_empty(), "{mode}: the orchestrator was asked");
        assert!(f.prompts(EVAL).is_empty(), "{mode}: the evaluator was asked");
        assert!(
            report.final_text.contains("answer from b"),
            "{mode}: {}",
            report.final_text
        );
    }
}

/// A round where every session failed reports one outcome: failed, not "completed".
#[tokio::test]
async fn a_round_where_everyone_failed_says_so_once() {
    let mut f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    for m in ["w-a", "w-b"] {
        f.server
            .script(m, vec![Reply::status(400).body(r#"{"error":{"message":"bad"}}"#)]);
    }
    f.server.script(
        ORCH,
        vec![Reply::status(400).body(r#"{"error":{"message":"bad"}}"#)],
    );
    let report = f.run("Compare").await;
    let why = report.failed.clone().expect("failed");
    assert!(why.starts_with("every session failed"), "{why}");
    assert!(report.summary.starts_with("Run failed"), "{}", report.summary);
    assert!(!report.summary.contains("completed"), "{}", report.summary);
    assert_eq!(report.outcome, CycleOutcome::Failed);
    let events = f.drain();
    let (outcome, finished) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CycleFinished { outcome, summary, .. } => Some((*outcome, summary.clone())),
            _ => None,
        })
        .expect("cycle_finished");
    assert_eq!(finished, report.summary);
    assert_eq!(outcome, CycleOutcome::Failed, "cycle_finished says it failed");
    let ended = events.iter().find_map(|e| match &e.kind {
        EventKind::RunEnded { outcome, .. } => Some(*outcome),
        _ => None,
    });
    assert_eq!(ended, Some(Some(CycleOutcome::Failed)));
}
