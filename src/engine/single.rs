//! Single-agent reflection (SPEC section 4): one session improves its own answer until it puts
//! `[[REFLECTION_COMPLETE]]` on its own line, or, with an evaluator model, until the evaluator
//! answers `PASS`. Same iteration, stall, pause and stop rules as a team cycle.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::model::{CycleOutcome, Message, Mode, Usage};
use crate::providers::{ChatMessage, TurnRequest};

use super::events::{EngineEvent, Phase};
use super::protocol::{
    PassFail, SummaryInput, check_stall, completion_summary, is_reflection_complete, parse_pass_fail,
    reflection_evaluator_prompt, reflection_followup_prompt, remember_synthesis, strip_sentinel_lines, trend,
};
use super::{EngineError, EngineShared, RunControl, RunReport};

const ERROR_BUDGET: u32 = 3;
const STALL_LIMIT: u32 = 2;

#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    shared: &Arc<EngineShared>,
    control: &RunControl,
    group_id: &str,
    session_id: &str,
    goal: String,
    max_iterations: u32,
    evaluator_model: Option<String>,
    model_override: Option<String>,
) -> Result<RunReport, EngineError> {
    let started = Instant::now();
    let (group, session_name) = shared
        .org
        .read(|o| {
            let g = o.group(group_id)?.name.clone();
            let s = o.session(session_id)?.name.clone();
            Some((g, s))
        })
        .ok_or_else(|| EngineError::NoSuchSession(session_id.to_string()))?;
    let max_iterations = max_iterations.max(1);
    let emit = |e: EngineEvent| shared.events.emit(e);
    emit(EngineEvent::CycleStarted {
        group: group.clone(),
        mode: Mode::OrchestratorReflect,
        max_iterations,
    });
    let mut usage = Usage::default();
    let mut simulated = false;
    let mut iteration = 0u32;
    let mut errors = 0u32;
    let mut stalls = 0u32;
    let mut recent: Vec<String> = Vec::new();
    let mut scores: Vec<f64> = Vec::new();
    let mut feedback: Option<String> = None;
    let mut last_answer = String::new();
    let paused = control.paused.subscribe();
    let outcome = loop {
        match wait_while_paused(control, &group, shared, paused.clone()).await {
            None => break CycleOutcome::Cancelled,
            // A resume clears the stall history, as in a team cycle.
            Some(true) => {
                recent.clear();
                stalls = 0;
            }
            Some(false) => {}
        }
        if iteration >= max_iterations {
            break CycleOutcome::MaxIterations;
        }
        iteration += 1;
        emit(EngineEvent::IterationStarted {
            group: group.clone(),
            iteration,
        });
        let (attempt_started, usage_before) = (Instant::now(), usage);
        let prompt = if iteration == 1 {
            goal.clone()
        } else {
            reflection_followup_prompt(&goal, iteration, max_iterations, feedback.as_deref())
        };
        let answer = shared
            .turn(
                session_id,
                prompt,
                Some(iteration),
                control.cancel.child_token(),
                None,
                model_override.clone(),
            )
            .await;
        if let Some(u) = answer.usage {
            usage.add(u);
        }
        simulated |= answer.simulated;
        if answer.success {
            // Kept even if a stop lands at this moment: the answer did finish.
            last_answer = answer.text.clone();
        }
        if answer.cancelled() || control.cancel.is_cancelled() {
            break CycleOutcome::Cancelled;
        }
        // The answer, then its evaluation: either failing is an error of this iteration.
        let verdict = if !answer.success {
            Err(answer.error.clone().unwrap_or_else(|| "the turn failed".into()))
        } else {
            emit(EngineEvent::Phase {
                group: group.clone(),
                iteration,
                phase: Phase::Evaluate,
            });
            match &evaluator_model {
                Some(model) => {
                    let (verdict, used) = evaluate(
                        shared,
                        model,
                        &goal,
                        &answer.text,
                        iteration,
                        max_iterations,
                        &control.cancel,
                    )
                    .await;
                    if let Some(u) = used {
                        usage.add(u);
                    }
                    verdict
                        .map(|v| match v {
                            PassFail::Pass => (1.0, true, "PASS".to_string()),
                            PassFail::Fail { feedback: f } => (0.4, false, f),
                        })
                        .map_err(|e| format!("the evaluator failed: {e}"))
                }
                None => {
                    let done = is_reflection_complete(&answer.text);
                    Ok((if done { 1.0 } else { 0.7 }, done, String::new()))
                }
            }
        };
        let (score, goal_met, rationale) = match verdict {
            Ok(v) => v,
            Err(message) => {
                if control.cancel.is_cancelled() {
                    break CycleOutcome::Cancelled;
                }
                errors += 1;
                emit(EngineEvent::Error {
                    group: group.clone(),
                    iteration,
                    message,
                });
                // The iteration is retried after a back-off, as in a team cycle.
                iteration -= 1;
                if errors >= ERROR_BUDGET {
                    break CycleOutcome::ErrorBudget;
                }
                if !sleep(control, shared.options.error_backoff).await {
                    break CycleOutcome::Cancelled;
                }
                continue;
            }
        };
        errors = 0;
        if evaluator_model.is_some() && !goal_met {
            feedback = Some(rationale.clone());
        }
        let direction = scores.last().map(|p| trend(*p, score));
        scores.push(score);
        emit(EngineEvent::Evaluation {
            group: group.clone(),
            iteration,
            score,
            rationale,
            trend: direction,
            usage: usage.since(usage_before),
            duration_ms: attempt_started.elapsed().as_millis() as u64,
        });
        if goal_met {
            break CycleOutcome::GoalMet;
        }
        let check = check_stall(&answer.text, &recent);
        if check.stalled() {
            stalls += 1;
            emit(EngineEvent::StallWarning {
                group: group.clone(),
                iteration,
                consecutive: stalls,
                similarity: check.similarity,
            });
            if stalls >= STALL_LIMIT {
                break CycleOutcome::Stalled;
            }
        } else {
            stalls = 0;
        }
        remember_synthesis(&mut recent, &answer.text);
    };
    let summary = completion_summary(&SummaryInput {
        outcome,
        iterations: iteration,
        max_iterations,
        scores: scores.clone(),
        trend: scores
            .len()
            .checked_sub(2)
            .map(|i| trend(scores[i], scores[i + 1])),
        duration: started.elapsed(),
        usage,
        per_iteration: Vec::new(),
    });
    shared.writer.append(session_id, Message::notice(summary.clone()));
    emit(EngineEvent::CycleFinished {
        group: group.clone(),
        outcome,
        iterations: iteration,
        summary: summary.clone(),
    });
    let _ = session_name;
    Ok(RunReport {
        outcome,
        iterations: iteration,
        final_text: strip_sentinel_lines(&last_answer),
        summary,
        usage,
        duration: started.elapsed(),
        simulated,
        failed: None,
    })
}

