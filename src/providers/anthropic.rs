//! The `anthropic` kind: the Messages API, streamed.
//!
//! Events are dispatched on their SSE name (falling back to the JSON `type`); unknown event types
//! are ignored, as Anthropic asks, but every event must be valid JSON: one that is not (a broken
//! `ping` included) is a protocol error, the same rule as for OpenAI streams. The stream is
//! complete only at `message_stop`.

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::error::{
    ErrorKind, ProviderError, StreamError, classify_in_band, error_codes_from_json, not_json, snippet,
};
use super::http::{self, Endpoint, StreamDecoder};
use super::sse::SseEvent;
use super::{ChatRole, DeltaSink, Provider, ProviderOptions, TextSink, TurnOutput, TurnRequest};
use crate::config::{ProviderConfig, ProviderKind};
use crate::model::Usage;

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const API_VERSION: &str = "2023-06-01";
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// `{base}/v1/messages`; a configured base that already ends in `/v1` is accepted.
pub fn messages_url(base_url: Option<&str>) -> String {
    format!("{}/messages", v1_base(base_url))
}

/// `{base}/v1/models`, for discovery.
pub fn models_url(base_url: Option<&str>) -> String {
    format!("{}/models", v1_base(base_url))
}

fn v1_base(base_url: Option<&str>) -> String {
    let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim().trim_end_matches('/');
    if base.ends_with("/v1") {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

pub struct AnthropicProvider {
    endpoint: Endpoint,
    max_tokens: u32,
}

impl AnthropicProvider {
    pub fn new(cfg: &ProviderConfig, options: ProviderOptions) -> Result<AnthropicProvider, ProviderError> {
        Ok(AnthropicProvider {
            endpoint: Endpoint::new(cfg, messages_url(cfg.base_url.as_deref()), options)?,
            max_tokens: cfg.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        })
    }

    /// The JSON body of a streamed request.
    pub fn request_body(&self, req: &TurnRequest) -> serde_json::Value {
        let messages: Vec<_> = req
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                    ChatRole::Tool => "user",
                };
                json!({"role": role, "content": m.content})
            })
            .collect();
        let mut body = json!({
            "model": req.model,
            "max_tokens": self.max_tokens,
            "stream": true,
            "messages": messages,
        });
        if let Some(system) = &req.system {
            body["system"] = json!(system);
        }
        body
    }

    fn auth_headers(&self) -> Result<HeaderMap, ProviderError> {
        let ep = &self.endpoint;
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = ep.api_key()? {
            let value = HeaderValue::from_str(&key).map_err(|_| {
                ProviderError::new(
                    ErrorKind::Auth,
                    &ep.provider,
                    format!(
                        "provider `{}`: the API key contains characters not allowed in a header",
                        ep.provider
                    ),
                )
            })?;
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(headers)
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
            AnthropicDecoder::new,
            deltas,
            cancel,
        )
        .await
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
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

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    message: Option<MessageStartInner>,
}

#[derive(Deserialize)]
struct MessageStartInner {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct BlockDelta {
    #[serde(default)]
    delta: Option<BlockDeltaInner>,
}

#[derive(Deserialize)]
struct BlockDeltaInner {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    delta: Option<MessageDeltaInner>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct MessageDeltaInner {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// A whole (non-streamed) Messages answer.
#[derive(Deserialize)]
struct WholeMessage {
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// The Messages stream state machine.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    stopped: bool,
    stop_reason: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    saw_usage: bool,
}

impl AnthropicDecoder {
    pub fn new() -> AnthropicDecoder {
        AnthropicDecoder::default()
    }

