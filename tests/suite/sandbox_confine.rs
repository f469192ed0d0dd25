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
