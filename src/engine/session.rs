//! A session runs one turn at a time: its turns wait for its state in the order they were
//! submitted, so a session can never have two turns in flight. A turn runs in the task of
//! whoever asked for it, streams deltas as events and ends with exactly one [`TurnResult`]; the
//! session is idle again before anyone is told the turn finished.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::hooks::HookEvent;
use crate::model::{AgentSession, Cost, Message, MessageRole, Role, ToolChoice, ToolResultInfo, Usage};
use crate::providers::{ChatMessage, ChatRole, ErrorKind, TurnRequest};
use crate::tools::Offer;
use crate::tools::limits::{result_line, rounds_exhausted_note};

use super::EngineShared;
use super::agent_steps::{AgentRecorder, StepContext};
use super::budget::Spent;
pub use super::chat_history::chat_history;
use super::events::{EngineEvent, EventKind, ExecutionTag, RunId, SharedStr};
use super::guard::Guard;
use super::lent_tools::{Joined, TurnHooks, TurnTools};
use super::tool_round::{CallContext, Lent};

fn sum_usage(total: Option<Usage>, more: Option<Usage>) -> Option<Usage> {
    match (total, more) {
        (None, more) => more,
        (Some(t), None) => Some(t),
        (Some(mut t), Some(m)) => {
            t.add(m);
            Some(t)
        }
    }
}

/// How a turn's model → tools → model loop ended: the final answer (or the failure), the
/// messages stored on the way, and what its requests cost (`None`: unknown).
type LoopEnd = (
    Result<crate::providers::TurnOutput, crate::providers::ProviderError>,
    Vec<Message>,
    Option<f64>,
);

/// How much earlier conversation a turn carries (the newest part is kept).
const HISTORY_MAX_CHARS: usize = 120_000;
/// `sandbox_denied` events from one CLI agent turn (its own tool results, its output), at most.
const DENIALS_PER_TURN: usize = crate::providers::SANDBOX_DENIALS_PER_TURN;
const HISTORY_MAX_MESSAGES: usize = 40;

/// How a turn runs: in which run, for which iteration, with what limits.
#[derive(Debug, Clone, Default)]
pub struct TurnOptions {
    /// The run the turn belongs to (its events carry the id).
    pub run_id: Option<SharedStr>,
    pub iteration: Option<u32>,
    pub cancel: CancellationToken,
    pub timeout: Option<Duration>,
    /// A model slug used instead of the session's own for this turn (`huddle run --model`).
    pub model_override: Option<String>,
    /// Files sent with the prompt (the transcript keeps their path, size and hash).
    pub attachments: Vec<crate::attachments::Attachment>,
    /// Send only the system prompt and this prompt, not the session's earlier conversation
    /// (the prompt carries what the turn needs, e.g. a relay driver's folded history).
    pub fresh: bool,
    /// Put on the stored prompt message (a relayed message's trace id and hop count, a direct
    /// chat's mark).
    pub stamp: Option<PromptStamp>,
    /// The turn sees only what its run said so far (a team with `memory: run`), not the
    /// session's earlier conversation.
    pub history_from_run_start: bool,
    /// Built-in tools a mode lends the turn and what it adds before each model call (read back
    /// by the mode after the turn). Not lent to a provider that takes no tool declarations.
    pub hooks: Option<TurnHooks>,
    /// Added to the session's system prompt for this turn (a dispatch catalog, a sub-agent's
    /// focus block).
    pub system_extra: Option<String>,
    /// The execution the turn is part of: its events and messages carry it.
    pub execution: Option<ExecutionTag>,
    /// A resumed run's turns that its interrupted run finished: such a turn is answered from
    /// there, not by the model (see `engine/resume.rs`).
    pub(crate) replay: Option<Arc<super::replay::Replay>>,
    /// Only the newest earlier exchanges are sent (a mode's choice for turns that need only
    /// the recent ones, like a long cycle's); see [`stable_window`].
    pub window: Option<Window>,
    /// What the session's conversation keeps of the prompt for its later turns, when that is
    /// less than the prompt: a step's instructions and inputs are sent with the turn that needs
    /// them, and later turns see what was asked and answered. The transcript records both (the
    /// prompt as sent, and this as its `compact` form).
    pub compact: Option<String>,
    /// A chat with the session (not a step of a run): without instructions of its own it is
    /// sent the ones the session's last answered prompt was sent (a team member's brief: the
    /// request, the team and the format, which the compact forms in its conversation leave out).
    pub chat: bool,
}

/// Which of its earlier exchanges a turn is sent (see [`stable_window`]): at most `most`; when
/// there are more, the oldest go `stride` at a time, so what is sent starts the same way for
/// `stride` requests in a row (a prefix a provider can cache, written again at each move).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub most: usize,
    pub stride: usize,
}

impl TurnOptions {
    /// These options for one step of a run: the conversation keeps `prompt`'s compact form and
    /// `brief` is added to the member's system prompt for the turn. Returns the text to send.
    pub fn with_step(
        self,
        prompt: super::protocol::StepPrompt,
        brief: Option<String>,
    ) -> (String, TurnOptions) {
        let options = TurnOptions {
            compact: prompt.compact,
            system_extra: brief,
            ..self
        };
        (prompt.text, options)
    }
}

/// Marks put on a turn's stored prompt message by whoever asked for the turn: the turn applies
/// them without knowing what they are.
#[derive(Clone)]
pub struct PromptStamp(Arc<dyn Fn(&mut Message) + Send + Sync>);

impl PromptStamp {
    pub fn new(stamp: impl Fn(&mut Message) + Send + Sync + 'static) -> PromptStamp {
        PromptStamp(Arc::new(stamp))
    }

    pub fn apply(&self, message: &mut Message) {
        (self.0)(message)
    }
}

impl std::fmt::Debug for PromptStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PromptStamp")
    }
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
    /// What the turn cost in US dollars: a CLI agent's own figure (`total_cost_usd`), else
    /// its tokens at its model's prices (each request priced on its own). `None`: unknown (no
    /// price for the model, or no token counts).
    pub cost_usd: Option<f64>,
    /// Tool calls the model made during the turn.
    pub tool_calls: u32,
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
            cost_usd: None,
            tool_calls: 0,
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

/// A session between turns: its conversation (read from the transcript on its first turn) and
/// its turn count. One per session, behind an async mutex that hands it out first come, first
/// served: a session runs one turn at a time, in the order its turns were submitted.
#[derive(Default)]
pub(crate) struct SessionState {
    history: Option<Vec<ChatMessage>>,
    generation: u64,
    /// Where the history of the run in progress starts: its id and an index into `history`
    /// (for turns that see only their run).
    run_start: Option<(RunId, usize)>,
    /// How many messages from the front of the loaded history were dropped from memory
    /// (a resumed run's start is an index into the whole history, as read from disk).
    dropped: usize,
    /// What the transcript last recorded as added to the system prompt (see
    /// [`Message::instructions`]); read with the history.
    instructions: Option<String>,
    /// How many exchanges of the conversation were dropped from the front of `history` (see
    /// `drop_unsendable`): a window counts exchanges from the conversation's start, so that
    /// dropping what is held changes nothing that is sent.
    dropped_exchanges: usize,
    /// Where what turns sent the whole conversation were last sent starts (an index into
    /// `history`). It stays put from turn to turn, so a session's requests begin with the same
    /// messages (what a prompt cache reads back), and moves only when what it would send
    /// outgrows the limits: then far enough to hold half of them, so it stays put again for a
    /// while (see [`sticky_start`]).
    window: usize,
    /// The same for turns sent only their run.
    run_window: usize,
    /// The transcript ends with a mark taking back its last exchange (regenerate, edit and
    /// send again): the next prompt asks it again, sent the instructions it was sent then.
    asking_again: bool,
    /// The session's id and name and its group's, as the last turn's events shared them:
    /// the next turn shares them again unless one changed (a rename), not made anew.
    names: Option<TurnNames>,
}

/// The names a turn's events carry (see [`SessionState`]'s `names`).
#[derive(Clone)]
struct TurnNames {
    id: SharedStr,
    name: SharedStr,
    group_id: SharedStr,
    group: SharedStr,
}

impl TurnNames {
    /// These names for a session now called `name` in group `group_id` called `group`: the
    /// ones held where they did not change.
    fn now(held: Option<&TurnNames>, id: &str, name: &str, group_id: &str, group: &str) -> TurnNames {
        let same = |held: Option<&SharedStr>, now: &str| match held {
            Some(held) if **held == *now => SharedStr::clone(held),
            _ => now.into(),
        };
        TurnNames {
            id: same(held.map(|h| &h.id), id),
            name: same(held.map(|h| &h.name), name),
            group_id: same(held.map(|h| &h.group_id), group_id),
            group: same(held.map(|h| &h.group), group),
        }
    }
}

impl SessionState {
    /// Forgets the conversation held in memory: the next turn reads it from the transcript
    /// again (after a new conversation was started there).
    pub(crate) fn forget(&mut self) {
        self.history = None;
        self.run_start = None;
        self.dropped = 0;
        self.instructions = None;
        self.dropped_exchanges = 0;
        self.window = 0;
        self.run_window = 0;
        self.asking_again = false;
    }

