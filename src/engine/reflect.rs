//! The orchestrator-reflect loop (SPEC section 4): plan, dispatch, collect, synthesize, evaluate,
//! repeated until the goal is met, the iterations run out, the answers stall, errors pile up or
//! the user stops it. The cycle state is persisted after every step so a crash can be resumed.

use std::time::{Duration, Instant};

use chrono::Utc;

use crate::model::{CycleOutcome, Evaluation, Mode, ReflectionCycle, Usage};

use super::events::{EngineEvent, Phase};
use super::protocol::{
    AdjustmentInput, Assignment, LastEvaluation, PlanFormat, PlanMode, Replan, SummaryInput, TeamContext,
    check_stall, completion_summary, evaluator_prompt, nudge_prompt, parse_evaluator_reply,
    parse_self_evaluation, pending_adjustments, planning_prompt, remember_synthesis, replan_prompt,
    strip_sentinel_lines, synthesis_prompt, synthesis_self_eval_prompt, trend,
};
use super::team::{Member, Run};
use super::{EngineError, RunReport, TurnResult};

/// Consecutive failed iterations that end a cycle.
const ERROR_BUDGET: u32 = 3;
/// Consecutive stalled iterations that end a cycle.
const STALL_LIMIT: u32 = 2;

/// How one iteration ended.
enum Step {
    Continue,
    GoalMet,
    Stalled,
    Cancelled,
    Error(String),
}

struct Cycle<'r, 'a> {
    run: &'r mut Run<'a>,
    state: ReflectionCycle,
    orchestrator: Member,
    evaluator: Option<Member>,
    /// Messages carried over from before a restart, given to the next plan.
    carried: Vec<String>,
    nudged: bool,
    /// When the current attempt at an iteration started, and the run's usage then.
    attempt_started: (Instant, Usage),
    base_usage: Usage,
    base_duration_ms: u64,
}

pub(crate) async fn run(run: &mut Run<'_>, goal: String, resume: bool) -> Result<RunReport, EngineError> {
    let Some(orchestrator) = run.team.orchestrator.clone() else {
        return Err(EngineError::NotRunnable {
            group: run.group(),
            mode: Mode::OrchestratorReflect,
            reason: "it has no orchestrator session".into(),
        });
    };
    let evaluator = run.team.evaluator.clone();
    let previous = run
        .shared
        .org
        .read(|o| o.group(&run.team.group_id).and_then(|g| g.reflection.clone()));
    let state = match previous.filter(|_| resume) {
        Some(mut s) => {
            // Continue after the last completed iteration.
            s.iteration = s.completed_iterations;
            s.paused = false;
            s.max_iterations = run.team.max_iterations.max(s.completed_iterations + 1);
            s
        }
        None => ReflectionCycle {
            goal: goal.clone(),
            max_iterations: run.team.max_iterations,
            started_at: Some(Utc::now()),
            ..ReflectionCycle::default()
        },
    };
    let pending = take_pending(run);
    let mut carried = state.queued_messages.clone();
    carried.extend(pending);
    let mut cycle = Cycle {
        base_usage: state.usage,
        base_duration_ms: state.duration_ms,
        carried,
        state,
        run,
        orchestrator,
        evaluator,
        nudged: false,
        attempt_started: (Instant::now(), Usage::default()),
    };
    cycle.state.active = true;
    cycle.state.outcome = None;
    cycle.state.evaluator = cycle.evaluator.as_ref().map(|e| e.name.clone());
    cycle.persist();
    cycle.run.emit(EngineEvent::CycleStarted {
        group: cycle.run.group(),
        mode: Mode::OrchestratorReflect,
        max_iterations: cycle.state.max_iterations,
    });
    let outcome = cycle.drive().await;
    Ok(cycle.finish(outcome))
}

/// Takes the messages left for this group by its previous run.
pub(crate) fn take_pending(run: &Run<'_>) -> Vec<String> {
    let gid = run.team.group_id.clone();
    run.shared.org.update(|o| {
        o.group_mut(&gid)
            .map(|g| std::mem::take(&mut g.pending_messages))
            .unwrap_or_default()
    })
}

