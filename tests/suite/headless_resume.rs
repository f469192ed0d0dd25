//! `huddle run` stopped from outside (SIGTERM, SIGHUP) and resumed: every iteration it reported
//! is on disk, the cycle is kept interrupted, a new prompt does not overwrite it, `--resume`
//! continues after the last completed iteration and `--discard-interrupted` starts over.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use huddle::model::{CycleOutcome, ReflectionCycle};
use huddle::store::OrganizationFile;
use serde_json::Value;

use super::headless::{huddle, ndjson, text};

const TEAM: &str = "Code Review Team";

/// Starts a reflect run with `--events`, sends `signal` right after the first `evaluation`
/// line is printed, and returns the exit code and every event printed.
fn signal_after_first_evaluation(home: &Path, signal: i32) -> (Option<i32>, Vec<Value>) {
    let args = [
        "run",
        "--preset",
        TEAM,
        "--model",
        "sim/slow-200ms",
        "--max-iterations",
        "4",
        "--events",
        "Review the parser",
    ];
    signal_after_evaluation(home, &args, signal)
}

/// Runs huddle with `args` (which print NDJSON), sends `signal` right after the first
/// `evaluation` line, returns the exit code and every event printed.
fn signal_after_evaluation(home: &Path, args: &[&str], signal: i32) -> (Option<i32>, Vec<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .current_dir(home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start huddle");
    let stdout = child.stdout.take().expect("stdout");
    let mut events = Vec::new();
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let line = line.expect("a line");
        let event: Value = serde_json::from_str(&line).expect("NDJSON");
        let evaluated = event["event"] == "evaluation";
        events.push(event);
        if evaluated {
            // SIGKILL is a crash: of the host that runs it (its pid is in the lock file) too.
            let host = (signal == libc::SIGKILL)
                .then(|| huddle::store::DataDirLock::holder(&home.join("huddle.lock")))
                .flatten()
                .and_then(|p| p.parse::<i32>().ok());
            // SAFETY: plain kill(2) on our own child's pid and on the host it started.
            unsafe {
                // The host is stopped first, so neither sees the other die before its own end
                // (killed first, the host's going away could let `huddle run` exit 1 before its
                // SIGKILL; killed second, the host could stop the run as on a hang-up).
                if let Some(host) = host {
                    libc::kill(host, libc::SIGSTOP);
                }
                libc::kill(child.id() as i32, signal);
                if let Some(host) = host {
                    libc::kill(host, signal);
                }
            }
            break;
        }
    }
    for line in lines {
        events.push(serde_json::from_str(&line.expect("a line")).expect("NDJSON"));
    }
    let status = child.wait().expect("wait");
    super::headless::wait_for_host_exit(home);
    (status.code(), events)
}

fn cycle(home: &Path) -> ReflectionCycle {
    OrganizationFile::new(home.join("organization.json"))
        .inspect()
        .expect("readable")
        .expect("saved")
        .groups
        .iter()
        .find_map(|g| g.state.orchestrator_reflect.clone())
        .expect("a cycle")
}

