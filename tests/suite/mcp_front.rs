//! `huddle mcp` driven by a third-party client: the reference Python SDK (`mcp` on PyPI, pinned
//! in .ci/setup-python-tools.sh), over stdio, connecting as Claude Code and Codex do (the
//! initialize handshake). It lists the tools and teams, runs a Research Panel on the sim to its
//! end with progress, detaches and cancels a run, has tool approvals asked (elicitation) or
//! denied, and leaves a run going in the host when it goes away.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::headless::{HOST_IDLE_VAR, huddle, text, wait_for_host_exit};

const INSTALL_HINT: &str = "the `huddle mcp` tests need the Python MCP SDK (mcp==2.3.0): run \
    `bash .ci/setup-python-tools.sh` (installs it into .ci/.venv) or set HUDDLE_TEST_PYTHON to a \
    python that has it";

/// A python with the `mcp` package: `$HUDDLE_TEST_PYTHON`, else `.ci/.venv/bin/python`. `None`
/// (the test is skipped, loudly) when there is none, except under CI.
fn python() -> Option<PathBuf> {
    let candidate = std::env::var_os("HUDDLE_TEST_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/.venv/bin/python"));
    let has_mcp = Command::new(&candidate)
        .args(["-c", "import mcp, mcp.client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_mcp {
        return Some(candidate);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no python with mcp under CI.\n{INSTALL_HINT}"
    );
    eprintln!("\n*** SKIPPED: no python with the mcp package ({INSTALL_HINT}) ***\n");
    None
}

fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.yaml"), config).unwrap();
    home
}

/// Runs the client's `scenario` against `huddle mcp` on `home`; what it printed, as JSON.
fn client(python: &Path, home: &Path, scenario: &str, arg: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_client.py");
    let out = Command::new(python)
        .arg(&script)
        .args([
            env!("CARGO_BIN_EXE_huddle"),
            &home.display().to_string(),
            scenario,
            arg,
        ])
        .env(HOST_IDLE_VAR, "0")
        .output()
        .expect("run the python client");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "the client failed: {}\n{stdout}",
        text(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[test]
fn the_client_lists_the_tools_and_teams() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/demo\n");
    let seen = client(&python, home.path(), "list", "");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(s).collect();
    assert_eq!(
        tools,
        [
            "answer_approval",
            "cancel_run",
            "list_runs",
            "list_teams",
            "run_result",
            "run_status",
            "run_team"
        ]
    );
    let presets = seen["teams"]["structured"]["presets"].as_array().unwrap();
    assert!(
        presets.iter().any(|p| p["name"] == "Research Panel"),
        "{presets:?}"
    );
    assert!(s(&seen["teams"]["text"]).contains("- Research Panel ("));
    assert_eq!(seen["runs"]["text"], "nothing runs");
    assert_eq!(seen["unknown_run"]["is_error"], true);
    assert!(s(&seen["unknown_run"]["text"]).contains("no run or group `nope`"));
    wait_for_host_exit(home.path());
}

#[test]
fn a_research_panel_runs_to_its_end_with_progress() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/demo\n");
    let seen = client(&python, home.path(), "run", "Is tea better than coffee?");
    let run = &seen["run"];
    assert_eq!(run["is_error"], false, "{run}");
    let structured = &run["structured"];
    assert_eq!(structured["exit_code"], 0, "{run}");
    assert_eq!(structured["outcome"], "completed", "{run}");
    let answer = s(&structured["answer"]);
    assert!(!answer.is_empty(), "the team's answer: {run}");
    assert!(s(&run["text"]).starts_with(answer.trim_end()), "{run}");
    let run_id = s(&structured["run_id"]);
    assert!(s(&run["text"]).contains(&format!("run {run_id} of `")), "{run}");
    // Progress notifications: the run's start, then what `huddle run` prints as it goes.
    let progress: Vec<&str> = seen["progress"].as_array().unwrap().iter().map(s).collect();
    assert!(
        progress[0].starts_with(&format!("run {run_id} of `")),
        "{progress:?}"
    );
    assert!(progress.len() > 3, "{progress:?}");
    // The result again, read back from the run file once the run is over.
    let result = &seen["result"];
    assert_eq!(result["structured"]["state"], "ended", "{result}");
    assert_eq!(result["structured"]["answer"], structured["answer"]);
    assert_eq!(result["structured"]["outcome"], "completed");
    wait_for_host_exit(home.path());
}