    /// Drops the part of the history no turn can be sent any more (older than the newest part
    /// that fits the limits), so what a session holds in memory is at most one window however
    /// long it talks; the transcript on disk keeps everything. Done after every turn: a team of
    /// many members holds every member's window at once, and what it costs is a pass over one
    /// window.
    fn drop_unsendable(&mut self) {
        let Some(history) = &mut self.history else {
            return;
        };
        // Nothing before the newest part that fits the limits is sent again: a window's start
        // before it does not fit, so it moves on past it (see `visible`).
        let dropped = window_start(history);
        if dropped == 0 {
            return;
        }
        self.dropped_exchanges += history[..dropped]
            .iter()
            .filter(|m| m.role == ChatRole::User)
            .count();
        history.drain(..dropped);
        self.dropped += dropped;
        if let Some((_, start)) = &mut self.run_start {
            *start = start.saturating_sub(dropped);
        }
        self.window = self.window.saturating_sub(dropped);
        self.run_window = self.run_window.saturating_sub(dropped);
    }

    /// Folds all but the last `kept` messages of the history into `summary` (a compaction):
    /// the counts of what left the front of the history go on as if it had been dropped.
    fn fold(&mut self, kept: usize, summary: &str) {
        let Some(history) = &mut self.history else {
            return;
        };
        let users = |h: &[ChatMessage]| h.iter().filter(|m| m.role == ChatRole::User).count();
        let users_before = users(history);
        let cut = super::compaction::fold(history, kept, summary);
        self.dropped_exchanges += users_before.saturating_sub(users(history));
        self.dropped += cut.saturating_sub(2);
        let moved = |at: usize| if at < cut { 0 } else { at + 2 - cut };
        if let Some((_, start)) = &mut self.run_start {
            *start = moved(*start);
        }
        // The summary is where what is sent starts now: a new prefix for the prompt cache.
        self.window = moved(self.window);
        self.run_window = moved(self.run_window);
    }

    /// What a turn is sent of the history: everything since the conversation began, or with
    /// `from_run_start` only what was said since the run began; with a `window`, only the
    /// newest exchanges (see [`stable_window`]).
    ///
    /// A resumed run began where its interrupted run did (`resumed_start`).
    fn visible(
        &mut self,
        run_id: Option<&str>,
        from_run_start: bool,
        resumed_start: Option<usize>,
        window: Option<Window>,
    ) -> Vec<ChatMessage> {
        let shown = self.shown(run_id, from_run_start, resumed_start, window);
        shown.to_vec()
    }

    /// [`SessionState::visible`] without the copy: what a turn would be sent of the history,
    /// where it lies (the window moves as the copy's would).
    fn shown(
        &mut self,
        run_id: Option<&str>,
        from_run_start: bool,
        resumed_start: Option<usize>,
        window: Option<Window>,
    ) -> &[ChatMessage] {
        let (from, run_start) = self.sent_from(run_id, from_run_start, resumed_start, window);
        if let Some(run_start) = run_start {
            self.run_start = Some(run_start);
        }
        let whole = run_id.is_none() || !from_run_start;
        *if whole {
            &mut self.window
        } else {
            &mut self.run_window
        } = from;
        self.history.as_deref().map_or(&[], |h| &h[from..])
    }

    /// Where what a turn is sent of the history starts (see [`SessionState::visible`]), and
    /// the run's start when this is its first turn; changes nothing.
    fn sent_from(
        &self,
        run_id: Option<&str>,
        from_run_start: bool,
        resumed_start: Option<usize>,
        window: Option<Window>,
    ) -> (usize, Option<(RunId, usize)>) {
        let history = self.history.as_deref().unwrap_or_default();
        let mut run_start = None;
        let start = match (run_id, from_run_start) {
            (Some(run), true) => match &self.run_start {
                Some((current, index)) if current.as_str() == run => (*index).min(history.len()),
                _ => {
                    let start = resumed_start
                        .map(|start| start.saturating_sub(self.dropped))
                        .unwrap_or(history.len())
                        .min(history.len());
                    run_start = Some((run.to_string(), start));
                    start
                }
            },
            _ => 0,
        };
        let before = self.dropped_exchanges
            + history[..start]
                .iter()
                .filter(|m| m.role == ChatRole::User)
                .count();
        let shown = match window {
            Some(window) => stable_window(&history[start..], window, before).len(),
            None => history.len() - start,
        };
        let whole = run_id.is_none() || !from_run_start;
        let kept = if whole { self.window } else { self.run_window };
        (sticky_start(history, kept, history.len() - shown), run_start)
    }

    /// The user messages (as kept) a turn with `options` would be sent of the history now.
    fn sent_prompts(&self, options: &TurnOptions, resumed_start: Option<usize>) -> Vec<Arc<str>> {
        if options.fresh {
            return Vec::new();
        }
        let (from, _) = self.sent_from(
            options.run_id.as_deref(),
            options.history_from_run_start,
            resumed_start,
            options.window,
        );
        self.history.as_deref().unwrap_or_default()[from..]
            .iter()
            .filter(|m| m.role == ChatRole::User)
            .map(|m| Arc::clone(&m.content))
            .collect()
    }
}

/// Where what a turn is sent starts: at `kept` (where the previous turn's started) while what
/// follows it is within the limits and no earlier than `earliest` (a window's or a run's
/// start); else the newest half of the limits from there on. Always on a user message (a tool
/// exchange is never cut in half). A prefix that stays put is what a prompt cache reads back.
fn sticky_start(history: &[ChatMessage], kept: usize, earliest: usize) -> usize {
    let from = kept.clamp(earliest, history.len());
    let rest = &history[from..];
    let fits = rest.iter().map(message_chars).sum::<usize>() <= HISTORY_MAX_CHARS
        && rest.iter().filter(|m| m.role != ChatRole::Tool).count() <= HISTORY_MAX_MESSAGES;
    let from = if fits {
        from
    } else {
        from + newest_start(rest, HISTORY_MAX_CHARS / 2, HISTORY_MAX_MESSAGES / 2)
    };
    history[from..]
        .iter()
        .position(|m| m.role == ChatRole::User)
        .map_or(history.len(), |i| from + i)
}

/// The newest exchanges of `history` (an exchange: a user message and what followed it) when
/// it has more than `window.most` of them. The oldest go `window.stride` at a time, so that
/// what is sent starts the same way for several requests in a row (a prefix a provider can
/// cache) rather than one exchange later every time: between `most - stride + 1` and `most`
/// are kept. Where the cuts fall is counted from the conversation's start: `before` exchanges
/// of it precede `history` (not held any more, or before the run's start).
fn stable_window(history: &[ChatMessage], window: Window, before: usize) -> &[ChatMessage] {
    let starts: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == ChatRole::User)
        .map(|(i, _)| i)
        .collect();
    let most = window.most.max(1);
    if starts.len() <= most {
        return history;
    }
    let step = window.stride.clamp(1, most);
    // The first kept exchange, counted from the conversation's start: a multiple of `step`
    // that leaves at least `most - step + 1` exchanges, so at most `most`; past `before`,
    // as more than `most` exchanges follow it.
    let total = before + starts.len();
    let cut = (total - (most - step + 1)) / step * step;
    let first = cut.saturating_sub(before).min(starts.len() - 1);
    &history[starts[first]..]
}

/// A session's state, shared by the turns that wait for it.
pub(crate) type SessionSlot = Arc<tokio::sync::Mutex<SessionState>>;

/// One turn of a session, run in the caller's task once the session's earlier turns are done:
/// no hand-off to a task of the session's own, whose wake-ups (two per turn, across threads)
/// cost more than the turn itself. A caller that stops waiting does not cut the turn short:
/// what is left of it runs on as a task of its own (see [`Detached`]), so every turn that was
/// submitted is run, recorded, reported and counted done, as with a queue.
pub(crate) fn run_turn(
    shared: Arc<EngineShared>,
    slot: SessionSlot,
    session_id: String,
    prompt: String,
    options: TurnOptions,
) -> Detached<TurnResult> {
    Detached::new(async move {
        let mut state = slot.lock().await;
        let mut actor = Actor {
            shared: &shared,
            session_id: &session_id,
            state: &mut state,
            execution: options.execution.clone(),
        };
        // Made in place: a turn's future is kilobytes, and a binding of it before
        // `catch_unwind` kept a second copy in this future's state.
        let result = match std::panic::AssertUnwindSafe(actor.turn(prompt, &options))
            .catch_unwind()
            .await
        {
            Ok(result) => result,
            Err(_) => {
                tracing::error!(session = %session_id, "a turn panicked; the session starts over from its transcript");
                state.forget();
                TurnResult::failed(&session_id, "the session stopped".into(), None)
            }
        };
        // Idle again (the next turn may start) before the caller hears of the result.
        shared.turn_done(&session_id);
        drop(state);
        result
    })
}

/// The user messages (as the conversation keeps them) a turn of the session with `options`
/// would be sent of its earlier conversation if it started now, once the session's earlier
/// turns are done: what a mode's next message need not say again. (A compaction that the turn
/// itself does first is not foreseen.)
pub(crate) async fn sent_prompts(
    shared: Arc<EngineShared>,
    slot: SessionSlot,
    session_id: &str,
    options: &TurnOptions,
) -> Vec<Arc<str>> {
    let mut state = slot.lock().await;
    let mut actor = Actor {
        shared: &shared,
        session_id,
        state: &mut state,
        execution: None,
    };
    actor.load_history().await;
    let resumed_start = options
        .replay
        .as_ref()
        .and_then(|replay| replay.history_start(session_id));
    state.sent_prompts(options, resumed_start)
}

/// A future that, dropped before it finished, runs on to its end as a task of its own (on the
/// runtime it was made on, whichever thread drops it).
pub(crate) struct Detached<T: Send + 'static> {
    future: Option<BoxFuture<'static, T>>,
    runtime: Option<tokio::runtime::Handle>,
}