#[test]
fn sigterm_keeps_the_cycle_resumable_and_resume_continues_it() {
    let home = tempfile::tempdir().expect("home");
    let (code, events) = signal_after_first_evaluation(home.path(), libc::SIGTERM);
    assert_eq!(code, Some(143));
    let team = super::headless::team_made_by_run(home.path(), TEAM);
    // Every iteration whose evaluation was printed is on disk.
    let evaluated: Vec<u64> = events
        .iter()
        .filter(|e| e["event"] == "evaluation")
        .filter_map(|e| e["iteration"].as_u64())
        .collect();
    let saved = cycle(home.path());
    assert!(!evaluated.is_empty());
    assert!(
        evaluated
            .iter()
            .all(|i| *i <= u64::from(saved.completed_iterations)),
        "printed {evaluated:?}, saved {}",
        saved.completed_iterations
    );
    assert_eq!(saved.evaluations.len() as u32, saved.completed_iterations);
    assert!(saved.is_interrupted(), "kept active, no outcome: {saved:?}");
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some("run_ended".into())
    );

    // A new prompt would overwrite it: refused, and the state is untouched.
    let out = huddle(
        home.path(),
        &["run", "--group", &team, "--model", "sim/x", "Another task"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let why = text(&out.stderr);
    assert!(
        why.contains("--resume") && why.contains("--discard-interrupted"),
        "{why}"
    );
    assert_eq!(cycle(home.path()), saved);

    // Resume: the next iteration, the same goal, the earlier evaluations kept.
    let out = huddle(home.path(), &["run", "--group", &team, "--resume", "--events"]);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", text(&out.stderr));
    let resumed = ndjson(&out);
    // It says where the earlier run left the cycle (what a TUI's cycle panel counts from).
    let said = resumed
        .iter()
        .find(|e| e["event"] == "run_resumed")
        .expect("run_resumed");
    assert_eq!(
        said["cycle"]["after"].as_u64(),
        Some(u64::from(saved.completed_iterations)),
        "{said}"
    );
    assert_eq!(
        said["cycle"]["usage"]["input_tokens"], saved.usage.input_tokens,
        "{said}"
    );
    let first = resumed
        .iter()
        .find(|e| e["event"] == "iteration_started")
        .expect("an iteration");
    assert_eq!(
        first["iteration"].as_u64(),
        Some(u64::from(saved.completed_iterations) + 1)
    );
    let done = cycle(home.path());
    assert_eq!(done.goal, saved.goal);
    assert!(done.outcome.is_some() && !done.active);
    assert_eq!(done.evaluations[..saved.evaluations.len()], saved.evaluations[..]);

    // Nothing left to resume.
    let out = huddle(home.path(), &["run", "--group", &team, "--resume"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no interrupted run"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn sighup_exits_129_and_discarding_starts_over() {
    let home = tempfile::tempdir().expect("home");
    let (code, _) = signal_after_first_evaluation(home.path(), libc::SIGHUP);
    let team = super::headless::team_made_by_run(home.path(), TEAM);
    assert_eq!(code, Some(129));
    assert!(cycle(home.path()).is_interrupted());
    let out = huddle(
        home.path(),
        &[
            "run",
            "--group",
            &team,
            "--model",
            "sim/x",
            "--discard-interrupted",
            "--events",
            "Fresh task",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", text(&out.stderr));
    let events = ndjson(&out);
    let first = events
        .iter()
        .find(|e| e["event"] == "iteration_started")
        .expect("an iteration");
    assert_eq!(first["iteration"], 1, "started over");
    let done = cycle(home.path());
    assert_eq!(done.goal, "Fresh task");
    assert!(done.outcome.is_some_and(|o| o != CycleOutcome::Cancelled));
}

/// The outside reliability run's case: SIGKILL right after an iteration is reported, again and
/// again; every reported iteration is on disk and `--resume` goes on from it.
#[test]
fn kill_9_after_reported_iterations_loses_none_and_resumes_headlessly() {
    let home = tempfile::tempdir().expect("home");
    let (code, events) = signal_after_first_evaluation(home.path(), libc::SIGKILL);
    let team = super::headless::team_made_by_run(home.path(), TEAM);
    assert_eq!(code, None, "killed");
    fn evaluated(events: &[Value]) -> impl Iterator<Item = u64> + '_ {
        events
            .iter()
            .filter(|e| e["event"] == "evaluation")
            .filter_map(|e| e["iteration"].as_u64())
    }
    let mut reported: Vec<u64> = evaluated(&events).collect();
    for _ in 0..2 {
        let saved = cycle(home.path());
        assert!(saved.is_interrupted(), "{saved:?}");
        let on_disk: Vec<u64> = saved.evaluations.iter().map(|e| u64::from(e.iteration)).collect();
        for i in &reported {
            assert!(
                on_disk.contains(i),
                "iteration {i} was reported but is not on disk: {on_disk:?}"
            );
        }
        if saved.completed_iterations >= saved.max_iterations {
            break;
        }
        let (code, events) = signal_after_evaluation(
            home.path(),
            &["run", "--group", &team, "--resume", "--events"],
            libc::SIGKILL,
        );
        reported.extend(evaluated(&events));
        if code.is_some() {
            // It finished before the kill landed.
            break;
        }
    }
    let saved = cycle(home.path());
    let on_disk: Vec<u64> = saved.evaluations.iter().map(|e| u64::from(e.iteration)).collect();
    for i in &reported {
        assert!(
            on_disk.contains(i),
            "iteration {i} was reported but is not on disk: {on_disk:?}"
        );
    }
    // Iterations are numbered without gaps across the kills.
    assert_eq!(on_disk, (1..=on_disk.len() as u64).collect::<Vec<_>>());
}
