//! Tool calling on the wire, both HTTP kinds against the fake server: streamed calls come out
//! whole and exact (parallel, split mid-string and mid-escape, text around them), the request
//! declares the tools and carries the tool exchanges, a retried attempt starts afresh, and a
//! server that refuses tools says so, naming provider and model, without leaking secrets.

use std::sync::Arc;
use std::time::Duration;

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::model::{ToolCall, ToolChoice, ToolSpec};
use huddle::providers::{
    ChatMessage, ErrorKind, Provider, ProviderError, ProviderOptions, RetryPolicy, TurnOutput, TurnRequest,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::fake_llm_server::{Api, FakeLlm, Piece, Reply, StreamEnd};

const BOTH: [Api; 2] = [Api::OpenAi, Api::Anthropic];
const GATEWAY_TOKEN: &str = "gw-tools-5ecr3t-0123456789";

fn provider(llm: &FakeLlm, api: Api) -> Arc<dyn Provider> {
    let (kind, base) = match api {
        Api::Anthropic => (ProviderKind::Anthropic, llm.anthropic_base()),
        _ => (ProviderKind::Openai, llm.openai_base()),
    };
    let mut p = ProviderConfig::new("fake", kind);
    p.base_url = Some(base);
    p.headers.insert("x-gateway-token".into(), GATEWAY_TOKEN.into());
    let mut config = Config::default();
    config.providers.push(p);
    let options = ProviderOptions {
        read_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            max_retry_after: Duration::from_millis(5),
        },
    };
    huddle::sim::providers_with_options(&config, options)
        .expect("providers")
        .get("fake")
        .expect("fake provider")
}

fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "fs__read".into(),
        description: "Reads a file".into(),
        input_schema: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
    }
}

fn request(model: &str) -> TurnRequest {
    let mut req = TurnRequest::new(model, vec![ChatMessage::user("read it")]);
    req.tools = vec![read_tool()];
    req
}

async fn turn(p: &dyn Provider, req: TurnRequest) -> (Result<TurnOutput, ProviderError>, String) {
    let mut streamed = String::new();
    let result = p
        .stream_turn(req, &mut |d: &str| streamed.push_str(d), CancellationToken::new())
        .await;
    (result, streamed)
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn one_call_comes_out_exact_and_the_request_declares_the_tools() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![Reply::tool_call(
                "call_1",
                "fs__read",
                r#"{"path": "src/main.rs"}"#,
            )],
        );
        let (result, streamed) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let out = result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(
            out.tool_calls,
            vec![call("call_1", "fs__read", r#"{"path": "src/main.rs"}"#)],
            "{api:?}"
        );
        assert_eq!((out.text.as_str(), streamed.as_str()), ("", ""));
        let want_reason = if api == Api::Anthropic {
            "tool_use"
        } else {
            "tool_calls"
        };
        assert_eq!(out.finish_reason.as_deref(), Some(want_reason));
        let sent = &llm.requests()[0];
        assert_eq!(sent.tool_names(), ["fs__read"], "{api:?}");
        assert_eq!(sent.tool_choice(), "auto");
        let schema = match api {
            Api::Anthropic => sent.json()["tools"][0]["input_schema"].clone(),
            _ => sent.json()["tools"][0]["function"]["parameters"].clone(),
        };
        assert_eq!(schema, read_tool().input_schema);
    }
}

