//! Orchestrator-reflect (SPEC section 4): plan, dispatch, collect, synthesize, evaluate, on the
//! shared cycle skeleton. The cycle state is persisted in its group after every step so a crash
//! can be resumed from the last completed iteration.
//!
//! Resume point: the iteration after the last completed one (its plan, evaluations and queued
//! messages are in the saved cycle); the turns of the interrupted iteration that had finished
//! (a plan, some workers) come back from disk instead of being asked again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::model::{CycleOutcome, Evaluation, Mode, ReflectionCycle, Usage};

use super::super::cycle::{self, CycleContext, CycleLoop, Step};
use super::super::events::{EventKind, Phase};
use super::super::protocol::{
    AdjustmentInput, Assignment, EarlierRequests, EarlierResult, EvaluationStep, LastEvaluation, PlanFormat,
    PlanMode, Replan, StepPrompt, SynthesisStep, TeamContext, WorkerResult, checks, earlier_requests_after,
    evaluator_brief, evaluator_prompt, in_run, kept_synthesis_iteration, nudge_prompt, orchestrator_brief,
    parse_evaluator_reply, parse_self_evaluation, pending_adjustments, planning_prompt, replan_prompt,
    strip_sentinel_lines, synthesis_prompt, trend, with_earlier_requests,
};
use super::super::run::Run;
use super::super::session::{TurnResult, Window};
use super::super::team::Member;
use super::super::{EngineError, RunReport};

struct TeamCycle<'r, 'a> {
    run: &'r mut Run<'a>,
    state: ReflectionCycle,
    orchestrator: Arc<Member>,
    evaluator: Option<Arc<Member>>,
    /// Messages carried over from before a restart, given to the next plan.
    carried: Vec<String>,
    nudged: bool,
    /// When the current attempt at an iteration started, and the run's usage and paused time
    /// then.
    attempt_started: (Instant, Usage, Duration),
    base_usage: Usage,
    base_duration_ms: u64,
    /// Why the state could not be written, when it could not.
    save_error: Option<String>,
    /// Each worker's latest successful answer in this run and its iteration, in team order:
    /// a synthesis covers the workers its iteration did not assign too.
    latest: Vec<EarlierResult>,
    /// What holds for the whole cycle, said once in the orchestrator's system prompt (the
    /// request, the workers, the formats and rules) and in the evaluator's.
    brief: String,
    evaluator_brief: Option<String>,
    /// The last synthesis this run's orchestrator wrote: its conversation holds it, so a
    /// replan after it does not repeat it.
    said: Option<String>,
}

/// The earlier exchanges sent with each turn of a cycle: at most 12 (the orchestrator's last
/// six iterations, a plan and a synthesis each; a worker's last twelve tasks and answers; the
/// evaluator's last twelve verdicts), the oldest dropped 8 at a time, so at least five are
/// sent. What is older has been built on since; the brief and the newest message carry what
/// holds now, a plan with one line for each earlier iteration (its ledger). Each move writes the
/// kept history to a provider's prompt cache again: a long stride moves it seldom (every
/// fourth iteration of the orchestrator's).
const RECENT: Window = Window { most: 12, stride: 8 };

