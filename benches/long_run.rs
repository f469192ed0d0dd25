//! A long reflect run: 100 iterations of a 58-worker team (6,000 agent messages) on a provider
//! that costs nothing, with the organization and transcripts on disk. What it shows: huddle's
//! cost per message stays flat from the first fifth of the run to the last (persisting a step
//! must not grow with the run's length).
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

fn main() {
    // `cargo test --benches` runs benches with `--bench`-less arguments: only measure when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
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
                        Some(e) if matches!(e.kind, EventKind::TurnFinished { .. }) => at.push(Instant::now()),
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
        let started = Instant::now();
        let report = engine
            .run_group(&gid, "Write the long report".into(), RunOverrides::default())
            .await
            .expect("run");
        engine.flush().expect("flush");
        let took = started.elapsed();
        let _ = done_tx.send(());
        let at = consumer.await.expect("consumer");
        (report, took, started, at)
    });
    let (report, took, started, at) = finished;
    let n = at.len();
    let fifth = n / 5;
    let mean = |from: Instant, to: Instant, count: usize| (to - from) / count.max(1) as u32;
    let first = mean(started, at[fifth - 1], fifth);
    let last = mean(at[n - fifth - 1], at[n - 1], fifth);
    println!("long reflect run on {}", file_system(dir.path()));
    println!(
        "  {n} agent messages in {} iterations ({:?}), {:.1?} in all",
        report.iterations, report.outcome, took
    );
    println!(
        "  per message: first fifth {first:.1?}, last fifth {last:.1?} (ratio {:.2})",
        last.as_secs_f64() / first.as_secs_f64()
    );
}
