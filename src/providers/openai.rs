//! The `openai` kind: any OpenAI-compatible Chat Completions endpoint, streamed.
//!
//! Parsing is lenient, because "compatible" servers differ: `finish_reason: ""`, `usage: {}`,
//! `choices: null` or missing, a usage chunk with an empty choice, `: ping` comments, and errors
//! sent as `data: {"error": ...}` inside a 200 stream. A stream is complete only with `[DONE]`
//! or a finish reason; a clean end without either is a truncation error.

use futures::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::error::{
    ErrorKind, ProviderError, StreamError, classify_in_band, error_codes_from_json, error_message_from_json,
    not_json, snippet,
};
use super::http::{self, Endpoint, StreamDecoder};
use super::sse::SseEvent;
use super::{ChatRole, DeltaSink, Provider, ProviderOptions, TextSink, TurnOutput, TurnRequest};
use crate::config::{ProviderConfig, ProviderKind};
use crate::model::Usage;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// `{base}/chat/completions`, the base taken as configured (with or without `/v1`).
pub fn chat_url(base_url: Option<&str>) -> String {
    format!("{}/chat/completions", base(base_url))
}

/// `{base}/models`, for discovery.
pub fn models_url(base_url: Option<&str>) -> String {
    format!("{}/models", base(base_url))
}

fn base(base_url: Option<&str>) -> &str {
    base_url.unwrap_or(DEFAULT_BASE_URL).trim().trim_end_matches('/')
}

pub struct OpenAiProvider {
    endpoint: Endpoint,
    max_tokens: Option<u32>,
}

impl OpenAiProvider {
    pub fn new(cfg: &ProviderConfig, options: ProviderOptions) -> Result<OpenAiProvider, ProviderError> {
        Ok(OpenAiProvider {
            endpoint: Endpoint::new(cfg, chat_url(cfg.base_url.as_deref()), options)?,
            max_tokens: cfg.max_tokens,
        })
    }

    /// The JSON body of a streamed request.
    pub fn request_body(&self, req: &TurnRequest) -> serde_json::Value {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if let Some(system) = &req.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for m in &req.messages {
            let role = match m.role {
                ChatRole::User => "user",
                ChatRole::Assistant => "assistant",
                ChatRole::Tool => "user",
            };
            messages.push(json!({"role": role, "content": m.content}));
        }
        let mut body = json!({
            "model": req.model,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": messages,
        });
        if let Some(max) = self.max_tokens {
            body["max_tokens"] = json!(max);
        }
        body
    }

    fn auth_headers(&self) -> Result<HeaderMap, ProviderError> {
        let ep = &self.endpoint;
        let key = ep.api_key()?;
        let mut auth = HeaderMap::new();
        if let Some(key) = key {
            let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ProviderError::new(
                    ErrorKind::Auth,
                    &ep.provider,
                    format!(
                        "provider `{}`: the API key contains characters not allowed in a header",
                        ep.provider
                    ),
                )
            })?;
            auth.insert(AUTHORIZATION, value);
        }
        Ok(auth)
    }

    async fn turn(
        &self,
        req: TurnRequest,
        deltas: DeltaSink<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnOutput, ProviderError> {
        let body = self.request_body(&req);
        let auth = self.auth_headers();
        http::stream_turn(
            &self.endpoint,
            auth,
            &body,
            &req,
            OpenAiDecoder::new,
            deltas,
            cancel,
        )
        .await
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }
    fn stream_turn<'a>(
        &'a self,
        req: TurnRequest,
        deltas: DeltaSink<'a>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<TurnOutput, ProviderError>> {
        Box::pin(self.turn(req, deltas, cancel))
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    /// Non-streamed answers carry `message` instead of `delta`.
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// The Chat Completions stream state machine.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    done: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl OpenAiDecoder {
    pub fn new() -> OpenAiDecoder {
        OpenAiDecoder::default()
    }

    /// Feeds one SSE event; text goes to `emit`.
    pub fn handle(&mut self, event: &SseEvent, emit: &mut dyn FnMut(&str)) -> Result<(), StreamError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        if event.event == "error" {
            // vLLM's style: `event: error` with a JSON (or plain) body.
            let value: serde_json::Value = serde_json::from_str(data).unwrap_or_else(|_| json!(data));
            return Err(in_band_error(&value));
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| not_json(&event.event, &e, data))?;
        self.apply(chunk, emit)
    }

    fn apply(&mut self, chunk: Chunk, emit: &mut dyn FnMut(&str)) -> Result<(), StreamError> {
        if let Some(err) = chunk.error.filter(|e| !e.is_null()) {
            return Err(in_band_error(&json!({ "error": err })));
        }
        if let Some(u) = chunk.usage
            && (u.prompt_tokens.is_some() || u.completion_tokens.is_some())
        {
            self.usage = Some(Usage {
                input_tokens: u.prompt_tokens.unwrap_or(0),
                output_tokens: u.completion_tokens.unwrap_or(0),
            });
        }
        if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
            if let Some(text) = choice.delta.or(choice.message).and_then(|d| d.content) {
                emit(&text);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }
    pub fn finish_reason(&self) -> Option<String> {
        self.finish_reason.clone()
    }
    /// `[DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }
    /// The stream may end here: `[DONE]` or a finish reason was seen.
    pub fn is_complete(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }
}

