//! The command line never hangs and never panics on hostile surroundings: a FIFO where a file
//! belongs, a closed or full stdout. The real binary, a temporary HUDDLE_HOME, the sim provider.

use std::ffi::CString;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::headless::{huddle, text};

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// Waits for `child`; a child still running after `guard` is killed and the test fails (the
/// guard only ends a hang: a healthy run takes well under a second).
fn wait_or_kill(mut child: Child, guard: Duration, what: &str) -> Output {
    let until = Instant::now() + guard;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{what} hung (killed): {}", text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A temporary home and repo, with the built-in "Research Panel" run once in the repo (so the
/// organization has that team group). Returns (home, repo).
pub(super) fn team_group_in_repo(tmp: &Path) -> (PathBuf, PathBuf) {
    let (home, repo) = (tmp.join("home"), tmp.join("repo"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let repo_arg = repo.display().to_string();
    let args = [
        "run",
        "--repo",
        &repo_arg,
        "--preset",
        "Research Panel",
        "--model",
        "sim/x",
        "hi",
    ];
    let out = huddle(&home, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (home, repo)
}

/// `huddle squad export` of that group into `repo`.
pub(super) fn export_research_panel(home: &Path, repo: &Path) -> Output {
    let repo_arg = repo.display().to_string();
    let team = super::headless::team_made_by_run(home, "Research Panel");
    let args = ["squad", "export", "--group", &team, "--repo", &repo_arg];
    huddle_with(home, &args, Stdio::piped(), Stdio::piped())
}

#[test]
fn squad_export_over_fifos_does_not_hang_and_keeps_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, repo) = team_group_in_repo(tmp.path());
    // Where the export reads before it writes: team.md and the first worker's charter.
    mkfifo(&repo.join(".squad/team.md"));
    mkfifo(&repo.join(".squad/agents/analyst/charter.md"));
    let out = export_research_panel(&home, &repo);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for fifo in ["team.md", "agents/analyst/charter.md"] {
        let path = repo.join(".squad").join(fifo);
        assert!(
            stdout.contains(&format!("kept {} (not a regular file", path.display())),
            "{fifo}: {stdout}"
        );
        let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&kind),
            "{fifo} left as it was"
        );
    }
    assert!(
        stdout.contains("wrote ") && stdout.contains("practitioner/charter.md"),
        "the rest is written: {stdout}"
    );
}

#[test]
fn a_fifo_in_place_of_the_config_is_an_error_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    mkfifo(&home.join("config.yaml"));
    let out = huddle_with(&home, &["presets", "list"], Stdio::piped(), Stdio::piped());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("config.yaml") && err.contains("named pipe"), "{err}");
}

/// Runs huddle with stdout and stderr set up by the caller; a run that hangs fails the test.
fn huddle_with(home: &Path, args: &[&str], stdout: Stdio, stderr: Stdio) -> Output {
    std::fs::create_dir_all(home).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    wait_or_kill(child, Duration::from_secs(60), &format!("{args:?}"))
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE. Close-on-exec,
/// or a process another test starts meanwhile would inherit the reading end and keep it open.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2(2) returns.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here alone.
    unsafe {
        libc::close(fds[0]);
        Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}

fn dev_full() -> Stdio {
    Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
}

fn assert_no_panic(out: &Output, what: &str) {
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "{what} panicked: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("stack backtrace"),
        "{what}: {err}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_without_a_panic() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["doctor"][..],
        &["presets", "list"],
        &["presets", "show", "Research Panel", "--json"],
    ] {
        let out = huddle_with(home.path(), args, closed_pipe(), Stdio::piped());
        assert_no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?}: quiet");
    }
}

#[test]
fn a_full_stdout_is_an_error_message_not_a_panic() {
    let home = tempfile::tempdir().unwrap();
    for args in [&["presets", "list"][..], &["doctor"]] {
        let out = huddle_with(home.path(), args, dev_full(), Stdio::piped());
        assert_no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("cannot write to standard output") && err.contains("No space left on device"),
            "{args:?}: {err}"
        );
    }
}

