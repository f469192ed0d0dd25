//! An in-process fake LLM server on 127.0.0.1 speaking both the OpenAI Chat Completions and the
//! Anthropic Messages streaming APIs over real sockets, with hand-written HTTP/1.1 so faults can
//! be injected exactly (status codes, Retry-After, stalls, disconnects, truncation, malformed
//! events, in-band errors).
//!
//! ```ignore
//! let llm = FakeLlm::start().await;
//! llm.script("gpt-x", vec![Reply::status(429).retry_after("0"), Reply::text("hello there")]);
//! // point a provider at llm.openai_base() or llm.anthropic_base() ...
//! assert_eq!(llm.requests_for("gpt-x").len(), 2);
//! ```
//! Replies are taken per model in order; a model with no script left gets the `"*"` script,
//! then the default reply (`fake answer from <model>`). A reply set with
//! [`FakeLlm::answer_when`] comes first, whenever the request's user messages say its words (a
//! model that answers what it was told, whatever order the messages came in).
//! [`Reply::held`] waits for its [`Gate`] to open before it is sent. Every request is recorded.
//!
//! Usage is reported as each API does: `Reply::usage(input, output)` is the uncached input,
//! `Reply::cache(read, written)` adds prompt-cache tokens (Anthropic: `cache_read_input_tokens`
//! and `cache_creation_input_tokens` beside `input_tokens`; OpenAI: `prompt_tokens` counts them,
//! `prompt_tokens_details` says which). [`FakeLlm::emulate_prompt_cache`] makes the Anthropic
//! side count them itself from the requests' `cache_control` marks, as the API does.
//!
//! Tool calls stream as each API does (OpenAI `delta.tool_calls` pieces keyed by `index`,
//! `finish_reason: tool_calls`; Anthropic `tool_use` blocks with `input_json_delta` pieces,
//! `stop_reason: tool_use`), from [`Piece`]s in wire order, so arguments can be split anywhere
//! and text can come before or between calls:
//! ```ignore
//! llm.script("gpt-x", vec![
//!     Reply::tool_call("call_1", "fs__read", r#"{"path": "a"}"#),
//!     Reply::text("done"),
//! ]);
//! let second = &llm.requests_for("gpt-x")[1];
//! assert_eq!(second.tool_results()[0].call_id, "call_1");
//! ```

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a streamed reply ends.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEnd {
    /// Finish reason, usage and `[DONE]` / `message_stop`, then a clean end.
    Complete,
    /// A clean end of the HTTP body without any end marker.
    Truncate,
    /// The connection drops in the middle of the chunked body.
    Disconnect,
    /// Silence for this long, then a complete ending.
    Stall(Duration),
    /// An error inside the 200 stream (`data: {"error":..}` / `event: error`), then EOF.
    /// The string is the error type (`api_error`, `overloaded_error`, `rate_limit_error`...).
    InBandError { error_type: String, message: String },
    /// One event whose JSON is cut in half, then a complete ending.
    Malformed,
    /// This text as one raw SSE event (`data: <text>`, no event name), then a complete ending.
    RawEvent(String),
}

/// One piece of a streamed answer, in the order it goes on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    /// Opens the next tool call (calls are numbered from 0 in the order they open). A `None`
    /// field is left out of the wire, as a faulty server would.
    Call {
        id: Option<String>,
        name: Option<String>,
    },
    /// A piece of the raw arguments text of call number `call`.
    Args {
        call: usize,
        text: String,
    },
}

impl Piece {
    pub fn text(text: &str) -> Piece {
        Piece::Text(text.to_string())
    }
    pub fn call(id: &str, name: &str) -> Piece {
        Piece::Call {
            id: Some(id.to_string()),
            name: Some(name.to_string()),
        }
    }
    pub fn args(call: usize, text: &str) -> Piece {
        Piece::Args {
            call,
            text: text.to_string(),
        }
    }
    /// Call number `call`: opened, then its arguments in these pieces.
    pub fn whole_call(call: usize, id: &str, name: &str, args: &[&str]) -> Vec<Piece> {
        let mut out = vec![Piece::call(id, name)];
        out.extend(args.iter().map(|a| Piece::args(call, a)));
        out
    }
}

