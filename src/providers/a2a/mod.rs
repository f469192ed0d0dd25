//! The `a2a` kind: a remote agent speaking the Agent2Agent protocol (A2A v1.0, JSON-RPC over
//! HTTP): an agent served with CrewAI, LangGraph, Microsoft Agent Framework, Google ADK or the
//! `a2a-sdk`, as a member of a team (a relay's counterpart, a flow or dispatch member).
//!
//! The agent's card (`<url>/.well-known/agent-card.json`) is read first (and again every
//! [`CARD_TTL`]): it names the JSON-RPC endpoint and whether the agent streams. Each turn sends
//! the turn's message, and only it (never huddle's system prompt, the repository's instructions
//! or another member's words), as one `SendStreamingMessage` (or `SendMessage` when the agent
//! does not stream) in the session's A2A context: the context id the agent gave on the first
//! turn is kept as the session's agent session id, so one relay (one session) is one context.
//! Streamed artifacts become deltas; the task's end decides the turn: `completed` answers,
//! `input-required` answers with the agent's question and keeps the task, so the next message
//! (the relay's next approved draft, the user's next line) answers it; `auth-required`,
//! `failed`, `rejected` and `canceled` are errors. A stop sends `CancelTask`.
//!
//! The agent is untrusted: only public hosts are reached unless `allow_private: true` (names
//! resolved and the client pinned to the addresses checked, no redirects), known secrets and
//! anything that looks like one are redacted from what is sent, what comes back is stripped of
//! control sequences, redacted and limited in size.

pub mod host;
pub mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::{ErrorKind, ProviderError, snippet};
use super::http::error_chain;
use super::sse::SseParser;
use super::{
    AgentActivity, AgentReport, Capabilities, DeltaSink, Finished, Provider, ProviderOptions, TextSink,
    TurnOutput, TurnRequest, conclude, guarded,
};
use crate::config::{A2aSettings, AGENT_KEY_VARS, ProviderConfig, ProviderKind};
use crate::text::sanitize;
use crate::text::secrets::{Secrets, redact_secrets};
use wire::{AgentCard, Continuation, State, StreamResponse};

/// How long a card read is trusted before it is read again.
pub const CARD_TTL: Duration = Duration::from_secs(600);
/// The largest card read.
const MAX_CARD_BYTES: usize = 256 * 1024;
/// The largest answer read: a `SendMessage` body, or everything a stream sends.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// The most text one turn keeps from the agent.
const MAX_TEXT_BYTES: usize = 1024 * 1024;
/// The largest message sent.
const MAX_SEND_BYTES: usize = 1024 * 1024;
/// How long a `CancelTask` may take after a stop.
const CANCEL_WAIT: Duration = Duration::from_secs(3);

pub struct A2aProvider {
    name: String,
    settings: A2aSettings,
    /// Configured plain headers (`headers:`).
    headers: HeaderMap,
    api_key_env: Option<String>,
    options: ProviderOptions,
    /// Where `headers_env` and `api_key_env` are read (the front end's environment).
    env: crate::env::Env,
    /// The card and the client pinned to its hosts, with when they were read.
    remote: tokio::sync::Mutex<Option<(Instant, Arc<Remote>)>>,
    next_id: AtomicU64,
}

/// The remote task a turn has open (with the agent that has it), for a stop to cancel.
type OpenTask = Arc<Mutex<Option<(Arc<Remote>, String)>>>;

/// A card read, the endpoint it names and a client allowed to reach it.
pub struct Remote {
    pub card: AgentCard,
    pub card_url: Url,
    pub endpoint: Url,
    client: reqwest::Client,
}

