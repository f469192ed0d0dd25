//! What the two HTTP providers share: the client, the attempt loop with retries, reading an SSE
//! body with a per-chunk idle timeout, and turning HTTP statuses into actionable errors.

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::time::timeout;

use super::error::{
    ErrorKind, ProviderError, StreamError, error_codes_from_json, error_message_from_json, human_duration,
    mentions_context_length, snippet,
};
use super::retry::retry_after_from_headers;
use super::secrets::Secrets;
use super::sse::{SseEvent, SseParser};
use super::{DeltaSink, Finished, ProviderOptions, TextSink, TurnOutput, TurnRequest, conclude, guarded};
use crate::config::ProviderConfig;
use crate::model::Usage;

/// A wire protocol's stream state machine: SSE events in, text deltas out.
pub(crate) trait StreamDecoder: Send {
    fn on_event(&mut self, event: &SseEvent, sink: &mut TextSink<'_>) -> Result<(), StreamError>;
    /// The terminal marker arrived: stop reading.
    fn finished(&self) -> bool;
    /// Ending the stream here would be a complete answer.
    fn complete(&self) -> bool;
    /// The server ignored `stream: true` and sent one JSON answer.
    fn on_json_body(&mut self, body: &serde_json::Value, sink: &mut TextSink<'_>) -> Result<(), StreamError>;
    fn usage(&self) -> Option<Usage>;
    fn finish_reason(&self) -> Option<String>;
    /// How the protocol marks the end, for the truncation message.
    fn end_marker(&self) -> &'static str;
}

/// One HTTP provider's fixed request parts.
pub(crate) struct Endpoint {
    pub provider: String,
    pub client: reqwest::Client,
    pub url: String,
    /// Configured extra headers (auth is added per request: keys are read when needed).
    pub headers: HeaderMap,
    pub api_key_env: Option<String>,
    pub options: ProviderOptions,
}

impl Endpoint {
    pub fn new(
        cfg: &ProviderConfig,
        url: String,
        options: ProviderOptions,
    ) -> Result<Endpoint, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|e| {
                ProviderError::new(
                    ErrorKind::Config,
                    &cfg.name,
                    format!("provider `{}`: cannot build an HTTP client: {e}", cfg.name),
                )
            })?;
        let mut headers = HeaderMap::new();
        for (name, value) in &cfg.headers {
            let bad = |what: &str| {
                ProviderError::new(
                    ErrorKind::Config,
                    &cfg.name,
                    format!("provider `{}`: header `{name}` has an invalid {what}", cfg.name),
                )
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let value = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
            headers.insert(name, value);
        }
        Ok(Endpoint {
            provider: cfg.name.clone(),
            client,
            url,
            headers,
            api_key_env: cfg.api_key_env.clone(),
            options,
        })
    }

    /// The API key, or an auth error when a key variable is configured but not set.
    pub fn api_key(&self) -> Result<Option<String>, ProviderError> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var).ok().filter(|k| !k.trim().is_empty()) {
            Some(key) => Ok(Some(key)),
            None => Err(ProviderError::new(
                ErrorKind::Auth,
                &self.provider,
                format!(
                    "provider `{}` needs an API key: set the environment variable {var} (or remove api_key_env for a local server)",
                    self.provider
                ),
            )),
        }
    }

    /// This turn's secret values: the key as it is now, and every configured header value.
    pub fn secrets(&self) -> Secrets {
        let key = self.api_key().ok().flatten();
        let headers = self.headers.values().filter_map(|v| v.to_str().ok());
        Secrets::new(key.as_deref().into_iter().chain(headers))
    }

    fn key_advice(&self) -> String {
        match &self.api_key_env {
            Some(var) => format!("check {var}"),
            None => format!(
                "the server wants an API key: set api_key_env for provider `{}` in config.yaml",
                self.provider
            ),
        }
    }
}

