//! The budget of the hop (issue 23 item 7): a front end adds no noticeable latency.
//!
//! - **hop**: events reach a front end within 5 ms of the host emitting them. A host serves a
//!   data dir in this process, on its real socket, on a runtime of its own (2 worker threads,
//!   as `huddle host` has on this machine); a front end on another thread with a runtime of its
//!   own subscribes to every event, as a TUI does, and `huddle run --detach` runs of the
//!   Research Panel (3 members) go on the sim. The engine's events pass one stage in front of
//!   the host's dispatch that notes when each was handed over (the end of the engine's poll
//!   that made it); the front end notes when it has read and decoded each. The latency of an
//!   event is the difference (one clock, one process). Twice: on `sim/slow-200ms` (every answer
//!   streamed over 200 ms: events one by one, as with a model) and on the instant sim (every
//!   event of a turn at once: the queue of a burst counts).
//! - **open**: a TUI opens within 200 ms with an existing host. A real `huddle host` process
//!   serves a data dir with a team; the release `huddle` starts in a pseudo-terminal, as a user
//!   starts it, and the time is taken from its start until the screen shows the organization
//!   (connect, the organization and the runs going received, the first frame drawn).
//! - **memory**: the host's resident set (`VmRSS`) with no runs: once it is ready, with a TUI
//!   attached, and after runs ended; and its peak (`VmHWM`).
//!
//! `cargo bench --bench host` (the release build; `HUDDLE_BENCH_HOST=hop` or `=open` for one
//! part). Not a test: nothing here fails on a figure.

#[path = "support/host_process.rs"]
mod host_process;
mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use host_process::{HostProcess, mib};
use huddle::config::{Config, Paths};
use huddle::engine::events::EventKind;
use huddle::headless::RunRequest;
use huddle::host::client::Client;
use huddle::host::protocol::{Hello, HostMessage, Request};
use huddle::host::server::{self, HostParts};
use huddle::store::DataDirLock;
use huddle::tools::ApprovalPolicy;
use huddle::workspace::Workspace;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use tokio::sync::mpsc;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A data dir and a repository beside it, in a benchmark folder.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = support::bench_dir();
    let (home, repo) = (dir.path().join("home"), dir.path().join("repo"));
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&repo).expect("repo");
    (dir, home, repo)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn distribution(mut samples: Vec<Duration>) -> String {
    samples.sort();
    format!(
        "p50 {:.0?}, p90 {:.0?}, p99 {:.0?}, max {:.0?} ({} samples)",
        percentile(&samples, 0.5),
        percentile(&samples, 0.9),
        percentile(&samples, 0.99),
        samples.last().copied().unwrap_or_default(),
        samples.len()
    )
}

fn run_request(repo: &Path, model: &str, k: usize) -> RunRequest {
    RunRequest {
        preset: Some("Research Panel".into()),
        model: Some(model.into()),
        prompt: format!("Compare option {k} with the others"),
        repo: repo.to_path_buf(),
        ..RunRequest::default()
    }
}

