//! A run's course: its start, iterations and phases, assignments and workers, evaluations,
//! stalls and adjustments, pauses, its end; and the notes a user leaves for a member.

use super::{Line, Tone, colon_quote, duration, quote};
use crate::engine::events::Phase;
use crate::model::{Counts, CycleOutcome, Mode, Trend};

/// The most characters of an assignment's task (its lines joined): a front end that wraps
/// shows it whole, one that does not cuts the line.
const TASK_MAX: usize = 2000;

/// `dispatch run`, `orchestrator_reflect run (at most 4 iterations)`, `relay run (at most 8
/// turns)`: the limit in what the mode counts (turns are always said, iterations when more
/// than one).
pub fn run_started(mode: Mode, max_iterations: u32) -> Line {
    let counts = mode.spec().counts;
    let limit = if counts == Counts::Turns || max_iterations > 1 {
        format!(" (at most {max_iterations} {})", counts.word())
    } else {
        String::new()
    };
    Line::new(Tone::Heading, format!("{mode} run{limit}"))
}

/// `resumes run 20260307T101500123Z-… (interrupted 10:17:02 UTC: SIGTERM); 3 finished turns
/// come from disk`: a resumed run's start, with the interruption.
pub fn run_resumed(
    resumes: &str,
    interrupted_at: Option<chrono::DateTime<chrono::Utc>>,
    reason: Option<&str>,
    finished_turns: u32,
) -> Line {
    let when = interrupted_at.map(|t| format!("interrupted {}", t.format("%Y-%m-%d %H:%M:%S UTC")));
    let why = match (when, reason) {
        (Some(w), Some(r)) => format!(" ({w}: {})", quote(r)),
        (Some(w), None) => format!(" ({w})"),
        (None, Some(r)) => format!(" (interrupted: {})", quote(r)),
        (None, None) => " (interrupted: the process ended)".to_string(),
    };
    let turns = match finished_turns {
        0 => "nothing it finished is on disk".to_string(),
        1 => "1 finished turn comes from disk".to_string(),
        n => format!("{n} finished turns come from disk"),
    };
    Line::new(Tone::Heading, format!("resumes run {resumes}{why}; {turns}"))
}

/// `resumed after iteration 2/4 (scores so far: 0.60, 0.77)`: where a resumed reflect cycle's
/// earlier runs left it (the cycle panel's line under the run's start).
pub fn resumed_after(after: u32, max_iterations: u32, scores: &[f64]) -> Line {
    let scores = scores
        .iter()
        .map(|s| format!("{s:.2}"))
        .collect::<Vec<_>>()
        .join(", ");
    Line::new(
        Tone::Info,
        format!("resumed after iteration {after}/{max_iterations} (scores so far: {scores})"),
    )
}

/// `waiting until 14:05 UTC for anthropic limit`: a run's state while a turn waits for a limit
/// (the timeline line, the cycle panel, `huddle run`'s progress).
pub fn limit_wait_state(provider: &str, until: chrono::DateTime<chrono::Utc>) -> String {
    format!("waiting until {} UTC for {provider} limit", until.format("%H:%M"))
}

/// `⏳ security: waiting until 14:05 UTC for anthropic limit, 8m30s left (+1 more)`: the cycle
/// panel's row for the first of the run's turns waiting for a limit (`left` of its wait), and
/// how many others wait too.
pub fn limit_wait_row(
    who: &str,
    provider: &str,
    until: chrono::DateTime<chrono::Utc>,
    left: std::time::Duration,
    others: usize,
) -> String {
    let more = match others {
        0 => String::new(),
        n => format!(" (+{n} more)"),
    };
    format!(
        "⏳ {}, {} left{more}",
        limit_waiter(who, provider, until),
        countdown(left)
    )
}

/// `waiting until 14:05 UTC for anthropic limit; the run goes on by itself then`: the
/// notification of a turn that waits for a limit.
pub fn limit_wait_notice(provider: &str, until: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "{}; the run goes on by itself then",
        limit_wait_state(provider, until)
    )
}

