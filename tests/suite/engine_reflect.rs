//! Every exit of the reflect loop, pause/resume, stop, queued messages and crash resume, over
//! real HTTP against the fake server.

use std::time::Duration;

use huddle::engine::RunOverrides;
use huddle::engine::events::{EventKind, RunKey};
use huddle::model::{CycleOutcome, Evaluation, Mode, ReflectionCycle};

use super::engine_fixture::{EVAL, HANG_GUARD, ORCH, team};
use super::fake_llm_server::{Reply, StreamEnd};

fn plan(workers: &[&str], round: u32) -> Reply {
    let mut text = format!("Round {round} plan.\n");
    for w in workers {
        text.push_str(&format!("@worker:{w}\nDo part {w} of round {round}.\n@end\n"));
    }
    Reply::text(&text)
}

fn worker_answers(f: &super::engine_fixture::Fixture, w: &str, n: usize) {
    let replies = (1..=n)
        .map(|k| Reply::text(&format!("Worker {w} answer number {k}, long enough to be a real contribution to the work of the team in this round.")))
        .collect();
    f.server.script(&format!("w-{w}"), replies);
}

fn synthesis(round: u32) -> Reply {
    // Distinct vocabulary per round so no stall is detected.
    let words: Vec<String> = (0..40).map(|k| format!("r{round}w{k}")).collect();
    Reply::text(&format!("Synthesis {round}: {}", words.join(" ")))
}

/// The group names its evaluator by session id: renaming the evaluator (even while it is not
/// marked by its role) keeps it the evaluator instead of silently turning evaluation off.
#[tokio::test]
async fn a_renamed_evaluator_still_evaluates() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 1).await;
    let evaluator = f.session_id("t-evaluator");
    f.org.update(|o| {
        let s = o.session_mut(&evaluator).expect("evaluator");
        s.name = "the-judge".into();
        s.role = huddle::model::Role::Worker;
    });
    f.server.script(ORCH, vec![plan(&["alpha"], 1), synthesis(1)]);
    worker_answers(&f, "alpha", 1);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.9\nRATIONALE: fine")]);
    let report = f.run("Review the patch").await;
    assert_eq!(
        report.outcome,
        CycleOutcome::GoalMet,
        "the evaluator's 0.9 met the goal"
    );
    assert_eq!(f.prompts(EVAL).len(), 1, "the evaluator was asked");
    // It judged; it did not work as a worker.
    // The workers are listed in the orchestrator's system prompt.
    assert!(f.sent(ORCH)[0].contains("alpha") && !f.sent(ORCH)[0].contains("the-judge"));
    let state = f
        .org
        .read(|o| {
            o.group(&f.group_id)
                .and_then(|g| g.state.orchestrator_reflect.clone())
        })
        .expect("state");
    assert_eq!(state.evaluator.as_deref(), Some("the-judge"));
}

/// A cycle whose state cannot be written ends with its own outcome and says which file and
/// which OS error, instead of reporting steps that are not on disk.
#[tokio::test]
async fn a_failing_disk_ends_the_cycle_as_save_failed() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], false, 3).await;
    // Every save of this process into the fixture's folder fails: its temp file's name is taken
    // by a directory (a fault even root cannot write through).
    let blocker = f
        .dir
        .path()
        .join(format!(".organization.json.tmp-{}", std::process::id()));
    std::fs::create_dir(&blocker).expect("blocker");
    f.org.update(|_| {});
    f.server.script(ORCH, vec![plan(&["alpha"], 1), synthesis(1)]);
    worker_answers(&f, "alpha", 1);
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::SaveFailed);
    let why = report.failed.expect("why");
    assert!(
        why.contains("organization.json") && why.contains("directory"),
        "{why}"
    );
    assert!(
        f.server.requests_for(ORCH).is_empty(),
        "nothing was started that could not be recorded"
    );
}

