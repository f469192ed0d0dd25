//! The `openai` kind: any OpenAI-compatible Chat Completions endpoint, streamed.
//!
//! Parsing is lenient, because "compatible" servers differ: `finish_reason: ""`, `usage: {}`,
//! `choices: null` or missing, a usage chunk with an empty choice, `: ping` comments, and errors
//! sent as `data: {"error": ...}` inside a 200 stream. A stream is complete only with `[DONE]`
//! or a finish reason; a clean end without either is a truncation error.
//!
//! Tool calls stream as `delta.tool_calls` pieces keyed by `index` (the first with `id` and
//! `function.name`, later ones with `function.arguments` text), possibly between text deltas;
//! they are put together by the shared call assembler (`http.rs`) and handed over,
//! complete and in index order, when the answer ends.

use futures::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::error::{
    ErrorKind, ProviderError, StreamError, classify_in_band, error_codes_from_json, error_message_from_json,
    not_json, snippet,
};
use super::http::{self, CallAssembler, Endpoint, StreamDecoder};
use super::sse::SseEvent;
use super::{ChatRole, DeltaSink, Provider, ProviderOptions, TextSink, TurnOutput, TurnRequest};
use crate::config::{ProviderConfig, ProviderKind};
use crate::model::{ToolCall, ToolChoice, Usage};

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
    /// Send the request's session as `prompt_cache_key` (config `prompt_cache_key`).
    cache_key: bool,
}

impl OpenAiProvider {
    pub fn new(cfg: &ProviderConfig, options: ProviderOptions) -> Result<OpenAiProvider, ProviderError> {
        Self::new_in(cfg, options, crate::env::Env::process())
    }

    /// As [`Self::new`], reading the key from `env`.
    pub fn new_in(
        cfg: &ProviderConfig,
        options: ProviderOptions,
        env: crate::env::Env,
    ) -> Result<OpenAiProvider, ProviderError> {
        let mut endpoint = Endpoint::new(cfg, chat_url(cfg.base_url.as_deref()), options)?;
        endpoint.env = env;
        Ok(OpenAiProvider {
            endpoint,
            max_tokens: cfg.max_tokens,
            cache_key: cfg.sends_prompt_cache_key(),
        })
    }

    /// The JSON body of a streamed request. Tools (and the tool exchanges of the history) are
    /// sent only when the request declares tools; without them the history's calls and
    /// results are plain text, which every server takes.
    ///
    /// The order is what automatic prompt caching needs: the system prompt, the conversation
    /// as it was sent before, then the newest turn; with `prompt_cache_key` on, the session
    /// goes with it so its requests meet the same cache.
    pub fn request_body(&self, req: &TurnRequest) -> serde_json::Value {
        let with_tools = !req.tools.is_empty();
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if let Some(system) = &req.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for m in &req.messages {
            messages.push(match m.role {
                ChatRole::User => json!({"role": "user", "content": m.content}),
                ChatRole::Assistant if with_tools && !m.tool_calls.is_empty() => {
                    let calls: Vec<_> = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            // A call without arguments is sent as the empty object it means.
                            let arguments = if c.arguments.trim().is_empty() {
                                "{}"
                            } else {
                                c.arguments.as_str()
                            };
                            json!({"id": c.id, "type": "function",
                                "function": {"name": c.name, "arguments": arguments}})
                        })
                        .collect();
                    let content = if m.content.is_empty() {
                        serde_json::Value::Null
                    } else {
                        json!(m.content)
                    };
                    json!({"role": "assistant", "content": content, "tool_calls": calls})
                }
                ChatRole::Assistant => json!({"role": "assistant", "content": http::plain_text(m)}),
                ChatRole::Tool => match &m.result_of {
                    Some(r) if with_tools => {
                        json!({"role": "tool", "tool_call_id": r.call_id, "content": m.content})
                    }
                    _ => json!({"role": "user", "content": http::plain_text(m)}),
                },
            });
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
        if self.cache_key
            && let Some(key) = &req.cache_key
        {
            body["prompt_cache_key"] = json!(format!("huddle-{key}"));
        }
        if with_tools {
            let tools: Vec<_> = req
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.input_schema}})
                })
                .collect();
            body["tools"] = json!(tools);
            body["tool_choice"] = json!(match req.tool_choice {
                ToolChoice::Auto => "auto",
                ToolChoice::None => "none",
            });
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
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