pub(super) async fn run(run: &mut Run<'_>, goal: String, resume: bool) -> Result<RunReport, EngineError> {
    let Some(orchestrator) = run.team.orchestrator.clone() else {
        return Err(EngineError::NotRunnable {
            group: run.team.name.clone(),
            mode: Mode::OrchestratorReflect,
            reason: "it has no orchestrator session".into(),
        });
    };
    let evaluator = run.team.evaluator.clone();
    run.window = Some(RECENT);
    let previous = run.shared.org.read(|o| {
        o.group(&run.team.group_id)
            .and_then(|g| g.state.orchestrator_reflect.clone())
    });
    // A conversation that goes on from the group's earlier runs (its orchestrator's
    // conversation still holds them: after a new conversation it starts again from none): the
    // run's briefs say what they were asked.
    let goes_on = run.team.memory == crate::model::Memory::Conversation
        && !run.sent_prompts(&orchestrator, Some(1)).await.is_empty();
    let (earlier_goals, earlier_runs) = match &previous {
        Some(p) if goes_on => {
            let before = p.earlier_runs.max(p.earlier_goals.len() as u32);
            (
                earlier_requests_after(&p.earlier_goals, &p.goal),
                before + u32::from(!p.goal.trim().is_empty()),
            )
        }
        _ => (Vec::new(), 0),
    };
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
            earlier_goals,
            earlier_runs,
            ..ReflectionCycle::default()
        },
    };
    // A resumed cycle has the messages it took with its saved state.
    let pending = if resume { Vec::new() } else { run.take_pending() };
    let mut carried = state.queued_messages.clone();
    carried.extend(pending);
    let workers = run.team.worker_infos();
    let earlier = earlier_requests(&state);
    let brief = orchestrator_brief(
        &TeamContext {
            request: &state.goal,
            workers: &workers,
            routing_context: run.team.routing_context.as_deref(),
            orchestrator_prompt: run.team.orchestrator_prompt.as_deref(),
        },
        PlanMode::Reflect {
            max_iterations: state.max_iterations,
        },
        evaluator.is_none(),
    );
    let brief = with_earlier_requests(brief, &earlier);
    let evaluator_brief = evaluator
        .as_ref()
        .map(|_| with_earlier_requests(evaluator_brief(&state.goal), &earlier));
    let mut cycle = TeamCycle {
        brief,
        evaluator_brief,
        // A resumed run reads the orchestrator's conversation back from where the interrupted
        // run began: its last synthesis is there (and a replayed plan asks what it asked then).
        said: run.resumed.as_ref().and(state.last_synthesis.clone()),
        base_usage: state.usage,
        base_duration_ms: state.duration_ms,
        carried,
        state,
        run,
        orchestrator,
        evaluator,
        nudged: false,
        attempt_started: (Instant::now(), Usage::default(), Duration::ZERO),
        save_error: None,
        latest: Vec::new(),
    };
    cycle.state.active = true;
    cycle.state.outcome = None;
    cycle.state.evaluator = cycle.evaluator.as_ref().map(|e| e.name.clone());
    // The group and its new cycle are on disk before anyone hears the cycle started.
    if !cycle.save().await {
        return Ok(cycle.finish(CycleOutcome::SaveFailed).await);
    }
    cycle.run.emit(EventKind::CycleStarted {
        mode: Mode::OrchestratorReflect,
        max_iterations: cycle.state.max_iterations,
    });
    let outcome = {
        let control = &cycle.run.active.control;
        let emitter = &cycle.run.active.emitter;
        let cx = CycleContext {
            control,
            emitter,
            backoff: cycle
                .run
                .shared
                .profile(&cycle.run.team.group_id, None)
                .options
                .error_backoff,
        };
        cycle::drive(&mut cycle, &cx).await
    };
    Ok(cycle.finish(outcome).await)
}

/// What the earlier runs of the cycle's conversation were asked, numbered by run.
fn earlier_requests(state: &ReflectionCycle) -> EarlierRequests<'_> {
    let kept = state.earlier_goals.len() as u32;
    EarlierRequests {
        requests: &state.earlier_goals,
        first_run: state.earlier_runs.saturating_sub(kept) + 1,
    }
}

impl CycleLoop for TeamCycle<'_, '_> {
    fn state(&mut self) -> &mut ReflectionCycle {
        &mut self.state
    }

    async fn iterate(&mut self, iteration: u32) -> Step {
        self.attempt_started = (Instant::now(), self.run.usage, self.run.control().paused_for());
        self.iteration(iteration).await
    }

    /// Saves the cycle state into its group (the saver writes it in the background). Costs the
    /// same at iteration 1 and 1,000: only what changed is copied.
    fn persist(&mut self) {
        let mut usage = self.base_usage;
        usage.add(self.run.usage);
        self.state.usage = usage;
        self.state.duration_ms = self.base_duration_ms + self.run.active_time().as_millis() as u64;
        let mut queued = self.carried.clone();
        queued.extend(self.run.control().peek_queued());
        self.state.queued_messages = queued;
        let state = &self.state;
        let gid = &self.run.team.group_id;
        self.run.shared.org.update(|o| {
            if let Some(g) = o.group_mut(gid) {
                match &mut g.state.orchestrator_reflect {
                    Some(saved) => state.sync_into(saved),
                    None => g.state.orchestrator_reflect = Some(state.clone()),
                }
            }
        });
    }

