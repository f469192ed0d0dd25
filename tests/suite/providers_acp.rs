//! ACP agents through the real `acp` provider, against an agent written with the protocol's
//! reference Python SDK (`agent-client-protocol` 0.12.1 from PyPI, `tests/fixtures/acp/`):
//! streamed text, a tool call with its diff, a permission request answered by huddle's decision
//! (allowed, denied, and refused when nobody can be asked), a stop mid-turn (`session/cancel`,
//! then the turn ends cancelled), and a second turn continuing the ACP session with
//! `session/load` without showing its replay again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::providers::{
    AgentActivity, AgentActivitySink, ChatMessage, ErrorKind, PermissionAnswer, PermissionAsker,
    PermissionRequest, Provider, ProviderError, TurnOutput, TurnRequest,
};
use huddle::tools::Decision;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const INSTALL_HINT: &str = "the ACP tests need the reference SDK agent-client-protocol: run \
    `bash .ci/setup-python-tools.sh` (installs the pinned version into .ci/.venv) or set \
    HUDDLE_TEST_PYTHON to a python that has it";

/// A python with the protocols' reference SDKs: `$HUDDLE_TEST_PYTHON`, else `.ci/.venv`'s.
/// Without one the test fails and says how to install it; `None` (skipped, said) only when
/// `HUDDLE_SKIP_PYTHON_TOOLS=1` asks for it.
pub fn test_python(module: &str) -> Option<PathBuf> {
    let python = std::env::var_os("HUDDLE_TEST_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/.venv/bin/python"));
    let has = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success());
    if has {
        return Some(python);
    }
    if super::mcp_servers::skip_python_tools() {
        eprintln!("\n*** SKIPPED (HUDDLE_SKIP_PYTHON_TOOLS=1): python module {module} not installed ***\n");
        return None;
    }
    panic!(
        "python module {module} is missing.\n{INSTALL_HINT}; HUDDLE_SKIP_PYTHON_TOOLS=1 skips these tests"
    );
}

/// The test agent's command, logging its requests to `log`.
pub fn agent_command(python: &Path, log: &Path) -> Vec<String> {
    vec![
        python.display().to_string(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/acp/test_agent.py")
            .display()
            .to_string(),
        "--log".into(),
        log.display().to_string(),
    ]
}

/// config.yaml's provider entry (`agent`, kind acp) running the test agent, logging to `log`.
pub fn agent_provider_yaml(python: &Path, log: &Path) -> String {
    let command: Vec<String> = agent_command(python, log)
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect();
    format!(
        "providers:\n  - {{ name: agent, kind: acp, command: [{}] }}\n",
        command.join(", ")
    )
}

fn provider(command: Vec<String>) -> Arc<dyn Provider> {
    let mut p = ProviderConfig::new("agent", ProviderKind::Acp);
    p.command = command;
    let mut config = Config::default();
    config.providers.push(p);
    huddle::sim::providers(&config)
        .expect("providers")
        .get("agent")
        .expect("agent")
}

/// The requests the agent logged.
fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("log line"))
        .collect()
}

fn methods(log: &Path) -> Vec<String> {
    logged(log)
        .iter()
        .map(|v| v["method"].as_str().unwrap_or_default().to_string())
        .collect()
}

struct Turn {
    result: Result<TurnOutput, ProviderError>,
    deltas: Vec<String>,
    activity: Vec<AgentActivity>,
    asked: Vec<PermissionRequest>,
}

impl Turn {
    fn out(&self) -> &TurnOutput {
        self.result.as_ref().expect("the turn succeeds")
    }
}

struct Setup {
    dir: tempfile::TempDir,
    log: PathBuf,
    provider: Arc<dyn Provider>,
}

fn setup() -> Option<Setup> {
    let python = test_python("acp")?;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("agent.jsonl");
    let provider = provider(agent_command(&python, &log));
    Some(Setup { dir, log, provider })
}

fn request(dir: &Path, text: &str, resume: Option<&str>) -> TurnRequest {
    let mut req = TurnRequest::new(
        "default",
        vec![
            ChatMessage::user("Earlier question"),
            ChatMessage::assistant("Earlier answer"),
            ChatMessage::user(text),
        ],
    );
    req.system = Some("Be brief.".into());
    req.working_dir = Some(dir.to_path_buf());
    req.agent_session_id = resume.map(str::to_string);
    req
}

