//! Single-agent reflection (SPEC section 4): one session improves its own answer until it puts
//! `[[REFLECTION_COMPLETE]]` on its own line, or, with an evaluator model, until the evaluator
//! answers `PASS`. The same cycle skeleton as a team's reflect loop (iterations, stalls, errors,
//! pause and stop). Its state is kept on its session after every iteration
//! ([`crate::model::OpenReflection`]).
//!
//! Resume point: the iteration after the last completed one, with its feedback and last answer;
//! the answer of the interrupted iteration, when it had finished, comes from disk.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use crate::model::{Cost, Evaluation, Message, Mode, ReflectionCycle, Usage};
use crate::providers::{ChatMessage, TurnRequest};

use super::budget::Spent;
use super::budget::within_time_limit;
use super::cycle::{self, CycleContext, CycleLoop, Step};
use super::events::{EventKind, Phase};
use super::protocol::{
    PassFail, is_reflection_complete, parse_pass_fail, reflection_brief, reflection_evaluator_prompt,
    reflection_first_prompt, reflection_followup_prompt, strip_sentinel_lines, trend,
};
use super::session::TurnOptions;
use super::{ActiveRun, EngineError, EngineShared, ReflectionRequest, RunReport};

struct SessionCycle<'a> {
    shared: &'a Arc<EngineShared>,
    active: &'a ActiveRun,
    session_id: &'a str,
    session_name: String,
    request: ReflectionRequest,
    state: ReflectionCycle,
    /// The evaluator's feedback on the last answer, for the next prompt.
    feedback: Option<String>,
    last_answer: String,
    simulated: bool,
    /// Its runs so far (this one last), kept with its state.
    runs: Vec<String>,
    /// The turns a resumed reflection's interrupted run finished.
    replay: Option<Arc<super::replay::Replay>>,
}

