//! What the two HTTP providers share: the client, the attempt loop with retries, reading an SSE
//! body with a per-chunk idle timeout, and turning HTTP statuses into actionable errors.

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::time::timeout;

use super::error::{
    ErrorKind, ProviderError, StreamError, error_codes_from_json, error_message_from_json, human_duration,
    mentions_context_length, snippet,
};
use super::secrets::Secrets;
use super::sse::{SseEvent, SseParser};
use super::{
    ChatMessage, DeltaSink, Finished, ProviderOptions, TextSink, TurnOutput, TurnRequest, conclude, guarded,
};
use crate::config::ProviderConfig;
use crate::model::{ToolCall, Usage};

/// A wire protocol's stream state machine: SSE events in, text deltas and tool calls out.
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
    /// The tool calls the answer made, complete and in the model's order (called once, after
    /// a successful attempt).
    fn take_tool_calls(&mut self) -> Vec<ToolCall>;
    /// How the protocol marks the end, for the truncation message.
    fn end_marker(&self) -> &'static str;
}

/// Tool calls as they stream in pieces, keyed by the wire's index (OpenAI's `tool_calls[].index`,
/// Anthropic's content block `index`). Ids and names are taken from the first piece that has
/// them; argument pieces are concatenated as raw text, whatever they split (a string, an
/// escape): the JSON is only read once the call is complete.
#[derive(Debug, Default)]
pub(crate) struct CallAssembler {
    calls: std::collections::BTreeMap<u64, PartialCall>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl CallAssembler {
    /// The highest index seen so far.
    pub fn last_index(&self) -> Option<u64> {
        self.calls.keys().next_back().copied()
    }

    /// The index of a call whose id is already known.
    pub fn index_of_id(&self, id: &str) -> Option<u64> {
        self.calls.iter().find(|(_, c)| c.id == id).map(|(i, _)| *i)
    }

    /// Adds what a piece says of call `index`'s identity (a call is created by its first piece).
    pub fn identify(&mut self, index: u64, id: Option<&str>, name: Option<&str>) {
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id.filter(|s| !s.is_empty())
            && call.id.is_empty()
        {
            call.id = id.to_string();
        }
        if let Some(name) = name.filter(|s| !s.is_empty())
            && call.name.is_empty()
        {
            call.name = name.to_string();
        }
    }

    pub fn push_arguments(&mut self, index: u64, piece: &str) {
        self.calls.entry(index).or_default().arguments.push_str(piece);
    }

    /// The complete calls in index order. A call without a name cannot be answered and is
    /// dropped (logged); one without an id gets `call_<n>`, unique within the answer.
    pub fn finish(&mut self) -> Vec<ToolCall> {
        let calls = std::mem::take(&mut self.calls);
        let mut out: Vec<ToolCall> = Vec::with_capacity(calls.len());
        let mut generated = 0;
        for (index, call) in calls {
            if call.name.is_empty() {
                tracing::warn!(
                    index,
                    id = %call.id,
                    "the model sent a tool call without a name; it is ignored"
                );
                continue;
            }
            let mut id = call.id;
            while id.is_empty() || out.iter().any(|c| c.id == id) {
                generated += 1;
                id = format!("call_{generated}");
            }
            out.push(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        out
    }
}

/// A message as plain text, for a request that declares no tools (a server rejects tool calls
/// and results without the tools' definitions): calls as `(called X with {...})` lines after
/// the text, a result as `[result of X] ...`.
pub(crate) fn plain_text(m: &ChatMessage) -> String {
    let mut text = m.content.to_string();
    if let Some(r) = &m.result_of {
        let label = if r.is_error { "error from" } else { "result of" };
        return format!("[{label} {}] {text}", r.name);
    }
    for call in &m.tool_calls {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let arguments = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        text.push_str(&format!("(called {} with {arguments})", call.name));
    }
    text
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
    /// Where the key is read: the environment of the front end the provider serves.
    pub env: crate::env::Env,
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
            env: crate::env::Env::process(),
        })
    }

