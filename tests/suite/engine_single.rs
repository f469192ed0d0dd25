//! Single-agent reflection over HTTP: the session improves its answer; an evaluator model's
//! `FAIL: <feedback>` reaches the next follow-up; its failures count against the error budget.

use huddle::engine::ReflectionRequest;
use huddle::model::{CycleOutcome, Mode};

use super::engine_fixture::team;
use super::fake_llm_server::Reply;

#[tokio::test]
async fn evaluator_feedback_reaches_the_next_follow_up_until_it_passes() {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script(
        "w-solo",
        vec![
            Reply::text("first answer"),
            Reply::text("second answer with examples"),
        ],
    );
    f.server.script(
        "judge",
        vec![Reply::text("FAIL: add examples FEEDBACK_X"), Reply::text("PASS")],
    );
    let id = f.session_id("t-solo");
    let report = f
        .engine
        .reflect_session(&id, request("Explain lifetimes", 4, Some("anthropic/judge")))
        .await
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.iterations, 2);
    assert_eq!(report.final_text, "second answer with examples");
    let prompts = f.prompts("w-solo");
    // The goal is in the system prompt (every request has it); the messages ask for answers.
    assert!(prompts[0].starts_with("Iteration: 1 of 4"), "{}", prompts[0]);
    assert!(!prompts[1].contains("Explain lifetimes"), "{}", prompts[1]);
    assert_eq!(f.sent("w-solo")[1].matches("Explain lifetimes").count(), 1);
    assert!(prompts[1].contains("FEEDBACK_X"), "{}", prompts[1]);
    // The rules (and the sentinel) are in the system prompt, for every iteration.
    let second = &f.sent("w-solo")[1];
    assert_eq!(second.matches("[[REFLECTION_COMPLETE]]").count(), 1, "{second}");
    let judged = f.prompts("judge");
    assert!(
        judged[0].contains("first answer") && judged[0].contains("Explain lifetimes"),
        "{}",
        judged[0]
    );
}

#[tokio::test]
async fn a_failing_evaluator_exhausts_the_error_budget() {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script(
        "w-solo",
        (0..3).map(|k| Reply::text(&format!("answer {k}"))).collect(),
    );
    f.server
        .script("judge", (0..3).map(|_| Reply::status(400)).collect());
    let id = f.session_id("t-solo");
    let report = f
        .engine
        .reflect_session(&id, request("Explain", 5, Some("anthropic/judge")))
        .await
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::ErrorBudget);
    assert_eq!(f.prompts("judge").len(), 3);
}

#[tokio::test]
async fn without_an_evaluator_the_sentinel_ends_it() {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script(
        "w-solo",
        vec![
            Reply::text("draft"),
            Reply::text("better\n[[REFLECTION_COMPLETE]]"),
        ],
    );
    let id = f.session_id("t-solo");
    let report = f
        .engine
        .reflect_session(&id, request("Write", 5, None))
        .await
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.final_text, "better");
}

fn request(goal: &str, max_iterations: u32, evaluator: Option<&str>) -> ReflectionRequest {
    ReflectionRequest {
        goal: goal.into(),
        max_iterations,
        evaluator_model: evaluator.map(str::to_string),
        model_override: None,
    }
}

/// A turn that fails does not count as having given its instructions: the retry records (and,
/// for a resumed agent, sends) them again (issue 29 review, finding 6).
#[tokio::test]
async fn a_failed_turns_instructions_go_with_its_retry() {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script(
        "w-solo",
        vec![
            Reply::status(400),
            Reply::text("first answer\n[[REFLECTION_COMPLETE]]"),
        ],
    );
    let id = f.session_id("t-solo");
    let _ = f
        .engine
        .reflect_session(&id, request("Explain lifetimes", 3, None))
        .await;
    f.engine.flush().expect("flush");
    let messages = f.engine.load_transcript(&id).expect("transcript").messages;
    let prompts: Vec<_> = messages
        .iter()
        .filter(|m| m.role == huddle::model::MessageRole::User)
        .collect();
    assert!(prompts.len() >= 2, "the failed turn and its retry: {prompts:?}");
    assert_eq!(prompts[0].text, prompts[1].text, "the retry asks the same");
    for p in &prompts[..2] {
        assert!(
            p.instructions
                .as_deref()
                .is_some_and(|i| i.contains("Explain lifetimes")),
            "each try records the brief it was sent: {p:?}"
        );
    }
}