async fn turn(
    p: &dyn Provider,
    mut req: TurnRequest,
    decision: Option<Decision>,
    cancel: CancellationToken,
) -> Turn {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    req.agent_activity = Some(AgentActivitySink::new(move |a| {
        log.lock().expect("activity").push(a);
    }));
    let asked = Arc::new(Mutex::new(Vec::new()));
    if let Some(decision) = decision {
        let asked = Arc::clone(&asked);
        req.permission = Some(PermissionAsker::new(move |r| {
            asked.lock().expect("asked").push(r);
            Box::pin(async move { PermissionAnswer::from(decision) })
        }));
    }
    let mut deltas = Vec::new();
    let result = p
        .stream_turn(req, &mut |d: &str| deltas.push(d.to_string()), cancel)
        .await;
    let activity = seen.lock().expect("activity").clone();
    let asked = asked.lock().expect("asked").clone();
    Turn {
        result,
        deltas,
        activity,
        asked,
    }
}

fn calls_and_results(activity: &[AgentActivity]) -> Vec<String> {
    activity
        .iter()
        .filter_map(|a| match a {
            AgentActivity::Call { text, call } => {
                Some(format!("call {} {} after {text:?}", call.id, call.name))
            }
            AgentActivity::Result {
                call_id,
                output,
                is_error,
                ..
            } => Some(format!("result {call_id} error={is_error}: {output}")),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_allowed_edit_streams_text_a_tool_cell_and_its_diff() {
    let Some(s) = setup() else { return };
    let t = turn(
        s.provider.as_ref(),
        request(s.dir.path(), "edit it", None),
        Some(Decision::ApproveOnce),
        CancellationToken::new(),
    )
    .await;
    let out = t.out();
    assert_eq!(out.text, "Done.", "the words after the last step");
    assert_eq!(t.deltas.concat(), "Hello from the test agent. Done.");
    assert_eq!(out.finish_reason.as_deref(), Some("end_turn"));
    let steps = calls_and_results(&t.activity);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(
        steps[0],
        "call call_1 Edit config.json after \"Hello from the test agent.\""
    );
    let config = s.dir.path().join("config.json");
    assert!(
        steps[1].starts_with(&format!("result call_1 error=false: --- {}", config.display())),
        "{steps:?}"
    );
    assert!(steps[1].contains("\n+{\"debug\": true}"), "{steps:?}");
    assert_eq!(
        std::fs::read_to_string(&config).expect("the agent wrote"),
        "{\"debug\": true}\n"
    );
    // huddle's approval was asked with the call's kind, title and input.
    assert_eq!(t.asked.len(), 1);
    let call = &t.asked[0].call;
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_1", "edit"));
    let arguments: Value = serde_json::from_str(&call.arguments).expect("arguments");
    assert_eq!(arguments["title"], "Edit config.json");
    assert_eq!(arguments["input"]["path"], "config.json");
    // The session continues next turn (the agent can load it).
    let session = out.agent.as_ref().and_then(|a| a.session_id.clone());
    assert!(
        session.as_deref().is_some_and(|id| id.starts_with("sess_")),
        "{session:?}"
    );
    assert!(
        t.activity
            .contains(&AgentActivity::Session(session.unwrap_or_default()))
    );

    let log = logged(&s.log);
    // No file system or terminal offered; the session in the working directory; the whole
    // conversation in the first prompt; the option picked by its kind.
    assert_eq!(log[0]["client_capabilities"]["terminal"], false);
    assert_eq!(log[0]["client_capabilities"]["fs"]["writeTextFile"], false);
    assert_eq!(log[1]["cwd"], s.dir.path().display().to_string());
    let prompt = log[2]["text"].as_str().unwrap_or_default();
    assert!(
        prompt.contains("Be brief.") && prompt.contains("Earlier answer") && prompt.contains("edit it"),
        "{prompt}"
    );
    assert_eq!(log[3]["outcome"]["optionId"], "allow-once");
}

#[tokio::test]
async fn a_denied_or_unaskable_permission_allows_nothing() {
    let Some(s) = setup() else { return };
    for (decision, option) in [
        (Some(Decision::Deny), Some("reject-once")),
        (Some(Decision::DenyAndStop), Some("reject-once")),
        (Some(Decision::ApproveForSession), None),
        (None, Some("reject-once")),
    ] {
        let _ = std::fs::remove_file(&s.log);
        let t = turn(
            s.provider.as_ref(),
            request(s.dir.path(), "edit it", None),
            decision,
            CancellationToken::new(),
        )
        .await;
        let log = logged(&s.log);
        let outcome = &log.last().expect("logged")["outcome"];
        match option {
            Some(option) => {
                assert_eq!(outcome["optionId"], option, "{decision:?}");
                assert_eq!(t.out().text, "Permission denied.");
                let steps = calls_and_results(&t.activity);
                assert_eq!(steps[1], "result call_1 error=true: denied by user", "{steps:?}");
                assert!(!s.dir.path().join("config.json").exists(), "nothing written");
            }
            None => assert_eq!(outcome["optionId"], "allow-always"),
        }
        let _ = std::fs::remove_file(s.dir.path().join("config.json"));
    }
}

#[tokio::test]
async fn a_stop_cancels_the_agents_turn_which_ends_it_itself() {
    let Some(s) = setup() else { return };
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let mut req = request(s.dir.path(), "slow", None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    req.agent_activity = Some(AgentActivitySink::new(move |a| {
        log.lock().expect("activity").push(a);
    }));
    // Stopped once the agent streams its dots (its words came before them).
    let mut deltas = Vec::new();
    let result = s
        .provider
        .stream_turn(
            req,
            &mut |d: &str| {
                deltas.push(d.to_string());
                if d == "." {
                    stopper.cancel();
                }
            },
            cancel,
        )
        .await;
    let err = result.as_ref().expect_err("cancelled");
    assert_eq!(err.kind, ErrorKind::Cancelled, "{err}");
    assert!(
        err.partial_text.starts_with("Hello from the test agent."),
        "{err:?}"
    );
    // The agent was told (session/cancel) and ended its turn itself (`stopped`: it answered
    // `cancelled`), within the grace period, rather than being killed at its end.
    let methods = methods(&s.log);
    let cancelled = methods.iter().position(|m| m == "session/cancel");
    let stopped = methods.iter().position(|m| m == "stopped");
    assert!(cancelled.is_some() && stopped > cancelled, "{methods:?}");
}

#[tokio::test]
async fn the_next_turn_loads_the_session_and_sends_only_the_new_prompt() {
    let Some(s) = setup() else { return };
    let first = turn(
        s.provider.as_ref(),
        request(s.dir.path(), "plain please", None),
        None,
        CancellationToken::new(),
    )
    .await;
    let id = first
        .out()
        .agent
        .as_ref()
        .and_then(|a| a.session_id.clone())
        .expect("a session");
    let second = turn(
        s.provider.as_ref(),
        request(s.dir.path(), "plain again", Some(&id)),
        None,
        CancellationToken::new(),
    )
    .await;
    let out = second.out();
    assert_eq!(out.text, "Hello from the test agent.", "the replay is not shown");
    assert!(out.agent.as_ref().is_some_and(|a| a.resumed));
    let log = logged(&s.log);
    let load = log
        .iter()
        .find(|v| v["method"] == "session/load")
        .expect("loaded");
    assert_eq!(load["session"], id.as_str());
    let prompts: Vec<&str> = log
        .iter()
        .filter(|v| v["method"] == "session/prompt")
        .map(|v| v["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[1], "plain again");

    // A session the agent does not know: said, and a new one with the whole conversation.
    let third = turn(
        s.provider.as_ref(),
        request(s.dir.path(), "plain", Some("gone")),
        None,
        CancellationToken::new(),
    )
    .await;
    assert!(
        third
            .out()
            .agent
            .as_ref()
            .is_some_and(|a| !a.resumed && a.resume_failed.is_some())
    );
    assert!(
        third
            .activity
            .iter()
            .any(|a| matches!(a, AgentActivity::ResumeFailed(t) if t.contains("gone"))),
        "{:?}",
        third.activity
    );
}

#[tokio::test]
async fn a_missing_agent_or_an_agent_that_exits_is_an_error_saying_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = provider(vec!["huddle-no-such-acp-agent".into()]);
    let t = turn(
        p.as_ref(),
        request(dir.path(), "hi", None),
        None,
        CancellationToken::new(),
    )
    .await;
    let err = t.result.as_ref().expect_err("fails");
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(err.message.contains("is not installed"), "{err}");

    let p = provider(vec![
        "sh".into(),
        "-c".into(),
        "read line; echo 'agent broke; its key sk-proj-abcdefghijklmnop0123456789' >&2; exit 3".into(),
    ]);
    let t = turn(
        p.as_ref(),
        request(dir.path(), "hi", None),
        None,
        CancellationToken::new(),
    )
    .await;
    let err = t.result.as_ref().expect_err("fails");
    assert_eq!(err.kind, ErrorKind::Process, "{err}");
    assert!(
        err.message.contains("exited with status 3") && err.message.contains("agent broke"),
        "{err}"
    );
    // What looks like a secret in the agent's words is not repeated.
    assert!(
        err.message.contains("its key [redacted]") && !err.message.contains("sk-proj-"),
        "{err}"
    );
}

/// `huddle run` with an ACP agent as the model: its permission request goes to huddle's
/// approval (denied without `--approve-tools`, allowed with it), its steps are tool events, and
/// it runs in the sandbox in the directory huddle was started in.
#[test]
fn huddle_run_answers_an_acp_agents_permission_by_its_approval_rule() {
    let Some(python) = test_python("acp") else { return };
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let log = work.path().join("agent.jsonl");
    std::fs::write(
        home.path().join("config.yaml"),
        agent_provider_yaml(&python, &log),
    )
    .expect("config");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--model", "agent/x", "--events"];
        args.extend_from_slice(extra);
        args.push("edit it");
        std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(&args)
            .env("HUDDLE_HOME", home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(work.path())
            .output()
            .expect("run huddle")
    };
    let events = |out: &std::process::Output| -> Vec<Value> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let named = |events: &[Value], name: &str| -> Vec<Value> {
        events.iter().filter(|e| e["event"] == name).cloned().collect()
    };

    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let ev = events(&out);
    let decided = named(&ev, "tool_approval_decided");
    assert_eq!(decided.len(), 1, "{ev:?}");
    assert_eq!(decided[0]["decision"], "deny");
    assert_eq!(named(&ev, "tool_call")[0]["name"], "Edit config.json");
    assert_eq!(named(&ev, "tool_result")[0]["ok"], false);

    assert!(!work.path().join("config.json").exists(), "nothing written");
    assert_eq!(
        logged(&log).last().expect("logged")["outcome"]["optionId"],
        "reject-once"
    );

    // Without --events: the agent's words before its call are not in its answer (stdout), the
    // progress line of the call says them (review 27-C).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--model", "agent/x", "edit it"])
        .env("HUDDLE_HOME", home.path())
        .current_dir(work.path())
        .output()
        .expect("run huddle");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"Hello from the test agent.\" then Edit config.json("),
        "{stderr}"
    );
    // Nobody was asked: the call's result says huddle's reason, not the agent's "denied by
    // user".
    assert!(
        stderr.contains(huddle::tools::approval::DENIED_HEADLESS) && !stderr.contains("denied by user"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Permission denied.\n");

    let out = run(&["--approve-tools"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    let decided = named(&ev, "tool_approval_decided");
    assert_eq!(decided[0]["decision"], "approve_once", "{decided:?}");
    let results = named(&ev, "tool_result");
    assert_eq!(results[0]["ok"], true, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("config.json")).expect("written"),
        "{\"debug\": true}\n"
    );
    let new = logged(&log)
        .into_iter()
        .find(|v| v["method"] == "session/new")
        .expect("a session");
    assert_eq!(
        std::fs::canonicalize(new["cwd"].as_str().unwrap_or_default()).ok(),
        std::fs::canonicalize(work.path()).ok()
    );
}

/// A member's MCP servers (`tools:`) are given to its ACP agent in `session/new`, as ACP's
/// stdio shape (absolute command, args, env pairs) the reference SDK parses; one whose program
/// is not there is left out with a warning.
#[test]
fn an_acp_members_mcp_servers_are_offered_to_the_agent_in_session_new() {
    let Some(python) = test_python("acp") else { return };
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let log = work.path().join("agent.jsonl");
    let command: Vec<String> = agent_command(&python, &log)
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect();
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "providers:\n  - {{ name: agent, kind: acp, command: [{}] }}\nmcp_servers:\n  clock:\n    command: [\"{}\", \"-m\", \"clock_server\", \"--utc\"]\n    env: {{ CLOCK_ZONE: UTC }}\n  gone:\n    command: [huddle-no-such-server-xyz]\n",
            command.join(", "),
            python.display()
        ),
    )
    .expect("config");
    std::fs::create_dir_all(home.path().join("presets")).expect("presets");
    std::fs::write(
        home.path().join("presets/agent.yaml"),
        "name: Agent Team\nmode: broadcast\nworkers:\n  - { name: coder, model: agent/x, tools: [clock, gone] }\n",
    )
    .expect("preset");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--preset", "Agent Team", "--events", "plain please"])
        .env("HUDDLE_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(work.path())
        .output()
        .expect("run huddle");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let new = logged(&log)
        .into_iter()
        .find(|v| v["method"] == "session/new")
        .expect("a session");
    let servers = new["mcp_servers"].as_array().cloned().unwrap_or_default();
    assert_eq!(servers.len(), 1, "{new}");
    assert_eq!(servers[0]["name"], "clock");
    let program = servers[0]["command"].as_str().unwrap_or_default();
    assert!(Path::new(program).is_absolute(), "{program}");
    assert_eq!(
        servers[0]["args"],
        serde_json::json!(["-m", "clock_server", "--utc"])
    );
    assert_eq!(
        servers[0]["env"],
        serde_json::json!([{"name": "CLOCK_ZONE", "value": "UTC"}])
    );
    assert!(
        stdout.contains("tool server `gone` not given to the agent"),
        "{stdout}"
    );
}

/// The misbehaving raw agent (`tests/fixtures/acp/raw_agent.py`, standard library only).
fn raw_agent() -> Option<(tempfile::TempDir, Arc<dyn Provider>)> {
    let python = test_python("json")?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/raw_agent.py");
    let dir = tempfile::tempdir().expect("tempdir");
    let p = provider(vec![python.display().to_string(), script.display().to_string()]);
    Some((dir, p))
}

async fn raw_turn(p: &dyn Provider, dir: &Path, text: &str, resume: Option<&str>) -> Turn {
    let mut req = request(dir, text, resume);
    // Long enough for a slow machine, short enough that a hang fails the test.
    req.turn_timeout = Some(std::time::Duration::from_secs(60));
    turn(p, req, None, CancellationToken::new()).await
}

/// An agent's cost is checked before it is counted (review 27-A): negative is dropped, absurd
/// is clipped (a budget still stops the run); ACP's `cost` is the session's cumulative cost,
/// so a continued session's turn counts only what it added.
#[tokio::test]
async fn an_acp_agents_cost_is_checked_and_counted_per_turn() {
    let Some((dir, p)) = raw_agent() else { return };
    let cost = |t: &Turn| t.out().agent.as_ref().expect("report").cost_usd;
    let t = raw_turn(p.as_ref(), dir.path(), "cost 0.2 0.5", None).await;
    assert_eq!(t.out().text, "ok");
    assert_eq!(cost(&t), Some(0.5), "the last cumulative figure of a new session");
    let t = raw_turn(p.as_ref(), dir.path(), "cost 1.25", Some("raw-1")).await;
    assert_eq!(cost(&t), Some(0.75), "what the continued session added");
    let t = raw_turn(p.as_ref(), dir.path(), "cost -5", None).await;
    assert_eq!(cost(&t), None, "a negative cost is dropped");
    let t = raw_turn(p.as_ref(), dir.path(), "cost nan", None).await;
    assert_eq!(cost(&t), None, "NaN (written as the bare word NaN) is not a cost");
    let t = raw_turn(p.as_ref(), dir.path(), "cost 1e308", None).await;
    assert_eq!(cost(&t), Some(huddle::model::MAX_REPORTED_TURN_USD), "clipped");
}

/// A line past the bound ends the turn with an error as soon as it passes it, while the agent
/// is still writing it (it never ends it): the line is never held whole (review 27-D). The
/// next turn starts the agent anew and works.
#[tokio::test]
async fn an_endless_line_ends_the_turn_with_an_error_and_the_next_turn_works() {
    let Some((dir, p)) = raw_agent() else { return };
    let t = raw_turn(p.as_ref(), dir.path(), "huge 20", None).await;
    let err = t.result.as_ref().expect_err("fails");
    assert_eq!(err.kind, ErrorKind::Protocol, "{err}");
    assert!(
        err.message
            .contains("the agent wrote a line longer than 16 MiB during session/prompt"),
        "{err}"
    );
    let t = raw_turn(p.as_ref(), dir.path(), "hi", None).await;
    assert_eq!(t.out().text, "hello");
}

/// A line that is not UTF-8 does not fail the turn: it is read with U+FFFD in place of the bad
/// byte, as the ACP TypeScript SDK reads it.
#[tokio::test]
async fn a_line_that_is_not_utf8_is_read_lossily_and_the_turn_goes_on() {
    let Some((dir, p)) = raw_agent() else { return };
    let t = raw_turn(p.as_ref(), dir.path(), "badutf8", None).await;
    assert_eq!(t.out().text, "caf\u{fffd}e ok");
}

/// "Always allow" (`a`) on an ACP agent's call is kept for the very call the popup showed (its
/// kind, title and input), not for its kind: the agent names the kind itself, so a grant on
/// `read` must not let it pass `rm -rf` off as a read (review 27-B). Through the engine, as
/// the TUI answers the approval broker.
#[tokio::test]
async fn always_allow_covers_the_same_call_again_not_every_call_of_its_kind() {
    use huddle::engine::events::EventKind;
    use huddle::engine::{Engine, EngineOptions, EventSink};
    use huddle::model::{Group, GroupKind, Organization, Session};
    use huddle::store::{OrgHandle, Transcripts};
    use huddle::tools::ApprovalPolicy;

    let Some(python) = test_python("json") else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/raw_agent.py");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = ProviderConfig::new("agent", ProviderKind::Acp);
    p.command = vec![python.display().to_string(), script.display().to_string()];
    let mut config = Config::default();
    config.providers.push(p);
    let mut org = Organization::default();
    let group = Group::new("solo", GroupKind::Default);
    let session = Session::new("coder", &group.id, "agent/x");
    let id = session.id.clone();
    org.groups.push(group);
    org.sessions.push(session);
    let (sink, mut events) = EventSink::channel();
    let engine = Engine::new(
        huddle::sim::providers(&config).expect("providers"),
        OrgHandle::in_memory(org),
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions {
            approval: ApprovalPolicy::Ask,
            ..EngineOptions::default()
        },
    );
    // One chat turn, answering an approval request (if one comes) with `decision`; the agent's
    // answer (the option huddle picked) and whether it was asked.
    let mut chat = async |prompt: &str, decision: Decision| -> (String, bool) {
        let turn = engine.start_chat(&id, prompt.into(), None).expect("starts");
        let turn = tokio::spawn(turn);
        let mut asked = false;
        while let Some(e) = events.recv().await {
            match &e.kind {
                EventKind::ToolApprovalRequested { approval_id, .. } => {
                    asked = true;
                    assert!(engine.answer_approval(*approval_id, decision));
                }
                EventKind::RunEnded { .. } => break,
                _ => {}
            }
        }
        let result = turn.await.expect("turn");
        assert!(result.success, "{:?}", result.error);
        (result.text.trim().to_string(), asked)
    };
    let read_notes = "ask read cat-notes cat";
    assert_eq!(
        chat(read_notes, Decision::ApproveForSession).await,
        ("allow-always".to_string(), true)
    );
    // The same call again: answered without asking.
    assert_eq!(
        chat(read_notes, Decision::Deny).await,
        ("allow-once".to_string(), false)
    );
    // Another input under the same kind and title, another title, a kind-less call: asked.
    for other in [
        "ask read cat-notes rm",
        "ask read list-notes cat",
        "ask other cat-notes cat",
    ] {
        assert_eq!(
            chat(other, Decision::Deny).await,
            ("reject-once".to_string(), true),
            "{other}"
        );
    }
}

/// A host serves front ends of several shells: an ACP agent starts in the environment of the
/// front end whose profile it serves, not the host's (review 25-27-2 finding 27-G).
#[tokio::test]
async fn an_acp_agent_starts_in_its_front_ends_environment() {
    let Some(python) = test_python("json") else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/raw_agent.py");
    let mut p = ProviderConfig::new("agent", ProviderKind::Acp);
    p.command = vec![python.display().to_string(), script.display().to_string()];
    let mut config = Config::default();
    config.providers.push(p);
    let mut vars = huddle::env::Env::capture();
    vars.insert("HUDDLE_FRONT_ONLY".into(), "from the front end".into());
    let env = huddle::env::Env::of(vars);
    let agent = huddle::sim::providers_in(&config, &env)
        .expect("providers")
        .get("agent")
        .expect("agent");
    let dir = tempfile::tempdir().expect("tempdir");
    let t = raw_turn(agent.as_ref(), dir.path(), "env HUDDLE_FRONT_ONLY", None).await;
    assert_eq!(t.out().text, "from the front end");
    // This process (the host) has no such variable: the agent of its own profile has none.
    let (dir, own) = raw_agent().expect("the raw agent");
    let t = raw_turn(own.as_ref(), dir.path(), "env HUDDLE_FRONT_ONLY", None).await;
    assert_eq!(t.out().text, "unset");
}
