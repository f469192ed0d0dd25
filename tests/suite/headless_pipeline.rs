//! `huddle run --preset <pipeline>` with the real binary on the sim: one request walks the
//! Support Desk (with its one return from review to handling) to its end; `--group` continues
//! the same conversation with the member that holds it.

use huddle::store::OrganizationFile;

use super::headless::{huddle, ndjson, team_made_by_run, text};

#[test]
fn the_support_desk_runs_a_request_to_its_end_and_continues_the_conversation() {
    let home = tempfile::tempdir().unwrap();
    let args = ["run", "--preset", "Support Desk", "--model", "sim/x"];
    let out = huddle(
        home.path(),
        &[&args[..], &["Hello, my account is locked"]].concat(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("pipeline run"), "{stderr}");
    for line in [
        "phase start → intake (triage): the first stage",
        "triage ⇒ handler: ready for the next stage",
        "reviewer ⇒ handler: needs another pass",
        "phase review → handling (handler): needs another pass",
        "handler ⇒ reviewer: revised as asked",
        "phase review → resolution (resolver)",
    ] {
        assert!(stderr.contains(line), "missing `{line}`: {stderr}");
    }
    assert!(!stdout.trim().is_empty(), "the resolver's answer on stdout");
    let team = team_made_by_run(home.path(), "Support Desk");
    let state = |home: &std::path::Path| {
        let org = OrganizationFile::new(home.join("organization.json"))
            .inspect()
            .unwrap()
            .unwrap();
        let group = org.groups.iter().find(|g| g.name == team).unwrap();
        group.state.pipeline.clone().expect("the state is stored")
    };
    let first = state(home.path());
    assert_eq!(first.phase.as_deref(), Some("resolution"));
    assert_eq!(first.handoff_count, 5);
    assert_eq!(first.history.len(), 6);

    let out = huddle(
        home.path(),
        &[
            "run",
            "--group",
            &team,
            "--model",
            "sim/x",
            "--events",
            "Thanks! One more question",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = ndjson(&out);
    assert!(
        !events.iter().any(|v| v["event"] == "phase_transition"),
        "the resolver keeps the conversation"
    );
    let after = state(home.path());
    assert_eq!(after.history, first.history);
    assert_eq!(after.active, first.active);
}
