//! The `openai` and `anthropic` providers against the in-process fake server: wire shapes,
//! every fault the retry policy cares about, cancellation, timeouts and concurrency.

use std::sync::Arc;
use std::time::Duration;

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::model::Usage;
use huddle::providers::{
    ChatMessage, ErrorKind, ProbeStatus, Provider, ProviderError, ProviderOptions, RetryPolicy, TurnOutput,
    TurnRequest, probe,
};
use tokio_util::sync::CancellationToken;

use super::fake_llm_server::{Api, FakeLlm, Reply, StreamEnd, closed_port};

/// cargo sets this for test processes; it stands in for an API key variable.
const KEY_ENV: &str = "CARGO_PKG_NAME";
const KEY: &str = env!("CARGO_PKG_NAME");

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_millis(20),
    }
}

fn options(read_timeout: Duration) -> ProviderOptions {
    ProviderOptions {
        read_timeout,
        connect_timeout: Duration::from_secs(2),
        retry: fast_retry(),
    }
}

fn config_for(kind: ProviderKind, base: &str) -> ProviderConfig {
    let mut p = ProviderConfig::new("fake", kind);
    p.base_url = Some(base.to_string());
    p.api_key_env = Some(KEY_ENV.to_string());
    p
}

fn provider_with(llm: &FakeLlm, api: Api, opts: ProviderOptions) -> Arc<dyn Provider> {
    let (kind, base) = match api {
        Api::Anthropic => (ProviderKind::Anthropic, llm.anthropic_base()),
        _ => (ProviderKind::Openai, llm.openai_base()),
    };
    let mut config = Config::default();
    config.providers.push(config_for(kind, &base));
    let providers = huddle::sim::providers_with_options(&config, opts).expect("providers");
    providers.get("fake").expect("fake provider")
}

fn provider(llm: &FakeLlm, api: Api) -> Arc<dyn Provider> {
    provider_with(llm, api, options(Duration::from_secs(5)))
}

fn request(model: &str) -> TurnRequest {
    let mut req = TurnRequest::new(model, vec![ChatMessage::user("What is 2+2?")]);
    req.system = Some("You are terse.".into());
    req
}

/// Runs a turn; returns its result and the concatenated deltas.
async fn turn(p: &dyn Provider, req: TurnRequest) -> (Result<TurnOutput, ProviderError>, String) {
    let mut streamed = String::new();
    let result = p
        .stream_turn(req, &mut |d: &str| streamed.push_str(d), CancellationToken::new())
        .await;
    (result, streamed)
}

const BOTH: [Api; 2] = [Api::OpenAi, Api::Anthropic];