impl A2aProvider {
    pub fn new(cfg: &ProviderConfig, options: ProviderOptions) -> Result<A2aProvider, ProviderError> {
        let Some(settings) = cfg.a2a.clone() else {
            return Err(ProviderError::new(
                ErrorKind::Config,
                &cfg.name,
                format!("provider `{}` of kind a2a needs `a2a: {{ url: ... }}`", cfg.name),
            ));
        };
        let mut headers = HeaderMap::new();
        for (name, value) in &cfg.headers {
            let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                return Err(ProviderError::new(
                    ErrorKind::Config,
                    &cfg.name,
                    format!(
                        "provider `{}`: header `{name}` is not a valid HTTP header",
                        cfg.name
                    ),
                ));
            };
            headers.insert(n, v);
        }
        Ok(A2aProvider {
            name: cfg.name.clone(),
            settings,
            headers,
            api_key_env: cfg.api_key_env.clone().filter(|k| !k.trim().is_empty()),
            options,
            env: crate::env::Env::process(),
            remote: tokio::sync::Mutex::new(None),
            next_id: AtomicU64::new(1),
        })
    }

    /// The same provider reading its headers' and key's variables (and the secrets it redacts)
    /// from `env`: the environment of the front end whose profile it serves.
    pub fn with_env(mut self, env: crate::env::Env) -> A2aProvider {
        self.env = env;
        self
    }

    /// An error in huddle's words; what the agent said in it has the secrets huddle knows and
    /// what looks like one redacted (it goes to the transcript, the log and the trace).
    /// The endpoint's scheme and host, as configured, stay: they are the user's own words,
    /// not a secret to hide from them (a private host would read `[redacted]:8080/`).
    fn error(&self, kind: ErrorKind, message: String) -> ProviderError {
        const ORIGIN: &str = "\u{1}origin\u{1}";
        let message = format!("provider `{}`: {message}", self.name);
        let origin = Url::parse(&self.settings.url)
            .ok()
            .and_then(|u| {
                Some(format!(
                    "{}://{}",
                    u.scheme(),
                    u.host_str().filter(|h| !h.is_empty())?
                ))
            })
            .filter(|origin| message.contains(origin.as_str()));
        let message = match &origin {
            Some(origin) => message.replace(origin.as_str(), ORIGIN),
            None => message,
        };
        let message = redact_secrets(&self.secrets().redact(&message));
        let message = match &origin {
            Some(origin) => message.replace(ORIGIN, origin),
            None => message,
        };
        ProviderError::new(kind, &self.name, message)
    }

    /// Every secret this provider knows now: its header values, its key, CLI agents' keys.
    fn secrets(&self) -> Secrets {
        let read = |var: &str| self.env.var(var).filter(|v| !v.trim().is_empty());
        let mut values: Vec<String> = self
            .settings
            .headers_env
            .values()
            .filter_map(|v| read(v))
            .collect();
        values.extend(self.api_key_env.as_deref().and_then(read));
        values.extend(
            self.headers
                .values()
                .filter_map(|v| v.to_str().ok().map(str::to_string)),
        );
        values.extend(AGENT_KEY_VARS.iter().filter_map(|v| read(v)));
        // `Bearer <token>`: the token on its own too.
        let bare: Vec<String> = values
            .iter()
            .filter_map(|v| v.trim().split_once(' ').map(|(_, t)| t.trim().to_string()))
            .filter(|t| t.len() >= 8)
            .collect();
        values.extend(bare);
        Secrets::new(values)
    }

    /// The headers of every request: the protocol version, the configured ones, and those read
    /// from the environment now (a variable that is not set is an auth error saying which).
    fn request_headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = self.headers.clone();
        headers.insert(
            HeaderName::from_static("a2a-version"),
            HeaderValue::from_static(wire::VERSION),
        );
        let missing = |var: &str| {
            self.error(
                ErrorKind::Auth,
                format!("the environment variable {var} (named in its a2a: block) is not set"),
            )
        };
        if let Some(var) = &self.api_key_env {
            let key = self
                .env
                .var(var)
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| missing(var))?;
            let value = HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                self.error(
                    ErrorKind::Config,
                    format!("the value of {var} is not a valid header value"),
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        for (name, var) in &self.settings.headers_env {
            let value = self
                .env
                .var(var)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| missing(var))?;
            let (Ok(n), Ok(mut v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value.trim()),
            ) else {
                return Err(self.error(
                    ErrorKind::Config,
                    format!("header `{name}` from {var} is not a valid HTTP header"),
                ));
            };
            v.set_sensitive(true);
            headers.insert(n, v);
        }
        Ok(headers)
    }

    /// The card's URL: `<url>/.well-known/agent-card.json`, or `url` itself when it names a
    /// card already.
    fn card_url(&self) -> Result<Url, ProviderError> {
        let bad = |e: String| self.error(ErrorKind::Config, format!("a2a.url `{}`: {e}", self.settings.url));
        let mut base = Url::parse(&self.settings.url).map_err(|e| bad(e.to_string()))?;
        if base.path().ends_with(".json") {
            return Ok(base);
        }
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        base.join(wire::CARD_PATH).map_err(|e| bad(e.to_string()))
    }

    /// A client for `hosts` only: each resolved and checked, the client pinned to what was
    /// checked, redirects not followed.
    async fn client_for(&self, urls: &[&Url]) -> Result<reqwest::Client, ProviderError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .redirect(reqwest::redirect::Policy::none());
        for url in urls {
            let addrs = host::resolve_allowed(url, self.settings.allow_private)
                .await
                .map_err(|e| self.error(ErrorKind::Config, e))?;
            if let Some(domain) = url.domain() {
                builder = builder.resolve_to_addrs(domain, &addrs);
            }
        }
        builder
            .build()
            .map_err(|e| self.error(ErrorKind::Config, format!("cannot build an HTTP client: {e}")))
    }

    /// Reads the card (afresh), checks the endpoint it names.
    pub async fn read_card(&self) -> Result<Remote, ProviderError> {
        let card_url = self.card_url()?;
        let client = self.client_for(&[&card_url]).await?;
        let headers = self.request_headers()?;
        let resp = tokio::time::timeout(
            self.options.read_timeout,
            client.get(card_url.clone()).headers(headers).send(),
        )
        .await
        .map_err(|_| self.error(ErrorKind::ReadTimeout, format!("no answer from {card_url}")))?
        .map_err(|e| self.transport_error(&card_url, &e))?;
        let status = resp.status().as_u16();
        let body = self.read_body(resp, MAX_CARD_BYTES).await?;
        if !(200..300).contains(&status) {
            return Err(self.status_error(&card_url, status, &body));
        }
        let card: AgentCard = serde_json::from_slice(&body).map_err(|e| {
            self.error(
                ErrorKind::Protocol,
                format!("{card_url} is not an Agent Card: {e}"),
            )
        })?;
        let Some(endpoint) = card.jsonrpc_url() else {
            return Err(self.error(
                ErrorKind::Protocol,
                format!(
                    "the agent's card ({card_url}) offers no JSON-RPC interface of A2A 1.0; huddle speaks only that"
                ),
            ));
        };
        let endpoint = card_url
            .join(endpoint)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                self.error(
                    ErrorKind::Protocol,
                    format!("the card names a bad endpoint `{}`", snippet(endpoint, 100)),
                )
            })?;
        let client = self.client_for(&[&card_url, &endpoint]).await?;
        Ok(Remote {
            card,
            card_url,
            endpoint,
            client,
        })
    }

    /// The card and client, read again when older than [`CARD_TTL`].
    async fn remote(&self) -> Result<Arc<Remote>, ProviderError> {
        let mut cached = self.remote.lock().await;
        if let Some((at, remote)) = cached.as_ref()
            && at.elapsed() < CARD_TTL
        {
            return Ok(Arc::clone(remote));
        }
        let remote = Arc::new(self.read_card().await?);
        *cached = Some((Instant::now(), Arc::clone(&remote)));
        Ok(remote)
    }

    /// A whole body, at most `max` bytes (more is an error).
    async fn read_body(&self, resp: reqwest::Response, max: usize) -> Result<Vec<u8>, ProviderError> {
        let url = resp.url().clone();
        let mut stream = resp.bytes_stream();
        let mut body = Vec::new();
        loop {
            let chunk = tokio::time::timeout(self.options.read_timeout, stream.next())
                .await
                .map_err(|_| self.error(ErrorKind::ReadTimeout, format!("{url} stalled")))?;
            match chunk {
                None => return Ok(body),
                Some(Err(e)) => return Err(self.transport_error(&url, &e)),
                Some(Ok(bytes)) => {
                    if body.len() + bytes.len() > max {
                        return Err(self.error(
                            ErrorKind::Protocol,
                            format!("{url} sent more than {max} bytes; huddle reads no more"),
                        ));
                    }
                    body.extend_from_slice(&bytes);
                }
            }
        }
    }

    fn transport_error(&self, url: &Url, e: &reqwest::Error) -> ProviderError {
        let what = if e.is_connect() {
            "cannot connect to"
        } else {
            "request failed to"
        };
        self.error(
            ErrorKind::Connection,
            format!("{what} the remote agent at {url}: {}", error_chain(e)),
        )
    }

    fn status_error(&self, url: &Url, status: u16, body: &[u8]) -> ProviderError {
        let said = sanitize::display(&snippet(&String::from_utf8_lossy(body), 300)).into_owned();
        let (kind, advice) = match status {
            401 => (
                ErrorKind::Auth,
                "it wants credentials: set headers_env in the provider's a2a: block",
            ),
            403 => (
                ErrorKind::Permission,
                "it refused the credentials sent (headers_env)",
            ),
            404 => (ErrorKind::NotFound, "check a2a.url"),
            429 => (ErrorKind::RateLimited, "it is rate limiting"),
            s if s >= 500 => (ErrorKind::Server, "the agent's server failed"),
            s if (300..400).contains(&s) => (ErrorKind::Config, "it redirects; put the final URL in a2a.url"),
            _ => (ErrorKind::BadRequest, "it refused the request"),
        };
        self.error(kind, format!("{url} answered HTTP {status} ({advice}): {said}"))
            .with_status(status)
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn turn(
        &self,
        req: TurnRequest,
        deltas: DeltaSink<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnOutput, ProviderError> {
        let started = Instant::now();
        let mut sink = TextSink::new(deltas);
        let task = OpenTask::default();
        let work = self.run(&req, &mut sink, Arc::clone(&task));
        let result = guarded(&self.name, &cancel, req.turn_timeout, work).await;
        if result.is_err() {
            let open = task.lock().ok().and_then(|mut t| t.take());
            if let Some((remote, id)) = open {
                self.cancel_task(&remote, &id).await;
            }
        }
        conclude(result, sink.text, started, false)
    }

    /// Asks the agent to cancel the task a stopped turn left running (best effort).
    async fn cancel_task(&self, remote: &Remote, task_id: &str) {
        let Ok(headers) = self.request_headers() else {
            return;
        };
        let body = wire::request(self.next_id(), "CancelTask", serde_json::json!({ "id": task_id }));
        let sent = remote
            .client
            .post(remote.endpoint.clone())
            .headers(headers)
            .json(&body)
            .send();
        match tokio::time::timeout(CANCEL_WAIT, sent).await {
            Ok(Ok(resp)) => {
                tracing::debug!(provider = %self.name, status = %resp.status(), "A2A task cancelled")
            }
            _ => tracing::debug!(provider = %self.name, "A2A CancelTask got no answer"),
        }
    }

    async fn run(
        &self,
        req: &TurnRequest,
        sink: &mut TextSink<'_>,
        open_task: OpenTask,
    ) -> Result<Finished, ProviderError> {
        let remote = self.remote().await?;
        let secrets = self.secrets();
        let text = secrets.redact(&redact_secrets(req.last_user_text())).into_owned();
        if text.len() > MAX_SEND_BYTES {
            return Err(self.error(
                ErrorKind::BadRequest,
                format!(
                    "the message is {} bytes; at most {MAX_SEND_BYTES} are sent to a remote agent",
                    text.len()
                ),
            ));
        }
        let before = Continuation::parse(req.agent_session_id.as_deref());
        let mut progress = Progress::new(sink, &secrets, open_task, Arc::clone(&remote));
        let sent = self
            .send(&remote, &text, &before, before.task_id.as_deref(), &mut progress)
            .await;
        let sent = match sent {
            // The task waiting for input is gone (or finished meanwhile): the context goes on.
            Err(e) if before.task_id.is_some() && e.status.is_none() && progress.nothing_yet() => {
                tracing::debug!(provider = %self.name, error = %e, "A2A task not continued; a new one in the context");
                self.send(&remote, &text, &before, None, &mut progress).await
            }
            other => other,
        };
        sent?;
        let state = progress.state;
        let after = Continuation {
            context_id: progress.context_id.clone().or(before.context_id.clone()),
            task_id: (state == State::InputRequired)
                .then(|| progress.task_id.clone())
                .flatten(),
        };
        if let Ok(mut open) = progress.open_task.lock() {
            *open = None;
        }
        let said = progress.status_text.clone();
        match state {
            State::Completed | State::InputRequired => {}
            State::AuthRequired => {
                return Err(self.error(
                    ErrorKind::Auth,
                    format!("the remote agent wants authentication huddle cannot give: {said}"),
                ));
            }
            State::Failed | State::Rejected | State::Canceled => {
                return Err(self.error(
                    ErrorKind::Process,
                    format!("the remote agent's task ended {}: {said}", state.as_str()),
                ));
            }
            State::Running | State::Unknown => {
                return Err(self.error(
                    ErrorKind::Truncated,
                    "the agent's answer ended while its task was still working".into(),
                ));
            }
        }
        let session = after.store();
        if let (Some(id), Some(activity)) = (&session, &req.agent_activity) {
            activity.send(AgentActivity::Session(id.clone()));
        }
        Ok(Finished {
            usage: None,
            finish_reason: Some(state.as_str().to_string()),
            tool_calls: Vec::new(),
            agent: Some(AgentReport {
                session_id: session,
                resumed: before.context_id.is_some(),
                ..AgentReport::default()
            }),
            ..Finished::default()
        })
    }

    /// One `SendStreamingMessage` (or `SendMessage`), read to its end into `progress`.
    async fn send(
        &self,
        remote: &Remote,
        text: &str,
        before: &Continuation,
        task_id: Option<&str>,
        progress: &mut Progress<'_, '_>,
    ) -> Result<(), ProviderError> {
        let streaming = remote.card.capabilities.streaming;
        let method = if streaming {
            "SendStreamingMessage"
        } else {
            "SendMessage"
        };
        let message_id = uuid::Uuid::new_v4().to_string();
        let params = wire::send_params(&message_id, text, before.context_id.as_deref(), task_id);
        let body = wire::request(self.next_id(), method, params);
        let mut headers = self.request_headers()?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static(if streaming {
                "text/event-stream"
            } else {
                "application/json"
            }),
        );
        let url = &remote.endpoint;
        let resp = tokio::time::timeout(
            self.options.read_timeout,
            remote
                .client
                .post(url.clone())
                .headers(headers)
                .json(&body)
                .send(),
        )
        .await
        .map_err(|_| self.error(ErrorKind::ReadTimeout, format!("no answer from {url}")))?
        .map_err(|e| self.transport_error(url, &e))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let body = self.read_body(resp, MAX_CARD_BYTES).await.unwrap_or_default();
            return Err(self.status_error(url, status, &body));
        }
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            let body = self.read_body(resp, MAX_RESPONSE_BYTES).await?;
            let value: Value = serde_json::from_slice(&body).map_err(|e| {
                self.error(
                    ErrorKind::Protocol,
                    format!("{method} answered with no JSON: {e}"),
                )
            })?;
            return self.take(method, &value, progress);
        }
        let mut parser = SseParser::new();
        let mut stream = resp.bytes_stream();
        let mut read = 0usize;
        loop {
            let chunk = tokio::time::timeout(self.options.read_timeout, stream.next())
                .await
                .map_err(|_| self.error(ErrorKind::ReadTimeout, format!("the stream from {url} stalled")))?;
            let bytes = match chunk {
                None => {
                    parser.finish();
                    while let Some(event) = parser.next_event() {
                        self.take_event(method, &event.data, progress)?;
                    }
                    return Ok(());
                }
                Some(Err(e)) => return Err(self.transport_error(url, &e)),
                Some(Ok(bytes)) => bytes,
            };
            read += bytes.len();
            if read > MAX_RESPONSE_BYTES {
                return Err(self.error(
                    ErrorKind::Protocol,
                    format!("the stream sent more than {MAX_RESPONSE_BYTES} bytes; huddle reads no more"),
                ));
            }
            parser.push(&bytes);
            while let Some(event) = parser.next_event() {
                self.take_event(method, &event.data, progress)?;
                if progress.state.ends_turn() {
                    return Ok(());
                }
            }
        }
    }

    fn take_event(
        &self,
        method: &str,
        data: &str,
        progress: &mut Progress<'_, '_>,
    ) -> Result<(), ProviderError> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            self.error(
                ErrorKind::Protocol,
                format!("{method} streamed an event that is not JSON: {e}"),
            )
        })?;
        self.take(method, &value, progress)
    }

    /// One JSON-RPC response (a whole answer or one streamed event) into `progress`.
    fn take(
        &self,
        method: &str,
        value: &Value,
        progress: &mut Progress<'_, '_>,
    ) -> Result<(), ProviderError> {
        match wire::response(value) {
            None => Err(self.error(ErrorKind::Protocol, format!("{method} answered with no result"))),
            Some(Err(e)) => {
                let said = sanitize::display(&snippet(&e.message, 300)).into_owned();
                let advice = match e.code {
                    wire::VERSION_NOT_SUPPORTED => " (the agent does not speak A2A 1.0)",
                    wire::TASK_NOT_FOUND | wire::TASK_NOT_CANCELABLE => " (the task is gone)",
                    _ => "",
                };
                Err(self.error(
                    ErrorKind::BadRequest,
                    format!("the agent refused {method} (error {}{advice}): {said}", e.code),
                ))
            }
            Some(Ok(result)) => {
                let response: StreamResponse = serde_json::from_value(result).map_err(|e| {
                    self.error(
                        ErrorKind::Protocol,
                        format!("{method} answered in an unknown shape: {e}"),
                    )
                })?;
                progress.take(response);
                Ok(())
            }
        }
    }
}

