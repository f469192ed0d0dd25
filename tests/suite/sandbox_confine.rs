//! The sandbox for real (bwrap): a process in a member's worktree writes there and commits,
//! and cannot write the home directory, the main checkout or another member's worktree, nor
//! read `~/.ssh`; with the network off it reaches nothing on the host's loopback; a required
//! sandbox that is missing starts nothing.

use std::path::{Path, PathBuf};

use huddle::sandbox::{Network, Policy, SandboxError, SandboxMode, SandboxSettings, needed_paths};

use super::sandbox_support::{Machine, bwrap_ready, git, outside_tmp};

/// Tries each thing and reports `<name> ok|denied`, one a line, into `report.txt` in its
/// working directory.
const PROBE: &str = r#"home="$1"; repo="$2"; bob="$3"
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
{
try own "echo hi > own.txt"
try home "echo x > '$home/x'"
try repo "echo x > '$repo/b.txt'"
try bob "echo x > '$bob/x'"
try ssh "cat '$home/.ssh/id_test'"
try tmp "echo t > /tmp/scratch && test -f /tmp/scratch"
try commit "git add own.txt && git -c user.name=t -c user.email=t@t commit -qm own"
try bobcommit "git -C '$bob' -c user.name=t -c user.email=t@t commit --allow-empty -qm x"
try mainref "git update-ref refs/heads/main HEAD"
try hook "echo x > '$repo/.git/hooks/pre-commit'"
} > report.txt
"#;

async fn run_probe(m: &Machine, policy: Policy, scripts: &Path) -> (String, String) {
    let script = scripts.join("probe.sh");
    std::fs::write(&script, PROBE).expect("script");
    let args = vec![
        script.display().to_string(),
        m.home.display().to_string(),
        m.repo.display().to_string(),
        m.bob.display().to_string(),
    ];
    let out = m
        .sandbox(policy)
        .command("sh", &args, Some(&m.alice), &needed_paths("sh", &args))
        .await
        .expect("confined command")
        .output()
        .await
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let report = std::fs::read_to_string(m.alice.join("report.txt"))
        .unwrap_or_else(|e| panic!("report: {e}; {stderr}"));
    (report, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn assert_confined(m: &Machine, report: &str, stdout: &str) {
    for line in [
        "own ok",
        "home denied",
        "repo denied",
        "bob denied",
        "ssh denied",
        "tmp ok",
        "commit ok",
        "bobcommit denied",
        "mainref denied",
        "hook denied",
    ] {
        assert!(
            report.lines().any(|l| l == line),
            "expected `{line}` in:\n{report}"
        );
    }
    assert!(!stdout.contains("PRIVATE KEY"));
    assert!(
        !m.home.join("x").exists(),
        "nothing written in the home directory"
    );
    assert!(
        !m.repo.join("b.txt").exists(),
        "nothing written in the main checkout"
    );
    assert!(!m.bob.join("x").exists(), "nothing written in bob's worktree");
    assert!(!m.repo.join(".git/hooks/pre-commit").exists());
    assert!(
        !Path::new("/tmp/scratch").exists()
            || std::fs::read_to_string("/tmp/scratch").ok().as_deref() != Some("t\n")
    );
    // The commit landed on alice's branch, and the repository is whole.
    let log = git(&m.repo, &["log", "--format=%s", "huddle/t-alice-0a1b"]);
    assert_eq!(log.lines().next(), Some("own"), "{log}");
    assert_eq!(git(&m.repo, &["log", "--format=%s", "main"]).lines().count(), 1);
    git(&m.repo, &["fsck", "--no-progress"]);
}

#[tokio::test]
async fn workspace_write_writes_the_worktree_only_and_hides_credentials() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let (report, stdout) = run_probe(&m, Policy::default(), &m.root).await;
    assert_confined(&m, &report, &stdout);
}

#[tokio::test]
async fn a_machine_in_tmp_works_the_same_behind_the_private_tmp() {
    if !bwrap_ready() {
        return;
    }
    // Repository, worktrees, home and the script all under /tmp: the private /tmp hides them,
    // what is needed is bound back in.
    let dir = tempfile::tempdir().expect("tempdir");
    let m = Machine::new(dir.path());
    let (report, stdout) = run_probe(&m, Policy::default(), &m.root).await;
    assert_confined(&m, &report, &stdout);
}

#[tokio::test]
async fn read_only_writes_nothing_but_its_private_tmp() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let policy = Policy::resolve(
        &[("test", &SandboxSettings::mode(SandboxMode::ReadOnly))],
        None,
        None,
    );
    let out = m
        .sandbox(policy)
        .command(
            "sh",
            &[
                "-c".into(),
                "echo x > own.txt; echo t > /tmp/t && cat /tmp/t && cat a.txt".into(),
            ],
            Some(&m.alice),
            &[],
        )
        .await
        .expect("command")
        .output()
        .await
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "t\na\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Read-only file system"));
    assert!(!m.alice.join("own.txt").exists());
}