impl<T: Send + 'static> Detached<T> {
    fn new(future: impl Future<Output = T> + Send + 'static) -> Detached<T> {
        Detached {
            future: Some(Box::pin(future)),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }
}

impl<T: Send + 'static> Future for Detached<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        // Taken out while it is polled: a future that panics is not run on by `drop`.
        let Some(mut future) = self.future.take() else {
            return Poll::Pending;
        };
        match future.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(output),
            Poll::Pending => {
                self.future = Some(future);
                Poll::Pending
            }
        }
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        if let (Some(future), Some(runtime)) = (self.future.take(), &self.runtime) {
            runtime.spawn(future);
        }
    }
}

/// A turn in progress: the session's state, held for the turn.
struct Actor<'a> {
    shared: &'a Arc<EngineShared>,
    session_id: &'a str,
    state: &'a mut SessionState,
    /// The execution the turn is part of (its events and messages carry it).
    execution: Option<ExecutionTag>,
}

/// What a turn needs to know about its session, read once at its start.
struct SessionInfo {
    /// The session's id and name, shared by the events of its turn.
    shared_id: SharedStr,
    name: SharedStr,
    group_id: SharedStr,
    group: SharedStr,
    role: Role,
    model: String,
    system: Option<String>,
    working_dir: Option<std::path::PathBuf>,
    /// MCP servers the session may use.
    tools: Vec<String>,
    max_tool_rounds: Option<u32>,
    /// The CLI agent's own conversation from the last turn.
    agent_session: Option<AgentSession>,
    /// Takes a turn over when the model meets a limit.
    fallback_model: Option<String>,
    /// What it gets of its repository (its team's settings over the config's).
    repo_context: crate::model::RepoContextSettings,
    /// Its sandbox and hooks.
    guard: Guard,
}

