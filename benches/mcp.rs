//! One tool call's round trip to a started MCP server over stdio: the real `mcp-server-time`
//! (`get_current_time`), through `McpSource` as the engine calls it (arguments out, JSON-RPC
//! both ways, the result turned into text), and the cached tool list for comparison.
//!
//! Needs `HUDDLE_MCP_TIME` or `.ci/.venv/bin/mcp-server-time` (`bash .ci/setup-python-tools.sh`);
//! without it the benchmark says so and measures nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use huddle::tools::ToolSource;
use huddle::tools::mcp::{McpServerConfig, McpSource};
use tokio_util::sync::CancellationToken;

fn time_server() -> Option<PathBuf> {
    std::env::var_os("HUDDLE_MCP_TIME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/.venv/bin/mcp-server-time")))
        .filter(|p| p.exists())
}

fn bench_round_trip(c: &mut Criterion) {
    let Some(program) = time_server() else {
        eprintln!("mcp bench skipped: mcp-server-time is not installed (bash .ci/setup-python-tools.sh)");
        return;
    };
    let rt = huddle::async_runtime::build().expect("runtime");
    let config = McpServerConfig::stdio([program.to_string_lossy()]);
    let source = McpSource::new("time", config, Path::new("."));
    let arguments = serde_json::json!({"timezone": "UTC"})
        .as_object()
        .cloned()
        .expect("an object");
    // Started (and its tools listed) before measuring.
    let tools = rt.block_on(source.list(None)).expect("mcp-server-time starts");
    assert!(tools.iter().any(|t| t.name == "get_current_time"));

    let mut group = c.benchmark_group("mcp");
    group.sample_size(50).measurement_time(Duration::from_secs(8));
    group.bench_function("time_get_current_time_round_trip", |b| {
        b.iter(|| {
            let out = rt
                .block_on(source.call(
                    "get_current_time",
                    arguments.clone(),
                    None,
                    CancellationToken::new(),
                ))
                .expect("the call succeeds");
            assert!(!out.is_error);
            out
        })
    });
    group.bench_function("list_cached", |b| {
        b.iter(|| rt.block_on(source.list(None)).expect("listed"))
    });
    group.finish();
    rt.block_on(source.shutdown());
}

criterion_group!(benches, bench_round_trip);
criterion_main!(benches);
