//! The `anthropic` kind: the Messages API, streamed.
//!
//! Events are dispatched on their SSE name (falling back to the JSON `type`); unknown event types
//! are ignored, as Anthropic asks, but every event must be valid JSON: one that is not (a broken
//! `ping` included) is a protocol error, the same rule as for OpenAI streams. The stream is
//! complete only at `message_stop`.
//!
//! A `tool_use` content block (`content_block_start` with its id and name) gets its input as
//! `input_json_delta` pieces keyed by the block's `index`; no piece at all means `{}`.

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::error::{
    ErrorKind, ProviderError, StreamError, classify_in_band, error_codes_from_json, not_json, snippet,
};
use super::http::{self, CallAssembler, Endpoint, StreamDecoder};
use super::sse::SseEvent;
use super::{ChatRole, DeltaSink, Provider, ProviderOptions, TextSink, TurnOutput, TurnRequest};
use crate::config::{ProviderConfig, ProviderKind};
use crate::model::{ToolCall, ToolChoice, Usage};

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
    /// Mark the stable prefix of each request for the prompt cache (config `prompt_caching`).
    caching: bool,
}

/// Most cache breakpoints a request may carry (the API refuses more).
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// What marks a block as the end of a prefix to cache (5 minutes, refreshed on each hit).
fn cache_mark() -> serde_json::Value {
    json!({"type": "ephemeral"})
}

impl AnthropicProvider {
    pub fn new(cfg: &ProviderConfig, options: ProviderOptions) -> Result<AnthropicProvider, ProviderError> {
        Self::new_in(cfg, options, crate::env::Env::process())
    }

    /// As [`Self::new`], reading the key from `env`.
    pub fn new_in(
        cfg: &ProviderConfig,
        options: ProviderOptions,
        env: crate::env::Env,
    ) -> Result<AnthropicProvider, ProviderError> {
        let mut endpoint = Endpoint::new(cfg, messages_url(cfg.base_url.as_deref()), options)?;
        endpoint.env = env;
        Ok(AnthropicProvider {
            endpoint,
            max_tokens: cfg.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            caching: cfg.prompt_caching,
        })
    }

