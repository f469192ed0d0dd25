//! Run budgets (issue 14 item 6): a team run of any mode ends with `budget_exhausted` when its
//! token budget or time limit is spent, keeping what it has; `huddle run` exits with 6.

use std::time::Duration;

use huddle::engine::RunOverrides;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::model::{CycleOutcome, Mode, RunBudget};

use super::engine_fixture::{Fixture, HANG_GUARD, ORCH, team};
use super::fake_llm_server::Reply;
use super::headless::{huddle, ndjson, text};

fn set_budget(f: &Fixture, budget: RunBudget) {
    f.org.update(|o| {
        o.group_mut(&f.group_id).expect("group").budget = budget;
    });
}

fn tokens(n: u64) -> RunBudget {
    RunBudget {
        max_duration_secs: None,
        token_budget: Some(n),
        max_cost_usd: None,
    }
}

fn warnings(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[EngineEvent]) -> Option<(CycleOutcome, String)> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::CycleFinished { outcome, summary, .. } => Some((*outcome, summary.clone())),
        _ => None,
    })
}

#[tokio::test]
async fn a_token_budget_ends_a_reflect_cycle_mid_iteration_keeping_the_last_synthesis() {
    let mut f = team(Mode::OrchestratorReflect, &["alpha"], false, 5).await;
    set_budget(&f, tokens(500));
    let plan = |round: u32| Reply::text(&format!("Plan {round}.\n@worker:alpha\nPart {round}.\n@end\n"));
    f.server.script(
        ORCH,
        vec![
            plan(1).usage(100, 0),
            Reply::text("Synthesis 1: the first full answer.").usage(100, 0),
            plan(2).usage(100, 0),
            Reply::text("Synthesis 2: never asked for.").usage(100, 0),
        ],
    );
    f.server.script(
        "w-alpha",
        vec![
            Reply::text("alpha's first part").usage(100, 0),
            Reply::text("alpha's second part").usage(200, 0),
        ],
    );
    let report = tokio::time::timeout(HANG_GUARD, f.run("Write it"))
        .await
        .expect("the run ends");
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    assert_eq!(
        f.server.requests_for(ORCH).len(),
        3,
        "no synthesis after the budget was spent"
    );
    assert!(
        report.final_text.starts_with("Synthesis 1"),
        "{}",
        report.final_text
    );
    assert!(
        report
            .summary
            .contains("the run used 600 tokens of its token budget of 500"),
        "{}",
        report.summary
    );
    let events = f.drain();
    assert!(
        warnings(&events)
            .iter()
            .any(|w| w.contains("token budget of 500")),
        "{events:?}"
    );
    let (outcome, _) = finished(&events).expect("cycle_finished");
    assert_eq!(outcome, CycleOutcome::BudgetExhausted);
    let ndjson = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::CycleFinished { .. }))
        .map(EngineEvent::to_ndjson)
        .unwrap_or_default();
    assert!(ndjson.contains(r#""outcome":"budget_exhausted""#), "{ndjson}");
    let saved = f
        .org
        .read(|o| {
            o.group(&f.group_id)
                .and_then(|g| g.state.orchestrator_reflect.clone())
        })
        .expect("state");
    assert_eq!(saved.outcome, Some(CycleOutcome::BudgetExhausted));
    assert!(!saved.active, "a spent budget is an end, not an interruption");
}

#[tokio::test]
async fn a_broadcast_over_its_token_budget_cancels_the_others_and_keeps_the_answers() {
    let f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    set_budget(&f, tokens(150));
    f.server
        .script("w-a", vec![Reply::text("the answer from a").usage(200, 0)]);
    // b streams slowly: it is still answering when a's tokens spend the budget.
    let slow: Vec<String> = (0..200).map(|k| format!("b{k} ")).collect();
    f.server.script(
        "w-b",
        vec![
            Reply::chunks(slow)
                .chunk_delay(Duration::from_millis(250))
                .usage(10, 10),
        ],
    );
    let report = tokio::time::timeout(HANG_GUARD, f.run("Compare"))
        .await
        .expect("b is cancelled, not waited for");
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    assert!(
        report.final_text.contains("the answer from a"),
        "{}",
        report.final_text
    );
    assert!(
        !report.final_text.contains("b199"),
        "b was cut off: {}",
        report.final_text
    );
    assert!(report.failed.is_none(), "a spent budget is not a failure");
    assert!(report.summary.contains("budget of 150"), "{}", report.summary);
}

#[tokio::test]
async fn the_run_override_wins_over_the_groups_budget() {
    let f = team(Mode::Sequential, &["a", "b"], false, 1).await;
    set_budget(&f, tokens(1_000_000));
    f.server.script("w-a", vec![Reply::text("first").usage(60, 0)]);
    f.server.script("w-b", vec![Reply::text("second").usage(60, 0)]);
    let overrides = RunOverrides {
        budget: tokens(50),
        ..RunOverrides::default()
    };
    let report = f
        .engine
        .run_group(&f.group_id, "Go".into(), overrides)
        .await
        .expect("runs");
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    assert!(
        f.server.requests_for("w-b").is_empty(),
        "the next member is not asked once the budget is spent"
    );
    assert_eq!(report.final_text, "first");
}

/// The time limit on a slow model, on tokio's paused clock: no wall time passes.
#[tokio::test(start_paused = true)]
async fn a_time_limit_ends_a_run_of_slow_members() {
    let mut f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    f.org.update(|o| {
        for s in &mut o.sessions {
            s.model = "sim/slow-600s".into();
        }
    });
    set_budget(
        &f,
        RunBudget {
            max_duration_secs: Some(30),
            token_budget: None,
            max_cost_usd: None,
        },
    );
    let started = tokio::time::Instant::now();
    let report = f.run("Take your time").await;
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(30) && took < Duration::from_secs(60),
        "{took:?}"
    );
    assert!(report.summary.contains("time limit of 30s"), "{}", report.summary);
    let events = f.drain();
    assert_eq!(
        finished(&events).map(|(o, _)| o),
        Some(CycleOutcome::BudgetExhausted)
    );
}