/// `security: waiting until 14:05 UTC for anthropic limit`: who waits for what (`huddle ps`'s
/// waiting-for column).
pub fn limit_waiter(who: &str, provider: &str, until: chrono::DateTime<chrono::Utc>) -> String {
    format!("{who}: {}", limit_wait_state(provider, until))
}

/// `45s`, `8m30s`, `1h05m`: what is left of a wait, in whole seconds (rounded up: `0s` only
/// once it is over).
pub fn countdown(left: std::time::Duration) -> String {
    let secs = left.as_millis().div_ceil(1000).min(u128::from(u64::MAX)) as u64;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs / 60 % 60),
    }
}

/// What the stop key does to a run waiting for a limit: it ends the wait at once and leaves
/// the run to be resumed (`stop_key`: the key's name).
pub fn limit_wait_stop_hint(stop_key: &str) -> String {
    format!("{stop_key} stops the wait; the run stays resumable")
}

/// `⏳ security: waiting until 14:05 UTC for anthropic limit (20m00s): 429 from provider …`.
pub fn limit_wait(
    who: &str,
    provider: &str,
    until: chrono::DateTime<chrono::Utc>,
    wait_ms: u64,
    reason: &str,
) -> Line {
    Line::new(
        Tone::Warn,
        format!(
            "⏳ {who}: {} ({}){}",
            limit_wait_state(provider, until),
            duration(wait_ms),
            colon_quote(reason)
        ),
    )
}

/// `↻ security: limit wait over after 3.0s; asking again`.
pub fn limit_wait_over(who: &str, waited_ms: u64) -> Line {
    Line::info(format!(
        "↻ {who}: limit wait over after {}; asking again",
        duration(waited_ms)
    ))
}

/// `⇲ security: context compacted, 12 messages summarised (~9000 → ~1200 tokens)`.
pub fn context_compacted(who: &str, folded: usize, before: u64, after: u64) -> Line {
    Line::info(format!(
        "⇲ {who}: context compacted, {folded} messages summarised (~{before} → ~{after} tokens)"
    ))
}

/// `↺ security: its answer from before the interruption (not asked again)`.
pub fn turn_replayed(who: &str) -> Line {
    Line::info(format!(
        "↺ {who}: its answer from before the interruption (not asked again)"
    ))
}

/// `iteration 2/4`, or `iteration 2` when the limit is not known.
pub fn iteration(iteration: u32, max: Option<u32>) -> Line {
    let of = max.map(|m| format!("/{}", m.max(iteration))).unwrap_or_default();
    Line::new(Tone::Heading, format!("iteration {iteration}{of}"))
}

/// A phase's name: `plan`, `ask`, `collect`, `synthesize`, `evaluate`. None names a mode:
/// the phase that hands the members their work is `ask` in every mode (it read `dispatch`,
/// which a broadcast or a pipeline run seemed to call itself).
pub fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Plan => "plan",
        Phase::Dispatch => "ask",
        Phase::Collect => "collect",
        Phase::Synthesize => "synthesize",
        Phase::Evaluate => "evaluate",
    }
}

pub fn phase(p: Phase) -> Line {
    Line::info(phase_name(p))
}

/// `→ security: Look for injection` (the task's lines joined).
pub fn assignment(worker: &str, task: &str) -> Line {
    let task = task.split_whitespace().collect::<Vec<_>>().join(" ");
    Line::info(format!("→ {worker}: {}", crate::text::cap_chars(&task, TASK_MAX)))
}

pub fn dropped(name: &str, reason: &str) -> Line {
    Line::new(
        Tone::Warn,
        format!("dropped assignment for {name}{}", colon_quote(reason)),
    )
}

