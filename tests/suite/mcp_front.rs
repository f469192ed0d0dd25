//! `huddle mcp` driven by a third-party client: the reference Python SDK (`mcp` on PyPI, pinned
//! in .ci/setup-python-tools.sh), over stdio, connecting as Claude Code and Codex do (the
//! initialize handshake). It lists the tools and teams, runs a Research Panel on the sim to its
//! end with progress, detaches and cancels a run, has tool approvals asked (elicitation) or
//! denied, and leaves a run going in the host when it goes away (and `huddle mcp` exits). MCP
//! Tasks (protocol 2026-07-28), which that SDK has no client for, are driven with raw JSON-RPC
//! (tests/fixtures/mcp_tasks_client.py): a run to completion through tasks/get, a cancel, and
//! an approval asked as an input request.

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
    client_at(python, home, scenario, arg, None)
}

/// `client`, over streamable HTTP to `url` when given (else it starts `huddle mcp` on stdio).
fn client_at(python: &Path, home: &Path, scenario: &str, arg: &str, url: Option<&str>) -> Value {
    run_script(python, "mcp_client.py", home, scenario, arg, url)
}

/// The raw MCP Tasks client's `scenario` against `huddle mcp` on `home` (over HTTP to `url`
/// when given).
fn tasks_client(python: &Path, home: &Path, scenario: &str, arg: &str) -> Value {
    tasks_client_at(python, home, scenario, arg, None)
}

fn tasks_client_at(python: &Path, home: &Path, scenario: &str, arg: &str, url: Option<&str>) -> Value {
    run_script(python, "mcp_tasks_client.py", home, scenario, arg, url)
}

fn run_script(python: &Path, name: &str, home: &Path, scenario: &str, arg: &str, url: Option<&str>) -> Value {
    run_script_with(python, name, home, [scenario, arg], url, &[])
}

/// `run_script` with more variables set for the client (and the `huddle mcp` it starts).
fn run_script_with(
    python: &Path,
    name: &str,
    home: &Path,
    [scenario, arg]: [&str; 2],
    url: Option<&str>,
    vars: &[(&str, &str)],
) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let out = Command::new(python)
        .arg(&script)
        .args([
            env!("CARGO_BIN_EXE_huddle"),
            &home.display().to_string(),
            scenario,
            arg,
        ])
        .env(HOST_IDLE_VAR, "0")
        .env("HUDDLE_MCP_URL", url.unwrap_or_default())
        .envs(vars.iter().copied())
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
            "answer_draft",
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
    // Answered once it ended (a sim turn lets go at once).
    let stopping = seen["cancel"]["structured"]["stopping"].as_array();
    assert!(stopping.is_some_and(Vec::is_empty), "{}", seen["cancel"]);
    assert!(
        s(&seen["cancel"]["text"]).starts_with("stopped "),
        "{}",
        seen["cancel"]
    );
    let status = &seen["status"]["structured"];
    assert_eq!(status["outcome"], "cancelled", "{status}");
    wait_for_host_exit(home.path());
}

/// A relay's drafts are asked through MCP (elicitation); one left waiting (the client cancelled
/// the question) shows in list_runs and run_status and is answered from another client with
/// answer_draft, whose edit is what the counterpart gets.
#[test]
fn relay_drafts_are_asked_through_mcp_or_answered_with_answer_draft() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/demo\n");
    let seen = client(&python, home.path(), "relay", "");
    assert_eq!(seen["run"]["is_error"], false, "{seen}");
    let asked = seen["asked"].as_array().unwrap();
    assert!(asked.len() >= 3, "every draft is asked: {seen}");
    assert!(s(&asked[0]).contains("the draft of turn 1 is"), "{asked:?}");
    let elsewhere = &seen["elsewhere"];
    let waiting = elsewhere["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["state"] == "waiting")
        .unwrap_or_else(|| panic!("{elsewhere}"));
    assert!(
        s(&waiting["waiting_for"]).contains("relay draft of turn 2"),
        "{waiting}"
    );
    let status = &elsewhere["status"];
    assert_eq!(status["structured"]["draft"]["turn"], 2, "{status}");
    assert!(
        s(&status["text"]).contains("Its relay draft of turn 2 waits (answer_draft):"),
        "{status}"
    );
    assert_eq!(elsewhere["no_text"]["is_error"], true, "{elsewhere}");
    assert!(
        s(&elsewhere["no_text"]["text"]).contains("`edit` needs"),
        "{elsewhere}"
    );
    assert_eq!(elsewhere["answer"]["is_error"], false, "{elsewhere}");
    assert!(
        s(&elsewhere["answer"]["text"]).contains("the draft of turn 2 of `"),
        "{elsewhere}"
    );
    assert_the_edit_was_sent(home.path(), "Edited over MCP: 420 is fair.");
}