/// `text` in two pieces cut near the middle (on a character boundary).
fn halves(text: &str) -> Vec<&str> {
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    let (a, b) = text.split_at(mid);
    [a, b].into_iter().filter(|p| !p.is_empty()).collect()
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Stream {
        chunks: Vec<Piece>,
        end: StreamEnd,
        usage: Tokens,
        chunk_delay: Duration,
        /// SSE comment lines (`: ping`) before the first chunk.
        pings: usize,
    },
    Status {
        status: u16,
        body: Option<String>,
        headers: Vec<(String, String)>,
    },
    /// Accept the request and say nothing for this long, then close.
    Hang(Duration),
    /// This status with an error body quoting every request header, as some proxies do.
    EchoHeaders(u16),
    /// This reply once the gate is open (the request is recorded at once).
    Held(Gate, Box<Reply>),
}

/// Holds [`Reply::held`] replies until the test opens it (then and from then on they go).
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Lets every held reply go, now and later.
    pub fn open(&self) {
        // A closed semaphore answers every acquire at once: the gate stays open.
        self.0.close();
    }

    async fn wait(&self) {
        let _ = self.0.acquire().await;
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Reply {
    /// A complete answer streamed word by word.
    pub fn text(text: &str) -> Reply {
        let mut chunks = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let end = rest.find(' ').map(|i| i + 1).unwrap_or(rest.len());
            chunks.push(rest[..end].to_string());
            rest = &rest[end..];
        }
        Reply::chunks(chunks)
    }

    pub fn chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Reply {
        Reply::pieces(chunks.into_iter().map(|c| Piece::Text(c.into())).collect())
    }

    /// A complete answer of these pieces (text and tool calls).
    pub fn pieces(chunks: Vec<Piece>) -> Reply {
        let output = chunks.len() as u64;
        Reply::Stream {
            chunks,
            end: StreamEnd::Complete,
            usage: Tokens::new(11, output),
            chunk_delay: Duration::ZERO,
            pings: 0,
        }
    }

    /// An answer that calls one tool, its arguments streamed in two pieces.
    pub fn tool_call(id: &str, name: &str, arguments: &str) -> Reply {
        Reply::tool_calls(&[(id, name, arguments)])
    }

    /// An answer that calls these tools at once (`(id, name, arguments)`), each call's
    /// arguments streamed in two pieces after every call has been opened.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
        let mut pieces: Vec<Piece> = calls.iter().map(|(id, name, _)| Piece::call(id, name)).collect();
        for (i, (_, _, arguments)) in calls.iter().enumerate() {
            pieces.extend(halves(arguments).into_iter().map(|a| Piece::args(i, a)));
        }
        Reply::pieces(pieces)
    }

    /// An HTTP error status with the API's usual error body.
    pub fn status(status: u16) -> Reply {
        Reply::Status {
            status,
            body: None,
            headers: Vec::new(),
        }
    }

    pub fn end(mut self, how: StreamEnd) -> Reply {
        if let Reply::Stream { end, .. } = &mut self {
            *end = how;
        }
        self
    }

    pub fn usage(mut self, input: u64, output: u64) -> Reply {
        if let Reply::Stream { usage, .. } = &mut self {
            usage.input = input;
            usage.output = output;
        }
        self
    }

    /// Input tokens read from the prompt cache and written to it, besides `usage`'s input.
    pub fn cache(mut self, read: u64, written: u64) -> Reply {
        if let Reply::Stream { usage, .. } = &mut self {
            usage.cache_read = read;
            usage.cache_write = written;
        }
        self
    }

    pub fn chunk_delay(mut self, d: Duration) -> Reply {
        if let Reply::Stream { chunk_delay, .. } = &mut self {
            *chunk_delay = d;
        }
        self
    }

    pub fn pings(mut self, n: usize) -> Reply {
        if let Reply::Stream { pings, .. } = &mut self {
            *pings = n;
        }
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    pub fn retry_after(self, value: &str) -> Reply {
        self.header("retry-after", value)
    }

    pub fn body(mut self, text: &str) -> Reply {
        if let Reply::Status { body, .. } = &mut self {
            *body = Some(text.to_string());
        }
        self
    }

    /// This reply, sent once `gate` is open.
    pub fn held(self, gate: &Gate) -> Reply {
        Reply::Held(gate.clone(), Box::new(self))
    }
}

