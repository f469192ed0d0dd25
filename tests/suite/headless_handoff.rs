//! `huddle run` next to an open huddle: the run is handed over the data dir's socket to the
//! open instance (here a workspace opened in the test, as the TUI opens it), runs on its
//! engine where its front end sees every event, and the real `huddle run` binary prints the
//! same output and ends with the same exit code as a local run. Plus `huddle runs prune`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use huddle::config::{Config, Paths};
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::handoff::server::{ListenError, RunServer, listen};
use huddle::tools::ApprovalPolicy;
use huddle::workspace::Workspace;

use super::headless::{huddle, ndjson, text};

struct Host {
    home: tempfile::TempDir,
    workspace: Workspace,
    _server: RunServer,
}

impl Host {
    /// A data dir held open like the TUI holds it (with `model` as the default), listening.
    fn open(model: &str) -> Host {
        Host::with_config(&format!("default_model: {model}\n"), |_| {})
    }

    /// The same with this `config.yaml`, after `prepare` wrote other files into the home.
    fn with_config(config: &str, prepare: impl FnOnce(&Path)) -> Host {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.yaml"), config).unwrap();
        prepare(home.path());
        let paths = Paths::single(home.path().to_path_buf());
        let config = Config::load(&paths).unwrap().config;
        let workspace = Workspace::open(&paths, &config, home.path().to_path_buf(), ApprovalPolicy::Ask)
            .expect("workspace");
        let server = listen(
            &paths,
            config,
            workspace.edits.clone(),
            workspace.engine.clone(),
            home.path().to_path_buf(),
        )
        .expect("listen");
        Host {
            home,
            workspace,
            _server: server,
        }
    }

    fn path(&self) -> &Path {
        self.home.path()
    }

    /// The binary, run in another thread so the host's engine keeps running on this runtime.
    /// A run that waits forever (on an approval nobody gives) fails the test.
    async fn run(&self, args: &[&str]) -> Output {
        let home = self.path().to_path_buf();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(&args)
            .env("HUDDLE_HOME", &home)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(&home)
            .kill_on_drop(true)
            .output();
        tokio::time::timeout(Duration::from_secs(120), child)
            .await
            .unwrap_or_else(|_| panic!("`huddle {}` never ended", args.join(" ")))
            .expect("run huddle")
    }

    fn seen(&mut self) -> Vec<EngineEvent> {
        std::iter::from_fn(|| self.workspace.events.try_recv().ok()).collect()
    }
}

fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_handed_to_the_open_huddle_which_shows_it_live() {
    let mut host = Host::open("sim/demo");
    let out = host
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
        err.contains("handed to the huddle open on this data dir"),
        "{err}"
    );
    assert!(
        err.contains("broadcast run"),
        "progress as a local run prints it: {err}"
    );
    let answer = text(&out.stdout);
    assert!(answer.contains("Review fn add"), "the answer on stdout: {answer}");

    // The open instance made the group (named for the run) and its front end saw the run.
    let (group_id, name, stamped) = host
        .workspace
        .org
        .read(|o| {
            o.groups
                .iter()
                .find(|g| g.name.starts_with("Code Review Team · run "))
                .map(|g| (g.id.clone(), g.name.clone(), g.headless_at.is_some()))
        })
        .expect("the group the run made");
    assert!(stamped, "a headless leftover is stamped");
    let seen = host.seen();
    assert!(
        seen.iter()
            .any(|e| e.group_id == group_id && matches!(e.kind, EventKind::CycleFinished { .. })),
        "the open huddle's front end saw the run end"
    );
    // Members keep the preset's names (what scripts use), the team's name says it was a run.
    let members = host.workspace.org.read(|o| {
        o.sessions_in(&group_id)
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
    });
    assert!(
        members.iter().all(|m| m.starts_with("code-review-team-")),
        "{members:?} ({name})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_running_in_the_open_huddle_is_said_to_run_not_to_be_interrupted() {
    let host = Host::open("sim/demo");
    // A reflect team, made by a run of its own, then run in the open huddle (slowly).
    let made = host
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
    let (group_id, name) = host
        .workspace
        .org
        .read(|o| {
            o.groups
                .iter()
                .find(|g| g.name.starts_with("Code Review Team · run "))
                .map(|g| (g.id.clone(), g.name.clone()))
        })
        .expect("the team");
    let engine = host.workspace.engine.clone();
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
        let out = host.run(&args).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains(&format!(
                "group `{name}` is running in the huddle open on this data dir"
            )) && err.contains("stop key"),
            "{extra:?}: {err}"
        );
        assert!(!err.contains("interrupted cycle"), "{extra:?}: {err}");
        assert!(!err.contains("``"), "no doubled backticks: {err}");
        assert!(!err.contains("handed to"), "refused before it is taken: {err}");
    }
    assert!(engine.is_running(&key), "the run in progress goes on");
    engine.stop(&key);
    let _ = running.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndjson_and_exit_codes_are_those_of_a_local_run() {
    const ARGS: [&str; 7] = [
        "run",
        "--preset",
        "Code Review Team",
        "--max-iterations",
        "1",
        "--events",
        "Review fn add",
    ];
    let host = Host::open("sim/demo");
    let out = host.run(&ARGS).await;
    let events = ndjson(&out);
    assert!(
        events.iter().any(|e| e["event"] == "cycle_finished"),
        "NDJSON on stdout: {}",
        text(&out.stdout)
    );
    let local_home = tempfile::tempdir().unwrap();
    std::fs::write(local_home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();
    let local = huddle(local_home.path(), &ARGS);
    assert_eq!(
        out.status.code(),
        local.status.code(),
        "the same exit code as a local run"
    );
    // Workers finish in either order: the same events, counted.
    let kinds = |events: &[serde_json::Value]| -> Vec<String> {
        let mut kinds: Vec<String> = events
            .iter()
            .map(|e| e["event"].as_str().unwrap_or("").to_string())
            .collect();
        kinds.sort();
        kinds
    };
    assert_eq!(kinds(&events), kinds(&ndjson(&local)), "the same events");

    // A usage error found by the open huddle is the same usage error.
    let missing = host.run(&["run", "--group", "No Such Team", "hello"]).await;
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("no group named `No Such Team`"),
        "{}",
        stderr(&missing)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_handed_run_and_leaves_its_cycle_resumable() {
    let host = Host::open("sim/slow-300ms");
    let home = host.path().to_path_buf();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--preset", "Code Review Team", "Review fn add"])
        .env("HUDDLE_HOME", &home)
        .current_dir(&home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // However long a busy machine takes; the limit only ends a hang.
    let started = |o: &huddle::model::Organization| {
        o.groups
            .iter()
            .any(|g| g.headless_at.is_some() && g.state.orchestrator_reflect.is_some())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !host.workspace.org.read(started) {
        assert!(std::time::Instant::now() < deadline, "the run never started");
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
    let interrupted = host.workspace.org.read(|o| {
        o.groups
            .iter()
            .find(|g| g.headless_at.is_some())
            .and_then(|g| g.state.orchestrator_reflect.as_ref())
            .map(|r| r.is_interrupted())
    });
    assert_eq!(interrupted, Some(true), "resumable, as after a local Ctrl-C");
}

/// Tool calls that ask are settled by the rule of `huddle run` (denied, or `--approve-tools`),
/// never put to the open TUI's user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_approvals_of_a_handed_run_follow_huddle_run() {
    let Some(program) = super::mcp_servers::reference_server("HUDDLE_MCP_TIME", "mcp-server-time") else {
        return;
    };
    let config = format!(
        "default_model: sim/default\nmcp_servers:\n  time:\n    command: [\"{}\"]\n",
        program.display()
    );
    let mut host = Host::with_config(&config, |home| {
        std::fs::create_dir_all(home.join("presets")).unwrap();
        std::fs::write(
            home.join("presets/clock.yaml"),
            "name: Clock Team\nmode: broadcast\nworkers:\n  - { name: one, tools: [time] }\n  - { name: two, tools: [time] }\n",
        )
        .unwrap();
    });
    let denied = host
        .run(&["run", "--preset", "Clock Team", "What time is it?"])
        .await;
    let err = stderr(&denied);
    assert_eq!(denied.status.code(), Some(0), "{err}");
    assert!(err.contains("handed to the huddle open"), "{err}");
    assert_eq!(
        err.matches("denied: huddle run does not run tools that need approval")
            .count(),
        2,
        "{err}"
    );
    let approved = host
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
        !host
            .seen()
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolApprovalRequested { .. })),
        "nothing was asked in the open huddle"
    );
    host.workspace.engine.shutdown_tools().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_team_for_another_repository_is_refused() {
    let host = Host::open("sim/demo");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = host
        .run(&[
            "run",
            "--repo",
            elsewhere.path().to_str().unwrap(),
            "--preset",
            "Code Review Team",
            "hello",
        ])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("huddle is open on this data dir in"),
        "{}",
        stderr(&out)
    );
    assert!(
        host.workspace
            .org
            .read(|o| o.groups.iter().all(|g| g.headless_at.is_none())),
        "nothing was made"
    );
}

#[test]
fn a_dead_socket_is_ignored_and_a_file_in_its_place_is_left_alone() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();
    // A crashed huddle's socket: nobody listens.
    let socket: PathBuf = home.path().join("huddle.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let out = huddle(home.path(), &["run", "--model", "sim/demo", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("handed"), "ran here: {}", stderr(&out));

    // A regular file where the socket goes is not deleted to listen.
    std::fs::remove_file(&socket).unwrap();
    std::fs::write(&socket, "mine").unwrap();
    let paths = Paths::single(home.path().to_path_buf());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let config = Config::load(&paths).unwrap().config;
        let ws = Workspace::open(&paths, &config, home.path().to_path_buf(), ApprovalPolicy::Ask).unwrap();
        let refused = listen(
            &paths,
            config,
            ws.edits.clone(),
            ws.engine.clone(),
            home.path().to_path_buf(),
        );
        assert!(
            matches!(refused, Err(ListenError::NotASocket(_))),
            "{:?}",
            refused.err()
        );
    });
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "mine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_is_owner_only_and_goes_with_the_server() {
    let host = Host::open("sim/demo");
    let socket = host.path().join("huddle.sock");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let Host { home, _server, .. } = host;
    drop(_server);
    assert!(!home.path().join("huddle.sock").exists());
}