/// Field `field` of every `event` recorded in the run files, in order.
fn event_fields(home: &Path, event: &str, field: &str) -> Vec<String> {
    run_events(home, event)
        .iter()
        .map(|v| s(&v[field]).to_string())
        .collect()
}

/// Once the host is gone: the relay sent its drafts, the second one as `edit` said.
fn assert_the_edit_was_sent(home: &Path, edit: &str) {
    wait_for_host_exit(home);
    let sent = event_fields(home, "relay_sent", "text");
    assert!(sent.len() >= 3, "{sent:?}");
    assert_eq!(sent[1], edit, "{sent:?}");
}

/// The lines of every run file that record `event`, in order.
fn run_events(home: &Path, event: &str) -> Vec<Value> {
    let files = huddle::store::RunFiles::new(home.join("runs"));
    let org = huddle::store::OrganizationFile::new(home.join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    let mut found = Vec::new();
    for g in &org.groups {
        for id in files.list(&g.id).unwrap() {
            for line in files.read_lines(&g.id, &id).unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["event"] == event {
                    found.push(v);
                }
            }
        }
    }
    found
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
        text.contains("a tool call of clock-team-one: denied: huddle mcp could not ask anyone")
            && text.contains("a client that supports elicitation or MCP Tasks is asked")
            && !text.contains("--approve-tools"),
        "said in MCP's terms: {seen}"
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
            .any(|n| s(n).contains("could not ask anyone") || s(n).contains("huddle run does not run tools")),
        "denied by the client, not unasked: {notes:?}"
    );

    let seen = client(&python, home.path(), "approval", "allow");
    assert_eq!(seen["asked"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(seen["run"]["is_error"], false, "{seen}");
    wait_for_host_exit(home.path());
    let mut decided: Vec<String> = event_fields(home.path(), "tool_approval_decided", "decision");
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
    let front = s(&listed["front"]);
    let pid: u32 = front
        .strip_prefix("huddle mcp (pid ")
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("{listed}"));
    // `huddle mcp` noticed its client go (its input closed) and exited, well before rmcp's own
    // 5 s wait for calls in flight (the run_team call never ends by itself).
    let deadline = Instant::now() + Duration::from_secs(3);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "huddle mcp (pid {pid}) lingers after its client went"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// A client that closes `huddle mcp`'s input while a blocking run_team follows its run (and
/// goes on reading): `huddle mcp` exits at once (before rmcp's own 5 s wait for calls in
/// flight), and the run goes on in the host.
#[test]
fn huddle_mcp_exits_when_its_client_closes_its_input() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-1500ms\n");
    let seen = tasks_client(&python, home.path(), "close_input", "");
    assert_eq!(
        seen["exited"], true,
        "huddle mcp lingered 3 s after its input closed: {seen}"
    );
    let run_id = s(&seen["started"])
        .strip_prefix("run ")
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("{seen}"))
        .to_string();
    let runs = ps(home.path());
    assert!(
        runs.iter().any(|r| r["run_id"] == run_id.as_str()),
        "the run goes on: {runs:?}"
    );
    let stop = huddle(home.path(), &["stop", &run_id]);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop.stderr));
    wait_for_host_exit(home.path());
}

