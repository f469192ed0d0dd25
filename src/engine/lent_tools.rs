//! Tools a mode lends a turn (dispatch's orchestration tools, a team's broadcast, a flow
//! router's `handoff_to`, a pipeline member's `handoff_conversation`): the model calls them like
//! any tool, the mode answers them (and keeps what they came to, read after the turn), and the
//! mode may add messages before each model call (results pushed while the turn runs). Its own
//! room so that the turn (`session.rs`) and a round of calls (`tool_round.rs`) both use it
//! without needing each other, and without knowing any mode.
//!
//! A provider that takes no tool declarations (a CLI agent, see
//! [`crate::providers::Capabilities::text_tools`]) is lent nothing: the mode offers the text form
//! of its tools in the prompt and reads the answer itself.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use crate::model::{ToolCall, ToolSpec};

use super::lock;

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
    fn before_call(&self) -> BoxFuture<'_, BeforeCall> {
        Box::pin(std::future::ready(BeforeCall::default()))
    }
    /// The tool error for a call of a tool the turn was not offered, when the mode has a better
    /// word for it than "unknown tool" (a sub-agent calling the orchestrator's tools).
    fn refusal(&self, _name: &str) -> Option<String> {
        None
    }
}

/// Two sets of lent tools offered together (a mode's, and the session's own `load_skill`): a
/// call goes to the set that offers its tool; the first set adds the messages before each call
/// and words refusals.
pub struct Joined(pub Arc<dyn TurnTools>, pub Arc<dyn TurnTools>);

impl TurnTools for Joined {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.0.specs();
        specs.extend(self.1.specs());
        specs
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer> {
        if self.1.specs().iter().any(|s| s.name == call.name) {
            self.1.call(call)
        } else {
            self.0.call(call)
        }
    }

    fn before_call(&self) -> BoxFuture<'_, BeforeCall> {
        self.0.before_call()
    }

    fn refusal(&self, name: &str) -> Option<String> {
        self.0.refusal(name)
    }
}

/// A lent tool's answer to one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LentAnswer {
    pub text: String,
    pub is_error: bool,
    /// The turn ends after this round (a member's broadcast, a supervisor's decision, a
    /// handoff).
    pub ends_turn: bool,
    /// With `ends_turn`: the turn's answer, in place of the model's words so far (a router's
    /// "handed off to ..." note). The first one given in a round counts.
    pub answer: Option<String>,
}

impl LentAnswer {
    /// A tool error the model gets back (it may call again).
    pub fn error(text: impl Into<String>) -> LentAnswer {
        LentAnswer {
            text: text.into(),
            is_error: true,
            ..LentAnswer::default()
        }
    }
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

/// What a [`HandoffTool`] came to in a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice<T> {
    /// The first valid call's reading.
    pub chosen: Option<T>,
    /// Calls refused, in order: (their arguments, the tool error the model got back).
    pub rejected: Vec<(String, String)>,
}

impl<T> Default for Choice<T> {
    fn default() -> Choice<T> {
        Choice {
            chosen: None,
            rejected: Vec::new(),
        }
    }
}

/// Reads a call's arguments: the choice, or the tool error the model gets back.
type Parse<T> = Box<dyn Fn(&str) -> Result<T, String> + Send + Sync>;

/// A lent tool that hands the turn's work on: its first valid call is a choice that ends the
/// turn (a flow router's `handoff_to`, a pipeline member's `handoff_conversation`). An invalid call is a tool error the
/// model can learn from and retry (kept with its arguments); a valid call after the choice is
/// ignored. The mode takes the [`Choice`] after the turn.
pub struct HandoffTool<T> {
    spec: ToolSpec,
    parse: Parse<T>,
    /// The turn's answer once the choice is made; `None`: the model's words so far.
    answer: Option<fn(&T) -> String>,
    record: Mutex<Choice<T>>,
}

/// What a valid call (the choice) is told.
pub const HANDED_OFF: &str = "Handed off.";
/// What a valid call after the choice is told.
pub const ALREADY_HANDED_OFF: &str = "Ignored: the request was already handed off.";

impl<T: Send> HandoffTool<T> {
    pub fn new(
        spec: ToolSpec,
        parse: impl Fn(&str) -> Result<T, String> + Send + Sync + 'static,
    ) -> HandoffTool<T> {
        HandoffTool {
            spec,
            parse: Box::new(parse),
            answer: None,
            record: Mutex::new(Choice::default()),
        }
    }

    /// The turn's answer, once the choice ended it, is `answer(choice)`.
    pub fn answering(self, answer: fn(&T) -> String) -> HandoffTool<T> {
        HandoffTool {
            answer: Some(answer),
            ..self
        }
    }

    /// What the turn's calls came to (taken: the tool starts over).
    pub fn take(&self) -> Choice<T> {
        std::mem::take(&mut *lock(&self.record))
    }

    /// Answers one call (the calls of a round come one after the other, in the model's order).
    pub fn answer(&self, arguments: &str) -> LentAnswer {
        let parsed = (self.parse)(arguments);
        let mut record = lock(&self.record);
        match parsed {
            Err(error) => {
                record.rejected.push((arguments.to_string(), error.clone()));
                LentAnswer::error(error)
            }
            Ok(_) if record.chosen.is_some() => LentAnswer {
                ends_turn: true,
                ..LentAnswer::error(ALREADY_HANDED_OFF)
            },
            Ok(choice) => {
                let answer = self.answer.map(|f| f(&choice));
                record.chosen = Some(choice);
                LentAnswer {
                    text: HANDED_OFF.to_string(),
                    is_error: false,
                    ends_turn: true,
                    answer,
                }
            }
        }
    }
}

impl<T: Send> TurnTools for HandoffTool<T> {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![self.spec.clone()]
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer> {
        Box::pin(std::future::ready(self.answer(&call.arguments)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick() -> HandoffTool<String> {
        let spec = ToolSpec {
            name: "pick".into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        };
        HandoffTool::new(spec, |args: &str| match args {
            "a" | "b" => Ok(args.to_string()),
            other => Err(format!("`{other}` is not a choice")),
        })
    }

    #[test]
    fn the_first_valid_call_is_the_choice_and_ends_the_turn() {
        let tool = pick();
        assert_eq!(tool.specs()[0].name, "pick");
        let refused = tool.answer("c");
        assert_eq!(refused, LentAnswer::error("`c` is not a choice"));
        let chosen = tool.answer("a");
        assert_eq!(
            (chosen.text.as_str(), chosen.is_error, chosen.ends_turn),
            (HANDED_OFF, false, true)
        );
        assert_eq!(chosen.answer, None, "the model's words stay the answer");
        let again = tool.answer("b");
        assert_eq!((again.text.as_str(), again.is_error), (ALREADY_HANDED_OFF, true));
        assert_eq!(
            tool.take(),
            Choice {
                chosen: Some("a".to_string()),
                rejected: vec![("c".to_string(), "`c` is not a choice".to_string())],
            }
        );
        assert_eq!(tool.take(), Choice::default(), "taken");
    }

    #[test]
    fn a_choice_may_give_the_turn_its_answer() {
        let tool = pick().answering(|c| format!("[picked {c}]"));
        assert_eq!(tool.answer("b").answer.as_deref(), Some("[picked b]"));
        assert_eq!(tool.answer("a").answer, None, "only the choice answers");
        assert_eq!(tool.take().chosen.as_deref(), Some("b"));
    }
}