/// Asks the evaluator model directly (it has no session of its own).
async fn evaluate(
    shared: &EngineShared,
    model: &str,
    goal: &str,
    answer: &str,
    iteration: u32,
    max_iterations: u32,
    cancel: &CancellationToken,
) -> (Result<PassFail, String>, Option<Usage>) {
    let (provider, model) = match shared.providers.for_slug(model) {
        Ok(p) => p,
        Err(e) => return (Err(e.to_string()), None),
    };
    let clean = strip_sentinel_lines(answer);
    let request = TurnRequest::new(
        model,
        vec![ChatMessage::user(reflection_evaluator_prompt(
            goal,
            &clean,
            iteration,
            max_iterations,
        ))],
    );
    match provider
        .stream_turn(request, &mut |_| {}, cancel.child_token())
        .await
    {
        Ok(out) => (Ok(parse_pass_fail(&out.text)), out.usage),
        Err(e) => (Err(e.to_string()), None),
    }
}

/// Waits while paused: `None` when stopped, else whether a pause ended in a resume.
async fn wait_while_paused(
    control: &RunControl,
    group: &str,
    shared: &EngineShared,
    mut paused: tokio::sync::watch::Receiver<bool>,
) -> Option<bool> {
    if !*paused.borrow_and_update() {
        return (!control.cancel.is_cancelled()).then_some(false);
    }
    shared.events.emit(EngineEvent::CyclePaused {
        group: group.to_string(),
    });
    loop {
        tokio::select! {
            _ = control.cancel.cancelled() => return None,
            changed = paused.changed() => {
                if changed.is_err() || !*paused.borrow_and_update() {
                    break;
                }
            }
        }
    }
    shared.events.emit(EngineEvent::CycleResumed {
        group: group.to_string(),
    });
    (!control.cancel.is_cancelled()).then_some(true)
}

async fn sleep(control: &RunControl, d: std::time::Duration) -> bool {
    tokio::select! {
        _ = control.cancel.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}