/// The token counts a reply reports: `input` is the input neither read from nor written to the
/// prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    pub fn new(input: u64, output: u64) -> Tokens {
        Tokens {
            input,
            output,
            ..Tokens::default()
        }
    }

    /// Anthropic's `usage`: the uncached input beside the two cache counts.
    fn anthropic(&self, output: u64) -> Value {
        json!({"input_tokens":self.input,"output_tokens":output,
            "cache_creation_input_tokens":self.cache_write,"cache_read_input_tokens":self.cache_read})
    }

    /// OpenAI's `usage`: `prompt_tokens` counts the cached input too.
    fn openai(&self) -> Value {
        let prompt = self.input + self.cache_read + self.cache_write;
        let mut u = json!({"prompt_tokens":prompt,"completion_tokens":self.output,"total_tokens":prompt + self.output});
        if self.cache_read > 0 || self.cache_write > 0 {
            u["prompt_tokens_details"] =
                json!({"cached_tokens":self.cache_read,"cache_write_tokens":self.cache_write});
        }
        u
    }
}

/// Anthropic's prompt cache as the fake keeps it (see [`FakeLlm::emulate_prompt_cache`]): the
/// prefixes cached so far (hash of their bytes) and the fewest tokens a prefix must have.
#[derive(Default)]
struct PromptCache {
    min_tokens: u64,
    prefixes: std::collections::HashSet<u64>,
}

/// A request's prompt as the cache sees it: each block in render order (tools, system,
/// messages) written out without its `cache_control`, and whether it carried one.
fn cache_blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |prefix: &str, block: &Value| {
        let marked = block.get("cache_control").is_some();
        let mut plain = block.clone();
        if let Some(map) = plain.as_object_mut() {
            map.remove("cache_control");
        }
        out.push((format!("{prefix}{plain}"), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tool:", tool);
    }
    match &body["system"] {
        Value::String(s) => push("system:", &json!({"type":"text","text":s})),
        Value::Array(blocks) => blocks.iter().for_each(|b| push("system:", b)),
        _ => {}
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("");
        match &m["content"] {
            Value::String(s) => push(role, &json!({"type":"text","text":s})),
            Value::Array(blocks) => blocks.iter().for_each(|b| push(role, b)),
            _ => {}
        }
    }
    out
}

/// Tokens of a text, as the fake counts them: a quarter of its bytes.
fn tokens_of(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

impl PromptCache {
    /// What an Anthropic request reads from and writes to the cache, as the API counts it: a
    /// breakpoint (or one of the 20 blocks before it) whose prefix an earlier request cached is
    /// read; the prefix up to the last breakpoint is written beyond that. Returns the usage
    /// with `output` tokens.
    fn account(&mut self, body: &Value, output: u64) -> Tokens {
        use std::hash::{Hash, Hasher};
        let blocks = cache_blocks(body);
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut sizes = Vec::with_capacity(blocks.len());
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut total = 0u64;
        for (text, _) in &blocks {
            text.hash(&mut hasher);
            hashes.push(hasher.finish());
            total += tokens_of(text.len());
            sizes.push(total);
        }
        let marks: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, (_, m))| *m)
            .map(|(i, _)| i)
            .collect();
        let mut read_to: Option<usize> = None;
        for &bp in &marks {
            for at in (bp.saturating_sub(20)..=bp).rev() {
                if self.prefixes.contains(&hashes[at]) {
                    read_to = Some(read_to.map_or(at, |r| r.max(at)));
                    break;
                }
            }
        }
        let read = read_to.map_or(0, |i| sizes[i]);
        let mut write = 0;
        if let Some(&last) = marks.last()
            && sizes[last] >= self.min_tokens
            && read_to.is_none_or(|r| r < last)
        {
            write = sizes[last] - read;
        }
        for &bp in &marks {
            if sizes[bp] >= self.min_tokens {
                self.prefixes.insert(hashes[bp]);
            }
        }
        Tokens {
            input: total - read - write,
            output,
            cache_read: read,
            cache_write: write,
        }
    }
}

