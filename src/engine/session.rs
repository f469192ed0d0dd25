//! A session is an actor: one task with a queue that runs one turn at a time, so a session can
//! never have two turns in flight. A turn streams deltas as events and ends with exactly one
//! [`TurnResult`]; the session is idle again before anyone is told the turn finished.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::model::{Message, MessageRole, Role, Usage};
use crate::providers::{ChatMessage, ChatRole, ErrorKind, TurnRequest};

use super::EngineShared;
use super::events::{EngineEvent, EventKind, RunId};

/// How much earlier conversation a turn carries (the newest part is kept).
const HISTORY_MAX_CHARS: usize = 120_000;
const HISTORY_MAX_MESSAGES: usize = 40;

/// How a turn runs: in which run, for which iteration, with what limits.
#[derive(Debug, Clone, Default)]
pub struct TurnOptions {
    /// The run the turn belongs to (its events carry the id).
    pub run_id: Option<RunId>,
    pub iteration: Option<u32>,
    pub cancel: CancellationToken,
    pub timeout: Option<Duration>,
    /// A model slug used instead of the session's own for this turn (`huddle run --model`).
    pub model_override: Option<String>,
}

/// One queued turn.
pub struct TurnJob {
    pub prompt: String,
    pub options: TurnOptions,
    pub reply: oneshot::Sender<TurnResult>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub session: String,
    pub text: String,
    pub success: bool,
    /// The answer was cut short; `text` holds what arrived.
    pub interrupted: bool,
    pub error: Option<String>,
    pub error_kind: Option<ErrorKind>,
    pub usage: Option<Usage>,
    pub duration: Duration,
    pub simulated: bool,
    pub model: String,
}

impl TurnResult {
    pub fn failed(session: &str, error: String, kind: Option<ErrorKind>) -> TurnResult {
        TurnResult {
            session: session.to_string(),
            text: String::new(),
            success: false,
            interrupted: false,
            error: Some(error),
            error_kind: kind,
            usage: None,
            duration: Duration::ZERO,
            simulated: false,
            model: String::new(),
        }
    }

    pub fn cancelled(&self) -> bool {
        self.error_kind == Some(ErrorKind::Cancelled)
    }

    /// The answer for a prompt of someone downstream: the text, or the error for a failed turn.
    pub fn text_or_error(&self) -> String {
        match (&self.error, self.text.trim().is_empty()) {
            (Some(e), true) => format!("(failed: {e})"),
            (Some(e), false) => format!("{}\n\n(interrupted: {e})", self.text),
            (None, _) => self.text.clone(),
        }
    }
}

/// The sending side of a session's queue.
pub type SessionQueue = mpsc::UnboundedSender<TurnJob>;

/// Starts the actor of `session_id`; it lives as long as its queue has senders.
pub(crate) fn spawn(shared: Arc<EngineShared>, session_id: String) -> SessionQueue {
    let (tx, mut rx) = mpsc::unbounded_channel::<TurnJob>();
    tokio::spawn(async move {
        let mut actor = Actor {
            shared,
            session_id,
            history: None,
            generation: 0,
        };
        while let Some(job) = rx.recv().await {
            actor.run(job).await;
        }
        tracing::debug!("session actor ended");
    });
    tx
}

struct Actor {
    shared: Arc<EngineShared>,
    session_id: String,
    /// The conversation, loaded from the transcript on the first turn.
    history: Option<Vec<ChatMessage>>,
    generation: u64,
}

/// What a turn needs to know about its session, read once at its start.
struct SessionInfo {
    name: String,
    group_id: String,
    group: String,
    role: Role,
    model: String,
    system: Option<String>,
    working_dir: Option<std::path::PathBuf>,
}

impl Actor {
    fn info(&self) -> Option<SessionInfo> {
        self.shared.org.read(|org| {
            let s = org.session(&self.session_id)?;
            let group = org.group(&s.group_id);
            Some(SessionInfo {
                name: s.name.clone(),
                group_id: s.group_id.clone(),
                group: group.map(|g| g.name.clone()).unwrap_or_default(),
                role: s.role,
                model: s.model.clone(),
                system: s.system_prompt.clone().filter(|p| !p.trim().is_empty()),
                working_dir: s.repo.clone().or_else(|| group.and_then(|g| g.repo.clone())),
            })
        })
    }

