//! The host: one process per data dir that owns the lock, the organization, the engine and
//! every run; front ends (`huddle run`, `huddle ps`/`stop`/`attach`, `huddle mcp`, the TUI)
//! attach to it over the data dir's owner-only socket.
//!
//! It is started on demand by the first front end that needs it (`huddle host`, hidden: the
//! current executable, detached into its own session, its standard streams closed once it said
//! it is ready, its log in the data dir's log file) and exits by itself once no front end has
//! been attached and nothing has run for a short while (`HUDDLE_HOST_IDLE_MS`, default
//! [`DEFAULT_IDLE`]). Two front ends racing to start it end with one host: the data dir's lock
//! decides, the loser says "ready" once the winner listens. Killed (SIGKILL), it leaves what a
//! crashed TUI left: everything said is on disk and cycles are interrupted, resumable; the next
//! front end starts a new host, which replaces the dead one's socket.
//!
//! - [`protocol`]: the messages, one JSON object per line.
//! - [`server`]: the socket's host side (who may connect, the requests, the runs it drives).
//! - [`table`]: the runs going, from the engine's events, and who follows them.
//! - [`outbox`]: what waits to go to one front end, bounded.
//! - [`client`]: what every front end uses: connect (starting the host if need be), requests,
//!   pushed events.

pub mod client;
pub mod outbox;
pub mod protocol;
pub mod server;
pub mod table;
mod tui_calls;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{Config, Paths};
use crate::store::{DataDirLock, StoreError};
use crate::tools::ApprovalPolicy;
use crate::workspace::Workspace;

/// How long the host waits, idle, before it exits.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(5);
/// The variable that sets it (milliseconds; tests use a short one).
pub const IDLE_VAR: &str = "HUDDLE_HOST_IDLE_MS";
/// How long a starting host waits for the lock a moment ago held by one that is exiting (which
/// saves, then lets go of it before it stops its tool servers: well within this).
const LOCK_WAIT: Duration = Duration::from_secs(8);
/// How long the host lets runs stopped by a signal save themselves before it exits.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The idle grace period this process was given.
pub fn idle_grace() -> Duration {
    std::env::var(IDLE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_IDLE, Duration::from_millis)
}

/// What the host tells the front end that started it, on its standard output: `ready`, or
/// `error: <why>`; then its standard output goes to /dev/null.
struct Handshake {
    said: bool,
}

impl Handshake {
    fn say(&mut self, line: &str) {
        if self.said {
            return;
        }
        self.said = true;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        drop(out);
        // Nothing more goes there: the front end that reads it may be gone.
        if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
            use std::os::fd::AsRawFd;
            // SAFETY: dup2 onto our own standard output with a descriptor we hold open.
            unsafe {
                libc::dup2(null.as_raw_fd(), 1);
            }
        }
    }
}

/// A panic in the host goes to its log (its standard streams lead nowhere once it is ready),
/// with a backtrace.
pub fn log_panics() {
    let earlier = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let backtrace = std::backtrace::Backtrace::force_capture();
        tracing::error!(%backtrace, "the huddle host panicked: {info}");
        earlier(info);
    }));
}

/// `huddle host`: takes the data dir, serves front ends until idle, then saves and exits. The
/// exit code: 0 served (or another host serves), 1 could not.
pub async fn run(paths: &Paths, repo: PathBuf) -> u8 {
    let mut ready = Handshake { said: false };
    let lock = match wait_for_lock(paths).await {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            // Another host took it meanwhile and listens: the front end uses that one.
            ready.say("ready");
            return 0;
        }
        Err(why) => {
            tracing::warn!("the host cannot start: {why}");
            ready.say(&format!("error: {why}"));
            return 1;
        }
    };
    let config = match Config::load(paths) {
        Ok(loaded) => loaded.config,
        Err(e) => {
            ready.say(&format!("error: {e}"));
            return 1;
        }
    };
    let workspace =
        match Workspace::open_locked(lock, paths, &config, repo.clone(), ApprovalPolicy::DenyAll, None) {
            Ok(w) => w,
            Err(e) => {
                ready.say(&format!("error: {e}"));
                return 1;
            }
        };
    let Workspace {
        edits,
        engine,
        events,
        runs,
        notices,
        lock,
        ..
    } = workspace;
    let parts = server::HostParts {
        paths: paths.clone(),
        config,
        repo,
        edits,
        engine: engine.clone(),
        runs,
        notices: notices.iter().map(ToString::to_string).collect(),
        embedded: false,
    };
    let server = match server::listen(parts, events, None) {
        Ok(s) => s,
        Err(e) => {
            ready.say(&format!("error: {e}"));
            return 1;
        }
    };
    ready.say("ready");
    tracing::info!(pid = std::process::id(), "the huddle host is ready");
    let idle = tokio::select! {
        _ = server.idle(idle_grace()) => {
            tracing::info!("the host is idle; it exits");
            true
        }
        signal = stop_signal() => {
            tracing::info!("the host got {signal}: its runs stop, resumable");
            // The reason says which signal: a `huddle run` following a run ends as that signal
            // ends a run (143 for SIGTERM), not as a Ctrl-C (review 23-3 nit E5).
            engine.interrupt_because(&format!("{signal} to the huddle host"));
            server.runs_answered(tokio::time::Instant::now() + STOP_WAIT).await
        }
    };
    drop(server);
    let flushing = engine.clone();
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || flushing.flush()).await {
        tracing::error!(error = %e, "the host could not save on exit");
    }
    // Saved and nothing runs: the next host may start while this one stops its tool servers
    // (a front end that came meanwhile does not wait for them).
    let lock = if idle {
        drop(lock);
        None
    } else {
        Some(lock)
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), engine.shutdown_tools()).await;
    drop(lock);
    0
}

/// The data dir's lock, waiting a moment for a host that is exiting; `None` when another host
/// holds it and listens.
async fn wait_for_lock(paths: &Paths) -> Result<Option<DataDirLock>, String> {
    let deadline = tokio::time::Instant::now() + LOCK_WAIT;
    loop {
        match DataDirLock::acquire(&paths.lock_file()) {
            Ok(lock) => return Ok(Some(lock)),
            Err(e @ StoreError::AlreadyRunning { .. }) => {
                if std::os::unix::net::UnixStream::connect(paths.run_socket()).is_ok() {
                    return Ok(None);
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(e.to_string());
                }
            }
            Err(e) => return Err(e.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// SIGTERM, SIGINT or SIGHUP, by name.
pub(crate) async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    async fn wait(kind: SignalKind) {
        match signal(kind) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    }
    tokio::select! {
        _ = wait(SignalKind::terminate()) => "SIGTERM",
        _ = wait(SignalKind::interrupt()) => "SIGINT",
        _ = wait(SignalKind::hangup()) => "SIGHUP",
    }
}