pub(crate) async fn run(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    session_id: &str,
    request: ReflectionRequest,
    resume: bool,
) -> Result<RunReport, EngineError> {
    let started = Instant::now();
    let (session_name, model, budget, saved) = shared
        .org
        .read(|o| {
            o.session(session_id).map(|s| {
                // The session's group's budget (or config.yaml's) holds for its reflection too.
                let budget = o.group(&s.group_id).map(|g| g.budget).unwrap_or_default();
                (s.name.clone(), s.model.clone(), budget, s.reflection.clone())
            })
        })
        .ok_or_else(|| EngineError::NoSuchSession(session_id.to_string()))?;
    // Or the default of the configuration the run was started with (its front end's).
    let profile = shared.profile(&active.emitter.group_id, Some(session_id));
    let budget = budget.or(profile.options.default_budget);
    let models: Vec<&str> = std::iter::once(request.model_override.as_deref().unwrap_or(&model))
        .chain(request.evaluator_model.as_deref())
        .collect();
    shared.check_priced(&profile, &session_name, &budget, &models)?;
    let max_iterations = request.max_iterations.max(1);
    let fresh = ReflectionCycle {
        goal: request.goal.clone(),
        max_iterations,
        started_at: Some(Utc::now()),
        active: true,
        evaluator: request.evaluator_model.clone(),
        ..ReflectionCycle::default()
    };
    let mut cycle = SessionCycle {
        shared,
        active,
        session_id,
        session_name,
        state: fresh,
        request,
        feedback: None,
        last_answer: String::new(),
        simulated: false,
        runs: vec![active.run_id()],
        replay: None,
    };
    // When and why it was interrupted, taken before `persist` below writes over them.
    let mut interruption = (None, None);
    if let Some(saved) = saved.filter(|_| resume) {
        // Go on after the last completed iteration; what the interrupted one finished is on disk.
        interruption = (saved.interrupted_at, saved.reason.clone());
        let mut state = saved.cycle;
        state.iteration = state.completed_iterations;
        state.paused = false;
        state.active = true;
        state.outcome = None;
        state.max_iterations = state.max_iterations.max(state.completed_iterations + 1);
        cycle.state = state;
        cycle.feedback = saved.feedback;
        cycle.last_answer = saved.last_answer;
        let replay = super::resume::read(shared, &[session_id.to_string()], saved.runs.clone()).await;
        shared.forget_sessions(&[session_id.to_string()]);
        cycle.runs = saved.runs;
        cycle.runs.push(active.run_id());
        cycle.replay = Some(Arc::new(replay));
    }
    // On its session (and on disk) before it is reported started.
    cycle.persist();
    if let Err(e) = shared.checkpoint().await {
        tracing::error!(error = %e, "cannot save a reflection's state");
    }
    active.emitter.emit(EventKind::CycleStarted {
        mode: Mode::OrchestratorReflect,
        max_iterations: cycle.state.max_iterations,
    });
    if let (Some(replay), Some(previous)) = (&cycle.replay, cycle.runs.iter().rev().nth(1)) {
        let (at, reason) = interruption;
        active.emitter.emit(EventKind::RunResumed {
            resumes: previous.clone(),
            interrupted_at: at,
            reason,
            finished_turns: u32::try_from(replay.counts().1).unwrap_or(u32::MAX),
            cycle: None,
        });
    }
    let cx = CycleContext {
        control: &active.control,
        emitter: &active.emitter,
        backoff: profile.options.error_backoff,
    };
    active.control.set_budget(budget);
    let outcome = within_time_limit(&active.control, &active.emitter, cycle::drive(&mut cycle, &cx)).await;
    cycle.state.duration_ms = started
        .elapsed()
        .saturating_sub(active.control.paused_for())
        .as_millis() as u64;
    let stopped_from_outside = shared.interrupting() || active.control.interrupted();
    let limited = outcome == crate::model::CycleOutcome::RateLimited;
    if (outcome == crate::model::CycleOutcome::Cancelled && stopped_from_outside) || limited {
        // Left to be resumed: kept as it is after its last completed iteration.
        let reason = active
            .control
            .interrupt_reason()
            .or_else(|| shared.interrupt_reason());
        shared.org.update(|o| {
            if let Some(r) = o.session_mut(session_id).and_then(|s| s.reflection.as_mut()) {
                r.interrupted_at = Some(Utc::now());
                r.reason = reason;
            }
        });
        let _ = shared.checkpoint().await;
        active.emitter.emit(EventKind::Warning {
            message: format!(
                "interrupted after iteration {}/{}; the reflection can be resumed",
                cycle.state.completed_iterations, cycle.state.max_iterations
            ),
        });
        return Ok(RunReport {
            outcome,
            iterations: cycle.state.completed_iterations,
            final_text: strip_sentinel_lines(&cycle.last_answer),
            summary: String::new(),
            usage: cycle.state.usage,
            duration: started.elapsed().saturating_sub(active.control.paused_for()),
            simulated: cycle.simulated,
            failed: None,
            cost: Default::default(),
        });
    }
    cycle::conclude(&mut cycle.state, outcome);
    // Over: nothing to resume.
    shared.org.update(|o| {
        if let Some(s) = o.session_mut(session_id) {
            s.reflection = None;
        }
    });
    let summary = active
        .control
        .annotate_summary(cycle::summary(&cycle.state, outcome));
    let notice = Message::notice(summary.clone());
    shared.writer.append(session_id, &notice);
    active.emitter.emit(EventKind::Notice {
        session_id: session_id.to_string(),
        session: cycle.session_name.clone(),
        text: summary.clone(),
        message: Some(Arc::new(notice)),
    });
    active.emitter.emit(EventKind::CycleFinished {
        outcome,
        iterations: cycle.state.iteration,
        max_iterations: cycle.state.max_iterations,
        mode: Some(Mode::OrchestratorReflect),
        summary: summary.clone(),
    });
    Ok(RunReport {
        outcome,
        iterations: cycle.state.iteration,
        final_text: strip_sentinel_lines(&cycle.last_answer),
        summary,
        usage: cycle.state.usage,
        cost: crate::model::Cost::default(),
        duration: started.elapsed().saturating_sub(active.control.paused_for()),
        simulated: cycle.simulated,
        failed: None,
    })
}

