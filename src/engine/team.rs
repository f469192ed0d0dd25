//! What every team mode shares: a snapshot of the team taken at the start of a run, turn
//! helpers, and parallel dispatch to workers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::Semaphore;

use crate::model::{CycleOutcome, GroupKind, Message, Mode, Role, Usage};

use super::events::EngineEvent;
use super::protocol::{
    Assignment, ParsedPlan, WorkerInfo, WorkerResult, WorkerTask, parse_assignments, worker_prompt,
};
use super::{EngineError, EngineShared, RunControl, RunOverrides, RunReport, TurnResult, modes, reflect};

/// A member of the team as a run sees it.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub id: String,
    pub name: String,
    pub model: String,
    pub system_prompt: Option<String>,
}

/// The team, read once when a run starts.
#[derive(Debug, Clone)]
pub(crate) struct Team {
    pub group_id: String,
    pub name: String,
    pub mode: Mode,
    pub orchestrator: Option<Member>,
    pub workers: Vec<Member>,
    pub evaluator: Option<Member>,
    /// Every session in order (broadcast and sequential use all of them).
    pub everyone: Vec<Member>,
    pub orchestrator_prompt: Option<String>,
    pub shared_context: Option<String>,
    pub routing_context: Option<String>,
    pub max_iterations: u32,
    pub worker_timeout: Duration,
    pub model_override: Option<String>,
}

impl Team {
    pub fn read(
        shared: &EngineShared,
        group_id: &str,
        overrides: &RunOverrides,
    ) -> Result<Team, EngineError> {
        shared.org.read(|org| {
            let group = org
                .group(group_id)
                .ok_or_else(|| EngineError::NoSuchGroup(group_id.to_string()))?;
            let sessions = org.sessions_in(group_id);
            let member = |s: &crate::model::Session| Member {
                id: s.id.clone(),
                name: s.name.clone(),
                model: overrides.model.clone().unwrap_or_else(|| s.model.clone()),
                system_prompt: s.system_prompt.clone(),
            };
            let orchestrator = sessions
                .iter()
                .find(|s| s.role == Role::Orchestrator)
                .map(|s| member(s));
            let evaluator = match &group.evaluator {
                Some(name) => sessions.iter().find(|s| &s.name == name).map(|s| member(s)),
                None => sessions
                    .iter()
                    .find(|s| s.role == Role::Evaluator)
                    .map(|s| member(s)),
            };
            let workers: Vec<Member> = sessions
                .iter()
                .filter(|s| s.role == Role::Worker)
                .map(|s| member(s))
                .collect();
            // A plain (non-team) group run as a team broadcasts to its sessions.
            let mode = overrides.mode.unwrap_or(if group.kind == GroupKind::Team {
                group.mode
            } else {
                Mode::Broadcast
            });
            Ok(Team {
                group_id: group.id.clone(),
                name: group.name.clone(),
                mode,
                orchestrator,
                workers,
                evaluator,
                everyone: sessions.iter().map(|s| member(s)).collect(),
                orchestrator_prompt: group.orchestrator_prompt.clone(),
                shared_context: group.shared_context.clone(),
                routing_context: group.routing_context.clone(),
                max_iterations: overrides.max_iterations.unwrap_or(group.max_iterations).max(1),
                // Clamped so that deadlines stay representable (a week is "no limit" here).
                worker_timeout: Duration::from_secs(group.worker_timeout_secs.clamp(1, 7 * 24 * 3600)),
                model_override: overrides.model.clone(),
            })
        })
    }

    pub fn worker_infos(&self) -> Vec<WorkerInfo> {
        self.workers
            .iter()
            .map(|w| WorkerInfo::new(w.name.clone(), w.model.clone(), w.system_prompt.clone()))
            .collect()
    }

    pub fn worker_names(&self) -> Vec<&str> {
        self.workers.iter().map(|w| w.name.as_str()).collect()
    }

