//! Optional conformance against the LiteLLM proxy (the popular real gateway) in mock mode.
//! LiteLLM is large (~740 MB), so this runs only when `HUDDLE_LITELLM` names its executable
//! (`pip install 'litellm[proxy]==1.106.2'`); otherwise it prints a skip note.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::providers::{
    ChatMessage, ErrorKind, ProbeStatus, Provider, ProviderError, ProviderOptions, RetryPolicy, TurnOutput,
    TurnRequest, probe,
};
use tokio_util::sync::CancellationToken;

const MASTER_KEY: &str = "sk-test-master";

const CONFIG: &str = r#"
model_list:
  - model_name: mock-gpt
    litellm_params: { model: openai/mock-gpt, api_key: sk-fake, mock_response: "Hello from the LiteLLM mock server. Streaming works." }
  - model_name: mock-ratelimit
    litellm_params: { model: openai/mock-ratelimit, api_key: sk-fake, mock_response: "litellm.RateLimitError" }
  - model_name: mock-context
    litellm_params: { model: openai/mock-context, api_key: sk-fake, mock_response: "litellm.ContextWindowExceededError" }
  - model_name: mock-midstream
    litellm_params: { model: openai/mock-midstream, api_key: sk-fake, mock_response: "This reply breaks after three chunks, never finishing." }
  - model_name: mock-pings
    litellm_params: { model: openai/mock-pings, api_key: sk-fake, mock_response: "After two SSE comment pings.", keepalive_seconds: 1 }
  - model_name: claude-via-self
    litellm_params: { model: openai/mock-gpt, api_base: os.environ/LITELLM_SELF_BASE, api_key: sk-test-master }
  - model_name: claude-via-self-broken
    litellm_params: { model: openai/mock-midstream, api_base: os.environ/LITELLM_SELF_BASE, api_key: sk-test-master }
litellm_settings:
  callbacks: huddle_litellm_hooks.mock_stream_hooks
  use_chat_completions_url_for_anthropic_messages: true
general_settings:
  master_key: sk-test-master
"#;

const HOOKS: &str = r#"
import asyncio
from litellm.integrations.custom_logger import CustomLogger

class MockStreamHooks(CustomLogger):
    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict, response, request_data):
        model = str(request_data.get("model", ""))
        sent = 0
        async for item in response:
            if "midstream" in model and sent >= 3:
                raise Exception("mock failure after 3 chunks")
            if "pings" in model and sent == 0:
                await asyncio.sleep(2.5)
            sent += 1
            yield item

mock_stream_hooks = MockStreamHooks()
"#;

fn provider(name: &str, kind: ProviderKind, base: String) -> ProviderConfig {
    let mut p = ProviderConfig::new(name, kind);
    p.base_url = Some(base);
    // The master key as a configured header: no environment variable needed in the test.
    match kind {
        ProviderKind::Anthropic => p.headers.insert("x-api-key".into(), MASTER_KEY.into()),
        _ => p
            .headers
            .insert("authorization".into(), format!("Bearer {MASTER_KEY}")),
    };
    p
}

async fn turn(p: &Arc<dyn Provider>, model: &str) -> (Result<TurnOutput, ProviderError>, String) {
    let mut streamed = String::new();
    let result = p
        .stream_turn(
            TurnRequest::new(model, vec![ChatMessage::user("hi")]),
            &mut |d: &str| streamed.push_str(d),
            CancellationToken::new(),
        )
        .await;
    (result, streamed)
}

#[tokio::test]
async fn litellm_proxy_openai_and_anthropic_kinds() {
    let Some(program) = std::env::var_os("HUDDLE_LITELLM").filter(|p| !p.is_empty()) else {
        eprintln!("\n*** SKIPPED: LiteLLM conformance test (set HUDDLE_LITELLM=/path/to/bin/litellm) ***\n");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("litellm-mock.yaml"), CONFIG).expect("config");
    std::fs::write(dir.path().join("huddle_litellm_hooks.py"), HOOKS).expect("hooks");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = tokio::process::Command::new(&program)
        .args([
            "--config",
            "litellm-mock.yaml",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .current_dir(dir.path())
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_SELF_BASE", format!("{base}/v1"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start litellm");
    let http = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..360 {
        if http
            .get(format!("{base}/health/liveliness"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(ready, "LiteLLM did not become ready on {base} within 90 s");

    let mut config = Config::default();
    config
        .providers
        .push(provider("litellm", ProviderKind::Openai, format!("{base}/v1")));
    config.providers.push(provider(
        "litellm-anthropic",
        ProviderKind::Anthropic,
        base.clone(),
    ));
    let options = ProviderOptions {
        read_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(2),
        retry: RetryPolicy {
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(200),
            ..RetryPolicy::default()
        },
    };
    let providers = huddle::sim::providers_with_options(&config, options).expect("providers");
    let openai = providers.get("litellm").expect("openai kind");
    let anthropic = providers.get("litellm-anthropic").expect("anthropic kind");

    let (result, streamed) = turn(&openai, "mock-gpt").await;
    let out = result.expect("mock-gpt");
    assert_eq!(out.text, "Hello from the LiteLLM mock server. Streaming works.");
    assert_eq!(streamed, out.text);
    assert!(out.usage.is_some_and(|u| u.output_tokens > 0), "{out:?}");

    let out = turn(&openai, "mock-pings").await.0.expect("pings then text");
    assert_eq!(out.text, "After two SSE comment pings.");

    let (result, streamed) = turn(&openai, "mock-midstream").await;
    let err = result.expect_err("midstream");
    assert_eq!(err.kind, ErrorKind::Server, "{err}");
    assert_eq!(
        (err.partial_text.as_str(), streamed.as_str()),
        ("This repl", "This repl")
    );

    let err = turn(&openai, "mock-ratelimit").await.0.expect_err("429");
    assert_eq!((err.kind, err.attempts), (ErrorKind::RateLimited, 3), "{err}");
    let err = turn(&openai, "mock-context").await.0.expect_err("400");
    assert_eq!(err.kind, ErrorKind::ContextTooLong, "{err}");

    let out = turn(&anthropic, "claude-via-self")
        .await
        .0
        .expect("anthropic via LiteLLM");
    assert_eq!(out.text, "Hello from the LiteLLM mock server. Streaming works.");
    assert!(
        out.usage
            .is_some_and(|u| u.input_tokens > 0 && u.output_tokens > 0),
        "{out:?}"
    );
    let err = turn(&anthropic, "claude-via-self-broken")
        .await
        .0
        .expect_err("event: error");
    assert_eq!(err.partial_text, "This repl", "{err}");

    for r in probe(&config).await {
        assert!(matches!(r.status, ProbeStatus::Reachable { .. }), "{r:?}");
    }
}
