//! Claude Code's own tool calls through huddle's approval flow, with the real Claude Code CLI
//! (the one the Claude Agent SDK wheel bundles, pinned in `.ci/setup-python-tools.sh`) on the
//! fake Anthropic server: a `pre_tool_use` hook that exits 2 blocks its Write (nothing written,
//! the model's next request carries the hook's reason); an allowing hook lets its Bash run
//! unasked; with no hook, `huddle run`'s rule denies (and `--approve-tools` allows), through
//! the engine and through the `huddle run` binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::{Engine, EngineOptions};
use huddle::hooks::Hooks;
use huddle::model::{AgentKind, Session};
use huddle::sandbox::Baseline;
use huddle::tools::{ApprovalPolicy, Decision};
use tokio::sync::mpsc::UnboundedReceiver;

use super::fake_llm_server::{FakeLlm, Reply};
use super::hooks::{blocked, one_session};
use super::mcp_servers::skip_python_tools;

const MODEL: &str = "claude-test-model";
/// Ends a turn that hangs; decides nothing (a turn takes about a second).
const HANG_GUARD: Duration = Duration::from_secs(120);

const INSTALL_HINT: &str = "the Claude Code tests need the Claude Code CLI that the Claude Agent SDK \
    wheel bundles: run `bash .ci/setup-python-tools.sh` (installs claude-agent-sdk into .ci/.venv) \
    or set HUDDLE_CLAUDE to a `claude` executable";

/// The Claude Code CLI: `$HUDDLE_CLAUDE`, else the one bundled in `.ci/.venv`'s
/// claude_agent_sdk. Absent, the test fails saying how to install it; `None` only when
/// `HUDDLE_SKIP_PYTHON_TOOLS=1`.
fn claude_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HUDDLE_CLAUDE").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.exists(),
            "HUDDLE_CLAUDE={} does not exist.\n{INSTALL_HINT}",
            p.display()
        );
        return Some(p);
    }
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/.venv/lib");
    let bundled = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| {
            python
                .path()
                .join("site-packages/claude_agent_sdk/_bundled/claude")
        })
        .find(|p| p.exists());
    if bundled.is_some() {
        return bundled;
    }
    if skip_python_tools() {
        eprintln!("\n*** SKIPPED (HUDDLE_SKIP_PYTHON_TOOLS=1): the Claude Code CLI is not installed ***\n");
        return None;
    }
    panic!("the Claude Code CLI is missing.\n{INSTALL_HINT}; HUDDLE_SKIP_PYTHON_TOOLS=1 skips these tests");
}

/// The ready-made Claude Code command, run through `env` so that it talks to `server` with a
/// home of its own, offline.
fn claude_command(claude: &Path, server: &FakeLlm, home: &Path) -> Vec<String> {
    let mut command: Vec<String> = [
        "env".to_string(),
        format!("HOME={}", home.display()),
        format!("ANTHROPIC_BASE_URL={}", server.anthropic_base()),
        "ANTHROPIC_API_KEY=test".into(),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1".into(),
        "DISABLE_TELEMETRY=1".into(),
        "DISABLE_AUTOUPDATER=1".into(),
        "DISABLE_ERROR_REPORTING=1".into(),
        claude.display().to_string(),
    ]
    .into();
    command.extend(AgentKind::Claude.command().into_iter().skip(1));
    command
}

struct Coder {
    server: FakeLlm,
    engine: Engine,
    events: UnboundedReceiver<EngineEvent>,
    session_id: String,
    work: PathBuf,
    _dir: tempfile::TempDir,
}