/// `huddle runs prune`: only what `huddle run` made, only when old enough; `--dry-run` lists.
#[test]
fn prune_removes_old_headless_leftovers_only() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();
    for prompt in ["one", "two"] {
        let out = huddle(
            home.path(),
            &[
                "run",
                "--preset",
                "Code Review Team",
                "--mode",
                "broadcast",
                prompt,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let one_shot = huddle(home.path(), &["run", "--model", "sim/demo", "quick question"]);
    assert_eq!(one_shot.status.code(), Some(0));
    // One team made by hand (not a leftover) and the first run's team aged by ten days.
    let org_path = home.path().join("organization.json");
    let mut org: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&org_path).unwrap()).unwrap();
    let old = (chrono::Utc::now() - chrono::Duration::days(10)).to_rfc3339();
    let groups = org["groups"].as_array_mut().unwrap();
    let aged = groups
        .iter_mut()
        .find(|g| g["headless_at"].is_string())
        .expect("a headless team");
    aged["headless_at"] = serde_json::Value::String(old);
    let aged_id = aged["id"].as_str().unwrap().to_string();
    let aged_name = aged["name"].as_str().unwrap().to_string();
    std::fs::write(&org_path, serde_json::to_string(&org).unwrap()).unwrap();
    let members: Vec<String> = org["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["group_id"] == aged_id.as_str())
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!members.is_empty());

    let dry = huddle(home.path(), &["runs", "prune", "--older-than", "7d", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert_eq!(text(&dry.stdout).lines().count(), 1, "{}", text(&dry.stdout));
    assert!(text(&dry.stdout).contains(&aged_name));

    let pruned = huddle(home.path(), &["runs", "prune", "--older-than", "7d"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", stderr(&pruned));
    assert!(text(&pruned.stdout).contains(&format!("removed team `{aged_name}`")));
    let after = OrganizationFileView::read(home.path());
    assert!(
        after.groups.iter().all(|g| g.id != aged_id),
        "the old team is gone"
    );
    assert_eq!(
        after.groups.iter().filter(|g| g.headless_at.is_some()).count(),
        1,
        "the recent one stays"
    );
    assert!(
        after.sessions.iter().any(|s| s.headless_at.is_some()),
        "the recent one-shot stays"
    );
    for id in &members {
        assert!(
            !home.path().join("sessions").join(format!("{id}.jsonl")).exists(),
            "transcript of {id} removed"
        );
    }
    assert!(
        !home.path().join("runs").join(&aged_id).exists(),
        "its run files removed"
    );

    let nothing = huddle(home.path(), &["runs", "prune", "--older-than", "7d"]);
    assert_eq!(text(&nothing.stdout).trim(), "nothing to prune");
    let bad = huddle(home.path(), &["runs", "prune", "--older-than", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
}

struct OrganizationFileView;

impl OrganizationFileView {
    fn read(home: &Path) -> huddle::model::Organization {
        huddle::store::OrganizationFile::new(home.join("organization.json"))
            .inspect()
            .unwrap()
            .unwrap()
    }
}

/// `--approve` asks about relay drafts on this terminal, which a handed-over run cannot: with a
/// huddle open it is refused before anything is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_on_the_terminal_is_refused_next_to_an_open_huddle() {
    let host = Host::open("sim/demo");
    let out = host
        .run(&["run", "--preset", "Negotiator", "--approve", "Buy a bike"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`--approve` answers relay drafts on this terminal"),
        "{}",
        stderr(&out)
    );
    assert!(
        host.workspace
            .org
            .read(|o| o.groups.iter().all(|g| g.headless_at.is_none())),
        "nothing was made"
    );
}