#[tokio::test]
async fn allow_write_and_allow_read_open_what_they_list() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    std::fs::create_dir_all(m.home.join(".cache")).expect("cache");
    std::fs::write(m.home.join(".ssh/known_hosts"), "host key").expect("known hosts");
    let settings: SandboxSettings =
        serde_yaml::from_str("allow_write: [~/.cache]\nallow_read: [~/.ssh/known_hosts]\n").expect("yaml");
    let policy = Policy::resolve(&[("test", &settings)], None, Some(&m.home));
    let home = m.home.display();
    let out = m
        .sandbox(policy)
        .command(
            "sh",
            &[
                "-c".into(),
                format!("echo c > {home}/.cache/c && cat {home}/.ssh/known_hosts; cat {home}/.ssh/id_test"),
            ],
            Some(&m.alice),
            &[],
        )
        .await
        .expect("command")
        .output()
        .await
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "host key");
    assert_eq!(
        std::fs::read_to_string(m.home.join(".cache/c")).ok().as_deref(),
        Some("c\n")
    );
}

#[tokio::test]
async fn with_the_network_off_the_hosts_loopback_is_out_of_reach() {
    if !bwrap_ready() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let connect = vec![
        "-c".to_string(),
        "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5); print('connected')"
            .to_string(),
        port.to_string(),
    ];
    let run = |network: Network| {
        let settings = SandboxSettings {
            network: Some(network),
            ..SandboxSettings::default()
        };
        let sandbox = m.sandbox(Policy::resolve(&[("test", &settings)], None, None));
        let connect = connect.clone();
        let alice = m.alice.clone();
        async move {
            sandbox
                .command("python3", &connect, Some(&alice), &[])
                .await
                .expect("command")
                .output()
                .await
                .expect("runs")
        }
    };
    let off = run(Network::Off).await;
    assert!(!off.status.success(), "connected with the network off");
    let stderr = String::from_utf8_lossy(&off.stderr);
    assert!(
        stderr.contains("Connection refused") || stderr.contains("unreachable"),
        "{stderr}"
    );
    assert!(listener.accept().is_err(), "nothing arrived");
    // The same with the network on connects: the test would see a connection.
    let on = run(Network::On).await;
    assert_eq!(
        String::from_utf8_lossy(&on.stdout),
        "connected\n",
        "{}",
        String::from_utf8_lossy(&on.stderr)
    );
}

#[tokio::test]
async fn a_required_sandbox_that_is_missing_refuses_to_start() {
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let settings = SandboxSettings {
        mode: Some(SandboxMode::WorkspaceWrite),
        bwrap: Some(PathBuf::from("/nonexistent/bwrap")),
        ..SandboxSettings::default()
    };
    let policy = Policy::resolve(&[("config.yaml", &settings)], None, None);
    let err = m
        .sandbox(policy)
        .command(
            "sh",
            &["-c".into(), "echo x > own.txt".into()],
            Some(&m.alice),
            &[],
        )
        .await
        .expect_err("refused");
    assert!(matches!(err, SandboxError::Unavailable { .. }));
    assert_eq!(
        err.to_string(),
        "the sandbox is required (workspace-write, set in config.yaml) but not available: bwrap not found at /nonexistent/bwrap"
    );
    assert!(!m.alice.join("own.txt").exists());
}