/// Which API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
    Models,
    Other,
}

#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// When the request arrived.
    pub at: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
    pub fn model(&self) -> String {
        self.json()["model"].as_str().unwrap_or("").to_string()
    }
    pub fn api(&self) -> Api {
        api_of(&self.path)
    }
    /// The text of every message (system included), in order; of a message made of blocks,
    /// its text blocks joined.
    pub fn prompt_texts(&self) -> Vec<String> {
        let json = self.json();
        let mut out = Vec::new();
        match &json["system"] {
            Value::String(s) => out.push(s.clone()),
            // Anthropic system blocks (marked for the prompt cache).
            Value::Array(blocks) => out.push(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => {}
        }
        for m in json["messages"].as_array().into_iter().flatten() {
            out.push(content_text(&m["content"]));
        }
        out
    }

    /// The text of every user message (either API's shape; tool results left out).
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| content_text(&m["content"]))
            .collect()
    }

    /// The `messages` array as sent.
    pub fn messages(&self) -> Vec<Value> {
        self.json()["messages"].as_array().cloned().unwrap_or_default()
    }

    /// The tool names the request declared (either API's shape).
    pub fn tool_names(&self) -> Vec<String> {
        let json = self.json();
        json["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
            .map(str::to_string)
            .collect()
    }

    /// `tool_choice` as sent: `"auto"` / `"none"` for OpenAI, the `type` for Anthropic; empty
    /// when absent.
    pub fn tool_choice(&self) -> String {
        let choice = &self.json()["tool_choice"];
        choice
            .as_str()
            .or(choice["type"].as_str())
            .unwrap_or("")
            .to_string()
    }

    /// Every tool result the request carries, in order: OpenAI `role: tool` messages,
    /// Anthropic `tool_result` blocks.
    pub fn tool_results(&self) -> Vec<WireResult> {
        let mut out = Vec::new();
        for m in self.messages() {
            if m["role"] == "tool" {
                out.push(WireResult {
                    call_id: m["tool_call_id"].as_str().unwrap_or("").to_string(),
                    content: m["content"].as_str().unwrap_or("").to_string(),
                    is_error: None,
                });
            }
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_result" {
                    out.push(WireResult {
                        call_id: b["tool_use_id"].as_str().unwrap_or("").to_string(),
                        content: b["content"].as_str().unwrap_or("").to_string(),
                        is_error: Some(b["is_error"].as_bool().unwrap_or(false)),
                    });
                }
            }
        }
        out
    }

    /// Every tool call the request's history carries, as `(id, name, arguments)`: OpenAI
    /// `tool_calls` (arguments as sent), Anthropic `tool_use` blocks (the input written out).
    pub fn history_calls(&self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for m in self.messages() {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                out.push((
                    c["id"].as_str().unwrap_or("").to_string(),
                    c["function"]["name"].as_str().unwrap_or("").to_string(),
                    c["function"]["arguments"].as_str().unwrap_or("").to_string(),
                ));
            }
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_use" {
                    out.push((
                        b["id"].as_str().unwrap_or("").to_string(),
                        b["name"].as_str().unwrap_or("").to_string(),
                        b["input"].to_string(),
                    ));
                }
            }
        }
        out
    }
}

/// A tool result as a request carried it. `is_error`: Anthropic's flag (OpenAI has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireResult {
    pub call_id: String,
    pub content: String,
    pub is_error: Option<bool>,
}

