//! The one-pass modes: broadcast, sequential and the single-pass orchestrator (SPEC section 2).

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use tokio::sync::Semaphore;

use crate::model::CycleOutcome;

use super::events::{EngineEvent, Phase};
use super::protocol::{
    PlanMode, SummaryInput, TeamContext, WorkerResult, completion_summary, planning_prompt,
    sequential_prompt, synthesis_prompt,
};
use super::team::{Member, Run};
use super::{EngineError, RunReport, TurnResult};

/// Announces a one-pass run.
fn start(run: &Run<'_>) {
    run.emit(EngineEvent::CycleStarted {
        group: run.group(),
        mode: run.team.mode,
        max_iterations: 1,
    });
    run.emit(EngineEvent::IterationStarted {
        group: run.group(),
        iteration: 1,
    });
}

/// Ends a one-pass run: the summary goes to `note_to` and out with `cycle_finished`.
fn finish(run: &Run<'_>, outcome: CycleOutcome, final_text: String, note_to: Option<&Member>) -> RunReport {
    let summary = completion_summary(&SummaryInput {
        outcome,
        iterations: 1,
        max_iterations: 1,
        scores: Vec::new(),
        trend: None,
        duration: run.started.elapsed(),
        usage: run.usage,
        per_iteration: Vec::new(),
    });
    if let Some(member) = note_to {
        run.note(member, &summary);
    }
    run.emit(EngineEvent::CycleFinished {
        group: run.group(),
        outcome,
        iterations: 1,
        summary: summary.clone(),
    });
    run.report(outcome, 1, final_text, summary)
}