/// `huddle run`, plain or with `--events`, on a full disk: exit 1 with a message, as every
/// other command (not 141, which says the reader went away, and not silently).
#[test]
fn a_full_stdout_under_huddle_run_is_an_error_message_too() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["run", "--model", "sim/x", "Say hi"][..],
        &["run", "--model", "sim/x", "--events", "Say hi"],
    ] {
        let out = huddle_with(home.path(), args, dev_full(), Stdio::piped());
        assert_no_panic(&out, &format!("{args:?}"));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output")
                && err.contains("No space left on device")
                && err.contains("the run's result is saved"),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("cannot write").count(), 1, "said once: {err}");
    }
}

#[test]
fn a_full_or_closed_stderr_never_turns_an_error_into_a_panic() {
    let home = tempfile::tempdir().unwrap();
    for stderr in [dev_full(), closed_pipe()] {
        let out = huddle_with(
            home.path(),
            &["presets", "show", "No Such Preset"],
            Stdio::piped(),
            stderr,
        );
        assert_eq!(out.status.code(), Some(2), "the usage error's own code, not 101");
    }
    // Both closed: still the real outcome.
    let out = huddle_with(home.path(), &["presets", "list"], closed_pipe(), dev_full());
    assert_eq!(out.status.code(), Some(141));
}

#[test]
fn a_repo_that_does_not_exist_is_a_usage_error_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for (repo, why) in [
        (tmp.path().join("nowhere"), "does not exist"),
        (file, "is not a directory"),
    ] {
        let repo = repo.display().to_string();
        for args in [
            vec!["run", "--repo", repo.as_str(), "--model", "sim/x", "hi"],
            vec!["presets", "list", "--repo", repo.as_str()],
            vec!["doctor", "--repo", repo.as_str()],
        ] {
            let out = huddle_with(&home, &args, Stdio::piped(), Stdio::piped());
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = text(&out.stderr);
            assert!(err.contains(&format!("--repo {repo}: {why}")), "{args:?}: {err}");
            assert!(!home.join("organization.json").exists(), "nothing ran");
        }
    }
}

/// `huddle run` with its stderr full or closed still finishes, saves and writes its answer; with
/// its stdout closed it finishes and saves, and the exit code says the output was lost.
#[test]
fn huddle_run_survives_a_full_stderr_and_a_closed_stdout() {
    let home = tempfile::tempdir().unwrap();
    for stderr in [dev_full(), closed_pipe()] {
        let out = huddle_with(
            home.path(),
            &["run", "--model", "sim/x", "Say hi"],
            Stdio::piped(),
            stderr,
        );
        assert_no_panic(&out, "run with a broken stderr");
        assert_eq!(out.status.code(), Some(0));
        assert!(
            text(&out.stdout).contains("Say hi"),
            "the answer: {}",
            text(&out.stdout)
        );
    }
    for args in [
        &["run", "--model", "sim/x", "Say hi"][..],
        &["run", "--model", "sim/x", "--events", "Say hi"],
    ] {
        let out = huddle_with(home.path(), args, closed_pipe(), Stdio::piped());
        assert_no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", text(&out.stderr));
    }
    // Every run's session was saved although nobody read the answers.
    let org = huddle::store::OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .expect("readable")
        .expect("saved");
    assert_eq!(
        org.sessions.iter().filter(|s| s.name.starts_with("run-")).count(),
        4
    );
}

/// `--events` lines are cleaned like the plain output: a prompt (echoed by the sim) holding C1
/// controls, a bidi override and a zero-width space comes out without them.
#[test]
fn events_output_is_sanitised() {
    let home = tempfile::tempdir().unwrap();
    let prompt = "look\u{9b}31m here \u{202e}reversed\u{200b}";
    let out = huddle_with(
        home.path(),
        &["run", "--model", "sim/x", "--events", prompt],
        Stdio::piped(),
        Stdio::piped(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("look"), "{stdout}");
    for bad in ['\u{9b}', '\u{202e}', '\u{200b}'] {
        assert!(!stdout.contains(bad), "{bad:?} in {stdout}");
    }
    for line in stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("still JSON");
    }
}