#[tokio::test]
async fn goal_met_by_evaluator_score_and_replan_carries_the_evaluation() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha", "beta"], true, 5).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha", "beta"], 1),
            synthesis(1),
            plan(&["alpha"], 2),
            synthesis(2),
        ],
    );
    worker_answers(&f, "alpha", 2);
    worker_answers(&f, "beta", 1);
    f.server.script(
        EVAL,
        vec![
            Reply::text(
                "SCORE: 0.6\nRATIONALE: Missing the edge cases UNIQUE_RATIONALE.\n[[NEEDS_ITERATION]]",
            ),
            Reply::text("SCORE: 95%\nRATIONALE: Complete.\n[[GROUP_REFLECT_COMPLETE]]"),
        ],
    );
    let report = f.run("Review the patch").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.iterations, 2);
    assert!(
        report.final_text.starts_with("Synthesis 2"),
        "{}",
        report.final_text
    );

    let orch = f.prompts(ORCH);
    assert_eq!(orch.len(), 4);
    assert!(
        orch[2].contains("UNIQUE_RATIONALE"),
        "replan carries the evaluation: {}",
        orch[2]
    );
    assert!(orch[2].contains("0.6"), "{}", orch[2]);
    // The previous synthesis is the orchestrator's own answer just before: said once.
    let replan = &f.sent(ORCH)[2];
    assert_eq!(
        replan.matches("Synthesis 1").count(),
        1,
        "replan carries the previous synthesis once: {replan}"
    );
    let eval = f.sent(EVAL);
    assert!(
        eval[0].contains("Review the patch") && eval[0].contains("Synthesis 1"),
        "{}",
        eval[0]
    );

    let events = f.drain();
    let scores: Vec<f64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Evaluation { score, .. } => Some(*score),
            _ => None,
        })
        .collect();
    assert_eq!(scores, vec![0.6, 0.95]);
    let state = f.org.read(|o| {
        o.group(&f.group_id)
            .unwrap()
            .state
            .orchestrator_reflect
            .clone()
            .unwrap()
    });
    assert!(state.goal_met && !state.cancelled && !state.active);
    assert_eq!(state.evaluations.len(), 2);
    assert_eq!(state.outcome, Some(CycleOutcome::GoalMet));
    // Per-iteration accounting: the fake server reports 11 input tokens per reply and one
    // output token per chunk; iteration 1 had 5 turns (plan, 2 workers, synthesis, evaluation).
    let first = &state.evaluations[0];
    assert_eq!(first.usage.input_tokens, 55, "{first:?}");
    let total: u64 = state.evaluations.iter().map(|e| e.usage.total()).sum();
    assert_eq!(total, state.usage.total(), "iterations add up to the cycle");
    assert_eq!(state.usage.total(), report.usage.total());
}

#[tokio::test]
async fn goal_met_by_self_evaluation_sentinel() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], false, 5).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            Reply::text("Draft synthesis.\n[[NEEDS_ITERATION]]\nAdd the benchmarks FEEDBACK_MARK."),
            plan(&["alpha"], 2),
            Reply::text("Final synthesis with benchmarks.\n\n**[[GROUP_REFLECT_COMPLETE]]**"),
        ],
    );
    worker_answers(&f, "alpha", 2);
    let report = f.run("Build it").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.iterations, 2);
    assert!(
        !report.final_text.contains("[[GROUP_REFLECT_COMPLETE]]"),
        "sentinels stripped from the answer"
    );
    let orch = f.prompts(ORCH);
    assert!(
        f.sent(ORCH)[1].contains("[[NEEDS_ITERATION]]") && orch[1].contains("self-evaluation"),
        "synthesis asks for self-evaluation"
    );
    // The feedback reaches the replan once: in the synthesis it ends, which the conversation
    // holds; the replan itself gives the score only.
    assert_eq!(
        f.sent(ORCH)[2].matches("FEEDBACK_MARK").count(),
        1,
        "feedback reaches the replan: {}",
        f.sent(ORCH)[2]
    );
    assert!(
        orch[2].contains("Score: 0.40") && !orch[2].contains("FEEDBACK_MARK"),
        "{}",
        orch[2]
    );
}