/// One streamed HTTP turn: encode the body, run the attempts (with retries) under the turn's
/// cancellation and timeout, and conclude with the text streamed so far. No secret value leaves
/// it: server text is redacted as it arrives, and the final error message once more.
pub(crate) async fn stream_turn<D: StreamDecoder>(
    ep: &Endpoint,
    auth: Result<HeaderMap, ProviderError>,
    body: &serde_json::Value,
    req: &TurnRequest,
    make_decoder: impl Fn() -> D,
    deltas: DeltaSink<'_>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<TurnOutput, ProviderError> {
    let started = std::time::Instant::now();
    let secrets = ep.secrets();
    let mut sink = TextSink::new(deltas);
    let prepared = auth.and_then(|auth| {
        let body = serde_json::to_vec(body).map_err(|e| {
            ProviderError::new(
                ErrorKind::Config,
                &ep.provider,
                format!("cannot encode the request: {e}"),
            )
        })?;
        Ok((auth, body))
    });
    let work = async {
        let (auth, body) = prepared?;
        let attempt = Attempt {
            ep,
            auth: &auth,
            body: &body,
            model: &req.model,
            secrets: &secrets,
        };
        run_attempts(&attempt, make_decoder, &mut sink).await
    };
    let result = guarded(&ep.provider, &cancel, req.turn_timeout, work).await;
    conclude(result, sink.text, started, false).map_err(|mut e| {
        secrets.redact_in_place(&mut e.message);
        secrets.redact_in_place(&mut e.partial_text);
        e
    })
}

/// What every attempt of a turn sends, and the secrets to keep out of what comes back.
pub(crate) struct Attempt<'a> {
    pub ep: &'a Endpoint,
    pub auth: &'a HeaderMap,
    pub body: &'a [u8],
    pub model: &'a str,
    pub secrets: &'a Secrets,
}