#[tokio::test]
async fn openai_streams_text_and_usage_with_the_expected_request() {
    let llm = FakeLlm::start().await;
    llm.script(
        "gpt-x",
        vec![Reply::text("Four, of course.").usage(21, 3).pings(2)],
    );
    // A trailing slash on the base and an extra header, as a user might configure them.
    let mut cfg = config_for(ProviderKind::Openai, &format!("{}/", llm.openai_base()));
    cfg.headers.insert("X-Title".into(), "huddle tests".into());
    let mut config = Config::default();
    config.providers.push(cfg);
    let p = huddle::sim::providers_with_options(&config, options(Duration::from_secs(5)))
        .expect("providers")
        .get("fake")
        .expect("fake");
    let (result, streamed) = turn(p.as_ref(), request("gpt-x")).await;
    let out = result.expect("turn");
    assert_eq!(out.text, "Four, of course.");
    assert_eq!(streamed, out.text);
    assert_eq!(out.usage, Some(Usage::new(21, 3)));
    assert_eq!(out.finish_reason.as_deref(), Some("stop"));
    assert!(!out.simulated);

    let reqs = llm.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(
        r.header("x-title"),
        Some("huddle tests"),
        "configured extra header"
    );
    let body = r.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(r.prompt_texts(), ["You are terse.", "What is 2+2?"]);
    assert_eq!(body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn anthropic_streams_text_and_usage_with_the_expected_request() {
    let llm = FakeLlm::start().await;
    llm.script("claude-x", vec![Reply::text("Four.").usage(30, 2)]);
    let p = provider(&llm, Api::Anthropic);
    let mut req = request("claude-x");
    req.messages.push(ChatMessage::assistant("Four."));
    req.messages.push(ChatMessage::user("And 3+3?"));
    let (result, streamed) = turn(p.as_ref(), req).await;
    let out = result.expect("turn");
    assert_eq!((out.text.as_str(), streamed.as_str()), ("Four.", "Four."));
    assert_eq!(out.usage, Some(Usage::new(30, 2)));
    assert_eq!(out.finish_reason.as_deref(), Some("end_turn"));

    let r = &llm.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    let body = r.json();
    assert_eq!(body["max_tokens"], 8192);
    // Prompt caching is on by default: the system prompt is a block marked for the cache.
    assert_eq!(
        body["system"],
        serde_json::json!([{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}])
    );
    assert_eq!(
        r.prompt_texts(),
        ["You are terse.", "What is 2+2?", "Four.", "And 3+3?"]
    );
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(body["messages"][1]["role"], "assistant");
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_names_the_key_variable() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.require_key("something-else");
        let (result, _) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let err = result.expect_err("401");
        assert_eq!(err.kind, ErrorKind::Auth, "{api:?}");
        assert_eq!(err.status, Some(401));
        assert!(
            err.message
                .starts_with("401 from provider `fake`: check CARGO_PKG_NAME"),
            "{err}"
        );
        assert_eq!(llm.requests().len(), 1, "{api:?}: never retried");
    }
}

#[tokio::test]
async fn bad_request_and_context_overflow_are_reported_at_once() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        let too_long = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        llm.script("m", vec![Reply::status(400), Reply::status(400).body(too_long)]);
        let p = provider(&llm, api);
        let err = turn(p.as_ref(), request("m")).await.0.expect_err("400");
        assert_eq!(err.kind, ErrorKind::BadRequest);
        let err = turn(p.as_ref(), request("m")).await.0.expect_err("400");
        assert_eq!(err.kind, ErrorKind::ContextTooLong, "{err}");
        assert!(err.message.contains("maximum context length"), "{err}");
        assert_eq!(llm.requests().len(), 2, "{api:?}: one request per turn");
    }
}

#[tokio::test]
async fn escape_sequences_in_a_servers_error_are_removed_whole() {
    let hostile = "boom \u{1b}]0;pwned\u{7} \u{1b}[2J\u{1b}]52;c;Y2xpcA==\u{1b}\\ end";
    for api in BOTH {
        let llm = FakeLlm::start().await;
        let body = serde_json::json!({"error": {"message": hostile, "type": "invalid_request_error"}});
        llm.script(
            "m",
            vec![
                Reply::status(400).body(&body.to_string()),
                Reply::chunks(["Hi"]).end(StreamEnd::InBandError {
                    error_type: "invalid_request_error".into(),
                    message: hostile.into(),
                }),
            ],
        );
        let p = provider(&llm, api);
        for what in ["status", "in-band"] {
            let err = turn(p.as_ref(), request("m")).await.0.expect_err(what);
            assert!(
                err.message.contains("boom") && err.message.contains("end"),
                "{api:?} {what}: {err}"
            );
            for payload in ["pwned", "[2J", "52;c", "Y2xpcA", "\u{1b}", "\u{7}"] {
                assert!(
                    !err.message.contains(payload),
                    "{api:?} {what}: {payload:?} in {err}"
                );
            }
        }
    }
}

#[tokio::test]
async fn rate_limits_without_retry_after_are_retried_with_backoff() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![Reply::status(429), Reply::status(429), Reply::text("finally")],
        );
        let (result, _) = turn(provider(&llm, api).as_ref(), request("m")).await;
        assert_eq!(result.expect("third attempt succeeds").text, "finally");
        assert_eq!(llm.requests().len(), 3, "{api:?}");
    }
}