/// The text of a read resource's one content, as JSON, with its URI and MIME type checked.
fn resource_json(read: &Value, uri: &str) -> Value {
    let contents = read.as_array().unwrap_or_else(|| panic!("{read}"));
    assert_eq!(contents.len(), 1, "{read}");
    assert_eq!(contents[0]["uri"], uri, "{read}");
    assert_eq!(contents[0]["mime"], "application/json", "{read}");
    serde_json::from_str(s(&contents[0]["text"])).unwrap_or_else(|e| panic!("{e}: {read}"))
}

/// A run's result and trace and its members' transcripts are resources (listed among the
/// newest, read by URI), with secrets and terminal controls taken out; nothing else is.
#[test]
fn a_runs_result_trace_and_transcripts_are_resources() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/demo\n");
    let secret = "sk-proj-abcdefghijklmnopqrstuvwx";
    let prompt = format!("Is tea better than coffee? my key is {secret} \u{1b}[31mred");
    let seen = client(&python, home.path(), "resources", &prompt);
    assert_eq!(seen["advertised"], true, "{seen}");
    assert_eq!(seen["before"].as_array().map(Vec::len), Some(0), "{seen}");
    let run_id = s(&seen["run_id"]).to_string();
    assert!(!run_id.is_empty(), "{seen}");
    let templates: Vec<&str> = seen["templates"].as_array().unwrap().iter().map(s).collect();
    assert_eq!(
        templates,
        [
            "huddle://runs/{run_id}/result",
            "huddle://runs/{run_id}/trace",
            "huddle://sessions/{session_id}/transcript"
        ]
    );
    let listed: Vec<&str> = seen["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| s(&r["uri"]))
        .collect();
    let result_uri = format!("huddle://runs/{run_id}/result");
    let trace_uri = format!("huddle://runs/{run_id}/trace");
    assert!(listed.contains(&result_uri.as_str()), "{listed:?}");
    assert!(listed.contains(&trace_uri.as_str()), "{listed:?}");
    let transcripts = listed
        .iter()
        .filter(|u| u.starts_with("huddle://sessions/"))
        .count();
    assert!(transcripts >= 2, "a panel's members' transcripts: {listed:?}");

    let result = resource_json(&seen["result"], &result_uri);
    assert_eq!(result["run_id"], run_id.as_str(), "{result}");
    assert_eq!(result["state"], "ended", "{result}");
    assert_eq!(result["outcome"], "completed", "{result}");
    assert!(!s(&result["answer"]).is_empty(), "{result}");

    // The trace is what `huddle trace --json` prints for the run, the secret taken out.
    let trace = resource_json(&seen["trace"], &trace_uri);
    wait_for_host_exit(home.path());
    let printed = huddle(home.path(), &["trace", "--json", "--run", &run_id]);
    let printed = text(&printed.stdout);
    assert!(printed.contains(secret), "{printed}");
    let printed: Value = serde_json::from_str(&printed.replace(secret, "[redacted]")).unwrap();
    assert_eq!(trace, printed);
    assert_eq!(trace["run"]["state"], "ended", "{trace}");

    let transcript = &seen["transcript"];
    let uri = s(&transcript[0]["uri"]).to_string();
    let transcript = resource_json(transcript, &uri);
    let messages = transcript["messages"].as_array().unwrap();
    assert!(!messages.is_empty(), "{transcript}");
    let all = transcript.to_string();
    assert!(all.contains("Is tea better than coffee?"), "the prompt: {all}");
    assert!(!all.contains(secret), "redacted: {all}");
    assert!(all.contains("[redacted]"), "{all}");
    assert!(
        !all.contains("\\u001b") && !all.contains('\u{1b}'),
        "cleaned: {all}"
    );

    let errors = seen["errors"].as_object().unwrap();
    assert_eq!(errors.len(), 4, "{seen}");
    for (uri, error) in errors {
        assert!(error.is_object(), "{uri} must not be read: {error}");
        assert_eq!(error["code"], -32002, "resource not found: {uri} {error}");
    }
}