/// Tries to plant git settings that a git run outside the sandbox would follow (review of
/// issue 26, finding 1), reporting `<name> ok|denied` into `plant.txt` in the start directory.
const PLANT: &str = r#"evil="$1"; marker="$2"
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
admin="$(git rev-parse --absolute-git-dir)"
mkdir -p "$evil" && cp -r "$(git rev-parse --git-common-dir)/objects" "$(git rev-parse --git-common-dir)/refs" "$(git rev-parse --git-common-dir)/HEAD" "$evil/" 2>/dev/null
printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$marker" > "$evil/config"
cp "$evil/config" /tmp/wtconfig
{
try commondir "echo '$evil' > '$admin/commondir'"
try rmcommondir "rm -f '$admin/commondir'"
try gitdir "echo '$evil' > '$admin/gitdir'"
try dotgit "echo 'gitdir: $evil' > .git"
try mvdotgit "mv .git .git-moved"
try modules "mkdir -p '$admin/modules/x'"
try worktreeconfig "cp /tmp/wtconfig '$admin/config.worktree'"
} > plant.txt
"#;

fn assert_all_denied(report: &str, names: &[&str]) {
    for name in names {
        let line = format!("{name} denied");
        assert!(
            report.lines().any(|l| l == line),
            "expected `{line}` in:\n{report}"
        );
    }
}

#[tokio::test]
async fn a_member_cannot_plant_git_settings_that_git_outside_the_sandbox_would_run() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let marker = m.root.join("PWNED");
    let script = m.root.join("plant.sh");
    std::fs::write(&script, PLANT).expect("script");
    // A linked worktree: its `.git` file and its git directory's commondir/gitdir/modules.
    let args = vec![
        script.display().to_string(),
        m.alice.join("evilgit").display().to_string(),
        marker.display().to_string(),
    ];
    let out = m
        .sandbox(Policy::default())
        .command("sh", &args, Some(&m.alice), &needed_paths("sh", &args))
        .await
        .expect("confined command")
        .output()
        .await
        .expect("runs");
    let report = std::fs::read_to_string(m.alice.join("plant.txt"))
        .unwrap_or_else(|e| panic!("report: {e}; {}", String::from_utf8_lossy(&out.stderr)));
    assert_all_denied(
        &report,
        &[
            "commondir",
            "rmcommondir",
            "gitdir",
            "dotgit",
            "mvdotgit",
            "modules",
            // Review 26-2 finding 13: also without `extensions.worktreeConfig`.
            "worktreeconfig",
        ],
    );
    // The main checkout: `.git` cannot be renamed away from its protected parts.
    let main = vec![
        "-c".to_string(),
        "if mv .git .git-real 2>/dev/null; then echo moved; else echo kept; fi; \
         if mkdir .git/modules/x 2>/dev/null; then echo module; fi"
            .to_string(),
    ];
    let out = m
        .sandbox(Policy::default())
        .command("sh", &main, Some(&m.repo), &[])
        .await
        .expect("confined command")
        .output()
        .await
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kept\n");
    assert!(m.repo.join(".git/config").is_file());
    // What huddle runs afterwards on the host finds nothing planted.
    let wt = huddle::worktrees::Worktree {
        path: m.alice.clone(),
        branch: "huddle/t-alice-0a1b".into(),
        base_commit: String::new(),
        repo: m.repo.clone(),
        subdir: None,
    };
    huddle::worktrees::status(&wt).expect("status");
    git(&m.alice, &["status", "--porcelain"]);
    assert!(!marker.exists(), "a planted fsmonitor ran outside the sandbox");
    // Nor once the repository reads `config.worktree` (`git sparse-checkout init` turns it on).
    git(&m.repo, &["config", "extensions.worktreeConfig", "true"]);
    git(&m.alice, &["status", "--porcelain"]);
    assert!(
        !marker.exists(),
        "a planted config.worktree ran outside the sandbox"
    );
}

