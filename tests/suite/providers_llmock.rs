//! Conformance against a third-party mock: llmock (PyPI, pinned by .ci/setup-python-tools.sh),
//! started per test on a random loopback port. Its fault scenarios are queued with
//! `POST /_llmock/scenario`; its `/_llmock/verdict` judges the client's resilience.
//!
//! Needs `HUDDLE_LLMOCK` (path to the `llmock` executable) or `.ci/.venv/bin/llmock`; without
//! either the tests FAIL, unless `HUDDLE_SKIP_LLMOCK=1` (then they print a skip note).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::providers::{
    ChatMessage, ErrorKind, ProbeStatus, Provider, ProviderError, ProviderOptions, RetryPolicy, TurnOutput,
    TurnRequest, probe,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const INSTALL_HINT: &str = "llmock is needed for the provider conformance tests: run `bash .ci/setup-python-tools.sh` \
     (installs the pinned llmock into .ci/.venv) and/or set HUDDLE_LLMOCK=/path/to/bin/llmock; \
     set HUDDLE_SKIP_LLMOCK=1 to skip these tests";

pub(super) struct Llmock {
    child: tokio::process::Child,
    base: String,
    http: reqwest::Client,
}

impl Llmock {
    /// Starts llmock, or returns `None` when skipping was asked for. Panics when it is missing.
    pub(super) async fn start(extra_args: &[&str]) -> Option<Llmock> {
        let Some(program) = llmock_path() else {
            if std::env::var("HUDDLE_SKIP_LLMOCK").is_ok_and(|v| v == "1") {
                eprintln!("\n*** SKIPPED: llmock conformance test (HUDDLE_SKIP_LLMOCK=1) ***\n");
                return None;
            }
            panic!("{INSTALL_HINT}");
        };
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let child = tokio::process::Command::new(&program)
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--log-level",
                "warning",
            ])
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}\n{INSTALL_HINT}", program.display()));
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        for _ in 0..200 {
            if http.get(format!("{base}/v1/models")).send().await.is_ok() {
                return Some(Llmock { child, base, http });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("llmock did not answer on {base} within 20 s");
    }

    pub(super) fn provider(&self, kind: ProviderKind, read_timeout: Duration) -> Arc<dyn Provider> {
        let mut p = ProviderConfig::new("llmock", kind);
        p.base_url = Some(match kind {
            ProviderKind::Anthropic => format!("{}/anthropic", self.base),
            _ => format!("{}/v1", self.base),
        });
        p.max_tokens = Some(256);
        let mut config = Config::default();
        config.providers.push(p);
        let options = ProviderOptions {
            read_timeout,
            connect_timeout: Duration::from_secs(2),
            retry: RetryPolicy {
                base_delay: Duration::from_millis(50),
                max_delay: Duration::from_millis(200),
                ..RetryPolicy::default()
            },
        };
        huddle::sim::providers_with_options(&config, options)
            .expect("providers")
            .get("llmock")
            .expect("llmock provider")
    }

    pub(super) async fn scenario(&self, behaviors: Value) {
        let resp = self
            .http
            .post(format!("{}/_llmock/scenario", self.base))
            .json(&json!({ "behaviors": behaviors }))
            .send()
            .await
            .expect("scenario");
        assert!(
            resp.status().is_success(),
            "scenario refused: {}",
            resp.text().await.unwrap_or_default()
        );
    }

    async fn verdict(&self) -> Value {
        self.http
            .get(format!("{}/_llmock/verdict", self.base))
            .send()
            .await
            .expect("verdict")
            .json()
            .await
            .expect("verdict json")
    }
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn llmock_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HUDDLE_LLMOCK").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.exists(),
            "HUDDLE_LLMOCK={} does not exist.\n{INSTALL_HINT}",
            p.display()
        );
        return Some(p);
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/.venv/bin/llmock");
    local.exists().then_some(local)
}