#[tokio::test]
async fn goal_met_when_the_replan_assigns_nothing() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            synthesis(1),
            Reply::text("Everything is done; nothing left to assign."),
        ],
    );
    worker_answers(&f, "alpha", 1);
    f.server.script(
        EVAL,
        vec![Reply::text("SCORE: 0.7\nRATIONALE: fine\n[[NEEDS_ITERATION]]")],
    );
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert!(report.final_text.starts_with("Synthesis 1"));
}

#[tokio::test]
async fn max_iterations_ends_the_cycle_and_records_that_outcome() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 2).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            synthesis(1),
            plan(&["alpha"], 2),
            synthesis(2),
        ],
    );
    worker_answers(&f, "alpha", 2);
    f.server.script(
        EVAL,
        vec![
            Reply::text("SCORE: 5/10\nRATIONALE: meh"),
            Reply::text("SCORE: 0.5\nRATIONALE: meh"),
        ],
    );
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::MaxIterations);
    assert_eq!(report.iterations, 2);
    assert!(
        report.summary.contains("2/2") || report.summary.contains("2 of 2"),
        "{}",
        report.summary
    );
    let state = f.org.read(|o| {
        o.group(&f.group_id)
            .unwrap()
            .state
            .orchestrator_reflect
            .clone()
            .unwrap()
    });
    assert_eq!(state.outcome, Some(CycleOutcome::MaxIterations));
    assert!(!state.cancelled, "only a stop is recorded as cancelled");
    assert!(!state.goal_met);
}

#[tokio::test]
async fn two_consecutive_stalls_stop_the_cycle() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], true, 6).await;
    let same = || Reply::text("The same synthesis every single time, word for word.");
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            same(),
            plan(&["alpha"], 2),
            same(),
            plan(&["alpha"], 3),
            same(),
        ],
    );
    worker_answers(&f, "alpha", 3);
    f.server.script(
        EVAL,
        (0..3)
            .map(|_| Reply::text("SCORE: 0.5\nRATIONALE: again"))
            .collect(),
    );
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::Stalled);
    assert_eq!(report.iterations, 3);
    let warnings: Vec<u32> = f
        .drain()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StallWarning { consecutive, .. } => Some(*consecutive),
            _ => None,
        })
        .collect();
    assert_eq!(warnings, vec![1, 2]);
}

#[tokio::test]
async fn three_consecutive_errors_exhaust_the_error_budget() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(
        ORCH,
        (0..3)
            .map(|_| Reply::status(400).body(r#"{"error":{"message":"nope"}}"#))
            .collect(),
    );
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::ErrorBudget);
    assert_eq!(f.prompts(ORCH).len(), 3, "the same iteration retried three times");
    let errors = f
        .drain()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Error { iteration: 1, .. }))
        .count();
    assert_eq!(errors, 3);
}

#[tokio::test]
async fn an_error_is_retried_and_success_resets_the_budget() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(
        ORCH,
        vec![
            Reply::status(400),
            Reply::status(400),
            plan(&["alpha"], 1),
            synthesis(1),
        ],
    );
    worker_answers(&f, "alpha", 1);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.92\nRATIONALE: good")]);
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(
        report.iterations, 1,
        "the failed attempts did not count as iterations"
    );
}

