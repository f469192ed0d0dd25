//! The tool loop end to end: the engine, a real HTTP provider of each kind against the fake
//! server, and an in-process tool source. What each next request carries (results with their
//! call ids, errors for bad calls, the round-limit note and `tool_choice: none`), parallel calls
//! running at once, a stop during a slow tool, the events, the summed usage, and that the
//! stored transcript gives back exactly the history the model was last sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::engine::session::{TurnResult, chat_history};
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{Message, MessageRole, Organization, Session, ToolSpec, Usage, reconcile};
use huddle::providers::anthropic::AnthropicProvider;
use huddle::providers::openai::OpenAiProvider;
use huddle::providers::{ProviderOptions, TurnRequest};
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};
use huddle::tools::{Approval, ApprovalPolicy, ToolError, ToolOutput, ToolSource, Toolbox};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::{Barrier, Notify};
use tokio_util::sync::CancellationToken;

use super::engine_fixture::{HANG_GUARD, config_for, fast_providers};
use super::fake_llm_server::{Api, FakeLlm, Piece, RecordedRequest, Reply};

const BOTH: [Api; 2] = [Api::OpenAi, Api::Anthropic];
const MODEL: &str = "m";

/// The `fs` server: `read` answers `contents of <path>`, `gate` waits until two calls are in it
/// at once, `slow` runs until it is cancelled. Every call is logged.
struct Fs {
    log: Mutex<Vec<String>>,
    gate: Barrier,
    slow_started: Notify,
}

impl Fs {
    fn new() -> Arc<Fs> {
        Arc::new(Fs {
            log: Mutex::new(Vec::new()),
            gate: Barrier::new(2),
            slow_started: Notify::new(),
        })
    }

    fn note(&self, line: String) {
        self.log.lock().expect("log").push(line);
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

impl ToolSource for Fs {
    fn name(&self) -> &str {
        "fs"
    }

    fn approval(&self) -> Approval {
        Approval::Auto
    }

    fn list<'a>(
        &'a self,
        _workdir: Option<&'a std::path::Path>,
    ) -> BoxFuture<'a, Result<Vec<ToolSpec>, ToolError>> {
        let path = json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]});
        let none = json!({"type":"object","properties":{}});
        let specs = vec![
            ToolSpec {
                name: "read".into(),
                description: "Reads a file".into(),
                input_schema: path,
            },
            ToolSpec {
                name: "gate".into(),
                description: "Waits for a second caller".into(),
                input_schema: none.clone(),
            },
            ToolSpec {
                name: "slow".into(),
                description: "Never finishes".into(),
                input_schema: none,
            },
        ];
        Box::pin(async move { Ok(specs) })
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _workdir: Option<&'a std::path::Path>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let path = arguments.get("path").and_then(Value::as_str).unwrap_or("");
            let text = match tool {
                "read" => {
                    self.note(format!("read {path}"));
                    format!("contents of {path}")
                }
                "gate" => {
                    self.note("gate start".into());
                    self.gate.wait().await;
                    self.note("gate end".into());
                    "through".into()
                }
                "slow" => {
                    self.note("slow start".into());
                    self.slow_started.notify_one();
                    cancel.cancelled().await;
                    self.note("slow cancelled".into());
                    return Err(ToolError::Cancelled);
                }
                other => {
                    return Err(ToolError::Failed {
                        server: "fs".into(),
                        message: format!("no tool {other}"),
                    });
                }
            };
            Ok(ToolOutput {
                text,
                is_error: false,
            })
        })
    }
}

struct Loop {
    api: Api,
    server: FakeLlm,
    engine: Engine,
    session_id: String,
    events: UnboundedReceiver<EngineEvent>,
    fs: Arc<Fs>,
    config: Config,
    _dir: tempfile::TempDir,
}

/// One session on `<api>/m` with the `fs` tools, calls approved without asking.
async fn setup(api: Api, max_tool_rounds: u32) -> Loop {
    let server = FakeLlm::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = org.default_group().expect("default group").id.clone();
    let provider = if api == Api::Anthropic {
        "anthropic"
    } else {
        "openai"
    };
    let mut session = Session::new("tooler", &group_id, format!("{provider}/{MODEL}"));
    session.system_prompt = Some("Use the tools.".into());
    session.tools = vec!["fs".into()];
    let session_id = session.id.clone();
    org.sessions.push(session);
    let org = OrgHandle::persistent_with_debounce(
        org,
        OrganizationFile::new(dir.path().join("organization.json")),
        Duration::from_millis(5),
    );
    let config = config_for(&server);
    let (sink, events) = EventSink::channel();
    let fs = Fs::new();
    let source: Arc<dyn ToolSource> = fs.clone();
    let engine = Engine::new(
        fast_providers(&config),
        org,
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions {
            max_concurrency: 4,
            error_backoff: Duration::from_millis(10),
            tools: Toolbox::new([source]),
            approval: ApprovalPolicy::ApproveAll,
            max_tool_rounds,
            ..EngineOptions::default()
        },
    );
    Loop {
        api,
        server,
        engine,
        session_id,
        events,
        fs,
        config,
        _dir: dir,
    }
}