    /// The API key, or an auth error when a key variable is configured but not set.
    pub fn api_key(&self) -> Result<Option<String>, ProviderError> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        match self.env.var(var).filter(|k| !k.trim().is_empty()) {
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
            tools_sent: !req.tools.is_empty(),
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
    /// The request declared tools (a refusal may be about them).
    pub tools_sent: bool,
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
                    tool_calls: decoder.take_tool_calls(),
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
        tools_sent,
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
        let now = chrono::Utc::now();
        let retry_after = super::limits::wait_from_headers(resp.headers(), now);
        // An error's body is read for its message: its start is enough.
        let text = match timeout(read_timeout, read_at_most(&mut resp, MAX_ERROR_BODY_BYTES)).await {
            Ok(Ok((bytes, _))) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        };
        // Redacted before it is parsed or shortened, so no piece of a key survives a cut.
        let text = secrets.redact(&text);
        // A limit's reset time may be in the body only (the Codex backend's usage limit).
        let limited = matches!(status.as_u16(), 429 | 529 | 503);
        let retry_after = retry_after.or_else(|| {
            limited
                .then(|| super::limits::wait_from_text(&text, now))
                .flatten()
        });
        return Err(status_error(ep, model, status.as_u16(), &text, tools_sent).with_retry_after(retry_after));
    }
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.contains("json") && !content_type.contains("event-stream") {
        let bytes = match timeout(read_timeout, read_at_most(&mut resp, MAX_JSON_BODY_BYTES)).await {
            Err(_) => return Err(idle_timeout(ep, "nothing")),
            Ok(Err(e)) => return Err(transport_error(ep, &e)),
            Ok(Ok((_, true))) => {
                return Err(ProviderError::new(
                    ErrorKind::Protocol,
                    &ep.provider,
                    format!(
                        "provider `{}` answered with a JSON body of more than {} MiB; huddle read no more of it",
                        ep.provider,
                        MAX_JSON_BODY_BYTES / (1024 * 1024)
                    ),
                ));
            }
            Ok(Ok((b, false))) => b,
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
        if parser.overflowed() {
            return Err(ProviderError::new(
                ErrorKind::Protocol,
                &ep.provider,
                format!(
                    "provider `{}` sent a line or an event of more than {} MiB without its end; huddle read no more of the answer",
                    ep.provider,
                    super::sse::MAX_PENDING_BYTES / (1024 * 1024)
                ),
            ));
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

/// The most of an error response's body read (for its message).
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The largest whole JSON answer read (a server that ignored `stream: true`).
const MAX_JSON_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A body's first `max` bytes, and whether there was more (not read).
async fn read_at_most(resp: &mut reqwest::Response, max: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
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

/// A non-2xx answer as an error whose message says what to do. `tools_sent`: the request
/// declared tools, so a refusal that speaks of them means the model or server cannot take them.
pub(crate) fn status_error(
    ep: &Endpoint,
    model: &str,
    status: u16,
    body: &str,
    tools_sent: bool,
) -> ProviderError {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let server_says = json
        .as_ref()
        .and_then(error_message_from_json)
        .unwrap_or_else(|| body.to_string());
    let codes = json.as_ref().map(error_codes_from_json).unwrap_or_default();
    let p = &ep.provider;
    let all = format!("{codes} {server_says}");
    let (kind, advice) = match status {
        400 | 404 | 422 if tools_sent && !mentions_context_length(&all) && refuses_tools(&all) => (
            ErrorKind::Config,
            format!(
                "model `{model}` (or this server) does not accept tool definitions; pick a model that supports tool calling, or remove `tools:` from the session or its preset"
            ),
        ),
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
        400..=499 if mentions_context_length(&all) => (
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

/// Does a refusal speak of tools as such (not of a tool exchange in the history, which is a
/// malformed request, not a model without tools)?
fn refuses_tools(text: &str) -> bool {
    let t = text.to_lowercase();
    let about_tools = ["tool", "function"].iter().any(|w| t.contains(w));
    let about_history = ["tool_result", "tool_use_id", "tool_call_id", "tool_use` ids"]
        .iter()
        .any(|w| t.contains(w));
    about_tools && !about_history
}

fn mentions_quota(text: &str) -> bool {
    let t = text.to_lowercase();
    t.contains("quota") || t.contains("billing") || t.contains("credit balance")
}

/// What the providers' tests of tool exchanges share.
#[cfg(test)]
pub(crate) mod test_fixtures {
    use crate::model::{ToolCall, ToolSpec};
    use crate::providers::ChatMessage;

    pub fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// Feeds a whole (non-streamed) JSON answer to `decoder`; its text and calls.
    pub fn whole_answer(
        decoder: &mut impl super::StreamDecoder,
        body: serde_json::Value,
    ) -> (String, Vec<ToolCall>) {
        let mut text = String::new();
        let mut forward = |t: &str| text.push_str(t);
        let mut sink = crate::providers::TextSink::new(&mut forward);
        decoder.on_json_body(&body, &mut sink).expect("a valid answer");
        drop(sink);
        (text, decoder.take_tool_calls())
    }

    pub fn read_spec() -> ToolSpec {
        ToolSpec {
            name: "fs__read".into(),
            description: "Reads a file".into(),
            input_schema: serde_json::json!({"type":"object","properties":{"path":{"type":"string"}}}),
        }
    }

    /// Two calls (one without arguments) and their results, one call with broken arguments and
    /// its error, then the user again.
    pub fn tool_history() -> Vec<ChatMessage> {
        vec![
            ChatMessage::user("read a and b"),
            ChatMessage::assistant_calls(
                "",
                vec![
                    call("c1", "fs__read", r#"{"path":"a"}"#),
                    call("c2", "fs__read", ""),
                ],
            ),
            ChatMessage::tool_result("c1", "fs__read", false, "A"),
            ChatMessage::tool_result("c2", "fs__read", true, "no such file"),
            ChatMessage::assistant_calls("One more.", vec![call("c3", "fs__list", "{not json")]),
            ChatMessage::tool_result("c3", "fs__list", true, "invalid arguments"),
            ChatMessage::user("and then?"),
        ]
    }
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
            false,
        );
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(
            e.message
                .starts_with("401 from provider `openai`: check OPENAI_API_KEY"),
            "{e}"
        );
        assert!(e.message.contains("Incorrect API key"), "{e}");

        let e = status_error(&endpoint(None), "gpt", 401, "", false);
        assert!(e.message.contains("set api_key_env"), "{e}");

        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
        assert_eq!(
            status_error(&ep, "m", 429, quota, false).kind,
            ErrorKind::QuotaExhausted
        );
        let litellm_429 = include_str!("testdata/litellm-openai-429.http");
        let body = litellm_429.split("\n\n").nth(1).unwrap_or_default();
        assert_eq!(
            status_error(&ep, "m", 429, body, false).kind,
            ErrorKind::RateLimited
        );
        assert_eq!(
            status_error(&ep, "m", 400, r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#, false).kind,
            ErrorKind::ContextTooLong
        );
        assert_eq!(
            status_error(&ep, "m", 400, "{}", false).kind,
            ErrorKind::BadRequest
        );
        assert_eq!(status_error(&ep, "m", 404, "", false).kind, ErrorKind::NotFound);
        assert_eq!(status_error(&ep, "m", 529, "", false).kind, ErrorKind::Overloaded);
        assert_eq!(status_error(&ep, "m", 503, "", false).kind, ErrorKind::Server);
        assert_eq!(status_error(&ep, "m", 500, "oops", false).status, Some(500));
    }

    #[test]
    fn a_refusal_of_tools_names_the_provider_and_model_and_says_what_to_do() {
        let ep = endpoint(Some("OPENAI_API_KEY"));
        let refusals = [
            (
                400,
                r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
            ),
            (
                400,
                r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}"#,
            ),
            (
                404,
                r#"{"error":{"message":"No endpoints found that support tool use.","code":404}}"#,
            ),
            (
                422,
                r#"{"detail":"Unrecognized request argument supplied: functions"}"#,
            ),
        ];
        for (status, body) in refusals {
            let e = status_error(&ep, "small-model", status, body, true);
            assert_eq!(e.kind, ErrorKind::Config, "{status} {body}");
            assert_eq!(e.status, Some(status));
            for needle in [
                "provider `openai`",
                "model `small-model`",
                "does not accept tool definitions",
                "remove `tools:`",
            ] {
                assert!(e.message.contains(needle), "{needle}: {e}");
            }
            // Without tools in the request the same answer is what it always was.
            assert_ne!(
                status_error(&ep, "m", status, body, false).kind,
                ErrorKind::Config
            );
        }
        // Unrelated refusals keep their meaning, tools or not.
        let unrelated = [
            (
                400,
                r#"{"error":{"message":"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after"}}"#,
                ErrorKind::BadRequest,
            ),
            (
                400,
                r#"{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. tool_call_id missing"}}"#,
                ErrorKind::BadRequest,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens (tool definitions included)"}}"#,
                ErrorKind::ContextTooLong,
            ),
            (
                400,
                r#"{"error":{"message":"temperature must be at most 2"}}"#,
                ErrorKind::BadRequest,
            ),
            (
                404,
                r#"{"error":{"message":"model not found"}}"#,
                ErrorKind::NotFound,
            ),
            (
                401,
                r#"{"error":{"message":"no key for tools"}}"#,
                ErrorKind::Auth,
            ),
            (
                500,
                r#"{"error":{"message":"function crashed"}}"#,
                ErrorKind::Server,
            ),
        ];
        for (status, body, kind) in unrelated {
            assert_eq!(status_error(&ep, "m", status, body, true).kind, kind, "{body}");
        }
    }

    #[test]
    fn calls_assemble_in_index_order_with_ids_made_up_and_nameless_ones_dropped() {
        let mut a = CallAssembler::default();
        a.identify(2, Some("call_b"), Some("b"));
        a.identify(0, None, Some("a"));
        a.push_arguments(0, "{\"x\": \"a\\");
        a.push_arguments(0, "\"b\"}");
        a.identify(0, Some("late"), Some("ignored"));
        a.identify(1, Some("call_nameless"), None);
        a.push_arguments(1, "{}");
        a.identify(3, Some("call_b"), Some("c"));
        assert_eq!(a.last_index(), Some(3));
        assert_eq!(a.index_of_id("call_b"), Some(2));
        let calls = a.finish();
        let got: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("late", "a", "{\"x\": \"a\\\"b\"}"),
                ("call_b", "b", ""),
                ("call_1", "c", ""),
            ]
        );
        assert!(a.finish().is_empty(), "finish leaves nothing behind");
    }

    #[test]
    fn history_without_tools_is_plain_text() {
        use crate::providers::ChatMessage;
        let calls = vec![ToolCall {
            id: "c1".into(),
            name: "fs__read".into(),
            arguments: "{\"path\":\"a\"}".into(),
        }];
        assert_eq!(
            plain_text(&ChatMessage::assistant_calls("Let me look.", calls.clone())),
            "Let me look.\n(called fs__read with {\"path\":\"a\"})"
        );
        assert_eq!(
            plain_text(&ChatMessage::assistant_calls("", calls)),
            "(called fs__read with {\"path\":\"a\"})"
        );
        assert_eq!(
            plain_text(&ChatMessage::tool_result("c1", "fs__read", false, "hello")),
            "[result of fs__read] hello"
        );
        assert_eq!(
            plain_text(&ChatMessage::tool_result("c1", "fs__read", true, "no such file")),
            "[error from fs__read] no such file"
        );
        assert_eq!(plain_text(&ChatMessage::user("hi")), "hi");
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
