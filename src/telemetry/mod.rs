//! OpenTelemetry export (config.yaml `telemetry:`): every run's events become spans after the
//! GenAI semantic conventions ([`spans`]) and go to an OTLP/HTTP collector as protobuf
//! ([`otlp`]) when the run ends.
//!
//! Off the hot path: the engine's sink hands each run event to [`Telemetry::observe`], which
//! only queues it (a bounded queue; an event that does not fit is dropped and counted, never
//! waited for). One thread of its own folds the events and posts each ended run's spans with
//! short timeouts; a collector that is down, slow or refuses costs a warning in the log (with
//! the spans dropped so far), never a run's time or result. [`Telemetry::flush`] (called when the
//! engine flushes, e.g. before `huddle run` exits) waits a bounded time for the queue to be sent.

pub mod otlp;
pub mod spans;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::{TelemetryContent, TelemetryProtocol, TelemetrySettings};
use crate::engine::RunObserver;
use crate::engine::events::{EngineEvent, EventKind};

/// Events waiting to be folded; more are dropped (and counted).
const QUEUE: usize = 4096;
/// The longest a POST to the collector may take (connecting included).
const POST_TIMEOUT: Duration = Duration::from_secs(3);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest [`Telemetry::flush`] waits.
const FLUSH_WAIT: Duration = Duration::from_secs(4);
/// Runs followed at once; the oldest is dropped beyond (a run that never ends).
const MAX_RUNS: usize = 64;

enum Msg {
    Event(Box<EngineEvent>, u64),
    Flush(mpsc::Sender<()>),
}

/// The exporter: a queue in front of its thread.
pub struct Telemetry {
    tx: SyncSender<Msg>,
    dropped: std::sync::Arc<AtomicU64>,
}

/// Nanoseconds since the Unix epoch.
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Where spans go: the endpoint with `/v1/traces` added (unless it has it).
pub fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

/// The HTTP client spans are posted with: `headers_env`'s headers and the protocol's content
/// type. `Err`: a variable not set or not a header value (said in words).
fn client(settings: &TelemetrySettings) -> Result<reqwest::Client, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, var) in &settings.headers_env {
        let value = std::env::var(var)
            .map_err(|_| format!("telemetry: headers_env.{name}: environment variable {var} is not set"))?;
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("telemetry: headers_env: `{name}` is not a header name"))?;
        let value = reqwest::header::HeaderValue::from_str(&value).map_err(|_| {
            format!("telemetry: headers_env.{name}: the value of {var} is not a valid header value")
        })?;
        headers.insert(name, value);
    }
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static(match settings.protocol {
            TelemetryProtocol::HttpProtobuf => "application/x-protobuf",
            TelemetryProtocol::HttpJson => "application/json",
        }),
    );
    reqwest::Client::builder()
        .timeout(POST_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .default_headers(headers)
        .build()
        .map_err(|e| format!("telemetry: {e}"))
}

/// `huddle doctor`'s check: posts an export with no spans, as the exporter would. `Ok`: what
/// the collector answered; `Err`: why it would drop spans (said in words).
pub async fn check(settings: &TelemetrySettings) -> Result<String, String> {
    let Some(endpoint) = settings.otlp_endpoint.as_deref() else {
        return Err("no otlp_endpoint".into());
    };
    let body = match settings.protocol {
        TelemetryProtocol::HttpProtobuf => otlp::encode(&[]),
        TelemetryProtocol::HttpJson => otlp::encode_json(&[]),
    };
    match client(settings)?
        .post(traces_url(endpoint))
        .body(body)
        .send()
        .await
    {
        Ok(r) if r.status().is_success() => Ok(format!("the collector accepts spans ({})", r.status())),
        Ok(r) => Err(format!("the collector answered {}", r.status())),
        Err(e) if e.is_timeout() => Err("the collector did not answer in time".into()),
        Err(e) if e.is_connect() => Err("cannot connect to the collector".into()),
        Err(_) => Err("the request failed".into()),
    }
}

