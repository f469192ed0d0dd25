//! The sandbox through the engine: a command agent (a test script) working in its worktree in
//! `workspace-write` writes there and nothing else (not the home directory, the main
//! checkout, another member's worktree) and cannot read `~/.ssh`; with the network off it
//! reaches nothing on the host's loopback; a stdio MCP server in a worktree is confined the
//! same way; a required sandbox that is missing starts nothing and says so (an event, the
//! turn's error).

use std::path::Path;
use std::sync::Arc;

use huddle::config::Config;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{Group, GroupKind, Organization, Session, Worktree, reconcile};
use huddle::sandbox::{Baseline, SandboxSettings};
use huddle::store::{OrgHandle, Transcripts};
use huddle::tools::ToolSource;
use huddle::tools::mcp::{McpServerConfig, McpSource};
use tokio::sync::mpsc::UnboundedReceiver;

use super::sandbox_support::{Machine, bwrap_ready, git, outside_tmp};

/// Tries each thing from its working directory and prints `<name> ok|denied`, one a line.
const PROBE: &str = r#"home="$1"; repo="$2"; bob="$3"
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
try own "echo hi > own.txt"
try home "echo x > '$home/x'"
try repo "echo x > '$repo/b.txt'"
try bob "echo x > '$bob/x'"
try ssh "cat '$home/.ssh/id_test'"
"#;

struct Team {
    engine: Engine,
    events: UnboundedReceiver<EngineEvent>,
    alice: String,
    _machine: Machine,
}

/// A team whose members alice and bob work in their own worktrees of `m`, on the command
/// provider `agent` running `command`; alice's own `sandbox:` is `member`.
fn team(m: Machine, command: &[String], config: SandboxSettings, member: SandboxSettings) -> Team {
    team_reading(m, command, "text", config, member)
}

/// As [`team`], the agent's stdout read as `format`.
fn team_reading(
    m: Machine,
    command: &[String],
    format: &str,
    config: SandboxSettings,
    member: SandboxSettings,
) -> Team {
    let yaml = format!(
        "providers:\n  - {{ name: agent, kind: command, format: {format}, command: {} }}\n",
        serde_json::to_string(command).expect("json")
    );
    let providers = huddle::sim::providers(&Config::parse(&yaml, Path::new("c.yaml")).expect("config"))
        .expect("providers");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("Team", GroupKind::Team);
    group.repo = Some(m.repo.clone());
    let base = git(&m.repo, &["rev-parse", "HEAD"]).trim().to_string();
    let mut alice = Session::new("team-alice", &group.id, "agent/x");
    alice.sandbox = member;
    let mut bob = Session::new("team-bob", &group.id, "agent/x");
    for (s, path, branch) in [
        (&mut alice, &m.alice, "huddle/t-alice-0a1b"),
        (&mut bob, &m.bob, "huddle/t-bob-2c3d"),
    ] {
        s.team = true;
        s.worktree = Some(Worktree {
            path: path.clone(),
            branch: branch.into(),
            base_commit: base.clone(),
            repo: m.repo.clone(),
            subdir: None,
        });
    }
    let alice_id = alice.id.clone();
    org.groups.push(group);
    org.sessions.extend([alice, bob]);
    let (sink, events) = EventSink::channel();
    let engine = Engine::new(
        providers,
        OrgHandle::in_memory(org),
        Transcripts::new(m.data.join("sessions")),
        sink,
        EngineOptions {
            sandbox: Baseline {
                config,
                cli: None,
                host: m.host(),
            },
            ..EngineOptions::default()
        },
    );
    Team {
        engine,
        events,
        alice: alice_id,
        _machine: m,
    }
}

fn drain(events: &mut UnboundedReceiver<EngineEvent>) -> Vec<EventKind> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        out.push(e.kind);
    }
    out
}