impl Actor<'_> {
    fn info(&mut self) -> Option<SessionInfo> {
        let (shared, session_id, held) = (self.shared, self.session_id, &mut self.state.names);
        shared.org.read(|org| {
            let s = org.session(session_id)?;
            let group = org.group(&s.group_id);
            let names = TurnNames::now(
                held.as_ref(),
                &s.id,
                &s.name,
                &s.group_id,
                group.map_or("", |g| g.name.as_str()),
            );
            *held = Some(names.clone());
            Some(SessionInfo {
                shared_id: names.id,
                name: names.name,
                group_id: names.group_id,
                group: names.group,
                role: s.role,
                model: s.model.clone(),
                system: super::protocol::system_prompt_with_note(org, s),
                working_dir: s.working_dir(group),
                tools: s.tools.clone(),
                max_tool_rounds: s.max_tool_rounds,
                agent_session: s.agent_session.clone(),
                fallback_model: s.fallback_model.clone(),
                repo_context: group
                    .map(|g| g.repo_context)
                    .unwrap_or_default()
                    .over(shared.profile(&s.group_id, Some(&s.id)).options.repo_context),
                guard: Guard::of_session(shared, org, s),
            })
        })
    }

    /// The conversation, read from the transcript on the session's first turn: on a blocking
    /// thread, through the transcript writer (so queued lines are in it), never holding up the
    /// runtime's threads.
    async fn load_history(&mut self) {
        if self.state.history.is_some() {
            return;
        }
        let shared = Arc::clone(self.shared);
        let id = self.session_id.to_string();
        let loaded = tokio::task::spawn_blocking(move || shared.writer.load(&shared.transcripts, &id)).await;
        let history = match loaded {
            Ok(Ok(loaded)) => {
                self.state.instructions = recorded_instructions(&loaded.messages);
                self.state.asking_again = loaded.messages.last().is_some_and(|m| m.supersedes.is_some());
                chat_history(&loaded.messages)
            }
            Ok(Err(e)) => {
                tracing::warn!(session = %self.session_id, error = %e, "cannot read transcript; starting without history");
                Vec::new()
            }
            Err(e) => {
                tracing::warn!(session = %self.session_id, error = %e, "transcript read did not finish; starting without history");
                Vec::new()
            }
        };
        self.state.history = Some(history);
        self.state.drop_unsendable();
    }

    fn history(&mut self) -> &mut Vec<ChatMessage> {
        self.state.history.get_or_insert_with(Vec::new)
    }

    /// One event of this session's turn.
    fn emit(&self, info: &SessionInfo, run_id: &Option<SharedStr>, kind: EventKind) {
        self.shared.events.emit(EngineEvent {
            group_id: info.group_id.clone(),
            group: info.group.clone(),
            run_id: run_id.clone(),
            execution: self.execution.clone(),
            kind,
        });
    }

    async fn turn(&mut self, prompt: String, options: &TurnOptions) -> TurnResult {
        self.state.generation += 1;
        let generation = self.state.generation;
        let Some(info) = self.info() else {
            return TurnResult::failed(
                self.session_id,
                "the session no longer exists".into(),
                Some(ErrorKind::Config),
            );
        };
        let slug = options.model_override.as_deref().unwrap_or(&info.model);
        let mut resumed_start = None;
        if let Some(replay) = &options.replay {
            match replay.find(
                self.session_id,
                &crate::attachments::with_references(&prompt, &options.attachments),
            ) {
                super::replay::Found::Answered(stored) => {
                    return self.replayed(&info, *stored, options, generation).await;
                }
                super::replay::Found::Unfinished(prompt_id) => {
                    // Asked again: the unanswered ask is taken back, so it is not sent twice.
                    let mark = Message::superseding(&prompt_id, super::replay::ASKED_AGAIN);
                    self.shared.writer.append(self.session_id, &mark);
                    self.state.forget();
                }
                super::replay::Found::New => {}
            }
            resumed_start = replay.history_start(self.session_id);
        }
        self.load_history().await;
        // A prompt asked again outside the run that asked it (a team member's step), and a
        // chat after a run, are sent the instructions that went with the last prompt: its brief
        // is not in the conversation (the steps are kept in their compact forms).
        let asking_again = std::mem::take(&mut self.state.asking_again);
        let again;
        let options = match &self.state.instructions {
            Some(instructions) if (asking_again || options.chat) && options.system_extra.is_none() => {
                again = TurnOptions {
                    system_extra: Some(instructions.clone()),
                    ..options.clone()
                };
                &again
            }
            _ => options,
        };
        let notes = self.take_notes(&info, options);
        let prompt = with_notes(&notes, prompt);
        let (sent, kept) = crate::attachments::sent_and_kept(prompt, &options.attachments);
        let mut user = Message::user(kept);
        user.compact = options.compact.clone().map(|compact| {
            crate::attachments::with_references(&with_notes(&notes, compact), &options.attachments)
        });
        user.instructions = self.instructions_changed(options.system_extra.as_deref());
        user.iteration = options.iteration;
        user.run_id = options.run_id.as_deref().map(str::to_string);
        user.execution_id = self.execution_id();
        if let Some(stamp) = &options.stamp {
            stamp.apply(&mut user);
        }
        if !options.fresh {
            self.compact_if_due(&info, options, slug, &sent, resumed_start)
                .await;
        }
        let mut messages = if options.fresh {
            Vec::new()
        } else {
            self.state.visible(
                options.run_id.as_deref(),
                options.history_from_run_start,
                resumed_start,
                options.window,
            )
        };
        // Later turns send the prompt as the history keeps it: in other words when that is
        // shorter (a compact form, attachments named instead of included).
        let reworded_prompt = (*sent != *user.history_text()).then_some(messages.len());
        messages.push(ChatMessage::user(Arc::clone(&sent)));
        self.shared.writer.append(self.session_id, &user);
        // The event and the turn share the prompt (it was copied whole for the event).
        let user = Arc::new(user);
        self.emit(
            &info,
            &options.run_id,
            EventKind::TurnStarted {
                session_id: info.shared_id.clone(),
                session: SharedStr::clone(&info.name),
                generation,
                prompt: Some(Arc::clone(&user)),
            },
        );

        let started = Instant::now();
        let profile = self.shared.profile(&info.group_id, Some(self.session_id));
        let outcome = match profile.providers.for_slug(slug) {
            Ok((provider, model)) => {
                let repo = super::repo_context::gather(
                    info.working_dir.clone(),
                    profile.options.skills_dir.clone(),
                    info.repo_context,
                    provider.capabilities(),
                )
                .await;
                let system = joined(
                    [&info.system, &options.system_extra, &repo.system]
                        .into_iter()
                        .flatten(),
                );
                // Shared by the turn's requests (every round and retry sends it).
                let system = (!system.is_empty()).then(|| Arc::<str>::from(system));
                let mut request = TurnRequest {
                    model,
                    system,
                    messages,
                    working_dir: info.working_dir.clone(),
                    turn_timeout: options.timeout,
                    cache_key: Some(self.session_id.to_string()),
                    reworded_prompt,
                    ..TurnRequest::default()
                };
                let extras = LoopExtras {
                    skills: repo.skills,
                    new_instructions: user.instructions.is_some(),
                };
                self.tool_loop(
                    &info,
                    options,
                    generation,
                    provider.as_ref(),
                    &mut request,
                    extras,
                )
                .await
            }
            Err(e) => (Err(e), Vec::new(), None),
        };
        let (outcome, steps, cost_usd) = outcome;
        let tool_calls = steps.iter().map(|m| m.tool_calls.len() as u32).sum();
        let result = match outcome {
            Ok(out) => TurnResult {
                session: info.name.to_string(),
                text: out.text,
                success: true,
                interrupted: false,
                error: None,
                error_kind: None,
                usage: out.usage,
                // From the turn's start (its `turn_started`): the repository's context, tool
                // servers starting, every round and tool; as the run's own clock sees it.
                duration: started.elapsed(),
                simulated: out.simulated,
                model: slug.to_string(),
                cost_usd: out.agent.as_ref().and_then(|a| a.cost_usd).or(cost_usd),
                tool_calls,
            },
            Err(e) => TurnResult {
                session: info.name.to_string(),
                interrupted: !e.partial_text.is_empty()
                    || e.kind == ErrorKind::Cancelled
                    || self.gave_up_on_limit(&e, options),
                text: e.partial_text.clone(),
                success: false,
                error: Some(e.to_string()),
                error_kind: Some(e.kind),
                usage: None,
                duration: started.elapsed(),
                simulated: slug.starts_with("sim/"),
                model: slug.to_string(),
                cost_usd: None,
                tool_calls,
            },
        };
        // The instructions count as given once a turn with them is answered: a failed turn's
        // retry is sent (and records) them again (a resumed agent gets its brief then).
        if result.success
            && let Some(given) = &user.instructions
        {
            self.state.instructions = (!given.is_empty()).then(|| given.clone());
        }
        self.record(&info, &user, steps, options, &result, generation)
            .await;
        if !result.cancelled() {
            self.turn_finished_hooks(&info, options, &result).await;
        }
        result
    }

    /// `error` is a limit the turn's run gave up waiting for: the run is left to be resumed
    /// once it resets, and the turn counts as cut short (asked again then), not failed.
    fn gave_up_on_limit(&self, error: &crate::providers::ProviderError, options: &TurnOptions) -> bool {
        super::limits::waitable(error)
            && self
                .shared
                .active_run(options.run_id.as_deref())
                .is_some_and(|run| run.control.rate_limited().is_some())
    }

    /// A turn the interrupted run finished, answered from its transcript: the tools lent to it
    /// hear the calls it made (a handoff, a broadcast counts again), it is reported as a turn
    /// (its stored messages, so a view that has them skips them) and nothing is written.
    async fn replayed(
        &mut self,
        info: &SessionInfo,
        stored: super::replay::StoredTurn,
        options: &TurnOptions,
        generation: u64,
    ) -> TurnResult {
        let Some(answer) = stored.answer else {
            return TurnResult::failed(self.session_id, "no stored answer".into(), None);
        };
        if let Some(hooks) = &options.hooks {
            let lent: Vec<String> = hooks.0.specs().into_iter().map(|s| s.name).collect();
            for call in stored.steps.iter().flat_map(|m| &m.tool_calls) {
                if lent.contains(&call.name) {
                    let _ = hooks.0.call(call).await;
                }
            }
        }
        let run_id = &options.run_id;
        self.emit(
            info,
            run_id,
            EventKind::TurnStarted {
                session_id: info.shared_id.clone(),
                session: SharedStr::clone(&info.name),
                generation,
                prompt: Some(Arc::new(stored.prompt)),
            },
        );
        self.emit(
            info,
            run_id,
            EventKind::TurnReplayed {
                session_id: self.session_id.to_string(),
                session: info.name.to_string(),
                generation,
            },
        );
        let model = answer.model.clone().unwrap_or_else(|| info.model.clone());
        let duration = std::time::Duration::from_millis(answer.duration_ms.unwrap_or(0));
        let tool_calls = stored.steps.iter().map(|m| m.tool_calls.len() as u32).sum();
        let result = TurnResult {
            session: info.name.to_string(),
            text: answer.text.clone(),
            success: true,
            interrupted: false,
            error: None,
            error_kind: None,
            usage: answer.usage,
            duration,
            simulated: model.starts_with("sim/"),
            model,
            cost_usd: answer.cost_usd,
            tool_calls,
        };
        self.emit(
            info,
            run_id,
            EventKind::TurnFinished {
                session_id: info.shared_id.clone(),
                session: SharedStr::clone(&info.name),
                generation,
                success: true,
                interrupted: false,
                duration_ms: duration.as_millis() as u64,
                usage: answer.usage,
                error: None,
                cost_usd: result.cost_usd,
                message: Some(Arc::new(answer)),
            },
        );
        if !result.text.is_empty() {
            self.emit(
                info,
                run_id,
                EventKind::Message {
                    session_id: info.shared_id.clone(),
                    session: SharedStr::clone(&info.name),
                    role: info.role,
                    text: result.text.clone(),
                },
            );
        }
        result
    }

    /// The turn_finished hooks, with the member's answer; an objection is reported and written
    /// into the transcript (the turn is over: it does not go on, unlike Claude Code's Stop).
    async fn turn_finished_hooks(&self, info: &SessionInfo, options: &TurnOptions, result: &TurnResult) {
        if !info.guard.watches(HookEvent::TurnFinished, None) {
            return;
        }
        let mut input = info.guard.input(
            HookEvent::TurnFinished,
            options.run_id.as_deref(),
            options.iteration,
        );
        input.last_assistant_message = Some(result.text.clone());
        input.outcome = Some(if result.success { "completed" } else { "failed" }.into());
        let emit = |kind| self.emit(info, &options.run_id, kind);
        let feedback = info.guard.after(HookEvent::TurnFinished, &input, &emit).await;
        for (hook, reason) in feedback.objections {
            self.notice(
                info,
                options,
                format!("turn_finished hook `{hook}` objected: {reason}"),
            );
        }
    }

    /// The post_tool_use hooks of the tool calls a CLI agent made itself, once its turn is
    /// over (its stream reports them, but huddle cannot hold them up: the agent runs them).
    /// They see each call and its result; an objection is reported and written into the
    /// transcript, it cannot reach the agent's finished turn.
    async fn agent_steps_hooks(&self, info: &SessionInfo, options: &TurnOptions, steps: &[Message]) {
        if info.guard.hooks.post_tool_use.is_empty() {
            return;
        }
        let calls = steps.iter().flat_map(|m| m.tool_calls.iter());
        for call in calls {
            if !info.guard.watches(HookEvent::PostToolUse, Some(&call.name)) {
                continue;
            }
            let result = steps
                .iter()
                .find(|m| m.tool_result.as_ref().is_some_and(|r| r.call_id == call.id));
            let mut input = info
                .guard
                .input(
                    HookEvent::PostToolUse,
                    options.run_id.as_deref(),
                    options.iteration,
                )
                .with_call(&call.name, &call.arguments, &call.id);
            input.tool_response = result.map(|m| {
                serde_json::json!({
                    "text": m.text,
                    "is_error": m.tool_result.as_ref().is_some_and(|r| r.is_error),
                })
            });
            let emit = |kind| self.emit(info, &options.run_id, kind);
            let feedback = info.guard.after(HookEvent::PostToolUse, &input, &emit).await;
            for (hook, reason) in feedback.objections {
                self.notice(
                    info,
                    options,
                    format!(
                        "post_tool_use hook `{hook}` objected to the agent's `{}`: {reason}",
                        call.name
                    ),
                );
            }
        }
    }

    /// A `sandbox_denied` event for each of a CLI agent's own tool results that says its
    /// sandbox stopped it (a write to a read-only place, no network), and for each line of its
    /// own output that says so (`said`: its stderr, a plain-text agent's answer), even when
    /// the agent went on and its turn succeeded. At most [`DENIALS_PER_TURN`] a turn. What its
    /// output said is also a notice in the transcript (its tool results are there already).
    fn agent_denials(
        &self,
        info: &SessionInfo,
        options: &TurnOptions,
        provider: &str,
        steps: &[Message],
        said: &[String],
    ) {
        if info.guard.sandbox.policy.is_off() {
            return;
        }
        let calls: Vec<&crate::model::ToolCall> = steps.iter().flat_map(|m| m.tool_calls.iter()).collect();
        let in_steps = steps.iter().filter_map(|m| {
            let result = m.tool_result.as_ref()?;
            let detail = crate::sandbox::denial_in(&m.text)?;
            let tool = calls
                .iter()
                .find(|c| c.id == result.call_id)
                .map_or("a tool", |c| c.name.as_str());
            Some((format!("agent {provider} ({tool})"), detail))
        });
        let mut denials: Vec<(String, String)> = Vec::new();
        let mut noted = Vec::new();
        let in_output = said.iter().map(|d| (format!("agent {provider}"), d.clone()));
        for (what, detail) in in_steps.chain(in_output) {
            if denials.len() >= DENIALS_PER_TURN {
                break;
            }
            if denials.iter().any(|(_, d)| *d == detail) {
                continue;
            }
            if said.contains(&detail) {
                noted.push(detail.clone());
            }
            denials.push((what, detail));
        }
        for (what, detail) in denials {
            self.emit(
                info,
                &options.run_id,
                EventKind::sandbox_denied(self.session_id, &info.name, what, detail),
            );
        }
        if !noted.is_empty() {
            let text = crate::describe::safety::sandbox_denied_notice(&format!("agent {provider}"), &noted);
            self.notice(info, options, text);
        }
    }

    /// A notice written into this session's transcript, and its event.
    fn notice(&self, info: &SessionInfo, options: &TurnOptions, text: String) {
        let mut notice = Message::notice(text.clone());
        notice.iteration = options.iteration;
        notice.execution_id = self.execution_id();
        self.shared.writer.append(self.session_id, &notice);
        self.emit(
            info,
            &options.run_id,
            EventKind::Notice {
                session_id: self.session_id.to_string(),
                session: info.name.to_string(),
                text,
                message: Some(Arc::new(notice)),
            },
        );
    }

    /// Compacts the conversation when the turn's request would pass `compact_at` of its
    /// model's context window (see `engine/compaction.rs`): the summary goes into the history
    /// held in memory and, as a notice, into the transcript; `context_compacted` says so.
    async fn compact_if_due(
        &mut self,
        info: &SessionInfo,
        options: &TurnOptions,
        slug: &str,
        sent: &str,
        resumed_start: Option<usize>,
    ) {
        // The run's front end's configuration (on a host), else the engine's.
        let profile = self.shared.profile(&info.group_id, Some(self.session_id));
        let compact_at = profile.options.compact_at;
        if compact_at <= 0.0 {
            return;
        }
        let Some(window) = profile.options.context_window(slug) else {
            return;
        };
        let Ok((provider, model)) = profile.providers.for_slug(slug) else {
            return;
        };
        if provider.capabilities().runs_own_tools {
            return;
        }
        // Only sizes are estimated: the session's system prompt and the mode's instructions as
        // joined (not the repository's context or tool declarations, as before), the history
        // as it would be sent (not copied: it is, for the request, once this is past), the
        // prompt.
        let system_chars = joined_len([&info.system, &options.system_extra].into_iter().flatten());
        let estimate = |state: &mut SessionState| {
            let shown = state.shown(
                options.run_id.as_deref(),
                options.history_from_run_start,
                resumed_start,
                options.window,
            );
            crate::model::context::tokens_of_text(system_chars + super::compaction::chars(shown) + sent.len())
        };
        let before = estimate(self.state);
        if before as f64 <= window as f64 * compact_at {
            return;
        }
        let history = self.state.history.get_or_insert_with(Vec::new);
        let Some(kept) = super::compaction::kept(history) else {
            return;
        };
        let folded = history[..history.len() - kept].to_vec();
        let request = TurnRequest {
            model,
            working_dir: info.working_dir.clone(),
            turn_timeout: options.timeout,
            ..TurnRequest::default()
        };
        let Some(summary) =
            super::compaction::summarize(provider.as_ref(), request, &folded, window, &options.cancel).await
        else {
            return;
        };
        self.state.fold(kept, &summary);
        let after = estimate(self.state);
        let mut mark = Message::notice(format!(
            "context compacted: {} messages summarised (~{before} → ~{after} tokens)",
            folded.len()
        ));
        mark.compacted = Some(crate::model::Compacted {
            kept,
            folded: folded.len(),
            summary,
            before,
            after,
        });
        mark.run_id = options.run_id.as_deref().map(str::to_string);
        mark.execution_id = self.execution_id();
        self.shared.writer.append(self.session_id, &mark);
        self.emit(
            info,
            &options.run_id,
            EventKind::ContextCompacted {
                session_id: self.session_id.to_string(),
                session: info.name.to_string(),
                folded: folded.len(),
                before,
                after,
            },
        );
    }

    /// What the transcript records as this turn's instructions: the text added to the system
    /// prompt when it differs from what the previous prompt was sent (an empty text when
    /// nothing is added any more), else nothing.
    fn instructions_changed(&self, extra: Option<&str>) -> Option<String> {
        let extra = extra.filter(|e| !e.trim().is_empty());
        if extra == self.state.instructions.as_deref() {
            return None;
        }
        Some(extra.unwrap_or_default().to_string())
    }

    /// The notes the user left for this session's next turn (taken, and reported as
    /// delivered).
    fn take_notes(&self, info: &SessionInfo, options: &TurnOptions) -> Vec<String> {
        let id = self.session_id;
        // A write (and a save) only when there is a note: this runs for every turn.
        let waiting = self
            .shared
            .org
            .read(|o| o.session(id).is_some_and(|s| !s.pending_notes.is_empty()));
        if !waiting {
            return Vec::new();
        }
        let notes = self.shared.org.update(|o| {
            o.session_mut(id)
                .map(|s| std::mem::take(&mut s.pending_notes))
                .unwrap_or_default()
        });
        for text in &notes {
            self.emit(
                info,
                &options.run_id,
                EventKind::MemberNote {
                    session_id: id.to_string(),
                    session: info.name.to_string(),
                    text: text.clone(),
                    delivered: true,
                },
            );
        }
        notes
    }

    /// Model → tools → model until an answer without calls, the round limit (then the model is
    /// told to answer), a failure or a stop. Returns the final answer (usage summed over the
    /// loop) and the messages stored on the way (assistant steps with calls, tool results).
    async fn tool_loop(
        &self,
        info: &SessionInfo,
        options: &TurnOptions,
        generation: u64,
        provider: &dyn crate::providers::Provider,
        request: &mut TurnRequest,
        extras: LoopExtras,
    ) -> LoopEnd {
        // What the model's tokens cost (each request's usage is priced as it comes).
        let slug = options.model_override.as_deref().unwrap_or(&info.model);
        let profile = self.shared.profile(&info.group_id, Some(self.session_id));
        let rate = profile.options.prices.rate(slug);
        let capabilities = provider.capabilities();
        if capabilities.local_process {
            // The program runs confined; a required sandbox that is missing starts nothing.
            let sandbox = &info.guard.sandbox;
            let available = crate::sandbox::probe::availability_async_in(
                sandbox.policy.bwrap.as_deref(),
                &sandbox.host.env,
            )
            .await;
            if let crate::sandbox::Status::Refused(e) = sandbox.status_with(&available) {
                self.emit(
                    info,
                    &options.run_id,
                    EventKind::SandboxRefused {
                        session_id: Some(self.session_id.to_string()),
                        session: Some(info.name.to_string()),
                        what: format!("agent {}", provider.name()),
                        reason: e.to_string(),
                    },
                );
                let error = crate::providers::ProviderError::new(
                    ErrorKind::Config,
                    provider.name(),
                    format!("provider `{}`: {e}", provider.name()),
                );
                return (Err(error), Vec::new(), None);
            }
            if let crate::sandbox::Status::Unconfined { .. } = sandbox.status_with(&available)
                && !sandbox.policy.is_off()
                && first_unconfined_turn_of(options.run_id.as_deref())
            {
                // Not asked for off, and nothing works here: said, never silent.
                self.emit(
                    info,
                    &options.run_id,
                    EventKind::Warning {
                        message: crate::describe::safety::unconfined_warning(
                            &format!("agent {}", provider.name()),
                            &available.describe(),
                        ),
                    },
                );
            }
            request.sandbox = Some(sandbox.clone());
        }
        let offer = if info.tools.is_empty() || !capabilities.takes_huddle_tools() {
            Offer::default()
        } else {
            profile
                .options
                .tools
                .offer(&info.tools, info.working_dir.as_deref())
                .await
        };
        for problem in &offer.problems {
            if crate::sandbox::is_refusal(problem) {
                // The model is not offered its tools: the transcript says why.
                self.notice(
                    info,
                    options,
                    crate::describe::safety::tool_server_refused_notice(problem),
                );
                self.emit(
                    info,
                    &options.run_id,
                    EventKind::SandboxRefused {
                        session_id: Some(self.session_id.to_string()),
                        session: Some(info.name.to_string()),
                        what: "a tool server".into(),
                        reason: problem.clone(),
                    },
                );
            }
            self.emit(
                info,
                &options.run_id,
                EventKind::Warning {
                    message: format!("{}: {problem}", info.name),
                },
            );
        }
        request.tools = offer.specs.clone();
        if capabilities.takes_tool_servers {
            request.tool_servers = self.tool_servers(info, options);
        }
        // Without tool declarations (a CLI agent) a mode talks to the model in text instead.
        let mode_tools = options
            .hooks
            .as_ref()
            .filter(|_| !capabilities.text_tools)
            .map(|hooks| Arc::clone(&hooks.0));
        let LoopExtras {
            skills,
            new_instructions,
        } = extras;
        let hooks: Option<Arc<dyn TurnTools>> = match (mode_tools, skills) {
            (Some(mode), Some(skills)) => Some(Arc::new(Joined(mode, skills))),
            (mode, skills) => mode.or_else(|| skills.map(|s| s as Arc<dyn TurnTools>)),
        };
        // Which calls the mode answers: read once per turn, not per round.
        let lent = hooks.as_ref().map(|hooks| {
            let specs = hooks.specs();
            let names = specs.iter().map(|s| s.name.clone()).collect();
            request.tools.extend(specs);
            Lent {
                tools: hooks.as_ref(),
                names,
            }
        });
        let max_rounds = info
            .max_tool_rounds
            .unwrap_or(profile.options.max_tool_rounds)
            .max(1);
        let context = CallContext {
            shared: self.shared,
            session_id: self.session_id,
            session: &info.name,
            group_id: &info.group_id,
            group: &info.group,
            run_id: &options.run_id,
            cancel: &options.cancel,
            workdir: info.working_dir.as_deref(),
            execution: self.execution.as_ref(),
            guard: &info.guard,
            iteration: options.iteration,
        };
        let mut steps = Vec::new();
        // A CLI agent runs its own tools: its steps are recorded as they happen.
        let mut agent = capabilities.runs_own_tools.then(|| {
            AgentRecorder::new(StepContext {
                shared: Arc::clone(self.shared),
                session_id: self.session_id.to_string(),
                session: info.name.to_string(),
                group_id: SharedStr::clone(&info.group_id),
                group: SharedStr::clone(&info.group),
                run_id: options.run_id.clone(),
                generation,
                iteration: options.iteration,
                model: format!("{}/{}", provider.name(), request.model),
                execution: self.execution.clone(),
            })
        });
        if let Some(recorder) = &agent {
            request.agent_activity = Some(recorder.sink());
            request.permission = Some(context.agent_asker(provider.name()));
            request.agent_session_id = info
                .agent_session
                .as_ref()
                .filter(|s| s.provider == provider.name() && !options.fresh)
                .map(|s| s.id.clone());
        }
        // A resumed agent is sent the newest message alone: instructions it has not been sent
        // yet (new since the session's previous prompt) go before it.
        if request.agent_session_id.is_some()
            && new_instructions
            && let Some(extra) = options.system_extra.as_deref().map(str::trim)
            && let Some(last) = request.messages.last_mut()
        {
            last.content = format!("{extra}\n\n{}", last.content).into();
        }
        let mut usage: Option<Usage> = None;
        // Each request is priced on its own (a long prompt may be dearer per token).
        let mut cost = Some(0.0);
        let mut rounds = 0u32;
        // The model that took the turn over when the session's met a limit.
        let mut fallback: Option<Arc<dyn crate::providers::Provider>> = None;
        let mut concluding = false;
        loop {
            if let Some(hooks) = &hooks {
                let before = hooks.before_call().await;
                for text in before.inputs {
                    self.add_input(info, options, generation, request, &mut steps, text);
                }
                concluding |= before.conclude;
            }
            request.tool_choice = if rounds >= max_rounds || concluding {
                ToolChoice::None
            } else {
                ToolChoice::Auto
            };
            let mut forward = |delta: &str| {
                self.emit(
                    info,
                    &options.run_id,
                    EventKind::Delta {
                        session_id: SharedStr::clone(&info.shared_id),
                        session: SharedStr::clone(&info.name),
                        generation,
                        text: delta.to_string(),
                    },
                )
            };
            let result = self
                .call_model(info, options, provider, request, &mut forward, &mut fallback)
                .await;
            if let Some(recorder) = agent.take() {
                let why = if options.cancel.is_cancelled() {
                    "cancelled"
                } else {
                    "no result: the agent's turn ended first"
                };
                let recorded = recorder.finish(why);
                if capabilities.local_process {
                    let said = result.as_ref().map_or(&[][..], |out| &out.sandbox_denials[..]);
                    self.agent_denials(info, options, provider.name(), &recorded.steps, said);
                }
                self.agent_steps_hooks(info, options, &recorded.steps).await;
                steps.extend(recorded.steps);
                self.update_agent_session(
                    info,
                    provider.name(),
                    recorded.session_id,
                    recorded.stale,
                    result.is_ok(),
                );
            } else if result.is_ok() && !capabilities.runs_own_tools && rounds == 0 {
                // The agent's own conversation misses this exchange: the next agent turn sends
                // the transcript.
                self.update_agent_session(info, provider.name(), None, false, true);
            }
            let mut out = match result {
                Ok(out) => out,
                Err(e) => {
                    if capabilities.local_process
                        && let Some(detail) = crate::sandbox::denial_in(&e.message)
                    {
                        self.emit(
                            info,
                            &options.run_id,
                            EventKind::sandbox_denied(
                                self.session_id,
                                &info.name,
                                format!("agent {}", provider.name()),
                                detail,
                            ),
                        );
                    }
                    return (Err(e), steps, None);
                }
            };
            usage = sum_usage(usage, out.usage);
            cost = match (cost, rate, out.usage) {
                (Some(so_far), Some(rate), Some(u)) => Some(so_far + rate.cost(&u)),
                _ => None,
            };
            if out.tool_calls.is_empty() || rounds >= max_rounds || request.tools.is_empty() || concluding {
                out.usage = usage;
                out.tool_calls.clear();
                return (Ok(out), steps, cost);
            }
            rounds += 1;
            let calls = std::mem::take(&mut out.tool_calls);
            let mut step = Message::assistant(out.text.clone());
            step.model = Some(format!("{}/{}", provider.name(), request.model));
            step.iteration = options.iteration;
            step.execution_id = self.execution_id();
            step.tool_calls = calls.clone();
            self.shared.writer.append(self.session_id, &step);
            request
                .messages
                .push(ChatMessage::assistant_calls(out.text.clone(), calls.clone()));
            let mut step_event = Some(Arc::new(step.clone()));
            steps.push(step);
            for call in &calls {
                context.emit(EventKind::ToolCall {
                    session_id: self.session_id.to_string(),
                    session: info.name.to_string(),
                    generation,
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    step: step_event.take(),
                });
            }
            let round = context.run_round(&offer, &calls, lent.as_ref()).await;
            let last = round.results.len().saturating_sub(1);
            for (i, r) in round.results.into_iter().enumerate() {
                let mut text = r.text;
                if i == last && rounds >= max_rounds {
                    // Said inside the last result, so the history the model sees next turn is
                    // exactly this one.
                    text.push_str("\n\n[huddle] ");
                    text.push_str(&rounds_exhausted_note(max_rounds));
                }
                let mut message = Message::tool(
                    text.clone(),
                    ToolResultInfo {
                        call_id: r.call.id.clone(),
                        name: r.call.name.clone(),
                        is_error: r.is_error,
                        duration_ms: r.duration.as_millis() as u64,
                        size: r.size,
                    },
                );
                message.iteration = options.iteration;
                message.execution_id = self.execution_id();
                self.shared.writer.append(self.session_id, &message);
                context.emit(EventKind::ToolResult {
                    session_id: self.session_id.to_string(),
                    session: info.name.to_string(),
                    generation,
                    call_id: r.call.id.clone(),
                    name: r.call.name.clone(),
                    ok: !r.is_error,
                    duration_ms: r.duration.as_millis() as u64,
                    size: r.size,
                    first_line: result_line(&text, 120),
                    message: Some(Arc::new(message.clone())),
                });
                request.messages.push(ChatMessage::tool_result(
                    &r.call.id,
                    &r.call.name,
                    r.is_error,
                    text,
                ));
                steps.push(message);
            }
            if options.cancel.is_cancelled() {
                return (
                    Err(crate::providers::ProviderError::cancelled(provider.name())),
                    steps,
                    None,
                );
            }
            if round.ends_turn {
                // A lent tool ended the turn (a handoff, a broadcast): the model's words so far
                // (in the step above) are its answer, unless the tool gave the answer (a router's
                // note of where the request went).
                if let Some(answer) = round.answer {
                    out.text = answer;
                }
                out.usage = usage;
                return (Ok(out), steps, cost);
            }
        }
    }

    fn execution_id(&self) -> Option<String> {
        self.execution.as_ref().map(|e| e.execution_id.clone())
    }

    /// One model call. A rate or usage limit it meets is waited out in the run (see
    /// `engine/limits.rs`) and the call made again, or handed to the session's
    /// `fallback_model`; past the run's bound the call fails and the run ends `rate_limited`.
    async fn call_model(
        &self,
        info: &SessionInfo,
        options: &TurnOptions,
        provider: &dyn crate::providers::Provider,
        request: &mut TurnRequest,
        forward: &mut (dyn FnMut(&str) + Send),
        fallback: &mut Option<Arc<dyn crate::providers::Provider>>,
    ) -> Result<crate::providers::TurnOutput, crate::providers::ProviderError> {
        use super::limits::{Verdict, waitable};
        let mut met = 0u32;
        loop {
            let model = fallback.as_deref().unwrap_or(provider);
            let result = model
                .stream_turn(request.clone(), forward, options.cancel.clone())
                .await;
            let error = match result {
                Err(e) if waitable(&e) && !options.cancel.is_cancelled() => e,
                other => return other,
            };
            met += 1;
            if fallback.is_none()
                && let Some(slug) = &info.fallback_model
                && let Ok((other, name)) = self
                    .shared
                    .profile(&info.group_id, Some(self.session_id))
                    .providers
                    .for_slug(slug)
            {
                self.emit(
                    info,
                    &options.run_id,
                    EventKind::Warning {
                        message: format!(
                            "{}: {}; its fallback_model {slug} takes the turn over",
                            info.name,
                            crate::text::first_line(&error.message, 160)
                        ),
                    },
                );
                request.model = name;
                *fallback = Some(other);
                continue;
            }
            let Some(active) = self.shared.active_run(options.run_id.as_deref()) else {
                return Err(error);
            };
            let who = (self.session_id, &*info.name);
            match active
                .control
                .wait_for_limit(&active.emitter, who, &error, met)
                .await
            {
                Verdict::Again => {}
                Verdict::Stopped(why) => {
                    // A stop of this run (not of the whole process: a signal says its own
                    // why) during the wait leaves it resumable.
                    if !self.shared.interrupting() {
                        active.control.stopped_in_wait(&why);
                    }
                    return Err(crate::providers::ProviderError::cancelled(&error.provider));
                }
                Verdict::GiveUp(e) => return Err(e),
            }
        }
    }

    /// A message a mode adds to the turn before its next model call: stored, sent, shown.
    fn add_input(
        &self,
        info: &SessionInfo,
        options: &TurnOptions,
        generation: u64,
        request: &mut TurnRequest,
        steps: &mut Vec<Message>,
        text: String,
    ) {
        let mut message = Message::user(text.clone());
        message.iteration = options.iteration;
        message.execution_id = self.execution_id();
        self.shared.writer.append(self.session_id, &message);
        request.messages.push(ChatMessage::user(text.as_str()));
        self.emit(
            info,
            &options.run_id,
            EventKind::TurnInput {
                session_id: self.session_id.to_string(),
                session: info.name.to_string(),
                generation,
                text,
                message: Some(Arc::new(message.clone())),
            },
        );
        steps.push(message);
    }

    /// Keeps the agent session a turn reported (or forgets the stored one when it is gone, or
    /// when a turn succeeded without it), so the next turn resumes only a conversation the
    /// agent saw whole.
    fn update_agent_session(
        &self,
        info: &SessionInfo,
        provider: &str,
        reported: Option<String>,
        stale: bool,
        success: bool,
    ) {
        let next = match reported {
            Some(id) => Some(AgentSession {
                provider: provider.to_string(),
                id,
            }),
            None if stale || success => None,
            None => info.agent_session.clone(),
        };
        if next == info.agent_session {
            return;
        }
        let id = &self.session_id;
        self.shared.org.update(|org| {
            if let Some(s) = org.session_mut(id) {
                s.agent_session = next;
            }
        });
    }

    /// The session's tool servers as an agent starts them itself; one that cannot be handed
    /// over (not configured, its program not found, a header's variable not set) is left out
    /// with a warning.
    fn tool_servers(&self, info: &SessionInfo, options: &TurnOptions) -> Vec<crate::tools::ServerLaunch> {
        let mut servers = Vec::new();
        let profile = self.shared.profile(&info.group_id, Some(self.session_id));
        for name in &info.tools {
            let launch = match profile.options.tools.get(name) {
                Some(source) => source.launch(),
                None => Err(format!("no MCP server `{name}` is configured")),
            };
            match launch {
                Ok(server) => servers.push(server),
                Err(why) => self.emit(
                    info,
                    &options.run_id,
                    EventKind::Warning {
                        message: format!(
                            "{}: tool server `{name}` not given to the agent: {why}",
                            info.name
                        ),
                    },
                ),
            }
        }
        servers
    }

    async fn record(
        &mut self,
        info: &SessionInfo,
        user: &Message,
        steps: Vec<Message>,
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
        answer.cost_usd = result.cost_usd;
        answer.execution_id = self.execution_id();
        answer.run_id = options.run_id.as_deref().map(str::to_string);
        // On disk before anything reports the turn ended (a crash cannot take back an answer
        // that was reported; a resumed run finds it).
        let written = self.shared.writer.append_written(self.session_id, &answer);

        // The same rule as reading the transcript back, so a restart changes nothing.
        let turn = std::iter::once(user)
            .chain(&steps)
            .chain(std::iter::once(&answer));
        let added = chat_history(turn);
        self.history().extend(added);
        // Only the newest part is ever sent; the transcript on disk keeps everything.
        self.state.drop_unsendable();
        if !written.await {
            // Reported all the same (it was answered, and paid for), but not as if it were safe.
            let member = self
                .shared
                .org
                .read(|org| crate::describe::Names::of_session(org, self.session_id))
                .unwrap_or_else(|| info.name.to_string());
            self.emit(
                info,
                &options.run_id,
                EventKind::Warning {
                    message: format!(
                        "{member}'s answer was not saved (see the log); a resumed run asks again"
                    ),
                },
            );
        }
        // A turn that failed without a word of usage is not counted (nothing says it was
        // billed); one that answered without a cost was not priced.
        let spent = (result.success || result.usage.is_some()).then(|| Spent {
            usage: result.usage.unwrap_or_default(),
            cost: Cost::of_turn(result.cost_usd),
        });
        if let Some(spent) = spent {
            let id = self.session_id;
            self.shared.org.update(|org| {
                let Some(s) = org.sessions.iter_mut().find(|s| s.id == id) else {
                    return;
                };
                s.usage.add(spent.usage);
                s.cost.add(spent.cost);
                if let Some(g) = org.groups.iter_mut().find(|g| g.id == s.group_id) {
                    g.usage.add(spent.usage);
                    g.cost.add(spent.cost);
                }
            });
            if let Some(run_id) = &options.run_id {
                self.shared.count_spent(run_id, spent);
            }
        }
        self.emit(
            info,
            &options.run_id,
            EventKind::TurnFinished {
                session_id: info.shared_id.clone(),
                session: SharedStr::clone(&info.name),
                generation,
                success: result.success,
                interrupted: result.interrupted,
                duration_ms: result.duration.as_millis() as u64,
                usage: result.usage,
                cost_usd: result.cost_usd,
                error: result.error.clone(),
                message: Some(Arc::new(answer)),
            },
        );
        if !result.text.is_empty() {
            self.emit(
                info,
                &options.run_id,
                EventKind::Message {
                    session_id: info.shared_id.clone(),
                    session: SharedStr::clone(&info.name),
                    role: info.role,
                    text: result.text.clone(),
                },
            );
        }
    }
}