/// Whether process `pid` is alive (a zombie nobody reaped has exited).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's closing parenthesis.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

/// A task (protocol 2026-07-28, the tasks extension in the request's capabilities): created at
/// once, `working` with the run's progress as its status message, `completed` with the result a
/// blocking call gives; an unknown task is an error. The same call without the extension
/// blocks, with progress notifications.
#[test]
fn run_team_as_an_mcp_task_is_followed_to_its_result() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-300ms\n");
    let seen = tasks_client(&python, home.path(), "run", "Is tea better than coffee?");
    let created = &seen["created"]["result"];
    assert_eq!(created["resultType"], "task", "{seen}");
    assert_eq!(created["status"], "working", "{created}");
    assert!(
        created["ttlMs"].as_u64().is_some_and(|t| t >= 3_600_000),
        "{created}"
    );
    let final_ = &seen["final"];
    assert_eq!(final_["status"], "completed", "{final_}");
    let result = &final_["result"];
    assert_eq!(result["isError"], false, "{result}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["outcome"], "completed", "{result}");
    assert!(!s(&structured["answer"]).is_empty(), "{result}");
    let run_id = s(&structured["run_id"]);
    let named = format!("run {run_id} of `");
    assert!(
        s(&final_["statusMessage"]).starts_with(&named)
            && s(&final_["statusMessage"]).ends_with(": completed"),
        "{final_}"
    );
    // While it ran: `working`, its status message the run's progress.
    let seen_steps = seen["seen"].as_array().unwrap();
    assert!(
        seen_steps
            .iter()
            .any(|step| step["status"] == "working" && s(&step["message"]).starts_with(&named)),
        "{seen_steps:?}"
    );
    assert!(seen["unknown"]["error"].is_object(), "{seen}");
    // Without the extension: a plain blocking call, with progress.
    let plain = &seen["plain"]["result"];
    assert_ne!(plain["resultType"], "task", "{plain}");
    assert_eq!(plain["structuredContent"]["outcome"], "completed", "{plain}");
    let progress: Vec<&str> = seen["progress"].as_array().unwrap().iter().map(s).collect();
    assert!(
        progress.first().is_some_and(|p| p.ends_with("started")) && progress.len() > 3,
        "{progress:?}"
    );
    wait_for_host_exit(home.path());
}

/// tasks/cancel stops the task's run (it ends cancelled in its trace) and the task says
/// `cancelled`.
#[test]
fn a_cancelled_mcp_task_stops_its_run() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-300ms\n");
    let seen = tasks_client(&python, home.path(), "cancel", "");
    assert_eq!(seen["started"]["status"], "working", "{seen}");
    assert_eq!(seen["cancel"]["result"]["resultType"], "complete", "{seen}");
    let final_ = &seen["final"];
    assert_eq!(final_["status"], "cancelled", "{final_}");
    let message = s(&final_["statusMessage"]);
    let run_id = message
        .strip_prefix("run ")
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("{final_}"));
    wait_for_host_exit(home.path());
    let trace = huddle(home.path(), &["trace", "--json", "--run", run_id]);
    let trace: Value = serde_json::from_slice(&trace.stdout).unwrap();
    assert_eq!(trace["run"]["outcome"], "cancelled", "{trace}");
}