/// What a turn has been told so far.
struct Progress<'s, 'd> {
    sink: &'s mut TextSink<'d>,
    secrets: &'s Secrets,
    /// The task a stop cancels.
    open_task: OpenTask,
    remote: Arc<Remote>,
    task_id: Option<String>,
    context_id: Option<String>,
    state: State,
    /// The artifact the last text belonged to.
    artifact: Option<String>,
    /// The text of the status message that ended the turn (a question, a reason).
    status_text: String,
    truncated: bool,
}

impl<'s, 'd> Progress<'s, 'd> {
    fn new(
        sink: &'s mut TextSink<'d>,
        secrets: &'s Secrets,
        open_task: OpenTask,
        remote: Arc<Remote>,
    ) -> Progress<'s, 'd> {
        Progress {
            sink,
            secrets,
            open_task,
            remote,
            task_id: None,
            context_id: None,
            state: State::Running,
            artifact: None,
            status_text: String::new(),
            truncated: false,
        }
    }

    /// Nothing came back yet (a retry cannot repeat text).
    fn nothing_yet(&self) -> bool {
        self.sink.text.is_empty() && self.task_id.is_none()
    }

    fn ids(&mut self, task_id: &str, context_id: &str) {
        if let Some(id) = wire::plain_id(context_id) {
            self.context_id = Some(id.to_string());
        }
        if let Some(id) = wire::plain_id(task_id)
            && self.task_id.as_deref() != Some(id)
        {
            self.task_id = Some(id.to_string());
            if let Ok(mut open) = self.open_task.lock() {
                *open = Some((Arc::clone(&self.remote), id.to_string()));
            }
        }
    }