fn api_of(path: &str) -> Api {
    let path = path.split('?').next().unwrap_or(path);
    if path.ends_with("/chat/completions") {
        Api::OpenAi
    } else if path.ends_with("/messages") {
        Api::Anthropic
    } else if path.ends_with("/models") {
        Api::Models
    } else {
        Api::Other
    }
}

#[derive(Default)]
struct State {
    scripts: HashMap<String, VecDeque<Reply>>,
    /// `(model, words, reply)`: the reply to every request for `model` whose user messages say
    /// `words`, before its script.
    when: Vec<(String, String, Reply)>,
    default: Option<Reply>,
    requests: Vec<RecordedRequest>,
    required_key: Option<String>,
    /// Anthropic usage counted from the requests' cache marks (off: as scripted).
    cache: Option<PromptCache>,
}

pub struct FakeLlm {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeLlm {
    pub async fn start() -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        FakeLlm { addr, state, accept }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// The base URL for an `openai` provider (`.../v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url())
    }
    /// The base URL for an `anthropic` provider (the client appends `/v1/messages`).
    pub fn anthropic_base(&self) -> String {
        self.url()
    }

    /// Queues replies for requests naming `model` (`"*"`: any model without its own script).
    pub fn script(&self, model: &str, replies: Vec<Reply>) {
        let mut s = self.state.lock().expect("state");
        s.scripts.entry(model.to_string()).or_default().extend(replies);
    }

    /// From now on, a request for `model` whose user messages say `words` gets `reply` (the
    /// first such rule), before the model's script: a model that reacts to what it was told,
    /// not to how many times it was asked.
    pub fn answer_when(&self, model: &str, words: &str, reply: Reply) {
        let mut s = self.state.lock().expect("state");
        s.when.push((model.to_string(), words.to_string(), reply));
    }

    /// The reply when no script is left (default: `fake answer from <model>`).
    pub fn set_default(&self, reply: Reply) {
        self.state.lock().expect("state").default = Some(reply);
    }

    /// From now on, Anthropic replies report the prompt cache as the API does: a request's
    /// input is counted from its body (a quarter of its bytes per token), split into what
    /// earlier requests cached (read), what its `cache_control` marks cache now (written) and the
    /// rest. Prefixes shorter than `min_tokens` are not cached (the API's minimum).
    pub fn emulate_prompt_cache(&self, min_tokens: u64) {
        self.state.lock().expect("state").cache = Some(PromptCache {
            min_tokens,
            ..PromptCache::default()
        });
    }

    /// Answer 401 unless the request carries this key (Bearer or x-api-key).
    pub fn require_key(&self, key: &str) {
        self.state.lock().expect("state").required_key = Some(key.to_string());
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().expect("state").requests.clone()
    }

    pub fn requests_for(&self, model: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.model() == model)
            .collect()
    }
}

/// A loopback port nothing listens on (connection refused).
pub async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    port
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let api = request.api();
    let model = request.model();
    let reply = {
        let mut s = state.lock().expect("state");
        s.requests.push(request.clone());
        let authorized = match &s.required_key {
            None => true,
            Some(key) => {
                request.header("authorization") == Some(&format!("Bearer {key}"))
                    || request.header("x-api-key") == Some(key.as_str())
            }
        };
        if !authorized {
            Reply::status(401)
        } else if api == Api::Models {
            let ids: Vec<Value> = s
                .scripts
                .keys()
                .map(|m| json!({"id": m, "object": "model"}))
                .collect();
            Reply::Status {
                status: 200,
                body: Some(json!({"object": "list", "data": ids}).to_string()),
                headers: Vec::new(),
            }
        } else if let Some((.., reply)) = s.when.iter().find(|(m, words, _)| {
            *m == model && request.user_texts().iter().any(|t| t.contains(words.as_str()))
        }) {
            reply.clone()
        } else {
            let next = s.scripts.get_mut(&model).and_then(VecDeque::pop_front);
            let next = next.or_else(|| s.scripts.get_mut("*").and_then(VecDeque::pop_front));
            next.or_else(|| s.default.clone())
                .unwrap_or_else(|| Reply::text(&format!("fake answer from {model}")))
        }
    };
    let reply = match reply {
        Reply::Held(gate, reply) => {
            gate.wait().await;
            *reply
        }
        other => other,
    };
    let reply = match reply {
        Reply::Stream {
            chunks,
            end,
            usage,
            chunk_delay,
            pings,
        } if api == Api::Anthropic => {
            let counted = {
                let mut s = state.lock().expect("state");
                s.cache.as_mut().map(|c| c.account(&request.json(), usage.output))
            };
            Reply::Stream {
                chunks,
                end,
                usage: counted.unwrap_or(usage),
                chunk_delay,
                pings,
            }
        }
        Reply::EchoHeaders(status) => {
            let seen: Vec<String> = request.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            let message = format!("request refused; it carried {}", seen.join("; "));
            Reply::status(status)
                .body(&json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string())
        }
        other => other,
    };
    let wants_stream = request.json()["stream"].as_bool().unwrap_or(false);
    let include_usage = request.json()["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false);
    let _ = respond(&mut socket, api, &model, reply, wants_stream, include_usage).await;
}

