//! The tool loop against a third-party model mock: llmock (PyPI, pinned) calls an offered tool
//! with arguments it makes from the tool's schema, then answers once the result comes back. Its
//! tool faults (malformed arguments, an unknown tool) must come back to it as tool errors and
//! the loop must still end in an answer. Both HTTP kinds, through the engine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use huddle::config::ProviderKind;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{Organization, Session, ToolSpec, reconcile};
use huddle::providers::Providers;
use huddle::store::{OrgHandle, Transcripts};
use huddle::tools::{Approval, ApprovalPolicy, ToolError, ToolOutput, ToolSource, Toolbox};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::engine_fixture::HANG_GUARD;
use super::providers_llmock::Llmock;

/// `weather__get_weather`: records the arguments it was called with.
struct Weather {
    calls: Mutex<Vec<Map<String, Value>>>,
}

impl ToolSource for Weather {
    fn name(&self) -> &str {
        "weather"
    }
    fn approval(&self) -> Approval {
        Approval::Auto
    }
    fn list<'a>(
        &'a self,
        _workdir: Option<&'a std::path::Path>,
    ) -> BoxFuture<'a, Result<Vec<ToolSpec>, ToolError>> {
        Box::pin(async {
            Ok(vec![ToolSpec {
                name: "get_weather".into(),
                description: "Current weather for a city".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]
                }),
            }])
        })
    }
    fn call<'a>(
        &'a self,
        _tool: &'a str,
        arguments: Map<String, Value>,
        _workdir: Option<&'a std::path::Path>,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.calls.lock().expect("calls").push(arguments);
        Box::pin(async {
            Ok(ToolOutput {
                text: "Sunny, 21 degrees".into(),
                is_error: false,
            })
        })
    }
}

struct Setup {
    engine: Engine,
    session_id: String,
    events: UnboundedReceiver<EngineEvent>,
    weather: Arc<Weather>,
    _dir: tempfile::TempDir,
}

fn setup(mock: &Llmock, kind: ProviderKind) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = org.default_group().expect("default group").id.clone();
    let model = if kind == ProviderKind::Anthropic {
        "claude-x"
    } else {
        "gpt-4o-mini"
    };
    let mut session = Session::new("asker", &group_id, format!("llmock/{model}"));
    session.tools = vec!["weather".into()];
    let session_id = session.id.clone();
    org.sessions.push(session);
    let weather = Arc::new(Weather {
        calls: Mutex::new(Vec::new()),
    });
    let mut providers = Providers::default();
    providers.insert(mock.provider(kind, Duration::from_secs(5)));
    let (sink, events) = EventSink::channel();
    let engine = Engine::new(
        providers,
        OrgHandle::in_memory(org),
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions {
            tools: Toolbox::new([weather.clone() as Arc<dyn ToolSource>]),
            approval: ApprovalPolicy::ApproveAll,
            ..EngineOptions::default()
        },
    );
    Setup {
        engine,
        session_id,
        events,
        weather,
        _dir: dir,
    }
}

/// (ok, first line) of every tool result emitted so far.
fn results(events: &mut UnboundedReceiver<EngineEvent>) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let EventKind::ToolResult { ok, first_line, .. } = e.kind {
            out.push((ok, first_line));
        }
    }
    out
}

#[tokio::test]
async fn llmock_calls_a_tool_gets_the_result_and_answers_in_both_kinds() {
    let Some(mock) = Llmock::start(&["--tool-mode", "auto"]).await else {
        return;
    };
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let mut s = setup(&mock, kind);
        let turn = s
            .engine
            .ask(&s.session_id, "What is the weather in Paris?".into(), None);
        let result = tokio::time::timeout(HANG_GUARD, turn)
            .await
            .expect("ends")
            .expect("starts");
        assert!(result.success, "{kind:?}: {:?}", result.error);
        assert!(
            !result.text.trim().is_empty(),
            "{kind:?}: an answer after the result"
        );
        let calls = s.weather.calls.lock().expect("calls").clone();
        assert_eq!(calls.len(), 1, "{kind:?}: {calls:?}");
        assert!(
            calls[0].get("city").is_some_and(Value::is_string),
            "{kind:?}: {calls:?}"
        );
        assert_eq!(
            results(&mut s.events),
            vec![(true, "Sunny, 21 degrees".to_string())],
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn llmock_tool_faults_come_back_to_it_as_tool_errors() {
    let Some(mock) = Llmock::start(&["--tool-mode", "auto"]).await else {
        return;
    };
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        for (fault, said) in [
            ("malformed_arguments", "not valid JSON"),
            ("unknown_tool", "unknown tool"),
        ] {
            mock.scenario(json!([{"type": "tool_fault", "kind": fault}]))
                .await;
            let mut s = setup(&mock, kind);
            let turn = s
                .engine
                .ask(&s.session_id, "What is the weather in Oslo?".into(), None);
            let result = tokio::time::timeout(HANG_GUARD, turn)
                .await
                .expect("ends")
                .expect("starts");
            assert!(result.success, "{kind:?} {fault}: {:?}", result.error);
            assert!(
                s.weather.calls.lock().expect("calls").is_empty(),
                "{kind:?} {fault}: the tool never ran"
            );
            let seen = results(&mut s.events);
            assert_eq!(seen.len(), 1, "{kind:?} {fault}: {seen:?}");
            assert!(
                !seen[0].0 && seen[0].1.contains(said),
                "{kind:?} {fault}: {seen:?}"
            );
        }
    }
}
