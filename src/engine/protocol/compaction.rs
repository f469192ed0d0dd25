//! The words of automatic compaction, for models: the summary request's instructions and the
//! heading the summary is sent under in place of the turns it folds (see `engine/compaction.rs`).

/// The system prompt of the summary request: a short, fixed-format summary.
pub const SUMMARY_SYSTEM: &str = "You compact a conversation so that it can go on in a smaller context. \
Write a summary of the conversation below for the assistant who will continue it: the task and \
its goal, decisions made, facts and figures established, files and names mentioned, what was \
done and what is still open. Use short bullet points under the headings `## Task`, `## Done`, \
`## Facts`, `## Open`. Write only the summary.";

/// Opens the conversation text sent to be summarised.
pub const SUMMARY_ASK: &str = "## Conversation to summarise";

/// Opens the summary where it stands in for the folded turns.
pub const SUMMARY_HEADING: &str = "## Summary of the earlier conversation (compacted)";

/// The assistant's acknowledgement after the summary (keeps the roles alternating).
pub const SUMMARY_ACK: &str = "Understood; I continue from this summary.";

/// The text of a folded conversation, one block per message, each `### <role>`.
pub fn conversation_text(messages: &[crate::providers::ChatMessage], max_chars: usize) -> String {
    let mut out = format!("{SUMMARY_ASK}\n");
    for m in messages {
        let role = match m.role {
            crate::providers::ChatRole::User => "user",
            crate::providers::ChatRole::Assistant => "assistant",
            crate::providers::ChatRole::Tool => "tool result",
        };
        out.push_str(&format!("\n### {role}\n{}\n", m.content));
        for call in &m.tool_calls {
            out.push_str(&format!("(called `{}` with {})\n", call.name, call.arguments));
        }
    }
    // Over the cap, the start (an earlier summary) and the newest part are kept.
    if out.len() > max_chars {
        let mut head = max_chars / 2;
        while !out.is_char_boundary(head) {
            head -= 1;
        }
        let mut tail = out.len() - max_chars / 2;
        while !out.is_char_boundary(tail) {
            tail += 1;
        }
        out = format!("{}\n\n(part left out)\n{}", &out[..head], &out[tail..]);
    }
    out
}

/// The summary where it stands in for the folded turns.
pub fn summary_message(summary: &str) -> String {
    format!("{SUMMARY_HEADING}\n\n{}", summary.trim())
}