async fn read_request(socket: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(RecordedRequest {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
        at: Instant::now(),
    })
}

async fn respond(
    socket: &mut TcpStream,
    api: Api,
    model: &str,
    reply: Reply,
    wants_stream: bool,
    include_usage: bool,
) -> std::io::Result<()> {
    match reply {
        Reply::Hang(d) => {
            tokio::time::sleep(d).await;
            Ok(())
        }
        // Turned into a status reply when the request was read; let go once its gate opened.
        Reply::EchoHeaders(_) | Reply::Held(..) => Ok(()),
        Reply::Status {
            status,
            body,
            headers,
        } => {
            let body = body.unwrap_or_else(|| error_body(api, status));
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
            socket.shutdown().await
        }
        Reply::Stream { chunks, usage, .. } if !wants_stream => {
            let (text, calls) = whole_answer(&chunks);
            let body = match api {
                Api::Anthropic => {
                    let mut content = vec![json!({"type":"text","text":text})];
                    content.extend(calls.iter().map(|(id, name, arguments)| {
                        let input: Value = serde_json::from_str(arguments).unwrap_or(json!({}));
                        json!({"type":"tool_use","id":id,"name":name,"input":input})
                    }));
                    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
                    json!({"type":"message","role":"assistant","model":model,
                        "content":content,"stop_reason":stop,
                        "usage":usage.anthropic(usage.output)})
                }
                _ => {
                    let mut message = json!({"role":"assistant","content":text});
                    if !calls.is_empty() {
                        message["tool_calls"] = calls
                            .iter()
                            .map(|(id, name, arguments)| {
                                json!({"id":id,"type":"function","function":{"name":name,"arguments":arguments}})
                            })
                            .collect();
                    }
                    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
                    json!({"object":"chat.completion","model":model,
                        "choices":[{"index":0,"message":message,"finish_reason":finish}],
                        "usage":usage.openai()})
                }
            }
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
            socket.shutdown().await
        }
        Reply::Stream {
            chunks,
            end,
            usage,
            chunk_delay,
            pings,
        } => {
            socket
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
                )
                .await?;
            let mut sse = Sse::new(api, model, usage);
            for _ in 0..pings {
                write_chunk(socket, ": ping\n\n").await?;
            }
            write_chunk(socket, &sse.start()).await?;
            for (i, piece) in chunks.iter().enumerate() {
                if i > 0 && !chunk_delay.is_zero() {
                    tokio::time::sleep(chunk_delay).await;
                }
                write_chunk(socket, &sse.piece(piece)).await?;
            }
            match end {
                StreamEnd::Complete => write_chunk(socket, &sse.finish(include_usage)).await?,
                StreamEnd::Stall(d) => {
                    tokio::time::sleep(d).await;
                    write_chunk(socket, &sse.finish(include_usage)).await?;
                }
                StreamEnd::Malformed => {
                    let event = sse.text_event(0, "lost words");
                    let cut = &event[..event.len() / 2];
                    write_chunk(socket, &format!("{}\n\n", cut.trim_end())).await?;
                    write_chunk(socket, &sse.finish(include_usage)).await?;
                }
                StreamEnd::RawEvent(text) => {
                    write_chunk(socket, &format!("data: {text}\n\n")).await?;
                    write_chunk(socket, &sse.finish(include_usage)).await?;
                }
                StreamEnd::InBandError { error_type, message } => {
                    write_chunk(socket, &sse.error(&error_type, &message)).await?;
                }
                StreamEnd::Truncate => {}
                StreamEnd::Disconnect => {
                    // No terminating chunk: the client sees the body cut short.
                    socket.flush().await?;
                    return Ok(());
                }
            }
            socket.write_all(b"0\r\n\r\n").await?;
            socket.shutdown().await
        }
    }
}