/// Review of issue 26, finding 2: the home directory (or `/`, or huddle's config directory) is
/// never a writable working directory; a process given no working directory writes nothing in
/// huddle's own; huddle's config directory stays read-only under an `allow_write` around it.
#[tokio::test]
async fn home_and_huddles_own_directory_are_never_writable_working_directories() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let config_dir = m.home.join(".config/huddle");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    std::fs::write(config_dir.join("config.yaml"), "providers: []\n").expect("config");
    std::fs::write(m.home.join(".bashrc"), "# rc\n").expect("bashrc");
    let host = std::sync::Arc::new(huddle::sandbox::Host {
        home: Some(m.home.clone()),
        data_dir: Some(m.data.clone()),
        config_dir: Some(config_dir.clone()),
        env: Default::default(),
    });
    let run = |policy: Policy, workdir: Option<PathBuf>, script: String| {
        let sandbox = huddle::sandbox::Sandbox::new(policy, host.clone());
        async move {
            let out = sandbox
                .command("sh", &["-c".into(), script], workdir.as_deref(), &[])
                .await
                .expect("command")
                .output()
                .await
                .expect("runs");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    };
    let attempt = |name: &str, path: &Path| {
        format!(
            "if echo x >> '{}' 2>/dev/null; then echo '{name} ok'; else echo '{name} denied'; fi; ",
            path.display()
        )
    };
    let home_script = [
        attempt("x", &m.home.join("x")),
        attempt("bashrc", &m.home.join(".bashrc")),
        attempt("config", &config_dir.join("config.yaml")),
    ]
    .concat();
    // Started in the home directory: nothing there is writable.
    let said = run(Policy::default(), Some(m.home.clone()), home_script.clone()).await;
    assert_eq!(said, "x denied\nbashrc denied\nconfig denied\n");
    // Started in huddle's config directory: the same.
    let said = run(Policy::default(), Some(config_dir.clone()), home_script.clone()).await;
    assert_eq!(said, "x denied\nbashrc denied\nconfig denied\n");
    // No working directory: huddle's own (this test's) is read-only.
    let here = std::env::current_dir().expect("cwd");
    let probe = here.join(format!("huddle-sandbox-probe-{}", std::process::id()));
    let said = run(Policy::default(), None, attempt("here", &probe)).await;
    let planted = probe.exists();
    let _ = std::fs::remove_file(&probe);
    assert_eq!(said, "here denied\n");
    assert!(!planted);
    // allow_write around the config directory: the rest is writable, config.yaml is not.
    let settings: SandboxSettings = serde_yaml::from_str("allow_write: [~]\n").expect("yaml");
    let policy = Policy::resolve(&[("test", &settings)], None, Some(&m.home));
    let said = run(policy, Some(m.alice.clone()), home_script).await;
    assert_eq!(said, "x ok\nbashrc ok\nconfig denied\n");
    assert_eq!(
        std::fs::read_to_string(config_dir.join("config.yaml")).expect("config"),
        "providers: []\n"
    );
}

/// Review 26-2 finding 7: a hidden directory cannot be written (its empty stand-in is
/// read-only, so a write fails instead of seeming to work), in workspace-write and read-only,
/// while what is mounted inside one (a worktree in the data directory) still works.
#[tokio::test]
async fn hidden_directories_refuse_writes() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    std::fs::create_dir_all(m.home.join(".aws")).expect("aws");
    let script = format!(
        "for f in '{ssh}/id_test' '{aws}/new' '{data}/new'; do \
           if echo x > \"$f\"; then echo \"wrote $f\"; fi; done; \
         if mkdir '{ssh}/d' 2>/dev/null; then echo mkdir; fi; \
         if {{ echo own > own.txt; }} 2>/dev/null; then echo own; fi",
        ssh = m.home.join(".ssh").display(),
        aws = m.home.join(".aws").display(),
        data = m.data.display(),
    );
    let read_only = Policy::resolve(
        &[("test", &SandboxSettings::mode(SandboxMode::ReadOnly))],
        None,
        None,
    );
    for (policy, own) in [(Policy::default(), "own\n"), (read_only, "")] {
        let out = m
            .sandbox(policy)
            .command("sh", &["-c".into(), script.clone()], Some(&m.alice), &[])
            .await
            .expect("command")
            .output()
            .await
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(String::from_utf8_lossy(&out.stdout), own, "{stderr}");
        assert_eq!(stderr.matches("Read-only file system").count(), 3, "{stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(m.home.join(".ssh/id_test")).expect("key"),
        "PRIVATE KEY"
    );
}