#[tokio::test]
async fn persistent_rate_limit_gives_up_after_three_attempts_with_the_servers_wait() {
    let llm = FakeLlm::start().await;
    // A wait within the retry cap (20 ms here) is waited in the provider.
    llm.script("m", vec![Reply::status(429).header("retry-after-ms", "10"); 4]);
    let err = turn(provider(&llm, Api::OpenAi).as_ref(), request("m"))
        .await
        .0
        .expect_err("429");
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.attempts, 3);
    assert_eq!(err.retry_after, Some(Duration::from_millis(10)));
    assert!(err.message.contains("after 3 attempts"), "{err}");
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn a_limit_that_resets_past_the_retry_cap_is_handed_on_at_once_with_its_whole_wait() {
    let llm = FakeLlm::start().await;
    llm.script("m", vec![Reply::status(429).retry_after("1"); 4]);
    let err = turn(provider(&llm, Api::OpenAi).as_ref(), request("m"))
        .await
        .0
        .expect_err("429");
    // Not tried again here: the engine waits it out (see engine_limits_wire).
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.attempts, 1);
    assert_eq!(err.retry_after, Some(Duration::from_secs(1)));
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let llm = FakeLlm::start().await;
    llm.script("m", vec![Reply::status(429).retry_after("1"), Reply::text("ok")]);
    let mut opts = options(Duration::from_secs(5));
    opts.retry.max_retry_after = Duration::from_secs(60);
    let (result, _) = turn(provider_with(&llm, Api::OpenAi, opts).as_ref(), request("m")).await;
    assert_eq!(result.expect("retry succeeds").text, "ok");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    // A lower bound only: the client must not come back before the server said it could.
    let gap = reqs[1].at.duration_since(reqs[0].at);
    assert!(gap >= Duration::from_millis(950), "came back after {gap:?}");
}

#[tokio::test]
async fn server_errors_and_overload_are_retried_then_reported() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "ok",
            vec![Reply::status(500), Reply::status(529), Reply::text("recovered")],
        );
        llm.script(
            "bad",
            vec![Reply::status(503), Reply::status(502), Reply::status(529)],
        );
        let p = provider(&llm, api);
        assert_eq!(
            turn(p.as_ref(), request("ok")).await.0.expect("recovers").text,
            "recovered"
        );
        let err = turn(p.as_ref(), request("bad")).await.0.expect_err("gives up");
        assert_eq!(err.kind, ErrorKind::Overloaded, "the last failure decides: {err}");
        assert_eq!(err.attempts, 3);
        assert_eq!(llm.requests_for("ok").len(), 3);
        assert_eq!(llm.requests_for("bad").len(), 3);
    }
}

#[tokio::test]
async fn connection_refused_is_retried_and_explained() {
    let port = closed_port().await;
    let mut config = Config::default();
    config.providers.push(config_for(
        ProviderKind::Openai,
        &format!("http://127.0.0.1:{port}/v1"),
    ));
    let providers =
        huddle::sim::providers_with_options(&config, options(Duration::from_secs(2))).expect("providers");
    let p = providers.get("fake").expect("fake");
    let err = turn(p.as_ref(), request("m")).await.0.expect_err("refused");
    assert_eq!(err.kind, ErrorKind::Connection);
    assert_eq!(err.attempts, 3);
    assert!(err.message.contains("cannot connect to provider `fake`"), "{err}");
    assert!(err.message.contains(&port.to_string()), "{err}");
}

#[tokio::test]
async fn stall_after_text_ends_the_turn_with_the_partial_text() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![Reply::chunks(["Hello ", "world"]).end(StreamEnd::Stall(Duration::from_secs(5)))],
        );
        let p = provider_with(&llm, api, options(Duration::from_secs(1)));
        let (result, streamed) = turn(p.as_ref(), request("m")).await;
        let err = result.expect_err("stall");
        assert_eq!(err.kind, ErrorKind::ReadTimeout, "{api:?}: {err}");
        assert_eq!(err.partial_text, "Hello world");
        assert_eq!(streamed, "Hello world");
        assert_eq!(llm.requests().len(), 1, "{api:?}: text was shown, so no retry");
    }
}

