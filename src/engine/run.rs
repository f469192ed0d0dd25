//! One team run in progress: the team snapshot, its controls and running totals, and the turn
//! helpers every mode shares (a member's turn, parallel dispatch to workers, notes, pending
//! user messages).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::Semaphore;

use crate::model::{CycleOutcome, Message, Usage};

use super::events::{EventKind, ResumedCycle};
use super::protocol::{
    Assignment, EarlierRequests, ParsedPlan, StepPrompt, WorkerBrief, WorkerResolver, WorkerResult,
    parse_assignments_for, with_earlier_requests, worker_brief, worker_task_prompt,
};
use super::session::{PromptStamp, TurnOptions};
use super::sink::Emitter;
use super::team::{Member, Team};
use super::{ActiveRun, EngineShared, RunControl, RunReport, TurnResult};

/// One member's turn among several run at once ([`Run::parallel`]): its message and the run's
/// brief for it.
pub(crate) struct Job {
    pub member: Arc<Member>,
    pub prompt: StepPrompt,
    pub brief: Option<String>,
}

impl Job {
    /// A turn on `prompt` as it is, with no brief.
    pub fn plain(member: Arc<Member>, prompt: String) -> Job {
        Job {
            member,
            prompt: StepPrompt::plain(prompt),
            brief: None,
        }
    }
}

pub(crate) struct Run<'a> {
    pub shared: &'a Arc<EngineShared>,
    pub active: &'a ActiveRun,
    pub team: Team,
    pub started: Instant,
    pub usage: Usage,
    pub simulated: bool,
    /// A resumed run: what its interrupted run left (see `engine/resume.rs`).
    pub resumed: Option<Resumed>,
    /// Which earlier exchanges are sent with each turn of the run (see
    /// `TurnOptions::window`): the mode's choice, all by default.
    pub window: Option<super::session::Window>,
}

/// What a resumed run continues: the open run as it was left, and the turns it finished.
pub(crate) struct Resumed {
    pub open: crate::model::OpenRun,
    pub replay: Arc<super::replay::Replay>,
    /// `run_resumed` was said (right after the run's `cycle_started`).
    pub announced: std::sync::atomic::AtomicBool,
}

