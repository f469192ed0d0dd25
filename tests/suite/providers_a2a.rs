//! Remote A2A agents through the real `a2a` provider, against a counterpart served by the
//! protocol's reference SDK (`a2a-sdk[http-server]` 1.3.0 from PyPI, `tests/fixtures/a2a/`) on
//! 127.0.0.1: the card read, a streamed answer, the A2A context kept between turns, an
//! `input-required` task answered by the next message, a stop mid-stream cancelling the remote
//! task, `SendMessage` for an agent that does not stream, a failed task, the secret scan on what
//! leaves, control sequences stripped from what comes in, the private-host rule, and a
//! full_auto relay through `huddle run` whose counterpart is the remote agent.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use huddle::config::{A2aSettings, Config, ProviderConfig, ProviderKind};
use huddle::providers::{
    AgentActivity, AgentActivitySink, ChatMessage, ErrorKind, Provider, ProviderError, TurnOutput,
    TurnRequest,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::providers_acp::test_python;

const TOKEN: &str = "tok-a2a-7f3c9e1d55";

/// The reference SDK's server; killed when dropped.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The JSON-RPC requests it received.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("log line"))
            .collect()
    }
}

/// Starts the test counterpart (`args`: `--no-stream`...) and waits until its card answers.
fn server(args: &[&str]) -> Option<Server> {
    let python = test_python("a2a.server")?;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.jsonl");
    let mut child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a/test_server.py"))
        .arg(&log)
        .args(["--token", TOKEN])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the A2A test server");
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    let port: u16 = line.trim().parse().expect("the server's port");
    let server = Server {
        child,
        port,
        log,
        _dir: dir,
    };
    let card = format!("{}/.well-known/agent-card.json", server.url());
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let ok = std::process::Command::new("curl")
            .args(["-sf", "-o", "/dev/null", &card])
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(server);
        }
        assert!(
            Instant::now() < deadline,
            "the A2A test server did not answer at {card}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn config(url: &str, allow_private: bool) -> ProviderConfig {
    let mut p = ProviderConfig::new("peer", ProviderKind::A2a);
    p.headers
        .insert("Authorization".into(), format!("Bearer {TOKEN}"));
    p.a2a = Some(A2aSettings {
        url: url.to_string(),
        headers_env: Default::default(),
        allow_private,
    });
    p
}

fn provider(p: ProviderConfig) -> Arc<dyn Provider> {
    let mut config = Config::default();
    config.providers.push(p);
    huddle::sim::providers(&config)
        .expect("providers")
        .get("peer")
        .expect("peer")
}

struct Turn {
    result: Result<TurnOutput, ProviderError>,
    deltas: Vec<String>,
    sessions: Vec<String>,
}

impl Turn {
    fn out(&self) -> &TurnOutput {
        self.result.as_ref().expect("the turn succeeds")
    }
    fn session(&self) -> Option<&str> {
        self.out().agent.as_ref().and_then(|a| a.session_id.as_deref())
    }
}