/// A session on Claude Code (`agent: claude`) working in a temp dir, with `hooks` (YAML;
/// `{work}` is the working directory) and the approval rule `approval`.
async fn coder(hooks_yaml: &str, approval: ApprovalPolicy) -> Option<Coder> {
    let claude = claude_binary()?;
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    let work = root.join("work");
    let home = root.join("home");
    std::fs::create_dir_all(&work).expect("work dir");
    std::fs::create_dir_all(&home).expect("home dir");
    let hooks: Hooks =
        serde_yaml::from_str(&hooks_yaml.replace("{work}", &work.display().to_string())).expect("hooks yaml");
    hooks.validate("hooks").expect("valid hooks");
    let server = FakeLlm::start().await;
    let mut provider = ProviderConfig::new("claude", ProviderKind::Command);
    provider.agent = Some(AgentKind::Claude);
    provider.format = Some(AgentKind::Claude.format());
    provider.command = claude_command(&claude, &server, &home);
    let mut config = Config::default();
    config.providers.push(provider);

    let (engine, events, session_id) = one_session(
        &config,
        Session::new("coder", "", format!("claude/{MODEL}")),
        &work,
        &root,
        EngineOptions {
            approval,
            sandbox: Baseline::default(),
            hooks,
            ..EngineOptions::default()
        },
    );
    Some(Coder {
        server,
        engine,
        events,
        session_id,
        work,
        _dir: dir,
    })
}

impl Coder {
    /// One turn: the model calls `tool` with `input`, then says `done`.
    async fn turn(&mut self, tool: &str, input: serde_json::Value) -> Vec<EventKind> {
        self.server.script(
            MODEL,
            vec![
                Reply::tool_call("toolu_1", tool, &input.to_string()),
                Reply::text("done"),
            ],
        );
        let turn = self.engine.ask(&self.session_id, "Make the file.".into(), None);
        let result = tokio::time::timeout(HANG_GUARD, turn)
            .await
            .expect("the turn hung")
            .expect("the turn runs");
        assert!(result.success, "{result:?}");
        let mut kinds = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            kinds.push(e.kind);
        }
        kinds
    }

    /// What the model got back for its call, as its next request carried it.
    fn result_the_model_saw(&self) -> (String, bool) {
        let requests = self.server.requests_for(MODEL);
        assert_eq!(requests.len(), 2, "a call, then the answer");
        let results = requests[1].tool_results();
        assert_eq!(results.len(), 1, "{results:?}");
        assert_eq!(results[0].call_id, "toolu_1");
        (results[0].content.clone(), results[0].is_error == Some(true))
    }
}

