//! A CLI agent's own tool steps, recorded the way the engine records its tool rounds: each call
//! as an assistant step (the text written before it and the call) and each result as a `tool`
//! message, stored and announced with `tool_call` / `tool_result` events as they happen, so
//! front ends draw them as tool cells. The agent ran the tools itself: the messages are marked
//! `by_agent`, and [`super::chat_history::chat_history`] never sends them to a model as tool calls.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::model::{Message, ToolResultInfo};
use crate::providers::{AgentActivity, AgentActivitySink};
use crate::tools::limits::{cap_result, result_line};

use super::EngineShared;
use super::events::{EngineEvent, EventKind, SharedStr};

/// Whose turn the steps belong to.
pub(crate) struct StepContext {
    pub shared: Arc<EngineShared>,
    pub session_id: String,
    pub session: String,
    pub group_id: SharedStr,
    pub group: SharedStr,
    pub run_id: Option<SharedStr>,
    pub generation: u64,
    pub iteration: Option<u32>,
    /// The slug of the turn's model.
    pub model: String,
    /// The execution the turn is part of.
    pub execution: Option<super::events::ExecutionTag>,
}

#[derive(Default)]
struct State {
    /// The stored messages, in order.
    steps: Vec<Message>,
    /// Calls waiting for their result: id, name, when they started.
    open: Vec<(String, String, Instant)>,
    /// The agent's session id as it last reported it.
    session_id: Option<String>,
    /// The stored session could not be resumed.
    stale: bool,
}

/// What a turn's agent steps came to.
pub(crate) struct Recorded {
    pub steps: Vec<Message>,
    pub session_id: Option<String>,
    pub stale: bool,
}

pub(crate) struct AgentRecorder {
    context: Arc<StepContext>,
    state: Arc<Mutex<State>>,
}

impl AgentRecorder {
    pub fn new(context: StepContext) -> AgentRecorder {
        AgentRecorder {
            context: Arc::new(context),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// What the provider reports to.
    pub fn sink(&self) -> AgentActivitySink {
        let context = Arc::clone(&self.context);
        let state = Arc::clone(&self.state);
        AgentActivitySink::new(move |activity| {
            let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
            context.apply(&mut state, activity);
        })
    }

    /// The turn is over: calls still open get `why` as their result (so every call shown has
    /// one); returns the stored steps and the agent's session.
    pub fn finish(self, why: &str) -> Recorded {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        for (call_id, name, started) in std::mem::take(&mut state.open) {
            self.context
                .result(&mut state, call_id, name, why.to_string(), true, started);
        }
        Recorded {
            steps: std::mem::take(&mut state.steps),
            session_id: state.session_id.take(),
            stale: state.stale,
        }
    }
}

impl StepContext {
    fn emit(&self, kind: EventKind) {
        self.shared.events.emit(EngineEvent {
            group_id: SharedStr::clone(&self.group_id),
            group: SharedStr::clone(&self.group),
            run_id: self.run_id.clone(),
            execution: self.execution.clone(),
            kind,
        });
    }

    fn apply(&self, state: &mut State, activity: AgentActivity) {
        match activity {
            AgentActivity::Session(id) => state.session_id = Some(id),
            AgentActivity::ResumeFailed(text) => {
                state.session_id = None;
                state.stale = true;
                let notice = Message::notice(text.clone());
                self.shared.writer.append(&self.session_id, &notice);
                self.emit(EventKind::Notice {
                    session_id: self.session_id.clone(),
                    session: self.session.clone(),
                    text,
                    message: Some(Arc::new(notice)),
                });
            }
            AgentActivity::Call { text, call } => {
                let mut step = Message::assistant(text);
                step.model = Some(self.model.clone());
                step.iteration = self.iteration;
                step.tool_calls = vec![call.clone()];
                step.by_agent = true;
                self.shared.writer.append(&self.session_id, &step);
                self.emit(EventKind::ToolCall {
                    session_id: self.session_id.clone(),
                    session: self.session.clone(),
                    generation: self.generation,
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    step: Some(Arc::new(step.clone())),
                });
                state.steps.push(step);
                state.open.push((call.id, call.name, Instant::now()));
            }
            AgentActivity::Result {
                call_id,
                name,
                output,
                is_error,
            } => {
                let Some(i) = state.open.iter().position(|(id, _, _)| *id == call_id) else {
                    return;
                };
                let (_, _, started) = state.open.remove(i);
                self.result(state, call_id, name, output, is_error, started);
            }
        }
    }

    fn result(
        &self,
        state: &mut State,
        call_id: String,
        name: String,
        output: String,
        is_error: bool,
        started: Instant,
    ) {
        let size = output.len() as u64;
        let max = self
            .shared
            .profile(&self.group_id, Some(&self.session_id))
            .options
            .tool_result_max_bytes;
        let text = cap_result(&output, max);
        let duration_ms = started.elapsed().as_millis() as u64;
        let mut message = Message::tool(
            text.clone(),
            ToolResultInfo {
                call_id: call_id.clone(),
                name: name.clone(),
                is_error,
                duration_ms,
                size,
            },
        );
        message.by_agent = true;
        message.iteration = self.iteration;
        self.shared.writer.append(&self.session_id, &message);
        self.emit(EventKind::ToolResult {
            session_id: self.session_id.clone(),
            session: self.session.clone(),
            generation: self.generation,
            call_id,
            name,
            ok: !is_error,
            duration_ms,
            size,
            first_line: result_line(&text, 120),
            message: Some(Arc::new(message.clone())),
        });
        state.steps.push(message);
    }
}