    /// The conversation, read from the transcript on the session's first turn: on a blocking
    /// thread, through the transcript writer (so queued lines are in it), never holding up the
    /// runtime's threads.
    async fn load_history(&mut self) {
        if self.history.is_some() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let id = self.session_id.clone();
        let loaded = tokio::task::spawn_blocking(move || shared.writer.load(&shared.transcripts, &id)).await;
        let history = match loaded {
            Ok(Ok(loaded)) => loaded
                .messages
                .into_iter()
                .filter(|m| m.error.is_none() && !m.text.trim().is_empty())
                .filter_map(|m| match m.role {
                    MessageRole::User => Some(ChatMessage::user(m.text)),
                    MessageRole::Assistant => Some(ChatMessage::assistant(m.text)),
                    _ => None,
                })
                .collect(),
            Ok(Err(e)) => {
                tracing::warn!(session = %self.session_id, error = %e, "cannot read transcript; starting without history");
                Vec::new()
            }
            Err(e) => {
                tracing::warn!(session = %self.session_id, error = %e, "transcript read did not finish; starting without history");
                Vec::new()
            }
        };
        self.history = Some(history);
    }

    fn history(&mut self) -> &mut Vec<ChatMessage> {
        self.history.get_or_insert_with(Vec::new)
    }

    /// One event of this session's turn.
    fn emit(&self, info: &SessionInfo, run_id: &Option<RunId>, kind: EventKind) {
        self.shared.events.emit(EngineEvent {
            group_id: info.group_id.clone(),
            group: info.group.clone(),
            run_id: run_id.clone(),
            kind,
        });
    }

    async fn run(&mut self, job: TurnJob) {
        let TurnJob {
            prompt,
            options,
            reply,
        } = job;
        let result = self.turn(prompt, &options).await;
        // Idle again (the loop takes the next job) before the caller hears of the result.
        self.shared.turn_done(&self.session_id);
        let _ = reply.send(result);
    }

    async fn turn(&mut self, prompt: String, options: &TurnOptions) -> TurnResult {
        self.generation += 1;
        let generation = self.generation;
        let Some(info) = self.info() else {
            return TurnResult::failed(
                &self.session_id,
                "the session no longer exists".into(),
                Some(ErrorKind::Config),
            );
        };
        let slug = options
            .model_override
            .clone()
            .unwrap_or_else(|| info.model.clone());
        self.load_history().await;
        let mut messages = bounded_history(self.history());
        messages.push(ChatMessage::user(prompt.clone()));

        let mut user = Message::user(prompt.clone());
        user.iteration = options.iteration;
        self.shared.writer.append(&self.session_id, user.clone());
        self.emit(
            &info,
            &options.run_id,
            EventKind::TurnStarted {
                session_id: self.session_id.clone(),
                session: info.name.clone(),
                generation,
                prompt: Some(Box::new(user)),
            },
        );

        let started = Instant::now();
        let request = TurnRequest {
            model: String::new(),
            system: info.system.clone(),
            messages,
            working_dir: info.working_dir.clone(),
            turn_timeout: options.timeout,
        };
        let outcome = match self.shared.providers.for_slug(&slug) {
            Ok((provider, model)) => {
                let request = TurnRequest { model, ..request };
                let mut forward = |delta: &str| {
                    self.emit(
                        &info,
                        &options.run_id,
                        EventKind::Delta {
                            session_id: self.session_id.clone(),
                            session: info.name.clone(),
                            generation,
                            text: delta.to_string(),
                        },
                    )
                };
                provider
                    .stream_turn(request, &mut forward, options.cancel.clone())
                    .await
            }
            Err(e) => Err(e),
        };

        let mut result = match outcome {
            Ok(out) => TurnResult {
                session: info.name.clone(),
                text: out.text,
                success: true,
                interrupted: false,
                error: None,
                error_kind: None,
                usage: out.usage,
                duration: out.duration,
                simulated: out.simulated,
                model: slug.clone(),
            },
            Err(e) => TurnResult {
                session: info.name.clone(),
                interrupted: !e.partial_text.is_empty() || e.kind == ErrorKind::Cancelled,
                text: e.partial_text.clone(),
                success: false,
                error: Some(e.to_string()),
                error_kind: Some(e.kind),
                usage: None,
                duration: started.elapsed(),
                simulated: slug.starts_with("sim/"),
                model: slug.clone(),
            },
        };
        if result.duration.is_zero() {
            result.duration = started.elapsed();
        }
        self.record(&info, &prompt, options, &result, generation);
        result
    }

