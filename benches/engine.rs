//! Engine overhead with a provider that costs nothing (what huddle adds per agent message, goal
//! well under 20 µs and flat in team size; also with the run log every front end has), real
//! parallelism with a 200 ms sim (16 workers in one round, goal ≤ 230 ms), a session's cost per
//! chat turn, and the same turn on the zero-latency sim for comparison.
//!
//! Transcripts and run files go to a temporary directory under `HUDDLE_BENCH_DIR` or
//! `target/bench-data`: the disk users have, never a tmpfs `/tmp`. The allocator is huddle's own
//! (the binary's global allocator), so the figures are what `huddle` does.

mod support;

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use huddle::config::Config;
use huddle::config::ProviderKind;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::protocol::prompts::WORKER_RESULTS_HEADING;
use huddle::engine::{Engine, EngineOptions, EventSink, RunOverrides};
use huddle::model::Usage;
use huddle::model::{Group, GroupKind, Mode, Organization, Role, Session, reconcile};
use huddle::providers::{DeltaSink, Provider, ProviderError, TurnOutput, TurnRequest};
use tokio_util::sync::CancellationToken;

/// How a worker's system prompt starts.
const WORKER_BRIEF: &str = "You are worker";

/// A provider that costs nothing: a fixed plan when asked to plan, else a short answer. With it
/// the benchmark measures huddle's own work, not a model's (or the sim's text generation).
struct NullProvider {
    plan: String,
    /// Requests answered: a run is checked to make the messages it is counted as.
    calls: std::sync::atomic::AtomicU64,
}

impl Provider for NullProvider {
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
            self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // The orchestrator is asked for a plan, then for a synthesis of the workers'
            // results; a worker never plans. Told apart by a look for the results' heading, not
            // the sim's reading through every heading (the fake's own work is not huddle's): a
            // run that asked otherwise would make another number of requests, which
            // `checked_run` counts.
            let system = req.system.as_deref().unwrap_or("");
            let worker = system.starts_with(WORKER_BRIEF);
            let text = if !worker && !req.last_user_text().contains(WORKER_RESULTS_HEADING) {
                self.plan.clone()
            } else {
                "A short answer from the null provider.".to_string()
            };
            deltas(&text);
            Ok(TurnOutput {
                text,
                usage: Some(Usage::new(10, 8)),
                finish_reason: Some("stop".into()),
                duration: Duration::ZERO,
                simulated: true,
                tool_calls: Vec::new(),
                agent: None,
                sandbox_denials: Vec::new(),
            })
        })
    }
}
use huddle::store::{OrgHandle, RunFiles, RunLog, Transcripts};

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Bench {
    rt: tokio::runtime::Runtime,
    null: Arc<NullProvider>,
    engine: Engine,
    group_id: String,
    first_session: String,
    consumer: Consumer,
    _dir: tempfile::TempDir,
}

/// The task that takes the engine's events, as the host's task that hands them to front ends
/// does, and a way to know it has taken every event sent so far: a run is measured until its
/// events are consumed, not only made (left queued, their consumer's work fell outside the
/// measure, and the queue grew for as long as the benchmark ran).
struct Consumer {
    tx: tokio::sync::mpsc::UnboundedSender<EngineEvent>,
    drained: Arc<tokio::sync::Notify>,
}

/// The group id of the event that marks how far the consumer got.
const DRAINED: &str = "bench-drained";

impl Consumer {
    /// Starts the consumer's task on the runtime; its sink is the engine's.
    fn start(rt: &tokio::runtime::Runtime) -> (Consumer, EventSink) {
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel::<EngineEvent>();
        let drained = Arc::new(tokio::sync::Notify::new());
        let notify = Arc::clone(&drained);
        rt.spawn(async move {
            // Taken as the host's dispatcher takes them.
            let mut taken = Vec::new();
            while events
                .recv_many(&mut taken, huddle::async_runtime::RECEIVE_BATCH)
                .await
                > 0
            {
                for event in taken.drain(..) {
                    if &*event.group_id == DRAINED {
                        notify.notify_one();
                    }
                }
            }
        });
        let sink = EventSink::new(tx.clone());
        (Consumer { tx, drained }, sink)
    }