    /// The JSON body of a streamed request. Tool exchanges become `tool_use` blocks in the
    /// assistant turn and `tool_result` blocks in the next user turn; consecutive messages of
    /// one role are merged into one turn (the API wants user and assistant to alternate). Only
    /// a request that declares tools carries them: without, the history's calls and results are
    /// plain text (the API refuses tool blocks without the tools' definitions).
    ///
    /// With prompt caching on, the stable prefix is marked for the cache (`cache_control`, at
    /// most [`MAX_CACHE_BREAKPOINTS`]): the last tool, the system prompt, the end of the
    /// conversation before the newest turn and the end of the newest turn (which the next
    /// request of the session starts with). A newest prompt that later requests send in other
    /// words (`reworded_prompt`) is not a prefix of theirs: then the end of what precedes it is
    /// marked, and the request's end only once a tool round follows it (the next round sends
    /// it again). Every turn's content is then a list of blocks, so a message reads the same
    /// whether or not it carries a mark: the prefix the next request sends is byte for byte
    /// the one this one cached (less the marks, which are not content).
    pub fn request_body(&self, req: &TurnRequest) -> serde_json::Value {
        let with_tools = !req.tools.is_empty();
        let mut turns: Vec<(&'static str, Vec<serde_json::Value>)> = Vec::new();
        let reworded = req.reworded_prompt.filter(|_| self.caching);
        for (i, m) in req.messages.iter().enumerate() {
            if reworded == Some(i)
                && let Some(block) = turns.last_mut().and_then(|(_, blocks)| blocks.last_mut())
                && !blank_text(block)
            {
                // The end of what later requests send again.
                block["cache_control"] = cache_mark();
            }
            let (role, blocks) = match m.role {
                ChatRole::User => ("user", vec![text_block(&m.content)]),
                ChatRole::Assistant if with_tools && !m.tool_calls.is_empty() => {
                    let mut blocks = vec![text_block(&m.content)];
                    blocks.extend(m.tool_calls.iter().map(|c| {
                        json!({"type": "tool_use", "id": c.id, "name": c.name,
                            "input": input_object(&c.arguments)})
                    }));
                    ("assistant", blocks)
                }
                ChatRole::Assistant => ("assistant", vec![text_block(&http::plain_text(m))]),
                ChatRole::Tool => match &m.result_of {
                    Some(r) if with_tools => {
                        let mut block =
                            json!({"type": "tool_result", "tool_use_id": r.call_id, "content": m.content});
                        if r.is_error {
                            block["is_error"] = json!(true);
                        }
                        ("user", vec![block])
                    }
                    _ => ("user", vec![text_block(&http::plain_text(m))]),
                },
            };
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let mut messages: Vec<_> = turns
            .into_iter()
            .map(|(role, blocks)| {
                let content = if self.caching {
                    turn_blocks(blocks)
                } else {
                    turn_content(blocks)
                };
                json!({"role": role, "content": content})
            })
            .collect();
        if self.caching {
            let last = messages.len();
            match reworded {
                // What precedes the prompt is marked above; the request's end once a tool
                // round follows the prompt.
                Some(prompt) => {
                    if prompt + 1 < req.messages.len()
                        && let Some(i) = last.checked_sub(1)
                    {
                        mark_last_block(&mut messages[i]["content"]);
                    }
                }
                // The newest turn's end, then the end of the conversation before it.
                None => {
                    for i in [last.checked_sub(1), last.checked_sub(2)].into_iter().flatten() {
                        mark_last_block(&mut messages[i]["content"]);
                    }
                }
            }
        }
        let mut body = json!({
            "model": req.model,
            "max_tokens": self.max_tokens,
            "stream": true,
            "messages": messages,
        });
        if let Some(system) = &req.system {
            body["system"] = if self.caching && !system.trim().is_empty() {
                json!([{"type": "text", "text": system, "cache_control": cache_mark()}])
            } else {
                json!(system)
            };
        }
        if with_tools {
            let mut tools: Vec<_> = req
                .tools
                .iter()
                .map(
                    |t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}),
                )
                .collect();
            if self.caching
                && let Some(last) = tools.last_mut()
            {
                last["cache_control"] = cache_mark();
            }
            body["tools"] = json!(tools);
            body["tool_choice"] = match req.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
            };
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

fn text_block(text: &str) -> serde_json::Value {
    json!({"type": "text", "text": text})
}

/// A turn's content: a lone text block as the plain string it is; otherwise the blocks, less
/// blank text blocks (which the API refuses).
fn turn_content(blocks: Vec<serde_json::Value>) -> serde_json::Value {
    let blank =
        |b: &serde_json::Value| b["type"] == "text" && b["text"].as_str().is_none_or(|t| t.trim().is_empty());
    let mut kept: Vec<_> = blocks.iter().filter(|b| !blank(b)).cloned().collect();
    match kept.as_slice() {
        [] => blocks
            .into_iter()
            .next()
            .map(|b| b["text"].clone())
            .unwrap_or_else(|| json!("")),
        [only] if only["type"] == "text" => kept.swap_remove(0)["text"].take(),
        _ => serde_json::Value::Array(kept),
    }
}

/// A turn's content as a list of blocks, less blank text blocks (which the API refuses); a
/// turn with nothing else keeps one.
fn turn_blocks(blocks: Vec<serde_json::Value>) -> serde_json::Value {
    let blank =
        |b: &serde_json::Value| b["type"] == "text" && b["text"].as_str().is_none_or(|t| t.trim().is_empty());
    let kept: Vec<_> = blocks.iter().filter(|b| !blank(b)).cloned().collect();
    if kept.is_empty() {
        serde_json::Value::Array(blocks.into_iter().take(1).collect())
    } else {
        serde_json::Value::Array(kept)
    }
}

/// Marks the last block of a turn's content as the end of a prefix to cache (a blank text
/// block cannot carry a mark: then none).
fn mark_last_block(content: &mut serde_json::Value) {
    if let Some(last) = content.as_array_mut().and_then(|blocks| blocks.last_mut())
        && !blank_text(last)
    {
        last["cache_control"] = cache_mark();
    }
}

/// A text block with nothing but white space (the API refuses it, and a mark on it).
fn blank_text(block: &serde_json::Value) -> bool {
    block["type"] == "text" && block["text"].as_str().is_none_or(|t| t.trim().is_empty())
}

/// A stored call's arguments as the object `tool_use.input` must be (`{}` when they are not
/// one: the model sent invalid JSON, and was told so in the result).
fn input_object(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => json!({}),
    }
}

/// Anthropic's counts: `input_tokens` is the input that was neither read from nor written to
/// the prompt cache; the two cache counts come besides it.
#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
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
struct BlockStart {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    content_block: Option<ContentBlock>,
}

#[derive(Deserialize)]
struct BlockDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<BlockDeltaInner>,
}