/// What a turn brings to its tool loop besides the request.
struct LoopExtras {
    /// The repository's skills, lent as the `load_skill` tool.
    skills: Option<Arc<super::repo_context::SkillTool>>,
    /// The instructions added to the system prompt changed since the session's previous
    /// prompt (a resumed CLI agent is sent them with the newest message).
    new_instructions: bool,
}

/// `parts` with a blank line between each two (`join("\n\n")`, without a list made first).
fn joined<'a>(parts: impl Iterator<Item = &'a String>) -> String {
    let mut out = String::new();
    for (k, part) in parts.enumerate() {
        if k > 0 {
            out.push_str("\n\n");
        }
        out.push_str(part);
    }
    out
}

/// The length of [`joined`]`(parts)`, not made.
fn joined_len<'a>(parts: impl Iterator<Item = &'a String>) -> usize {
    let (count, chars) = parts.fold((0usize, 0usize), |(n, c), p| (n + 1, c + p.len()));
    chars + 2 * count.saturating_sub(1)
}

/// `prompt` with the user's notes for the member before it (unchanged without notes).
fn with_notes(notes: &[String], prompt: String) -> String {
    if notes.is_empty() {
        prompt
    } else {
        super::protocol::prompt_with_notes(notes, &prompt)
    }
}

