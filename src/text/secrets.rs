//! Secret values huddle sends (a provider's API key and header values, an MCP server's
//! `headers_env` values and a stdio server's `env` values) are removed from everything the
//! other side hands back: error messages, streamed text, tool results, logged retries and
//! stderr. Some proxies echo the key in a 401 body, a server may echo its environment; without
//! this it would reach the model, transcripts, run files, stderr, `--events` and the log.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: replacing `true` or `v1` everywhere would garble
/// messages, and a value that short protects nothing.
pub const MIN_SECRET_CHARS: usize = 6;

/// The secret values of one provider, for one turn (the key is read when the turn starts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Longest first, so a value containing another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    pub fn new<I, S>(values: I) -> Secrets
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list: Vec<String> = Vec::new();
        // `Bearer <token>`: the token alone is a secret too (a server may echo only it).
        let values = values.into_iter().flat_map(|value| {
            let value = value.as_ref().trim().to_string();
            let token = value
                .split_once(char::is_whitespace)
                .map(|(_, token)| token.trim().to_string());
            std::iter::once(value).chain(token)
        });
        for value in values {
            let value = value.as_str();
            if value.chars().count() < MIN_SECRET_CHARS {
                continue;
            }
            // A JSON body carries `"` as `\"`, and `/` as `\/` when the server escapes it.
            let escaped = serde_json::to_string(value)
                .map(|quoted| quoted[1..quoted.len() - 1].to_string())
                .unwrap_or_default();
            let slashes = escaped.replace('/', "\\/");
            for v in [value.to_string(), escaped, slashes] {
                if !v.is_empty() && !list.contains(&v) {
                    list.push(v);
                }
            }
        }
        list.sort_by_key(|v| std::cmp::Reverse(v.len()));
        Secrets { values: list }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret value replaced by [`REDACTED`]; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.values.iter().any(|v| text.contains(v.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), REDACTED);
            }
        }
        Cow::Owned(out)
    }

    /// Redacts `text` in place.
    pub fn redact_in_place(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.redact(text) {
            *text = clean;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_of_every_value_is_replaced() {
        let s = Secrets::new(["sk-live-1234567890", "hdr-value-42", "short", ""]);
        assert_eq!(
            s.redact("key sk-live-1234567890 and sk-live-1234567890 via hdr-value-42; short stays"),
            "key [redacted] and [redacted] via [redacted]; short stays"
        );
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Secrets::new(["abc"]).is_empty());
    }

    #[test]
    fn json_escaped_forms_are_replaced_too() {
        let s = Secrets::new(["ab/cd\"ef"]);
        assert_eq!(s.redact(r#"{"key":"ab\/cd\"ef"}"#), r#"{"key":"[redacted]"}"#);
        assert_eq!(s.redact(r#"{"key":"ab/cd\"ef"}"#), r#"{"key":"[redacted]"}"#);
    }

    #[test]
    fn the_token_of_an_authorization_value_is_a_secret_alone_too() {
        let s = Secrets::new(["Bearer tok-123456789"]);
        assert_eq!(s.redact("got Bearer tok-123456789"), "got [redacted]");
        assert_eq!(
            s.redact("token tok-123456789 refused"),
            "token [redacted] refused"
        );
        assert_eq!(s.redact("a Bearer scheme"), "a Bearer scheme");
    }

    #[test]
    fn a_value_inside_a_longer_one_does_not_leave_pieces() {
        let s = Secrets::new(["secret-one", "xxsecret-one-and-more"]);
        assert_eq!(s.redact("xxsecret-one-and-more"), "[redacted]");
    }
}
