//! `huddle run` with a deliberation team (mode `team`) on the sim, the real binary: one line per
//! broadcast and the supervisor's answer on stdout; `--events` has every broadcast inside its
//! turn's execution, nested under the supervisor's.

use serde_json::Value;

use super::headless::{executions_under_root, huddle, second_run_events, text};

const PRESET: &str = "Deliberation Panel";

#[test]
fn the_panel_deliberates_and_the_chair_answers_on_the_sim() {
    let home = tempfile::tempdir().unwrap();
    let args = ["run", "--preset", PRESET, "--model", "sim/slow-100ms"];
    let out = huddle(
        home.path(),
        &[&args[..], &["Should we adopt a four-day week?"]].concat(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("team run"), "{stderr}");
    for line in [
        "📣 advocate (turn 1, update): As advocate, on \"Should we adopt a four-day week?\"",
        "📣 skeptic (turn 1, update): As skeptic,",
        "📣 pragmatist (turn 1, update): As pragmatist,",
        "📢 orchestrator (supervisor, turn 1, update): Thanks,",
    ] {
        assert!(stderr.contains(line), "missing `{line}`: {stderr}");
    }
    assert_eq!(
        stderr.matches(", final): ").count(),
        3,
        "every member leaves: {stderr}"
    );
    assert!(
        !stderr.contains("team_broadcast("),
        "broadcasts are printed as such"
    );
    assert!(stdout.starts_with("## Final answer"), "{stdout}");
    assert!(stdout.contains("- **skeptic**: "), "{stdout}");

    // Again on the same team with `--events`: every turn nests under the supervisor's
    // execution and every broadcast is inside a turn.
    let events = second_run_events(home.path(), PRESET, "Should we hire?");
    let (root, children) = executions_under_root(&events, "supervisor");
    let turns: Vec<&str> = children
        .iter()
        .map(|e| {
            assert!(
                e["kind"] == "member_turn" || e["kind"] == "supervisor_turn",
                "{e}"
            );
            e["execution_id"].as_str().unwrap()
        })
        .collect();
    assert!(
        turns.len() >= 5,
        "three members and two supervisor turns at least"
    );
    let finished = events
        .iter()
        .filter(|e| e["event"] == "execution_finished")
        .count();
    assert_eq!(finished, children.len() + 1, "every execution ends");
    let broadcasts: Vec<&Value> = events.iter().filter(|e| e["event"] == "team_broadcast").collect();
    assert!(broadcasts.len() >= 7, "{broadcasts:?}");
    for b in &broadcasts {
        let id = b["execution_id"].as_str().expect("a broadcast's execution");
        assert!(turns.contains(&id), "{b}");
        assert_eq!(b["parent_execution_id"], root.as_str());
        assert!(
            b["sent_at"].is_string() && b["turn"].is_u64() && b["kind"] == "update",
            "{b}"
        );
    }
    assert_eq!(broadcasts.iter().filter(|b| b["supervisor"] == true).count(), 1);
}