/// The instructions the last prompt of a transcript was sent (see [`Message::instructions`]).
fn recorded_instructions(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find_map(|m| m.instructions.as_deref())
        .filter(|i| !i.trim().is_empty())
        .map(str::to_string)
}

/// A message's size toward the history's limit.
fn message_chars(m: &ChatMessage) -> usize {
    m.content.len() + m.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>()
}

/// Where the newest part of the conversation within `max_chars` and `max_messages` starts:
/// on a user message (so a tool exchange is never cut in half). Tool results count toward the
/// size, not the count.
fn newest_start(history: &[ChatMessage], max_chars: usize, max_messages: usize) -> usize {
    let mut total = 0;
    let mut count = 0;
    let mut start = history.len();
    for (i, m) in history.iter().enumerate().rev() {
        total += message_chars(m);
        if m.role != ChatRole::Tool {
            count += 1;
        }
        if total > max_chars || count > max_messages {
            break;
        }
        if m.role == ChatRole::User {
            start = i;
        }
    }
    start
}

/// Where the newest part of the conversation that fits the limits starts (see
/// [`newest_start`]).
fn window_start(history: &[ChatMessage]) -> usize {
    newest_start(history, HISTORY_MAX_CHARS, HISTORY_MAX_MESSAGES)
}

/// The newest part of the conversation that fits the limits, starting on a user message.
#[cfg(test)]
fn bounded_history(history: &[ChatMessage]) -> Vec<ChatMessage> {
    history[window_start(history)..].to_vec()
}

