//! A run's budget: how long a team run may take and how many tokens it may use. Set per team
//! (preset keys `max_duration_secs:` / `token_budget:`), by default in config.yaml (`budget:`),
//! or for one run (`huddle run --max-duration / --token-budget`). The engine checks it between
//! steps and whenever a turn reports its usage; a spent budget ends the run with the outcome
//! `budget_exhausted`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits of one run; `None` is "no limit".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunBudget {
    /// Wall time of the run in seconds (time spent paused does not count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_secs: Option<u64>,
    /// Tokens (input + output, every turn of the run) the run may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
}

/// A budget value that is not a positive whole number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: must be a positive whole number ({what}), got {got}")]
pub struct BudgetError {
    pub key: &'static str,
    pub what: &'static str,
    pub got: u64,
}

/// Which limit ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetLimit {
    Duration,
    Tokens,
}

/// A spent budget: the limit, what was allowed and what was used (seconds or tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetExceeded {
    pub limit: BudgetLimit,
    pub allowed: u64,
    pub used: u64,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            BudgetLimit::Duration => write!(
                f,
                "budget exhausted: the run reached its time limit of {}s ({}s elapsed)",
                self.allowed, self.used
            ),
            BudgetLimit::Tokens => write!(
                f,
                "budget exhausted: the run used {} tokens of its token budget of {}",
                self.used, self.allowed
            ),
        }
    }
}

impl RunBudget {
    pub fn is_empty(&self) -> bool {
        self.max_duration_secs.is_none() && self.token_budget.is_none()
    }

    /// Each limit of `self`, or `fallback`'s where `self` sets none.
    pub fn or(self, fallback: RunBudget) -> RunBudget {
        RunBudget {
            max_duration_secs: self.max_duration_secs.or(fallback.max_duration_secs),
            token_budget: self.token_budget.or(fallback.token_budget),
        }
    }

    /// Zero is not a budget (a run could not start): an error naming the key.
    pub fn validate(&self) -> Result<(), BudgetError> {
        if self.max_duration_secs == Some(0) {
            return Err(BudgetError {
                key: "max_duration_secs",
                what: "seconds",
                got: 0,
            });
        }
        if self.token_budget == Some(0) {
            return Err(BudgetError {
                key: "token_budget",
                what: "tokens",
                got: 0,
            });
        }
        Ok(())
    }

    pub fn max_duration(&self) -> Option<Duration> {
        self.max_duration_secs.map(Duration::from_secs)
    }

    /// The limit spent after `elapsed` (not counting pauses) and `tokens`, if one is. The
    /// token budget is spent when the tokens reach it: the next turn would go over.
    pub fn exceeded(&self, elapsed: Duration, tokens: u64) -> Option<BudgetExceeded> {
        if let Some(allowed) = self.token_budget
            && tokens >= allowed
        {
            return Some(BudgetExceeded {
                limit: BudgetLimit::Tokens,
                allowed,
                used: tokens,
            });
        }
        if let Some(allowed) = self.max_duration_secs
            && elapsed >= Duration::from_secs(allowed)
        {
            return Some(BudgetExceeded {
                limit: BudgetLimit::Duration,
                allowed,
                used: elapsed.as_secs(),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(secs: Option<u64>, tokens: Option<u64>) -> RunBudget {
        RunBudget {
            max_duration_secs: secs,
            token_budget: tokens,
        }
    }

    #[test]
    fn an_empty_budget_is_never_spent_and_not_written() {
        let b = RunBudget::default();
        assert!(b.is_empty());
        assert_eq!(b.exceeded(Duration::from_secs(1 << 40), u64::MAX), None);
        assert_eq!(serde_json::to_string(&b).unwrap(), "{}");
    }

    #[test]
    fn tokens_spend_the_budget_when_they_reach_it() {
        let b = budget(None, Some(1000));
        assert_eq!(b.exceeded(Duration::ZERO, 999), None);
        let spent = b.exceeded(Duration::ZERO, 1000).unwrap();
        assert_eq!(spent.limit, BudgetLimit::Tokens);
        assert_eq!(
            spent.to_string(),
            "budget exhausted: the run used 1000 tokens of its token budget of 1000"
        );
    }

    #[test]
    fn time_spends_the_budget_at_the_limit() {
        let b = budget(Some(60), None);
        assert_eq!(b.exceeded(Duration::from_millis(59_999), 0), None);
        let spent = b.exceeded(Duration::from_secs(61), 0).unwrap();
        assert_eq!(spent.limit, BudgetLimit::Duration);
        assert_eq!(
            spent.to_string(),
            "budget exhausted: the run reached its time limit of 60s (61s elapsed)"
        );
    }

    #[test]
    fn each_limit_falls_back_on_its_own() {
        let run = budget(Some(5), None);
        let team = budget(Some(100), Some(2000));
        assert_eq!(run.or(team), budget(Some(5), Some(2000)));
        assert_eq!(RunBudget::default().or(team), team);
    }

    #[test]
    fn zero_is_an_error_naming_the_key() {
        assert_eq!(
            budget(Some(0), None).validate().unwrap_err().to_string(),
            "max_duration_secs: must be a positive whole number (seconds), got 0"
        );
        assert!(
            budget(None, Some(0))
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("token_budget:")
        );
        assert!(budget(Some(1), Some(1)).validate().is_ok());
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(serde_json::from_str::<RunBudget>(r#"{"max_tokens": 3}"#).is_err());
        let b: RunBudget = serde_json::from_str(r#"{"token_budget": 3}"#).unwrap();
        assert_eq!(b, budget(None, Some(3)));
    }
}
