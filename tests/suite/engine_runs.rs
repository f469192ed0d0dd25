//! The run lifecycle of the engine contract: `run_started` and `run_ended` frame every run
//! exactly once (also when its future is dropped unpolled), a second team run of a group is
//! refused, `stop_session` stops a session's chat turns, and a turn whose caller stops waiting
//! still finishes and is recorded.

use std::time::Duration;

use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::engine::{EngineError, RunOverrides, TurnResult};
use huddle::model::{CycleOutcome, Mode};
use tokio::task::JoinHandle;

use super::engine_fixture::{Fixture, HANG_GUARD, team};
use super::fake_llm_server::Reply;

fn lifecycle(events: &[EngineEvent]) -> Vec<(&'static str, Option<String>)> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RunStarted { .. } | EventKind::RunEnded { .. }))
        .map(|e| (e.kind.name(), e.run_id.as_deref().map(str::to_string)))
        .collect()
}

/// A chat "hello" with worker `a` (answered with `reply`), started and waited for until its
/// request is out: the session's id and the chat's task.
async fn chat_in_flight(f: &Fixture, reply: Reply) -> (String, JoinHandle<TurnResult>) {
    f.server.script("w-a", vec![reply]);
    let id = f.session_id("t-a");
    let chat = tokio::spawn(
        f.engine
            .start_chat(&id, "hello".into(), None)
            .expect("registered"),
    );
    f.wait_for_requests("w-a", 1).await;
    (id, chat)
}

/// The key and outcome of the first `run_ended`.
fn run_ended(events: &[EngineEvent]) -> Option<(RunKey, Option<CycleOutcome>)> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::RunEnded { key, outcome, .. } => Some((key.clone(), *outcome)),
        _ => None,
    })
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
    assert!(
        second.to_string().starts_with("group `t` is already running"),
        "quoted once: {second}"
    );
    drop(run);
    assert!(!f.engine.is_running(&key));
    let events = f.drain();
    let seen = lifecycle(&events);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!((seen[0].0, seen[1].0), ("run_started", "run_ended"));
    assert_eq!(seen[0].1, seen[1].1, "one run id");
    assert_eq!(
        run_ended(&events).expect("run_ended").1,
        Some(CycleOutcome::Cancelled)
    );
    assert!(f.server.requests_for("w-a").is_empty(), "nothing ran");
}

/// A run's future is a pointer to the run's state on the heap (`batched` boxes it when called;
/// the mode's own future is boxed in turn: `engine::modes` tests). Held in place, every future
/// that awaits a run was the largest mode's size again (27 KB for the run, 56 KB for
/// `Engine::run_group`), copied whole each time one was made, moved or spawned
/// (docs/benchmarks.md, session 14).
#[tokio::test]
async fn a_runs_future_is_small_whatever_its_mode() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    let run = f
        .engine
        .start_group(&f.group_id, "hi".into(), RunOverrides::default())
        .expect("registered");
    let size = std::mem::size_of_val(&run);
    assert!(size <= 256, "a run's future is {size} bytes");
    let run_group = f
        .engine
        .run_group(&f.group_id, "again".into(), RunOverrides::default());
    let size = std::mem::size_of_val(&run_group);
    assert!(size <= 1024, "run_group's future is {size} bytes");
    drop(run_group);
    drop(run);
}
#[tokio::test]
async fn stop_session_stops_its_chat_turn_and_the_run_ends_cancelled() {
    let mut f = team(Mode::Broadcast, &["a"], false, 1).await;
    let (id, chat) = chat_in_flight(
        &f,
        Reply::chunks(["slow ", "answer ", "still ", "coming"]).chunk_delay(Duration::from_millis(500)),
    )
    .await;
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
    let ended = run_ended(&events).expect("run_ended");
    assert_eq!(ended, (RunKey::chat(&id), Some(CycleOutcome::Cancelled)));
    assert_eq!(lifecycle(&events).len(), 2);
}

