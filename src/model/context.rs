//! How full a conversation's context is: the size of the next request, estimated from what
//! the transcript holds, against the model's context window when it is known.

use super::{Message, MessageRole};

/// Well-known models' context windows in tokens, by the start of the model's name (the
/// longest match wins). A provider's `context_window:` in config.yaml comes first.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("claude-sonnet-4", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-1.5", 1_048_576),
    ("gemini-2", 1_048_576),
    ("deepseek", 128_000),
    ("llama3.1", 128_000),
    ("llama3.2", 128_000),
    ("llama3.3", 128_000),
    ("llama-3.1", 128_000),
    ("llama-3.3", 128_000),
    ("mistral-large", 128_000),
    ("qwen2.5", 32_768),
    ("qwen3", 40_960),
    // The simulator pretends to a small window, so the meter has something to show offline.
    ("sim:", 32_000),
];

/// The context window of `provider`/`model` from the table above, if the model is well known.
pub fn known_context_window(provider: &str, model: &str) -> Option<u64> {
    if provider == "sim" {
        return lookup("sim:");
    }
    // `org/model` and `ollama` tags (`qwen3:8b`): the name proper is after the last `/`.
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    lookup(&name)
}

fn lookup(name: &str) -> Option<u64> {
    KNOWN_WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// Rough tokens of a text: a quarter of its characters (what is used when no provider
/// reported a count).
pub fn tokens_of_text(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// What a later request carries of a message: a prompt's compact form when it has one.
fn message_chars(m: &Message) -> usize {
    m.history_text().len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>()
}

/// Tokens of the next request of a conversation (`messages` since its start, `system_chars`
/// of system prompt): the last answer's reported input and output tokens plus what was
/// added after it, or, with no reported count, a quarter of the characters of everything.
pub fn next_request_tokens(messages: &[Message], system_chars: usize) -> u64 {
    let counts = |m: &Message| match m.role {
        MessageRole::User | MessageRole::Assistant | MessageRole::Tool => {
            m.error.is_none() || !m.text.is_empty()
        }
        _ => false,
    };
    let last_counted = messages
        .iter()
        .rposition(|m| m.role == MessageRole::Assistant && m.usage.is_some_and(|u| u.input_tokens > 0));
    let (base, rest) = match last_counted {
        Some(i) => {
            let usage = messages[i].usage.unwrap_or_default();
            (usage.total(), &messages[i + 1..])
        }
        None => (tokens_of_text(system_chars), messages),
    };
    let added: usize = rest.iter().filter(|m| counts(m)).map(message_chars).sum();
    base.saturating_add(tokens_of_text(added))
}

/// How full the context is: under 80 %, from 80 % (warn), from 95 % (about to overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextLevel {
    Fine,
    Warn,
    Full,
}

/// Tokens against the window: the percentage (rounded down) and its level.
pub fn context_level(tokens: u64, window: u64) -> (u64, ContextLevel) {
    let percent = tokens.saturating_mul(100) / window.max(1);
    let level = match percent {
        0..80 => ContextLevel::Fine,
        80..95 => ContextLevel::Warn,
        _ => ContextLevel::Full,
    };
    (percent, level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;

    #[test]
    fn known_windows_match_the_longest_prefix_of_the_model_name() {
        assert_eq!(
            known_context_window("anthropic", "claude-sonnet-4-5"),
            Some(200_000)
        );
        assert_eq!(known_context_window("openai", "gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_context_window("openai", "gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("openai", "gpt-4"), Some(8_192));
        assert_eq!(known_context_window("ollama", "qwen3:8b"), Some(40_960));
        assert_eq!(
            known_context_window("openrouter", "meta/llama3.3-70b"),
            Some(128_000)
        );
        assert_eq!(known_context_window("sim", "slow-300ms"), Some(32_000));
        assert_eq!(known_context_window("ollama", "my-own-model"), None);
    }

    #[test]
    fn the_estimate_starts_from_the_last_reported_count() {
        let mut answer = Message::assistant("a".repeat(40));
        answer.usage = Some(Usage {
            input_tokens: 1_000,
            output_tokens: 10,
        });
        let messages = vec![
            Message::user("q".repeat(400)),
            answer,
            Message::user("x".repeat(80)),
        ];
        assert_eq!(next_request_tokens(&messages, 4_000), 1_010 + 20);
        // Nothing reported: a quarter of every character, the system prompt's included.
        let plain = vec![Message::user("q".repeat(400)), Message::assistant("a".repeat(40))];
        assert_eq!(next_request_tokens(&plain, 40), 10 + 110);
        // A prompt counts as later requests carry it: its compact form.
        let mut step = Message::user("s".repeat(4_000));
        step.compact = Some("c".repeat(40));
        assert_eq!(next_request_tokens(&[step], 0), 10);
        assert_eq!(next_request_tokens(&[], 0), 0);
    }

    #[test]
    fn levels_warn_from_80_and_say_full_from_95_percent() {
        assert_eq!(context_level(79, 100), (79, ContextLevel::Fine));
        assert_eq!(context_level(80, 100), (80, ContextLevel::Warn));
        assert_eq!(context_level(95, 100), (95, ContextLevel::Full));
        assert_eq!(context_level(300, 100).1, ContextLevel::Full);
        assert_eq!(context_level(5, 0).1, ContextLevel::Full);
    }
}