    /// The team name as session names carry it (`<team-slug>-<worker>`).
    pub fn slug(&self) -> String {
        let mut out = String::new();
        for c in self.name.chars() {
            if c.is_alphanumeric() {
                out.extend(c.to_lowercase());
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        out.trim_matches('-').to_string()
    }
}

/// Entry point of every team run.
pub(crate) async fn run(
    shared: &Arc<EngineShared>,
    control: &RunControl,
    group_id: &str,
    prompt: String,
    overrides: &RunOverrides,
    resume: bool,
) -> Result<RunReport, EngineError> {
    let team = Team::read(shared, group_id, overrides)?;
    let not_runnable = |reason: &str| EngineError::NotRunnable {
        group: team.name.clone(),
        mode: team.mode,
        reason: reason.to_string(),
    };
    if team.everyone.is_empty() {
        return Err(not_runnable("it has no sessions"));
    }
    if team.mode.has_orchestrator() {
        if team.orchestrator.is_none() {
            return Err(not_runnable("it has no orchestrator session"));
        }
        if team.workers.is_empty() {
            return Err(not_runnable("it has no worker sessions"));
        }
    }
    let mut run = Run::new(shared, control, team);
    match run.team.mode {
        Mode::Broadcast => modes::broadcast(&mut run, prompt).await,
        Mode::Sequential => modes::sequential(&mut run, prompt).await,
        Mode::Orchestrator => modes::orchestrator(&mut run, prompt).await,
        Mode::OrchestratorReflect => reflect::run(&mut run, prompt, resume).await,
    }
}

/// One run in progress: the team, its controls and its running totals.
pub(crate) struct Run<'a> {
    pub shared: &'a Arc<EngineShared>,
    pub control: &'a RunControl,
    pub team: Team,
    pub started: Instant,
    pub usage: Usage,
    pub simulated: bool,
    /// Set when a pause ended in a resume; the mode clears its stall history and resets it.
    pub resumed: bool,
}

impl<'a> Run<'a> {
    pub fn new(shared: &'a Arc<EngineShared>, control: &'a RunControl, team: Team) -> Run<'a> {
        Run {
            shared,
            control,
            team,
            started: Instant::now(),
            usage: Usage::default(),
            simulated: false,
            resumed: false,
        }
    }

    pub fn group(&self) -> String {
        self.team.name.clone()
    }

    pub fn emit(&self, event: EngineEvent) {
        self.shared.events.emit(event);
    }

    pub fn cancelled(&self) -> bool {
        self.control.cancel.is_cancelled()
    }

    /// One turn of a member, counted in the run's totals.
    pub async fn turn(&mut self, member: &Member, prompt: String, iteration: Option<u32>) -> TurnResult {
        let result = self
            .shared
            .turn(
                &member.id,
                prompt,
                iteration,
                self.control.cancel.child_token(),
                None,
                self.team.model_override.clone(),
            )
            .await;
        self.account(&result);
        result
    }

    pub fn account(&mut self, result: &TurnResult) {
        if let Some(u) = result.usage {
            self.usage.add(u);
        }
        self.simulated |= result.simulated;
    }

    /// Parses an orchestrator's plan against the team's workers, reporting dropped names.
    pub fn parse_plan(&self, text: &str, iteration: u32) -> ParsedPlan {
        let parsed = parse_assignments(text, &self.team.worker_names(), &self.team.slug());
        for d in &parsed.dropped {
            self.emit(EngineEvent::AssignmentDropped {
                group: self.group(),
                iteration,
                name: d.name.clone(),
                reason: d.reason.clone(),
            });
        }
        parsed
    }