/// Review 26-2 finding 12: a working directory inside huddle's data directory (a repository's
/// symlink to its transcripts, an MCP server's `cwd:`) or another hidden directory starts
/// nothing, for it would show what is hidden; huddle's worktrees there are fine. One inside
/// huddle's config directory is read-only.
#[tokio::test]
async fn a_working_directory_inside_a_hidden_directory_starts_nothing() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let sessions = m.data.join("sessions");
    std::fs::create_dir_all(&sessions).expect("sessions");
    std::fs::write(sessions.join("s1.jsonl"), "TRANSCRIPT\n").expect("transcript");
    std::os::unix::fs::symlink(&sessions, m.repo.join("sesslink")).expect("symlink");
    let config_dir = m.home.join(".config/huddle");
    std::fs::create_dir_all(config_dir.join("hooks")).expect("config dir");
    let host = std::sync::Arc::new(huddle::sandbox::Host {
        home: Some(m.home.clone()),
        data_dir: Some(m.data.clone()),
        config_dir: Some(config_dir.clone()),
        env: Default::default(),
    });
    let sandbox = huddle::sandbox::Sandbox::new(Policy::default(), host);
    let script = vec![
        "-c".to_string(),
        "cat s1.jsonl 2>/dev/null; if echo x > planted.txt 2>/dev/null; then echo wrote; fi".to_string(),
    ];
    for inside in [
        m.repo.join("sesslink"),
        sessions.clone(),
        m.data.join("worktrees/repo-1"),
        m.home.join(".ssh"),
    ] {
        let err = sandbox
            .command("sh", &script, Some(&inside), &[])
            .await
            .expect_err("not started");
        assert!(
            matches!(err, SandboxError::HiddenWorkdir { .. }),
            "{}: {err}",
            inside.display()
        );
        assert!(err.to_string().contains("which the sandbox hides"), "{err}");
    }
    assert!(!sessions.join("planted.txt").exists());
    // A worktree huddle made there works as ever.
    let out = sandbox
        .command("sh", &script, Some(&m.alice), &[])
        .await
        .expect("command")
        .output()
        .await
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "wrote\n");
    // Inside the config directory (where hook scripts may live): read-only.
    let out = sandbox
        .command("sh", &script, Some(&config_dir.join("hooks")), &[])
        .await
        .expect("command")
        .output()
        .await
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(!config_dir.join("hooks/planted.txt").exists());
}