    /// Feeds one SSE event; text goes to `emit`.
    pub fn handle(&mut self, event: &SseEvent, emit: &mut dyn FnMut(&str)) -> Result<(), StreamError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let name = if event.event == "message" {
            json_type(&event.data).unwrap_or_default()
        } else {
            event.event.clone()
        };
        match name.as_str() {
            "message_start" => {
                let start: MessageStart = parse(&name, &event.data)?;
                if let Some(u) = start.message.and_then(|m| m.usage) {
                    self.merge_usage(u);
                }
            }
            "content_block_delta" => {
                let delta: BlockDelta = parse(&name, &event.data)?;
                if let Some(d) = delta.delta
                    && d.kind.as_deref().is_none_or(|k| k == "text_delta")
                    && let Some(text) = d.text
                {
                    emit(&text);
                }
            }
            "message_delta" => {
                let delta: MessageDelta = parse(&name, &event.data)?;
                if let Some(reason) = delta.delta.and_then(|d| d.stop_reason).filter(|r| !r.is_empty()) {
                    self.stop_reason = Some(reason);
                }
                if let Some(u) = delta.usage {
                    self.merge_usage(u);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let value: serde_json::Value = serde_json::from_str(&event.data)
                    .unwrap_or_else(|_| json!({"error": {"message": event.data}}));
                let message = value
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(|m| m.as_str())
                    .map(String::from)
                    .unwrap_or_else(|| snippet(&event.data, 200));
                let kind = classify_in_band(&error_codes_from_json(&value), &message);
                return Err(StreamError::new(
                    kind,
                    format!("reported an error mid-stream: {}", snippet(&message, 300)),
                ));
            }
            // ping, content_block_start/stop, thinking and anything new: nothing to do, once
            // the event is known to be JSON.
            _ => {
                serde_json::from_str::<serde::de::IgnoredAny>(&event.data)
                    .map_err(|e| not_json(&name, &e, &event.data))?;
            }
        }
        Ok(())
    }

    /// Counts in `message_delta` are cumulative; LiteLLM sends zeros first: last non-zero wins.
    fn merge_usage(&mut self, u: WireUsage) {
        if let Some(i) = u.input_tokens.filter(|&n| n > 0) {
            self.input_tokens = i;
        }
        if let Some(o) = u.output_tokens.filter(|&n| n > 0) {
            self.output_tokens = o;
        }
        self.saw_usage |= u.input_tokens.is_some() || u.output_tokens.is_some();
    }

    pub fn usage(&self) -> Option<Usage> {
        self.saw_usage.then_some(Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
        })
    }
    pub fn stop_reason(&self) -> Option<String> {
        self.stop_reason.clone()
    }
    /// `message_stop` arrived.
    pub fn is_complete(&self) -> bool {
        self.stopped
    }
}

fn json_type(data: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_str::<Typed>(data).ok().map(|t| t.kind)
}

fn parse<'de, T: Deserialize<'de>>(name: &str, data: &'de str) -> Result<T, StreamError> {
    serde_json::from_str(data).map_err(|e| not_json(name, &e, data))
}

impl StreamDecoder for AnthropicDecoder {
    fn on_event(&mut self, event: &SseEvent, sink: &mut TextSink<'_>) -> Result<(), StreamError> {
        self.handle(event, &mut |t| sink.push(t))
    }
    fn finished(&self) -> bool {
        self.stopped
    }
    fn complete(&self) -> bool {
        self.stopped
    }
    fn on_json_body(&mut self, body: &serde_json::Value, sink: &mut TextSink<'_>) -> Result<(), StreamError> {
        let whole: WholeMessage = serde_json::from_value(body.clone()).map_err(|e| {
            StreamError::new(
                ErrorKind::Protocol,
                format!("sent an unexpected JSON answer ({e})"),
            )
        })?;
        for block in whole.content {
            if block.kind.as_deref().is_none_or(|k| k == "text")
                && let Some(text) = block.text
            {
                sink.push(&text);
            }
        }
        if let Some(u) = whole.usage {
            self.merge_usage(u);
        }
        self.stop_reason = whole.stop_reason.or_else(|| Some("end_turn".to_string()));
        self.stopped = true;
        Ok(())
    }
    fn usage(&self) -> Option<Usage> {
        AnthropicDecoder::usage(self)
    }
    fn finish_reason(&self) -> Option<String> {
        self.stop_reason.clone()
    }
    fn end_marker(&self) -> &'static str {
        "`message_stop`"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::sse::parse_all;

    fn replay(capture: &[u8]) -> (String, AnthropicDecoder, Option<StreamError>) {
        let mut decoder = AnthropicDecoder::new();
        let mut text = String::new();
        for event in parse_all(capture) {
            if let Err(e) = decoder.handle(&event, &mut |t| text.push_str(t)) {
                return (text, decoder, Some(e));
            }
        }
        (text, decoder, None)
    }

