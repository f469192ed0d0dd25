//! When a relay draft waits for the user: the approval mode, the relay's review rules, and
//! (always, in `semi_auto` too) a draft that looks like it carries a secret, a key or a
//! private URL. Pure functions; the patterns are compiled once per run.

use std::sync::OnceLock;

use regex::Regex;

use crate::model::ApprovalMode;
use crate::model::relay::ReviewRules;

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
pub(crate) fn secret_in(text: &str) -> Option<&'static str> {
    secret_patterns()
        .iter()
        .find(|(_, r)| r.is_match(text))
        .map(|(what, _)| *what)
}

/// The text with everything that looks like a secret replaced by `[redacted]` (for audit
/// lines and failure reasons).
pub(crate) fn redact_secrets(text: &str) -> String {
    let mut out = text.to_string();
    for (_, r) in secret_patterns() {
        out = r
            .replace_all(&out, crate::providers::secrets::REDACTED)
            .into_owned();
    }
    out
}

/// A relay's review rules, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Review {
    patterns: Vec<Regex>,
    max_length: Option<usize>,
}

impl Review {
    /// Compiles the rules; an invalid pattern is an error naming it.
    pub fn new(rules: &ReviewRules) -> Result<Review, String> {
        let patterns = rules
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| Regex::new(p).map_err(|e| format!("relay.review.patterns[{i}] `{p}`: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Review {
            patterns,
            max_length: rules.max_length,
        })
    }

    /// Why the draft waits for the user in this approval mode (None: it is sent as it is).
    pub fn needs_review(&self, approval: ApprovalMode, draft: &str) -> Option<String> {
        match approval {
            ApprovalMode::FullAuto => None,
            ApprovalMode::Manual => Some("manual approval".into()),
            ApprovalMode::SemiAuto => {
                if let Some(what) = secret_in(draft) {
                    return Some(format!("it looks like it carries {what}"));
                }
                let length = draft.chars().count();
                if let Some(max) = self.max_length.filter(|m| length > *m) {
                    return Some(format!("it is {length} characters long (review above {max})"));
                }
                self.patterns
                    .iter()
                    .find(|p| p.is_match(draft))
                    .map(|p| format!("it matches the review pattern `{}`", p.as_str()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn approval_modes_and_rules() {
        let review = Review::new(&ReviewRules {
            patterns: vec![r"(?i)\bdiscount\b".into()],
            max_length: Some(50),
        })
        .unwrap();
        let plain = "Can you do 400?";
        assert_eq!(
            review.needs_review(ApprovalMode::FullAuto, "sk-live-abcdefghijklmnop1234"),
            None
        );
        assert!(review.needs_review(ApprovalMode::Manual, plain).is_some());
        assert_eq!(review.needs_review(ApprovalMode::SemiAuto, plain), None);
        assert!(
            review
                .needs_review(ApprovalMode::SemiAuto, "a Discount?")
                .unwrap()
                .contains("review pattern")
        );
        assert!(
            review
                .needs_review(ApprovalMode::SemiAuto, &"x".repeat(51))
                .unwrap()
                .contains("51 characters")
        );
        assert!(
            review
                .needs_review(ApprovalMode::SemiAuto, "token=abcdef123456")
                .unwrap()
                .contains("secret")
        );
        assert!(
            Review::new(&ReviewRules {
                patterns: vec!["(".into()],
                max_length: None
            })
            .is_err()
        );
    }
}
