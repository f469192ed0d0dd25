//! The completion summary written to the orchestrator's transcript and sent with
//! `cycle_finished` (SPEC section 4): outcome, iterations i/N, scores, trend, duration, tokens.

use std::fmt::Write as _;
use std::time::Duration;

use crate::model::{CycleOutcome, ReflectionCycle, Trend, Usage};
use crate::text::thousands;

use super::types::format_duration;

/// What the summary reports.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryInput {
    pub outcome: CycleOutcome,
    pub iterations: u32,
    pub max_iterations: u32,
    /// Scores in iteration order.
    pub scores: Vec<f64>,
    pub trend: Option<Trend>,
    pub duration: Duration,
    pub usage: Usage,
    /// Per scored iteration: its number, tokens and wall time.
    pub per_iteration: Vec<(u32, Usage, Duration)>,
}

impl SummaryInput {
    /// From a cycle's state; the outcome is passed in because it is decided by the caller at
    /// the moment the cycle ends.
    pub fn from_cycle(cycle: &ReflectionCycle, outcome: CycleOutcome) -> Self {
        SummaryInput {
            outcome,
            iterations: cycle.iteration,
            max_iterations: cycle.max_iterations,
            scores: cycle.evaluations.iter().map(|e| e.score).collect(),
            trend: cycle.evaluations.last().and_then(|e| e.trend),
            duration: Duration::from_millis(cycle.duration_ms),
            usage: cycle.usage,
            per_iteration: cycle
                .evaluations
                .iter()
                .map(|e| (e.iteration, e.usage, Duration::from_millis(e.duration_ms)))
                .collect(),
        }
    }
}

/// A sentence naming the outcome truthfully (never "done" for a cycle that was stopped).
pub fn outcome_sentence(outcome: CycleOutcome, max_iterations: u32) -> String {
    match outcome {
        CycleOutcome::GoalMet => "goal met".to_string(),
        CycleOutcome::MaxIterations => {
            format!("stopped at the iteration limit ({max_iterations}) before the goal was met")
        }
        CycleOutcome::Stalled => {
            "stopped because the answers stalled (no progress between iterations)".to_string()
        }
        CycleOutcome::ErrorBudget => "stopped after three consecutive errors".to_string(),
        CycleOutcome::Cancelled => "cancelled before the goal was met".to_string(),
        CycleOutcome::Completed => "completed".to_string(),
        CycleOutcome::SaveFailed => "stopped because its state could not be saved".to_string(),
        CycleOutcome::BudgetExhausted => "stopped because its budget ran out".to_string(),
        CycleOutcome::Failed => "failed: it could not do its work".to_string(),
        CycleOutcome::RateLimited => {
            "stopped because a rate or usage limit would not reset in time (it can be resumed)".to_string()
        }
    }
}

