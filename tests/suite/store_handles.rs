//! File handles of a long-lived process: the TUI runs one run after another (every `huddle run`
//! handed over to it makes a session and a run file). A run's file is closed when the run ends
//! and transcripts are held open in a bounded number, so the process does not run out of file
//! descriptors however many runs it has made.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use huddle::store::{RunFiles, RunOwner, Transcripts};

use super::run_timeline::open;

/// The files under `dir` this process holds open.
fn open_files_under(dir: &Path) -> Vec<PathBuf> {
    let dir = dir.canonicalize().expect("dir");
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .collect()
}

/// `n` one-shot runs (a question to a new session, as `huddle run "…"` handed over makes) on
/// one workspace in `home`: the ids of their sessions, and the files under `home` still open
/// after the last run (the workspace still open, as the TUI stays).
async fn one_shot_runs(home: &Path, n: usize) -> (Vec<String>, Vec<PathBuf>) {
    let ws = open(home);
    let mut ids = Vec::new();
    for k in 0..n {
        let id = ws.edits.create_run_session("sim/demo");
        let answer = ws
            .engine
            .ask(&id, format!("question {k}"), None)
            .await
            .expect("the run");
        assert!(answer.success, "run {k}: {:?}", answer.error);
        ids.push(id);
    }
    ws.engine.flush().expect("flush");
    (ids, open_files_under(home))
}

/// Every session's transcript has its question and answer, and every run's file (a one-shot
/// run is its session's own: `runs/sessions/<id>/`) is there, ending with its `run_ended`.
fn assert_all_saved(home: &Path, ids: &[String]) {
    let transcripts = Transcripts::new(home.join("sessions"));
    for (k, id) in ids.iter().enumerate() {
        let saved = transcripts.load(id).expect("load").messages.len();
        assert_eq!(saved, 2, "run {k}: transcript has {saved} messages");
    }
    let runs = RunFiles::new(home.join("runs"));
    for (k, id) in ids.iter().enumerate() {
        let owner = RunOwner::Session(id.clone());
        let list = runs.list_of(&owner).expect("list");
        assert_eq!(list.len(), 1, "run {k}: its run file");
        let lines = runs.read_lines_of(&owner, &list[0]).expect("read");
        assert!(
            lines.last().is_some_and(|l| l.contains("\"run_ended\"")),
            "run {k}: {lines:?}"
        );
    }
}

#[tokio::test]
async fn many_runs_in_one_process_leave_a_bounded_number_of_files_open() {
    let home = tempfile::tempdir().expect("home");
    let (ids, open) = one_shot_runs(home.path(), 160).await;
    let runs_open = open
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .count();
    // Before: a transcript and a run file per run (one handle each, kept for the process's
    // life). Now at most an eighth of the open-file limit of transcripts, 128 at most.
    assert!(
        runs_open <= 128,
        "{runs_open} transcript/run files open after 160 runs"
    );
    let run_files_open = open
        .iter()
        .filter(|p| p.starts_with(home.path().canonicalize().expect("home").join("runs")))
        .count();
    assert_eq!(run_files_open, 0, "ended runs' files are closed: {open:?}");
    assert_all_saved(home.path(), &ids);
}

const CHILD: &str = "HUDDLE_TEST_FD_CHILD_HOME";

/// Run by [`under_a_low_open_files_limit_every_run_is_saved`] in a child process whose limit
/// of open files is 64.
#[tokio::test]
#[ignore = "runs in a child process under a low RLIMIT_NOFILE"]
async fn child_many_runs_under_a_low_limit() {
    let Some(home) = std::env::var_os(CHILD) else {
        return;
    };
    let home = PathBuf::from(home);
    let (ids, _) = one_shot_runs(&home, 60).await;
    assert_all_saved(&home, &ids);
}

#[test]
fn under_a_low_open_files_limit_every_run_is_saved() {
    let home = tempfile::tempdir().expect("home");
    let mut child = Command::new(std::env::current_exe().expect("test binary"));
    child
        .args([
            "--exact",
            "suite::store_handles::child_many_runs_under_a_low_limit",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, home.path());
    // SAFETY: setrlimit(2) is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        child.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = child.output().expect("run the child test");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran its test: {text}");
}
