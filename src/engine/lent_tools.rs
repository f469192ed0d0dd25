//! Tools a mode lends a turn (dispatch's orchestration tools, a team's broadcast): the model
//! calls them like any tool, the mode answers them, and the mode may add messages before each
//! model call (results pushed while the turn runs). Its own room so that the turn
//! (`session.rs`) and a round of calls (`tool_round.rs`) both use it without needing each other.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::model::{ToolCall, ToolSpec};

/// What a mode lends a turn: tools the model may call (answered by the mode, not a server) and
/// messages added before each model call (results pushed while the turn runs).
pub trait TurnTools: Send + Sync {
    /// The tools offered (besides the session's own).
    fn specs(&self) -> Vec<ToolSpec>;
    /// Answers a call of one of them.
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer>;
    /// Before each model call: what to add to the conversation, and whether the model must
    /// answer now, without tools. It may wait (for cancelled sub-agents to stop, so what they
    /// said comes with the order to conclude).
    fn before_call(&self) -> BoxFuture<'_, BeforeCall>;
}

/// A lent tool's answer to one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LentAnswer {
    pub text: String,
    pub is_error: bool,
    /// The turn ends after this round (a member's broadcast, a supervisor's decision).
    pub ends_turn: bool,
}

/// What a mode adds before a model call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BeforeCall {
    /// User messages added to the conversation, in order.
    pub inputs: Vec<String>,
    /// The model must answer now, without tools (a cap or a budget was reached).
    pub conclude: bool,
}

/// A mode's lent tools, shared by the turns it runs.
#[derive(Clone)]
pub struct TurnHooks(pub Arc<dyn TurnTools>);

impl std::fmt::Debug for TurnHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TurnHooks")
    }
}
