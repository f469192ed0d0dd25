//! Mode `dispatch`: what huddle adds per dispatched sub-agent with a provider that costs
//! nothing (goal ≤ 100 µs), and 64 sub-agents on a 200 ms sim running at once under
//! `max_concurrent_agents: 64` (goal ≤ 300 ms wall for the whole run).
//!
//! The orchestrator is a costless provider that dispatches every member in one round, then
//! waits and answers; transcripts and run files go to `HUDDLE_BENCH_DIR` or
//! `target/bench-data` (the disk users have).

#[path = "support/drain_events.rs"]
mod drain_events;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use huddle::config::{Config, ProviderKind};
use huddle::engine::protocol::dispatch::DISPATCH_TOOL;
use huddle::engine::{Engine, EngineOptions, EventSink, RunOverrides};
use huddle::model::{
    DispatchLimits, Group, GroupKind, Mode, Organization, Role, Session, ToolCall, Usage, reconcile,
};
use huddle::providers::{ChatRole, DeltaSink, Provider, ProviderError, TurnOutput, TurnRequest};
use huddle::store::{OrgHandle, RunFiles, RunLog, Transcripts};
use tokio_util::sync::CancellationToken;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Costs nothing: as the orchestrator it dispatches every member at once, then answers; as a
/// sub-agent it answers at once.
struct NullDispatcher;

impl Provider for NullDispatcher {
    fn name(&self) -> &str {
        "null"
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Sim
    }
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        deltas: DeltaSink<'a>,
        _cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(async move {
            let dispatched = req
                .messages
                .iter()
                .any(|m| m.role == ChatRole::Assistant && !m.tool_calls.is_empty());
            let names: Vec<String> = req
                .tools
                .iter()
                .find(|t| t.name == DISPATCH_TOOL)
                .and_then(|t| t.input_schema["properties"]["name"]["enum"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            let tool_calls: Vec<ToolCall> = if dispatched {
                Vec::new()
            } else {
                names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| ToolCall {
                        id: format!("c{i}"),
                        name: DISPATCH_TOOL.into(),
                        arguments: format!("{{\"name\":\"{n}\",\"task\":\"part {i}\"}}"),
                    })
                    .collect()
            };
            let text = "A short answer.".to_string();
            deltas(&text);
            Ok(TurnOutput {
                text,
                usage: Some(Usage::new(10, 8)),
                finish_reason: Some("stop".into()),
                duration: Duration::ZERO,
                simulated: true,
                tool_calls,
                agent: None,
                sandbox_denials: Vec::new(),
            })
        })
    }
}

struct Bench {
    rt: tokio::runtime::Runtime,
    engine: Engine,
    group_id: String,
    _dir: tempfile::TempDir,
}

/// A dispatch team: a costless orchestrator and `members` sub-agents on `model`, all of them
/// allowed at once; events go to a consumer and the run log, as in the TUI.
fn team(members: usize, model: &str) -> Bench {
    // As the `huddle` binary: the clock is never paused.
    huddle::store::real_clock_only();
    let rt = huddle::async_runtime::build().expect("runtime");
    let dir = support::bench_dir();
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("bench", GroupKind::Team);
    group.mode = Mode::Dispatch;
    group.max_iterations = 10;
    group.settings.dispatch = DispatchLimits {
        max_concurrent_agents: Some(members as u32),
        ..DispatchLimits::default()
    };
    let gid = group.id.clone();
    org.groups.push(group);
    let mut o = Session::new("bench-orchestrator", &gid, "null/zero");
    o.role = Role::Orchestrator;
    org.sessions.push(o);
    for k in 0..members {
        let mut w = Session::new(format!("bench-agent-{k}"), &gid, model);
        w.order = k as i64 + 1;
        w.system_prompt = Some(format!("You are agent {k}, a careful specialist."));
        org.sessions.push(w);
    }
    let (sink, events) = EventSink::channel();
    let sink = sink.with_run_log(RunLog::start(RunFiles::new(dir.path().join("runs")), 50));
    let engine = rt.block_on(async {
        drain_events::spawn(events);
        let mut providers = huddle::sim::providers(&Config::default()).expect("providers");
        providers.insert(Arc::new(NullDispatcher));
        Engine::new(
            providers,
            OrgHandle::in_memory(org),
            Transcripts::new(dir.path().join("sessions")),
            sink,
            EngineOptions {
                max_concurrency: members,
                ..EngineOptions::default()
            },
        )
    });
    Bench {
        rt,
        engine,
        group_id: gid,
        _dir: dir,
    }
}

fn run(b: &Bench) {
    let report =
        b.rt.block_on(
            b.engine
                .run_group(&b.group_id, "Investigate".into(), RunOverrides::default()),
        )
        .expect("run");
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert!(report.summary.contains("completed"), "{}", report.summary);
}

fn bench_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch_overhead_per_sub_agent");
    group.sample_size(20).measurement_time(Duration::from_secs(4));
    for members in [4usize, 16, 64] {
        let b = team(members, "null/zero");
        group.bench_with_input(BenchmarkId::from_parameter(members), &members, |bench, _| {
            bench.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    run(&b);
                }
                start.elapsed() / members as u32
            })
        });
    }
    group.finish();
}

fn bench_fan_out(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch_fan_out");
    group.sample_size(10).measurement_time(Duration::from_secs(6));
    let b = team(64, "sim/slow-200ms");
    group.bench_function("64_sub_agents_at_200ms", |bench| bench.iter(|| run(&b)));
    group.finish();
}

criterion_group!(benches, bench_overhead, bench_fan_out);
criterion_main!(benches);