    /// Runs assignments in parallel (at most `max_concurrency` at once), each bounded by the
    /// worker timeout; a failed or timed-out worker is a failed result, never an abort.
    pub async fn dispatch(
        &mut self,
        assignments: &[Assignment],
        request: &str,
        iteration: u32,
    ) -> Vec<WorkerResult> {
        let semaphore = Arc::new(Semaphore::new(self.shared.options.max_concurrency.max(1)));
        let group = self.group();
        let jobs = assignments.iter().filter_map(|a| {
            let member = self.team.workers.iter().find(|w| w.name == a.worker)?.clone();
            let prompt = worker_prompt(&WorkerTask {
                system_prompt: member.system_prompt.as_deref(),
                shared_context: self.team.shared_context.as_deref(),
                request,
                task: &a.task,
            });
            let semaphore = Arc::clone(&semaphore);
            let shared = Arc::clone(self.shared);
            let cancel = self.control.cancel.child_token();
            let timeout = self.team.worker_timeout;
            let model_override = self.team.model_override.clone();
            let group = group.clone();
            Some(async move {
                let _permit = semaphore.acquire_owned().await;
                let started = Instant::now();
                let guard = cancel.clone();
                // The provider enforces the timeout; the outer one is a backstop for a stuck
                // provider, and cancels the turn so its actor moves on.
                let backstop = timeout.saturating_add(Duration::from_secs(5));
                let result = match tokio::time::timeout(
                    backstop,
                    shared.turn(
                        &member.id,
                        prompt,
                        Some(iteration),
                        cancel,
                        Some(timeout),
                        model_override,
                    ),
                )
                .await
                {
                    Ok(r) => r,
                    Err(_) => {
                        guard.cancel();
                        TurnResult::failed(
                            &member.name,
                            format!("timed out after {}s", timeout.as_secs()),
                            None,
                        )
                    }
                };
                let duration = started.elapsed();
                shared.events.emit(EngineEvent::WorkerFinished {
                    group,
                    iteration,
                    worker: member.name.clone(),
                    success: result.success,
                    duration_ms: duration.as_millis() as u64,
                });
                (result, duration)
            })
        });
        let finished = join_all(jobs).await;
        let mut results = Vec::with_capacity(finished.len());
        for (result, duration) in finished {
            self.account(&result);
            results.push(WorkerResult {
                name: result.session.clone(),
                success: result.success,
                duration,
                text: result.text_or_error(),
            });
        }
        results
    }

    /// Waits while the run is paused. Returns false if it was stopped meanwhile.
    pub async fn wait_if_paused(&mut self) -> bool {
        let mut paused = self.control.paused.subscribe();
        if !*paused.borrow_and_update() {
            return !self.cancelled();
        }
        self.set_paused(true);
        self.emit(EngineEvent::CyclePaused { group: self.group() });
        loop {
            tokio::select! {
                _ = self.control.cancel.cancelled() => {
                    self.set_paused(false);
                    return false;
                }
                changed = paused.changed() => {
                    if changed.is_err() || !*paused.borrow_and_update() {
                        break;
                    }
                }
            }
        }
        self.set_paused(false);
        self.resumed = true;
        self.emit(EngineEvent::CycleResumed { group: self.group() });
        !self.cancelled()
    }

    fn set_paused(&self, paused: bool) {
        let gid = self.team.group_id.clone();
        self.shared.org.update(|o| {
            if let Some(r) = o.group_mut(&gid).and_then(|g| g.reflection.as_mut()) {
                r.paused = paused;
            }
        });
    }

    /// Sleeps, waking early (false) if the run is stopped.
    pub async fn sleep(&self, d: Duration) -> bool {
        tokio::select! {
            _ = self.control.cancel.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    /// Writes a notice into a member's transcript (e.g. the completion summary).
    pub fn note(&self, member: &Member, text: &str) {
        self.shared.writer.append(&member.id, Message::notice(text));
    }

    pub fn report(
        &self,
        outcome: CycleOutcome,
        iterations: u32,
        final_text: String,
        summary: String,
    ) -> RunReport {
        RunReport {
            outcome,
            iterations,
            final_text,
            summary,
            usage: self.usage,
            duration: self.started.elapsed(),
            simulated: self.simulated,
            failed: None,
        }
    }
}