#[derive(Deserialize)]
struct BlockDeltaInner {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
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
    /// `tool_use` blocks.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<serde_json::Value>,
}

/// The Messages stream state machine.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    stopped: bool,
    stop_reason: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    cache_write_tokens: u64,
    cache_read_tokens: u64,
    saw_usage: bool,
    /// `tool_use` blocks by content index, their `input_json_delta` pieces concatenated.
    calls: CallAssembler,
    /// A block's `input` given whole at its start (used only if no piece follows).
    start_inputs: std::collections::BTreeMap<u64, String>,
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
            "content_block_start" => {
                let start: BlockStart = parse(&name, &event.data)?;
                if let Some(block) = start.content_block
                    && block.kind.as_deref() == Some("tool_use")
                {
                    let index = start
                        .index
                        .unwrap_or_else(|| self.calls.last_index().map_or(0, |i| i + 1));
                    self.start_tool_use(index, block);
                }
            }
            "content_block_delta" => {
                let delta: BlockDelta = parse(&name, &event.data)?;
                match delta.delta {
                    Some(d) if d.kind.as_deref() == Some("input_json_delta") => {
                        let index = delta.index.or(self.calls.last_index()).unwrap_or(0);
                        self.start_inputs.remove(&index);
                        self.calls
                            .push_arguments(index, d.partial_json.as_deref().unwrap_or(""));
                    }
                    Some(d) if d.kind.as_deref().is_none_or(|k| k == "text_delta") => {
                        if let Some(text) = d.text {
                            emit(&text);
                        }
                    }
                    _ => {}
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
            // ping, content_block_stop, thinking and anything new: nothing to do, once
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
        if let Some(w) = u.cache_creation_input_tokens.filter(|&n| n > 0) {
            self.cache_write_tokens = w;
        }
        if let Some(r) = u.cache_read_input_tokens.filter(|&n| n > 0) {
            self.cache_read_tokens = r;
        }
        self.saw_usage |= u.input_tokens.is_some()
            || u.output_tokens.is_some()
            || u.cache_creation_input_tokens.is_some()
            || u.cache_read_input_tokens.is_some();
    }

    fn start_tool_use(&mut self, index: u64, block: ContentBlock) {
        self.calls
            .identify(index, block.id.as_deref(), block.name.as_deref());
        if let Some(input) = block
            .input
            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
        {
            self.start_inputs.insert(index, input.to_string());
        }
    }

    /// The `tool_use` blocks so far, finished (in block order; empty input is `{}`).
    pub fn take_tool_calls(&mut self) -> Vec<ToolCall> {
        for (index, input) in std::mem::take(&mut self.start_inputs) {
            self.calls.push_arguments(index, &input);
        }
        let mut calls = self.calls.finish();
        for call in &mut calls {
            if call.arguments.trim().is_empty() {
                call.arguments = "{}".to_string();
            }
        }
        calls
    }

    /// The counts so far; the input counts the cached parts too (see [`Usage`]).
    pub fn usage(&self) -> Option<Usage> {
        self.saw_usage.then_some(Usage {
            input_tokens: self
                .input_tokens
                .saturating_add(self.cache_write_tokens)
                .saturating_add(self.cache_read_tokens),
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
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
        for (index, block) in whole.content.into_iter().enumerate() {
            match block.kind.as_deref() {
                Some("tool_use") => self.start_tool_use(index as u64, block),
                None | Some("text") => {
                    if let Some(text) = block.text {
                        sink.push(&text);
                    }
                }
                Some(_) => {}
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
    fn take_tool_calls(&mut self) -> Vec<ToolCall> {
        AnthropicDecoder::take_tool_calls(self)
    }
    fn end_marker(&self) -> &'static str {
        "`message_stop`"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ChatMessage;
    use crate::providers::http::test_fixtures::{call, read_spec, tool_history, whole_answer};
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
        assert_eq!(d.usage(), Some(Usage::new(0, 8)));
    }

    #[test]
    fn litellm_usage_arrives_only_in_message_delta() {
        let (text, d, err) = replay(include_bytes!("testdata/litellm-anthropic-stream.sse"));
        assert!(err.is_none());
        assert_eq!(text, "Hello from the LiteLLM mock server. Streaming works.");
        assert_eq!(d.usage(), Some(Usage::new(8, 12)));
    }

    /// As the Messages API streams a request that read most of its prompt from the cache:
    /// `message_start` has the input split three ways, `message_delta` repeats the cumulative
    /// counts (the API's docs; `cache_creation` is the newer per-TTL breakdown).
    #[test]
    fn cache_counts_are_recorded_and_the_input_counts_them_too() {
        let capture = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":50,\"cache_creation_input_tokens\":2048,\"cache_read_input_tokens\":18000,\"cache_creation\":{\"ephemeral_5m_input_tokens\":2048,\"ephemeral_1h_input_tokens\":0},\"output_tokens\":1}}}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
            "event: message_delta\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":50,\"cache_creation_input_tokens\":2048,\"cache_read_input_tokens\":18000,\"output_tokens\":300}}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let (text, d, err) = replay(capture.as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text, "ok");
        assert_eq!(
            d.usage(),
            Some(Usage {
                input_tokens: 50 + 2048 + 18_000,
                output_tokens: 300,
                cache_read_tokens: 18_000,
                cache_write_tokens: 2048,
            })
        );
        assert_eq!(d.usage().map(|u| u.uncached_input()), Some(50));
        // LiteLLM's zeros are no cache use.
        let (_, d, _) = replay(include_bytes!("testdata/litellm-anthropic-stream.sse"));
        let u = d.usage().unwrap();
        assert_eq!((u.cache_read_tokens, u.cache_write_tokens), (0, 0));
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

    fn event(value: serde_json::Value) -> String {
        format!("event: {}\ndata: {value}\n\n", value["type"].as_str().unwrap())
    }

    fn tool_start(index: u64, id: &str, name: &str) -> String {
        event(json!({"type":"content_block_start","index":index,
            "content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}))
    }

    fn json_piece(index: u64, piece: &str) -> String {
        event(json!({"type":"content_block_delta","index":index,
            "delta":{"type":"input_json_delta","partial_json":piece}}))
    }

    fn text_block(index: u64, text: &str) -> String {
        [
            event(
                json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}}),
            ),
            event(
                json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":text}}),
            ),
            stop(index),
        ]
        .concat()
    }

    fn stop(index: u64) -> String {
        event(json!({"type":"content_block_stop","index":index}))
    }

    fn tool_use_end() -> String {
        [
            event(json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}})),
            event(json!({"type":"message_stop"})),
        ]
        .concat()
    }

    #[test]
    fn llmock_tool_use_capture_gives_the_exact_call() {
        // The third-party capture shared/reference/llm-captures/llmock-anthropic-stream-tool-use.sse.
        let (text, mut d, err) = replay(include_bytes!("testdata/llmock-anthropic-stream-tool-use.sse"));
        assert!(err.is_none());
        assert_eq!(text, "");
        assert!(d.is_complete());
        assert_eq!(d.stop_reason().as_deref(), Some("tool_use"));
        assert_eq!(
            d.take_tool_calls(),
            vec![call(
                "toolu_26d1734bed5d4d22939ef780",
                "read_file",
                r#"{"path": "src/main.rs"}"#
            )]
        );
    }

    #[test]
    fn parallel_tool_use_blocks_between_text_blocks_split_anywhere() {
        let body = [
            text_block(0, "Let me look. "),
            tool_start(1, "toolu_a", "fs__read"),
            json_piece(1, ""),
            json_piece(1, "{\"path\": \"a\\"),
            json_piece(1, "\"b\"}"),
            stop(1),
            text_block(2, "And more."),
            tool_start(3, "toolu_b", "fs__list"),
            stop(3),
            tool_use_end(),
        ]
        .concat();
        let (text, mut d, err) = replay(body.as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text, "Let me look. And more.");
        let calls = d.take_tool_calls();
        assert_eq!(
            calls,
            vec![
                call("toolu_a", "fs__read", r#"{"path": "a\"b"}"#),
                call("toolu_b", "fs__list", "{}"),
            ],
            "an empty input is the empty object"
        );
        let parsed: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(parsed["path"], "a\"b");
        assert_eq!(d.stop_reason().as_deref(), Some("tool_use"));
    }

    #[test]
    fn an_input_given_at_the_start_counts_when_no_piece_follows() {
        let body = [
            event(json!({"type":"content_block_start","index":0,
                "content_block":{"type":"tool_use","id":"t1","name":"a","input":{"k":1}}})),
            stop(0),
            event(json!({"type":"content_block_start","index":1,
                "content_block":{"type":"tool_use","name":"b","input":{"k":2}}})),
            json_piece(1, "{\"k\":3}"),
            stop(1),
            tool_use_end(),
        ]
        .concat();
        let (_, mut d, err) = replay(body.as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            d.take_tool_calls(),
            vec![call("t1", "a", "{\"k\":1}"), call("call_1", "b", "{\"k\":3}")]
        );
    }

    #[test]
    fn a_whole_answer_with_tool_use() {
        let body = json!({"type":"message","stop_reason":"tool_use","content":[
            {"type":"text","text":"Reading."},
            {"type":"tool_use","id":"t1","name":"fs__read","input":{"path":"a"}},
            {"type":"tool_use","id":"t2","name":"fs__list","input":{}}]});
        let (text, calls) = whole_answer(&mut AnthropicDecoder::new(), body);
        assert_eq!(text, "Reading.");
        assert_eq!(
            calls,
            vec![
                call("t1", "fs__read", r#"{"path":"a"}"#),
                call("t2", "fs__list", "{}")
            ]
        );
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

        let p = provider();
        let mut req = TurnRequest::new("claude", vec![ChatMessage::user("hi")]);
        req.system = Some("sys".into());
        let body = p.request_body(&req);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["system"], "sys");
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][0], json!({"role":"user","content":"hi"}));
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    /// With prompt caching off: the plain shape of a request.
    fn provider() -> AnthropicProvider {
        let mut cfg = ProviderConfig::new("a", ProviderKind::Anthropic);
        cfg.prompt_caching = false;
        AnthropicProvider::new(&cfg, ProviderOptions::default()).unwrap()
    }

    fn caching() -> AnthropicProvider {
        AnthropicProvider::new(
            &ProviderConfig::new("a", ProviderKind::Anthropic),
            ProviderOptions::default(),
        )
        .unwrap()
    }

    /// Every `cache_control` of a body, as the path of the block that carries it.
    fn marks(body: &serde_json::Value) -> Vec<String> {
        fn walk(v: &serde_json::Value, path: String, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        if k == "cache_control" {
                            assert_eq!(v, &json!({"type":"ephemeral"}));
                            out.push(path.clone());
                        } else {
                            walk(v, format!("{path}.{k}"), out);
                        }
                    }
                }
                serde_json::Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        walk(v, format!("{path}[{i}]"), out);
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(body, String::new(), &mut out);
        out.sort();
        out
    }

    /// The body less its cache marks: what the cache sees.
    fn unmarked(body: &serde_json::Value) -> serde_json::Value {
        match body {
            serde_json::Value::Object(map) => serde_json::Value::Object(
                map.iter()
                    .filter(|(k, _)| *k != "cache_control")
                    .map(|(k, v)| (k.clone(), unmarked(v)))
                    .collect(),
            ),
            serde_json::Value::Array(items) => serde_json::Value::Array(items.iter().map(unmarked).collect()),
            other => other.clone(),
        }
    }

    #[test]
    fn caching_marks_tools_system_and_the_ends_of_the_last_two_turns() {
        let mut req = TurnRequest::new("claude", tool_history());
        req.system = Some("You review code.".into());
        req.tools = vec![read_spec()];
        let body = caching().request_body(&req);
        assert_eq!(
            marks(&body),
            [
                ".messages[3].content[1]",
                ".messages[4].content[1]",
                ".system[0]",
                ".tools[0]"
            ]
        );
        assert!(marks(&body).len() <= MAX_CACHE_BREAKPOINTS);
        assert_eq!(body["system"][0]["text"], "You review code.");
        // Every turn is a list of blocks, marked or not.
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type":"text","text":"read a and b"}])
        );
        // A single message, no tools, no system: one mark.
        let one = caching().request_body(&TurnRequest::new("claude", vec![ChatMessage::user("hi")]));
        assert_eq!(marks(&one), [".messages[0].content[0]"]);
        assert_eq!(one["system"], serde_json::Value::Null);
        // Caching off: no mark, the plain shape.
        assert!(marks(&provider().request_body(&req)).is_empty());
    }

    #[test]
    fn a_prompt_later_sent_in_other_words_is_not_marked_what_precedes_it_is() {
        let mut req = TurnRequest::new("claude", tool_history());
        req.system = Some("You review code.".into());
        req.tools = vec![read_spec()];
        // "and then?" (message 6) shares a turn with the result before it.
        req.reworded_prompt = Some(6);
        let body = caching().request_body(&req);
        assert_eq!(
            marks(&body),
            [".messages[4].content[0]", ".system[0]", ".tools[0]"]
        );
        // A tool round after it: the next round sends the prompt again, so the end is marked.
        req.messages.push(ChatMessage::assistant_calls(
            "",
            vec![crate::model::ToolCall {
                id: "c4".into(),
                name: "fs__read".into(),
                arguments: "{}".into(),
            }],
        ));
        req.messages
            .push(ChatMessage::tool_result("c4", "fs__read", false, "B"));
        let body = caching().request_body(&req);
        assert_eq!(
            marks(&body),
            [
                ".messages[4].content[0]",
                ".messages[6].content[0]",
                ".system[0]",
                ".tools[0]"
            ]
        );
        // The first prompt of a conversation: nothing before it to mark.
        let mut first = TurnRequest::new("claude", vec![ChatMessage::user("hi")]);
        first.reworded_prompt = Some(0);
        assert!(marks(&caching().request_body(&first)).is_empty());
        assert!(marks(&provider().request_body(&req)).is_empty());
    }

    #[test]
    fn the_next_request_of_a_conversation_starts_with_this_one_byte_for_byte() {
        let mut first = TurnRequest::new("claude", vec![ChatMessage::user("question one")]);
        first.system = Some("Be brief.".into());
        first.tools = vec![read_spec()];
        let mut second = first.clone();
        second.messages.push(ChatMessage::assistant("answer one"));
        second.messages.push(ChatMessage::user("question two"));
        let (a, b) = (caching().request_body(&first), caching().request_body(&second));
        for key in ["tools", "system"] {
            assert_eq!(unmarked(&a[key]).to_string(), unmarked(&b[key]).to_string());
        }
        let sent: Vec<String> = a["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| unmarked(m).to_string())
            .collect();
        let again: Vec<String> = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .take(sent.len())
            .map(|m| unmarked(m).to_string())
            .collect();
        assert_eq!(sent, again);
        // The second request marks the end of what the first sent.
        assert!(
            marks(&b).contains(&".messages[1].content[0]".to_string()),
            "{:?}",
            marks(&b)
        );
    }

    #[test]
    fn request_body_declares_tools_and_sends_tool_blocks_in_alternating_turns() {
        let mut req = TurnRequest::new("claude", tool_history());
        req.tools = vec![read_spec()];
        let body = provider().request_body(&req);
        assert_eq!(
            body["tools"],
            json!([{"name":"fs__read","description":"Reads a file",
                "input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}])
        );
        assert_eq!(body["tool_choice"], json!({"type":"auto"}));
        assert_eq!(
            body["messages"],
            json!([
                {"role":"user","content":"read a and b"},
                {"role":"assistant","content":[
                    {"type":"tool_use","id":"c1","name":"fs__read","input":{"path":"a"}},
                    {"type":"tool_use","id":"c2","name":"fs__read","input":{}}]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"c1","content":"A"},
                    {"type":"tool_result","tool_use_id":"c2","content":"no such file","is_error":true}]},
                {"role":"assistant","content":[
                    {"type":"text","text":"One more."},
                    {"type":"tool_use","id":"c3","name":"fs__list","input":{}}]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"c3","content":"invalid arguments","is_error":true},
                    {"type":"text","text":"and then?"}]},
            ])
        );
        req.tool_choice = ToolChoice::None;
        assert_eq!(
            provider().request_body(&req)["tool_choice"],
            json!({"type":"none"})
        );
    }

    #[test]
    fn without_tools_the_tool_history_is_plain_text_in_alternating_turns() {
        let body = provider().request_body(&TurnRequest::new("claude", tool_history()));
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
        assert_eq!(
            body["messages"],
            json!([
                {"role":"user","content":"read a and b"},
                {"role":"assistant","content":"(called fs__read with {\"path\":\"a\"})\n(called fs__read with {})"},
                {"role":"user","content":[
                    {"type":"text","text":"[result of fs__read] A"},
                    {"type":"text","text":"[error from fs__read] no such file"}]},
                {"role":"assistant","content":"One more.\n(called fs__list with {not json)"},
                {"role":"user","content":[
                    {"type":"text","text":"[error from fs__list] invalid arguments"},
                    {"type":"text","text":"and then?"}]},
            ])
        );
    }
}