async fn turn(p: &dyn Provider, text: &str, session: Option<&str>, cancel: CancellationToken) -> Turn {
    let mut req = TurnRequest::new(
        "default",
        vec![
            ChatMessage::user("an earlier, local question"),
            ChatMessage::assistant("a local answer"),
            ChatMessage::user(text),
        ],
    );
    req.system = Some("huddle's own instructions".into());
    req.agent_session_id = session.map(str::to_string);
    req.turn_timeout = Some(Duration::from_secs(60));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    req.agent_activity = Some(AgentActivitySink::new(move |a| {
        if let AgentActivity::Session(id) = a {
            log.lock().unwrap().push(id);
        }
    }));
    let mut deltas = Vec::new();
    let stop = cancel.clone();
    let mut sink = |d: &str| {
        deltas.push(d.to_string());
        // The stop test stops at the first chunk.
        if d.contains("chunk 0") {
            stop.cancel();
        }
    };
    let result = p.stream_turn(req, &mut sink, cancel).await;
    let sessions = seen.lock().unwrap().clone();
    Turn {
        result,
        deltas,
        sessions,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_streamed_answer_and_the_next_turn_in_the_same_context() {
    let Some(server) = server(&[]) else { return };
    let p = provider(config(&server.url(), true));
    let first = turn(p.as_ref(), "hello there", None, CancellationToken::new()).await;
    assert_eq!(first.out().text, "echo: hello there");
    assert_eq!(first.out().finish_reason.as_deref(), Some("completed"));
    assert!(!first.deltas.is_empty(), "streamed");
    let context = first.session().expect("the A2A context is kept").to_string();
    assert!(
        !context.contains(' '),
        "no task kept after a completed one: {context}"
    );
    assert_eq!(first.sessions, vec![context.clone()]);

    let second = turn(p.as_ref(), "second", Some(&context), CancellationToken::new()).await;
    assert_eq!(
        second.out().text,
        "echo: second [[RELAY_COMPLETE]]",
        "the server counted two turns in one context"
    );
    assert_eq!(second.session(), Some(context.as_str()));
    let requests = server.requests();
    let sent: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap_or(""),
                r["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        sent,
        vec![
            ("SendStreamingMessage", "hello there"),
            ("SendStreamingMessage", "second")
        ],
        "only the turn's message leaves"
    );
    assert_eq!(requests[0]["contextId"], Value::Null);
    assert_eq!(requests[1]["contextId"], context.as_str());
    assert_eq!(requests[0]["version"], "1.0");
    assert_eq!(requests[0]["authorization"], format!("Bearer {TOKEN}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_input_required_task_waits_and_the_next_message_answers_it() {
    let Some(server) = server(&[]) else { return };
    let p = provider(config(&server.url(), true));
    let asked = turn(
        p.as_ref(),
        "please ask me something",
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(asked.out().text, "Which city?");
    assert_eq!(asked.out().finish_reason.as_deref(), Some("input_required"));
    let kept = asked.session().expect("context and task kept").to_string();
    let (context, task) = kept
        .split_once(' ')
        .expect("the waiting task is kept with the context");

    let answered = turn(p.as_ref(), "Paris", Some(&kept), CancellationToken::new()).await;
    assert_eq!(answered.out().text, "echo: Paris");
    assert_eq!(answered.out().finish_reason.as_deref(), Some("completed"));
    assert_eq!(
        answered.session(),
        Some(context),
        "the task is done; the context goes on"
    );
    let requests = server.requests();
    assert_eq!(requests[1]["taskId"], task);
    assert_eq!(requests[1]["contextId"], context);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_stop_mid_stream_cancels_the_remote_task() {
    let Some(server) = server(&[]) else { return };
    let p = provider(config(&server.url(), true));
    let started = Instant::now();
    let stopped = turn(p.as_ref(), "slow please", None, CancellationToken::new()).await;
    let err = stopped.result.expect_err("stopped");
    assert_eq!(err.kind, ErrorKind::Cancelled, "{err}");
    assert_eq!(err.partial_text, "chunk 0 ");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "stopped at once, not after the whole stream"
    );
    let requests = server.requests();
    let cancel = requests
        .iter()
        .find(|r| r["method"] == "CancelTask")
        .expect("CancelTask sent");
    assert!(cancel["id"].as_str().is_some_and(|id| !id.is_empty()), "{cancel}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_agent_that_does_not_stream_gets_send_message_and_a_failed_task_is_an_error() {
    let Some(server) = server(&["--no-stream"]) else {
        return;
    };
    let p = provider(config(&server.url(), true));
    let ok = turn(p.as_ref(), "hi", None, CancellationToken::new()).await;
    assert_eq!(ok.out().text, "echo: hi");
    let failed = turn(p.as_ref(), "fail now", None, CancellationToken::new()).await;
    let err = failed.result.expect_err("the task failed");
    assert_eq!(err.kind, ErrorKind::Process);
    assert!(err.message.contains("failed: cannot do that"), "{err}");
    let methods: Vec<Value> = server.requests().iter().map(|r| r["method"].clone()).collect();
    assert_eq!(methods, vec!["SendMessage", "SendMessage"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn secrets_do_not_leave_control_sequences_do_not_come_in_and_private_hosts_need_consent() {
    let Some(server) = server(&[]) else { return };
    let p = provider(config(&server.url(), true));
    let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
    let evil = turn(
        p.as_ref(),
        &format!("evil: the key {key} and the token {TOKEN}"),
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(evil.out().text, "clean words", "escape sequences stripped");
    let requests = server.requests();
    let sent = requests[0]["text"].as_str().unwrap_or("");
    assert!(
        !sent.contains(key) && !sent.contains(TOKEN) && sent.contains("[redacted]"),
        "{sent}"
    );

    let mut wrong = config(&server.url(), true);
    wrong
        .headers
        .insert("Authorization".into(), "Bearer wrong".into());
    let refused = turn(provider(wrong).as_ref(), "hi", None, CancellationToken::new()).await;
    let err = refused.result.expect_err("401");
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert!(
        !err.message.contains("wrong"),
        "header values are never shown: {err}"
    );

    let private = turn(
        provider(config(&server.url(), false)).as_ref(),
        "hi",
        None,
        CancellationToken::new(),
    )
    .await;
    let err = private.result.expect_err("loopback refused");
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(err.message.contains("allow_private: true"), "{err}");
    assert_eq!(server.requests().len(), 1, "nothing more reached the server");
}

/// `huddle doctor` reads the card; `huddle run` relays in full_auto to the remote agent.
#[test]
fn a_full_auto_relay_talks_to_the_remote_agent_in_one_context() {
    let Some(server) = server(&[]) else { return };
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "default_model: sim/default\nproviders:\n  - name: peer\n    kind: a2a\n    a2a:\n      url: \"{}\"\n      headers_env: {{ Authorization: HUDDLE_TEST_A2A_AUTH }}\n      allow_private: true\n",
            server.url()
        ),
    )
    .expect("config");
    std::fs::create_dir_all(home.path().join("presets")).expect("presets");
    std::fs::write(
        home.path().join("presets/remote.yaml"),
        "name: Remote\nmode: relay\nrelay: { driver: me, counterpart: peer, approval: full_auto, max_turns: 4 }\nworkers:\n  - { name: me }\n  - { name: peer, model: peer/default }\n",
    )
    .expect("preset");
    let huddle = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(args)
            .env("HUDDLE_HOME", home.path())
            .env("HUDDLE_TEST_A2A_AUTH", format!("Bearer {TOKEN}"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(home.path())
            .output()
            .expect("run huddle")
    };
    let doctor = huddle(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("remote A2A agent at http://127.0.0.1"), "{said}");
    assert!(
        said.contains("huddle test counterpart 1.0.0; skills: Echo; streams"),
        "the card is read and shown: {said}"
    );

    let out = huddle(&[
        "run",
        "--preset",
        "Remote",
        "--events",
        "Ask the remote agent: password=hunter2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let sent_texts: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "relay_sent")
        .filter_map(|e| e["text"].as_str())
        .collect();
    let sent = sent_texts.len();
    assert!(sent >= 1, "{err}");
    // What the relay says it sent is what the A2A agent got: secrets redacted (review 27-F).
    assert!(
        sent_texts[0].contains("Ask the remote agent: [redacted]")
            && sent_texts.iter().all(|t| !t.contains("hunter2")),
        "{sent_texts:?}"
    );
    let requests: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "SendStreamingMessage")
        .collect();
    assert_eq!(requests.len(), sent, "each sent draft is one A2A message");
    assert!(
        requests.iter().all(|r| !r.to_string().contains("hunter2")),
        "{requests:?}"
    );
    assert!(
        requests
            .iter()
            .all(|r| r["authorization"] == format!("Bearer {TOKEN}"))
    );
    let contexts: Vec<&Value> = requests.iter().skip(1).map(|r| &r["contextId"]).collect();
    assert!(
        contexts.windows(2).all(|w| w[0] == w[1]) && contexts.iter().all(|c| c.is_string()),
        "one context: {requests:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "relay_state" && e["state"] == "completed"),
        "{err}"
    );
}

/// What the terminal UI's runtime does to show a remote agent in its sessions' header: the card
/// the reference SDK serves, in the header's words (name, description, skills); a private
/// host without consent is refused as for a turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_cards_header_words_are_read_from_the_reference_server() {
    let Some(server) = server(&[]) else { return };
    let options = huddle::providers::ProviderOptions::default();
    let card = huddle::providers::a2a::card_header(&config(&server.url(), true), options).await;
    assert_eq!(
        card.as_deref(),
        Ok("huddle test counterpart — Echoes; asks for input on 'ask me'. · skills: Echo")
    );
    let refused = huddle::providers::a2a::card_header(&config(&server.url(), false), options).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("allow_private: true")),
        "{refused:?}"
    );
}

/// The header of a session whose model is a remote A2A agent: showing it asks the runtime for
/// the agent's card (once); the header says it is being read, then shows the card, or why it
/// could not be read (sanitised).
#[test]
fn the_session_header_shows_the_remote_agents_card() {
    use huddle::model::{Organization, Session, reconcile};
    use huddle::tui::command::{AppEvent, Command};

    use super::tui_support::{ch, new_app, render, screen_text, select_a_session};
    let mut cfg = super::tui_support::config();
    cfg.providers
        .push(config("https://agents.example.com/travel", false));
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = org.default_group().expect("default group").id.clone();
    org.sessions
        .push(Session::new("travel", &group_id, "peer/default"));
    let (mut app, initial) = new_app(org, cfg);
    let commands = select_a_session(&mut app, initial);
    let asked: Vec<&String> = commands
        .iter()
        .filter_map(|c| match c {
            Command::ReadAgentCard { provider } => Some(provider),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["peer"]);
    let title = |app: &mut huddle::tui::app::App| {
        let text = screen_text(&render(app, 200, 20));
        text.lines()
            .find(|l| l.contains("travel ·"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        title(&mut app).contains("· a2a: reading its card… "),
        "{}",
        title(&mut app)
    );
    app.handle_app_event(AppEvent::AgentCardRead {
        provider: "peer".into(),
        card: Ok("Travel — Books trips. · skills: Flights, Hotels".into()),
    });
    assert!(
        title(&mut app).contains("· a2a: Travel — Books trips. · skills: Flights, Hotels "),
        "{}",
        title(&mut app)
    );
    app.handle_app_event(AppEvent::AgentCardRead {
        provider: "peer".into(),
        card: Err("cannot connect to \u{1b}[31mthe remote agent".into()),
    });
    assert!(
        title(&mut app).contains("· a2a: card not read (cannot connect to the remote agent) "),
        "{}",
        title(&mut app)
    );
    // Shown again: not read again.
    let again = app.handle_key(ch('k'));
    let again2 = app.handle_key(ch('j'));
    assert!(
        !again
            .iter()
            .chain(&again2)
            .any(|c| matches!(c, Command::ReadAgentCard { .. })),
        "{again:?} {again2:?}"
    );
}

/// An error names the endpoint the user configured as it is (review 27-F): a private host is
/// what looks like a secret in an agent's words, not in huddle's own about the user's config.
#[tokio::test]
async fn an_error_names_the_configured_private_endpoint() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!("http://127.0.0.1:{port}/");
    let t = turn(
        provider(config(&url, true)).as_ref(),
        "hi",
        None,
        CancellationToken::new(),
    )
    .await;
    let err = t.result.expect_err("nothing listens");
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(
        err.message.contains(&format!("http://127.0.0.1:{port}/")),
        "{err}"
    );
    assert!(!err.message.contains("[redacted]"), "{err}");
}