#[tokio::test]
async fn a_command_agent_writes_its_worktree_only_and_cannot_read_ssh() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let script = m.root.join("probe.sh");
    std::fs::write(&script, PROBE).expect("script");
    let (home, repo, alice, bob) = (m.home.clone(), m.repo.clone(), m.alice.clone(), m.bob.clone());
    let command: Vec<String> = ["sh", &script.display().to_string()]
        .into_iter()
        .map(str::to_string)
        .chain([&home, &repo, &bob].map(|p| p.display().to_string()))
        .collect();
    let t = team(
        m,
        &command,
        SandboxSettings::default(),
        SandboxSettings::default(),
    );
    let answer = t
        .engine
        .ask(&t.alice, "Try things.".into(), None)
        .await
        .expect("turn");
    assert!(answer.success, "{answer:?}");
    assert_eq!(
        answer.text,
        "own ok\nhome denied\nrepo denied\nbob denied\nssh denied\n"
    );
    assert_eq!(
        std::fs::read_to_string(alice.join("own.txt")).ok().as_deref(),
        Some("hi\n")
    );
    assert!(!home.join("x").exists());
    assert!(!repo.join("b.txt").exists());
    assert!(!bob.join("x").exists());
    assert_eq!(
        t.engine.sandbox_label(&t.alice).as_deref(),
        Some("sandbox: workspace-write, network on")
    );
}

#[tokio::test]
async fn with_the_network_off_a_command_agent_cannot_reach_the_hosts_loopback() {
    if !bwrap_ready() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let command = vec![
        "python3".to_string(),
        "-c".to_string(),
        format!(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\nexcept OSError as e:\n    print('refused:', e.__class__.__name__)"
        ),
    ];
    let offline: SandboxSettings = serde_yaml::from_str("network: off").expect("yaml");
    let t = team(m, &command, SandboxSettings::default(), offline);
    let answer = t
        .engine
        .ask(&t.alice, "Call home.".into(), None)
        .await
        .expect("turn");
    assert_eq!(answer.text, "refused: ConnectionRefusedError\n", "{answer:?}");
    assert!(listener.accept().is_err(), "nothing arrived");
    assert_eq!(
        t.engine.sandbox_label(&t.alice).as_deref(),
        Some("sandbox: workspace-write, network off")
    );
}