    /// Waits until the consumer has taken every event sent before this call.
    async fn drain(&self) {
        let marker = EngineEvent {
            group_id: DRAINED.into(),
            group: DRAINED.into(),
            run_id: None,
            execution: None,
            kind: EventKind::IterationStarted {
                iteration: 0,
                max_iterations: 0,
            },
        };
        if self.tx.send(marker).is_ok() {
            self.drained.notified().await;
        }
    }
}

fn team(mode: Mode, workers: usize, model: &str, concurrency: usize, run_log: bool) -> Bench {
    // The allocator as `huddle` sets it up.
    huddle::allocator::tune();
    huddle::store::real_clock_only();
    // The runtime as `huddle` builds it (one worker: see `huddle::async_runtime`).
    let rt = huddle::async_runtime::build().expect("runtime");
    let dir = support::bench_dir();
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("bench", GroupKind::Team);
    group.mode = mode;
    let gid = group.id.clone();
    org.groups.push(group);
    if mode.spec().has_orchestrator {
        let mut o = Session::new("bench-orchestrator", &gid, model);
        o.role = Role::Orchestrator;
        org.sessions.push(o);
    }
    for k in 0..workers {
        let mut w = Session::new(format!("bench-worker-{k}"), &gid, model);
        w.order = k as i64 + 1;
        w.system_prompt = Some(format!("{WORKER_BRIEF} {k}, a careful specialist."));
        org.sessions.push(w);
    }
    let first_session = org
        .sessions
        .iter()
        .find(|s| s.group_id == gid)
        .map(|s| s.id.clone())
        .expect("a session");
    let (consumer, sink) = Consumer::start(&rt);
    let sink = if run_log {
        sink.with_run_log(RunLog::start(RunFiles::new(dir.path().join("runs")), 50))
    } else {
        sink
    };
    let plan: String = (0..workers)
        .map(|k| format!("@worker:bench-worker-{k}\nDo part {k}.\n@end\n"))
        .collect();
    let null = Arc::new(NullProvider {
        plan,
        calls: std::sync::atomic::AtomicU64::new(0),
    });
    let engine = rt.block_on(async {
        let mut providers = huddle::sim::providers(&Config::default()).expect("providers");
        providers.insert(Arc::clone(&null) as Arc<dyn Provider>);
        Engine::new(
            providers,
            OrgHandle::in_memory(org),
            Transcripts::new(dir.path().join("sessions")),
            sink,
            EngineOptions {
                max_concurrency: concurrency,
                ..EngineOptions::default()
            },
        )
    });
    Bench {
        rt,
        null,
        engine,
        group_id: gid,
        first_session,
        consumer,
        _dir: dir,
    }
}

/// This process's user + system time so far (all threads).
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

impl Bench {
    /// One orchestrator run of the team, checked to have made `messages` requests (a plan, one
    /// answer per worker, a synthesis): a prompt that changes shape must not leave the benchmark
    /// measuring one-message runs.
    fn checked_run(&self, messages: u64) {
        let before = self.null.calls.load(std::sync::atomic::Ordering::Relaxed);
        self.run();
        let made = self.null.calls.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert_eq!(made, messages, "a run made {made} requests, not {messages}");
    }

    /// A run as the host runs one (`host/tui_calls.rs`, `host/server.rs`): started by a task of
    /// the runtime (the host's reads a front end's request) as a task of its own, its events
    /// handed to the consumer's task on the runtime's threads.
    fn run(&self) {
        self.runs(1);
    }

    /// `count` runs one after the other, each as [`Bench::run`] says; the benchmark's thread
    /// only waits for the last. Until session 14 the benchmark's own thread polled each run
    /// (`block_on`), outside the runtime: every poll's events woke a runtime thread, and every
    /// run crossed threads twice, costs the host does not have.
    fn runs(&self, count: u64) {
        let engine = self.engine.clone();
        let group_id = self.group_id.clone();
        let driver = self.rt.spawn(async move {
            for _ in 0..count {
                let run = engine
                    .start_group(&group_id, "Summarise the design".into(), RunOverrides::default())
                    .expect("run starts");
                let report = tokio::spawn(run).await.expect("the run's task").expect("run");
                assert!(report.failed.is_none());
            }
        });
        self.rt.block_on(async {
            driver.await.expect("the runs' task");
            self.consumer.drain().await;
        });
    }
}

