//! A long reflect run: 100 iterations of a 58-worker team (6,000 agent messages) on a provider
//! that costs nothing, with the organization and transcripts on disk. What it shows: huddle's
//! cost per message stays flat from the first fifth of the run to the last (persisting a step
//! must not grow with the run's length).
//!
//! Two figures per message: the wall time, which includes waiting for the disk (every
//! iteration's checkpoints are written and synced before the run goes on: about 2 syncs per
//! iteration), and the process's CPU time (user + system, all threads: the engine, the saver's
//! serialising, the transcript and run writers), which is what huddle itself spends per
//! message (issue 28 item 6's "engine ≤ 20 µs per message").
//!
//! `cargo bench --bench long_run`; the data directory is `HUDDLE_BENCH_DIR` or
//! `target/bench-data` (a real disk, not tmpfs: the file system is printed).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use huddle::config::{Config, ProviderKind};
use huddle::engine::events::EventKind;
use huddle::engine::{Engine, EngineOptions, EventSink, RunOverrides};
use huddle::model::{Group, GroupKind, Mode, Organization, Role, Session, Usage, reconcile};
use huddle::providers::{DeltaSink, Provider, ProviderError, TurnOutput, TurnRequest};
use huddle::sim::{PromptKind, SimPrompt, classify};
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};
use tokio_util::sync::CancellationToken;

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORKERS: usize = 58;
const ITERATIONS: u32 = 100;

fn iterations() -> u32 {
    std::env::var("HUDDLE_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITERATIONS)
}

/// Costs nothing; every answer is different (so no stall ends the run early) and the plan
/// always names every worker.
struct CountingProvider {
    plan: String,
    count: AtomicU64,
}

impl Provider for CountingProvider {
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
            let n = self.count.fetch_add(1, Ordering::Relaxed);
            // Read as the sim reads it: the worker list lives in the orchestrator's brief (its
            // system prompt), not in each planning message.
            let prompt = SimPrompt {
                system: req.system.as_deref().unwrap_or(""),
                user: req.last_user_text(),
            };
            let text = if classify(&prompt) == PromptKind::Planning {
                self.plan.clone()
            } else {
                let words: Vec<String> = (0..24).map(|k| format!("a{n}w{k}")).collect();
                format!("Answer {n}: {}\n[[NEEDS_ITERATION]]", words.join(" "))
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

/// The file system type of the mount that holds `path` (from /proc/mounts).
fn file_system(path: &Path) -> String {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return "unknown".into();
    };
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mount, fs) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), format!("{fs} ({mount})")))
        })
        .max()
        .map_or_else(|| "unknown".into(), |(_, fs)| fs)
}

/// CPU time (user + system) this process has used, all threads.
fn cpu_time() -> Duration {
    // SAFETY: `usage` is a plain struct the call fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let of = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    of(usage.ru_utime) + of(usage.ru_stime)
}

fn main() {
    // `cargo test --benches` runs benches with `--bench`-less arguments: only measure when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    huddle::allocator::tune();
    huddle::store::real_clock_only();
    let base = std::env::var_os("HUDDLE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(&base).expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("long", GroupKind::Team);
    group.mode = Mode::OrchestratorReflect;
    group.max_iterations = iterations();
    let gid = group.id.clone();
    org.groups.push(group);
    let mut o = Session::new("long-orchestrator", &gid, "null/zero");
    o.role = Role::Orchestrator;
    org.sessions.push(o);
    for k in 0..WORKERS {
        let mut w = Session::new(format!("long-worker-{k}"), &gid, "null/zero");
        w.order = k as i64 + 1;
        org.sessions.push(w);
    }
    let rt = huddle::async_runtime::build().expect("runtime");
    let finished = rt.block_on(async {
        let (sink, mut events) = EventSink::channel();
        let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
        // A consumer, as a front end would be: notes when each message finished.
        let consumer = tokio::spawn(async move {
            let mut at = Vec::with_capacity(8_000);
            loop {
                tokio::select! {
                    biased;
                    e = events.recv() => match e {
                        Some(e) if matches!(e.kind, EventKind::TurnFinished { .. }) => at.push((Instant::now(), cpu_time())),
                        Some(_) => {}
                        None => break,
                    },
                    _ = &mut done_rx => break,
                }
            }
            at
        });
        let mut providers = huddle::sim::providers(&Config::default()).expect("providers");
        let plan: String = (0..WORKERS)
            .map(|k| format!("@worker:long-worker-{k}\nDo part {k}.\n@end\n"))
            .collect();
        providers.insert(Arc::new(CountingProvider {
            plan,
            count: AtomicU64::new(0),
        }));
        let handle = OrgHandle::persistent(org, OrganizationFile::new(dir.path().join("organization.json")));
        let engine = Engine::new(
            providers,
            handle,
            Transcripts::new(dir.path().join("sessions")),
            sink,
            EngineOptions {
                max_concurrency: 64,
                ..EngineOptions::default()
            },
        );
        let started = (Instant::now(), cpu_time());
        let report = engine
            .run_group(&gid, "Write the long report".into(), RunOverrides::default())
            .await
            .expect("run");
        engine.flush().expect("flush");
        let took = started.0.elapsed();
        let _ = done_tx.send(());
        let at = consumer.await.expect("consumer");
        (report, took, started, at)
    });
    let (report, took, started, at) = finished;
    let n = at.len();
    let fifth = n / 5;
    let wall = |from: (Instant, Duration), to: (Instant, Duration), count: usize| {
        (to.0 - from.0) / count.max(1) as u32
    };
    let cpu = |from: (Instant, Duration), to: (Instant, Duration), count: usize| {
        (to.1 - from.1) / count.max(1) as u32
    };
    let (first_wall, last_wall) = (
        wall(started, at[fifth - 1], fifth),
        wall(at[n - fifth - 1], at[n - 1], fifth),
    );
    let (first_cpu, last_cpu) = (
        cpu(started, at[fifth - 1], fifth),
        cpu(at[n - fifth - 1], at[n - 1], fifth),
    );
    println!("long reflect run on {}", file_system(dir.path()));
    println!(
        "  {n} agent messages in {} iterations ({:?}), {:.1?} in all, CPU {:.1?} ({:.1?} per message)",
        report.iterations,
        report.outcome,
        took,
        at[n - 1].1 - started.1,
        cpu(started, at[n - 1], n)
    );
    println!(
        "  wall per message: first fifth {first_wall:.1?}, last fifth {last_wall:.1?} (ratio {:.2})",
        last_wall.as_secs_f64() / first_wall.as_secs_f64()
    );
    println!(
        "  CPU per message: first fifth {first_cpu:.1?}, last fifth {last_cpu:.1?} (ratio {:.2})",
        last_cpu.as_secs_f64() / first_cpu.as_secs_f64()
    );
}