/// `✓ security 1.2s` or `✗ security 10m00s`.
pub fn worker_finished(worker: &str, success: bool, duration_ms: u64) -> Line {
    let (tone, mark) = if success {
        (Tone::Good, "✓")
    } else {
        (Tone::Bad, "✗")
    };
    Line::new(tone, format!("{mark} {worker} {}", duration(duration_ms)))
}

/// `score 0.72 (improving) — the rationale's first line`.
pub fn evaluation(score: f64, trend: Option<Trend>, rationale: &str) -> Line {
    let trend = trend.map(|t| format!(" ({t})")).unwrap_or_default();
    let why = quote(rationale);
    let why = if why.is_empty() {
        why
    } else {
        format!(" — {why}")
    };
    Line::info(format!("score {score:.2}{trend}{why}"))
}

pub fn evaluation_unparsed(iteration: u32) -> Line {
    Line::new(
        Tone::Warn,
        format!("iteration {iteration}: the evaluator's reply had no readable score (counted as 0.5)"),
    )
}

/// `⚠ iteration 2: stall warning 1 (similarity 0.97)`.
pub fn stall(iteration: u32, consecutive: u32, similarity: f64) -> Line {
    Line::new(
        Tone::Warn,
        format!("⚠ iteration {iteration}: stall warning {consecutive} (similarity {similarity:.2})"),
    )
}

pub fn adjustment(text: &str) -> Line {
    Line::new(Tone::Warn, format!("adjustment: {}", quote(text)))
}

pub fn warning(message: &str) -> Line {
    Line::new(Tone::Warn, format!("warning: {}", quote(message)))
}

pub fn error(iteration: u32, message: &str) -> Line {
    Line::new(
        Tone::Bad,
        format!("error in iteration {iteration}{}", colon_quote(message)),
    )
}

pub fn paused() -> Line {
    Line::new(Tone::Warn, "paused")
}

pub fn resumed() -> Line {
    Line::info("resumed")
}

/// Good (green), warning (yellow) or bad (red): the tone of an outcome everywhere.
pub fn outcome_tone(o: CycleOutcome) -> Tone {
    match o {
        CycleOutcome::GoalMet | CycleOutcome::Completed => Tone::Good,
        CycleOutcome::MaxIterations
        | CycleOutcome::Stalled
        | CycleOutcome::BudgetExhausted
        | CycleOutcome::RateLimited => Tone::Warn,
        CycleOutcome::ErrorBudget
        | CycleOutcome::Cancelled
        | CycleOutcome::SaveFailed
        | CycleOutcome::Failed => Tone::Bad,
    }
}

/// `finished: goal_met after 2/4`, or `finished: goal_met after 2 iterations` when the limit is
/// not known; a mode that counts turns says them: `finished: goal_met after 3/8 turns`.
pub fn finished(outcome: CycleOutcome, iterations: u32, max: Option<u32>, counts: Counts) -> Line {
    let after = match (max, counts) {
        (Some(max), Counts::Iterations) => format!("{iterations}/{}", max.max(iterations)),
        (Some(max), Counts::Turns) => format!("{iterations}/{} turns", max.max(iterations)),
        (None, Counts::Iterations) => super::counted(u64::from(iterations), "iteration"),
        (None, Counts::Turns) => super::counted(u64::from(iterations), "turn"),
    };
    Line::new(
        outcome_tone(outcome),
        format!("finished: {outcome} after {after}"),
    )
}

/// A limit carried on an event: 0 (a log written before events carried it) is not known.
pub fn known(max_iterations: u32) -> Option<u32> {
    (max_iterations > 0).then_some(max_iterations)
}

/// What a finished run's count is in: its mode's unit, iterations when the mode is not known.
pub fn counts_of(mode: Option<Mode>) -> Counts {
    mode.map_or(Counts::Iterations, |m| m.spec().counts)
}

/// A run that could not start its work.
pub fn not_run(why: &str) -> Line {
    Line::new(Tone::Bad, format!("not run: {}", quote(why)))
}