fn bench_overhead(c: &mut Criterion) {
    overhead(c, "engine_overhead_per_message", false);
    // As the TUI and `huddle run` have it: every run's events also go to its run file.
    overhead(c, "engine_overhead_with_run_log", true);
}

fn overhead(c: &mut Criterion, name: &str, run_log: bool) {
    let mut group = c.benchmark_group(name);
    group.sample_size(20).measurement_time(Duration::from_secs(4));
    for workers in [4usize, 16, 64] {
        let b = team(Mode::Orchestrator, workers, "null/zero", 64, run_log);
        // plan + one answer per worker + synthesis
        let messages = (workers + 2) as u32;
        b.checked_run(u64::from(messages));
        group.bench_with_input(BenchmarkId::from_parameter(workers), &workers, |bench, _| {
            // CPU time (every thread's), not the wall's: the machine is often shared.
            bench.iter_custom(|iters| {
                let start = cpu_time();
                b.runs(iters);
                cpu_time().saturating_sub(start) / messages
            })
        });
    }
    group.finish();
    marginal(name, run_log);
}

/// What one more message adds, apart from a run's own work: a run's CPU time grows by the same
/// amount for every message (the slope between a 4-worker and a 64-worker team), on top of
/// what every run costs once (its run file and transcripts created and synced, its events
/// begun and ended). The figures above are per message of the run, both together.
fn marginal(name: &str, run_log: bool) {
    const RUNS: u32 = 200;
    if !measuring(name) {
        return;
    }
    let per_run = |workers: usize| {
        let b = team(Mode::Orchestrator, workers, "null/zero", 64, run_log);
        b.checked_run(workers as u64 + 2);
        let start = cpu_time();
        b.runs(u64::from(RUNS));
        cpu_time().saturating_sub(start).as_secs_f64() * 1e6 / f64::from(RUNS)
    };
    let (small, large) = (per_run(4), per_run(64));
    // Messages of a run: a plan, one answer per worker, a synthesis.
    let per_message = (large - small) / f64::from(66 - 6);
    let fixed = small - 6.0 * per_message;
    println!(
        "{name}: a message adds {per_message:.1} µs of CPU; a run's own work is {fixed:.0} µs ({RUNS} runs each of 4 and 64 workers)"
    );
}

/// Whether this run of the benchmark measures `name`'s slope: not when `cargo test --benches`
/// runs each benchmark once to see it works, not while profiling (`--profile-time`), not when a
/// filter leaves `name` out.
fn measuring(name: &str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--profile-time") {
        return false;
    }
    // Criterion's filter: the first argument that is not an option.
    match args.iter().find(|a| !a.starts_with('-')) {
        None => true,
        Some(filter) => name.contains(filter.as_str()) || filter.starts_with(name),
    }
}

fn bench_parallel_round(c: &mut Criterion) {
    let mut group = c.benchmark_group("parallel_round");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    let b = team(Mode::Broadcast, 16, "sim/slow-200ms", 16, false);
    group.bench_function("16_workers_at_200ms", |bench| {
        bench.iter(|| {
            b.rt.block_on(b.engine.run_group(
                &b.group_id,
                "Answer in parallel".into(),
                RunOverrides::default(),
            ))
            .expect("run")
        })
    });
    group.finish();
}

fn bench_session_turn(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_actor");
    group.sample_size(30).measurement_time(Duration::from_secs(3));
    let b = team(Mode::Broadcast, 1, "null/zero", 1, false);
    group.bench_function("turn_with_null_provider", |bench| {
        bench.iter(|| b.rt.block_on(b.engine.ask(&b.first_session, "hi".into(), None)))
    });
    let sim = team(Mode::Broadcast, 1, "sim/zero", 1, false);
    group.bench_function("turn_with_zero_latency_sim", |bench| {
        bench.iter(|| {
            sim.rt
                .block_on(sim.engine.ask(&sim.first_session, "hi".into(), None))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_overhead, bench_parallel_round, bench_session_turn);
criterion_main!(benches);
