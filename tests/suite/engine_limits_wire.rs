//! Rate and usage limits on the wire, on the fake LLM server (127.0.0.1) and a scripted CLI
//! agent: a 429 whose reset the server gives in `retry-after-ms`, OpenAI's
//! `x-ratelimit-reset-*` or Anthropic's `anthropic-ratelimit-*-reset` is waited out by the run
//! (short waits, real time: only the waits' lengths as the headers gave them are asserted, never
//! the wall clock); `rate_limit_wait_secs: 0` ends the run `rate_limited` (exit code 8),
//! resumable; a wait is stopped by an interruption or by the stop key and the run resumes; a CLI agent's
//! `usage limit reached|<epoch>` is waited out and the agent asked again.

use std::time::Duration;

use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::engine::{EngineOptions, RunOverrides};
use huddle::model::{CycleOutcome, Mode};

use super::engine_fixture::{self, Fixture};
use super::fake_llm_server::Reply;

fn waits(events: &[EngineEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LimitWait {
                wait_ms, provider, ..
            } => Some((*wait_ms, provider.clone())),
            _ => None,
        })
        .collect()
}

async fn one_member(options: EngineOptions) -> Fixture {
    engine_fixture::team_with(Mode::Sequential, &["a"], false, 1, options).await
}

#[tokio::test]
async fn each_api_s_reset_headers_are_waited_out_and_the_run_finishes() {
    let mut f = one_member(EngineOptions::default()).await;
    let in_a_second = (chrono::Utc::now() + chrono::Duration::seconds(1)).to_rfc3339();
    f.server.script(
        "w-a",
        vec![
            Reply::status(429).header("retry-after-ms", "300"),
            Reply::status(429)
                .header("x-ratelimit-reset-requests", "250ms")
                .header("x-ratelimit-remaining-requests", "0")
                .header("x-ratelimit-reset-tokens", "6m0s")
                .header("x-ratelimit-remaining-tokens", "5000"),
            Reply::status(429)
                .header("anthropic-ratelimit-tokens-reset", &in_a_second)
                .header("anthropic-ratelimit-tokens-remaining", "0"),
            Reply::text("done at last"),
        ],
    );
    let report = f.run("go").await;
    assert_eq!(report.outcome, CycleOutcome::Completed, "{:?}", report.failed);
    assert_eq!(report.final_text.trim(), "done at last");
    assert_eq!(
        f.server.requests_for("w-a").len(),
        4,
        "asked again after each wait"
    );
    let events = f.drain();
    let waits = waits(&events);
    assert_eq!(waits.len(), 3, "{waits:?}");
    assert_eq!(waits[0], (300, "openai".to_string()), "retry-after-ms");
    assert_eq!(waits[1].0, 250, "the used-up limit's reset, not the 6 minutes");
    assert!(waits[2].0 <= 1000, "until the anthropic reset: {waits:?}");
    // The same words in huddle run's progress and the timeline.
    let shown: Vec<String> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::LimitWait { .. }))
        .filter_map(huddle::headless::progress_line)
        .collect();
    assert!(
        shown[0].contains("a: waiting until ") && shown[0].contains(" UTC for openai limit (300ms)"),
        "{shown:?}"
    );
    let over = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::LimitWaitOver { .. }))
        .count();
    assert_eq!(over, 3);
}

#[tokio::test]
async fn with_no_wait_allowed_a_429_ends_the_run_rate_limited_and_it_resumes() {
    let f = one_member(EngineOptions {
        rate_limit_wait: Duration::ZERO,
        ..EngineOptions::default()
    })
    .await;
    f.server.script(
        "w-a",
        vec![Reply::status(429).retry_after("3"), Reply::text("second try")],
    );
    let report = f.run("go").await;
    assert_eq!(report.outcome, CycleOutcome::RateLimited);
    assert_eq!(
        huddle::headless::exit_code(&report),
        huddle::headless::EXIT_RATE_LIMITED
    );
    assert_eq!(
        f.server.requests_for("w-a").len(),
        1,
        "no retry in the provider either"
    );
    let open = f
        .org
        .read(|o| o.group(&f.group_id).and_then(|g| g.state.run.clone()))
        .expect("left open to be resumed");
    assert!(
        open.reason
            .as_deref()
            .is_some_and(|r| r.contains("rate_limit_wait_secs is 0")),
        "{:?}",
        open.reason
    );
    let resumed = f
        .engine
        .resume_cycle(&f.group_id, RunOverrides::default())
        .await
        .expect("resumes");
    assert_eq!(resumed.outcome, CycleOutcome::Completed);
    assert_eq!(resumed.final_text.trim(), "second try");
}