#[tokio::test]
async fn a_turn_whose_caller_stops_waiting_still_finishes_and_is_recorded() {
    let mut f = team(Mode::Broadcast, &["a"], false, 1).await;
    let (id, chat) = chat_in_flight(
        &f,
        Reply::chunks(["a slow ", "answer"]).chunk_delay(Duration::from_millis(100)),
    )
    .await;
    // The chat's future is dropped mid-turn: its run ends, the turn goes on by itself.
    chat.abort();
    let finished = f
        .events_until("the turn's end", |e| {
            matches!(e.kind, EventKind::TurnFinished { .. })
        })
        .await;
    let ended = run_ended(&finished).expect("run_ended before the turn's end");
    assert_eq!(ended.1, Some(CycleOutcome::Cancelled));
    match &finished.last().expect("turn_finished").kind {
        EventKind::TurnFinished { success, message, .. } => {
            assert!(success);
            assert_eq!(message.as_ref().map(|m| m.text.as_str()), Some("a slow answer"));
        }
        other => panic!("{other:?}"),
    }
    // Read through the writer: every line queued so far is in it.
    let stored = f.engine.load_transcript(&id).expect("transcript").messages;
    let texts: Vec<&str> = stored.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["hello", "a slow answer"]);
    // Counted done: the session is idle again.
    tokio::time::timeout(HANG_GUARD, async {
        while f.engine.session_busy(&id) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the session is idle again");
}

#[tokio::test]
async fn chats_sent_at_once_to_one_session_run_one_at_a_time_in_order() {
    let mut f = team(Mode::Broadcast, &["a"], false, 1).await;
    f.server.script(
        "w-a",
        ["first", "second", "third"]
            .into_iter()
            .map(|a| Reply::chunks([a]).chunk_delay(Duration::from_millis(20)))
            .collect(),
    );
    let id = f.session_id("t-a");
    let chats: Vec<_> = ["one", "two", "three"]
        .into_iter()
        .map(|p| tokio::spawn(f.engine.start_chat(&id, p.into(), None).expect("registered")))
        .collect();
    let mut answers = Vec::new();
    for chat in chats {
        let result = tokio::time::timeout(HANG_GUARD, chat)
            .await
            .expect("each chat ends")
            .expect("joins");
        answers.push(result.text);
    }
    assert_eq!(answers, ["first", "second", "third"]);
    // Each request carries the turns before it: none overlapped, none was reordered.
    let requests = f.server.requests_for("w-a");
    // (After the session's system prompt.)
    let seen: Vec<Vec<String>> = requests
        .iter()
        .map(|r| r.prompt_texts().into_iter().skip(1).collect())
        .collect();
    assert_eq!(
        seen,
        [
            vec!["one"],
            vec!["one", "first", "two"],
            vec!["one", "first", "two", "second", "three"],
        ]
    );
    let started: Vec<u64> = f
        .drain()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { generation, .. } => Some(*generation),
            _ => None,
        })
        .collect();
    assert_eq!(started, [1, 2, 3]);
}

#[tokio::test]
async fn a_members_direct_chats_are_its_own_runs_not_the_teams() {
    // runs_kept 2: one team run, then three chats with a member (`u` asks again the same way).
    let mut f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    let files = f.with_run_log(2);
    f.server.script("w-a", vec![Reply::text("team answer a")]);
    f.server.script("w-b", vec![Reply::text("team answer b")]);
    f.run("the team's question").await;
    let a = f.session_id("t-a");
    for k in 1..=3 {
        f.server
            .script("w-a", vec![Reply::text(&format!("chat answer {k}"))]);
        let chat = f
            .engine
            .start_chat(&a, format!("chat {k}"), None)
            .expect("registered");
        tokio::time::timeout(HANG_GUARD, chat)
            .await
            .expect("the chat ends");
    }
    f.engine.flush().expect("flushed");
    let team_runs = files.list(&f.group_id).expect("the team's runs");
    assert_eq!(
        team_runs.len(),
        1,
        "only the team's run is the team's: {team_runs:?}"
    );
    let lines = files.read_lines(&f.group_id, &team_runs[0]).expect("read");
    assert!(
        lines.iter().any(|l| l.contains("\"key\":{\"kind\":\"team\"")),
        "the team's run: {lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("chat ")), "{lines:?}");
    let chats = files
        .list_of(&huddle::store::RunOwner::Session(a.clone()))
        .expect("the member's runs");
    assert_eq!(
        chats.len(),
        2,
        "the member's chats, kept as runs_kept says: {chats:?}"
    );
    let newest = files
        .read_lines_of(&huddle::store::RunOwner::Session(a), &chats[1])
        .expect("read");
    assert!(
        newest.iter().any(|l| l.contains("\"kind\":\"chat\""))
            && newest.iter().any(|l| l.contains("run_ended")),
        "{newest:?}"
    );
}