impl<'a> Run<'a> {
    pub fn new(shared: &'a Arc<EngineShared>, active: &'a ActiveRun, team: Team) -> Run<'a> {
        Run {
            shared,
            active,
            team,
            started: Instant::now(),
            usage: Usage::default(),
            simulated: false,
            resumed: None,
            window: None,
        }
    }

    /// True when the run is being stopped from outside (a signal, a quit): it is left open, to
    /// be resumed, rather than ended.
    pub fn left_to_resume(&self) -> bool {
        self.shared.interrupting() || self.control().interrupted()
    }

    /// The turns the interrupted run finished, when this run resumes one.
    pub fn replay(&self) -> Option<Arc<super::replay::Replay>> {
        self.resumed.as_ref().map(|r| Arc::clone(&r.replay))
    }

    /// The id of the run as first started (the same across its resumptions).
    pub fn first_run_id(&self) -> String {
        self.resumed
            .as_ref()
            .and_then(|r| r.open.first().map(str::to_string))
            .unwrap_or_else(|| self.active.run_id())
    }

    /// How long the run has worked: its time since it started, pauses left out.
    pub fn active_time(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.control().paused_for())
    }

    pub fn control(&self) -> &RunControl {
        &self.active.control
    }

    pub fn emitter(&self) -> &Emitter {
        &self.active.emitter
    }

    pub fn emit(&self, kind: EventKind) {
        let started = matches!(kind, EventKind::CycleStarted { .. });
        self.active.emitter.emit(kind);
        // A resumed run says so as it starts (after the start that opens its timeline).
        if let Some(resumed) = self.resumed.as_ref().filter(|_| started)
            && !resumed.announced.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            announce(self, resumed);
        }
    }

    pub fn cancelled(&self) -> bool {
        self.control().cancelled()
    }

    /// Options of a turn of this run.
    pub fn turn_options(&self, iteration: Option<u32>, timeout: Option<Duration>) -> TurnOptions {
        TurnOptions {
            run_id: self.active.emitter.run_id.clone(),
            iteration,
            cancel: self.control().cancel.child_token(),
            timeout,
            model_override: self.team.model_override.clone(),
            attachments: self.team.attachments.clone(),
            history_from_run_start: self.team.memory == crate::model::Memory::Run,
            replay: self.replay(),
            window: self.window,
            ..TurnOptions::default()
        }
    }

    /// One turn of a member with extra options (a fresh context, a stamp on the stored prompt),
    /// counted in the run's totals.
    pub async fn turn_with(
        &mut self,
        member: &Member,
        prompt: String,
        fresh: bool,
        stamp: Option<PromptStamp>,
    ) -> TurnResult {
        let options = TurnOptions {
            fresh,
            stamp,
            ..self.turn_options(None, None)
        };
        let result = self.shared.turn(&member.id, prompt, options).await;
        self.account(&result);
        if let Some(u) = result.usage {
            self.control().count_tokens(u, self.emitter());
        }
        result
    }

    /// One step of a member's run: its message (the conversation keeps its compact form) with
    /// the run's brief added to the member's system prompt, counted in the run's totals.
    pub async fn step(
        &mut self,
        member: &Member,
        prompt: StepPrompt,
        brief: Option<&str>,
        iteration: Option<u32>,
    ) -> TurnResult {
        let (text, options) = self
            .turn_options(iteration, None)
            .with_step(prompt, brief.map(str::to_string));
        let result = self.shared.turn(&member.id, text, options).await;
        self.account(&result);
        if let Some(u) = result.usage {
            self.control().count_tokens(u, self.emitter());
        }
        result
    }

    /// The user messages (as kept) that a step of `member` would be sent of its earlier
    /// conversation if it started now: what the step's own message need not say again.
    pub async fn sent_prompts(&self, member: &Member, iteration: Option<u32>) -> Vec<Arc<str>> {
        let options = self.turn_options(iteration, None);
        self.shared.sent_prompts(&member.id, &options).await
    }

    pub fn account(&mut self, result: &TurnResult) {
        if let Some(u) = result.usage {
            self.usage.add(u);
        }
        self.simulated |= result.simulated;
    }

    /// Parses an orchestrator's plan against the team's workers, reporting dropped names.
    pub fn parse_plan(&self, text: &str, iteration: u32) -> ParsedPlan {
        let (names, handles) = (self.team.worker_names(), self.team.worker_handles());
        let resolver = WorkerResolver::with_handles(&names, &handles, &self.team.slug());
        let parsed = parse_assignments_for(text, &resolver);
        for d in &parsed.dropped {
            self.emit(EventKind::AssignmentDropped {
                iteration,
                name: d.name.clone(),
                reason: d.reason.clone(),
            });
        }
        parsed
    }

    /// Announces assignments (the dispatch phase has begun).
    pub fn announce(&self, assignments: &[Assignment], iteration: u32) {
        for a in assignments {
            let session_id = self
                .team
                .worker_named(&a.worker)
                .map(|w| w.id.clone())
                .unwrap_or_default();
            self.emit(EventKind::Assignment {
                iteration,
                worker: a.worker.clone(),
                session_id,
                task: a.task.clone(),
            });
        }
    }

    /// Runs assignments in parallel (at most `max_concurrency` at once), each bounded by the
    /// worker timeout; a failed or timed-out worker is a failed result, never an abort. The
    /// workers' briefs say the team's request and what the conversation's earlier runs asked.
    pub async fn dispatch(
        &mut self,
        assignments: &[Assignment],
        request: &str,
        earlier: &EarlierRequests<'_>,
        iteration: u32,
    ) -> Vec<WorkerResult> {
        let jobs: Vec<Job> = assignments
            .iter()
            .filter_map(|a| {
                let member = Arc::clone(self.team.worker_named(&a.worker)?);
                let brief = with_earlier_requests(
                    worker_brief(&WorkerBrief {
                        system_prompt: member.system_prompt.as_deref(),
                        shared_context: self.team.shared_context.as_deref(),
                        request,
                    }),
                    earlier,
                );
                Some(Job {
                    member,
                    prompt: worker_task_prompt(&a.task),
                    brief: Some(brief),
                })
            })
            .collect();
        let timeout = self.team.worker_timeout;
        let finished = self.parallel(jobs, iteration, Some(timeout)).await;
        // The orchestrator reads the results under the names its prompt listed: the handles.
        let handle_of = |name: &str| {
            self.team
                .worker_named(name)
                .map_or_else(|| name.to_string(), |w| w.handle.clone())
        };
        finished
            .into_iter()
            .map(|(result, duration)| WorkerResult {
                name: handle_of(&result.session),
                success: result.success,
                duration,
                text: result.text_or_error(),
            })
            .collect()
    }

    /// Turns of several members at once (at most `max_concurrency`), each reported with
    /// `worker_finished`; with a timeout, a stuck provider is cut off as a failed turn.
    pub async fn parallel(
        &mut self,
        jobs: Vec<Job>,
        iteration: u32,
        timeout: Option<Duration>,
    ) -> Vec<(TurnResult, Duration)> {
        let limit = self
            .shared
            .profile(&self.emitter().group_id, None)
            .options
            .max_concurrency;
        let semaphore = Arc::new(Semaphore::new(limit.max(1)));
        let futures = jobs.into_iter().map(|job| {
            let Job {
                member,
                prompt,
                brief,
            } = job;
            let semaphore = Arc::clone(&semaphore);
            let shared = Arc::clone(self.shared);
            let (prompt, options) = self
                .turn_options(Some(iteration), timeout)
                .with_step(prompt, brief);
            let emitter = self.emitter().clone();
            let active = self.active;
            async move {
                let _permit = semaphore.acquire_owned().await;
                let started = Instant::now();
                let guard = options.cancel.clone();
                let turn = shared.turn(&member.id, prompt, options);
                let result = match timeout {
                    None => turn.await,
                    // The provider enforces the timeout; the outer one is a backstop for a stuck
                    // provider, and cancels the turn so the session moves on.
                    Some(timeout) => {
                        match tokio::time::timeout(timeout.saturating_add(Duration::from_secs(5)), turn).await
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
                        }
                    }
                };
                let duration = started.elapsed();
                // Counted as each turn ends, so a spent budget stops the others at once.
                if let Some(u) = result.usage {
                    active.control.count_tokens(u, &emitter);
                }
                emitter.emit(EventKind::WorkerFinished {
                    iteration,
                    worker: member.name.clone(),
                    session_id: member.id.clone(),
                    success: result.success,
                    duration_ms: duration.as_millis() as u64,
                });
                (result, duration)
            }
        });
        let finished = join_all(futures).await;
        for (result, _) in &finished {
            self.account(result);
        }
        finished
    }

    /// Writes a notice into a member's transcript (e.g. the completion summary) and says so.
    pub fn note(&self, member: &Member, text: &str) {
        let message = Message::notice(text);
        self.shared.writer.append(&member.id, &message);
        self.emit(EventKind::Notice {
            session_id: member.id.clone(),
            session: member.name.clone(),
            text: text.to_string(),
            message: Some(Arc::new(message)),
        });
    }

    /// Takes the messages left for this group by its previous run; they are kept with the
    /// open run, so a resumed run is given the same ones (and takes no others).
    pub fn take_pending(&self) -> Vec<String> {
        if let Some(resumed) = &self.resumed {
            return resumed.open.pending.clone();
        }
        let gid = &self.team.group_id;
        self.shared.org.update(|o| {
            o.group_mut(gid)
                .map(|g| {
                    let taken = std::mem::take(&mut g.pending_messages);
                    if let Some(open) = &mut g.state.run {
                        open.pending.clone_from(&taken);
                    }
                    taken
                })
                .unwrap_or_default()
        })
    }

    /// Gives messages back to the group when the run that took them could not use them.
    pub fn restore_pending(&self, messages: Vec<String>) {
        // A run left to be resumed keeps them with itself (its resumption is given them).
        if messages.is_empty() || self.left_to_resume() {
            return;
        }
        let gid = &self.team.group_id;
        self.shared.org.update(|o| {
            if let Some(g) = o.group_mut(gid) {
                let later = std::mem::take(&mut g.pending_messages);
                g.pending_messages = messages;
                g.pending_messages.extend(later);
            }
        });
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
            cost: crate::model::Cost::default(),
            duration: self.active_time(),
            simulated: self.simulated,
            failed: None,
        }
    }
}

/// Says the run resumes another: which, when and why it was left, how many finished turns
/// come from disk.
fn announce(run: &Run<'_>, resumed: &Resumed) {
    // A reflect cycle's state was saved as it started: where the earlier runs left it.
    let cycle = run.shared.org.read(|o| {
        o.group(&run.team.group_id)
            .and_then(|g| g.state.orchestrator_reflect.as_ref())
            .filter(|r| r.active && run.team.mode == crate::model::Mode::OrchestratorReflect)
            .map(|r| ResumedCycle {
                after: r.completed_iterations,
                usage: r.usage,
            })
    });
    run.emitter().emit(EventKind::RunResumed {
        resumes: resumed.open.current().unwrap_or_default().to_string(),
        interrupted_at: resumed.open.interrupted_at,
        reason: resumed.open.reason.clone(),
        finished_turns: u32::try_from(resumed.replay.counts().1).unwrap_or(u32::MAX),
        cycle,
    });
}