    #[test]
    fn llmock_stream_with_ping() {
        let (text, d, err) = replay(include_bytes!("testdata/llmock-anthropic-stream.sse"));
        assert!(err.is_none());
        assert_eq!(text, "claude-x mock reply: I saw 'hi'.");
        assert!(d.is_complete());
        assert_eq!(d.stop_reason().as_deref(), Some("end_turn"));
        assert_eq!(
            d.usage(),
            Some(Usage {
                input_tokens: 0,
                output_tokens: 8
            })
        );
    }

    #[test]
    fn litellm_usage_arrives_only_in_message_delta() {
        let (text, d, err) = replay(include_bytes!("testdata/litellm-anthropic-stream.sse"));
        assert!(err.is_none());
        assert_eq!(text, "Hello from the LiteLLM mock server. Streaming works.");
        assert_eq!(
            d.usage(),
            Some(Usage {
                input_tokens: 8,
                output_tokens: 12
            })
        );
    }

    #[test]
    fn a_malformed_ping_is_a_protocol_error_like_any_event() {
        let (text, d, err) = replay(include_bytes!("testdata/llmock-anthropic-malformed.sse"));
        let err = err.unwrap();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(
            err.message.contains("a `ping` event that is not valid JSON"),
            "{}",
            err.message
        );
        assert_eq!(text, "", "nothing after the broken event is read");
        assert!(!d.is_complete());
    }

    #[test]
    fn an_unnamed_event_that_is_not_json_is_a_protocol_error() {
        let (text, _, err) = replay(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\ndata: garbage\n\n",
        );
        assert_eq!(text, "x");
        let err = err.unwrap();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(
            err.message.contains("an event that is not valid JSON"),
            "{}",
            err.message
        );
        // Unknown event types that are JSON are still ignored, and empty data is no event.
        let (_, d, err) = replay(
            b"event: brand_new\ndata: {\"x\":1}\n\nevent: ping\ndata:\n\nevent: message_stop\ndata: {}\n\n",
        );
        assert!(err.is_none(), "{err:?}");
        assert!(d.is_complete());
    }

    #[test]
    fn malformed_delta_is_a_protocol_error() {
        let (_, _, err) = replay(b"event: content_block_delta\ndata: {\"type\":\"content_bl\n\n");
        assert_eq!(err.unwrap().kind, ErrorKind::Protocol);
    }

    #[test]
    fn error_event_mid_stream_keeps_text() {
        let (text, d, err) = replay(include_bytes!("testdata/litellm-anthropic-midstream-error.sse"));
        assert_eq!(text, "This repl");
        assert_eq!(err.unwrap().kind, ErrorKind::Server);
        assert!(!d.is_complete());
        let (_, _, err) = replay(
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        assert_eq!(err.unwrap().kind, ErrorKind::Overloaded);
    }

    #[test]
    fn tool_use_stream_emits_no_text() {
        let (text, d, err) = replay(include_bytes!("testdata/llmock-anthropic-stream-tool-use.sse"));
        assert!(err.is_none());
        assert_eq!(text, "");
        assert_eq!(d.stop_reason().as_deref(), Some("tool_use"));
    }

    #[test]
    fn unnamed_events_use_the_json_type() {
        let (text, d, _) = replay(
            b"data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(text, "x");
        assert!(d.is_complete());
    }

    #[test]
    fn urls_and_body() {
        assert_eq!(messages_url(None), "https://api.anthropic.com/v1/messages");
        assert_eq!(
            messages_url(Some("http://h:1/anthropic/")),
            "http://h:1/anthropic/v1/messages"
        );
        assert_eq!(messages_url(Some("http://h:1/v1")), "http://h:1/v1/messages");
        assert_eq!(models_url(Some("http://h:1")), "http://h:1/v1/models");

        let p = AnthropicProvider::new(
            &ProviderConfig::new("a", ProviderKind::Anthropic),
            ProviderOptions::default(),
        )
        .unwrap();
        let mut req = TurnRequest::new("claude", vec![super::super::ChatMessage::user("hi")]);
        req.system = Some("sys".into());
        let body = p.request_body(&req);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["system"], "sys");
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][0], json!({"role":"user","content":"hi"}));
    }
}