    fn paused(&mut self, paused: bool) {
        self.state.paused = paused;
        let gid = &self.run.team.group_id;
        self.run.shared.org.update(|o| {
            if let Some(r) = o
                .group_mut(gid)
                .and_then(|g| g.state.orchestrator_reflect.as_mut())
            {
                r.paused = paused;
            }
        });
    }
}

impl TeamCycle<'_, '_> {
    /// In a conversation, a step's kept form names its run (the briefs number the earlier
    /// runs' requests the same way).
    fn numbered(&self, prompt: StepPrompt) -> StepPrompt {
        match self.run.team.memory {
            crate::model::Memory::Conversation => in_run(prompt, self.state.earlier_runs + 1),
            crate::model::Memory::Run => prompt,
        }
    }

    /// Saves the state and waits until it is on disk (a checkpoint: the event that reports
    /// the step comes after). False when it could not be written.
    async fn save(&mut self) -> bool {
        self.persist();
        match self.run.shared.checkpoint().await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot save the cycle state");
                self.save_error = Some(e.to_string());
                false
            }
        }
    }

    /// Waits while paused between steps; false when the cycle was stopped.
    async fn checkpoint(&mut self) -> bool {
        let control = self.run.active;
        let cx = CycleContext {
            control: &control.control,
            emitter: &control.emitter,
            backoff: Duration::ZERO,
        };
        cycle::checkpoint(self, &cx).await
    }

    fn phase(&self, iteration: u32, phase: Phase) {
        self.run.emit(EventKind::Phase { iteration, phase });
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
        let mut queued = std::mem::take(&mut self.carried);
        queued.extend(self.run.control().take_queued());
        let orchestrator = self.orchestrator.clone();
        // What the window still sends of the conversation: a self-evaluation's reasons end
        // its synthesis, so the ledger says them only for iterations whose synthesis is not
        // sent. The window is a suffix of the conversation, so the oldest synthesis line in
        // it (an earlier run's only when all of this run's are sent too) marks where.
        let syntheses_from = self
            .run
            .sent_prompts(&orchestrator, Some(iteration))
            .await
            .iter()
            .filter_map(|text| kept_synthesis_iteration(text))
            .min()
            .unwrap_or(iteration);
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
                // Its own answer just before says the synthesis, unless it was written before
                // a restart.
                let in_conversation = self.said.as_deref() == Some(previous.as_str());
                let last = last.as_ref().map_or(iteration, |e| e.iteration);
                let earlier = &self.state.evaluations;
                let earlier = &earlier[..earlier.partition_point(|e| e.iteration < last)];
                replan_prompt(
                    &Replan {
                        previous_synthesis: (!in_conversation).then_some(previous.as_str()),
                        last_evaluation,
                        iteration,
                        max_iterations: self.state.max_iterations,
                        earlier,
                        syntheses_from,
                    },
                    &queued,
                )
            }
            (None, _) => planning_prompt(
                PlanMode::Reflect {
                    max_iterations: self.state.max_iterations,
                },
                // A cycle's request is in its brief.
                "",
                &queued,
            ),
        };
        let prompt = self.numbered(prompt);
        let first_plan_of_cycle = self.state.last_synthesis.is_none();
        let brief = self.brief.clone();
        let plan = self
            .run
            .step(&orchestrator, prompt, Some(&brief), Some(iteration))
            .await;
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
            let again = self
                .run
                .step(&orchestrator, nudge_prompt(), Some(&brief), Some(iteration))
                .await;
            if !again.success {
                return Err(self.failure("planning (after a nudge)", &again));
            }
            assignments = self.run.parse_plan(&again.text, iteration).assignments;
        }
        if assignments.is_empty() {
            self.run.emit(EventKind::Warning {
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

    async fn iteration(&mut self, iteration: u32) -> Step {
        let assignments = match self.plan(iteration).await {
            Ok(a) => a,
            Err(step) => return step,
        };
        if !self.checkpoint().await {
            return Step::Cancelled;
        }

        self.phase(iteration, Phase::Dispatch);
        self.run.announce(&assignments, iteration);
        let goal = self.state.goal.clone();
        let earlier = earlier_requests(&self.state);
        let results = self.run.dispatch(&assignments, &goal, &earlier, iteration).await;
        self.persist();
        self.phase(iteration, Phase::Collect);
        if self.run.cancelled() || !self.checkpoint().await {
            return Step::Cancelled;
        }
        // The team's own checks (its iteration_finished hooks, e.g. the tests) once the workers
        // are done: what they say goes to whoever judges the iteration.
        let checks_said = self
            .run
            .shared
            .iteration_finished_hooks(self.run.active, &self.run.team.group_id, iteration, &results)
            .await;

        self.phase(iteration, Phase::Synthesize);
        let max = self.state.max_iterations;
        let earlier = self.remember(&results, iteration);
        // The checks go to whoever judges: the evaluator, else the synthesis judging itself.
        let evidence: Vec<_> = checks(&checks_said).into_iter().collect();
        let prompt = self.numbered(synthesis_prompt(&SynthesisStep {
            request: &goal,
            iteration: Some((iteration, max)),
            results: &results,
            earlier: &earlier,
            self_evaluation: self.evaluator.is_none(),
            evidence: if self.evaluator.is_none() { &evidence } else { &[] },
        }));
        let orchestrator = self.orchestrator.clone();
        let brief = self.brief.clone();
        let synthesis = self
            .run
            .step(&orchestrator, prompt, Some(&brief), Some(iteration))
            .await;
        if !synthesis.success {
            return self.failure("synthesis", &synthesis);
        }
        self.said = Some(synthesis.text.clone());
        self.persist();
        if !self.checkpoint().await {
            return Step::Cancelled;
        }

        self.phase(iteration, Phase::Evaluate);
        let (score, rationale, goal_met, evaluator_model) = match self.evaluator.clone() {
            Some(evaluator) => {
                let prompt = self.numbered(evaluator_prompt(&EvaluationStep {
                    synthesis: &synthesis.text,
                    iteration,
                    max_iterations: max,
                    evidence: &evidence,
                }));
                let brief = self.evaluator_brief.clone();
                let reply = self
                    .run
                    .step(&evaluator, prompt, brief.as_deref(), Some(iteration))
                    .await;
                if !reply.success {
                    return self.failure("evaluation", &reply);
                }
                let verdict = parse_evaluator_reply(&reply.text);
                if verdict.unparsed {
                    self.run.emit(EventKind::EvaluationUnparsed { iteration });
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
        let (started, usage_before, paused_before) = self.attempt_started;
        let paused = self.run.control().paused_for().saturating_sub(paused_before);
        let evaluation = Evaluation {
            iteration,
            score,
            rationale: rationale.clone(),
            evaluator_model,
            at: Utc::now(),
            trend: direction,
            usage: self.run.usage.since(usage_before),
            duration_ms: started.elapsed().saturating_sub(paused).as_millis() as u64,
            assigned: results.iter().map(|r| r.name.clone()).collect(),
        };
        let (usage, duration_ms) = (evaluation.usage, evaluation.duration_ms);
        self.state.record_evaluation(evaluation);

        let previous_stalled = self.state.consecutive_stalls > 0;
        let adjustments = pending_adjustments(&AdjustmentInput {
            iteration,
            results: &results,
            previous_score,
            score: Some(score),
            previous_iteration_stalled: previous_stalled,
        });
        self.state.pending_adjustments.extend(adjustments.iter().cloned());
        let stall = cycle::track_stall(&mut self.state, &synthesis.text, iteration);
        self.state.last_synthesis = Some(synthesis.text.clone());
        self.state.consecutive_errors = 0;
        self.state.completed_iterations = iteration;
        // The completed iteration is on disk before its evaluation is reported.
        if !self.save().await {
            return Step::SaveFailed;
        }
        self.run.emit(EventKind::Evaluation {
            iteration,
            score,
            rationale,
            trend: direction,
            usage,
            duration_ms,
        });
        for text in adjustments {
            self.run.emit(EventKind::Adjustment { text });
        }
        if let Some(warning) = stall.warning {
            self.run.emit(warning);
        }

        if goal_met {
            Step::GoalMet
        } else if stall.limit_reached {
            Step::Stalled
        } else {
            Step::Continue
        }
    }

    /// Keeps this iteration's successful answers as each worker's latest; returns the latest
    /// earlier answer of every worker this iteration did not hear from.
    fn remember(&mut self, results: &[WorkerResult], iteration: u32) -> Vec<EarlierResult> {
        let earlier: Vec<EarlierResult> = self
            .latest
            .iter()
            .filter(|e| !results.iter().any(|r| r.success && r.name == e.name))
            .cloned()
            .collect();
        for r in results.iter().filter(|r| r.success) {
            let text = r.text.clone();
            match self.latest.iter_mut().find(|e| e.name == r.name) {
                Some(e) => {
                    e.iteration = iteration;
                    e.text = text;
                }
                None => self.latest.push(EarlierResult {
                    name: r.name.clone(),
                    iteration,
                    text,
                }),
            }
        }
        earlier
    }

    /// The answer so far: the last synthesis without its sentinel lines.
    /// The latest synthesis: also one whose evaluation was cut short by a stop (`said` is set
    /// as it is written, `last_synthesis` once it is judged).
    fn final_text(&self) -> String {
        self.said
            .as_deref()
            .or(self.state.last_synthesis.as_deref())
            .map(strip_sentinel_lines)
            .unwrap_or_default()
    }

    /// The process is ending from outside: the cycle is saved as it stands (active, after its
    /// last completed iteration), so `huddle run --resume` or the TUI can continue it.
    async fn leave_interrupted(mut self, outcome: CycleOutcome) -> RunReport {
        self.state.paused = false;
        let saved = self.save().await;
        let done = self.state.completed_iterations;
        let why = match self.run.control().rate_limited() {
            Some(limit) => format!("rate limited ({limit})"),
            None => "interrupted".to_string(),
        };
        self.run.emit(EventKind::Warning {
            message: format!(
                "{why} after iteration {done}/{}; the cycle can be resumed",
                self.state.max_iterations
            ),
        });
        let final_text = self.final_text();
        let outcome = if saved { outcome } else { CycleOutcome::SaveFailed };
        let mut report = self.run.report(outcome, done, final_text, String::new());
        report.usage = self.state.usage;
        report.failed = self.save_error.take();
        report
    }

    async fn finish(mut self, outcome: CycleOutcome) -> RunReport {
        // Messages no plan will read any more wait for the group's next run.
        let mut leftovers = std::mem::take(&mut self.carried);
        leftovers.extend(self.run.control().take_queued());
        if !leftovers.is_empty() {
            let gid = &self.run.team.group_id;
            self.run.shared.org.update(|o| {
                if let Some(g) = o.group_mut(gid) {
                    g.pending_messages.extend(leftovers);
                }
            });
        }
        let from_outside = self.run.shared.interrupting() || self.run.control().interrupted();
        if (outcome == CycleOutcome::Cancelled && from_outside) || outcome == CycleOutcome::RateLimited {
            return self.leave_interrupted(outcome).await;
        }
        cycle::conclude(&mut self.state, outcome);
        // The outcome is on disk before it is reported.
        let outcome = if self.save().await {
            outcome
        } else {
            CycleOutcome::SaveFailed
        };
        let summary = self
            .run
            .control()
            .annotate_summary(cycle::summary(&self.state, outcome));
        self.run.note(&self.orchestrator, &summary);
        self.run.emit(EventKind::CycleFinished {
            outcome,
            iterations: self.state.iteration,
            max_iterations: self.state.max_iterations,
            mode: Some(Mode::OrchestratorReflect),
            summary: summary.clone(),
        });
        let final_text = self.final_text();
        let mut report = self
            .run
            .report(outcome, self.state.iteration, final_text, summary);
        report.usage = self.state.usage;
        report.duration = Duration::from_millis(self.state.duration_ms);
        report
    }
}