#[tokio::test]
async fn a_required_sandbox_that_is_missing_starts_no_agent_and_says_why() {
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let marker = m.alice.join("ran.txt");
    let command = vec!["sh".into(), "-c".into(), format!("touch {}", marker.display())];
    let config: SandboxSettings =
        serde_yaml::from_str("mode: workspace-write\nbwrap: /nonexistent/bwrap\n").expect("yaml");
    let mut t = team(m, &command, config, SandboxSettings::default());
    let answer = t.engine.ask(&t.alice, "Do it.".into(), None).await.expect("turn");
    assert!(!answer.success);
    let error = answer.error.unwrap_or_default();
    assert!(
        error.contains(
            "the sandbox is required (workspace-write, set in config.yaml) but not available: bwrap not found at /nonexistent/bwrap"
        ),
        "{error}"
    );
    assert!(!marker.exists(), "the agent never ran");
    let refused: Vec<String> = drain(&mut t.events)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::SandboxRefused { what, session, .. } => {
                Some(format!("{what} ({})", session.unwrap_or_default()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(refused, ["agent agent (team-alice)"]);
    let label = t.engine.sandbox_label(&t.alice).unwrap_or_default();
    assert!(
        label.starts_with("sandbox: REFUSED, the sandbox is required"),
        "{label}"
    );
}

/// Review 26-2 finding 6: where no sandbox works and none is required, the agent runs
/// unconfined, but never silently: a warning event says so (a run without a header too); one
/// whose sandbox was set off is not warned about.
#[tokio::test]
async fn an_agent_that_goes_unconfined_because_no_sandbox_works_is_warned_about() {
    for (config, warned) in [
        ("bwrap: /nonexistent/bwrap\n", true),
        ("mode: off\nbwrap: /nonexistent/bwrap\n", false),
    ] {
        let dir = outside_tmp();
        let m = Machine::new(dir.path());
        let marker = m.alice.join("ran.txt");
        let command = vec!["sh".into(), "-c".into(), format!("touch {}", marker.display())];
        let settings: SandboxSettings = serde_yaml::from_str(config).expect("yaml");
        let mut t = team(m, &command, settings, SandboxSettings::default());
        let answer = t.engine.ask(&t.alice, "Do it.".into(), None).await.expect("turn");
        assert!(answer.success, "{answer:?}");
        assert!(marker.exists(), "the agent ran");
        let warnings: Vec<String> = drain(&mut t.events)
            .into_iter()
            .filter_map(|k| match k {
                EventKind::Warning { message } => Some(message),
                _ => None,
            })
            .filter(|m| m.contains("runs unconfined"))
            .collect();
        assert_eq!(!warnings.is_empty(), warned, "{config}: {warnings:?}");
        if warned {
            assert!(
                warnings[0].contains("bwrap not found at /nonexistent/bwrap"),
                "{warnings:?}"
            );
        }
    }
}

/// A stdio MCP server (JSON-RPC lines, no SDK) whose one tool tries the same things as
/// [`PROBE`] from where it runs.
const PROBE_SERVER: &str = r#"
import json, os, sys
home, repo, bob = sys.argv[1:4]
def attempt(name, f):
    try:
        f(); return name + " ok"
    except OSError:
        return name + " denied"
def write(p):
    with open(p, "w") as f: f.write("x")
def read(p):
    with open(p) as f: f.read()
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "probe",
              "description": "Tries to write and read", "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        said = [attempt("own", lambda: write("own.txt")), attempt("home", lambda: write(os.path.join(home, "x"))),
                attempt("repo", lambda: write(os.path.join(repo, "b.txt"))), attempt("bob", lambda: write(os.path.join(bob, "x"))),
                attempt("ssh", lambda: read(os.path.join(home, ".ssh", "id_test")))]
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "\n".join(said)}]}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no method"}})
"#;

#[tokio::test]
async fn a_stdio_mcp_server_in_a_worktree_is_confined_the_same_way() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let script = m.root.join("probe_server.py");
    std::fs::write(&script, PROBE_SERVER).expect("script");
    let mut server = McpServerConfig::stdio(
        ["python3", &script.display().to_string()]
            .into_iter()
            .map(str::to_string)
            .chain([&m.home, &m.repo, &m.bob].map(|p| p.display().to_string())),
    );
    server.cwd = Some("session".into());
    let baseline = Baseline {
        config: SandboxSettings::default(),
        cli: None,
        host: m.host(),
    };
    let servers = [("probe".to_string(), server)].into_iter().collect();
    let toolbox = huddle::tools::mcp::toolbox(&servers, &m.repo, &baseline);
    let source: &Arc<dyn ToolSource> = toolbox.get("probe").expect("configured");
    let out = source
        .call(
            "probe",
            serde_json::Map::new(),
            Some(&m.alice),
            Default::default(),
        )
        .await
        .expect("the call");
    assert_eq!(
        out.text,
        "own ok\nhome denied\nrepo denied\nbob denied\nssh denied"
    );
    assert!(m.alice.join("own.txt").exists());
    assert!(!m.home.join("x").exists() && !m.repo.join("b.txt").exists() && !m.bob.join("x").exists());
    toolbox.shutdown().await;

    // The same server with a sandbox that is required and missing does not start.
    let mut missing = McpServerConfig::stdio(["python3", &script.display().to_string()]);
    missing.sandbox = serde_yaml::from_str("mode: read-only\nbwrap: /nonexistent/bwrap").expect("yaml");
    let source = McpSource::new("probe", missing.clone(), &m.repo)
        .with_sandbox(huddle::tools::mcp::sandbox_of("probe", &missing, &baseline));
    let err = source.list(None).await.expect_err("refused");
    assert!(
        err.to_string()
            .contains("the sandbox is required (read-only, set in mcp_servers.probe) but not available"),
        "{err}"
    );
}