#[tokio::test]
async fn parallel_calls_split_mid_string_and_mid_escape_with_text_between_arrive_intact() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        // `{"path": "a\"b"}`: the first call's arguments are cut inside the `\"` escape, the
        // second's inside a key and inside a `\u` escape.
        let mut pieces = vec![Piece::text("Reading ")];
        pieces.extend(Piece::whole_call(
            0,
            "call_a",
            "fs__read",
            &[r#"{"path": "a\"#, r#""b"}"#],
        ));
        pieces.push(Piece::text("both."));
        pieces.extend(Piece::whole_call(
            1,
            "call_b",
            "fs__read",
            &[r#"{"pa"#, r#"th": "\u00"#, r#"e9"}"#],
        ));
        llm.script("m", vec![Reply::pieces(pieces)]);
        let (result, streamed) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let out = result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(out.text, "Reading both.", "{api:?}");
        assert_eq!(streamed, "Reading both.");
        assert_eq!(
            out.tool_calls,
            vec![
                call("call_a", "fs__read", r#"{"path": "a\"b"}"#),
                call("call_b", "fs__read", r#"{"path": "\u00e9"}"#),
            ],
            "{api:?}"
        );
        let first: serde_json::Value = serde_json::from_str(&out.tool_calls[0].arguments).expect("JSON");
        assert_eq!(first["path"], "a\"b");
        let second: serde_json::Value = serde_json::from_str(&out.tool_calls[1].arguments).expect("JSON");
        assert_eq!(second["path"], "\u{e9}");
    }
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_are_passed_on_raw_for_the_engine_to_answer() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![Reply::tool_calls(&[
                ("c1", "fs__read", r#"{"path": "a""#),
                ("c2", "nope__gone", "{}"),
            ])],
        );
        let (result, _) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let out = result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(
            out.tool_calls,
            vec![
                call("c1", "fs__read", r#"{"path": "a""#),
                call("c2", "nope__gone", "{}")
            ],
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn calls_without_id_get_one_and_calls_without_name_are_dropped() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![Reply::pieces(vec![
                Piece::Call {
                    id: None,
                    name: Some("fs__read".into()),
                },
                Piece::args(0, r#"{"path":"x"}"#),
                Piece::Call {
                    id: Some("c_nameless".into()),
                    name: None,
                },
                Piece::args(1, "{}"),
            ])],
        );
        let (result, _) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let out = result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(
            out.tool_calls,
            vec![call("call_1", "fs__read", r#"{"path":"x"}"#)],
            "{api:?}"
        );
    }
}

/// A failure mid-stream, before any text, is retried; the retry's decoder starts empty, so
/// the first attempt's pieces are not glued to the second's.
#[tokio::test]
async fn a_retried_attempt_starts_from_fresh_call_state() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![
                Reply::pieces(vec![
                    Piece::call("call_1", "fs__read"),
                    Piece::args(0, r#"{"path": "fir"#),
                ])
                .end(StreamEnd::Disconnect),
                Reply::tool_call("call_2", "fs__read", r#"{"path": "second"}"#),
            ],
        );
        let (result, _) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let out = result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(llm.requests().len(), 2, "{api:?}: retried");
        assert_eq!(
            out.tool_calls,
            vec![call("call_2", "fs__read", r#"{"path": "second"}"#)],
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn the_tool_exchange_goes_back_in_each_apis_shape_and_tool_choice_none_is_sent() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        let mut req = request("m");
        req.messages.push(ChatMessage::assistant_calls(
            "Looking.",
            vec![
                call("c1", "fs__read", r#"{"path":"a"}"#),
                call("c2", "fs__read", "{broken"),
            ],
        ));
        req.messages
            .push(ChatMessage::tool_result("c1", "fs__read", false, "contents of a"));
        req.messages.push(ChatMessage::tool_result(
            "c2",
            "fs__read",
            true,
            "invalid arguments",
        ));
        req.tool_choice = ToolChoice::None;
        let (result, _) = turn(provider(&llm, api).as_ref(), req).await;
        result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        let sent = &llm.requests()[0];
        assert_eq!(sent.tool_choice(), "none", "{api:?}");
        assert_eq!(sent.tool_names(), ["fs__read"], "tools stay declared");
        let results = sent.tool_results();
        let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2"], "{api:?}");
        assert_eq!(results[0].content, "contents of a");
        let calls = sent.history_calls();
        match api {
            Api::Anthropic => {
                assert_eq!(
                    results.iter().map(|r| r.is_error).collect::<Vec<_>>(),
                    [Some(false), Some(true)]
                );
                // The broken arguments cannot be an `input` object: `{}` goes instead.
                assert_eq!(calls[1], ("c2".into(), "fs__read".into(), "{}".into()));
                // user, assistant (text + 2 tool_use), user (2 tool_result): alternating.
                let roles: Vec<String> = sent
                    .messages()
                    .iter()
                    .map(|m| m["role"].as_str().unwrap_or("").to_string())
                    .collect();
                assert_eq!(roles, ["user", "assistant", "user"]);
            }
            _ => {
                assert_eq!(calls[1], ("c2".into(), "fs__read".into(), "{broken".into()));
                assert_eq!(sent.messages()[1]["content"], "Looking.");
            }
        }
    }
}

#[tokio::test]
async fn a_history_with_tool_exchanges_but_no_tools_is_sent_as_plain_text() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        let mut req = TurnRequest::new(
            "m",
            vec![
                ChatMessage::user("read a"),
                ChatMessage::assistant_calls("", vec![call("c1", "fs__read", r#"{"path":"a"}"#)]),
                ChatMessage::tool_result("c1", "fs__read", false, "contents of a"),
                ChatMessage::assistant("It says: contents of a."),
                ChatMessage::user("thanks"),
            ],
        );
        req.tools.clear();
        let (result, _) = turn(provider(&llm, api).as_ref(), req).await;
        result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        let sent = &llm.requests()[0];
        let body = sent.body.clone();
        for absent in [
            "\"tools\"",
            "tool_choice",
            "tool_calls",
            "tool_use",
            "tool_result",
            "\"tool\"",
        ] {
            assert!(!body.contains(absent), "{api:?}: {absent} in {body}");
        }
        let texts = sent.prompt_texts();
        assert!(
            texts
                .iter()
                .any(|t| t.contains("(called fs__read with {\"path\":\"a\"})")),
            "{api:?}: {texts:?}"
        );
        assert!(
            texts
                .iter()
                .any(|t| t.contains("[result of fs__read] contents of a")),
            "{api:?}: {texts:?}"
        );
    }
}

#[tokio::test]
async fn a_server_that_refuses_tools_is_a_config_error_naming_provider_and_model() {
    let refusals = [
        (
            Api::OpenAi,
            400,
            format!(
                r#"{{"error":"registry.ollama.ai/library/tiny:1b does not support tools (gateway {GATEWAY_TOKEN})"}}"#
            ),
        ),
        (
            Api::OpenAi,
            404,
            r#"{"error":{"message":"No endpoints found that support tool use.","code":404}}"#.to_string(),
        ),
        (
            Api::Anthropic,
            400,
            format!(
                r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"tools: this model does not support tool use; token {GATEWAY_TOKEN}"}}}}"#
            ),
        ),
    ];
    for (api, status, body) in refusals {
        let llm = FakeLlm::start().await;
        llm.set_default(Reply::status(status).body(&body));
        let p = provider(&llm, api);
        let err = turn(p.as_ref(), request("tiny:1b")).await.0.expect_err("refused");
        assert_eq!(err.kind, ErrorKind::Config, "{api:?}: {err}");
        assert_eq!(err.status, Some(status));
        for needle in [
            "provider `fake`",
            "model `tiny:1b`",
            "does not accept tool definitions",
            "`tools:`",
        ] {
            assert!(err.message.contains(needle), "{api:?} {needle}: {err}");
        }
        assert!(!err.message.contains(GATEWAY_TOKEN), "secret in: {err}");
        assert_eq!(llm.requests().len(), 1, "not retried");

        // The same refusal of a request without tools is the plain refusal it always was.
        let mut plain = request("tiny:1b");
        plain.tools.clear();
        let err = turn(p.as_ref(), plain).await.0.expect_err("refused");
        assert_ne!(err.kind, ErrorKind::Config, "{api:?}: {err}");
        assert!(!err.message.contains("tool definitions"), "{err}");
    }
}