impl Loop {
    async fn ask(&self, prompt: &str) -> TurnResult {
        let turn = self.engine.ask(&self.session_id, prompt.into(), None);
        tokio::time::timeout(HANG_GUARD, turn)
            .await
            .expect("the turn ends")
            .expect("the turn starts")
    }

    fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests_for(MODEL)
    }

    fn drain(&mut self) -> Vec<EngineEvent> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(e);
        }
        out
    }

    fn transcript(&self) -> Vec<Message> {
        self.engine
            .load_transcript(&self.session_id)
            .expect("transcript")
            .messages
    }

    /// The `messages` this provider kind would send for `history`, rendered by the provider
    /// itself (tools declared as in `sent`).
    fn render(&self, history: Vec<huddle::providers::ChatMessage>, sent: &RecordedRequest) -> Value {
        let mut req = TurnRequest::new(MODEL, history);
        req.system = Some("Use the tools.".into());
        req.tools = sent
            .tool_names()
            .into_iter()
            .map(|name| ToolSpec {
                name,
                description: String::new(),
                input_schema: json!({}),
            })
            .collect();
        let options = ProviderOptions::default();
        let body = match self.api {
            Api::Anthropic => {
                let cfg = self.provider_config("anthropic", ProviderKind::Anthropic);
                AnthropicProvider::new(&cfg, options)
                    .expect("provider")
                    .request_body(&req)
            }
            _ => {
                let cfg = self.provider_config("openai", ProviderKind::Openai);
                OpenAiProvider::new(&cfg, options)
                    .expect("provider")
                    .request_body(&req)
            }
        };
        body["messages"].clone()
    }

    fn provider_config(&self, name: &str, kind: ProviderKind) -> ProviderConfig {
        let found = self
            .config
            .providers
            .iter()
            .find(|p| p.name == name && p.kind == kind);
        found.cloned().expect("configured")
    }

    /// Restart consistency: what a restarted session reads back from the transcript (less the
    /// final answer) is exactly what the last request of the turn sent.
    fn assert_transcript_matches_last_request(&self, final_text: &str) {
        let messages = self.transcript();
        let mut history = chat_history(&messages);
        let last = history.pop().expect("the final answer");
        assert_eq!(
            (&*last.content, last.tool_calls.len()),
            (final_text, 0),
            "{:?}",
            self.api
        );
        let sent = self.requests().pop().expect("a request");
        assert_eq!(
            self.render(history, &sent),
            sent.json()["messages"],
            "{:?}: the transcript gives back what the model was sent",
            self.api
        );
    }
}

fn tool_events(events: &[EngineEvent]) -> Vec<(String, String, Option<bool>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { call_id, name, .. } => {
                Some(("call".into(), format!("{call_id} {name}"), None))
            }
            EventKind::ToolResult {
                call_id, name, ok, ..
            } => Some(("result".into(), format!("{call_id} {name}"), Some(*ok))),
            _ => None,
        })
        .collect()
}

fn finished_usage(events: &[EngineEvent]) -> Option<Usage> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::TurnFinished { usage, .. } => Some(usage.unwrap_or_default()),
        _ => None,
    })
}