/// Review of issue 26, finding 3: a ready-made agent writes its own state (sessions, login)
/// but not its settings, hooks, commands or instructions, even where they did not exist yet:
/// the user's next plain (unconfined) session would run them.
#[tokio::test]
async fn a_ready_made_agent_cannot_write_its_own_settings_or_hooks() {
    use huddle::config::{Config, ProviderConfig, ProviderKind};
    use huddle::model::AgentKind;
    use huddle::providers::{ChatMessage, TurnRequest};
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let claude = m.home.join(".claude");
    std::fs::create_dir_all(claude.join("projects")).expect("state");
    std::fs::write(claude.join("CLAUDE.md"), "be nice\n").expect("instructions");
    let script = m.root.join("agent.sh");
    std::fs::write(
        &script,
        r#"c="$1/.claude"; out="$2"
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
{
try session "echo s > '$c/projects/s.jsonl'"
try settings "echo '{\"hooks\":{}}' > '$c/settings.json'"
try local "echo '{}' > '$c/settings.local.json'"
try instructions "echo evil >> '$c/CLAUDE.md'"
try hooks "echo x > '$c/hooks/start.sh'"
try commands "echo x > '$c/commands/x.md'"
try plugins "mkdir -p '$c/plugins/x'"
} > "$out"
"#,
    )
    .expect("script");
    let report = m.alice.join("agent-report.txt");
    let mut p = ProviderConfig::new("agent", ProviderKind::Command);
    p.agent = Some(AgentKind::Claude);
    p.format = Some(AgentKind::Claude.format());
    p.command = vec![
        "sh".into(),
        script.display().to_string(),
        m.home.display().to_string(),
        report.display().to_string(),
        "{model}".into(),
    ];
    let mut config = Config::default();
    config.providers.push(p);
    let provider = huddle::sim::providers(&config)
        .expect("providers")
        .get("agent")
        .expect("agent");
    let mut req = TurnRequest::new("sonnet", vec![ChatMessage::user("hi")]);
    req.working_dir = Some(m.alice.clone());
    req.sandbox = Some(m.sandbox(Policy::default()));
    // The stand-in prints nothing an agent would: the turn's result does not matter here.
    let _ = provider
        .stream_turn(req, &mut |_: &str| {}, tokio_util::sync::CancellationToken::new())
        .await;
    let said = std::fs::read_to_string(&report).expect("report");
    assert_eq!(
        said,
        "session ok\nsettings denied\nlocal denied\ninstructions denied\nhooks denied\ncommands denied\nplugins denied\n"
    );
    assert_eq!(
        std::fs::read_to_string(claude.join("settings.json")).expect("made before the launch"),
        "{}\n"
    );
    assert_eq!(
        std::fs::read_to_string(claude.join("CLAUDE.md")).expect("kept"),
        "be nice\n"
    );
    assert!(
        std::fs::read_dir(claude.join("hooks"))
            .expect("made")
            .next()
            .is_none()
    );
}

/// Review of issue 26, finding 5: a sandboxed process gets only the usual variables of
/// huddle's environment (here cargo's `CARGO_MANIFEST_DIR` stands for an API key), what
/// `allow_env` names, and what its caller sets; the users' runtime directories (session bus,
/// agents' sockets) are hidden.
#[tokio::test]
async fn a_sandboxed_process_gets_only_the_usual_environment() {
    if !bwrap_ready() {
        return;
    }
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "cargo sets it for tests"
    );
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let had_run_user = Path::new("/run/user").exists();
    std::fs::create_dir_all("/run/user/4242").expect("a runtime dir");
    let show = "env | cut -d= -f1 | sort; ls -A /run/user | sed 's/^/run:/'".to_string();
    let run = |policy: Policy| {
        let sandbox = m.sandbox(policy);
        let alice = m.alice.clone();
        let show = show.clone();
        async move {
            let mut cmd = sandbox
                .command("sh", &["-c".into(), show], Some(&alice), &[])
                .await
                .expect("command");
            cmd.env("MY_SERVER_SETTING", "1");
            let out = cmd.output().await.expect("runs");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    };
    let names = run(Policy::default()).await;
    let lines: Vec<&str> = names.lines().collect();
    for present in ["PATH", "HOME", "MY_SERVER_SETTING", "TMPDIR"] {
        assert!(lines.contains(&present), "{present} missing:\n{names}");
    }
    // (Which names are kept out, the agents' sockets among them, is sandbox::passes_env's unit
    // test: they are not set here.)
    for absent in ["CARGO_MANIFEST_DIR", "run:4242"] {
        assert!(!lines.contains(&absent), "{absent} passed:\n{names}");
    }
    let settings: SandboxSettings = serde_yaml::from_str("allow_env: [CARGO_MANIFEST_*]").expect("yaml");
    let names = run(Policy::resolve(&[("test", &settings)], None, None)).await;
    assert!(names.lines().any(|l| l == "CARGO_MANIFEST_DIR"), "{names}");
    let _ = std::fs::remove_dir("/run/user/4242");
    if !had_run_user {
        let _ = std::fs::remove_dir("/run/user");
    }
}
