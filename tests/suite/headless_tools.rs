//! Tools in `huddle run`: the real binary, a real MCP server (`mcp-server-time` from PyPI) with
//! `approval: ask`, a user preset whose sim workers use it. Without `--approve-tools` every
//! call is denied (said on stderr, an event in NDJSON, the model told why); with it the calls
//! run and their results reach the answers and the transcripts.

use std::path::Path;

use serde_json::Value;

use super::headless::huddle;
use super::mcp_servers::reference_server;

fn home_with_time_server(program: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "default_model: sim/default\nmcp_servers:\n  time:\n    command: [\"{}\"]\n",
            program.display()
        ),
    )
    .expect("config");
    std::fs::create_dir_all(home.path().join("presets")).expect("presets dir");
    std::fs::write(
        home.path().join("presets/clock.yaml"),
        "name: Clock Team\nmode: broadcast\nworkers:\n  - { name: one, tools: [time] }\n  - { name: two, tools: [time] }\n",
    )
    .expect("preset");
    home
}

fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

#[test]
fn huddle_run_denies_asking_tools_unless_told_to_approve_them() {
    let Some(program) = reference_server("HUDDLE_MCP_TIME", "mcp-server-time") else {
        return;
    };
    let home = home_with_time_server(&program);

    let out = huddle(
        home.path(),
        &["run", "--preset", "Clock Team", "What time is it?"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches(
                "denied: huddle run does not run tools that need approval unless --approve-tools is given"
            )
            .count(),
        2,
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("failed: denied: huddle run does not run tools"),
        "the models were told: {stdout}"
    );

    let out = huddle(
        home.path(),
        &[
            "run",
            "--group",
            &super::headless::team_made_by_run(home.path(), "Clock Team"),
            "--events",
            "And now?",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    let decided = named(&events, "tool_approval_decided");
    assert_eq!(decided.len(), 2, "{events:?}");
    for d in decided {
        assert_eq!(d["decision"], "deny");
        assert!(
            d["reason"]
                .as_str()
                .is_some_and(|r| r.contains("--approve-tools")),
            "{d}"
        );
        assert!(d["session_id"].is_string() && d["call_id"].is_string(), "{d}");
    }
    assert!(named(&events, "tool_result").iter().all(|r| r["ok"] == false));
}

#[test]
fn huddle_run_with_approve_tools_runs_them_and_keeps_them_in_the_transcripts() {
    let Some(program) = reference_server("HUDDLE_MCP_TIME", "mcp-server-time") else {
        return;
    };
    let home = home_with_time_server(&program);
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Clock Team",
            "--events",
            "--approve-tools",
            "What time is it?",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    let calls = named(&events, "tool_call");
    let results = named(&events, "tool_result");
    assert_eq!((calls.len(), results.len()), (2, 2), "{events:?}");
    for r in &results {
        assert_eq!(r["ok"], true, "{r}");
        assert!(
            r["first_line"].as_str().is_some_and(|l| l.contains("timezone")),
            "{r}"
        );
        assert!(r["size"].as_u64().is_some_and(|n| n > 0), "{r}");
    }
    assert!(named(&events, "tool_approval_requested").is_empty());

    // Each worker's transcript has the call on its step and the result as a tool message.
    let sessions = home.path().join("sessions");
    let mut tool_lines = 0;
    for entry in std::fs::read_dir(&sessions).expect("sessions dir") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("transcript");
        for line in text.lines() {
            let m: Value = serde_json::from_str(line).expect("transcript line");
            if m["role"] == "tool" {
                tool_lines += 1;
                let call_id = &m["tool_result"]["call_id"];
                assert!(
                    text.lines()
                        .any(|l| l.contains("\"tool_calls\"") && l.contains(call_id.as_str().unwrap_or("?"))),
                    "the call of {call_id} is stored"
                );
            }
        }
    }
    assert_eq!(tool_lines, 2);
}
