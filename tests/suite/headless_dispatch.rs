//! `huddle run` with a dispatch team on the sim, the real binary: the multi-phase play is
//! printed one line per execution, `--events` nests the executions, and a run killed mid-way
//! leaves a readable run file and a team that runs again.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::headless::{executions_under_root, huddle, second_run_events, team_made_by_run, text};

const PRESET: &str = "Incident Investigation";

#[test]
fn the_incident_team_dispatches_reacts_cancels_and_concludes_on_the_sim() {
    let home = tempfile::tempdir().unwrap();
    let args = ["run", "--preset", PRESET, "--model", "sim/slow-100ms"];
    let out = huddle(
        home.path(),
        &[&args[..], &["Alert: checkout latency doubled"]].concat(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("dispatch run"), "{stderr}");
    for line in [
        "⇢ exec-2 log-analyzer dispatched: ",
        "⇢ exec-3 metrics-checker dispatched: ",
        "⇢ exec-4 deploy-historian dispatched: Follow up on what",
        "⇢ exec-5 k8s-inspector dispatched: ",
        "✓ cancel_agent ",
        "⇠ exec-5 k8s-inspector · ⊘ cancelled",
        "⇠ exec-4 deploy-historian · ✓ completed",
        "Sub-agents: 4 dispatched — 3 completed, 1 cancelled",
    ] {
        assert!(stderr.contains(line), "missing `{line}`: {stderr}");
    }
    assert!(
        !stderr.contains("dispatch_agent("),
        "dispatches are printed as executions"
    );
    assert!(stdout.contains("## Findings"), "{stdout}");
    assert!(
        stdout.contains("**deploy-historian**"),
        "the follow-up's result is used"
    );

    // Again on the same team with `--events`: every execution nests under the orchestrator's.
    let events = second_run_events(home.path(), PRESET, "Alert: again");
    let (_, children) = executions_under_root(&events, "orchestrator");
    assert!(children.len() >= 3);
    assert!(children.iter().all(|e| e["kind"] == "sub_agent"));
    let finished = events
        .iter()
        .filter(|e| e["event"] == "execution_finished")
        .count();
    assert_eq!(finished, children.len() + 1, "every execution ends");
    assert!(
        events.iter().any(|e| e["event"] == "turn_input"
            && e["text"]
                .as_str()
                .unwrap_or("")
                .starts_with("[Sub-agent completed]")),
        "pushed results are events"
    );
}

/// The run files of `home`, every line of each.
fn run_lines(home: &std::path::Path) -> Vec<String> {
    let mut lines = Vec::new();
    for group in std::fs::read_dir(home.join("runs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for file in std::fs::read_dir(group.path()).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(file.path()).unwrap_or_default();
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines
}

#[test]
fn a_run_killed_mid_dispatch_leaves_a_readable_run_file_and_a_team_that_runs_again() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args([
            "run",
            "--preset",
            PRESET,
            "--model",
            "sim/slow-2s",
            "--events",
            "Alert: disk full",
        ])
        .env("HUDDLE_HOME", home.path())
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .current_dir(home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start huddle");
    let stdout = child.stdout.take().expect("stdout");
    for line in BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.expect("a line")).expect("NDJSON");
        if event["event"] == "execution_started" && event["kind"] == "sub_agent" {
            // The crash: the host that runs it (its pid is in the lock file), then the front
            // end.
            let host = huddle::store::DataDirLock::holder(&home.path().join("huddle.lock"))
                .and_then(|p| p.parse::<i32>().ok())
                .expect("the host");
            // SAFETY: plain kill(2) on the host our child started and on our own child.
            unsafe {
                libc::kill(host, libc::SIGKILL);
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
            break;
        }
    }
    let _ = child.wait();
    super::headless::wait_for_host_exit(home.path());
    let lines = run_lines(home.path());
    assert!(!lines.is_empty(), "the run file is there");
    let readable: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(readable.len() + 1 >= lines.len(), "at most a torn last line");
    assert!(
        readable
            .iter()
            .any(|e| e["event"] == "execution_started" && e["kind"] == "orchestrator")
    );
    assert!(
        !readable.iter().any(|e| e["event"] == "run_ended"),
        "it never ended"
    );

    // Nothing claims the team is still running: it is left interrupted (a plain run is refused
    // and names it), and discarding that, it runs again, to its end.
    let team = team_made_by_run(home.path(), PRESET);
    let refused = huddle(
        home.path(),
        &["run", "--group", &team, "--model", "sim/x", "Alert: again"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("--resume"),
        "{}",
        text(&refused.stderr)
    );
    let out = huddle(
        home.path(),
        &[
            "run",
            "--group",
            &team,
            "--model",
            "sim/x",
            "--discard-interrupted",
            "Alert: again",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("## Findings"),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_second_team_from_the_same_preset_still_calls_its_members_by_their_preset_names() {
    let home = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--preset",
        PRESET,
        "--model",
        "sim/x",
        "--events",
        "Alert: one",
    ];
    for _ in 0..2 {
        let out = huddle(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let members: Vec<String> = super::headless::ndjson(&out)
            .iter()
            .filter(|e| e["event"] == "execution_started" && e["kind"] == "sub_agent")
            .map(|e| e["member"].as_str().unwrap_or_default().to_string())
            .collect();
        assert!(members.contains(&"log-analyzer".to_string()), "{members:?}");
        assert!(members.iter().all(|m| !m.ends_with("-2")), "{members:?}");
    }
    // The second team's sessions had to be named apart from the first's.
    let org = huddle::store::OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    assert!(org.sessions.iter().any(|s| s.name.ends_with("log-analyzer-2")));
}
