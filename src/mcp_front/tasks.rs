//! MCP Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663, as rmcp 3.11 serves it):
//! `run_team` called with the extension in the request's capabilities (protocol 2026-07-28)
//! answers at once with a task; `tasks/get` then says `working` (its status message the run's
//! last progress line), `input_required` while a tool approval or relay draft waits for the
//! client (the question in `inputRequests`, answered with `tasks/update`), and at the end
//! `completed` with the same result a blocking call gives, or `cancelled` after `tasks/cancel`
//! stopped the run. Here: when a call becomes a task, and where a followed run's progress and
//! questions go (a blocking call's client, or its task).

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, PingRequest, ProgressNotificationParam,
    ProgressToken, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext};
use rmcp::task_manager::{TaskContext, TaskExit, TaskOptions};

/// How long a task is kept (from its start): a run still going then leaves its task `failed`
/// (the run goes on in the host; `run_status` follows it), an ended one is kept as long again.
pub const TASK_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// How often a client should poll `tasks/get`.
pub const POLL_INTERVAL_MS: u64 = 1000;

pub fn options() -> TaskOptions {
    TaskOptions::new()
        .with_ttl_ms(TASK_TTL_MS)
        .with_poll_interval_ms(POLL_INTERVAL_MS)
        .with_status_message("the run is starting")
}

/// Whether this call may become a task: the request declares the tasks extension, on a protocol
/// that has it (2026-07-28: SEP-2663 does not apply to sessions opened with `initialize`).
pub fn tasked(context: &RequestContext<RoleServer>) -> bool {
    let modern = context.protocol_version().is_some_and(|v| !v.has_initialize());
    modern
        && context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
}

/// Whether a task of this call may ask its client (form elicitation in the request's
/// capabilities; `elicitation: {}` means form).
pub fn asks_in_task(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|caps| caps.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Where a followed run's progress goes: progress notifications of a blocking call (when the
/// client gave a token), or the status message of a task (`run ID of `GROUP`: ` and the last
/// line, once the run started).
pub enum Via {
    Call {
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        count: u32,
        /// When the call began and when it last said something (for the heartbeat).
        began: tokio::time::Instant,
        said: tokio::time::Instant,
    },
    Task {
        task: TaskContext,
        run: Option<String>,
    },
}

impl Via {
    pub fn call(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let now = tokio::time::Instant::now();
        Self::Call {
            peer,
            token,
            count: 0,
            began: now,
            said: now,
        }
    }

    pub fn task(task: TaskContext) -> Self {
        Self::Task { task, run: None }
    }

    /// The run started (the first progress notification of a call).
    pub async fn started(&mut self, run_id: &str, group: &str) {
        let run = format!("run {run_id} of `{group}`");
        match self {
            Self::Call { .. } => self.say(format!("{run} started")).await,
            Self::Task { task, run: named } => {
                task.set_status_message(format!("{run}: started"));
                *named = Some(run);
            }
        }
    }

    pub async fn say(&mut self, message: String) {
        match self {
            Self::Call {
                peer,
                token,
                count,
                said,
                ..
            } => {
                let Some(token) = token else { return };
                *count += 1;
                *said = tokio::time::Instant::now();
                let param =
                    ProgressNotificationParam::new(token.clone(), f64::from(*count)).with_message(message);
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!(error = %e, "a progress notification was not sent");
                }
            }
            Self::Task { task, run } => task.set_status_message(match run {
                Some(run) => format!("{run}: {message}"),
                None => message,
            }),
        }
    }

    /// Resolves once a blocking call has said nothing for `quiet`: then [`Via::heartbeat`]
    /// says it still runs, so a client's idle timeout (Claude Code resets its timer on
    /// progress) does not cancel a call whose model thinks for minutes or that waits for a rate
    /// limit, and an HTTP session's idle timeout does not end a session whose call goes on. A
    /// task (polled) never resolves.
    pub async fn quiet(&self, quiet: std::time::Duration) {
        match self {
            Self::Call { said, .. } => tokio::time::sleep_until(*said + quiet).await,
            Self::Task { .. } => std::future::pending().await,
        }
    }

    /// The heartbeat: a progress line (the run still goes, and for how long) to a call with a
    /// progress token; a `ping` to one without (it has nothing else to say it lives, and over
    /// HTTP its session would end once idle for the keep-alive, answer and all).
    pub async fn heartbeat(&mut self, quiet: std::time::Duration) {
        match self {
            Self::Call {
                token: Some(_),
                began,
                ..
            } => {
                let line = still_running(began.elapsed());
                self.say(line).await;
            }
            Self::Call {
                token: None,
                peer,
                said,
                ..
            } => {
                *said = tokio::time::Instant::now();
                let peer = peer.clone();
                // Not waited for: a client that never answers must not hold the run's answer.
                tokio::spawn(async move {
                    let ping = ServerRequest::PingRequest(PingRequest::default());
                    match peer
                        .send_cancellable_request(ping, PeerRequestOptions::with_timeout(quiet))
                        .await
                    {
                        Ok(handle) => {
                            if let Err(e) = handle.await_response().await {
                                tracing::debug!(error = %e, "a heartbeat ping was not answered");
                            }
                        }
                        Err(e) => tracing::debug!(error = %e, "a heartbeat ping was not sent"),
                    }
                });
            }
            Self::Task { .. } => {}
        }
    }

    /// Whom the run's questions are asked of.
    pub fn asker(&self) -> Asker {
        match self {
            Self::Call { peer, .. } => Asker::Peer(peer.clone()),
            Self::Task { task, .. } => Asker::Task(task.clone()),
        }
    }

    /// Whether the client cancelled the task (`tasks/cancel`).
    pub fn cancel_requested(&self) -> bool {
        match self {
            Self::Task { task, .. } => task.is_cancel_requested(),
            Self::Call { .. } => false,
        }
    }

    /// Resolves when the client cancelled the task (`tasks/cancel`); never for a blocking call
    /// (its cancel leaves the run going).
    pub async fn cancelled(&self) {
        match self {
            Self::Task { task, .. } => task.cancelled().await,
            Self::Call { .. } => std::future::pending().await,
        }
    }
}

/// `still running (4m05s)`.
fn still_running(elapsed: std::time::Duration) -> String {
    let secs = elapsed.as_secs();
    format!("still running ({}m{:02}s)", secs / 60, secs % 60)
}

/// Asks the client a question: an elicitation request of a blocking call, or an input request
/// of a task (`input_required` until `tasks/update` answers it).
#[derive(Clone)]
pub enum Asker {
    Peer(Peer<RoleServer>),
    Task(TaskContext),
}

impl Asker {
    /// The client's answer; `key` names the question in a task (unique over its life).
    pub async fn elicit(&self, key: String, params: ElicitRequestParams) -> Result<ElicitResult, String> {
        match self {
            Self::Peer(peer) => peer.create_elicitation(params).await.map_err(|e| e.to_string()),
            Self::Task(task) => {
                let request = InputRequest::Elicitation(ElicitRequest::new(params));
                match task.request_input(key, request).await {
                    Ok(answer) => serde_json::from_value(answer)
                        .map_err(|e| format!("the client's answer is not an elicitation result: {e}")),
                    Err(TaskExit::Cancelled) => Err("the task was cancelled".into()),
                    Err(TaskExit::Error(e)) => Err(e.message.to_string()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_heartbeat_says_how_long_the_run_has_gone() {
        let line = super::still_running(std::time::Duration::from_secs(245));
        assert_eq!(line, "still running (4m05s)");
    }
}
