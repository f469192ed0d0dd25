//! The run lifecycle of the engine contract: `run_started` and `run_ended` frame every run
//! exactly once (also when its future is dropped unpolled), a second team run of a group is
//! refused, and `stop_session` stops a session's chat turns.

use std::time::Duration;

use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::engine::{EngineError, RunOverrides};
use huddle::model::{CycleOutcome, Mode};

use super::engine_fixture::{HANG_GUARD, team};
use super::fake_llm_server::Reply;

fn lifecycle(events: &[EngineEvent]) -> Vec<(&'static str, Option<String>)> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RunStarted { .. } | EventKind::RunEnded { .. }))
        .map(|e| (e.kind.name(), e.run_id.clone()))
        .collect()
}

#[tokio::test]
async fn a_run_dropped_before_it_ran_still_ends_once_and_a_second_team_run_is_refused() {
    let mut f = team(Mode::Broadcast, &["a"], false, 1).await;
    let run = f
        .engine
        .start_group(&f.group_id, "hi".into(), RunOverrides::default())
        .expect("registered");
    let key = RunKey::team(&f.group_id);
    assert!(f.engine.is_running(&key));
    let second = f
        .engine
        .start_group(&f.group_id, "again".into(), RunOverrides::default())
        .err()
        .expect("refused");
    assert!(matches!(second, EngineError::AlreadyRunning(_)), "{second}");
    drop(run);
    assert!(!f.engine.is_running(&key));
    let events = f.drain();
    let seen = lifecycle(&events);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!((seen[0].0, seen[1].0), ("run_started", "run_ended"));
    assert_eq!(seen[0].1, seen[1].1, "one run id");
    let ended = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunEnded { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .expect("run_ended");
    assert_eq!(ended, Some(CycleOutcome::Cancelled));
    assert!(f.server.requests_for("w-a").is_empty(), "nothing ran");
}

#[tokio::test]
async fn stop_session_stops_its_chat_turn_and_the_run_ends_cancelled() {
    let mut f = team(Mode::Broadcast, &["a"], false, 1).await;
    f.server.script(
        "w-a",
        vec![Reply::chunks(["slow ", "answer ", "still ", "coming"]).chunk_delay(Duration::from_millis(500))],
    );
    let id = f.session_id("t-a");
    let chat = tokio::spawn(
        f.engine
            .start_chat(&id, "hello".into(), None)
            .expect("registered"),
    );
    f.wait_for_requests("w-a", 1).await;
    assert!(f.engine.session_busy(&id));
    assert!(f.engine.stop_session(&id));
    let result = tokio::time::timeout(HANG_GUARD, chat)
        .await
        .expect("the stop ends the turn")
        .expect("joins");
    assert!(result.cancelled(), "{result:?}");
    assert!(!f.engine.session_busy(&id));
    assert!(!f.engine.stop_session(&id), "nothing left to stop");
    let events = f.drain();
    let ended = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunEnded { key, outcome, .. } => Some((key.clone(), *outcome)),
            _ => None,
        })
        .expect("run_ended");
    assert_eq!(ended, (RunKey::chat(&id), Some(CycleOutcome::Cancelled)));
    assert_eq!(lifecycle(&events).len(), 2);
}
