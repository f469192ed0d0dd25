//! Logs go to `<data>/logs/huddle.log.<date>` through a non-blocking writer, never to the
//! terminal (the TUI owns it). The filter comes from `HUDDLE_LOG`, else `RUST_LOG`, else `info`.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// Starts file logging. Returns the guard that flushes the log on drop, or `None` when the log
/// directory cannot be used (huddle then runs without a log rather than failing).
pub fn init(logs_dir: &Path) -> Option<WorkerGuard> {
    if let Err(e) = std::fs::create_dir_all(logs_dir) {
        eprintln!(
            "huddle: logging disabled, cannot create {}: {e}",
            logs_dir.display()
        );
        return None;
    }
    let appender = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("huddle")
        .filename_suffix("log")
        .max_log_files(14)
        .build(logs_dir)
        .map_err(|e| eprintln!("huddle: logging disabled: {e}"))
        .ok()?;
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = std::env::var("HUDDLE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .is_ok();
    installed.then_some(guard)
}