/// `runs` runs on `model` through an in-process host; every event's latency to a subscribed
/// front end.
fn hop(model: &str, runs: usize) -> Vec<Duration> {
    let (_dir, home, repo) = dirs();
    let paths = Paths::single(home);
    // The host's runtime, as `huddle host` builds it.
    let host_rt = huddle::async_runtime::build().expect("host runtime");
    let handed: Arc<Mutex<Vec<(Instant, &'static str)>>> = Arc::default();
    let (server, _lock) = host_rt.block_on(async {
        let lock = DataDirLock::acquire(&paths.lock_file()).expect("lock");
        let config = Config::load(&paths).expect("config").config;
        let workspace =
            Workspace::open_locked(lock, &paths, &config, repo.clone(), ApprovalPolicy::DenyAll, None)
                .expect("workspace");
        let Workspace {
            edits,
            engine,
            mut events,
            runs,
            lock,
            ..
        } = workspace;
        let (tx, rx) = mpsc::unbounded_channel();
        let noted = Arc::clone(&handed);
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                noted
                    .lock()
                    .expect("notes")
                    .push((Instant::now(), event.kind.name()));
                let _ = tx.send(event);
            }
        });
        let parts = HostParts {
            paths: paths.clone(),
            config,
            repo: repo.clone(),
            edits,
            engine,
            runs,
            notices: Vec::new(),
            embedded: false,
        };
        (server::listen(parts, rx, None).expect("listen"), lock)
    });

    // The front end: subscribes, then notes when each event arrives until `runs` runs ended.
    let (subscribed_tx, subscribed) = std::sync::mpsc::channel();
    let (ended_tx, ended) = std::sync::mpsc::channel();
    let front = {
        let (paths, repo) = (paths.clone(), repo.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("front runtime");
            rt.block_on(async move {
                let client = Client::connect(&paths, &Hello::new("tui", &repo), false)
                    .await
                    .expect("the front end connects");
                let (mut reader, mut writer) = client.split();
                let id = writer
                    .send(Request::Subscribe {
                        events: true,
                        org: false,
                        replay: false,
                    })
                    .await
                    .expect("subscribe");
                let mut arrived: Vec<(Instant, &'static str)> = Vec::new();
                let mut over = 0;
                while let Ok(Some(message)) = reader.next().await {
                    match message {
                        HostMessage::Reply { id: got, .. } if got == id => {
                            let _ = subscribed_tx.send(());
                        }
                        HostMessage::Event { event, .. } => {
                            arrived.push((Instant::now(), event.kind.name()));
                            if matches!(event.kind, EventKind::RunEnded { .. }) {
                                over += 1;
                                let _ = ended_tx.send(());
                                if over == runs {
                                    break;
                                }
                            }
                        }
                        _ => {}
                    }
                }
                arrived
            })
        })
    };
    subscribed.recv().expect("subscribed");

    // `huddle run --detach`, one run after the other.
    let config = Config::load(&paths).expect("config").config;
    let starter = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("starter runtime");
    for k in 0..runs {
        starter.block_on(async {
            let hello = Hello::new("run", &repo).with_work(config.clone(), false);
            let client = Client::connect(&paths, &hello, false).await.expect("connect");
            let (mut reader, mut writer) = client.split();
            let id = writer
                .send(Request::Run {
                    request: run_request(&repo, model, k),
                    detach: true,
                    keep: false,
                })
                .await
                .expect("run");
            loop {
                match reader.next().await.expect("read") {
                    Some(HostMessage::Started { id: got, .. }) if got == id => break,
                    Some(HostMessage::Failed { message, .. }) => panic!("the run failed: {message}"),
                    Some(_) => {}
                    None => panic!("the host went away"),
                }
            }
        });
        ended.recv().expect("the run ended");
    }
    let arrived = front.join().expect("the front end");
    drop(server);
    host_rt.shutdown_timeout(Duration::from_secs(5));
    let handed = handed.lock().expect("notes").clone();
    if handed.len() != arrived.len() || handed.iter().zip(&arrived).any(|(h, a)| h.1 != a.1) {
        println!(
            "    (the host handed over {} events and the front end got {}, not in the same order: latencies unreliable)",
            handed.len(),
            arrived.len()
        );
    }
    handed
        .iter()
        .zip(&arrived)
        .map(|((sent, _), (got, _))| got.saturating_duration_since(*sent))
        .collect()
}