/// Review of issue 26, finding 6: a CLI agent that met the sandbox (a write to a read-only
/// place) and went on to succeed still says so: `sandbox_denied` from its own tool results.
#[tokio::test]
async fn a_denial_inside_a_successful_agent_turn_is_an_event() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let script = m.root.join("claude.sh");
    std::fs::write(
        &script,
        r#"cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"s1","tools":["Bash"],"model":"x"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"touch ~/x"}}]},"session_id":"s1"}'
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"touch: cannot touch /home/u/x: Read-only file system","is_error":true}]},"session_id":"s1"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I could not write there."}]},"session_id":"s1"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"I could not write there.","session_id":"s1"}'
"#,
    )
    .expect("script");
    let command = vec!["sh".to_string(), script.display().to_string()];
    let mut t = team_reading(
        m,
        &command,
        "claude-stream-json",
        SandboxSettings::default(),
        SandboxSettings::default(),
    );
    let answer = t
        .engine
        .ask(&t.alice, "Write home.".into(), None)
        .await
        .expect("turn");
    assert!(answer.success, "{answer:?}");
    let denied: Vec<(String, String)> = drain(&mut t.events)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::SandboxDenied { what, detail, .. } => Some((what, detail)),
            _ => None,
        })
        .collect();
    assert_eq!(
        denied,
        vec![(
            "agent agent (Bash)".to_string(),
            "touch: cannot touch /home/u/x: Read-only file system".to_string()
        )]
    );
}

/// Review 26-2, finding 1: a plain-text command agent whose write the sandbox refused but which
/// went on and exited 0 (the issue's own test agent) still says so: `sandbox_denied` from its
/// stderr and from its answer (each line once), and a notice in the transcript.
#[tokio::test]
async fn a_text_agent_that_met_the_sandbox_and_exited_0_is_reported() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let script = m.root.join("ok-agent.sh");
    std::fs::write(
        &script,
        r#"cat > /dev/null
echo x > "$1/ok-x"
echo x > "$1/ok-y"
echo "could not write, moving on"
echo "note: touch: cannot touch 'elsewhere': Read-only file system"
exit 0
"#,
    )
    .expect("script");
    let home = m.home.clone();
    let command = vec![
        "sh".to_string(),
        script.display().to_string(),
        home.display().to_string(),
    ];
    let mut t = team(
        m,
        &command,
        SandboxSettings::default(),
        SandboxSettings::default(),
    );
    let answer = t
        .engine
        .ask(&t.alice, "Write home.".into(), None)
        .await
        .expect("turn");
    assert!(answer.success, "{answer:?}");
    assert!(!home.join("ok-x").exists());
    let denied: Vec<(String, String)> = drain(&mut t.events)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::SandboxDenied { what, detail, .. } => Some((what, detail)),
            _ => None,
        })
        .collect();
    let whats: Vec<&str> = denied.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(whats, ["agent agent"; 3], "{denied:?}");
    // From its answer first, then stderr's two refused writes.
    assert_eq!(
        denied[0].1,
        "note: touch: cannot touch 'elsewhere': Read-only file system"
    );
    for (detail, file) in denied[1..].iter().map(|(_, d)| d).zip(["ok-x", "ok-y"]) {
        assert!(
            detail.contains(file) && detail.contains("Read-only file system"),
            "{denied:?}"
        );
    }
    let transcript = t.engine.load_transcript(&t.alice).expect("transcript");
    let notices: Vec<&str> = transcript
        .messages
        .iter()
        .filter(|m| m.role == huddle::model::MessageRole::Notice)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].lines().count(), 3, "{notices:?}");
    assert!(
        notices[0].starts_with("the sandbox stopped agent agent: note: touch"),
        "{notices:?}"
    );
}

