//! One transcript entry, stored as one JSON line in `sessions/<session-id>.jsonl`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::MessageRole;
use super::tool::{ToolCall, ToolResultInfo};

/// Token counts reported by a provider (absent when the server gives none).
///
/// `input_tokens` is every token of the prompt, cached or not (what the context holds);
/// `cache_read_tokens` and `cache_write_tokens` are the parts of it read from and written to
/// the provider's prompt cache (they are priced apart). Anthropic reports its uncached input
/// without the cached parts; its client adds them up, so the meaning is the same for every
/// provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache (a part of `input_tokens`).
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (a part of `input_tokens`).
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Input and output tokens, nothing cached.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }
    }

    // Counts come from servers and files: saturate rather than overflow.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Input tokens neither read from nor written to the cache (billed at the input price).
    pub fn uncached_input(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
    }

    /// What was used since `earlier` (a running total taken before).
    pub fn since(&self, earlier: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_sub(earlier.cache_write_tokens),
        }
    }
}

/// 32 lowercase hex digits (what `format!("{:032x}")` writes, without the formatter's cost: a
/// message id is made for every message).
fn hex_id(bits: u128) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = DIGITS[(bits >> (4 * (31 - i)) & 0xf) as usize];
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A message in a session's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique per message (absent in transcripts written before ids existed): lets a view
    /// that loaded a transcript skip the events of messages it already has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub role: MessageRole,
    #[serde(default)]
    pub text: String,
    #[serde(default = "Utc::now", serialize_with = "super::timestamp::serialize")]
    pub at: DateTime<Utc>,
    /// The model slug that produced an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The answer was cut short (stop, timeout, error); `text` holds what arrived.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Why the turn failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The reflect-cycle iteration this message belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// The tools an assistant message called (its text, if any, came before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a `tool` message: which call this answers, and how it went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result: Option<ToolResultInfo>,
    /// A tool step a CLI agent carried out itself (an assistant message with its call, or the
    /// call's result), recorded to show it: never sent to a model as a tool call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_agent: bool,
    /// What the turn cost, when the provider said (Claude Code's `total_cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// A message relayed between a relay's driver and counterpart: its trace id and hop count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<super::RelayMeta>,
    /// A notice that starts a new conversation: a model is sent nothing from before it (the
    /// earlier messages stay in the file, to read back).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversation_start: bool,
    /// A notice that takes back the exchange starting at this user message (its id) up to
    /// the notice: it was regenerated or edited and sent again. Those messages stay in the
    /// file (marked superseded when shown); a model is never sent them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// Shown as superseded (in memory only: worked out from the `supersedes` notices).
    #[serde(skip)]
    pub superseded: bool,
    /// A prompt of a direct chat with a team member (not part of a team run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
    /// The execution (a dispatched sub-agent's task, a team member's turn) this message is
    /// part of: the trace tree and the TUI's sub-agent cards find its transcript by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    /// On a turn's prompt and its final answer: the run the turn belongs to. A resumed run
    /// finds the turns its interrupted run finished by it, and never asks for them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// On a prompt: the shorter form of it that the conversation keeps, when the prompt carried
    /// more than the model needs to see again in later turns (instructions, a step's inputs).
    /// `text` is what was sent; later turns are sent this instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact: Option<String>,
    /// On a prompt: what was added to the session's system prompt for its turn (a mode's
    /// instructions), recorded when it changed since the session's previous prompt (an empty
    /// text: nothing was added any more). A prompt without it was sent what the nearest
    /// earlier prompt that has it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// On a notice: the conversation before it was compacted (issue 24): what a model is sent
    /// of the history from here on is the summary in place of all but the last `kept` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<Compacted>,
}

/// A compaction of a session's conversation, as recorded in its transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compacted {
    /// Messages of the history (as a model is sent it) kept as they were, at its end.
    pub kept: usize,
    /// Messages folded into the summary.
    pub folded: usize,
    /// The summary the model wrote.
    pub summary: String,
    /// Estimated tokens of the request before and after.
    pub before: u64,
    pub after: u64,
}

impl Message {
    pub fn new(role: MessageRole, text: impl Into<String>) -> Self {
        Message {
            // 128 random bits from a per-thread generator: unique in practice, no system call.
            id: Some(hex_id(fastrand::u128(..))),
            role,
            text: text.into(),
            at: Utc::now(),
            model: None,
            usage: None,
            duration_ms: None,
            interrupted: false,
            error: None,
            iteration: None,
            tool_calls: Vec::new(),
            tool_result: None,
            by_agent: false,
            cost_usd: None,
            relay: None,
            conversation_start: false,
            direct: false,
            execution_id: None,
            run_id: None,
            supersedes: None,
            superseded: false,
            compact: None,
            instructions: None,
            compacted: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::new(MessageRole::User, text)
    }

    /// What a model is sent of this message in a later turn: its compact form when it has one.
    pub fn history_text(&self) -> &str {
        self.compact.as_deref().unwrap_or(&self.text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Message::new(MessageRole::Assistant, text)
    }

    pub fn notice(text: impl Into<String>) -> Self {
        Message::new(MessageRole::Notice, text)
    }

    /// The mark that starts a new conversation in a transcript.
    pub fn conversation_start() -> Self {
        let mut m = Message::notice("new conversation (earlier ones: [ and ])");
        m.conversation_start = true;
        m
    }

    /// The mark that takes back the exchange from user message `from` on (see
    /// [`Message::supersedes`]).
    pub fn superseding(from: &str, why: &str) -> Self {
        let mut m = Message::notice(why);
        m.supersedes = Some(from.to_string());
        m
    }

    /// A tool's result as sent back to the model.
    pub fn tool(text: impl Into<String>, info: ToolResultInfo) -> Self {
        let mut m = Message::new(MessageRole::Tool, text);
        m.tool_result = Some(info);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_32_lowercase_hex_digits() {
        for bits in [0, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210] {
            assert_eq!(hex_id(bits), format!("{bits:032x}"));
        }
        let id = Message::user("x").id.unwrap();
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn minimal_line_reads_with_defaults() {
        let m: Message = serde_json::from_str(r#"{"role":"User","text":"hi","extra":1}"#).unwrap();
        assert_eq!(m.role, MessageRole::User);
        assert_eq!(m.text, "hi");
        assert!(!m.interrupted);
    }

    #[test]
    fn usage_saturates_instead_of_overflowing() {
        let mut u = Usage::new(u64::MAX, 5);
        assert_eq!(u.total(), u64::MAX);
        u.add(Usage::new(1, 1));
        assert_eq!(u.input_tokens, u64::MAX);
        assert_eq!(u.since(Usage::new(0, 9)).output_tokens, 0);
    }

    #[test]
    fn optional_fields_are_left_out_when_empty() {
        let line = serde_json::to_string(&Message::user("x")).unwrap();
        assert!(!line.contains("usage"), "{line}");
        assert!(!line.contains("interrupted"), "{line}");
        assert!(!line.contains('\n'));
    }
}