#[tokio::test]
async fn silence_before_any_answer_is_retried() {
    let llm = FakeLlm::start().await;
    llm.script(
        "m",
        vec![Reply::Hang(Duration::from_secs(5)), Reply::text("awake")],
    );
    let p = provider_with(&llm, Api::OpenAi, options(Duration::from_secs(1)));
    assert_eq!(
        turn(p.as_ref(), request("m")).await.0.expect("second try").text,
        "awake"
    );
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn disconnect_mid_stream_keeps_text_and_before_text_is_retried() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "cut",
            vec![Reply::chunks(["Hello ", "wor"]).end(StreamEnd::Disconnect)],
        );
        llm.script(
            "early",
            vec![
                Reply::chunks(Vec::<String>::new()).end(StreamEnd::Disconnect),
                Reply::text("whole"),
            ],
        );
        let p = provider(&llm, api);
        let err = turn(p.as_ref(), request("cut")).await.0.expect_err("cut");
        assert_eq!(err.kind, ErrorKind::Connection, "{api:?}: {err}");
        assert_eq!(err.partial_text, "Hello wor");
        assert_eq!(llm.requests_for("cut").len(), 1);
        assert_eq!(
            turn(p.as_ref(), request("early")).await.0.expect("retried").text,
            "whole"
        );
        assert_eq!(llm.requests_for("early").len(), 2);
    }
}

#[tokio::test]
async fn malformed_event_is_a_protocol_error() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script("m", vec![Reply::chunks(["Hi "]).end(StreamEnd::Malformed)]);
        llm.script(
            "early",
            vec![
                Reply::chunks(Vec::<String>::new()).end(StreamEnd::Malformed),
                Reply::text("clean"),
            ],
        );
        let p = provider(&llm, api);
        let err = turn(p.as_ref(), request("m")).await.0.expect_err("malformed");
        assert_eq!(err.kind, ErrorKind::Protocol, "{api:?}: {err}");
        assert_eq!(err.partial_text, "Hi ");
        assert!(err.message.contains("not valid JSON"), "{err}");
        // Not a transient failure: reported at once, even before any text.
        let early = turn(p.as_ref(), request("early"))
            .await
            .0
            .expect_err("not retried");
        assert_eq!(early.kind, ErrorKind::Protocol);
        assert_eq!(llm.requests().len(), 2, "{api:?}");
    }
}

/// One rule for both kinds: an event that is not JSON (here one with no event name, which an
/// Anthropic stream used to skip silently) ends the turn as a protocol error, text kept.
#[tokio::test]
async fn an_event_that_is_not_json_is_a_protocol_error_for_both_kinds() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script(
            "m",
            vec![Reply::chunks(["Hi "]).end(StreamEnd::RawEvent("this is not json".into()))],
        );
        let p = provider(&llm, api);
        let (result, streamed) = turn(p.as_ref(), request("m")).await;
        let err = result.expect_err("not JSON");
        assert_eq!(err.kind, ErrorKind::Protocol, "{api:?}: {err}");
        assert!(err.message.contains("not valid JSON"), "{api:?}: {err}");
        assert!(err.message.contains("this is not json"), "{api:?}: {err}");
        assert_eq!((streamed.as_str(), err.partial_text.as_str()), ("Hi ", "Hi "));
        assert_eq!(llm.requests().len(), 1, "{api:?}: not retried");
    }
}

#[tokio::test]
async fn error_inside_a_200_stream() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        let broken = |t: &str| StreamEnd::InBandError {
            error_type: t.to_string(),
            message: "mock failure after 2 chunks".to_string(),
        };
        llm.script(
            "mid",
            vec![Reply::chunks(["Par", "tial"]).end(broken("api_error"))],
        );
        llm.script(
            "early",
            vec![
                Reply::chunks(Vec::<String>::new()).end(broken("overloaded_error")),
                Reply::text("fine"),
            ],
        );
        let p = provider(&llm, api);
        let err = turn(p.as_ref(), request("mid")).await.0.expect_err("in-band");
        assert_eq!(err.kind, ErrorKind::Server, "{api:?}: {err}");
        assert_eq!(err.partial_text, "Partial");
        assert!(err.message.contains("mock failure after 2 chunks"), "{err}");
        assert_eq!(llm.requests_for("mid").len(), 1);
        assert_eq!(
            turn(p.as_ref(), request("early")).await.0.expect("retried").text,
            "fine"
        );
        assert_eq!(llm.requests_for("early").len(), 2);
    }
}