    /// Text from the agent: cleaned, redacted, within the limit, then streamed.
    fn push(&mut self, text: &str) {
        if text.is_empty() || self.truncated {
            return;
        }
        let clean = sanitize::editable(text);
        let clean = self.secrets.redact(&clean).into_owned();
        let room = MAX_TEXT_BYTES.saturating_sub(self.sink.text.len());
        if clean.len() > room {
            let mut end = room;
            while !clean.is_char_boundary(end) {
                end -= 1;
            }
            self.sink.push(&clean[..end]);
            self.sink
                .push("\n[... the remote agent sent more; huddle keeps 1 MiB of a turn]");
            self.truncated = true;
            return;
        }
        self.sink.push(&clean);
    }

    fn artifact(&mut self, artifact: &wire::Artifact, append: bool) {
        let same = self.artifact.as_deref() == Some(artifact.artifact_id.as_str());
        let continues = append && same;
        if !continues && !self.sink.text.is_empty() {
            self.push("\n\n");
        }
        self.artifact = Some(artifact.artifact_id.clone());
        let text = wire::parts_text(&artifact.parts);
        self.push(&text);
    }

    fn status(&mut self, status: &wire::TaskStatus) {
        self.state = State::parse(&status.state);
        if !self.state.ends_turn() {
            return;
        }
        let said = status
            .message
            .as_ref()
            .map(|m| wire::parts_text(&m.parts))
            .unwrap_or_default();
        self.status_text = sanitize::display(&snippet(&said, 500)).into_owned();
        if matches!(self.state, State::InputRequired | State::Completed) && !said.is_empty() {
            if !self.sink.text.is_empty() {
                self.push("\n\n");
            }
            self.push(&said);
        }
    }

