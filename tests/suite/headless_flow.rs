//! `huddle run --preset <flow>` with the real binary on the sim: one request runs through the
//! router, the advisors and the handoff to its end, with a progress line per hop.

use huddle::store::OrganizationFile;

use super::headless::{huddle, ndjson, team_made_by_run, text};

#[test]
fn the_help_desk_flow_runs_one_request_to_its_end_on_the_sim() {
    let home = tempfile::tempdir().unwrap();
    let args = ["run", "--preset", "Help Desk Flow", "--model", "sim/x"];
    let out = huddle(
        home.path(),
        &[&args[..], &["My server returns error 500 after the deploy"]].concat(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("flow run"), "{stderr}");
    // The sim routes this request to the engineer (a hash of the request picks it).
    for line in [
        "dispatcher ⇒ engineer (route,",
        "✓ security advised engineer (",
        "✓ operations advised engineer (",
        "engineer → approver (handoff,",
        "✓ approver answered (",
    ] {
        assert!(stderr.contains(line), "missing `{line}`: {stderr}");
    }
    assert!(!stdout.trim().is_empty(), "the approver's answer on stdout");
    let org = OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    let team = team_made_by_run(home.path(), "Help Desk Flow");
    let group = org.groups.iter().find(|g| g.name == team).unwrap();
    let entry = group.settings.flow.entry.as_deref().expect("the entry is stored");
    let dispatcher = org.sessions.iter().find(|s| s.id == entry).unwrap();
    assert!(dispatcher.name.ends_with("dispatcher"), "{}", dispatcher.name);
    assert_eq!(dispatcher.flow.router.as_ref().unwrap().destinations.len(), 2);

    // The same team again (a new `--preset` run would make a second team, its members named
    // `dispatcher-2` and so on).
    let out = huddle(
        home.path(),
        &[
            "run",
            "--group",
            &team,
            "--model",
            "sim/x",
            "--events",
            "Refund my last invoice please",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hops: Vec<serde_json::Value> = ndjson(&out)
        .into_iter()
        .filter(|v| v["event"] == "flow_hop")
        .collect();
    assert!(!hops.is_empty());
    assert_eq!(hops[0]["from"], "dispatcher");
    assert_eq!(hops[0]["kind"], "route");
    assert!(
        hops.iter()
            .all(|h| h["tokens"].as_u64().is_some() && h["duration_ms"].is_u64())
    );
    assert_eq!(hops.last().unwrap()["kind"], "answer");
}