/// A task's tool approval is asked as an input request (`input_required`, answered with
/// tasks/update) when the request declares elicitation; else it is denied, said in MCP's terms.
#[test]
fn an_mcp_task_asks_tool_approvals_as_input_requests() {
    let Some(python) = python() else { return };
    let Some(home) = clock_home() else { return };
    let seen = tasks_client(&python, home.path(), "approval", "allow");
    assert_eq!(seen["waiting"], "input_required", "{seen}");
    let asked = seen["asked"].as_object().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    let (key, request) = asked.iter().next().unwrap();
    assert!(key.starts_with("approval-"), "{key}");
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert!(
        s(&request["params"]["message"]).contains("wants to call time/"),
        "{request}"
    );
    assert_eq!(seen["final"]["status"], "completed", "{seen}");
    assert!(
        s(&seen["final"]["result"]["content"][0]["text"]).contains("time__convert_time` said"),
        "the tool ran: {seen}"
    );

    // Cancelled while the approval waits: withdrawn (denied), and the run stops.
    let seen = tasks_client(&python, home.path(), "approval_cancel", "");
    assert_eq!(seen["waiting"], "input_required", "{seen}");
    assert_eq!(seen["final"]["status"], "cancelled", "{seen}");

    let seen = tasks_client(&python, home.path(), "approval", "none");
    assert_eq!(seen["final"]["status"], "completed", "{seen}");
    let notes = seen["final"]["result"]["structuredContent"]["notes"].to_string();
    assert!(
        notes.contains("denied: huddle mcp could not ask anyone") && !notes.contains("--approve-tools"),
        "{notes}"
    );
    wait_for_host_exit(home.path());
    let decided: Vec<String> = event_fields(home.path(), "tool_approval_decided", "decision");
    assert_eq!(
        decided,
        ["approve_once", "deny", "deny"],
        "asked and allowed; cancelled while asked; unasked"
    );
}

/// A relay's drafts in a task are input requests: each answered with tasks/update (one edited),
/// and the edit is what the counterpart gets.
#[test]
fn an_mcp_task_asks_relay_drafts_as_input_requests() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/demo\n");
    let seen = tasks_client(&python, home.path(), "relay", "");
    assert_eq!(seen["final"]["status"], "completed", "{seen}");
    let asked = seen["asked"].as_array().unwrap();
    assert!(asked.len() >= 3, "every draft is asked: {seen}");
    assert_eq!(asked[0][0], "draft-1", "{asked:?}");
    assert!(s(&asked[0][1]).contains("the draft of turn 1 is"), "{asked:?}");
    assert_the_edit_was_sent(home.path(), "Edited in a task: 420 is fair.");
}

/// `huddle mcp --http 127.0.0.1:0` on `home`, and the URL it printed on stderr.
fn http_server(home: &Path) -> (HttpServer, String) {
    http_server_with(home, &[])
}

/// A `huddle mcp --http` a test started: killed when the test ends without stopping it (an
/// assertion failed), so no server outlives the suite.
struct HttpServer(Option<std::process::Child>);

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// [`http_server`] with these variables set.
fn http_server_with(home: &Path, vars: &[(&str, &str)]) -> (HttpServer, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["mcp", "--http", "127.0.0.1:0"])
        .envs(vars.iter().copied())
        .env("HUDDLE_HOME", home)
        .env(HOST_IDLE_VAR, "0")
        .current_dir(home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start huddle mcp --http");
    let stderr = child.stderr.take().expect("stderr");
    let server = HttpServer(Some(child));
    let mut first = String::new();
    std::io::BufReader::new(stderr)
        .read_line(&mut first)
        .expect("read stderr");
    let url = first
        .trim()
        .strip_prefix("huddle mcp: serving ")
        .unwrap_or_else(|| panic!("no URL on stderr: {first:?}"))
        .to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    (server, url)
}

/// SIGTERM to a `huddle mcp --http`: it exits 0, and then its host (nothing runs).
fn stop_http_server(mut server: HttpServer, home: &Path) {
    let Some(mut server) = server.0.take() else {
        return;
    };
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = server.wait().expect("wait for huddle mcp");
    assert!(status.success(), "{status:?}");
    wait_for_host_exit(home);
}

#[test]
fn over_http_the_client_lists_teams_and_a_foreign_origin_is_refused() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/demo\n");
    let (server, url) = http_server(home.path());
    let seen = client_at(&python, home.path(), "list", "", Some(&url));
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(s).collect();
    assert!(
        tools.contains(&"run_team") && tools.contains(&"list_teams"),
        "{tools:?}"
    );
    assert!(s(&seen["teams"]["text"]).contains("- Research Panel ("), "{seen}");
    let seen = client_at(&python, home.path(), "origin", "", Some(&url));
    assert_eq!(seen["evil"], 403, "{seen}");
    assert_eq!(seen["local"], 200, "{seen}");
    assert_eq!(seen["none"], 200, "{seen}");
    // SIGTERM ends it cleanly.
    stop_http_server(server, home.path());
}