impl Telemetry {
    /// Starts the exporter when `settings` name an endpoint. `Err`: it could not start (said
    /// in words; the caller logs it and runs without).
    pub fn start(settings: &TelemetrySettings) -> Result<Option<std::sync::Arc<Telemetry>>, String> {
        let Some(endpoint) = settings.otlp_endpoint.as_deref() else {
            return Ok(None);
        };
        let client = client(settings)?;
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let dropped = std::sync::Arc::new(AtomicU64::new(0));
        let worker = Worker {
            url: traces_url(endpoint),
            client,
            protocol: settings.protocol,
            content: settings.content == TelemetryContent::On,
            dropped: std::sync::Arc::clone(&dropped),
            runs: HashMap::new(),
            order: Vec::new(),
        };
        std::thread::Builder::new()
            .name("huddle-telemetry".into())
            .spawn(move || worker.run(rx))
            .map_err(|e| format!("telemetry: cannot start its thread: {e}"))?;
        Ok(Some(std::sync::Arc::new(Telemetry { tx, dropped })))
    }

    /// Events and spans dropped so far (a full queue, a collector that failed).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl RunObserver for Telemetry {
    fn observe(&self, event: &EngineEvent) {
        match self.tx.try_send(Msg::Event(Box::new(event.clone()), now_ns())) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn flush(&self) {
        let (ack, done) = mpsc::channel();
        // A full queue skips the flush rather than wait for room.
        if self.tx.try_send(Msg::Flush(ack)).is_ok() {
            let _ = done.recv_timeout(FLUSH_WAIT);
        }
    }
}

struct Worker {
    url: String,
    client: reqwest::Client,
    protocol: TelemetryProtocol,
    content: bool,
    dropped: std::sync::Arc<AtomicU64>,
    runs: HashMap<String, spans::RunSpans>,
    /// Run ids in the order they began (to drop the oldest beyond [`MAX_RUNS`]).
    order: Vec<String>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Msg>) {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                tracing::warn!("telemetry: cannot start: {e}; no spans are exported");
                return;
            }
        };
        while let Ok(msg) = rx.recv() {
            match msg {
                Msg::Event(event, at) => {
                    if let Some(spans) = self.fold(&event, at) {
                        runtime.block_on(self.post(spans));
                    }
                }
                Msg::Flush(ack) => {
                    let _ = ack.send(());
                }
            }
        }
    }

    /// Folds the event in; the run's spans when it ended.
    fn fold(&mut self, event: &EngineEvent, at: u64) -> Option<Vec<spans::Span>> {
        let run_id = event.run_id.as_deref()?;
        if !self.runs.contains_key(run_id) {
            if self.order.len() >= MAX_RUNS {
                let oldest = self.order.remove(0);
                self.runs.remove(&oldest);
                tracing::warn!("telemetry: run {oldest} never ended; its spans are dropped");
            }
            self.order.push(run_id.to_string());
            self.runs
                .insert(run_id.to_string(), spans::RunSpans::new(run_id, self.content));
        }
        let run = self.runs.get_mut(run_id)?;
        run.apply(event, at);
        if !matches!(event.kind, EventKind::RunEnded { .. }) {
            return None;
        }
        self.order.retain(|r| r != run_id);
        self.runs.remove(run_id).map(|r| r.finish(at))
    }

    async fn post(&self, spans: Vec<spans::Span>) {
        let count = spans.len() as u64;
        let body = match self.protocol {
            TelemetryProtocol::HttpProtobuf => otlp::encode(&spans),
            TelemetryProtocol::HttpJson => otlp::encode_json(&spans),
        };
        let failure = match self.client.post(&self.url).body(body).send().await {
            Ok(r) if r.status().is_success() => None,
            Ok(r) => Some(format!("the collector answered {}", r.status())),
            Err(e) if e.is_timeout() => Some("the collector did not answer in time".to_string()),
            Err(e) if e.is_connect() => Some("cannot connect to the collector".to_string()),
            Err(_) => Some("the request failed".to_string()),
        };
        if let Some(why) = failure {
            let total = self.dropped.fetch_add(count, Ordering::Relaxed) + count;
            tracing::warn!(
                "telemetry: {why} at {}: {count} spans dropped ({total} so far)",
                self.url
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_once() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
    }

    #[test]
    fn without_an_endpoint_nothing_starts_and_a_missing_header_variable_is_said() {
        assert!(matches!(
            Telemetry::start(&TelemetrySettings::default()),
            Ok(None)
        ));
        let mut settings = TelemetrySettings {
            otlp_endpoint: Some("http://127.0.0.1:9".into()),
            ..TelemetrySettings::default()
        };
        settings
            .headers_env
            .insert("Authorization".into(), "HUDDLE_TEST_UNSET_VARIABLE_X".into());
        let err = Telemetry::start(&settings).err().unwrap_or_default();
        assert!(err.contains("HUDDLE_TEST_UNSET_VARIABLE_X is not set"), "{err}");
    }
}