/// Gives messages back to the group when the run that took them could not use them.
pub(crate) fn restore_pending(run: &Run<'_>, messages: Vec<String>) {
    if messages.is_empty() {
        return;
    }
    let gid = run.team.group_id.clone();
    run.shared.org.update(|o| {
        if let Some(g) = o.group_mut(&gid) {
            let later = std::mem::take(&mut g.pending_messages);
            g.pending_messages = messages;
            g.pending_messages.extend(later);
        }
    });
}

impl Cycle<'_, '_> {
    async fn drive(&mut self) -> CycleOutcome {
        loop {
            if !self.checkpoint().await {
                return CycleOutcome::Cancelled;
            }
            if self.state.iteration >= self.state.max_iterations {
                return CycleOutcome::MaxIterations;
            }
            self.state.iteration += 1;
            let iteration = self.state.iteration;
            self.persist();
            self.run.emit(EngineEvent::IterationStarted {
                group: self.run.group(),
                iteration,
            });
            self.attempt_started = (Instant::now(), self.run.usage);
            match self.iterate(iteration).await {
                Step::Continue => {}
                Step::GoalMet => return CycleOutcome::GoalMet,
                Step::Stalled => return CycleOutcome::Stalled,
                Step::Cancelled => return CycleOutcome::Cancelled,
                Step::Error(message) => {
                    self.state.consecutive_errors += 1;
                    self.run.emit(EngineEvent::Error {
                        group: self.run.group(),
                        iteration,
                        message,
                    });
                    // The iteration is retried: the counter goes back by one.
                    self.state.iteration -= 1;
                    self.persist();
                    if self.state.consecutive_errors >= ERROR_BUDGET {
                        return CycleOutcome::ErrorBudget;
                    }
                    if !self.run.sleep(self.run.shared.options.error_backoff).await {
                        return CycleOutcome::Cancelled;
                    }
                }
            }
        }
    }

    /// Waits while paused. A resume clears the stall history (SPEC section 4). Returns false
    /// when the cycle was stopped.
    async fn checkpoint(&mut self) -> bool {
        let go_on = self.run.wait_if_paused().await;
        if std::mem::take(&mut self.run.resumed) {
            self.state.recent_syntheses.clear();
            self.state.consecutive_stalls = 0;
            self.persist();
        }
        go_on
    }

    fn phase(&self, iteration: u32, phase: Phase) {
        self.run.emit(EngineEvent::Phase {
            group: self.run.group(),
            iteration,
            phase,
        });
    }

    /// A turn's failure as a step: cancellation ends the cycle, anything else is an error.
    fn failure(&self, what: &str, turn: &TurnResult) -> Step {
        if turn.cancelled() || self.run.cancelled() {
            Step::Cancelled
        } else {
            Step::Error(format!(
                "{what} failed: {}",
                turn.error.as_deref().unwrap_or("unknown error")
            ))
        }
    }