async fn write_chunk(socket: &mut TcpStream, data: &str) -> std::io::Result<()> {
    socket
        .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
        .await?;
    socket.flush().await
}

/// The text and the `(id, name, arguments)` calls of a scripted answer, for a whole (not
/// streamed) reply.
fn whole_answer(pieces: &[Piece]) -> (String, Vec<(String, String, String)>) {
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => text.push_str(t),
            Piece::Call { id, name } => calls.push((
                id.clone().unwrap_or_default(),
                name.clone().unwrap_or_default(),
                String::new(),
            )),
            Piece::Args { call, text } => {
                if let Some(c) = calls.get_mut(*call) {
                    c.2.push_str(text);
                }
            }
        }
    }
    (text, calls)
}

/// SSE events of one API, for one answer: Anthropic content blocks are opened as pieces need
/// them (a text block, a `tool_use` block per call) and closed before the next one.
struct Sse<'a> {
    api: Api,
    model: &'a str,
    usage: Tokens,
    /// The open Anthropic content block: its index and whether it is text.
    open: Option<(usize, bool)>,
    blocks: usize,
    /// The content index (Anthropic) of each call opened so far.
    call_blocks: Vec<usize>,
}

impl<'a> Sse<'a> {
    fn new(api: Api, model: &'a str, usage: Tokens) -> Sse<'a> {
        Sse {
            api,
            model,
            usage,
            open: None,
            blocks: 0,
            call_blocks: Vec::new(),
        }
    }

    fn start(&self) -> String {
        match self.api {
            Api::Anthropic => {
                let start = json!({"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant",
                    "content":[],"model":self.model,"stop_reason":null,
                    "usage":self.usage.anthropic(1)}});
                format!(
                    "event: message_start\ndata: {start}\n\nevent: ping\ndata: {{\"type\": \"ping\"}}\n\n"
                )
            }
            _ => self.openai_chunk(json!({"role":"assistant","content":""}), Value::Null),
        }
    }

    fn piece(&mut self, piece: &Piece) -> String {
        match (self.api, piece) {
            (Api::Anthropic, Piece::Text(text)) => {
                let mut out = String::new();
                let index = match self.open {
                    Some((index, true)) => index,
                    _ => {
                        out.push_str(&self.close_block());
                        let index = self.open_block(true);
                        let block = json!({"type":"content_block_start","index":index,
                            "content_block":{"type":"text","text":""}});
                        out.push_str(&format!("event: content_block_start\ndata: {block}\n\n"));
                        index
                    }
                };
                out.push_str(&self.text_event(index, text));
                out
            }
            (Api::Anthropic, Piece::Call { id, name }) => {
                let mut out = self.close_block();
                let index = self.open_block(false);
                self.call_blocks.push(index);
                let mut block = json!({"type":"tool_use","input":{}});
                if let Some(id) = id {
                    block["id"] = json!(id);
                }
                if let Some(name) = name {
                    block["name"] = json!(name);
                }
                let start = json!({"type":"content_block_start","index":index,"content_block":block});
                out.push_str(&format!("event: content_block_start\ndata: {start}\n\n"));
                out
            }
            (Api::Anthropic, Piece::Args { call, text }) => {
                let index = self.call_blocks.get(*call).copied().unwrap_or(*call);
                let d = json!({"type":"content_block_delta","index":index,
                    "delta":{"type":"input_json_delta","partial_json":text}});
                format!("event: content_block_delta\ndata: {d}\n\n")
            }
            (_, Piece::Text(text)) => self.openai_chunk(json!({ "content": text }), Value::Null),
            (_, Piece::Call { id, name }) => {
                let index = self.call_blocks.len();
                self.call_blocks.push(index);
                let mut function = json!({"arguments": ""});
                if let Some(name) = name {
                    function["name"] = json!(name);
                }
                let mut call = json!({"index":index,"type":"function","function":function});
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                self.openai_chunk(json!({"tool_calls":[call]}), Value::Null)
            }
            (_, Piece::Args { call, text }) => self.openai_chunk(
                json!({"tool_calls":[{"index":call,"function":{"arguments":text}}]}),
                Value::Null,
            ),
        }
    }