    fn record(
        &mut self,
        info: &SessionInfo,
        prompt: &str,
        options: &TurnOptions,
        result: &TurnResult,
        generation: u64,
    ) {
        let mut answer = Message::new(MessageRole::Assistant, result.text.clone());
        answer.model = Some(result.model.clone());
        answer.usage = result.usage;
        answer.duration_ms = Some(result.duration.as_millis() as u64);
        answer.interrupted = result.interrupted;
        answer.error = result.error.clone();
        answer.iteration = options.iteration;
        self.shared.writer.append(&self.session_id, answer.clone());

        if result.success && !result.text.trim().is_empty() {
            let history = self.history();
            history.push(ChatMessage::user(prompt.to_string()));
            history.push(ChatMessage::assistant(result.text.clone()));
            // Only the newest part is ever sent; the transcript on disk keeps everything.
            if history.len() > 2 * HISTORY_MAX_MESSAGES {
                history.drain(..history.len() - HISTORY_MAX_MESSAGES);
            }
        }
        if let Some(usage) = result.usage {
            let id = &self.session_id;
            self.shared.org.update(|org| {
                let group_id = org.session_mut(id).map(|s| {
                    s.usage.add(usage);
                    s.group_id.clone()
                });
                if let Some(g) = group_id.and_then(|gid| org.group_mut(&gid)) {
                    g.usage.add(usage);
                }
            });
        }
        self.emit(
            info,
            &options.run_id,
            EventKind::TurnFinished {
                session_id: self.session_id.clone(),
                session: info.name.clone(),
                generation,
                success: result.success,
                interrupted: result.interrupted,
                duration_ms: result.duration.as_millis() as u64,
                usage: result.usage,
                error: result.error.clone(),
                message: Some(Box::new(answer)),
            },
        );
        if !result.text.is_empty() {
            self.emit(
                info,
                &options.run_id,
                EventKind::Message {
                    session_id: self.session_id.clone(),
                    session: info.name.clone(),
                    role: info.role,
                    text: result.text.clone(),
                },
            );
        }
    }
}

/// The newest part of the conversation that fits the budget, starting on a user message.
fn bounded_history(history: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut total = 0;
    let mut start = history.len();
    for (i, m) in history.iter().enumerate().rev().take(HISTORY_MAX_MESSAGES) {
        total += m.content.len();
        if total > HISTORY_MAX_CHARS {
            break;
        }
        start = i;
    }
    while start < history.len() && history[start].role != ChatRole::User {
        start += 1;
    }
    history[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_the_newest_turns_and_starts_with_a_user_message() {
        let big = "x".repeat(HISTORY_MAX_CHARS / 2);
        let history = vec![
            ChatMessage::user(big.clone()),
            ChatMessage::assistant(big.clone()),
            ChatMessage::user("q"),
            ChatMessage::assistant("a"),
        ];
        let kept = bounded_history(&history);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].content, "q");
        assert_eq!(bounded_history(&history[2..]).len(), 2);
        assert!(bounded_history(&[]).is_empty());
        let many: Vec<ChatMessage> = (0..500)
            .flat_map(|k| {
                [
                    ChatMessage::user(format!("q{k}")),
                    ChatMessage::assistant(format!("a{k}")),
                ]
            })
            .collect();
        let kept = bounded_history(&many);
        assert_eq!(kept.len(), HISTORY_MAX_MESSAGES);
        assert_eq!(kept.last().unwrap().content, "a499");
    }
}
