//! The host and its command-line front ends, on the real binary: `huddle run` goes through the
//! host (started on demand, gone when idle) and prints what a local run printed; `--detach`,
//! `huddle ps`, `huddle attach`, `huddle stop`; a host killed with SIGKILL mid-run and the cycle
//! resumed by the next front end; front ends racing to start it; a peer of another user.
//!
//! Part of it holds the data dir in the test process the way the TUI does (a workspace plus the
//! host's server, embedded): every front end reaches it there, and its own front end sees each
//! run live.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use huddle::config::{Config, Paths};
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::host::server::{HostParts, ListenError, Server, listen};
use huddle::model::{Organization, ReflectionCycle};
use huddle::store::{OrgView, OrganizationFile};
use huddle::tools::ApprovalPolicy;
use huddle::workspace::Workspace;
use serde_json::Value;

use super::headless::{HOST_IDLE_VAR, huddle, ndjson, text, wait_for_host_exit};

/// However long a busy machine takes; the limit only ends a hang.
const DEADLINE: Duration = Duration::from_secs(120);

// ---- a data dir held open in the test, as the TUI holds it -----------------------------------

struct Owner {
    home: tempfile::TempDir,
    org: OrgView,
    engine: huddle::engine::Engine,
    events: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>,
    _server: Server,
    _lock: huddle::store::DataDirLock,
}

impl Owner {
    /// A data dir held open (with `model` as the default), its host server listening.
    fn open(model: &str) -> Owner {
        Owner::with_config(&format!("default_model: {model}\n"), |_| {})
    }

    /// The same with this `config.yaml`, after `prepare` wrote other files into the home.
    fn with_config(config: &str, prepare: impl FnOnce(&Path)) -> Owner {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.yaml"), config).unwrap();
        prepare(home.path());
        let paths = Paths::single(home.path().to_path_buf());
        let config = Config::load(&paths).unwrap().config;
        let ws = Workspace::open(&paths, &config, home.path().to_path_buf(), ApprovalPolicy::Ask)
            .expect("workspace");
        let (local, events) = tokio::sync::mpsc::unbounded_channel();
        let (org, engine) = (ws.org.clone(), ws.engine.clone());
        let host = parts(&paths, config, &ws);
        let server = listen(host, ws.events, Some(local)).expect("listen");
        Owner {
            home,
            org,
            engine,
            events,
            _server: server,
            _lock: ws.lock,
        }
    }

    fn path(&self) -> &Path {
        self.home.path()
    }

    /// The binary, run in another task so the owner's engine keeps running on this runtime. A
    /// run that waits forever (on an approval nobody gives) fails the test.
    async fn run(&self, args: &[&str]) -> Output {
        self.run_in(self.path(), args).await
    }

    async fn run_in(&self, dir: &Path, args: &[&str]) -> Output {
        self.run_with(dir, &[], args).await
    }

    /// [`Owner::run_in`] with these variables set in the front end's environment.
    async fn run_with(&self, dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
        let home = self.path().to_path_buf();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(&args)
            .env("HUDDLE_HOME", &home)
            .env(HOST_IDLE_VAR, "0")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(vars.iter().copied())
            .current_dir(dir)
            .kill_on_drop(true)
            .output();
        tokio::time::timeout(DEADLINE, child)
            .await
            .unwrap_or_else(|_| panic!("`huddle {}` never ended", args.join(" ")))
            .expect("run huddle")
    }

    fn seen(&mut self) -> Vec<EngineEvent> {
        std::iter::from_fn(|| self.events.try_recv().ok()).collect()
    }
}

fn parts(paths: &Paths, config: Config, ws: &Workspace) -> HostParts {
    HostParts {
        paths: paths.clone(),
        config,
        repo: paths.data_dir.clone(),
        edits: ws.edits.clone(),
        engine: ws.engine.clone(),
        runs: ws.runs.clone(),
        notices: Vec::new(),
        embedded: true,
    }
}

fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_run_goes_through_the_owner_whose_front_end_sees_it_live() {
    let mut owner = Owner::open("sim/demo");
    let out = owner
        .run(&[
            "run",
            "--preset",
            "Code Review Team",
            "--mode",
            "broadcast",
            "Review fn add",
        ])
        .await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("broadcast run"),
        "progress as a local run prints it: {err}"
    );
    let answer = text(&out.stdout);
    assert!(answer.contains("Review fn add"), "the answer on stdout: {answer}");
    let (group_id, stamped) = owner
        .org
        .read(|o| {
            o.groups
                .iter()
                .find(|g| g.name.starts_with("Code Review Team · run "))
                .map(|g| (g.id.clone(), g.headless_at.is_some()))
        })
        .expect("the group the run made");
    assert!(stamped, "a headless leftover is stamped");
    assert!(
        owner
            .seen()
            .iter()
            .any(|e| *e.group_id == *group_id && matches!(e.kind, EventKind::CycleFinished { .. })),
        "the owner's front end saw the run end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_team_running_is_said_to_run_not_to_be_interrupted() {
    let owner = Owner::open("sim/demo");
    // A reflect team, made by a run of its own, then run in the owner (slowly).
    let made = owner
        .run(&[
            "run",
            "--preset",
            "Code Review Team",
            "--max-iterations",
            "1",
            "warm up",
        ])
        .await;
    assert!(made.status.code().is_some(), "{}", stderr(&made));
    let (group_id, name) = owner
        .org
        .read(|o| {
            o.groups
                .iter()
                .find(|g| g.name.starts_with("Code Review Team · run "))
                .map(|g| (g.id.clone(), g.name.clone()))
        })
        .expect("the team");
    let engine = owner.engine.clone();
    let run = engine
        .start_group(
            &group_id,
            "Review fn add".into(),
            huddle::engine::RunOverrides {
                model: Some("sim/slow-2s".into()),
                ..Default::default()
            },
        )
        .expect("it starts");
    let running = tokio::spawn(run);
    let key = huddle::engine::events::RunKey::team(&group_id);
    while !engine.is_running(&key) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for extra in [
        vec!["again"],
        vec!["--resume"],
        vec!["--discard-interrupted", "again"],
    ] {
        let mut args = vec!["run", "--group", name.as_str()];
        args.extend(extra.iter().copied());
        let out = owner.run(&args).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains(&format!("group `{name}` is running")) && err.contains("huddle stop"),
            "{extra:?}: {err}"
        );
        assert!(!err.contains("interrupted cycle"), "{extra:?}: {err}");
        assert!(!err.contains("``"), "no doubled backticks: {err}");
    }
    assert!(engine.is_running(&key), "the run in progress goes on");
    engine.stop(&key);
    let _ = running.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn ndjson_and_exit_codes_are_those_of_a_run_of_its_own_host() {
    const ARGS: [&str; 7] = [
        "run",
        "--preset",
        "Code Review Team",
        "--max-iterations",
        "1",
        "--events",
        "Review fn add",
    ];
    let owner = Owner::open("sim/demo");
    let out = owner.run(&ARGS).await;
    let events = ndjson(&out);
    assert!(
        events.iter().any(|e| e["event"] == "cycle_finished"),
        "NDJSON on stdout: {}",
        text(&out.stdout)
    );
    let own_home = tempfile::tempdir().unwrap();
    std::fs::write(own_home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();
    let alone = huddle(own_home.path(), &ARGS);
    assert_eq!(out.status.code(), alone.status.code());
    let kinds = |events: &[Value]| -> Vec<String> {
        let mut kinds: Vec<String> = events
            .iter()
            .map(|e| e["event"].as_str().unwrap_or("").to_string())
            .collect();
        kinds.sort();
        kinds
    };
    assert_eq!(kinds(&events), kinds(&ndjson(&alone)), "the same events");
    let missing = owner.run(&["run", "--group", "No Such Team", "hello"]).await;
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(stderr(&missing).contains("no group named `No Such Team`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn ctrl_c_stops_the_run_in_the_owner_and_leaves_its_cycle_resumable() {
    let owner = Owner::open("sim/slow-300ms");
    let home = owner.path().to_path_buf();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--preset", "Code Review Team", "Review fn add"])
        .env("HUDDLE_HOME", &home)
        .current_dir(&home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = |o: &Organization| {
        o.groups
            .iter()
            .any(|g| g.headless_at.is_some() && g.state.orchestrator_reflect.is_some())
    };
    let deadline = Instant::now() + DEADLINE;
    while !owner.org.read(started) {
        assert!(Instant::now() < deadline, "the run never started");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let interrupted = owner.org.read(|o| {
        o.groups
            .iter()
            .find(|g| g.headless_at.is_some())
            .and_then(|g| g.state.orchestrator_reflect.as_ref())
            .map(|r| r.is_interrupted())
    });
    assert_eq!(interrupted, Some(true), "resumable, as after a local Ctrl-C");
}

/// Tool calls that ask are settled by the rule of `huddle run` (denied, or `--approve-tools`),
/// never put to the owner's user.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn tool_approvals_of_a_run_follow_the_front_end_that_started_it() {
    let Some(program) = super::mcp_servers::reference_server("HUDDLE_MCP_TIME", "mcp-server-time") else {
        return;
    };
    let config = format!(
        "default_model: sim/default\nmcp_servers:\n  time:\n    command: [\"{}\"]\n",
        program.display()
    );
    let mut owner = Owner::with_config(&config, write_clock_preset);
    let denied = owner
        .run(&["run", "--preset", "Clock Team", "What time is it?"])
        .await;
    let err = stderr(&denied);
    assert_eq!(denied.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("denied: huddle run does not run tools that need approval")
            .count(),
        2,
        "{err}"
    );
    let approved = owner
        .run(&[
            "run",
            "--preset",
            "Clock Team",
            "--approve-tools",
            "--events",
            "And now?",
        ])
        .await;
    let events = ndjson(&approved);
    let results: Vec<_> = events.iter().filter(|e| e["event"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{events:?}");
    assert!(results.iter().all(|r| r["ok"] == true), "{results:?}");
    assert!(
        !owner
            .seen()
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolApprovalRequested { .. })),
        "nothing was asked in the owner"
    );
    owner.engine.shutdown_tools().await;
}

fn write_clock_preset(home: &Path) {
    std::fs::create_dir_all(home.join("presets")).unwrap();
    std::fs::write(
        home.join("presets/clock.yaml"),
        "name: Clock Team\nmode: broadcast\nworkers:\n  - { name: one, tools: [time] }\n  - { name: two, tools: [time] }\n",
    )
    .unwrap();
}

/// A front end in another repository makes its team there, while the owner works in its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_run_from_a_second_repository_makes_its_team_there() {
    let owner = Owner::open("sim/demo");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = owner
        .run_in(
            elsewhere.path(),
            &[
                "run",
                "--preset",
                "Code Review Team",
                "--mode",
                "broadcast",
                "hello",
            ],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let repo = owner.org.read(|o| {
        o.groups
            .iter()
            .find(|g| g.headless_at.is_some())
            .and_then(|g| g.repo.clone())
    });
    assert_eq!(
        repo.map(|r| std::fs::canonicalize(r).unwrap()),
        Some(std::fs::canonicalize(elsewhere.path()).unwrap()),
        "made in the front end's repository"
    );
}

/// Its configuration is the front end's: a tool server added to config.yaml after the owner
/// opened is there for a run started now.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_run_uses_the_configuration_of_its_front_end() {
    let Some(program) = super::mcp_servers::reference_server("HUDDLE_MCP_TIME", "mcp-server-time") else {
        return;
    };
    let owner = Owner::with_config("default_model: sim/default\n", write_clock_preset);
    std::fs::write(
        owner.path().join("config.yaml"),
        format!(
            "default_model: sim/default\nmcp_servers:\n  time:\n    command: [\"{}\"]\n    approval: auto\n",
            program.display()
        ),
    )
    .unwrap();
    let out = owner
        .run(&["run", "--preset", "Clock Team", "--events", "What time is it?"])
        .await;
    let events = ndjson(&out);
    let results: Vec<_> = events.iter().filter(|e| e["event"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{}", stderr(&out));
    assert!(results.iter().all(|r| r["ok"] == true), "{results:?}");
    owner.engine.shutdown_tools().await;
}

/// A `turn_finished` hook that says who configured it and whether it could write its working
/// directory (so the sandbox it ran in shows), then objects.
fn probing_hook(who: &str) -> String {
    format!(
        "hooks:\n  turn_finished:\n    - command: [sh, -c, \"if touch probe 2>/dev/null; then w=writable; else w=read-only; fi; echo {who} $w >&2; exit 2\"]\n"
    )
}

fn objections(text: &str) -> Vec<String> {
    text.match_indices("objected: ")
        .map(|(at, _)| {
            let rest = &text[at + "objected: ".len()..];
            rest.split(['"', '\n']).next().unwrap_or_default().to_string()
        })
        .collect()
}

/// config.yaml changed after the host (here the owner) started: a `huddle run` from another
/// repository runs with the hooks and sandbox of the config.yaml it read, while the host's own
/// runs keep those it started with; the repository's `.squad/` adds no hook to either.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_run_uses_the_hooks_and_sandbox_of_its_front_ends_configuration() {
    if !super::sandbox_support::bwrap_ready() {
        return;
    }
    let owner = Owner::with_config(
        &format!("default_model: sim/default\n{}", probing_hook("A")),
        |_| {},
    );
    std::fs::write(
        owner.path().join("config.yaml"),
        format!(
            "default_model: sim/default\nsandbox: {{ mode: read-only }}\n{}",
            probing_hook("B")
        ),
    )
    .unwrap();
    // Outside /tmp, so that only the mode decides whether a hook may write there.
    let repo = super::sandbox_support::outside_tmp();
    std::fs::create_dir_all(repo.path().join(".squad")).unwrap();
    std::fs::write(
        repo.path().join(".squad/team.md"),
        "# Squad Team — Hooked\n\n## Members\n\n| Name | Role |\n|---|---|\n| Ada | Dev |\n",
    )
    .unwrap();
    std::fs::write(
        repo.path().join(".squad/huddle.yaml"),
        "hooks:\n  turn_finished: [{ command: [sh, -c, \"echo squad >&2; exit 2\"] }]\n",
    )
    .unwrap();
    let out = owner
        .run_in(
            repo.path(),
            &[
                "run",
                "--preset",
                "Hooked",
                "--max-iterations",
                "1",
                "--events",
                "Ship it.",
            ],
        )
        .await;
    let said = objections(&text(&out.stdout));
    assert!(!said.is_empty(), "no hook objected: {}", stderr(&out));
    assert!(
        said.iter().all(|s| s == "B read-only"),
        "the front end's hooks, in its sandbox: {said:?}"
    );
    assert!(stderr(&out).contains("hooks: ignored"), "{}", stderr(&out));

    // The host's own runs: the configuration it started with, on the same member.
    let ada = owner
        .org
        .read(|o| {
            o.sessions
                .iter()
                .find(|s| s.name.ends_with("ada"))
                .map(|s| s.id.clone())
        })
        .expect("the team's member");
    let mut owner = owner;
    owner.seen();
    owner
        .engine
        .ask(&ada, "Again.".into(), None)
        .await
        .expect("a chat");
    // Its events reach the owner through the host's task: up to the chat's end.
    let mut said = Vec::new();
    loop {
        let event = tokio::time::timeout(DEADLINE, owner.events.recv())
            .await
            .expect("the chat's events")
            .expect("the owner's events");
        match &event.kind {
            EventKind::Notice { text, .. } => said.extend(objections(text)),
            EventKind::RunEnded { .. } => break,
            _ => {}
        }
    }
    assert_eq!(said, ["A writable"], "the host's hooks, in its sandbox");
}

/// The front end's environment, as a sandbox passes it on: a confined CLI agent and a hook of
/// its run get its variables that `allow_env` names, never the others (a key set in its shell
/// only), and not the host's.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_confined_process_of_a_run_gets_what_the_sandbox_passes_of_its_front_ends_environment() {
    if !super::sandbox_support::bwrap_ready() {
        return;
    }
    let owner = Owner::open("sim/default");
    let show = "secret=${FRONT_SECRET:-none} visible=${FRONT_VISIBLE:-none}";
    std::fs::write(
        owner.path().join("config.yaml"),
        format!(
            "default_model: agent/x\nproviders:\n  - {{ name: agent, kind: command, command: [sh, -c, \"echo {show}\"] }}\nsandbox: {{ allow_env: [FRONT_VISIBLE] }}\nhooks:\n  turn_finished:\n    - command: [sh, -c, \"echo hook {show} >&2; exit 2\"]\n"
        ),
    )
    .unwrap();
    let repo = super::sandbox_support::outside_tmp();
    let out = owner
        .run_with(
            repo.path(),
            &[("FRONT_SECRET", "s3cret"), ("FRONT_VISIBLE", "v1")],
            &["run", "--events", "Who are you?"],
        )
        .await;
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("secret=none visible=v1"),
        "the agent: {stdout}\n{}",
        stderr(&out)
    );
    assert_eq!(objections(&stdout), ["hook secret=none visible=v1"], "{stdout}");
    assert!(!stdout.contains("s3cret"), "{stdout}");
}

#[test]
fn a_dead_hosts_socket_is_replaced_and_a_file_in_its_place_is_left_alone() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();
    let socket: PathBuf = home.path().join("huddle.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let out = huddle(home.path(), &["run", "--model", "sim/demo", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A regular file where the socket goes is not deleted to listen.
    std::fs::write(&socket, "mine").unwrap();
    let out = huddle(home.path(), &["run", "--model", "sim/demo", "hello"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("is not a socket"), "{}", stderr(&out));
    let paths = Paths::single(home.path().to_path_buf());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let config = Config::load(&paths).unwrap().config;
        let ws = Workspace::open(&paths, &config, home.path().to_path_buf(), ApprovalPolicy::Ask).unwrap();
        let host = parts(&paths, config, &ws);
        let refused = listen(host, ws.events, None);
        assert!(
            matches!(refused, Err(ListenError::NotASocket(_))),
            "{:?}",
            refused.err()
        );
    });
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "mine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_socket_is_owner_only_and_goes_with_the_server() {
    let owner = Owner::open("sim/demo");
    let socket = owner.path().join("huddle.sock");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let Owner { home, _server, .. } = owner;
    drop(_server);
    assert!(!home.path().join("huddle.sock").exists());
}

/// `--approve` asks about relay drafts on the front end's terminal, which a front end without
/// one does not have: refused before anything is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn approve_without_a_terminal_is_refused_before_anything_is_made() {
    let owner = Owner::open("sim/demo");
    let out = owner
        .run(&["run", "--preset", "Negotiator", "--approve", "Buy a bike"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not one"), "{}", stderr(&out));
    assert!(
        owner
            .org
            .read(|o| o.groups.iter().all(|g| g.headless_at.is_none())),
        "nothing was made"
    );
}

// ---- the host on its own ---------------------------------------------------------------------

fn home_with(model: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        format!("default_model: {model}\n"),
    )
    .unwrap();
    home
}

/// `huddle` with a host that stays `idle_ms` once idle (not waited for).
fn huddle_idle(home: &Path, idle_ms: u64, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env(HOST_IDLE_VAR, idle_ms.to_string())
        .current_dir(home)
        .output()
        .expect("run huddle")
}

fn host_pid(home: &Path) -> Option<i32> {
    huddle::store::DataDirLock::holder(&home.join("huddle.lock")).and_then(|p| p.parse().ok())
}

/// Review 23-3 nit E5: a `huddle run` whose host got SIGTERM (a logout, `systemctl stop`) exited
/// 130, as if its own Ctrl-C had stopped it. It ends as SIGTERM ends a run: 143, saying why.
#[test]
fn a_huddle_run_whose_host_gets_sigterm_ends_as_sigterm_ends_a_run() {
    let home = home_with("sim/slow-300ms");
    let child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--preset", "Code Review Team", "Review fn add"])
        .env("HUDDLE_HOME", home.path())
        .env(HOST_IDLE_VAR, "0")
        .current_dir(home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("huddle run");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let ps = text(&huddle_idle(home.path(), 0, &["ps"]).stdout);
        if ps.starts_with("RUN") {
            break;
        }
        assert!(Instant::now() < deadline, "the run never started: {ps}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = host_pid(home.path()).expect("a host");
    // SAFETY: plain kill(2) on the host this test's `huddle run` started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let out = child.wait_with_output().expect("waited");
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("huddle: the huddle host was stopped (SIGTERM)")
            && stderr(&out).contains("the run is kept to be resumed"),
        "{}",
        stderr(&out)
    );
    wait_for_host_exit(home.path());
}

fn cycle(home: &Path) -> Option<ReflectionCycle> {
    OrganizationFile::new(home.join("organization.json"))
        .inspect()
        .ok()
        .flatten()?
        .groups
        .iter()
        .find_map(|g| g.state.orchestrator_reflect.clone())
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn the_host_starts_on_demand_and_exits_once_idle() {
    let home = home_with("sim/demo");
    let out = huddle_idle(home.path(), 300, &["run", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        host_pid(home.path()).is_some(),
        "the host is there a moment after"
    );
    assert!(home.path().join("huddle.sock").exists());
    wait_until("the host's exit", || host_pid(home.path()).is_none());
    assert!(
        !home.path().join("huddle.sock").exists(),
        "its socket goes with it"
    );
    let log = std::fs::read_dir(home.path().join("logs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(
        log.contains("the huddle host is ready"),
        "its log is the data dir's: {log}"
    );
    // `ps` starts no host: nothing runs.
    let ps = huddle(home.path(), &["ps"]);
    assert_eq!(text(&ps.stdout), "nothing runs\n");
    assert!(host_pid(home.path()).is_none());
}

#[test]
fn detach_ps_attach_and_stop() {
    let home = home_with("sim/slow-1s");
    let out = huddle_idle(
        home.path(),
        0,
        &[
            "run",
            "--preset",
            "Code Review Team",
            "--max-iterations",
            "4",
            "--detach",
            "Review the parser",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_id = text(&out.stdout).trim().to_string();
    assert!(run_id.len() > 20, "the run's id alone on stdout: {run_id:?}");
    assert!(stderr(&out).contains("huddle attach"), "{}", stderr(&out));

    // Its mode shows from its start (review 23-2 nit E5).
    let table = text(&huddle_idle(home.path(), 0, &["ps"]).stdout);
    assert!(table.starts_with("RUN"), "{table}");
    assert!(
        table.contains(&run_id)
            && table.contains("Code Review Team · run")
            && table.contains("orchestrator_reflect"),
        "{table}"
    );
    assert!(table.contains("detached from huddle run (pid"), "{table}");
    // The `huddle run` that detached has exited: said so (review 23-3 nit E2); the host's pid
    // is named (nit E6), the one in the data dir's lock.
    assert!(table.contains(", gone)"), "{table}");
    let lock = std::fs::read_to_string(home.path().join("huddle.lock")).unwrap_or_default();
    assert!(
        !lock.trim().is_empty() && table.ends_with(&format!("huddle host: pid {}\n", lock.trim())),
        "{table} (lock: {lock:?})"
    );
    let json: Value = serde_json::from_slice(&huddle_idle(home.path(), 0, &["ps", "--json"]).stdout).unwrap();
    assert_eq!(json[0]["run_id"], run_id.as_str());

    // Attach, see progress (what was done so far first), Ctrl-C: detached, the run goes on.
    let mut attach = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["attach", &run_id[..12]])
        .env("HUDDLE_HOME", home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = BufReader::new(attach.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in progress.by_ref() {
        let line = line.unwrap();
        let done = line.contains("── iteration 1");
        seen.push(line);
        if done {
            break;
        }
    }
    assert!(seen[0].contains(&format!("following run {run_id}")), "{seen:?}");
    assert!(
        seen.iter().any(|l| l.contains("orchestrator_reflect run")),
        "from its start: {seen:?}"
    );
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe {
        libc::kill(attach.id() as i32, libc::SIGINT);
    }
    let status = attach.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let rest: Vec<String> = progress.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("detached; run")), "{rest:?}");
    assert!(
        text(&huddle_idle(home.path(), 0, &["ps"]).stdout).contains(&run_id),
        "it goes on"
    );

    // Stop it by its group's name: cancelled.
    let group = super::headless::team_made_by_run(home.path(), "Code Review Team");
    let stop = huddle_idle(home.path(), 0, &["stop", &group]);
    assert_eq!(stop.status.code(), Some(0), "{}", stderr(&stop));
    assert!(
        stderr(&stop).contains(&format!("run {run_id} stopped")),
        "{}",
        stderr(&stop)
    );
    // Answered once it ended: its file says so at once.
    let trace = huddle(home.path(), &["trace", "--run", &run_id]);
    let first = text(&trace.stdout).lines().next().unwrap_or_default().to_string();
    assert!(first.contains(" · cancelled"), "{first}");
    wait_for_host_exit(home.path());
    let saved = cycle(home.path()).expect("a cycle");
    assert_eq!(
        saved.outcome,
        Some(huddle::model::CycleOutcome::Cancelled),
        "{saved:?}"
    );

    // No host now: the same exit code as a host's answer (review 23-3 nit E7).
    let none = huddle(home.path(), &["stop", &run_id]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains(&format!(
            "run `{run_id}` has ended (`huddle trace --run {run_id}`"
        )),
        "{}",
        stderr(&none)
    );
    let none = huddle(home.path(), &["attach", "whatever"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("nothing runs"), "{}", stderr(&none));
}

#[test]
fn attach_follows_a_run_to_its_end_like_huddle_run() {
    let home = home_with("sim/slow-100ms");
    let out = huddle_idle(
        home.path(),
        0,
        &[
            "run",
            "--preset",
            "Code Review Team",
            "--mode",
            "broadcast",
            "--detach",
            "Review fn add",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_id = text(&out.stdout).trim().to_string();
    let attached = huddle_idle(home.path(), 0, &["attach", &run_id, "--events"]);
    // It may have ended already: then there is nothing to attach to.
    if attached.status.code() != Some(0) && stderr(&attached).contains("has ended") {
        return;
    }
    assert_eq!(attached.status.code(), Some(0), "{}", stderr(&attached));
    let events = ndjson(&attached);
    assert_eq!(
        events.first().map(|e| e["event"].clone()),
        Some("run_started".into())
    );
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some("run_ended".into())
    );
    assert!(events.iter().all(|e| e["run_id"] == run_id.as_str()));
    wait_for_host_exit(home.path());
}

/// The run file of a chat run (a one-shot `huddle run "question"`): its session's folder.
fn chat_run_file(home: &Path, run_id: &str) -> Option<PathBuf> {
    std::fs::read_dir(home.join("runs").join("sessions"))
        .ok()?
        .flatten()
        .map(|session| session.path().join(format!("{run_id}.jsonl")))
        .find(|file| file.exists())
}

/// `huddle attach` of a chat run replays what it did so far from its session's run file (not
/// its group's, where a chat has none), then follows it live: the same events as the file.
#[test]
fn attach_to_a_chat_run_replays_it_from_its_sessions_run_file() {
    let home = home_with("sim/slow-3s");
    let out = huddle_idle(home.path(), 0, &["run", "--detach", "A long plain question"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_id = text(&out.stdout).trim().to_string();
    // Attach once `run_started` is on disk, so that it has to come from the replay.
    wait_until("the run file's first line", || {
        chat_run_file(home.path(), &run_id)
            .and_then(|file| std::fs::read_to_string(file).ok())
            .is_some_and(|text| text.contains("run_started"))
    });
    let attached = huddle_idle(home.path(), 0, &["attach", &run_id, "--events"]);
    assert_eq!(attached.status.code(), Some(0), "{}", stderr(&attached));
    let seen: Vec<Value> = ndjson(&attached)
        .into_iter()
        .map(|e| e["event"].clone())
        .collect();
    let file = chat_run_file(home.path(), &run_id).expect("the run file");
    // The run file's writer puts the end there a moment after attach heard of it live.
    wait_until("the run file's end", || {
        std::fs::read_to_string(&file).is_ok_and(|text| text.contains("\"event\":\"run_ended\""))
    });
    let logged: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect();
    assert_eq!(seen.first(), Some(&Value::from("run_started")), "{seen:?}");
    assert_eq!(seen, logged);
    wait_for_host_exit(home.path());
}

/// The host killed with SIGKILL mid-run leaves what a crash left: every reported iteration on
/// disk, the cycle interrupted; the next front end starts a new host and resumes it.
#[test]
fn a_host_killed_mid_run_leaves_a_resumable_cycle_for_the_next_front_end() {
    let home = home_with("sim/slow-200ms");
    let mut child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args([
            "run",
            "--preset",
            "Code Review Team",
            "--max-iterations",
            "4",
            "--events",
            "Review the parser",
        ])
        .env("HUDDLE_HOME", home.path())
        .env(HOST_IDLE_VAR, "0")
        .current_dir(home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reported = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["event"] == "evaluation" {
            reported.push(event["iteration"].as_u64().unwrap());
            let pid = host_pid(home.path()).expect("the host");
            // SAFETY: kill(2) on the host our child started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("host went away"), "{}", stderr(&out));
    wait_until("the lock's release", || host_pid(home.path()).is_none());
    let saved = cycle(home.path()).expect("a cycle");
    assert!(saved.is_interrupted(), "{saved:?}");
    let on_disk: Vec<u64> = saved.evaluations.iter().map(|e| u64::from(e.iteration)).collect();
    assert!(
        reported.iter().all(|i| on_disk.contains(i)),
        "{reported:?} {on_disk:?}"
    );
    assert!(
        home.path().join("huddle.sock").exists(),
        "the dead host's socket is left"
    );

    let team = super::headless::team_made_by_run(home.path(), "Code Review Team");
    let out = huddle(home.path(), &["run", "--group", &team, "--resume", "--events"]);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    let first = ndjson(&out)
        .into_iter()
        .find(|e| e["event"] == "iteration_started")
        .expect("an iteration");
    assert_eq!(
        first["iteration"].as_u64(),
        Some(u64::from(saved.completed_iterations) + 1)
    );
}

/// Front ends racing to start the host end with one host, and every run done.
#[test]
fn front_ends_racing_to_start_the_host_end_with_one() {
    let home = home_with("sim/slow-100ms");
    let children: Vec<_> = (0..4)
        .map(|k| {
            Command::new(env!("CARGO_BIN_EXE_huddle"))
                .args(["run", &format!("question {k}")])
                .env("HUDDLE_HOME", home.path())
                .env(HOST_IDLE_VAR, "0")
                .current_dir(home.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    wait_for_host_exit(home.path());
    let log = std::fs::read_dir(home.path().join("logs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    let hosts = log.matches("the huddle host is ready").count();
    assert!(hosts >= 1, "{log}");
    let org = OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    assert_eq!(
        org.sessions.iter().filter(|s| s.headless_at.is_some()).count(),
        4,
        "each run made its session in one organization"
    );
}

/// A peer of another user is refused by the host (the data dir is private anyway: this opens
/// it up to reach the check itself), and a socket of another user's process is never used.
#[test]
fn a_peer_of_another_user_is_refused() {
    assert!(huddle::host::server::same_user(unsafe { libc::getuid() }));
    assert!(!huddle::host::server::same_user(unsafe { libc::getuid() } + 1));
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 || Command::new("python3").arg("-V").output().is_err() {
        eprintln!("\n*** SKIPPED the cross-user connection: needs root and python3 ***\n");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let outer = tempfile::tempdir().unwrap();
    std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = outer.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("config.yaml"), "default_model: sim/slow-3000ms\n").unwrap();
    let detached = huddle_idle(&home, 0, &["run", "--detach", "take your time"]);
    assert_eq!(detached.status.code(), Some(0), "{}", stderr(&detached));
    let socket = home.join("huddle.sock");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let probe = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\ns.settimeout(20)\ntry:\n  s.sendall(b'{{\"type\":\"hello\",\"protocol\":2,\"version\":\"x\",\"front\":\"ps\",\"pid\":1,\"repo\":\"/\"}}\\n')\n  print(repr(s.recv(4096)))\nexcept (BrokenPipeError, ConnectionResetError):\n  print(repr(b''))\n",
        socket.display().to_string()
    );
    let out = Command::new("python3")
        .args(["-c", &probe])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(text(&out.stdout).trim(), "b''", "closed without a word");
    // Our own front end is served as before.
    let ps = huddle_idle(&home, 0, &["ps"]);
    assert!(text(&ps.stdout).contains("RUN"), "{}", text(&ps.stdout));
    let _ = huddle_idle(&home, 0, &["stop", text(&detached.stdout).trim()]);
    wait_for_host_exit(&home);

    // A socket of another user's process in the data dir: never used, never removed.
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut server = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import socket,time\ns=socket.socket(socket.AF_UNIX)\ns.bind({:?})\ns.listen(5)\nprint('up',flush=True)\nc,_=s.accept()\ntime.sleep(5)\n",
                socket.display().to_string()
            ),
        ])
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut up = String::new();
    let _ = BufReader::new(server.stdout.take().unwrap()).read_line(&mut up);
    assert_eq!(up.trim(), "up");
    let ps = huddle_idle(&home, 0, &["ps"]);
    assert_eq!(ps.status.code(), Some(1), "{}", stderr(&ps));
    assert!(stderr(&ps).contains("another user"), "{}", stderr(&ps));
    assert!(socket.exists(), "left alone");
    let _ = server.kill();
    let _ = server.wait();
}

/// A request the host cannot read (a newer front end's, say) is answered with a failure under
/// its id, not met with silence; the connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_request_the_host_cannot_read_gets_an_answer() {
    use huddle::host::protocol::Hello;
    use huddle::host::protocol::{ClientMessage, encode};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let owner = Owner::open("sim/demo");
    let stream = tokio::net::UnixStream::connect(owner.path().join("huddle.sock"))
        .await
        .unwrap();
    let (read, mut write) = stream.into_split();
    let mut lines = tokio::io::BufReader::new(read).lines();
    let hello = encode(&ClientMessage::Hello(Box::new(Hello::new("ps", owner.path()))));
    write.write_all(hello.as_bytes()).await.unwrap();
    let welcome = lines.next_line().await.unwrap().unwrap();
    assert!(welcome.contains("\"welcome\""), "{welcome}");
    write
        .write_all(b"{\"type\":\"request\",\"id\":7,\"request\":{\"kind\":\"from_the_future\"}}\n")
        .await
        .unwrap();
    write
        .write_all(b"{\"type\":\"request\",\"id\":8,\"request\":{\"kind\":\"ps\"}}\n")
        .await
        .unwrap();
    let failed: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(failed["type"], "failed", "{failed}");
    assert_eq!(failed["id"], 7, "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("did not understand this request"),
        "{failed}"
    );
    let answered: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answered["id"], 8, "the connection goes on: {answered}");
}

/// A host that takes the connection and never greets (stopped, wedged) is named with its pid,
/// not waited for for ever. (Tokio's paused clock: the deadline passes at once.)
#[tokio::test(start_paused = true)]
async fn a_host_that_does_not_answer_is_named_not_waited_for() {
    use huddle::host::client::Client;
    use huddle::host::protocol::Hello;
    let home = tempfile::tempdir().unwrap();
    let paths = Paths::single(home.path().to_path_buf());
    let _lock = huddle::store::DataDirLock::acquire(&paths.lock_file()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(paths.run_socket()).unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let silent = std::thread::spawn(move || {
        let taken = listener.accept();
        let _ = done_rx.recv();
        drop(taken);
    });
    let result = Client::connect(&paths, &Hello::new("ps", home.path()), false).await;
    let _ = done_tx.send(());
    let _ = silent.join();
    let Err(e) = result else {
        panic!("a silent host was taken for a host")
    };
    let e = e.to_string();
    assert!(e.contains("does not answer"), "{e}");
    assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
}

/// A team whose `worktree_created` hook runs long (a dependency install) is answered as soon
/// as its worktrees exist: the TUI's edit does not wait for the hook past the host's 10 s
/// deadline and say nothing was made (review 23-3 A). The hook here waits until the test lets
/// it go, so without the early answer the edit could only time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_team_with_a_slow_worktree_hook_is_answered_before_the_hook_ends() {
    use huddle::host::client::Client;
    use huddle::host::protocol::{EngineCall, Hello, Reply, Request};
    use huddle::model::WorktreeStrategy;
    use huddle::workspace::EditCall;
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
            .arg(repo.path())
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.path().join("README.md"), "hello\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "first"]);
    let release = repo.path().join("release-the-hook");
    let _release = Release(release.clone());
    let config = format!(
        "default_model: sim/demo\nhooks:\n  worktree_created:\n    - command: [sh, -c, \"while [ ! -e '{}' ]; do sleep 0.05; done\"]\n      timeout_secs: 600\n",
        release.display()
    );
    let owner = Owner::with_config(&config, |home| {
        std::fs::create_dir_all(home.join("presets")).unwrap();
        std::fs::write(
            home.join("presets/hooked.yaml"),
            "name: Hooked Team\nmode: broadcast\nworktrees: fully_isolated\nworkers:\n  - { name: alpha }\n  - { name: beta }\n",
        )
        .unwrap();
    });
    let paths = Paths::single(owner.path().to_path_buf());
    let front_config = Config::load(&paths).unwrap().config;
    let preset = huddle::presets::Catalog::load(&paths, &front_config, Some(repo.path()))
        .find("Hooked Team")
        .cloned()
        .expect("the preset");
    let hello = Hello::new("tui-edits", repo.path()).with_work(front_config, true);
    let client = Client::connect(&paths, &hello, false).await.expect("the host");
    let mut edits = client.into_blocking().expect("blocking");
    let answered = tokio::task::spawn_blocking(move || {
        edits.call(Request::Edit {
            call: EditCall::CreateTeamWith {
                preset: Box::new(preset),
                strategy: WorktreeStrategy::FullyIsolated,
            },
        })
    })
    .await
    .unwrap();
    let Ok(Reply::Edited { result, org, .. }) = answered else {
        panic!("the edit was not answered while its hook ran: {answered:?}");
    };
    let group_id = result["Ok"].as_str().expect("the team's id").to_string();
    let group = org
        .groups
        .iter()
        .find(|g| g.id == group_id)
        .expect("the team is there");
    assert_eq!(group.name, "Hooked Team");
    assert_eq!(
        org.sessions_in(&group_id).len(),
        2,
        "both members with their worktrees"
    );
    assert!(
        org.sessions_in(&group_id).iter().all(|s| s.worktree.is_some()),
        "worktrees made before the answer"
    );
    // While the hook prepares the worktrees, the team does not run: a TUI's run of it is held
    // (not refused) and starts, answered, once the hook ends.
    let tui_config = Config::load(&paths).unwrap().config;
    let mut tui = Client::connect(
        &paths,
        &Hello::new("tui", repo.path()).with_work(tui_config, true),
        false,
    )
    .await
    .expect("the host");
    let call = EngineCall::RunGroup {
        group_id: group_id.clone(),
        prompt: "go".into(),
        attachments: Vec::new(),
    };
    let held = tokio::spawn(async move { tui.call(Request::Engine { call }).await });
    let key = huddle::engine::events::RunKey::team(group_id.clone());
    for _ in 0..20 {
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert!(
            !owner.engine.is_running(&key),
            "the team ran while its hook prepared it"
        );
        assert!(
            !held.is_finished(),
            "the run was answered while the hook prepared the team"
        );
    }
    std::fs::write(&release, "").unwrap();
    let answered = tokio::time::timeout(DEADLINE, held)
        .await
        .expect("the held run is answered once the hook ends")
        .unwrap();
    assert!(matches!(answered, Ok(Reply::Done)), "{answered:?}");
    let mut owner = owner;
    loop {
        let event = tokio::time::timeout(DEADLINE, owner.events.recv())
            .await
            .expect("the held run's events")
            .expect("the owner's events");
        if *event.group_id == *group_id && matches!(event.kind, EventKind::RunEnded { .. }) {
            break;
        }
    }
}

/// Lets a waiting hook go when the test ends, however it ends.
struct Release(PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

/// A run that does not end at once when stopped (its `run_finished` hook takes a while) is
/// answered after a few seconds as still stopping, and ends all the same.
#[test]
fn a_run_that_does_not_end_within_the_wait_is_said_to_be_stopping() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        "default_model: sim/slow-300ms\nsandbox:\n  mode: off\nhooks:\n  run_finished:\n    - command: [\"sleep\", \"8\"]\n",
    )
    .unwrap();
    let detached = huddle_idle(
        home.path(),
        0,
        &["run", "--preset", "Research Panel", "--detach", "take your time"],
    );
    assert_eq!(detached.status.code(), Some(0), "{}", stderr(&detached));
    let run_id = text(&detached.stdout).trim().to_string();
    let stop = huddle_idle(home.path(), 0, &["stop", &run_id]);
    assert_eq!(stop.status.code(), Some(0), "{}", stderr(&stop));
    assert!(
        stderr(&stop).contains(&format!(
            "stopping run {run_id}: it ends once its current step lets go"
        )),
        "{}",
        stderr(&stop)
    );
    wait_for_host_exit(home.path());
    let trace = huddle(home.path(), &["trace", "--run", &run_id]);
    let first = text(&trace.stdout).lines().next().unwrap_or_default().to_string();
    assert!(first.contains(" · cancelled"), "{first} {}", stderr(&trace));
}
