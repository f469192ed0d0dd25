//! What the one-pass modes (broadcast, sequential, orchestrator) share: the start and finish of
//! a run of one iteration, messages left by the previous run, and a failed orchestrator turn.

use crate::model::CycleOutcome;

use super::super::RunReport;
use super::super::events::EventKind;
use super::super::protocol::{SummaryInput, completion_summary};
use super::super::run::Run;
use super::super::session::TurnResult;
use super::super::team::Member;

/// Announces a one-pass run.
pub(super) fn start(run: &Run<'_>) {
    run.emit(EventKind::CycleStarted {
        mode: run.team.mode,
        max_iterations: 1,
    });
    run.emit(EventKind::IterationStarted {
        iteration: 1,
        max_iterations: 1,
    });
}

pub(super) fn phase(run: &Run<'_>, phase: super::super::events::Phase) {
    run.emit(EventKind::Phase { iteration: 1, phase });
}

/// Ends a one-pass run: the summary goes to `note_to` and out with `cycle_finished`.
pub(super) fn finish(
    run: &Run<'_>,
    outcome: CycleOutcome,
    final_text: String,
    note_to: Option<&Member>,
) -> RunReport {
    finish_with(run, outcome, final_text, note_to, None)
}

/// Ends a one-pass run; a run that could not do its work (`failure`) says so in its summary
/// and its outcome (`failed`) instead of calling itself completed.
pub(super) fn finish_with(
    run: &Run<'_>,
    outcome: CycleOutcome,
    final_text: String,
    note_to: Option<&Member>,
    failure: Option<&str>,
) -> RunReport {
    let steps = Steps {
        taken: 1,
        allowed: 1,
        more: None,
    };
    finish_steps(run, outcome, final_text, note_to, failure, steps)
}

/// How many steps a run took of how many it was allowed, and a line more for its summary.
pub(super) struct Steps {
    pub taken: u32,
    pub allowed: u32,
    pub more: Option<String>,
}

/// Ends a run of one cycle that took several steps (a dispatch's orchestrator calls).
pub(super) fn finish_steps(
    run: &Run<'_>,
    outcome: CycleOutcome,
    final_text: String,
    note_to: Option<&Member>,
    failure: Option<&str>,
    steps: Steps,
) -> RunReport {
    // A run that could not do its work did not complete: it failed (a stop stays a stop).
    let outcome = match (outcome, failure) {
        (CycleOutcome::Completed, Some(_)) => CycleOutcome::Failed,
        _ => run.control().settle(outcome),
    };
    let summary = match failure {
        Some(why) => format!("Run failed: {why}"),
        None => completion_summary(&SummaryInput {
            outcome,
            iterations: steps.taken,
            max_iterations: steps.allowed,
            scores: Vec::new(),
            trend: None,
            duration: run.active_time(),
            usage: run.usage,
            per_iteration: Vec::new(),
        }),
    };
    let summary = match steps.more {
        Some(line) => format!("{}\n{line}", summary.trim_end()),
        None => summary,
    };
    let summary = run.control().annotate_summary(summary);
    if let Some(member) = note_to {
        run.note(member, &summary);
    }
    run.emit(EventKind::CycleFinished {
        outcome,
        iterations: steps.taken,
        max_iterations: steps.allowed,
        mode: Some(run.team.mode),
        summary: summary.clone(),
    });
    let mut report = run.report(outcome, steps.taken, final_text, summary);
    report.failed = failure.map(str::to_string);
    report
}

/// The prompt with any messages the user sent while the previous run was ending, and those
/// messages (to give back if the round cannot use them).
pub(super) fn with_pending(run: &Run<'_>, prompt: String) -> (String, Vec<String>) {
    let pending = run.take_pending();
    if pending.is_empty() {
        return (prompt, pending);
    }
    let mut out = prompt;
    out.push_str("\n\n## Also from the user (sent while the previous round was running)\n");
    for m in &pending {
        out.push_str("- ");
        out.push_str(m.trim());
        out.push('\n');
    }
    (out, pending)
}

/// Ends a round whose every member answered (or failed): cancelled if stopped; the user's
/// pending messages go back when nobody could read them; a round where everyone failed is a
/// failed run.
pub(super) fn finish_round(
    run: &Run<'_>,
    final_text: String,
    pending: Vec<String>,
    results: &[&TurnResult],
) -> RunReport {
    let outcome = if run.cancelled() {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    let all_failed = results.iter().all(|r| !r.success);
    if outcome == CycleOutcome::Cancelled || all_failed {
        run.restore_pending(pending);
    }
    let failure = (all_failed && outcome != CycleOutcome::Cancelled).then(|| {
        format!(
            "every session failed: {}",
            results
                .iter()
                .filter_map(|r| r.error.as_deref())
                .next()
                .unwrap_or("unknown error")
        )
    });
    finish_with(run, outcome, final_text, None, failure.as_deref())
}

/// A one-pass run whose orchestrator turn failed: reported (unless stopped), with whatever
/// text arrived.
pub(super) fn failed_pass(run: &mut Run<'_>, turn: &TurnResult, orchestrator: &Member) -> RunReport {
    if turn.cancelled() {
        return finish(
            run,
            CycleOutcome::Cancelled,
            turn.text.clone(),
            Some(orchestrator),
        );
    }
    let error = turn
        .error
        .clone()
        .unwrap_or_else(|| "the orchestrator failed".into());
    run.emit(EventKind::Error {
        iteration: 1,
        message: error.clone(),
    });
    finish_with(
        run,
        CycleOutcome::Completed,
        turn.text.clone(),
        Some(orchestrator),
        Some(&error),
    )
}
