//! When a relay draft waits for the user: the approval mode, the relay's review rules, and
//! (always, in `semi_auto` too) a draft that looks like it carries a secret, a key or a
//! private URL. Pure functions; what looks like a secret is `text::secrets`.

use regex::Regex;

use crate::model::ApprovalMode;
use crate::model::relay::ReviewRules;
use crate::text::secrets::secret_in;

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