    async fn plan(&mut self, iteration: u32) -> Result<Vec<Assignment>, Step> {
        self.phase(iteration, Phase::Plan);
        let workers = self.run.team.worker_infos();
        let mut queued = std::mem::take(&mut self.carried);
        queued.extend(self.run.control.take_queued());
        let team = &self.run.team;
        let ctx = TeamContext {
            request: &self.state.goal,
            workers: &workers,
            routing_context: team.routing_context.as_deref(),
            orchestrator_prompt: team.orchestrator_prompt.as_deref(),
            queued_messages: &queued,
        };
        let prompt = match (&self.state.last_synthesis, &self.state.last_evaluation) {
            (Some(previous), last) => {
                let last_evaluation = match last {
                    Some(e) if e.evaluator_model.is_some() => LastEvaluation::Evaluator {
                        score: e.score,
                        rationale: &e.rationale,
                    },
                    Some(e) => LastEvaluation::SelfEvaluation {
                        score: e.score,
                        feedback: &e.rationale,
                    },
                    None => LastEvaluation::None,
                };
                replan_prompt(
                    &ctx,
                    &Replan {
                        previous_synthesis: previous,
                        last_evaluation,
                        iteration,
                        max_iterations: self.state.max_iterations,
                    },
                )
            }
            (None, _) => planning_prompt(
                &ctx,
                PlanMode::Reflect {
                    max_iterations: self.state.max_iterations,
                },
            ),
        };
        let nudge = nudge_prompt(&ctx);
        let first_plan_of_cycle = self.state.last_synthesis.is_none();
        let orchestrator = self.orchestrator.clone();
        let plan = self.run.turn(&orchestrator, prompt, Some(iteration)).await;
        if !plan.success {
            // The orchestrator never saw them: keep the user's messages for the retry.
            queued.append(&mut self.carried);
            self.carried = queued;
            return Err(self.failure("planning", &plan));
        }
        let parsed = self.run.parse_plan(&plan.text, iteration);
        let mut assignments = parsed.assignments;
        if !assignments.is_empty() {
            return Ok(assignments);
        }
        if !first_plan_of_cycle {
            // Emitting no assignment after the first iteration means the goal is met; naming
            // only unknown workers is a failed plan, retried like any error.
            return Err(match parsed.format {
                PlanFormat::None => Step::GoalMet,
                _ => Step::Error("the plan assigned work only to unknown workers".into()),
            });
        }
        if !self.nudged {
            self.nudged = true;
            let again = self.run.turn(&orchestrator, nudge, Some(iteration)).await;
            if !again.success {
                return Err(self.failure("planning (after a nudge)", &again));
            }
            assignments = self.run.parse_plan(&again.text, iteration).assignments;
        }
        if assignments.is_empty() {
            self.run.emit(EngineEvent::Warning {
                group: self.run.group(),
                message: "the orchestrator named no worker; every worker gets the original request".into(),
            });
            assignments = self
                .run
                .team
                .workers
                .iter()
                .map(|w| Assignment {
                    worker: w.name.clone(),
                    task: self.state.goal.clone(),
                })
                .collect();
        }
        Ok(assignments)
    }

    async fn iterate(&mut self, iteration: u32) -> Step {
        let assignments = match self.plan(iteration).await {
            Ok(a) => a,
            Err(step) => return step,
        };
        if !self.checkpoint().await {
            return Step::Cancelled;
        }

        self.phase(iteration, Phase::Dispatch);
        for a in &assignments {
            self.run.emit(EngineEvent::Assignment {
                group: self.run.group(),
                iteration,
                worker: a.worker.clone(),
                task: a.task.clone(),
            });
        }
        let goal = self.state.goal.clone();
        let results = self.run.dispatch(&assignments, &goal, iteration).await;
        self.persist();
        self.phase(iteration, Phase::Collect);
        if self.run.cancelled() {
            return Step::Cancelled;
        }
        if !self.checkpoint().await {
            return Step::Cancelled;
        }

        self.phase(iteration, Phase::Synthesize);
        let max = self.state.max_iterations;
        let prompt = match self.evaluator {
            Some(_) => synthesis_prompt(&goal, &results),
            None => synthesis_self_eval_prompt(&goal, &results, iteration, max),
        };
        let orchestrator = self.orchestrator.clone();
        let synthesis = self.run.turn(&orchestrator, prompt, Some(iteration)).await;
        if !synthesis.success {
            return self.failure("synthesis", &synthesis);
        }
        self.persist();
        if !self.checkpoint().await {
            return Step::Cancelled;
        }

        self.phase(iteration, Phase::Evaluate);
        let (score, rationale, goal_met, evaluator_model) = match self.evaluator.clone() {
            Some(evaluator) => {
                let clean = strip_sentinel_lines(&synthesis.text);
                let reply = self
                    .run
                    .turn(
                        &evaluator,
                        evaluator_prompt(&goal, &clean, iteration, max),
                        Some(iteration),
                    )
                    .await;
                if !reply.success {
                    return self.failure("evaluation", &reply);
                }
                let verdict = parse_evaluator_reply(&reply.text);
                if verdict.unparsed {
                    self.run.emit(EngineEvent::EvaluationUnparsed {
                        group: self.run.group(),
                        iteration,
                    });
                }
                (
                    verdict.score,
                    verdict.rationale,
                    verdict.goal_met,
                    Some(reply.model),
                )
            }
            None => {
                let own = parse_self_evaluation(&synthesis.text);
                (own.score, own.feedback, own.goal_met, None)
            }
        };
        let previous_score = self.state.last_evaluation.as_ref().map(|e| e.score);
        let direction = previous_score.map(|p| trend(p, score));
        let (started, usage_before) = self.attempt_started;
        let evaluation = Evaluation {
            iteration,
            score,
            rationale: rationale.clone(),
            evaluator_model,
            at: Utc::now(),
            trend: direction,
            usage: self.run.usage.since(usage_before),
            duration_ms: started.elapsed().as_millis() as u64,
        };
        let (usage, duration_ms) = (evaluation.usage, evaluation.duration_ms);
        self.state.evaluations.push(evaluation.clone());
        self.state.last_evaluation = Some(evaluation);
        self.persist();
        self.run.emit(EngineEvent::Evaluation {
            group: self.run.group(),
            iteration,
            score,
            rationale,
            trend: direction,
            usage,
            duration_ms,
        });

        let previous_stalled = self.state.consecutive_stalls > 0;
        let adjustments = pending_adjustments(&AdjustmentInput {
            iteration,
            results: &results,
            previous_score,
            score: Some(score),
            previous_iteration_stalled: previous_stalled,
        });
        for text in adjustments {
            self.run.emit(EngineEvent::Adjustment {
                group: self.run.group(),
                text: text.clone(),
            });
            self.state.pending_adjustments.push(text);
        }

        let check = check_stall(&synthesis.text, &self.state.recent_syntheses);
        if check.stalled() {
            self.state.consecutive_stalls += 1;
            self.run.emit(EngineEvent::StallWarning {
                group: self.run.group(),
                iteration,
                consecutive: self.state.consecutive_stalls,
                similarity: check.similarity,
            });
        } else {
            self.state.consecutive_stalls = 0;
        }
        remember_synthesis(&mut self.state.recent_syntheses, &synthesis.text);
        self.state.last_synthesis = Some(synthesis.text.clone());
        self.state.consecutive_errors = 0;
        self.state.completed_iterations = iteration;
        self.persist();

        if goal_met {
            Step::GoalMet
        } else if self.state.consecutive_stalls >= STALL_LIMIT {
            Step::Stalled
        } else {
            Step::Continue
        }
    }