    /// An Anthropic text delta of block `index` (or an OpenAI text chunk).
    fn text_event(&self, index: usize, text: &str) -> String {
        match self.api {
            Api::Anthropic => {
                let d = json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":text}});
                format!("event: content_block_delta\ndata: {d}\n\n")
            }
            _ => self.openai_chunk(json!({ "content": text }), Value::Null),
        }
    }

    fn open_block(&mut self, text: bool) -> usize {
        let index = self.blocks;
        self.blocks += 1;
        self.open = Some((index, text));
        index
    }

    fn close_block(&mut self) -> String {
        match self.open.take() {
            Some((index, _)) => {
                format!(
                    "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n"
                )
            }
            None => String::new(),
        }
    }

    fn finish(&mut self, include_usage: bool) -> String {
        let called = !self.call_blocks.is_empty();
        match self.api {
            Api::Anthropic => {
                let stop = if called { "tool_use" } else { "end_turn" };
                let d = json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},
                    "usage":{"output_tokens":self.usage.output}});
                format!(
                    "{}event: message_delta\ndata: {d}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
                    self.close_block()
                )
            }
            _ => {
                let finish = if called { "tool_calls" } else { "stop" };
                let mut out = self.openai_chunk(json!({}), json!(finish));
                if include_usage {
                    let u = json!({"id":"chatcmpl-fake","object":"chat.completion.chunk","model":self.model,"choices":[],
                        "usage":self.usage.openai()});
                    out.push_str(&format!("data: {u}\n\n"));
                }
                out.push_str("data: [DONE]\n\n");
                out
            }
        }
    }

    fn error(&self, error_type: &str, message: &str) -> String {
        match self.api {
            Api::Anthropic => {
                let e = json!({"type":"error","error":{"type":error_type,"message":message}});
                format!("event: error\ndata: {e}\n\n")
            }
            _ => {
                let e = json!({"error":{"message":message,"type":error_type,"param":null,"code":null}});
                format!("data: {e}\n\n")
            }
        }
    }

    fn openai_chunk(&self, delta: Value, finish: Value) -> String {
        let c = json!({"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1,"model":self.model,
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}],"usage":null});
        format!("data: {c}\n\n")
    }
}

fn error_body(api: Api, status: u16) -> String {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "Bad request."),
        401 => ("authentication_error", "Invalid API key."),
        403 => ("permission_error", "Not allowed."),
        404 => ("not_found_error", "No such model."),
        429 => ("rate_limit_error", "Rate limit exceeded."),
        529 => ("overloaded_error", "Overloaded."),
        _ => ("api_error", "Internal server error."),
    };
    match api {
        Api::Anthropic => json!({"type":"error","error":{"type":kind,"message":message}}).to_string(),
        _ => json!({"error":{"message":message,"type":kind,"param":null,"code":null}}).to_string(),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// A message's text content in either API's shape (a string, or text blocks joined by lines).
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.as_str().unwrap_or("").to_string(),
    }
}