/// Over HTTP as over stdio: a blocking run_team's progress notifications reach the client, a
/// tool approval is asked of it (elicitation) and its answer holds, and a task asks it too.
#[test]
fn over_http_progress_and_approvals_reach_the_client() {
    let Some(python) = python() else { return };
    let Some(home) = clock_home() else { return };
    let (server, url) = http_server(home.path());
    let seen = client_at(
        &python,
        home.path(),
        "run",
        "Is tea better than coffee?",
        Some(&url),
    );
    assert_eq!(seen["run"]["is_error"], false, "{seen}");
    let progress: Vec<&str> = seen["progress"].as_array().unwrap().iter().map(s).collect();
    assert!(
        progress.first().is_some_and(|p| p.ends_with("started")) && progress.len() > 3,
        "{progress:?}"
    );
    let seen = client_at(&python, home.path(), "approval", "allow", Some(&url));
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert!(s(&asked[0]).contains("wants to call time/"), "{asked:?}");
    assert!(
        s(&seen["run"]["text"]).contains("time__convert_time` said"),
        "the tool ran: {seen}"
    );
    // A task over HTTP (2026-07-28 has no session: every poll is a request of its own): its
    // approval is an input request, answered with tasks/update.
    let seen = tasks_client_at(&python, home.path(), "approval", "allow", Some(&url));
    assert_eq!(seen["created"]["result"]["resultType"], "task", "{seen}");
    assert_eq!(seen["waiting"], "input_required", "{seen}");
    assert_eq!(seen["asked"].as_object().map(|a| a.len()), Some(1), "{seen}");
    assert_eq!(seen["final"]["status"], "completed", "{seen}");
    stop_http_server(server, home.path());
    let decided: Vec<String> = event_fields(home.path(), "tool_approval_decided", "decision");
    assert_eq!(decided, ["approve_once", "approve_once"]);
}

#[test]
fn http_is_served_on_loopback_only() {
    let home = home_with("default_model: sim/demo\n");
    let out = huddle(home.path(), &["mcp", "--http", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`0.0.0.0:0` is not a loopback address"),
        "{}",
        text(&out.stderr)
    );
}

/// Another user's process is refused on the HTTP port (as on the host's unix socket): 403 with
/// the reason, before anything reaches the server. Needs root (to run a client as nobody).
#[test]
fn over_http_another_user_is_refused() {
    use std::os::unix::process::CommandExt;
    // SAFETY: getuid has no preconditions and cannot fail.
    if unsafe { libc::getuid() } != 0 || !Path::new("/bin/bash").exists() {
        eprintln!("skipped: needs root and bash to call as another user");
        return;
    }
    let home = home_with("default_model: sim/demo\n");
    let (server, url) = http_server(home.path());
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_string();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"other","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}; printf '%s' \"$1\" >&3; cat <&3");
    let out = Command::new("/bin/bash")
        .args(["-c", &script, "bash", &request])
        .current_dir("/")
        .env_clear()
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run bash as nobody");
    let answer = text(&out.stdout);
    assert!(
        answer.starts_with("HTTP/1.1 403") && answer.contains("serves only the user who started it"),
        "{answer:?} {}",
        text(&out.stderr)
    );
    // The same request from this user is served.
    let out = Command::new("/bin/bash")
        .args(["-c", &script, "bash", &request])
        .output()
        .expect("run bash");
    assert!(
        text(&out.stdout).starts_with("HTTP/1.1 200"),
        "{}",
        text(&out.stdout)
    );
    stop_http_server(server, home.path());
}

