//! Rate and usage limits are waited out, on tokio's paused clock (no wall time passes): a
//! member whose provider answers "rate limited, retry in 3 s" three times waits in its run
//! (`waiting_for_limit`, the run's panel state) and finishes; with `rate_limit_wait_secs` 0 the
//! run ends `rate_limited` and stays open to be resumed; a `fallback_model` takes over instead of
//! waiting. (That waiting does not count against `max_duration_secs` is tested beside the time
//! limit, in `engine/budget.rs`: here the transcript writer's thread would let the paused clock
//! jump to the time limit.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use huddle::config::{Config, ProviderKind};
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::{Engine, EngineOptions, EventSink, RunOverrides};
use huddle::model::{CycleOutcome, Group, GroupKind, Mode, Organization, Session, reconcile};
use huddle::providers::{
    DeltaSink, ErrorKind, Provider, ProviderError, ProviderOptions, TurnOutput, TurnRequest,
};
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};
use tokio_util::sync::CancellationToken;

/// Requests the limited model refuses before it answers (set per test; the tests that use it
/// run one at a time through [`LOCK`]).
static REFUSALS: AtomicU32 = AtomicU32::new(0);
static ASKED: AtomicU32 = AtomicU32::new(0);
static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Stands in for the simulator: `sim/<model>` refuses `REFUSALS` requests with "rate limited,
/// retry in 3 s", then answers; `sim/fallback` always answers.
struct Limited;

impl Provider for Limited {
    fn name(&self) -> &str {
        "sim"
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Sim
    }
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        _deltas: DeltaSink<'a>,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(async move {
            if req.model != "fallback" {
                let n = ASKED.fetch_add(1, Ordering::SeqCst);
                if n < REFUSALS.load(Ordering::SeqCst) {
                    return Err(ProviderError::new(
                        ErrorKind::RateLimited,
                        "lim",
                        "429 from provider `lim`: rate limited",
                    )
                    .with_retry_after(Some(Duration::from_secs(3))));
                }
            }
            Ok(TurnOutput {
                text: format!("answer of {}", req.model),
                usage: None,
                finish_reason: Some("stop".into()),
                duration: Duration::ZERO,
                simulated: false,
                tool_calls: Vec::new(),
                agent: None,
                sandbox_denials: Vec::new(),
            })
        })
    }
}

fn limited(_name: &str) -> Arc<dyn Provider> {
    Arc::new(Limited)
}

struct Setup {
    engine: Engine,
    org: OrgHandle,
    group_id: String,
    events: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>,
    _dir: tempfile::TempDir,
}

fn setup(refusals: u32, fallback: Option<&str>, wait_secs: u64) -> Setup {
    REFUSALS.store(refusals, Ordering::SeqCst);
    ASKED.store(0, Ordering::SeqCst);
    let dir = tempfile::tempdir().expect("dir");
    let config =
        Config::parse("default_model: sim/m\n", std::path::Path::new("test-config.yaml")).expect("config");
    let providers = huddle::providers::Providers::with_options(&config, ProviderOptions::default(), limited)
        .expect("providers");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("t", GroupKind::Team);
    group.mode = Mode::Sequential;
    let gid = group.id.clone();
    let mut s = Session::new("t-a", &gid, "sim/m");
    s.team = true;
    s.fallback_model = fallback.map(str::to_string);
    org.sessions.push(s);
    org.groups.push(group);
    let org = OrgHandle::persistent_with_debounce(
        org,
        OrganizationFile::new(dir.path().join("organization.json")),
        Duration::from_millis(5),
    );
    let (sink, events) = EventSink::channel();
    let engine = Engine::new(
        providers,
        org.clone(),
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions {
            rate_limit_wait: Duration::from_secs(wait_secs),
            ..EngineOptions::default()
        },
    );
    Setup {
        engine,
        org,
        group_id: gid,
        events,
        _dir: dir,
    }
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) -> Vec<EngineEvent> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_limit_is_waited_out_shown_and_the_run_finishes() {
    let _one = LOCK.lock().await;
    let mut s = setup(3, None, 900);
    let run = s
        .engine
        .start_group(&s.group_id, "go".into(), RunOverrides::default())
        .expect("starts");
    let run = tokio::spawn(run);
    // While it waits, the run lists its wait (what `huddle ps` shows).
    let mut seen_waiting = false;
    while !run.is_finished() {
        seen_waiting |= !s.engine.limit_waits().is_empty();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let report = run.await.expect("joins").expect("runs");
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "answer of m");
    assert!(seen_waiting, "the wait was listed");
    let events = drain(&mut s.events);
    let waits: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LimitWait { wait_ms, .. } => Some(*wait_ms),
            _ => None,
        })
        .collect();
    assert_eq!(waits, [3000, 3000, 3000], "each refusal waited out");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::LimitWaitOver { .. }))
            .count(),
        3
    );
    // Waiting is paused time: the run's duration leaves it out.
    assert!(report.duration < Duration::from_secs(9), "{:?}", report.duration);
    assert!(
        s.org
            .read(|o| o.group(&s.group_id).and_then(|g| g.state.run.clone()))
            .is_none(),
        "finished: nothing left to resume"
    );
}

#[tokio::test(start_paused = true)]
async fn with_no_wait_allowed_the_run_ends_rate_limited_and_stays_resumable() {
    let _one = LOCK.lock().await;
    let mut s = setup(1, None, 0);
    let report = s
        .engine
        .run_group(&s.group_id, "go".into(), RunOverrides::default())
        .await
        .expect("runs");
    assert_eq!(report.outcome, CycleOutcome::RateLimited);
    assert!(report.summary.contains("Rate limited"), "{}", report.summary);
    let open = s
        .org
        .read(|o| o.group(&s.group_id).and_then(|g| g.state.run.clone()))
        .expect("kept open");
    assert!(open.reason.is_some_and(|r| r.contains("rate limited")));
    let events = drain(&mut s.events);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::LimitWait { .. }))
    );
    // Resumed once the limit is gone, it finishes.
    let resumed = s
        .engine
        .resume_cycle(&s.group_id, RunOverrides::default())
        .await
        .expect("resumes");
    assert_eq!(resumed.outcome, CycleOutcome::Completed);
    assert_eq!(resumed.final_text, "answer of m");
}

#[tokio::test(start_paused = true)]
async fn a_fallback_model_takes_the_turn_over_instead_of_waiting() {
    let _one = LOCK.lock().await;
    let mut s = setup(5, Some("sim/fallback"), 900);
    let report = s
        .engine
        .run_group(&s.group_id, "go".into(), RunOverrides::default())
        .await
        .expect("runs");
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "answer of fallback");
    let events = drain(&mut s.events);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::LimitWait { .. }))
    );
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::Warning { message } if message.contains("fallback_model sim/fallback takes the turn over"))));
}
