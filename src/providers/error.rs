//! The typed error every provider returns: what went wrong (a kind the engine and the retry loop
//! can act on), a message that tells the user what to do, and the text streamed before it.

use std::time::Duration;

use crate::text::sanitize;

/// What went wrong with a turn, coarse enough to decide on a retry and on wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// 401, or a configured key variable that is not set.
    Auth,
    /// 403: the key is valid but may not use this model or endpoint.
    Permission,
    /// 404: wrong base URL or unknown model.
    NotFound,
    /// 400/422 and similar: the request itself was refused.
    BadRequest,
    /// The conversation does not fit the model's context window (or 413).
    ContextTooLong,
    /// 429 or an in-band rate-limit error.
    RateLimited,
    /// 429 `insufficient_quota` and the like: billing, never retried.
    QuotaExhausted,
    /// 529 / `overloaded_error`.
    Overloaded,
    /// 5xx, 408, 409 or an in-band server error.
    Server,
    /// No answer (or no next chunk) within the read timeout.
    ReadTimeout,
    /// The whole turn took longer than the request's turn timeout.
    TurnTimeout,
    /// Could not connect, or the connection broke mid-stream.
    Connection,
    /// The server sent something that is not the expected wire format.
    Protocol,
    /// The stream ended cleanly but without its end marker: the answer is incomplete.
    Truncated,
    /// The turn was cancelled by the caller.
    Cancelled,
    /// A `command` provider's program exited non-zero.
    Process,
    /// The provider is misconfigured (unknown provider, missing program, bad URL).
    Config,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::Permission => "permission",
            ErrorKind::NotFound => "not_found",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::ContextTooLong => "context_too_long",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::QuotaExhausted => "quota_exhausted",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Server => "server",
            ErrorKind::ReadTimeout => "read_timeout",
            ErrorKind::TurnTimeout => "turn_timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Truncated => "truncated",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Process => "process",
            ErrorKind::Config => "config",
        }
    }

    /// Worth another attempt, provided no text has been streamed yet.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimited
                | ErrorKind::Overloaded
                | ErrorKind::Server
                | ErrorKind::ReadTimeout
                | ErrorKind::Connection
                | ErrorKind::Truncated
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed turn. `message` is complete and actionable on its own (it names the provider).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub kind: ErrorKind,
    /// The configured provider name (`openai`, `claude`, ...).
    pub provider: String,
    pub message: String,
    /// HTTP status, when the error came from one.
    pub status: Option<u16>,
    /// What the server asked us to wait (Retry-After), when it said.
    pub retry_after: Option<Duration>,
    /// Text streamed before the failure (already forwarded as deltas).
    pub partial_text: String,
    /// Attempts made, including the failed one.
    pub attempts: u32,
}

impl ProviderError {
    /// `message` may quote what a server or program said: escape sequences in it are removed
    /// whole, payload and all (as in model text), and control characters dropped.
    pub fn new(kind: ErrorKind, provider: &str, message: impl Into<String>) -> ProviderError {
        let message = message.into();
        let message = match sanitize::display(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(clean) => clean,
        };
        ProviderError {
            kind,
            provider: provider.to_string(),
            message,
            status: None,
            retry_after: None,
            partial_text: String::new(),
            attempts: 1,
        }
    }

    pub fn with_status(mut self, status: u16) -> ProviderError {
        self.status = Some(status);
        self
    }

    pub fn with_retry_after(mut self, wait: Option<Duration>) -> ProviderError {
        self.retry_after = wait;
        self
    }

    pub fn cancelled(provider: &str) -> ProviderError {
        ProviderError::new(
            ErrorKind::Cancelled,
            provider,
            format!("turn on provider `{provider}` was cancelled"),
        )
    }

    pub fn turn_timeout(provider: &str, limit: Duration) -> ProviderError {
        ProviderError::new(
            ErrorKind::TurnTimeout,
            provider,
            format!(
                "turn on provider `{provider}` took longer than {}: stopped (raise the turn timeout if answers are legitimately long)",
                human_duration(limit)
            ),
        )
    }

    /// True when part of an answer had already been streamed.
    pub fn has_partial_text(&self) -> bool {
        !self.partial_text.is_empty()
    }
}

/// An error found while decoding a stream, before it is tied to a provider name.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamError {
    pub kind: ErrorKind,
    pub message: String,
}

impl StreamError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> StreamError {
        StreamError {
            kind,
            message: message.into(),
        }
    }

    pub fn into_provider_error(self, provider: &str) -> ProviderError {
        ProviderError::new(
            self.kind,
            provider,
            format!("provider `{provider}`: {}", self.message),
        )
    }
}

/// The one rule for both HTTP kinds: an event whose data is not valid JSON is a protocol error,
/// whatever its name (`[DONE]` and empty data are not JSON and are not errors).
pub fn not_json(event: &str, err: &serde_json::Error, data: &str) -> StreamError {
    let which = if event.is_empty() || event == "message" {
        "an event".to_string()
    } else {
        format!("a `{event}` event")
    };
    StreamError::new(
        ErrorKind::Protocol,
        format!(
            "sent {which} that is not valid JSON ({err}): {}",
            snippet(data, 120)
        ),
    )
}

/// `1.5 s`, `120 s`, `250 ms`: short and exact enough for messages.
pub fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Shortens untrusted server text for an error message (one line, bounded length). Escape
/// sequences are removed whole (an OSC's title, a CSI's parameters), not only their ESC.
pub fn snippet(text: &str, max_chars: usize) -> String {
    let one_line: String = sanitize::display(&text.replace('\t', " "))
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max_chars {
        one_line
    } else {
        let cut: String = one_line.chars().take(max_chars).collect();
        format!("{cut}...")
    }
}