/// A piece of a tool call: the first names it, later ones carry `function.arguments` pieces.
#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    /// A string as the API says; a server that sends an object gets it written out as JSON.
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// `prompt_tokens` counts the cached input too. The cached part is
/// `prompt_tokens_details.cached_tokens` (OpenAI, Gemini's OpenAI endpoint, vLLM) or DeepSeek's
/// `prompt_cache_hit_tokens`; cache writes (billed on newer OpenAI models) are
/// `prompt_tokens_details.cache_write_tokens` where reported.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let input = self.prompt_tokens.unwrap_or(0);
        let details = self.prompt_tokens_details.as_ref();
        let read = details
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0)
            .min(input);
        let write = details
            .and_then(|d| d.cache_write_tokens)
            .unwrap_or(0)
            .min(input - read);
        Usage {
            cache_read_tokens: read,
            cache_write_tokens: write,
            ..Usage::new(input, self.completion_tokens.unwrap_or(0))
        }
    }
}

/// The Chat Completions stream state machine.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    done: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    calls: CallAssembler,
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
            self.usage = Some(u.usage());
        }
        if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
            let whole = choice.delta.is_none() && choice.message.is_some();
            if let Some(delta) = choice.delta.or(choice.message) {
                if let Some(text) = delta.content {
                    emit(&text);
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    self.apply_call(call, whole.then_some(position as u64));
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    /// One piece of a call. `position`: the call's place in a whole (non-streamed) answer,
    /// whose calls need no index. A streamed piece without an index belongs to the call its id
    /// names, starts a new call when its id is new, and otherwise continues the last call.
    fn apply_call(&mut self, call: WireCall, position: Option<u64>) {
        let id = call.id.as_deref().filter(|s| !s.is_empty());
        let index = call.index.or(position).unwrap_or_else(|| {
            match (
                id.and_then(|id| self.calls.index_of_id(id)),
                self.calls.last_index(),
            ) {
                (Some(known), _) => known,
                (None, Some(last)) if id.is_some() => last + 1,
                (None, last) => last.unwrap_or(0),
            }
        });
        let (name, arguments) = match call.function {
            Some(f) => (f.name, f.arguments),
            None => (None, None),
        };
        self.calls.identify(index, id, name.as_deref());
        match arguments {
            Some(serde_json::Value::String(piece)) => self.calls.push_arguments(index, &piece),
            Some(serde_json::Value::Null) | None => {}
            Some(object) => self.calls.push_arguments(index, &object.to_string()),
        }
    }

    /// The calls streamed so far, finished (in index order, ids filled in).
    pub fn take_tool_calls(&mut self) -> Vec<ToolCall> {
        self.calls.finish()
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
    fn take_tool_calls(&mut self) -> Vec<ToolCall> {
        OpenAiDecoder::take_tool_calls(self)
    }
    fn end_marker(&self) -> &'static str {
        "`[DONE]` or a finish reason"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ChatMessage;
    use crate::providers::http::test_fixtures::{call, read_spec, tool_history, whole_answer};
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
        assert_eq!(d.usage(), Some(Usage::new(0, 8)));
    }

    #[test]
    fn litellm_stream_with_ping_and_usage_in_a_choice_chunk() {
        let (text, d, err) = replay(include_bytes!("testdata/litellm-openai-stream-include-usage.sse"));
        assert!(err.is_none());
        assert_eq!(text, "Hello from the LiteLLM mock server. Streaming works.");
        assert_eq!(d.usage(), Some(Usage::new(8, 12)));
        assert!(d.is_done());
    }

    /// The usage chunk of a request that hit the prompt cache: `cached_tokens` is a part of
    /// `prompt_tokens` (OpenAI); DeepSeek says `prompt_cache_hit_tokens`; newer OpenAI models
    /// report billed cache writes as `cache_write_tokens`.
    #[test]
    fn cached_tokens_are_a_part_of_the_prompt_tokens() {
        let usage_of = |usage: &str| {
            let capture = format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"hi\"}},\"finish_reason\":\"stop\"}}]}}\n\ndata: {{\"choices\":[],\"usage\":{usage}}}\n\ndata: [DONE]\n\n"
            );
            let (_, d, err) = replay(capture.as_bytes());
            assert!(err.is_none());
            d.usage().unwrap()
        };
        let u = usage_of(
            r#"{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}"#,
        );
        assert_eq!(
            u,
            Usage {
                input_tokens: 2006,
                output_tokens: 300,
                cache_read_tokens: 1920,
                cache_write_tokens: 0,
            }
        );
        assert_eq!(u.uncached_input(), 86);
        let u = usage_of(
            r#"{"prompt_tokens":5000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":3500}}"#,
        );
        assert_eq!(
            (u.cache_read_tokens, u.cache_write_tokens, u.uncached_input()),
            (1000, 3500, 500)
        );
        let u = usage_of(
            r#"{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}"#,
        );
        assert_eq!(u.cache_read_tokens, 64);
        // A server that claims more cached tokens than it read is held to the prompt.
        let u = usage_of(
            r#"{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":99}}"#,
        );
        assert_eq!(u.cache_read_tokens, 10);
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

    /// One `data:` chunk whose delta carries these tool-call pieces.
    fn calls_chunk(pieces: serde_json::Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices":[{"index":0,"delta":{"tool_calls":pieces},"finish_reason":null}]})
        )
    }

    fn text_chunk(text: &str) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices":[{"index":0,"delta":{"content":text}}]})
        )
    }

    const TOOL_CALLS_END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";

    #[test]
    fn llmock_tool_call_capture_gives_the_exact_call() {
        // The third-party capture shared/reference/llm-captures/llmock-openai-stream-tool-call.sse.
        let (text, mut d, err) = replay(include_bytes!("testdata/llmock-openai-stream-tool-call.sse"));
        assert!(err.is_none());
        assert_eq!(text, "");
        assert!(d.is_done());
        assert_eq!(d.finish_reason().as_deref(), Some("tool_calls"));
        assert_eq!(
            d.take_tool_calls(),
            vec![call(
                "call_411b9253e28546bfa97c3fa8",
                "read_file",
                r#"{"path": "src/main.rs"}"#
            )]
        );
    }

    #[test]
    fn parallel_calls_split_anywhere_with_text_between_come_out_whole_in_index_order() {
        // `{"path": "a\"b"}` split inside the escape, and inside the string.
        let body = [
            text_chunk("Let me look. "),
            calls_chunk(json!([{"index":0,"id":"call_a","type":"function","function":{"name":"fs__read","arguments":""}}])),
            calls_chunk(json!([{"index":0,"function":{"arguments":"{\"path\": \"a\\"}}])),
            calls_chunk(json!([{"index":1,"id":"call_b","type":"function","function":{"name":"fs__list","arguments":"{\"di"}}])),
            text_chunk("And more."),
            calls_chunk(json!([{"index":0,"function":{"arguments":"\"b\"}"}}])),
            calls_chunk(json!([{"index":1,"function":{"arguments":"r\": \"\\u00e9\"}"}}])),
            TOOL_CALLS_END.to_string(),
        ]
        .concat();
        let (text, mut d, err) = replay(body.as_bytes());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text, "Let me look. And more.");
        let calls = d.take_tool_calls();
        assert_eq!(
            calls,
            vec![
                call("call_a", "fs__read", r#"{"path": "a\"b"}"#),
                call("call_b", "fs__list", r#"{"dir": "\u00e9"}"#),
            ]
        );
        let parsed: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(parsed["path"], "a\"b");
        // Index order, not arrival order.
        let body = [
            calls_chunk(json!([{"index":1,"id":"second","function":{"name":"b","arguments":"{}"}}])),
            calls_chunk(json!([{"index":0,"id":"first","function":{"name":"a","arguments":"{}"}}])),
            TOOL_CALLS_END.to_string(),
        ]
        .concat();
        let (_, mut d, _) = replay(body.as_bytes());
        let ids: Vec<String> = d.take_tool_calls().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["first", "second"]);
    }

    #[test]
    fn a_call_without_id_gets_one_and_a_call_without_name_is_dropped() {
        let body = [
            calls_chunk(json!([{"index":0,"function":{"name":"a","arguments":"{}"}}])),
            calls_chunk(json!([{"index":1,"id":"call_x","function":{"arguments":"{}"}}])),
            calls_chunk(json!([{"index":2,"function":{"name":"c"}}])),
            TOOL_CALLS_END.to_string(),
        ]
        .concat();
        let (_, mut d, err) = replay(body.as_bytes());
        assert!(err.is_none());
        assert_eq!(
            d.take_tool_calls(),
            vec![call("call_1", "a", "{}"), call("call_2", "c", "")]
        );
    }

    #[test]
    fn pieces_without_an_index_follow_their_id_or_the_last_call() {
        let body = [
            calls_chunk(json!([{"id":"c1","function":{"name":"a","arguments":"{\"x\":"}}])),
            calls_chunk(json!([{"function":{"arguments":"1}"}}])),
            calls_chunk(json!([{"id":"c2","function":{"name":"b","arguments":"{"}}])),
            calls_chunk(json!([{"id":"c2","function":{"arguments":"}"}}])),
            TOOL_CALLS_END.to_string(),
        ]
        .concat();
        let (_, mut d, _) = replay(body.as_bytes());
        assert_eq!(
            d.take_tool_calls(),
            vec![call("c1", "a", "{\"x\":1}"), call("c2", "b", "{}")]
        );
    }

    #[test]
    fn a_whole_answer_with_tool_calls() {
        let mut d = OpenAiDecoder::new();
        let body = json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
            "tool_calls":[
                {"id":"c1","type":"function","function":{"name":"a","arguments":"{\"k\":1}"}},
                {"id":"c2","type":"function","function":{"name":"b","arguments":{"k":2}}}]}}]});
        let (text, calls) = whole_answer(&mut d, body);
        assert_eq!(text, "");
        assert_eq!(d.finish_reason().as_deref(), Some("tool_calls"));
        assert_eq!(
            calls,
            vec![call("c1", "a", "{\"k\":1}"), call("c2", "b", "{\"k\":2}")]
        );
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
        let mut req = TurnRequest::new("gpt-x", vec![ChatMessage::user("hi")]);
        req.system = Some("sys".into());
        let body = p.request_body(&req);
        assert_eq!(body["model"], "gpt-x");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 77);
        assert_eq!(body["messages"][0], json!({"role":"system","content":"sys"}));
        assert_eq!(body["messages"][1], json!({"role":"user","content":"hi"}));
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
        assert!(body.get("prompt_cache_key").is_none(), "no key, no field");
    }

    #[test]
    fn the_session_goes_as_prompt_cache_key_where_the_provider_sends_one() {
        let mut req = TurnRequest::new("gpt-x", vec![ChatMessage::user("hi")]);
        req.cache_key = Some("s-1".into());
        // api.openai.com (no base URL) takes it.
        let body = provider().request_body(&req);
        assert_eq!(body["prompt_cache_key"], "huddle-s-1");
        // Another server may refuse an unknown field: not unless asked.
        let mut cfg = ProviderConfig::new("l", ProviderKind::Openai);
        cfg.base_url = Some("http://127.0.0.1:1/v1".into());
        let local = OpenAiProvider::new(&cfg, ProviderOptions::default()).unwrap();
        assert!(local.request_body(&req).get("prompt_cache_key").is_none());
        cfg.prompt_cache_key = Some(true);
        let asked = OpenAiProvider::new(&cfg, ProviderOptions::default()).unwrap();
        assert_eq!(asked.request_body(&req)["prompt_cache_key"], "huddle-s-1");
        // Caching off: never.
        cfg.prompt_caching = false;
        let off = OpenAiProvider::new(&cfg, ProviderOptions::default()).unwrap();
        assert!(off.request_body(&req).get("prompt_cache_key").is_none());
    }

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(
            &ProviderConfig::new("o", ProviderKind::Openai),
            ProviderOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn request_body_declares_tools_and_sends_the_tool_exchanges() {
        let p = provider();
        let mut req = TurnRequest::new("gpt-x", tool_history());
        req.tools = vec![read_spec()];
        let body = p.request_body(&req);
        assert_eq!(
            body["tools"],
            json!([{"type":"function","function":{"name":"fs__read","description":"Reads a file",
                "parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}])
        );
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(
            body["messages"],
            json!([
                {"role":"user","content":"read a and b"},
                {"role":"assistant","content":null,"tool_calls":[
                    {"id":"c1","type":"function","function":{"name":"fs__read","arguments":"{\"path\":\"a\"}"}},
                    {"id":"c2","type":"function","function":{"name":"fs__read","arguments":"{}"}}]},
                {"role":"tool","tool_call_id":"c1","content":"A"},
                {"role":"tool","tool_call_id":"c2","content":"no such file"},
                {"role":"assistant","content":"One more.","tool_calls":[
                    {"id":"c3","type":"function","function":{"name":"fs__list","arguments":"{not json"}}]},
                {"role":"tool","tool_call_id":"c3","content":"invalid arguments"},
                {"role":"user","content":"and then?"},
            ])
        );
        req.tool_choice = ToolChoice::None;
        assert_eq!(p.request_body(&req)["tool_choice"], "none");
    }

    #[test]
    fn without_tools_the_tool_history_is_plain_text() {
        let p = provider();
        let body = p.request_body(&TurnRequest::new("gpt-x", tool_history()));
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
        assert_eq!(
            body["messages"],
            json!([
                {"role":"user","content":"read a and b"},
                {"role":"assistant","content":"(called fs__read with {\"path\":\"a\"})\n(called fs__read with {})"},
                {"role":"user","content":"[result of fs__read] A"},
                {"role":"user","content":"[error from fs__read] no such file"},
                {"role":"assistant","content":"One more.\n(called fs__list with {not json)"},
                {"role":"user","content":"[error from fs__list] invalid arguments"},
                {"role":"user","content":"and then?"},
            ])
        );
    }
}