impl CycleLoop for SessionCycle<'_> {
    fn state(&mut self) -> &mut ReflectionCycle {
        &mut self.state
    }

    /// Keeps the state on the session (the saver takes it to disk).
    fn persist(&mut self) {
        let saved = crate::model::OpenReflection {
            runs: self.runs.clone(),
            cycle: self.state.clone(),
            model: self.request.model_override.clone(),
            feedback: self.feedback.clone(),
            last_answer: self.last_answer.clone(),
            interrupted_at: None,
            reason: None,
        };
        let id = self.session_id;
        self.shared.org.update(|o| {
            if let Some(s) = o.session_mut(id) {
                s.reflection = Some(saved);
            }
        });
    }

    async fn iterate(&mut self, iteration: u32) -> Step {
        let (attempt_started, usage_before) = (Instant::now(), self.state.usage);
        let max_iterations = self.state.max_iterations;
        let goal = &self.request.goal;
        // The goal and the rules are in the brief, the same for every iteration (so no request
        // lacks the goal when the oldest messages are no longer sent); each message asks for
        // an answer or an improvement.
        let prompt = if iteration == 1 {
            reflection_first_prompt(max_iterations)
        } else {
            reflection_followup_prompt(iteration, max_iterations, self.feedback.as_deref())
        };
        let (text, options) = TurnOptions {
            run_id: self.active.emitter.run_id.clone(),
            iteration: Some(iteration),
            cancel: self.active.control.cancel.child_token(),
            timeout: None,
            model_override: self.request.model_override.clone(),
            history_from_run_start: false,
            replay: self.replay.clone(),
            ..TurnOptions::default()
        }
        .with_step(prompt, Some(reflection_brief(goal)));
        let answer = self.shared.turn(self.session_id, text, options).await;
        if let Some(u) = answer.usage {
            self.state.usage.add(u);
            self.active.control.count_tokens(u, &self.active.emitter);
        }
        self.simulated |= answer.simulated;
        if answer.success {
            // Kept even if a stop lands at this moment: the answer did finish.
            self.last_answer = answer.text.clone();
        }
        if answer.cancelled() || self.active.control.cancelled() {
            return Step::Cancelled;
        }
        if !answer.success {
            return Step::Error(answer.error.clone().unwrap_or_else(|| "the turn failed".into()));
        }
        self.active.emitter.emit(EventKind::Phase {
            iteration,
            phase: Phase::Evaluate,
        });
        let (score, goal_met, rationale) = match self.request.evaluator_model.clone() {
            Some(model) => {
                let profile = self
                    .shared
                    .profile(&self.active.emitter.group_id, Some(self.session_id));
                let (verdict, used) = evaluate(
                    &profile,
                    &model,
                    goal,
                    &answer.text,
                    iteration,
                    max_iterations,
                    &self.active.control.cancel,
                )
                .await;
                if let Some(u) = used {
                    self.state.usage.add(u);
                    self.active.control.count_tokens(u, &self.active.emitter);
                }
                // The evaluator has no session: its call is counted here, not by a turn.
                if verdict.is_ok() || used.is_some() {
                    let spent = Spent {
                        usage: used.unwrap_or_default(),
                        cost: Cost::of_turn(used.and_then(|u| {
                            self.shared
                                .profile(&self.active.emitter.group_id, Some(self.session_id))
                                .options
                                .prices
                                .cost(&model, &u)
                        })),
                    };
                    self.active.control.count_spent(spent, &self.active.emitter);
                }
                match verdict {
                    Ok(PassFail::Pass) => (1.0, true, "PASS".to_string()),
                    Ok(PassFail::Fail { feedback }) => (0.4, false, feedback),
                    Err(e) => return Step::Error(format!("the evaluator failed: {e}")),
                }
            }
            None => {
                let done = is_reflection_complete(&answer.text);
                (if done { 1.0 } else { 0.7 }, done, String::new())
            }
        };
        self.state.consecutive_errors = 0;
        if self.request.evaluator_model.is_some() && !goal_met {
            self.feedback = Some(rationale.clone());
        }
        let direction = self.state.last_evaluation.as_ref().map(|p| trend(p.score, score));
        let evaluation = Evaluation {
            iteration,
            score,
            rationale: rationale.clone(),
            evaluator_model: self.request.evaluator_model.clone(),
            at: Utc::now(),
            trend: direction,
            usage: self.state.usage.since(usage_before),
            duration_ms: attempt_started.elapsed().as_millis() as u64,
            assigned: Vec::new(),
        };
        let (usage, duration_ms) = (evaluation.usage, evaluation.duration_ms);
        self.state.record_evaluation(evaluation);
        self.state.completed_iterations = iteration;
        // The completed iteration is on disk before its evaluation is reported.
        self.persist();
        if let Err(e) = self.shared.checkpoint().await {
            tracing::error!(error = %e, "cannot save a reflection's state");
        }
        self.active.emitter.emit(EventKind::Evaluation {
            iteration,
            score,
            rationale,
            trend: direction,
            usage,
            duration_ms,
        });
        if goal_met {
            return Step::GoalMet;
        }
        let stall = cycle::track_stall(&mut self.state, &answer.text, iteration);
        if let Some(warning) = stall.warning {
            self.active.emitter.emit(warning);
        }
        if stall.limit_reached {
            return Step::Stalled;
        }
        Step::Continue
    }
}

/// Asks the evaluator model directly (it has no session of its own).
async fn evaluate(
    profile: &super::Profile,
    model: &str,
    goal: &str,
    answer: &str,
    iteration: u32,
    max_iterations: u32,
    cancel: &CancellationToken,
) -> (Result<PassFail, String>, Option<Usage>) {
    let (provider, model) = match profile.providers.for_slug(model) {
        Ok(p) => p,
        Err(e) => return (Err(e.to_string()), None),
    };
    let clean = strip_sentinel_lines(answer);
    let mut request = TurnRequest::new(
        model,
        vec![ChatMessage::user(reflection_evaluator_prompt(
            goal,
            &clean,
            iteration,
            max_iterations,
        ))],
    );
    // A CLI agent as the evaluator runs in config.yaml's sandbox (and the command line's),
    // with no working directory of its own: read-only in huddle's.
    if provider.capabilities().local_process {
        request.sandbox = Some(profile.options.sandbox.sandbox(&[], None));
    }
    match provider
        .stream_turn(request, &mut |_| {}, cancel.child_token())
        .await
    {
        Ok(out) => (Ok(parse_pass_fail(&out.text)), out.usage),
        Err(e) => (Err(e.to_string()), None),
    }
}
