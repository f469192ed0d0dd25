//! Secret values huddle sends (a provider's API key and header values, an MCP server's
//! `headers_env` values and a stdio server's `env` values) are removed from everything the
//! other side hands back: error messages, streamed text, tool results, logged retries and
//! stderr. Some proxies echo the key in a 401 body, a server may echo its environment; without
//! this it would reach the model, transcripts, run files, stderr, `--events` and the log.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: replacing `true` or `v1` everywhere would garble
/// messages, and a value that short protects nothing.
pub const MIN_SECRET_CHARS: usize = 6;

/// The secret values of one provider, for one turn (the key is read when the turn starts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Longest first, so a value containing another is replaced whole. Shared: every turn's
    /// guard and tool call holds the secrets, and a copy of them each time cost an allocation
    /// per value.
    values: std::sync::Arc<[String]>,
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
        Secrets { values: list.into() }
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
        for v in self.values.iter() {
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

/// What looks like a secret: private keys, common API key shapes, `password=...`-style
/// assignments, JWTs, URLs with credentials or pointing at private hosts.
const SECRET_PATTERNS: &[(&str, &str)] = &[
    ("a private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    ("an API key", r"\b(?:sk|pk|rk)-(?:[A-Za-z]+-)?[A-Za-z0-9_\-]{16,}"),
    ("an AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "a GitHub token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{20,}",
    ),
    ("a Slack token", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_\-]{30,}"),
    (
        "a JSON web token",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    (
        "a password or secret",
        r#"(?i)\b(?:api[_\-]?key|secret|password|passwd|pwd|token|bearer)\b["']?\s*[:=]\s*["']?[^\s"']{6,}"#,
    ),
    (
        "a URL with credentials",
        r"(?i)\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s@]+@",
    ),
    (
        "a private URL",
        r"(?i)\bhttps?://(?:localhost|127\.\d+\.\d+\.\d+|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+|[a-z0-9.\-]+\.(?:internal|local|corp|lan|intranet))\b",
    ),
];

fn secret_patterns() -> &'static [(&'static str, Regex)] {
    static COMPILED: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        SECRET_PATTERNS
            .iter()
            // The patterns are constants checked by a unit test; one that did not compile would
            // only be left out.
            .filter_map(|(what, p)| Regex::new(p).ok().map(|r| (*what, r)))
            .collect()
    })
}

/// What kind of secret the text seems to carry, if any.
pub fn secret_in(text: &str) -> Option<&'static str> {
    secret_patterns()
        .iter()
        .find(|(_, r)| r.is_match(text))
        .map(|(what, _)| *what)
}

/// The text with everything that looks like a secret replaced by `[redacted]` (for audit
/// lines and failure reasons).
pub fn redact_secrets(text: &str) -> String {
    redact_matching(text, |_| true)
}

/// What counts as a credential for [`redact_credentials`]: every pattern but a private URL.
const PRIVATE_URL: &str = "a private URL";

/// The text with keys, tokens, passwords and private keys replaced by `[redacted]`, private
/// URLs kept: for the lines a front end draws or prints, where `http://localhost:3000` in a
/// tool call is the user's own information, while a key quoted from an agent's words or a
/// tool's output ends up in scrollback and CI logs.
pub fn redact_credentials(text: &str) -> String {
    redact_matching(text, |what| what != PRIVATE_URL)
}

fn redact_matching(text: &str, wanted: impl Fn(&str) -> bool) -> String {
    let mut out = Cow::Borrowed(text);
    for (_, r) in secret_patterns().iter().filter(|(what, _)| wanted(what)) {
        // Copied only when a pattern matched.
        if let Cow::Owned(replaced) = r.replace_all(&out, REDACTED) {
            out = Cow::Owned(replaced);
        }
    }
    out.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_and_private_urls_kept() {
        let text = "key sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXY at http://localhost:3000/x";
        assert_eq!(
            redact_credentials(text),
            "key [redacted] at http://localhost:3000/x"
        );
        assert_eq!(redact_secrets(text), "key [redacted] at [redacted]:3000/x");
        assert_eq!(redact_credentials("plain words"), "plain words");
    }

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

    #[test]
    fn every_secret_pattern_compiles() {
        assert_eq!(secret_patterns().len(), SECRET_PATTERNS.len());
    }

    #[test]
    fn secrets_are_found_and_redacted() {
        for (text, what) in [
            ("use sk-live-abcdefghijklmnop1234 please", "an API key"),
            ("AKIAABCDEFGHIJKLMNOP", "an AWS access key"),
            ("-----BEGIN RSA PRIVATE KEY-----", "a private key"),
            ("password: hunter2hunter2", "a password or secret"),
            ("see http://build.corp/x", "a private URL"),
            ("see http://10.1.2.3:8080/x", "a private URL"),
            ("https://me:pw@example.com", "a URL with credentials"),
        ] {
            assert_eq!(secret_in(text), Some(what), "{text}");
        }
        assert_eq!(secret_in("We offer 450 euros, delivery on Friday."), None);
        assert_eq!(secret_in("see https://example.com/docs"), None);
        let clean = redact_secrets("key sk-live-abcdefghijklmnop1234 end");
        assert_eq!(clean, "key [redacted] end");
    }
}