#[tokio::test]
async fn stream_without_end_marker_is_truncated_not_success() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        llm.script("m", vec![Reply::chunks(["a ", "b"]).end(StreamEnd::Truncate)]);
        let (result, _) = turn(provider(&llm, api).as_ref(), request("m")).await;
        let err = result.expect_err("truncated");
        assert_eq!(err.kind, ErrorKind::Truncated, "{api:?}: {err}");
        assert_eq!(err.partial_text, "a b");
        assert_eq!(llm.requests().len(), 1);
    }
}

#[tokio::test]
async fn cancel_stops_the_stream_at_once_keeping_text() {
    for api in BOTH {
        let llm = FakeLlm::start().await;
        let words: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
        llm.script(
            "m",
            vec![Reply::chunks(words).chunk_delay(Duration::from_millis(100))],
        );
        let p = provider(&llm, api);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let mut seen = 0;
        let result = p
            .stream_turn(
                request("m"),
                &mut |_: &str| {
                    seen += 1;
                    if seen == 2 {
                        trigger.cancel();
                    }
                },
                cancel,
            )
            .await;
        let err = result.expect_err("cancelled");
        assert_eq!(err.kind, ErrorKind::Cancelled, "{api:?}");
        assert!(err.partial_text.starts_with("w0 w1"), "{:?}", err.partial_text);
        assert!(
            !err.partial_text.contains("w40"),
            "stopped early: {:?}",
            err.partial_text
        );
    }
}

#[tokio::test]
async fn turn_timeout_covers_the_whole_turn() {
    let llm = FakeLlm::start().await;
    llm.script("m", vec![Reply::Hang(Duration::from_secs(10))]);
    let p = provider(&llm, Api::Anthropic);
    let mut req = request("m");
    req.turn_timeout = Some(Duration::from_millis(300));
    let err = turn(p.as_ref(), req).await.0.expect_err("timeout");
    assert_eq!(err.kind, ErrorKind::TurnTimeout);
    assert!(err.message.contains("300 ms"), "{err}");
}

