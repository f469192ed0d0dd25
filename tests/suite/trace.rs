//! `huddle trace` as a user runs it: the real binary on run files written by hand (a nested
//! dispatch run, a crashed run) and on runs the sim played.

use std::path::Path;

use serde_json::{Value, json};

use huddle::model::{Group, GroupKind, Organization};
use huddle::store::{DataDirLock, OrganizationFile};

use super::headless::{huddle, team_made_by_run, text};

const DISPATCH_RUN: &str = "20261124T060000000Z-d15a7c00";
const CRASHED_RUN: &str = "20261124T070000000Z-c4a5ed00";

/// A data dir with one team group, `Incidents`; its id.
fn home_with_group(home: &Path) -> String {
    add_group(home, "Incidents")
}

/// A team group added to the data dir's organization; its id.
fn add_group(home: &Path, name: &str) -> String {
    let file = OrganizationFile::new(home.join("organization.json"));
    let mut org: Organization = file.inspect().unwrap().unwrap_or_default();
    let group = Group::new(name, GroupKind::Team);
    let id = group.id.clone();
    org.groups.push(group);
    file.save(&org).unwrap();
    id
}

/// One run file line, as the engine writes it: the record's time, the envelope (ids, the
/// execution tag flattened), the event's name and fields.
fn line(
    group_id: &str,
    run: &str,
    secs: u32,
    event: &str,
    exec: Option<(&str, Option<&str>)>,
    fields: Value,
) -> String {
    let mut v = json!({
        "at": format!("2026-11-24T06:00:{secs:02}Z"),
        "group_id": group_id,
        "group": "Incidents",
        "run_id": run,
        "event": event,
    });
    let obj = v.as_object_mut().unwrap();
    if let Some((id, parent)) = exec {
        obj.insert("execution_id".into(), json!(id));
        if let Some(p) = parent {
            obj.insert("parent_execution_id".into(), json!(p));
        }
    }
    if let Value::Object(extra) = fields {
        obj.extend(extra);
    }
    v.to_string()
}

