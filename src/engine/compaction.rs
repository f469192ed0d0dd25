//! Automatic compaction (issue 24): before a turn's request would pass `compact_at` of its
//! model's context window (config.yaml's `context_window:`, else the table of well-known
//! models), the session's conversation, except its last exchange, is summarised by the same
//! model (the words: `engine/protocol/compaction.rs`) and the summary stands in for it in what
//! is sent from then on. The transcript keeps every message, plus a notice carrying the
//! summary ([`crate::model::Compacted`]), so a session read back from disk is sent the same. A
//! summary that fails leaves the conversation as it was (the turn goes on uncompacted). A CLI
//! agent keeps its own context and is never compacted by huddle.

use tokio_util::sync::CancellationToken;

use super::protocol::compaction::{SUMMARY_ACK, SUMMARY_SYSTEM, conversation_text, summary_message};
use crate::providers::{ChatMessage, ChatRole, Provider, TurnRequest};

pub use crate::config::DEFAULT_COMPACT_AT;

/// The characters of `messages` a request's estimated tokens count (texts and tool calls; see
/// `tokens_of_text`).
pub(crate) fn chars(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .map(|m| {
            m.content.len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len())
                    .sum::<usize>()
        })
        .sum()
}

/// How many messages at the end of `history` are kept as they are: its last exchange (a user
/// message and what followed it; a tool exchange is never cut). `None` when folding the rest
/// would not make the history shorter (a summary pair stands for it).
pub(crate) fn kept(history: &[ChatMessage]) -> Option<usize> {
    let last_user = history.iter().rposition(|m| m.role == ChatRole::User)?;
    (last_user > 2).then_some(history.len() - last_user)
}

/// Folds all but the last `kept` messages of `history` into `summary`; returns how many went.
pub(crate) fn fold(history: &mut Vec<ChatMessage>, kept: usize, summary: &str) -> usize {
    let cut = history.len().saturating_sub(kept);
    history.splice(
        ..cut,
        [
            ChatMessage::user(summary_message(summary)),
            ChatMessage::assistant(SUMMARY_ACK),
        ],
    );
    cut
}

/// The summary of `messages` by the model of `request` (whose system prompt and messages are
/// replaced); `None` when it failed or said nothing.
pub(crate) async fn summarize(
    provider: &dyn Provider,
    mut request: TurnRequest,
    messages: &[ChatMessage],
    window: u64,
    cancel: &CancellationToken,
) -> Option<String> {
    // The summary request must fit the window itself: half of it for the conversation.
    let max_chars = (window as usize / 2).saturating_mul(4);
    request.system = Some(SUMMARY_SYSTEM.into());
    request.messages = vec![ChatMessage::user(conversation_text(messages, max_chars))];
    match provider
        .stream_turn(request, &mut |_: &str| {}, cancel.clone())
        .await
    {
        Ok(out) if !out.text.trim().is_empty() => Some(out.text),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "compaction: the summary failed; the conversation goes on as it was");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_characters_are_its_texts_and_its_tool_calls() {
        use crate::model::ToolCall;
        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: "{\"path\":\"a.rs\"}".into(),
        };
        let messages = [
            ChatMessage::user("twelve chars"),
            ChatMessage::assistant(""),
            ChatMessage::assistant_calls("ok", vec![call.clone()]),
        ];
        // (The call's id is not sent as text.)
        assert_eq!(chars(&messages), 12 + 2 + call.name.len() + call.arguments.len());
        assert_eq!(chars(&[]), 0);
    }

    fn exchanges(n: usize) -> Vec<ChatMessage> {
        (0..n)
            .flat_map(|i| {
                [
                    ChatMessage::user(format!("q{i}")),
                    ChatMessage::assistant(format!("a{i}")),
                ]
            })
            .collect()
    }

    #[test]
    fn all_but_the_last_exchange_is_folded_and_a_fold_folds_the_summary_again() {
        let mut history = exchanges(4);
        assert_eq!(kept(&history), Some(2));
        assert_eq!(fold(&mut history, 2, "S1"), 6);
        assert_eq!(history.len(), 4);
        assert!(history[0].content.contains("S1"));
        assert_eq!(&*history[2].content, "q3");
        // Nothing to gain: the summary pair and one exchange.
        assert_eq!(kept(&history), None);
        history.extend(exchanges(2));
        // The second fold takes the first summary and what came after it, never less.
        assert_eq!(kept(&history), Some(2));
        assert_eq!(fold(&mut history, 2, "S2"), 6);
        assert!(history[0].content.contains("S2"));
        assert_eq!(&*history[2].content, "q1");
    }
}