#[tokio::test]
async fn no_assignment_on_the_first_plan_nudges_then_sends_the_request_to_everyone() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha", "beta"], true, 1).await;
    f.server.script(
        ORCH,
        vec![
            Reply::text("I will just answer myself."),
            Reply::text("Still answering myself."),
            synthesis(1),
        ],
    );
    worker_answers(&f, "alpha", 1);
    worker_answers(&f, "beta", 1);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.95\nRATIONALE: ok")]);
    let report = f.run("Original request text").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    let orch = f.prompts(ORCH);
    assert!(orch[1].contains("assignment blocks"), "the nudge: {}", orch[1]);
    assert!(
        f.sent(ORCH)[1].contains("@worker:") && f.sent(ORCH)[1].contains("`alpha`"),
        "the workers and the format stand in the system prompt"
    );
    assert!(f.sent("w-alpha")[0].contains("Original request text"));
    assert!(f.sent("w-beta")[0].contains("Original request text"));
    assert!(
        f.drain()
            .iter()
            .any(|e| matches!(e.kind, EventKind::Warning { .. }))
    );
}

#[tokio::test]
async fn stop_mid_dispatch_cancels_in_flight_requests_and_keeps_partial_text() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(ORCH, vec![plan(&["alpha"], 1)]);
    f.server.script(
        "w-alpha",
        vec![Reply::chunks(["partial ", "answer "]).end(StreamEnd::Stall(Duration::from_secs(30)))],
    );
    let run = f.spawn_run("Do it");
    // Wait until the worker's partial text has been streamed (the stream then stalls).
    let worker = f.session_id("t-alpha");
    let mut streamed = String::new();
    f.events_until("the worker's partial answer", |e| {
        if let EventKind::Delta { session, text, .. } = &e.kind
            && &**session == "t-alpha"
        {
            streamed.push_str(text);
        }
        streamed == "partial answer "
    })
    .await;
    assert_eq!(f.server.requests_for("w-alpha").len(), 1);
    assert!(f.engine.stop(&RunKey::team(&f.group_id)));
    // Without the stop the stalled stream would end in a read timeout and an error, not in a
    // cancelled cycle.
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("stop ends the run")
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    f.engine.flush().unwrap();
    let messages = f.transcripts.load(&worker).unwrap().messages;
    let last = messages.last().unwrap();
    assert!(last.interrupted, "{last:?}");
    assert_eq!(last.text, "partial answer ");
    let state = f.org.read(|o| {
        o.group(&f.group_id)
            .unwrap()
            .state
            .orchestrator_reflect
            .clone()
            .unwrap()
    });
    assert_eq!(state.outcome, Some(CycleOutcome::Cancelled));
    assert!(state.cancelled);
}

#[tokio::test]
async fn pause_waits_after_the_step_and_resume_continues() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1).chunk_delay(Duration::from_millis(50)),
            synthesis(1),
        ],
    );
    worker_answers(&f, "alpha", 1);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.95\nRATIONALE: ok")]);
    let run = f.spawn_run("Do it");
    f.wait_for_requests(ORCH, 1).await;
    assert!(f.engine.pause(&RunKey::team(&f.group_id)));
    // The plan in flight finishes, then the cycle waits.
    f.events_until("cycle_paused", |e| matches!(e.kind, EventKind::CyclePaused))
        .await;
    let persisted = f.org.read(|o| {
        o.group(&f.group_id)
            .unwrap()
            .state
            .orchestrator_reflect
            .clone()
            .unwrap()
    });
    assert!(persisted.paused);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        f.server.requests_for("w-alpha").is_empty(),
        "nothing is dispatched while paused"
    );
    assert!(f.engine.resume(&RunKey::team(&f.group_id)));
    let report = run.await.unwrap();
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert!(
        f.drain()
            .iter()
            .any(|e| matches!(e.kind, EventKind::CycleResumed))
    );
}