fn write_run(home: &Path, group_id: &str, run: &str, lines: &[String]) {
    let dir = home.join("runs").join(group_id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(dir.join(format!("{run}.jsonl")), text).unwrap();
}

fn started(kind: &str, member: &str, task: &str) -> Value {
    json!({"kind": kind, "member": member, "session_id": format!("sid-{member}"), "task": task})
}

fn finished(
    kind: &str,
    member: &str,
    status: &str,
    ms: u64,
    tokens: u64,
    result: Option<&str>,
    error: Option<&str>,
) -> Value {
    let mut v = json!({"kind": kind, "member": member, "status": status, "duration_ms": ms, "tokens": tokens, "tool_calls": 0});
    if let Some(r) = result {
        v["result"] = json!(r);
    }
    if let Some(e) = error {
        v["error"] = json!(e);
    }
    v
}

fn tool(member: &str, call: &str, name: &str) -> Value {
    json!({"session_id": format!("sid-{member}"), "session": member, "generation": 1, "call_id": call, "name": name, "arguments": "{}"})
}

fn tool_done(member: &str, call: &str, name: &str, ok: bool, first_line: &str) -> Value {
    json!({"session_id": format!("sid-{member}"), "session": member, "generation": 1, "call_id": call, "name": name,
           "ok": ok, "duration_ms": 40, "size": 10, "first_line": first_line})
}

/// How a dispatch run's file opens: the run, its mode, the orchestrator's execution (exec-1).
fn opening(g: &str, r: &str) -> Vec<String> {
    let key = json!({"key": {"kind": "team", "group_id": g}});
    vec![
        line(g, r, 0, "run_started", None, key),
        line(
            g,
            r,
            0,
            "cycle_started",
            None,
            json!({"mode": "dispatch", "max_iterations": 10}),
        ),
        line(
            g,
            r,
            0,
            "execution_started",
            Some(("exec-1", None)),
            started("orchestrator", "lead", "Why is checkout slow?"),
        ),
    ]
}

/// Orchestrator exec-1 dispatches logs (exec-2, two tool calls), metrics (exec-3, cancelled)
/// and deploys (exec-4, queued first); then asks logs a clarification (exec-5).
fn dispatch_run(home: &Path, g: &str) {
    let r = DISPATCH_RUN;
    let o = Some(("exec-1", None));
    let sub = |id| Some((id, Some("exec-1")));
    let mut lines = opening(g, r);
    lines.extend([
        line(g, r, 1, "tool_call", o, tool("lead", "d1", "dispatch_agent")),
        line(g, r, 1, "tool_result", o, {
            let mut v = tool_done(
                "lead",
                "d1",
                "dispatch_agent",
                true,
                r#"{"execution_id":"exec-2","status":"accepted"}"#,
            );
            v["duration_ms"] = json!(0);
            v
        }),
        line(
            g,
            r,
            1,
            "execution_started",
            sub("exec-2"),
            started("sub_agent", "logs", "Read the checkout logs"),
        ),
        line(
            g,
            r,
            1,
            "execution_started",
            sub("exec-3"),
            started("sub_agent", "metrics", "Check p99 latency"),
        ),
        {
            let mut v = started("sub_agent", "deploys", "List today's deploys");
            v["queued"] = json!(true);
            line(g, r, 1, "execution_started", sub("exec-4"), v)
        },
        line(
            g,
            r,
            2,
            "tool_call",
            sub("exec-2"),
            tool("logs", "c1", "logs.search"),
        ),
        line(
            g,
            r,
            3,
            "tool_result",
            sub("exec-2"),
            tool_done("logs", "c1", "logs.search", true, "412 timeouts\nmore"),
        ),
        line(
            g,
            r,
            3,
            "tool_call",
            sub("exec-2"),
            tool("logs", "c2", "logs.tail"),
        ),
        line(
            g,
            r,
            4,
            "tool_result",
            sub("exec-2"),
            tool_done("logs", "c2", "logs.tail", false, "permission denied"),
        ),
        line(
            g,
            r,
            5,
            "execution_finished",
            sub("exec-2"),
            finished(
                "sub_agent",
                "logs",
                "completed",
                4000,
                900,
                Some("DB pool exhausted at 10:02\ndetails"),
                None,
            ),
        ),
        line(g, r, 5, "execution_running", sub("exec-4"), json!({})),
        line(
            g,
            r,
            6,
            "execution_finished",
            sub("exec-3"),
            finished(
                "sub_agent",
                "metrics",
                "cancelled",
                5000,
                120,
                None,
                Some("cancelled by the orchestrator"),
            ),
        ),
        line(
            g,
            r,
            8,
            "execution_finished",
            sub("exec-4"),
            finished(
                "sub_agent",
                "deploys",
                "completed",
                3000,
                300,
                Some("v2.3 deployed at 09:58"),
                None,
            ),
        ),
        line(
            g,
            r,
            9,
            "execution_started",
            Some(("exec-5", Some("exec-2"))),
            started("clarification", "logs", "Which pool?"),
        ),
        line(
            g,
            r,
            10,
            "execution_finished",
            Some(("exec-5", Some("exec-2"))),
            finished(
                "clarification",
                "logs",
                "completed",
                1000,
                80,
                Some("The orders pool"),
                None,
            ),
        ),
        line(
            g,
            r,
            12,
            "execution_finished",
            o,
            finished(
                "orchestrator",
                "lead",
                "completed",
                12000,
                1500,
                Some("Root cause: the orders DB pool"),
                None,
            ),
        ),
        line(
            g,
            r,
            12,
            "run_result",
            None,
            json!({"text": "Root cause: the orders DB pool"}),
        ),
        line(
            g,
            r,
            12,
            "run_ended",
            None,
            json!({"key": {"kind": "team", "group_id": g}, "outcome": "completed", "iterations": 1}),
        ),
    ]);
    write_run(home, g, r, &lines);
}

/// A run whose process died: exec-2 finished, exec-1 and exec-3 never did, the last line is torn.
fn crashed_run(home: &Path, g: &str) {
    let r = CRASHED_RUN;
    let mut lines = opening(g, r);
    lines.extend([
        line(
            g,
            r,
            1,
            "execution_started",
            Some(("exec-2", Some("exec-1"))),
            started("sub_agent", "logs", "Read the logs"),
        ),
        line(
            g,
            r,
            1,
            "execution_started",
            Some(("exec-3", Some("exec-1"))),
            started("sub_agent", "metrics", "Check latency"),
        ),
        line(
            g,
            r,
            3,
            "execution_finished",
            Some(("exec-2", Some("exec-1"))),
            finished(
                "sub_agent",
                "logs",
                "completed",
                2000,
                50,
                Some("nothing odd"),
                None,
            ),
        ),
    ]);
    lines.push(r#"{"at":"2026-11-24T06:00:04Z","group_id":"#.to_string());
    write_run(home, g, r, &lines);
}

fn trace(home: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["trace"];
    all.extend_from_slice(args);
    let out = huddle(home, &all);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn find<'a>(nodes: &'a Value, id: &str) -> &'a Value {
    fn walk<'a>(v: &'a Value, id: &str) -> Option<&'a Value> {
        v.as_array()?.iter().find_map(|n| {
            if n["id"] == id {
                Some(n)
            } else {
                walk(&n["children"], id)
            }
        })
    }
    walk(nodes, id).unwrap_or_else(|| panic!("no node {id} in {nodes:#}"))
}