#[test]
fn huddle_run_exits_with_6_when_the_budget_is_spent() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Research Panel",
            "--model",
            "sim/x",
            "--token-budget",
            "1",
            "--events",
            "Compare the options",
        ],
    );
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let lines = ndjson(&out);
    assert!(
        lines
            .iter()
            .any(|v| v["event"] == "cycle_finished" && v["outcome"] == "budget_exhausted"),
        "{}",
        text(&out.stdout)
    );
    let refused = huddle(home.path(), &["run", "--token-budget", "0", "x"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let no_team = huddle(home.path(), &["run", "--token-budget", "10", "x"]);
    assert_eq!(no_team.status.code(), Some(2), "{}", text(&no_team.stderr));
    assert!(text(&no_team.stderr).contains("add --preset or --group"));
}

/// Time paused is left out of a run's duration (and of its time budget), on the paused clock.
#[tokio::test(start_paused = true)]
async fn a_pause_counts_neither_in_the_duration_nor_against_the_time_limit() {
    let mut f = team(Mode::OrchestratorReflect, &["a"], false, 1).await;
    f.org.update(|o| {
        for s in &mut o.sessions {
            s.model = "sim/slow-2s".into();
        }
    });
    set_budget(
        &f,
        RunBudget {
            max_duration_secs: Some(60),
            token_budget: None,
            max_cost_usd: None,
        },
    );
    let run = f
        .engine
        .start_group(&f.group_id, "Do it".into(), RunOverrides::default())
        .expect("registered");
    let key = huddle::engine::events::RunKey::team(&f.group_id);
    assert!(f.engine.pause(&key));
    let handle = tokio::spawn(run);
    // Until the engine has paused the run, the clock moves in small steps only: a save on a
    // blocking thread lets a paused clock jump to the next timer, which must not be the long
    // sleep below while the run still counts time.
    let mut paused = false;
    for _ in 0..200_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if std::iter::from_fn(|| f.events.try_recv().ok()).any(|e| matches!(e.kind, EventKind::CyclePaused)) {
            paused = true;
            break;
        }
    }
    assert!(paused, "the run never paused");
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(f.engine.resume(&key));
    let report = handle.await.expect("joined").expect("ran");
    assert_ne!(
        report.outcome,
        CycleOutcome::BudgetExhausted,
        "ten minutes paused are not over a one-minute limit"
    );
    assert!(report.duration < Duration::from_secs(60), "{:?}", report.duration);
    // "10m" as a word: an iteration of "10ms" is not ten minutes. The duration leaves the
    // pause out, and a line after it says how long it was (review 24 finding 4).
    let duration = report
        .summary
        .lines()
        .find(|l| l.starts_with("Duration:"))
        .unwrap_or_default();
    let words = duration.split(|c: char| !c.is_ascii_alphanumeric());
    assert!(!words.into_iter().any(|w| w == "10m"), "{}", report.summary);
    assert!(
        report
            .summary
            .contains("\nPaused or waiting for a limit: 10m 00s (not in its duration)"),
        "{}",
        report.summary
    );
}