/// The approvals decided in `events`: (decision, reason).
fn decided(events: &[EventKind]) -> Vec<(Decision, Option<String>)> {
    events
        .iter()
        .filter_map(|k| match k {
            EventKind::ToolApprovalDecided { decision, reason, .. } => Some((*decision, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_pre_tool_use_hook_that_exits_2_blocks_claude_codes_write_and_its_model_reads_why() {
    let Some(mut c) = coder(
        "pre_tool_use:\n  - matcher: \"Write|Edit\"\n    command: [sh, -c, \"cat > {work}/pre.json; echo 'no writes on Sundays' >&2; exit 2\"]\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let target = c.work.join("made.txt");
    let events = c
        .turn(
            "Write",
            serde_json::json!({"file_path": target.display().to_string(), "content": "hi\n"}),
        )
        .await;
    assert!(!target.exists(), "the hook blocked the write");
    let (seen, is_error) = c.result_the_model_saw();
    assert!(seen.contains("no writes on Sundays"), "{seen}");
    assert!(is_error, "{seen}");
    assert_eq!(
        blocked(&events),
        [(
            "pre_tool_use".to_string(),
            Some("Write".to_string()),
            "no writes on Sundays".to_string()
        )]
    );
    // Nobody was asked: the hook decided.
    assert_eq!(decided(&events), []);
    // The hook saw Claude Code's call as Claude Code's own hooks do.
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(c.work.join("pre.json")).expect("the hook's input"))
            .expect("json");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Write");
    assert_eq!(input["tool_input"]["content"], "hi\n");
    assert_eq!(input["tool_use_id"], "toolu_1");
    // The denial is in the transcript: the step's result is the reason.
    let steps: Vec<(String, bool, String)> = events
        .iter()
        .filter_map(|k| match k {
            EventKind::ToolResult {
                name, ok, first_line, ..
            } => Some((name.clone(), *ok, first_line.clone())),
            _ => None,
        })
        .collect();
    assert!(
        steps
            .iter()
            .any(|(name, ok, line)| name == "Write" && !ok && line.contains("no writes on Sundays")),
        "{steps:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_allowing_hook_lets_claude_codes_bash_run_without_asking() {
    let Some(mut c) = coder(
        "pre_tool_use:\n  - matcher: Bash\n    command: [sh, -c, \"echo '{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"allow\\\"}}'\"]\n",
        // Without the hook, this would deny.
        ApprovalPolicy::DenyAll,
    )
    .await
    else {
        return;
    };
    let events = c
        .turn(
            "Bash",
            serde_json::json!({"command": "touch made-by-bash", "description": "make a file"}),
        )
        .await;
    assert!(c.work.join("made-by-bash").exists(), "the call ran");
    let (_, is_error) = c.result_the_model_saw();
    assert!(!is_error);
    assert_eq!(decided(&events), []);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn without_hooks_huddle_runs_rule_denies_claude_codes_bash_and_approve_tools_allows_it() {
    let Some(mut c) = coder("{}", ApprovalPolicy::DenyAll).await else {
        return;
    };
    let bash = serde_json::json!({"command": "touch made-by-bash", "description": "make a file"});
    let events = c.turn("Bash", bash.clone()).await;
    assert!(!c.work.join("made-by-bash").exists(), "denied");
    let (seen, is_error) = c.result_the_model_saw();
    assert_eq!(seen, huddle::tools::approval::DENIED_HEADLESS);
    assert!(is_error);
    assert_eq!(
        decided(&events),
        [(
            Decision::Deny,
            Some(huddle::tools::approval::DENIED_HEADLESS.to_string())
        )]
    );

    let Some(mut c) = coder("{}", ApprovalPolicy::ApproveAll).await else {
        return;
    };
    let events = c.turn("Bash", bash).await;
    assert!(c.work.join("made-by-bash").exists(), "approved");
    let (_, is_error) = c.result_the_model_saw();
    assert!(!is_error);
    assert_eq!(
        decided(&events),
        [(Decision::ApproveOnce, Some("--approve-tools".to_string()))]
    );
}

/// `huddle run` (the binary) with Claude Code as the model: its Bash call is denied without
/// `--approve-tools` and runs with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn huddle_run_denies_claude_codes_bash_unless_approve_tools() {
    let Some(claude) = claude_binary() else {
        return;
    };
    for approve in [false, true] {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let (work, home) = (root.join("work"), root.join("home"));
        std::fs::create_dir_all(&work).expect("work");
        std::fs::create_dir_all(&home).expect("home");
        let server = FakeLlm::start().await;
        server.script(
            MODEL,
            vec![
                Reply::tool_call(
                    "toolu_1",
                    "Bash",
                    r#"{"command": "touch made-by-bash", "description": "make a file"}"#,
                ),
                Reply::text("done"),
            ],
        );
        let command: Vec<String> = claude_command(&claude, &server, &home)
            .into_iter()
            .map(|a| serde_json::to_string(&a).expect("quoted"))
            .collect();
        std::fs::write(
            root.join("config.yaml"),
            format!(
                "providers:\n  - {{ name: claude, kind: command, agent: claude, command: [{}] }}\n",
                command.join(", ")
            ),
        )
        .expect("config");
        let mut args = vec!["run", "--model", "claude/claude-test-model"];
        if approve {
            args.push("--approve-tools");
        }
        args.push("Make the file.");
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_huddle"));
        cmd.args(&args)
            .env("HUDDLE_HOME", &root)
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(&work);
        let out = tokio::task::spawn_blocking(move || cmd.output().expect("run huddle"))
            .await
            .expect("joined");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        assert_eq!(work.join("made-by-bash").exists(), approve, "{stderr}");
        let requests = server.requests_for(MODEL);
        assert_eq!(requests.len(), 2, "{stderr}");
        let results = requests[1].tool_results();
        assert_eq!(results.len(), 1, "{results:?}");
        if approve {
            assert_ne!(results[0].is_error, Some(true), "{results:?}");
        } else {
            assert_eq!(results[0].content, huddle::tools::approval::DENIED_HEADLESS);
        }
    }
}

/// The protocol's rough edges, with a stand-in (`control_peer.py`): huddle sends `initialize`
/// and the prompt as JSON lines with the protocol's flags; a request without an id and a line
/// that is not JSON are skipped; a request huddle does not serve gets an error answer; a 300 kB
/// call is put to the asker and its refusal goes back with the asker's reason; stdin ends once
/// the result line came.
#[tokio::test]
async fn the_control_protocol_skips_junk_refuses_what_it_does_not_serve_and_ends_stdin() {
    use huddle::providers::{ChatMessage, PermissionAnswer, PermissionAsker, PermissionRequest, TurnRequest};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("peer.jsonl");
    let mut p = ProviderConfig::new("claude", ProviderKind::Command);
    p.agent = Some(AgentKind::Claude);
    p.format = Some(AgentKind::Claude.format());
    p.command = vec![
        "python3".into(),
        super::providers_agents::fixture("control_peer.py"),
        log.display().to_string(),
        "--model".into(),
        "{model}".into(),
    ];
    let mut config = Config::default();
    config.providers.push(p);
    let provider = huddle::sim::providers(&config)
        .expect("providers")
        .get("claude")
        .expect("claude");
    let asked: Arc<Mutex<Vec<PermissionRequest>>> = Arc::default();
    let seen = asked.clone();
    let mut req = TurnRequest::new("sonnet", vec![ChatMessage::user("write a.txt")]);
    req.permission = Some(PermissionAsker::new(move |request| {
        seen.lock().expect("asked").push(request);
        Box::pin(async {
            PermissionAnswer {
                decision: Decision::Deny,
                refused: Some("not on Sundays".into()),
            }
        })
    }));
    let mut deltas = |_: &str| {};
    let turn = provider.stream_turn(req, &mut deltas, tokio_util::sync::CancellationToken::new());
    let out = tokio::time::timeout(HANG_GUARD, turn)
        .await
        .expect("the turn hung")
        .expect("the turn succeeds");
    assert_eq!(out.text, "ok");
    let steps = out.agent.expect("agent report").steps;
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(
        (steps[0].result.as_str(), steps[0].is_error),
        ("not on Sundays", true)
    );

    let asked = asked.lock().expect("asked");
    assert_eq!(asked.len(), 1, "only the well-formed can_use_tool is asked");
    assert_eq!(
        (asked[0].call.id.as_str(), asked[0].call.name.as_str()),
        ("t1", "Write")
    );
    let input: serde_json::Value = serde_json::from_str(&asked[0].call.arguments).expect("arguments");
    assert_eq!(input["content"].as_str().map(str::len), Some(300_000));

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("peer log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("log line"))
        .collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    let argv: Vec<&str> = lines[0]
        .as_array()
        .expect("argv")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        argv,
        [
            "--model",
            "sonnet",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio"
        ]
    );
    assert_eq!(lines[1]["request"]["subtype"], "initialize");
    assert_eq!(lines[2]["type"], "user");
    assert_eq!(
        lines[2]["message"]["content"]
            .as_str()
            .map(|c| c.contains("write a.txt")),
        Some(true)
    );
    assert_eq!(lines[3]["response"]["subtype"], "error");
    assert_eq!(lines[3]["response"]["request_id"], "u1");
    assert_eq!(
        lines[4]["response"]["response"],
        serde_json::json!({"behavior": "deny", "message": "not on Sundays"})
    );
    assert_eq!(lines[4]["response"]["request_id"], "c1");
    assert_eq!(lines[5], serde_json::json!({"eof_after_result": true}));
}