/// `huddle run` (a front end of the host): its exit code.
fn huddle_run(home: &Path, repo: &Path, model: &str) -> Option<i32> {
    host_process::command(home, repo)
        .args([
            "run",
            "--preset",
            "Research Panel",
            "--model",
            model,
            "Compare them",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()
        .and_then(|s| s.code())
}

/// Starts the TUI in a pseudo-terminal; the time until its first output and until its screen
/// shows `needle`.
fn open_tui(home: &Path, repo: &Path, needle: &str) -> (Duration, Duration) {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a pty");
    let mut cmd = CommandBuilder::new(host_process::binary());
    cmd.cwd(repo);
    cmd.env("HUDDLE_HOME", home);
    cmd.env("TERM", "xterm-256color");
    let mut reader = pty.master.try_clone_reader().expect("pty reader");
    let started = Instant::now();
    let mut child = pty.slave.spawn_command(cmd).expect("the TUI starts");
    drop(pty.slave);
    let screen = Arc::new(Mutex::new((vt100::Parser::new(30, 120, 0), None::<Duration>)));
    let sink = Arc::clone(&screen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut screen = sink.lock().expect("screen");
            screen.1.get_or_insert_with(|| started.elapsed());
            screen.0.process(&buf[..n]);
        }
    });
    // Looked at every 200 µs: the time is known to that much.
    let times = loop {
        std::thread::sleep(Duration::from_micros(200));
        let screen = screen.lock().expect("screen");
        let contents = screen.0.screen().contents();
        if contents.contains(needle) {
            break (screen.1.unwrap_or_default(), started.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the TUI did not show `{needle}`; its screen:\n{contents}"
        );
    };
    let _ = child.kill();
    let _ = child.wait();
    drop(pty.master);
    times
}

/// A real host: the TUI opening on it, and its memory.
fn open_and_memory() {
    let (_dir, home, repo) = dirs();
    let host = HostProcess::start(&home, &repo, 600_000);
    let rss = |what: &str, host: &HostProcess| {
        println!(
            "  host memory {what}: VmRSS {} (anonymous {}, file-backed {}), peak so far {}",
            mib(host.status_kib("VmRSS:")),
            mib(host.status_kib("RssAnon:")),
            mib(host.status_kib("RssFile:")),
            mib(host.status_kib("VmHWM:")),
        );
    };
    std::thread::sleep(Duration::from_millis(500));
    rss("once ready, nobody attached", &host);

    // A team in the organization for the TUI to show (the host makes it and runs it).
    let code = huddle_run(&home, &repo, "sim/x");
    assert_eq!(code, Some(0), "the first run");
    std::thread::sleep(Duration::from_millis(500));
    rss("after a run ended (Research Panel on the sim)", &host);

    let mut first_output = Vec::new();
    let mut shown = Vec::new();
    for _ in 0..10 {
        let (first, org) = open_tui(&home, &repo, "analyst sim/");
        first_output.push(first);
        shown.push(org);
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "  TUI opening with a host running: organization on screen {}",
        distribution(shown)
    );
    println!(
        "    (first output on the terminal {})",
        distribution(first_output)
    );
    std::thread::sleep(Duration::from_millis(500));
    rss("after 10 TUIs opened and went", &host);

    for _ in 0..5 {
        let code = huddle_run(&home, &repo, "sim/slow-200ms");
        assert_eq!(code, Some(0), "a run");
    }
    std::thread::sleep(Duration::from_millis(1000));
    rss("after 5 more runs ended", &host);
    let code = host.stop();
    println!("  (the host stopped with exit code {code:?})");
}

fn main() {
    // `cargo test --benches` runs benches without `--bench`: only measure when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    // As the `huddle` binary: the clock is never paused.
    huddle::store::real_clock_only();
    // `HUDDLE_BENCH_HOST=hop` or `=open`: only that part.
    let only = std::env::var("HUDDLE_BENCH_HOST").unwrap_or_default();
    if only != "open" {
        println!("host: the hop from the engine's event to a front end");
        let paced = hop("sim/slow-200ms", 25);
        println!("  sim/slow-200ms, 25 runs: {}", distribution(paced));
        let burst = hop("sim/x", 25);
        println!("  instant sim, 25 runs: {}", distribution(burst));
    }
    if only != "hop" {
        println!("host: a TUI opening on a running host, and the host's memory");
        open_and_memory();
    }
}