async fn turn(p: &dyn Provider, model: &str) -> (Result<TurnOutput, ProviderError>, String) {
    let mut req = TurnRequest::new(model, vec![ChatMessage::user("hi")]);
    req.system = Some("You are a test.".into());
    let mut streamed = String::new();
    let result = p
        .stream_turn(req, &mut |d: &str| streamed.push_str(d), CancellationToken::new())
        .await;
    (result, streamed)
}

fn codes(verdict: &Value) -> Vec<String> {
    verdict["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["code"].as_str().map(String::from))
        .collect()
}

const KINDS: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];
const SECS_5: Duration = Duration::from_secs(5);

#[tokio::test]
async fn llmock_plain_streams_of_both_kinds_and_discovery() {
    let Some(mock) = Llmock::start(&["--stream-chunk-delay-ms", "5"]).await else {
        return;
    };
    for (kind, model) in [
        (ProviderKind::Openai, "gpt-4o-mini"),
        (ProviderKind::Anthropic, "claude-x"),
    ] {
        let (result, streamed) = turn(mock.provider(kind, SECS_5).as_ref(), model).await;
        let out = result.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(out.text.contains(model), "{kind:?}: {:?}", out.text);
        assert_eq!(streamed, out.text);
        let usage = out.usage.expect("usage reported");
        assert!(usage.output_tokens > 0, "{usage:?}");
        assert!(out.finish_reason.is_some());
    }
    let mut config = Config::default();
    for (name, kind, base) in [
        ("o", ProviderKind::Openai, format!("{}/v1", mock.base)),
        ("a", ProviderKind::Anthropic, format!("{}/anthropic", mock.base)),
    ] {
        let mut p = ProviderConfig::new(name, kind);
        p.base_url = Some(base);
        config.providers.push(p);
    }
    for r in probe(&config).await {
        assert!(
            matches!(r.status, ProbeStatus::Reachable { models: Some(n) } if n > 0),
            "{r:?}"
        );
    }
    let verdict = mock.verdict().await;
    assert_eq!(verdict["passed"], true, "{verdict}");
}

#[tokio::test]
async fn llmock_rate_limits_are_retried_honouring_retry_after() {
    let Some(mock) = Llmock::start(&[]).await else {
        return;
    };
    for kind in KINDS {
        let p = mock.provider(kind, SECS_5);
        mock.scenario(json!([{"type":"fail","status":429,"retry_after":0.2,"times":2}]))
            .await;
        let (result, _) = turn(p.as_ref(), &format!("{kind:?}-call1")).await;
        assert!(result.is_ok(), "{kind:?}: third attempt succeeds: {result:?}");

        mock.scenario(json!([{"type":"fail","status":429,"retry_after":0.1,"times":3}]))
            .await;
        let err = turn(p.as_ref(), &format!("{kind:?}-call2"))
            .await
            .0
            .expect_err("gives up");
        assert_eq!(
            (err.kind, err.attempts),
            (ErrorKind::RateLimited, 3),
            "{kind:?}: {err}"
        );
        assert_eq!(
            err.retry_after,
            Some(Duration::from_millis(100)),
            "retry-after-ms wins"
        );
    }
    mock.scenario(json!([{"type":"fail","status":529}])).await;
    let (result, _) = turn(mock.provider(ProviderKind::Anthropic, SECS_5).as_ref(), "m3").await;
    assert!(result.is_ok(), "529 retried: {result:?}");

    let verdict = mock.verdict().await;
    let found = codes(&verdict);
    for bad in ["retry_after_ignored", "no_backoff", "gave_up"] {
        assert!(!found.iter().any(|c| c == bad), "llmock flagged {bad}: {verdict}");
    }
}

