//! The command line never hangs and never panics on hostile surroundings: a FIFO where a file
//! belongs, a closed or full stdout. The real binary, a temporary HUDDLE_HOME, the sim provider.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
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

#[test]
fn squad_export_over_fifos_does_not_hang_and_keeps_them() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let repo_arg = repo.display().to_string();
    let out = huddle(
        &home,
        &[
            "run",
            "--repo",
            repo_arg.as_str(),
            "--preset",
            "Research Panel",
            "--model",
            "sim/x",
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Where the export reads before it writes: team.md and the first worker's charter.
    mkfifo(&repo.join(".squad/team.md"));
    mkfifo(&repo.join(".squad/agents/analyst/charter.md"));
    let child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args([
            "squad",
            "export",
            "--group",
            "Research Panel",
            "--repo",
            repo_arg.as_str(),
        ])
        .env("HUDDLE_HOME", &home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_or_kill(child, Duration::from_secs(60), "squad export");
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
    let child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["presets", "list"])
        .env("HUDDLE_HOME", &home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_or_kill(child, Duration::from_secs(60), "presets list");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("config.yaml") && err.contains("named pipe"), "{err}");
}