#[tokio::test]
async fn missing_key_variable_fails_before_any_request() {
    let llm = FakeLlm::start().await;
    let mut cfg = config_for(ProviderKind::Openai, &llm.openai_base());
    cfg.api_key_env = Some("HUDDLE_TEST_NO_SUCH_KEY_VARIABLE".into());
    let mut config = Config::default();
    config.providers.push(cfg);
    let p = huddle::sim::providers_with_options(&config, options(Duration::from_secs(2)))
        .expect("providers")
        .get("fake")
        .expect("fake");
    let err = turn(p.as_ref(), request("m")).await.0.expect_err("no key");
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(err.message.contains("HUDDLE_TEST_NO_SUCH_KEY_VARIABLE"), "{err}");
    assert!(llm.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn sixty_four_concurrent_streams_all_finish_correctly() {
    let llm = FakeLlm::start().await;
    for api in BOTH {
        for i in 0..64 {
            let text = format!("answer number {i} streams in several words ");
            llm.script(
                &format!("m{i}"),
                vec![Reply::text(&text).chunk_delay(Duration::from_millis(5))],
            );
        }
        let p = provider(&llm, api);
        let mut tasks = Vec::new();
        for i in 0..64 {
            let p = p.clone();
            tasks.push(tokio::spawn(async move {
                let mut streamed = String::new();
                let out = p
                    .stream_turn(
                        request(&format!("m{i}")),
                        &mut |d: &str| streamed.push_str(d),
                        CancellationToken::new(),
                    )
                    .await;
                (i, out, streamed)
            }));
        }
        for task in tasks {
            let (i, out, streamed) = task.await.expect("task");
            let expected = format!("answer number {i} streams in several words ");
            let out = out.expect("turn");
            assert_eq!(out.text, expected, "{api:?}");
            assert_eq!(streamed, expected);
            assert_eq!(out.usage.map(|u| u.output_tokens), Some(7));
        }
    }
    assert_eq!(llm.requests().len(), 128);
}

#[tokio::test]
async fn probe_reports_reachability_without_keys() {
    let llm = FakeLlm::start().await;
    llm.script("listed-model", vec![]);
    let port = closed_port().await;
    let mut config = Config::default();
    config
        .providers
        .push(config_for(ProviderKind::Openai, &llm.openai_base()));
    let mut anthropic = config_for(ProviderKind::Anthropic, &llm.anthropic_base());
    anthropic.name = "fake-anthropic".into();
    config.providers.push(anthropic);
    let mut down = config_for(ProviderKind::Openai, &format!("http://127.0.0.1:{port}/v1"));
    down.name = "down".into();
    config.providers.push(down);
    let results = probe(&config).await;
    assert_eq!(results[0].status, ProbeStatus::Reachable { models: Some(1) });
    assert_eq!(results[0].target, format!("{}/models", llm.openai_base()));
    assert_eq!(results[1].status, ProbeStatus::Reachable { models: Some(1) });
    assert_eq!(results[1].target, format!("{}/v1/models", llm.anthropic_base()));
    assert!(
        matches!(results[2].status, ProbeStatus::Unreachable { .. }),
        "{:?}",
        results[2]
    );
    for r in &results {
        assert!(!r.describe().contains(KEY), "{}", r.describe());
    }
    let seen = llm.requests();
    assert_eq!(seen[0].method, "GET");
    assert!(seen.iter().any(|r| r.header("x-api-key") == Some(KEY)));
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_still_answers() {
    let llm = FakeLlm::start().await;
    let whole = |body: serde_json::Value| Reply::Status {
        status: 200,
        body: Some(body.to_string()),
        headers: Vec::new(),
    };
    llm.script(
        "o",
        vec![whole(serde_json::json!({"choices":[{"index":0,"message":{"role":"assistant","content":"whole answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}))],
    );
    llm.script(
        "a",
        vec![whole(serde_json::json!({"type":"message","content":[{"type":"text","text":"whole answer"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}))],
    );
    for (api, model) in [(Api::OpenAi, "o"), (Api::Anthropic, "a")] {
        let (result, streamed) = turn(provider(&llm, api).as_ref(), request(model)).await;
        let out = result.expect("json answer");
        assert_eq!(
            (out.text.as_str(), streamed.as_str()),
            ("whole answer", "whole answer")
        );
        assert_eq!(out.usage, Some(Usage::new(5, 2)));
    }
}

/// A server that answers 200 `text/event-stream` and then one `data:` line that never ends:
/// the turn fails once the line passes the parser's bound, while the server is still writing
/// (it never stops on its own), instead of holding the line in memory until it ends.
#[tokio::test]
async fn a_stream_line_that_never_ends_is_given_up_at_the_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = vec![0u8; 64 * 1024];
        let _ = socket.read(&mut request).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: ";
        if socket.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let block = vec![b'x'; 64 * 1024];
        while socket.write_all(&block).await.is_ok() {}
    });
    let mut config = Config::default();
    config.providers.push(config_for(
        ProviderKind::Openai,
        &format!("http://127.0.0.1:{port}/v1"),
    ));
    let p = huddle::sim::providers_with_options(&config, options(Duration::from_secs(20)))
        .expect("providers")
        .get("fake")
        .expect("fake provider");
    let (result, _) = turn(p.as_ref(), request("m")).await;
    let err = result.expect_err("given up");
    assert_eq!(err.kind, ErrorKind::Protocol, "{err}");
    assert!(
        err.message
            .contains("sent a line or an event of more than 16 MiB without its end"),
        "{err}"
    );
    server.abort();
}