/// The human message inside a provider's error JSON, whatever its shape:
/// `{"error":{"message":..}}`, `{"error":"..."}`, `{"message":..}`, `{"detail":..}`.
pub fn error_message_from_json(body: &serde_json::Value) -> Option<String> {
    let err = body.get("error").unwrap_or(body);
    if let Some(s) = err.as_str() {
        return Some(s.to_string());
    }
    for key in ["message", "detail", "details"] {
        if let Some(s) = err.get(key).and_then(|m| m.as_str()) {
            return Some(s.to_string());
        }
    }
    None
}

/// The machine-readable code/type of a provider error JSON, lower-cased (`rate_limit_exceeded`,
/// `overloaded_error`, `429`, ...), joined by spaces.
pub fn error_codes_from_json(body: &serde_json::Value) -> String {
    let err = body.get("error").unwrap_or(body);
    let mut codes = Vec::new();
    for key in ["type", "code", "status"] {
        match err.get(key) {
            Some(serde_json::Value::String(s)) => codes.push(s.to_lowercase()),
            Some(serde_json::Value::Number(n)) => codes.push(n.to_string()),
            _ => {}
        }
    }
    codes.join(" ")
}

/// Does this error text say the prompt is too long for the model?
pub fn mentions_context_length(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "contextwindowexceeded",
    ]
    .iter()
    .any(|needle| t.contains(needle))
}

/// Classifies an error reported inside a 200 stream (OpenAI `{"error":..}` chunk, Anthropic
/// `event: error`) from its code/type and message.
pub fn classify_in_band(codes: &str, message: &str) -> ErrorKind {
    let all = format!("{codes} {message}").to_lowercase();
    if all.contains("overloaded") || all.contains("529") {
        ErrorKind::Overloaded
    } else if all.contains("insufficient_quota") {
        ErrorKind::QuotaExhausted
    } else if all.contains("rate_limit") || all.contains("429") {
        ErrorKind::RateLimited
    } else if mentions_context_length(&all) {
        ErrorKind::ContextTooLong
    } else if all.contains("authentication") || all.contains("invalid_api_key") || codes.contains("401") {
        ErrorKind::Auth
    } else if all.contains("invalid_request") || codes.contains("400") {
        ErrorKind::BadRequest
    } else {
        ErrorKind::Server
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn transient_kinds_are_the_documented_ones() {
        assert!(ErrorKind::RateLimited.is_transient());
        assert!(ErrorKind::Overloaded.is_transient());
        assert!(ErrorKind::Connection.is_transient());
        assert!(ErrorKind::Truncated.is_transient());
        for kind in [
            ErrorKind::Auth,
            ErrorKind::BadRequest,
            ErrorKind::ContextTooLong,
            ErrorKind::QuotaExhausted,
            ErrorKind::Cancelled,
            ErrorKind::TurnTimeout,
            ErrorKind::Process,
            ErrorKind::Config,
            ErrorKind::Protocol,
        ] {
            assert!(!kind.is_transient(), "{kind}");
        }
    }

    #[test]
    fn messages_come_out_of_every_error_shape() {
        let openai = json!({"error":{"message":"Rate limit exceeded.","type":"rate_limit_error","code":"rate_limit_exceeded"}});
        assert_eq!(
            error_message_from_json(&openai).as_deref(),
            Some("Rate limit exceeded.")
        );
        assert_eq!(
            error_codes_from_json(&openai),
            "rate_limit_error rate_limit_exceeded"
        );
        let ollama = json!({"error":"model 'x' not found"});
        assert_eq!(
            error_message_from_json(&ollama).as_deref(),
            Some("model 'x' not found")
        );
        let openrouter = json!({"error":{"code":429,"message":"slow down"}});
        assert_eq!(error_codes_from_json(&openrouter), "429");
        let vllm = json!({"code":400,"details":"bad"});
        assert_eq!(error_message_from_json(&vllm).as_deref(), Some("bad"));
    }

    #[test]
    fn in_band_errors_are_classified() {
        assert_eq!(
            classify_in_band("overloaded_error", "Overloaded"),
            ErrorKind::Overloaded
        );
        assert_eq!(classify_in_band("none 500", "mock failure"), ErrorKind::Server);
        assert_eq!(classify_in_band("api_error", "boom"), ErrorKind::Server);
        assert_eq!(classify_in_band("rate_limit_error", ""), ErrorKind::RateLimited);
        assert_eq!(
            classify_in_band("insufficient_quota", ""),
            ErrorKind::QuotaExhausted
        );
        assert_eq!(
            classify_in_band("invalid_request_error", "prompt is too long: 300000 tokens"),
            ErrorKind::ContextTooLong
        );
    }

    #[test]
    fn escape_sequences_in_error_text_are_removed_whole() {
        let hostile = "boom \u{1b}]0;pwned\u{7} \u{1b}[2J\u{1b}P1$rqr\u{1b}\\ done \u{9b}31m!";
        assert_eq!(snippet(hostile, 100), "boom   done !");
        let error = ProviderError::new(ErrorKind::Process, "agent", format!("failed:\n{hostile}"));
        assert_eq!(error.message, "failed:\nboom   done !");
        for payload in ["pwned", "[2J", "rqr", "31m"] {
            assert!(
                !error.message.contains(payload),
                "{payload} in {:?}",
                error.message
            );
        }
    }

    #[test]
    fn snippets_are_one_bounded_line() {
        assert_eq!(snippet("a\nb\tc", 10), "a b c");
        assert_eq!(snippet("abcdefghijkl", 4), "abcd...");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(human_duration(Duration::from_secs(120)), "120 s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5 s");
    }
}