#[test]
fn a_nested_dispatch_run_prints_as_a_tree() {
    let home = tempfile::tempdir().unwrap();
    let g = home_with_group(home.path());
    dispatch_run(home.path(), &g);
    let (code, out, err) = trace(home.path(), &["--group", "incidents", "--run", "20261124T06"]);
    assert_eq!(code, Some(0), "{err}");
    let expected = r#"Incidents · run 20261124T060000000Z-d15a7c00 · dispatch · completed · 12.0s · 2900 tokens
  result: Root cause: the orders DB pool
└── exec-1 lead (orchestrator) · ✓ completed 12.0s · 1,500 tok — Root cause: the orders DB pool
    ├── exec-2 logs · ✓ completed 4.0s · 900 tok — DB pool exhausted at 10:02
    │   ├── ✓ logs.search 40ms: 412 timeouts
    │   ├── ✗ logs.tail 40ms: permission denied
    │   └── exec-5 logs (clarification) · ✓ completed 1.0s · 80 tok — The orders pool
    ├── exec-3 metrics · ⊘ cancelled 5.0s · 120 tok — cancelled by the orchestrator
    └── exec-4 deploys · ✓ completed 3.0s · 300 tok — v2.3 deployed at 09:58
"#;
    assert_eq!(out, expected, "\n{out}");

    let (code, out, err) = trace(home.path(), &["--group", "Incidents", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"]["run_id"], DISPATCH_RUN);
    assert_eq!(v["run"]["state"], "ended");
    assert_eq!(v["run"]["mode"], "dispatch");
    assert_eq!(v["run"]["tokens"], 2900);
    let roots = v["children"].as_array().unwrap();
    assert_eq!(roots.len(), 1);
    let subs: Vec<&str> = roots[0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(subs, ["exec-2", "exec-3", "exec-4"]);
    let c = &v["children"];
    assert_eq!(find(c, "exec-3")["status"], "cancelled");
    assert_eq!(find(c, "exec-4")["queued"], true);
    assert_eq!(find(c, "exec-5")["kind"], "clarification");
    assert_eq!(find(c, "exec-5")["parent"], "exec-2");
    let tools = find(c, "exec-2")["items"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(
        (tools[1]["name"].as_str(), tools[1]["ok"].as_bool()),
        (Some("logs.tail"), Some(false))
    );
    assert_eq!(find(c, "exec-2")["started"], "2026-11-24T06:00:01Z");
    assert_eq!(find(c, "exec-2")["duration_ms"], 4000);
}

#[test]
fn a_crashed_run_reads_as_a_tree_with_interrupted_executions() {
    let home = tempfile::tempdir().unwrap();
    let g = home_with_group(home.path());
    dispatch_run(home.path(), &g);
    crashed_run(home.path(), &g);
    // No --group and no --run: the most recent run (the crashed one).
    let (code, out, err) = trace(home.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with(&format!(
            "Incidents · run {CRASHED_RUN} · dispatch · interrupted (no end recorded)"
        )),
        "{out}"
    );
    assert!(
        out.contains("(1 unreadable line of the run file skipped)"),
        "{out}"
    );
    assert!(
        out.contains("└── exec-1 lead (orchestrator) · interrupted — task: Why is checkout slow?"),
        "{out}"
    );
    assert!(
        out.contains("    ├── exec-2 logs · ✓ completed 2.0s · 50 tok — nothing odd"),
        "{out}"
    );
    assert!(
        out.contains("    └── exec-3 metrics · interrupted — task: Check latency"),
        "{out}"
    );

    let (code, out, _) = trace(home.path(), &["--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"]["state"], "interrupted");
    assert_eq!(v["skipped_lines"], 1);
    assert_eq!(find(&v["children"], "exec-1")["status"], "interrupted");
    assert_eq!(find(&v["children"], "exec-3")["status"], "interrupted");
    assert_eq!(find(&v["children"], "exec-2")["status"], "completed");
}

#[test]
fn a_run_without_its_end_next_to_an_open_huddle_is_in_progress() {
    let home = tempfile::tempdir().unwrap();
    let g = home_with_group(home.path());
    crashed_run(home.path(), &g);
    // What an open huddle holds; the run may still be going.
    let _lock = DataDirLock::acquire(&home.path().join("huddle.lock")).unwrap();
    let (code, out, err) = trace(home.path(), &["--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"]["state"], "running");
    assert_eq!(find(&v["children"], "exec-3")["status"], "running");
    let (_, out, _) = trace(home.path(), &[]);
    assert!(out.contains(" · in progress · "), "{out}");
}

#[test]
fn a_mode_without_executions_shows_its_member_turns() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Research Panel",
            "--model",
            "sim/x",
            "Compare two caching strategies",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let team = team_made_by_run(home.path(), "Research Panel");
    let (code, out, err) = trace(home.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with(&format!("{team} · run ")), "{out}");
    assert!(out.contains(" · broadcast · completed · "), "{out}");
    let turns: Vec<&str> = out.lines().filter(|l| l.contains(" turn-")).collect();
    assert_eq!(turns.len(), 3, "one node per member turn:\n{out}");
    assert!(
        turns
            .iter()
            .all(|l| l.contains(" completed ") && l.contains(" tok — ")),
        "{out}"
    );

    let (code, out, _) = trace(home.path(), &["--group", &team, "--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    let nodes = v["children"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert!(
        nodes
            .iter()
            .all(|n| n["kind"] == "turn" && n["status"] == "completed")
    );
    let total: u64 = nodes.iter().map(|n| n["tokens"].as_u64().unwrap()).sum();
    assert!(total > 0);
    assert_eq!(v["run"]["tokens"].as_u64(), Some(total));
}

#[test]
fn unknown_groups_and_runs_are_usage_errors_that_say_what_exists() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = trace(home.path(), &[]);
    assert_eq!(code, Some(2));
    assert!(out.is_empty());
    assert!(err.contains("no runs yet"), "{err}");

    let g = home_with_group(home.path());
    let (code, _, err) = trace(home.path(), &["--group", "Incidents"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("group `Incidents` has no runs yet"), "{err}");

    dispatch_run(home.path(), &g);
    crashed_run(home.path(), &g);
    let (code, _, err) = trace(home.path(), &["--group", "Incidnets"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no group named `Incidnets` (did you mean `Incidents`?)"),
        "{err}"
    );

    let (code, _, err) = trace(home.path(), &["--group", "Incidents", "--run", "2025"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "no run `2025` in group `Incidents` (the newest: {CRASHED_RUN}, {DISPATCH_RUN}"
        )),
        "{err}"
    );

    let (code, _, err) = trace(home.path(), &["--group", "Incidents", "--run", "20261124T0"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("`20261124T0` starts 2 runs in group `Incidents` ("),
        "{err}"
    );

    // Without --group, --run looks in every group.
    let ops = add_group(home.path(), "Ops");
    let ops_run = "20261124T100000000Z-0b500000";
    let key = json!({"key": {"kind": "team", "group_id": ops}});
    write_run(
        home.path(),
        &ops,
        ops_run,
        &[line(&ops, ops_run, 0, "run_started", None, key)],
    );
    let (code, out, err) = trace(home.path(), &["--run", "20261124T1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&format!("run {ops_run}")), "{out}");
    let (code, _, err) = trace(home.path(), &["--run", "20261124T"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("`20261124T` starts 3 runs in any group ("), "{err}");
    let (code, _, err) = trace(home.path(), &["--run", "nope"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "no run `nope` in any group (the newest: {ops_run}, {CRASHED_RUN}"
        )),
        "{err}"
    );

    // A run file that is a symbolic link is not followed.
    let dir = home.path().join("runs").join(&g);
    let outside = home.path().join("outside.jsonl");
    std::fs::write(&outside, "{}\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("20261124T080000000Z-11111111.jsonl")).unwrap();
    let (code, _, err) = trace(home.path(), &["--run", "20261124T08"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no run `20261124T08` in any group"), "{err}");
}

#[test]
fn a_dispatch_run_the_sim_played_traces_its_sub_agents_under_the_orchestrator() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Incident Investigation",
            "--model",
            "sim/x",
            "Checkout is slow since 10:00",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let team = team_made_by_run(home.path(), "Incident Investigation");
    let (code, out, err) = trace(home.path(), &["--group", &team, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"]["mode"], "dispatch");
    assert_eq!(v["run"]["state"], "ended");
    let roots = v["children"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "one orchestrator at the root: {out}");
    assert_eq!(roots[0]["kind"], "orchestrator");
    assert_eq!(roots[0]["status"], "completed");
    let subs = roots[0]["children"].as_array().unwrap();
    // The sim dispatches two, follows up on the first result, dispatches a sweep and cancels it
    // (unless the sweep beat the cancel to its end: then it completed).
    let statuses: Vec<(&str, &str)> = subs
        .iter()
        .map(|s| (s["kind"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses.len(), 4, "{out}");
    assert!(
        statuses[..3].iter().all(|&s| s == ("sub_agent", "completed")),
        "{out}"
    );
    assert!(
        statuses[3] == ("sub_agent", "cancelled") || statuses[3] == ("sub_agent", "completed"),
        "{out}"
    );
    assert!(subs.iter().all(|s| s["parent"] == roots[0]["id"]));
    let dispatches = roots[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["name"] == "dispatch_agent" && i["ok"] == true)
        .count();
    assert_eq!(dispatches, 4, "{out}");
    let tokens: u64 = std::iter::once(&roots[0])
        .chain(subs)
        .map(|n| n["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(v["run"]["tokens"].as_u64(), Some(tokens));

    let (code, out, _) = trace(home.path(), &[]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("└── exec-1 orchestrator (orchestrator) · ✓ completed"),
        "{out}"
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("    ├── exec-") || l.starts_with("    └── exec-"))
            .count(),
        4,
        "{out}"
    );
    // A dispatch that went through is said by its sub-agent's node (the JSON keeps the call).
    assert!(!out.contains("✓ dispatch_agent "), "{out}");
}

/// Review 22 finding 4, issue 28 item 3: a flow's trace says a handoff once (its hop, not the
/// `handoff_to` call as well) and names member turns by handle, as `huddle run` does.
#[test]
fn a_flow_run_says_each_handoff_once_and_names_members_by_handle() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Help Desk Flow",
            "--model",
            "sim/x",
            "My invoice is wrong",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (code, out, err) = trace(home.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" dispatcher ⇒ billing (route"), "{out}");
    assert!(!out.contains("handoff_to"), "{out}");
    assert!(out.contains("├── turn-1 dispatcher · ✓ completed"), "{out}");
    assert!(!out.contains("help-desk-flow-"), "session names stay out: {out}");
    let (_, json, _) = trace(home.path(), &["--json"]);
    assert!(
        json.contains("\"name\": \"handoff_to\""),
        "the JSON keeps the call: {json}"
    );
}

/// A team run as the engine writes it: supervisor exec-1, member and supervisor turns under it,
/// broadcasts, the supervisor's sum of tokens.
#[test]
fn a_team_run_shows_member_turns_and_their_broadcasts_under_the_supervisor() {
    let home = tempfile::tempdir().unwrap();
    let g = home_with_group(home.path());
    let r = "20261124T090000000Z-7ea40000";
    let member = |id: &'static str| Some((id, Some("exec-1")));
    let turn_ended = |member: &str, tokens: u64| {
        json!({"session_id": format!("sid-{member}"), "session": member, "generation": 1, "success": true,
               "interrupted": false, "duration_ms": 1000, "usage": {"input_tokens": tokens, "output_tokens": 0}, "error": null})
    };
    let broadcast = |exec: &'static str, from: &str, secs: u32, message: &str, last: bool| {
        line(
            &g,
            r,
            secs,
            "team_broadcast",
            member(exec),
            json!({"from": from, "from_id": format!("sid-{from}"), "kind": "update", "message": message,
                   "turn": 1, "last": last, "sent_at": format!("2026-11-24T06:00:{secs:02}.5Z")}),
        )
    };
    let lines = [
        line(
            &g,
            r,
            0,
            "cycle_started",
            None,
            json!({"mode": "team", "max_iterations": 12}),
        ),
        line(
            &g,
            r,
            0,
            "execution_started",
            Some(("exec-1", None)),
            started("supervisor", "chair", "Rust for billing?"),
        ),
        line(
            &g,
            r,
            0,
            "execution_started",
            member("exec-2"),
            started("member_turn", "advocate", "turn 1"),
        ),
        line(
            &g,
            r,
            0,
            "execution_started",
            member("exec-3"),
            started("member_turn", "skeptic", "turn 1"),
        ),
        line(
            &g,
            r,
            1,
            "turn_finished",
            member("exec-2"),
            turn_ended("advocate", 100),
        ),
        broadcast("exec-2", "advocate", 1, "Safer money code\nmore", true),
        line(
            &g,
            r,
            1,
            "execution_finished",
            member("exec-2"),
            finished(
                "member_turn",
                "advocate",
                "completed",
                1000,
                100,
                Some("Shared."),
                None,
            ),
        ),
        line(
            &g,
            r,
            2,
            "turn_finished",
            member("exec-3"),
            turn_ended("skeptic", 50),
        ),
        broadcast("exec-3", "skeptic", 2, "Hiring cost", true),
        line(
            &g,
            r,
            2,
            "execution_finished",
            member("exec-3"),
            finished(
                "member_turn",
                "skeptic",
                "completed",
                2000,
                50,
                Some("Shared."),
                None,
            ),
        ),
        line(
            &g,
            r,
            2,
            "execution_started",
            member("exec-4"),
            started("supervisor_turn", "chair", "cycle 1"),
        ),
        line(
            &g,
            r,
            3,
            "turn_finished",
            member("exec-4"),
            turn_ended("chair", 30),
        ),
        line(
            &g,
            r,
            3,
            "execution_finished",
            member("exec-4"),
            finished(
                "supervisor_turn",
                "chair",
                "completed",
                1000,
                30,
                Some("Adopt it for new services"),
                None,
            ),
        ),
        line(
            &g,
            r,
            3,
            "execution_finished",
            Some(("exec-1", None)),
            finished(
                "supervisor",
                "chair",
                "completed",
                3000,
                180,
                Some("Adopt it for new services"),
                None,
            ),
        ),
        line(
            &g,
            r,
            3,
            "run_ended",
            None,
            json!({"key": {"kind": "team", "group_id": g}, "outcome": "completed", "iterations": 1}),
        ),
    ];
    write_run(home.path(), &g, r, &lines);
    let (code, out, err) = trace(home.path(), &["--group", "Incidents"]);
    assert_eq!(code, Some(0), "{err}");
    let expected = "\
Incidents · run 20261124T090000000Z-7ea40000 · team · completed · 3.0s · 180 tokens
└── exec-1 chair (supervisor) · ✓ completed 3.0s · 180 tok — Adopt it for new services
    ├── exec-2 advocate · ✓ completed 1.0s · 100 tok — Shared.
    │   └── 📣 advocate (turn 1, update, final): Safer money code
    ├── exec-3 skeptic · ✓ completed 2.0s · 50 tok — Shared.
    │   └── 📣 skeptic (turn 1, update, final): Hiring cost
    └── exec-4 chair (supervisor turn) · ✓ completed 1.0s · 30 tok — Adopt it for new services
";
    assert_eq!(out, expected, "\n{out}");
    let (_, out, _) = trace(home.path(), &["--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["skipped_lines"], 0);
    let broadcast = &find(&v["children"], "exec-3")["items"][0];
    assert_eq!(broadcast["item"], "broadcast");
    assert_eq!(broadcast["at"], "2026-11-24T06:00:02.500Z");
}

#[test]
fn a_team_run_the_sim_played_traces_member_turns_and_broadcasts() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Deliberation Panel",
            "--model",
            "sim/x",
            "Should billing move to Rust?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (code, out, err) = trace(home.path(), &["--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"]["mode"], "team");
    assert_eq!(v["run"]["state"], "ended");
    assert_eq!(v["skipped_lines"], 0, "every broadcast line reads back");
    let roots = v["children"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{out}");
    assert_eq!(roots[0]["kind"], "supervisor");
    let turns = roots[0]["children"].as_array().unwrap();
    // A member still deliberating when the supervisor answers is cancelled.
    assert!(
        turns
            .iter()
            .all(|t| t["status"] == "completed" || t["status"] == "cancelled"),
        "{out}"
    );
    let members = turns.iter().filter(|t| t["kind"] == "member_turn").count();
    let supervisor_turns = turns.iter().filter(|t| t["kind"] == "supervisor_turn").count();
    assert!(members >= 3 && supervisor_turns >= 1, "{out}");
    // Member turns broadcast; a member's last one (if it got there) is final.
    let broadcasts: Vec<&Value> = turns
        .iter()
        .flat_map(|t| t["items"].as_array().into_iter().flatten())
        .filter(|i| i["item"] == "broadcast")
        .collect();
    assert!(broadcasts.len() >= members, "{out}");
    let finals = broadcasts.iter().filter(|b| b["last"] == true).count();
    assert!((1..=3).contains(&finals), "{out}");
    // The supervisor's execution sums the run: the run's tokens are not that sum twice.
    assert_eq!(v["run"]["tokens"], roots[0]["tokens"], "{out}");

    let (_, out, _) = trace(home.path(), &[]);
    assert!(out.contains("└── exec-1 "), "{out}");
    assert!(out.contains(" (supervisor) · ✓ completed"), "{out}");
    assert!(out.contains(", update, final): "), "{out}");
    assert!(
        !out.contains("✓ team_broadcast "),
        "shown as its broadcast: {out}"
    );
}