/// A run whose turns say nothing for longer than the heartbeat's interval still sends progress
/// (`still running (…)`), so a client's idle timeout does not cancel the call.
#[test]
fn a_quiet_run_sends_a_heartbeat() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-1500ms\n");
    let seen = run_script_with(
        &python,
        "mcp_client.py",
        home.path(),
        ["run", "Is tea better than coffee?"],
        None,
        &[("HUDDLE_MCP_HEARTBEAT_MS", "300")],
    );
    assert_eq!(seen["run"]["is_error"], false, "{seen}");
    let progress: Vec<&str> = seen["progress"].as_array().unwrap().iter().map(s).collect();
    assert!(
        progress.iter().any(|p| p.starts_with("still running (0m0")),
        "{progress:?}"
    );
    wait_for_host_exit(home.path());
}

/// Over HTTP, a blocking run_team without a progress token whose run outlasts the session's
/// keep-alive still gets its answer: the heartbeat (a `ping`) keeps the session from going idle.
#[test]
fn over_http_a_quiet_call_outlives_the_sessions_keep_alive() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-1500ms\n");
    let (server, url) = http_server_with(
        home.path(),
        &[
            ("HUDDLE_MCP_KEEP_ALIVE_MS", "500"),
            ("HUDDLE_MCP_HEARTBEAT_MS", "100"),
        ],
    );
    let seen = client_at(
        &python,
        home.path(),
        "run_quiet",
        "Is tea better than coffee?",
        Some(&url),
    );
    assert_eq!(seen["run"]["is_error"], false, "{seen}");
    assert!(seen["run"]["structured"]["run_id"].is_string(), "{seen}");
    stop_http_server(server, home.path());
}

/// A run whose host is killed (SIGKILL) mid-run: the call says how an MCP client resumes it; a
/// new run_team on its group is refused with the same advice; `discard_interrupted` starts over
/// and `resume` goes on with the interrupted run, its finished turns not asked again.
#[test]
fn an_mcp_client_resumes_or_discards_a_run_whose_host_was_killed() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-200ms\n");
    let seen = client(&python, home.path(), "interrupted", "Review fn add");
    let gone = s(&seen["gone"]["text"]);
    assert_eq!(seen["gone"]["is_error"], true, "{seen}");
    assert!(
        gone.contains("host went away") && gone.contains("resume: true"),
        "{gone}"
    );
    assert!(!gone.contains("--resume"), "{gone}");
    let refused = s(&seen["refused"]["text"]);
    assert!(
        refused.contains("has an interrupted")
            && refused.contains("resume: true")
            && refused.contains("discard_interrupted: true"),
        "{refused}"
    );
    assert!(!refused.contains("--discard-interrupted"), "{refused}");
    assert!(
        s(&seen["needs_group"]["text"]).contains("go with `group`"),
        "{seen}"
    );
    // Started over: iteration 1 again, then killed again.
    assert_eq!(seen["started_over"]["is_error"], true, "{seen}");
    assert!(
        s(&seen["started_over"]["text"]).contains("resume: true"),
        "{seen}"
    );
    let resumed = &seen["resumed"];
    assert_eq!(resumed["is_error"], false, "{seen}");
    assert!(resumed["structured"]["outcome"].is_string(), "{seen}");
    let progress: Vec<&str> = seen["resumed_progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(s)
        .collect();
    assert!(progress.iter().any(|p| p.contains("from disk")), "{progress:?}");
    wait_for_host_exit(home.path());
}

/// A task whose host is killed mid-run ends with a status message that says so (not the run's
/// last progress line), and how to resume the run.
#[test]
fn an_mcp_task_whose_host_was_killed_says_so() {
    let Some(python) = python() else { return };
    let home = home_with("default_model: sim/slow-300ms\n");
    let seen = tasks_client(&python, home.path(), "host_killed", "");
    let final_ = &seen["final"];
    assert_eq!(final_["status"], "completed", "{final_}");
    assert_eq!(final_["result"]["isError"], true, "{final_}");
    let message = s(&final_["statusMessage"]);
    assert!(
        message.contains("host went away") && message.contains("resume: true"),
        "{final_}"
    );
    wait_for_host_exit(home.path());
}