#[tokio::test]
async fn a_message_sent_during_a_cycle_reaches_the_next_plan() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            synthesis(1).chunk_delay(Duration::from_millis(30)),
            plan(&["alpha"], 2),
            synthesis(2),
        ],
    );
    worker_answers(&f, "alpha", 2);
    f.server.script(
        EVAL,
        vec![
            Reply::text("SCORE: 0.5\nRATIONALE: more"),
            Reply::text("SCORE: 0.95\nRATIONALE: ok"),
        ],
    );
    let run = f.spawn_run("Do it");
    f.wait_for_requests(ORCH, 2).await;
    assert!(
        f.engine
            .queue_message(&f.group_id, "Also consider QUEUED_NOTE".into())
    );
    let report = run.await.unwrap();
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    let orch = f.prompts(ORCH);
    assert!(orch[2].contains("QUEUED_NOTE"), "{}", orch[2]);
    assert!(!orch[3].contains("QUEUED_NOTE"), "given once");
}

#[tokio::test]
async fn an_interrupted_cycle_resumes_from_its_last_completed_iteration() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 4).await;
    // The state a crash during iteration 2 leaves behind.
    f.org.update(|o| {
        let g = o.group_mut(&f.group_id).unwrap();
        g.state.orchestrator_reflect = Some(ReflectionCycle {
            goal: "Resume me".into(),
            max_iterations: 4,
            iteration: 2,
            completed_iterations: 1,
            active: true,
            last_synthesis: Some("Synthesis before the crash RESUME_MARK".into()),
            recent_syntheses: vec!["Synthesis before the crash RESUME_MARK".into()],
            last_evaluation: Some(Evaluation {
                iteration: 1,
                score: 0.55,
                rationale: "needs work CRASH_RATIONALE".into(),
                evaluator_model: Some("anthropic/eval".into()),
                at: chrono::Utc::now(),
                trend: None,
                usage: Default::default(),
                duration_ms: 0,
                assigned: Vec::new(),
            }),
            ..ReflectionCycle::default()
        });
    });
    assert!(f.org.read(|o| {
        o.group(&f.group_id)
            .unwrap()
            .state
            .orchestrator_reflect
            .as_ref()
            .unwrap()
            .is_interrupted()
    }));
    f.server.script(ORCH, vec![plan(&["alpha"], 2), synthesis(2)]);
    worker_answers(&f, "alpha", 1);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.93\nRATIONALE: ok")]);
    let report = f
        .engine
        .resume_cycle(&f.group_id, RunOverrides::default())
        .await
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.iterations, 2, "continued with iteration 2");
    let first = &f.prompts(ORCH)[0];
    assert!(
        first.contains("RESUME_MARK") && first.contains("CRASH_RATIONALE"),
        "a replan, not a fresh plan: {first}"
    );
    assert!(f.sent("w-alpha")[0].contains("Resume me"));
    assert!(
        f.engine
            .resume_cycle(&f.group_id, RunOverrides::default())
            .await
            .is_err(),
        "nothing left to resume"
    );
}

#[tokio::test]
async fn failed_workers_are_synthesized_not_treated_as_an_error() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha", "beta"], true, 3).await;
    f.server
        .script(ORCH, vec![plan(&["alpha", "beta"], 1), synthesis(1)]);
    f.server.script("w-alpha", vec![Reply::status(500)]);
    f.server.script("w-beta", vec![Reply::status(400)]);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.95\nRATIONALE: handled")]);
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    let synth = &f.prompts(ORCH)[1];
    assert!(
        synth.contains("### alpha (failed"),
        "failures reach the synthesis: {synth}"
    );
    assert!(
        !f.drain()
            .iter()
            .any(|e| matches!(e.kind, EventKind::Error { .. }))
    );
}

#[tokio::test]
async fn a_later_plan_naming_only_unknown_workers_is_not_goal_met() {
    let f = team(Mode::OrchestratorReflect, &["alpha"], true, 3).await;
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            synthesis(1),
            Reply::text("@worker:ghost\nHaunt the code.\n@end"),
            plan(&["alpha"], 2),
            synthesis(2),
        ],
    );
    worker_answers(&f, "alpha", 2);
    f.server.script(
        EVAL,
        vec![
            Reply::text("SCORE: 0.5\nRATIONALE: more"),
            Reply::text("SCORE: 0.95\nRATIONALE: ok"),
        ],
    );
    let report = f.run("Do it").await;
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.iterations, 2);
    assert!(
        report.final_text.starts_with("Synthesis 2"),
        "the bad plan was retried: {}",
        report.final_text
    );
}