/// A run whose only turn meets a limit that resets in ten minutes (within the default bound of
/// 900 s, so it waits), stopped by `stop` during the wait: the wait ends at once, the run ends
/// cancelled and is kept open (listed as waiting before, not after); resumed (after the reset),
/// the turn is asked again and the run finishes. Returns why the open run says it was left.
async fn stopped_during_a_wait(stop: impl FnOnce(&huddle::engine::Engine, &RunKey) -> bool) -> String {
    let mut f = one_member(EngineOptions::default()).await;
    f.server.script(
        "w-a",
        vec![
            Reply::status(429).header("retry-after", "600"),
            Reply::text("after the reset"),
        ],
    );
    let run = f.spawn_run("go");
    let seen = f
        .events_until("the wait", |e| matches!(e.kind, EventKind::LimitWait { .. }))
        .await;
    assert_eq!(waits(&seen)[0].0, 600_000);
    let listed = f.engine.limit_waits();
    assert_eq!(listed.len(), 1, "listed while it waits");
    assert_eq!(listed[0].2.provider, "openai");
    assert!(stop(&f.engine, &RunKey::team(&f.group_id)));
    let report = tokio::time::timeout(engine_fixture::HANG_GUARD, run)
        .await
        .expect("the wait ends at once")
        .expect("joins");
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert!(f.engine.limit_waits().is_empty());
    let open = f
        .org
        .read(|o| o.group(&f.group_id).and_then(|g| g.state.run.clone()))
        .expect("kept open to be resumed");
    let offered = f
        .org
        .read(|o| o.group(&f.group_id).and_then(|g| g.state.interrupted(g.mode)));
    assert!(offered.is_some(), "offered for resumption");
    let resumed = f
        .engine
        .resume_cycle(&f.group_id, RunOverrides::default())
        .await
        .expect("resumes");
    assert_eq!(resumed.outcome, CycleOutcome::Completed);
    assert_eq!(resumed.final_text.trim(), "after the reset");
    assert_eq!(f.server.requests_for("w-a").len(), 2);
    open.reason.unwrap_or_default()
}

#[tokio::test]
async fn a_wait_is_stopped_by_an_interruption_and_the_run_resumes_after_it() {
    stopped_during_a_wait(|engine, key| engine.interrupt_run(key)).await;
}

/// The stop key (or `huddle stop`) during a limit wait: not an interruption, yet the run is
/// kept to be resumed, saying why.
#[tokio::test]
async fn a_stop_during_a_wait_ends_it_at_once_and_leaves_the_run_resumable() {
    let reason = stopped_during_a_wait(|engine, key| engine.stop(key)).await;
    assert!(
        reason.starts_with("stopped while ")
            && reason.contains(" waited until ")
            && reason.contains(" UTC for the openai limit"),
        "{reason}"
    );
}

/// A session's reflection stopped while it waits for a limit is kept to be resumed too, and
/// its resumption asks the interrupted iteration again.
#[tokio::test]
async fn a_reflection_stopped_during_a_wait_stays_resumable() {
    use huddle::engine::ReflectionRequest;
    let mut f = one_member(EngineOptions::default()).await;
    f.server.script(
        "w-a",
        vec![
            Reply::status(429).header("retry-after", "600"),
            Reply::text("After the reset\n[[REFLECTION_COMPLETE]]"),
        ],
    );
    let id = f.session_id("t-a");
    let request = ReflectionRequest {
        goal: "Explain".into(),
        max_iterations: 3,
        evaluator_model: None,
        model_override: None,
    };
    let run = tokio::spawn(f.engine.start_reflection(&id, request).expect("registered"));
    f.events_until("the wait", |e| matches!(e.kind, EventKind::LimitWait { .. }))
        .await;
    assert!(f.engine.stop(&RunKey::reflection(&id)));
    let report = tokio::time::timeout(engine_fixture::HANG_GUARD, run)
        .await
        .expect("the wait ends at once")
        .expect("joins")
        .expect("ran");
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    let saved = f
        .org
        .read(|o| o.session(&id).and_then(|s| s.reflection.clone()))
        .expect("kept to be resumed");
    assert!(
        saved
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("stopped while ")),
        "{:?}",
        saved.reason
    );
    let resumed = f
        .engine
        .start_reflection_resume(&id)
        .expect("resumable")
        .await
        .expect("ran");
    assert_eq!(resumed.final_text.trim(), "After the reset");
    assert_eq!(f.server.requests_for("w-a").len(), 2);
}

/// A stop with no limit wait in progress still ends the run for good (nothing to resume).
#[tokio::test]
async fn a_stop_with_no_wait_ends_the_run_for_good() {
    let mut f = one_member(EngineOptions::default()).await;
    f.server.script(
        "w-a",
        vec![Reply::text("slow answer").chunk_delay(Duration::from_millis(500))],
    );
    let run = f.spawn_run("go");
    f.events_until("the turn", |e| matches!(e.kind, EventKind::TurnStarted { .. }))
        .await;
    assert!(f.engine.stop(&RunKey::team(&f.group_id)));
    let report = tokio::time::timeout(engine_fixture::HANG_GUARD, run)
        .await
        .expect("stops")
        .expect("joins");
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert!(
        f.org
            .read(|o| o.group(&f.group_id).and_then(|g| g.state.run.clone()))
            .is_none(),
        "not kept"
    );
}

#[tokio::test]
async fn a_cli_agent_s_usage_limit_is_waited_out_until_its_epoch() {
    let mut f = one_member(EngineOptions::default()).await;
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path().display();
    f.with_cli_agents(
        dir.path(),
        &[(
            "cli-a",
            &format!(
                "cat > /dev/null\nif [ -e {d}/once ]; then printf 'the answer after the reset\\n'; else touch {d}/once; echo \"Claude AI usage limit reached|$(( $(date +%s) + 1 ))\"; exit 1; fi"
            ),
        )],
    );
    let a = f.session_id("t-a");
    f.org
        .update(|o| o.session_mut(&a).expect("member").model = "cli-a/x".into());
    let report = f.run("go").await;
    assert_eq!(report.outcome, CycleOutcome::Completed, "{:?}", report.failed);
    assert_eq!(report.final_text.trim(), "the answer after the reset");
    let waits = waits(&f.drain());
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!(waits[0].0 <= 2000, "until the epoch it printed: {waits:?}");
    assert_eq!(waits[0].1, "cli-a");
}