pub(crate) async fn run_attempts<D: StreamDecoder>(
    attempt_of: &Attempt<'_>,
    make_decoder: impl Fn() -> D,
    sink: &mut TextSink<'_>,
) -> Result<Finished, ProviderError> {
    let ep = attempt_of.ep;
    let policy = ep.options.retry;
    let mut attempt = 1;
    loop {
        let mut decoder = make_decoder();
        match one_attempt(attempt_of, &mut decoder, sink).await {
            Ok(()) => {
                return Ok(Finished {
                    usage: decoder.usage(),
                    finish_reason: decoder.finish_reason(),
                    ..Finished::default()
                });
            }
            Err(mut e) => {
                if policy.should_retry(attempt, &e, !sink.text.is_empty()) {
                    let wait = policy.delay(attempt, e.retry_after);
                    tracing::warn!(
                        provider = %ep.provider, attempt, kind = %e.kind, wait_ms = wait.as_millis() as u64,
                        "transient provider error, retrying: {}", attempt_of.secrets.redact(&e.message)
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    continue;
                }
                e.attempts = attempt;
                if attempt > 1 {
                    e.message.push_str(&format!(" (after {attempt} attempts)"));
                }
                return Err(e);
            }
        }
    }
}

async fn one_attempt<D: StreamDecoder>(
    attempt: &Attempt<'_>,
    decoder: &mut D,
    sink: &mut TextSink<'_>,
) -> Result<(), ProviderError> {
    let Attempt {
        ep,
        auth,
        body,
        model,
        secrets,
    } = *attempt;
    let read_timeout = ep.options.read_timeout;
    let request = ep
        .client
        .post(&ep.url)
        .headers(ep.headers.clone())
        .headers(auth.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_vec())
        .send();
    let mut resp = match timeout(read_timeout, request).await {
        Err(_) => return Err(idle_timeout(ep, "no response")),
        Ok(Err(e)) => return Err(transport_error(ep, &e)),
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if !status.is_success() {
        let retry_after = retry_after_from_headers(resp.headers());
        let text = match timeout(read_timeout, resp.text()).await {
            Ok(Ok(t)) => t,
            _ => String::new(),
        };
        // Redacted before it is parsed or shortened, so no piece of a key survives a cut.
        let text = secrets.redact(&text);
        return Err(status_error(ep, model, status.as_u16(), &text).with_retry_after(retry_after));
    }
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.contains("json") && !content_type.contains("event-stream") {
        let bytes = match timeout(read_timeout, resp.bytes()).await {
            Err(_) => return Err(idle_timeout(ep, "nothing")),
            Ok(Err(e)) => return Err(transport_error(ep, &e)),
            Ok(Ok(b)) => b,
        };
        let text = String::from_utf8_lossy(&bytes);
        let bytes = secrets.redact(&text);
        let value: serde_json::Value = serde_json::from_str(&bytes).map_err(|e| {
            StreamError::new(
                ErrorKind::Protocol,
                format!("answer is not valid JSON ({e}): {}", snippet(&bytes, 200)),
            )
            .into_provider_error(&ep.provider)
        })?;
        return decoder
            .on_json_body(&value, sink)
            .map_err(|e| e.into_provider_error(&ep.provider));
    }

    let mut parser = SseParser::new();
    loop {
        let chunk = match timeout(read_timeout, resp.chunk()).await {
            Err(_) => return Err(idle_timeout(ep, "nothing")),
            Ok(Err(e)) => {
                return Err(ProviderError::new(
                    ErrorKind::Connection,
                    &ep.provider,
                    format!(
                        "the connection to provider `{}` broke mid-answer: {}",
                        ep.provider,
                        error_chain(&e)
                    ),
                ));
            }
            Ok(Ok(c)) => c,
        };
        let at_eof = chunk.is_none();
        match chunk {
            Some(bytes) => parser.push(&bytes),
            None => parser.finish(),
        }
        while let Some(mut event) = parser.next_event() {
            if !secrets.is_empty() {
                secrets.redact_in_place(&mut event.data);
            }
            decoder
                .on_event(&event, sink)
                .map_err(|e| e.into_provider_error(&ep.provider))?;
            if decoder.finished() {
                return Ok(());
            }
        }
        if at_eof {
            if decoder.complete() {
                return Ok(());
            }
            return Err(ProviderError::new(
                ErrorKind::Truncated,
                &ep.provider,
                format!(
                    "provider `{}` ended the stream without {}: the answer is incomplete",
                    ep.provider,
                    decoder.end_marker()
                ),
            ));
        }
    }
}

fn idle_timeout(ep: &Endpoint, what: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::ReadTimeout,
        &ep.provider,
        format!(
            "provider `{}` sent {what} for {} (read_timeout_secs in config.yaml): the server stalled",
            ep.provider,
            human_duration(ep.options.read_timeout)
        ),
    )
}

/// The error and its causes on one line (reqwest's own text is terse).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

fn transport_error(ep: &Endpoint, e: &reqwest::Error) -> ProviderError {
    let message = if e.is_connect() {
        format!(
            "cannot connect to provider `{}` at {}: {}; is the server running and base_url right?",
            ep.provider,
            ep.url,
            error_chain(e)
        )
    } else {
        format!(
            "request to provider `{}` at {} failed: {}",
            ep.provider,
            ep.url,
            error_chain(e)
        )
    };
    ProviderError::new(ErrorKind::Connection, &ep.provider, message)
}

/// A non-2xx answer as an error whose message says what to do.
pub(crate) fn status_error(ep: &Endpoint, model: &str, status: u16, body: &str) -> ProviderError {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let server_says = json
        .as_ref()
        .and_then(error_message_from_json)
        .unwrap_or_else(|| body.to_string());
    let codes = json.as_ref().map(error_codes_from_json).unwrap_or_default();
    let p = &ep.provider;
    let (kind, advice) = match status {
        401 => (ErrorKind::Auth, ep.key_advice()),
        403 => (
            ErrorKind::Permission,
            format!("the key may not use model `{model}` here; {}", ep.key_advice()),
        ),
        404 => (
            ErrorKind::NotFound,
            format!(
                "check base_url (requested {}) and that model `{model}` exists on this server",
                ep.url
            ),
        ),
        413 => (
            ErrorKind::ContextTooLong,
            "the request is too large: shorten the conversation or start a new session".to_string(),
        ),
        429 if codes.contains("insufficient_quota") || mentions_quota(&server_says) => (
            ErrorKind::QuotaExhausted,
            "the account's quota is used up: check billing".to_string(),
        ),
        429 => (
            ErrorKind::RateLimited,
            "rate limited: wait a little, or lower max_concurrency in config.yaml".to_string(),
        ),
        408 | 409 => (ErrorKind::Server, "the server gave up on the request".to_string()),
        400..=499 if mentions_context_length(&format!("{codes} {server_says}")) => (
            ErrorKind::ContextTooLong,
            format!(
                "the conversation is too long for model `{model}`: start a new session or pick a model with a larger context"
            ),
        ),
        400..=499 => (
            ErrorKind::BadRequest,
            format!("the request for model `{model}` was refused"),
        ),
        529 => (
            ErrorKind::Overloaded,
            "the provider is overloaded: try again later".to_string(),
        ),
        _ => (
            ErrorKind::Server,
            "the server failed: try again later".to_string(),
        ),
    };
    let said = snippet(&server_says, 300);
    let message = if said.is_empty() {
        format!("{status} from provider `{p}`: {advice}")
    } else {
        format!("{status} from provider `{p}`: {advice} (server said: {said})")
    };
    ProviderError::new(kind, p, message).with_status(status)
}

fn mentions_quota(text: &str) -> bool {
    let t = text.to_lowercase();
    t.contains("quota") || t.contains("billing") || t.contains("credit balance")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    fn endpoint(key_env: Option<&str>) -> Endpoint {
        let mut cfg = ProviderConfig::new("openai", ProviderKind::Openai);
        cfg.api_key_env = key_env.map(String::from);
        Endpoint::new(
            &cfg,
            "http://127.0.0.1:1/v1/chat/completions".into(),
            ProviderOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn statuses_become_actionable_errors() {
        let ep = endpoint(Some("OPENAI_API_KEY"));
        let e = status_error(
            &ep,
            "gpt",
            401,
            r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#,
        );
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(
            e.message
                .starts_with("401 from provider `openai`: check OPENAI_API_KEY"),
            "{e}"
        );
        assert!(e.message.contains("Incorrect API key"), "{e}");

        let e = status_error(&endpoint(None), "gpt", 401, "");
        assert!(e.message.contains("set api_key_env"), "{e}");

        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
        assert_eq!(status_error(&ep, "m", 429, quota).kind, ErrorKind::QuotaExhausted);
        let litellm_429 = include_str!("testdata/litellm-openai-429.http");
        let body = litellm_429.split("\n\n").nth(1).unwrap_or_default();
        assert_eq!(status_error(&ep, "m", 429, body).kind, ErrorKind::RateLimited);
        assert_eq!(
            status_error(&ep, "m", 400, r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#).kind,
            ErrorKind::ContextTooLong
        );
        assert_eq!(status_error(&ep, "m", 400, "{}").kind, ErrorKind::BadRequest);
        assert_eq!(status_error(&ep, "m", 404, "").kind, ErrorKind::NotFound);
        assert_eq!(status_error(&ep, "m", 529, "").kind, ErrorKind::Overloaded);
        assert_eq!(status_error(&ep, "m", 503, "").kind, ErrorKind::Server);
        assert_eq!(status_error(&ep, "m", 500, "oops").status, Some(500));
    }

    #[test]
    fn missing_key_variable_is_an_auth_error_naming_it() {
        let ep = endpoint(Some("HUDDLE_TEST_SURELY_UNSET_KEY"));
        let e = ep.api_key().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(e.message.contains("HUDDLE_TEST_SURELY_UNSET_KEY"), "{e}");
        assert_eq!(endpoint(None).api_key().unwrap(), None);
    }

    #[test]
    fn bad_header_names_are_config_errors() {
        let mut cfg = ProviderConfig::new("x", ProviderKind::Openai);
        cfg.headers.insert("bad header".into(), "v".into());
        let e = Endpoint::new(&cfg, "http://h".into(), ProviderOptions::default())
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::Config);
    }
}