    fn take(&mut self, response: StreamResponse) {
        if let Some(task) = response.task {
            self.ids(&task.id, &task.context_id);
            // A task that arrives already ended (a `SendMessage` answer) carries its artifacts.
            if State::parse(&task.status.state).ends_turn() && self.artifact.is_none() {
                for a in &task.artifacts {
                    self.artifact(a, false);
                }
            }
            self.status(&task.status);
        }
        if let Some(message) = response.message {
            self.ids(
                message.task_id.as_deref().unwrap_or(""),
                message.context_id.as_deref().unwrap_or(""),
            );
            if !self.sink.text.is_empty() {
                self.push("\n\n");
            }
            self.push(&wire::parts_text(&message.parts));
            // A bare message is the whole answer.
            self.state = State::Completed;
        }
        if let Some(update) = response.artifact_update {
            self.ids(&update.task_id, &update.context_id);
            self.artifact(&update.artifact, update.append);
        }
        if let Some(update) = response.status_update {
            self.ids(&update.task_id, &update.context_id);
            self.status(&update.status);
        }
    }
}

impl Provider for A2aProvider {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> ProviderKind {
        ProviderKind::A2a
    }
    fn capabilities(&self) -> Capabilities {
        // A remote agent: its tools are its own, a mode's tools go in their text form, it keeps
        // the conversation itself (the A2A context) and it never sees this machine.
        Capabilities {
            runs_own_tools: true,
            text_tools: true,
            reads_repo_instructions: false,
            local_process: false,
            takes_tool_servers: false,
            reports_cost: false,
            redacts_what_it_sends: true,
        }
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

/// The card of an `a2a` provider read now, for `huddle doctor`: its one-line summary and the
/// endpoint, or why it could not be read.
pub async fn probe_card(cfg: &ProviderConfig, options: ProviderOptions) -> Result<(String, String), String> {
    let provider = A2aProvider::new(cfg, options).map_err(|e| e.message)?;
    let remote = provider.read_card().await.map_err(|e| e.message)?;
    Ok((remote.card.summary(), remote.endpoint.to_string()))
}

/// The card of an `a2a` provider read now, in the words of a session's header
/// ([`AgentCard::header`]), or why it could not be read.
pub async fn card_header(cfg: &ProviderConfig, options: ProviderOptions) -> Result<String, String> {
    let provider = A2aProvider::new(cfg, options).map_err(|e| e.message)?;
    let remote = provider.read_card().await.map_err(|e| e.message)?;
    Ok(remote.card.header())
}
