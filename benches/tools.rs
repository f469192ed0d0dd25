//! What the tool loop adds per round (goal ≤ 50 µs): a provider that costs nothing calls an
//! in-process tool that costs nothing, 20 rounds per turn; the figure is (turn with 20 rounds −
//! turn without tools) / 20, so it is the loop's own work: the assistant step and tool result
//! stored, four events, argument checks, approval lookup, the cap, the next request built.

#[path = "support/drain_events.rs"]
mod drain_events;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;
use huddle::config::{Config, ProviderKind};
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{Group, GroupKind, Organization, Session, ToolCall, ToolSpec, Usage, reconcile};
use huddle::providers::{ChatRole, DeltaSink, Provider, ProviderError, TurnOutput, TurnRequest};
use huddle::store::{OrgHandle, Transcripts};
use huddle::tools::{Approval, ToolError, ToolOutput, ToolSource, Toolbox};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROUNDS: usize = 20;

/// Calls `null__echo` until the turn has `ROUNDS` results, then answers.
struct LoopProvider;

impl Provider for LoopProvider {
    fn name(&self) -> &str {
        "loop"
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Sim
    }
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        deltas: DeltaSink<'a>,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(async move {
            let start = req
                .messages
                .iter()
                .rposition(|m| m.role == ChatRole::User)
                .unwrap_or(0);
            let done = req.messages[start..]
                .iter()
                .filter(|m| m.role == ChatRole::Tool)
                .count();
            let call = (!req.tools.is_empty() && done < ROUNDS).then(|| ToolCall {
                id: format!("call_{done}"),
                name: "null__echo".into(),
                arguments: r#"{"text":"ping"}"#.into(),
            });
            let text = if call.is_some() { "" } else { "done" };
            deltas(text);
            Ok(TurnOutput {
                text: text.into(),
                usage: Some(Usage::new(10, 2)),
                finish_reason: Some("stop".into()),
                duration: Duration::ZERO,
                simulated: true,
                tool_calls: call.into_iter().collect(),
                agent: None,
                sandbox_denials: Vec::new(),
            })
        })
    }
}

struct Null;

impl ToolSource for Null {
    fn name(&self) -> &str {
        "null"
    }
    fn approval(&self) -> Approval {
        Approval::Auto
    }
    fn list<'a>(
        &'a self,
        _workdir: Option<&'a std::path::Path>,
    ) -> BoxFuture<'a, Result<Vec<ToolSpec>, ToolError>> {
        Box::pin(async {
            Ok(vec![ToolSpec {
                name: "echo".into(),
                description: "Echoes.".into(),
                input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            }])
        })
    }
    fn call<'a>(
        &'a self,
        _tool: &'a str,
        arguments: Map<String, Value>,
        _workdir: Option<&'a std::path::Path>,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            Ok(ToolOutput {
                text: arguments
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                is_error: false,
            })
        })
    }
}

struct Bench {
    rt: tokio::runtime::Runtime,
    engine: Engine,
    with_tools: String,
    without_tools: String,
    _dir: tempfile::TempDir,
}

fn bench_setup() -> Bench {
    // As the `huddle` binary: the clock is never paused.
    huddle::store::real_clock_only();
    let rt = huddle::async_runtime::build().expect("runtime");
    // Transcripts on the disk users have (never a tmpfs /tmp): `HUDDLE_BENCH_DIR` or
    // `target/bench-data`.
    let base = std::env::var_os("HUDDLE_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("target/bench-data"));
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(&base).expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group = Group::new("bench", GroupKind::Default);
    let gid = group.id.clone();
    org.groups.push(group);
    let mut tooled = Session::new("tooled", &gid, "loop/zero");
    tooled.tools = vec!["null".into()];
    let plain = Session::new("plain", &gid, "loop/zero");
    let (with_tools, without_tools) = (tooled.id.clone(), plain.id.clone());
    org.sessions.push(tooled);
    org.sessions.push(plain);
    let (sink, events) = EventSink::channel();
    let engine = rt.block_on(async {
        drain_events::spawn(events);
        let mut providers = huddle::sim::providers(&Config::default()).expect("providers");
        providers.insert(Arc::new(LoopProvider));
        Engine::new(
            providers,
            OrgHandle::in_memory(org),
            Transcripts::new(dir.path().join("sessions")),
            sink,
            EngineOptions {
                tools: Toolbox::new([Arc::new(Null) as Arc<dyn ToolSource>]),
                ..EngineOptions::default()
            },
        )
    });
    Bench {
        rt,
        engine,
        with_tools,
        without_tools,
        _dir: dir,
    }
}

fn bench_tool_round(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_loop");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    let b = bench_setup();
    group.bench_function("overhead_per_round", |bench| {
        bench.iter_custom(|iters| {
            let mut looped = Duration::ZERO;
            let mut plain = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let r =
                    b.rt.block_on(b.engine.ask(&b.with_tools, "go".into(), None))
                        .expect("turn");
                looped += start.elapsed();
                assert!(r.success && r.text == "done", "{r:?}");
                let start = Instant::now();
                let r =
                    b.rt.block_on(b.engine.ask(&b.without_tools, "go".into(), None))
                        .expect("turn");
                plain += start.elapsed();
                assert!(r.success);
            }
            looped.saturating_sub(plain) / ROUNDS as u32
        })
    });
    group.finish();
}

criterion_group!(benches, bench_tool_round);
criterion_main!(benches);
