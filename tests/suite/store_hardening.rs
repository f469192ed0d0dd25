//! What the store guarantees to the user, checked on the real binary: the data dir is private
//! whatever the umask, and a file from a newer huddle is never written over.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::headless::{text, wait_for_host_exit};

/// `huddle` with `args` under umask 022 (what most accounts have).
fn huddle_umask_022(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_huddle"));
    command
        .args(args)
        .env("HUDDLE_HOME", home)
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    // SAFETY: umask(2) is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    command.output().expect("run huddle")
}

/// Every file and folder under `dir` (links not followed), with its permission bits.
fn modes(dir: &Path) -> Vec<(PathBuf, bool, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path.clone());
            }
            out.push((path, meta.is_dir(), meta.permissions().mode() & 0o777));
        }
    }
    out
}

#[test]
fn the_data_dir_is_private_under_umask_022() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    for prompt in ["first", "second"] {
        let out = huddle_umask_022(
            &home,
            &["run", "--preset", "Research Panel", "--model", "sim/x", prompt],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    // Listed once the host is gone (it may replace a file while it is there).
    wait_for_host_exit(&home);
    let all = modes(&home);
    let names: Vec<String> = all
        .iter()
        .map(|(p, _, _)| p.strip_prefix(&home).unwrap().display().to_string())
        .collect();
    for wanted in [
        "organization.json",
        "organization.json.bak",
        "huddle.lock",
        "sessions",
        "runs",
        "logs",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} missing: {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("sessions/")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("logs/huddle.")), "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("runs/") && n.ends_with(".jsonl")),
        "{names:?}"
    );
    let home_mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o777;
    assert_eq!(home_mode, 0o700, "the data dir itself");
    for (path, is_dir, mode) in all {
        let wanted = if is_dir { 0o700 } else { 0o600 };
        assert_eq!(mode, wanted, "{} is {mode:o}", path.display());
    }
}

#[test]
fn loose_files_from_before_are_tightened_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = huddle_umask_022(&home, &["run", "--model", "sim/x", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The files are tightened by the host that takes the data dir: the next one, once the first
    // has gone (a run a moment later could still be served by the first).
    wait_for_host_exit(&home);
    for (path, is_dir, _) in modes(&home) {
        let loose = if is_dir { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(loose)).unwrap();
    }
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = huddle_umask_022(&home, &["run", "--model", "sim/x", "again"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Read once that host is gone too: while it is there it may replace a file (a save's
    // temporary name) between the listing and the look at it.
    wait_for_host_exit(&home);
    for (path, is_dir, mode) in modes(&home) {
        assert_eq!(mode, if is_dir { 0o700 } else { 0o600 }, "{}", path.display());
    }
}

#[test]
fn an_organization_from_a_newer_huddle_is_refused_and_kept_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let newer = br#"{"version": 9, "groups": [], "sessions": [], "constellations": []}"#;
    std::fs::write(home.join("organization.json"), newer).unwrap();
    let out = huddle_umask_022(&home, &["run", "--model", "sim/x", "hello"]);
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("newer huddle (format version 9"), "{err}");
    assert!(err.contains("organization.json"), "{err}");
    assert_eq!(std::fs::read(home.join("organization.json")).unwrap(), newer);
    assert!(!home.join("organization.json.bak").exists());
}