#[test]
fn a_detached_run_is_listed_and_cancelled() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-300ms\n");
    let seen = client(&python, home.path(), "detach_cancel", "");
    let run_id = s(&seen["started"]["structured"]["run_id"]).to_string();
    assert!(!run_id.is_empty(), "{seen}");
    let runs = seen["runs"]["structured"]["runs"].as_array().unwrap();
    let listed = runs
        .iter()
        .find(|r| r["run_id"] == run_id.as_str())
        .expect("listed");
    assert!(
        s(&listed["front"]).starts_with("detached from huddle mcp (pid "),
        "{listed}"
    );
    assert_eq!(seen["cancel"]["structured"]["stopped"][0], run_id.as_str());
    let status = &seen["status"]["structured"];
    assert_eq!(status["outcome"], "cancelled", "{status}");
    wait_for_host_exit(home.path());
}

fn clock_home() -> Option<tempfile::TempDir> {
    let program = super::mcp_servers::reference_server("HUDDLE_MCP_TIME", "mcp-server-time")?;
    let home = home_with(&format!(
        "default_model: sim/default\nmcp_servers:\n  time:\n    command: [\"{}\"]\n",
        program.display()
    ));
    std::fs::create_dir_all(home.path().join("presets")).unwrap();
    std::fs::write(
        home.path().join("presets/clock.yaml"),
        "name: Clock Team\nmode: broadcast\nworkers:\n  - { name: one, tools: [time] }\n",
    )
    .unwrap();
    Some(home)
}

/// A client that cannot be asked gets its tool calls denied, with the reason in the result; one
/// that can is asked (elicitation) and its answer holds: a deny denies, an allow runs the tool.
#[test]
fn tool_approvals_are_asked_through_mcp_or_denied() {
    let Some(python) = python() else { return };
    let Some(home) = clock_home() else { return };
    let seen = client(&python, home.path(), "approval", "none");
    let text = s(&seen["run"]["text"]);
    assert!(
        text.contains(
            "a tool call of clock-team-one: denied: huddle run does not run tools that need approval"
        ),
        "{seen}"
    );
    assert_eq!(seen["asked"].as_array().unwrap().len(), 0);

    let seen = client(&python, home.path(), "approval", "deny");
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert!(s(&asked[0]).contains("wants to call time/"), "{asked:?}");
    let notes = seen["run"]["structured"]["notes"].as_array().unwrap();
    assert!(
        !notes
            .iter()
            .any(|n| s(n).contains("huddle run does not run tools")),
        "{notes:?}"
    );

    let seen = client(&python, home.path(), "approval", "allow");
    assert_eq!(seen["asked"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(seen["run"]["is_error"], false, "{seen}");
    wait_for_host_exit(home.path());
    let files = huddle::store::RunFiles::new(home.path().join("runs"));
    let org = huddle::store::OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    let mut decided = Vec::new();
    for g in &org.groups {
        for id in files.list(&g.id).unwrap() {
            for line in files.read_lines(&g.id, &id).unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["event"] == "tool_approval_decided" {
                    decided.push(s(&v["decision"]).to_string());
                }
            }
        }
    }
    decided.sort();
    assert_eq!(
        decided,
        ["approve_once", "deny", "deny"],
        "no-client deny, asked deny, asked allow"
    );
}

/// `huddle ps --json` (starting no host, not waiting for one to go).
fn ps(home: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["ps", "--json"])
        .env("HUDDLE_HOME", home)
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// The client goes away mid-run: the run goes on in the host to its end.
#[test]
fn a_run_outlives_its_mcp_client() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-1500ms\n");
    let seen = client(&python, home.path(), "outlive", "");
    let started = s(&seen["started"]);
    let run_id = started
        .strip_prefix("run ")
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("{seen}"))
        .to_string();
    let runs = ps(home.path());
    let listed = runs
        .iter()
        .find(|r| r["run_id"] == run_id.as_str())
        .unwrap_or_else(|| panic!("the run goes on after its client went: {runs:?}"));
    assert!(s(&listed["front"]).starts_with("huddle mcp (pid "), "{listed}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ps(home.path()).is_empty() {
        assert!(Instant::now() < deadline, "the run never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_host_exit(home.path());
    let trace = huddle(home.path(), &["trace", "--json", "--run", &run_id]);
    let trace: Value = serde_json::from_slice(&trace.stdout).unwrap();
    assert_eq!(trace["run"]["state"], "ended", "{trace}");
    assert_eq!(
        trace["run"]["outcome"], "goal_met",
        "not stopped when its client went: {trace}"
    );
}
