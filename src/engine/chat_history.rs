//! What a model is sent of a stored conversation: a transcript's messages as chat messages
//! (compact forms, exchanges taken back, a CLI agent's own steps as text). Read by a session's
//! turns and by a resumed run's replay.

use std::sync::Arc;

use crate::model::{Message, MessageRole};
use crate::providers::ChatMessage;
use crate::tools::limits::result_line;

/// What a model is sent of a stored conversation: user messages (in their compact form, when
/// they have one) and assistant messages and tool results since the last conversation start, less exchanges taken back (`supersedes`),
/// without failed answers and empty ones (an answer that called tools is kept, empty
/// or not). Calls whose result never got stored (a crash mid-call) are answered as lost, so
/// every call in the history has its result, as both APIs require.
///
/// Steps a CLI agent carried out itself (`by_agent`) are not tool calls of this conversation
/// (their tools were never declared to any model): they become plain text, the agent's words
/// and one line per call with the first line of its result, at the start of the answer that
/// followed them.
pub fn chat_history<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    let mut agent_text = String::new();
    let flush_agent = |out: &mut Vec<ChatMessage>, agent_text: &mut String| {
        if !agent_text.trim().is_empty() {
            out.push(ChatMessage::assistant(agent_text.trim_end().to_string()));
        }
        agent_text.clear();
    };
    let mut open_calls: Vec<crate::model::ToolCall> = Vec::new();
    let close_open = |out: &mut Vec<ChatMessage>, open: &mut Vec<crate::model::ToolCall>| {
        for call in open.drain(..) {
            out.push(ChatMessage::tool_result(
                &call.id,
                &call.name,
                true,
                "lost: huddle stopped before this tool call finished",
            ));
        }
    };
    // Where each user message's exchange began in `out`, for a later `supersedes`.
    let mut starts: Vec<(&str, usize)> = Vec::new();
    for m in messages {
        if m.conversation_start {
            out.clear();
            agent_text.clear();
            open_calls.clear();
            starts.clear();
            continue;
        }
        if let Some(from) = &m.supersedes {
            if let Some(i) = starts.iter().rposition(|(id, _)| *id == from.as_str()) {
                out.truncate(starts[i].1);
                starts.truncate(i);
                agent_text.clear();
                open_calls.clear();
            }
            continue;
        }

        if let Some(c) = &m.compacted {
            flush_agent(&mut out, &mut agent_text);
            let cut = super::compaction::fold(&mut out, c.kept, &c.summary);
            starts.retain_mut(|(_, i)| {
                let kept = *i >= cut;
                *i = (*i + 2).saturating_sub(cut);
                kept
            });
            continue;
        }
        if m.by_agent {
            agent_step_text(m, &mut agent_text);
            continue;
        }
        match m.role {
            MessageRole::Assistant if m.error.is_none() && !agent_text.is_empty() => {}
            _ => flush_agent(&mut out, &mut agent_text),
        }
        match m.role {
            MessageRole::Tool => {
                let Some(info) = &m.tool_result else { continue };
                let Some(i) = open_calls.iter().position(|c| c.id == info.call_id) else {
                    continue;
                };
                open_calls.remove(i);
                out.push(ChatMessage::tool_result(
                    &info.call_id,
                    &info.name,
                    info.is_error,
                    m.text.as_str(),
                ));
            }
            MessageRole::User if !m.history_text().trim().is_empty() => {
                close_open(&mut out, &mut open_calls);
                if let Some(id) = &m.id {
                    starts.push((id.as_str(), out.len()));
                }
                out.push(ChatMessage::user(m.history_text()));
            }
            MessageRole::Assistant if m.error.is_none() && !m.tool_calls.is_empty() => {
                close_open(&mut out, &mut open_calls);
                let text = with_agent_text(&mut agent_text, &m.text);
                out.push(ChatMessage::assistant_calls(text, m.tool_calls.clone()));
                open_calls = m.tool_calls.clone();
            }
            MessageRole::Assistant
                if m.error.is_none() && !(m.text.trim().is_empty() && agent_text.is_empty()) =>
            {
                close_open(&mut out, &mut open_calls);
                let text = with_agent_text(&mut agent_text, &m.text);
                out.push(ChatMessage::assistant(text));
            }
            _ => {}
        }
    }
    flush_agent(&mut out, &mut agent_text);
    close_open(&mut out, &mut open_calls);
    out
}

/// A CLI agent's step as text: its words, `[ran <tool> <arguments>]`, `[→ <result's first
/// line>]`.
fn agent_step_text(m: &Message, out: &mut String) {
    if !m.text.trim().is_empty() {
        out.push_str(m.text.trim_end());
        out.push('\n');
    }
    for call in &m.tool_calls {
        out.push_str(&format!(
            "[ran {} {}]\n",
            call.name,
            result_line(&call.arguments, 200)
        ));
    }
    if let Some(info) = &m.tool_result {
        let mark = if info.is_error { "✗" } else { "→" };
        out.push_str(&format!("[{mark} {}]\n", result_line(&m.text, 200)));
    }
}

/// `text` preceded by the agent's steps that came before it (taken).
fn with_agent_text(agent_text: &mut String, text: &str) -> Arc<str> {
    if agent_text.is_empty() {
        return text.into();
    }
    let mut out = std::mem::take(agent_text);
    out.push('\n');
    out.push_str(text);
    out.into()
}