#[tokio::test]
async fn resuming_clears_the_stall_history() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    let same = || Reply::text("The same synthesis every single time, word for word.");
    f.server.script(
        ORCH,
        vec![
            plan(&["alpha"], 1),
            same(),
            plan(&["alpha"], 2),
            same(),
            plan(&["alpha"], 3).chunk_delay(Duration::from_millis(40)),
            same(),
        ],
    );
    worker_answers(&f, "alpha", 3);
    f.server.script(
        EVAL,
        vec![
            Reply::text("SCORE: 0.5\nRATIONALE: a"),
            Reply::text("SCORE: 0.5\nRATIONALE: b"),
            Reply::text("SCORE: 0.95\nRATIONALE: c"),
        ],
    );
    let run = f.spawn_run("Do it");
    f.wait_for_requests(ORCH, 5).await;
    assert!(f.engine.pause(&RunKey::team(&f.group_id)));
    let seen = f
        .events_until("cycle_paused", |e| matches!(e.kind, EventKind::CyclePaused))
        .await;
    assert!(
        seen.iter()
            .any(|e| matches!(e.kind, EventKind::StallWarning { consecutive: 1, .. }))
    );
    assert!(f.engine.resume(&RunKey::team(&f.group_id)));
    let report = run.await.unwrap();
    assert_eq!(
        report.outcome,
        CycleOutcome::GoalMet,
        "the third identical synthesis is not a second stall"
    );
}

#[tokio::test]
async fn a_message_queued_as_the_run_ends_goes_to_the_next_run() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    f.server.script(
        "w-a",
        vec![
            Reply::chunks(["fi", "r", "st"]).chunk_delay(Duration::from_millis(60)),
            Reply::text("second"),
        ],
    );
    let run = f.spawn_run("Round one");
    f.wait_for_requests("w-a", 1).await;
    assert!(f.engine.queue_message(&f.group_id, "LATE_NOTE".into()));
    run.await.unwrap();
    let pending = f
        .org
        .read(|o| o.group(&f.group_id).unwrap().pending_messages.clone());
    assert_eq!(pending, vec!["LATE_NOTE".to_string()], "kept for the next run");
    f.run("Round two").await;
    let second = &f.prompts("w-a")[1];
    assert!(
        second.contains("Round two") && second.contains("LATE_NOTE"),
        "{second}"
    );
    assert!(
        f.org
            .read(|o| o.group(&f.group_id).unwrap().pending_messages.is_empty())
    );
}

/// Issue 28 item 16: a reflect cycle stopped while its evaluator judges keeps the synthesis it
/// was judging as its result (it had none: the result section was missing).
#[tokio::test]
async fn stop_during_the_evaluation_keeps_the_synthesis_as_the_result() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], true, 5).await;
    f.server.script(ORCH, vec![plan(&["alpha"], 1), synthesis(1)]);
    worker_answers(&f, "alpha", 1);
    f.server.script(
        EVAL,
        vec![Reply::chunks(["SCORE: 0.", "5"]).end(StreamEnd::Stall(Duration::from_secs(30)))],
    );
    let run = f.spawn_run("Do it");
    let mut streamed = String::new();
    f.events_until("the evaluator's partial verdict", |e| {
        if let EventKind::Delta { text, .. } = &e.kind
            && (text.starts_with("SCORE") || text.starts_with('5'))
        {
            streamed.push_str(text);
        }
        streamed == "SCORE: 0.5"
    })
    .await;
    assert!(f.engine.stop(&RunKey::team(&f.group_id)));
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("stop ends the run")
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert!(
        report.final_text.starts_with("Synthesis 1: r1w0"),
        "{:?}",
        report.final_text
    );
}