    /// Saves the cycle state into its group (the saver writes it in the background).
    fn persist(&mut self) {
        let mut usage = self.base_usage;
        usage.add(self.run.usage);
        self.state.usage = usage;
        self.state.duration_ms = self.base_duration_ms + self.run.started.elapsed().as_millis() as u64;
        let mut queued = self.carried.clone();
        queued.extend(self.run.control.peek_queued());
        self.state.queued_messages = queued;
        let snapshot = self.state.clone();
        let gid = self.run.team.group_id.clone();
        self.run.shared.org.update(|o| {
            if let Some(g) = o.group_mut(&gid) {
                g.reflection = Some(snapshot);
            }
        });
    }

    fn finish(mut self, outcome: CycleOutcome) -> RunReport {
        // Messages no plan will read any more wait for the group's next run.
        let mut leftovers = std::mem::take(&mut self.carried);
        leftovers.extend(self.run.control.take_queued());
        if !leftovers.is_empty() {
            let gid = self.run.team.group_id.clone();
            self.run.shared.org.update(|o| {
                if let Some(g) = o.group_mut(&gid) {
                    g.pending_messages.extend(leftovers);
                }
            });
        }
        let s = &mut self.state;
        s.active = false;
        s.paused = false;
        s.outcome = Some(outcome);
        s.goal_met = outcome == CycleOutcome::GoalMet;
        s.stalled = outcome == CycleOutcome::Stalled;
        s.cancelled = outcome != CycleOutcome::GoalMet;
        s.completed_at = Some(Utc::now());
        self.persist();
        let summary = completion_summary(&SummaryInput::from_cycle(&self.state, outcome));
        self.run.note(&self.orchestrator, &summary);
        self.run.emit(EngineEvent::CycleFinished {
            group: self.run.group(),
            outcome,
            iterations: self.state.iteration,
            summary: summary.clone(),
        });
        let final_text = self
            .state
            .last_synthesis
            .as_deref()
            .map(strip_sentinel_lines)
            .unwrap_or_default();
        let mut report = self
            .run
            .report(outcome, self.state.iteration, final_text, summary);
        report.usage = self.state.usage;
        report.duration = Duration::from_millis(self.state.duration_ms);
        report
    }
}