/// Review of issue 26, finding 6: what a sandboxed stdio MCP server's stderr says the sandbox
/// stopped is kept for the next call's report.
#[tokio::test]
async fn a_sandboxed_mcp_servers_stderr_denials_are_kept_for_the_report() {
    if !bwrap_ready() {
        return;
    }
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let script = m.root.join("denied_server.py");
    std::fs::write(
        &script,
        PROBE_SERVER.replace(
            "said = [",
            "sys.stderr.write('cannot save: [Errno 30] Read-only file system\\n'); sys.stderr.flush(); said = [",
        ),
    )
    .expect("script");
    let mut server = McpServerConfig::stdio(
        ["python3", &script.display().to_string()]
            .into_iter()
            .map(str::to_string)
            .chain([&m.home, &m.repo, &m.bob].map(|p| p.display().to_string())),
    );
    server.cwd = Some("session".into());
    let baseline = Baseline {
        config: SandboxSettings::default(),
        cli: None,
        host: m.host(),
    };
    let servers = [("probe".to_string(), server)].into_iter().collect();
    let toolbox = huddle::tools::mcp::toolbox(&servers, &m.repo, &baseline);
    let source: &Arc<dyn ToolSource> = toolbox.get("probe").expect("configured");
    assert!(source.confined());
    source
        .call(
            "probe",
            serde_json::Map::new(),
            Some(&m.alice),
            Default::default(),
        )
        .await
        .expect("the call");
    // stderr is read by its own task: give it a moment.
    let mut kept = Vec::new();
    for _ in 0..50 {
        kept.extend(source.take_denials());
        if !kept.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        kept,
        vec!["cannot save: [Errno 30] Read-only file system".to_string()]
    );
    assert!(source.take_denials().is_empty(), "taken once");
    toolbox.shutdown().await;
}

/// Review 26-2, finding 18: a session's tool server that its required sandbox kept from
/// starting leaves a notice in the transcript (the model is just not offered its tools).
#[tokio::test]
async fn a_tool_server_refused_by_its_sandbox_leaves_a_notice_in_the_transcript() {
    let dir = outside_tmp();
    let work = dir.path().canonicalize().expect("dir");
    let mut server = McpServerConfig::stdio(["python3", "-c", "pass"]);
    server.sandbox = serde_yaml::from_str("mode: read-only\nbwrap: /nonexistent/bwrap").expect("yaml");
    let baseline = Baseline::default();
    let servers = [("probe".to_string(), server)].into_iter().collect();
    let toolbox = huddle::tools::mcp::toolbox(&servers, &work, &baseline);
    let providers = huddle::sim::providers(&Config::default()).expect("providers");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group = Group::new("tools", GroupKind::Repo);
    let mut session = Session::new("looker", &group.id, "sim/x");
    session.tools = vec!["probe".into()];
    session.repo = Some(work.clone());
    let id = session.id.clone();
    org.groups.push(group);
    org.sessions.push(session);
    let (sink, _events) = EventSink::channel();
    let engine = Engine::new(
        providers,
        OrgHandle::in_memory(org),
        Transcripts::new(work.join("sessions")),
        sink,
        EngineOptions {
            tools: toolbox,
            sandbox: baseline,
            ..EngineOptions::default()
        },
    );
    let answer = engine.ask(&id, "Look.".into(), None).await.expect("turn");
    assert!(answer.success, "{answer:?}");
    let transcript = engine.load_transcript(&id).expect("transcript");
    let notices: Vec<&str> = transcript
        .messages
        .iter()
        .filter(|m| m.role == huddle::model::MessageRole::Notice)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(
            "tool server `probe` could not start: the sandbox is required (read-only, set in mcp_servers.probe) but not available"
        ) && notices[0].ends_with(" (its tools were not offered)"),
        "{notices:?}"
    );
}