/// `✎ note for security's next turn: …`, then `✎ security got your note: …`.
pub fn member_note(who: &str, text: &str, delivered: bool) -> Line {
    let text = quote(text);
    Line::info(if delivered {
        format!("✎ {who} got your note: {text}")
    } else {
        format!("✎ note for {who}'s next turn: {text}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No phase reads as a mode's name (review 24 finding 6: a pipeline run's panel said
    /// `dispatch`).
    #[test]
    fn no_phase_is_named_like_a_mode() {
        let phases = [
            Phase::Plan,
            Phase::Dispatch,
            Phase::Collect,
            Phase::Synthesize,
            Phase::Evaluate,
        ];
        for mode in crate::model::Mode::ALL {
            let spec = mode.spec();
            for p in phases {
                let name = phase_name(p);
                assert!(
                    name != spec.label && name != mode.to_string(),
                    "phase `{name}` reads as mode {mode}"
                );
            }
        }
        assert_eq!(phase_name(Phase::Dispatch), "ask");
    }

    /// The cycle panel's limit-wait row is worded here, with the timeline's state words.
    #[test]
    fn a_limit_wait_row_names_the_first_and_counts_the_others() {
        let until = chrono::DateTime::parse_from_rfc3339("2026-11-28T14:05:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let left = std::time::Duration::from_millis(509_200);
        assert_eq!(
            limit_wait_row("security", "anthropic", until, left, 0),
            "⏳ security: waiting until 14:05 UTC for anthropic limit, 8m30s left"
        );
        assert_eq!(
            limit_wait_row("security", "anthropic", until, left, 2),
            "⏳ security: waiting until 14:05 UTC for anthropic limit, 8m30s left (+2 more)"
        );
    }

    #[test]
    fn a_countdown_rounds_up_to_whole_seconds() {
        let ms = std::time::Duration::from_millis;
        assert_eq!(countdown(ms(0)), "0s");
        assert_eq!(countdown(ms(1)), "1s");
        assert_eq!(countdown(ms(59_000)), "59s");
        assert_eq!(countdown(ms(59_001)), "1m00s");
        assert_eq!(countdown(ms(3_600_000)), "1h00m");
        assert_eq!(countdown(ms(3_900_000)), "1h05m");
    }

    #[test]
    fn a_runs_course_reads_in_short_lines() {
        assert_eq!(run_started(Mode::Dispatch, 1).text, "dispatch run");
        assert_eq!(
            run_started(Mode::OrchestratorReflect, 4).text,
            "orchestrator_reflect run (at most 4 iterations)"
        );
        assert_eq!(iteration(2, Some(4)).text, "iteration 2/4");
        assert_eq!(iteration(5, Some(4)).text, "iteration 5/5");
        assert_eq!(iteration(2, None).text, "iteration 2");
        assert_eq!(
            evaluation(0.724, Some(Trend::Improving), "\nclear\nmore").text,
            "score 0.72 (improving) — clear"
        );
        assert_eq!(evaluation(0.5, None, " ").text, "score 0.50");
        let done = finished(CycleOutcome::GoalMet, 2, Some(4), Counts::Iterations);
        assert_eq!(
            (done.text.as_str(), done.tone),
            ("finished: goal_met after 2/4", Tone::Good)
        );
        assert_eq!(
            finished(CycleOutcome::Stalled, 1, None, Counts::Iterations).text,
            "finished: stalled after 1 iteration"
        );
        assert_eq!(
            finished(CycleOutcome::GoalMet, 3, Some(8), Counts::Turns).text,
            "finished: goal_met after 3/8 turns"
        );
        assert_eq!(
            finished(CycleOutcome::GoalMet, 1, None, Counts::Turns).text,
            "finished: goal_met after 1 turn"
        );
        assert_eq!(
            member_note("security", "check\nthe logs", false).text,
            "✎ note for security's next turn: check"
        );
    }
}