fn in_band_error(value: &serde_json::Value) -> StreamError {
    let message = error_message_from_json(value).unwrap_or_else(|| snippet(&value.to_string(), 200));
    let codes = error_codes_from_json(value);
    let kind = classify_in_band(&codes, &message);
    StreamError::new(
        kind,
        format!("reported an error mid-stream: {}", snippet(&message, 300)),
    )
}

impl StreamDecoder for OpenAiDecoder {
    fn on_event(&mut self, event: &SseEvent, sink: &mut TextSink<'_>) -> Result<(), StreamError> {
        self.handle(event, &mut |t| sink.push(t))
    }
    fn finished(&self) -> bool {
        self.done
    }
    fn complete(&self) -> bool {
        self.is_complete()
    }
    fn on_json_body(&mut self, body: &serde_json::Value, sink: &mut TextSink<'_>) -> Result<(), StreamError> {
        let chunk: Chunk = serde_json::from_value(body.clone()).map_err(|e| {
            StreamError::new(
                ErrorKind::Protocol,
                format!("sent an unexpected JSON answer ({e})"),
            )
        })?;
        self.apply(chunk, &mut |t| sink.push(t))?;
        self.done = true;
        self.finish_reason.get_or_insert_with(|| "stop".to_string());
        Ok(())
    }
    fn usage(&self) -> Option<Usage> {
        self.usage
    }
    fn finish_reason(&self) -> Option<String> {
        self.finish_reason.clone()
    }
    fn end_marker(&self) -> &'static str {
        "`[DONE]` or a finish reason"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::sse::parse_all;

    /// Replays a capture; returns the text, the decoder and the first error.
    fn replay(capture: &[u8]) -> (String, OpenAiDecoder, Option<StreamError>) {
        let mut decoder = OpenAiDecoder::new();
        let mut text = String::new();
        for event in parse_all(capture) {
            if let Err(e) = decoder.handle(&event, &mut |t| text.push_str(t)) {
                return (text, decoder, Some(e));
            }
        }
        (text, decoder, None)
    }

    #[test]
    fn llmock_stream_with_usage() {
        let (text, d, err) = replay(include_bytes!("testdata/llmock-openai-stream-include-usage.sse"));
        assert!(err.is_none());
        assert_eq!(text, "Simulated success from gpt-4o-mini.");
        assert!(d.is_done() && d.is_complete());
        assert_eq!(d.finish_reason().as_deref(), Some("stop"));
        assert_eq!(
            d.usage(),
            Some(Usage {
                input_tokens: 0,
                output_tokens: 8
            })
        );
    }