#[tokio::test]
async fn llmock_disconnects_mid_stream_and_before_text() {
    let Some(mock) = Llmock::start(&[]).await else {
        return;
    };
    for kind in KINDS {
        let p = mock.provider(kind, SECS_5);
        mock.scenario(json!([{"type":"stream_fault","kind":"disconnect","after_chunks":4}]))
            .await;
        let (result, streamed) = turn(p.as_ref(), &format!("{kind:?}-call3")).await;
        let err = result.expect_err("disconnect after text");
        assert_eq!(err.kind, ErrorKind::Connection, "{kind:?}: {err}");
        assert!(!err.partial_text.is_empty(), "{kind:?}: partial text kept");
        assert_eq!(err.partial_text, streamed);

        mock.scenario(json!([{"type":"stream_fault","kind":"disconnect","after_chunks":1}]))
            .await;
        let (result, _) = turn(p.as_ref(), &format!("{kind:?}-call4")).await;
        assert!(
            result.is_ok(),
            "{kind:?}: disconnect before text is retried: {result:?}"
        );
    }
    // llmock calls a client that does not retry after a dropped connection `gave_up`; huddle
    // deliberately does not retry once text was shown: exactly the two mid-answer calls.
    let found = codes(&mock.verdict().await);
    assert_eq!(found.iter().filter(|c| *c == "gave_up").count(), 2, "{found:?}");
    assert!(!found.iter().any(|c| c == "no_backoff"), "{found:?}");
}

#[tokio::test]
async fn llmock_truncated_streams_are_errors_not_answers() {
    let Some(mock) = Llmock::start(&[]).await else {
        return;
    };
    for kind in KINDS {
        let p = mock.provider(kind, SECS_5);
        mock.scenario(json!([{"type":"stream_fault","kind":"truncate","after_chunks":4}]))
            .await;
        let (result, streamed) = turn(p.as_ref(), &format!("{kind:?}-call5")).await;
        let err = result.expect_err("truncated");
        assert_eq!(err.kind, ErrorKind::Truncated, "{kind:?}: {err}");
        assert!(!streamed.is_empty() && err.partial_text == streamed);

        mock.scenario(json!([{"type":"stream_fault","kind":"truncate","after_chunks":1}]))
            .await;
        assert!(
            turn(p.as_ref(), &format!("{kind:?}-call6")).await.0.is_ok(),
            "{kind:?}: truncation before text is retried"
        );
    }
}

#[tokio::test]
async fn llmock_stall_and_malformed_chunks() {
    let Some(mock) = Llmock::start(&[]).await else {
        return;
    };
    for kind in KINDS {
        let p = mock.provider(kind, Duration::from_millis(1500));
        mock.scenario(json!([{"type":"stream_fault","kind":"stall","after_chunks":4,"stall_seconds":6}]))
            .await;
        let err = turn(p.as_ref(), &format!("{kind:?}-call7"))
            .await
            .0
            .expect_err("stalled");
        assert_eq!(err.kind, ErrorKind::ReadTimeout, "{kind:?}: {err}");
        assert!(!err.partial_text.is_empty());

        mock.scenario(json!([{"type":"stream_fault","kind":"malformed","after_chunks":4}]))
            .await;
        let err = turn(p.as_ref(), &format!("{kind:?}-call8"))
            .await
            .0
            .expect_err("malformed");
        assert_eq!(err.kind, ErrorKind::Protocol, "{kind:?}: {err}");
        assert!(!err.partial_text.is_empty());

        // Before any text was shown, a broken chunk is still an error reported at once (only
        // connect errors, 429, 5xx and cut streams are transient). The first text event is
        // chunk 1 for OpenAI, chunk 3 for Anthropic (after message_start, content_block_start,
        // ping).
        let first_text = if kind == ProviderKind::Anthropic { 3 } else { 1 };
        mock.scenario(json!([{"type":"stream_fault","kind":"malformed","after_chunks":first_text}]))
            .await;
        let err = turn(p.as_ref(), &format!("{kind:?}-call9"))
            .await
            .0
            .expect_err("malformed before text");
        assert_eq!(err.kind, ErrorKind::Protocol, "{kind:?}: {err}");
        assert_eq!(err.attempts, 1, "{kind:?}: not retried");
    }
    // llmock flags every malformed chunk not followed by a retry: huddle reports a malformed
    // stream instead of retrying it, so all four calls are flagged.
    // (Each turn uses its own model name: llmock groups identical requests as one call.)
    let found = codes(&mock.verdict().await);
    assert_eq!(
        found.iter().filter(|c| *c == "malformed_chunk_ignored").count(),
        4,
        "{found:?}"
    );
}