/// A single session's reflection interrupted from outside while its evaluator judged iteration
/// 2 (whose answer had finished) resumes at iteration 2: iteration 1 is not run again, iteration
/// 2's answer comes from disk (the session's model is not asked again), only the unanswered
/// evaluation is asked again.
#[tokio::test]
async fn a_single_session_reflection_resumes_without_redoing_finished_iterations() {
    use huddle::engine::ReflectionRequest;
    let mut f = team(Mode::Broadcast, &["solo"], false, 1).await;
    let id = f.session_id("t-solo");
    f.server.script(
        "w-solo",
        vec![
            Reply::text("First draft ITER_ONE"),
            Reply::text("Second draft ITER_TWO"),
            Reply::text("Third draft, never wanted"),
        ],
    );
    f.server.script(
        EVAL,
        vec![
            Reply::text("FAIL: add detail FEEDBACK_ONE"),
            // The kill lands while this one hangs.
            Reply::Hang(HANG_GUARD),
            Reply::text("PASS"),
        ],
    );
    let request = ReflectionRequest {
        goal: "Explain GOAL_MARK".into(),
        max_iterations: 4,
        evaluator_model: Some(format!("anthropic/{EVAL}")),
        model_override: None,
    };
    let run = tokio::spawn(f.engine.start_reflection(&id, request).expect("registered"));
    let key = RunKey::reflection(&id);
    tokio::time::timeout(HANG_GUARD, f.wait_for_requests(EVAL, 2))
        .await
        .expect("the second evaluation was asked");
    assert!(f.engine.interrupt_run_because(&key, Some("test stop")));
    let report = run.await.unwrap().expect("ran");
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert_eq!(report.iterations, 1, "iteration 1 completed, 2 was being judged");
    let saved = f
        .org
        .read(|o| o.session(&id).and_then(|s| s.reflection.clone()))
        .expect("kept to be resumed");
    assert_eq!(saved.cycle.completed_iterations, 1);
    assert!(saved.interrupted_at.is_some());
    assert_eq!(saved.reason.as_deref(), Some("test stop"));
    assert_eq!(saved.feedback.as_deref(), Some("add detail FEEDBACK_ONE"));
    assert_eq!(f.server.requests_for("w-solo").len(), 2);
    f.drain();

    let report = f
        .engine
        .start_reflection_resume(&id)
        .expect("resumable")
        .await
        .expect("ran");
    assert_eq!(report.outcome, CycleOutcome::GoalMet);
    assert_eq!(report.iterations, 2, "went on with iteration 2");
    assert_eq!(report.final_text, "Second draft ITER_TWO");
    // Iteration 1 was not redone, iteration 2's finished answer came from disk.
    assert_eq!(
        f.server.requests_for("w-solo").len(),
        2,
        "the session's model was not asked again"
    );
    let evals = f.prompts(EVAL);
    assert_eq!(evals.len(), 3, "only the unanswered evaluation was asked again");
    assert!(evals[2].contains("ITER_TWO"), "{}", evals[2]);
    let events = f.drain();
    let resumed = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunResumed {
                finished_turns,
                reason,
                interrupted_at,
                ..
            } => Some((*finished_turns, reason.clone(), *interrupted_at)),
            _ => None,
        })
        .expect("run_resumed");
    // Its two finished turns; when and why it was interrupted, as they were saved.
    assert_eq!(resumed, (2, Some("test stop".to_string()), saved.interrupted_at));
    let started: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::IterationStarted { iteration, .. } => Some(*iteration),
            _ => None,
        })
        .collect();
    assert_eq!(started, [2], "no iteration ran twice");
    // Over: nothing left to resume.
    assert!(
        f.org
            .read(|o| o.session(&id).and_then(|s| s.reflection.clone()))
            .is_none()
    );
    assert!(f.engine.start_reflection_resume(&id).is_err());
}