    #[test]
    fn litellm_stream_with_ping_and_usage_in_a_choice_chunk() {
        let (text, d, err) = replay(include_bytes!("testdata/litellm-openai-stream-include-usage.sse"));
        assert!(err.is_none());
        assert_eq!(text, "Hello from the LiteLLM mock server. Streaming works.");
        assert_eq!(
            d.usage(),
            Some(Usage {
                input_tokens: 8,
                output_tokens: 12
            })
        );
        assert!(d.is_done());
    }

    #[test]
    fn midstream_error_keeps_text_and_is_a_server_error() {
        let (text, d, err) = replay(include_bytes!("testdata/litellm-openai-midstream-error.sse"));
        assert_eq!(text, "This repl");
        let err = err.unwrap();
        assert_eq!(err.kind, ErrorKind::Server);
        assert!(
            err.message.contains("mock failure after 3 chunks"),
            "{}",
            err.message
        );
        assert!(!d.is_complete());
    }

    #[test]
    fn truncated_capture_is_not_complete() {
        let (text, d, err) = replay(include_bytes!("testdata/llmock-openai-truncated.sse"));
        assert!(err.is_none());
        assert_eq!(text, "Simulated ");
        assert!(!d.is_complete(), "no [DONE] and no finish reason");
    }

    #[test]
    fn tool_call_stream_has_no_text_but_completes() {
        let (text, d, err) = replay(include_bytes!("testdata/llmock-openai-stream-tool-call.sse"));
        assert!(err.is_none());
        assert_eq!(text, "");
        assert_eq!(d.finish_reason().as_deref(), Some("tool_calls"));
    }

    #[test]
    fn lenient_shapes() {
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"\"}],\"usage\":{}}\n\n",
            "data: {\"choices\":null,\"usage\":null}\n\n",
            "data: {\"id\":\"x\"}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":null,\"reasoning\":\"hm\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}]}\n\n",
        );
        let (text, d, err) = replay(body.as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text, "ab");
        assert_eq!(d.usage(), None, "usage: {{}} is no usage");
        assert_eq!(d.finish_reason().as_deref(), Some("length"));
        assert!(d.is_complete() && !d.is_done());
    }

    #[test]
    fn malformed_json_is_a_protocol_error() {
        let (_, _, err) = replay(b"data: {\"choices\":[{\"del\n\n");
        assert_eq!(err.unwrap().kind, ErrorKind::Protocol);
    }

    #[test]
    fn error_event_and_rate_limit_chunk() {
        let (_, _, err) = replay(b"event: error\ndata: {\"code\":400,\"details\":\"bad input\"}\n\n");
        let err = err.unwrap();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(err.message.contains("bad input"));
        let (_, _, err) = replay(b"data: {\"error\":{\"message\":\"slow\",\"code\":429}}\n\n");
        assert_eq!(err.unwrap().kind, ErrorKind::RateLimited);
    }

    #[test]
    fn urls_follow_the_configured_base() {
        assert_eq!(chat_url(None), "https://api.openai.com/v1/chat/completions");
        assert_eq!(
            chat_url(Some("http://h:4000/v1/")),
            "http://h:4000/v1/chat/completions"
        );
        assert_eq!(chat_url(Some("http://h:4000")), "http://h:4000/chat/completions");
        assert_eq!(models_url(Some("http://h/v1")), "http://h/v1/models");
    }

    #[test]
    fn request_body_has_system_first_and_streams_usage() {
        let mut cfg = ProviderConfig::new("o", ProviderKind::Openai);
        cfg.max_tokens = Some(77);
        let p = OpenAiProvider::new(&cfg, ProviderOptions::default()).unwrap();
        let mut req = TurnRequest::new("gpt-x", vec![super::super::ChatMessage::user("hi")]);
        req.system = Some("sys".into());
        let body = p.request_body(&req);
        assert_eq!(body["model"], "gpt-x");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 77);
        assert_eq!(body["messages"][0], json!({"role":"system","content":"sys"}));
        assert_eq!(body["messages"][1], json!({"role":"user","content":"hi"}));
    }
}