/// Every session gets the prompt at once; one failing does not stop the others.
/// The prompt with any messages the user sent while the previous run was ending, and those
/// messages (to give back if the round cannot use them).
fn with_pending(run: &Run<'_>, prompt: String) -> (String, Vec<String>) {
    let pending = super::reflect::take_pending(run);
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

pub(crate) async fn broadcast(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let (prompt, pending) = with_pending(run, prompt);
    start(run);
    run.emit(EngineEvent::Phase {
        group: run.group(),
        iteration: 1,
        phase: Phase::Dispatch,
    });
    let semaphore = Arc::new(Semaphore::new(run.shared.options.max_concurrency.max(1)));
    let members = run.team.everyone.clone();
    let jobs = members.iter().map(|m| {
        let semaphore = Arc::clone(&semaphore);
        let shared = Arc::clone(run.shared);
        let cancel = run.control.cancel.child_token();
        let model_override = run.team.model_override.clone();
        let group = run.group();
        let prompt = prompt.clone();
        async move {
            let _permit = semaphore.acquire_owned().await;
            let started = Instant::now();
            let result = shared
                .turn(&m.id, prompt, Some(1), cancel, None, model_override)
                .await;
            shared.events.emit(EngineEvent::WorkerFinished {
                group,
                iteration: 1,
                worker: m.name.clone(),
                success: result.success,
                duration_ms: started.elapsed().as_millis() as u64,
            });
            result
        }
    });
    let results: Vec<TurnResult> = join_all(jobs).await;
    run.emit(EngineEvent::Phase {
        group: run.group(),
        iteration: 1,
        phase: Phase::Collect,
    });
    for r in &results {
        run.account(r);
    }
    let final_text = results
        .iter()
        .map(|r| format!("## {}\n\n{}", r.session, r.text_or_error().trim()))
        .collect::<Vec<_>>()
        .join("\n\n");
    let outcome = if run.cancelled() {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    let mut report = finish(run, outcome, final_text, None);
    if outcome == CycleOutcome::Cancelled || results.iter().all(|r| !r.success) {
        super::reflect::restore_pending(run, pending);
    }
    if results.iter().all(|r| !r.success) && outcome != CycleOutcome::Cancelled {
        report.failed = Some(format!(
            "every session failed: {}",
            results
                .iter()
                .filter_map(|r| r.error.as_deref())
                .next()
                .unwrap_or("unknown error")
        ));
    }
    Ok(report)
}

/// Sessions in order, each seeing the earlier answers of this round, labelled. A failed session
/// passes its error on as its answer and the round continues.
pub(crate) async fn sequential(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let (prompt, pending) = with_pending(run, prompt);
    start(run);
    let members = run.team.everyone.clone();
    let mut earlier: Vec<WorkerResult> = Vec::new();
    let mut last = String::new();
    for member in &members {
        if run.cancelled() {
            break;
        }
        run.emit(EngineEvent::Phase {
            group: run.group(),
            iteration: 1,
            phase: Phase::Dispatch,
        });
        let started = Instant::now();
        let result = run
            .turn(member, sequential_prompt(&prompt, &earlier), Some(1))
            .await;
        run.emit(EngineEvent::WorkerFinished {
            group: run.group(),
            iteration: 1,
            worker: member.name.clone(),
            success: result.success,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        last = result.text_or_error();
        earlier.push(WorkerResult {
            name: member.name.clone(),
            success: result.success,
            duration: started.elapsed(),
            text: last.clone(),
        });
    }
    let outcome = if run.cancelled() {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    let mut report = finish(run, outcome, last, None);
    if outcome == CycleOutcome::Cancelled || earlier.iter().all(|r| !r.success) {
        super::reflect::restore_pending(run, pending);
    }
    if earlier.iter().all(|r| !r.success) && outcome != CycleOutcome::Cancelled {
        report.failed = Some("every session failed".into());
    }
    Ok(report)
}

/// Plan, dispatch, collect, synthesize, once. A plan naming no worker is the orchestrator
/// answering itself.
pub(crate) async fn orchestrator(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let Some(orchestrator) = run.team.orchestrator.clone() else {
        return Err(EngineError::NotRunnable {
            group: run.group(),
            mode: run.team.mode,
            reason: "it has no orchestrator session".into(),
        });
    };
    start(run);
    let group = run.group();
    let phase = |run: &Run<'_>, phase: Phase| {
        run.emit(EngineEvent::Phase {
            group: group.clone(),
            iteration: 1,
            phase,
        })
    };
    phase(run, Phase::Plan);
    let workers = run.team.worker_infos();
    let mut queued = super::reflect::take_pending(run);
    queued.extend(run.control.take_queued());
    let plan_prompt = planning_prompt(
        &TeamContext {
            request: &prompt,
            workers: &workers,
            routing_context: run.team.routing_context.as_deref(),
            orchestrator_prompt: run.team.orchestrator_prompt.as_deref(),
            queued_messages: &queued,
        },
        PlanMode::SinglePass,
    );
    let plan = run.turn(&orchestrator, plan_prompt, Some(1)).await;
    if !plan.success {
        // The orchestrator never read the user's messages: keep them for the next run.
        super::reflect::restore_pending(run, queued);
        return Ok(failed_pass(run, &plan, &orchestrator));
    }
    let parsed = run.parse_plan(&plan.text, 1);
    if parsed.assignments.is_empty() {
        // No assignment: the orchestrator answered itself.
        return Ok(finish(
            run,
            CycleOutcome::Completed,
            plan.text.clone(),
            Some(&orchestrator),
        ));
    }
    phase(run, Phase::Dispatch);
    for a in &parsed.assignments {
        run.emit(EngineEvent::Assignment {
            group: run.group(),
            iteration: 1,
            worker: a.worker.clone(),
            task: a.task.clone(),
        });
    }
    let results = run.dispatch(&parsed.assignments, &prompt, 1).await;
    phase(run, Phase::Collect);
    if run.cancelled() {
        return Ok(finish(
            run,
            CycleOutcome::Cancelled,
            String::new(),
            Some(&orchestrator),
        ));
    }
    phase(run, Phase::Synthesize);
    let synthesis = run
        .turn(&orchestrator, synthesis_prompt(&prompt, &results), Some(1))
        .await;
    if !synthesis.success {
        return Ok(failed_pass(run, &synthesis, &orchestrator));
    }
    Ok(finish(
        run,
        CycleOutcome::Completed,
        synthesis.text.clone(),
        Some(&orchestrator),
    ))
}

/// A one-pass run whose orchestrator turn failed: reported (unless stopped), with whatever
/// text arrived.
fn failed_pass(run: &mut Run<'_>, turn: &TurnResult, orchestrator: &Member) -> RunReport {
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
    run.emit(EngineEvent::Error {
        group: run.group(),
        iteration: 1,
        message: error.clone(),
    });
    let mut report = finish(
        run,
        CycleOutcome::Completed,
        turn.text.clone(),
        Some(orchestrator),
    );
    report.failed = Some(error);
    report
}
