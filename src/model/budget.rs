//! A run's budget: how long a team run may take, how many tokens it may use and how much money
//! it may spend. Set per team (preset keys `max_duration_secs:` / `token_budget:` /
//! `max_cost_usd:`), by default in config.yaml (`budget:`), or for one run (`huddle run
//! --max-duration / --token-budget / --max-cost`). The engine checks it between steps and
//! whenever a turn reports its usage; a spent budget ends the run with the outcome
//! `budget_exhausted`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits of one run; `None` is "no limit".
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunBudget {
    /// Wall time of the run in seconds (time spent paused does not count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_secs: Option<u64>,
    /// Tokens (input + output, every turn of the run) the run may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// US dollars the run may spend (every turn's tokens at its model's prices, or a CLI
    /// agent's own figure). A run whose models have no known price cannot have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// A budget value out of range: `what` says what it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: must be {what}, got {got}")]
pub struct BudgetError {
    pub key: &'static str,
    pub what: &'static str,
    pub got: String,
}

/// Which limit ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetLimit {
    Duration,
    Tokens,
    Cost,
}

/// A spent budget: the limit, what was allowed and what was used (seconds, tokens, or
/// millionths of a US dollar for the cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetExceeded {
    pub limit: BudgetLimit,
    pub allowed: u64,
    pub used: u64,
}

/// Millionths of a dollar, as [`BudgetExceeded`] counts money.
pub fn micro_usd(usd: f64) -> u64 {
    (usd.max(0.0) * 1_000_000.0).round() as u64
}

/// Dollars as people read them: cents from $1, more digits below, down to a hundredth of a
/// cent (less than that but not nothing reads `<$0.0001`).
pub fn usd_text(usd: f64) -> String {
    if usd > 0.0 && usd < 0.0001 {
        "<$0.0001".to_string()
    } else if usd >= 1.0 || usd <= 0.0 {
        format!("${usd:.2}")
    } else if usd >= 0.01 {
        format!("${usd:.3}")
    } else {
        format!("${usd:.4}")
    }
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
            BudgetLimit::Cost => write!(
                f,
                "budget exhausted: the run spent {} of its cost budget of {} (max_cost_usd)",
                usd_text(self.used as f64 / 1_000_000.0),
                usd_text(self.allowed as f64 / 1_000_000.0)
            ),
        }
    }
}

impl RunBudget {
    pub fn is_empty(&self) -> bool {
        self.max_duration_secs.is_none() && self.token_budget.is_none() && self.max_cost_usd.is_none()
    }

    /// Each limit of `self`, or `fallback`'s where `self` sets none.
    pub fn or(self, fallback: RunBudget) -> RunBudget {
        RunBudget {
            max_duration_secs: self.max_duration_secs.or(fallback.max_duration_secs),
            token_budget: self.token_budget.or(fallback.token_budget),
            max_cost_usd: self.max_cost_usd.or(fallback.max_cost_usd),
        }
    }

    /// Zero is not a budget (a run could not start): an error naming the key.
    pub fn validate(&self) -> Result<(), BudgetError> {
        if self.max_duration_secs == Some(0) {
            return Err(BudgetError {
                key: "max_duration_secs",
                what: "a positive whole number (seconds)",
                got: "0".into(),
            });
        }
        if self.token_budget == Some(0) {
            return Err(BudgetError {
                key: "token_budget",
                what: "a positive whole number (tokens)",
                got: "0".into(),
            });
        }
        if let Some(usd) = self.max_cost_usd
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(BudgetError {
                key: "max_cost_usd",
                what: "a positive amount (US dollars)",
                got: usd.to_string(),
            });
        }
        Ok(())
    }

    pub fn max_duration(&self) -> Option<Duration> {
        self.max_duration_secs.map(Duration::from_secs)
    }

    /// The limit spent after `elapsed` (not counting pauses), `tokens` and `cost_usd`, if one
    /// is. The token and cost budgets are spent when the use reaches them: the next turn would
    /// go over.
    pub fn exceeded(&self, elapsed: Duration, tokens: u64, cost_usd: f64) -> Option<BudgetExceeded> {
        if let Some(allowed) = self.max_cost_usd
            && cost_usd >= allowed
        {
            return Some(BudgetExceeded {
                limit: BudgetLimit::Cost,
                allowed: micro_usd(allowed),
                used: micro_usd(cost_usd),
            });
        }
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
            max_cost_usd: None,
        }
    }

    #[test]
    fn an_empty_budget_is_never_spent_and_not_written() {
        let b = RunBudget::default();
        assert!(b.is_empty());
        assert_eq!(b.exceeded(Duration::from_secs(1 << 40), u64::MAX, f64::MAX), None);
        assert_eq!(serde_json::to_string(&b).unwrap(), "{}");
    }

    #[test]
    fn tokens_spend_the_budget_when_they_reach_it() {
        let b = budget(None, Some(1000));
        assert_eq!(b.exceeded(Duration::ZERO, 999, 0.0), None);
        let spent = b.exceeded(Duration::ZERO, 1000, 0.0).unwrap();
        assert_eq!(spent.limit, BudgetLimit::Tokens);
        assert_eq!(
            spent.to_string(),
            "budget exhausted: the run used 1000 tokens of its token budget of 1000"
        );
    }

    #[test]
    fn time_spends_the_budget_at_the_limit() {
        let b = budget(Some(60), None);
        assert_eq!(b.exceeded(Duration::from_millis(59_999), 0, 0.0), None);
        let spent = b.exceeded(Duration::from_secs(61), 0, 0.0).unwrap();
        assert_eq!(spent.limit, BudgetLimit::Duration);
        assert_eq!(
            spent.to_string(),
            "budget exhausted: the run reached its time limit of 60s (61s elapsed)"
        );
    }

    #[test]
    fn money_spends_the_budget_when_it_reaches_it_and_names_the_cost_budget() {
        let b = RunBudget {
            max_cost_usd: Some(0.5),
            ..RunBudget::default()
        };
        assert_eq!(b.exceeded(Duration::ZERO, u64::MAX - 1, 0.499), None);
        let spent = b.exceeded(Duration::ZERO, 0, 0.5123).unwrap();
        assert_eq!(spent.limit, BudgetLimit::Cost);
        assert_eq!((spent.allowed, spent.used), (500_000, 512_300));
        assert_eq!(
            spent.to_string(),
            "budget exhausted: the run spent $0.512 of its cost budget of $0.500 (max_cost_usd)"
        );
        let b: RunBudget = serde_json::from_str(r#"{"max_cost_usd": 2.5}"#).unwrap();
        assert_eq!(b.max_cost_usd, Some(2.5));
        assert!(!b.is_empty());
    }

    #[test]
    fn dollars_read_with_the_digits_that_matter() {
        assert_eq!(usd_text(0.0), "$0.00");
        assert_eq!(usd_text(12.345), "$12.35");
        assert_eq!(usd_text(1.0), "$1.00");
        assert_eq!(usd_text(0.125), "$0.125");
        assert_eq!(usd_text(0.0042), "$0.0042");
        assert_eq!(usd_text(0.00004), "<$0.0001");
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
        let cost = |usd: f64| RunBudget {
            max_cost_usd: Some(usd),
            ..RunBudget::default()
        };
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = cost(bad).validate().unwrap_err().to_string();
            assert!(
                err.starts_with("max_cost_usd: must be a positive amount (US dollars)"),
                "{err}"
            );
        }
        assert!(cost(0.01).validate().is_ok());
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