#[tokio::test]
async fn one_call_its_result_reaches_the_next_request_then_the_answer() {
    for api in BOTH {
        let mut t = setup(api, 5).await;
        t.server.script(
            MODEL,
            vec![
                Reply::tool_call("call_1", "fs__read", r#"{"path": "a.txt"}"#).usage(10, 3),
                Reply::text("It says hello.").usage(20, 5),
            ],
        );
        let result = t.ask("read a.txt").await;
        assert!(result.success, "{api:?}: {result:?}");
        assert_eq!(result.text, "It says hello.");
        assert_eq!(t.fs.log(), ["read a.txt"]);

        let requests = t.requests();
        assert_eq!(requests.len(), 2, "{api:?}");
        assert_eq!(requests[0].tool_names(), ["fs__read", "fs__gate", "fs__slow"]);
        assert_eq!(requests[0].tool_choice(), "auto");
        assert!(requests[0].tool_results().is_empty());
        let results = requests[1].tool_results();
        assert_eq!(results.len(), 1, "{api:?}");
        assert_eq!(results[0].call_id, "call_1");
        assert_eq!(results[0].content, "contents of a.txt");
        assert_ne!(results[0].is_error, Some(true));
        assert_eq!(
            requests[1].history_calls()[0].0,
            "call_1",
            "the call precedes its result"
        );

        // Usage is the sum of the rounds'.
        let want = Usage::new(30, 8);
        assert_eq!(result.usage, Some(want), "{api:?}");
        let events = t.drain();
        assert_eq!(finished_usage(&events), Some(want));
        assert_eq!(
            tool_events(&events),
            vec![
                ("call".to_string(), "call_1 fs__read".to_string(), None),
                ("result".to_string(), "call_1 fs__read".to_string(), Some(true)),
            ],
            "{api:?}"
        );
        t.assert_transcript_matches_last_request("It says hello.");
    }
}

#[tokio::test]
async fn parallel_calls_run_at_once_and_their_results_come_back_in_order() {
    for api in BOTH {
        let mut t = setup(api, 5).await;
        t.server.script(
            MODEL,
            vec![
                Reply::tool_calls(&[("c1", "fs__gate", "{}"), ("c2", "fs__gate", "{}")]),
                Reply::text("Both through."),
            ],
        );
        // Each `gate` call waits for the other: done only if both ran at the same time.
        let result = t.ask("go").await;
        assert!(result.success, "{api:?}: {result:?}");
        assert_eq!(t.fs.log(), ["gate start", "gate start", "gate end", "gate end"]);
        let results = t.requests()[1].tool_results();
        let got: Vec<(&str, &str)> = results
            .iter()
            .map(|r| (r.call_id.as_str(), r.content.as_str()))
            .collect();
        assert_eq!(got, [("c1", "through"), ("c2", "through")], "{api:?}");
        let events = tool_events(&t.drain());
        assert_eq!(events.len(), 4, "{events:?}");
        t.assert_transcript_matches_last_request("Both through.");
    }
}

#[tokio::test]
async fn arguments_split_mid_escape_arrive_intact() {
    for api in BOTH {
        let t = setup(api, 5).await;
        // `{"path": "a\"b"}` cut between the backslash and the quote it escapes.
        let mut pieces = vec![Piece::text("Reading. ")];
        pieces.extend(Piece::whole_call(
            0,
            "call_esc",
            "fs__read",
            &[r#"{"pa"#, r#"th": "a\"#, r#""b"}"#],
        ));
        t.server
            .script(MODEL, vec![Reply::pieces(pieces), Reply::text("Done.")]);
        let result = t.ask("read it").await;
        assert!(result.success, "{api:?}: {result:?}");
        assert_eq!(t.fs.log(), ["read a\"b"], "{api:?}");
        let results = t.requests()[1].tool_results();
        assert_eq!(
            (results[0].call_id.as_str(), results[0].content.as_str()),
            ("call_esc", "contents of a\"b")
        );
        // The step's text went with its call.
        let calls = t.requests()[1].history_calls();
        assert_eq!(calls.len(), 1);
        assert!(
            t.requests()[1].prompt_texts().iter().any(|p| p == "Reading. "),
            "{api:?}: {:?}",
            t.requests()[1].prompt_texts()
        );
        t.assert_transcript_matches_last_request("Done.");
    }
}

#[tokio::test]
async fn malformed_arguments_and_an_unknown_tool_go_back_as_tool_errors() {
    for api in BOTH {
        let mut t = setup(api, 5).await;
        t.server.script(
            MODEL,
            vec![
                Reply::tool_calls(&[
                    ("c_bad", "fs__read", r#"{"path": "a"#),
                    ("c_unknown", "fs__delete", r#"{"path": "a"}"#),
                ]),
                Reply::text("Sorry, I could not."),
            ],
        );
        let result = t.ask("read it").await;
        assert!(result.success, "{api:?}: {result:?}");
        assert_eq!(result.text, "Sorry, I could not.");
        assert!(t.fs.log().is_empty(), "no tool ran: {:?}", t.fs.log());
        let results = t.requests()[1].tool_results();
        assert_eq!(results.len(), 2, "{api:?}");
        assert_eq!(results[0].call_id, "c_bad");
        assert!(
            results[0].content.contains("not valid JSON"),
            "{}",
            results[0].content
        );
        assert_eq!(results[1].call_id, "c_unknown");
        assert!(
            results[1].content.contains("unknown tool `fs__delete`"),
            "{}",
            results[1].content
        );
        if api == Api::Anthropic {
            assert_eq!(results[0].is_error, Some(true));
            assert_eq!(results[1].is_error, Some(true));
        }
        let events = tool_events(&t.drain());
        let oks: Vec<Option<bool>> = events.iter().filter(|e| e.0 == "result").map(|e| e.2).collect();
        assert_eq!(oks, [Some(false), Some(false)], "{api:?}");
        t.assert_transcript_matches_last_request("Sorry, I could not.");
    }
}

#[tokio::test]
async fn the_round_limit_sends_tool_choice_none_with_a_note_and_the_answer_ends_the_turn() {
    for api in BOTH {
        let t = setup(api, 2).await;
        t.server.script(
            MODEL,
            vec![
                Reply::tool_call("r1", "fs__read", r#"{"path": "1"}"#),
                Reply::tool_call("r2", "fs__read", r#"{"path": "2"}"#),
                Reply::text("Final answer."),
            ],
        );
        let result = t.ask("keep reading").await;
        assert!(result.success, "{api:?}: {result:?}");
        assert_eq!(result.text, "Final answer.");
        let requests = t.requests();
        assert_eq!(requests.len(), 3, "{api:?}");
        let choices: Vec<String> = requests.iter().map(RecordedRequest::tool_choice).collect();
        assert_eq!(choices, ["auto", "auto", "none"], "{api:?}");
        assert_eq!(
            requests[2].tool_names().len(),
            3,
            "tools stay declared: the history refers to them"
        );
        let results = requests[2].tool_results();
        let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2"]);
        assert!(!results[0].content.contains("tool rounds"));
        assert!(
            results[1].content.starts_with("contents of 2")
                && results[1].content.contains("used all 2 tool rounds"),
            "{}",
            results[1].content
        );
        t.assert_transcript_matches_last_request("Final answer.");
    }
}

#[tokio::test]
async fn a_stop_during_a_slow_tool_ends_the_turn_cancelled_with_the_call_answered() {
    for api in BOTH {
        let t = setup(api, 5).await;
        t.server
            .script(MODEL, vec![Reply::tool_call("call_slow", "fs__slow", "{}")]);
        let turn = tokio::spawn(
            t.engine
                .start_chat(&t.session_id, "wait".into(), None)
                .expect("registered"),
        );
        tokio::time::timeout(HANG_GUARD, t.fs.slow_started.notified())
            .await
            .expect("the slow tool starts");
        assert!(t.engine.stop(&RunKey::chat(&t.session_id)));
        let result = tokio::time::timeout(HANG_GUARD, turn)
            .await
            .expect("the stop ends the turn")
            .expect("joins");
        assert!(result.cancelled(), "{api:?}: {result:?}");
        assert_eq!(t.fs.log(), ["slow start", "slow cancelled"]);
        assert_eq!(t.requests().len(), 1, "{api:?}: the model is not asked again");

        let messages = t.transcript();
        let tool: Vec<&Message> = messages.iter().filter(|m| m.role == MessageRole::Tool).collect();
        assert_eq!(tool.len(), 1, "{api:?}: {messages:?}");
        let info = tool[0].tool_result.as_ref().expect("result info");
        assert_eq!(info.call_id, "call_slow");
        assert!(info.is_error);
        assert!(tool[0].text.contains("cancelled"), "{}", tool[0].text);
        // The next turn's history answers the call with that result.
        let history = chat_history(&messages);
        let answered = history
            .iter()
            .filter_map(|m| m.result_of.as_ref())
            .any(|r| r.call_id == "call_slow" && r.is_error);
        assert!(answered, "{api:?}: {history:?}");
    }
}

/// The next turn's history comes from memory; a restarted session reads it from the
/// transcript: both must be the same, tool steps included.
#[tokio::test]
async fn the_next_turn_sends_what_the_transcript_holds() {
    for api in BOTH {
        let t = setup(api, 5).await;
        t.server.script(
            MODEL,
            vec![
                Reply::pieces(vec![
                    Piece::text("Checking."),
                    Piece::call("c1", "fs__read"),
                    Piece::args(0, r#"{"path": "x"}"#),
                ]),
                Reply::text("X is fine."),
                Reply::text("Again fine."),
            ],
        );
        assert!(t.ask("check x").await.success);
        assert!(t.ask("and now?").await.success);
        let warm = t.requests().pop().expect("third request");
        let history = chat_history(&t.transcript());
        // user, assistant with call, result, answer, user, answer.
        assert_eq!(history.len(), 6, "{api:?}: {history:?}");
        let mut without_answer = history.clone();
        without_answer.pop();
        assert_eq!(
            t.render(without_answer, &warm),
            warm.json()["messages"],
            "{api:?}"
        );
    }
}