/// The summary text, one fact per line.
pub fn completion_summary(input: &SummaryInput) -> String {
    let mut out = String::new();
    // The outcome's code word after its sentence, unless the sentence is that word.
    let sentence = outcome_sentence(input.outcome, input.max_iterations);
    if sentence == input.outcome.as_str() {
        let _ = writeln!(out, "Cycle finished: {sentence}.");
    } else {
        let _ = writeln!(out, "Cycle finished: {sentence} ({}).", input.outcome);
    }
    let _ = writeln!(out, "Iterations: {}/{}", input.iterations, input.max_iterations);
    if input.scores.is_empty() {
        out.push_str("Scores: none recorded");
    } else {
        let scores: Vec<String> = input.scores.iter().map(|s| format!("{s:.2}")).collect();
        let _ = write!(out, "Scores: {}", scores.join(" → "));
    }
    match input.trend {
        Some(trend) => {
            let _ = writeln!(out, " (trend: {trend})");
        }
        None => out.push('\n'),
    }
    let _ = writeln!(out, "Duration: {}", format_duration(input.duration));
    let _ = write!(
        out,
        "Tokens: {} ({} in, {} out)",
        thousands(input.usage.total()),
        thousands(input.usage.input_tokens),
        thousands(input.usage.output_tokens)
    );
    for (iteration, usage, duration) in &input.per_iteration {
        let _ = write!(
            out,
            "\n  iteration {iteration}: {} tokens, {}",
            thousands(usage.total()),
            format_duration(*duration)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::model::Evaluation;

    fn input(outcome: CycleOutcome) -> SummaryInput {
        SummaryInput {
            outcome,
            iterations: 3,
            max_iterations: 5,
            scores: vec![0.6, 0.77, 0.94],
            trend: Some(Trend::Improving),
            duration: Duration::from_secs(133),
            usage: Usage::new(10_000, 2_345),
            per_iteration: vec![(1, Usage::new(1_000, 234), Duration::from_millis(2_500))],
        }
    }

    #[test]
    fn per_iteration_accounting_is_listed() {
        let text = completion_summary(&input(CycleOutcome::GoalMet));
        assert!(text.contains("iteration 1: 1,234 tokens, 2.5s"), "{text}");
    }

    /// A completed run's summary says `completed` once (it said `completed (completed)`).
    #[test]
    fn an_outcome_whose_sentence_is_its_word_says_it_once() {
        let text = completion_summary(&input(CycleOutcome::Completed));
        assert!(text.starts_with("Cycle finished: completed.\n"), "{text}");
    }

    #[test]
    fn goal_met_summary() {
        assert_eq!(
            completion_summary(&input(CycleOutcome::GoalMet)),
            "Cycle finished: goal met (goal_met).\n\
             Iterations: 3/5\n\
             Scores: 0.60 → 0.77 → 0.94 (trend: improving)\n\
             Duration: 2m 13s\n\
             Tokens: 12,345 (10,000 in, 2,345 out)\n  \
             iteration 1: 1,234 tokens, 2.5s"
        );
    }

    #[test]
    fn every_outcome_is_named_truthfully() {
        for outcome in [
            CycleOutcome::MaxIterations,
            CycleOutcome::Stalled,
            CycleOutcome::ErrorBudget,
            CycleOutcome::Cancelled,
        ] {
            let text = completion_summary(&input(outcome));
            assert!(text.contains(outcome.as_str()), "{text}");
            assert!(!text.contains("goal met ("), "{text}");
        }
        assert!(completion_summary(&input(CycleOutcome::MaxIterations)).contains("iteration limit (5)"));
    }

    #[test]
    fn from_cycle_reads_the_state() {
        let cycle = ReflectionCycle {
            iteration: 2,
            max_iterations: 4,
            evaluations: vec![
                Evaluation {
                    iteration: 1,
                    score: 0.4,
                    rationale: String::new(),
                    evaluator_model: None,
                    at: Utc::now(),
                    trend: None,
                    usage: Default::default(),
                    duration_ms: 0,
                    assigned: Vec::new(),
                },
                Evaluation {
                    iteration: 2,
                    score: 0.2,
                    rationale: String::new(),
                    evaluator_model: None,
                    at: Utc::now(),
                    trend: Some(Trend::Degrading),
                    usage: Default::default(),
                    duration_ms: 0,
                    assigned: Vec::new(),
                },
            ],
            duration_ms: 900,
            ..ReflectionCycle::default()
        };
        let text = completion_summary(&SummaryInput::from_cycle(&cycle, CycleOutcome::Stalled));
        assert!(text.contains("Iterations: 2/4"), "{text}");
        assert!(text.contains("Scores: 0.40 → 0.20 (trend: degrading)"), "{text}");
        assert!(
            text.contains("Duration: 900ms") && text.contains("Tokens: 0 (0 in, 0 out)"),
            "{text}"
        );
        let none = SummaryInput {
            scores: vec![],
            trend: None,
            ..input(CycleOutcome::Completed)
        };
        assert!(completion_summary(&none).contains("Scores: none recorded\n"));
    }

    #[test]
    fn thousands_separator() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