/// True the first time a run (or a run-less turn) asks: the unconfined warning is said once
/// per run. Remembers the last few hundred runs only.
fn first_unconfined_turn_of(run_id: Option<&str>) -> bool {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Some(run) = run_id else { return true };
    let key = run.to_string();
    let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if said.contains(&key) {
        return false;
    }
    if said.len() >= 256 {
        said.remove(0);
    }
    said.push(key);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supersedes_mark_takes_back_its_exchange_with_its_tool_calls() {
        let q1 = Message::user("q1");
        let mut step = Message::assistant("");
        step.tool_calls = vec![crate::model::ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        }];
        let q2 = Message::user("q2");
        let messages = vec![
            q1.clone(),
            Message::assistant("a1"),
            q2.clone(),
            step,
            Message::superseding(q2.id.as_deref().unwrap(), "again"),
            Message::user("q2 again"),
            Message::assistant("a2"),
        ];
        let texts: Vec<String> = chat_history(&messages)
            .iter()
            .map(|m| m.content.to_string())
            .collect();
        assert_eq!(texts, ["q1", "a1", "q2 again", "a2"]);
        // An id it does not know (another conversation's) changes nothing.
        let unknown = [q1, Message::superseding("nope", "x"), Message::assistant("a")];
        assert_eq!(chat_history(&unknown).len(), 2);
    }

    #[test]
    fn a_window_drops_the_oldest_exchanges_a_stride_at_a_time() {
        let exchanges = |n: usize| -> Vec<ChatMessage> {
            (0..n)
                .flat_map(|k| {
                    [
                        ChatMessage::user(format!("q{k}")),
                        ChatMessage::assistant(format!("a{k}")),
                    ]
                })
                .collect()
        };
        let first = |h: &[ChatMessage]| h.first().map(|m| m.content.to_string());
        let half = |most: usize| Window {
            most,
            stride: most / 2,
        };
        assert_eq!(
            stable_window(&exchanges(8), half(8), 0).len(),
            16,
            "within the window"
        );
        assert_eq!(
            first(stable_window(&exchanges(9), half(8), 0)).as_deref(),
            Some("q4")
        );
        // The start stays put while the window fills again, then moves on by half a window.
        for n in 9..=12 {
            assert_eq!(
                first(stable_window(&exchanges(n), half(8), 0)).as_deref(),
                Some("q4"),
                "{n}"
            );
        }
        assert_eq!(
            first(stable_window(&exchanges(13), half(8), 0)).as_deref(),
            Some("q8")
        );
        assert_eq!(stable_window(&exchanges(13), half(8), 0).len(), 10);
        assert!(stable_window(&[], half(8), 0).is_empty());
        assert_eq!(
            first(stable_window(&exchanges(3), half(1), 0)).as_deref(),
            Some("q2")
        );
        // Counted from the conversation's start: without its first 6 exchanges (dropped from
        // memory, or before the run), the cuts fall where they fell with everything held.
        for n in 15..=30 {
            let all = exchanges(n);
            let with_all = first(stable_window(&all, half(8), 0));
            assert_eq!(first(stable_window(&all[12..], half(8), 6)), with_all, "{n}");
        }
        // A longer stride: 12 at most, the oldest 8 at a time (5 to 12 kept).
        let long = Window { most: 12, stride: 8 };
        assert_eq!(stable_window(&exchanges(12), long, 0).len(), 24);
        for n in 13..=20 {
            assert_eq!(
                first(stable_window(&exchanges(n), long, 0)).as_deref(),
                Some("q8"),
                "{n}"
            );
        }
        assert_eq!(
            first(stable_window(&exchanges(21), long, 0)).as_deref(),
            Some("q16")
        );
        assert_eq!(stable_window(&exchanges(21), long, 0).len(), 10);
    }

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
        assert_eq!(&*kept[0].content, "q");
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
        assert_eq!(&*kept.last().unwrap().content, "a499");
    }

    #[test]
    fn a_run_only_turn_leaves_the_whole_conversation_for_the_next_whole_turn() {
        let mut state = SessionState::default();
        let say = |state: &mut SessionState, k: usize| {
            let history = state.history.get_or_insert_with(Vec::new);
            history.push(ChatMessage::user(format!("q{k}")));
            history.push(ChatMessage::assistant(format!("a{k}")));
        };
        for k in 0..5 {
            say(&mut state, k);
        }
        assert_eq!(state.visible(None, false, None, None).len(), 10);
        let run: RunId = "run-1".into();
        assert!(
            state.visible(Some(&run), true, None, None).is_empty(),
            "the run starts now"
        );
        say(&mut state, 5);
        assert_eq!(
            state.visible(Some(&run), true, None, None).len(),
            2,
            "the run's turn"
        );
        assert_eq!(
            state.visible(None, false, None, None).len(),
            12,
            "everything, as before the run"
        );
    }

    #[test]
    fn a_long_session_holds_about_one_window_and_every_turn_sees_its_newest_part() {
        // Long answers, as an orchestrator's syntheses are: the count limit is never reached,
        // the size limit is; a run's turns see only their run.
        let mut state = SessionState::default();
        let mut all: Vec<ChatMessage> = Vec::new();
        let run: RunId = "run-1".into();
        for k in 0..400 {
            if k == 250 {
                assert_eq!(
                    state.visible(Some(&run), true, None, None),
                    Vec::<ChatMessage>::new(),
                    "the run starts now"
                );
            }
            let turn = [
                ChatMessage::user(format!("q{k} {}", "x".repeat(9_000))),
                ChatMessage::assistant(format!("a{k} {}", "y".repeat(11_000))),
            ];
            all.extend(turn.iter().cloned());
            state.history.get_or_insert_with(Vec::new).extend(turn);
            state.drop_unsendable();
            let held = state.history.as_ref().unwrap();
            let chars: usize = held.iter().map(message_chars).sum();
            assert!(chars <= HISTORY_MAX_CHARS, "turn {k}: {chars} chars held");
            // What is sent is the end of what was said, within the limits (where its start
            // stays put for the prompt cache, it may be shorter than the newest part that
            // fits), from a user message on.
            let within = |sent: &[ChatMessage], of: &[ChatMessage]| {
                !sent.is_empty()
                    && sent[0].role == ChatRole::User
                    && sent.len() <= bounded_history(of).len()
                    && sent[..] == of[of.len() - sent.len()..]
            };
            let sent = state.visible(None, false, None, None);
            assert!(within(&sent, &all), "turn {k}");
            // A window of exchanges too (its cuts are counted from the conversation's start).
            let window = Window { most: 8, stride: 4 };
            let sent = state.visible(None, false, None, Some(window));
            assert!(
                within(&sent, stable_window(&all, window, 0)),
                "turn {k}: the window"
            );
        }
        let from_run = state.visible(Some(&run), true, None, None);
        assert!(from_run.len() <= bounded_history(&all[500..]).len());
        assert_eq!(from_run[..], all[all.len() - from_run.len()..]);
        assert_eq!(&*from_run.last().unwrap().content, &*all.last().unwrap().content);
    }

    #[test]
    fn a_step_sends_its_text_keeps_its_compact_form_and_adds_its_brief() {
        let base = TurnOptions {
            iteration: Some(3),
            system_extra: Some("replaced".into()),
            ..TurnOptions::default()
        };
        let prompt = super::super::protocol::StepPrompt {
            text: "the whole task".into(),
            compact: Some("task".into()),
        };
        let (text, options) = base.with_step(prompt, Some("the brief".into()));
        assert_eq!(text, "the whole task");
        assert_eq!(options.compact.as_deref(), Some("task"));
        assert_eq!(options.system_extra.as_deref(), Some("the brief"));
        assert_eq!(options.iteration, Some(3), "the rest is kept");
    }

    #[test]
    fn the_unconfined_warning_is_said_once_per_run_and_for_every_run_less_turn() {
        // Ids no other test uses (the list is process-wide).
        let (one, two): (RunId, RunId) = ("unconfined-once-1".into(), "unconfined-once-2".into());
        assert!(first_unconfined_turn_of(Some(&one)));
        assert!(!first_unconfined_turn_of(Some(&one)), "said already in this run");
        assert!(first_unconfined_turn_of(Some(&two)), "another run hears it too");
        assert!(!first_unconfined_turn_of(Some(&two)));
        assert!(first_unconfined_turn_of(None));
        assert!(first_unconfined_turn_of(None), "a turn outside a run is its own");
    }

    #[test]
    fn a_session_of_short_turns_holds_at_most_the_messages_a_turn_can_be_sent() {
        let mut state = SessionState::default();
        for k in 0..(3 * HISTORY_MAX_MESSAGES) {
            let turn = [
                ChatMessage::user(format!("q{k}")),
                ChatMessage::assistant(format!("a{k}")),
            ];
            state.history.get_or_insert_with(Vec::new).extend(turn);
            state.drop_unsendable();
            let held = state.history.as_ref().map_or(0, Vec::len);
            assert!(held <= HISTORY_MAX_MESSAGES, "turn {k}: {held} messages held");
        }
        let sent = state.visible(None, false, None, None);
        let last = 3 * HISTORY_MAX_MESSAGES - 1;
        assert_eq!(
            sent.last().map(|m| m.content.to_string()),
            Some(format!("a{last}"))
        );
    }

    #[test]
    fn parts_are_joined_and_counted_as_join_would() {
        let texts = [
            String::new(),
            "one".to_string(),
            String::new(),
            "three".to_string(),
        ];
        for from in 0..texts.len() {
            for to in from..=texts.len() {
                let expected = texts[from..to].join("\n\n");
                assert_eq!(joined(texts[from..to].iter()), expected, "{from}..{to}");
                assert_eq!(joined_len(texts[from..to].iter()), expected.len(), "{from}..{to}");
            }
        }
    }

    #[test]
    fn a_turns_names_are_the_last_turns_unless_renamed() {
        let first = TurnNames::now(None, "s1", "analyst", "g1", "Crew");
        let again = TurnNames::now(Some(&first), "s1", "analyst", "g1", "Crew");
        for (a, b) in [
            (&first.id, &again.id),
            (&first.name, &again.name),
            (&first.group_id, &again.group_id),
            (&first.group, &again.group),
        ] {
            assert!(SharedStr::ptr_eq(a, b), "{a} made again");
        }
        let renamed = TurnNames::now(Some(&again), "s1", "critic", "g1", "Crew 2");
        assert_eq!((&*renamed.name, &*renamed.group), ("critic", "Crew 2"));
        assert!(SharedStr::ptr_eq(&renamed.id, &first.id));
        assert!(!SharedStr::ptr_eq(&renamed.name, &first.name));
    }

    #[test]
    fn a_resumed_run_starts_where_it_did_after_the_loaded_history_was_trimmed() {
        // A long transcript is read back whole and trimmed to one window; the resumed run's
        // start is an index into the whole history and still points at the run's first turn.
        let mut all: Vec<ChatMessage> = Vec::new();
        for k in 0..(2 * HISTORY_MAX_MESSAGES) {
            all.push(ChatMessage::user(format!("q{k}")));
            all.push(ChatMessage::assistant(format!("a{k}")));
        }
        let run_began = all.len() - 6;
        let mut state = SessionState {
            history: Some(all.clone()),
            ..SessionState::default()
        };
        state.drop_unsendable();
        assert!(state.dropped > 0, "the loaded history was trimmed");
        let run: RunId = "run-1".into();
        let seen = state.visible(Some(&run), true, Some(run_began), None);
        assert_eq!(seen, bounded_history(&all[run_began..]));
        assert_eq!(&*seen[0].content, &*all[run_began].content);
    }
}
